"""The manga LoRA's whole path on Qwen3.5-35B-A3B's real architecture, on CPU: a tiny random-weight
``Qwen3_5MoeForCausalLM`` made with transformers → GGUF with llama.cpp's own converter → loaded by
the pack; a dataset exported from approved pairs → a LoRA trained with PEFT (the loss falls) →
converted → attached as Load LLM attaches it; greedy tokens of transformers + PEFT and of the pack
(llama.cpp + the GGUF LoRA) agree, and differ from the base model's.

Training runs in the LoRA Python (``lora/requirements.txt``: torch, transformers, peft), which
``tests/run.sh`` makes as ``.venv-lora`` and names in ``MANGAKA_LORA_PYTHON``; the pack's side runs
here, in the pack's own Python, which never imports torch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mangaka.llm.base import sampling_preset
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "mangaka" / "evaluate" / "gold"
PROMPT = [
    {"role": "system", "content": "You adapt novels into manga screenplays. Reply with JSON only."},
    {"role": "user", "content": "The last ferry left at dusk. Lin ran down the pier."},
]
GREEDY_TOKENS = 12


def lora_python() -> str:
    python = os.environ.get("MANGAKA_LORA_PYTHON", "")
    if not python or not Path(python).exists():
        if os.environ.get("MANGAKA_REQUIRE_LORA") == "1":
            pytest.fail("MANGAKA_LORA_PYTHON is not set: run the tests with `bash tests/run.sh`")
        pytest.skip("no LoRA Python (MANGAKA_LORA_PYTHON): run the tests with `bash tests/run.sh`")
    return python


def run(*cmd: str, timeout: float = 900) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (cmd, done.stdout[-2000:], done.stderr[-4000:])
    return done


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny model's Hugging Face folder and its GGUF (llama.cpp's converter)."""
    python = lora_python()
    folder = tmp_path_factory.mktemp("lora")
    hf = folder / "Qwen3.5-tiny"
    run(python, "tests/lora/tiny_hf.py", str(hf))
    gguf = folder / "Qwen3.5-tiny.gguf"
    # the test tokenizer is made here, so the converter cannot know its pre-tokenizer: name it
    run(python, "lora/convert.py", "model", str(hf), str(gguf), "--pre-tokenizer", "qwen35")
    return hf, gguf


def hf_greedy(python: str, hf: Path, ids: list[int], adapter: Path | None = None) -> str:
    args = [python, "tests/lora/tiny_hf.py", "--greedy", str(hf), json.dumps(ids), str(GREEDY_TOKENS)]
    tokens = json.loads(run(*args, *([str(adapter)] if adapter else [])).stdout.strip().splitlines()[-1])
    decode = (
        "import json, sys; from transformers import AutoTokenizer; "
        "print(json.dumps(AutoTokenizer.from_pretrained(sys.argv[1]).decode(json.loads(sys.argv[2]))))"
    )
    return json.loads(run(python, "-c", decode, str(hf), json.dumps(tokens)).stdout.strip().splitlines()[-1])


def pack_greedy(gguf: Path, lora: Path | None = None) -> tuple[list[int], str]:
    llm = LlamaCppLLM(gguf, LoadOptions(n_ctx=4096, n_threads=1), lora)
    ids = llm.tokenize_prompt(PROMPT)
    done = llm.complete(PROMPT, sampling=sampling_preset("greedy"), max_tokens=GREEDY_TOKENS)
    return ids, done.text


def test_the_converted_base_loads_in_the_pack_and_agrees_with_transformers(base):
    hf, gguf = base
    ids, text = pack_greedy(gguf)
    assert text.strip()
    assert hf_greedy(lora_python(), hf, ids).strip() == text.strip()


def test_a_lora_trained_on_an_exported_dataset_converts_attaches_and_agrees(base, tmp_path):
    python = lora_python()
    hf, gguf = base
    pairs = tmp_path / "approved"
    pairs.mkdir()
    for name in ("en3", "zh2"):
        shutil.copy(GOLD / f"{name}.txt", pairs / f"{name}.txt")
        shutil.copy(GOLD / f"{name}.reference.json", pairs / f"{name}.json")
    data = tmp_path / "set"
    run(sys.executable, "-m", "mangaka", "dataset", str(pairs), "-o", str(data), "--val", "0")
    loras = tmp_path / "llm_loras"
    loras.mkdir()
    out = loras / "manga.gguf"
    run(python, "lora/train.py", "--base", str(hf), "--data", str(data), "--out", str(out),
        "--max-steps", "8", "--lr", "5e-3", "--checkpoint-every", "4", "--keep-checkpoints")  # fmt: skip
    manifest = json.loads((loras / "manga.gguf.manifest.json").read_text(encoding="utf-8"))
    training = manifest["training"]
    assert training["loss_last"] < training["loss_first"], training  # the loss falls
    assert manifest["base"]["architecture"] == "Qwen3_5MoeForCausalLM"
    assert manifest["adapter"]["rank"] == 16 and "in_proj_qkv" in manifest["adapter"]["targets"]
    assert manifest["dataset"]["languages"] == {"en": 1, "zh": 1}
    # the shape the pack compares at attach time, as the converter wrote the base's GGUF header
    assert manifest["base"]["shape"] == {"layers": 4, "mtp_layers": 0, "hidden": 64, "experts": 4,
                                         "expert_ffn": 32}, manifest["base"]  # fmt: skip
    assert (loras / "manga.gguf.checkpoints" / "step-4" / "adapter_config.json").is_file()
    # the final PEFT adapter, as transformers applies it, against the GGUF LoRA in the pack
    final = loras / "manga.gguf.checkpoints" / "final"
    ids, base_text = pack_greedy(gguf)
    _, lora_text = pack_greedy(gguf, out)
    assert lora_text.strip() != base_text.strip()  # the LoRA changes what the model writes
    assert hf_greedy(python, hf, ids, final).strip() == lora_text.strip()
    # and the eval compares the two: the base (a) against the base with the LoRA (b)
    report = run(sys.executable, "-m", "mangaka", "eval", "gold", "--model", str(gguf), "--chapters", "en3",
                 "--seeds", "1", "--panels", "2", "--dialogue", "2", "--threads", "1",
                 "--compare", f"lora={out}", "--json", "--out", str(tmp_path / "eval"))  # fmt: skip
    configs = json.loads(report.stdout)["configs"]
    assert configs["a"]["settings"]["lora"] is None and configs["b"]["settings"]["lora"] == str(out)
    assert all(configs[k]["mean"]["valid"]["mean"] == 1.0 for k in "ab")
