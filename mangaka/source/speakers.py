"""Who the chapter names, and who says each quoted line: hand-written rules, per language.

**Names** (``find_names``). A name is a candidate when the text gives it as a speaker (an
attribution next to a quote: ``said Mei``, ``Mei said``, ``沈砚道``, ``とハルトが言った``) or uses it
again and again where a person would stand:

- English: capitalised words (joined when consecutive, with a title such as ``Mr.`` or
  ``Captain``) that occur at least once inside a sentence (a sentence's first word alone is not
  evidence), and ``the`` + an optional adjective + a word for a person (``the old man``,
  ``the keeper``); a titled name (``Mr. Hollis``) anywhere, a sentence's start or a quoted line
  included, counted by its bare uses (``_titled_en``);
- Chinese: the two or three characters that open a clause (after punctuation or a closing quote
  mark) and recur there, not starting with a pronoun or a function word (``老周放下…``,
  ``沈青衣低头…``);
- Japanese: the word before a topic or subject particle (は, が, も) or an honorific (さん, くん,
  ちゃん, 先生, 先輩…) at the start of a clause, recurring, not hiragana only, and of one
  character only with an honorific (``鱗は`` is a thing; ``凛さん`` a person);
- Korean (``korean.py``): a word of two to four syllables before a particle (``지수가``, ``민호는``),
  recurring, and a vocative at a quote's start (``지수야``);
- French, Spanish, Russian, German (``european.py``): capitalised words as in English, less each
  language's capitalised function words (``Une``, ``Elle``), and roles (``la vieille femme``); in
  German, where every noun is capitalised, only attributed, titled or recurring words never used as
  a common noun.

A candidate said by an attribution is **attributed**; one the narration **introduces** as a
person needs one use (``introduced``): a name beside a word for a relation (``her friend Tomas``,
``Tomas, her brother``, ``соседка Вера``, ``su amigo Tomás``, ``son frère Paul``, ``seine
Schwester Mia``) or, in English, a sentence opening with a name doing what only a person does
(``Mara nodded``, ``Mara looked up``; never a word the chapter also writes in lower case), in
Japanese a name given as one (``ガルドと名乗った``, ``名前はミオ``). The others need
``MIN_MENTIONS`` uses.
Candidates come strongest first (attributions, then uses). No library is used: the Chinese and
Japanese word segmenters with person-name tags on PyPI (jieba, janome) are 42 and 203 MB
installed, and these rules find the speakers a screenplay needs on the pack's gold chapters.

A Japanese line that closes its paragraph is also attributed by the narration paragraph right
after it when that opens with its speaker and a speech verb, or the speaker's voice (``千尋が尋ねる
と、…``, ``陽太の声は震えていた``): Japanese prose names the speaker after the line.

**Speaker hints** (``_hints`` in ``mangaka/source/__init__.py``), one guess per quote, or
``None``: an attribution right after or right before the quote in its paragraph; else the one the
quote before (in the paragraph before) names inside it, who answers; else the candidate named
nearest before the quote in its paragraph's narration (else after it; a titled name also by its
bare name); else turn-taking, the speaker of the quote two before when the quote before was
someone else's.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from . import european, korean
from .language import spaced

MIN_MENTIONS = 2
MAX_NAMES = 24
MAX_NAME_CHARS = 64  # a longer run of capitalised words is no one's name
_WINDOW = 40  # characters on each side of a quote searched for its attribution

_VERBS_EN = (
    r"said|says|asked|asks|replied|answered|whispered|shouted|cried|called|muttered|murmured|added|"
    r"continued|snapped|yelled|laughed|sighed|told|explained|insisted|demanded|growled|breathed|"
    r"admitted|agreed|repeated|began|warned|offered|protested|announced|hissed|pleaded|stammered|barked|"
    r"grumbled|chuckled|groaned|gasped|declared|remarked|retorted|mumbled|shrieked|screamed|roared"
)
SPEECH_VERBS_EN = _VERBS_EN  # what a speaker does next to a quote, for the other readers of attributions
_PERSON_NOUNS = (
    r"man|woman|boy|girl|keeper|innkeeper|shopkeeper|stranger|guard|soldier|king|queen|prince|"
    r"princess|teacher|doctor|captain|principal|priest|merchant|girl|lady|gentleman|child|kid|"
    r"witch|wizard|knight|sailor|fisherman|farmer|driver|officer|constable|detective|clerk|"
    r"maid|servant|monk|nun|grandmother|grandfather|mother|father|aunt|uncle|landlady|landlord|"
    r"postman|mailman|neighbour|neighbor|nurse|waiter|waitress|porter|conductor|bartender|cook|"
    r"janitor|receptionist|butler|coachman|sergeant|inspector|courier|housekeeper|nanny"
)
_TITLES = (
    r"(?:Mr|Mrs|Ms|Miss|Dr|Captain|Principal|Professor|Sir|Lady|Lord|Aunt|Uncle|Grandmother|Grandfather"
    r"|Master|Madam)\.?"
)
_CAP = r"[A-Z][a-z'’\-]+"
_NAME_EN = rf"(?:{_TITLES}\s+)?{_CAP}(?:\s+{_CAP})?"
_NOUN_PHRASE_EN = rf"[Tt]he\s+(?:(?:old|young|little|tall|fat|thin|big|small)\s+)?(?:{_PERSON_NOUNS})\b"
_SPEAKER_EN = rf"(?:{_NAME_EN}|{_NOUN_PHRASE_EN})"
_AFTER_EN = re.compile(
    rf"^[\s,]*(?:(?:{_VERBS_EN})\s+(?P<a>{_SPEAKER_EN})|(?P<b>{_SPEAKER_EN})\s+(?:{_VERBS_EN}))\b"
)
_BEFORE_EN = re.compile(rf"(?P<a>{_SPEAKER_EN})\s+(?:{_VERBS_EN})(?:\s+\w+)?\s*[:,]?\s*$")
_NOT_NAMES_EN = frozenset(
    "The A An He She It They We I You His Her Their Our My Your This That These Those There Here Then "
    "When Where What Who Why How If But And Or So Yes No Not Oh Ah Well Now Just Only Even Still Chapter "
    "Part Mr Mrs Ms Dr Miss Sir Lady Lord Monday Tuesday Wednesday Thursday Friday Saturday Sunday "
    "January February March April May June July August September October November December "
    "Nothing Someone Something Everyone Everything One Two Three After Before As At In On Of For "
    "From With Without To By Up Down Out Over Under Again Maybe Please Thank Thanks Sorry Okay OK "
    "Nobody Somebody Everybody Anyone Anybody None Each Both All Neither Either Most Many Few Others "
    "People".split()
)
# A capitalised word beside a word for a relation is a person's name (``introduced``).
_KIN_EN = (
    r"friend|sister|brother|mother|father|neighbour|neighbor|wife|husband|son|daughter|cousin|uncle|"
    r"aunt|partner|colleague|boss|assistant|fiancée?|nephew|niece|grandson|granddaughter|roommate|"
    r"classmate|apprentice|companion|lodger"
)
_KIN_ADJ_EN = r"(?:(?:old|young|little|best|elder|younger|older|new|kid|baby|big)\s+)?"
_INTRODUCED_EN = re.compile(
    rf"\b(?:[Hh]is|[Hh]er|[Tt]heir|[Mm]y|[Oo]ur|[Yy]our|[Aa]n?|[Tt]he)\s+{_KIN_ADJ_EN}(?:{_KIN_EN}),?\s+"
    rf"(?P<a>{_CAP})\b|\b(?P<b>{_CAP}),\s+(?:his|her|their|my|our)\s+{_KIN_ADJ_EN}(?:{_KIN_EN})\b"
)
# A sentence that opens with a name doing what only a person does.
_PERSON_DOES_EN = (
    r"nodded|smiled|shrugged|frowned|grinned|glanced|winced|looked\s+(?:up|at|away|down|round|around)"
)
_OPENS_EN = re.compile(
    rf"(?:^|(?<=[.!?])\s+|(?<=[.!?][\"”’])\s+|[\r\n]\s*)(?P<a>{_CAP})\s+(?:{_PERSON_DOES_EN})\b"
)

_CLAUSE_ZH = re.compile(r"(?:^|[。！？，、；：…—\r\n”」』])\s*([\u4e00-\u9fff]{2,3})")
_VERBS_ZH = (
    r"(?:低声|轻声|大声|冷冷地|淡淡地|笑着|忽然|又|也|终于|小声)?"
    r"(?:说道|说|道|问道|问|答道|答|喊道|喊|叫道|笑道|叹道|开口)"
)
SPEECH_VERBS_ZH = _VERBS_ZH
_ATTR_ZH = re.compile(rf"([\u4e00-\u9fff]{{2,3}}?){_VERBS_ZH}[：:，,]?\s*$")
_AFTER_ZH = re.compile(rf"^[，,]?\s*([\u4e00-\u9fff]{{2,3}}?){_VERBS_ZH}")
_NOT_NAMES_ZH = re.compile(
    r"^(?:[他她它我你这那一不没也都就还又在是有从把被对向往让给和跟与而但可却便才刚正已再很太真好"
    r"如若虽因所为要会能想看说问道走过来去上下里外前后中大小多少几每各某谁什怎哪])"
)

_SURNAMES_ZH = frozenset(
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔"
    "钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤柳温易常"
    "乔凌岳葛晏楚燕慕容司欧上官诸葛东方令狐老小阿"
)
_ROLES_ZH = frozenset(
    "女子 男子 少年 少女 老人 老者 姑娘 公子 掌柜 小二 师傅 师父 师兄 师姐 师妹 师弟 母亲 父亲 "
    "妈妈 爸爸 叔叔 二叔 大伯 阿姨 奶奶 爷爷 外婆 外公 哥哥 姐姐 弟弟 妹妹 老师 班主任 校长 医生 "
    "警察 黑衣人 老板 店主".split()
)

_CLAUSE_JA = re.compile(
    r"(?:^|[。、！？」』\r\n　 ])([\u4e00-\u9fff\u30a0-\u30ff\u3040-\u309f]{1,6}?)"
    r"(?:(?P<honorific>さん|くん|ちゃん|先生|先輩|様)|は|が|も)"
)
# A person the narration introduces by name: ``ガルドと名乗った``, ``佐伯という名の``, ``名前はミオ``.
_INTRODUCED_JA = re.compile(
    r"(?P<a>[\u30a1-\u30fa\u30fc]{2,8}|[\u4e00-\u9fff]{2,4})(?:と名乗|という名)"
    r"|名(?:前)?は(?P<b>[\u30a1-\u30fa\u30fc]{2,8}|[\u4e00-\u9fff]{2,4})(?:[。、]|と(?:いう|言)|だ|で)"
)
_AFTER_JA = re.compile(
    r"^\s*と\s*([\u4e00-\u9fff\u30a0-\u30ff\u3040-\u309f]{1,6}?)(?:さん|くん|ちゃん)?(?:が|は)"
)
# The paragraph after a line, opening with who said it: ``千尋が尋ねると、…``, ``陽太の声は震えていた``
# (Japanese prose often names the speaker right after the line, in a paragraph of its own).
_NEXT_JA = re.compile(
    r"^\s*([\u4e00-\u9fff\u30a0-\u30ff\u3040-\u309f]{1,6}?)(?:さん|くん|ちゃん|先生|先輩|様)?"
    r"(?:(?:が|は)[^。「」『』]{0,12}?"
    r"(?:尋ね|たずね|訊|聞き返|問いかけ|問う|言っ|言う|言い|答え|叫|呟|つぶや|ささや|囁|続け|口を開|声をかけ|声を上げ|怒鳴)"
    r"|の声)"
)
# The narration paragraph right before a line, closing with a speech verb (``ヨルが耳元でささやいた。``):
# its subject says the line. The subject: the topic (``Xは``), else the last ``Xが``.
_SAYS_JA = re.compile(
    r"(?:言った|言う|言い放った|ささやいた|囁いた|尋ねた|たずねた|訊いた|訊ねた|叫んだ|呟いた|つぶやいた"
    r"|答えた|続けた|口を開いた|声をかけた|切り出した|怒鳴った)。?\s*$"
)
_SUBJECT_JA = re.compile(
    r"(?P<n>[\u30a1-\u30fa\u30fc]{2,8}|[\u4e00-\u9fff]{2,4})(?:さん|くん|ちゃん|先生|先輩|様)?(?P<p>は|が)"
)
_HIRAGANA_ONLY = re.compile(r"^[\u3040-\u309f]+$")
_NOT_NAMES_JA = frozenset(
    "私 僕 俺 彼 彼女 あなた 君 誰 それ これ あれ ここ そこ 今日 明日 昨日 今 時 事 物 人 声 目 手 顔 "
    "本 窓 扉 ドア 雨 空 風 夜 朝 外 中 前 後 上 下 二人 みんな 自分".split()
)


@dataclass(frozen=True)
class NameCandidate:
    """A name the chapter uses for a person: how often, and how often as a quote's speaker."""

    name: str
    mentions: int
    attributed: int

    @property
    def strong(self) -> bool:
        """Attributed at least once: a speaker the text names."""
        return self.attributed > 0


def _around(text: str, span: tuple[int, int], paragraph: tuple[int, int]) -> tuple[str, str]:
    """The paragraph's text just before the quote's opening mark and just after its closing mark."""
    start, end = span
    before = text[max(paragraph[0], start - 1 - _WINDOW) : max(paragraph[0], start - 1)]
    after = text[min(end + 1, paragraph[1]) : min(end + 1 + _WINDOW, paragraph[1])]
    return before, after


def attribution(text: str, span: tuple[int, int], paragraph: tuple[int, int], language: str) -> str | None:
    """The speaker an attribution right next to the quote names (``"…," said Mei``), or ``None``."""
    if language in european.EUROPEAN:
        return european.attribution(text, span, paragraph, language)
    if language == "ko":
        return korean.attribution(text, span, paragraph)
    before, after = _around(text, span, paragraph)
    if language == "en":
        m = _AFTER_EN.match(after)
        if m:
            return _clean_en(m.group("a") or m.group("b"))
        m = _BEFORE_EN.search(before.split(".")[-1])
        return _clean_en(m.group("a")) if m else None
    if language == "zh":
        m = _AFTER_ZH.match(after)
        if m and _usable_zh(m.group(1)):
            return m.group(1)
        m = _ATTR_ZH.search(re.split(r"[。！？”」]", before)[-1])
        return m.group(1) if m and _usable_zh(m.group(1)) else None
    m = _AFTER_JA.match(after)
    if m and _usable_ja(m.group(1)):
        return m.group(1)
    if not before.strip() and (said := _previous_paragraph_ja(text, paragraph)):
        return said
    return _next_paragraph_ja(text, span, paragraph) if not after.strip() else None


def _previous_paragraph_ja(text: str, paragraph: tuple[int, int]) -> str | None:
    """The speaker the narration paragraph right before a line names as the subject of its last
    sentence, when that sentence closes with a speech verb (``_SAYS_JA``); else ``None``."""
    previous = text[max(0, paragraph[0] - 4 * _WINDOW) : paragraph[0]].rstrip()
    previous = re.split(r"\n\s*\n|[」』”\"]", previous)[-1]
    sentence = re.split(r"。(?=.)", previous.strip())[-1]
    if not _SAYS_JA.search(sentence):
        return None
    subjects = [m for m in _SUBJECT_JA.finditer(sentence) if _usable_ja(m.group("n"))]
    topics = [m for m in subjects if m.group("p") == "は"]
    chosen = topics[0] if topics else (subjects[-1] if subjects else None)
    return chosen.group("n") if chosen else None


def _next_paragraph_ja(text: str, span: tuple[int, int], paragraph: tuple[int, int]) -> str | None:
    """The speaker the narration paragraph right after a line names with a speech verb or as the
    voice (``_NEXT_JA``), when the line closes its paragraph; else ``None``."""
    following = text[paragraph[1] : paragraph[1] + 4 * _WINDOW].lstrip()
    if following[:1] in ("「", "『", "“", '"') or not following:
        return None
    m = _NEXT_JA.match(following)
    return m.group(1) if m and _usable_ja(m.group(1)) else None


def _clean_en(name: str | None) -> str | None:
    """A matched English name as a candidate: ``the old man`` in lower case; a capitalised name
    without the sentence words around it (``The Marigold`` → ``Marigold``); ``None`` for none."""
    if name is None:
        return None
    if re.fullmatch(_NOUN_PHRASE_EN, name):
        return " ".join(name.split()).lower()
    words = name.split()
    while words and words[0].rstrip(".") in _NOT_NAMES_EN and not re.fullmatch(_TITLES, words[0]):
        words.pop(0)
    while words and words[-1].rstrip(".") in _NOT_NAMES_EN:
        words.pop()
    if len(words) == 1 and re.fullmatch(_TITLES, words[0]):
        return None
    return " ".join(words) or None


def _usable_zh(word: str) -> bool:
    """A Chinese word that can be a person: a surname first (or 老/小/阿), or a word for a role."""
    return word in _ROLES_ZH or (word[0] in _SURNAMES_ZH and not _NOT_NAMES_ZH.match(word))


def _usable_ja(word: str) -> bool:
    return bool(word) and not _HIRAGANA_ONLY.match(word) and word not in _NOT_NAMES_JA


def _mentions_en(narration: str) -> Counter[str]:
    found: Counter[str] = Counter()
    inside: set[str] = set()
    for m in re.finditer(
        rf"{_NOUN_PHRASE_EN}|{_NAME_EN}|\b[Aa]n?\s+(?:old|young)\s+(?:man|woman)\b", narration
    ):
        name = _clean_en(re.sub(r"^[Aa]n?\s", "the ", m.group()))
        if not name:
            continue
        found[name] += 1
        before = narration[max(0, m.start() - 4) : m.start()]
        if name.startswith("the ") or not re.search(r"(?:^|[.!?]\S?\s+|[\r\n]\s*|[\"“]\s*)$", before):
            inside.add(name)
    # A word that only ever starts sentences is a name when used often and never in lower case.
    lowercase = set(re.findall(r"[a-z][a-z'’\-]*", narration))  # common words, not names
    often = {n for n, c in found.items() if c >= 3 and n.lower() not in lowercase}
    return Counter({n: c for n, c in found.items() if n in inside or n in often})


_POSSESSIVE = re.compile(r"['’]s$")


def bare_name(name: str) -> str | None:
    """A titled English name's name without its title (``Mr. Hollis`` → ``Hollis``), else None."""
    m = re.fullmatch(rf"{_TITLES}\s+({_CAP})", name)
    return m.group(1) if m else None


def aliases_en(name: str) -> list[str]:
    """Other ways an English chapter writes a name: a titled name bare (``Mr. Hollis`` →
    ``Hollis``), a ``the …`` phrase as first met (``the old man`` → ``an old man``)."""
    out = [b] if (b := bare_name(name)) else []
    if name.startswith("the "):
        rest = name[4:]
        out.append(("an " if rest[:1] in "aeiou" else "a ") + rest)
    return out


def _titled_en(text: str) -> Counter[str]:
    """Titled names (``Mr. Hollis``, ``Principal Haskell``): a title makes a capitalised word a
    name wherever it stands, a sentence's start or a line's vocative included; counted by the uses
    of the bare name (``Hollis did not look up``), so one titled use of a name used again counts."""
    found: Counter[str] = Counter()
    words: Counter[str] | None = None  # every capitalised word's uses, counted once, when needed
    for m in re.finditer(rf"\b({_TITLES})\s+({_CAP})\b", text):
        bare = _POSSESSIVE.sub("", m.group(2))  # Mrs. Dunne's kitchen: Mrs. Dunne
        if bare in _NOT_NAMES_EN:
            continue
        if words is None:
            words = Counter(_POSSESSIVE.sub("", w) for w in re.findall(rf"\b{_CAP}\b", text))
        found[f"{m.group(1)} {bare}"] = words[bare]
    return found


def introduced_en(narration: str) -> set[str]:
    """Names the English narration introduces as people (module docstring), used once or more."""
    found = set()
    for m in _INTRODUCED_EN.finditer(narration):
        found.add(_POSSESSIVE.sub("", m.group("a") or m.group("b")))
    lowercase: set[str] | None = None
    for m in _OPENS_EN.finditer(narration):
        if lowercase is None:
            lowercase = set(re.findall(r"[a-z][a-z'’\-]*", narration))
        if m.group("a").lower() not in lowercase:
            found.add(m.group("a"))
    return {n for n in found if n not in _NOT_NAMES_EN}


def _mentions_zh(narration: str) -> Counter[str]:
    two: Counter[str] = Counter()
    three: Counter[str] = Counter()
    for m in _CLAUSE_ZH.finditer(narration):
        word = m.group(1)
        if not _usable_zh(word) and not _usable_zh(word[:2]):
            continue
        two[word[:2]] += 1
        if len(word) == 3:
            three[word] += 1
    by_start: dict[str, list[tuple[str, int]]] = {}
    for w, k in three.items():
        by_start.setdefault(w[:2], []).append((w, k))
    found: Counter[str] = Counter()
    for word, n in two.items():
        longer = [(w, k) for w, k in by_start.get(word, ()) if k == n]
        if longer:  # always followed by the same character: a three-character name
            found[longer[0][0]] = n
        else:
            found[word] = n
    return found


def _mentions_ja(narration: str) -> Counter[str]:
    """Words opening a clause before a topic or subject particle or an honorific; a one-character
    word only with an honorific (``鱗は``, ``鱗が`` are things; ``凛さん`` is a person)."""
    return Counter(
        m.group(1)
        for m in _CLAUSE_JA.finditer(narration)
        if _usable_ja(m.group(1)) and (len(m.group(1)) > 1 or m.group("honorific"))
    )


def introduced_ja(narration: str) -> set[str]:
    """Names the Japanese narration introduces as people (``ガルドと名乗った``), used once or more."""
    found = {m.group("a") or m.group("b") for m in _INTRODUCED_JA.finditer(narration)}
    return {n for n in found if _usable_ja(n)}


# Each language's names the narration introduces as people (``introduced_en``).
_INTRODUCED: dict[str, Callable[[str], set[str]]] = {
    "en": introduced_en,
    "ja": introduced_ja,
    **{
        lang: lambda narration, lang=lang: european.introduced(narration, lang)
        for lang in sorted(european.EUROPEAN)
    },
}

# Each language's uses of names: ``(narration, quoted, said)`` → uses by name.
_MENTIONS: dict[str, Callable[[str, str, Counter[str]], Counter[str]]] = {
    "en": lambda narration, quoted, said: _mentions_en(narration),
    "zh": lambda narration, quoted, said: _mentions_zh(narration),
    "ja": lambda narration, quoted, said: _mentions_ja(narration),
    "ko": korean.mentions,
    **{
        lang: lambda narration, quoted, said, lang=lang: european.mentions(narration, said, lang)
        for lang in sorted(european.EUROPEAN)
    },
}


def find_names(
    narration: str, attributed: Sequence[str | None], language: str, quoted: str = ""
) -> list[NameCandidate]:
    """Candidates for the cast from the chapter's ``narration`` (its text outside quotes), the
    speakers its attributions name and, in English, the titled names (``Mrs. Dunne``) used anywhere,
    ``quoted`` (the quotes' own words, one a line) included, and in Korean the vocatives opening a
    quote; strongest first, at most ``MAX_NAMES``, none longer than ``MAX_NAME_CHARS``."""
    said = Counter(a for a in attributed if a)
    used = _MENTIONS[language](narration, quoted, said)
    introduced = _INTRODUCED.get(language, lambda narration: set())(narration)
    uncounted = {n for n in introduced if not used[n]}  # where the rules counted a name, that stands
    if spaced(language):
        counted = european.whole_word_counts(narration, uncounted, language)
    else:  # no spaces between words: each use counts
        counted = _counts(narration, uncounted)
    for name, count in counted.items():
        used[name] = count
    if language == "en":
        for name, count in _titled_en(f"{narration}\n{quoted}").items():
            used[name] = max(used[name], count)
    if not spaced(language):  # an attributed name counts where it is used in full, not only clause-first
        for name, count in _counts(narration, said).items():
            used[name] = max(used[name], count)
    names = [
        n
        for n in {*said, *used}
        if (said[n] or (n in introduced and used[n]) or used[n] >= MIN_MENTIONS) and len(n) <= MAX_NAME_CHARS
    ]
    # A name inside a longer candidate that is used as often is the same person ("Ada" in "Ada Reyes").
    inside = _inside(names, said, used)
    names = [n for n in names if said[n] or not (n in inside and (inside[n][0] or inside[n][1] >= used[n]))]
    candidates = [NameCandidate(n, max(used[n], said[n]), said[n]) for n in names]
    candidates.sort(key=lambda c: (-c.attributed, -c.mentions, c.name))
    return candidates[:MAX_NAMES]


def _counts(text: str, words: Iterable[str]) -> Counter[str]:
    """``text.count(w)`` for each word (its uses, none overlapping another of the same word), in
    one pass over the places where one of the words could start."""
    wanted = set(words)
    counts: Counter[str] = Counter()
    if not wanted:
        return counts
    lengths = sorted({len(w) for w in wanted})
    firsts = re.compile("[" + "".join(sorted({re.escape(w[0]) for w in wanted})) + "]")
    free: dict[str, int] = {}  # where a word's next use may start: after its last one counted
    for m in firsts.finditer(text):
        i = m.start()
        for n in lengths:
            w = text[i : i + n]
            if w in wanted and i >= free.get(w, 0):
                counts[w] += 1
                free[w] = i + n
    return counts


def _inside(names: Sequence[str], said: Counter[str], used: Counter[str]) -> dict[str, tuple[bool, int]]:
    """For each name that lies inside another (longer) name: whether one of those is attributed,
    and the most uses of one of them. Each name's parts are looked up (names are short), never
    each name against every other."""
    known = set(names)
    lengths = sorted({len(n) for n in names})
    out: dict[str, tuple[bool, int]] = {}
    for m in names:
        for size in lengths:
            if size >= len(m):
                break
            for i in range(len(m) - size + 1):
                part = m[i : i + size]
                if part in known:
                    attributed, most = out.get(part, (False, 0))
                    out[part] = (attributed or said[m] > 0, max(most, used[m]))
    return out


def name_positions(text: str, names: Iterable[str]) -> dict[str, list[int]]:
    """Where each name starts in ``text``, every use (overlapping ones too), for ``nearest_name``."""
    out: dict[str, list[int]] = {}
    for name in names:
        found, i = [], text.find(name)
        while i >= 0:
            found.append(i)
            i = text.find(name, i + 1)
        out[name] = found
    return out


def nearest_name(
    text: str,
    span: tuple[int, int],
    paragraph: tuple[int, int],
    names: Sequence[str],
    positions: Mapping[str, Sequence[int]] | None = None,
) -> str | None:
    """The candidate named nearest before the quote in its paragraph (else nearest after it).
    ``positions`` (``name_positions(text, names)``), when given, finds them without reading the
    paragraph again for each quote: the same answer, in time that does not grow with the paragraph."""
    if positions is not None:
        return _nearest_indexed(span, paragraph, names, positions)
    before = [(span[0] - i, n) for n in names if (i := text.rfind(n, paragraph[0], span[0])) >= 0]
    if before:
        return min(before)[1]
    after = [(i - span[1], n) for n in names if (i := text.find(n, span[1], paragraph[1])) >= 0]
    return min(after)[1] if after else None


def _nearest_indexed(
    span: tuple[int, int],
    paragraph: tuple[int, int],
    names: Sequence[str],
    positions: Mapping[str, Sequence[int]],
) -> str | None:
    """``nearest_name`` from the names' positions: ``rfind`` and ``find`` within the paragraph as
    searches in sorted lists."""
    before, after = [], []
    for n in names:
        at = positions[n]
        k = bisect.bisect_right(at, span[0] - len(n)) - 1  # the last use that ends by the quote
        if k >= 0 and at[k] >= paragraph[0]:
            before.append((span[0] - at[k], n))
        k = bisect.bisect_left(at, span[1])  # the first use after the quote, inside the paragraph
        if k < len(at) and at[k] + len(n) <= paragraph[1]:
            after.append((at[k] - span[1], n))
    if before:
        return min(before)[1]
    return min(after)[1] if after else None
