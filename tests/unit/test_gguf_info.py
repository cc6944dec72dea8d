from __future__ import annotations

import struct

import gguf
import pytest

from mangaka.devtools.tiny_models import write_model
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


# --- issue 19: hostile headers -------------------------------------------------------------------


def gguf_bytes(kv: bytes = b"", kv_count: int = 0, tensor_count: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, tensor_count, kv_count) + kv


def _key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


def test_an_array_of_arrays_5000_levels_deep_is_damage_not_a_recursion_error(tmp_path):
    nested = struct.pack("<IQ", 9, 1) * 5000 + struct.pack("<IQ", 4, 0)  # item type, length, …
    path = tmp_path / "deep.gguf"
    path.write_bytes(gguf_bytes(_key("x") + struct.pack("<I", 9) + nested, kv_count=1))
    for keep in (frozenset(), frozenset({"x"})):
        with pytest.raises(ModelFileError, match="nested more than 64 levels deep; this file is damaged"):
            read_gguf_info(path, keep_arrays=keep)


@pytest.mark.parametrize(
    "body",
    [
        _key("x") + struct.pack("<IIQ", 9, 9, 2**62),  # 2^62 arrays: looped over, it never ends
        _key("x") + struct.pack("<IIQ", 9, 8, 2**40),  # 2^40 strings
        _key("x") + struct.pack("<IIQ", 9, 4, 2**40),  # 2^40 numbers
    ],
    ids=["arrays", "strings", "numbers"],
)
def test_a_count_larger_than_the_file_is_damage_found_at_once(body, tmp_path):
    path = tmp_path / "count.gguf"
    path.write_bytes(gguf_bytes(body, kv_count=1) + b"\0" * 64)
    with pytest.raises(ModelFileError, match="this file is damaged or incomplete"):
        read_gguf_info(path, keep_arrays=frozenset({"x"}))


def test_tensor_data_past_the_end_of_the_file_is_damage(tmp_path):
    whole = write_model(tmp_path / "tiny.gguf", "qwen35moe")
    assert read_gguf_info(whole).data_size > 0
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole.read_bytes()[:-1])  # one byte short
    with pytest.raises(ModelFileError, match=r"its tensors need \d+ bytes but the file has \d+"):
        read_gguf_info(cut)


def test_a_vocabulary_only_file_without_padding_after_its_metadata_is_complete(tmp_path):
    # llama.cpp's ggml-vocab-*.gguf: no tensors, and the file ends right after the metadata
    path = tmp_path / "vocab.gguf"
    path.write_bytes(gguf_bytes(_key("general.architecture") + struct.pack("<I", 8) + _key("llama"), 1))
    assert read_gguf_info(path).architecture == "llama"


def test_a_folder_given_as_the_model_is_said_to_be_a_folder(tmp_path):
    from mangaka.errors import ModelFileError
    from mangaka.llm.gguf_info import read_gguf_info

    with pytest.raises(ModelFileError, match=r"is a folder; give the \.gguf file inside it"):
        read_gguf_info(tmp_path)


@pytest.mark.parametrize("arch", ["qwen35moe", "qwen3moe"])
def test_the_parameters_are_every_tensors_elements_as_the_gguf_package_counts_them(arch, tmp_path):
    path = write_model(tmp_path / f"{arch}.gguf", arch)
    expected = sum(int(t.n_elements) for t in gguf.GGUFReader(path).tensors)
    assert read_gguf_info(path).parameters == expected > 0
