"""Train the manga LoRA on a ``python -m mangaka dataset`` set, convert it to a GGUF LoRA, and
write its manifest::

    python lora/train.py --base Qwen3.5-35B-A3B/ --data lora-set/ --out models/llm_loras/manga.gguf

* **Base**: the Hugging Face weights of the GGUF model the LoRA will be attached to
  (``Qwen3_5MoeForCausalLM``); the GGUF LoRA is converted against it with llama.cpp's own
  converter (``lora/convert.py``).
* **Targets** (``--targets``): by default every linear layer outside the routed experts: the
  full-attention projections (``q_proj k_proj v_proj o_proj``), the linear-attention (Gated
  DeltaNet) projections (``in_proj_qkv in_proj_z out_proj``) and the shared expert
  (``gate_proj up_proj down_proj``). The routed experts are fused 3-D parameters, not linear
  modules: PEFT's module LoRA cannot target them, so they stay as they are.
* **Loss** on the assistant's tokens only (the JSON answer and its end-of-turn token); the
  prompt is rendered with the base tokenizer's chat template with thinking off, as inference does.
  An example longer than ``--max-tokens`` is skipped and counted, never cut.
* **Output**: ``OUT`` (the GGUF LoRA) and ``OUT.manifest.json`` (base, rank, targets, dataset
  card, settings, losses), written together at the end; checkpoints (PEFT adapters) in
  ``OUT.checkpoints/step-N`` every ``--checkpoint-every`` steps. A progress bar shows the loss.
* **Memory**: the base's weights in bf16 on a GPU (Qwen3.5-35B-A3B: 69.3 GB) plus one step
  (about 6.6 GiB at ``--max-tokens 8192``, measured with ``lora/measure.py``): an 80 GB card.
  Two things keep the step small, both on by default and both shown to change no loss:
  gradient checkpointing (``--gradient-checkpointing``) and a loss that computes logits only at
  the answer's positions, a chunk at a time (``answer_loss``). On a GPU the estimate is compared
  with the free memory before anything loads (``check_gpu_room``); on a CPU only small models
  train (``--device cpu`` refuses a base over ``CPU_LIMIT_GB``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import convert  # lora/convert.py, beside this file

log = logging.getLogger("mangaka.lora")

MANIFEST_VERSION = 1
DEFAULT_TARGETS = (
    "q_proj", "k_proj", "v_proj", "o_proj", "in_proj_qkv", "in_proj_z", "out_proj",
    "gate_proj", "up_proj", "down_proj",
)  # fmt: skip
CPU_LIMIT_GB = 8.0
LOSS_CHUNK = 512  # answer positions whose logits exist at one time (see answer_loss)
# One step's memory beyond the weights, measured by lora/measure.py (see memory_needed_gb)
STEP_GB_FIXED = 2.1
STEP_GB_PER_KTOKEN = {"on": 0.6, "off": 17.8}
MAX_DEPTH = 64  # as mangaka.jsontext: nothing a dataset card holds nests that deeply


class TrainError(Exception):
    """Training cannot go on; the message names the input or setting and the fix."""


def check_inputs(args: argparse.Namespace) -> dict:
    """Every input, before anything heavy is imported or loaded; returns the dataset card."""
    config = convert.base_config(args.base)
    del config
    card_path, train_path = args.data / "card.json", args.data / "train.jsonl"
    if not card_path.is_file() or not train_path.is_file():
        raise TrainError(
            f"--data {args.data} is not a dataset (no card.json and train.jsonl); make one with "
            "`python -m mangaka dataset PAIRS_DIR -o DIR`"
        )
    card = read_card(args.data)
    if not card.get("examples", {}).get("train"):
        raise TrainError(
            f"--data {args.data} has no training examples; add approved pairs and export it again"
        )
    if args.out.suffix != ".gguf":
        raise TrainError(f"--out {args.out} must be a .gguf file (for models/llm_loras/)")
    for path in (args.out, manifest_path(args.out)):
        if path.exists():
            raise TrainError(f"{path} exists; give a new --out (a LoRA is never overwritten)")
    if not args.out.parent.is_dir():
        raise TrainError(f"--out: folder {args.out.parent} does not exist; create it first")
    for name, value, low in (
        ("--rank", args.rank, 1),
        ("--epochs", args.epochs, 1),
        ("--max-tokens", args.max_tokens, 64),
    ):
        if value < low:
            raise TrainError(f"{name} must be at least {low}, got {value}")
    if not args.lr > 0 or not math.isfinite(args.lr):
        raise TrainError(f"--lr must be a positive number, got {args.lr}")
    return card


def too_deep(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether the lists and objects of parsed JSON ``value`` nest more than ``limit`` levels."""
    todo = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            todo += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return False


def read_card(data: Path) -> dict:
    """``DATA/card.json``, copied into the manifest at the end (so it must write back as UTF-8
    JSON); ``TrainError`` names the file and the fix when it cannot be."""
    path, fix = data / "card.json", f"export --data {data} again with `python -m mangaka dataset`"
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
        if too_deep(card):
            raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
        json.dumps(card, ensure_ascii=False).encode("utf-8")  # a lone surrogate escape fails here
    except (OSError, ValueError, RecursionError) as exc:
        raise TrainError(f"{path} cannot be read ({exc}); {fix}") from None
    if not isinstance(card, dict) or not isinstance(card.get("examples", {}), dict):
        raise TrainError(f'{path} is not a dataset card (an object with "examples"); {fix}')
    return card


def example_messages(line: str, where: str) -> list[dict]:
    """One line of a dataset's JSONL: its chat messages, the answer last; ``TrainError`` names
    ``where`` (the file and line) when it is not that."""
    fix = "export the dataset again with `python -m mangaka dataset`"
    try:
        example = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise TrainError(f"{where}: not valid JSON ({exc}); {fix}") from None
    messages = example.get("messages") if isinstance(example, dict) else None
    if not (
        isinstance(messages, list)
        and len(messages) >= 2
        and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
            for m in messages
        )
    ):
        raise TrainError(
            f'{where}: not an example (an object with "messages": a list of at least two, each a role '
            f"and its content as text, the answer last); {fix}"
        )
    try:
        for m in messages:
            (m["role"] + m["content"]).encode("utf-8")
    except UnicodeEncodeError:
        raise TrainError(
            f"{where}: holds a lone surrogate escape (\\ud800 to \\udfff), which is not text; {fix}"
        ) from None
    return messages


def manifest_path(out: Path) -> Path:
    return out.with_name(out.name + ".manifest.json")


def weights_gb(base: Path) -> float:
    """The base's weight files in GB (bf16 on disk for Qwen3.5)."""
    return sum(p.stat().st_size for p in base.glob("*.safetensors")) / 1e9


def memory_needed_gb(weights: float, max_tokens: int, checkpointing: str) -> float:
    """The base's weights plus what one step of an example of ``max_tokens`` tokens needs, in GB:
    ``STEP_GB_FIXED + STEP_GB_PER_KTOKEN[checkpointing] · max_tokens / 1000``. The figures are
    ``lora/measure.py``'s at Qwen3.5-35B-A3B's width (a 4-layer slice, 2048 tokens, on
    CPU), extrapolated to its 40 layers: an estimate, for that model."""
    return weights + STEP_GB_FIXED + STEP_GB_PER_KTOKEN[checkpointing] * max_tokens / 1000


def check_gpu_room(weights: float, args: argparse.Namespace, free: float) -> None:
    """Before the weights are loaded: refuse when they alone cannot fit in the GPU's free memory,
    warn when a step at ``--max-tokens`` may not."""
    need = memory_needed_gb(weights, args.max_tokens, args.gradient_checkpointing)
    if weights > free:
        raise TrainError(
            f"--base {args.base} has {weights:.0f} GB of weights but the GPU has {free:.0f} GB free: "
            f"training it needs about {need:.0f} GB (a GPU with more memory, or free this one)"
        )
    if need > free:
        fix = "turn --gradient-checkpointing on or " if args.gradient_checkpointing == "off" else ""
        log.warning(
            "a step at --max-tokens %d may need about %.0f GB and the GPU has %.0f GB free: if it runs "
            "out of memory, %slower --max-tokens", args.max_tokens, need, free, fix,
        )  # fmt: skip


def load_examples(path: Path, tokenizer, max_tokens: int) -> tuple[list[tuple[list[int], int]], int]:
    """Each example as (token ids, prompt length); the skipped count (longer than ``max_tokens``)."""
    out, skipped = [], 0
    end = tokenizer.eos_token or ""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError) as exc:
        raise TrainError(f"{path} cannot be read ({exc}); export the dataset again") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        messages = example_messages(line, f"{path}, line {number}")
        prompt_text = tokenizer.apply_chat_template(
            messages[:-1], tokenize=False, add_generation_prompt=True, enable_thinking=False
        )
        prompt = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
        answer = tokenizer(messages[-1]["content"] + end, add_special_tokens=False)["input_ids"]
        if len(prompt) + len(answer) > max_tokens:
            skipped += 1
            continue
        out.append((list(prompt) + list(answer), len(prompt)))
    return out, skipped


def answer_loss(model, ids, prompt_len: int, chunk: int = LOSS_CHUNK):
    """Mean cross-entropy of the answer's tokens (``ids[0, prompt_len:]``): transformers' ``labels``
    loss with the prompt masked, in less memory. At Qwen3.5's 248k vocabulary the logits of every
    position of an 8k-token example are 8 GB in fp32, more with their softmax and gradient; here
    only the answer's positions get logits, ``chunk`` at a time, each chunk recomputed in the
    backward pass instead of kept."""
    import torch
    from torch.utils.checkpoint import checkpoint

    lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # PEFT's wrapper
    hidden = lm.get_decoder()(input_ids=ids, use_cache=False).last_hidden_state
    hidden, targets = hidden[0, prompt_len - 1 : -1], ids[0, prompt_len:]  # each predicts the next
    head = lm.get_output_embeddings()
    total = hidden.new_zeros((), dtype=torch.float32)
    for at in range(0, targets.shape[0], chunk):
        piece = hidden[at : at + chunk], targets[at : at + chunk]
        total = total + checkpoint(_summed_loss, head, *piece, use_reentrant=False)
    return total / targets.shape[0]


def _summed_loss(head, hidden, targets):
    import torch

    return torch.nn.functional.cross_entropy(head(hidden).float(), targets, reduction="sum")


def _training_modules() -> tuple:
    """torch, peft, tqdm and transformers, or a ``TrainError`` saying how to install them."""
    try:
        import peft
        import torch
        import transformers
        from tqdm import tqdm
    except ImportError as exc:
        raise TrainError(
            f"lora/train.py needs torch, transformers and peft ({exc.name} is missing): "
            "pip install -r lora/requirements.txt"
        ) from None
    return torch, peft, tqdm, transformers


def _device(args: argparse.Namespace, torch, size: float) -> str:
    """Where to train: the asked-for device, refused when the base cannot train there."""
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu" and size > CPU_LIMIT_GB:
        need = memory_needed_gb(size, args.max_tokens, args.gradient_checkpointing)
        raise TrainError(
            f"--base {args.base} has {size:.0f} GB of weights: train it on a GPU with at least "
            f"{need:.0f} GB of memory (--device cuda); a CPU trains small models only"
        )
    if device == "cuda":
        check_gpu_room(size, args, torch.cuda.mem_get_info()[0] / 1e9)
    return device


def _peft_model(args: argparse.Namespace, peft, transformers, device: str, dtype) -> tuple:
    """The base, loaded straight onto ``device``, with LoRA layers on ``--targets``; and the targets."""
    # straight onto the device, shard by shard (not 70 GB through host memory first)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.base, dtype=dtype, device_map=device)
    if args.gradient_checkpointing == "on":  # recompute each layer's activations in the backward pass
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
    targets = [t for t in args.targets.split(",") if t]
    missing = [t for t in targets if t not in present]
    if missing:
        raise TrainError(
            f"--targets {', '.join(missing)}: no such layer in {args.base}; "
            f"choose from {', '.join(DEFAULT_TARGETS)}"
        )
    config = peft.LoraConfig(r=args.rank, lora_alpha=args.alpha, target_modules=targets, lora_dropout=0.0)
    return peft.get_peft_model(model, config), targets


def _examples(args: argparse.Namespace, tokenizer) -> tuple[list, list, int]:
    """The training and validation examples that fit ``--max-tokens``, and how many did not."""
    train_set, skipped = load_examples(args.data / "train.jsonl", tokenizer, args.max_tokens)
    val_path = args.data / "val.jsonl"
    val_set, _ = load_examples(val_path, tokenizer, args.max_tokens) if val_path.is_file() else ([], 0)
    if skipped:
        log.warning(
            "%d training examples are longer than --max-tokens %d and were left out", skipped, args.max_tokens
        )
    if not train_set:
        raise TrainError(f"every training example is longer than --max-tokens {args.max_tokens}; raise it")
    return train_set, val_set, skipped


def _steps(
    args: argparse.Namespace, torch, tqdm, model, train_set: list, loss_of, checkpoints: Path
) -> list[float]:
    """The training loop: one example a step, in a new random order each epoch; the losses."""
    steps = args.max_steps or args.epochs * len(train_set)
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    losses: list[float] = []
    order: list[int] = []
    bar = tqdm(total=steps, desc="training", unit="step", file=sys.stderr)
    try:
        model.train()
        for step in range(1, steps + 1):
            if not order:
                order = list(range(len(train_set)))
                random.shuffle(order)
            ids, prompt_len = train_set[order.pop()]
            loss = loss_of(ids, prompt_len)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optim.step()
            optim.zero_grad()
            losses.append(float(loss.detach()))
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
            bar.update(1)
            if args.checkpoint_every and step % args.checkpoint_every == 0 and step < steps:
                model.save_pretrained(checkpoints / f"step-{step}")
    except torch.cuda.OutOfMemoryError:
        fix = "turn --gradient-checkpointing on, or " if args.gradient_checkpointing == "off" else ""
        raise TrainError(
            f"out of GPU memory at step {len(losses) + 1}: {fix}lower --max-tokens (now {args.max_tokens}, "
            f"the longest example kept) or --rank (now {args.rank}); `python lora/measure.py` shows what a "
            "step needs"
        ) from None
    finally:
        bar.close()
    return losses


def _save_adapter(args: argparse.Namespace, model, checkpoints: Path) -> None:
    """The adapter converted to a GGUF LoRA at ``--out`` (the PEFT adapter kept with the checkpoints
    when asked)."""
    if args.keep_checkpoints:  # the final PEFT adapter too, as checkpoints/final
        model.save_pretrained(checkpoints / "final")
        convert.convert_lora(checkpoints / "final", args.base, args.out)
    else:
        with tempfile.TemporaryDirectory(dir=args.out.parent, prefix=".adapter-") as tmp:
            model.save_pretrained(tmp)
            convert.convert_lora(Path(tmp), args.base, args.out)


def _write_manifest(args: argparse.Namespace, manifest: dict) -> None:
    """The manifest beside the LoRA, whole or not at all (and then no LoRA either)."""
    text = json.dumps(manifest, ensure_ascii=False, indent=2) + "\n"
    part = manifest_path(args.out).with_name("." + manifest_path(args.out).name + ".part")
    try:
        part.write_text(text, encoding="utf-8")
        os.replace(part, manifest_path(args.out))
    except OSError:
        args.out.unlink(missing_ok=True)  # the LoRA and its manifest come together, or not at all
        part.unlink(missing_ok=True)
        raise


def train(args: argparse.Namespace) -> dict:
    """Train the LoRA ``args`` ask for, convert it to GGUF and write its manifest; the manifest."""
    card = check_inputs(args)
    torch, peft, tqdm, transformers = _training_modules()
    size = weights_gb(args.base)
    device = _device(args, torch, size)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tokenizer = transformers.AutoTokenizer.from_pretrained(args.base)
    model, targets = _peft_model(args, peft, transformers, device, dtype)
    train_set, val_set, skipped = _examples(args, tokenizer)

    def loss_of(ids: list[int], prompt_len: int):
        return answer_loss(model, torch.tensor([ids], device=device), prompt_len)

    checkpoints = args.out.with_name(args.out.name + ".checkpoints")
    started = time.monotonic()
    losses = _steps(args, torch, tqdm, model, train_set, loss_of, checkpoints)
    model.eval()
    with torch.no_grad():
        val_loss = sum(float(loss_of(i, p)) for i, p in val_set) / len(val_set) if val_set else None
    seconds = time.monotonic() - started
    log.info(
        "trained %d steps in %.0f s: loss %.3f → %.3f%s", len(losses), seconds, losses[0], losses[-1],
        f", validation {val_loss:.3f}" if val_loss is not None else "",
    )  # fmt: skip
    _save_adapter(args, model, checkpoints)
    manifest = {
        "version": MANIFEST_VERSION,
        "lora": args.out.name,
        "base": {
            "folder": args.base.name,
            "architecture": convert.base_config(args.base).get("architectures", [None])[0],
            "config_sha256": hashlib.sha256((args.base / "config.json").read_bytes()).hexdigest(),
            "weights_gb": round(size, 3),
            "shape": convert.base_shape(convert.base_config(args.base)),
        },
        "adapter": {"rank": args.rank, "alpha": args.alpha, "targets": targets},
        "training": {
            "steps": len(losses),
            "epochs": args.epochs,
            "learning_rate": args.lr,
            "max_tokens": args.max_tokens,
            "gradient_checkpointing": args.gradient_checkpointing == "on",
            "seed": args.seed,
            "device": device,
            "dtype": str(dtype).replace("torch.", ""),
            "seconds": round(seconds, 1),
            "examples": len(train_set),
            "skipped_too_long": skipped,
            "loss_first": round(losses[0], 4),
            "loss_last": round(losses[-1], 4),
            "loss_validation": round(val_loss, 4) if val_loss is not None else None,
        },
        "dataset": card,
        "eval": None,
    }
    _write_manifest(args, manifest)
    if checkpoints.exists() and not args.keep_checkpoints:
        shutil.rmtree(checkpoints)
    return manifest


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python lora/train.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--base", type=Path, required=True, help="the base model's Hugging Face folder")
    p.add_argument("--data", type=Path, required=True, help="a `python -m mangaka dataset` folder")
    p.add_argument(
        "--out", type=Path, required=True, help="the GGUF LoRA to write (models/llm_loras/NAME.gguf)"
    )
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=float, default=32.0)
    p.add_argument("--targets", default=",".join(DEFAULT_TARGETS), help="layer names, comma-separated")
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: the epochs)")
    p.add_argument(
        "--max-tokens", type=int, default=8192, help="longest example kept (longer ones are skipped)"
    )
    p.add_argument(
        "--gradient-checkpointing",
        default="on",
        choices=["on", "off"],
        help="recompute activations in the backward pass: far less memory, about a third more time",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    p.add_argument(
        "--checkpoint-every", type=int, default=100, help="save the adapter every N steps (0: never)"
    )
    p.add_argument(
        "--keep-checkpoints",
        action="store_true",
        help="keep OUT.checkpoints/ (and the final PEFT adapter in it)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        manifest = train(args)
    except (TrainError, convert.ConvertError) as exc:
        log.error("%s", exc)
        return 1
    except KeyboardInterrupt:
        log.error("interrupted: nothing was written but the checkpoints")
        return 130
    log.info("wrote %s and %s", args.out, manifest_path(args.out).name)
    del manifest
    return 0


if __name__ == "__main__":
    sys.exit(main())
