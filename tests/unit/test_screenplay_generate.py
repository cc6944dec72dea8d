"""The constrain → validate → retry loop and the Screenwriter's two calls, driven by a scripted fake LLM."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mangaka.errors import Cancelled, ContextOverflowError, InputError, InvalidOutputError, SchemaError
from mangaka.llm.base import CallContext, Completion, Sampling, Usage
from mangaka.llm.budget import json_token_budget
from mangaka.screenplay import Character, validate_screenplay, write_screenplay
from mangaka.screenplay.request import ScreenplayRequest
from mangaka.structured import generate_json
from tests.fakes import CAST, FakeScriptedLLM, script

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 10}},
    "required": ["name"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "system", "content": "JSON only."}, {"role": "user", "content": "Name a cat."}]


def cut(text: str, tokens: int = 7) -> Completion:
    return Completion(text=text, finish_reason="length", usage=Usage(completion_tokens=tokens))


# --- generate_json ---------------------------------------------------------------------------


def test_a_valid_first_reply_is_returned_with_one_attempt():
    llm = FakeScriptedLLM({"name": "Tama"})
    data, attempts = generate_json(llm, MESSAGES, SCHEMA)
    assert data == {"name": "Tama"}
    assert len(attempts) == 1 and attempts[0].problems == []
    call = llm.calls[0]
    assert call["schema"] is SCHEMA and call["thinking"] is False
    assert call["max_tokens"] == json_token_budget(SCHEMA)
    assert call["messages"] == MESSAGES


def test_an_invalid_reply_is_fed_back_with_its_problems():
    llm = FakeScriptedLLM({"name": "Tama the Great"}, {"name": "Tama"})
    data, attempts = generate_json(llm, MESSAGES, SCHEMA)
    assert data == {"name": "Tama"}
    assert [bool(a.problems) for a in attempts] == [True, False]
    retry = llm.calls[1]["messages"]
    assert retry[:2] == MESSAGES
    assert retry[2] == {"role": "assistant", "content": '{"name": "Tama the Great"}'}
    assert retry[3]["role"] == "user"
    assert "- name: 'Tama the Great' is too long" in retry[3]["content"]


def test_not_json_is_a_problem_with_its_position():
    llm = FakeScriptedLLM('{"name": ', "", {"name": "Tama"})
    _, attempts = generate_json(llm, MESSAGES, SCHEMA)
    assert (
        attempts[0].problems[0].startswith("the reply is not valid JSON: Expecting value at line 1 column 10")
    )
    assert attempts[1].problems == ["the reply is empty; it must be one JSON object"]


def test_a_padded_reply_is_repaired_not_retried(caplog):
    """A user's schema (the Structured Output node): "  Tama  " is 8 characters of a 10 allowed,
    but the padding is not the cat's name; trimmed, logged, reported, and no second call."""
    optional = {**SCHEMA, "properties": {**SCHEMA["properties"], "color": {"type": "string", "maxLength": 9}}}
    llm = FakeScriptedLLM({"name": "  Tama  ", "color": "  "})
    with caplog.at_level("INFO", logger="mangaka.structured"):
        data, attempts = generate_json(llm, MESSAGES, optional)
    assert data == {"name": "Tama"} and len(llm.calls) == 1
    assert attempts[0].repairs == [
        "name: trimmed the spaces around '  Tama  '",
        "color: blank optional value removed",
    ]
    assert "output: try 1 repaired name: trimmed the spaces around '  Tama  '" in caplog.text
    assert "valid on try 1 of 3 after 2 repairs" in caplog.text


def test_semantic_validation_runs_after_the_schema():
    seen = []

    def no_dogs(data: dict[str, Any]) -> list[str]:
        seen.append(data)
        return ["name: a cat, not a dog"] if data["name"] == "Rex" else []

    llm = FakeScriptedLLM({"name": 5}, {"name": "Rex"}, {"name": "Tama"})
    data, attempts = generate_json(llm, MESSAGES, SCHEMA, validate=no_dogs)
    assert data == {"name": "Tama"}
    assert seen == [{"name": "Rex"}, {"name": "Tama"}]  # never called on schema-invalid data
    assert attempts[1].problems == ["name: a cat, not a dog"]
    assert "- name: a cat, not a dog" in llm.calls[2]["messages"][-1]["content"]


def test_a_cut_off_reply_is_retried_and_never_returned():
    llm = FakeScriptedLLM(cut('{"name": "Ta', tokens=7), {"name": "Tama"})
    data, attempts = generate_json(llm, MESSAGES, SCHEMA, max_tokens=7)
    assert data == {"name": "Tama"}
    assert attempts[0].finish_reason == "length"
    assert "cut off at 7 tokens" in attempts[0].problems[0]
    retry = llm.calls[1]["messages"]
    # the cut reply is not echoed back; the note rides on the last user message
    assert [m["role"] for m in retry] == ["system", "user"]
    assert retry[1]["content"].startswith("Name a cat.\n\n")
    assert "cut off at 7 tokens" in retry[1]["content"] and "shorter" in retry[1]["content"]


def test_a_cut_off_reply_that_happens_to_parse_is_still_not_returned():
    llm = FakeScriptedLLM(cut('{"name": "Tama"}'), cut('{"name": "Tama"}'))
    with pytest.raises(InvalidOutputError) as info:
        generate_json(llm, MESSAGES, SCHEMA, max_attempts=2)
    assert [a["finish_reason"] for a in info.value.attempts] == ["length", "length"]
    # the second note replaces the first instead of piling up
    assert llm.calls[1]["messages"][1]["content"].count("cut off") == 1


def test_after_the_last_try_the_error_carries_every_attempt():
    llm = FakeScriptedLLM("nope", {"name": ""}, cut('{"na'))
    with pytest.raises(InvalidOutputError) as info:
        generate_json(llm, MESSAGES, SCHEMA, max_attempts=3, call="cat")
    error = info.value
    assert [a["text"] for a in error.attempts] == ["nope", '{"name": ""}', '{"na']
    assert [a["finish_reason"] for a in error.attempts] == ["stop", "stop", "length"]
    assert all(a["problems"] for a in error.attempts)
    assert all(a["call"] == "cat" for a in error.attempts)
    message = str(error)
    assert message.startswith("cat: the model's output was invalid on all 3 tries.")
    assert "try 1: the reply is not valid JSON" in message
    assert "try 2: name: '' should be non-empty" in message
    assert "try 3: the reply was cut off at 7 tokens" in message


def test_feedback_is_in_the_requested_language():
    llm = FakeScriptedLLM({"name": ""}, {"name": "Tama"})
    generate_json(llm, MESSAGES, SCHEMA, language="zh")
    assert "你的回复不符合要求的格式" in llm.calls[1]["messages"][-1]["content"]


def test_long_problem_lists_are_capped_in_the_feedback():
    schema = {
        "type": "array",
        "items": {"type": "integer"},
        "maxItems": 30,
    }
    llm = FakeScriptedLLM(json.dumps(["x"] * 30), "[]")
    generate_json(llm, MESSAGES, schema)
    feedback = llm.calls[1]["messages"][-1]["content"]
    assert feedback.count("\n- ") == 21 and "… and 10 more" in feedback


def test_cancel_between_tries_stops():
    llm = FakeScriptedLLM({"name": ""}, {"name": "Tama"})
    calls = iter([False, True])
    with pytest.raises(Cancelled):
        generate_json(llm, MESSAGES, SCHEMA, context=CallContext(cancel=lambda: next(calls)))
    assert len(llm.calls) == 1


def test_context_overflow_on_the_first_try_propagates():
    llm = FakeScriptedLLM(ContextOverflowError("prompt is 40000 tokens, context 32768", 40000, 32768))
    with pytest.raises(ContextOverflowError):
        generate_json(llm, MESSAGES, SCHEMA)


def test_context_overflow_on_a_retry_keeps_the_attempts():
    llm = FakeScriptedLLM(
        {"name": ""}, ContextOverflowError("prompt is 33000 tokens, context 32768", 33000, 32768)
    )
    with pytest.raises(InvalidOutputError, match="no longer fits in the context") as info:
        generate_json(llm, MESSAGES, SCHEMA)
    assert len(info.value.attempts) == 1


def test_unbounded_schema_needs_max_tokens():
    schema = {"type": "object", "properties": {"s": {"type": "string"}}}
    with pytest.raises(SchemaError, match=r"at s: .*maxLength"):
        generate_json(FakeScriptedLLM(), MESSAGES, schema)
    data, _ = generate_json(FakeScriptedLLM({"s": "x"}), MESSAGES, schema, max_tokens=50)
    assert data == {"s": "x"}


def test_an_invalid_schema_is_a_schema_error():
    with pytest.raises(SchemaError, match=r"invalid JSON Schema at properties\.s"):
        generate_json(FakeScriptedLLM(), MESSAGES, {"type": "object", "properties": {"s": {"type": "text"}}})


# --- write_screenplay ------------------------------------------------------------------------

CHAPTER = "Rain fell on the empty station. Akira checked the timetable; Mei only listened for the train."


def test_write_screenplay_assembles_ids_and_references():
    llm = FakeScriptedLLM(CAST, script(["p1", "p2", "p2", "p3"]))
    result = write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    sp = result.screenplay
    assert validate_screenplay(sp.model_dump(mode="json")) == []
    assert [d.id for d in sp.dialogue] == ["d1", "d2", "d3", "d4"]
    assert [p.id for p in sp.panels] == ["p1", "p2", "p3"]
    assert [p.dialogue for p in sp.panels] == [["d1"], ["d2", "d3"], ["d4"]]
    assert sp.panels[1].characters == ["mei"]  # listed twice by the model, once here
    assert [c.id for c in sp.characters] == ["akira", "mei"]
    assert sp.title == "The Last Train" and sp.language == "en" and sp.version == 2
    assert len(result.attempts) == 2 and [a.call for a in result.attempts] == [
        "screenplay cast",
        "screenplay script",
    ]
    assert result.usage.completion_tokens == sum(a.usage.completion_tokens for a in result.attempts)


def test_lines_are_numbered_in_reading_order():
    llm = FakeScriptedLLM(CAST, script(["p2", "p1", "p3", "p1"]))
    sp = write_screenplay(
        llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4)
    ).screenplay
    assert [d.line for d in sp.dialogue] == ["line 2", "line 4", "line 1", "line 3"]
    assert [p.dialogue for p in sp.panels] == [["d1", "d2"], ["d3"], ["d4"]]


def test_silent_panels_and_no_dialogue_are_allowed():
    llm = FakeScriptedLLM(CAST, script([], panels=2))
    sp = write_screenplay(
        llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=2, dialogue=0)
    ).screenplay
    assert sp.dialogue == [] and [p.dialogue for p in sp.panels] == [[], []]


def test_the_script_schema_is_built_from_the_cast():
    llm = FakeScriptedLLM(CAST, script(["p1", "p2", "p3", "p3"]))
    write_screenplay(
        llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4, max_characters=5)
    )
    cast_schema = llm.calls[0]["schema"]
    assert cast_schema["properties"]["characters"]["maxItems"] == 5
    schema = llm.calls[1]["schema"]
    line = schema["properties"]["dialogue"]
    assert line["minItems"] == line["maxItems"] == 4
    assert line["items"]["properties"]["speaker"]["enum"] == ["akira", "mei", "narrator"]
    assert line["items"]["properties"]["panel"]["enum"] == ["p1", "p2", "p3"]
    panels = schema["properties"]["panels"]
    assert panels["minItems"] == panels["maxItems"] == 3
    assert [p["properties"]["id"]["const"] for p in panels["prefixItems"]] == ["p1", "p2", "p3"]
    assert schema["$defs"]["panel_characters"]["items"]["enum"] == ["akira", "mei"]
    assert llm.calls[1]["max_tokens"] == json_token_budget(schema)
    assert all(call["thinking"] is False for call in llm.calls)


def test_both_calls_share_the_system_prompt_and_chapter_prefix():
    llm = FakeScriptedLLM(CAST, script(["p1", "p1", "p2", "p3"]))
    write_screenplay(
        llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4, style="shoujo manga")
    )
    first, second = (call["messages"] for call in llm.calls)
    assert first[0] == second[0] and first[0]["role"] == "system"
    assert "shoujo manga" in first[0]["content"] and "English" in first[0]["content"]
    assert first[1] == second[1] and first[1]["role"] == "user" and CHAPTER in first[1]["content"]
    cast_user, script_user = first[2]["content"], second[2]["content"]
    assert "Task 1 of 2" in cast_user and "Task 2 of 2" in script_user
    assert "- akira: Akira — teenage boy" in script_user and "p1, p2, p3" in script_user
    assert "$" not in cast_user + script_user


def test_sampling_is_passed_to_every_call():
    greedy = Sampling(temperature=0.0, top_k=1)
    llm = FakeScriptedLLM(CAST, script(["p1", "p1", "p2", "p3"]))
    write_screenplay(
        llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4, sampling=greedy)
    )
    assert [call["sampling"] for call in llm.calls] == [greedy, greedy]


def test_chinese_and_japanese_prompts():
    llm = FakeScriptedLLM(CAST, script(["p1", "p1", "p2", "p3"]))
    write_screenplay(
        llm,
        "雨落在空无一人的车站。",
        ScreenplayRequest(dialogue_from="free", language="zh", panels=3, dialogue=4),
    )
    assert "简体中文" in llm.calls[0]["messages"][0]["content"]
    assert "第 1 步" in llm.calls[0]["messages"][2]["content"]
    llm = FakeScriptedLLM(CAST, script(["p1", "p1", "p2", "p3"]))
    sp = write_screenplay(
        llm, "雨の駅。", ScreenplayRequest(dialogue_from="free", language="ja", panels=3, dialogue=4)
    ).screenplay
    assert "日本語" in llm.calls[0]["messages"][0]["content"] and sp.language == "ja"
    assert "ステップ 1/2" in llm.calls[0]["messages"][2]["content"]


def test_duplicate_cast_ids_get_a_suffix_and_the_narrator_is_left_out():
    bad = copy.deepcopy(CAST)
    bad["characters"][1]["id"] = "akira"
    bad["characters"].append({"id": "narrator", "name": "Narrator", "appearance": "a voice"})
    cast_ids = ["akira", "akira_2"]
    renamed = json.loads(json.dumps(script(["p1", "p1", "p2", "p3"])).replace('"mei"', '"akira_2"'))
    llm = FakeScriptedLLM(bad, renamed)
    result = write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    assert [a.call for a in result.attempts] == ["screenplay cast", "screenplay script"]
    assert [c.id for c in result.screenplay.characters] == cast_ids
    assert [c.name for c in result.screenplay.characters] == [c["name"] for c in CAST["characters"]]
    script_schema = llm.calls[1]["schema"]
    assert "akira_2" in json.dumps(script_schema)


def test_a_repeated_name_is_merged_without_a_retry(caplog):
    """What SmolLM2 does at 2 threads: the same name listed twice. Retrying does not help a model
    that repeats itself; the entry is merged into the first, logged, and reported on the result."""
    bad = copy.deepcopy(CAST)
    bad["characters"].append({"id": "akira_k", "name": " AKIRA\u3000", "appearance": "the same boy again"})
    llm = FakeScriptedLLM(bad, script(["p1", "p1", "p2", "p3"]))
    with caplog.at_level("INFO", logger="mangaka.structured"):
        result = write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    assert [a.call for a in result.attempts] == ["screenplay cast", "screenplay script"]  # no retry
    assert [c.id for c in result.screenplay.characters] == ["akira", "mei"]
    assert result.screenplay.characters[0].appearance == CAST["characters"][0]["appearance"]
    assert "akira_k" not in json.dumps(llm.calls[1]["schema"])  # the script only sees the kept ids
    wanted = "characters[2]: character 'AKIRA' listed again; merged into characters[0]"
    assert result.repairs == [
        "screenplay cast: characters[2].name: trimmed the spaces around ' AKIRA\\u3000'",
        f"screenplay cast: {wanted}",
        "screenplay script: panels[1].characters[1]: character 'mei' listed again; merged into "
        "panels[1].characters[0]",
    ]
    assert any(r.levelname == "INFO" and wanted in r.message for r in caplog.records)
    assert result.attempts[0].problems == [] and result.attempts[0].repairs[1] == wanted


def test_padded_strings_are_trimmed_and_props_listed_twice_once():
    padded = script(["p1", "p1", "p2", "p3"])
    padded["title"] = "  The Last Train \n"
    padded["panels"][0]["props"] = ["umbrella", " Umbrella ", "ticket"]
    padded["panels"][0]["expression"] = "   "
    llm = FakeScriptedLLM(CAST, padded)
    result = write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    assert len(result.attempts) == 2
    sp = result.screenplay
    assert sp.title == "The Last Train"
    assert sp.panels[0].props == ["umbrella", "ticket"] and sp.panels[0].expression == ""
    assert "screenplay script: title: trimmed the spaces around '  The Last Train \\n'" in result.repairs
    assert "screenplay script: panels[0].props[1]: prop 'Umbrella' listed again; merged into " \
        "panels[0].props[0]" in result.repairs  # fmt: skip


def test_a_repeated_name_that_needs_judgment_is_still_retried():
    """Two entries with one id but different names cannot be merged: the id gets a suffix (the
    script has no references yet), and only a blank name goes back to the model."""
    bad = copy.deepcopy(CAST)
    bad["characters"][1]["name"] = " "
    llm = FakeScriptedLLM(bad, CAST, script(["p1", "p1", "p2", "p3"]))
    result = write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    assert [a.call for a in result.attempts] == ["screenplay cast"] * 2 + ["screenplay script"]
    feedback = llm.calls[1]["messages"][-1]["content"]
    assert "characters[1].name: is blank; give the name as the chapter writes it" in feedback


def test_a_script_referring_to_unknown_ids_is_retried():
    bad = script(["p1", "p1", "p2", "p3"])
    bad["dialogue"][0]["speaker"] = "kenji"  # a backend that ignored the grammar
    bad["panels"][0]["characters"] = ["kenji"]
    llm = FakeScriptedLLM(CAST, bad, script(["p1", "p1", "p2", "p3"]))
    write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    feedback = llm.calls[2]["messages"][-1]["content"]
    assert "dialogue[0].speaker: 'kenji' is not one of" in feedback
    assert "panels[0].characters[0]: 'kenji' is not one of" in feedback


def test_a_blank_line_is_retried():
    bad = script(["p1", "p1", "p2", "p3"])
    bad["dialogue"][2]["line"] = "  "
    llm = FakeScriptedLLM(CAST, bad, script(["p1", "p1", "p2", "p3"]))
    write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    assert "dialogue[2].line: is blank; write the words" in llm.calls[2]["messages"][-1]["content"]


def test_a_failing_script_call_reports_the_cast_attempts_too():
    llm = FakeScriptedLLM(CAST, cut('{"title": "x'), cut('{"title": "x'))
    with pytest.raises(InvalidOutputError, match=r"screenplay script: .* all 2 tries") as info:
        write_screenplay(
            llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4, max_attempts=2)
        )
    assert [a["call"] for a in info.value.attempts] == [
        "screenplay cast",
        "screenplay script",
        "screenplay script",
    ]


def test_a_known_cast_skips_the_cast_call():
    known = [
        Character(id="akira", name="Akira", appearance="boy"),
        {"id": "mei", "name": "Mei", "appearance": "girl"},
    ]
    llm = FakeScriptedLLM(script(["p1", "p1", "p2", "p3"]))
    sp = write_screenplay(
        llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4), cast=known
    ).screenplay
    assert len(llm.calls) == 1 and [c.id for c in sp.characters] == ["akira", "mei"]


def test_a_bible_is_shown_to_the_cast_call_and_its_known_names_keep_their_ids():
    from mangaka.screenplay import SeriesBible, write_cast

    bible = SeriesBible.model_validate(
        {"version": 1, "characters": [{"id": "hero", "name": "AKIRA ", "appearance": "bible look"}]}
    )
    hero_script = json.loads(json.dumps(script(["p1", "p1", "p2", "p3"])).replace('"akira"', '"hero"'))
    llm = FakeScriptedLLM(CAST, hero_script)
    sp = write_screenplay(
        llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4), bible=bible
    ).screenplay
    cast_prompt = llm.calls[0]["messages"][-1]["content"]
    assert "already known" in cast_prompt and "- hero: AKIRA  — bible look" in cast_prompt
    assert llm.calls[1]["schema"]["$defs"]["panel_characters"]["items"]["enum"] == ["hero", "mei"]
    hero = sp.characters[0]
    assert (hero.id, hero.name, hero.appearance) == ("hero", "AKIRA ", "bible look")
    assert {d.speaker for d in sp.dialogue} <= {"hero", "mei", "narrator"}
    # the cast call alone (a book's first pass), and a given cast mapped onto the bible
    cast = write_cast(
        FakeScriptedLLM(CAST), CHAPTER, ScreenplayRequest(dialogue_from="free"), bible=bible
    ).value
    assert [c.id for c in cast] == ["hero", "mei"]
    known = [Character(id="akira", name="Akira", appearance="boy")]
    llm = FakeScriptedLLM(hero_script)
    with pytest.raises(InvalidOutputError):  # mei is not in the given cast: the script is refused
        write_screenplay(
            llm,
            CHAPTER,
            ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4, max_attempts=1),
            cast=known,
            bible=bible,
        )
    assert llm.calls[0]["schema"]["$defs"]["panel_characters"]["items"]["enum"] == ["hero"]


@pytest.mark.parametrize(
    ("cast", "message"),
    [
        ([], "cast: give from 1 to 48 characters, got 0"),
        ([{"id": "A", "name": "x", "appearance": "y"}], "cast[0] is not a valid character"),
        (
            [{"id": "a", "name": "x", "appearance": "y"}, {"id": "a", "name": "z", "appearance": "y"}],
            "cast[1].id: 'a' is already the id of cast[0]",
        ),
    ],
)
def test_a_bad_known_cast_is_an_input_error(cast: list[dict[str, Any]], message: str):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        write_screenplay(FakeScriptedLLM(), CHAPTER, ScreenplayRequest(), cast=cast)


def test_progress_counts_both_calls_against_one_total():
    seen: list[tuple[int, int]] = []
    llm = FakeScriptedLLM(CAST, script(["p1", "p1", "p2", "p3"]))
    write_screenplay(
        llm,
        CHAPTER,
        ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4),
        context=CallContext(on_progress=lambda d, t: seen.append((d, t))),
    )
    assert len(seen) == 2
    (cast_done, _), (script_done, script_total) = seen
    assert cast_done < script_done <= script_total
    assert script_done == llm.calls[0]["max_tokens"] + len(json.dumps(script(["p1", "p1", "p2", "p3"])))


def test_context_overflow_propagates_unchanged():
    error = ContextOverflowError("the prompt is 40000 tokens; the context is 32768", 40000, 32768)
    with pytest.raises(ContextOverflowError) as info:
        write_screenplay(FakeScriptedLLM(error), CHAPTER * 100, ScreenplayRequest())
    assert info.value.prompt_tokens == 40000


def test_the_chapter_is_passed_whole():
    chapter = "\n".join(f"Paragraph {i}: " + "word " * 50 for i in range(200))
    llm = FakeScriptedLLM(CAST, script(["p1", "p1", "p2", "p3"]), n_ctx=200_000)
    # it fits: one call
    write_screenplay(
        llm, chapter, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4, scene_chars=0)
    )
    assert chapter.strip() in llm.calls[0]["messages"][1]["content"]
    assert chapter.strip() in llm.calls[1]["messages"][1]["content"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chapter": ""}, "chapter is empty"),
        ({"chapter": " \n\t "}, "chapter is empty"),
        ({"chapter": None}, "chapter must be text"),
        ({"language": "xx"}, "language must be one of: auto, zh, en, ja, ko, fr, es, ru, de"),
        ({"panels": 0}, "panels must be from 1 to 240, got 0"),
        ({"panels": 241}, "panels must be from 1 to 240, got 241"),
        ({"panels": 2.5}, "panels must be a whole number from 1 to 240"),
        ({"panels": "lots"}, "panels must be a whole number from 1 to 240 or 'auto', got 'lots'"),
        ({"panels": True}, "panels must be a whole number"),
        ({"dialogue": -1}, "dialogue must be from 0 to 480, got -1"),
        ({"dialogue": 481}, "dialogue must be from 0 to 480"),
        ({"scene_chars": -5}, "scene_chars must be from 0 to 1000000, got -5"),
        ({"max_characters": 0}, "max_characters must be from 1 to 16"),
        ({"max_characters": 17}, "max_characters must be from 1 to 16"),
        ({"style": "  "}, "style is empty"),
        ({"style": "x" * 201}, "at most 200"),
        ({"max_attempts": 0}, "max_attempts must be from 1 to 10"),
    ],
)
def test_inputs_are_checked_before_any_call(kwargs: dict[str, Any], message: str):
    llm = FakeScriptedLLM()
    args = {"chapter": CHAPTER, **kwargs}
    chapter = args.pop("chapter")
    with pytest.raises(InputError, match=message):
        write_screenplay(llm, chapter, ScreenplayRequest(**args))
    assert llm.calls == []


def test_one_call_context_reaches_every_call():
    """One progress report per call (cast, script), through the one context the caller gives."""
    seen: list[tuple[int, int]] = []
    llm = FakeScriptedLLM(CAST, script(["p1", "p1", "p2", "p3"]))
    request = ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4)
    write_screenplay(llm, CHAPTER, request, context=CallContext(lambda d, t: seen.append((d, t))))
    assert len(seen) == 2 and all(0 < done <= total for done, total in seen), seen


def test_the_engine_has_one_calling_convention():
    """No engine call takes a context and the loose on_progress/cancel beside it, or a request and
    its options beside it: one form of each argument (the signatures are inspected)."""
    import importlib
    import inspect
    import pkgutil

    import mangaka

    two_forms = []
    for info in pkgutil.walk_packages(mangaka.__path__, "mangaka."):
        if ".devtools" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            functions = [obj] if inspect.isfunction(obj) else []
            if inspect.isclass(obj):
                functions = [f for f in vars(obj).values() if inspect.isfunction(f)]
            for func in functions:
                if getattr(func, "__module__", None) != info.name:
                    continue
                params = inspect.signature(func).parameters
                if "context" in params and ({"on_progress", "cancel"} & set(params)):
                    two_forms.append(f"{info.name}.{func.__qualname__}: context and on_progress/cancel")
                var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
                if "request" in params and var_kw:
                    two_forms.append(f"{info.name}.{func.__qualname__}: request and **options")
    assert two_forms == []
    with pytest.raises(TypeError, match="request must be a ScreenplayRequest"):
        write_screenplay(FakeScriptedLLM(), CHAPTER, {"panels": 3})  # type: ignore[arg-type]


def test_a_cancelled_context_stops_before_the_first_try():
    llm = FakeScriptedLLM(CAST)
    with pytest.raises(Cancelled, match="interrupted before try 1"):
        generate_json(llm, MESSAGES, SCHEMA, context=CallContext(cancel=lambda: True))
    assert llm.calls == []


def test_a_lone_surrogate_from_a_server_without_the_grammar_is_retried_with_feedback():
    # Issue 19: a remote server that does not enforce the grammar sent "\ud800"; the schema let it
    # through and the models raised pydantic's ValidationError from write_screenplay.
    bad = script(["p1", "p2", "p2", "p3"])
    bad["dialogue"][0]["line"] = "Did we miss it? \ud800"
    bad_cast = copy.deepcopy(CAST)
    bad_cast["characters"][0]["name"] = "Akira\udfff"
    llm = FakeScriptedLLM(bad_cast, CAST, bad, script(["p1", "p2", "p2", "p3"]))
    result = write_screenplay(llm, CHAPTER, ScreenplayRequest(dialogue_from="free", panels=3, dialogue=4))
    assert [bool(a.problems) for a in result.attempts] == [True, False, True, False]
    assert result.attempts[0].problems == [
        "characters[0].name: holds a lone surrogate (\\udfff), which is not a character; "
        "write the text itself, as UTF-8"
    ]
    assert "dialogue[0].line: holds a lone surrogate (\\ud800)" in llm.calls[3]["messages"][-1]["content"]
