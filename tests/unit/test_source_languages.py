"""The source map in Korean, French, Spanish, Russian and German (``mangaka.source``: ``quotes.py``,
``dashes.py``, ``korean.py``, ``european.py``): quotes found exactly on hand-written chapters, the
dash dialogue of the European languages and its incises, speakers by attribution and by pronoun,
the cast without articles or pronouns, generated chapters that keep the map's invariants, and
linear time on one-line chapters of 60,000 characters.

Every chapter here is checked with the invariants of ``tests/unit/source_checks.py`` (units, lines,
names), and with the quotes' own, as ``check_quotes`` states them, but for the European languages a
span is the spoken words trimmed (after a dash, inside ``« … »``): the mark next to it is not asserted.
"""

from __future__ import annotations

import bisect
import dataclasses
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mangaka.errors import InputError
from mangaka.source import QUOTE_MARKS, SourceMap, find_quote_spans, find_quotes, source_map
from mangaka.source.evidence import pronoun_attribution
from tests.growth import cpu_seconds_per_call
from tests.unit.source_checks import check_lines, check_names, check_units, lines_of, squeeze

EUROPEAN = ("fr", "es", "ru", "de")
NEW = ("ko", *EUROPEAN)
MARK_CHARS = {lang: {c for g in QUOTE_MARKS[lang] for m in g for c in (m.opener, m.closer)} for lang in NEW}

# Small chapters (time is asserted as a ratio of CPU times); nothing written into the checkout.
BOUNDED = settings(
    deadline=None, database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)


def check(text: str, lang: str) -> SourceMap:
    """``source_checks.check_map`` for these languages: the same invariants, a European span trimmed
    rather than next to its mark, balloons for the quotes that are speech (``kinds.py``) only."""
    sm = source_map(text, lang)
    assert sm.text == text and sm.language == lang
    check_units(sm)
    spoken = tuple(q for q in sm.quotes if getattr(q, "kind", "speech") == "speech")
    check_lines(dataclasses.replace(sm, quotes=spoken))
    check_names(sm)
    starts = [u.start for u in sm.units]
    assert [(q.start, q.end) for q in sm.quotes] == find_quote_spans(text, lang)
    assert [q.number for q in sm.quotes] == list(range(1, len(sm.quotes) + 1))
    for q in sm.quotes:
        assert q.text == text[q.start : q.end] and q.text.strip()
        if lang in EUROPEAN:
            assert q.text == q.text.strip()
        else:
            assert text[q.start - 1] in MARK_CHARS[lang] and text[q.end] in MARK_CHARS[lang]
        unit = sm.units[q.unit - 1]
        assert unit.start <= q.start and q.end <= unit.end
        assert q.unit == bisect.bisect_right(starts, q.start)
        k = bisect.bisect_right(starts, q.start - 1)
        assert k == len(starts) or starts[k] > q.end, f"unit {k + 1} starts inside quote {q.number}"
    for q, r in pairwise(sm.quotes):
        assert q.end < r.start
    return sm


def quotes(text: str, lang: str) -> list[str]:
    return [q.text for q in check(text, lang).quotes]


def said(text: str, lang: str) -> list[tuple[str, str | None, str | None]]:
    return [(q.text, q.hint, q.evidence) for q in check(text, lang).quotes]


def cast(text: str, lang: str) -> list[str]:
    return [c.name for c in check(text, lang).names]


# ------------------------------------------------------------------ chapters, one a language
A = "attribution"

FRENCH = """\
Ce soir-là, Bertrand poussa la porte de l'auberge. Une femme essuyait les verres derrière le \
comptoir. Elle leva les yeux vers Bertrand sans sourire.

— Vous êtes en retard, dit la vieille femme.

— Je sais, répondit Bertrand.

Elle posa un verre devant lui. Mais Bertrand ne but pas. Il regardait la fenêtre, où la pluie \
tombait sur la place.

— Tu restes ce soir ? demanda Claire depuis l'escalier.

« Demain », murmura Bertrand. Claire descendit et Bertrand se leva.
"""

SPANISH = """\
Ana abrió la ventana de la cocina. Pedro dormía en el sillón y Ana no quiso despertarlo.

—¿Quién es? —preguntó Ana—. Soy yo.

—Nadie —dijo Pedro sin abrir los ojos.

La anciana entró sin llamar. Traía una cesta de naranjas para Ana.

—Buenas noches —respondió la anciana—. Hace frío fuera.

«Siéntese», gritó Pedro desde el sillón.
"""

RUSSIAN = """\
Иван постучал в дверь. Долго никто не отвечал, и Иван постучал ещё раз.

— Кто там? — спросила Маша.

— Это я, — ответил Иван. — Открывай.

Старик сидел у печки. Маша посмотрела на него, потом на Ивана.

«Пусть войдёт», — сказал старик.
"""

GERMAN = """\
Anna öffnete die Tür. Der Alte saß am Fenster und rauchte seine Pfeife. Die Katze schlief auf \
dem Tisch.

„Wer ist da?“, fragte Anna.

„Nur ich“, antwortete der Alte. „Komm herein.“

Anna setzte sich zu ihm. Später kam Herr Weber, und Anna stand wieder auf.

»Guten Abend«, sagte Herr Weber.
"""

KOREAN = """\
지수가 문을 열었다. 민호는 창가에 서 있었다.

"누구세요?" 지수가 물었다.

"나야." 민호가 대답했다.

"지수야, 들어와." 하고 민호는 웃으며 말했다.

지수는 천천히 안으로 들어갔다. 엄마가 부엌에서 나왔다.

“밥 먹었니?” 라고 엄마가 물었다.
"""


# Each chapter's quotes with their speakers and evidence, and its cast, strongest first. German:
# every noun is capitalised, and Tür, Fenster, Pfeife, Katze, Tisch are no one.
READINGS = {
    "fr": (FRENCH, [("Vous êtes en retard,", "la vieille femme", A), ("Je sais,", "Bertrand", A),
                    ("Tu restes ce soir ?", "Claire", A), ("Demain", "Bertrand", A)],
           ["Bertrand", "Claire", "la vieille femme"]),
    "es": (SPANISH, [("¿Quién es?", "Ana", A), ("Soy yo.", "Ana", A), ("Nadie", "Pedro", A),
                     ("Buenas noches", "la anciana", A), ("Hace frío fuera.", "la anciana", A),
                     ("Siéntese", "Pedro", A)],
           ["Ana", "Pedro", "la anciana"]),
    "ru": (RUSSIAN, [("Кто там?", "Маша", A), ("Это я,", "Иван", A), ("Открывай.", "Иван", A),
                     ("Пусть войдёт", "старик", A)],
           ["Иван", "Маша", "старик"]),
    "de": (GERMAN, [("Wer ist da?", "Anna", A), ("Nur ich", "der Alte", A),
                    ("Komm herein.", "der Alte", "continuation"), ("Guten Abend", "Herr Weber", A)],
           ["Anna", "Herr Weber", "der Alte"]),
    "ko": (KOREAN, [("누구세요?", "지수", A), ("나야.", "민호", A), ("지수야, 들어와.", "민호", A),
                    ("밥 먹었니?", "엄마", A)],
           ["민호", "지수", "엄마"]),
}  # fmt: skip


@pytest.mark.parametrize("lang", NEW)
def test_quotes_speakers_and_cast_of_a_chapter(lang):
    text, speakers, names = READINGS[lang]
    assert said(text, lang) == speakers
    assert cast(text, lang) == names


def test_korean_marks_and_their_fallback():
    assert quotes('"가자." 지수가 말했다. ‘이상하다’고 생각했다.', "ko") == ["가자."]
    # No double quote anywhere: the single quotes and corner brackets are the quotes.
    assert quotes("‘이상하네.’ 지수는 생각했다. 『그래.』 「응.」", "ko") == ["이상하네.", "그래.", "응."]
    assert quotes("'괜찮아.' 민호가 말했다. It's 'fine'.", "ko") == ["괜찮아.", "fine"]


def test_korean_attributions_after_the_quotative_ending():
    text = (
        '"가자"라고 민호가 대답했다. "어디로?" 하고 지수가 물었다. "글쎄." 민호는 작은 목소리로 중얼거렸다.'
    )
    expected = [("가자", "민호"), ("어디로?", "지수"), ("글쎄.", "민호")]
    assert [(q, who) for q, who, _ in said(text, "ko")] == expected


def test_korean_vocative_names_someone_spoken_to():
    text = '민호가 손을 흔들었다.\n\n"서연아, 이리 와!" 민호가 외쳤다.\n\n서연은 고개를 들었다.'
    assert "서연" in cast(text, "ko")
    # Sentence endings that look like vocatives are no names.
    text = '"아니야, 괜찮아." 민호가 말했다. "아니야." 민호가 말했다. "괜찮아?" 민호가 물었다.'
    assert cast(text, "ko") == ["민호"]


@pytest.mark.parametrize(
    ("lang", "text", "who"),
    [
        ("fr", "« Viens », murmura Jean.", "Jean"),
        ("fr", "« Au secours ! » s'écria Paul.", "Paul"),
        ("fr", "— Assieds-toi, dit la vieille femme.", "la vieille femme"),
        ("fr", "— Qui est là ? demanda le vieil homme.", "le vieil homme"),
        ("fr", "Marie dit : « Entrez. »", "Marie"),
        ("es", "—¡Corre! —gritó Pedro.", "Pedro"),
        ("es", "—Pase usted —respondió la anciana.", "la anciana"),
        ("es", "«Ven», dijo el viejo.", "el viejo"),
        ("ru", "«Иди сюда», — сказала Маша.", "Маша"),
        ("ru", "— Стой! — крикнула старуха.", "старуха"),
        ("ru", "Иван сказал: «Пора».", "Иван"),
        ("de", "„Wohin?“, fragte Anna.", "Anna"),
        ("de", "„Niemand“, antwortete der Alte.", "der Alte"),
        ("de", "Anna sagte: „Komm.“", "Anna"),
        ("ko", '"여기야." 지수가 속삭였다.', "지수"),
        ("ko", '"정말?" 하고 민호는 다시 물었다.', "민호"),
    ],
)
def test_attributions_name_the_speaker(lang, text, who):
    (quote,) = check(text, lang).quotes
    assert (quote.hint, quote.attributed, quote.evidence) == (who, True, "attribution")


@pytest.mark.parametrize(
    ("lang", "text", "gender"),
    [
        ("fr", "— Tu viens ? demanda-t-il.", "m"),
        ("fr", "« Non », répondit-elle.", "f"),
        ("es", "—No lo sé —dijo él.", "m"),
        ("es", "—Ya voy —contestó ella.", "f"),
        ("ru", "— Кто там? — спросил он.", "m"),
        ("ru", "«Нет», — ответила она.", "f"),
        ("de", "„Ja“, sagte er.", "m"),
        ("de", "„Nein“, sagte sie.", "f"),
        ("ko", '"가자." 그가 말했다.', "m"),
        ("ko", '"싫어." 그녀가 대답했다.', "f"),
    ],
)
def test_pronoun_attributions_name_nobody_and_give_the_gender(lang, text, gender):
    sm = check(text, lang)
    (quote,) = sm.quotes
    (paragraph,) = sm.paragraphs
    assert quote.hint is None and not quote.attributed and sm.names == ()
    assert (
        pronoun_attribution(text, (quote.start, quote.end), (paragraph.start, paragraph.end), lang) == gender
    )


# ------------------------------------------------------------------ dash dialogue


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        ("fr", "— Tu viens ? demanda-t-il.", ["Tu viens ?"]),
        ("es", "—¿Quién es? —preguntó Ana—. Soy yo.", ["¿Quién es?", "Soy yo."]),
        ("ru", "— Кто там? — спросил он.", ["Кто там?"]),
        ("de", "– Wer ist da? fragte er.", ["Wer ist da?"]),
        # A dash line without incise: all of it.
        ("fr", "— Je reste ici ce soir.", ["Je reste ici ce soir."]),
        ("ru", "— Да.", ["Да."]),
        # The horizontal bar and the en dash open lines too; a no-break space after the dash.
        ("es", "―Hola ―dijo Ana.", ["Hola"]),
        ("fr", "–\u00a0Bonsoir, fit Paul.", ["Bonsoir,"]),
        # French: a comma after the incise resumes the speech, unless narration follows.
        ("fr", "— Je ne sais pas, dit-elle, si nous viendrons.", ["Je ne sais pas,", "si nous viendrons."]),
        ("fr", "— Non, dit-il, en haussant les épaules.", ["Non,"]),
        # Russian: a dash closes the incise and the speech resumes after it.
        ("ru", "— Да, — сказал он, — конечно.", ["Да,", "конечно."]),
        ("ru", "— Кто там? — спросил он. — Открывай!", ["Кто там?", "Открывай!"]),
        # Spanish: an incise without a subject; narration that a dash does not close.
        ("es", "—No sé —dijo—. ¿Y tú?", ["No sé", "¿Y tú?"]),
        ("es", "—Hola —dijo Ana, y se fue.", ["Hola"]),
        # After an incise closed by a full stop the line is narration, until a dash.
        ("fr", "— Tu viens ? demanda-t-il. Il faisait froid.", ["Tu viens ?"]),
        # A line of dashes is a separator, not a quote.
        ("fr", "———\n\n— — —\n\n— Oui.", ["Oui."]),
    ],
)
def test_dash_lines_and_their_incises(lang, text, expected):
    assert quotes(text, lang) == expected


def test_a_dash_paragraph_goes_on_over_a_line_break():
    # Lines wrapped inside paragraphs (blank lines between them): an unfinished line goes on.
    text = "— Je ne sais pas si nous\npourrons venir demain, dit Marie.\n\nElle partit.\n\n— Bien."
    assert quotes(text, "fr") == ["Je ne sais pas si nous\npourrons venir demain,", "Bien."]
    sm = source_map(text, "fr")
    assert sm.lines[0].text == "Je ne sais pas si nous pourrons venir demain,"
    # A finished line does not take the narration after it; nor does a line before another dash.
    text = "— Non.\nMarie haussa les épaules.\n— Pourquoi\n— Parce que.\n\nFin."
    assert quotes(text, "fr") == ["Non.", "Pourquoi", "Parce que."]


def test_without_blank_lines_each_line_is_its_own():
    text = "— Tu viens\nIl ne répondit pas.\n— Non"
    assert quotes(text, "fr") == ["Tu viens", "Non"]
    assert len(source_map(text, "fr").paragraphs) == 3


def test_guillemets_nested_in_a_dash_line_stay_inside_it():
    text = "— Il a dit « non — jamais », tu sais, murmura Paul.\n\n— Ah."
    assert quotes(text, "fr") == ["Il a dit « non — jamais », tu sais,", "Ah."]
    assert said(text, "fr")[0][1] == "Paul"


def test_guillemets_and_dashes_in_one_chapter():
    text = (
        "Il lut « Fermé » sur la porte.\n\n— On revient demain, dit Claire.\n\n"
        "« Bien », fit Paul.\n\n— Et toi ? demanda-t-il."
    )
    assert quotes(text, "fr") == ["Fermé", "On revient demain,", "Bien", "Et toi ?"]
    # French spaces inside guillemets (no-break or not) are not part of the span.
    assert quotes("«\u00a0Bonjour\u202f», dit-il. « Bonsoir », fit-elle.", "fr") == ["Bonjour", "Bonsoir"]


def test_an_exchange_in_one_pair_of_guillemets():
    text = "« Tu viens ? demanda-t-il.\n— Non, répondit Marie.\n— Pourquoi ?\n— Parce que. »\n\nIl sortit."
    assert quotes(text, "fr") == ["Tu viens ?", "Non,", "Pourquoi ?", "Parce que."]
    assert said(text, "fr")[1] == ("Non,", "Marie", "attribution")


def test_unbalanced_guillemets_lose_only_their_paragraph():
    text = (
        "« Bonjour, dit-il.\n\n— Salut, répondit Marie.\n\nElle sortit. « Adieu », dit-elle.\n\n"
        "— Il a dit « non.\n\n— Ah bon ? »\n\n« Enfin », soupira Paul."
    )
    assert quotes(text, "fr") == ["Salut,", "Adieu", "Il a dit « non.", "Ah bon ? »", "Enfin"]
    # A closing mark alone, and an opening one at the very end.
    assert quotes("Il » partit.\n\n— Oui.\n\n«", "fr") == ["Oui."]


def test_marks_of_each_european_language():
    assert quotes('„Komm“, sagte sie. »Jetzt.« "Gut."', "de") == ["Komm", "Jetzt.", "Gut."]
    assert quotes("«Кто там?» — спросил он. „Я“.", "ru") == ["Кто там?", "Я"]
    assert quotes("“Espera —dijo ella—, no te vayas.”", "es") == ["Espera", "no te vayas."]
    # The fallback marks only where the first group and the dashes find nothing.
    assert quotes("Er sagte ‚nein‘ und ging. ›Gut.‹", "de") == ["nein", "Gut."]
    assert quotes("— Oui.\n\nIl dit ‹ non ›.", "fr") == ["Oui."]
    assert quotes('Он сказал “да” и "нет".', "ru") == ["да", "нет"]


def test_line_endings_do_not_change_dash_dialogue():
    text = "— Tu viens ? demanda-t-il.\r\n\r\n— Je ne sais\r\npas, dit-elle, si je peux.\r\n\r\n« Fin »."
    a, b = check(text, "fr"), check(lines_of(text), "fr")
    assert [lines_of(q.text) for q in a.quotes] == [q.text for q in b.quotes]
    assert [q.hint for q in a.quotes] == [q.hint for q in b.quotes]
    assert [q.text for q in b.quotes] == ["Tu viens ?", "Je ne sais\npas,", "si je peux.", "Fin"]


def test_an_unknown_language_is_refused():
    with pytest.raises(InputError, match="no quote marks"):
        find_quotes("text", "xx")


# ------------------------------------------------------------------ the cast


def test_french_cast_has_no_article_or_pronoun():
    # The report: a French chapter's cast was "Une", "Bertrand", "Elle".
    text = (
        "— Une tasse de thé ? proposa Bertrand.\n\nElle hocha la tête. « Elle est chaude », dit-il. "
        "Une voiture passa dans la rue. Elle la suivit des yeux, puis Bertrand se leva.\n\n"
        "— Une autre ? Elle attendait.\n\nMais Elle ne répondit pas. Une heure passa, et Une autre."
    )
    assert cast(text, "fr") == ["Bertrand"]


@pytest.mark.parametrize(
    ("lang", "text", "expected"),
    [
        ("es", "Entonces Él miró a Lucía. Pero Ella no dijo nada, y Lucía sonrió. El perro y Lucía salieron.",
         ["Lucía"]),
        ("ru", "Потом Он увидел Олега. Но Она молчала, и Олег ушёл. Когда Олег вернулся, Она спала.",
         ["Олег"]),
        ("fr", "Puis Il vit qu'Émile dormait. Elle attendit, et Émile se leva. Le Chat.", ["Émile"]),
        ("de", "Dann sah Er Paul an. Aber Sie schwieg, und Paul ging. Als Paul kam, Sie schlief. Die Tür.",
         ["Paul"]),
    ],
)  # fmt: skip
def test_capitalised_function_words_are_no_names(lang, text, expected):
    assert cast(text, lang) == expected


def test_german_names_need_more_than_a_capital():
    # Nouns after an article are never names; a name used three times inside sentences is.
    text = (
        "Die Stadt schlief. In der Stadt war es still, und die Stadt lag im Nebel. Dann kam Lena. "
        "Am Brunnen wartete Lena, und später sah man Lena am Fenster. Ein Hund bellte, der Hund lief."
    )
    assert cast(text, "de") == ["Lena"]


def test_spanish_names_are_whole_words():
    # "Ana" is in "mañana", "ventana", "semana": no mention of Ana, no beat of hers there.
    text = "—Hola —dijo Ana.\n\nLa mañana entró por la ventana. Toda la semana llovió.\n\n—Sí."
    sm = check(text, "es")
    assert [(c.name, c.mentions) for c in sm.names] == [("Ana", 1)]
    assert sm.quotes[1].hint is None


def test_russian_declined_names_are_one_name():
    text = (
        "Вечером к Маше пришёл Олег. Олег принёс Маше цветы, и Маша улыбнулась. "
        "Потом Олег посмотрел на Машу и сказал, что уходит."
    )
    names = {c.name: c.mentions for c in check(text, "ru").names}
    assert names.get("Олег") == 3 and "Маша" in names and not {"Маше", "Машу"} & set(names)


# ------------------------------------------------------------------ pronouns

# Two uses of the person, each followed by the pronoun: its gender; then a line with that pronoun.
PRONOUN_CHAPTERS = {
    "fr": ("Paul", "Ce soir-là, Paul entra dans la salle. Il posa son sac.\n\nPuis Paul attendit. "
           "Il regarda la porte.\n\n— Il n'y a personne ? demanda-t-il."),
    "es": ("Lucía", "Aquella noche Lucía volvió a casa. Ella cerró la puerta.\n\nLuego Lucía se sentó. "
           "Ella suspiró.\n\n—Estoy cansada —dijo ella."),
    "ru": ("Иван", "Поздно Иван вернулся домой. Он снял пальто.\n\nПотом Иван сел. Он молчал.\n\n"
           "— Я устал, — сказал он."),
    "de": ("Jonas", "Am Abend kam Jonas nach Hause. Er zog den Mantel aus.\n\nDann setzte Jonas sich. "
           "Er schwieg lange. Jonas war müde.\n\n„Ich bin müde“, sagte er."),
    "ko": ("지수", "지수가 웃었다. 그녀는 창문을 열었다.\n\n지수가 돌아섰다. 그녀는 한숨을 쉬었다.\n\n"
           '"이제 가자." 그녀가 말했다.'),
}  # fmt: skip


@pytest.mark.parametrize("lang", NEW)
def test_pronoun_attribution_finds_the_person(lang):
    speaker, text = PRONOUN_CHAPTERS[lang]
    assert said(text, lang)[-1][1:] == (speaker, "pronoun")


def test_french_impersonal_il_is_no_one():
    text = (
        "Ce soir-là, Marie entra. Elle posa son sac.\n\n"
        "Puis Marie attendit. Il pleuvait. Elle regarda la porte.\n\n— Personne ? demanda-t-elle."
    )
    assert said(text, "fr")[-1][1:] == ("Marie", "pronoun")


# ------------------------------------------------------------------ generated chapters

NARRATION = {
    "fr": ["Il pleuvait.", "Marie ouvrit la porte.", "Paul se tut longtemps.", "La lampe vacilla."],
    "es": ["Llovía.", "Ana abrió la puerta.", "Pedro calló.", "La lámpara tembló."],
    "ru": ["Шёл дождь.", "Маша открыла дверь.", "Иван молчал.", "Лампа мигнула."],
    "de": ["Es regnete.", "Anna öffnete die Tür.", "Paul schwieg.", "Die Lampe flackerte."],
    "ko": ["비가 내렸다.", "지수가 문을 열었다.", "민호는 말이 없었다.", "등불이 흔들렸다."],
}
SPOKEN = {
    "fr": ["Tu viens ?", "Non, merci.", "Je ne sais pas", "Il a dit « non » hier.", "Attends…"],
    "es": ["¿Quién es?", "No lo sé.", "Ven aquí", "Dijo «no» ayer.", "Espera…"],
    "ru": ["Кто там?", "Не знаю.", "Иди сюда", "Он сказал «нет».", "Подожди…"],
    "de": ["Wer ist da?", "Ich weiß nicht.", "Komm her", "Er sagte »nein«.", "Warte…"],
    "ko": ["누구세요?", "몰라.", "이리 와", "그가 '아니'라고 했어.", "잠깐만…"],
}
INCISES = {
    "fr": [" demanda-t-il.", ", dit Marie.", " — fit Paul — ", ", répondit-elle, ", ""],
    "es": [" —preguntó Ana—. ", " —dijo él.", " —dijo Pedro—, ", ""],
    "ru": [" — спросил он.", ", — сказала Маша, — ", " — ответил Иван. — ", ""],
    "de": [" fragte er.", ", sagte Anna.", " – rief Paul – ", ""],
    "ko": [" 지수가 말했다.", "라고 민호가 대답했다.", " 하고 그녀가 물었다.", ""],
}
DASHES = ["— ", "—", "– ", "―", "  — ", "—\u00a0"]
BREAKS = ["\n", "\r\n", "\r", "\n\n", "\r\n\r\n", "\n \n", "\n\n\n"]


@st.composite
def chapter(draw, lang: str) -> str:
    """A chapter of the language: narration, dash lines (European), quotes in every mark of the
    language with attributions, stray marks, line breaks and blank lines."""
    marks = [m for group in QUOTE_MARKS[lang] for m in group]
    space = "" if lang == "ko" else " "
    pieces: list[str] = []
    for p in range(draw(st.integers(1, 8))):
        if p:
            pieces.append(draw(st.sampled_from(BREAKS)))
        for s in range(draw(st.integers(1, 4))):
            kind = draw(st.integers(0, 9))
            if s and kind != 3:
                pieces.append(space)
            if kind <= 2:
                pieces.append(draw(st.sampled_from(NARRATION[lang])))
            elif kind <= 4 and lang != "ko":  # a dash line (a stray dash, when not at a line start)
                pieces.append(draw(st.sampled_from(DASHES)) + draw(st.sampled_from(SPOKEN[lang])))
                pieces.append(draw(st.sampled_from(INCISES[lang])))
            elif kind <= 7:
                m = draw(st.sampled_from(marks))
                pieces.append(m.opener + draw(st.sampled_from(SPOKEN[lang])) + m.closer)
                pieces.append(draw(st.sampled_from(INCISES[lang])))
            elif kind == 8:
                pieces.append(draw(st.sampled_from(sorted(MARK_CHARS[lang] | {"—", "–"}))))
            else:
                pieces.append(draw(st.sampled_from(["\n", "\r\n", "\u00a0", "\u202f"])))
    return "".join(pieces)


LANGUAGE_CHAPTERS = st.sampled_from(NEW).flatmap(lambda lang: st.tuples(st.just(lang), chapter(lang)))


@settings(BOUNDED, max_examples=200)
@given(LANGUAGE_CHAPTERS)
@example(("fr", "— \n— x"))
@example(("es", "—a —dijo Ana—"))
@example(("fr", "« — Oui. »\n— « Non »"))
@example(("ru", "«\n— »"))
def test_any_chapter_gives_a_consistent_map(case):
    lang, text = case
    check(text, lang)


@settings(BOUNDED, max_examples=100)
@given(LANGUAGE_CHAPTERS)
@example(("fr", "— Oui, dit Marie. Il dort.\n— Non, dit-il. Marie va.\n\r— Oui ? dit-il."))  # LF CR
def test_line_endings_do_not_change_the_map(case):
    lang, text = case
    a, b = source_map(text, lang), source_map(lines_of(text), lang)
    assert len(a.paragraphs) == len(b.paragraphs)
    assert [lines_of(q.text) for q in a.quotes] == [q.text for q in b.quotes]
    assert [q.hint for q in a.quotes] == [q.hint for q in b.quotes]
    assert [squeeze(line.text) for line in a.lines] == [squeeze(line.text) for line in b.lines]


@settings(BOUNDED, max_examples=100)
@given(st.sampled_from(EUROPEAN), st.lists(st.integers(0, 3), min_size=1, max_size=12))
def test_well_formed_dash_dialogue_gives_back_its_lines(lang, choices):
    """Dash lines (with an incise closed by a full stop, or none) and narration paragraphs: every
    spoken line found, exactly, in order."""
    spoken = [s for s in SPOKEN[lang] if "«" not in s and "»" not in s]
    incise = {"fr": " dit Marie.", "es": " —dijo Ana.", "ru": " — сказала Маша.", "de": " sagte Anna."}[lang]
    paragraphs, expected = [], []
    for k, choice in enumerate(choices):
        line = spoken[(k + choice) % len(spoken)]
        if choice == 0:
            paragraphs.append(NARRATION[lang][k % len(NARRATION[lang])])
            continue
        said_line = line
        if choice >= 2 and lang in ("fr", "de") and line[-1] not in "?!…":  # an incise without a dash
            said_line = line.rstrip(".") + ","  # follows punctuation
        paragraphs.append("— " + said_line + (incise if choice >= 2 else ""))
        expected.append(said_line)
    assert quotes("\n\n".join(paragraphs), lang) == expected


# ------------------------------------------------------------------ linear time

NAMES_LATIN = [a + b + c + d for a in "BDFGKLMNPRSTVZ" for b in "aeiou" for c in "dlmnrstv" for d in "aeo"]
NAMES_RU = [a + b + c + d for a in "БВГДКЛМНПРСТ" for b in "аеоу" for c in "длмнрст" for d in "аео"]
NAMES_KO = [a + b for a in "지서하도유수예소다미" for b in "호수우아리기래비오주"]


def _repeat(unit: str, n: int) -> str:
    return unit * (n // len(unit) + 1)


# (language, the chapter at n characters): every chapter on ONE line but the wrapped one, n = 15,000
# and 60,000.
SHAPES = {
    "French dash lines with inverted incises":
        ("fr", lambda n: _repeat("— Tu viens ? demanda-t-il. — Non, répondit Marie, je reste. ", n)),
    "Spanish incises closed by a dash": ("es", lambda n: _repeat("—¿Quién es? —preguntó Ana—. Soy yo. ", n)),
    "Russian dash lines": ("ru", lambda n: _repeat("— Кто там? — спросил он. — Я, — сказала Маша. ", n)),
    "incises opened and never closed": ("es", lambda n: _repeat("—Hola —dijo ", n)),
    "nested guillemets": ("fr", lambda n: _repeat("— Il a dit « non — jamais », tu sais. ", n)),
    "guillemets that open and never close": ("fr", lambda n: _repeat("« Bonjour — dit-il. ", n)),
    "an exchange in guillemets, unclosed": ("fr", lambda n: "« " + _repeat("Oui, dit-il. — Non. ", n)),
    "French attributions, every one a new name":
        ("fr", lambda n: " ".join(f"« Oui », dit {c}. Puis {c} partit avec {c}." for c in NAMES_LATIN * 2)),
    "Russian attributions, every one a new name, declined":
        ("ru", lambda n: " ".join(f"«Да», — сказал {c}. Потом {c}у увидел {c}." for c in NAMES_RU * 2)),
    "German attributions and nouns, every one a new name":
        ("de", lambda n: " ".join(f"„Ja“, sagte {c}. Die {c}e sah {c} und {c}." for c in NAMES_LATIN * 2)),
    # A dash line whose lines never end a sentence runs on to its paragraph's end: each line read once.
    "wrapped lines of one dash paragraph": ("fr", lambda n: "Début.\n\n— " + _repeat("et puis encore\n", n)),
    "Korean attributions and vocatives":
        ("ko", lambda n: _repeat("".join(f'"{c}야, 가자." {c}가 말했다. {c}는 갔다.' for c in NAMES_KO), n)),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(SHAPES))
def test_source_map_time_is_linear_in_the_chapter(shape):
    lang, make = SHAPES[shape]
    n = 15_000
    chapters = {k: make(k)[:k] for k in (n, 4 * n)}
    assert all(len(c) == k and ("\n" not in c or "wrapped" in shape) for k, c in chapters.items())
    build = source_map.__wrapped__  # not the cache
    small = large = float("inf")
    for _ in range(3):
        small = min(small, cpu_seconds_per_call(lambda: build(chapters[n], lang)))
        large = min(large, cpu_seconds_per_call(lambda: build(chapters[4 * n], lang)))
    # Linear work gives 4x; quadratic 16x.
    assert large < 8 * small + 0.005, f"{small * 1e3:.1f} ms at {n}, {large * 1e3:.1f} ms at {4 * n}"
    assert large < 1.0, f"{large * 1e3:.0f} ms for {4 * n} characters"
    check(chapters[4 * n], lang)
