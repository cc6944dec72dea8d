"""How much memory a llama.cpp model holds, where, and which models to free for room: pure
arithmetic, no ComfyUI, no llama.cpp.

- ``kv_cache_bytes(info, n_ctx)``: the f16 KV cache a GGUF model needs at a context length
  (hybrid models count only their attention layers); the doctor and the model cache share it;
- ``placement(n_gpu_layers, gpu_offload)``: ``"gpu"`` when llama.cpp offloads layers (the build
  can and the options ask), else ``"ram"``;
- ``plan_release(free, need, sizes)``: how many of the models (least recently used first) to
  free so that ``need`` bytes are free; the one rule behind ComfyUI's memory hook;
- ``fits_together(...)``: an LLM and an image checkpoint on one device, for the doctor.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .gguf_info import GGUFInfo

Placement = Literal["gpu", "ram"]
MB = 2**20


def _hparam(info: GGUFInfo, key: str, default: int = 0) -> int:
    """The whole-number hyperparameter ``ARCH.key`` of the model's header, or ``default``."""
    value: Any = info.metadata.get(f"{info.architecture}.{key}", default)
    return int(value) if isinstance(value, (int, float)) else default


def kv_cache_bytes(info: GGUFInfo, n_ctx: int) -> int:
    """Bytes of the f16 KV cache at ``n_ctx`` tokens; a hybrid model (``full_attention_interval``)
    keeps one only for its attention layers."""
    get = functools.partial(_hparam, info)
    layers = get("block_count")
    interval = get("full_attention_interval", 1) or 1
    attention_layers = math.ceil(layers / interval) if interval > 1 else layers
    heads_kv = get("attention.head_count_kv", get("attention.head_count"))
    head = get("embedding_length") // max(1, get("attention.head_count", 1))
    k, v = get("attention.key_length", head), get("attention.value_length", head)
    return attention_layers * n_ctx * heads_kv * (k + v) * 2


# llama-cpp-python's n_ubatch (it does not set it otherwise): the most tokens one graph decodes.
N_UBATCH = 512


def compute_buffer_bytes(info: GGUFInfo, n_batch: int, n_ctx: int = 0, flash_attn: bool = True) -> int:
    """Bytes of llama.cpp's compute buffer, reserved when the context is made: the larger of the
    float32 logits of one micro-batch (``min(n_batch, 512)`` outputs × the vocabulary) and what
    attention holds for that micro-batch over ``n_ctx`` tokens of context. With flash attention
    that is the float16 mask (micro-batch × context); without, one layer's float32 scores for
    every head and the float32 mask (micro-batch × context × (heads + 1)), which outgrows the
    logits at long contexts. At Qwen3.5's shape (248,320 tokens, 16 heads): 485 MiB, nearly all
    of the 497-505 MiB llama.cpp reports at 1k-32k tokens with flash attention; without it 1,088
    MiB at 32k tokens, 1,130 reported (``docs/performance.md``). ``flash_attn``: on, or ``auto``,
    which llama.cpp turns on on the CPU and CUDA."""
    rows = min(n_batch, N_UBATCH)
    logits = rows * (info.vocab_size or 0) * 4
    if flash_attn:
        return max(logits, rows * n_ctx * 2)
    heads = _hparam(info, "attention.head_count", 1)
    return max(logits, rows * n_ctx * 4 * (heads + 1))


def recurrent_state_bytes(info: GGUFInfo) -> int:
    """Bytes of one sequence's recurrent state (f32) in a hybrid model's Gated DeltaNet layers:
    the state matrices (value heads × key dim × value dim) and the convolution's last
    ``conv_kernel - 1`` inputs; 0 for a model without such layers. Qwen3.5-35B-A3B: about 63 MB."""
    get = functools.partial(_hparam, info)
    interval = get("full_attention_interval")
    heads_v, d_k, inner = get("ssm.time_step_rank"), get("ssm.state_size"), get("ssm.inner_size")
    if interval <= 1 or not (heads_v and d_k and inner):
        return 0
    layers = get("block_count")
    recurrent_layers = layers - math.ceil(layers / interval)
    d_v = inner // heads_v
    conv_channels = inner + 2 * get("ssm.group_count") * d_k
    per_layer = heads_v * d_k * d_v + (get("ssm.conv_kernel") - 1) * conv_channels
    return recurrent_layers * per_layer * 4


def placement(n_gpu_layers: int, gpu_offload: bool) -> Placement:
    """Where a model's memory lives: on the GPU when any layer is offloaded (``n_gpu_layers`` -1
    or above 0) by a build that can offload, else in RAM (a CPU-only build ignores the option)."""
    return "gpu" if gpu_offload and n_gpu_layers != 0 else "ram"


def device_placement(device_type: str) -> Placement:
    """What a torch device type (``cpu``, ``cuda``, ``mps``, ``xpu``, …) competes with: RAM for
    ``cpu``, the GPU's memory for any other."""
    return "ram" if device_type == "cpu" else "gpu"


def plan_release(free: float, need: float, sizes: Sequence[int]) -> int:
    """How many of the models whose ``sizes`` are given (least recently used first) to free so
    that ``need`` bytes are free, when ``free`` are. 0 when they already are; every model when
    even all of them are not enough (the rest is the caller's to find)."""
    if free >= need:
        return 0
    for count in range(1, len(sizes) + 1):
        free += sizes[count - 1]
        if free >= need:
            return count
    return len(sizes)


@dataclass(frozen=True)
class Fit:
    """An LLM and an image checkpoint against one device's memory (bytes)."""

    llm: int
    checkpoint: int
    reserve: int  # what the image model needs beyond its weights to sample and decode
    available: int

    @property
    def together(self) -> int:
        return self.llm + self.checkpoint + self.reserve

    @property
    def fits(self) -> bool:
        return self.together <= self.available

    @property
    def fits_alone(self) -> bool:
        """Each fits when the other is released: ``release after each run`` works."""
        return max(self.llm, self.checkpoint + self.reserve) <= self.available


# ComfyUI's ``minimum_inference_memory()`` on Linux: 0.8 GiB plus 400 MiB kept for others.
COMFY_INFERENCE_RESERVE = int(0.8 * 2**30) + 400 * MB
