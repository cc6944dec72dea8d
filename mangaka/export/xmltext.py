"""Text made legal for XML 1.0 and PDF text strings, once, before any writer sees it.

XML 1.0 allows only these characters (its ``Char`` production): tab, line feed, carriage return,
U+0020–U+D7FF, U+E000–U+FFFD and U+10000–U+10FFFF. Pasted text often carries the rest: C0 control
characters (U+0001, a vertical tab U+000B, a form feed), a lone surrogate (half of a UTF-16 pair,
left by a bad decode; it cannot even be written as UTF-8) or U+FFFE/U+FFFF. A ``ComicInfo.xml`` or
an EPUB package holding one is not well-formed, and a reader (Kavita, Komga, an EPUB reader)
refuses the whole file.

:func:`xml_safe` removes the control characters and U+FFFE/U+FFFF, replaces a lone surrogate with
U+FFFD (the replacement character: something was there), joins a surrogate pair written as two
code points into its character, and logs one warning naming the field. Everything else is kept as
it is: bidirectional controls (U+200E, U+202E …), emoji, C1 controls and other characters XML 1.0
allows but discourages, tab, line feed and carriage return.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger("mangaka.export")

# What XML 1.0 forbids: everything outside its Char production.
FORBIDDEN = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
REPLACEMENT = "\ufffd"
_SHOWN = 8  # distinct code points a warning lists


def _joined(match: re.Match[str]) -> str:
    high, low = (ord(ch) for ch in match.group())
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def _is_surrogate(ch: str) -> bool:
    return 0xD800 <= ord(ch) <= 0xDFFF


def xml_safe(text: str, field: str) -> str:
    """``text`` with what XML 1.0 forbids removed (control characters, U+FFFE, U+FFFF) or replaced
    (a lone surrogate becomes U+FFFD); one warning names ``field`` ("the title") and the code
    points. Text XML allows comes back unchanged (the same object)."""
    if not FORBIDDEN.search(text):
        return text
    text = _PAIR.sub(_joined, text)
    found = FORBIDDEN.findall(text)
    if not found:
        return text
    distinct = list(dict.fromkeys(found))
    codes = ", ".join(f"U+{ord(ch):04X}" for ch in distinct[:_SHOWN])
    if len(distinct) > _SHOWN:
        codes += f" and {len(distinct) - _SHOWN} more"
    replaced = sum(1 for ch in found if _is_surrogate(ch))
    if replaced == len(found):
        done = "they were replaced by U+FFFD" if replaced > 1 else "it was replaced by U+FFFD"
    elif replaced:
        done = "lone surrogates were replaced by U+FFFD, the rest removed"
    else:
        done = "they were removed" if len(found) > 1 else "it was removed"
    plural = "s" if len(found) > 1 else ""
    log.warning("export: %s held %d character%s XML forbids (%s); %s", field, len(found), plural, codes, done)
    return FORBIDDEN.sub(lambda m: REPLACEMENT if _is_surrogate(m.group()) else "", text)
