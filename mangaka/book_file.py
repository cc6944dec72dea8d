"""A book file's text, in the encodings novels come in: UTF-8 (with or without a BOM), UTF-16/32
with a BOM, else GB18030. Anything else is refused by name (with the ``iconv`` command that
converts it), never read as mojibake: GB18030 decodes almost any bytes, so what it reads is
checked twice, by the characters it gives (Shift-JIS, Big5 and EUC-JP give rare ones) and by
charset-normalizer's reading of the same bytes (EUC-KR Korean, short Latin-1 text)."""

from __future__ import annotations

import codecs
import logging
import shlex
from pathlib import Path

from .errors import InputError
from .fileio import read_input

log = logging.getLogger(__name__.rpartition(".")[0] + ".chapters")

ENCODINGS = ("UTF-8", "UTF-16 (with BOM)", "UTF-32 (with BOM)", "GB18030")


def _looks_misdecoded(text: str) -> str | None:
    """Why GB18030-decoded text looks like another encoding (Shift-JIS, Big5, EUC-JP), or None."""
    wide = [ch for ch in text if ord(ch) > 0x7F]
    if len(wide) < 20:
        return None
    outside = 0
    for ch in wide:
        try:
            ch.encode("gb2312")
        except UnicodeEncodeError:
            outside += 1
    if outside / len(wide) > 0.4:
        return f"{outside / len(wide):.0%} of its characters are rare in Chinese text (Shift-JIS or Big5?)"
    kana = sum(1 for ch in wide if "\u3040" <= ch <= "\u30ff")
    if kana / len(wide) > 0.1:
        return "it reads as Japanese kana with garbled kanji (EUC-JP?)"
    return None


def read_book(path: str | Path, what: str = "book file") -> str:
    """A book file's text: UTF-8 (with or without BOM), UTF-16/32 with BOM, else GB18030.

    Decoding is strict: a file that is none of these raises ``InputError`` naming the file and the
    encodings tried, never returns mojibake. The BOM is removed; line breaks are left as they are."""
    path = Path(path)
    raw = read_input(path, what)  # a regular file of bounded size, or InputError

    boms = (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    )
    for bom, encoding in boms:
        if raw.startswith(bom):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise InputError(
                    f"{what} {path} starts with a {encoding} byte order mark but is not valid "
                    f"{encoding} ({exc.reason} at byte {exc.start}); save it again as UTF-8"
                ) from None
            return _checked(text.removeprefix("\ufeff"), path, what)

    try:
        return _checked(raw.decode("utf-8"), path, what)
    except UnicodeDecodeError as exc:
        utf8_error = f"not UTF-8: {exc.reason} at byte {exc.start}"
    try:
        text = raw.decode("gb18030")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} {path} is not text in any of {', '.join(ENCODINGS)} ({utf8_error}; not GB18030: "
            f"{exc.reason} at byte {exc.start}); save it as UTF-8 and try again"
        ) from None
    why = _looks_misdecoded(text)
    other = _detected_encoding(raw)
    if why or other:
        looks = f"it looks like {other[1]}" if other else why
        fix = (
            f"convert it: iconv -f {other[0]} -t UTF-8 {shlex.quote(str(path))} > "
            f"{shlex.quote(str(path.with_suffix('.utf8.txt')))}"
            if other
            else "save it as UTF-8"
        )
        raise InputError(
            f"{what} {path} is not UTF-8 ({utf8_error}) and decodes as GB18030 only as nonsense: "
            f"{looks}. Tried {', '.join(ENCODINGS)}; {fix}, and try again"
        )
    log.info("read %s as GB18030 (%s)", path, utf8_error)
    return _checked(text, path, what)


_GB = frozenset({"gb18030", "gbk", "gb2312", "hz"})
_SKIP = ("utf_16", "utf_32", "utf_7")  # without a BOM these are refused anyway, never guessed
# The name given for a family of codecs that read these bytes alike (charset-normalizer lists
# them in ``could_be_from_charset``): the one people know, as iconv spells it.
_KNOWN_NAMES = {
    "euc_kr": "EUC-KR", "cp949": "CP949", "shift_jis": "SHIFT_JIS", "cp932": "CP932", "euc_jp": "EUC-JP",
    "big5": "BIG5", "cp1252": "CP1252", "latin_1": "ISO-8859-1", "cp1251": "CP1251", "koi8_r": "KOI8-R",
}  # fmt: skip


def _detected_encoding(raw: bytes) -> tuple[str, str] | None:
    """A second opinion on bytes that decode as GB18030: charset-normalizer's best reading, when
    it is another encoding and reads cleaner than GB18030 does (EUC-KR Korean is valid GB2312, a
    short Latin-1 text decodes as a few CJK characters). ``(iconv name, description)``, or None
    when GB18030 reads as well as any. Reliable from about 25 characters of text; on fewer the
    detector's guess is all there is."""
    from charset_normalizer import from_bytes

    matches = [m for m in from_bytes(raw) if not m.encoding.startswith(_SKIP)]
    if not matches:
        return None
    best = matches[0]
    if _GB & set(best.could_be_from_charset):
        return None
    gb = next((m for m in matches if _GB & set(m.could_be_from_charset)), None)
    if gb is not None and gb.chaos <= best.chaos:
        return None
    known = [name for codec, name in _KNOWN_NAMES.items() if codec in best.could_be_from_charset]
    name = known[0] if known else best.encoding.upper().replace("_", "-")
    language = f"{best.language} text in {name}" if best.language != "Unknown" else f"text in {name}"
    return name, language


def _checked(text: str, path: Path, what: str) -> str:
    if "\x00" in text:
        raise InputError(
            f"{what} {path} contains NUL characters: it is binary or UTF-16 without a byte order mark; "
            "save it as UTF-8 and try again"
        )
    return text
