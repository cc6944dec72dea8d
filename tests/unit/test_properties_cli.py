"""Property tests (issue 19): chapter reading over any bytes, every option value of ``write``,
``book`` and ``page``, and the page writer over generated screenplays. Bounded (``max_examples``)
so the unit tier stays fast; a failure prints hypothesis' minimal example.

No model loads: the model path does not exist, so a command whose options all pass stops at the
model check (``page``: at the screenplay, which does not exist either)."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from PIL import Image

from mangaka.book_file import read_book
from mangaka.cli.main import main
from mangaka.cli.page import LAYOUT_FILE, save_pages
from mangaka.compose import screenplay_from_text
from mangaka.errors import InputError
from mangaka.page.layout import DIRECTIONS, LayoutOptions
from mangaka.page.lettering import LetteringOptions
from mangaka.page.render import compose_pages
from mangaka.page.storyboard import render_storyboard
from mangaka.screenplay.example import example_screenplay

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "unit" / "data" / "chapters"
CHAPTER = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"
BOOK = ROOT / "prompts" / "samples" / "demo_book.en.txt"
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# ------------------------------------------------------------------------------- chapter reading


@pytest.fixture(scope="module")
def book_file(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz-books") / "book.txt"


def read(path: Path, raw: bytes) -> str | InputError:
    path.write_bytes(raw)
    try:
        return read_book(path)
    except InputError as exc:
        assert str(path) in str(exc)  # every refusal names the file
        return exc


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=400))
def test_any_bytes_read_as_text_or_are_refused_by_name(book_file, raw):
    """Read text is exactly what one of the accepted encodings makes of the bytes (nothing replaced
    or dropped on the way); a refusal names the file (``read``)."""
    got = read(book_file, raw)
    if isinstance(got, str):
        decoded = set()
        for encoding in ("utf-8-sig", "utf-16", "utf-32", "gb18030"):
            try:
                decoded.add(raw.decode(encoding))
            except UnicodeDecodeError:
                pass
        assert got in decoded
        got.encode("utf-8")  # no lone surrogate: writable as UTF-8


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), bom=st.booleans())
def test_utf8_text_round_trips(book_file, text, bom):
    assume(not text.startswith("\ufeff"))
    got = read(book_file, (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    assert isinstance(got, InputError) if "\x00" in text else got == text


@settings(max_examples=100, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200))
def test_utf16_with_a_bom_round_trips(book_file, text):
    assume(not text.startswith("\ufeff"))
    assert read(book_file, text.encode("utf-16")) == text


CHINESE = "".join(
    read_book(DATA / n) for n in ("gb18030.txt", "zh_numerals.txt", "zh_special.txt", "zh_toc.txt")
)


@settings(max_examples=150, deadline=None)
@given(start=st.integers(0, len(CHINESE) - 40), length=st.integers(40, 400))
def test_gb18030_chinese_of_40_characters_or_more_is_read(book_file, start, length):
    text = CHINESE[start : start + length]
    assert read(book_file, text.encode("gb18030")) == text


# ------------------------------------------------------------------------------- option values

ARG_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
VALUES = st.one_of(
    st.integers(-(2**40), 2**40).map(str), ARG_TEXT, st.sampled_from(["auto", "nan", "-inf", "1e9"])
)
WRITE_OPTIONS = ["--ctx", "--gpu-layers", "--threads", "--flash-attn", "--panels", "--dialogue",
                 "--scene-chars", "--language", "--prompt-language", "--sampling", "--seed", "--attempts",
                 "--think", "--lora-scale"]  # fmt: skip
PAGE_OPTIONS = ["--page", "--width", "--height", "--direction", "--panels-per-page", "--format"]


class Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def exit_and_errors(argv: list[str]) -> tuple[int, list[str], str]:
    """``main(argv)`` in-process: its exit code, its ERROR lines and what went to stderr."""
    errors, stderr = Errors(), io.StringIO()
    logger = logging.getLogger("mangaka")
    logger.addHandler(errors)
    try:
        with contextlib.redirect_stderr(stderr):
            code = main(argv)
    except SystemExit as exc:  # argparse's own refusal of a value it cannot convert (usage, exit 2)
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        logger.removeHandler(errors)
    return code, errors.lines, stderr.getvalue()


def assert_one_line(code: int, errors: list[str], stderr: str) -> None:
    assert "Traceback" not in stderr and not any("a bug in Mangaka" in e for e in errors), (errors, stderr)
    if code == 2:  # argparse: the usage, then one "error:" line
        assert stderr.strip().splitlines()[-1].startswith("usage:") or "error:" in stderr.splitlines()[-1]
    else:
        assert code == 1 and len(errors) == 1, (code, errors, stderr)  # one error (an OSError: one line)


@FUZZ
@given(
    command=st.sampled_from(["write", "book"]),
    options=st.dictionaries(st.sampled_from(WRITE_OPTIONS), VALUES, min_size=1, max_size=3),
)
def test_any_option_value_of_write_and_book_is_one_line(tmp_path, command, options):
    head = (
        ["write", str(CHAPTER), "-o", str(tmp_path / "o.json")] if command == "write" else ["book", str(BOOK)]
    )
    if command == "book":
        head += ["--out", str(tmp_path / "book")]
    argv = [*head, "--model", str(tmp_path / "missing.gguf"), *(f"{k}={v}" for k, v in options.items())]
    assert_one_line(*exit_and_errors(argv))
    assert not (tmp_path / "o.json").exists() and not (tmp_path / "book").exists()


@FUZZ
@given(options=st.dictionaries(st.sampled_from(PAGE_OPTIONS), VALUES, min_size=1, max_size=4))
def test_any_option_value_of_page_is_one_line(tmp_path, options):
    argv = ["page", str(tmp_path / "missing.json"), "-o", str(tmp_path / "pages")]
    argv += [f"{k}={v}" for k, v in options.items()]
    assert_one_line(*exit_and_errors(argv))
    assert not (tmp_path / "pages").exists()


@settings(max_examples=40, deadline=None)
@given(path=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1))
def test_any_output_path_of_page_is_one_line_or_pages(tmp_path_factory, path):
    base = tmp_path_factory.mktemp("fuzz-out")
    (base / "a-file").write_text("x", encoding="utf-8")
    argv = ["page", str(base / "missing.json"), "-o", str(base / "a-file" / path)]
    assert_one_line(*exit_and_errors(argv))


# ------------------------------------------------------------------------------- the page writer

LINE = st.text(string.ascii_letters + " .,!?'-" + "雨夜的灯。「」ー", min_size=1, max_size=80).map(str.strip)


@st.composite
def screenplays(draw: st.DrawFn) -> dict:
    data = example_screenplay()
    template = data["panels"]
    count = draw(st.integers(1, 9))
    lines = draw(st.lists(LINE.filter(bool), min_size=0, max_size=count * 2))
    speakers = ["narrator", "akira", "mei"]
    data["dialogue"] = [
        {"id": f"d{i}", "speaker": draw(st.sampled_from(speakers)), "line": line, "emotion": "neutral"}
        for i, line in enumerate(lines, 1)
    ]
    data["panels"] = [{**template[i % 2], "id": f"p{i + 1}", "dialogue": []} for i in range(count)]
    for line in data["dialogue"]:
        panel = draw(st.integers(0, count - 1))
        if len(data["panels"][panel]["dialogue"]) < 4:
            data["panels"][panel]["dialogue"].append(line["id"])
    data["dialogue"] = [d for d in data["dialogue"] if any(d["id"] in p["dialogue"] for p in data["panels"])]
    data["language"] = draw(st.sampled_from(["en", "zh", "ja"]))
    return data


@settings(max_examples=20, deadline=None)
@given(
    data=screenplays(),
    direction=st.sampled_from(DIRECTIONS),
    per_page=st.integers(1, 8),
    vertical=st.booleans(),
    fmt=st.sampled_from(["png", "jpeg"]),
)
def test_the_page_writer_writes_whole_pages_or_refuses(
    tmp_path_factory, data, direction, per_page, vertical, fmt
):
    out = tmp_path_factory.mktemp("fuzz-pages")
    screenplay = screenplay_from_text(json.dumps(data), source="generated")  # generated valid
    try:
        layout = LayoutOptions("custom", 256, 0 if direction == "vertical" else 362, direction, per_page)
        lettering = LetteringOptions(language=screenplay.language, vertical=vertical)
        composed = compose_pages(
            screenplay, render_storyboard(screenplay, 96, 96), layout=layout, lettering=lettering
        )
        written = save_pages(composed, out, fmt)
    except InputError:
        assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]
        return
    listed = json.loads((out / LAYOUT_FILE).read_text(encoding="utf-8"))
    assert listed["files"] == [p.name for p in written] and len(listed["pages"]) == len(written) >= 1
    assert sorted(p.name for p in out.iterdir()) == sorted([LAYOUT_FILE, *listed["files"]])
    for page in written:
        with Image.open(page) as image:
            image.verify()
