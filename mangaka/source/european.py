"""French, Spanish, Russian and German: who says a quoted line, and whom the chapter names.

**Attributions** (``said_by``): a speech verb and its subject next to the quote, as these languages
write them:

- right after the quote, inverted (``dit-il``, ``demanda-t-elle``, ``répondit Marie``, ``s'écria
  Paul``, ``preguntó Ana``, ``спросил он``, ``sagte der Alte``) or in the subject's order
  (``Marie dit``), past a closing mark, a comma or a dash (``» — спросил он``, `` —preguntó Ana``);
- right before it, an incise a dash closes (``—¿Quién es? —preguntó Ana—. Soy yo.``: ``Soy yo.`` is
  Ana's too), an incise a comma closes (``— Je ne sais pas, dit-elle, si…``), or the subject and
  its verb before a colon (``Anna sagte: „…“``).

The subject is a name (one or two capitalised words, after a title or not: ``Madame Roux``,
``Herr Weber``), a role (``la vieille femme``, ``el viejo``, ``старуха``, ``der Alte``; the article
in lower case) or a pronoun (``il``/``elle``, ``él``/``ella``, ``он``/``она``, ``er``/``sie``),
which names nobody: ``said_by`` gives its gender for ``evidence.py`` to resolve.

**Names** (``mentions``): capitalised words (joined when consecutive, a title before them kept)
used at least once inside a sentence (the first word of a sentence, or of a line after a dash or an
opening mark, is not evidence; ``Вечером Иван``: ``Иван`` is inside it) or three times and never in
lower case, less each language's capitalised function words (``european_words.STOP``: articles,
pronouns, conjunctions, greetings: never ``Une`` or ``Elle``), and the roles. German capitalises
every noun: a German name is attributed, titled (``Herr Weber``), or a word used three times inside
sentences, never after an article or a determiner (``der``, ``ein``, ``seine``, ``im`` … with up to
two lower-case words between) and not a noun used without one (``zu Hause``). Russian declines
names (``Маша``, ``Машу``, ``Маши``): the forms of one stem are one name, written as the
attribution or the commonest nominative-looking form writes it; a name's uses are whole words
(``Ana`` is not in ``mañana``), in Russian with a case ending or not.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import cache

from .european_words import FEMALE_ROLES_RU, FEMALE_TITLES, PRONOUNS, ROLE_NOUNS, STOP, TITLES, VERBS

EUROPEAN = frozenset({"fr", "es", "ru", "de"})

UPPER = "A-ZÀ-ÖØ-ÞŒА-ЯЁ"
LOWER = "a-zß-öø-ÿœа-яё"
# A capitalised word: no apostrophe or hyphen around it (``Qu'il``, ``Aujourd'hui``), but after a
# French elided word (``qu'Émile``, ``d'Yves``); a hyphenated name whole (``Jean-Pierre``).
_ELIDED = r"(?<=\b[dDlLjJnNsScCmMtT]['’])|(?<=\b[Qq]u['’])|(?<=squ['’])"
CAP = rf"(?:(?<![\w'’\-])|{_ELIDED})[{UPPER}][{LOWER}]+(?:-[{UPPER}]?[{LOWER}]+)*(?![\w'’])"
_WINDOW = 50  # characters on each side of a quote searched for its attribution

# A role: the article, an adjective or none, and a word for a person (``NOUNS``).
_ROLE_FORMS = {
    "fr": (
        r"(?<![\w'’])(?:[Ll]e\s+|[Ll]a\s+|[Ll]['’])"
        r"(?:(?:vieux|vieil|vieille|jeune|petit|petite|gros|grosse|grand|grande|pauvre)\s+)?"
        r"(?:NOUNS)(?![\w'’\-])"
    ),
    "es": (
        r"(?<![\w])(?:[Ee]l|[Ll]a)\s+(?:(?:viejo|vieja|joven|pequeño|pequeña|pobre|gordo|gorda)\s+)?"
        r"(?:NOUNS)(?![\w])"
    ),
    "ru": r"(?<![\w\-])(?:NOUNS)(?![\w\-])",
    "de": (
        r"(?<![\w])(?:[Dd]er|[Dd]ie)\s+(?:(?:alte|junge|kleine|fremde|große|dicke|arme)\s+)?"
        r"(?:NOUNS)(?![\w])"
    ),
}
ROLES = {lang: form.replace("NOUNS", ROLE_NOUNS[lang]) for lang, form in _ROLE_FORMS.items()}
# Right after an inverted speech verb (``dit la boulangère``, ``dijo la panadera``, ``sagte die
# Bäckerin``) the article and any noun are a role, not only the listed ones; Russian has no article.
_ANY_NOUN = {
    "fr": rf"(?!voix\b)[{LOWER}]{{3,}}",
    "es": rf"(?!voz\b)[{LOWER}]{{3,}}",
    "de": rf"[{UPPER}][{LOWER}]{{2,}}",
}
SAID_ROLES = {lang: _ROLE_FORMS[lang].replace("NOUNS", noun) for lang, noun in _ANY_NOUN.items()}
STOP_WORDS = {lang: frozenset(words.split()) for lang, words in STOP.items()}

# A word after these (with up to two lower-case words between) is a German common noun.
_DETERMINER_DE = re.compile(
    r"(?:^|[^\wäöüß])(?i:der|die|das|den|dem|des|ein|eine|einen|einem|einer|eines|kein|keine|keinen|"
    r"keinem|keiner|mein|meine|meinen|meinem|meiner|dein|deine|deinen|deinem|seine|seinen|seinem|seiner|"
    r"ihre|ihren|ihrem|ihrer|unser|unsere|unseren|unserem|euer|eure|dieser|diese|dieses|diesen|diesem|"
    r"jeder|jede|jedes|jeden|jedem|alle|allen|zum|zur|im|am|vom|beim|ins|ans|aufs|durchs|fürs|ums|welche|"
    r"welcher|welches|manche|solche|viele|einige|mehrere|beide|beiden)\s+(?:[a-zäöüß]+\s+){0,2}$"
)
# Where a sentence starts: the 4 characters before a word say it (a first word is no evidence).
_SENTENCE_START = re.compile(r"(?:^|[.!?…]\S?\s+|[\r\n]\s*|[«»\"“”„‚‹›—–―¿¡(]\s*)$")
# The narration a comma-closed incise goes on into (``dit-il, en souriant``): no speech resumes.
_NARRATION_ON = {
    "fr": r"en|puis|et|avant|après|sans|tout|avec|d['’]une?|l['’]air|les\s+yeux|le\s+regard|la\s+voix",
    "es": r"y|e|pero|luego|mientras|con|sin|antes|después|mirando|sonriendo",
    "ru": r"и|а|но|потом|затем|глядя|улыбаясь|не",
    "de": r"und|aber|dann|während|ohne|mit|bevor|nachdem",
}
_RU_ENDINGS = ("ами", "ями", "ого", "его", "ому", "ему", "ой", "ей", "ом", "ем", "ою", "ею", "ах", "ях")
_RU_ENDINGS += ("а", "я", "у", "ю", "ы", "и", "е")
_RU_DECLINED = ("и", "ы", "е", "у", "ю", "ой", "ей", "ою", "ею")  # of a name ending in -а/-я
_RU_OBLIQUE = ("у", "ю", "е", "ой", "ей", "ом", "ем", "ою", "ею", "ого", "его", "ому", "ему")


def name_pattern(language: str) -> str:
    """A name: one or two capitalised words, after a title or not."""
    return rf"(?:{TITLES[language]}\s+)?{CAP}(?:\s+{CAP})?"


@cache
def subject(language: str) -> str:
    """A speech verb's subject: a role, a pronoun (group ``pron``), or a name (group ``name``)."""
    male, female, others = PRONOUNS[language]
    pronoun = rf"(?i:{male}|{female}|{others})"
    return (
        rf"(?P<role>{ROLES[language]})|(?P<pron>(?<![\w'’\-]){pronoun}(?![\w\-]))"
        rf"|(?P<name>{name_pattern(language)})"
    )


@cache
def inversion(language: str) -> str:
    """A speech verb and its subject after it (``demanda-t-il``, ``dit Marie``, ``спросил он``, ``dit
    la boulangère``), groups ``hpron`` (a French hyphenated pronoun), ``role``, ``pron``, ``name``,
    ``arole`` (a role not listed: ``SAID_ROLES``)."""
    male, female, others = PRONOUNS[language]
    hyphenated = rf"-(?:t-)?(?P<hpron>{male}|{female}|{others})(?![\w\-])" if language == "fr" else "(?!)"
    said_role = rf"|(?P<arole>{SAID_ROLES[language]})" if language in SAID_ROLES else ""
    return rf"(?:{VERBS[language]})(?:{hyphenated}|\s+(?:{subject(language)}{said_role}))"


@cache
def _patterns(language: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Attributions with the verb first (inverted) and with the subject first (ordered)."""
    inverted = re.compile(rf"(?:{inversion(language)})")
    ordered = re.compile(rf"(?:{subject(language)})\s+(?:{VERBS[language]})(?![\w\-])")
    return inverted, ordered


_LEAD = re.compile(r"^[\s»«\"“”„‚‘’‹›,]*(?:[—–―][\s\u00a0]*)?")
_NEXT_LINE_DASH = re.compile(r"[\r\n][ \t\u00a0\u202f]*[—–―]")
_DASH_CLOSED = re.compile(r"[—–―](?P<incise>[^—–―\r\n]+?)[—–―]\s*[.,;:]?\s*$")
_COMMA_CLOSED = re.compile(r"(?:^|[,?!.…])\s*(?P<incise>[^,.!?…\r\n«»\"“”„]+),\s*$")
_COLON_CLOSED = re.compile(r"(?:^|[.!?…»\"”“]\s+)(?P<incise>[^.!?…:\r\n]+):\s*$")


def said_by(
    text: str, span: tuple[int, int], paragraph: tuple[int, int], language: str
) -> tuple[str, str | None] | None:
    """Who an attribution next to the quote names (module docstring): ``("name", name)``,
    ``("pronoun", "m" | "f" | None)``, or ``None`` when none stands there."""
    inverted, ordered = _patterns(language)
    after = text[span[1] : min(span[1] + _WINDOW, paragraph[1])]
    after = _NEXT_LINE_DASH.split(after, 1)[0]  # a new line of dialogue is someone else's
    after = _LEAD.sub("", after, count=1)
    m = inverted.match(after) or ordered.match(after)
    if m:
        return _subject_of(m, language)
    before = text[max(paragraph[0], span[0] - _WINDOW) : span[0]].rstrip(' \t\u00a0\u202f«"“„‚‹')
    for pattern in (_DASH_CLOSED, _COMMA_CLOSED):
        c = pattern.search(before)
        if c:
            incise = c.group("incise").strip(" \t\u00a0\u202f,")
            m = inverted.match(incise) or ordered.match(incise)
            return _subject_of(m, language) if m else None
    c = _COLON_CLOSED.search(before)
    if c:
        m = ordered.search(c.group("incise")) or inverted.match(c.group("incise").strip())
        return _subject_of(m, language) if m else None
    return None


def _subject_of(m: re.Match[str], language: str) -> tuple[str, str | None] | None:
    groups = m.groupdict()
    pronoun = groups.get("hpron") or groups.get("pron")
    if pronoun:
        male, female, _ = PRONOUNS[language]
        word = pronoun.lower()
        return ("pronoun", "m" if word == male else "f" if word == female else None)
    if role := groups.get("role") or groups.get("arole"):
        return ("name", role_name(role))
    name = clean(groups.get("name") or "", language)
    return ("name", name) if name else None


def role_name(phrase: str) -> str:
    """A role as a name: one space between words, the article in lower case (``La vieille
    femme`` → ``la vieille femme``)."""
    words = phrase.split()
    words[0] = words[0][:1].lower() + words[0][1:]
    return " ".join(words)


def clean(name: str, language: str) -> str | None:
    """A matched name without the capitalised function words around it (``Mais Marie`` →
    ``Marie``); ``None`` when nothing is left, or only a title."""
    stop, title = STOP_WORDS[language], re.compile(TITLES[language])
    words = name.split()
    while words and words[0] in stop and not (title.fullmatch(words[0]) and len(words) > 1):
        words.pop(0)
    while words and words[-1] in stop:
        words.pop()
    if not words or (len(words) == 1 and title.fullmatch(words[0])):
        return None
    return " ".join(words)


def attribution(text: str, span: tuple[int, int], paragraph: tuple[int, int], language: str) -> str | None:
    """The name (or role) an attribution next to the quote gives, else ``None`` (a pronoun too)."""
    said = said_by(text, span, paragraph, language)
    return said[1] if said and said[0] == "name" else None


def pronoun_said(text: str, span: tuple[int, int], paragraph: tuple[int, int], language: str) -> str | None:
    """``m`` or ``f`` when the attribution next to the quote is a pronoun with a gender."""
    said = said_by(text, span, paragraph, language)
    return said[1] if said and said[0] == "pronoun" else None


# ---- names ----


def mentions(narration: str, said: Mapping[str, int], language: str) -> Counter[str]:
    """Each name's uses in the narration (module docstring), the attributed names included."""
    found = _mentions_de(narration) if language == "de" else _mentions(narration, language)
    for name, count in whole_word_counts(narration, said, language).items():
        found[name] = max(found[name], count)
    return _fold_ru(found, said)[0] if language == "ru" else found


def _mentions(narration: str, language: str) -> Counter[str]:
    found: Counter[str] = Counter()
    inside: set[str] = set()
    pattern = re.compile(rf"(?P<role>{ROLES[language]})|{name_pattern(language)}")
    for m in pattern.finditer(narration):
        name = role_name(m.group()) if m.group("role") else clean(m.group(), language)
        if not name:
            continue
        found[name] += 1
        if m.group("role") or not _SENTENCE_START.search(narration[max(0, m.start() - 4) : m.start()]):
            inside.add(name)
        elif " " in name and not re.fullmatch(TITLES[language], (words := name.split())[0]):
            found[words[-1]] += 1  # ``Вечером Иван``: a sentence's first word and a name inside it
            inside.add(words[-1])
    lowercase = set(re.findall(rf"(?<![\w'’\-])[{LOWER}][{LOWER}'’\-]*", narration))
    forms = {n: {n} for n in found}
    if language == "ru":  # one name, however declined
        found, forms = _fold_ru(found, {})
    often = {n for n, c in found.items() if c >= 3 and not any(f.lower() in lowercase for f in forms[n])}
    kept = Counter({n: c for n, c in found.items() if n in often or forms[n] & inside})
    for name in list(kept):  # a titled name counts its bare uses too (``Madame Roux``, ``Roux``)
        if (b := bare(name, language)) is not None:
            kept[name] = max(kept[name], found[b])
    return kept


# Words for a relation that make the capitalised word beside them a person's name (``introduced``),
# with the determiners that open them (none in Russian).
_KIN = {
    "fr": "ami|amie|frère|sœur|voisin|voisine|mère|père|femme|mari|fils|fille|cousin|cousine|oncle|tante|"
    "collègue|compagnon|compagne|fiancé|fiancée|neveu|nièce",
    "es": "amigo|amiga|hermano|hermana|vecino|vecina|madre|padre|esposa|esposo|mujer|marido|hijo|hija|primo|"
    "prima|tío|tía|compañero|compañera|novio|novia|sobrino|sobrina",
    "ru": "друг|подруга|брат|сестра|сосед|соседка|мать|отец|жена|муж|сын|дочь|дядя|тётя|тетя|коллега|"
    "товарищ|жених|невеста|племянник|племянница",
    "de": "Freund|Freundin|Bruder|Schwester|Nachbar|Nachbarin|Mutter|Vater|Frau|Mann|Sohn|Tochter|Cousin|"
    "Cousine|Onkel|Tante|Kollege|Kollegin",
}
_KIN_BEFORE = {
    "fr": r"(?:[SsMmTt]on|[SsMmTt]a|[Ll]eur|[Nn]otre|[Vv]otre|[Uu]ne?|[Ll]e|[Ll]a|[Ll]['’])\s*",
    "es": r"(?:[Ss]u|[Mm]i|[Tt]u|[Nn]uestro|[Nn]uestra|[Uu]n|[Uu]na|[Ee]l|[Ll]a)\s+",
    "ru": r"",
    "de": r"(?:[Ss]ein|[Ss]eine|[Ii]hr|[Ii]hre|[Mm]ein|[Mm]eine|[Ee]in|[Ee]ine)\s+",
}
_KIN_AFTER = {  # ``Paul, son frère``
    "fr": r"(?:son|sa|leur|mon|ma)",
    "es": r"(?:su|mi)",
    "ru": r"(?:его|её|ее|их|мой|моя|наш|наша)",
    "de": r"(?:sein|seine|ihr|ihre|mein|meine)",
}


@cache
def _introducing(language: str) -> re.Pattern[str]:
    """A word for a relation with a capitalised word after it (group ``a``; after a comma only as an
    apposition: ``Sa femme, Odile, …``) or before it (``b``)."""
    kin, before, after = _KIN[language], _KIN_BEFORE[language], _KIN_AFTER[language]
    adjective = "" if language == "ru" else rf"(?:[{LOWER}]+\s+)?"
    return re.compile(
        rf"(?<![\w'’\-]){before}{adjective}(?:{kin})(?:\s+|,\s+(?={CAP}\s*[,.;:!?]))(?P<a>{CAP})"
        rf"|(?P<b>{CAP}),\s+{after}\s+{adjective}(?:{kin})(?![\w])"
    )


def introduced(narration: str, language: str) -> set[str]:
    """Names the narration introduces as people, used once or more: a capitalised word right after
    a word for a relation (``son frère Paul``, ``Sa femme, Odile,``, ``соседка Вера``; one adjective
    may come between the determiner and the word) or before one (``Paul, son frère``)."""
    matches = _introducing(language).finditer(narration)
    found = {clean(m.group("a") or m.group("b"), language) for m in matches}
    return {n for n in found if n}


def _mentions_de(narration: str) -> Counter[str]:
    """German: roles, titled names (counted by their bare uses), and words used three times, inside
    sentences, never as a common noun."""
    found: Counter[str] = Counter()
    words: Counter[str] = Counter()
    titled: set[str] = set()
    inside: set[str] = set()
    common: set[str] = set()
    pattern = re.compile(rf"(?P<role>{ROLES['de']})|(?:(?P<title>{TITLES['de']})\s+)?(?P<word>{CAP})")
    for m in pattern.finditer(narration):
        if m.group("role"):
            found[role_name(m.group())] += 1
            continue
        word = m.group("word")
        if word in STOP_WORDS["de"]:
            continue
        words[word] += 1
        if m.group("title"):
            titled.add(f"{m.group('title')} {word}")
            continue
        if _DETERMINER_DE.search(narration[max(0, m.start() - 40) : m.start()]):
            common.add(word)
        if not _SENTENCE_START.search(narration[max(0, m.start() - 4) : m.start()]):
            inside.add(word)
    for name in titled:
        found[name] = words[name.split()[-1]]
    for word, count in words.items():
        if count >= 3 and word in inside and word not in common:
            found[word] = count
    return found


_WORD = re.compile(r"[\w'’\-]+")
_RU_ENDING = re.compile(r"(?:ами|ями|ого|его|ому|ему|ой|ей|ом|ем|ою|ею|ах|ях|а|я|у|ю|ы|и|е)$")


def whole_word_counts(text: str, names: Iterable[str], language: str) -> Counter[str]:
    """Each name's uses in ``text`` as whole words (``Ana`` is not in ``mañana``), a one-word Russian
    name also declined (``Иван`` in ``Ивану``); in one pass over the words of ``text``."""
    by_first: dict[str, list[list[str]]] = {}
    for name in dict.fromkeys(names):
        if name:
            parts = name.split()
            by_first.setdefault(parts[0], []).append(parts)
    counts: Counter[str] = Counter()
    if not by_first:
        return counts
    words = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]
    for k, (word, _, _) in enumerate(words):
        forms = [word]
        if (cut := max(word.rfind("'"), word.rfind("’"))) > 0:  # qu'Émile: Émile
            forms.append(word[cut + 1 :])
        if language == "ru" and (ending := _RU_ENDING.search(word)) and ending.start() >= 2:
            forms.append(word[: ending.start()])
        for form in forms:
            for parts in by_first.get(form, ()):
                if len(parts) == 1:
                    counts[form] += 1
                elif _follows(text, words, k, parts):
                    counts[" ".join(parts)] += 1
    return counts


def _follows(text: str, words: list[tuple[str, int, int]], k: int, parts: list[str]) -> bool:
    """Words ``k``… of ``text`` are ``parts``, with only spaces between them."""
    if k + len(parts) > len(words):
        return False
    for j, part in enumerate(parts[1:], 1):
        word, start, _ = words[k + j]
        if word != part or text[words[k + j - 1][2] : start].strip():
            return False
    return True


def whole_word_at(text: str, key: str, positions: list[int], language: str) -> list[int]:
    """The ``positions`` of ``key`` in ``text`` where it is a whole word (in Russian, a whole word
    or the key with a case ending)."""
    out = []
    for i in positions:
        if i > 0 and (text[i - 1].isalnum() or text[i - 1] in "-_"):
            continue
        j = i + len(key)
        k = j
        while k < len(text) and k - j <= 3 and (text[k].isalnum() or text[k] in "-_"):
            k += 1
        rest = text[j:k]
        if not rest or (language == "ru" and _RU_ENDING.fullmatch(rest) is not None):
            out.append(i)
    return out


def _stem_ru(word: str) -> str:
    for ending in _RU_ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    return word


def _fold_ru(found: Counter[str], said: Mapping[str, int]) -> tuple[Counter[str], dict[str, set[str]]]:
    """The declined forms of a one-word Russian name as one name (module docstring), and each
    name's forms."""
    groups: dict[str, list[str]] = {}
    for name in found:
        key = _stem_ru(name) if " " not in name and name[:1].isupper() else name
        groups.setdefault(key, []).append(name)
    out: Counter[str] = Counter()
    forms: dict[str, set[str]] = {}
    for names in groups.values():
        best = max(names, key=lambda f: (said.get(f, 0) > 0, not f.endswith(_RU_OBLIQUE), found[f], -len(f)))
        out[best] = sum(found[f] for f in names)
        forms[best] = set(names)
    return out, forms


def declined(name: str) -> list[str]:
    """A Russian name's declined forms that do not start with the name itself (``Маша`` →
    ``Маши``, ``Машу`` …); a name ending otherwise is found by its own letters."""
    if " " in name or len(name) < 3 or name[-1] not in "аяАЯ":
        return []
    return [name[:-1] + e for e in _RU_DECLINED]


def bare(name: str, language: str) -> str | None:
    """A titled name without its title (``Herr Weber`` → ``Weber``), else ``None``."""
    m = re.fullmatch(rf"{TITLES[language]}\s+({CAP}(?:\s+{CAP})?)", name)
    return m.group(1) if m else None


def name_gender(name: str, language: str) -> str | None:
    """The gender a name's own words give: a role's article or noun, a title (``Madame``)."""
    words = name.split()
    first = words[0]
    if first in ("la", "die"):
        return "f"
    if first in ("le", "el", "der"):
        return "m"
    if language == "ru" and name in ROLE_NOUNS["ru"].split("|"):
        return "f" if name in FEMALE_ROLES_RU else "m"
    if len(words) > 1 and re.fullmatch(TITLES[language], first):
        return "f" if first in FEMALE_TITLES else "m"
    return None


# ---- pronouns as subjects (``evidence.py``): for each language, on the text in lower case ----

_IMPERSONAL_FR = (
    r"y\b|faut\b|fallait\b|faudra|pleu|neige|sembl|était\s+(?:une|temps|tard|midi|minuit|trop)|"
    r"est\s+(?:temps|tard|midi|minuit|vrai)|s['’]agi|rest|suffi|vaut|valait|import"
)
_CLAUSE = r"(?:^|[.!?…;]\s*[»\"”]?\s*|[—–―]\s*|,\s+(?:{})\s+)"


@cache
def subject_pronouns(language: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The male and the female subject pronoun as a clause's subject, in lower-cased text (an object
    pronoun often stands for someone else; French impersonal ``il`` is nobody)."""
    verbs = VERBS[language]
    if language == "fr":
        start = _CLAUSE.format("et|mais|puis|alors")
        return (
            re.compile(rf"{start}il\b(?!\s+(?:{_IMPERSONAL_FR}))|-(?:t-)?il\b"),
            re.compile(rf"{start}elle\b|-(?:t-)?elle\b"),
        )
    if language == "es":
        start = _CLAUSE.format("y|pero|entonces|luego")
        return (
            re.compile(rf"{start}él\b|\b(?:{verbs})\s+él\b"),
            re.compile(rf"{start}ella\b|\b(?:{verbs})\s+ella\b"),
        )
    if language == "ru":  # Russian subject pronouns differ from the object ones; past verbs agree
        return (
            re.compile(r"(?<![\w\-])он(?![\w\-])|^\s+[а-яё]+(?:л|лся)(?![\w\-])"),
            re.compile(r"(?<![\w\-])она(?![\w\-])|^\s+[а-яё]+(?:ла|лась)(?![\w\-])"),
        )
    start = r"(?:^|[.!?…;:]\s*[»«\"“”„]?\s*|,\s+(?:und|aber|doch|dann)\s+)"
    # German ``sie`` is also "they" (its verb plural: -en) and the polite "you" (in speech).
    return (
        re.compile(rf"{start}er\b|\b(?:{verbs})\s+er\b"),
        re.compile(rf"{start}sie\s+(?!sind\b|[a-zäöüß]*en\b)[a-zäöüß]+|\b(?:{verbs})\s+sie\b"),
    )


@cache
def pronoun_beat(language: str) -> re.Pattern[str]:
    """A sentence whose subject is a pronoun, in the text as written (group ``a``), its verb not a
    speech verb."""
    verbs = VERBS[language]
    start = r"(?:^|[.!?…]\s+|[»\"”“]\s*|[—–―]\s*)"
    if language == "fr":
        subject = rf"(?P<a>Il(?!\s+(?:{_IMPERSONAL_FR}))|Elle)"
        return re.compile(rf"{start}{subject}\s+(?!(?:{verbs})\b)[{LOWER}'’]+")
    if language == "es":
        return re.compile(rf"{start}(?P<a>Él|Ella)\s+(?!(?:{verbs})\b)[{LOWER}]+")
    if language == "ru":
        return re.compile(rf"{start}(?P<a>Он|Она)\s+(?!(?:{verbs})(?![\w\-]))[{LOWER}]+")
    return re.compile(rf"{start}(?P<a>Er|Sie(?=\s+(?!sind\b|[a-zäöüß]*en\b)))\s+(?!(?:{verbs})\b)[a-zäöüß]+")


def narration_goes_on(language: str) -> str:
    """The words that begin narration after a comma-closed incise (``dit-il, en souriant``)."""
    return _NARRATION_ON[language]
