"""The tiny GGUF writers in mangaka/devtools/tiny_models.py produce files llama.cpp loads and runs."""

from __future__ import annotations

import ctypes
import itertools
import logging
import time
from pathlib import Path

import pytest

from mangaka.devtools.tiny_models import (
    ARCHITECTURES,
    SPECIAL_TOKENS,
    spec_for,
    write_lora,
    write_model,
    write_unsupported_model,
)

gguf = pytest.importorskip("gguf")
llama_cpp = pytest.importorskip("llama_cpp")

pytestmark = pytest.mark.model
log = logging.getLogger(__name__)

CONTEXT_LENGTH = 2048
PROMPT = "<|im_start|>user\nWrite the next panel.<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny")


@pytest.fixture(scope="module")
def model_paths(model_dir: Path) -> dict[str, Path]:
    return {
        arch: write_model(model_dir / f"{arch}.gguf", arch, context_length=CONTEXT_LENGTH)
        for arch in ARCHITECTURES
    }


def _load(path: Path) -> llama_cpp.Llama:
    return llama_cpp.Llama(model_path=str(path), n_ctx=512, n_threads=2, verbose=False)


def _greedy(llm: llama_cpp.Llama, n: int = 16) -> list[int]:
    llm.reset()
    tokens = llm.tokenize(PROMPT.encode(), add_bos=False, special=True)
    return list(itertools.islice(llm.generate(tokens, temp=0.0, repeat_penalty=1.0, reset=True), n))


def _field(reader: gguf.GGUFReader, key: str) -> object:
    field = reader.get_field(key)
    assert field is not None, key
    return field.contents()


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_write_is_small_and_deterministic(tmp_path: Path, arch: str) -> None:
    start = time.perf_counter()
    a = write_model(tmp_path / "a.gguf", arch, seed=3)
    elapsed = time.perf_counter() - start
    b = write_model(tmp_path / "b.gguf", arch, seed=3)
    c = write_model(tmp_path / "c.gguf", arch, seed=4)
    # Logged, not asserted (about 30 ms on an idle machine): the suite may share the CPU with other work.
    log.info("%s: written in %.0f ms", arch, elapsed * 1000)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()
    assert a.stat().st_size < 2_000_000


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_metadata(model_paths: dict[str, Path], arch: str) -> None:
    reader = gguf.GGUFReader(str(model_paths[arch]))
    spec = spec_for(arch)
    assert _field(reader, "general.architecture") == arch
    assert _field(reader, f"{arch}.context_length") == CONTEXT_LENGTH
    assert _field(reader, f"{arch}.rope.freq_base") == pytest.approx(spec.rope_theta)
    assert _field(reader, f"{arch}.expert_count") == spec.n_expert
    assert _field(reader, f"{arch}.expert_used_count") == 2
    assert _field(reader, "tokenizer.ggml.model") == "gpt2"
    tokens = _field(reader, "tokenizer.ggml.tokens")
    assert isinstance(tokens, list)
    assert 280 <= len(tokens) <= 320
    for special in SPECIAL_TOKENS:
        assert special in tokens
    assert tokens[_field(reader, "tokenizer.ggml.eos_token_id")] == "<|im_end|>"
    assert "<|im_start|>" in str(_field(reader, "tokenizer.chat_template"))


def test_qwen35moe_has_both_layer_kinds(model_paths: dict[str, Path]) -> None:
    names = {t.name for t in gguf.GGUFReader(str(model_paths["qwen35moe"])).tensors}
    assert "blk.0.ssm_conv1d.weight" in names  # Gated DeltaNet
    assert "blk.3.attn_q.weight" in names  # gated attention
    assert "blk.3.ffn_up_shexp.weight" in names


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_loads_and_generates_deterministically(model_paths: dict[str, Path], arch: str) -> None:
    start = time.perf_counter()
    llm = _load(model_paths[arch])
    load_s = time.perf_counter() - start
    try:
        assert llm._model.n_ctx_train() == CONTEXT_LENGTH
        assert llm.metadata["general.architecture"] == arch
        assert llm.token_eos() == llm.tokenize(b"<|im_end|>", add_bos=False, special=True)[0]
        assert len(llm.tokenize(b"<think>", add_bos=False, special=True)) == 1
        assert llm.detokenize(llm.tokenize("héllo wörld".encode(), add_bos=False)) == "héllo wörld".encode()

        start = time.perf_counter()
        first = _greedy(llm)
        gen_s = time.perf_counter() - start
        second = _greedy(llm)
    finally:
        llm.close()
    # Timings are logged, not asserted: the suite may share the CPU with other work.
    log.info("%s: load %.0f ms, 16 greedy tokens %.0f ms", arch, load_s * 1000, gen_s * 1000)
    assert len(first) == 16
    assert first == second


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_chat_template_renders(model_paths: dict[str, Path], arch: str) -> None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = gguf.GGUFReader(str(model_paths[arch])).get_field("tokenizer.chat_template").contents()
    fmt = Jinja2ChatFormatter(template=template, eos_token="<|im_end|>", bos_token="")
    messages = [
        {"role": "system", "content": "You draw manga."},
        {"role": "user", "content": "Hi"},
    ]
    thinking = fmt(messages=messages).prompt
    assert thinking.startswith(
        "<|im_start|>system\nYou draw manga.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
    )
    no_think = fmt(messages=messages, enable_thinking=False).prompt
    assert no_think.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    if arch == "qwen35moe":
        assert thinking.endswith("<|im_start|>assistant\n<think>\n")
    else:
        assert thinking.endswith("<|im_start|>assistant\n")


def test_qwen35moe_template_rejects_late_system_message(model_paths: dict[str, Path]) -> None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = gguf.GGUFReader(str(model_paths["qwen35moe"])).get_field("tokenizer.chat_template").contents()
    fmt = Jinja2ChatFormatter(template=template, eos_token="<|im_end|>", bos_token="")
    late = [{"role": "user", "content": "Hi"}, {"role": "system", "content": "Late."}]
    with pytest.raises(ValueError, match="System message must be at the beginning"):
        fmt(messages=late)


def test_template_drops_old_reasoning(model_paths: dict[str, Path]) -> None:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = gguf.GGUFReader(str(model_paths["qwen35moe"])).get_field("tokenizer.chat_template").contents()
    fmt = Jinja2ChatFormatter(template=template, eos_token="<|im_end|>", bos_token="")
    messages = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "<think>\nsecret\n</think>\n\nanswer"},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
    ]
    prompt = fmt(messages=messages).prompt
    assert "secret" not in prompt
    assert "<|im_start|>assistant\nanswer<|im_end|>\n<|im_start|>user\nb<|im_end|>\n" in prompt


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_lora_attaches_and_changes_output(model_dir: Path, model_paths: dict[str, Path], arch: str) -> None:
    lora = write_lora(model_dir / f"{arch}-lora.gguf", model_paths[arch])
    assert write_lora(model_dir / f"{arch}-lora-by-name.gguf", arch).read_bytes() == lora.read_bytes()
    reader = gguf.GGUFReader(str(lora))
    assert _field(reader, "general.type") == "adapter"
    assert _field(reader, "adapter.type") == "lora"
    assert _field(reader, "general.architecture") == arch

    llm = _load(model_paths[arch])
    try:
        base = _greedy(llm)
        adapter = llama_cpp.llama_adapter_lora_init(llm._model.model, str(lora).encode())
        assert adapter
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(1.0)
        assert llama_cpp.llama_set_adapters_lora(llm._ctx.ctx, adapters, 1, scales) == 0
        tuned = _greedy(llm)
        assert tuned == _greedy(llm)
        assert llama_cpp.llama_set_adapters_lora(llm._ctx.ctx, None, 0, None) == 0
        assert _greedy(llm) == base
    finally:
        llm.close()
    assert tuned != base


def test_lora_for_other_arch_is_rejected(model_dir: Path, model_paths: dict[str, Path]) -> None:
    lora = write_lora(model_dir / "qwen3moe-lora-x.gguf", "qwen3moe")
    llm = _load(model_paths["qwen35moe"])
    try:
        assert not llama_cpp.llama_adapter_lora_init(llm._model.model, str(lora).encode())
    finally:
        llm.close()


def test_unsupported_architecture_fails_to_load(model_dir: Path) -> None:
    path = write_unsupported_model(model_dir / "qwen99moe.gguf")
    assert _field(gguf.GGUFReader(str(path)), "general.architecture") == "qwen99moe"
    with pytest.raises(ValueError):
        _load(path)
