"""How character names compare, wherever names are matched: the gold set's metrics and the series
bible's mapping of a chapter's cast onto known characters."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# Shortest name that may match inside another name in Chinese and Japanese (characters).
MIN_CJK_CONTAINED = 2


def fold(text: str) -> str:
    """NFKC, casefolded, whitespace runs as one space, trimmed: how names and keywords compare."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _contains(longer: str, shorter: str, language: str) -> bool:
    if language == "en":
        return re.search(rf"(?<!\w){re.escape(shorter)}(?!\w)", longer) is not None
    return len(shorter) >= MIN_CJK_CONTAINED and shorter in longer


def name_match(name: str, known_names: Sequence[str], language: str) -> int:
    """2: ``name`` equals one of ``known_names`` (a name or an alias) once folded; 1: one contains
    the other as a whole word (in Chinese and Japanese: at least two characters); 0: neither."""
    a = fold(name)
    names = [fold(n) for n in known_names]
    if a in names:
        return 2
    for b in names:
        if a and b and (_contains(a, b, language) or _contains(b, a, language)):
            return 1
    return 0
