"""``python -m mangaka dataset``: approved chapter → screenplay pairs as a LoRA training set.

A pair is a chapter text and the screenplay a person kept for it, in one folder: ``NAME.txt``
beside ``NAME.json`` (or ``NAME.screenplay.json``, as ``write`` names it). Each pair gives two
examples, one per Screenwriter call, with exactly the messages the Screenwriter sends (the
messages come from ``screenplay.steps.Prompts``, the code inference uses, so they cannot drift):

* **cast**: system prompt, chapter, cast task → ``{"characters": [{"id", "name", "appearance"}]}``;
* **script**: system prompt, chapter, script task (with the cast) → ``{"title", "dialogue":
  [{"speaker", "line", "emotion", "panel"}], "panels": [{"id", "shot", "angle", "characters",
  "action", "expression", "background", "lighting", "props"}]}``, the reply ``assemble_screenplay``
  turns back into the same screenplay (checked for every pair).

The request of each pair is the screenplay's own: its language, its panel and line counts, at
least as many characters allowed as it has; ``style`` and the prompts' language as given.
Written to ``OUT/``: ``train.jsonl`` and ``val.jsonl`` (one ``{"messages": [...], "call", "source"}``
a line, chat format with the assistant's JSON last), and ``card.json`` (counts, languages,
lengths in characters, and in tokens when a model is given, source files, settings). Pairs are
deduplicated (same chapter and screenplay), and whole pairs go to the validation split, chosen by
a hash of the chapter, so a pair never has one call in each split and a rerun splits the same way.

Refused, each naming the file and the fix, before anything is written: a folder with no pairs, a
screenplay that is not valid, one whose language is not its chapter's (``zh`` for an English
chapter), one of another chapter (it keeps under a quarter of the chapter's quoted lines, or,
without dialogue to compare, none of its character names is in the chapter), one written in
scenes or longer than one call writes (not exported yet), a chapter with nothing to adapt, and an
``OUT`` that already holds a dataset.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InputError, MangakaError
from .evaluate.matching import match_quotes
from .fileio import read_input, write_atomic
from .llm.base import LLM, Message
from .screenplay.models import (
    MAX_CHARACTERS,
    MAX_SCENE_DIALOGUE,
    MAX_SCENE_PANELS,
    Screenplay,
)
from .screenplay.request import ScreenplayRequest, read_chapter
from .screenplay.scenes import is_cjk
from .screenplay.steps import Prompts, assemble_screenplay, cast_task, script_task
from .screenplay.validate import load_screenplay
from .source.quotes import find_quotes

log = logging.getLogger(__name__)

DATASET_VERSION = 1
FILES = ("train.jsonl", "val.jsonl", "card.json")
SCREENPLAY_SUFFIXES = (".screenplay.json", ".json")


@dataclass(frozen=True)
class Pair:
    name: str
    chapter_path: Path
    screenplay_path: Path
    chapter: str
    screenplay: Screenplay


@dataclass
class Dataset:
    train: list[dict[str, Any]] = field(default_factory=list)
    val: list[dict[str, Any]] = field(default_factory=list)
    card: dict[str, Any] = field(default_factory=dict)


def chapter_language(text: str) -> str:
    """``ja`` when the text has kana, ``zh`` when most of its letters are CJK, else ``en``."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return "en"
    kana = sum(1 for ch in letters if 0x3040 <= ord(ch) <= 0x30FF)
    cjk = sum(1 for ch in letters if is_cjk(ch))
    if kana >= max(1, len(letters) // 50):
        return "ja"
    return "zh" if cjk * 2 >= len(letters) else "en"


def find_pairs(folder: Path) -> list[Pair]:
    """Every ``NAME.txt`` with its screenplay beside it, checked; ``InputError`` naming the first
    bad one (the whole set is refused: a training set is fixed before it is written)."""

    if not folder.is_dir():
        raise InputError(
            f"pairs folder {folder} is not a folder; give the folder of chapter and screenplay files"
        )
    pairs = []
    for text_path in sorted(folder.glob("*.txt")):
        stem = text_path.name[: -len(".txt")]
        found = [folder / f"{stem}{s}" for s in SCREENPLAY_SUFFIXES if (folder / f"{stem}{s}").is_file()]
        if not found:
            log.info("dataset: %s has no screenplay beside it (%s.json); skipped", text_path.name, stem)
            continue
        pairs.append(_pair(stem, text_path, found[0], read_chapter(text_path)))
    if not pairs:
        raise InputError(
            f"pairs folder {folder} has no pairs: put each chapter as NAME.txt beside the screenplay you "
            "kept for it as NAME.json (or NAME.screenplay.json, as `write` names it)"
        )
    return pairs


def _pair(name: str, text_path: Path, sp_path: Path, chapter: str) -> Pair:
    screenplay = load_screenplay(read_input(sp_path, "screenplay"), source=f"screenplay {sp_path}")
    language = chapter_language(chapter)
    if screenplay.language != language:
        raise InputError(
            f"screenplay {sp_path} is in {screenplay.language!r}, but its chapter {text_path.name} reads as "
            f"{language!r}: pair each chapter with a screenplay of it, or fix the screenplay's language"
        )
    _check_belongs(screenplay, chapter, sp_path, text_path)
    if (
        any(p.scene != 1 for p in screenplay.panels)
        or len(screenplay.panels) > MAX_SCENE_PANELS
        or len(screenplay.dialogue) > MAX_SCENE_DIALOGUE
        or len(screenplay.characters) > MAX_CHARACTERS
    ):
        raise InputError(
            f"screenplay {sp_path} was written in scenes or is longer than one call writes "
            f"({len(screenplay.panels)} panels, {len(screenplay.dialogue)} lines; at most "
            f"{MAX_SCENE_PANELS} and {MAX_SCENE_DIALOGUE}); scene-by-scene examples are not exported yet: "
            "leave it out of the pairs folder"
        )
    return Pair(name, text_path, sp_path, chapter, screenplay)


# A screenplay of its chapter keeps the chapter's quoted lines: at least this share of the fewer
# of its lines and the chapter's quotes. The gold pairs keep all of them, and a screenplay of
# another gold chapter none (tests/unit/test_dataset.py measures both).
MIN_KEPT_QUOTES = 0.25


def _name_in(name: str, chapter: str) -> bool:
    """The name, or a part of it (a word of two letters or more; for CJK two characters), is in the text."""
    if name in chapter:
        return True
    if any(is_cjk(ch) for ch in name):
        return any(name[i : i + 2] in chapter for i in range(len(name) - 1))
    return any(len(part) >= 2 and part in chapter for part in name.replace("-", " ").split())


def _check_belongs(screenplay: Screenplay, chapter: str, sp_path: Path, text_path: Path) -> None:
    """Refuse a screenplay of another chapter (a pairing slip: chapter 2's screenplay beside
    chapter 1): the chapter's quoted lines decide when both have dialogue, else the cast's names."""
    quotes = find_quotes(chapter, screenplay.language)
    names = [c.name for c in screenplay.characters]
    found = sum(1 for n in names if _name_in(n, chapter))
    if quotes and screenplay.dialogue:
        kept = len(match_quotes(quotes, screenplay))
        needed = max(1, round(MIN_KEPT_QUOTES * min(len(quotes), len(screenplay.dialogue))))
        if kept >= needed:
            return
        evidence = (
            f"it keeps {kept} of the chapter's {len(quotes)} quoted lines (at least {needed} expected) "
            f"and {found} of its {len(names)} character names appear in the chapter"
        )
    elif names and not found:
        evidence = f"none of its {len(names)} character names ({', '.join(names[:4])}) appear in the chapter"
    else:
        return
    raise InputError(
        f"screenplay {sp_path} does not look like a screenplay of {text_path.name}: {evidence}; pair each "
        f"chapter with the screenplay made from it (NAME.txt beside NAME.json), or, if its lines were "
        "rewritten, keep the chapter's quoted lines as written"
    )


def request_for(
    screenplay: Screenplay, *, style: str = "manga", prompt_language: str | None = None
) -> ScreenplayRequest:
    """The request that asks for exactly this screenplay's shape."""
    return ScreenplayRequest(
        language=screenplay.language,
        panels=len(screenplay.panels),
        dialogue=len(screenplay.dialogue),
        max_characters=max(8, len(screenplay.characters)),
        style=style,
        prompt_language=prompt_language,
        # The examples are in the free format (lines written out); a grounded format is not built yet.
        dialogue_from="free",
    )


def script_reply(screenplay: Screenplay) -> dict[str, Any]:
    """The script call's reply that assembles into ``screenplay`` (keys in the call schema's order)."""
    owner = {line_id: p.id for p in screenplay.panels for line_id in p.dialogue}
    return {
        "title": screenplay.title,
        "dialogue": [
            {"speaker": d.speaker, "line": d.line, "emotion": d.emotion, "panel": owner[d.id]}
            for d in screenplay.dialogue
        ],
        "panels": [
            {
                "id": p.id,
                "shot": p.shot,
                "angle": p.angle,
                "characters": list(p.characters),
                "action": p.action,
                "expression": p.expression,
                "background": p.background,
                "lighting": p.lighting,
                "props": list(p.props),
            }
            for p in screenplay.panels
        ],
    }


def cast_reply(screenplay: Screenplay) -> dict[str, Any]:
    return {
        "characters": [
            {"id": c.id, "name": c.name, "appearance": c.appearance} for c in screenplay.characters
        ]
    }


def examples(pair: Pair, *, style: str = "manga", prompt_language: str | None = None) -> list[dict[str, Any]]:
    """The pair's cast and script examples: the Screenwriter's messages, the assistant's JSON last."""
    sp = pair.screenplay
    request = request_for(sp, style=style, prompt_language=prompt_language)
    prompts = Prompts.build(request, pair.chapter)
    cast = list(sp.characters)
    reply = script_reply(sp)
    written = assemble_screenplay(reply, cast, sp.language).model_copy(update={"version": sp.version})
    if written.model_dump(mode="json") != sp.model_dump(mode="json"):
        raise MangakaError(
            f"screenplay {pair.screenplay_path}: its script reply does not assemble back to it"
        )
    calls = [
        ("cast", prompts.messages(cast_task(prompts)), cast_reply(sp)),
        ("script", prompts.messages(script_task(prompts, cast, len(sp.panels), len(sp.dialogue))), reply),
    ]
    out = []
    for call, messages, target in calls:
        answer: Message = {"role": "assistant", "content": json.dumps(target, ensure_ascii=False)}
        out.append({"messages": [*messages, answer], "call": call, "source": pair.name})
    return out


def build_dataset(
    pairs: list[Pair],
    *,
    val_fraction: float = 0.1,
    style: str = "manga",
    prompt_language: str | None = None,
    llm: LLM | None = None,
) -> Dataset:
    """The examples of ``pairs``, deduplicated and split; ``llm`` (optional) counts tokens."""
    if not 0 <= val_fraction < 1:
        raise InputError(f"--val must be from 0 to below 1, got {val_fraction}")
    seen: dict[str, str] = {}
    unique: list[Pair] = []
    for pair in pairs:
        key = hashlib.sha256(
            (pair.chapter.strip() + "\0" + pair.screenplay.model_dump_json()).encode()
        ).hexdigest()
        if key in seen:
            log.warning("dataset: %s is the same pair as %s; kept once", pair.name, seen[key])
            continue
        seen[key] = pair.name
        unique.append(pair)
    ranked = sorted(unique, key=lambda p: hashlib.sha256(p.chapter.strip().encode()).hexdigest())
    n_val = round(len(ranked) * val_fraction) if len(ranked) > 1 else 0
    val_names = {p.name for p in ranked[:n_val]}
    data = Dataset()
    lengths: dict[str, list[int]] = {"chapter_chars": [], "target_chars": [], "tokens": []}
    for pair in unique:
        for example in examples(pair, style=style, prompt_language=prompt_language):
            (data.val if pair.name in val_names else data.train).append(example)
            lengths["target_chars"].append(len(example["messages"][-1]["content"]))
            if llm is not None:
                lengths["tokens"].append(llm.count_tokens(example["messages"]))
        lengths["chapter_chars"].append(len(pair.chapter))
    data.card = {
        "version": DATASET_VERSION,
        "pairs": len(unique),
        "duplicates_dropped": len(pairs) - len(unique),
        "examples": {"train": len(data.train), "val": len(data.val)},
        "calls": dict(Counter(e["call"] for e in data.train + data.val)),
        "languages": dict(Counter(p.screenplay.language for p in unique)),
        "lengths": {k: _stats(v) for k, v in lengths.items() if v},
        "tokenizer": llm.name if llm is not None else None,
        "settings": {"style": style, "prompt_language": prompt_language, "val_fraction": val_fraction},
        "sources": [
            {
                "name": p.name,
                "chapter": p.chapter_path.name,
                "screenplay": p.screenplay_path.name,
                "split": "val" if p.name in val_names else "train",
            }
            for p in unique
        ],
    }
    return data


def _stats(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    return {"min": ordered[0], "median": ordered[len(ordered) // 2], "max": ordered[-1]}


def check_output(out: Path) -> None:
    """``out`` can take a new dataset: not a file, and no dataset in it yet."""
    if out.exists() and not out.is_dir():
        raise InputError(f"output {out} is a file; give a folder for the dataset")
    taken = [name for name in FILES if (out / name).exists()]
    if taken:
        raise InputError(f"output {out} already holds a dataset ({', '.join(taken)}); choose a new folder")


def write_dataset(data: Dataset, out: Path) -> list[Path]:
    """The three files, each written atomically; the card last, so a card means a complete set."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, rows in (("train.jsonl", data.train), ("val.jsonl", data.val)):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        written.append(write_atomic(out / name, text))
    card = json.dumps(data.card, ensure_ascii=False, indent=2) + "\n"
    written.append(write_atomic(out / "card.json", card))
    return written
