"""The OpenAI-compatible backend against llama.cpp's ``llama-server``: 1 and 4 requests in flight."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ... import procs
from ...errors import MangakaError
from ...llm.base import PRESETS
from ...llm.native import import_llama_cpp
from ...llm.openai import OpenAICompatibleLLM
from .common import median, native_script, tiny_model

log = logging.getLogger(__name__)


# Every reply the same length: a lowercase string of exactly 300 characters.
REPLY_SCHEMA = {
    "type": "object",
    "properties": {"story": {"type": "string", "pattern": "^[a-z ]{300}$"}},
    "required": ["story"],
    "additionalProperties": False,
}


def remote_concurrency(threads: int, requests: int = 8) -> dict[str, Any]:
    """Tokens/s through the OpenAI-compatible backend with 1 and 4 requests in flight, against
    llama.cpp's ``llama-server`` started here with 4 parallel slots (tiny qwen35moe)."""
    script = native_script("llama_server.py")
    found = procs.run([sys.executable, str(script), "--print-path"], capture_output=True, text=True)
    binary = found.stdout.strip()
    if found.returncode != 0 or not binary:
        log.warning("llama-server is not built; run `python native/llama_server.py` for the remote figures")
        return {"remote_n1_tok_s": None, "remote_n4_tok_s": None, "remote_n4_over_n1": None}
    model = tiny_model("qwen35moe-32k", arch="qwen35moe", context_length=32768)
    proc, url = _start_server(binary, model, threads)
    try:
        _wait_until_healthy(proc, url)
        figures: dict[str, list[float]] = {"n1": [], "n4": []}
        for label, workers in (("n1", 1), ("n4", 4), ("n1", 1), ("n4", 4)):
            figures[label].append(_tokens_per_second(url, workers, requests))
    finally:
        procs.end_group(proc)
    n1, n4 = median(figures["n1"]), median(figures["n4"])
    return {"remote_n1_tok_s": n1, "remote_n4_tok_s": n4, "remote_n4_over_n1": n4 / n1}


def _start_server(binary: str, model: Path, threads: int) -> tuple[subprocess.Popen[bytes], str]:
    """llama-server on a free local port with 4 slots, linked to the wheel's libraries; its URL."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cmd = [binary, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "16384",
           "--parallel", "4", "-t", str(threads), "--no-webui", "--jinja"]  # fmt: skip
    libdir = Path(import_llama_cpp().__file__).resolve().parent / "lib"  # the binary links the wheel's libs
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": os.pathsep.join(filter(None, [str(libdir), os.environ.get("LD_LIBRARY_PATH")])),
    }
    proc = procs.popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return proc, f"http://127.0.0.1:{port}"


def _wait_until_healthy(proc: subprocess.Popen[bytes], url: str, seconds: float = 120) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2).read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise MangakaError("llama-server did not start for the remote benchmark") from None
            time.sleep(0.2)


def _tokens_per_second(url: str, workers: int, requests: int) -> float:
    """``requests`` schema-constrained replies, ``workers`` in flight at once: tokens/s over all."""
    import concurrent.futures

    llm = OpenAICompatibleLLM(url, concurrency=workers)

    def one(i: int) -> int:
        messages = [{"role": "user", "content": f"Story number {i}."}]
        done = llm.complete(messages, schema=REPLY_SCHEMA, sampling=PRESETS["greedy"], max_tokens=600)
        return done.usage.completion_tokens

    started = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        tokens = sum(pool.map(one, range(requests)))
    return tokens / (time.perf_counter() - started)
