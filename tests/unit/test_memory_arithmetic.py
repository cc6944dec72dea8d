"""The memory arithmetic behind ComfyUI's hook and the doctor's checkpoint check: where a model's
memory lives, how many models to free for room, the KV-cache estimate, an LLM and a checkpoint
on one device."""

from __future__ import annotations

from pathlib import Path

import pytest

from mangaka.devtools.tiny_models import write_model
from mangaka.doctor import memory_needed
from mangaka.llm.gguf_info import read_gguf_info
from mangaka.llm.memory import (
    Fit,
    compute_buffer_bytes,
    device_placement,
    kv_cache_bytes,
    placement,
    plan_release,
)

GB = 2**30


@pytest.mark.parametrize(
    ("layers", "offload", "where"),
    [(0, True, "ram"), (-1, True, "gpu"), (12, True, "gpu"), (-1, False, "ram"), (12, False, "ram")],
)
def test_a_model_lives_on_the_gpu_only_when_layers_are_offloaded_by_a_build_that_can(layers, offload, where):
    assert placement(layers, offload) == where


def test_a_torch_device_competes_with_ram_only_when_it_is_the_cpu():
    assert device_placement("cpu") == "ram"
    assert [device_placement(t) for t in ("cuda", "mps", "xpu")] == ["gpu"] * 3


def test_nothing_is_freed_when_there_is_room():
    assert plan_release(free=8 * GB, need=8 * GB, sizes=[20 * GB]) == 0
    assert plan_release(free=9 * GB, need=8 * GB, sizes=[]) == 0


def test_the_least_recently_used_models_are_freed_until_the_need_is_met():
    sizes = [2 * GB, 3 * GB, 20 * GB]
    assert plan_release(free=1 * GB, need=3 * GB, sizes=sizes) == 1  # 1 + 2 = 3
    assert plan_release(free=1 * GB, need=5 * GB, sizes=sizes) == 2
    assert plan_release(free=1 * GB, need=7 * GB, sizes=sizes) == 3


def test_every_model_is_freed_when_even_all_are_not_enough():
    assert plan_release(free=0, need=100 * GB, sizes=[2 * GB, 3 * GB]) == 2
    assert plan_release(free=0, need=1, sizes=[]) == 0


def test_the_kv_estimate_is_the_doctors(tmp_path: Path):
    model = write_model(tmp_path / "tiny.gguf", "qwen35moe", context_length=32768)
    # hybrid: 4 blocks, one attention layer in four → 1 layer × n_ctx × 2 heads × (16 + 16) × 2 bytes
    assert kv_cache_bytes(read_gguf_info(model), 4096) == 4096 * 2 * 32 * 2
    assert memory_needed(model, 4096) == (model.stat().st_size, 4096 * 2 * 32 * 2)


def test_an_llm_and_a_checkpoint_fit_together_alone_or_not_at_all():
    # Qwen3.5-35B-A3B Q4_K_M with its KV cache, and SDXL, on 24, 48 and 16 GB cards.
    fit = Fit(llm=22 * GB, checkpoint=7 * GB, reserve=GB, available=24 * GB)
    assert fit.together == 30 * GB and not fit.fits and fit.fits_alone
    assert Fit(llm=22 * GB, checkpoint=7 * GB, reserve=GB, available=48 * GB).fits
    small = Fit(llm=22 * GB, checkpoint=7 * GB, reserve=GB, available=16 * GB)
    assert not small.fits and not small.fits_alone


def test_the_compute_estimate_is_one_micro_batch_of_logits_or_of_attention(tmp_path: Path):
    info = read_gguf_info(write_model(tmp_path / "m.gguf", vocab_size=1000))
    assert info.vocab_size == 1000
    assert compute_buffer_bytes(info, 64) == 64 * 1000 * 4
    # llama-cpp-python decodes at most 512 tokens a graph, whatever the batch.
    assert compute_buffer_bytes(info, 2048) == 512 * 1000 * 4
    # At a long context attention holds more: with flash attention the float16 mask, without it
    # one layer's float32 scores for every head and the float32 mask.
    heads = info.metadata[f"{info.architecture}.attention.head_count"]
    assert compute_buffer_bytes(info, 512, 1000) == 512 * 1000 * 4  # the logits still
    assert compute_buffer_bytes(info, 512, 32768) == 512 * 32768 * 2
    assert compute_buffer_bytes(info, 512, 32768, flash_attn=False) == 512 * 32768 * 4 * (heads + 1)
    assert compute_buffer_bytes(info, 512, 100, flash_attn=False) == 512 * 1000 * 4


@pytest.mark.parametrize(
    ("architecture", "mode", "layers", "offload", "asked"),
    [
        ("qwen35moe", "auto", -1, False, "off"),  # a CPU-only build ignores the GPU layers
        ("qwen35moe", "auto", 0, True, "off"),  # nothing offloaded
        ("qwen35moe", "auto", -1, True, "auto"),  # on a GPU llama.cpp's own choice
        ("qwen35moe", "auto", 12, True, "auto"),
        ("qwen35moe", "on", 0, False, "on"),  # a mode the user set is kept
        ("qwen3moe", "auto", 0, False, "auto"),  # only the architectures measured
        ("llama", "auto", -1, False, "auto"),
    ],
)
def test_auto_flash_attention_is_off_for_qwen35moe_on_the_cpu(
    monkeypatch, architecture, mode, layers, offload, asked
):
    from mangaka.llm import loading
    from mangaka.llm.gguf_info import GGUFInfo

    monkeypatch.setattr(loading, "gpu_offload", lambda: offload)
    info = GGUFInfo(Path("m.gguf"), 3, 0, {"general.architecture": architecture})
    options = loading.LoadOptions(n_gpu_layers=layers, flash_attn=mode)
    assert loading.flash_attn_mode(info, options) == asked
