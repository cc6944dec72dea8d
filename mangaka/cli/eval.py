"""The ``eval`` command: arguments → checked configurations → runs → tables or JSON.

``python -m mangaka eval SET (--model FILE | --remote URL) [--lora FILE] [options of write]
[--chapters en1,zh2] [--seeds 3] [--out DIR] [--compare KEY=VALUE …] [--json]``

Every input is checked before a model loads: the set (each chapter and gold file, and each
reference screenplay a chapter has and a request reads its counts from), the chapter selection,
the output folder, every option of write, and each ``--compare`` setting (a known key, a value of
the right kind, a model file whose header loads).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError, LoraError
from ..evaluate.goldset import BUILTIN_SET, GoldCase, load_gold_set
from ..evaluate.runner import (
    FIGURES,
    ConfigSummary,
    EvalConfig,
    Progress,
    case_request,
    compare,
    run_config,
    summarise,
)
from ..llm.lora import record_eval
from ..llm.options import LOAD_OPTIONS, RUN_OPTIONS
from ..screenplay.options import DIALOGUE_FROM, OPTIONS
from ..screenplay.request import check_count
from ..screenplay.scenes import AUTO
from .args import (
    add_model_args,
    check_model_args,
    load_options_from_args,
    open_llm,
    request_from_args,
    run_options_from_args,
)
from .paths import check_output_folder

log = logging.getLogger(__name__)

MAX_SEEDS = 100
BUILTIN_NAME = "gold"
DEFAULT_OUT = "mangaka-eval"


def _count(text: str) -> int | str:
    """A ``--compare`` count: a whole number or ``auto``; ``ValueError`` otherwise."""
    return AUTO if text.strip().casefold() == AUTO else int(text)


def _flag(text: str) -> bool:
    """A ``--compare`` switch: on/off (true/false); ``ValueError`` otherwise."""
    word = text.strip().casefold()
    if word in ("on", "true"):
        return True
    if word in ("off", "false"):
        return False
    raise ValueError(text)


_READERS = {"bool": _flag, "int": int, "float": float}

# --compare KEY → (the argument it sets, how its value is read). "none" clears a path. The
# Screenwriter's and Load LLM's options come from their declarations (screenplay/options.py,
# llm/options.py: compare=True), keyed by their flag.
COMPARE_KEYS: dict[str, tuple[str, Any]] = {
    "model": ("model", Path),
    "lora": ("lora", Path),
    "remote": ("remote", str),
    "remote_model": ("remote_model", str),
    **{
        o.dest: (o.dest, _count if o.auto else _READERS.get(o.kind, str))
        for options in (LOAD_OPTIONS, RUN_OPTIONS, OPTIONS)
        for o in options.values()
        if o.flag and o.compare
    },
}
NONE = "none"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``eval``'s own arguments (the write options come from ``add_model_args``)."""
    p.add_argument("set", help=f"a gold set folder, or '{BUILTIN_NAME}' for the built-in gold chapters")
    p.add_argument("--chapters", help="only these chapters of the set, by id: en1,zh2")
    p.add_argument("--seeds", type=int, default=3, help=f"seeds per chapter, 1 to {MAX_SEEDS} (default 3)")
    p.add_argument("--out", type=Path, help=f"where each run's result is kept (default ./{DEFAULT_OUT}/SET)")
    p.add_argument(
        "--compare",
        nargs="+",
        metavar="KEY=VALUE",
        help="a second configuration: the first with these changed (keys: " + ", ".join(COMPARE_KEYS) + ")",
    )
    p.add_argument("--remote", help="an OpenAI-compatible server instead of --model")
    p.add_argument("--remote-model", default="", help="the model name the server lists (default: its own)")
    p.add_argument("--api-key-env", help="the NAME of the environment variable that holds the server's key")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of tables")
    p.add_argument(
        "--reading-only",
        action="store_true",
        help="no model: score the screenplay the chapter's reading alone gives (the baseline)",
    )
    p.set_defaults(concurrency=1)


def select_cases(args: argparse.Namespace) -> tuple[str, list[GoldCase]]:
    """The set's name (``gold`` for the built-in one, else its folder) and the chosen chapters."""
    builtin = args.set == BUILTIN_NAME
    folder = BUILTIN_SET if builtin else Path(args.set)
    cases = load_gold_set(folder)
    if args.chapters:
        wanted = [c.strip() for c in args.chapters.split(",") if c.strip()]
        known = {c.id: c for c in cases}
        unknown = [w for w in wanted if w not in known]
        if unknown or not wanted:
            raise InputError(
                f"--chapters {args.chapters}: {', '.join(unknown) or 'no id given'} not in the set; "
                f"its chapters are {', '.join(known)}"
            )
        cases = [known[w] for w in dict.fromkeys(wanted)]
    return BUILTIN_NAME if builtin else str(folder), cases


def _override(args: argparse.Namespace, spec: str) -> argparse.Namespace:
    key, sep, value = spec.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or key not in COMPARE_KEYS:
        raise InputError(
            f"--compare {spec}: give KEY=VALUE with KEY one of {', '.join(COMPARE_KEYS)}, e.g. think=4000"
        )
    if key == "dialogue" and value.strip() in DIALOGUE_FROM:  # dialogue=free: where lines come from
        key = "dialogue_from"
    name, kind = COMPARE_KEYS[key]
    changed = copy.copy(args)
    if value.strip().lower() == NONE and kind is Path:
        setattr(changed, name, None)
        return changed
    try:
        setattr(changed, name, kind(value))
    except ValueError:
        what = {
            int: "a whole number",
            float: "a number",
            _count: "a whole number or auto",
            _flag: "on or off",
        }.get(kind, "a value")
        raise InputError(f"--compare {spec}: {value!r} is not {what}, which {key} takes") from None
    if name == "remote":
        changed.model = None
    elif name == "model":
        changed.remote = None
    return changed


def _config(name: str, args: argparse.Namespace) -> EvalConfig:
    """A checked configuration from (possibly overridden) arguments; loads nothing."""
    if getattr(args, "reading_only", False):
        if args.model or args.remote or args.compare:
            raise InputError("--reading-only runs no model: leave out --model, --remote and --compare")
        request = request_from_args(argparse.Namespace(**{**vars(args), "panels": 6, "dialogue": 8}))
        return EvalConfig("reading", {"reading_only": True}, request)
    if bool(args.model) == bool(args.remote):
        raise InputError(f"configuration {name}: give either --model FILE.gguf or --remote URL (one of them)")
    panels = None if args.panels is None else OPTIONS["panels"].check(args.panels, "--panels")
    dialogue = None if args.dialogue is None else OPTIONS["dialogue"].check(args.dialogue, "--dialogue")
    request = request_from_args(argparse.Namespace(**{**vars(args), "panels": 6, "dialogue": 8}))
    RUN_OPTIONS["jump_forward"].check(args.jump_forward, f"configuration {name}: jump_forward")
    if args.model:
        load_options_from_args(args)
        run_options_from_args(args)
        check_model_args(args, args.model)
    settings = {
        "model": str(args.model) if args.model else None,
        "lora": str(args.lora) if args.lora else None,
        "lora_scale": args.lora_scale,
        "remote": args.remote,
        "remote_model": args.remote_model or None,
        "ctx": args.ctx,
        "think": args.think,
        "prompt_language": args.prompt_language,
        "sampling": args.sampling,
        "panels": panels,
        "dialogue": dialogue,
        "dialogue_from": request.dialogue_from,
        "speaker_hints": request.speaker_hints,
        "speaker_guesses": request.speaker_guesses,
        "jump_forward": args.jump_forward,
    }
    return EvalConfig(name, settings, request, panels, dialogue)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="score the Screenwriter against a gold chapter set (fidelity; seeds; two configurations)"
    )
    add_model_args(p, "eval", model_required=False, output=None)
    add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    seeds = list(range(args.seed, args.seed + check_count("--seeds", args.seeds, 1, MAX_SEEDS)))
    set_name, cases = select_cases(args)
    variants = [("a", args)] + ([("b", _apply(args, args.compare))] if args.compare else [])
    configs = [(_config(name, a), a) for name, a in variants]
    for config, _ in configs:  # every reference a request counts from is read now, not after a load
        for case in cases:
            case_request(config, case, seeds[0])
    out = args.out or Path.cwd() / DEFAULT_OUT / Path(set_name).name
    check_output_folder(out, {"the model": args.model, "the LoRA": args.lora}, flag="--out")
    if args.reading_only:
        seeds = seeds[:1]  # no model: nothing a seed changes
    progress = Progress(total=len(configs) * len(cases) * len(seeds))
    summaries = []
    for config, config_args in configs:
        llm = None if args.reading_only else open_llm(config_args)
        summaries.append(summarise(config, run_config(llm, config, cases, seeds, out, progress)))
    report = eval_report(set_name, cases, seeds, out, summaries)
    report["lora_manifests"] = record_in_manifests(report, summaries)
    text = json.dumps(report, ensure_ascii=False, indent=2) if args.json else format_report(report)
    sys.stdout.write(text + "\n")
    return 0


def record_in_manifests(report: dict[str, Any], summaries: list[ConfigSummary]) -> list[str]:
    """Each LoRA evaluated gets this eval in its manifest's ``eval`` list (``lora/train.py``'s
    ``NAME.gguf.manifest.json``, when it is beside the LoRA): the set, chapters, seeds, its
    configuration's settings and mean figures, and those of the configuration it was compared
    with. The manifests written; one that cannot be written is named in a warning."""
    written = []
    for summary in summaries:
        lora = summary.config.settings.get("lora")
        if not lora:
            continue
        other = next((o for o in summaries if o is not summary), None)
        record = {
            "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "set": report["set"],
            "chapters": report["chapters"],
            "seeds": report["seeds"],
            "settings": summary.config.settings,
            "mean": summary.mean,
            "against": None if other is None else {"settings": other.config.settings, "mean": other.mean},
        }
        try:
            path = record_eval(Path(lora), record)
        except (OSError, LoraError) as exc:
            log.warning("eval: not recorded in the manifest of LoRA %s: %s", lora, exc)
            continue
        if path is not None:
            log.info("eval: recorded in %s", path)
            written.append(str(path))
    return written


def _apply(args: argparse.Namespace, specs: list[str]) -> argparse.Namespace:
    changed = args
    for spec in specs:
        changed = _override(changed, spec)
    return changed


def eval_report(
    set_name: str, cases: list[GoldCase], seeds: list[int], out: Path, summaries: list[ConfigSummary]
) -> dict[str, Any]:
    """The JSON document of ``eval --json`` (its keys are listed in docs/evaluation.md)."""
    report: dict[str, Any] = {
        "set": set_name,
        "chapters": [c.id for c in cases],
        "seeds": seeds,
        "out": str(out),
        "figures": list(FIGURES),
        "configs": {s.config.name: s.as_dict() for s in summaries},
    }
    if len(summaries) == 2:
        report["compare"] = compare(*summaries)
    return report


def _cell(figure: dict[str, float | None], name: str) -> str:
    mean, spread = figure["mean"], figure["spread"]
    if mean is None:
        return "-"
    digits = 0 if name in ("tokens", "seconds", "tries", "repairs") else 2
    text = f"{mean:.{digits}f}"
    return text + (f"±{spread:.{digits}f}" if spread is not None else "")


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(line.rstrip() for line in lines)


def format_report(report: dict[str, Any]) -> str:
    """Tables: per configuration a row per chapter and the mean; with two, the comparison."""
    names = report["figures"]
    parts = [f"eval: {report['set']}: {len(report['chapters'])} chapters × {len(report['seeds'])} seeds"]
    for name, config in report["configs"].items():
        shown = ", ".join(f"{k}={v}" for k, v in config["settings"].items() if v is not None)
        rows = [["chapter", *names]]
        rows += [[chapter, *(_cell(f[n], n) for n in names)] for chapter, f in config["chapters"].items()]
        rows.append(["mean", *(_cell(config["mean"][n], n) for n in names)])
        parts += ["", f"configuration {name}: {shown} ({config['failed']} runs failed)", _table(rows)]
    if "compare" in report:
        rows = [["figure", "a", "b", "b-a", "spread", "beyond spread"]]
        for name, c in report["compare"].items():

            def fmt(v: float | None) -> str:
                return "-" if v is None else f"{v:.3f}"

            beyond = "-" if c["exceeds"] is None else "yes" if c["exceeds"] else "no"
            rows.append([name, fmt(c["a"]), fmt(c["b"]), fmt(c["diff"]), fmt(c["spread"]), beyond])
        parts += ["", "a vs b (mean over chapters and seeds; spread: the seed-to-seed standard deviation)"]
        parts.append(_table(rows))
    return "\n".join(parts)
