from __future__ import annotations

import json
import re

import pytest

from mangaka.errors import InputError, MangakaError
from mangaka.prompts import PROMPTS_DIR, load_prompt, prompt, prompt_languages, render_prompt
from mangaka.screenplay.options import PROMPT_LANGUAGES

SCREENWRITER = [
    "screenwriter/system",
    "screenwriter/chapter",
    "screenwriter/plan",
    "screenwriter/planned",
    "screenwriter/cast",
    "screenwriter/cast_known",
    "screenwriter/scene",
    "screenwriter/scene_before",
    "screenwriter/script",
    "screenwriter/script_grounded",
]
STRUCTURED = ["structured/invalid", "structured/cut_off"]
PLACEHOLDER = re.compile(r"\$\{?([_a-zA-Z][_a-zA-Z0-9]*)")  # string.Template's identifiers (ASCII)


def test_prompts_folder_is_found_next_to_the_package():
    assert PROMPTS_DIR.name == "prompts"
    assert (PROMPTS_DIR.parent / "mangaka").is_dir()


LANGUAGES = sorted(PROMPT_LANGUAGES)


def _english_prompts() -> list[str]:
    """Every screenwriter and structured prompt that has an English file, e.g. "screenwriter/cast"."""
    return sorted(
        f"{folder}/{path.name.removesuffix('.en.md')}"
        for folder in ("screenwriter", "structured")
        for path in (PROMPTS_DIR / folder).glob("*.en.md")
    )


def test_the_named_prompts_are_all_the_english_ones():
    assert _english_prompts() == sorted(SCREENWRITER + STRUCTURED)


@pytest.mark.parametrize("name", SCREENWRITER + STRUCTURED)
def test_every_prompt_exists_in_every_prompt_language(name: str):
    assert prompt_languages(name) == LANGUAGES
    for language in LANGUAGES:
        assert load_prompt(name, language).strip()


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_each_language_version_has_the_same_placeholders(language: str):
    for name in SCREENWRITER + STRUCTURED:
        en = PLACEHOLDER.findall(load_prompt(name, "en"))
        found = PLACEHOLDER.findall(load_prompt(name, language))
        assert sorted(found) == sorted(en), name  # the same names, each as often


@pytest.mark.parametrize("name", _english_prompts())
def test_every_english_prompt_has_a_japanese_version_with_its_placeholders(name: str):
    en = set(PLACEHOLDER.findall(load_prompt(name, "en")))
    assert set(PLACEHOLDER.findall(load_prompt(name, "ja"))) == en


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
@pytest.mark.parametrize("name", ["screenwriter/cast"])
def test_json_examples_are_valid_json_with_english_keys(name: str, language: str):
    example = load_prompt(name, language).strip().splitlines()[-1]
    data = json.loads(example)
    person = data["characters"][0]
    assert list(person) == ["id", "name", "appearance"]
    assert re.fullmatch(r"[a-z][a-z0-9_]*", person["id"])


def test_a_missing_language_names_the_ones_that_exist():
    with pytest.raises(InputError, match=r"no 'fr' version; it exists in: en, ja, zh"):
        load_prompt("screenwriter/cast", "fr")


def test_an_unknown_prompt_is_an_error():
    with pytest.raises(MangakaError, match="no prompt 'screenwriter/nothing'"):
        load_prompt("screenwriter/nothing", "en")
    with pytest.raises(InputError):
        load_prompt("../mangaka/errors", "py")


def test_literal_braces_and_dollar_escapes_survive():
    text = 'Reply like {"characters": [{"id": "$first"}]} for $$5 and ${n}x'
    assert (
        render_prompt(text, first="akira", n=3)
        == 'Reply like {"characters": [{"id": "akira"}]} for $5 and 3x'
    )


def test_values_are_not_reinterpreted():
    assert render_prompt("<$chapter>", chapter="costs $5 {x}") == "<costs $5 {x}>"


def test_a_placeholder_without_a_value_is_an_error():
    with pytest.raises(MangakaError, match=r"\$cast has no value"):
        render_prompt("cast: $cast", panels=3)
    with pytest.raises(MangakaError, match=r"\$\$"):
        render_prompt("price $5")


def test_cast_prompt_renders_with_json_example_intact():
    text = prompt("screenwriter/cast", "en", max_characters=8, max_name=40, max_appearance=240)
    assert "at most 8" in text and "$" not in text
    assert '{"characters": [{"id": "akira"' in text
