"""The in-process backend against real llama.cpp on tiny random-weight models."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from mangaka.errors import (
    BackendMissingError,
    Cancelled,
    ContextOverflowError,
    GenerationError,
    InputError,
    LoraError,
    ModelFileError,
    SchemaError,
    UnsupportedArchitectureError,
)
from mangaka.llm.base import CallContext, Sampling
from mangaka.llm.inprocess import LlamaCppLLM, LoadOptions, load_model
from mangaka.llm.loading import cached_models, release_models
from tests.model.conftest import TRAINED_CONTEXT
from tests.model.support import GREEDY, SMALL, USER


def _greedy_tokens(llm: LlamaCppLLM, n: int = 12) -> str:
    return llm.complete(USER, sampling=GREEDY, max_tokens=n).text


# ---------------------------------------------------------------------------- loading and cache


def test_context_never_exceeds_trained_length_and_threads_default_to_cores(qwen35moe):
    model = load_model(qwen35moe)  # default context 32768
    assert model.n_ctx == TRAINED_CONTEXT
    assert model.options.resolved_threads() == os.cpu_count()
    assert model.llama.context_params.n_threads == os.cpu_count()


@pytest.mark.parametrize(
    ("model", "mode", "constant"),
    [
        ("qwen3moe", "auto", "LLAMA_FLASH_ATTN_TYPE_AUTO"),
        ("qwen35moe", "on", "LLAMA_FLASH_ATTN_TYPE_ENABLED"),
        ("qwen35moe", "off", "LLAMA_FLASH_ATTN_TYPE_DISABLED"),
        # on the CPU llama.cpp's plain attention decodes Qwen3.5 MoE faster (loading.CPU_FLASH_ATTN_OFF)
        ("qwen35moe", "auto", "LLAMA_FLASH_ATTN_TYPE_DISABLED"),
    ],
)
def test_flash_attention_mode_reaches_llama_cpp(request, model, mode, constant):
    import llama_cpp

    # no layer offloaded, whatever the build: the CPU case
    loaded = load_model(
        request.getfixturevalue(model), LoadOptions(n_ctx=512, n_gpu_layers=0, n_threads=1, flash_attn=mode)
    )
    assert loaded.llama.context_params.flash_attn_type == getattr(llama_cpp, constant)
    # the library's own constant is back as it was once the load is done
    assert llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED != llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO


def test_flash_attention_mode_must_be_known():
    with pytest.raises(InputError, match="auto, on, off"):
        LoadOptions(flash_attn=True)


def test_second_load_comes_from_the_cache(qwen35moe, monkeypatch):
    monkeypatch.setenv("MANGAKA_MAX_LOADED_MODELS", "2")
    first = load_model(qwen35moe, SMALL)
    assert load_model(qwen35moe, SMALL) is first
    assert load_model(qwen35moe, LoadOptions(n_ctx=2048, n_threads=1)) is not first
    assert len(cached_models()) == 2


def test_loading_another_model_frees_the_least_recently_used(qwen35moe, qwen3moe):
    first = load_model(qwen35moe, SMALL)  # default: one model at a time
    second = load_model(qwen3moe, SMALL)
    assert first.llama is None and second.llama is not None
    assert cached_models() == [second]


def test_release_frees_and_a_handle_reloads(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    before = llm.model
    assert release_models() == 1
    assert before.llama is None
    assert llm.model is not before and llm.model.llama is not None
    assert _greedy_tokens(llm)


def test_unsupported_architecture_names_it_and_the_fix(unsupported_model):
    with pytest.raises(UnsupportedArchitectureError) as err:
        load_model(unsupported_model)
    message = str(err.value)
    assert "'qwen99moe'" in message and "llama-cpp-python 0.3.36" in message
    assert "native/install.py" in message


def test_missing_and_non_gguf_files(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        load_model(tmp_path / "missing.gguf")
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        load_model(fake)


def test_another_llama_cpp_python_is_refused_before_the_load(qwen35moe, monkeypatch):
    import llama_cpp

    release_models()
    monkeypatch.setattr(llama_cpp, "__version__", "0.3.99")
    with pytest.raises(BackendMissingError, match=r"llama-cpp-python 0\.3\.99 is installed.*0\.3\.36"):
        load_model(qwen35moe, SMALL)
    assert cached_models() == []


def test_a_lora_file_is_not_a_model(qwen35moe_lora):
    with pytest.raises(ModelFileError, match="LoRA adapter, not a model"):
        load_model(qwen35moe_lora)


# ---------------------------------------------------------------------------------- generation


@pytest.mark.parametrize("arch_fixture", ["qwen35moe", "qwen3moe"])
def test_greedy_generation_is_deterministic_with_progress(arch_fixture, request):
    llm = LlamaCppLLM(request.getfixturevalue(arch_fixture), SMALL)
    seen: list[tuple[int, int]] = []
    first = llm.complete(
        USER,
        sampling=GREEDY,
        max_tokens=10,
        context=CallContext(on_progress=lambda d, t: seen.append((d, t))),
    )
    second = llm.complete(USER, sampling=GREEDY, max_tokens=10)
    assert first.text == second.text
    assert first.usage.completion_tokens == len(seen) > 0
    assert [d for d, _ in seen] == list(range(1, len(seen) + 1))
    assert all(t == 10 for _, t in seen)


def test_system_message_anywhere_is_moved_first(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    messages = [{"role": "user", "content": "hi"}, {"role": "system", "content": "JSON only."}]
    # Qwen3.5's template itself refuses this order…
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    raw = Jinja2ChatFormatter(template=llm.model.info.chat_template, eos_token="", bos_token="")
    with pytest.raises(ValueError, match="System message must be at the beginning"):
        raw(messages=messages)
    # …the backend normalises it.
    prompt = llm.render(messages)
    assert prompt.index("JSON only.") < prompt.index("hi")
    assert llm.complete(messages, sampling=GREEDY, max_tokens=4).usage.completion_tokens > 0


def test_thinking_is_off_under_a_schema(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    assert llm.render(USER, thinking=False).endswith("<think>\n\n</think>\n\n")
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "maxLength": 5}},
        "required": ["a"],
        "additionalProperties": False,
    }
    out = llm.complete(USER, schema=schema, thinking=True, sampling=GREEDY, max_tokens=64)
    assert set(json.loads(out.text)) == {"a"}
    assert out.reasoning == ""


def test_thinking_that_eats_the_budget_is_an_error(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    assert llm.render(USER, thinking=True).endswith("<think>\n")
    with pytest.raises(GenerationError, match="thinking used the whole budget of 8 tokens"):
        llm.complete(USER, thinking=True, sampling=GREEDY, max_tokens=8)


def test_prompt_longer_than_the_context_names_both_counts(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, LoadOptions(n_ctx=512, n_threads=1))
    long = [{"role": "user", "content": "word " * 2000}]
    n = llm.count_tokens(long)
    with pytest.raises(ContextOverflowError) as err:
        llm.complete(long, max_tokens=8)
    assert err.value.prompt_tokens == n and err.value.n_ctx == 512
    assert f"{n} tokens" in str(err.value) and "512 tokens" in str(err.value)


# ------------------------------------------------------------------------- constrained decoding

STRINGS = {
    "type": "object",
    "properties": {"text": {"type": "string", "maxLength": 60}, "more": {"type": "string", "maxLength": 60}},
    "required": ["text", "more"],
    "additionalProperties": False,
}


def _has_control(s: str) -> bool:
    return any(ord(c) < 0x20 or ord(c) == 0x7F for c in s)


def test_constrained_strings_never_hold_raw_control_characters(qwen35moe):
    """With llama-cpp-python's own grammar, random weights put raw control characters in strings
    (invalid JSON); with ours every sample parses and no string holds one."""
    from llama_cpp import LlamaGrammar

    llm = LlamaCppLLM(qwen35moe, SMALL)
    hot = Sampling(temperature=1.5, top_p=1.0, top_k=0, min_p=0.0, presence_penalty=0.0)
    ours_ok = 0
    for seed in range(8):
        out = llm.complete(USER, schema=STRINGS, sampling=hot.replace(seed=seed), max_tokens=200)
        assert not _has_control(out.text)  # escapes such as \n are fine; raw characters are not
        assert set(json.loads(out.text)) == {"text", "more"}
        ours_ok += 1
    # The reference path, same seeds: shows the bug this fix removes is real on these models.
    builtin = LlamaGrammar.from_json_schema(json.dumps(STRINGS), verbose=False)
    raw = llm.model.llama
    tokens = llm.tokenize_prompt(USER)
    bad = 0
    for seed in range(8):
        text = raw.create_completion(
            tokens, max_tokens=200, temperature=1.5, top_p=1.0, top_k=0, min_p=0.0, seed=seed, grammar=builtin
        )["choices"][0]["text"]
        try:
            json.loads(text)
        except json.JSONDecodeError:
            bad += 1
    assert ours_ok == 8
    assert bad > 0, "the built-in grammar produced no invalid JSON; this test no longer shows the fix"


def test_schema_that_cannot_be_compiled_is_an_error_not_a_fallback(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    schema = {"type": "object", "properties": {"a": {"not": {"type": "string"}}}}
    with pytest.raises(SchemaError, match="'not'"):
        llm.complete(USER, schema=schema, max_tokens=8)
    with pytest.raises(SchemaError, match="invalid"):
        llm.complete(USER, schema={"type": "objekt"}, max_tokens=8)


# ----------------------------------------------------------------------------------------- LoRA


def test_lora_attaches_after_load_rescales_and_detaches(qwen35moe, qwen35moe_lora):
    import llama_cpp

    base = LlamaCppLLM(qwen35moe, SMALL)
    base_text = _greedy_tokens(base)
    with_lora = LlamaCppLLM(qwen35moe, SMALL, lora=qwen35moe_lora, lora_scale=1.0)
    assert with_lora.model is base.model  # the same loaded model: no reload, mmap kept
    assert base.model.llama.model_params.load_mode == llama_cpp.LLAMA_LOAD_MODE_MMAP
    lora_text = _greedy_tokens(with_lora)
    assert lora_text != base_text
    assert _greedy_tokens(LlamaCppLLM(qwen35moe, SMALL, lora=qwen35moe_lora, lora_scale=0.0)) == base_text
    assert _greedy_tokens(with_lora) == lora_text
    assert _greedy_tokens(base) == base_text  # detached again


def test_lora_for_another_architecture_is_refused(qwen35moe, qwen3moe_lora):
    with pytest.raises(LoraError, match=r"made for 'qwen3moe' models.*'qwen35moe'"):
        LlamaCppLLM(qwen35moe, SMALL, lora=qwen3moe_lora)


def _with_manifest(lora, tmp_path, text):
    import shutil

    copy = tmp_path / "manga.gguf"
    shutil.copy(lora, copy)
    (tmp_path / "manga.gguf.manifest.json").write_text(text, encoding="utf-8")
    return copy


def _manifest(**shape):
    base = {"folder": "Qwen3.5-35B-A3B", "shape": shape}
    return json.dumps({"version": 1, "lora": "manga.gguf", "base": base})


def test_lora_manifest_of_the_same_base_shape_attaches(qwen35moe, qwen35moe_lora, tmp_path):
    # the tiny model: 4 blocks, hidden 64, 4 experts 32 wide; a base of 3 layers plus 1 MTP layer
    # is converted to 4 blocks, so it matches too
    for layers, mtp in ((4, 0), (3, 1)):
        lora = _with_manifest(qwen35moe_lora, tmp_path, _manifest(layers=layers, mtp_layers=mtp, hidden=64,
                                                                 experts=4, expert_ffn=32))  # fmt: skip
        assert _greedy_tokens(LlamaCppLLM(qwen35moe, SMALL, lora=lora)) == _greedy_tokens(
            LlamaCppLLM(qwen35moe, SMALL, lora=qwen35moe_lora)
        )


def test_lora_trained_on_another_base_is_refused_naming_it(qwen35moe, qwen35moe_lora, tmp_path):
    lora = _with_manifest(qwen35moe_lora, tmp_path, _manifest(layers=40, mtp_layers=1, hidden=2048,
                                                             experts=256, expert_ffn=512))  # fmt: skip
    with pytest.raises(LoraError) as info:
        LlamaCppLLM(qwen35moe, SMALL, lora=lora)
    message = str(info.value)
    assert "trained on Qwen3.5-35B-A3B" in message and "manga.gguf.manifest.json" in message
    for difference in ("40 layers, not 4", "hidden size 2048, not 64", "experts 256, not 4"):
        assert difference in message
    assert qwen35moe.name in message
    # an old manifest without the shape: llama.cpp's own check only
    lora = _with_manifest(qwen35moe_lora, tmp_path, json.dumps({"version": 1, "base": {"folder": "x"}}))
    LlamaCppLLM(qwen35moe, SMALL, lora=lora)
    # a damaged manifest is named, not ignored
    lora = _with_manifest(qwen35moe_lora, tmp_path, '{"version": 1, "base": ')
    with pytest.raises(LoraError, match=r"manga\.gguf\.manifest\.json.*cannot be read.*delete it"):
        LlamaCppLLM(qwen35moe, SMALL, lora=lora)


def test_missing_lora_file(qwen35moe, tmp_path):
    with pytest.raises(LoraError, match="not found"):
        LlamaCppLLM(qwen35moe, SMALL, lora=tmp_path / "none.gguf")


def test_every_decode_runs_on_the_models_own_thread_with_the_callers_context(qwen35moe, monkeypatch):
    """Whichever thread asks (the main thread, a book's chapter worker), llama.cpp decodes on the
    model's one decode thread, so GNU OpenMP keeps one team of workers (two teams on a 2-core
    machine made every barrier sleep in the kernel: a book three times slower at two threads), and
    the caller's context variables (ComfyUI finds the running node through them) reach it."""
    import contextvars

    from mangaka.llm import inprocess

    node = contextvars.ContextVar("node", default="none")
    seen: list[tuple[int, str]] = []
    real = inprocess.decode

    def recording(*args, **kwargs):
        seen.append((threading.get_ident(), node.get()))
        return real(*args, **kwargs)

    monkeypatch.setattr(inprocess, "decode", recording)
    llm = LlamaCppLLM(qwen35moe, SMALL)
    callers = [threading.get_ident()]
    node.set("main")
    first = llm.complete(USER, sampling=GREEDY, max_tokens=6)

    def from_worker() -> None:
        callers.append(threading.get_ident())
        node.set("worker")
        results.append(llm.complete(USER, sampling=GREEDY, max_tokens=6))

    results: list = []
    worker = threading.Thread(target=from_worker)
    worker.start()
    worker.join()
    assert [r.text for r in results] == [first.text]
    assert [label for _, label in seen] == ["main", "worker"]
    decoders = {ident for ident, _ in seen}
    assert len(decoders) == 1 and not decoders & set(callers), (decoders, callers)
    names = {t.name for t in threading.enumerate() if t.ident in decoders}
    assert len(names) == 1 and next(iter(names)).startswith("mangaka-decode"), names
    release_models()  # the model's decode thread ends with it
    assert not any(t.ident in decoders for t in threading.enumerate())


# ------------------------------------------------------------------------------------ interrupt


def test_cancel_stops_generation_between_tokens_and_the_model_stays_usable(qwen35moe):
    llm = LlamaCppLLM(qwen35moe, SMALL)
    count = {"n": 0}

    def progress(done: int, total: int) -> None:
        count["n"] = done

    with pytest.raises(Cancelled):
        llm.complete(
            USER,
            schema=STRINGS,
            sampling=GREEDY,
            max_tokens=500,
            context=CallContext(on_progress=progress, cancel=lambda: count["n"] >= 5),
        )
    assert count["n"] == 5
    assert llm.complete(USER, sampling=GREEDY, max_tokens=4).usage.completion_tokens > 0


def test_cancel_stops_a_long_prompt_evaluation_inside_llama_decode(qwen35moe, monkeypatch):
    llm = LlamaCppLLM(qwen35moe, LoadOptions(n_ctx=4096, n_batch=32, n_threads=1))
    long = [{"role": "user", "content": "panel " * 900}]
    batches = -(-llm.count_tokens(long) // 32)  # llama-cpp-python's eval: one llama_decode per batch
    assert batches >= 20
    # Counted, not timed: the cancel is asked when the third batch is about to be decoded, and that
    # batch waits until the cancel watcher (a thread polling ``cancel``) has raised llama.cpp's
    # abort flag, so the stop is the same however loaded the machine. llama_decode then stops
    # inside, at its abort callback: 3 batches are decoded of the whole prompt's ``batches``. Without
    # the abort callback the prompt would run to its end (``batches`` decodes) and the cancel be
    # seen at the first token; without the watcher the flag never rises and the wait below fails.
    ctx, flag, asked = llm.model.llama._ctx, llm.model.abort_flag, threading.Event()
    decode, decoded = ctx.decode, []

    def counting_decode(batch):
        decoded.append(batch.batch.n_tokens)
        if len(decoded) == 3:
            asked.set()
            deadline = time.monotonic() + 60  # a guard against a hang, not a measure
            while not flag[0] and time.monotonic() < deadline:
                time.sleep(0.005)
            assert flag[0], "the cancel watcher never raised llama.cpp's abort flag"
        return decode(batch)

    monkeypatch.setattr(ctx, "decode", counting_decode)
    with pytest.raises(Cancelled):
        llm.complete(long, sampling=GREEDY, max_tokens=4, context=CallContext(cancel=asked.is_set))
    monkeypatch.undo()
    assert len(decoded) == 3, f"{len(decoded)} of {batches} batches decoded, cancel at the third"
    assert llm.complete(USER, sampling=GREEDY, max_tokens=4).usage.completion_tokens > 0


def test_loading_reports_progress_and_can_be_stopped(qwen35moe):
    release_models()
    seen: list[tuple[int, int]] = []
    llm = LlamaCppLLM(qwen35moe, SMALL, on_progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (100, 100) and len(seen) >= 3  # llama.cpp reports as the tensors load
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert llm.model.llama is not None
    release_models()
    # Stopped at the first report: Cancelled, nothing cached, and the next load works.
    with pytest.raises(Cancelled, match="model load interrupted"):
        load_model(qwen35moe, SMALL, cancel=lambda: True)
    assert cached_models() == []
    # An exception from the progress hook (ComfyUI's interrupt) stops the load and comes out as is.

    class Interrupted(Exception):
        pass

    def interrupting(done: int, total: int) -> None:
        raise Interrupted

    with pytest.raises(Interrupted):
        load_model(qwen35moe, SMALL, on_progress=interrupting)
    assert cached_models() == []
    assert load_model(qwen35moe, SMALL).llama is not None
