"""Tiny random-weight GGUF models, written at test and benchmark time (needs the `gguf` package).

The files are produced with the PyPI ``gguf`` package and load in the llama.cpp bundled with
llama-cpp-python. They have real architectures (``qwen35moe``: Gated-DeltaNet plus gated
attention with routed and shared experts; ``qwen3moe``: attention with routed experts), a
small byte-level BPE vocabulary with the Qwen special tokens, and a ChatML chat template.
The weights are random, so the text they generate is noise, but it is deterministic.

Public API:

- :func:`write_model` writes a base model.
- :func:`write_lora` writes a LoRA adapter for a base model written by :func:`write_model`.
- :func:`write_unsupported_model` writes a valid GGUF whose architecture llama.cpp rejects.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from .tiny_templates import CHAT_TEMPLATES

log = logging.getLogger(__name__)

__all__ = [
    "ARCHITECTURES",
    "CHAT_TEMPLATES",
    "SPECIAL_TOKENS",
    "TinySpec",
    "spec_for",
    "tensor_plan",
    "write_lora",
    "write_model",
    "write_unsupported_model",
]

ARCHITECTURES: tuple[str, ...] = ("qwen35moe", "qwen3moe")

SPECIAL_TOKENS: tuple[str, ...] = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<think>",
    "</think>",
)

# Byte pairs merged by the toy BPE, in rank order (GPT-2 byte-to-unicode form: "Ġ" is a space).
_MERGES: tuple[tuple[str, str], ...] = (
    ("Ġ", "t"),
    ("h", "e"),
    ("i", "n"),
    ("e", "r"),
    ("a", "n"),
    ("o", "n"),
    ("r", "e"),
    ("Ġ", "a"),
    ("Ġ", "s"),
    ("Ġ", "w"),
    ("Ġt", "he"),
    ("e", "n"),
    ("o", "r"),
    ("a", "t"),
    ("e", "s"),
    ("Ġ", "c"),
    ("i", "s"),
    ("Ġ", "b"),
    ("Ġ", "o"),
    ("i", "t"),
    ("a", "r"),
    ("Ġ", "f"),
    ("e", "d"),
    ("Ġ", "m"),
    ("in", "g"),
    ("Ġ", "p"),
    ("o", "u"),
    ("Ġ", "h"),
    ("Ġ", "d"),
    ("a", "l"),
    ("l", "e"),
    ("Ċ", "Ċ"),
    ("Ġ", "Ġ"),
    ("Ġ", "{"),
    ("Ġ", '"'),
    ('"', ":"),
    ("Ġ", "I"),
    ("Ġ", "T"),
    ("Ġ", "S"),
)

# ---------------------------------------------------------------------------------------------
# Model shapes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TinySpec:
    """Hyperparameters of a tiny model (shared by both architectures where they apply)."""

    arch: str
    n_embd: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 16
    n_expert: int = 4
    n_expert_used: int = 2
    n_ff_exp: int = 32
    n_ff_shexp: int = 32
    rope_theta: float = 1_000_000.0
    rms_eps: float = 1e-6
    # qwen35moe only
    full_attention_interval: int = 4
    n_rot: int = 8
    rope_sections: tuple[int, int, int, int] = (2, 1, 1, 0)
    ssm_conv_kernel: int = 4
    ssm_state_size: int = 16  # head dim of the DeltaNet keys and values
    ssm_group_count: int = 2  # key heads
    ssm_time_step_rank: int = 4  # value heads

    @property
    def ssm_inner_size(self) -> int:
        return self.ssm_state_size * self.ssm_time_step_rank

    def is_recurrent(self, il: int) -> bool:
        """Whether layer ``il`` is a Gated-DeltaNet layer (qwen35moe only)."""
        return self.arch == "qwen35moe" and (il + 1) % self.full_attention_interval != 0


_SPECS: dict[str, TinySpec] = {
    "qwen35moe": TinySpec(arch="qwen35moe", n_layer=4, rope_theta=10_000_000.0),
    "qwen3moe": TinySpec(arch="qwen3moe", n_layer=2, n_rot=16),
}


def spec_for(arch: str) -> TinySpec:
    """The hyperparameters :func:`write_model` uses for ``arch``."""
    try:
        return _SPECS[arch]
    except KeyError:
        raise ValueError(f"unknown tiny architecture {arch!r}; expected one of {ARCHITECTURES}") from None


# ---------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------


def _byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    mapping: dict[int, str] = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


@dataclass(frozen=True)
class _Vocab:
    tokens: list[str]
    types: list[int]
    merges: list[str]

    def id_of(self, token: str) -> int:
        return self.tokens.index(token)


def _filler_piece(i: int) -> str:
    """A unique lowercase word for filler token ``i`` (half of them space-prefixed, as in BPE)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    word = ""
    n = i // 2
    while True:
        word = letters[n % 26] + word
        n = n // 26 - 1
        if n < 0:
            break
    return ("\u0120" if i % 2 else "") + "q" + word  # "q…" never collides with the merges


def build_vocab(vocab_size: int | None = None) -> _Vocab:
    """The byte tokens, the merges, filler words up to ``vocab_size`` if given, then specials."""
    b2u = _byte_to_unicode()
    tokens = [b2u[b] for b in range(256)]
    types = [int(gguf.TokenType.NORMAL)] * 256
    merges: list[str] = []
    known = set(tokens)
    for left, right in _MERGES:
        if left not in known or right not in known:
            raise AssertionError(f"merge {left!r} + {right!r} uses an unknown token")
        merged = left + right
        merges.append(f"{left} {right}")
        if merged not in known:
            tokens.append(merged)
            types.append(int(gguf.TokenType.NORMAL))
            known.add(merged)
    if vocab_size is not None:
        fill = vocab_size - len(tokens) - len(SPECIAL_TOKENS)
        if fill < 0:
            raise ValueError(
                f"vocab_size {vocab_size} is below the {len(tokens) + len(SPECIAL_TOKENS)} base tokens"
            )
        tokens.extend(_filler_piece(i) for i in range(fill))
        types.extend([int(gguf.TokenType.NORMAL)] * fill)
    for special in SPECIAL_TOKENS:
        tokens.append(special)
        # As in the real Qwen files: the ChatML markers are control tokens, the think tags are
        # added (user-defined) tokens that still tokenize as one piece.
        is_think = special in ("<think>", "</think>")
        types.append(int(gguf.TokenType.USER_DEFINED if is_think else gguf.TokenType.CONTROL))
    return _Vocab(tokens=tokens, types=types, merges=merges)


# ---------------------------------------------------------------------------------------------
# Tensors
# ---------------------------------------------------------------------------------------------

# Shapes below are numpy shapes (outermost first), the reverse of llama.cpp's ne[] order: a
# matrix that maps n_in to n_out features is (n_out, n_in).


def tensor_plan(spec: TinySpec, n_vocab: int) -> Iterator[tuple[str, tuple[int, ...], str]]:
    """Each tensor of a model of ``spec``: its name, numpy shape and how its values are drawn
    (``embd``, ``output``, ``norm``, ``mat``, ``dt``, ``a``); the real-shape writer
    (:mod:`.real_shape`) lays out the same tensors."""
    e = spec.n_embd
    yield "token_embd.weight", (n_vocab, e), "embd"
    yield "output_norm.weight", (e,), "norm"
    yield "output.weight", (n_vocab, e), "output"

    q_width = spec.n_head * spec.head_dim
    kv_width = spec.n_head_kv * spec.head_dim
    for il in range(spec.n_layer):
        p = f"blk.{il}"
        yield f"{p}.attn_norm.weight", (e,), "norm"
        if spec.arch == "qwen35moe":
            yield f"{p}.post_attention_norm.weight", (e,), "norm"
            if spec.is_recurrent(il):
                key_dim = spec.ssm_state_size * spec.ssm_group_count
                value_dim = spec.ssm_inner_size
                n_v_heads = spec.ssm_time_step_rank
                yield f"{p}.attn_qkv.weight", (2 * key_dim + value_dim, e), "mat"
                yield f"{p}.attn_gate.weight", (value_dim, e), "mat"
                yield f"{p}.ssm_conv1d.weight", (2 * key_dim + value_dim, spec.ssm_conv_kernel), "mat"
                yield f"{p}.ssm_dt.bias", (n_v_heads,), "dt"
                yield f"{p}.ssm_a", (n_v_heads,), "a"
                yield f"{p}.ssm_beta.weight", (n_v_heads, e), "mat"
                yield f"{p}.ssm_alpha.weight", (n_v_heads, e), "mat"
                yield f"{p}.ssm_norm.weight", (spec.ssm_state_size,), "norm"
                yield f"{p}.ssm_out.weight", (e, value_dim), "mat"
            else:
                # The query projection also produces the output gate: twice the query width.
                yield f"{p}.attn_q.weight", (2 * q_width, e), "mat"
                yield f"{p}.attn_k.weight", (kv_width, e), "mat"
                yield f"{p}.attn_v.weight", (kv_width, e), "mat"
                yield f"{p}.attn_output.weight", (e, q_width), "mat"
                yield f"{p}.attn_q_norm.weight", (spec.head_dim,), "norm"
                yield f"{p}.attn_k_norm.weight", (spec.head_dim,), "norm"
        else:
            yield f"{p}.attn_q.weight", (q_width, e), "mat"
            yield f"{p}.attn_k.weight", (kv_width, e), "mat"
            yield f"{p}.attn_v.weight", (kv_width, e), "mat"
            yield f"{p}.attn_output.weight", (e, q_width), "mat"
            yield f"{p}.attn_q_norm.weight", (spec.head_dim,), "norm"
            yield f"{p}.attn_k_norm.weight", (spec.head_dim,), "norm"
            yield f"{p}.ffn_norm.weight", (e,), "norm"

        # Routed experts.
        yield f"{p}.ffn_gate_inp.weight", (spec.n_expert, e), "mat"
        yield f"{p}.ffn_gate_exps.weight", (spec.n_expert, spec.n_ff_exp, e), "mat"
        yield f"{p}.ffn_up_exps.weight", (spec.n_expert, spec.n_ff_exp, e), "mat"
        yield f"{p}.ffn_down_exps.weight", (spec.n_expert, e, spec.n_ff_exp), "mat"
        if spec.arch == "qwen35moe":
            # Shared expert with its sigmoid gate (one output per token).
            yield f"{p}.ffn_gate_inp_shexp.weight", (e,), "mat"
            yield f"{p}.ffn_gate_shexp.weight", (spec.n_ff_shexp, e), "mat"
            yield f"{p}.ffn_up_shexp.weight", (spec.n_ff_shexp, e), "mat"
            yield f"{p}.ffn_down_shexp.weight", (e, spec.n_ff_shexp), "mat"


def _model_tensors(
    spec: TinySpec, n_vocab: int, rng: np.random.Generator
) -> Iterator[tuple[str, np.ndarray]]:
    for name, shape, kind in tensor_plan(spec, n_vocab):
        if kind == "norm":
            data = 1.0 + 0.1 * rng.standard_normal(shape[0])
        elif kind == "dt":
            data = 0.1 * rng.standard_normal(shape[0])
        elif kind == "a":
            # A = -exp(A_log): negative, so the recurrent state decays.
            data = -np.exp(rng.uniform(-1.0, 1.0, shape[0]))
        else:
            std = 1.0 if kind == "embd" else 1.0 / np.sqrt(shape[-1])
            data = (rng.standard_normal(shape) * std).astype(np.float32)
            if kind == "output":
                # Output rows: the byte tokens 0x80-0xFF get zero rows (logit 0) and every other
                # token a wide spread, so the model practically never emits a lone non-ASCII
                # byte. Random weights would otherwise write invalid UTF-8, which no grammar can
                # stop: llama.cpp's grammar decodes UTF-8 leniently, so "a lead byte, then
                # ASCII" passes as one character.
                data = data * 8.0
                data[0x80:0x100] = 0.0
        yield name, np.asarray(data, dtype=np.float32)


def add_hparams(w: gguf.GGUFWriter, spec: TinySpec, context_length: int) -> None:
    w.add_context_length(context_length)
    w.add_embedding_length(spec.n_embd)
    w.add_block_count(spec.n_layer)
    w.add_feed_forward_length(spec.n_ff_exp * spec.n_expert_used)
    w.add_head_count(spec.n_head)
    w.add_head_count_kv(spec.n_head_kv)
    w.add_key_length(spec.head_dim)
    w.add_value_length(spec.head_dim)
    w.add_layer_norm_rms_eps(spec.rms_eps)
    w.add_rope_freq_base(spec.rope_theta)
    w.add_rope_dimension_count(spec.n_rot if spec.arch == "qwen35moe" else spec.head_dim)
    w.add_expert_count(spec.n_expert)
    w.add_expert_used_count(spec.n_expert_used)
    w.add_expert_feed_forward_length(spec.n_ff_exp)
    if spec.arch == "qwen35moe":
        w.add_expert_shared_feed_forward_length(spec.n_ff_shexp)
        w.add_rope_dimension_sections(list(spec.rope_sections))
        w.add_full_attention_interval(spec.full_attention_interval)
        w.add_ssm_conv_kernel(spec.ssm_conv_kernel)
        w.add_ssm_inner_size(spec.ssm_inner_size)
        w.add_ssm_state_size(spec.ssm_state_size)
        w.add_ssm_time_step_rank(spec.ssm_time_step_rank)
        w.add_ssm_group_count(spec.ssm_group_count)


def add_tokenizer(w: gguf.GGUFWriter, arch: str, vocab: _Vocab) -> None:
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35" if arch == "qwen35moe" else "qwen2")
    w.add_token_list(vocab.tokens)
    w.add_token_types(vocab.types)
    w.add_token_merges(vocab.merges)
    w.add_eos_token_id(vocab.id_of("<|im_end|>"))
    w.add_pad_token_id(vocab.id_of("<|endoftext|>"))
    w.add_bos_token_id(vocab.id_of("<|endoftext|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATES[arch])


def _write(w: gguf.GGUFWriter) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def write_model(
    path: str | os.PathLike[str],
    arch: str = "qwen35moe",
    *,
    seed: int = 0,
    context_length: int = 4096,
    vocab_size: int | None = None,
) -> Path:
    """Write a tiny random-weight model of architecture ``arch`` to ``path`` and return the path.

    ``context_length`` is stored as ``<arch>.context_length`` (the trained context length).
    ``vocab_size`` pads the vocabulary with filler words (e.g. 248320, Qwen3.5's, to measure
    per-token costs that grow with the vocabulary). The same ``seed`` gives byte-identical files.
    """
    spec = spec_for(arch)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    vocab = build_vocab(vocab_size)
    rng = np.random.default_rng(seed)

    w = gguf.GGUFWriter(str(out), arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(f"tiny-{arch}")
    w.add_description("random weights, written by mangaka/devtools/tiny_models.py")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(len(vocab.tokens))
    add_hparams(w, spec, context_length)
    add_tokenizer(w, arch, vocab)
    for name, data in _model_tensors(spec, len(vocab.tokens), rng):
        w.add_tensor(name, data)
    _write(w)
    log.debug("wrote tiny %s model to %s (%d bytes)", arch, out, out.stat().st_size)
    return out


# LoRA targets: 2-D weights that the graphs multiply through build_lora_mm.
_LORA_TARGETS: dict[str, tuple[str, ...]] = {
    "qwen35moe": (
        "attn_qkv",
        "attn_gate",
        "ssm_out",
        "attn_q",
        "attn_k",
        "attn_v",
        "attn_output",
        "ffn_gate_shexp",
        "ffn_up_shexp",
        "ffn_down_shexp",
    ),
    "qwen3moe": ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate_inp"),
    # Real dense models (SmolLM2, gemma-3), for LoRA memory measurements on trained weights.
    "llama": ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"),
    "gemma3": ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"),
}


def _base_matrices(base: str | os.PathLike[str]) -> tuple[str, dict[str, tuple[int, int]]]:
    """Architecture and {tensor name: (n_out, n_in)} of the base model's 2-D weights.

    ``base`` is either the path of a GGUF file or an architecture name (then the shapes are
    those :func:`write_model` would write).
    """
    if isinstance(base, str) and base in _SPECS:
        spec = _SPECS[base]
        rng = np.random.default_rng(0)
        shapes = {
            name: (int(t.shape[0]), int(t.shape[1]))
            for name, t in _model_tensors(spec, len(build_vocab().tokens), rng)
            if t.ndim == 2
        }
        return base, shapes
    reader = gguf.GGUFReader(str(base))
    field = reader.get_field("general.architecture")
    if field is None:
        raise ValueError(f"{base}: no general.architecture")
    arch = field.contents()
    shapes = {}
    for t in reader.tensors:
        if len(t.shape) == 2:
            n_in, n_out = (int(x) for x in t.shape)  # ggml order: ne[0] is the input width
            shapes[t.name] = (n_out, n_in)
    return arch, shapes


def write_lora(
    path: str | os.PathLike[str],
    base_path_or_arch: str | os.PathLike[str],
    *,
    rank: int = 4,
    alpha: float = 8.0,
    seed: int = 1,
) -> Path:
    """Write a LoRA adapter for a tiny base model and return its path.

    ``base_path_or_arch`` is the base GGUF (as written by :func:`write_model`) or its
    architecture name. The adapter covers the attention / DeltaNet projections and the dense
    FFN weights; its deltas are large enough to change greedy output.
    """
    arch, shapes = _base_matrices(base_path_or_arch)
    targets = _LORA_TARGETS.get(arch)
    if targets is None:
        raise ValueError(f"no LoRA targets for architecture {arch!r}")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    w = gguf.GGUFWriter(str(out), arch)
    w.add_type(gguf.GGUFType.ADAPTER)
    w.add_string(gguf.Keys.Adapter.TYPE, "lora")
    w.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    w.add_name(f"tiny-{arch}-lora")
    n = 0
    for name in sorted(shapes):
        parts = name.split(".")
        if len(parts) != 4 or parts[0] != "blk" or parts[2] not in targets or parts[3] != "weight":
            continue
        n_out, n_in = shapes[name]
        # Effective delta = (alpha / rank) * B @ A; entries of order 1/sqrt(n_in).
        a = (rng.standard_normal((rank, n_in)) / np.sqrt(n_in)).astype(np.float32)
        b = (rng.standard_normal((n_out, rank)) / np.sqrt(rank)).astype(np.float32)
        w.add_tensor(f"{name}.lora_a", a)
        w.add_tensor(f"{name}.lora_b", b)
        n += 1
    if n == 0:
        raise ValueError(f"base model has none of the LoRA target weights {targets}")
    _write(w)
    log.debug("wrote tiny %s LoRA (%d pairs, rank %d) to %s", arch, n, rank, out)
    return out


def write_unsupported_model(path: str | os.PathLike[str], arch: str = "qwen99moe") -> Path:
    """Write a small, well-formed GGUF whose architecture llama.cpp does not know."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    spec = TinySpec(arch=arch, n_layer=1)
    vocab = build_vocab()
    rng = np.random.default_rng(0)

    w = gguf.GGUFWriter(str(out), arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(f"tiny-{arch}")
    w.add_context_length(4096)
    w.add_embedding_length(spec.n_embd)
    w.add_block_count(spec.n_layer)
    w.add_head_count(spec.n_head)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(vocab.tokens)
    w.add_token_types(vocab.types)
    w.add_token_merges(vocab.merges)
    w.add_eos_token_id(vocab.id_of("<|im_end|>"))
    w.add_chat_template(CHAT_TEMPLATES["qwen3moe"])
    w.add_tensor(
        "token_embd.weight", rng.standard_normal((len(vocab.tokens), spec.n_embd)).astype(np.float32)
    )
    w.add_tensor("output_norm.weight", np.ones(spec.n_embd, dtype=np.float32))
    _write(w)
    log.debug("wrote unsupported-architecture GGUF (%s) to %s", arch, out)
    return out
