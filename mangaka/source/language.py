"""A chapter's language, read from its text: by script first, then, for the Latin script, by its
function words.

``detect_language(text)`` gives a ``Detection``: the language, whether the text leaves no doubt,
and why. The rules, in order:

- **script**: the letters of each script are counted. Hangul → ``ko``; kana (hiragana, katakana)
  among Han characters → ``ja`` (Japanese prose always has kana; Chinese has none); Han without
  kana → ``zh``; Cyrillic → ``ru``; Latin → one of the Latin languages below. The script must hold
  most of the letters; a chapter with no letters is ``en``, not sure;
- **Latin function words**: the share of the chapter's words that are each language's most common
  short words (articles, pronouns, prepositions: ``the``/``and``/``of``; ``le``/``la``/``et``/``les``;
  ``el``/``los``/``que``/``y``; ``der``/``die``/``und``) and its letters (``é è ç`` for French, ``ñ ¿ ¡``
  for Spanish, ``ß ä ö ü`` for German). The highest share wins; it is sure when it is clearly above the
  next one.

No library: the detectors on PyPI (``langdetect``, ``lingua``) are larger than the pack's whole engine or
need native code that does not build everywhere the pack does (LoongArch), and a chapter is long
enough for these rules: hundreds of words in one language, where a detector for short texts is not
needed. The detection is shown to the user (``read``) and checked against an explicit ``language``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

# Languages whose words are separated by spaces and whose names are capitalised words: names match
# as whole words, in any case. The others (zh, ja, ko) match names as written, inside longer runs
# (Korean attaches its particles: 지수가, 지수는).
SPACED = frozenset({"en", "fr", "es", "ru", "de"})
LATIN = ("en", "fr", "es", "de")
NAMES = {
    "en": "English",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "fr": "French",
    "es": "Spanish",
    "ru": "Russian",
    "de": "German",
}

_HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")
_WORD = re.compile(r"[a-zà-ÿœæß]+", re.IGNORECASE)

_FUNCTION_WORDS = {
    "en": "the and of to a in was he she it his her that with for on you i is at as had but not said",
    "fr": "le la les et de des un une il elle est dans du que qui pas en au sur pour avec ne se je vous",
    "es": "el la los las y de que en un una es por con no se lo su al del para como pero le me",
    "de": "der die das und ist nicht ich sie er zu den mit sich auf ein eine dem des im von auch",
}
_WORDS = {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}
_LETTERS = {"fr": re.compile("[éèêçàùœ]"), "es": re.compile("[ñ¿¡áíóú]"), "de": re.compile("[ßäöü]")}
SURE_MARGIN = 1.5  # the winner's share at least this many times the next one's


@dataclass(frozen=True)
class Detection:
    language: str
    sure: bool
    why: str

    @property
    def name(self) -> str:
        return NAMES.get(self.language, self.language)


def _latin(text: str) -> Detection:
    words = [w.lower() for w in _WORD.findall(text[:200_000])]
    if not words:
        return Detection("en", False, "no words")
    shares = Counter(
        {lang: sum(w in vocabulary for w in words) / len(words) for lang, vocabulary in _WORDS.items()}
    )
    for lang, pattern in _LETTERS.items():
        shares[lang] += len(pattern.findall(text[:200_000])) / max(len(words), 1) / 4
    (best, top), (_, second) = shares.most_common(2)
    sure = len(words) >= 20 and top >= SURE_MARGIN * max(second, 1e-9)
    return Detection(best, sure, f"Latin script; its common words are {NAMES[best]}'s ({top:.0%} of them)")


def detect_language(text: str) -> Detection:
    """The language ``text`` is written in (module docstring)."""
    sample = text[:200_000]
    counts = {
        "hangul": len(_HANGUL.findall(sample)),
        "kana": len(_KANA.findall(sample)),
        "han": len(_HAN.findall(sample)),
        "cyrillic": len(_CYRILLIC.findall(sample)),
        "latin": len(_LATIN.findall(sample)),
    }
    letters = sum(counts.values())
    if not letters:
        return Detection("en", False, "no letters")
    script, most = max(counts.items(), key=lambda kv: kv[1])
    cjk = counts["kana"] + counts["han"]
    if counts["hangul"] * 2 > letters:
        return Detection("ko", True, "Hangul script")
    if cjk * 2 > letters:
        if counts["kana"] * 20 >= cjk:
            return Detection("ja", True, "Han characters with kana")
        return Detection("zh", True, "Han characters without kana")
    if counts["cyrillic"] * 2 > letters:
        return Detection("ru", True, "Cyrillic script")
    if counts["latin"] * 2 > letters:
        return _latin(sample)
    return Detection("en", False, f"mixed scripts (mostly {script}: {most} of {letters} letters)")


def spaced(language: str) -> bool:
    """Names are whole, capitalised words (``SPACED``)."""
    return language in SPACED
