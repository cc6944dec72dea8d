"""Who speaks each quoted line, in the script call: the speakers and the title the chapter settles
are forced (a ``const``), the reading's guesses are shown as ``likely`` (``speaker_hints``) or
forced too (``speaker_guesses="force"``), and the rest is the model's choice among the cast."""

from __future__ import annotations

import logging

from mangaka.screenplay import write_screenplay
from mangaka.screenplay.grounded import repair_sure
from mangaka.screenplay.request import ScreenplayRequest
from mangaka.source import source_map
from tests.unit.support import SchemaLLM, cast_reply, script_reply

# Three paragraphs, each a line Mei says (attributed).
SCENE = "\n\n".join(f'Mei looked at Akira. "Line {k} of Mei," said Mei.' for k in range(3))


def test_speaker_hints_off_shows_the_model_no_likely_speaker():
    """The reading's guesses (here the name nearest each line, two people in each paragraph) reach
    the model as ``likely`` (listing and schema) unless the request turns them off; the rest of the
    call is the same."""
    chapter = "\n\n".join(f'Akira watched Mei. "Line {k}."' for k in range(3))
    assert [(q.hint, q.sure) for q in source_map(chapter, "en").quotes] == [("Mei", False)] * 3
    calls = {}
    for hints in (True, False):
        llm = SchemaLLM(cast_reply, script_reply)
        write_screenplay(llm, chapter, ScreenplayRequest(panels=3, dialogue=3, speaker_hints=hints))
        calls[hints] = llm.calls[1]
    on, off = calls[True], calls[False]
    said = {hints: "\n".join(m["content"] for m in call["messages"]) for hints, call in calls.items()}
    assert said[True].count(", likely mei]") == 3
    assert ", likely" not in said[False]
    assert said[True].replace(", likely mei]", "]") == said[False]
    lines = [item["properties"] for item in on["schema"]["properties"]["dialogue"]["prefixItems"]]
    assert [line["likely"]["const"] for line in lines] == ["mei"] * 3
    lines = [item["properties"] for item in off["schema"]["properties"]["dialogue"]["prefixItems"]]
    assert all("likely" not in line for line in lines)
    rest = [{**call["schema"]["properties"], "dialogue": None} for call in (on, off)]
    assert rest[0] == rest[1]


def test_speaker_guesses_force_writes_the_guesses_as_speakers_and_leaves_the_rest_open():
    """With ``speaker_guesses="force"`` a guessed line's speaker is a ``const`` (``speaker mei`` in
    the listing, no ``likely``), whatever ``speaker_hints`` says; a line the reading has no guess
    for stays the model's choice among the cast."""
    chapter = "\n\n".join(f'Akira watched Mei. "Line {k}."' for k in range(3)) + '\n\n"Mei? Akira?"'
    guessed = [(q.hint, q.sure) for q in source_map(chapter, "en").quotes]
    assert guessed == [("Mei", False)] * 3 + [(None, False)]  # the last names both: spoken to
    for hints in (True, False):
        llm = SchemaLLM(cast_reply, script_reply)
        request = ScreenplayRequest(panels=3, dialogue=4, speaker_hints=hints, speaker_guesses="force")
        sp = write_screenplay(llm, chapter, request).screenplay
        lines = [
            item["properties"] for item in llm.calls[1]["schema"]["properties"]["dialogue"]["prefixItems"]
        ]
        forced = [line["speaker"].get("const") for line in lines]
        assert forced == ["mei"] * 3 + [None]
        assert lines[3]["speaker"] == {"$ref": "#/$defs/speaker"}
        assert all("likely" not in line for line in lines)
        said = "\n".join(m["content"] for m in llm.calls[1]["messages"])
        assert said.count(", speaker mei]") == 3 and ", likely" not in said
        assert [line.speaker for line in sp.dialogue if line.quote][:3] == ["mei"] * 3


def test_the_speakers_and_the_title_the_text_settles_are_forced_whatever_the_hints_option():
    """An attribution is forced: a ``const`` speaker in the schema and ``speaker mei`` in the
    listing, with hints on or off; the chapter's heading is the title's ``const``; a reply that
    differs (a server ignoring ``const``) is repaired to what the chapter says."""
    chapter = "Chapter 3: Tea\n\n" + SCENE
    for hints in (True, False):
        llm = SchemaLLM(cast_reply, script_reply)
        sp = write_screenplay(
            llm, chapter, ScreenplayRequest(panels=3, dialogue=3, speaker_hints=hints)
        ).screenplay
        schema = llm.calls[1]["schema"]
        lines = [item["properties"] for item in schema["properties"]["dialogue"]["prefixItems"]]
        assert [line["speaker"]["const"] for line in lines] == ["mei"] * 3
        assert all("likely" not in line for line in lines)
        assert schema["properties"]["title"]["const"] == "Chapter 3: Tea" == sp.title
        said = "\n".join(m["content"] for m in llm.calls[1]["messages"])
        assert said.count(", speaker mei]") == 3
    script = script_reply(llm.calls[1]["schema"])
    wrong = {**script, "title": "Other", "dialogue": [{**d, "speaker": "akira"} for d in script["dialogue"]]}
    fixed, repairs = repair_sure(wrong, {d["quote"]: "mei" for d in script["dialogue"]}, "Chapter 3: Tea")
    assert fixed["title"] == "Chapter 3: Tea" and {d["speaker"] for d in fixed["dialogue"]} == {"mei"}
    assert len(repairs) == 4


class SizedLLM(SchemaLLM):
    """A fake whose model has a size, as an in-process one does (``LlamaCppLLM.parameters``)."""

    def __init__(self, parameters: int, *replies) -> None:
        super().__init__(*replies)
        self.parameters = parameters


def test_auto_forces_the_guesses_for_a_small_model_and_shows_them_to_a_larger_or_unknown_one(caplog):
    request = ScreenplayRequest()
    assert request.speaker_guesses == "auto"
    caplog.set_level(logging.INFO, logger="mangaka")
    assert request.for_model(134_515_008).speaker_guesses == "force"
    assert request.for_model(35_000_000_000).speaker_guesses == "hint"
    assert request.for_model(None).speaker_guesses == "hint"  # a server's model: its size unknown
    assert ScreenplayRequest(speaker_guesses="hint").for_model(1).speaker_guesses == "hint"
    chapter = "\n\n".join(f'Akira watched Mei. "Line {k}."' for k in range(3))
    shown = {}
    for llm in (SizedLLM(134_515_008, cast_reply, script_reply), SchemaLLM(cast_reply, script_reply)):
        write_screenplay(llm, chapter, ScreenplayRequest(panels=3, dialogue=3))
        said = "\n".join(m["content"] for m in llm.calls[1]["messages"])
        shown[type(llm).__name__] = (said.count(", speaker mei]"), said.count(", likely mei]"))
    assert shown == {"SizedLLM": (3, 0), "SchemaLLM": (0, 3)}
    said = [r.getMessage() for r in caplog.records if "guessed by the reading are forced" in r.getMessage()]
    assert said == [
        "speakers: 3 lines' speakers guessed by the reading are forced, as sure ones are (a model of "
        "0.13B parameters; speaker_guesses 'hint' lets it choose)"
    ]
