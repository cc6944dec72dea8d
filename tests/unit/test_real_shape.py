"""The real-shape model writer (mangaka/devtools/real_shape.py): Qwen3.5-35B-A3B's published shape,
llama.cpp's own choice of tensor types, random blocks written directly in those types."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import gguf
import numpy as np
import pytest

from mangaka.devtools.real_shape import REAL_SHAPE, REAL_VOCAB, _plan, quant_types, write_real_shape

Q = gguf.GGMLQuantizationType


def full_size(types: dict[str, Q]) -> int:
    size = 0
    for name, shape, _kind in _plan(REAL_SHAPE):
        block, nbytes = gguf.GGML_QUANT_SIZES[types[name]]
        size += int(np.prod(shape)) // block * nbytes
    return size


def test_the_shape_has_the_published_parameter_count():
    # transformers' Qwen3_5MoeTextConfig (the published config) counts 34.66 B parameters in the
    # text model; every dimension of REAL_SHAPE enters this product.
    assert sum(int(np.prod(shape)) for _n, shape, _k in _plan(REAL_SHAPE)) == 34_660_610_688
    assert len(_plan(REAL_SHAPE)) == 733


@pytest.fixture(scope="module")
def layouts() -> dict[str, dict[str, Q]]:
    return {quant: quant_types(quant) for quant in ("Q4_K_M", "Q3_K_M")}


def test_llama_cpp_chooses_every_tensor_type(layouts):
    q4, q3 = layouts["Q4_K_M"], layouts["Q3_K_M"]
    for types in (q4, q3):
        assert set(types) == {name for name, _s, _k in _plan(REAL_SHAPE)}
        assert types["output.weight"] == Q.Q6_K
        for name, quant in types.items():
            if name.endswith(("_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d.weight", "ssm_a", ".bias")):
                assert quant == Q.F32, name
    # The mixes differ as llama.cpp's recipes do: Q4_K_M is Q4_K with Q6_K where more bits help,
    # Q3_K_M mostly Q3_K with Q4_K/Q5_K on the sensitive tensors.
    assert Counter(q4.values()).most_common(1)[0][0] == Q.Q4_K
    assert Counter(q3.values()).most_common(2)[1][0] == Q.Q3_K
    assert q4["blk.0.ffn_down_exps.weight"] == Q.Q6_K and q3["blk.0.ffn_down_exps.weight"] == Q.Q5_K
    # 21.2 and 16.8 GB for the whole model (the published files, with their MTP layer and their
    # own quantizers' choices: about 22.0 and 15.7 GB).
    assert 20.5e9 < full_size(q4) < 22.0e9 and 16.0e9 < full_size(q3) < 17.5e9


def test_a_slice_is_written_in_the_whole_models_types(layouts, tmp_path: Path):
    path = write_real_shape(tmp_path / "slice.gguf", "Q3_K_M", layers=1)
    reader = gguf.GGUFReader(str(path))
    written = {t.name: t.tensor_type for t in reader.tensors}
    expected = {n for n, _s, _k in _plan(REAL_SHAPE) if not n.startswith("blk.") or n.startswith("blk.0.")}
    assert set(written) == expected
    assert all(written[name] == layouts["Q3_K_M"][name] for name in written)
    assert reader.get_field("qwen35moe.block_count").contents() == 1
    assert reader.get_field("qwen35moe.expert_count").contents() == 256
    assert len(reader.get_field("tokenizer.ggml.tokens").data) == REAL_VOCAB
    # Weights spread about 1/sqrt(inputs), centred, in every quantized type used.
    for tensor in reader.tensors:
        if tensor.tensor_type in (Q.F32, Q.F16) or tensor.name == "token_embd.weight":
            continue
        values = gguf.quants.dequantize(np.asarray(tensor.data)[:32], tensor.tensor_type)
        spread = values.std() * np.sqrt(int(tensor.shape[0]))
        assert (7 < spread < 12) if tensor.name == "output.weight" else (0.7 < spread < 1.5), tensor.name
        assert abs(values.mean()) < 0.1 * values.std(), tensor.name


def test_a_slice_outside_the_model_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="layers must be from 1 to 40"):
        write_real_shape(tmp_path / "x.gguf", layers=41)
    with pytest.raises(ValueError, match="quant must be one of"):
        quant_types("Q2_K")
