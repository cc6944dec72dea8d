"""Not every quoted string is speech: a sign, a headline, a title or a scare quote.

``quote_kind(text, span, paragraph, language, attributed)`` gives ``speech``, ``sign`` (a sign, a
label, a headline, a title: words written somewhere, which a panel may show as a caption or as
text on the drawing) or ``scare`` (a word the narration holds at a distance: ``his "friends"``; it
stays in the narration). A quote is speech unless all of these hold:

- it is short: at most ``MAX_WORDS`` words (``MAX_CJK_CHARS`` characters in Chinese, Japanese and
  Korean) and no sentence inside it ends before its last word;
- it stands inside a narration sentence: narration comes before it in its own sentence (it does not
  open its paragraph, nor follow a sentence's end or a colon that introduces speech);
- no speech verb is next to it (no attribution, named or by pronoun, and none of the language's
  verbs of saying right before it: ``she said "no"`` is speech);

and then it is a **sign** when the words before it name a written thing (``marked``, ``read``,
``sign``, ``headline``, ``titled``, ``called``; ``看板``, ``写着``, ``と書かれた``, ``라고 적힌``) or it
is written in capitals, and otherwise a **scare** quote when it starts in lower case, else speech.
A quote nested inside another (``"She said 'never'," Tom said``) is never found as a quote of its
own: it stays inside its line.
"""

from __future__ import annotations

import re

from .language import spaced

MAX_WORDS = 5
MAX_CJK_CHARS = 8
KINDS = ("speech", "sign", "scare")

_SIGN_WORDS = re.compile(
    r"(?:marked|labell?ed|read|reads|reading|sign|signs|board|plaque|poster|banner|headline|"
    r"headlines|title|titled|entitled|called|named|stamped|painted|printed|written|words?|letters|"
    r"front page|menu|note|notice|label|card|tag|door|neon)"
    r"[\s,:]*(?:the\s+words?\s+|in\s+\w+\s+letters\s*,?\s*)?[:,]?\s*$",
    re.IGNORECASE,
)
# A written thing that "says" its words: "the sign said", "the front page read".
_THING_SAYS = re.compile(
    r"\b(?:sign|board|plaque|poster|banner|headline|page|note|notice|card|label|door|screen|letter)s?"
    r"\s+(?:said|says|read|reads)\s*[:,]?\s*$",
    re.IGNORECASE,
)
_SAY_BEFORE = re.compile(
    r"\b(?:said|says|say|asked|asks|ask|replied|answered|whispered|shouted|cried|called out|muttered|"
    r"murmured|yelled|told|tell|insisted|added|answer|reply|hissed|screamed|shout|whisper)\s*[:,]?\s*$",
    re.IGNORECASE,
)
_SIGN_WORDS_CJK = re.compile(
    r"(?:写着|写道|招牌|牌子|标语|标题|看板|札|貼り紙|見出し|라고\s*적힌|간판|제목)[：:，,、]?\s*$"
)
_SIGN_AFTER_CJK = re.compile(
    r"^\s*(?:的(?:招牌|牌子|字|标题|标语)|の(?:看板|札|文字|見出し|貼り紙)|と書かれ|という(?:看板|文字)|라고\s*적|이라고\s*적|간판)"
)
_SENTENCE_END = re.compile(r"[.!?。！？…]\s*$")
_OPENS = re.compile(r"(?:^|[.!?。！？…:：]\s*[\"'”’»」』]?\s*)$")
_OPENERS = frozenset("\"'“‘«»„‚‹›「『")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _short(text: str, cjk: bool) -> bool:
    body = text.strip()
    if not body or _SENTENCE_END.search(body[:-1] if len(body) > 1 else ""):
        return False
    if cjk:
        return len(body) <= MAX_CJK_CHARS
    return len(body.split()) <= MAX_WORDS and not re.search(r"[.!?]\s+\S", body)


def quote_kind(
    text: str, span: tuple[int, int], paragraph: tuple[int, int], language: str, attributed: bool
) -> str:
    """``speech``, ``sign`` or ``scare`` (module docstring) for the quote at ``span``."""
    inside = text[span[0] : span[1]]
    cjk = not spaced(language)
    if span[0] == 0 or text[span[0] - 1] not in _OPENERS:  # a dash line's part: speech by its form
        return "speech"
    if attributed or not _short(inside, cjk and bool(_CJK.search(inside))):
        return "speech"
    before = text[max(paragraph[0], span[0] - 61) : max(paragraph[0], span[0] - 1)]
    if _OPENS.search(before):
        return "speech"
    if not cjk and _THING_SAYS.search(before):
        return "sign"
    if _SAY_BEFORE.search(before):
        return "speech"
    after = text[min(span[1] + 1, paragraph[1]) : min(span[1] + 16, paragraph[1])]
    if cjk:
        return "sign" if _SIGN_WORDS_CJK.search(before) or _SIGN_AFTER_CJK.match(after) else "speech"
    letters = [c for c in inside if c.isalpha()]
    if _SIGN_WORDS.search(before) or (len(letters) >= 2 and all(c.isupper() for c in letters)):
        return "sign"
    return "scare" if letters and letters[0].islower() else "speech"
