"""Names the narration introduces as people, used once (``speakers.introduced_en``,
``european.introduced``): a name beside a word for a relation, or an English sentence opening with
a name doing what only a person does; and roles that speak (``сказал почтальон``). Before, such a
name needed two uses, so its beat or its line went to someone else. Nothing here is a name that is
not a person's."""

from __future__ import annotations

import pytest

from mangaka.source import source_map
from tests.unit.source_checks import check_names


def reading(text: str, lang: str) -> tuple[list[str], list[tuple[str | None, bool]]]:
    sm = source_map(text, lang)
    check_names(sm)
    return [c.name for c in sm.names], [(q.hint, q.sure) for q in sm.quotes if q.kind == "speech"]


@pytest.mark.parametrize(
    ("lang", "text", "name"),
    [
        ("en", "The shop was quiet. Later her friend Tomas came in with the rain.", "Tomas"),
        ("en", "The shop was quiet. Then Tomas, her younger brother, came in.", "Tomas"),
        ("en", "The door opened. Mara nodded to the stranger.", "Mara"),
        ("en", "The door opened.\n\nMara looked up from the till.", "Mara"),
        ("fr", "La pluie tombait. Plus tard, son vieil ami Paul entra.", "Paul"),
        ("fr", "La pluie tombait. Paul, son frère, entra sans frapper.", "Paul"),
        ("fr", "La pluie tombait. Sa femme, Odile, attendait devant la porte.", "Odile"),
        ("es", "Llovía. Más tarde llegó su amiga Lucía con un paraguas.", "Lucía"),
        ("ru", "Шёл дождь. Вечером пришла соседка Вера.", "Вера"),
        ("ru", "Шёл дождь. Писал Дмитрий, её брат.", "Дмитрий"),
        ("de", "Es regnete. Später kam seine Freundin Lena herein.", "Lena"),
    ],
)  # fmt: skip
def test_a_person_introduced_once_is_a_name(lang, text, name):
    assert name in reading(text, lang)[0]


@pytest.mark.parametrize(
    ("lang", "text"),
    [
        ("en", "The shop was quiet. Everyone nodded. Nobody looked up."),
        ("en", "Hope looked up at us. There was no hope left in the town."),  # a word, in lower case too
        ("en", "The shop was quiet. Later her friend came in with the rain."),
        ("fr", "La pluie tombait. Son ami Il y avait du vent."),
        ("ru", "Шёл дождь. Брат Он не пришёл."),
    ],
)  # fmt: skip
def test_no_name_is_made_of_a_word_that_is_not_a_persons(lang, text):
    names = reading(text, lang)[0]
    assert not {"Everyone", "Nobody", "Hope", "Il", "Он"} & set(names), names


def test_an_introduced_persons_beat_settles_her_line():
    text = (
        "Chapter 1\n\nThe shop was quiet. Later his friend Tomas came in with the rain.\n\n"
        '"Closed?" he asked.\n\nMara looked up from the till. "For you, never."\n\n"Good," said Tomas.\n'
    )
    names, lines = reading(text, "en")
    assert set(names) == {"Tomas", "Mara"}
    assert lines[1:] == [("Mara", True), ("Tomas", True)]


def test_a_russian_chapter_with_a_role_and_two_people_met_once():
    text = (
        "Глава 5. Письмо\n\nАнна открыла дверь и увидела почтальона. Он держал в руках конверт.\n\n"
        "— Вам письмо, — сказал почтальон. — Из Москвы.\n\n— От кого? — спросила Анна.\n\n"
        "Почтальон ушёл. Анна разорвала конверт. Писал Дмитрий, её брат.\n\n"
        "Вечером пришла соседка Вера.\n\n— Что случилось? Ты плачешь?\n\n"
        "— Дима возвращается, — ответила Анна.\n"
    )
    names, lines = reading(text, "ru")
    assert {"Анна", "почтальон", "Вера", "Дмитрий"} <= set(names)
    assert lines == [
        ("почтальон", True), ("почтальон", True), ("Анна", True), ("Вера", False), ("Анна", True),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("lang", "text", "role"),
    [
        ("en", '"A parcel for you," said the postman.', "the postman"),
        ("fr", "— Un colis pour vous, dit le facteur.", "le facteur"),
        ("es", "—Un paquete para usted —dijo el cartero.", "el cartero"),
        ("de", "„Ein Paket für Sie“, sagte der Briefträger.", "der Briefträger"),
        # After an inverted speech verb, any noun after the article is a role, listed or not.
        ("fr", "— Deux baguettes ? dit la boulangère en souriant.", "la boulangère"),
        ("es", "—¿Cuántas barras? —preguntó la panadera con una sonrisa.", "la panadera"),
        ("de", "„Zwei Brötchen?“, fragte die Bäckerin lächelnd.", "die Bäckerin"),
    ],
)  # fmt: skip
def test_a_role_that_speaks_is_the_speaker(lang, text, role):
    names, lines = reading("Intro.\n\n" + text, lang)
    assert role in names and lines == [(role, True)], (names, lines)


def test_an_unlisted_roles_incise_is_cut_from_the_line():
    sm = source_map("Intro.\n\n— Deux baguettes ? dit la boulangère en souriant.\n", "fr")
    assert [q.text for q in sm.quotes] == ["Deux baguettes ?"]


def test_a_japanese_person_introduced_by_name_and_a_thing_that_is_no_one():
    text = (
        "第一話　市場\n\nリリが布を広げて鱗を置いた。鱗は銀色に光っていた。\n\n"
        "「おやおや、偽物だね」\n\nガルドと名乗ったその商人は、鱗へ指を伸ばした。\n\n"
        "「え、偽物……なんですか？」\n\n広場の視線がガルドに集まった。鱗が赤く染まった。\n"
    )
    names = reading(text, "ja")[0]
    assert "ガルド" in names and "鱗" not in names, names


@pytest.mark.parametrize(
    ("before", "speaker"),
    [
        ("リリの肩の上で、使い魔の黒猫ヨルが大きなあくびをしてから言った。", "ヨル"),
        ("リリが不安そうに見上げたとき、ヨルが耳元でささやいた。", "ヨル"),  # the main clause's subject
        ("雨の中、マグダは戸口に立ったまま、リリが来るのを見て言った。", "マグダ"),  # the topic
    ],
)  # fmt: skip
def test_a_japanese_paragraph_closing_with_a_speech_verb_settles_the_next_line(before, speaker):
    opening = "第一話\n\nリリとヨルとマグダは工房にいた。リリは鍋を見ていた。ヨルは眠い。"
    text = f"{opening}\n\n{before}\n\n「よく見て」\n"
    names, lines = reading(text, "ja")
    assert lines == [(speaker, True)], (names, lines)


def test_a_japanese_paragraph_without_a_speech_verb_settles_nothing():
    opening = "第一話\n\nリリとヨルは工房にいた。リリは鍋を見ていた。ヨルは眠い。"
    text = f"{opening}\n\nヨルが大きなあくびをした。\n\n「眠いなあ」\n"
    assert reading(text, "ja")[1] == [("ヨル", False)]
