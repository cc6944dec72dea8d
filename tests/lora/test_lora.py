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
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mangaka.llm import inprocess
from mangaka.llm.base import sampling_preset
from mangaka.llm.gguf_info import read_gguf_info
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions
from tests.lora.support import lora_python

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "mangaka" / "evaluate" / "gold"
PROMPT = [
    {"role": "system", "content": "You adapt novels into manga screenplays. Reply with JSON only."},
    {"role": "user", "content": "The last ferry left at dusk. Lin ran down the pier."},
]
GREEDY_TOKENS = 12
TIE = 1e-3  # logits closer than this are a tie (see assert_same_greedy)


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


def pack_greedy(gguf: Path, lora: Path | None = None) -> tuple[list[int], list[int], str]:
    """The prompt's ids, the greedy tokens and their text, as the pack (Load LLM) generates them."""
    seen: dict[str, list[int]] = {}
    decode = inprocess.decode

    def recording(llama, tokens, start, **kw):
        result = decode(llama, tokens, start, **kw)
        seen["tokens"] = list(result.tokens)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(inprocess, "decode", recording)
        llm = LlamaCppLLM(gguf, LoadOptions(n_ctx=4096, n_threads=1), lora)
        ids = llm.tokenize_prompt(PROMPT)
        done = llm.complete(PROMPT, sampling=sampling_preset("greedy"), max_tokens=GREEDY_TOKENS)
    assert seen["tokens"] and done.text.strip()
    return ids, seen["tokens"], done.text


GAPS = """
import json, sys
sys.path.insert(0, "tests/lora")
from tiny_hf import gaps
jobs = json.loads(sys.argv[2])
print(json.dumps([gaps(sys.argv[1], ids, tokens, adapter) for ids, tokens, adapter in jobs]))
"""


def hf_gaps(hf: Path, ids: list[int], *runs: tuple[list[int], Path | None]) -> list[list[float]]:
    """For each (tokens, adapter) in ``runs``: per token, how far below transformers' best logit it
    is (tiny_hf.py's ``gaps``), all in one LoRA Python process (one torch start-up, not one a run)."""
    jobs = [[ids, tokens, str(adapter) if adapter else None] for tokens, adapter in runs]
    done = run(lora_python(), "-c", GAPS, str(hf), json.dumps(jobs))
    return json.loads(done.stdout.strip().splitlines()[-1])


def assert_same_greedy(tokens: list[int], gaps: list[float]) -> None:
    """Each token the pack chose is transformers' greedy choice after the same tokens (``gaps``
    from ``hf_gaps``), or ties with it: random tiny weights make near ties (seen: 1e-4 apart) that
    llama.cpp and torch, adding in another order, may break either way."""
    assert len(gaps) == len(tokens) and max(gaps) <= TIE, list(zip(tokens, gaps, strict=True))


def export(pairs_from: tuple[str, ...], folder: Path) -> Path:
    """A training set exported with ``python -m mangaka dataset`` from gold pairs."""
    pairs = folder / "approved"
    pairs.mkdir()
    for name in pairs_from:
        shutil.copy(GOLD / f"{name}.txt", pairs / f"{name}.txt")
        shutil.copy(GOLD / f"{name}.reference.json", pairs / f"{name}.json")
    data = folder / "set"
    run(sys.executable, "-m", "mangaka", "dataset", str(pairs), "-o", str(data), "--val", "0")
    return data


def train(hf: Path, data: Path, out: Path) -> dict:
    """Eight steps of lora/train.py; its manifest (the loss must fall)."""
    run(lora_python(), "lora/train.py", "--base", str(hf), "--data", str(data), "--out", str(out),
        "--max-steps", "8", "--lr", "5e-3", "--checkpoint-every", "4", "--keep-checkpoints")  # fmt: skip
    manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text(encoding="utf-8"))
    training = manifest["training"]
    assert training["loss_last"] < training["loss_first"], training  # the loss falls
    return manifest


def test_the_converted_base_loads_in_the_pack_and_agrees_with_transformers(base):
    hf, gguf = base
    ids, tokens, _ = pack_greedy(gguf)
    [gaps] = hf_gaps(hf, ids, (tokens, None))
    assert_same_greedy(tokens, gaps)


def test_a_lora_trained_on_an_exported_dataset_converts_attaches_and_agrees(base, tmp_path):
    hf, gguf = base
    data = export(("en3", "zh2"), tmp_path)
    loras = tmp_path / "llm_loras"
    loras.mkdir()
    out = loras / "manga.gguf"
    manifest = train(hf, data, out)
    assert manifest["base"]["architecture"] == "Qwen3_5MoeForCausalLM"
    assert manifest["adapter"]["rank"] == 16 and "in_proj_qkv" in manifest["adapter"]["targets"]
    assert manifest["dataset"]["languages"] == {"en": 1, "zh": 1}
    # the shape the pack compares at attach time, as the converter wrote the base's GGUF header
    assert manifest["base"]["shape"] == {"layers": 4, "mtp_layers": 0, "hidden": 64, "experts": 4,
                                         "expert_ffn": 32}, manifest["base"]  # fmt: skip
    assert (loras / "manga.gguf.checkpoints" / "step-4" / "adapter_config.json").is_file()
    # the final PEFT adapter, as transformers applies it, against the GGUF LoRA in the pack
    final = loras / "manga.gguf.checkpoints" / "final"
    ids, base_tokens, base_text = pack_greedy(gguf)
    _, lora_tokens, lora_text = pack_greedy(gguf, out)
    assert lora_text.strip() != base_text.strip()  # the LoRA changes what the model writes
    lora_gaps, base_gaps = hf_gaps(hf, ids, (lora_tokens, final), (base_tokens, final))
    assert_same_greedy(lora_tokens, lora_gaps)
    # the check can fail: the base model's tokens are not what transformers + the adapter choose
    assert max(base_gaps) > TIE
    # and the eval compares the two: the base (a) against the base with the LoRA (b)
    report = run(sys.executable, "-m", "mangaka", "eval", "gold", "--model", str(gguf), "--chapters", "en3",
                 "--seeds", "1", "--panels", "2", "--dialogue", "2", "--threads", "1",
                 "--compare", f"lora={out}", "--json", "--out", str(tmp_path / "eval"))  # fmt: skip
    configs = json.loads(report.stdout)["configs"]
    assert configs["a"]["settings"]["lora"] is None and configs["b"]["settings"]["lora"] == str(out)
    assert all(configs[k]["mean"]["valid"]["mean"] == 1.0 for k in "ab")
    # the eval is recorded in the LoRA's manifest, against the base it was compared with
    assert json.loads(report.stdout)["lora_manifests"] == [str(loras / "manga.gguf.manifest.json")]
    evals = json.loads((loras / "manga.gguf.manifest.json").read_text(encoding="utf-8"))["eval"]
    assert len(evals) == 1 and evals[0]["chapters"] == ["en3"] and evals[0]["seeds"] == [0]
    assert evals[0]["settings"]["lora"] == str(out) and evals[0]["against"]["settings"]["lora"] is None
    assert evals[0]["mean"] == configs["b"]["mean"] and evals[0]["against"]["mean"] == configs["a"]["mean"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny model in the published checkpoint's layout (vision tower, MTP layer) and its GGUF."""
    python = lora_python()
    folder = tmp_path_factory.mktemp("checkpoint")
    hf = folder / "Qwen3.5-tiny-checkpoint"
    run(python, "tests/lora/tiny_hf.py", "--checkpoint", str(hf))
    gguf = folder / "Qwen3.5-tiny-checkpoint.gguf"
    run(python, "lora/convert.py", "model", str(hf), str(gguf), "--pre-tokenizer", "qwen35")
    return hf, gguf


def test_the_published_layout_vision_tower_and_mtp_layer_trains_converts_and_agrees(checkpoint, tmp_path):
    """Qwen3.5-35B-A3B is published as ``Qwen3_5MoeForConditionalGeneration`` with an MTP layer:
    the converter keeps the text model and turns the MTP layer into a fifth (NextN) block;
    transformers trains the text model only. The LoRA's tensors (four blocks) still match."""
    hf, gguf = checkpoint
    header = read_gguf_info(gguf).metadata
    assert header["qwen35moe.block_count"] == 5 and header["qwen35moe.nextn_predict_layers"] == 1
    ids, base_tokens, base_text = pack_greedy(gguf)
    data = export(("en3",), tmp_path)
    out = tmp_path / "manga.gguf"
    manifest = train(hf, data, out)
    assert manifest["base"]["architecture"] == "Qwen3_5MoeForConditionalGeneration"
    assert manifest["base"]["shape"] == {"layers": 4, "mtp_layers": 1, "hidden": 64, "experts": 4,
                                         "expert_ffn": 32}, manifest["base"]  # fmt: skip
    _, lora_tokens, lora_text = pack_greedy(gguf, out)  # the manifest beside it is checked too
    assert lora_text.strip() != base_text.strip()
    final = out.with_name(out.name + ".checkpoints") / "final"
    base_gaps, lora_gaps = hf_gaps(hf, ids, (base_tokens, None), (lora_tokens, final))
    assert_same_greedy(base_tokens, base_gaps)  # the converted base agrees
    assert_same_greedy(lora_tokens, lora_gaps)


LOSSES = """
import json, sys, torch
sys.path.insert(0, "lora")
import train
from pathlib import Path
from transformers import AutoModelForCausalLM, AutoTokenizer
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
examples, _ = train.load_examples(Path(sys.argv[2]), AutoTokenizer.from_pretrained(sys.argv[1]), 8192)
out = []
for ids, prompt_len in examples:
    x = torch.tensor([ids])
    labels = x.clone()
    labels[0, :prompt_len] = -100
    masked = float(model(input_ids=x, labels=labels).loss)
    out.append([masked, float(train.answer_loss(model, x, prompt_len))])
print(json.dumps(out))
"""


def test_the_answer_only_loss_and_gradient_checkpointing_change_no_number(base, tmp_path):
    """lora/train.py's memory savings: logits for the answer's positions only (the loss equals
    transformers' masked ``labels`` loss) and gradient checkpointing (on by default: the same
    losses as without it)."""
    hf, _ = base
    data = export(("en3", "zh2"), tmp_path)
    done = run(lora_python(), "-c", LOSSES, str(hf), str(data / "train.jsonl"))
    pairs = json.loads(done.stdout.splitlines()[-1])
    assert len(pairs) == 4
    for labels_loss, answer_loss in pairs:
        assert abs(labels_loss - answer_loss) < 1e-4 * labels_loss, pairs
    runs = {}
    for mode in ("on", "off"):
        out = tmp_path / f"checkpointing-{mode}.gguf"
        run(lora_python(), "lora/train.py", "--base", str(hf), "--data", str(data), "--out", str(out),
            "--max-steps", "3", "--lr", "5e-3", "--gradient-checkpointing", mode)  # fmt: skip
        manifest = out.with_name(out.name + ".manifest.json")
        runs[mode] = json.loads(manifest.read_text(encoding="utf-8"))["training"]
    assert runs["on"]["gradient_checkpointing"] and not runs["off"]["gradient_checkpointing"]
    assert runs["on"]["loss_last"] != runs["on"]["loss_first"]  # it trained
    for key in ("loss_first", "loss_last"):
        assert abs(runs["on"][key] - runs["off"][key]) < 1e-3, runs


FAULT = """
import sys, torch
sys.path.insert(0, "lora")
import train
fault, at = sys.argv[1], int(sys.argv[2])
step, calls = torch.optim.AdamW.step, []
def failing(self, *args, **kwargs):  # a fake fault at optimizer step AT, raised by the test
    calls.append(1)
    if len(calls) == at:
        raise torch.cuda.OutOfMemoryError("out of memory (fake)") if fault == "oom" else KeyboardInterrupt
    return step(self, *args, **kwargs)
torch.optim.AdamW.step = failing
sys.exit(train.main(sys.argv[3:]))
"""


OOM = "out of GPU memory at step 3: "


@pytest.mark.parametrize(
    ("fault", "checkpointing", "code", "message"),
    [
        ("oom", "on", 1, OOM + "lower --max-tokens (now 8192, the longest example kept) or --rank (now 16)"),
        ("oom", "off", 1, OOM + "turn --gradient-checkpointing on, or lower --max-tokens"),
        ("interrupt", "on", 130, "interrupted: nothing was written but the checkpoints"),
    ],
)
def test_out_of_memory_or_interrupted_training_says_what_to_do_and_writes_no_lora(
    base, tmp_path, fault, checkpointing, code, message
):
    """The GPU's out-of-memory error is a fake here (no GPU), raised where the real one would be."""
    hf, _ = base
    data = export(("en3",), tmp_path)
    out = tmp_path / "manga.gguf"
    args = ["--base", str(hf), "--data", str(data), "--out", str(out), "--max-steps", "4",
            "--checkpoint-every", "1", "--gradient-checkpointing", checkpointing]  # fmt: skip
    done = subprocess.run(
        [lora_python(), "-c", FAULT, fault, "3", *args], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == code, done.stderr[-3000:]
    assert message in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert not out.exists() and not out.with_name(out.name + ".manifest.json").exists()
    # the checkpoints before the fault are kept: steps 1 and 2 finished
    kept = sorted(p.name for p in out.with_name(out.name + ".checkpoints").iterdir())
    assert kept == ["step-1", "step-2"], kept
