"""``python -m mangaka schemas``: the JSON Schemas in ``schemas/``, written from the models."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ..evaluate.goldset import write_gold_schema
from ..paths import PACK_ROOT
from ..screenplay.bible import write_bible_schema
from ..screenplay.schema import write_schemas
from ..video.timeline import write_timeline_schema

log = logging.getLogger("mangaka")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schemas", help="write the JSON Schemas in schemas/ from the models")
    p.add_argument("--folder", type=Path, default=PACK_ROOT / "schemas")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    written = [
        *write_schemas(args.folder),
        write_gold_schema(args.folder),
        write_bible_schema(args.folder),
        write_timeline_schema(args.folder),
    ]
    for path in written:
        log.info("wrote %s", path)
    return 0
