"""What one training step of ``lora/train.py`` costs in memory at Qwen3.5-35B-A3B's width, measured
on this machine, and what that says for the whole model (run with the LoRA Python)::

    python lora/measure.py [--layers 4] [--tokens 2048] [--json]

* **What runs**: a random-weight ``Qwen3_5MoeForCausalLM`` of the real width (transformers' default
  ``Qwen3_5MoeTextConfig``, which is Qwen3.5-35B-A3B's: hidden 2048, 256 experts of 512, 8 a
  token, a 248,320-token vocabulary) but ``--layers`` layers (three Gated DeltaNet to one
  attention), in bf16, with ``lora/train.py``'s default LoRA and AdamW; one step (forward,
  backward, optimizer) on a random example of T tokens (``--tokens``, 2048 by default; the answer
  half of it, at least a loss chunk), half prompt and half answer.
* **Variants**, each in a fresh process so that each peak is its own: gradient checkpointing
  ``on``/``off`` × loss ``answer`` (``train.answer_loss``: the answer's logits only, a chunk at a
  time) / ``labels`` (transformers' masked ``labels`` loss: logits for every position).
* **Figure**: the peak resident memory during the step above the resident memory before it (the
  weights), i.e. activations, gradients, optimizer state and workspace; seconds for the step.
* **Extrapolation** to the whole model (40 layers) at ``--target-tokens``, from the largest T:
  one layer's activations are (off − on) ÷ (layers − 1), plus the layer input checkpointing keeps
  (a bf16 vector a token); the rest of "on" is the head and loss, the optimizer and workspace.
  Activations grow with the example; the rest does too for the ``labels`` loss (logits at every
  position) and not for the answer-only loss (one chunk of logits at a time). The LoRA's own
  state is counted exactly for 40 layers. These are estimates from a slice, on CPU kernels
  (transformers' PyTorch Gated DeltaNet and attention): a GPU with ``flash-linear-attention`` may
  need less. Two runs of the same measurement agreed within 1 % on the defaults' figure.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train  # lora/train.py, beside this file

log = logging.getLogger("mangaka.lora")

VARIANTS = (("on", "answer"), ("off", "answer"), ("on", "labels"), ("off", "labels"))
GIB = 2**30


def text_config(layers: int, small: bool):
    """The real width (or, with ``small``, a narrow model for the tests) with ``layers`` layers."""
    from transformers import Qwen3_5MoeTextConfig

    kinds = [("full_attention" if i % 4 == 3 else "linear_attention") for i in range(layers)]
    narrow = {"hidden_size": 256, "num_experts": 16, "moe_intermediate_size": 128,
              "shared_expert_intermediate_size": 128, "num_attention_heads": 4, "head_dim": 64,
              "linear_num_key_heads": 4, "linear_num_value_heads": 8, "linear_key_head_dim": 32,
              "linear_value_head_dim": 32}  # fmt: skip
    return Qwen3_5MoeTextConfig(num_hidden_layers=layers, layer_types=kinds, **(narrow if small else {}))


def lora_parameters(config) -> int:
    """The default LoRA's parameter count on ``config`` (counted on the meta device, no memory)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3_5MoeForCausalLM

    with torch.device("meta"):
        model = get_peft_model(
            Qwen3_5MoeForCausalLM(config),
            LoraConfig(r=16, lora_alpha=32, target_modules=list(train.DEFAULT_TARGETS)),
        )
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _resident() -> int:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def one_step(layers: int, tokens: int, checkpointing: str, loss: str, small: bool) -> dict:
    """One training step in this process: the peak above the resident memory before it."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen3_5MoeForCausalLM

    torch.manual_seed(0)
    config = text_config(layers, small)
    with torch.device("meta"):
        model = Qwen3_5MoeForCausalLM(config)
    model = model.to(torch.bfloat16).to_empty(device="cpu")  # bf16 from the start: no fp32 copy
    with torch.no_grad():  # uniform is much faster than the model's own init; memory is the same
        for param in model.parameters():
            param.uniform_(-0.02, 0.02)
    if checkpointing == "on":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=list(train.DEFAULT_TARGETS)))
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW(params, lr=1e-4)
    model.train()
    ids = torch.randint(0, config.vocab_size, (1, tokens))
    before = _resident()
    started = time.perf_counter()
    if loss == "answer":
        value = train.answer_loss(model, ids, tokens // 2)
    else:
        labels = ids.clone()
        labels[0, : tokens // 2] = -100
        value = model(input_ids=ids, labels=labels, use_cache=False).loss
    value.backward()
    optim.step()
    optim.zero_grad()
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"extra_bytes": peak - before, "seconds": seconds, "loss": float(value.detach())}


def measure(layers: int, tokens: list[int], small: bool) -> dict[str, dict[int, dict]]:
    """Every variant at every T, each in a fresh process."""
    found: dict[str, dict[int, dict]] = {}
    for checkpointing, loss in VARIANTS:
        for t in tokens:
            cmd = [sys.executable, __file__, "--one", str(layers), str(t), checkpointing, loss]
            cmd += ["--small"] if small else []
            log.info(
                "measuring: %d layers, %d tokens, checkpointing %s, %s loss", layers, t, checkpointing, loss
            )
            done = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if done.returncode:
                raise RuntimeError(f"the measuring step failed: {done.stderr.strip()[-2000:]}")
            found.setdefault(f"{checkpointing}_{loss}", {})[t] = json.loads(
                done.stdout.strip().splitlines()[-1]
            )
    return found


def extrapolate(found: dict, layers: int, target_tokens: int, small: bool) -> dict[str, float]:
    """The whole model's step memory at ``target_tokens`` (GiB), each way (see the module doc)."""
    full = text_config(40, small)
    adapter = (lora_parameters(full) - lora_parameters(text_config(layers, small))) * 16  # fp32 ×4
    out = {}
    for loss in ("answer", "labels"):
        t = max(found[f"on_{loss}"])
        on, off = found[f"on_{loss}"][t]["extra_bytes"], found[f"off_{loss}"][t]["extra_bytes"]
        kept = full.hidden_size * 2 * t  # a layer's bf16 input, what checkpointing keeps of it
        layer = max((off - on + layers * kept) / (layers - 1), 0.0)  # one layer's activations
        rest = max(on - layer - layers * kept, 0.0)  # the head and loss, optimizer, workspace
        scale = target_tokens / t
        if loss == "labels":  # logits at every position grow with the example; one chunk does not
            rest *= scale
        n = full.num_hidden_layers
        out[f"on_{loss}"] = (adapter + rest + (layer + n * kept) * scale) / GIB
        out[f"off_{loss}"] = (adapter + rest + n * layer * scale) / GIB
    return out


def report(layers: int, tokens: list[int], target_tokens: int, small: bool) -> dict:
    """The figures, as ``--json`` prints them."""
    found = measure(layers, tokens, small)
    top = max(tokens)
    return {
        "layers": layers,
        "tokens": tokens,
        "small": small,
        "measured_gib": {
            k: {str(t): round(v["extra_bytes"] / GIB, 3) for t, v in p.items()} for k, p in found.items()
        },
        "seconds": {k: {str(t): round(v["seconds"], 2) for t, v in p.items()} for k, p in found.items()},
        "checkpointing_time_ratio": found["on_answer"][top]["seconds"] / found["off_answer"][top]["seconds"],
        "labels_over_answer_memory": found["on_labels"][top]["extra_bytes"]
        / found["on_answer"][top]["extra_bytes"],
        "checkpointing_off_over_on_memory": found["off_answer"][top]["extra_bytes"]
        / found["on_answer"][top]["extra_bytes"],
        "target_tokens": target_tokens,
        "whole_model_step_gib": {
            k: round(v, 1) for k, v in extrapolate(found, layers, target_tokens, small).items()
        },
        "lora_parameters_whole_model": lora_parameters(text_config(40, small)),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--one"]:
        layers, tokens, checkpointing, loss = int(argv[1]), int(argv[2]), argv[3], argv[4]
        sys.stdout.write(json.dumps(one_step(layers, tokens, checkpointing, loss, "--small" in argv)) + "\n")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(prog="python lora/measure.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4, help="layers in the measured slice (at least 2)")
    p.add_argument("--tokens", default="2048", help="example lengths measured, comma-separated")
    p.add_argument("--target-tokens", type=int, default=8192, help="the example length extrapolated to")
    p.add_argument("--small", action="store_true", help="a narrow model (for the tests), not the real width")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = p.parse_args(argv)
    tokens = sorted({int(t) for t in args.tokens.split(",") if t.strip()})
    if args.layers < 2 or not tokens or min(tokens) < 16:
        p.error("--layers must be at least 2 and --tokens at least 16 each")
    figures = report(args.layers, tokens, args.target_tokens, args.small)
    if args.json:
        sys.stdout.write(json.dumps(figures) + "\n")
    else:
        for key, value in figures.items():
            sys.stdout.write(f"{key}: {value}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
