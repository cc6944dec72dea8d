"""``lora/train.py`` and ``lora/convert.py`` check their inputs before torch is imported or
anything is loaded: run here, in the pack's Python, which has no torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def train(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "lora/train.py", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Path]:
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_text(json.dumps({"architectures": ["Qwen3_5MoeForCausalLM"]}))
    data = tmp_path / "set"
    data.mkdir()
    (data / "card.json").write_text(json.dumps({"examples": {"train": 2, "val": 0}}))
    (data / "train.jsonl").write_text("{}\n")
    out = tmp_path / "loras"
    out.mkdir()
    return {"base": base, "data": data, "out": out / "manga.gguf"}


def args_of(s: dict[str, Path], **changes: str) -> list[str]:
    values = {"--base": str(s["base"]), "--data": str(s["data"]), "--out": str(s["out"]), **changes}
    return [x for kv in values.items() for x in kv]


def test_without_torch_the_command_says_what_to_install(setup):
    run = train(*args_of(setup))
    assert run.returncode == 1
    assert (
        "needs torch, transformers and peft" in run.stderr
        and "pip install -r lora/requirements.txt" in run.stderr
    )
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"--data": "/nonexistent"}, "is not a dataset (no card.json and train.jsonl)"),
        ({"--out": "/tmp/manga.bin"}, "must be a .gguf file"),
        ({"--out": "/nonexistent-folder/manga.gguf"}, "does not exist; create it first"),
        ({"--rank": "0"}, "--rank must be at least 1"),
        ({"--lr": "-1"}, "--lr must be a positive number"),
    ],
)
def test_bad_inputs_are_refused_by_name(setup, change, expected):
    run = train(*args_of(setup, **change))
    assert run.returncode == 1 and expected in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_a_base_of_another_architecture_or_no_model_folder_is_refused(setup, tmp_path):
    (setup["base"] / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    run = train(*args_of(setup))
    assert (
        run.returncode == 1
        and "architecture LlamaForCausalLM is not one this pack trains LoRAs for" in run.stderr
    )
    run = train(*args_of(setup, **{"--base": str(tmp_path)}))
    assert run.returncode == 1 and "is not a Hugging Face model folder (no config.json)" in run.stderr


def test_an_existing_lora_is_never_overwritten(setup):
    setup["out"].write_bytes(b"GGUF")
    run = train(*args_of(setup))
    assert run.returncode == 1 and "exists; give a new --out" in run.stderr


def load_train():
    """lora/train.py as a module (its torch imports are inside train(), so this Python can)."""
    import importlib.util

    sys.path.insert(0, str(ROOT / "lora"))
    spec = importlib.util.spec_from_file_location("mangaka_lora_train", ROOT / "lora" / "train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_memory_estimate_and_the_gpu_room_check(caplog):
    train = load_train()
    # Qwen3.5-35B-A3B's 69.3 GB of bf16 text weights at the default 8192 tokens: an 80 GB card
    assert 75 < train.memory_needed_gb(69.3, 8192, "on") < 80
    assert train.memory_needed_gb(69.3, 8192, "off") > 200  # why checkpointing is on by default
    args = train.build_parser().parse_args(["--base", "B", "--data", "D", "--out", "o.gguf"])
    train.check_gpu_room(69.3, args, free=79.0)  # fits: nothing said
    assert "may need" not in caplog.text
    with caplog.at_level("WARNING", logger="mangaka.lora"):
        train.check_gpu_room(69.3, args, free=74.0)
    assert "may need about 76 GB and the GPU has 74 GB free" in caplog.text
    assert "lower --max-tokens" in caplog.text
    with pytest.raises(train.TrainError, match=r"--base B has 69 GB of weights but the GPU has 40 GB free"):
        train.check_gpu_room(69.3, args, free=40.0)
