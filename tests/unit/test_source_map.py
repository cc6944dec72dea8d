"""The source map of a chapter (``mangaka.source``): property tests on generated chapters, linear
time, and examples.

Generated chapters are built from paragraphs of Latin and CJK sentences, quotes with each
language's marks (primary and fallback, ``QUOTE_MARKS``), attributions, apostrophes (``don't``,
``don’t``), unbalanced marks, blank lines, runs of blank lines, ``\\r\\n`` and ``\\r`` line
endings and lines of spaces or U+3000. On any of them the units tile the chapter, each quote lies
in its unit, the balloon lines of a quote are the quote, cut at sentence ends where it has them,
and a chapter's line endings do not change what it says. On well-formed chapters (balanced marks
of one set, nothing between them that is a mark) every quote is found, exactly.

Linear time is shown as a ratio of CPU times at n and 4n characters (``tests/growth.py``), with
an absolute bound only as a backstop.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mangaka.screenplay.models import MAX_LINE, MAX_TITLE
from mangaka.source import (
    BALLOON_CHARS,
    MAX_QUOTE_CHARS,
    MAX_UNIT_CHARS,
    MAX_UNIT_CJK_CHARS,
    QUOTE_MARKS,
    find_quote_spans,
    source_map,
)
from mangaka.source import MAX_TITLE as SOURCE_MAX_TITLE
from tests.growth import cpu_seconds_per_call
from tests.unit.source_checks import (
    ALL_MARKS,
    ENDS_A_SENTENCE,
    LANGUAGES,
    MARK_CHARS,
    check_map,
    lines_of,
    squeeze,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "prompts" / "samples" / "demo_chapter.en.txt"

BOUNDED = settings(
    deadline=None,  # every chapter is small; time is asserted below, as a ratio of CPU times
    database=None,  # nothing written into the checkout
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)

# ------------------------------------------------------------------ generated chapters

LATIN = ["rain", "lantern", "Mei", "Tobias", "door", "old", "man", "the", "a", "shop", "tea", "Kiri"]
LATIN_APOSTROPHES = ["don't", "don’t", "we're", "it’s", "Mei's", "o'clock"]
CJK_ZH = ["雨", "灯笼", "沈青衣", "老周", "推开", "门", "茶", "低头", "看着", "窗外", "他"]
CJK_JA = ["雨", "ハルト", "は", "窓", "の", "外", "を", "見た", "ユイ", "が", "静か", "です"]
ENDS_LATIN = [".", ".", "!", "?", "...", "?!", "…", ""]
ENDS_CJK = ["。", "。", "！", "？", "……", "…", ""]
CLAUSE = {"en": [", ", "; ", " "], "zh": ["，", "、", ""], "ja": ["、", ""]}
ATTRIBUTIONS = {
    "en": ["", " said Mei.", ", Tobias said.", " he said quietly.", " said the old man."],
    "zh": ["", "沈青衣说。", "老周道：", "他低声说。"],
    "ja": ["", "とハルトが言った。", "とユイは言った。"],
}
SPACE = {"en": " ", "zh": "", "ja": ""}
# Between paragraphs, or lines: line breaks of each kind, blank lines, runs of them, blank lines
# holding spaces or U+3000.
BREAKS = [
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    "\r\n\r\n",
    "\r\r",
    "\n\n\n\n",
    "\r\n\r\n\r\n",
    "\n \n",
    "\n\u3000\n",
    "\r\n  \u3000\r\n",
    "\n\t\n\n",
]


def words(lang: str, apostrophes: bool) -> list[str]:
    if lang == "en":
        return LATIN + (LATIN_APOSTROPHES if apostrophes else [])
    return (CJK_ZH if lang == "zh" else CJK_JA) + ["Mei", "rain"]


def _sentences(lang: str, apostrophes: bool) -> list[str]:
    """Sentences of the language (fixed, so that drawing one is one choice, which keeps the
    generation fast): words (Latin ones spaced, some in Chinese and Japanese text too), clause
    marks, an end (or none); short ones first, so that a failure shrinks to them."""
    rng = random.Random(f"{lang} {apostrophes}")
    out = []
    for i in range(90):
        latin = lang == "en" or i % 9 == 4
        pool = words("en" if latin else lang, apostrophes)
        ws = [rng.choice(pool) for _ in range(1 + i // 6)]
        glue = " " if latin else ""
        clauses = [glue.join(ws[k : k + 4]) for k in range(0, len(ws), 4)]
        ends = ENDS_LATIN if latin else ENDS_CJK
        out.append(rng.choice(CLAUSE["en" if latin else lang]).join(clauses) + ends[i % len(ends)])
    return out


SENTENCES = {(lang, a): _sentences(lang, a) for lang in LANGUAGES for a in (False, True)}


def sentence(lang: str, apostrophes: bool = True) -> st.SearchStrategy[str]:
    return st.sampled_from(SENTENCES[lang, apostrophes])


@st.composite
def quote_content(draw, lang: str, apostrophes: bool = True) -> str:
    """What a quote says: one sentence to many (longer than a balloon), maybe spaces at its ends,
    maybe one line break inside (never a blank line)."""
    sentences = draw(st.lists(sentence(lang, apostrophes), min_size=1, max_size=10))
    text = SPACE[lang].join(sentences)
    # A line break, never right after an apostrophe (that one would read as a closing mark).
    at = [k for k in range(1, len(text)) if text[k - 1] not in "'’"]
    if at and draw(st.booleans()):
        k = draw(st.sampled_from(at))
        text = text[:k] + draw(st.sampled_from(["\n", "\r\n", "\r"])) + text[k:]
    lead, tail = draw(st.sampled_from(["", "", " "])), draw(st.sampled_from(["", "", " "]))
    return (lead + text + tail)[: MAX_QUOTE_CHARS - 100]


@dataclass
class Chapter:
    """A chapter built piece by piece, the spans of the quotes it was built with kept."""

    text: str = ""
    spans: list[tuple[int, int]] = field(default_factory=list)

    def add(self, piece: str) -> None:
        self.text += piece

    def quote(self, opener: str, content: str, closer: str) -> None:
        self.text += opener
        self.spans.append((len(self.text), len(self.text) + len(content)))
        self.text += content + closer


@st.composite
def any_chapter(draw, lang: str) -> str:
    """A chapter of the language: any mix of marks (both sets), stray marks, attributions."""
    marks = ALL_MARKS[lang]
    chapter = Chapter()
    chapter.add(draw(st.sampled_from(["", "", " ", "\n", "\u3000\u3000", "\r\n \r\n"])))
    for p in range(draw(st.integers(1, 7))):
        if p:
            chapter.add(draw(st.sampled_from(BREAKS)))
            if draw(st.integers(0, 5)) == 0:
                chapter.add(draw(st.sampled_from(["  ", "\u3000", " \u3000 "])))
        for s in range(draw(st.integers(1, 6))):
            if s:
                chapter.add(SPACE[lang])
            kind = draw(st.integers(0, 9))
            if kind <= 3:
                chapter.add(draw(sentence(lang)))
            elif kind <= 7:
                m = draw(st.sampled_from(marks))
                chapter.quote(m.opener, draw(quote_content(lang)), m.closer)
                chapter.add(draw(st.sampled_from(ATTRIBUTIONS[lang])))
            elif kind == 8:  # a stray mark
                chapter.add(draw(st.sampled_from(sorted(MARK_CHARS[lang]))))
            else:  # a lone line break inside the paragraph
                chapter.add(draw(st.sampled_from(["\n", "\r\n", "\r"])))
    chapter.add(draw(st.sampled_from(["", "", "\n", " \n\n", "\u3000"])))
    return chapter.text


@st.composite
def well_formed_chapter(draw, lang: str) -> tuple[str, list[tuple[int, int]]]:
    """A chapter whose quotes all use one set of marks (the primary set, or the fallback set and
    no primary mark anywhere), balanced, with no mark of the language inside a quote or in the
    narration (a single quote's apostrophe inside a word is no mark). Its quote spans, as built."""
    primary, fallback = QUOTE_MARKS[lang]
    marks = draw(st.sampled_from([primary, fallback]))
    # English single quotes need a word boundary on their outer sides; a space is one.
    gap = " " if lang == "en" else ""
    chapter = Chapter()
    for p in range(draw(st.integers(1, 6))):
        if p:
            chapter.add(draw(st.sampled_from(BREAKS)))
        for s in range(draw(st.integers(1, 5))):
            if s:
                chapter.add(SPACE[lang])
            if draw(st.booleans()):
                chapter.add(draw(sentence(lang)) + gap)
            else:
                m = draw(st.sampled_from(marks))
                content = draw(quote_content(lang, apostrophes=lang == "en"))
                content = content if content.strip() else "x"
                chapter.quote(m.opener, content, m.closer)
                chapter.add(draw(st.sampled_from(ATTRIBUTIONS[lang])) + gap)
    return chapter.text, chapter.spans


LANGUAGE_CHAPTERS = st.sampled_from(LANGUAGES).flatmap(
    lambda lang: st.tuples(st.just(lang), any_chapter(lang))
)


# ------------------------------------------------------------------ properties


def test_a_balloon_is_the_screenplays_line():
    assert BALLOON_CHARS == MAX_LINE


def test_a_heading_fits_the_screenplays_title():
    assert SOURCE_MAX_TITLE == MAX_TITLE


@settings(BOUNDED, max_examples=250)
@given(LANGUAGE_CHAPTERS)
@example(("en", 'He said "a\r\nb" and left.\r\nNext line.'))
@example(("en", "\u3000\r\n\r\n \n"))
@example(("ja", "「雨だね。\r\n」とユイが言った。"))
def test_any_chapter_gives_a_consistent_map(case):
    lang, text = case
    check_map(text, lang)


@settings(BOUNDED, max_examples=150)
@given(LANGUAGE_CHAPTERS)
@example(("en", 'One.\r\n"Two\r\nthree," said Mei.\r\nFour.'))
@example(("zh", "雨。\r\n“你来了，\r\n”沈青衣说。"))
@example(
    (
        "ja",
        "“は雨ががrain\n見たです静かがの窓見たは。”窓。\n  「窓。」\n"
        "  “は雨ががrain\r見たです静かがの窓見たは。”",
    )
)
def test_line_endings_do_not_change_the_map(case):
    """``\\r\\n`` and ``\\r`` are line breaks like ``\\n``: one of them is no blank line."""
    lang, text = case
    a, b = source_map(text, lang), source_map(lines_of(text), lang)
    assert len(a.paragraphs) == len(b.paragraphs)
    assert [lines_of(q.text) for q in a.quotes] == [q.text for q in b.quotes]
    assert [q.hint for q in a.quotes] == [q.hint for q in b.quotes]
    assert [squeeze(line.text) for line in a.lines] == [squeeze(line.text) for line in b.lines]


@settings(BOUNDED, max_examples=250)
@given(st.sampled_from(LANGUAGES).flatmap(lambda lang: st.tuples(st.just(lang), well_formed_chapter(lang))))
@example(("zh", ("他说：‘你好，’他低头。‘走吧。’", [(4, 7), (13, 16)])))
@example(("en", ("‘I don’t know,’ said Mei. ‘It’s late.’", [(1, 14), (27, 37)])))
@example(("en", ("'We're closed,' said Mei. 'Don't.'", [(1, 14), (27, 33)])))
def test_well_formed_chapters_give_back_their_quotes(case):
    lang, (text, spans) = case
    assert find_quote_spans(text, lang) == spans
    sm = check_map(text, lang)
    assert len(sm.quotes) == len(spans)


def long_paragraph(lang: str) -> st.SearchStrategy[str]:
    """A paragraph of narration sentences (each ending a sentence) and quotes between them, longer
    than a unit: it has sentence ends outside quotes every few hundred characters. An English
    quote may follow a sentence's full stop with no space, and start with a space."""
    marks = ALL_MARKS[lang]
    glue = SPACE[lang]

    @st.composite
    def build(draw) -> str:
        text = ""
        for _ in range(draw(st.integers(4, 24))):
            said = draw(sentence(lang)).rstrip(".!?。！？…")
            text += (glue if text else "") + said + ("." if lang == "en" else "。")
            if draw(st.booleans()):
                m = draw(st.sampled_from(marks))
                content = draw(quote_content(lang))[:200]
                content = content if content.strip() else "x"
                lead = draw(st.sampled_from(["", " ", "\n"])) if lang == "en" else ""
                text += draw(st.sampled_from([glue, ""])) + m.opener + lead + content + m.closer
                text += draw(st.sampled_from(ATTRIBUTIONS[lang]))
        # Longer than a unit of either kind by more than the widest gap between two sentence ends
        # outside quotes (a sentence, a quote of 200 characters, an attribution).
        while len(text) <= MAX_UNIT_CHARS + 400:
            text = text + glue + text
        return text

    return build()


def is_cjk(text: str) -> bool:
    """Whether the chapter is Chinese or Japanese for the length of its units (the spec's rule:
    most of its characters are kana or ideographs)."""
    cjk = sum(
        1 for c in text if "\u3040" <= c <= "\u30ff" or "\u3400" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff"
    )
    return cjk * 2 > len(text.strip() or " ")


@settings(BOUNDED, max_examples=60)
@given(
    st.sampled_from(LANGUAGES).flatmap(lambda lang: st.tuples(st.just(lang), long_paragraph(lang))),
    st.sampled_from(["", "Before.\n\n", "前。\r\n\r\n"]),
)
@example(
    ("en", "A b c d e f g h. " * 70 + 'He left." Go away now, and never come back here," she said. ' * 3), ""
)
@example(
    ("en", "A b c d e f g h. " * 70 + 'He left."Go away now, and never come back here," she said. ' * 3), ""
)
def test_a_long_paragraph_is_cut_into_units_at_sentence_ends_outside_quotes(case, before):
    lang, paragraph = case
    text = before + paragraph + "\n\nAfter."
    sm = check_map(text, lang)  # no unit starts inside a quote, or between its marks
    limit = MAX_UNIT_CJK_CHARS if is_cjk(text) else MAX_UNIT_CHARS
    index, p = next((i, p) for i, p in enumerate(sm.paragraphs) if p.end - p.start > limit)
    mine = [u for u in sm.units if u.paragraph == index]
    assert len(mine) >= 2
    for u in mine[1:]:  # each cut right after a sentence end
        assert ENDS_A_SENTENCE.search(text[p.start : u.start].rstrip()), text[u.start - 20 : u.start + 5]
    for u, v in pairwise(mine):  # each unit as long as it may be (its sentences are short)
        assert v.start - max(u.start, p.start) <= limit
    assert sm.units_of_paragraphs(index, index) == (mine[0].number, mine[-1].number)


# ------------------------------------------------------------------ linear time

NAMES_EN = [
    a + b + c + d for a in "BCDFGHJKLMNPRSTVWZ" for b in "aeiou" for c in "bdgklmnprstvz" for d in "aeiou"
]
SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏"
GIVEN = "一二三四五六七八九十百千万甲乙丙丁戊己庚辛壬癸子丑寅卯辰巳午未申酉戌亥"
NAMES_ZH = [s + g for s in SURNAMES for g in GIVEN]
NAMES_JA = [a + b for a in "山川田中木林森石岡村松竹梅桜花鳥風月星空海" for b in "一二三四五六七八九十百千万"]


def _repeat(unit: str, n: int) -> str:
    return unit * (n // len(unit) + 1)


def _one_line(text: str) -> str:
    return re.sub(r"\s*\n\s*", " ", text)


# (language, the chapter's text at n characters): every chapter on ONE line (no line break, so
# one paragraph), n = 15,000 and 60,000. Shapes that once took time quadratic in the chapter:
# a name searched from each quote through the whole paragraph, each name checked against every
# other, each candidate searched for through the whole narration, each stray single quote
# searching on for a thousand characters.
SHAPES = {
    "the demo chapter, on one line, again and again": (
        "en",
        lambda n: _repeat(_one_line(DEMO.read_text()), n),
    ),
    "quotes, the names only at the end": (
        "en",
        lambda n: '"We are closed." ' * (n // 17) + "Later Mei met Tobias, and Tobias met Mei.",
    ),
    "quotes and a thousand names, each three times": (
        "en",
        lambda n: " ".join(f'"Hi." The man saw {c} and {c} and {c} there.' for c in NAMES_EN),
    ),
    "quotes and attributions, every one a new name": (
        "en",
        lambda n: " ".join(f'"Hi," said {c}. "Go," said {c}.' for c in NAMES_EN * 2),
    ),
    "Chinese: clauses opened by a thousand names": (
        "zh",
        lambda n: _repeat("".join(f"，{c}走了。“你好。”，{c}笑了。" for c in NAMES_ZH), n),
    ),
    "Chinese: attributions, every one a new name": (
        "zh",
        lambda n: _repeat("".join(f"“好。”{c}说。" for c in NAMES_ZH), n),
    ),
    "Japanese: attributions, every one a new name": (
        "ja",
        lambda n: "".join(f"「はい。」と{c}が言った。{c}は笑った。" for c in NAMES_JA * 20),
    ),
    "unbalanced: opening marks only": ("en", lambda n: _repeat("He said “wait and went. ", n)),
    "unbalanced: closing marks only": ("zh", lambda n: _repeat("他说完了”」』走了。", n)),
    "unbalanced: every mark, none closed": ("zh", lambda n: _repeat("“甲「乙『丙‘丁 ", n)),
    "unbalanced: straight single quotes that open and never close": ("en", lambda n: _repeat(" 'em ", n)),
    "unbalanced: curly single quotes that open and never close": ("en", lambda n: _repeat(" ‘tis", n)),
    "Japanese: opening marks only": ("ja", lambda n: _repeat("「雨『風“光。", n)),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_source_map_time_is_linear_in_the_chapter(shape):
    lang, make = SHAPES[shape]
    n = 15_000
    chapters = {k: make(k)[:k] for k in (n, 4 * n)}
    assert all(len(c) == k and "\n" not in c for k, c in chapters.items())
    build = source_map.__wrapped__  # not the cache
    small = large = float("inf")
    for _ in range(3):
        small = min(small, cpu_seconds_per_call(lambda: build(chapters[n], lang)))
        large = min(large, cpu_seconds_per_call(lambda: build(chapters[4 * n], lang)))
    # Linear work gives 4x; quadratic 16x.
    assert large < 8 * small + 0.005, f"{small * 1e3:.1f} ms at {n}, {large * 1e3:.1f} ms at {4 * n}"
    assert large < 1.0, f"{large * 1e3:.0f} ms for {4 * n} characters"
    check_map(chapters[4 * n], lang)


# ------------------------------------------------------------------ examples


def hints(text: str, lang: str) -> list[tuple[str, str | None]]:
    return [(q.text, q.hint) for q in source_map(text, lang).quotes]


def test_english_attributions_give_the_hint():
    assert hints('"We\'re closed," Mei said, pointing at the door.', "en") == [("We're closed,", "Mei")]
    assert hints('"We\'re closed," said Tobias from behind the counter.', "en") == [
        ("We're closed,", "Tobias")
    ]
    # No name next to the first quote: the name nearest it in its paragraph (after it, here).
    sm = source_map('"We\'re closed," said a voice. "Open," said Tobias.', "en")
    assert [(q.hint, q.attributed) for q in sm.quotes] == [("Tobias", False), ("Tobias", True)]


def test_the_one_a_line_speaks_to_gives_the_next_lines_hint():
    """An unattributed line right after one that names someone answers it: the addressee's reply,
    before the nearest name (here the first speaker's, which would be wrong)."""
    lead = "The shop was warm, and behind the counter stood Akira. Then came Mei, and Akira smiled at Mei."
    sm = check_map(lead + '\n\n"Akira, a tea please," said Mei.\n\n"Coming right up."', "en")
    assert [(q.hint, q.attributed) for q in sm.quotes] == [("Mei", True), ("Akira", False)]
    # Out of reach (a paragraph between), or naming its own speaker: the other rules decide.
    far = check_map(lead + '\n\n"Akira, tea," said Mei.\n\nRain fell.\n\n"Coming."', "en")
    assert far.quotes[1].evidence != "addressed"  # out of its reach: the last guess, the one who answers
    own = check_map(lead + '\n\n"Mei wants tea," said Mei.\n\n"Coming."', "en")
    assert own.quotes[1].hint != "Mei" and not own.quotes[1].sure
    zh = "陆明站在柜台后面。沈青衣走了进来。陆明看着沈青衣。\n\n“陆明，来杯茶。”沈青衣说。\n\n“马上来。”"
    assert [q.hint for q in check_map(zh, "zh").quotes] == ["沈青衣", "陆明"]


def test_a_titled_name_is_a_name_at_a_sentences_start_and_inside_a_line():
    """English names only count mid-sentence (any word is capitalised at a sentence's start), but a
    title makes one a name anywhere, a line's vocative included; its bare uses count for it, and
    a line after the paragraph that uses it bare gets it as a hint."""
    text = (
        "Down the quay walked Ada, to a shed where a man mended a net. He nodded at Ada.\n\n"
        '"Morning, Mr. Hollis," she said. "Lovely color, that."\n\n'
        "Hollis did not look up. Hollis's needle went on.\n\n"
        '"Green is cheap."'
    )
    sm = check_map(text, "en")
    assert [n.name for n in sm.names] == ["Mr. Hollis", "Ada"]
    assert sm.quotes[2].hint == "Mr. Hollis"
    # Used once, and never again bare: a passing mention, not the cast.
    once = check_map('Ada and Ben ate, and Ada and Ben slept.\n\n"Mrs. Dunne is away," said Ada.', "en")
    assert [n.name for n in once.names] == ["Ada", "Ben"]
    assert check_map("Mr. Nothing is here. Nothing stirs.", "en").names == ()


def test_the_demo_chapter():
    sm = check_map(DEMO.read_text(encoding="utf-8"), "en")
    assert len(sm.quotes) == 6
    assert [q.text for q in sm.quotes][:2] == ["We're closed,", "The sign says open,"]
    assert {c.name for c in sm.names} == {"Mei", "the old man"}
    assert sm.quotes[1].hint == "Mei" and sm.quotes[1].attributed
    assert sm.quotes[2].hint == "the old man"


def test_chinese_attribution_after_the_quote():
    sm = check_map("雨停了。\n\n“你来了，”沈青衣说，“坐吧。”", "zh")
    assert [(q.text, q.hint, q.attributed) for q in sm.quotes] == [
        ("你来了，", "沈青衣", True),
        ("坐吧。", "沈青衣", True),
    ]
    assert sm.names[0].name == "沈青衣"


def test_japanese_hint_from_the_paragraph_before():
    text = "ハルトは窓の外を見ていた。ハルトは黙っていた。\n\n「雨だね。」\n\n「そうだね。」とユイが言った。"
    sm = check_map(text, "ja")
    assert sm.quotes[0].unit == 2
    assert [(q.text, q.hint, q.attributed) for q in sm.quotes] == [
        ("雨だね。", "ハルト", False),
        ("そうだね。", "ユイ", True),
    ]


def test_english_single_quotes_when_there_is_no_double_quote():
    text = "‘I don’t know,’ said Mei. ‘It’s late.’\n\nThe old man’s shop was dark.\n\n‘Don’t go.’"
    sm = check_map(text, "en")
    assert [q.text for q in sm.quotes] == ["I don’t know,", "It’s late.", "Don’t go."]
    assert sm.quotes[0].hint == "Mei"
    straight = text.replace("‘", "'").replace("’", "'")
    assert find_quote_spans(straight, "en") == find_quote_spans(text, "en")
    # A double quote anywhere: the single quotes are no quotes.
    assert [q.text for q in source_map(text + '\n\n"Wait."', "en").quotes] == ["Wait."]


def test_chinese_fallback_marks():
    sm = check_map("雨停了。\n\n『你来了。』沈青衣说。\n\n『坐吧。』", "zh")
    assert [q.text for q in sm.quotes] == ["你来了。", "坐吧。"]
    assert sm.quotes[0].hint == "沈青衣"
    # Single curly quotes, as Chinese sets them: right after a character, a character right after.
    assert find_quote_spans("他说：‘你好，’他低头。‘走吧。’", "zh") == [(4, 7), (13, 16)]
    assert find_quote_spans("书名是《雨夜》。", "zh") == []


def test_japanese_fallback_marks():
    assert [q.text for q in source_map("“雨だね。”とユイが言った。", "ja").quotes] == ["雨だね。"]


def test_a_chapter_without_marks_has_units_and_no_quotes():
    text = "Rain fell on the lane.\n\nMei opened the door.\n\nNothing else happened."
    sm = check_map(text, "en")
    assert sm.quotes == () and sm.lines == ()
    assert len(sm.units) == 3
    assert sm.unit_text(1) == "Rain fell on the lane."


def test_crlf_lines_are_lines_not_paragraphs():
    text = 'Rain fell.\r\n"Wait,\r\nplease," Mei said.\r\nShe left.'
    sm = check_map(text, "en")
    assert [q.text for q in sm.quotes] == ["Wait,\r\nplease,"]
    assert len(sm.paragraphs) == 3
    assert len(check_map("One.\r\n\r\nTwo.\r\nThree.", "en").paragraphs) == 2
