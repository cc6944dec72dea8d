"""A screenplay line as it is lettered: the chapter's words, ended as a sentence.

A screenplay keeps a line of dialogue as the chapter wrote it, and a quote cut by its attribution
ends where the cut was: ``"We're closed," said a voice`` gives the line ``We're closed,``. A
balloon letters it as a sentence, ``We're closed.``. :func:`lettered` makes that one change, and
every place that draws or exports a line's words (Compose Page's balloons, the storyboard cards)
goes through it; the stored screenplay keeps the verbatim line.

Only the line's final mark changes:

- A final comma becomes a full stop: ``,`` → ``.``; in Chinese and Japanese ``，`` and ``、`` (and
  ``,`` after a Chinese or Japanese character) → ``。``. Every other language (English, French,
  Spanish, Korean, Russian, …) takes ``.``.
- A comma after a mark that ends a sentence already (``!?.…。！？``) or an interruption (a dash,
  a wave dash) is dropped instead: ``Wait…,`` → ``Wait…``, ``What?!,`` → ``What?!``.
- Closing quote marks and brackets after the comma stay where they are, the full stop going
  inside them: ``He said 'we're closed,'`` → ``He said 'we're closed.'``; ``閉店です、」`` →
  ``閉店です。」``.
- Trailing spaces (and invisible format characters) are trimmed, and so is a space before the
  final comma (``closed ,`` → ``closed.``). A line ending any other way (``.!?…。！？``, a dash, a
  colon, no mark at all) is left as it is, and so is a line of only a comma.
"""

from __future__ import annotations

import unicodedata

# Languages whose sentences end in the ideographic full stop.
IDEOGRAPHIC = frozenset({"zh", "ja"})
ASCII_COMMAS = frozenset(",﹐")  # the comma and its small form
WIDE_COMMAS = frozenset("，、､﹑")  # fullwidth, ideographic, halfwidth ideographic, small ideographic
COMMAS = ASCII_COMMAS | WIDE_COMMAS
# Marks that end a sentence, or break it off, already: a comma after one of them is dropped.
ENDS = frozenset(".!?…‥。！？｡‼⁇⁈⁉—–―‒-~〜～")
# Closing quote marks and brackets that may follow the final comma (a nested quote's too).
CLOSERS = frozenset("\"'”’»›」』）)]］】〕〗〙〛》〉｣〞〟")


def _base(language: str) -> str:
    """``zh`` from ``zh``, ``zh-Hans`` or ``ZH_cn``: the language without its region or script."""
    return language.strip().lower().replace("_", "-").split("-")[0]


def _trimmed(text: str) -> str:
    """``text`` without trailing whitespace and invisible format characters (category Cf)."""
    end = len(text)
    while end and (text[end - 1].isspace() or unicodedata.category(text[end - 1]) == "Cf"):
        end -= 1
    return text[:end]


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in ("W", "F")


def full_stop(comma: str, before: str, language: str) -> str:
    """The full stop that replaces ``comma`` after the character ``before`` in ``language``:
    ``。`` in Chinese and Japanese after a wide comma or a wide character (``｡`` for the halfwidth
    ``､``), ``.`` otherwise."""
    if _base(language) in IDEOGRAPHIC and (comma in WIDE_COMMAS or _is_wide(before)):
        return "｡" if comma == "､" else "。"
    return "."


def lettered(text: str, language: str) -> str:
    """``text``, a screenplay line in ``language`` (``en``, ``zh``, ``ja``, …), as a balloon letters
    it: a final comma (inside any closing quotes and brackets) becomes the language's full stop, or
    is dropped after a mark that ends the sentence already; trailing spaces are trimmed; nothing
    else changes. See the module's docstring for the rules."""
    line = _trimmed(text)
    # The closing quotes and brackets at the end, with any spaces between them (French: « … , »).
    cut = len(line)
    while cut and (line[cut - 1] in CLOSERS or line[cut - 1].isspace()):
        cut -= 1
    core, tail = line[:cut], line[cut:]
    if not core or core[-1] not in COMMAS:
        return line
    comma, words = core[-1], _trimmed(core[:-1])  # a stray space before the comma goes with it
    if not words:
        return line
    if words[-1] in ENDS:
        return words + tail
    return words + full_stop(comma, words[-1], language) + tail
