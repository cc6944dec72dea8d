"""Who says each quoted line, with the evidence and how sure the text is: an editor's reading.

``speakers_of(...)`` gives one ``Speaker`` a quote. The evidence, strongest first:

- ``attribution`` (sure): a name right next to the quote with a speech verb (``"…," said Mei``,
  ``沈砚道``, ``とハルトが言った``, ``répondit Marie``, ``지수가 말했다``; ``speakers.attribution``), or
  in Japanese the subject of the narration paragraph right before when it closes with one
  (``ヨルが耳元でささやいた。``);
- ``pronoun`` (sure when one person fits): ``"…," he said`` (``她说``, ``demanda-t-il``, ``сказала
  она``, ``그가 말했다``): the person the narration before it names last whose pronoun is that one
  (each name's pronoun is read from the chapter: the pronoun that follows its uses, or a word such
  as ``man``, ``Mrs.``, ``la vieille femme``, ``엄마``); a person named inside the quote is spoken
  to, not speaking. Sure when the narration since the paragraph before (past a run of lines of
  dialogue, back to the last paragraph with narration; ``_PRONOUN_REACH`` characters at most)
  names one person of that pronoun; else the latest one, as a guess. A pronoun as the subject of
  the paragraph's own narration (``"…"他打了个哈欠``) counts as its attribution;
- ``beat`` (sure): the quote's paragraph names, outside its quotes, one person and no other
  (``The old man sighed. "…"``); a possessive (``the keeper's niece``) is not a person acting;
- ``continuation`` (sure): another quote of the same paragraph has a sure speaker by attribution
  or pronoun, and this one has none: a paragraph is one speaker's turn;
- ``addressed`` (a guess): the quote in the paragraph before names someone inside it: the one
  spoken to answers;
- ``nearest`` (a guess): the person named nearest the quote in its paragraph (before it, else after);
- ``lead-in`` (a guess): the person the narration-only paragraph before names last (or, when it
  names no one, the person its subject pronoun stands for: ``她用笔帽戳了戳他的后背。``);
- ``turn`` (a guess): the quote two before, when the quote before was someone else's (two people
  taking turns);
- ``lead-out`` (a guess): the person the narration-only paragraph after names first (Japanese
  often says who spoke right after the line: ``千尋が尋ねると``);
- ``other`` (a guess): the latest person (a speaker of the last lines, else one the narration
  named) who is neither spoken to by the line nor the one who spoke the line before: the one who
  answers.

No guess names a person the line itself names (``"Tom, did you…"``, ``"二叔，…"``, ``"민호야, …"``:
spoken to). A quote with none of these has no speaker: the model chooses. Only sure speakers are
forced in the script call; a guess is shown to the model as ``likely`` (or forced too, with the
request's ``speaker_guesses="force"``).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from . import european, korean
from .dashes import BLANK_LINE
from .language import spaced
from .quotes import narration
from .speakers import SPEECH_VERBS_EN, SPEECH_VERBS_ZH, aliases_en, name_positions

SURE = frozenset({"attribution", "pronoun", "beat", "continuation", "person"})

_PRONOUN_AFTER_EN = re.compile(
    rf"^[\s,]*(?:(?:{SPEECH_VERBS_EN})\s+(?P<a>he|she)|(?P<b>he|she)\s+(?:{SPEECH_VERBS_EN}))\b"
)
_PRONOUN_BEFORE_EN = re.compile(rf"\b(?P<a>[Hh]e|[Ss]he)\s+(?:{SPEECH_VERBS_EN})(?:\s+\w+)?\s*[:,]?\s*$")
_PRONOUN_AFTER_ZH = re.compile(rf"^[，,]?\s*(?P<a>他|她){SPEECH_VERBS_ZH}")
_PRONOUN_BEFORE_ZH = re.compile(rf"(?P<a>他|她){SPEECH_VERBS_ZH}[：:，,]?\s*$")
# A pronoun as a sentence's (or clause's) subject: the person the narration goes on about (an
# object pronoun, "looked at him", "看了看她", often stands for someone else).
_SUBJECT_EN = r"(?:^|[.!?;][\"”’]?\s+|,\s+(?:and|but|then)\s+)"
_SUBJECT_ZH = r"(?:^|[。！？；，”」])\s*"
# Korean and the European languages: ``korean.py``, ``european.py`` (on the text in lower case).
_PRONOUNS = {
    "en": (re.compile(_SUBJECT_EN + r"he\b"), re.compile(_SUBJECT_EN + r"she\b")),
    "zh": (re.compile(_SUBJECT_ZH + "他(?![们的])"), re.compile(_SUBJECT_ZH + "她(?![们的])")),
    "ko": korean.SUBJECT_PRONOUNS,
    **{lang: european.subject_pronouns(lang) for lang in sorted(european.EUROPEAN)},
}
_MALE_WORDS_EN = re.compile(
    r"\b(?:man|boy|king|prince|father|uncle|grandfather|gentleman|monk|landlord|mr\.?|sir|lord|master)\b",
    re.I,
)
_FEMALE_WORDS_EN = re.compile(
    r"\b(?:woman|girl|queen|princess|mother|aunt|grandmother|lady|nun|landlady|maid|witch|mrs\.?|ms\.?|miss|madam)\b",
    re.I,
)
_WINDOW = 40  # characters next to a quote searched for a pronoun attribution (as for a name)
_GENDER_REACH = 160  # characters after a name searched for the pronoun that refers to it
# Characters before a quote searched for the person its pronoun attribution stands for (within the
# paragraph before and its own): more than two units, so that a chapter of one long paragraph (one
# line) is not searched from its start for each quote.
_PRONOUN_REACH = 2400


@dataclass(frozen=True)
class Speaker:
    """Who says a quote (a name the chapter uses, or ``None``), why, and whether the text is sure."""

    name: str | None
    evidence: str | None
    sure: bool

    @classmethod
    def of(cls, name: str | None, evidence: str | None) -> Speaker:
        if name is None:
            return cls(None, None, False)
        return cls(name, evidence, evidence in SURE)


@dataclass(frozen=True)
class Mentions:
    """Where the chapter's narration names each person (a name candidate, by its key: lower case in
    English), as sorted ``(position, name)``, quotes left out."""

    at: list[tuple[int, str]]
    possessive: frozenset[int]  # positions of the uses followed by ``'s``

    @classmethod
    def of(
        cls,
        text: str,
        spans: Sequence[tuple[int, int]],
        positions: dict[str, list[int]],
        by_key: dict[str, str],
    ) -> Mentions:
        starts = [a for a, _ in spans]
        found, owned = [], set()
        for key, where in positions.items():
            for i in where:
                k = bisect.bisect_right(starts, i) - 1
                if k >= 0 and i < spans[k][1]:
                    continue  # inside a quote: spoken of, not acting
                found.append((i, -len(key), by_key[key]))
                if re.match(r"['’]s\b", text[i + len(key) : i + len(key) + 3]):
                    owned.add(i)
        found.sort()
        # A shorter key inside a longer one ("Hollis" in "Mr. Hollis") is the same use.
        kept: list[tuple[int, str]] = []
        end = -1
        for i, size, name in found:
            if i < end:
                continue
            kept.append((i, name))
            end = i - size
        return cls(kept, frozenset(owned))

    def between(self, start: int, end: int, acting: bool = False) -> list[tuple[int, str]]:
        lo = bisect.bisect_left(self.at, (start, ""))
        hi = bisect.bisect_left(self.at, (end, ""))
        return [(i, n) for i, n in self.at[lo:hi] if not (acting and i in self.possessive)]


def genders(text: str, mentions: Mentions, language: str) -> dict[str, str]:
    """Each person's pronoun (``m`` or ``f``) as the chapter uses it: a vote of the pronouns that
    follow their uses (before another person is named) and the words of the name itself (``the old
    man``, ``Mrs. Dunne``, ``la vieille femme``, ``Herr Weber``, ``엄마``); people without a clear
    majority are left out."""
    if language not in _PRONOUNS:
        return {}
    male, female = _PRONOUNS[language]
    votes: dict[str, Counter[str]] = {}
    for k, (i, name) in enumerate(mentions.at):
        end = min(i + _GENDER_REACH, mentions.at[k + 1][0] if k + 1 < len(mentions.at) else len(text))
        window = BLANK_LINE.split(text[i + len(name) : end], 1)[0]  # its own paragraph only
        m1, f1 = male.search(window), female.search(window)
        hits = [(m.start(), g) for m, g in ((m1, "m"), (f1, "f")) if m]
        if hits:
            votes.setdefault(name, Counter())[min(hits)[1]] += 1
        if language == "en":
            for pattern, g in ((_MALE_WORDS_EN, "m"), (_FEMALE_WORDS_EN, "f")):
                if pattern.search(name):
                    votes.setdefault(name, Counter())[g] += 3
        elif (g := _name_gender(name, language)) is not None:
            votes.setdefault(name, Counter())[g] += 3
    out = {}
    for name, c in votes.items():
        (top, n), *rest = c.most_common()
        if n >= 2 and (not rest or n > 2 * rest[0][1]):  # a pronoun seen once is no evidence
            out[name] = top
    return out


def _name_gender(name: str, language: str) -> str | None:
    if language in european.EUROPEAN:
        return european.name_gender(name, language)
    return korean.name_gender(name) if language == "ko" else None


def pronoun_attribution(
    text: str, span: tuple[int, int], paragraph: tuple[int, int], language: str
) -> str | None:
    """``m`` or ``f`` when a pronoun with a speech verb stands right next to the quote (``"…," he
    said``, ``她说``, ``demanda-t-elle``, ``спросил он``, ``그녀가 말했다``), else ``None``."""
    if language in european.EUROPEAN:
        return european.pronoun_said(text, span, paragraph, language)
    if language == "ko":
        return korean.pronoun_said(text, span, paragraph)
    if language not in _PRONOUNS:
        return None
    start, end = span
    before = text[max(paragraph[0], start - 1 - _WINDOW) : max(paragraph[0], start - 1)]
    after = text[min(end + 1, paragraph[1]) : min(end + 1 + _WINDOW, paragraph[1])]
    after_re, before_re = (
        (_PRONOUN_AFTER_EN, _PRONOUN_BEFORE_EN)
        if language == "en"
        else (_PRONOUN_AFTER_ZH, _PRONOUN_BEFORE_ZH)
    )
    m = after_re.match(after)
    word = (m.group("a") or m.groupdict().get("b")) if m else None
    if word is None:
        m = before_re.search(re.split(r"[.。！？”」]", before)[-1])
        word = m.group("a") if m else None
    if word is None:
        return None
    return "f" if word.lower() in ("she", "她") else "m"


_PRONOUN_BEAT = {
    "en": re.compile(r"(?:^|[.!?]\s+|[\"”]\s*)(?P<a>He|She)\s+(?!said|asked|says|asks)[a-z]+"),
    "zh": re.compile(r"(?:^|[。！？”」])\s*(?P<a>他|她)(?![们说道问])"),
    "ko": korean.PRONOUN_BEAT,
    **{lang: european.pronoun_beat(lang) for lang in sorted(european.EUROPEAN)},
}
_FEMALE = frozenset({"she", "她", "그녀", "elle", "ella", "она", "sie"})


def pronoun_beat(
    text: str, paragraph: tuple[int, int], spans: Sequence[tuple[int, int]], language: str
) -> str | None:
    """``m`` or ``f`` when the paragraph's narration has a sentence whose subject is one pronoun
    (``He pointed at the clock.``, ``她低下头``) and no sentence with the other, else ``None``."""
    pattern = _PRONOUN_BEAT.get(language)
    if pattern is None:
        return None
    lo = bisect.bisect_left(spans, (paragraph[0], paragraph[0]))
    hi = bisect.bisect_left(spans, (paragraph[1], paragraph[1]))
    inside = [(a - paragraph[0], b - paragraph[0]) for a, b in spans[lo:hi]]
    words = {
        m.group("a").lower() for m in pattern.finditer(narration(text[paragraph[0] : paragraph[1]], inside))
    }
    if len(words) != 1:
        return None
    return "f" if words.pop() in _FEMALE else "m"


@dataclass(frozen=True)
class QuotePlace:
    """A quote's span, its paragraph's bounds and index, where the narration it may follow starts
    (the paragraph before's start) and where the last paragraph before it with narration starts
    (``narrated``: past a run of lines of dialogue, whom a pronoun can stand for)."""

    span: tuple[int, int]
    paragraph: tuple[int, int]
    index: int
    reach: int
    narrated: int = -1  # -1: as ``reach``


def _keys(names: Sequence[str], language: str) -> dict[str, str]:
    """Search key → name: keys in lower case where names are capitalised words (``spaced``), a
    titled name also by its bare name, an English ``the …`` phrase also as first met (``an old
    man``), a Russian name also declined (``Машу``)."""
    if not spaced(language):
        return {n: n for n in names}
    by_key = {n.lower(): n for n in names}
    if language != "en":
        for n in names:
            extra = [b] if (b := european.bare(n, language)) else []
            extra += european.declined(n) if language == "ru" else []
            for e in extra:
                by_key.setdefault(e.lower(), n)
        return by_key
    for n in names:
        for e in aliases_en(n):
            by_key.setdefault(e.lower(), n)
    return by_key


def speakers_of(
    text: str, places: Sequence[QuotePlace], said: Sequence[str | None], names: Sequence[str], language: str
) -> list[Speaker]:
    """Each quote's ``Speaker`` (module docstring), in one pass over the quotes."""
    lowered = text.lower() if spaced(language) and len(text.lower()) == len(text) else text
    by_key = _keys(names, language)
    positions = name_positions(lowered, by_key)
    if language in european.EUROPEAN:  # whole words only: ``Ana`` is not in ``mañana``
        positions = {k: european.whole_word_at(lowered, k, where, language) for k, where in positions.items()}
    spans = [p.span for p in places]
    mentions = Mentions.of(lowered, spans, positions, by_key)
    pronoun_of = genders(lowered, mentions, language)
    found: list[Speaker] = []
    per_paragraph: dict[int, tuple[set[str], str | None]] = {}
    for i, place in enumerate(places):
        inside = {n for _, n in _within(positions, by_key, place.span)}
        pronoun = (
            pronoun_attribution(text, place.span, place.paragraph, language) if said[i] is None else None
        )
        speaker = _attributed(place, said[i], pronoun, inside, mentions, pronoun_of)
        if place.index not in per_paragraph:  # once a paragraph: a paragraph may hold every quote
            per_paragraph[place.index] = (
                {n for _, n in mentions.between(*place.paragraph, acting=True)},
                pronoun_beat(text, place.paragraph, spans, language),
            )
        acting = per_paragraph[place.index][0]
        if speaker is None:
            one = next(iter(acting)) if len(acting) == 1 else None
            if one is not None and pronoun in (None, pronoun_of.get(one, pronoun)):  # "he said": not her beat
                speaker = Speaker.of(one, "beat")
        if speaker is None and not acting and pronoun is None:
            pronoun = per_paragraph[place.index][1]
            speaker = _attributed(place, None, pronoun, inside, mentions, pronoun_of)
        if speaker is None and not acting and pronoun is None:
            speaker = _lead_in_pronoun(text, places, i, spans, language, inside, mentions, pronoun_of)
        found.append(speaker or Speaker.of(None, None))
    for i, place in enumerate(places):  # a paragraph is one speaker's turn
        if found[i].name is None or found[i].evidence == "beat":
            turn = [
                found[j]
                for j in range(max(0, i - 8), min(len(places), i + 9))
                if places[j].index == place.index and found[j].evidence in ("attribution", "pronoun")
            ]
            if len({s.name for s in turn}) == 1 and turn[0].sure:
                found[i] = Speaker.of(turn[0].name, "continuation")
    for i in range(len(places)):
        if found[i].name is None:
            found[i] = _guess(i, places, found, positions, by_key, mentions)
    return found


def _lead_in_pronoun(
    text: str,
    places: Sequence[QuotePlace],
    i: int,
    spans: Sequence[tuple[int, int]],
    language: str,
    inside: set[str],
    mentions: Mentions,
    pronoun_of: dict[str, str],
) -> Speaker | None:
    """A guess (``lead-in``) from the narration-only paragraph right before a line when it names
    no one but has one pronoun as a subject (``她用笔帽戳了戳他的后背。`` / ``"喂，…"``): the person
    that pronoun stands for."""
    place = places[i]
    if place.index == 0 or (i > 0 and places[i - 1].index == place.index - 1):
        return None
    before = (place.reach, place.paragraph[0])
    if mentions.between(*before):
        return None
    pronoun = pronoun_beat(text, before, spans, language)
    wide = QuotePlace(place.span, place.paragraph, place.index, 0)  # as far back as a pronoun reaches
    found = _attributed(wide, None, pronoun, inside, mentions, pronoun_of) if pronoun else None
    return Speaker(found.name, "lead-in", False) if found else None


def _within(
    positions: dict[str, list[int]], by_key: dict[str, str], span: tuple[int, int]
) -> list[tuple[int, str]]:
    """The people named inside ``span`` (a quote: whom it speaks to or of), in order."""
    out = []
    for key, where in positions.items():
        j = bisect.bisect_left(where, span[0])
        if j < len(where) and where[j] < span[1]:
            out.append((where[j], by_key[key]))
    return sorted(out)


def _attributed(
    place: QuotePlace,
    said: str | None,
    pronoun: str | None,
    inside: set[str],
    mentions: Mentions,
    pronoun_of: dict[str, str],
) -> Speaker | None:
    """The speaker an attribution gives: a name, or a pronoun resolved in the narration before (at
    most ``_PRONOUN_REACH`` characters back)."""
    if said is not None:
        return Speaker.of(said, "attribution")
    if pronoun is None:
        return None
    reach = place.reach if place.narrated < 0 else min(place.reach, place.narrated)
    start = max(reach, place.span[0] - _PRONOUN_REACH)
    before = [(i, n) for i, n in mentions.between(start, place.span[0]) if n not in inside]
    fits = [n for _, n in before if pronoun_of.get(n) == pronoun]
    if not fits:
        return None
    latest = fits[-1]
    others = {n for _, n in before if n != latest and pronoun_of.get(n, pronoun) == pronoun}
    return Speaker(latest, "pronoun", not others)


def _guess(
    i: int,
    places: Sequence[QuotePlace],
    found: list[Speaker],
    positions: dict[str, list[int]],
    by_key: dict[str, str],
    mentions: Mentions,
) -> Speaker:
    """A guess for a quote the text does not settle, in the module docstring's order: addressed,
    nearest, lead-in, turn, lead-out."""
    place = places[i]
    spoken_to = {n for _, n in _within(positions, by_key, place.span)}  # named in the line: not saying it
    if i >= 1 and places[i - 1].index == place.index - 1:
        named = [
            n
            for _, n in _within(positions, by_key, places[i - 1].span)
            if n != found[i - 1].name and n not in spoken_to
        ]
        if named:
            return Speaker.of(named[0], "addressed")
    near = [n for _, n in mentions.between(place.paragraph[0], place.span[0]) if n not in spoken_to]
    if near:
        return Speaker.of(near[-1], "nearest")
    after = [n for _, n in mentions.between(place.span[1], place.paragraph[1]) if n not in spoken_to]
    if after:
        return Speaker.of(after[0], "nearest")
    lead = [n for _, n in _narration_only(places, i, -1, mentions) if n not in spoken_to]
    if lead:
        return Speaker.of(lead[-1], "lead-in")
    if i >= 2 and found[i - 1].name and found[i - 2].name and found[i - 1].name != found[i - 2].name:
        if found[i - 2].name not in spoken_to:
            return Speaker.of(found[i - 2].name, "turn")
    lead = [n for _, n in _narration_only(places, i, 1, mentions) if n not in spoken_to]
    if lead:
        return Speaker.of(lead[0], "lead-out")
    return Speaker.of(_other_one(i, places, found, mentions, spoken_to), "other")


def _other_one(
    i: int, places: Sequence[QuotePlace], found: list[Speaker], mentions: Mentions, spoken_to: set[str]
) -> str | None:
    """The one who answers in an exchange: the latest person (a speaker of the last lines, else one
    the narration named before) who is neither the line's addressee nor the speaker of the line
    before (``"You know why I'm here," Ruiz said.`` / ``"Because of the mayor?"``: Tom)."""
    place = places[i]
    before = found[i - 1].name if i >= 1 else None
    recent = [found[j].name for j in range(i - 1, max(-1, i - 5), -1)]
    named = [n for _, n in reversed(mentions.between(max(0, place.span[0] - _PRONOUN_REACH), place.span[0]))]
    return next((n for n in [*recent, *named] if n and n != before and n not in spoken_to), None)


def _narration_only(
    places: Sequence[QuotePlace], i: int, step: int, mentions: Mentions
) -> list[tuple[int, str]]:
    """The people named by the paragraph next to quote ``i``'s (``step`` -1: the one before, 1: the
    one after), when that paragraph holds no quote."""
    place = places[i]
    if step < 0:
        if i > 0 and places[i - 1].index == place.index - 1:
            return []
        return mentions.between(place.reach, place.paragraph[0]) if place.index > 0 else []
    if i + 1 < len(places) and places[i + 1].index == place.index + 1:
        return []
    nearby = mentions.between(place.paragraph[1], place.paragraph[1] + 400)
    return nearby[:1]
