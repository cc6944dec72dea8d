"""Decoding speed: constrained against free, the grammar's cost at a 248k vocabulary, our call's
overhead over a bare llama-cpp-python call, llama-bench's ceiling and prefix reuse."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from ... import procs
from ...demo import DEMO_CHAPTER
from ...llm.base import PRESETS, CallContext
from ...llm.grammar import schema_to_gbnf
from ...llm.inprocess import LlamaCppLLM, LoadOptions
from ...llm.loading import release_models
from ...prompts import prompt
from ...screenplay.schema import cast_call_schema, script_call_schema
from .common import (
    CAST_SCHEMA_CHARACTERS,
    QWEN35_VOCAB,
    Clock,
    median,
    native_script,
    paired,
    stream_rate,
    tiny_model,
)

log = logging.getLogger(__name__)


def _free_then_constrained(llm, messages: list, schema: dict, n_tokens: int, engine: str | None) -> tuple:
    """Greedy decoding of ``n_tokens``, free then constrained to ``schema``: the two clocks."""
    clocks = Clock(), Clock()
    llm.complete(messages, sampling=PRESETS["greedy"], max_tokens=n_tokens, context=CallContext(clocks[0]))
    llm.complete(
        messages,
        schema=schema,
        sampling=PRESETS["greedy"],
        max_tokens=n_tokens,
        engine=engine,
        context=CallContext(clocks[1]),
    )
    return clocks


def constrained_vs_free(
    model: Path, threads: int, gpu_layers: int, n_tokens: int, repeats: int, engine: str | None
) -> dict[str, float]:
    """gemma-3-270m: tokens/s free and constrained, ours and llama-cpp-python's response_format."""
    schema = cast_call_schema(CAST_SCHEMA_CHARACTERS)
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=2048, n_threads=threads, n_gpu_layers=gpu_layers))
    messages = [{"role": "user", "content": "List the characters of a story set in a lantern shop, as JSON."}]
    raw = llm.model.llama
    out: dict[str, list[float]] = {"free": [], "ours": [], "builtin": []}
    for _ in range(repeats):
        free, ours = _free_then_constrained(llm, messages, schema, n_tokens, engine)
        out["free"].append(free.rate())
        out["ours"].append(ours.rate())
        raw.reset()
        rate, _n = stream_rate(
            raw.create_chat_completion(
                messages=messages, response_format={"type": "json_object", "schema": schema},
                temperature=0.0, max_tokens=n_tokens, stream=True,
            )
        )  # fmt: skip
        out["builtin"].append(rate)
    # Ratios are medians of the ratio within each round: the machine's load drifts between rounds,
    # and a round's runs are back to back.
    return {
        "gemma_free_tok_s": median(out["free"]),
        "gemma_constrained_tok_s_ours": median(out["ours"]),
        "gemma_constrained_tok_s_builtin": median(out["builtin"]),
        "gemma_constrained_over_free_ours": paired(out["ours"], out["free"]),
        "gemma_constrained_over_free_builtin": paired(out["builtin"], out["free"]),
    }


def script_messages() -> tuple[list[dict[str, str]], dict]:
    """The messages and schema of the Screenwriter's script call on the demo chapter."""
    chapter = DEMO_CHAPTER.read_text(encoding="utf-8")
    messages = [
        {"role": "system", "content": "You adapt novel chapters into manga scripts."},
        {"role": "user", "content": f"Write the manga script of this chapter as JSON.\n\n{chapter}"},
    ]
    return messages, script_call_schema(["lin", "tan", "bao"], 6, 8)


def script_rates(
    llm: Any, modes: tuple[str, ...], n_tokens: int, repeats: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, str], dict[str, dict[str, Any]]]:
    """The script call decoded greedily in each of ``modes`` (``free``: no schema; else the
    jump-forward mode), each round's runs back to back with the same ``n_tokens`` budget: tokens/s
    per mode, the share of the output the schema forced, the last text of each mode and its last
    run's ``tokens`` (generated), ``prompt`` (prompt tokens), ``drafts`` (draft size of each
    batch exact jump-forward verified) and ``redone`` (rows evaluated again after each cut draft
    rolled back through a saved state)."""
    messages, schema = script_messages()
    rates: dict[str, list[float]] = {name: [] for name in modes}
    forced: dict[str, list[float]] = {name: [] for name in modes if name not in ("free", "off")}
    texts: dict[str, str] = {}
    last: dict[str, dict[str, Any]] = {}
    for _ in range(repeats):
        for name in modes:
            llm.jump_forward = "off" if name == "free" else name
            clock = Clock()
            done = llm.complete(
                messages,
                schema=None if name == "free" else schema,
                sampling=PRESETS["greedy"],
                max_tokens=n_tokens,
                engine="llguidance",
                context=CallContext(on_progress=clock),
            )
            rates[name].append(clock.rate())
            texts[name] = done.text
            last[name] = {
                "tokens": done.usage.completion_tokens,
                "prompt": done.usage.prompt_tokens,
                "drafts": list(llm.last_draft_sizes),
                "redone": list(llm.last_redone_rows),
            }
            if name in forced:
                forced[name].append(llm.last_forced_tokens / max(1, done.usage.completion_tokens))
    llm.jump_forward = "exact"
    return rates, forced, texts, last


def jump_forward(
    models: dict[str, Path], threads: int, gpu_layers: int, n_tokens: int, repeats: int
) -> dict[str, float]:
    """The Screenwriter's script schema: tokens/s with jump-forward (``exact``, the default, and
    ``canonical``) ÷ without, ÷ free decoding, and the share of the output the schema forced;
    each round's four runs back to back, the same ``n_tokens`` budget. ``models``: figure suffix
    → model ("" for gemma-3-270m)."""
    figures: dict[str, float] = {}
    for suffix, model in models.items():
        llm = LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=threads, n_gpu_layers=gpu_layers))
        modes = ("free", "off", "exact", "canonical")
        rates, forced, texts, _ = script_rates(llm, modes, n_tokens, repeats)
        tag = f"_{suffix}" if suffix else ""
        figures[f"script_forced_fraction{tag}"] = median(forced["exact"])
        figures[f"script_jump_forward_over_plain{tag}"] = paired(rates["exact"], rates["off"])
        figures[f"script_constrained_over_free{tag}"] = paired(rates["exact"], rates["free"])
        figures[f"script_plain_over_free{tag}"] = paired(rates["off"], rates["free"])
        figures[f"script_exact_same_text{tag}"] = float(texts["exact"] == texts["off"])
        figures[f"script_canonical_forced_fraction{tag}"] = median(forced["canonical"])
        figures[f"script_canonical_over_plain{tag}"] = paired(rates["canonical"], rates["off"])
        figures[f"script_canonical_over_free{tag}"] = paired(rates["canonical"], rates["free"])
    return figures


def grammar_cost_248k(threads: int, n_tokens: int, repeats: int, engine: str | None) -> dict[str, float]:
    """Milliseconds the grammar adds per generated token at Qwen3.5's vocabulary (tiny qwen35moe)."""
    from llama_cpp import LlamaGrammar

    model = tiny_model("qwen35moe-248k", arch="qwen35moe", vocab_size=QWEN35_VOCAB, context_length=32768)
    schema = {
        "type": "object",
        "properties": {"story": {"type": "string", "minLength": 1, "maxLength": 400}},
        "required": ["story"],
        "additionalProperties": False,
    }
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=threads))
    messages = [{"role": "user", "content": "Tell a story."}]
    raw = llm.model.llama
    tokens = llm.tokenize_prompt(messages)
    free, ours, builtin = [], [], []
    for _ in range(repeats):
        free_clock, ours_clock = _free_then_constrained(llm, messages, schema, n_tokens, engine)
        free.append(free_clock.per_token_ms())
        ours.append(ours_clock.per_token_ms())
        raw.reset()
        grammar = LlamaGrammar.from_string(schema_to_gbnf(schema), verbose=False)
        stamps = []
        for i, _tok in enumerate(raw.generate(tokens, temp=0.0, grammar=grammar, reset=True)):
            stamps.append(time.perf_counter())
            if i + 1 >= n_tokens:
                break
        builtin.append(1000.0 * (stamps[-1] - stamps[0]) / (len(stamps) - 1))
    f = median(free)
    cost_ours, cost_builtin = max(median(ours) - f, 0.0), max(median(builtin) - f, 0.0)
    return {
        "qwen35moe_248k_free_ms_per_token": f,
        "qwen35moe_248k_grammar_ms_per_token_ours": cost_ours,
        "qwen35moe_248k_grammar_ms_per_token_builtin": cost_builtin,
        "qwen35moe_248k_grammar_cost_ours_over_builtin": cost_ours / cost_builtin if cost_builtin else None,
    }


def overhead(model: Path, threads: int, gpu_layers: int, n_tokens: int, repeats: int) -> dict[str, float]:
    """Our call ÷ a bare llama-cpp-python call producing the same tokens, on a Screenwriter prompt
    (SmolLM2: system prompt, chapter, cast task), free decoding, from a cold context each time."""
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=threads, n_gpu_layers=gpu_layers))
    messages = _screenwriter_messages()
    tokens = llm.tokenize_prompt(messages)
    raw = llm.model.llama
    ours, bare = [], []
    same: set[bool] = set()
    for _ in range(repeats):
        llm.model.prefix_cache.clear()
        raw.reset()
        t = time.perf_counter()
        done = llm.complete(messages, sampling=PRESETS["greedy"], max_tokens=n_tokens)
        ours.append(time.perf_counter() - t)
        raw.reset()
        t = time.perf_counter()
        ref = raw.create_completion(tokens, temperature=0.0, max_tokens=n_tokens)
        bare.append(time.perf_counter() - t)
        same.add(done.text.strip() == ref["choices"][0]["text"].strip())
    return {
        "screenwriter_call_over_bare_call": median(ours) / median(bare),
        "screenwriter_call_same_tokens": all(same),
    }


def _screenwriter_messages() -> list[dict[str, str]]:
    chapter = DEMO_CHAPTER.read_text(encoding="utf-8")
    return [
        {
            "role": "system",
            "content": prompt("screenwriter/system", "en", style="manga", language_name="English"),
        },
        {"role": "user", "content": prompt("screenwriter/chapter", "en", chapter=chapter)},
        {
            "role": "user",
            "content": prompt("screenwriter/cast", "en", max_characters=4, max_name=40, max_appearance=240),
        },
    ]


def free_vs_llama_bench(
    model: Path, threads: int, gpu_layers: int, n_tokens: int, repeats: int
) -> dict[str, Any]:
    """Our free decoding ÷ llama.cpp's own llama-bench (tg), same model and threads."""
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=2048, n_threads=threads, n_gpu_layers=gpu_layers))
    messages = [{"role": "user", "content": "Write a long story about a lantern shop."}]
    rates, ceiling = [], []
    for _ in range(repeats):  # interleaved, so a change in the machine's load hits both alike
        clock = Clock()
        llm.complete(
            messages, sampling=PRESETS["greedy"], max_tokens=n_tokens, context=CallContext(on_progress=clock)
        )
        rates.append(clock.rate())
        tg_once = _llama_bench_tg(model, threads, gpu_layers, n_tokens)
        if tg_once is None:
            break
        ceiling.append(tg_once)
    tg = median(ceiling) if ceiling else None
    return {
        "free_tok_s": median(rates),
        "llama_bench_tg_tok_s": tg,
        "free_over_llama_bench": paired(rates, ceiling) if ceiling else None,
    }


def _llama_bench_tg(model: Path, threads: int, gpu_layers: int, n_tokens: int) -> float | None:
    script = native_script("llama_bench.py")
    found = procs.run([sys.executable, str(script), "--print-path"], capture_output=True, text=True)
    binary = found.stdout.strip()
    if found.returncode != 0 or not binary:
        log.warning("llama-bench is not built; run `python native/llama_bench.py` to include the C ceiling")
        return None
    import importlib.util

    spec = importlib.util.spec_from_file_location("mangaka_native_llama_bench", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ngl = 999 if gpu_layers < 0 else gpu_layers
    try:
        result = module.run_llama_bench(binary, model, threads, n_tokens, 0, gpu_layers=ngl, repetitions=1)
    except Exception as exc:  # noqa: BLE001 - a failed ceiling measurement must not end the benchmark
        log.warning("llama-bench failed: %s", exc)
        return None
    return float(result["tg_tokens_per_s"])


def prefix_reuse(threads: int) -> dict[str, int]:
    """Prompt tokens decoded for chapters 1 and 2 of a batch on tiny qwen35moe, with and without
    snapshots (the Screenwriter's system prompt is the shared prefix)."""
    model = tiny_model("qwen35moe-32k", arch="qwen35moe", context_length=32768)
    base = _screenwriter_messages()
    chapters = [
        base,
        [base[0], {"role": "user", "content": base[1]["content"].replace("Mei", "Rin")}, base[2]],
    ]
    out: dict[str, int] = {}
    for label, cache_mb in (("with_reuse", None), ("without_reuse", 0)):
        release_models()
        llm = LlamaCppLLM(model, LoadOptions(n_ctx=8192, n_threads=threads))
        if cache_mb is not None:
            llm.model.prefix_cache.max_bytes = cache_mb
        for i, messages in enumerate(chapters, 1):
            tokens = llm.tokenize_prompt(messages)
            out["shared_prefix_tokens"] = min(llm.message_boundaries(messages, tokens, thinking=False))
            done = llm.complete(messages, sampling=PRESETS["greedy"], max_tokens=4)
            out[f"chapter{i}_prompt_tokens"] = done.usage.prompt_tokens
            out[f"chapter{i}_decoded_{label}"] = done.usage.prompt_tokens_decoded
    release_models()
    return {f"qwen35moe_{k}": v for k, v in out.items()}
