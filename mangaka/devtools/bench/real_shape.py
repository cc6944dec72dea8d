"""Qwen3.5-35B-A3B's speed on its real shape: a random-weight model of the published shape and
quantization (:mod:`mangaka.devtools.real_shape`), measured in one run against llama.cpp's own
llama-bench and against the machine's memory bandwidth.

``--quick`` runs a 4-layer slice (one group of three Gated DeltaNet layers and one attention layer,
the smallest slice whose decode speed depends on the context) at contexts of 512 and 2048 tokens;
without it, the whole 40-layer model at 1k, 8k and 32k tokens.
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ... import procs
from ...errors import MangakaError
from ...llm.base import PRESETS
from ...llm.decode import StateCheckpoint, decode, eval_rows, rolls_back_by_checkpoint
from ...llm.inprocess import LlamaCppLLM, LoadOptions
from ...llm.loading import flash_attn_mode, gguf_header, release_models, room_request
from ...paths import cache_root
from .common import median, native_script, paired
from .decoding import script_rates
from .real_shape_contexts import decoder, flash_attn_pair, made_contexts, one_at_a_time, random_tokens

log = logging.getLogger(__name__)

QUICK_LAYERS = 4
QUICK_DEPTHS = (512, 2048)
FULL_DEPTHS = (1024, 8192, 32768)
DEPTH_TOKENS = 16  # tokens decoded one at a time at each context depth
# Rounds of the script call's three modes (free, off, exact), back to back, medians reported: on
# the development VM one round gave exact ÷ free 1.09 on one full run and 1.18 on the next.
SCRIPT_ROUNDS = 3
BATCH_ROWS = (1, 2, 4, 7, 8, 16)  # verify batches timed: drafts ≤ 6 on the CPU (7 rows), ≤ 16 on a GPU
BATCH_CONTEXT = 256  # tokens of context before each timed batch
# The context setups compared in one process (_context_setups): rounds of SETUP_TOKENS decodes on
# each in turn after SETUP_PROMPT tokens; the VM's speed moves by a fifth between seconds, so only
# many short rounds side by side separate a cost of a few per cent.
SETUP_ROUNDS = {True: 2, False: 8}  # by quick
SETUP_TOKENS = {True: 8, False: 24}
SETUP_PROMPT = 64
SNAPSHOTS = 8  # recurrent-state snapshots of the compared setup (the pack's default until 2026-12-04)
MADV_PAGEOUT = 21  # linux/mman.h, Linux 5.4 and later


def _rss() -> dict[str, int]:
    out = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) * 1024
    return out


def page_out(path: Path) -> int:
    """Ask the kernel to reclaim this process's pages of ``path``'s mappings now (``MADV_PAGEOUT``):
    the file pages llama.cpp read only to copy (the CPU's repacked weights) go, the ones it
    reads in place come back as it decodes. Returns the bytes advised (0 where the kernel refused
    or is not Linux: the resident figure then counts pages the kernel could reclaim)."""
    import ctypes
    import os

    if not sys.platform.startswith("linux"):  # no /proc/self/maps, no MADV_PAGEOUT
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    target = str(path.resolve())
    advised = 0
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        spans = [line.split(None, 5) for line in maps]
    for span in spans:
        if len(span) == 6 and span[5].strip() == target:
            start, end = (int(x, 16) for x in span[0].split("-"))
            if libc.madvise(start, end - start, MADV_PAGEOUT) != 0:
                log.warning("madvise(MADV_PAGEOUT) on %s failed: %s", target, os.strerror(ctypes.get_errno()))
                return 0
            advised += end - start
    return advised


def memory_bandwidth(threads: int, mib: int = 256, repeats: int = 3) -> float:
    """Bytes per second ``threads`` threads read from memory (each sums its own ``mib`` MiB of
    float64; numpy releases the GIL while it sums): the best of ``repeats``."""
    blocks = [np.ones(mib * 2**20 // 8) for _ in range(threads)]
    best = 0.0
    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            started = time.perf_counter()
            list(pool.map(np.sum, blocks))
            best = max(best, threads * mib * 2**20 / (time.perf_counter() - started))
    return best


def bytes_per_token(path: Path) -> tuple[int, dict[str, int]]:
    """Bytes of weights one decoded token reads: every dense tensor whole, the routed experts'
    tensors at ``expert_used_count / expert_count``, one row of the token embedding."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    arch = reader.get_field("general.architecture").contents()
    used = reader.get_field(f"{arch}.expert_used_count").contents()
    experts = reader.get_field(f"{arch}.expert_count").contents()
    parts = {"dense": 0, "experts": 0, "embedding_row": 0}
    for t in reader.tensors:
        n = int(t.n_bytes)
        if t.name == "token_embd.weight":
            parts["embedding_row"] += n // int(t.shape[-1])
        elif "_exps." in t.name:
            parts["experts"] += n * used // experts
        else:
            parts["dense"] += n
    return sum(parts.values()), parts


def attention_flops_per_position(path: Path) -> int:
    """FLOPs a decoded token spends per token of context: in every layer with a KV cache (the
    ones holding ``attn_k``), each query head's dot product with a cached key and its weighted
    sum of the cached value, two FLOPs a multiply-add."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    arch = reader.get_field("general.architecture").contents()
    heads = reader.get_field(f"{arch}.attention.head_count").contents()
    width = sum(reader.get_field(f"{arch}.attention.{kind}_length").contents() for kind in ("key", "value"))
    layers = sum(1 for t in reader.tensors if t.name.endswith(".attn_k.weight"))
    return 2 * heads * width * layers


def context_cost(rates: dict[int, float], flops_per_position: int) -> dict[str, float]:
    """From decode tokens/s at several context depths: the milliseconds each 1,000 more tokens of
    context add to a token (between the shortest and the longest depth), and the attention
    arithmetic rate that time implies (GFLOP/s)."""
    short, long = min(rates), max(rates)
    added = 1 / rates[long] - 1 / rates[short]
    return {
        "real_shape_context_ms_per_1k": 1e6 * added / (long - short),
        "real_shape_attention_gflop_s": flops_per_position * (long - short) / added / 1e9
        if added > 0
        else math.nan,
    }


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


AT_PROMPT_KEYS = (
    "real_shape_llama_bench_tg128_at_prompt_tok_s",
    "real_shape_free_over_llama_bench_at_prompt",
)


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


def _decode_at_depths(llm: Any, depths: tuple[int, ...]) -> dict[str, float]:
    """Tokens/s decoding one token at a time after ``depth`` tokens of context, for each depth."""
    raw = llm.model.llama
    rng = np.random.default_rng(0)
    n_vocab = raw.n_vocab()
    out: dict[str, float] = {}

    def run(depth: int) -> float:
        raw.reset()
        raw.eval(random_tokens(rng, n_vocab, depth))
        started = time.perf_counter()
        for t in random_tokens(rng, n_vocab, DEPTH_TOKENS):
            raw.eval([t])
        return DEPTH_TOKENS / (time.perf_counter() - started)

    for depth in depths:
        out[f"real_shape_decode_tok_s_ctx{depth}"] = llm.model.decode_thread.run(
            lambda d=depth: run(d), llm.model.abort_flag
        )
    raw.reset()
    return out


def _batch_costs(llm: Any, repeats: int = 3) -> tuple[dict[int, float], float, float]:
    """Seconds one evaluation of ``n`` rows with logits for every row takes (the batch exact
    jump-forward verifies: the sampled token and its draft) after ``BATCH_CONTEXT`` tokens, for
    each ``n`` of ``BATCH_ROWS``, and the seconds of saving and of putting back the recurrent
    state around it (``StateCheckpoint``, its kept rows not evaluated again): the best of
    ``repeats``."""
    raw = llm.model.llama
    rng = np.random.default_rng(1)
    n_vocab = raw.n_vocab()

    def run() -> tuple[dict[int, float], float, float]:
        raw.reset()
        raw.eval(random_tokens(rng, n_vocab, BATCH_CONTEXT))
        checkpoint = StateCheckpoint(raw)
        best: dict[int, float] = {}
        save = restore = math.inf
        for _ in range(repeats):
            for n in BATCH_ROWS:
                rows = random_tokens(rng, n_vocab, n)
                started = time.perf_counter()
                checkpoint.save()
                saved = time.perf_counter()
                eval_rows(raw, rows)
                evaluated = time.perf_counter()
                checkpoint.restore([])
                save, restore = min(save, saved - started), min(restore, time.perf_counter() - evaluated)
                best[n] = min(best.get(n, math.inf), evaluated - saved)
        raw.reset()
        return best, save, restore

    return llm.model.decode_thread.run(run, llm.model.abort_flag)


def batch_cost(costs: dict[int, float], rows: int) -> float:
    """Seconds for a batch of ``rows`` rows: linear between the timed sizes, and past the largest
    along the last two's slope."""
    sizes = sorted(costs)
    if rows <= sizes[-1]:
        return float(np.interp(rows, sizes, [costs[n] for n in sizes]))
    a, b = sizes[-2], sizes[-1]
    return costs[b] + (rows - b) * (costs[b] - costs[a]) / (b - a)


def jump_forward_bound(
    costs: dict[int, float],
    tokens: int,
    forced: int,
    drafts: list[int],
    redone: Sequence[int] = (),
    checkpoint: tuple[float, float] = (0.0, 0.0),
) -> float:
    """Tokens/s with exact jump-forward ÷ without that the timed batches allow for a run of
    ``tokens`` generated tokens, ``forced`` of them forced, whose verified drafts had ``drafts``
    tokens: without, one single-row evaluation per token; with, one per sampled token, a batch of
    1 + d rows where it came with a draft of d, and a batch of r rows for each cut draft whose
    kept rows were evaluated again after a rollback (``redone``), with the seconds of saving the
    state before each draft and of putting it back before each of those (``checkpoint``; grammar
    time left out of both)."""
    single = costs[1]
    sampled = tokens - forced
    save, restore = checkpoint
    spent = (sampled - len(drafts)) * single + sum(batch_cost(costs, 1 + d) + save for d in drafts)
    spent += sum(batch_cost(costs, r) + restore for r in redone)
    return tokens * single / spent if spent > 0 else math.nan


def _script_calls(llm: Any, n_tokens: int, repeats: int) -> dict[str, float]:
    """The Screenwriter's script call: free, constrained with jump-forward off and exact, and
    what the timed verify batches say exact jump-forward can gain on this model."""
    rates, forced, texts, last = script_rates(llm, ("free", "off", "exact"), n_tokens, repeats)
    costs, save, restore = _batch_costs(llm)
    exact = last["exact"]
    n_forced = round(forced["exact"][-1] * max(1, exact["tokens"]))
    drafts = exact["drafts"]
    checkpointed = rolls_back_by_checkpoint(llm.model.llama)  # the state saved before each draft
    return {
        "real_shape_free_tok_s": median(rates["free"]),
        "real_shape_script_exact_tok_s": median(rates["exact"]),
        "real_shape_script_plain_tok_s": median(rates["off"]),
        "real_shape_jump_forward_over_plain": paired(rates["exact"], rates["off"]),
        "real_shape_constrained_over_free": paired(rates["exact"], rates["free"]),
        "real_shape_forced_fraction": median(forced["exact"]),
        "real_shape_exact_same_text": float(texts["exact"] == texts["off"]),
        **{f"real_shape_batch_cost_rows{n}": costs[n] / costs[1] for n in BATCH_ROWS[1:]},
        "real_shape_draft_rows_mean": 1 + sum(drafts) / len(drafts) if drafts else 1.0,
        "real_shape_drafted_fraction": len(drafts) / max(1, exact["tokens"] - n_forced),
        "real_shape_redone_fraction": len(exact["redone"]) / len(drafts) if drafts else 0.0,
        "real_shape_checkpoint_save_ms": save * 1e3,
        "real_shape_checkpoint_restore_ms": restore * 1e3,
        "real_shape_jump_forward_bound": jump_forward_bound(
            costs,
            exact["tokens"],
            n_forced,
            drafts,
            exact["redone"],
            (save, restore) if checkpointed else (0.0, 0.0),
        ),
        "real_shape_script_prompt_tokens": last["free"]["prompt"],
    }


class _PackLoop:
    """The pack's whole decoding loop (``mangaka.llm.decode.decode``, greedy, no schema: the
    sampler, the library's bookkeeping, the abort check) on the loaded model's own context, a few
    tokens a round, continuing from round to round."""

    def __init__(self, raw: Any, rng: np.random.Generator) -> None:
        self.raw, self.rng = raw, rng
        self.held: list[int] = []  # the tokens the context holds, and the next one

    def rate(self, n_tokens: int) -> float:
        """Tokens/s of ``n_tokens`` more, each evaluated one at a time."""
        raw, held = self.raw, self.held
        if not held:  # a prompt as the bare contexts', evaluated before the clock starts
            raw.reset()  # the next evaluation drops the memory from position 0 on
            held.extend(random_tokens(self.rng, raw.n_vocab(), SETUP_PROMPT + 1))
            raw.eval(held[:-1])
        started = time.perf_counter()
        greedy = PRESETS["greedy"]
        done = decode(raw, list(held), len(held) - 1, sampling=greedy, constraint=None, budget=n_tokens)
        elapsed = time.perf_counter() - started
        # evaluated: the held token, then each generated one but the last (unless it ended)
        evaluated = len(done.tokens) + (done.finish_reason != "length")
        held.extend(done.tokens)
        if done.finish_reason != "length":  # an end-of-generation token: start again next round
            held.clear()
        return evaluated / elapsed


def _context_setups(llm: Any, quick: bool) -> dict[str, float]:
    """Decoding on three contexts of the one loaded model, in alternating rounds, each of the
    tokens it needs: the pack's own setup (the loaded context's parameters: no recurrent-state
    snapshots by default), the same with ``SNAPSHOTS`` snapshots a sequence (``n_rs_seq``, how
    exact jump-forward rolled back until 2026-12-04), and llama-bench's (batch 2048, flash
    attention ``auto``, no snapshots); and in the same rounds the pack's whole decoding loop
    (``_PackLoop``) on the loaded model's own context. Medians of the rounds, and three ratios of the
    rounds' pairs: the pack's context ÷ with snapshots (what they would cost each decoded token),
    the pack's context ÷ llama-bench's setup, and the pack's decoding loop ÷ llama-bench's setup
    (what the pack gets of llama.cpp's own one-token loop, side by side)."""
    import llama_cpp

    raw = llm.model.llama
    abort = llm.model.abort_flag
    rounds, per_round = SETUP_ROUNDS[quick], SETUP_TOKENS[quick]
    own = raw.context_params

    def params(**changes: int) -> Any:
        copy = type(own).from_buffer_copy(own)
        for name, value in changes.items():
            setattr(copy, name, value)
        return copy

    # Each a context of the tokens it needs, as llama-bench's: the depth costs nothing measurable
    # at these lengths, and a 32k context's KV cache each would crowd the page cache.
    n_ctx = SETUP_PROMPT + rounds * per_round + 128
    setups = {
        "pack": params(n_ctx=n_ctx),
        "snapshots": params(n_ctx=n_ctx, n_rs_seq=SNAPSHOTS),
        "bench_like": params(
            n_ctx=n_ctx, n_batch=2048, n_ubatch=512, n_rs_seq=0,
            flash_attn_type=llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
        ),
    }  # fmt: skip
    rng = np.random.default_rng(2)
    n_vocab = raw.n_vocab()

    decode = decoder(raw, abort, "the setups compared")

    pack_loop = _PackLoop(raw, rng)

    def run() -> dict[str, list[float]]:
        with made_contexts(raw, setups) as contexts:
            for ctx in contexts.values():
                decode(ctx, random_tokens(rng, n_vocab, SETUP_PROMPT))
            rates: dict[str, list[float]] = {name: [] for name in [*contexts, "pack_loop"]}
            for _ in range(rounds):
                for name, ctx in contexts.items():
                    rates[name].append(one_at_a_time(decode, ctx, random_tokens(rng, n_vocab, per_round)))
                rates["pack_loop"].append(pack_loop.rate(per_round))
            return rates

    rates = llm.model.decode_thread.run(run, abort)
    return {
        "real_shape_setup_pack_tok_s": median(rates["pack"]),
        "real_shape_setup_snapshots_tok_s": median(rates["snapshots"]),
        "real_shape_setup_bench_like_tok_s": median(rates["bench_like"]),
        "real_shape_snapshots_cost": paired(rates["pack"], rates["snapshots"]),
        "real_shape_pack_over_bench_like_setup": paired(rates["pack"], rates["bench_like"]),
        "real_shape_setup_pack_loop_tok_s": median(rates["pack_loop"]),
        "real_shape_pack_loop_over_bench_like_setup": paired(rates["pack_loop"], rates["bench_like"]),
    }


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
    before = _rss()
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
    by_depth = _decode_at_depths(llm, depths)
    figures.update(by_depth)
    if not quick:  # the quick slice's one attention layer over 1,536 tokens adds less than the noise
        figures.update(
            context_cost(
                {d: by_depth[f"real_shape_decode_tok_s_ctx{d}"] for d in depths},
                attention_flops_per_position(model),
            )
        )
    figures.update(_script_calls(llm, 32 if quick else 128, 1 if quick else SCRIPT_ROUNDS))
    # Resident memory above the load's start once every depth is decoded (every expert used, the
    # KV cache written) and drafts verified (the state's copy made), against the estimate; the file
    # pages read only to be copied were paged out after the load (page_out): what the model needs.
    after = _rss()
    held = after["VmRSS"] - before["VmRSS"]
    tg = ceiling["tg128"]
    figures["real_shape_free_over_llama_bench"] = figures["real_shape_free_tok_s"] / tg if tg else None
    figures.update(_context_setups(llm, quick))
    figures.update(flash_attn_pair(llm, quick))
    gib = 2**30
    figures.update(
        {
            "real_shape_memory_estimate_gib": estimate.total / gib,
            "real_shape_memory_estimate_weights_gib": estimate.weights / gib,
            "real_shape_memory_estimate_kv_gib": estimate.kv_cache / gib,
            "real_shape_memory_estimate_recurrent_gib": estimate.recurrent / gib,
            "real_shape_memory_estimate_compute_gib": estimate.compute / gib,
            "real_shape_memory_measured_gib": held / gib,
            "real_shape_memory_measured_anon_gib": (after["RssAnon"] - before["RssAnon"]) / gib,
            "real_shape_memory_measured_file_gib": (after["RssFile"] - before["RssFile"]) / gib,
            "real_shape_memory_paged_out": float(paged_out > 0),
            "real_shape_estimate_over_measured": estimate.total / held,
            "real_shape_bytes_per_token_mib": tokens / 2**20,
            "real_shape_expert_bytes_per_token_mib": parts["experts"] / 2**20,
            "memory_bandwidth_gb_s": bandwidth / 1e9,
            "real_shape_bandwidth_bound_tok_s": bandwidth / tokens,
            "real_shape_achieved_over_bound": figures["real_shape_free_tok_s"] * tokens / bandwidth,
            "real_shape_llama_bench_over_bound": tg * tokens / bandwidth if tg else None,
        }
    )
    release_models()
    if tg:
        figures.update(_at_prompt_depth(model, threads, gpu_layers, 1 if quick else 2, figures))
    else:
        figures.update(dict.fromkeys(AT_PROMPT_KEYS))
    bad = [k for k, v in figures.items() if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        raise MangakaError(f"bench real_shape measured no finite value for {', '.join(bad)}")
    return figures
