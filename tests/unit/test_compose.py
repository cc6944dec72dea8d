"""The screenplay → SD prompt compiler: golden prompts for every style and mode, the character
bible, CLIP token counts, raw LLM text extraction and bad input.

Regenerate the golden files after an intended change with ``MANGAKA_UPDATE_GOLDEN=1 pytest
tests/unit/test_compose.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from mangaka.compose import (
    build_bible,
    compile_prompts,
    estimate_clip_tokens,
    extract_json_object,
    load_bible_file,
    load_style,
    parse_bible_text,
    screenplay_from_text,
    style_names,
)
from mangaka.compose.presets import terms
from mangaka.errors import InputError
from mangaka.screenplay.models import ANGLES, EMOTIONS, SHOTS
from mangaka.screenplay.validate import load_screenplay

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "golden"
SCREENPLAY_TEXT = (DATA / "golden_screenplay.json").read_text(encoding="utf-8")
UPDATE = os.environ.get("MANGAKA_UPDATE_GOLDEN") == "1"


@pytest.fixture(scope="module")
def screenplay():
    return load_screenplay(SCREENPLAY_TEXT)


def _as_golden(compiled) -> dict:
    return {
        "negative": compiled.negative,
        "panels": [
            {
                "id": p.id,
                "positive": p.positive,
                "caption": p.caption,
                "dialogue": p.dialogue,
                "clip_tokens_estimate": p.clip_tokens,
            }
            for p in compiled.panels
        ],
        "warnings": compiled.warnings,
    }


def test_the_four_required_styles_exist():
    assert {"manga_bw", "manhua_ink", "shoujo", "webtoon_color"} <= set(style_names())


@pytest.mark.parametrize("mode", ["tags", "natural"])
@pytest.mark.parametrize("style", style_names())
def test_golden_prompts(screenplay, style, mode):
    bible = build_bible(screenplay, load_bible_file(DATA / "golden_bible.json"))
    got = _as_golden(compile_prompts(screenplay, style=style, mode=mode, bible=bible))
    path = GOLDEN / f"{style}.{mode}.json"
    if UPDATE:
        path.write_text(json.dumps(got, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    assert path.is_file(), f"{path} is missing; run with MANGAKA_UPDATE_GOLDEN=1 and review it"
    assert got == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("mode", ["tags", "natural"])
def test_same_input_same_prompts(screenplay, mode):
    a = compile_prompts(screenplay, style="shoujo", mode=mode)
    b = compile_prompts(load_screenplay(SCREENPLAY_TEXT), style="shoujo", mode=mode)
    assert _as_golden(a) == _as_golden(b)


def test_every_shot_angle_and_emotion_has_terms_in_both_modes():
    t = terms()
    for section, keys in (("shot", SHOTS), ("angle", ANGLES), ("emotion", EMOTIONS)):
        assert set(t[section]) == set(keys), section
        for key in keys:
            assert isinstance(t[section][key]["tags"], list)
            assert isinstance(t[section][key]["natural"], str)
            if key != "narration":
                assert t[section][key]["tags"] and t[section][key]["natural"], (section, key)


def test_fragments_come_in_priority_order(screenplay):
    panel = compile_prompts(screenplay, style="manga_bw", mode="tags").panels[2]
    text = panel.positive
    order = ["manga", "group", "medium shot", "eye level", "elderly ferryman", "Old Tan holds out",
             "Old Tan stern", "oar", "ferry deck", "lantern glow"]  # fmt: skip
    positions = [text.index(fragment) for fragment in order]
    assert positions == sorted(positions), text


def test_bible_entry_is_inserted_the_same_way_in_every_panel(screenplay):
    bible = build_bible(screenplay, load_bible_file(DATA / "golden_bible.json"))
    compiled = compile_prompts(screenplay, style="webtoon_color", mode="tags", bible=bible)
    look = "lin_mgk, young woman, short black bob, amber eyes, red scarf, grey wool coat, silver hairpin"
    with_lin = [p for p in compiled.panels if "lin" in p.characters]
    assert len(with_lin) == 3
    assert all(look in p.positive for p in with_lin)
    assert all("lin_mgk" not in p.positive for p in compiled.panels if "lin" not in p.characters)
    natural = compile_prompts(screenplay, style="webtoon_color", mode="natural", bible=bible)
    assert all("Lin (lin_mgk): " in p.positive for p in natural.panels if "lin" in p.characters)


def test_bible_naming_an_absent_character_is_a_warning(screenplay):
    bible = build_bible(screenplay, parse_bible_text('[{"id": "ghost", "appearance": "translucent wisp"}]'))
    assert any("'ghost' is not in this screenplay" in w for w in bible.warnings)
    compiled = compile_prompts(screenplay, style="manga_bw", bible=bible)
    assert any("ghost" in w for w in compiled.warnings)
    assert all("translucent wisp" not in p.positive for p in compiled.panels)


def test_bible_matches_by_name_and_says_so(screenplay):
    bible = build_bible(
        screenplay, parse_bible_text('[{"id": "xb", "name": "xiaobao", "trigger": "xb_lora"}]')
    )
    assert bible["kid"].trigger == "xb_lora"
    assert any("matched 'kid' by its name" in w for w in bible.warnings)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "bible: not valid JSON"),
        ('{"characters": "lin"}', "expected"),
        ('[{"appearance": "x"}]', "characters[0].id: missing"),
        ('[{"id": "lin", "trigger": 3}]', "characters[0].trigger: must be text"),
    ],
)
def test_bad_bible_is_a_clear_error(text, message):
    with pytest.raises(InputError, match=re.escape(message)):
        parse_bible_text(text)


def test_unknown_style_lists_the_ones_that_exist(screenplay):
    with pytest.raises(InputError) as err:
        compile_prompts(screenplay, style="cyberpunk")
    for name in style_names():
        assert name in str(err.value)
    with pytest.raises(InputError, match="tags, natural"):
        compile_prompts(screenplay, style="manga_bw", mode="prose")
    assert load_style("manga_bw").label


def test_long_prompt_names_where_the_first_chunk_ends(screenplay):
    compiled = compile_prompts(screenplay, style="manhua_ink", mode="natural")
    long = [p for p in compiled.panels if p.clip_tokens > 75]
    assert long, "the golden screenplay has panels past one chunk in natural mode"
    for p in long:
        assert p.clip_chunks >= 2
        assert any(w.startswith(f"{p.id}: {p.clip_tokens} CLIP tokens") for w in compiled.warnings)


def test_exact_counter_is_used_when_given(screenplay):
    compiled = compile_prompts(screenplay, style="manga_bw", count_tokens=len, token_counter="characters")
    assert all(p.clip_tokens == len(p.positive) for p in compiled.panels)
    assert "CLIP tokens (characters)" in compiled.report()


def test_clip_estimate_counts_words_punctuation_and_cjk():
    assert estimate_clip_tokens("manga, ink") == 3
    assert estimate_clip_tokens("monochrome") == 2  # over 8 letters: one token per 7
    assert estimate_clip_tokens("a very extraordinarily long word") == 3 + 3 + 1
    assert estimate_clip_tokens("雨中的车站") == 15
    assert estimate_clip_tokens("") == 0


def test_non_english_screenplay_warns_in_tags_mode():
    data = json.loads(SCREENPLAY_TEXT)
    data["language"] = "zh"
    compiled = compile_prompts(load_screenplay(data), style="manga_bw", mode="tags")
    assert any("written in zh" in w for w in compiled.warnings)


# ------------------------------------------------------------------------ raw LLM text


def test_json_in_a_code_fence_after_a_think_block_and_prose():
    raw = (
        '<think>\nThe user wants a screenplay. Draft: {"title": "draft"}\n</think>\n\n'
        "Sure! Here is the screenplay:\n```json\n" + SCREENPLAY_TEXT + "\n```\nHope this helps {smile}."
    )
    assert screenplay_from_text(raw).title == "Lanterns at the Ferry"


def test_bare_json_with_prose_around_it():
    assert extract_json_object("Here you go: " + SCREENPLAY_TEXT + " -- end")["version"] == 1
    assert extract_json_object("{sic} " + SCREENPLAY_TEXT)["title"] == "Lanterns at the Ferry"


def test_unfinished_think_block_says_the_model_ran_out():
    with pytest.raises(InputError, match="unfinished <think>"):
        extract_json_object("<think>\nLet me think about the panels")


def test_cut_off_json_is_reported_not_replaced_by_an_inner_object():
    with pytest.raises(InputError, match=r"does not parse.*cut off"):
        extract_json_object(SCREENPLAY_TEXT[:900])


def test_no_json_at_all():
    with pytest.raises(InputError, match="no JSON object"):
        extract_json_object("I cannot write a screenplay for this chapter.")
    with pytest.raises(InputError, match="is empty"):
        screenplay_from_text("   ")


def test_json_that_is_not_a_screenplay_lists_problems_with_paths():
    with pytest.raises(InputError) as err:
        screenplay_from_text('{"name": "not a screenplay"}')
    assert "is not a valid screenplay" in str(err.value)
    assert "- " in str(err.value)


def test_unknown_character_in_a_panel_and_empty_panels_are_errors():
    data = json.loads(SCREENPLAY_TEXT)
    data["panels"][1]["characters"].append("ghost")
    with pytest.raises(InputError, match=r"panels\[1\]\.characters\[2\]: 'ghost' is not a character id"):
        screenplay_from_text(json.dumps(data))
    data = json.loads(SCREENPLAY_TEXT)
    data["panels"] = []
    with pytest.raises(InputError, match="panels"):
        screenplay_from_text(json.dumps(data))


@pytest.mark.parametrize("mode", ["tags", "natural"])
def test_the_docs_show_the_golden_example_panel(mode):
    readme = " ".join((DATA.parents[2] / "docs" / "pages.md").read_text(encoding="utf-8").split())
    golden = json.loads((GOLDEN / f"manga_bw.{mode}.json").read_text(encoding="utf-8"))
    assert f"`{mode}`: `{golden['panels'][3]['positive']}`" in readme


@pytest.mark.parametrize("mode", ["tags", "natural"])
def test_balloon_room_is_asked_for_in_panels_with_lines_only(screenplay, mode):
    """The style's words for empty balloon space go right after its own words, in every panel with
    a line and in no other; ``balloon_room`` overrides the style's default either way."""
    silent = screenplay.panels[0].model_copy(update={"dialogue": []})
    screenplay = screenplay.model_copy(update={"panels": [silent, *screenplay.panels[1:]]})
    style = load_style("manga_bw")
    words = list(style.room_tags) if mode == "tags" else [style.room_natural]
    joiner = ", " if mode == "tags" else " "
    off = compile_prompts(screenplay, style="manga_bw", mode=mode, balloon_room=False)
    default = compile_prompts(screenplay, style="manga_bw", mode=mode)
    assert (
        style.room_default
        and default.panels
        == compile_prompts(screenplay, style="manga_bw", mode=mode, balloon_room=True).panels
    )
    with_lines = {p.id for p in screenplay.panels if screenplay.lines_of(p)}
    assert with_lines and with_lines != {p.id for p in screenplay.panels}  # the set has both kinds
    for plain, asked in zip(off.panels, default.panels, strict=True):
        if plain.id in with_lines:
            head = joiner.join(style.positive(mode))
            assert asked.positive == plain.positive.replace(head, joiner.join([head, *words]), 1)
        else:
            assert asked.positive == plain.positive
    assert not load_style("webtoon_color").room_default
    assert (
        compile_prompts(screenplay, style="webtoon_color", mode=mode).panels
        == compile_prompts(screenplay, style="webtoon_color", mode=mode, balloon_room=False).panels
    )
