"""Korean: who says a quoted line, and whom the chapter names.

**Attributions** (``said_by``): right after the quote's closing mark, after the quotative ending
or not (``라고``, ``이라고``, ``하고``, ``고``), a subject with its particle (``이``, ``가``, ``은``,
``는``, ``도``), up to three words (``웃으며``, ``작은 목소리로``) and a speech verb (``말했다``,
``물었다``, ``대답했다``, ``외쳤다``, ``속삭였다``, ``말을 이었다`` …): ``"가자." 지수가 말했다``,
``"가자"라고 민호가 대답했다``, ``하고 지수는 웃으며 말했다``. The pronouns ``그`` (he) and ``그녀``
(she) name nobody: ``said_by`` gives their gender.

**Names** (``mentions``): a Hangul word of two to four syllables before a particle (``지수가``,
``민호는``, ``지수에게``, ``민호의``; the particle agreeing with the word's last syllable: ``가``,
``는``, ``를``, ``와`` after a vowel, ``이``, ``은``, ``을``, ``과`` after a consonant), used at least
``MIN_MENTIONS`` times, more often as a subject or topic (``이``/``가``/``은``/``는``) than as an
object (``을``/``를``: things are handled, ``우산을 폈다``), or once with ``에게``/``한테``; and a
vocative at a quote's start (``지수야,``, ``민준아!``: someone spoken to), which counts as a use.
Pronouns, the words for things, places, time and feelings that take particles most
(``NOT_NAMES``), verb forms (``사랑하는``, ``괜찮아``) and locatives (``창문에는``) are no names; the
words for roles are (``엄마``, ``아빠``, ``선생님``, ``할머니``: how a chapter names its people, as
``_ROLES_ZH`` does in Chinese). A word written with the suffix ``이`` (``민준이가``) is the name
without it when that one is a candidate too.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

_WINDOW = 40  # characters after a quote searched for its attribution

_VERBS = (
    r"말했|물었|대답했|답했|외쳤|소리쳤|소리를 질렀|소리 질렀|고함쳤|중얼거렸|속삭였|말을 이었|덧붙였|"
    r"되물었|투덜거렸|대꾸했|반문했|설명했|부르짖었|내뱉었|타일렀|재촉했|말씀하셨|물으셨|웅얼거렸|"
    r"읊조렸|말한다|묻는다|대답한다|외친다|속삭인다|중얼거린다|덧붙인다"
)
_AFTER = re.compile(
    rf"^\s*(?:(?:이?라|하)고\s*|고\s+)?(?P<who>[가-힣]{{1,4}}?)(?:이|가|은|는|도)\s+"
    rf"(?:[가-힣,]+\s+){{0,3}}?(?:{_VERBS})"
)
_RUN = re.compile(r"(?<![가-힣])[가-힣]{3,6}(?![가-힣])")
_VOCATIVE = re.compile(r"^\s*([가-힣]{2,4})(야|아)(?=[\s,!.?…~]|$)", re.MULTILINE)
_PARTICLES = ("에게", "한테", "이", "가", "은", "는", "을", "를", "의", "도", "와", "과")
_AFTER_VOWEL = frozenset("가 는 를 와 야".split())
_AFTER_CONSONANT = frozenset("이 은 을 과 아".split())
_SUBJECT = frozenset("이 가 은 는".split())
_OBJECT = frozenset("을 를".split())
_DATIVE = frozenset("에게 한테".split())
# Last syllables of no name: verb and adjective endings, the plural 들, the locative 에 (창문에는).
_NOT_LAST = frozenset("잖 찮 았 었 겠 했 되 히 게 고 며 면 던 다 요 죠 께 들 에".split())

NOT_NAMES = frozenset(
    """
    그녀 그들 우리 너희 저희 당신 자신 자기 누구 누군가 아무 아무도 모두 모든 서로 여기 거기 저기 이것
    그것 저것 이곳 그곳 저곳 이쪽 그쪽 저쪽 무엇 뭔가 어디 언제 이때 그때 지금 이제 오늘 내일 어제 아침
    저녁 오후 오전 하루 순간 시간 동안 다음 처음 마지막 때문 정도 하나 사람 사람들 남들 하늘 바람 구름
    햇빛 햇살 달빛 별빛 바다 강물 나무 꽃잎 거리 골목 도시 마을 학교 교실 복도 운동장 부엌 거실 창문
    창밖 현관 계단 지붕 마당 정원 공원 가게 카페 식당 회사 사무실 병원 기차 버스 자동차 전화 휴대폰
    핸드폰 문자 메시지 편지 가방 책상 의자 침대 이불 커피 소리 목소리 발소리 눈물 웃음 미소 표정 얼굴
    눈빛 눈앞 고개 어깨 손끝 손가락 손바닥 가슴 머리 머리카락 입술 다리 발걸음 마음 생각 기억 느낌
    기분 걱정 불안 두려움 사랑 행복 슬픔 분노 침묵 대답 질문 이야기 얘기 말투 말씀 소식 사실 진실
    거짓말 약속 문제 이유 상황 분위기 공기 냄새 어둠 그림자 불빛 세상 세계 인생 사이 주변 근처 한참
    잠시 잠깐 조금 그날 그곳 이번 그녀석 녀석 아무것 모습 시선 목소리 공간 방향 자리 바닥 하늘빛
    빗소리 빗방울 햇볕 노을 새벽 한밤 오랜만 정말 진짜 괜찮 그래 아니 있잖 알잖 그렇잖 이거 그거 저거
    무슨 어떤 이런 그런 저런 다른 같은 작은 많은 좋은 새로운 그러나 하지만 그리고 그래서 그런데 그러자
    """.split()
)
_ROLES = {
    "f": frozenset("엄마 어머니 할머니 언니 누나 이모 고모 아줌마 아주머니 여자 소녀 할멈 어머님".split()),
    "m": frozenset("아빠 아버지 할아버지 오빠 형님 삼촌 아저씨 남자 소년 아버님 할아버님".split()),
}
# The pronoun as a clause's subject or topic (``그는 고개를 끄덕였다``), for each person's gender.
_START = r"(?:^|[.!?…\"”'’」』]\s*|\s)"
SUBJECT_PRONOUNS = (re.compile(rf"{_START}그(?:가|는|도)\s"), re.compile(rf"{_START}그녀(?:가|는|도)\s"))
PRONOUN_BEAT = re.compile(rf"(?:^|[.!?…]\s*|[\"”'’」』]\s*)(?P<a>그녀|그)(?:가|는|도)\s+(?!(?:{_VERBS}))")


def _final(syllable: str) -> bool:
    """A Hangul syllable ends with a consonant (a final jamo)."""
    return (ord(syllable) - 0xAC00) % 28 != 0


def _agrees(stem: str, particle: str) -> bool:
    if particle in _AFTER_VOWEL:
        return not _final(stem[-1])
    if particle in _AFTER_CONSONANT:
        return _final(stem[-1])
    return True


def usable(word: str) -> bool:
    """A word that can be a person's name: two to four syllables, no pronoun, common noun or verb
    form (module docstring)."""
    return 2 <= len(word) <= 4 and word not in NOT_NAMES and word[-1] not in _NOT_LAST


def said_by(text: str, span: tuple[int, int], paragraph: tuple[int, int]) -> tuple[str, str] | None:
    """``("name", name)`` or ``("pronoun", "m" | "f")`` when an attribution follows the quote."""
    after = text[min(span[1] + 1, paragraph[1]) : min(span[1] + 1 + _WINDOW, paragraph[1])]
    m = _AFTER.match(after)
    if m is None:
        return None
    who = m.group("who")
    if who in ("그", "그녀"):
        return ("pronoun", "m" if who == "그" else "f")
    return ("name", who) if usable(who) else None


def attribution(text: str, span: tuple[int, int], paragraph: tuple[int, int]) -> str | None:
    said = said_by(text, span, paragraph)
    return said[1] if said and said[0] == "name" else None


def pronoun_said(text: str, span: tuple[int, int], paragraph: tuple[int, int]) -> str | None:
    said = said_by(text, span, paragraph)
    return said[1] if said and said[0] == "pronoun" else None


def mentions(narration: str, quoted: str, said: Mapping[str, int]) -> Counter[str]:
    """Each candidate's uses (module docstring): before particles in the narration, and as a
    vocative at a quote's start."""
    found: Counter[str] = Counter()
    subject: Counter[str] = Counter()  # as a subject or topic, less as an object
    person: set[str] = set()  # spoken to, or with a dative: a person
    for m in _RUN.finditer(narration):
        run = m.group()
        for particle in _PARTICLES:
            stem = run[: -len(particle)]
            if run.endswith(particle) and 2 <= len(stem) <= 4 and _agrees(stem, particle):
                if usable(stem) and not (particle in ("는", "은") and stem.endswith("하")):
                    found[stem] += 1
                    subject[stem] += 1 if particle in _SUBJECT else -1 if particle in _OBJECT else 0
                    if particle in _DATIVE:
                        person.add(stem)
                break
    for m in _VOCATIVE.finditer(quoted):
        stem = m.group(1)
        if usable(stem) and _agrees(stem, m.group(2)):
            found[stem] += 1
            person.add(stem)
    kept = Counter({w: n for w, n in found.items() if w in person or subject[w] > 0 or said.get(w)})
    for word in list(kept):  # 민준이가: 민준 with the suffix 이
        if len(word) >= 3 and word.endswith("이") and word[:-1] in kept:
            kept[word[:-1]] += kept.pop(word)
    return kept


def name_gender(name: str) -> str | None:
    """The gender a role word gives (``엄마``: f, ``아빠``: m)."""
    for gender, words in _ROLES.items():
        if name in words:
            return gender
    return None
