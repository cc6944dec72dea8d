"""Resident memory with a LoRA attached after load, against llama-cpp-python's ``lora_path``."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from ... import procs
from ...errors import MangakaError
from ...paths import PACK_ROOT

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
    from ..tiny_models import write_lora  # gguf and numpy: loaded only to write a LoRA

    with tempfile.TemporaryDirectory() as tmp:
        lora = write_lora(Path(tmp) / "lora.gguf", model, rank=8)
        adapter_size = lora.stat().st_size
        results = {}
        for mode in ("after_load", "lora_path"):
            run = procs.run(
                [sys.executable, "-c", _RSS_SCRIPT, str(model), str(lora), mode, str(threads)],
                capture_output=True, text=True, cwd=PACK_ROOT,
                env={**os.environ, "PYTHONPATH": str(PACK_ROOT)},
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
