"""The Screenwriter: chapter text → a schema-valid ``Screenplay``, in two constrained LLM calls.

0. Optionally first, a planning call with thinking on (free text, ``think_tokens`` > 0): its
   reasoning and notes go into both calls below and come back as ``ScreenplayResult.thinking``.
1. The cast call lists the characters (ids, names, canonical appearance).
2. The script call writes exactly N dialogue lines and exactly M panels, under a schema built from
   the cast, so speakers, panel characters and each line's panel are enums: the grammar alone
   guarantees the structure and every reference, even for a random-weight model.

We then assemble the stored screenplay: lines are numbered ``d1..dN`` in reading order (by panel,
then in the order written), panels ``p1..pM``, and each panel's ``dialogue`` lists its lines.

Both calls share one prefix (system prompt, then the chapter) and differ only in the task that
follows the chapter, so a backend that reuses the prompt prefix decodes the chapter once. The calls
themselves (prompts, budgets, checks, repairs) are ``steps.py``.

A chapter that does not fit one call is written scene by scene (``plan_scenes``; where it is cut
and how counts are spread is ``scenes.py``): the cast calls of every scene in order, then every
scene's plan and script, and ``assemble_scenes`` makes one screenplay with continuous ids.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError, InvalidOutputError
from ..llm.base import LLM, CallContext, Usage
from ..source.reading import Corrections
from ..structured import Attempt
from .bible import SeriesBible
from .grounded import Grounding
from .models import (
    MAX_CAST,
    SCREENPLAY_VERSION,
    Character,
    Line,
    Panel,
    Screenplay,
)
from .request import ScreenplayRequest, check_chapter
from .scenes import (
    CAST_LINE_CHARS,
    MAX_OVERLAP_CHARS,
    MAX_SUMMARY_CHARS,
    OUTPUT_TOKENS_PER_LINE,
    OUTPUT_TOKENS_PER_PANEL,
    OUTPUT_TOKENS_PER_QUOTED_LINE,
    SHRINK,
    Paragraph,
    Scene,
    paragraphs,
    scene_counts,
    split_scenes,
    story_so_far,
)
from .steps import (
    Budget,
    Prompts,
    Step,
    assemble,
    assemble_screenplay,
    cast_budget,
    cast_step,
    check_cast,
    plan_step,
    script_step,
    script_task,
)

logger = logging.getLogger(__name__)


@dataclass
class ScreenplayResult:
    screenplay: Screenplay
    attempts: list[Attempt] = field(default_factory=list)  # every try of both calls, in order
    usage: Usage = field(default_factory=Usage)  # summed over every try (and the plan)
    thinking: str = ""  # the planning call's reasoning and notes ("" without one)
    scenes: list[Scene] = field(default_factory=list)  # the parts written by calls of their own

    @property
    def repairs(self) -> list[str]:
        """What was fixed without asking the model, in the accepted tries: ``"<call>: <path>: <change>"``."""
        return [f"{a.call}: {r}" for a in self.attempts if not a.problems for r in a.repairs]

    def summary(self) -> str:
        """One line: what was written, in how many tries, with how many repairs."""
        sp = self.screenplay
        retried = sum(1 for a in self.attempts if a.problems)
        return (
            f"{len(sp.characters)} characters, {len(sp.dialogue)} lines, {len(sp.panels)} panels; "
            f"{len(self.attempts)} tries ({retried} retried), {len(self.repairs)} repairs, "
            f"{self.usage.completion_tokens} tokens generated"
        )

    def report(self) -> str:
        """The summary, then each repair on a line of its own (the Screenwriter node's report)."""
        return "\n".join([self.summary(), *(f"repaired {r}" for r in self.repairs)])


def write_screenplay(
    llm: LLM,
    chapter: str,
    request: ScreenplayRequest,
    *,
    cast: Sequence[Character | dict[str, Any]] | None = None,
    bible: SeriesBible | None = None,
    context: CallContext | None = None,
    reading: Corrections | None = None,
) -> ScreenplayResult:
    """Write a screenplay of ``chapter`` as ``request`` asks.

    ``reading``: a person's corrections of the chapter's reading (``source/reading.py``): their
    speakers, names and title are forced as the text's own are.

    The steps: plan (when ``think_tokens`` > 0), cast (unless ``cast`` gives a known cast, e.g. a
    character bible), script, assemble. ``bible``: the series' known characters; the cast call is
    shown them and only adds new ones (a listed character the bible knows, by name or alias, else
    by id, is the bible's entry), and a given ``cast`` is mapped onto it the same way; the
    screenplay's ids are then the bible's. ``context``: one progress bar counts generated tokens
    over every call against their worst-case budgets; its ``cancel()`` stops the run.

    A chapter that does not fit one call (the context, ``scene_chars``, or more panels or lines
    than one call writes) is written scene by scene (``scenes.py``): every scene's cast first, each
    shown the characters of the scenes before it, then every scene's script with the chapter's
    cast, the story so far and the end of the scene before; the scenes become one screenplay with
    continuous ids and each panel's ``scene``. The chapter is never cut: a paragraph that alone does
    not fit is an ``InputError``. Raises ``InputError`` for unusable inputs, ``InvalidOutputError``
    (every attempt attached) when a call stays invalid after ``max_attempts`` tries, ``Cancelled``
    when asked.
    """
    request = _request(request)
    context = context or CallContext()
    check_chapter(chapter)
    asked = request.for_chapter(chapter)
    request = _for_model(asked, llm)
    known_cast = check_cast(cast) if cast is not None else None
    if known_cast is not None and bible:
        known_cast, _ = bible.map_cast(known_cast, request.language)
    grounding = _grounding(chapter, request, reading)
    _say_forced_guesses(asked, request, grounding, llm)
    scenes = plan_scenes(llm, chapter, request)
    if len(scenes) > 1:
        return _write_scenes(llm, scenes, request, known_cast, bible, context, grounding)
    request = _with_counts(request, scenes[0])
    prompts = Prompts.build(request, chapter, grounding)
    budget = Budget.of(request, cast_call=known_cast is None, grounding=grounding)

    plan = plan_step(llm, prompts, context.share(0, budget.total))
    prompts = prompts.with_plan(plan.value)
    if known_cast is None:
        characters = cast_step(llm, prompts, budget.cast, context.share(budget.plan, budget.total), bible)
    else:
        characters = Step(known_cast)
    try:
        script = script_step(
            llm, prompts, characters.value, context.share(budget.plan + budget.cast, budget.total)
        )
    except InvalidOutputError as e:  # the cast call's tries come first in the error
        raise InvalidOutputError(str(e), [*(a.as_dict() for a in characters.attempts), *e.attempts]) from e
    screenplay = assemble(script.value, characters.value, prompts)
    attempts = characters.attempts + script.attempts
    result = ScreenplayResult(
        screenplay, attempts, plan.usage + characters.usage + script.usage, plan.value, scenes
    )
    logger.info("screenplay: %s", result.summary())
    return result


def _for_model(request: ScreenplayRequest, llm: LLM) -> ScreenplayRequest:
    """``request`` with ``speaker_guesses`` settled for ``llm``'s size (``ScreenplayRequest.for_model``)."""
    return request.for_model(getattr(llm, "parameters", None))  # a server's model: its size unknown


def _say_forced_guesses(
    asked: ScreenplayRequest, settled: ScreenplayRequest, grounding: Grounding | None, llm: LLM
) -> None:
    """Log how many lines' guessed speakers ``auto`` (``asked``) forces for a small model, when it
    does (``settled``: the request ``_for_model`` made of it)."""
    if asked.speaker_guesses != "auto" or settled.speaker_guesses != "force" or not grounding:
        return
    guessed = sum(1 for q in grounding.map.quotes if q.kind == "speech" and q.hint and not q.sure)
    if guessed:
        logger.info(
            "speakers: %d lines' speakers guessed by the reading are forced, as sure ones are (a "
            "model of %.2gB parameters; speaker_guesses 'hint' lets it choose)",
            guessed,
            llm.parameters / 1e9,  # type: ignore[attr-defined]
        )


def _request(request: ScreenplayRequest) -> ScreenplayRequest:
    if not isinstance(request, ScreenplayRequest):
        raise TypeError(f"request must be a ScreenplayRequest, not {type(request).__name__}")
    return request


def _grounding(
    chapter: str, request: ScreenplayRequest, reading: Corrections | None = None
) -> Grounding | None:
    """The chapter's source map for a grounded request (``None`` in free mode), a person's
    ``reading`` applied, with a warning when the chapter has no quoted line to keep."""
    if not request.grounded:
        return None
    grounding = Grounding.of(chapter, request.language)
    if reading is not None:
        grounding = replace(grounding, map=reading.apply(grounding.map))
    if not grounding.map.quotes:
        logger.warning(
            "chapter: no quoted lines found (quote marks for %s: see docs/screenplay.md), so every line is a "
            "narrator caption; for a chapter that marks speech another way, choose dialogue 'free'",
            request.language,
        )
    return grounding


def _with_counts(request: ScreenplayRequest, scene: Scene) -> ScreenplayRequest:
    """The request one call makes: the scene's panel and line counts in place of ``auto``."""
    return replace(request, panels=scene.panels, dialogue=scene.dialogue)


# ---- long chapters: scenes ----


def plan_scenes(llm: LLM, chapter: str, request: ScreenplayRequest) -> list[Scene]:
    """The chapter as one scene when it fits one call, else its scenes (``scenes.py``), each with
    its panel and line counts. Counts tokens with ``llm`` (no generation); when the backend does
    not know its context (a remote server), only ``scene_chars`` and the per-call counts split."""
    grounded = request.grounded
    counts = scene_counts(
        [Scene(1, 0, 0, chapter)], request.panels, request.dialogue, request.language, grounded=grounded
    )
    fits = _Fit(llm, request, chapter)
    if counts is not None:
        ((panels, dialogue),) = counts
        within_limit = not request.scene_chars or len(chapter) <= request.scene_chars
        if within_limit and fits.whole(chapter, panels, dialogue):
            paras = paragraphs(chapter, request.language)
            return [Scene(1, 0, max(0, len(paras) - 1), chapter, "", panels, dialogue)]
    room = fits.paragraph_room()
    if room is not None and room <= 0:
        raise InputError(
            f"chapter: does not fit a context of {llm.n_ctx} tokens, and no scene would: the prompt "
            f"alone takes {fits.scene_overhead} tokens and one panel's answer {fits.reserve(1, 1)}; load the "
            "model with a larger context"
        )
    limit = float(min(request.scene_chars or len(chapter), len(chapter)))
    while True:
        scenes = split_scenes(
            chapter, limit, room=room, size=fits.paragraph_tokens if room else None, language=request.language
        )
        smallest = limit <= max(len(p.text) for p in paragraphs(chapter, request.language))
        counts = scene_counts(
            scenes, request.panels, request.dialogue, request.language, clamp=smallest, grounded=grounded
        )
        if counts is not None and all(fits.scene(s, n, d) for s, (n, d) in zip(scenes, counts, strict=True)):
            break
        if smallest:
            raise InputError(
                f"chapter: cannot be split into scenes that fit: even one paragraph a scene leaves too "
                f"little room for {request.panels} panels and {request.dialogue} lines in a context of "
                f"{llm.n_ctx} tokens; ask for fewer panels or lines, or load the model with a larger "
                "context"
            )
        limit *= SHRINK
    scenes = [replace(s, panels=n, dialogue=d) for s, (n, d) in zip(scenes, counts, strict=True)]
    logger.info(
        "screenplay: the chapter (%d characters) is written in %d scenes: %s",
        len(chapter),
        len(scenes),
        ", ".join(f"{s.panels} panels" for s in scenes),
    )
    return scenes


class _Fit:
    """Whether a call's prompt and its output's room fit the context, by counting tokens.

    The prompt is measured with the script task and a stand-in for the cast listing
    (``CAST_LINE_CHARS`` of the chapter's own text per character, so its token density is the
    chapter's); a scene's prompt also holds the story so far and the end of the scene before."""

    def __init__(self, llm: LLM, request: ScreenplayRequest, chapter: str) -> None:
        self.llm, self.n_ctx = llm, llm.n_ctx
        self.grounded = request.grounded
        self._base = 0
        self.overhead = 0  # the prompt of a whole-chapter call, less the chapter
        self.scene_overhead = 0  # the same for a scene, with its note, story so far and overlap
        if self.n_ctx:
            cast = chapter[: request.max_characters * CAST_LINE_CHARS]
            story = chapter[: MAX_SUMMARY_CHARS + MAX_OVERLAP_CHARS]
            prompts = Prompts.build(replace(request, panels=1, dialogue=1), "x")
            task = script_task(prompts, [], 1, 1) + cast
            self._base = llm.count_tokens([{"role": "user", "content": ""}])
            self.overhead = llm.count_tokens(prompts.messages(task))
            scene = prompts.with_story_so_far(story, "", 2, 2)
            self.scene_overhead = llm.count_tokens(scene.messages(task))

    def reserve(self, panels: int, dialogue: int) -> int:
        per_line = OUTPUT_TOKENS_PER_QUOTED_LINE if self.grounded else OUTPUT_TOKENS_PER_LINE
        return panels * OUTPUT_TOKENS_PER_PANEL + dialogue * per_line

    def tokens(self, text: str) -> int:
        return max(0, self.llm.count_tokens([{"role": "user", "content": text}]) - self._base)

    def paragraph_tokens(self, paragraph: Paragraph) -> float:
        return float(self.tokens(paragraph.text))

    def whole(self, chapter: str, panels: int, dialogue: int) -> bool:
        need = self.overhead + self.tokens(chapter) + self.reserve(panels, dialogue)
        return not self.n_ctx or need <= self.n_ctx

    def paragraph_room(self) -> float | None:
        """Tokens one paragraph may have: the context less a scene's prompt and one panel's room."""
        return float(self.n_ctx - self.scene_overhead - self.reserve(1, 1)) if self.n_ctx else None

    def scene(self, scene: Scene, panels: int, dialogue: int) -> bool:
        need = self.scene_overhead + self.tokens(scene.text) + self.reserve(panels, dialogue)
        return not self.n_ctx or need <= self.n_ctx


def _write_scenes(
    llm: LLM,
    scenes: list[Scene],
    request: ScreenplayRequest,
    known_cast: list[Character] | None,
    bible: SeriesBible | None,
    context: CallContext,
    grounding: Grounding | None = None,
) -> ScreenplayResult:
    """Every scene's cast (unless known), then every scene's script; one screenplay of them all."""
    requests = [_with_counts(request, s) for s in scenes]
    parts = _scene_groundings(scenes, grounding)
    budgets = [
        Budget.of(r, cast_call=known_cast is None, grounding=g) for r, g in zip(requests, parts, strict=True)
    ]
    total = sum(b.total for b in budgets)
    offsets = [sum(b.total for b in budgets[:i]) for i in range(len(budgets))]
    attempts: list[Attempt] = []
    usage = Usage()
    if known_cast is None:
        cast, cast_tries, usage = _scene_casts(
            llm, scenes, requests, budgets, offsets, total, bible, context, parts
        )
        attempts += cast_tries
    else:
        cast = known_cast
    if len(cast) > MAX_CAST:
        raise InvalidOutputError(
            f"screenplay cast: the chapter's scenes list {len(cast)} characters, more than a screenplay "
            f"holds ({MAX_CAST}); lower max_characters, or give the cast (a series bible)",
            [a.as_dict() for a in attempts],
        )
    scripts: list[dict[str, Any]] = []
    assembled: list[Screenplay] = []
    plans: list[str] = []
    actions: list[str] = []
    for scene, scene_request, budget, offset, part in zip(
        scenes, requests, budgets, offsets, parts, strict=True
    ):
        prompts = Prompts.build(scene_request, scene.text, part).with_story_so_far(
            story_so_far(actions), scene.overlap, scene.number, len(scenes)
        )
        start = offset + budget.cast
        plan = plan_step(llm, prompts, context.share(start, total))
        prompts = prompts.with_plan(plan.value)
        try:
            script = script_step(llm, prompts, cast, context.share(start + budget.plan, total))
        except InvalidOutputError as e:
            raise InvalidOutputError(
                f"scene {scene.number} of {len(scenes)}: {e}", [*(a.as_dict() for a in attempts), *e.attempts]
            ) from e
        attempts += script.attempts
        usage = usage + plan.usage + script.usage
        scripts.append(script.value)
        assembled.append(assemble(script.value, cast, prompts))
        actions += [p["action"] for p in script.value["panels"]]
        if plan.value:
            plans.append(f"Scene {scene.number}:\n{plan.value}")
    screenplay = assemble_scenes(scripts, cast, request.language, assembled)
    result = ScreenplayResult(screenplay, attempts, usage, "\n\n".join(plans), scenes)
    logger.info("screenplay: %s", result.summary())
    return result


def _scene_casts(
    llm: LLM,
    scenes: list[Scene],
    requests: list[ScreenplayRequest],
    budgets: list[Budget],
    offsets: list[int],
    total: int,
    bible: SeriesBible | None,
    context: CallContext,
    parts: Sequence[Grounding | None] | None = None,
) -> tuple[list[Character], list[Attempt], Usage]:
    """Each scene's cast call in order, each shown the characters found so far (and ``bible``'s);
    the chapter's cast is their union, one entry per person."""
    known = bible or SeriesBible()
    cast: dict[str, Character] = {}
    attempts: list[Attempt] = []
    usage = Usage()
    parts = parts or [None] * len(scenes)
    for scene, scene_request, budget, offset, part in zip(
        scenes, requests, budgets, offsets, parts, strict=True
    ):
        prompts = Prompts.build(scene_request, scene.text, part)
        step = cast_step(llm, prompts, budget.cast, context.share(offset, total), known)
        attempts += step.attempts
        usage = usage + step.usage
        for c in step.value:
            cast.setdefault(c.id, c)
        known = known.updated_with(step.value, 1)
    return list(cast.values()), attempts, usage


def _scene_groundings(scenes: list[Scene], grounding: Grounding | None) -> list[Grounding | None]:
    """Each scene's part of the chapter's source map (``None`` each in free mode)."""
    if grounding is None:
        return [None] * len(scenes)
    if len(scenes) == 1:
        return [grounding]
    return [grounding.scene(s.first, s.last) for s in scenes]


def assemble_scenes(
    scripts: list[dict[str, Any]],
    cast: list[Character],
    language: str,
    parts: Sequence[Screenplay] | None = None,
) -> Screenplay:
    """One screenplay of the scenes' valid script replies (or their screenplays, ``parts``): ids
    ``p1..pM`` and ``d1..dN`` run on across scenes, each panel records its scene, the title is the
    first scene's."""
    panels: list[Panel] = []
    lines: list[Line] = []
    for number, script in enumerate(scripts, 1):
        part = parts[number - 1] if parts else assemble_screenplay(script, cast, language)
        line_ids = {line.id: f"d{len(lines) + k}" for k, line in enumerate(part.dialogue, 1)}
        lines += [line.model_copy(update={"id": line_ids[line.id]}) for line in part.dialogue]
        for p in part.panels:
            panels.append(
                p.model_copy(
                    update={
                        "id": f"p{len(panels) + 1}",
                        "dialogue": [line_ids[i] for i in p.dialogue],
                        "scene": number,
                    }
                )
            )
    characters = cast
    return Screenplay.model_validate(
        {
            "version": SCREENPLAY_VERSION,
            "title": scripts[0]["title"],
            "language": language,
            "characters": [c.model_dump(mode="json") for c in characters],
            "dialogue": [line.model_dump(mode="json") for line in lines],
            "panels": [p.model_dump(mode="json") for p in panels],
        }
    )


def write_cast(
    llm: LLM,
    chapter: str,
    request: ScreenplayRequest,
    *,
    bible: SeriesBible | None = None,
    context: CallContext | None = None,
    reading: Corrections | None = None,
) -> Step:
    """Only the cast call of ``write_screenplay`` (no plan): a ``Step`` whose value is the chapter's
    characters, known ones as ``bible`` has them (a long chapter: every scene's cast call, in
    order). A book's first pass; ``write_screenplay(..., cast=step.value)`` then writes the script."""
    request = _request(request)
    context = context or CallContext()
    check_chapter(chapter)
    request = _for_model(request.for_chapter(chapter), llm)
    grounding = _grounding(chapter, request, reading)
    scenes = plan_scenes(llm, chapter, request)
    parts = _scene_groundings(scenes, grounding)
    budget = max(cast_budget(request, g) for g in parts)
    if len(scenes) == 1:
        prompts = Prompts.build(request, chapter, grounding)
        return cast_step(llm, prompts, budget, context.share(0, budget), bible)
    requests = [_with_counts(request, s) for s in scenes]
    budgets = [Budget(0, budget, 0)] * len(scenes)
    offsets = [i * budget for i in range(len(scenes))]
    cast, attempts, usage = _scene_casts(
        llm, scenes, requests, budgets, offsets, budget * len(scenes), bible, context, parts
    )
    return Step(cast, attempts, usage)
