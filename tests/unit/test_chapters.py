"""Splitting books into chapters: golden books in Chinese, Japanese, English and Markdown, the three
file encodings, no lost text, fallback part sizes, false-positive headings and chapter ranges.

Regenerate the golden files after an intended change with ``MANGAKA_UPDATE_GOLDEN=1 pytest
tests/unit/test_chapters.py`` and review the diff.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
from pathlib import Path

import pytest

from mangaka.book_file import read_book
from mangaka.chapters import Chapter, parse_range, split_chapters
from mangaka.errors import InputError

DATA = Path(__file__).parent / "data" / "chapters"
UPDATE = os.environ.get("MANGAKA_UPDATE_GOLDEN") == "1"

# Book file → split_chapters keyword arguments.
BOOKS = {
    "zh_special.txt": {},
    "zh_numerals.txt": {},
    "zh_toc.txt": {},
    "ja.txt": {},
    "en.txt": {},
    "markdown.md": {},
    "md_parts.md": {},
    "no_headings.txt": {"max_chars": 400},
    "no_headings_zh.txt": {"max_chars": 100},
    "gb18030.txt": {},
    "utf8_bom.txt": {},
    "utf16.txt": {},
}


def _as_golden(chapters: list[Chapter]) -> list[dict]:
    return [
        {
            "number": c.number,
            "title": c.title,
            "heading": c.heading,
            "start": c.text[:40],
            "chars": len(c.text),
        }
        for c in chapters
    ]


def _nonspace(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _assert_no_text_lost(book: str, chapters: list[Chapter], markdown: bool = False) -> None:
    """Every non-space character of the book is in a title or text, in order (headings' Markdown
    hashes and short front matter, at most 200 characters at the very start, excepted)."""
    got = "".join((c.title if c.heading else "") + c.text for c in chapters)
    want, got = _nonspace(book.removeprefix("\ufeff")), _nonspace(got)
    if markdown:
        want, got = want.replace("#", ""), got.replace("#", "")
    assert want.endswith(got), "text was lost, changed or reordered"
    assert len(want) - len(got) <= 200, "more than a title's worth of front matter was dropped"


@pytest.mark.parametrize("name", list(BOOKS))
def test_golden_books(name):
    chapters = split_chapters(read_book(DATA / name), **BOOKS[name])
    got = _as_golden(chapters)
    path = DATA / f"{name}.json"
    if UPDATE:
        path.write_text(json.dumps(got, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert path.is_file(), f"{path} is missing; run with MANGAKA_UPDATE_GOLDEN=1 and review it"
    assert got == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", list(BOOKS))
def test_golden_books_lose_no_text(name):
    book = read_book(DATA / name)
    chapters = split_chapters(book, **BOOKS[name])
    assert [c.number for c in chapters] == list(range(1, len(chapters) + 1))
    _assert_no_text_lost(book, chapters, markdown=name.endswith(".md"))


def test_what_the_golden_books_show():
    """The decisions the golden files record, stated plainly."""
    zh = split_chapters(read_book(DATA / "zh_special.txt"))
    assert [c.title for c in zh] == [
        "序章 旧城",
        "第一卷 风起 第一章 雨夜",
        "第二回 灯下",
        "第三章：夜半来客",
        "番外一 春日",
        "尾声",
    ]
    assert "第一章就写到这里了" in zh[1].text  # not a heading: a sentence that starts with 第一章
    assert all(c.heading for c in zh)

    toc = split_chapters(read_book(DATA / "zh_toc.txt"))
    assert (toc[0].title, toc[0].heading) == ("Front matter", False)
    assert toc[0].text.endswith("目录\n第一章 木箱\n第二章 日记\n第三章 茶馆")  # the contents stay text
    assert [c.title for c in toc[1:]] == ["第一章 木箱", "第二章 日记", "第三章 茶馆", "第四章 灯塔"]
    assert toc[3].text == ""  # a heading with no text is kept

    md = split_chapters(read_book(DATA / "markdown.md"))
    assert [c.title for c in md] == ["Chapter 1: Seeds", "Chapter 2: Roots", "Chapter 3: Glass"]
    assert "### A note" in md[0].text and "## not a heading" in md[1].text

    parts = split_chapters(read_book(DATA / "md_parts.md"))
    assert [c.title for c in parts] == [
        "Part One: Winter Chapter 1",
        "Chapter 2",
        "Part Two: Spring Chapter 3",
        "Chapter 4",
    ]

    en = split_chapters(read_book(DATA / "en.txt"))
    assert [c.title for c in en][:3] == ["Prologue", "CHAPTER IV", "Chapter 2: The Letter"]
    assert "Chapter 3 was the one she reread most often." in en[1].text


# ---------------------------------------------------------------- headings


@pytest.mark.parametrize(
    "line",
    [
        "第一章",
        "第十一章 归来",
        "第二十三章：夜",
        "第一百零五章 — 终",
        "第〇章 零",
        "第12章 数字",
        "第１２章 全角",
        "第 7 回 回目",
        "第三节 小节",
        "第四集",
        "第五部 完",
        "第二卷 风起",
        "第一章雨夜",
        "  第一章 前后有空格  ",
        "\u3000\u3000第一章\u3000全角空格",
        "序章",
        "序",
        "序：缘起",
        "楔子",
        "引子",
        "尾声",
        "后记",
        "番外",
        "番外一 春日",
        "番外 春日",
        "番外篇：雪",
        "番外 2",
        "第1話",
        "第十話「別れ」",
        "第3幕 終わり",
        "プロローグ",
        "エピローグ",
        "終章",
        "Chapter 1",
        "CHAPTER 12",
        "Chapter IV",
        "chapter xiv: lower case",
        "Chapter One",
        "Chapter Twenty-One",
        "Chapter 2: The Letter",
        "Chapter 3. The Storm",
        "Chapter 4 — Dawn",
        "Chapter 5 The Return",
        "Prologue",
        "EPILOGUE",
        "Interlude: The Sea",
        "Part Two",
        "Book III",
        "# Chapter 1",
    ],
)
def test_heading_lines(line):
    chapters = split_chapters(f"{line}\nThe body of the chapter.\n第二章 下一章\n下一章的正文。")
    assert [c.title for c in chapters] == [line.strip().removeprefix("# "), "第二章 下一章"]
    assert chapters[0].text == "The body of the chapter."


@pytest.mark.parametrize(
    "line",
    [
        "In chapter 3 of his diary he wrote that storms were the worst.",
        "Chapter 3 was the one she reread most often.",
        "Chapter 3 of the report, which nobody read.",
        "Chapter 3, he said, is where it all goes wrong",
        "Chapter IIII",
        "Part of me wanted to stay.",
        "Prologues are for people who cannot start a story.",
        "Epilogue, she thought,",
        "第一章就写到这里了，他想。",
        "第一章的内容让他很困惑",
        "第一节课下课以后，他去了图书馆",
        "他翻到了第一章。",
        "序号不对。",
        "番外的故事以后再说。",
        "尾声渐渐远去了。",
        "第一章 " + "很长的标题" * 20,
    ],
)
def test_prose_lines_are_not_headings(line):
    book = f"A quiet morning.\n{line}\nThe end of the story."
    chapters = split_chapters(book)
    assert [(c.title, c.heading) for c in chapters] == [("Part 1", False)]
    assert chapters[0].text == book


def test_a_wrapped_prose_line_is_not_a_heading():
    book = (
        "Chapter 1\n\nShe opened the book that everyone in the village had warned her about, turning to\n"
        "Chapter 7: The Drowned Bell\nand read it twice.\n"
    )
    assert [c.title for c in split_chapters(book)] == ["Chapter 1"]


# ---------------------------------------------------------------- structure


def test_volume_heading_merges_into_the_next_chapter():
    book = "第一卷 风起\n\n第一章 雨夜\n正文一。\n第二章 晴\n正文二。\n第二卷\n第三章 雪\n正文三。"
    assert [c.title for c in split_chapters(book)] == [
        "第一卷 风起 第一章 雨夜",
        "第二章 晴",
        "第二卷 第三章 雪",
    ]


def test_volume_chapter_section_chain_merges():
    book = "第一卷\n第一章\n第一节 开始\n正文。\n第二节\n正文二。"
    assert [c.title for c in split_chapters(book)] == ["第一卷 第一章 第一节 开始", "第二节"]


def test_volume_with_text_is_its_own_chapter():
    book = "第一卷 风起\n这一卷讲的是风。\n第一章 雨夜\n正文。"
    assert [(c.title, c.text) for c in split_chapters(book)] == [
        ("第一卷 风起", "这一卷讲的是风。"),
        ("第一章 雨夜", "正文。"),
    ]


def test_empty_chapters_are_kept(caplog):
    with caplog.at_level(logging.WARNING, logger="mangaka.chapters"):
        chapters = split_chapters("Chapter 1\nChapter 2\nText of two.\nChapter 3")
    assert [(c.title, c.text) for c in chapters] == [
        ("Chapter 1", ""),
        ("Chapter 2", "Text of two."),
        ("Chapter 3", ""),
    ]
    assert "chapter 1 'Chapter 1' has no text" in caplog.text


def test_table_of_contents_at_the_end_stays_text():
    book = "Chapter 1\nOne.\nChapter 2\nTwo.\n\nContents\nChapter 1\nChapter 2\nChapter 3\n"
    chapters = split_chapters(book)
    assert [c.title for c in chapters] == ["Chapter 1", "Chapter 2"]
    assert chapters[1].text == "Two.\n\nContents\nChapter 1\nChapter 2\nChapter 3"


def test_short_front_matter_is_dropped_and_logged(caplog):
    with caplog.at_level(logging.INFO, logger="mangaka.chapters"):
        chapters = split_chapters("My Book\nby Someone\n\nChapter 1\nText.")
    assert [c.title for c in chapters] == ["Chapter 1"]
    assert "'My Book\\nby Someone'" in caplog.text


def test_long_front_matter_is_a_chapter():
    preface = "This preface explains why the book was written. " * 6
    chapters = split_chapters(f"My Book\n\n{preface}\n\nChapter 1\nText.")
    assert [(c.number, c.title, c.heading) for c in chapters] == [
        (1, "Front matter", False),
        (2, "Chapter 1", True),
    ]
    assert chapters[0].text == f"My Book\n\n{preface.rstrip()}"


def test_front_matter_with_many_short_lines_is_a_chapter():
    chapters = split_chapters("Title\nAuthor\nPublisher\n2024\nChapter 1\nText.")
    assert chapters[0].title == "Front matter" and chapters[0].text == "Title\nAuthor\nPublisher\n2024"


def test_markdown_single_book_title_is_not_the_only_chapter():
    book = "# The Book\n\n## One\nFirst.\n\n## Two\nSecond.\n"
    assert [c.title for c in split_chapters(book)] == ["One", "Two"]


def test_markdown_top_level_with_text_is_the_chapter_level():
    book = "# One\nIntro.\n## Scene\nA.\n# Two\nIntro two.\n## Scene\nB.\n"
    chapters = split_chapters(book)
    assert [c.title for c in chapters] == ["One", "Two"]
    assert chapters[0].text == "Intro.\n## Scene\nA."


def test_markdown_books_ignore_plain_headings():
    book = "## Part A\nChapter 1 is mentioned here.\nChapter 2\nstill text\n## Part B\nEnd."
    assert [c.title for c in split_chapters(book)] == ["Part A", "Part B"]


def test_long_headed_chapter_is_kept_whole_with_a_warning(caplog):
    body = "A sentence of the chapter. " * 100
    with caplog.at_level(logging.WARNING, logger="mangaka.chapters"):
        chapters = split_chapters(f"Chapter 1\n{body}\nChapter 2\nShort.", max_chars=500)
    assert [c.title for c in chapters] == ["Chapter 1", "Chapter 2"]
    assert len(chapters[0].text) > 500
    assert "chapter 1 'Chapter 1' is 2699 characters, more than max_chars=500" in caplog.text


def test_min_chars_merges_short_chapters_forward():
    book = (
        "Chapter 1\nShort.\nChapter 2\nA much longer chapter text.\n"
        "Chapter 3\nAnother long chapter.\nChapter 4\nEnd."
    )
    chapters = split_chapters(book, min_chars=10)
    assert [(c.number, c.title) for c in chapters] == [(1, "Chapter 1"), (2, "Chapter 3")]
    assert chapters[0].text == "Short.\n\nChapter 2\n\nA much longer chapter text."
    assert chapters[1].text == "Another long chapter.\n\nChapter 4\n\nEnd."  # the last merges backward
    _assert_no_text_lost(book, chapters)


def test_whitespace_is_normalised():
    book = (
        "\ufeffChapter 1  \r\n\r\n\r\n  Indented line.   \r\n\r\n\r\n\r\n"
        "Next paragraph.\t\r\n\r\nChapter 2\rTwo.\r"
    )
    chapters = split_chapters(book)
    assert chapters[0].text == "  Indented line.\n\nNext paragraph."
    assert chapters[1].text == "Two."


def test_blank_book_and_bad_arguments():
    assert split_chapters("") == []
    assert split_chapters(" \n\u3000\n\t") == []
    with pytest.raises(InputError, match="max_chars"):
        split_chapters("text", max_chars=0)
    with pytest.raises(InputError, match="min_chars"):
        split_chapters("text", min_chars=-1)


# ---------------------------------------------------------------- fallback parts


def _random_book(rng: random.Random, cjk: bool) -> str:
    words = (
        ["雨", "夜", "灯", "河", "船", "风"] if cjk else ["rain", "night", "lamp", "river", "boat", "wind"]
    )
    space = "" if cjk else " "
    ends = ["。", "！", "？", "”"] if cjk else [".", "!", "?", '."']
    paragraphs = []
    for _ in range(rng.randint(1, 30)):
        sentences = [
            space.join(rng.choice(words) for _ in range(rng.randint(1, 40))) + rng.choice(ends)
            for _ in range(rng.randint(1, 12))
        ]
        if rng.random() < 0.1:  # a run-on paragraph with no sentence end at all
            sentences = [space.join(rng.choice(words) for _ in range(rng.randint(100, 400)))]
        paragraphs.append(space.join(sentences))
    return ("\n" if cjk and rng.random() < 0.5 else "\n\n").join(paragraphs)


@pytest.mark.parametrize("seed", range(40))
def test_fallback_parts_fit_and_lose_nothing(seed):
    rng = random.Random(seed)
    book = _random_book(rng, cjk=seed % 2 == 0)
    max_chars = rng.choice([20, 50, 120, 300, 1000, 5000])
    chapters = split_chapters(book, max_chars=max_chars)
    assert chapters, "a non-blank book gives at least one part"
    assert [(c.number, c.title, c.heading) for c in chapters] == [
        (n, f"Part {n}", False) for n in range(1, len(chapters) + 1)
    ]
    assert all(0 < len(c.text) <= max_chars for c in chapters)
    assert _nonspace("".join(c.text for c in chapters)) == _nonspace(book)


def test_fallback_cuts_at_paragraphs_first():
    paragraphs = [f"Paragraph {n} says something short." for n in range(10)]
    chapters = split_chapters("\n\n".join(paragraphs), max_chars=80)
    for c in chapters:
        assert all(p in paragraphs for p in c.text.split("\n\n"))


def test_fallback_cuts_a_long_paragraph_at_sentence_ends():
    sentences = [f"Sentence number {n} ends here." for n in range(20)]
    chapters = split_chapters(" ".join(sentences), max_chars=100)
    for c in chapters:
        assert c.text.endswith("ends here.")


def test_fallback_cjk_without_blank_lines_cuts_at_lines():
    lines = [f"第{n}行的文字，写得不长也不短。" for n in range(30)]
    chapters = split_chapters("\n".join(lines), max_chars=100)
    assert len(chapters) > 1
    for c in chapters:
        assert all(line in lines for line in c.text.split("\n"))


def test_fallback_parts_are_balanced():
    paragraphs = ["x" * 90] * 11
    chapters = split_chapters("\n\n".join(paragraphs), max_chars=500)
    sizes = [len(c.text) for c in chapters]
    assert len(sizes) == 3 and max(sizes) - min(sizes) <= 92


def test_short_book_without_headings_is_one_part():
    assert [(c.title, c.text) for c in split_chapters("Just a paragraph.")] == [
        ("Part 1", "Just a paragraph.")
    ]


# ---------------------------------------------------------------- slug


def test_slug():
    assert Chapter(3, "第三章 雨夜", "", True).slug() == "03 第三章 雨夜"
    assert Chapter(3, "Chapter 2: The Letter?", "", True).slug() == "03 Chapter 2 The Letter"
    assert Chapter(7, 'a/b\\c:d*e?f"g<h>i|j\tk\x00l', "", True).slug() == "07 abcdefghijkl"
    assert Chapter(12, "Part 12", "", False).slug(width=3) == "012 Part 12"
    assert Chapter(123, "Long", "", True).slug() == "123 Long"
    assert Chapter(1, "", "", True).slug() == "01"
    assert Chapter(1, "x" * 200, "", True).slug() == "01 " + "x" * 57
    assert Chapter(1, "Ends with dots...", "", True).slug() == "01 Ends with dots"


# ---------------------------------------------------------------- files


def test_read_book_encodings():
    assert read_book(DATA / "utf8_bom.txt").startswith("序章\n")
    assert read_book(DATA / "utf16.txt").startswith("Chapter 1: Sixteen Bits\r\n")
    assert read_book(DATA / "gb18030.txt").startswith("第一章 归乡\r\n")
    assert "café" in read_book(DATA / "utf16.txt")


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_without_bom_is_refused(tmp_path, encoding):
    path = tmp_path / "book.txt"
    path.write_bytes("Chapter 1\nText.\n".encode(encoding))
    with pytest.raises(InputError, match="UTF-16 without a byte order mark"):
        read_book(path)


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。" * 3, "shift_jis"),
        ("吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。" * 3, "euc_jp"),
        ("話說天下大勢，分久必合，合久必分。周末七國分爭，並入於秦。" * 3, "big5"),
        ("Café, crème brûlée et garçon. " * 3, "latin-1"),
    ],
)
def test_other_encodings_are_refused_not_garbled(tmp_path, text, encoding):
    path = tmp_path / "book.txt"
    path.write_bytes(text.encode(encoding))
    with pytest.raises(InputError) as exc:
        read_book(path)
    assert str(path) in str(exc.value)
    assert "UTF-8" in str(exc.value) and "GB18030" in str(exc.value)


def test_bad_bom_file_and_missing_file(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\xef\xbb\xbfok \xff\xfe\xfd")
    with pytest.raises(InputError, match="byte order mark but is not valid"):
        read_book(path)
    with pytest.raises(InputError, match="not found"):
        read_book(tmp_path / "missing.txt")
    with pytest.raises(InputError, match="is a folder; give the path of a file"):
        read_book(tmp_path)


# ---------------------------------------------------------------- ranges


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        ("all", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        ("3", [3]),
        ("3-7", [3, 4, 5, 6, 7]),
        ("1,3,5-6", [1, 3, 5, 6]),
        ("4-", [4, 5, 6, 7, 8, 9, 10]),
        ("-2", [1, 2]),
        (" 5 - 6 , 1 ", [1, 5, 6]),
        ("6,1-3,2", [1, 2, 3, 6]),
        ("1，3、5～6", [1, 3, 5, 6]),
        ("３-４", [3, 4]),
        ("10", [10]),
        ("1 2", [1, 2]),
    ],
)
def test_parse_range(spec, want):
    assert parse_range(spec, 10) == want


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("0", "out of range"),
        ("11", "out of range"),
        ("3-11", "out of range"),
        ("11-", "out of range"),
        ("7-3", "backwards"),
        ("x", "is not a number or range"),
        ("-", "is not a number or range"),
        ("1-2-3", "is not a number or range"),
        ("1.5", "is not a number or range"),
        (",", "names no chapters"),
    ],
)
def test_parse_range_errors(spec, why):
    with pytest.raises(InputError, match=why) as exc:
        parse_range(spec, 10)
    if why != "backwards":
        assert "1..10" in str(exc.value)


@pytest.mark.parametrize("spec", ["9" * 5000, "1-" + "9" * 5000, "9" * 5000 + "-", "2," + "1" * 5000 + "-3"])
def test_parse_range_with_thousands_of_digits_is_out_of_range(spec):
    """Python refuses to read an integer of over 4,300 digits (a ValueError); a chapter number that
    long is out of range, said so naming the range (shortened) and the valid numbers."""
    with pytest.raises(InputError, match="out of range") as exc:
        parse_range(spec, 10)
    message = str(exc.value)
    assert message.startswith(f"chapter range {spec[:20]!r}… ({len(spec):,} characters)")
    assert "1..10" in message and len(message) < 300


def test_parse_range_reads_leading_zeros_and_other_digits_of_any_length():
    assert parse_range("0" * 5000 + "3", 10) == [3]
    assert parse_range("1-" + "0" * 5000 + "10", 10) == list(range(1, 11))
    assert parse_range("０" * 5000 + "２-３", 10) == [2, 3]


def test_parse_range_of_an_empty_book():
    assert parse_range("", 0) == []
    with pytest.raises(InputError, match="no chapters"):
        parse_range("1", 0)


# Issue 19, item 7: bytes that GB18030 decodes without an error, but as mojibake.
MISREAD = {
    "EUC-KR Korean": (
        "제1장\n\n안녕하세요 여러분. 오늘은 좋은 날입니다.\n",
        "euc_kr",
        "Korean text in EUC-KR",
    ),
    "short Latin-1": ("Das Mädchen fährt nach Hause.\n", "latin-1", "text in CP1252"),
}


@pytest.mark.parametrize("case", MISREAD)
def test_text_gb18030_only_misreads_is_refused_by_name(tmp_path, case):
    text, encoding, looks = MISREAD[case]
    path = tmp_path / "book.txt"
    path.write_bytes(text.encode(encoding))
    text.encode(encoding).decode("gb18030")  # no decoding error: only a second opinion tells
    with pytest.raises(InputError) as exc:
        read_book(path)
    message = str(exc.value)
    assert str(path) in message and f"it looks like {looks}" in message
    assert f"iconv -f {looks.split()[-1]} -t UTF-8 {path} > {tmp_path / 'book.utf8.txt'}" in message
    assert "UTF-8" in message and "GB18030" in message


def test_gb18030_chinese_books_are_still_read(tmp_path):
    for name in ("gb18030.txt", "zh_numerals.txt", "zh_special.txt", "zh_toc.txt", "no_headings_zh.txt"):
        text = read_book(DATA / name)
        path = tmp_path / name
        path.write_bytes(text.encode("gb18030"))
        assert read_book(path) == text, name
