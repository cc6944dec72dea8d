"""A random-weight GGUF of Qwen3.5-35B-A3B's published shape, quantized as llama.cpp lays its
``Q4_K_M`` and ``Q3_K_M`` out: what the pack's speed figures for the real model are measured on
(no machine this project runs on can download the weights; speed does not depend on their values).

    python -m mangaka.devtools.real_shape OUT.gguf [--quant Q3_K_M] [--layers 4] [--seed 0]

**The shape** (``REAL_SHAPE``), from the model's published ``config.json`` (its ``text_config``;
the same numbers are transformers' ``Qwen3_5MoeTextConfig`` defaults), mapped to GGUF keys as
llama.cpp's converter maps them:

============================================  ========  ==========================================
GGUF key (``qwen35moe.``)                     value     ``config.json``
============================================  ========  ==========================================
``block_count``                               40        ``num_hidden_layers``
``embedding_length``                          2048      ``hidden_size``
``attention.head_count`` / ``head_count_kv``  16 / 2    ``num_attention_heads`` / ``num_key_value_heads``
``attention.key_length`` / ``value_length``   256       ``head_dim``
``rope.dimension_count``                      64        ``head_dim`` × ``partial_rotary_factor`` 0.25
``rope.dimension_sections``                   11,11,10  ``mrope_section``
``rope.freq_base``                            1e7       ``rope_theta``
``expert_count`` / ``expert_used_count``      256 / 8   ``num_experts`` / ``num_experts_per_tok``
``expert_feed_forward_length``                512       ``moe_intermediate_size``
``expert_shared_feed_forward_length``         512       ``shared_expert_intermediate_size``
``full_attention_interval``                   4         ``full_attention_interval`` (3 DeltaNet : 1)
``ssm.conv_kernel``                           4         ``linear_conv_kernel_dim``
``ssm.state_size``                            128       ``linear_key_head_dim`` (= ``linear_value_head_dim``)
``ssm.group_count``                           16        ``linear_num_key_heads``
``ssm.time_step_rank``                        32        ``linear_num_value_heads``
``ssm.inner_size``                            4096      ``linear_value_head_dim`` × ``linear_num_value_heads``
``context_length``                            262144    ``max_position_embeddings``
vocabulary                                    248320    ``vocab_size``
============================================  ========  ==========================================

The checkpoint's one multi-token-prediction layer (``mtp_num_hidden_layers``) is left out: llama.cpp
loads it only for MTP drafting, which the pack does not use, so no token reads it. The tokenizer is
the test models' byte-level BPE padded with filler words to 248,320 tokens, with Qwen's special
tokens and the test suite's Qwen3.5-like chat template (:mod:`.tiny_templates`): the vocabulary's
size, which sets the cost of the output head and of the grammar, is the real one.

**The tensor types** are not copied rules: llama.cpp's own quantizer chooses them. The model's
tensors are laid out in a sparse file (the converter's types: float32 for norms, 1-D tensors, the
routers and the DeltaNet convolution, float16 for the rest; no data written, so it takes no disk),
and ``llama_model_quantize`` runs on it with ``dry_run`` set, in a child process whose log lines
name each tensor's type. A slice of the first N layers takes those layers' types from the whole
40-layer layout, so each of its tensors is what it is in the real file.

**The values** are random blocks, written directly in the quantized types (a float copy would be
70 GB), one tensor at a time: random bits for the quants and the packed sub-block scales, and the
block's float16 scale (and minimum) set so that a row's weights have a spread near 1/√(inputs),
as trained weights do; the output head's rows are 8× wider and the rows of the bytes 0x80-0xFF
zero, as in :mod:`.tiny_models`, so greedy and constrained decoding write valid UTF-8. Activations
stay finite (every layer's input is RMS-normalised); the bench checks the logits.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import gguf
import numpy as np

from ..procs import run
from .tiny_models import TinySpec, add_hparams, add_tokenizer, build_vocab, tensor_plan

log = logging.getLogger(__name__)

__all__ = ["QUANTS", "REAL_SHAPE", "REAL_VOCAB", "quant_types", "real_shape_model", "write_real_shape"]

REAL_SHAPE = TinySpec(
    arch="qwen35moe",
    n_embd=2048,
    n_layer=40,
    n_head=16,
    n_head_kv=2,
    head_dim=256,
    n_expert=256,
    n_expert_used=8,
    n_ff_exp=512,
    n_ff_shexp=512,
    rope_theta=10_000_000.0,
    rms_eps=1e-6,
    full_attention_interval=4,
    n_rot=64,
    rope_sections=(11, 11, 10, 0),
    ssm_conv_kernel=4,
    ssm_state_size=128,
    ssm_group_count=16,
    ssm_time_step_rank=32,
)
REAL_VOCAB = 248_320
REAL_CONTEXT = 262_144
WRITER_VERSION = 1  # part of the cache key: bump when the bytes written change

QUANTS: dict[str, int] = {"Q4_K_M": 15, "Q3_K_M": 12}  # llama.cpp's llama_ftype values

# Tensors the converter keeps in float32 besides 1-D tensors and norms (the routers and the
# DeltaNet convolution); llama.cpp's quantizer leaves them as they are.
_FLOAT32_PARTS = ("ffn_gate_inp.weight", "ffn_gate_inp_shexp.weight", "ssm_conv1d.weight")

Q = gguf.GGMLQuantizationType
# A block's float16 factors: (byte offset, value ÷ the weights' spread). Each is chosen so that
# the weights spread as wanted given the block's random quants and sub-block scales (e.g. Q4_K:
# d·sc·q − dmin·m with sc, m ∈ 0..63 and q ∈ 0..15; dmin = 7.5·d centres it).
_BLOCK_FACTORS: dict[Q, tuple[tuple[int, float], ...]] = {
    Q.Q3_K: ((108, 1 / 32),),
    Q.Q4_K: ((0, 1 / 232), (2, 7.5 / 232)),
    Q.Q5_K: ((0, 1 / 488), (2, 15.5 / 488)),
    Q.Q6_K: ((208, 1 / 1024),),
    Q.Q8_0: ((0, 1 / 64),),
    Q.Q5_0: ((0, 1 / 8),),
    Q.Q5_1: ((0, 1 / 8), (2, -15.5 / 8)),
    Q.Q4_0: ((0, 1 / 4),),
}


def _slice_spec(layers: int) -> TinySpec:
    from dataclasses import replace

    if not 1 <= layers <= REAL_SHAPE.n_layer:
        raise ValueError(f"layers must be from 1 to {REAL_SHAPE.n_layer}, not {layers}")
    return replace(REAL_SHAPE, n_layer=layers)


def _plan(spec: TinySpec) -> list[tuple[str, tuple[int, ...], str]]:
    return list(tensor_plan(spec, REAL_VOCAB))


def _is_float32(name: str, shape: tuple[int, ...]) -> bool:
    return len(shape) == 1 or name.endswith("_norm.weight") or name.endswith(_FLOAT32_PARTS)


def _header(path: Path, spec: TinySpec, file_type: int, description: str) -> gguf.GGUFWriter:
    w = gguf.GGUFWriter(str(path), spec.arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("random Qwen3.5-35B-A3B shape")
    w.add_description(description)
    w.add_file_type(file_type)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    vocab = build_vocab(REAL_VOCAB)
    w.add_vocab_size(len(vocab.tokens))
    add_hparams(w, spec, REAL_CONTEXT)
    add_tokenizer(w, spec.arch, vocab)
    return w


# ---------------------------------------------------------------------------------------------
# llama.cpp's choice of types
# ---------------------------------------------------------------------------------------------

_DRY_RUN = r"""
import ctypes, sys
import llama_cpp
params = llama_cpp.llama_model_quantize_default_params()
params.ftype = int(sys.argv[3])
params.dry_run = True
params.nthread = 1
sys.exit(llama_cpp.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(params)))
"""
_TYPE_LINE = re.compile(r"\]\s+(\S+)\s+- \[.*?\], type =\s*(\w+), size =.*?(?:\((\w+)\))?\s*$")


def _write_skeleton(path: Path) -> None:
    """The whole model's tensors as the converter types them, with no data (a sparse file)."""
    w = _header(path, REAL_SHAPE, int(gguf.LlamaFileType.MOSTLY_F16), "layout only")
    for name, shape, _kind in _plan(REAL_SHAPE):
        dtype = np.float32 if _is_float32(name, shape) else np.float16
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        w.add_tensor_info(name, shape, np.dtype(dtype), n)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    start = w.ggml_pad(fout.tell(), w.data_alignment)
    size = sum(w.ggml_pad(ti.nbytes, w.data_alignment) for ti in w.tensors[0].values())
    fout.truncate(start + size)
    w.close()


def quant_types(quant: str) -> dict[str, Q]:
    """Every tensor's type in llama.cpp's ``quant`` layout of the whole model, as its quantizer
    chooses it (a dry run in a child process: see the module's docstring)."""
    if quant not in QUANTS:
        raise ValueError(f"quant must be one of {', '.join(QUANTS)}, not {quant!r}")
    with tempfile.TemporaryDirectory(prefix="mangaka-layout-") as tmp:
        skeleton = Path(tmp) / "layout.gguf"
        _write_skeleton(skeleton)
        done = run(
            [sys.executable, "-c", _DRY_RUN, str(skeleton), str(Path(tmp) / "none.gguf"), str(QUANTS[quant])],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    text = done.stdout + done.stderr
    types: dict[str, Q] = {}
    for line in text.splitlines():
        found = _TYPE_LINE.search(line)
        if found:
            name, source, target = found.groups()
            types[name] = Q[(target or source).upper()]
    expected = {name for name, _shape, _kind in _plan(REAL_SHAPE)}
    if done.returncode != 0 or set(types) != expected:
        missing = sorted(expected - set(types))[:5]
        raise RuntimeError(
            f"llama.cpp's quantizer dry run (exit {done.returncode}) named {len(types)} of "
            f"{len(expected)} tensors (missing {missing}): {text.strip()[-1500:]}"
        )
    return types


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _random_blocks(kind: Q, shape: tuple[int, ...], rng: np.random.Generator, spread: float) -> np.ndarray:
    """Random blocks of ``kind`` for a tensor of numpy ``shape`` whose weights spread about
    ``spread``: uint8 rows of its byte size."""
    block, size = gguf.GGML_QUANT_SIZES[kind]
    factors = _BLOCK_FACTORS.get(kind)
    if factors is None:
        raise ValueError(f"no random-block recipe for {kind.name}")
    n_in = shape[-1]
    if n_in % block:
        raise ValueError(f"a row of {n_in} does not split into {kind.name} blocks of {block}")
    rows = int(np.prod(shape[:-1]))
    data = np.frombuffer(bytearray(rng.bytes(rows * (n_in // block) * size)), dtype=np.uint8)
    blocks = data.reshape(-1, size)
    for offset, factor in factors:
        value = np.float16(factor * spread)
        blocks[:, offset : offset + 2] = np.frombuffer(value.tobytes(), dtype=np.uint8)
    return data.reshape(rows, -1)


def _tensor_bytes(
    name: str, shape: tuple[int, ...], kind: str, qtype: Q, rng: np.random.Generator
) -> np.ndarray:
    if qtype in (Q.F32, Q.F16):
        if kind == "norm":
            values = 1.0 + 0.1 * rng.standard_normal(shape)
        elif kind == "dt":
            values = 0.1 * rng.standard_normal(shape)
        elif kind == "a":
            values = -np.exp(rng.uniform(-1.0, 1.0, shape))
        else:
            values = rng.standard_normal(shape) / (1.0 if kind == "embd" else np.sqrt(shape[-1]))
        return np.ascontiguousarray(values, dtype=np.float32 if qtype == Q.F32 else np.float16).view(np.uint8)
    spread = {"embd": 1.0, "output": 8.0 / np.sqrt(shape[-1])}.get(kind, 1.0 / np.sqrt(shape[-1]))
    rows = _random_blocks(qtype, shape, rng, spread)
    if kind == "output":
        rows[0x80:0x100] = 0  # logit 0 for the lone bytes 0x80-0xFF (see the module's docstring)
    return rows.reshape(-1)


def _plan_types(spec: TinySpec, quant: str) -> Iterator[tuple[str, tuple[int, ...], str, Q]]:
    types = quant_types(quant)
    for name, shape, kind in _plan(spec):
        yield name, shape, kind, types[name]


def write_real_shape(
    path: str | os.PathLike[str], quant: str = "Q4_K_M", *, layers: int = 40, seed: int = 0
) -> Path:
    """Write the real-shape model (or its first ``layers`` layers) in ``quant``'s layout to
    ``path``, one tensor at a time, and return the path. The same arguments give the same bytes."""
    spec = _slice_spec(layers)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    plan = list(_plan_types(spec, quant))
    file_type = int(getattr(gguf.LlamaFileType, f"MOSTLY_{quant}"))
    about = f"random weights of Qwen3.5-35B-A3B's shape, {quant} layout, {layers} layers"
    w = _header(out, spec, file_type, about)
    for name, shape, _kind, qtype in plan:
        if qtype in (Q.F32, Q.F16):
            nbytes = int(np.prod(shape)) * (4 if qtype == Q.F32 else 2)
        else:
            block, size = gguf.GGML_QUANT_SIZES[qtype]
            nbytes = int(np.prod(shape)) // block * size
        w.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for name, shape, kind, qtype in plan:
        w.write_tensor_data(_tensor_bytes(name, shape, kind, qtype, rng))
        log.debug("wrote %s (%s, %s)", name, qtype.name, shape)
    w.close()
    return out


def real_shape_model(cache: Path, quant: str, layers: int) -> Path:
    """The real-shape model under ``cache`` (written once; keyed by shape, layout and writer)."""
    key = repr((REAL_SHAPE, REAL_VOCAB, quant, layers, WRITER_VERSION))
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    target = cache / f"qwen35moe-35b-a3b-shape-{quant}-{layers}L-{digest}.gguf"
    if not target.is_file():
        partial = target.with_suffix(".partial")
        log.info("writing the real-shape model (%s, %d layers) to %s", quant, layers, target)
        write_real_shape(partial, quant, layers=layers)
        os.replace(partial, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mangaka.devtools.real_shape", description=__doc__.split("\n")[0]
    )
    parser.add_argument("out", type=Path, help="the GGUF file to write")
    parser.add_argument("--quant", choices=sorted(QUANTS), default="Q4_K_M")
    parser.add_argument("--layers", type=int, default=REAL_SHAPE.n_layer, help="the first N layers only")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    path = write_real_shape(args.out, args.quant, layers=args.layers, seed=args.seed)
    log.info("wrote %s (%.2f GB)", path, path.stat().st_size / 1e9)
    return 0


if __name__ == "__main__":
    sys.exit(main())
