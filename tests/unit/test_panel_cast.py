"""A grounded panel shows the cast its units' narration names (``named_in``), after the
characters the model chose and its lines' speakers, at most ``MAX_CHARACTERS``."""

from __future__ import annotations

import pytest

from mangaka.screenplay import Character, validate_screenplay
from mangaka.screenplay.grounded import Grounding, assemble_grounded, cast_forms, named_in
from mangaka.screenplay.models import MAX_CHARACTERS
from tests.unit.support import CAST, EN, ZH, grounded_script


def test_a_panel_shows_the_cast_its_units_narration_names_after_the_models_choice_and_speakers():
    grounding = Grounding.of(EN, "en")
    script = grounded_script([1, 2, 3], [1, 2, 3], [])
    for p in script["panels"]:
        p["characters"] = []  # the model chose nobody: the text still puts them there
    script["dialogue"] = [{**d, "speaker": "mei"} for d in script["dialogue"]]
    sp = assemble_grounded(script, CAST, "en", grounding)
    # unit 1 names Mei, then Akira; unit 2 only Mei; unit 3 Akira ("Akira laughed"), then Mei
    assert [p.characters for p in sp.panels] == [["mei", "akira"], ["mei"], ["mei", "akira"]]
    assert validate_screenplay(sp.model_dump(mode="json")) == []
    script["panels"][1]["characters"] = ["akira"]  # the model's choice comes first and stays
    sp = assemble_grounded(script, CAST, "en", grounding)
    assert sp.panels[1].characters == ["akira", "mei"]


def test_a_name_only_a_quote_speaks_of_does_not_put_that_person_in_the_panel():
    text = 'Mei looked at the door.\n\n"Where is Akira?" Mei asked.\n\nAkira came in, soaked.'
    grounding = Grounding.of(text, "en")
    forms = cast_forms(grounding, CAST, "en")
    assert named_in(grounding, 2, 2, forms) == ["mei"]  # "Akira" is inside the quote
    assert named_in(grounding, 3, 3, forms) == ["akira"]
    assert named_in(grounding, 1, 3, forms) == ["mei", "akira"]


@pytest.mark.parametrize(
    ("text", "language", "cast", "expected"),
    [
        # a titled name's bare form; any case for English, whole words only ("Meiko" is not Mei)
        (
            "Hollis did not look up. Meiko waited.",
            "en",
            [("hollis", "Mr. Hollis"), ("mei", "Mei")],
            ["hollis"],
        ),
        ("THE OLD MAN sighed.", "en", [("old_man", "the old man")], ["old_man"]),
        (ZH.split("\n\n")[0], "zh", [("xiaomei", "小梅"), ("aming", "阿明")], ["xiaomei", "aming"]),
        ("ハルトは窓を開けた。", "ja", [("haruto", "ハルト")], ["haruto"]),
    ],
)
def test_cast_names_are_found_in_narration_by_their_forms(text, language, cast, expected):
    grounding = Grounding.of(text, language)
    people = [Character(id=i, name=n, appearance="x") for i, n in cast]
    assert (
        named_in(grounding, 1, len(grounding.map.units), cast_forms(grounding, people, language)) == expected
    )


def test_a_panel_shows_at_most_max_characters():
    names = [f"Person{chr(65 + i)}" for i in range(MAX_CHARACTERS + 3)]
    text = " ".join(f"{n} sat down." for n in names)
    grounding = Grounding.of(text, "en")
    people = [Character(id=n.lower(), name=n, appearance="x") for n in names]
    script = grounded_script([1], [], [])
    script["panels"][0]["characters"] = ["personc"]
    sp = assemble_grounded(script, people, "en", grounding)
    shown = sp.panels[0].characters
    assert len(shown) == MAX_CHARACTERS and shown[0] == "personc"
    assert shown[1:] == [n.lower() for n in names if n != "PersonC"][: MAX_CHARACTERS - 1]
