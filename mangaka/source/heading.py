"""A chapter's heading, read from its first lines: the title a screenplay keeps, verbatim.

A chapter opens with a heading when its first non-blank line is a numbered heading, in any of the
pack's languages: ``Chapter 4: Eleven Dark Minutes``, ``CHAPTER I``, ``Part Two``, ``Prologue``,
``第七章 雨夜``, ``第十二話　雪の駅``, ``제3화 비 오는 날``, ``Chapitre 2 — Le port``, ``Capítulo 3``,
``Глава 5``, ``Kapitel 1``. A heading that is only a number (``CHAPTER I``, ``第一章``) takes the next
line as its subtitle when that line is short, ends with no sentence mark and holds no quote
(``CHAPTER I`` / ``The Letter`` → ``CHAPTER I: The Letter``; ``第一章`` / ``雨夜`` → ``第一章　雨夜``).
A first line that is not a heading (a sentence, a quote) means the chapter has none: the model
writes the title. ``None`` also when the heading is longer than a title may be.
"""

from __future__ import annotations

import re

_NUMBER = r"(?:\d+|[IVXLCDM]+|[ivxlcdm]+|[一二三四五六七八九十百千零〇两壹贰叁肆伍陆柒捌玖拾]+|[０-９]+)"
_WORD_NUMBER = (
    r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|twenty|first|second|third|fourth|fifth|last|final)"
)
_LATIN = re.compile(
    rf"^(?:chapter|part|book|episode|chapitre|partie|livre|cap[ií]tulo|parte|libro|kapitel|teil|"
    rf"capitolo|hoofdstuk|rozdzia[łl]|глава|часть|книга)\s+(?:{_NUMBER}|{_WORD_NUMBER})\b(?P<rest>.*)$"
    r"|^(?:prologue|epilogue|interlude|prólogo|epílogo|prolog|epilog|пролог|эпилог)\b(?P<rest2>.*)$",
    re.IGNORECASE,
)
_CJK = re.compile(
    rf"^(?:第\s*{_NUMBER}\s*[章回节節卷集话話幕部篇]|序章|终章|終章|楔子|尾声|プロローグ|エピローグ"
    rf"|제\s*\d+\s*[화장부편]|\d+\s*[화장]|프롤로그|에필로그)(?P<rest>.*)$"
)
_SENTENCE_END = re.compile(r"[.!?。！？…]$")
_QUOTES = re.compile('["“”«»„「」『』]')
MAX_SUBTITLE = 60


def _lines(text: str, count: int) -> list[str]:
    out = []
    for line in text.splitlines():
        if line.strip():
            out.append(line.strip())
            if len(out) == count:
                break
    return out


def _subtitle(line: str) -> bool:
    return len(line) <= MAX_SUBTITLE and not _SENTENCE_END.search(line) and not _QUOTES.search(line)


def heading(text: str, max_length: int = 80) -> str | None:
    """The chapter's heading (module docstring), verbatim, or ``None``."""
    lines = _lines(text[:4000], 2)
    if not lines or _QUOTES.search(lines[0]) or len(lines[0]) > max_length:
        return None
    first = lines[0]
    latin = _LATIN.match(first)
    cjk = None if latin else _CJK.match(first)
    if latin is None and cjk is None:
        return None
    rest = (latin.group("rest") or latin.group("rest2") or "") if latin else cjk.group("rest")  # type: ignore[union-attr]
    if latin and _SENTENCE_END.search(first) and len(first.split()) > 6:
        return None  # "Chapter one of my life began when…": a sentence, not a heading
    if rest.strip(" \t:.-—–　") or len(lines) < 2 or not _subtitle(lines[1]):
        return first
    joined = f"{first}　{lines[1]}" if cjk else f"{first.rstrip(' :.')}: {lines[1]}"
    return joined if len(joined) <= max_length else first
