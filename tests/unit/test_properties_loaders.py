"""Property tests (hypothesis) over the loaders of what a person hands the engine besides chapters
and screenplays: the series bible, the eval gold set (gold files, chapters, reference screenplays,
the set folder), a LoRA's manifest, and ``lora/train.py``'s dataset card, examples and base
config. Every input, near-valid (one valid document with fields replaced by hostile values,
dropped or given twice) or arbitrary (JSON, text, bytes), gives a valid object or one of the
engine's errors naming the input; any other exception fails the test with its minimal example.
Bounded as ``test_properties_parse.py`` is, so the unit tier stays fast.

Files are given as a FIFO or a folder too: each loader refuses them without opening them (a FIFO
is never read here without a writer thread that lets the read end, so no test can hang)."""

from __future__ import annotations

import argparse
import contextlib
import copy
import errno
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mangaka.errors import InputError, LoraError, MangakaError
from mangaka.evaluate.goldset import BUILTIN_SET, GoldCase, load_gold_case, load_gold_set
from mangaka.llm.lora import check_manifest, manifest_path, read_manifest, record_eval
from mangaka.screenplay import Screenplay
from mangaka.screenplay.bible import SeriesBible, load_series_bible, parse_series_bible
from tests.unit.support import json_paths

ROOT = Path(__file__).resolve().parents[2]
BOUNDED = settings(
    max_examples=150,
    deadline=None,  # every input is small; a hang would show as this file's run time
    database=None,  # nothing written into the checkout
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def outcome(
    call: Callable[[], Any], names: str, errors: tuple[type[Exception], ...] = (MangakaError,)
) -> Any:
    """``call()``'s value, or the engine error it raised, which must name ``names``. Any other
    exception is not caught: it fails the test."""
    try:
        return call()
    except errors as exc:
        assert names in str(exc), f"{type(exc).__name__} does not name {names!r}: {exc}"
        return exc


# ------------------------------------------------------------------ hostile JSON


class Raw(str):
    """JSON text put into a document as it is: what ``json.dumps`` cannot write."""


class Pairs(list):
    """An object as its (key, value) pairs, so a key may come twice."""


def dumps(value: Any, ascii_only: bool = True) -> str:
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, dict):
        value = Pairs(value.items())
    if isinstance(value, Pairs):
        items = (f"{json.dumps(k, ensure_ascii=ascii_only)}: {dumps(v, ascii_only)}" for k, v in value)
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dumps(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


HUGE = "1" * 5000  # past Python's 4,300 digits: json.loads raised ValueError
DEEP = "[" * 3000 + "]" * 3000  # past Python's recursion limit: json.loads raised RecursionError

# Values that break readers: numbers past Python's 4,300 digits or past a float, NaN and the
# infinities, nesting past the engine's 64 levels and past Python's recursion limit, lone
# surrogates (no character: no UTF-8), NUL, long text.
_BREAKING = st.sampled_from([
    Raw(HUGE), Raw("-" + "9" * 4301), Raw("1e999"), float("nan"), float("inf"), float("-inf"),
    Raw("[" * 70 + "]" * 70), Raw(DEEP), Raw('{"a": ' * 70 + "1" + "}" * 70), "x\ud800", "\udfff", "a\x00b",
    "x" * 5000,
])  # fmt: skip
# Values of another type than a field's, or at the edge of its rules: 64-bit bounds, escapes,
# bidi and zero-width marks, a BOM, full-width letters, ids that are not ids, empty containers.
_ODD = st.sampled_from([
    None, True, False, 0, -1, 1, 2, 1.5, -0.0, 1e300, 2**63, 2**64, -(2**63) - 1, "", " ", "\x00",
    "\x1b[31m", "\u200b", "\ufeff", "\u202e", "\U0001f600", "ＬＩＮ", "lin", "narrator", "Lin Yue", "en",
    "a" * 33, "\n", "\t\r", [], {}, [1], {"": None},
])  # fmt: skip
_LEAF = st.one_of(_BREAKING, _ODD, st.text(max_size=12), st.integers(), st.floats())
_KEYS = st.text(max_size=8) | st.sampled_from(["id", "name", "version", "characters", "\x00", "\ud800"])
ANY_JSON = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=10,
)

_REPLACEMENT = st.one_of(_BREAKING, _BREAKING, _ODD, ANY_JSON)  # half of them break readers


@st.composite
def mutated(draw: st.DrawFn, valid: Any, fields: list[str]) -> Any:
    """``valid`` with one to three places replaced by a hostile value, removed, added to (a field of
    the format or an unknown one) or given twice (a key repeated, the last one hostile)."""
    data = copy.deepcopy(valid)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(json_paths(data)))
        if not path:
            data = draw(ANY_JSON) if draw(st.integers(0, 9)) == 0 else data  # the whole document
            continue
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "replace", "remove", "add", "twice"]))
        if action == "replace":
            parent[path[-1]] = draw(_REPLACEMENT)
        elif action == "remove":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from([*fields, "extra"]))] = draw(ANY_JSON)
        elif action == "add":
            parent.insert(path[-1], draw(ANY_JSON))
        elif isinstance(parent, dict):  # the key twice: the hostile value last (the one json keeps)
            pairs = Pairs(parent.items())
            pairs.append((path[-1], draw(ANY_JSON)))
            if len(path) == 1:
                return pairs  # no further changes: a Pairs is no dict
            holder = data
            for part in path[:-2]:
                holder = holder[part]
            holder[path[-2]] = pairs
            return data
    return data


def json_texts(valid: Any, fields: list[str]) -> st.SearchStrategy[str]:
    """Documents as text: near-valid, arbitrary JSON, cut short, or any text at all."""
    near = mutated(valid, fields)
    written = st.builds(dumps, near | near | ANY_JSON, st.booleans())
    whole = dumps(valid)
    return st.one_of(
        written,
        written,
        written,
        st.integers(0, len(whole)).map(lambda n: whole[:n]),  # cut off anywhere
        st.text(max_size=60),
        st.sampled_from(["", " \n", "\ufeff" + whole, whole + " trailing", whole + whole, "\x00", "null"]),
    )


def file_bytes(valid: Any, fields: list[str]) -> st.SearchStrategy[bytes]:
    """What a file may hold: the texts above in UTF-8 (a lone surrogate as the invalid bytes that
    encode it), with a BOM, in UTF-16, or any bytes."""
    texts = json_texts(valid, fields)
    return st.one_of(
        texts.map(lambda t: t.encode("utf-8", "surrogatepass")),
        texts.map(lambda t: t.encode("utf-8", "surrogatepass")),
        texts.map(lambda t: b"\xef\xbb\xbf" + t.encode("utf-8", "surrogatepass")),
        texts.map(lambda t: t.encode("utf-16", "surrogatepass")),
        st.binary(max_size=300),
    )


# ------------------------------------------------------------------ FIFOs that cannot hang a test


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    """A FIFO at ``path``. A thread opens it for writing as soon as anything opens it for reading
    (and closes it at once), so a loader that reads it gets an empty file instead of waiting
    forever: the test then fails on what the loader did, never hangs."""
    os.mkfifo(path)
    done = threading.Event()

    def release() -> None:
        while not done.wait(0.05):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no reader yet
                    continue
                return
            os.close(fd)

    writer = threading.Thread(target=release, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        done.set()
        writer.join()


@contextlib.contextmanager
def not_a_file(path: Path, kind: str) -> Iterator[Path]:
    """``path`` made a folder, or a FIFO (``fifo``) while the block runs."""
    if kind == "folder":
        path.mkdir()
        yield path
    else:
        with fifo(path):
            yield path


# ------------------------------------------------------------------ the series bible

BIBLE = {
    "version": 1,
    "characters": [
        {"id": "lin", "name": "Lin Yue", "aliases": ["Lin"], "appearance": "girl, black bob, red scarf",
         "trigger": "lin_mgk", "notes": "", "first_chapter": 1, "edited": False},
        {"id": "kai", "name": "Kai", "aliases": [], "appearance": "", "trigger": "", "notes": "sheet 2",
         "first_chapter": None, "edited": True},
    ],
}  # fmt: skip
LEGACY_BIBLE = [
    {"id": "Lin Yue", "name": "Lin", "appearance": "girl, black bob", "trigger": "lin_mgk"},
    {"id": "ghost", "name": "The Ghost", "hair": "none"},
]
BIBLE_FIELDS = "id name aliases appearance trigger notes first_chapter edited version".split()
BIBLE_TEXTS = json_texts(BIBLE, BIBLE_FIELDS) | json_texts(LEGACY_BIBLE, BIBLE_FIELDS)


def check_bible(found: Any) -> None:
    if isinstance(found, SeriesBible):  # valid: it saves and loads back as it is
        assert parse_series_bible(found.to_json(), source="saved") == found


@BOUNDED
@given(BIBLE_TEXTS)
@example(dumps(BIBLE).replace('"first_chapter": 1', f'"first_chapter": {HUGE}'))
@example(f'[{{"id": "lin", "first_chapter": {HUGE}}}]')
def test_any_bible_text_is_a_bible_or_an_input_error_naming_the_source(text):
    check_bible(outcome(lambda: parse_series_bible(text, source="bible of test 7"), "bible of test 7"))


@settings(BOUNDED, max_examples=100)
@given(file_bytes(BIBLE, BIBLE_FIELDS) | file_bytes(LEGACY_BIBLE, BIBLE_FIELDS))
@example(f'{{"version": {HUGE}}}'.encode())
def test_any_bible_file_is_a_bible_or_an_input_error_naming_the_file(raw):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "series.bible.json"
        path.write_bytes(raw)
        check_bible(outcome(lambda: load_series_bible(path), "series.bible.json"))


def test_a_bible_path_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "bible.json").mkdir()
    for missing_ok in (False, True):
        with pytest.raises(InputError, match=r"bible file .*bible\.json is a folder"):
            load_series_bible(tmp_path / "bible.json", missing_ok=missing_ok)


def test_a_bible_path_that_is_a_fifo_is_refused(tmp_path):
    with fifo(tmp_path / "bible.json") as path, pytest.raises(InputError, match=r"bible\.json"):
        load_series_bible(path)


# ------------------------------------------------------------------ the gold set

GOLD_ID = "en1"
GOLD = json.loads((BUILTIN_SET / f"{GOLD_ID}.gold.json").read_text(encoding="utf-8"))
REFERENCE = json.loads((BUILTIN_SET / f"{GOLD_ID}.reference.json").read_text(encoding="utf-8"))
CHAPTER = (BUILTIN_SET / f"{GOLD_ID}.txt").read_text(encoding="utf-8")
GOLD_FIELDS = "version id language title characters quotes beats aliases speaker keywords text name".split()
REFERENCE_FIELDS = "characters dialogue panels speaker line scene id version".split()


def gold_folder(tmp: str, **files: bytes) -> Path:
    """A set of the one chapter ``GOLD_ID``, its files as given (by suffix) or as built in."""
    folder = Path(tmp) / "set"
    folder.mkdir()
    for suffix in ("txt", "gold.json", "reference.json"):
        target = folder / f"{GOLD_ID}.{suffix}"
        given = files.get(suffix.replace(".", "_"))
        if given is None:
            shutil.copyfile(BUILTIN_SET / target.name, target)
        else:
            target.write_bytes(given)
    return folder


def load_set(folder: Path, names: str) -> list[GoldCase] | MangakaError:
    cases = outcome(lambda: load_gold_set(folder), names)
    if isinstance(cases, list):
        assert [c.id for c in cases] == [GOLD_ID] and cases[0].gold.id == GOLD_ID
    return cases


@BOUNDED
@given(file_bytes(GOLD, GOLD_FIELDS))
@example(dumps(GOLD).replace('"version": 1', f'"version": {HUGE}').encode())
def test_any_gold_file_loads_or_is_an_input_error_naming_it(raw):
    with tempfile.TemporaryDirectory() as tmp:
        load_set(gold_folder(tmp, gold_json=raw), f"{GOLD_ID}.gold.json")


_CHAPTERS = st.one_of(
    st.integers(0, len(CHAPTER)).map(lambda n: CHAPTER[:n].encode()),  # cut short: quotes missing
    st.integers(0, len(CHAPTER)).map(lambda n: (CHAPTER[n:] + CHAPTER[:n]).encode()),  # out of order
    st.sampled_from([b"", b"\xef\xbb\xbf" + CHAPTER.encode(), CHAPTER.encode("utf-16"), b"\x00" * 10]),
    st.text(max_size=200).map(str.encode),
    st.binary(max_size=200),
)


@settings(BOUNDED, max_examples=60)
@given(_CHAPTERS)
def test_any_gold_chapter_text_loads_or_is_an_input_error_naming_it(raw):
    with tempfile.TemporaryDirectory() as tmp:
        load_set(gold_folder(tmp, txt=raw), f"{GOLD_ID}.txt")


@settings(BOUNDED, max_examples=100)
@given(file_bytes(REFERENCE, REFERENCE_FIELDS))
@example(f'{{"version": {HUGE}}}'.encode())
def test_any_reference_screenplay_is_a_screenplay_or_an_input_error_naming_it(raw):
    with tempfile.TemporaryDirectory() as tmp:
        case = load_gold_case(gold_folder(tmp, reference_json=raw), GOLD_ID)
        found = outcome(case.reference, f"{GOLD_ID}.reference.json")
        assert isinstance(found, Screenplay | MangakaError)


_NAMES = st.sampled_from(["en1", "x", "", ".", "..", "a b", "\u200b", "é", "ＬＩＮ", "en1.txt"])
_SUFFIXES = st.sampled_from([".txt", ".gold.json", ".reference.json", ".json", ""])


@settings(BOUNDED, max_examples=60)
@given(st.lists(st.tuples(_NAMES, _SUFFIXES, st.binary(max_size=40) | st.just(b"<folder>")), max_size=5))
def test_any_set_folder_loads_or_is_an_input_error_naming_it(entries):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "set"
        folder.mkdir()
        for name, suffix, raw in entries:
            path = folder / f"{name}{suffix}"
            if not path.name.strip(".") or path.exists():
                continue
            if raw == b"<folder>":
                path.mkdir()
            else:
                path.write_bytes(raw)
        cases = outcome(lambda: load_gold_set(folder), str(folder))
        assert isinstance(cases, list | InputError)


@pytest.mark.parametrize("suffix", ["txt", "gold.json", "reference.json"])
@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_gold_chapter_file_that_is_a_folder_or_a_fifo_is_refused(tmp_path, suffix, kind):
    folder = tmp_path / "set"
    shutil.copytree(BUILTIN_SET, folder, ignore=lambda _, names: [n for n in names if GOLD_ID not in n])
    path = folder / f"{GOLD_ID}.{suffix}"
    path.unlink()
    with not_a_file(path, kind):
        with pytest.raises(InputError, match=rf"{GOLD_ID}\.{suffix} is not a file"):
            load_gold_set(folder)


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_gold_set_that_is_a_file_or_a_fifo_is_refused(tmp_path, kind):
    path = tmp_path / "set"
    with contextlib.ExitStack() as stack:
        if kind == "file":
            path.write_text("{}", encoding="utf-8")
        else:
            stack.enter_context(fifo(path))
        with pytest.raises(InputError, match=r"gold set .*set is not a folder"):
            load_gold_set(path)


# ------------------------------------------------------------------ a LoRA's manifest

MANIFEST = {
    "version": 1,
    "lora": "manga.gguf",
    "base": {"folder": "Qwen3.5-35B-A3B", "architecture": "Qwen3_5MoeForCausalLM", "config_sha256": "ab" * 32,
             "weights_gb": 69.3, "shape": {"layers": 40, "mtp_layers": 1, "hidden": 2048, "experts": 256,
                                           "expert_ffn": 512}},
    "adapter": {"rank": 16, "alpha": 32.0, "targets": ["q_proj", "k_proj"]},
    "training": {"steps": 10, "learning_rate": 0.0002, "loss_first": 2.5, "loss_last": 1.1,
                 "loss_validation": None},
    "dataset": {"version": 1, "examples": {"train": 2, "val": 0}},
    "eval": None,
}  # fmt: skip
MANIFEST_FIELDS = "base shape layers mtp_layers hidden experts expert_ffn folder eval".split()
ARCH = "qwen35moe"
MODEL = types.SimpleNamespace(
    architecture=ARCH,
    path=Path("Qwen3.5-35B-A3B-Q4_K_M.gguf"),
    info=types.SimpleNamespace(
        metadata={
            f"{ARCH}.block_count": 41,
            f"{ARCH}.embedding_length": 2048,
            f"{ARCH}.expert_count": 256,
            f"{ARCH}.expert_feed_forward_length": 512,
        }
    ),
)
RECORD = {"recorded": "2026-12-01T10:00:00+00:00", "set": "gold", "chapters": ["en1"], "mean": {"valid": 1.0}}


def a_lora(tmp: str, manifest: bytes | None) -> Path:
    lora = Path(tmp) / "manga.gguf"
    lora.write_bytes(b"GGUF")
    if manifest is not None:
        manifest_path(lora).write_bytes(manifest)
    return lora


def _shape(**shape: Any) -> bytes:
    return json.dumps({**MANIFEST, "base": {**MANIFEST["base"], "shape": {"layers": 40, **shape}}}).encode()


@BOUNDED
@given(file_bytes(MANIFEST, MANIFEST_FIELDS))
@example(DEEP.encode())  # RecursionError
@example(b'{"dataset": {"name": "\\ud800"}}')  # UnicodeEncodeError when the eval was recorded
@example(_shape(mtp_layers="x"))  # ValueError from int()
@example(_shape(mtp_layers=[1]))  # TypeError
@example(_shape(mtp_layers=float("inf")))  # OverflowError
def test_any_manifest_is_read_checked_and_recorded_into_or_is_a_lora_error_naming_it(raw):
    name = "manga.gguf.manifest.json"
    with tempfile.TemporaryDirectory() as tmp:
        lora = a_lora(tmp, raw)
        found = outcome(lambda: read_manifest(lora), name)
        assert isinstance(found, dict | LoraError)
        outcome(lambda: check_manifest(MODEL, lora), name)
        written = outcome(lambda: record_eval(lora, RECORD), name)
        if isinstance(written, Path):  # the eval is in the file, and the rest as it was
            again = read_manifest(lora)
            assert again["eval"][-1] == RECORD
            assert {k: v for k, v in again.items() if k != "eval"}.keys() == found.keys() - {"eval"}
        else:
            assert manifest_path(lora).read_bytes() == raw  # a manifest that was refused is left as it is


def test_a_manifest_of_another_base_is_refused_and_of_this_one_attached(tmp_path):
    lora = a_lora(str(tmp_path), json.dumps(MANIFEST).encode())
    check_manifest(MODEL, lora)  # 40 layers + 1 multi-token-prediction layer = the GGUF's 41 blocks
    other = {**MANIFEST, "base": {**MANIFEST["base"], "shape": {"layers": 48, "mtp_layers": "1"}}}
    manifest_path(lora).write_text(json.dumps(other), encoding="utf-8")
    with pytest.raises(LoraError, match=r"48 layers, not 41 .* per manga\.gguf\.manifest\.json"):
        check_manifest(MODEL, lora)  # mtp_layers that is not a number counts as none


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_manifest_that_is_a_folder_or_a_fifo_is_refused(tmp_path, kind):
    lora = a_lora(str(tmp_path), None)
    with not_a_file(manifest_path(lora), kind):
        for call in (read_manifest, lambda lo: record_eval(lo, RECORD), lambda lo: check_manifest(MODEL, lo)):
            with pytest.raises(LoraError, match=r"manga\.gguf\.manifest\.json .* is not a file"):
                call(lora)


# ------------------------------------------------------------------ lora/train.py's inputs


def load_script(name: str) -> types.ModuleType:
    """``lora/<name>.py`` as a module (its torch imports are inside functions: this Python can)."""
    sys.path.insert(0, str(ROOT / "lora"))  # train.py imports convert.py from beside it
    spec = importlib.util.spec_from_file_location(f"mangaka_lora_{name}_props", ROOT / "lora" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TRAIN = load_script("train")
CONVERT = TRAIN.convert
CONFIG = {
    "architectures": ["Qwen3_5MoeForCausalLM"],
    "text_config": {
        "num_hidden_layers": 40,
        "hidden_size": 2048,
        "num_experts": 256,
        "moe_intermediate_size": 512,
    },
    "mtp_num_hidden_layers": 1,
}
CARD = {"version": 1, "pairs": 1, "examples": {"train": 2, "val": 0}, "languages": {"en": 1},
        "settings": {"style": "manga"}, "sources": [{"name": "p1", "split": "train"}]}  # fmt: skip
EXAMPLE = {
    "messages": [
        {"role": "system", "content": "Write JSON."},
        {"role": "user", "content": "Chapter."},
        {"role": "assistant", "content": '{"a": 1}'},
    ],
    "call": "cast",
    "source": "p1",
}


def training_inputs(tmp: str, card: bytes | None = None, config: bytes | None = None) -> argparse.Namespace:
    base, data, out = Path(tmp) / "base", Path(tmp) / "set", Path(tmp) / "loras"
    for folder in (base, data, out):
        folder.mkdir()
    (base / "config.json").write_bytes(json.dumps(CONFIG).encode() if config is None else config)
    (data / "card.json").write_bytes(json.dumps(CARD).encode() if card is None else card)
    (data / "train.jsonl").write_text(json.dumps(EXAMPLE) + "\n", encoding="utf-8")
    argv = ["--base", str(base), "--data", str(data), "--out", str(out / "manga.gguf")]
    return TRAIN.build_parser().parse_args(argv)


@settings(BOUNDED, max_examples=100)
@given(file_bytes(CARD, ["examples", "train", "val", "version"]))
@example(b"{")  # JSONDecodeError
@example(b"[]")  # AttributeError
@example(b'{"examples": [1]}')  # AttributeError
@example(DEEP.encode())  # RecursionError
@example(b"\xff")  # UnicodeDecodeError
@example(b'{"examples": {"train": 1}, "note": "\\ud800"}')  # UnicodeEncodeError, after training
def test_any_dataset_card_is_checked_or_a_train_error_naming_it(raw):
    with tempfile.TemporaryDirectory() as tmp:
        args = training_inputs(tmp, card=raw)
        card = outcome(lambda: TRAIN.check_inputs(args), str(args.data), (TRAIN.TrainError,))
        if isinstance(card, dict):  # it goes into the manifest written after training: it must write
            json.dumps({"dataset": card}, ensure_ascii=False, indent=2).encode("utf-8")


@settings(BOUNDED, max_examples=100)
@given(file_bytes(CONFIG, ["architectures", "text_config", "num_hidden_layers"]))
@example(b"{")  # JSONDecodeError
@example(b"[]")  # AttributeError
@example(b'{"architectures": 5}')  # TypeError
@example(b'{"architectures": [["x"]]}')  # TypeError from ", ".join
@example(b'{"architectures": ["Qwen3_5MoeForCausalLM"], "text_config": []}')  # AttributeError, after training
def test_any_base_config_is_read_or_a_convert_error_naming_the_base(raw):
    with tempfile.TemporaryDirectory() as tmp:
        args = training_inputs(tmp, config=raw)
        config = outcome(lambda: CONVERT.base_config(args.base), str(args.base), (CONVERT.ConvertError,))
        if isinstance(config, dict):  # what the manifest takes from it after training
            assert any(a in CONVERT.KNOWN_ARCHITECTURES for a in config["architectures"])
            json.dumps(CONVERT.base_shape(config))


class Tokenizer:
    """Enough of a Hugging Face tokenizer for ``load_examples``: a token per character."""

    eos_token = "</s>"

    def apply_chat_template(self, messages: list[dict], **_: Any) -> str:
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    def __call__(self, text: str, **_: Any) -> dict[str, list[int]]:
        return {"input_ids": [ord(c) for c in text]}


@settings(BOUNDED, max_examples=100)
@given(
    st.lists(
        json_texts(EXAMPLE, ["messages", "role", "content"]).map(lambda t: t.replace("\n", " ")), max_size=3
    )
)
@example(["{"])  # JSONDecodeError
@example(["[]"])  # TypeError
@example(['{"messages": "x"}'])  # KeyError, TypeError
@example(['{"messages": [{"role": "user", "content": 1}, {"role": "assistant"}]}'])  # KeyError
def test_any_training_example_line_is_tokenized_or_a_train_error_naming_the_line(lines):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.jsonl"
        path.write_bytes("\n".join([json.dumps(EXAMPLE), *lines]).encode("utf-8", "surrogatepass"))
        found = outcome(
            lambda: TRAIN.load_examples(path, Tokenizer(), 4096), "train.jsonl", (TRAIN.TrainError,)
        )
        if isinstance(found, TRAIN.TrainError):
            assert "train.jsonl, line " in str(found) or "cannot be read" in str(found)
        else:
            examples, skipped = found
            assert len(examples) + skipped == sum(
                1 for line in path.read_text("utf-8").splitlines() if line.strip()
            )


@pytest.mark.parametrize("name", ["card.json", "train.jsonl", "config.json"])
@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_training_input_that_is_a_folder_or_a_fifo_is_refused(tmp_path, name, kind):
    args = training_inputs(str(tmp_path))
    path = (args.base if name == "config.json" else args.data) / name
    path.unlink()
    with not_a_file(path, kind):
        with pytest.raises((TRAIN.TrainError, CONVERT.ConvertError), match="is not a"):
            TRAIN.check_inputs(args)
