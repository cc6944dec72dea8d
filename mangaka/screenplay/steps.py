"""The Screenwriter's steps: the prompts of a request, each call's token budget, and the plan,
cast and script calls, each checked and repaired (``generate.py`` puts them together)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import GenerationError, InputError
from ..llm.base import LLM, CallContext, Completion, Message, Usage
from ..llm.budget import json_token_budget
from ..prompts import prompt
from ..structured import Attempt, generate_json, json_path, model_problems
from .bible import SeriesBible
from .grounded import (
    Grounding,
    assemble_grounded,
    cast_names,
    fill_empty_captions,
    grounded_problems,
    line_hints,
    line_speakers,
    name_ids,
    name_problems,
    quote_listing,
    repair_grounded,
    repair_ids,
    repair_sure,
    script_schema,
    stored_panel,
    strip_annotations,
)
from .models import (
    ANGLES,
    EMOTIONS,
    MAX_ACTION,
    MAX_APPEARANCE,
    MAX_CAST,
    MAX_LINE,
    MAX_NAME,
    MAX_TITLE,
    NARRATOR,
    SCREENPLAY_VERSION,
    SHOTS,
    Character,
    Line,
    Screenplay,
)
from .repair import repair_cast, repair_script
from .request import ScreenplayRequest
from .schema import cast_call_schema, panel_ids, script_call_schema
from .validate import cast_problems, validate_screenplay

logger = logging.getLogger(__name__)

# Each screenplay language is prompted in the language of its prompt files: its own where there
# are some (en, zh, ja), else English (``prompt_language`` chooses another).
PROMPT_LANGUAGE = {
    "en": "en",
    "zh": "zh",
    "ja": "ja",
    "ko": "en",
    "fr": "en",
    "es": "en",
    "ru": "en",
    "de": "en",
}
LANGUAGE_NAMES = {
    "en": {
        "en": "English", "zh": "Simplified Chinese", "ja": "Japanese", "ko": "Korean", "fr": "French",
        "es": "Spanish", "ru": "Russian", "de": "German",
    },
    "zh": {
        "en": "英文", "zh": "简体中文", "ja": "日文", "ko": "韩文", "fr": "法文", "es": "西班牙文",
        "ru": "俄文", "de": "德文",
    },
    "ja": {
        "en": "英語", "zh": "簡体字中国語", "ja": "日本語", "ko": "韓国語", "fr": "フランス語",
        "es": "スペイン語", "ru": "ロシア語", "de": "ドイツ語",
    },
}  # fmt: skip


class _Cast(BaseModel):
    """The cast call's reply as the models read it (its schema is ``cast_call_schema``)."""

    characters: list[Character]


def check_cast(cast: Sequence[Character | dict[str, Any]]) -> list[Character]:
    """A given cast, checked: up to a screenplay's ``MAX_CAST`` (a long chapter's scenes together
    may list more people than one cast call does)."""
    if not 1 <= len(cast) <= MAX_CAST:
        raise InputError(f"cast: give from 1 to {MAX_CAST} characters, got {len(cast)}")
    characters = []
    for i, c in enumerate(cast):
        try:
            characters.append(c if isinstance(c, Character) else Character.model_validate(c))
        except ValidationError as e:
            raise InputError(f"cast[{i}] is not a valid character: {e}") from None
    problems = cast_problems([c.model_dump() for c in characters], "cast")
    if problems:
        raise InputError("cast: " + "; ".join(problems))
    return characters


def script_problems(script: dict[str, Any], cast_ids: list[str], panels: int) -> list[str]:
    """Semantic problems of a schema-valid script reply (paths as in the reply)."""
    problems = []
    ids = panel_ids(panels)
    speakers = [*cast_ids, NARRATOR]
    for i, d in enumerate(script["dialogue"]):
        if d["speaker"] not in speakers:
            problems.append(f"dialogue[{i}].speaker: {d['speaker']!r} is not one of {', '.join(speakers)}")
        if d["panel"] not in ids:
            problems.append(f"dialogue[{i}].panel: {d['panel']!r} is not one of {', '.join(ids)}")
        if not d["line"].strip():
            problems.append(f"dialogue[{i}].line: is blank; write the words this line says")
    for j, p in enumerate(script["panels"]):
        if p["id"] != ids[j]:
            problems.append(f"panels[{j}].id: must be {ids[j]!r}, got {p['id']!r}")
        for k, cid in enumerate(p["characters"]):
            if cid not in cast_ids:
                problems.append(f"panels[{j}].characters[{k}]: {cid!r} is not one of {', '.join(cast_ids)}")
    return problems


def assemble_screenplay(script: dict[str, Any], cast: list[Character], language: str) -> Screenplay:
    """The stored screenplay from a valid script reply: ids ``d1..dN`` in reading order, ``p1..pM``.

    Lines are ordered by the panel that carries them, then as written (a no-op when the model
    placed them in order); a character listed twice in one panel is listed once.
    """
    panel_index = {p["id"]: j for j, p in enumerate(script["panels"])}
    order = sorted(
        range(len(script["dialogue"])), key=lambda i: (panel_index[script["dialogue"][i]["panel"]], i)
    )
    if order != sorted(order):
        logger.info("screenplay: dialogue lines reordered to follow the panels they were placed in")
    lines: list[Line] = []
    by_panel: dict[str, list[str]] = {p["id"]: [] for p in script["panels"]}
    for n, i in enumerate(order, 1):
        d = script["dialogue"][i]
        lines.append(Line(id=f"d{n}", speaker=d["speaker"], line=d["line"], emotion=d["emotion"]))
        by_panel[d["panel"]].append(f"d{n}")
    panels = [
        stored_panel(p, by_panel[p["id"]], list(dict.fromkeys(p["characters"]))) for p in script["panels"]
    ]
    return Screenplay(
        version=SCREENPLAY_VERSION,
        title=script["title"],
        language=language,
        characters=cast,
        dialogue=lines,
        panels=panels,
    )


def cast_listing(cast: list[Character]) -> str:
    return "\n".join(f"- {c.id}: {c.name} — {c.appearance}" for c in cast)


@dataclass(frozen=True)
class Step:
    """What one step of the Screenwriter gives: its value, its tries and the tokens it cost."""

    value: Any
    attempts: list[Attempt] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    @classmethod
    def of(cls, value: Any, attempts: list[Attempt]) -> Step:
        return cls(value, attempts, sum((a.usage for a in attempts), Usage()))


@dataclass(frozen=True)
class Prompts:
    """The messages of every call of one request: a shared prefix (system prompt, chapter, plan),
    then the call's task. The chapter is a message of its own: the backend snapshots the prompt
    at message boundaries, so the script call (and every retry) reuses the decoded chapter."""

    request: ScreenplayRequest
    system: str
    chapter: str
    plan: str = ""
    scene: str = ""  # a scene's place in the chapter and the story so far ("" for a whole chapter)
    grounding: Grounding | None = None  # the part of the chapter's source map (grounded requests)

    @classmethod
    def build(cls, request: ScreenplayRequest, chapter: str, grounding: Grounding | None = None) -> Prompts:
        """The prompts of ``request`` on ``chapter``; a grounded request numbers the chapter's units
        (``grounding``: the call's part of the chapter's map; default: all of ``chapter``)."""
        plang = request.prompt_language or PROMPT_LANGUAGE[request.language]
        language_name = LANGUAGE_NAMES[plang][request.language]
        system = prompt(
            "screenwriter/system", plang, style=request.style.strip(), language_name=language_name
        )
        if request.grounded:
            grounding = grounding or Grounding.of(chapter, request.language)
            text = grounding.numbered_text()
        else:
            grounding, text = None, chapter.strip()
        return cls(request, system, prompt("screenwriter/chapter", plang, chapter=text), grounding=grounding)

    @property
    def language(self) -> str:
        """The language of the prompt files (and of the feedback messages)."""
        return self.request.prompt_language or PROMPT_LANGUAGE[self.request.language]

    def with_plan(self, plan: str) -> Prompts:
        return replace(self, plan=plan)

    def with_story_so_far(self, summary: str, overlap: str, number: int, total: int) -> Prompts:
        """The prompts of scene ``number`` of ``total``: told the story so far and how the scene
        before ended, both already adapted."""
        earlier = self.task("scene_before", summary=summary, overlap=overlap) if number > 1 else ""
        note = self.task("scene", number=number, total=total) + (f"\n\n{earlier}" if earlier else "")
        return replace(self, scene=note)

    def task(self, name: str, **values: Any) -> str:
        return prompt(f"screenwriter/{name}", self.language, **values)

    def messages(self, task: str) -> list[Message]:
        notes = [{"role": "user", "content": self.scene}] if self.scene else []
        if self.plan:
            notes.append({"role": "user", "content": self.task("planned", plan=self.plan)})
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.chapter},
            *notes,
            {"role": "user", "content": task},
        ]


@dataclass(frozen=True)
class Budget:
    """Worst-case tokens of each call, computed once, so one progress bar spans the whole request.

    The script's budget is sized for the longest possible ids, as the cast is not known yet."""

    plan: int
    cast: int
    script: int

    @classmethod
    def of(cls, request: ScreenplayRequest, *, cast_call: bool, grounding: Grounding | None = None) -> Budget:
        longest_ids = [f"c{i}".ljust(32, "x") for i in range(request.max_characters)]
        if request.grounded and grounding is not None:
            hints = {line.number: longest_ids[0] for line in grounding.lines}
            script = script_schema(grounding, longest_ids, request.panels, request.dialogue, hints)
        else:
            script = script_call_schema(longest_ids, request.panels, request.dialogue)
        return cls(
            plan=request.think_tokens,
            cast=cast_budget(request, grounding) if cast_call else 0,
            script=json_token_budget(script),
        )

    @property
    def total(self) -> int:
        return self.plan + self.cast + self.script


def cast_budget(request: ScreenplayRequest, grounding: Grounding | None = None) -> int:
    """The cast call's worst-case tokens (names from ``grounding`` when the request is grounded)."""
    if request.grounded and grounding is not None:
        return json_token_budget(cast_call_schema(request.max_characters, *cast_names(grounding)))
    return json_token_budget(cast_call_schema(request.max_characters))


def plan_step(llm: LLM, prompts: Prompts, context: CallContext) -> Step:
    """The optional planning call: free text with thinking on, within ``think_tokens``."""
    request = prompts.request
    if not request.think_tokens:
        return Step("")
    task = prompts.task(
        "plan", panels=request.panels, dialogue=request.dialogue, max_characters=request.max_characters
    )
    try:
        planned = llm.complete(
            prompts.messages(task),
            sampling=request.sampling_settings,
            max_tokens=request.think_tokens,
            thinking=True,
            context=context,
        )
    except GenerationError as e:  # thought until the budget: the plan is the reasoning so far
        if not isinstance(e.completion, Completion):
            raise
        planned = replace(e.completion, finish_reason="length")
    plan = "\n\n".join(part.strip() for part in (planned.reasoning, planned.text) if part.strip())
    if planned.finish_reason == "length":
        logger.warning(
            "the plan used its whole budget of %d tokens; the screenplay follows it as far as it got "
            "(raise think_tokens for a complete plan)",
            request.think_tokens,
        )
    if not plan:
        logger.warning("the planning call returned nothing; writing without a plan")
    return Step(plan, [], planned.usage)


def cast_task(prompts: Prompts) -> str:
    """The cast call's task (without a bible's known characters)."""
    return prompts.task(
        "cast",
        max_characters=prompts.request.max_characters,
        max_name=MAX_NAME,
        max_appearance=MAX_APPEARANCE,
    )


def cast_step(
    llm: LLM, prompts: Prompts, budget: int, context: CallContext, bible: SeriesBible | None = None
) -> Step:
    """The cast call: the characters (id, name, canonical appearance), repaired and checked.

    With a ``bible``, the call is shown the known characters, and each character it lists that the
    bible knows (by name or alias, else by id) becomes the bible's entry: the call only adds."""
    request = prompts.request
    task = cast_task(prompts)
    if bible:
        task += "\n\n" + prompts.task("cast_known", known=bible.listing())
    names: list[str] = []
    required: list[str] = []
    if prompts.grounding is not None:
        known = [n for c in bible.characters for n in (c.name, *c.aliases)] if bible else []
        names, required = cast_names(prompts.grounding, known)
        if not required:  # nobody named: the names are the model's own (a bible's still map after)
            names = []
            logger.warning(
                "screenplay cast: the chapter names nobody the rules recognise (speakers next to quotes, "
                "names used again and again); the cast's names are the model's own"
            )

    def check(d: dict[str, Any]) -> list[str]:
        found = cast_problems(d["characters"]) or model_problems(_Cast, d)
        return found or (name_problems(d["characters"], names) if names else [])

    schema = cast_call_schema(request.max_characters, names, required, name_ids(required))

    def repair(d: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
        d, renamed = repair_ids(d) if names else (d, [])
        d, more = repair_cast(d)
        d, stripped = strip_annotations(d)
        return d, renamed + more + stripped

    data, tries = generate_json(
        llm,
        prompts.messages(task),
        schema,
        repair=repair,
        validate=check,
        max_attempts=request.max_attempts,
        max_tokens=max(budget, json_token_budget(schema)),
        sampling=request.sampling_settings,
        context=context,
        language=prompts.language,
        call="screenplay cast",
    )
    characters = [Character.model_validate(c) for c in data["characters"]]
    if bible:
        characters, _ = bible.map_cast(characters, request.language)
    return Step.of(characters, tries)


def script_task(prompts: Prompts, cast: list[Character], panels: int, dialogue: int) -> str:
    if prompts.grounding is not None:
        return _grounded_task(prompts, cast, panels, dialogue)
    return prompts.task("script", **_script_values(cast, panels), dialogue=dialogue)


def _script_values(cast: list[Character], panels: int) -> dict[str, Any]:
    """The placeholders both script prompts share."""
    return dict(
        cast=cast_listing(cast),
        panels=panels,
        panel_ids=", ".join(panel_ids(panels)),
        emotions=", ".join(EMOTIONS),
        shots=", ".join(SHOTS),
        angles=", ".join(ANGLES),
        max_title=MAX_TITLE,
        max_line=MAX_LINE,
        max_action=MAX_ACTION,
    )


def _grounded_task(prompts: Prompts, cast: list[Character], panels: int, dialogue: int) -> str:
    grounding = prompts.grounding
    assert grounding is not None
    lines = len(grounding.lines)
    first, last = grounding.units
    return prompts.task(
        "script_grounded",
        **_script_values(cast, panels),
        units=f"[{first}]–[{last}]" if last > first else f"[{first}]",
        quotes=quote_listing(
            grounding,
            line_hints(grounding, cast, prompts.request.language, prompts.request.speaker_hints),
            line_speakers(
                grounding, cast, prompts.request.language, prompts.request.speaker_guesses == "force"
            ),
        ),
        lines=min(lines, dialogue),
        total=lines,
        captions=max(0, dialogue - lines),
    )


def assemble(script: dict[str, Any], cast: list[Character], prompts: Prompts) -> Screenplay:
    """The stored screenplay of a valid script reply of ``prompts``' call (grounded or free)."""
    if prompts.grounding is not None:
        return assemble_grounded(script, cast, prompts.request.language, prompts.grounding)
    return assemble_screenplay(script, cast, prompts.request.language)


def script_step(llm: LLM, prompts: Prompts, cast: list[Character], context: CallContext) -> Step:
    """The script call: exactly N lines and M panels under a schema built from ``cast`` (grounded:
    the chapter's quoted lines and panels from its units, ``grounded.py``)."""
    request = prompts.request
    grounding = prompts.grounding
    cast_ids = [c.id for c in cast]
    if grounding is None:
        schema = script_call_schema(cast_ids, request.panels, request.dialogue)

        def repair(script: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
            script, repairs = repair_script(script)
            script, stripped = strip_annotations(script)
            return script, repairs + stripped

        def problems(script: dict[str, Any]) -> list[str]:
            return script_problems(script, cast_ids, request.panels)

    else:
        numbers = [line.number for line in grounding.lines]
        sure = line_speakers(grounding, cast, request.language, request.speaker_guesses == "force")
        hints = line_hints(grounding, cast, request.language, request.speaker_hints)
        schema = script_schema(grounding, cast_ids, request.panels, request.dialogue, hints, sure)

        def repair(script: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:  # type: ignore[misc]
            script, repairs = repair_script(script)
            script, more = repair_grounded(script, numbers)
            script, settled = repair_sure(script, sure, grounding.map.title)
            script, stripped = strip_annotations(script)
            script, filled = fill_empty_captions(script, grounding)
            return script, repairs + more + settled + stripped + filled

        def problems(script: dict[str, Any]) -> list[str]:
            return grounded_problems(script, grounding)

    def check_script(script: dict[str, Any]) -> list[str]:
        found = problems(script)
        if found:
            return found
        try:
            assembled = assemble(script, cast, prompts)
        except ValidationError as e:  # cannot happen while the call schema matches the models
            return [f"{json_path(err['loc'])}: {err['msg']}" for err in e.errors()]
        return validate_screenplay(assembled.model_dump(mode="json"))

    script, tries = generate_json(
        llm,
        prompts.messages(script_task(prompts, cast, request.panels, request.dialogue)),
        schema,
        repair=repair,
        validate=check_script,
        max_attempts=request.max_attempts,
        max_tokens=json_token_budget(schema),
        sampling=request.sampling_settings,
        context=context,
        language=prompts.language,
        call="screenplay script",
    )
    return Step.of(script, tries)
