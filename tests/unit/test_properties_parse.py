"""Property tests (hypothesis) over what the engine parses: LLM text → screenplay extraction,
screenplay JSON → schema and models, GGUF bytes → header. Each is bounded (examples, deadline) so
the unit tier stays fast; a failure prints its minimal example (and a blob to replay it)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mangaka.compose import extract_json_object, screenplay_from_text
from mangaka.errors import MangakaError
from mangaka.llm.gguf_info import read_gguf_info
from mangaka.screenplay import Screenplay, example_screenplay
from mangaka.screenplay.schema import screenplay_json_schema
from mangaka.screenplay.validate import load_screenplay, validate_screenplay
from mangaka.structured import check_schema, schema_problems
from tests.growth import assert_linear
from tests.unit.support import json_paths

BOUNDED = settings(
    max_examples=150,
    deadline=None,  # time is asserted where it matters, as a ratio that cannot flake
    database=None,  # nothing written into the checkout
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SCREENPLAY = example_screenplay()
SCREENPLAY_TEXT = json.dumps(SCREENPLAY, ensure_ascii=False, indent=1)

# ------------------------------------------------------------------ extraction over any text

# Text an LLM could send, weighted towards what the extractor looks at.
_PIECES = ["{", "}", "[", "]", '"', "\\", ":", ",", "\n", " ", "<think>", "</think>", "```", "```json\n",
           '{"a": 1}', "{}", "x", "1", "\ud800", "é", "章"]  # fmt: skip
llm_text = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), max_size=60).map("".join)


@BOUNDED
@given(llm_text)
def test_extraction_of_any_text_is_an_object_or_a_mangaka_error(text):
    try:
        found = extract_json_object(text)
    except MangakaError:
        return
    assert isinstance(found, dict)


@settings(BOUNDED, max_examples=60)
@given(llm_text)
def test_the_parse_node_on_any_text_gives_a_screenplay_or_a_mangaka_error(text):
    try:
        assert isinstance(screenplay_from_text(text), Screenplay)
    except MangakaError:
        pass


_prose = st.text(max_size=200).filter(lambda t: "{" not in t and "think>" not in t)


@BOUNDED
@given(_prose, _prose)
def test_a_screenplay_in_any_prose_is_found(before, after):
    assert extract_json_object(before + SCREENPLAY_TEXT + after) == SCREENPLAY


@BOUNDED
@given(st.lists(st.sampled_from(["{}", "[]", "{sic}", '{"a": [1]}', "{ x", "} y", "prose. "]), max_size=12))
def test_the_screenplay_wins_over_smaller_objects_around_it(noise):
    half = len(noise) // 2
    text = " ".join(noise[:half]) + "\n" + SCREENPLAY_TEXT + "\n" + " ".join(noise[half:])
    if "{ x" in noise[:half]:
        return  # an unclosed prose brace before it: still found, checked below without it
    assert extract_json_object(text) == SCREENPLAY


def _extract(text: str) -> None:
    try:
        extract_json_object(text)
    except MangakaError:
        pass


@settings(BOUNDED, max_examples=12)
@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).map("".join))
def test_extraction_time_is_linear_in_the_text(unit):
    n = 80_000 // len(unit) + 8  # 8x the text costs about 8x the CPU time, quadratic 64x
    texts = {k: unit * k for k in (n // 8, n)}
    assert_linear(lambda k: _extract(texts[k]), n, slack=0.05)


# ------------------------------------------------------------------ schema-valid ⇔ model-valid

# Values that sit on the edges of the contract: a final line break, lone surrogates, numbers that
# are and are not integers, bools where numbers go, lengths around the bounds.
_edge = st.one_of(
    st.sampled_from(["akira\n", "akira", "\nakira", "mei", "narrator", "d1", "p1", "a" * 32, "a" * 33, "",
                     " ", "A", "1a", "a-b", "x\ud800", "\udfff", "ok\u2028", "😀", "happy", "wide", "high",
                     "en", "zh", "fr", 1, 1.0, 2, 2.5, 0, -1, 240, 241, True, False, None, 1e300, [], {}]),
    st.text(max_size=40),
    st.integers(-3, 300),
    st.floats(allow_nan=False),
)  # fmt: skip
_json = st.recursive(
    _edge,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def mutated_screenplays(draw: st.DrawFn) -> Any:
    """The example screenplay with a few places replaced, removed or added to."""
    data = copy.deepcopy(SCREENPLAY)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(json_paths(data)))
        if not path:
            continue
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "replace", "remove", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(_json | _edge)
        elif action == "remove":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["scene", "extra", "id", "mood"]))] = draw(_edge)
        else:
            parent.insert(path[-1], draw(_json | _edge))
    return data


def _model_valid(data: Any) -> bool:
    try:
        Screenplay.model_validate(data)
    except ValidationError:
        return False
    return True


_VALIDATOR = check_schema(screenplay_json_schema())


@settings(BOUNDED, max_examples=300)
@given(mutated_screenplays())
def test_schema_valid_if_and_only_if_model_valid(data):
    assert (not schema_problems(data, _VALIDATOR)) == _model_valid(data)


@BOUNDED
@given(mutated_screenplays())
def test_loading_any_screenplay_json_is_a_screenplay_or_an_input_error(data):
    try:
        text = json.dumps(data)
    except (TypeError, ValueError):
        assume(False)
    for repair in (True, False):
        try:
            sp = load_screenplay(text, repair=repair)
        except MangakaError:
            continue
        assert not validate_screenplay(sp.model_dump(mode="json"))


# ------------------------------------------------------------------ GGUF headers over any bytes


@pytest.fixture(scope="module")
def small_gguf(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A small valid GGUF with metadata of every kind and two tensors (a few KB)."""
    path = tmp_path_factory.mktemp("gguf") / "small.gguf"
    w = gguf.GGUFWriter(str(path), "qwen3")
    w.add_context_length(4096)
    w.add_string("tokenizer.chat_template", "{{ messages }}")
    w.add_token_list([f"t{i}" for i in range(40)])
    w.add_array("test.nested", [[1, 2], [3]])
    w.add_float32("test.f32", 0.5)
    w.add_tensor("a", np.zeros((4, 8), dtype=np.float32))
    w.add_tensor("b", np.ones(16, dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def _read(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    try:
        info = read_gguf_info(path, keep_arrays=frozenset({"test.nested", "tokenizer.ggml.tokens"}))
    except MangakaError:
        return
    assert info.data_size <= len(data)


@BOUNDED
@given(st.binary(max_size=300))
def test_any_bytes_after_the_magic_give_a_header_or_a_model_file_error(tmp_path, tail):
    _read(tmp_path / "any.gguf", b"GGUF" + tail)


_u64 = st.sampled_from([0, 1, 2**31, 2**32 - 1, 2**63 - 1, 2**64 - 1]) | st.integers(0, 2**64 - 1)


@settings(BOUNDED, max_examples=200)
@given(st.data())
def test_a_mutated_valid_gguf_gives_a_header_or_a_model_file_error(tmp_path, small_gguf, data):
    mutated = bytearray(small_gguf)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(mutated) - 1))
        how = data.draw(st.sampled_from(["byte", "u64", "u32", "cut"]))
        if how == "byte":
            mutated[at] = data.draw(st.integers(0, 255))
        elif how == "cut":
            del mutated[at:]
            break
        else:
            size = 8 if how == "u64" else 4
            value = data.draw(_u64) % 2 ** (8 * size)
            mutated[at : at + size] = value.to_bytes(size, "little")
    _read(tmp_path / "mutated.gguf", bytes(mutated))
