"""The model cache's part in memory management, on a real tiny model: what a loaded model holds
and where, freeing the least recently used for room, ``release after each run``."""

from __future__ import annotations

import logging
import re

import pytest

from mangaka.errors import MangakaError
from mangaka.llm.inprocess import RELEASE_AFTER_RUN, LlamaCppLLM, release_if_asked
from mangaka.llm.loading import flash_attn_mode, loaded_bytes, make_room, resident_models
from mangaka.llm.memory import compute_buffer_bytes, kv_cache_bytes, recurrent_state_bytes
from tests.model.support import GREEDY, SMALL, USER


def test_a_loaded_model_holds_its_weights_and_kv_cache_in_ram(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    model = llm.model
    assert model.placement == "ram"  # gpu_layers 0
    state = recurrent_state_bytes(model.info)  # and the recurrent state, with its checkpoint copy
    flash_attn = flash_attn_mode(model.info, SMALL) != "off"  # off: on the CPU, this architecture
    compute = compute_buffer_bytes(model.info, min(SMALL.n_batch, model.n_ctx), model.n_ctx, flash_attn)
    assert (
        model.size_bytes
        == qwen35moe.stat().st_size
        + kv_cache_bytes(model.info, model.n_ctx)
        + state * (2 if SMALL.rollback_tokens == 0 else 1 + SMALL.rollback_tokens)
        + compute
    )
    assert resident_models("ram") == [model] and resident_models("gpu") == []
    assert loaded_bytes() == loaded_bytes("ram") == model.size_bytes and loaded_bytes("gpu") == 0
    assert f"{model.size_bytes / 2**20:.0f} MB in RAM" in model.report()


def test_the_recurrent_state_estimate_is_what_llama_cpp_saves_of_it(qwen35moe, qwen3moe):
    """llama.cpp's own size of a sequence's recurrent state (the partial state it saves for a
    hybrid model) against ours, from the GGUF header: ours plus its small headers."""
    import llama_cpp

    llm = LlamaCppLLM(qwen35moe, SMALL)
    llama = llm.model.llama
    llm.complete(USER, sampling=GREEDY, max_tokens=2)  # a sequence to measure
    saved = llama_cpp.llama_state_seq_get_size_ext(
        llama._ctx.ctx, 0, llama_cpp.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
    )
    ours = recurrent_state_bytes(llm.model.info)
    assert ours > 0 and 0 <= saved - ours < 1024, (saved, ours)
    assert recurrent_state_bytes(LlamaCppLLM(qwen3moe, SMALL).model.info) == 0  # attention only


def test_make_room_frees_only_what_lives_there_and_only_when_short(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    size = llm.model.size_bytes
    assert make_room(free=0, need=1, where="gpu") == []  # the model is in RAM
    assert make_room(free=10, need=10, where="ram") == []  # room already
    assert make_room(free=0, need=1, where="ram") == [(llm._model, size)]
    assert resident_models() == [] and loaded_bytes() == 0
    assert llm.complete(USER, sampling=GREEDY, max_tokens=4).usage.prompt_tokens > 0  # loaded again
    assert llm.model.llama is not None and loaded_bytes() == size


def test_release_after_each_run_frees_the_model_and_keep_loaded_does_not(qwen35moe, caplog):
    kept = LlamaCppLLM(qwen35moe, SMALL)
    release_if_asked(kept, "Screenwriter")
    assert kept.model.llama is not None
    kept.release()
    once = LlamaCppLLM(qwen35moe, SMALL, memory=RELEASE_AFTER_RUN)
    with caplog.at_level(logging.INFO, logger="mangaka.llm.inprocess"):
        release_if_asked(once, "Screenwriter")
    assert resident_models() == []
    assert f"released {qwen35moe.name}" in caplog.text and "after Screenwriter" in caplog.text
    assert once.complete(USER, sampling=GREEDY, max_tokens=4).finish_reason in ("stop", "length")
    assert resident_models() == [once.model]
    release_if_asked(object(), "Screenwriter")  # any other LLM: nothing to do


def test_an_unknown_memory_mode_names_the_choices(qwen35moe):
    with pytest.raises(MangakaError, match="memory must be one of: keep loaded, release after each run"):
        LlamaCppLLM(qwen35moe, SMALL, memory="sometimes")


@pytest.mark.parametrize("flash_attn", ["auto", "on", "off"])
def test_the_compute_estimate_is_what_llama_cpp_reserves(qwen35moe, flash_attn):
    """llama.cpp's own compute buffer (from its log, in a process of its own) against ours: the
    logits at a short context; at the model's whole context, with flash attention off, one
    layer's scores for every head, which outgrow the logits (ours took the logits alone).
    ``auto`` is asked for as the loader asks for it (``flash_attn_mode``: off on the CPU)."""
    import subprocess
    import sys

    from mangaka.llm.loading import LoadOptions, flash_attn_mode, gguf_header, room_request

    code = (
        "import sys, llama_cpp\n"
        "llama_cpp.Llama(sys.argv[1], n_ctx=int(sys.argv[2]), n_batch=512, n_threads=1, verbose=True,"
        " flash_attn=sys.argv[3] != 'off')\n"
    )
    info = gguf_header(qwen35moe)
    asked = flash_attn_mode(info, LoadOptions(flash_attn=flash_attn))
    for n_ctx in (512, 4096):
        run = subprocess.run(
            [sys.executable, "-c", code, str(qwen35moe), str(n_ctx), asked],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        reported = re.findall(r"compute buffer size =\s*([\d.]+) MiB", run.stderr)
        assert len(reported) == 1, run.stderr[-2000:]
        held = float(reported[0]) * 2**20
        options = LoadOptions(n_ctx=n_ctx, n_threads=1, flash_attn=flash_attn)
        ours = room_request(qwen35moe, info, options, n_ctx).compute
        # Within a tenth, and 2 MiB of the small model's other activations.
        assert abs(held - ours) <= 0.1 * held + 2 * 2**20, (n_ctx, held / 2**20, ours / 2**20)
