"""``python -m mangaka dataset PAIRS -o OUT``: approved chapter + screenplay pairs as a LoRA
training set (the set itself: ``mangaka/dataset.py``)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ..dataset import build_dataset, check_output, find_pairs, write_dataset
from ..llm.inprocess import LlamaCppLLM
from ..llm.loading import LoadOptions, check_model_file
from ..screenplay.options import PROMPT_LANGUAGES
from ..screenplay.request import ScreenplayRequest

log = logging.getLogger("mangaka.dataset")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "dataset", help="approved chapter + screenplay pairs as a LoRA training set (chat JSONL)"
    )
    p.add_argument(
        "pairs", type=Path, help="folder of NAME.txt chapters with NAME.json screenplays beside them"
    )
    p.add_argument(
        "-o", "--output", type=Path, required=True, help="new folder for train.jsonl, val.jsonl, card.json"
    )
    p.add_argument(
        "--val", type=float, default=0.1, help="share of the pairs held out for validation (default 0.1)"
    )
    p.add_argument(
        "--style", default="manga", help="the style the Screenwriter will be asked for (default manga)"
    )
    p.add_argument(
        "--prompt-language",
        choices=PROMPT_LANGUAGES,
        help="the prompts' language, as at inference (default: the chapter's own language)",
    )
    p.add_argument(
        "--model", type=Path, help="a GGUF whose tokenizer counts each example's tokens (optional)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check everything, then write the set; the card's counts are logged."""
    check_output(args.output)
    ScreenplayRequest(style=args.style, prompt_language=args.prompt_language)  # checks both
    pairs = find_pairs(args.pairs)
    llm = None
    if args.model is not None:
        check_model_file(args.model)
        llm = LlamaCppLLM(args.model, LoadOptions(n_ctx=512, n_gpu_layers=0))
    data = build_dataset(
        pairs, val_fraction=args.val, style=args.style, prompt_language=args.prompt_language, llm=llm
    )
    written = write_dataset(data, args.output)
    card = data.card
    log.info(
        "dataset: %d pairs (%s) → %d train and %d validation examples in %s",
        card["pairs"],
        ", ".join(f"{n} {lang}" for lang, n in sorted(card["languages"].items())),
        card["examples"]["train"],
        card["examples"]["val"],
        ", ".join(str(p) for p in written),
    )
    return 0
