"""What one training step of ``lora/train.py`` costs in memory at Qwen3.5-35B-A3B's width, measured
on this machine, and what that says for the whole model (run with the LoRA Python)::

    python lora/measure.py [--layers 4] [--tokens 2048] [--json]

* **What runs**: a random-weight ``Qwen3_5MoeForCausalLM`` of the real width (transformers' default
  ``Qwen3_5MoeTextConfig``, which is Qwen3.5-35B-A3B's: hidden 2048, 256 experts of 512, 8 a
  token, a 248,320-token vocabulary) but ``--layers`` layers (three Gated DeltaNet to one
  attention), in bf16 (see *Precision*), with ``lora/train.py``'s default LoRA and AdamW; one step (forward,
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
* **Precision**: the model is bf16, as the real one trains. A CPU without native bf16 arithmetic
  (AVX-512 BF16 or AMX) emulates bf16 matrix products about 70x slower than float32's (an AVX2
  AMD EPYC: 0.7 against 49 GFLOPS; there ``aten::mm`` was 93 % of a step's time). Whether this
  CPU is one is measured, not assumed (``--products auto`` times one 512x512 product each way).
  If it is, every bf16 matrix product (``mm``, ``addmm``, ``bmm``, ``baddbmm``) is computed in
  float32 blocks of at most 1024x1024 and written into the bf16 result it would have had
  (:func:`float32_products`): every tensor the step keeps is the same bf16 tensor, so the memory
  figures are bf16's (the blocks add at most 12 MiB of transient memory). ``tests/lora`` checks
  that both ways give the same figures within 5 %.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train  # lora/train.py, beside this file
from convert import ROOT, native_common, procs  # procs: children in their own process group

# The processor's bf16 and AVX-512 features, as the pack's benchmark reports them (standard library).
machine = native_common.load_path(ROOT / "mangaka" / "devtools" / "machine.py", "mangaka_machine")

log = logging.getLogger("mangaka.lora")

VARIANTS = (("on", "answer"), ("off", "answer"), ("on", "labels"), ("off", "labels"))
GIB = 2**30
PRODUCTS = ("bf16", "float32")
BF16_SLOWER_OK = 2.0  # bf16 products are used when they are at most this much slower than float32
BLOCK = 1024  # the side of a float32 block in float32_products


def matmul_seconds(size: int = 512, repeats: int = 3) -> dict[str, float]:
    """The best time of a ``size``² matrix product in bf16 and in float32, on this machine now."""
    import torch

    found = {}
    for name, dtype in zip(PRODUCTS, (torch.bfloat16, torch.float32), strict=True):
        a = torch.rand(size, size, dtype=dtype)
        a @ a  # warm: the first call picks and loads kernels
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            a @ a
            best = min(best, time.perf_counter() - started)
        found[name] = best
    return found


def choose_products(requested: str) -> tuple[str, dict[str, float]]:
    """``requested``, or for ``auto`` bf16 unless this CPU multiplies in it far slower than float32."""
    seconds = matmul_seconds()
    if requested != "auto":
        return requested, seconds
    return ("bf16" if seconds["bf16"] <= BF16_SLOWER_OK * seconds["float32"] else "float32"), seconds


def _float32_mm(a, b, out):
    """``out`` (bf16) = ``a @ b`` for 2-D ``a`` and ``b``, computed in float32 blocks of BLOCK²."""
    import torch

    m, k = a.shape
    n = b.shape[1]
    for i in range(0, m, BLOCK):
        for j in range(0, n, BLOCK):
            acc = torch.zeros((min(BLOCK, m - i), min(BLOCK, n - j)), dtype=torch.float32)
            for p in range(0, k, BLOCK):
                acc.addmm_(a[i : i + BLOCK, p : p + BLOCK].float(), b[p : p + BLOCK, j : j + BLOCK].float())
            out[i : i + BLOCK, j : j + BLOCK] = acc
    return out


def float32_products():
    """A dispatch mode: within it, each matrix product of bf16 operands is computed in float32
    blocks and written into the bf16 result it would have had (same shape, dtype and memory)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten

    def mm(a, b):
        return _float32_mm(a, b, torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype))

    def bmm(a, b):
        out = torch.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=a.dtype)
        for i in range(a.shape[0]):
            _float32_mm(a[i], b[i], out[i])
        return out

    def plus(product, c, beta=1, alpha=1):  # addmm's beta * c + alpha * product
        if alpha != 1:
            product.mul_(alpha)
        return product.add_(c, alpha=beta) if beta != 0 else product

    table = {
        aten.mm.default: mm,
        aten.bmm.default: bmm,
        aten.addmm.default: lambda c, a, b, **kw: plus(mm(a, b), c, **kw),
        aten.baddbmm.default: lambda c, a, b, **kw: plus(bmm(a, b), c, **kw),
    }

    class Float32Products(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            operands = args[-2:]
            if func in table and all(
                isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16 and t.device.type == "cpu"
                for t in operands
            ):
                return table[func](*args, **kwargs)
            return func(*args, **kwargs)

    return Float32Products()


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


def one_step(layers: int, tokens: int, checkpointing: str, loss: str, small: bool, products: str) -> dict:
    """One training step in this process (matrix products in ``products``): the peak above the
    resident memory before it."""
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
    with float32_products() if products == "float32" else contextlib.nullcontext():
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


def measure(layers: int, tokens: list[int], small: bool, products: str) -> dict[str, dict[int, dict]]:
    """Every variant at every T, each in a fresh process (its own process group, ended whole if
    this one is interrupted or terminated)."""
    found: dict[str, dict[int, dict]] = {}
    for checkpointing, loss in VARIANTS:
        for t in tokens:
            cmd = [sys.executable, __file__, "--one", str(layers), str(t), checkpointing, loss, products]
            cmd += ["--small"] if small else []
            log.info(
                "measuring: %d layers, %d tokens, checkpointing %s, %s loss, %s products",
                *(layers, t, checkpointing, loss, products),
            )
            done = procs.run(cmd, capture_output=True, text=True)
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


def report(layers: int, tokens: list[int], target_tokens: int, small: bool, products: str = "auto") -> dict:
    """The figures, as ``--json`` prints them."""
    products, seconds = choose_products(products)
    features = machine.cpu_features()
    log.info(
        "bf16 matrix products in %s (%s; a 512x512 product: bf16 %.2f ms, float32 %.2f ms)",
        products, ", ".join(features) or "no x86 feature flags", *(seconds[d] * 1e3 for d in PRODUCTS),
    )  # fmt: skip
    found = measure(layers, tokens, small, products)
    top = max(tokens)
    return {
        "layers": layers,
        "tokens": tokens,
        "small": small,
        "products": products,
        "isa": features,
        "matmul_ms": {d: round(seconds[d] * 1e3, 3) for d in PRODUCTS},
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
        layers, tokens, checkpointing, loss, products = int(argv[1]), int(argv[2]), *argv[3:6]
        step = one_step(layers, tokens, checkpointing, loss, "--small" in argv, products)
        sys.stdout.write(json.dumps(step) + "\n")
        return 0
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    p = argparse.ArgumentParser(prog="python lora/measure.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4, help="layers in the measured slice (at least 2)")
    p.add_argument("--tokens", default="2048", help="example lengths measured, comma-separated")
    p.add_argument("--target-tokens", type=int, default=8192, help="the example length extrapolated to")
    p.add_argument("--small", action="store_true", help="a narrow model (for the tests), not the real width")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    p.add_argument(
        "--products", choices=("auto", *PRODUCTS), default="auto",
        help="compute the bf16 model's matrix products natively in bf16 or in float32 blocks (the same "
        "memory); auto: bf16 unless this CPU's bf16 product is over 2x slower than float32's",
    )  # fmt: skip
    args = p.parse_args(argv)
    tokens = sorted({int(t) for t in args.tokens.split(",") if t.strip()})
    if args.layers < 2 or not tokens or min(tokens) < 16:
        p.error("--layers must be at least 2 and --tokens at least 16 each")
    try:
        with procs.terminate_as_interrupt():  # terminated from outside: end the variant too
            figures = report(args.layers, tokens, args.target_tokens, args.small, args.products)
    except KeyboardInterrupt:
        log.error("interrupted: no figures (each variant's process was ended)")
        return 130
    if args.json:
        sys.stdout.write(json.dumps(figures) + "\n")
    else:
        for key, value in figures.items():
            sys.stdout.write(f"{key}: {value}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
