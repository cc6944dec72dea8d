"""Prompt-prefix reuse: snapshots on the hybrid qwen35moe, the library's own reuse on qwen3moe."""

from __future__ import annotations

import pytest

from mangaka.llm.base import PRESETS
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions
from mangaka.llm.prefix import PrefixCache

GREEDY = PRESETS["greedy"]
OPTIONS = LoadOptions(n_ctx=4096, n_threads=1)
SYSTEM = "You are a manga screenwriter. " * 30  # a long shared system prompt


def chapter(n: int) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Chapter {n}: the rain falls on lane {n}."},
        {"role": "user", "content": "List the characters."},
    ]


def system_tokens(llm: LlamaCppLLM) -> int:
    return min(llm.message_boundaries(chapter(1), llm.tokenize_prompt(chapter(1)), thinking=False))


def test_second_chapter_of_a_batch_decodes_only_its_own_tokens_on_qwen35moe(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, OPTIONS)
    first = llm.complete(chapter(1), sampling=GREEDY, max_tokens=8)
    second = llm.complete(chapter(2), sampling=GREEDY, max_tokens=8)
    shared = system_tokens(llm)
    n2 = llm.count_tokens(chapter(2))
    assert shared > 150
    assert first.usage.prompt_tokens_decoded == first.usage.prompt_tokens
    assert second.usage.prompt_tokens_decoded == n2 - shared
    # The same chapter again (a retry, or the script call after the cast call) restores the
    # snapshot taken after the chapter message: only the task is decoded.
    after_chapter = max(llm.message_boundaries(chapter(2), llm.tokenize_prompt(chapter(2)), thinking=False))
    again = llm.complete(chapter(2), sampling=GREEDY, max_tokens=8)
    assert again.usage.prompt_tokens_decoded == n2 - after_chapter < 40


def test_without_snapshots_qwen35moe_decodes_everything_and_answers_the_same(qwen35moe, monkeypatch):
    with_reuse = LlamaCppLLM(qwen35moe, OPTIONS)
    outputs = [with_reuse.complete(chapter(n), sampling=GREEDY, max_tokens=12).text for n in (1, 2)]
    with_reuse.model.close()
    monkeypatch.setenv("MANGAKA_PREFIX_CACHE_MB", "0")
    plain = LlamaCppLLM(qwen35moe, OPTIONS)
    first = plain.complete(chapter(1), sampling=GREEDY, max_tokens=12)
    second = plain.complete(chapter(2), sampling=GREEDY, max_tokens=12)
    assert second.usage.prompt_tokens_decoded == second.usage.prompt_tokens
    assert [first.text, second.text] == outputs  # a restored snapshot changes nothing


def test_qwen3moe_keeps_the_librarys_own_prefix_reuse(qwen3moe):
    llm = LlamaCppLLM(qwen3moe, OPTIONS)
    llm.complete(chapter(1), sampling=GREEDY, max_tokens=8)
    second = llm.complete(chapter(2), sampling=GREEDY, max_tokens=8)
    assert len(llm.model.prefix_cache) == 0  # no snapshots: the KV cache is truncated instead
    assert second.usage.prompt_tokens_decoded <= llm.count_tokens(chapter(2)) - system_tokens(llm)


def test_a_lora_change_drops_the_snapshots(qwen35moe, qwen35moe_lora):
    base = LlamaCppLLM(qwen35moe, OPTIONS)
    base.complete(chapter(1), sampling=GREEDY, max_tokens=4)
    assert len(base.model.prefix_cache) > 0
    with_lora = LlamaCppLLM(qwen35moe, OPTIONS, lora=qwen35moe_lora)
    out = with_lora.complete(chapter(1), sampling=GREEDY, max_tokens=4)
    assert out.usage.prompt_tokens_decoded == out.usage.prompt_tokens


def test_snapshot_memory_is_bounded():
    cache = PrefixCache(max_bytes=100)
    assert cache.add((1, 2), b"x" * 40)
    assert cache.add((1, 2, 3), b"x" * 40)
    assert cache.longest([1, 2, 9], limit=3).tokens == (1, 2)  # now the most recently used
    assert cache.add((1, 2, 3, 4), b"x" * 40)  # evicts (1, 2, 3), the least recently used
    assert cache.bytes <= 100 and (1, 2, 3) not in cache and (1, 2) in cache
    assert not cache.add((5,), b"x" * 101)  # larger than the whole budget: not kept
    assert cache.longest([1, 2, 3, 4, 5], limit=4).tokens == (1, 2, 3, 4)
    assert cache.longest([1, 2, 3, 4], limit=3).tokens == (1, 2)


@pytest.mark.parametrize("value", ["lots", "-"])
def test_a_bad_cache_size_is_named(value, monkeypatch):
    from mangaka.errors import MangakaError

    monkeypatch.setenv("MANGAKA_PREFIX_CACHE_MB", value)
    with pytest.raises(MangakaError, match="MANGAKA_PREFIX_CACHE_MB"):
        PrefixCache()
