"""Qwen3.5-35B-A3B's speed on its real shape (``bench --only real_shape``): a random-weight model of
the published shape and quantization (:mod:`mangaka.devtools.real_shape`), loaded as the pack loads
it and measured in one run against llama.cpp's own llama-bench. This module writes or finds the
model, loads it, runs llama-bench on it (pp512 and tg128, and tg128 again at the script call's
prompt depth) and puts the figures together; what each other part measures on the loaded model
lives in its own module:

- :mod:`.real_shape_depth`: decoding at 1k, 8k and 32k tokens of context, and what context costs;
- :mod:`.real_shape_jump_forward`: the script call free, off and exact, and the verify batches'
  bound on exact jump-forward;
- :mod:`.real_shape_side_by_side`: the context setups and flash attention compared in one process;
- :mod:`.real_shape_memory`: the memory estimate against resident memory, the read bandwidth bound.

``--quick`` runs a 4-layer slice (one group of three Gated DeltaNet layers and one attention layer,
the smallest slice whose decode speed depends on the context) at contexts of 512 and 2048 tokens;
without it, the whole 40-layer model at 1k, 8k and 32k tokens.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ... import procs
from ...errors import MangakaError
from ...llm.inprocess import LlamaCppLLM, LoadOptions
from ...llm.loading import flash_attn_mode, gguf_header, release_models, room_request
from ...paths import cache_root
from .common import native_script
from .real_shape_depth import DEPTH_TOKENS, attention_flops_per_position, context_cost, decode_at_depths
from .real_shape_jump_forward import SCRIPT_ROUNDS, script_calls
from .real_shape_memory import (
    bandwidth_figures,
    bytes_per_token,
    memory_bandwidth,
    memory_figures,
    page_out,
    rss,
)
from .real_shape_side_by_side import context_setups, flash_attn_pair

log = logging.getLogger(__name__)

QUICK_LAYERS = 4
QUICK_DEPTHS = (512, 2048)
FULL_DEPTHS = (1024, 8192, 32768)
AT_PROMPT_KEYS = (
    "real_shape_llama_bench_tg128_at_prompt_tok_s",
    "real_shape_free_over_llama_bench_at_prompt",
)


def _llama_bench(
    model: Path, threads: int, gpu_layers: int, repetitions: int, depth: int | None = None
) -> dict[str, float | None]:
    """llama-bench pp512 and tg128 on ``model``; None for both when llama-bench is not built.
    With ``depth``: only tg128, after that many tokens of context (``-d``)."""
    script = native_script("llama_bench.py")
    found = procs.run([sys.executable, str(script), "--print-path"], capture_output=True, text=True)
    binary = found.stdout.strip()
    if found.returncode != 0 or not binary:
        log.warning(
            "llama-bench is not built, so real_shape has no C ceiling: run "
            "`python native/llama_bench.py --link-wheel` (a few minutes) to include it"
        )
        return {"pp512": None, "tg128": None}
    import importlib.util

    spec = importlib.util.spec_from_file_location("mangaka_native_llama_bench", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ngl = 999 if gpu_layers < 0 else gpu_layers
    result = module.run_llama_bench(
        binary,
        model,
        threads,
        128,
        512 if depth is None else 0,
        gpu_layers=ngl,
        repetitions=repetitions,
        n_depth=depth,
        timeout=1800,
    )
    pp = result.get("pp_tokens_per_s")
    return {"pp512": None if pp is None else float(pp), "tg128": float(result["tg_tokens_per_s"])}


def _at_prompt_depth(
    model: Path, threads: int, gpu_layers: int, repetitions: int, figures: dict[str, Any]
) -> dict[str, float]:
    """llama-bench's tg128 again, after as many tokens of context as the script call's prompt, and
    free decoding ÷ it: the in-process free decoding follows that prompt, so this is the
    like-for-like ceiling (run once the pack has released the model: both would not fit)."""
    depth = int(figures["real_shape_script_prompt_tokens"])
    same = _llama_bench(model, threads, gpu_layers, repetitions, depth)["tg128"]
    return dict(zip(AT_PROMPT_KEYS, (same, figures["real_shape_free_tok_s"] / same), strict=True))


def _logits_finite(llm: Any) -> float:
    """1.0 when the last position's logits are all finite after a prompt (the random blocks keep
    every activation finite; the constrained sampler needs it)."""
    import llama_cpp

    raw = llm.model.llama

    def run() -> bool:
        raw.reset()
        raw.eval(raw.tokenize(b"The lantern shop was quiet.", add_bos=False, special=False))
        values = llama_cpp.llama_get_logits_ith(raw.ctx, -1)
        return bool(np.isfinite(np.ctypeslib.as_array(values, shape=(raw.n_vocab(),))).all())

    return float(llm.model.decode_thread.run(run, llm.model.abort_flag))


def real_shape(threads: int, gpu_layers: int, quick: bool, quant: str = "Q4_K_M") -> dict[str, Any]:
    """Every real-shape figure, in one run (see the module's docstring)."""
    from ..real_shape import real_shape_model  # gguf and numpy: loaded only to write the model

    layers, depths = (QUICK_LAYERS, QUICK_DEPTHS) if quick else (40, FULL_DEPTHS)
    model = real_shape_model(cache_root() / "models", quant, layers)
    tokens, parts = bytes_per_token(model)
    bandwidth = memory_bandwidth(threads)
    ceiling = _llama_bench(model, threads, gpu_layers, 1 if quick else 2)

    release_models()
    options = LoadOptions(n_ctx=max(depths) + 2 * DEPTH_TOKENS, n_threads=threads, n_gpu_layers=gpu_layers)
    before = rss()
    started = time.perf_counter()
    llm = LlamaCppLLM(model, options)
    load_s = time.perf_counter() - started
    paged_out = page_out(model)
    info = gguf_header(model)
    estimate = room_request(model, info, options, llm.n_ctx)
    figures: dict[str, Any] = {
        "real_shape_quant": quant,
        "real_shape_flash_attn": flash_attn_mode(info, options),  # what the pack's load asked for
        "real_shape_layers": layers,
        "real_shape_file_gib": model.stat().st_size / 2**30,
        "real_shape_load_s": load_s,
        "real_shape_logits_finite": _logits_finite(llm),
        "real_shape_llama_bench_pp512_tok_s": ceiling["pp512"],
        "real_shape_llama_bench_tg128_tok_s": ceiling["tg128"],
    }
    by_depth = decode_at_depths(llm, depths)
    figures.update(by_depth)
    if not quick:  # the quick slice's one attention layer over 1,536 tokens adds less than the noise
        figures.update(
            context_cost(
                {d: by_depth[f"real_shape_decode_tok_s_ctx{d}"] for d in depths},
                attention_flops_per_position(model),
            )
        )
    figures.update(script_calls(llm, 32 if quick else 128, 1 if quick else SCRIPT_ROUNDS))
    # Resident memory above the load's start once every depth is decoded (every expert used, the
    # KV cache written) and drafts verified (the state's copy made), against the estimate; the file
    # pages read only to be copied were paged out after the load (page_out): what the model needs.
    after = rss()
    tg = ceiling["tg128"]
    free = figures["real_shape_free_tok_s"]
    figures["real_shape_free_over_llama_bench"] = free / tg if tg else None
    figures.update(context_setups(llm, quick))
    figures.update(flash_attn_pair(llm, quick))
    figures.update(memory_figures(estimate, before, after, paged_out))
    figures.update(bandwidth_figures(tokens, parts, bandwidth, free, tg))
    release_models()
    if tg:
        figures.update(_at_prompt_depth(model, threads, gpu_layers, 1 if quick else 2, figures))
    else:
        figures.update(dict.fromkeys(AT_PROMPT_KEYS))
    bad = [k for k, v in figures.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise MangakaError(f"bench real_shape measured no finite value for {', '.join(bad)}")
    return figures
