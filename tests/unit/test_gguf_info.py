from __future__ import annotations

import gguf
import pytest

from mangaka.errors import ModelFileError
from mangaka.llm.gguf_info import ArrayInfo, read_gguf_info


def _write(path, arch="qwen35moe", ctx=4096):
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(ctx)
    w.add_string("tokenizer.chat_template", "{{ messages }}")
    w.add_token_list([f"t{i}" for i in range(300)])
    w.add_array("test.numbers", [1, 2, 3])
    w.add_uint32("test.u32", 7)
    w.add_float32("test.f32", 0.5)
    w.add_bool("test.flag", True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_reads_architecture_context_and_template(tmp_path):
    info = read_gguf_info(_write(tmp_path / "m.gguf"))
    assert info.architecture == "qwen35moe"
    assert info.context_length == 4096
    assert info.chat_template == "{{ messages }}"
    assert info.vocab_size == 300
    assert info.metadata["test.u32"] == 7
    assert info.metadata["test.f32"] == 0.5
    assert info.metadata["test.flag"] is True
    assert info.metadata["test.numbers"] == ArrayInfo(item_type=5, length=3)


def test_keeps_requested_arrays(tmp_path):
    info = read_gguf_info(_write(tmp_path / "m.gguf"), keep_arrays=frozenset({"test.numbers"}))
    assert info.metadata["test.numbers"] == [1, 2, 3]


def test_missing_file(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        read_gguf_info(tmp_path / "nope.gguf")


def test_not_gguf(tmp_path):
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\x00" * 64)
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        read_gguf_info(bad)


def test_truncated_header(tmp_path):
    whole = _write(tmp_path / "m.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:200])
    with pytest.raises(ModelFileError, match="truncated"):
        read_gguf_info(cut)
