"""The arithmetic and the memory probe of `bench --only real_shape`
(mangaka/devtools/bench/real_shape_*.py), without a model."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest

from mangaka.devtools.bench.real_shape_depth import attention_flops_per_position, context_cost
from mangaka.devtools.bench.real_shape_jump_forward import batch_cost, jump_forward_bound
from mangaka.devtools.bench.real_shape_memory import page_out, rss

COSTS = {1: 1.0, 2: 1.5, 4: 2.5, 8: 4.5}


def test_batch_cost_interpolates_and_extends_the_last_slope():
    assert batch_cost(COSTS, 1) == 1.0
    assert batch_cost(COSTS, 3) == pytest.approx(2.0)
    assert batch_cost(COSTS, 8) == 4.5
    assert batch_cost(COSTS, 9) == pytest.approx(5.0)  # 4 → 8 costs 0.5 a row


def test_the_jump_forward_bound_counts_one_evaluation_per_sampled_token():
    # 10 tokens, 4 forced in two drafts of 2 that were kept whole: 6 sampled tokens, 4 alone
    # (4 × 1.0) and 2 with their drafts (2 × batch of 3 = 2 × 2.0): 8.0 against 10 single rows.
    assert jump_forward_bound(COSTS, 10, 4, [2, 2]) == pytest.approx(10 / 8)
    # a batch that costs its rows one by one gains nothing, however much is forced
    linear = {n: float(n) for n in (1, 2, 4, 8)}
    assert jump_forward_bound(linear, 10, 4, [2, 2]) == pytest.approx(1.0)
    assert jump_forward_bound(COSTS, 10, 0, []) == pytest.approx(1.0)
    # a draft cut short still paid for its rejected rows
    assert jump_forward_bound(COSTS, 10, 1, [3]) == pytest.approx(10 / (8 + 2.5))
    # ... and, rolled back through a saved state, for its kept rows again (the token and 1 kept)
    assert jump_forward_bound(COSTS, 10, 1, [3], [2]) == pytest.approx(10 / (8 + 2.5 + 1.5))


def test_page_out_gives_back_a_mapped_files_pages(tmp_path: Path):
    path = tmp_path / "weights.bin"
    size = 64 * 2**20
    with path.open("wb") as out:
        out.write(b"\1" * size)
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        before = rss()["RssFile"]
        assert sum(mapped[i] for i in range(0, size, 4096)) == size // 4096  # every page read
        touched = rss()["RssFile"]
        assert touched - before > size // 2
        advised = page_out(path)
        if advised == 0:
            pytest.skip("this kernel refuses MADV_PAGEOUT (before Linux 5.4)")
        assert advised >= size
        assert rss()["RssFile"] < touched - size // 2  # the pages left the process
        assert mapped[size - 1] == 1  # and come back when read


def test_attention_flops_count_the_kv_layers_heads_and_widths(tmp_path: Path):
    from mangaka.devtools.tiny_models import spec_for, write_model

    for arch, kv_layers in (("qwen35moe", 1), ("qwen3moe", 2)):  # one layer in four attends in qwen35moe
        spec = spec_for(arch)
        flops = attention_flops_per_position(write_model(tmp_path / f"{arch}.gguf", arch))
        assert flops == 2 * spec.n_head * 2 * spec.head_dim * kv_layers
    # Qwen3.5-35B-A3B: 10 attention layers of 16 query heads, keys and values 256 wide
    assert 2 * 16 * (256 + 256) * 10 == 163_840


def test_context_cost_is_the_time_the_longer_context_adds():
    # 10 tok/s at 1k, 5 tok/s at 11k: 0.1 s more a token for 10,000 more tokens of context
    figures = context_cost({1000: 10.0, 11000: 5.0, 5000: 7.0}, flops_per_position=1_000_000)
    assert figures["real_shape_context_ms_per_1k"] == pytest.approx(10.0)
    assert figures["real_shape_attention_gflop_s"] == pytest.approx(1e6 * 10_000 / 0.1 / 1e9)
