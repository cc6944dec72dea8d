"""The Screenwriter's options are declared once (``mangaka/screenplay/options.py``): the command line,
the request, eval's ``--compare`` keys, the docs' table and the Chinese tooltips agree with each
declaration (the node's widgets are compared in the comfy tier, ``tests/comfy/test_locales.py``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from mangaka.__main__ import build_parser
from mangaka.errors import InputError
from mangaka.evaluate.cli import COMPARE_KEYS
from mangaka.screenplay.options import OPTIONS, Option, option_table
from mangaka.screenplay.request import ScreenplayRequest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FLAGGED = [o for o in OPTIONS.values() if o.flag]
# Commands that set some defaults of their own (and say so in their help, through %(default)s).
OWN_DEFAULTS = {"demo": {"panels": 4, "dialogue": 6}, "eval": {"panels": None, "dialogue": None}}


def actions(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {flag: a for a in sub._actions for flag in a.option_strings}


@pytest.mark.parametrize("command", ["write", "demo", "book", "eval"])
def test_every_flag_is_its_declaration(command):
    found = actions(command)
    for o in FLAGGED:
        action = found[o.flag]
        default = OWN_DEFAULTS.get(command, {}).get(o.field, o.default)
        assert (action.dest, action.default) == (o.dest, default), o.field
        expected = list(o.choices) if o.choices and o.strict else None
        assert (list(action.choices) if action.choices else None) == expected, o.field
        assert o.help in action.help, o.field


def test_the_request_takes_its_defaults_and_ranges_from_the_declarations():
    fields = {f.name: f.default for f in dataclasses.fields(ScreenplayRequest)}
    assert set(OPTIONS) == set(fields), "an option without a field, or a field without a declaration"
    for o in OPTIONS.values():
        assert fields[o.field] == o.default, o.field
        if o.low is not None:
            with pytest.raises(InputError) as caught:
                ScreenplayRequest(**{o.field: o.high + 1})
            assert caught.value.field == o.field
            assert ScreenplayRequest(**{o.field: o.high}) is not None


def test_compare_keys_are_the_declared_flags():
    for o in FLAGGED:
        assert (o.dest in COMPARE_KEYS) == o.compare, o.field
        if o.compare:
            assert COMPARE_KEYS[o.dest][0] == o.dest


def test_the_chinese_tooltips_are_the_declared_ones():
    zh = json.loads((ROOT / "locales" / "zh" / "nodeDefs.json").read_text(encoding="utf-8"))
    inputs = zh["MangakaScreenwriter"]["inputs"]
    for o in OPTIONS.values():
        if o.widget:
            assert inputs[o.widget].get("tooltip") == o.help_zh, o.field
        assert o.help_zh and o.help, o.field


def test_the_docs_table_is_generated_from_the_declarations():
    assert option_table() in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def test_a_changed_declaration_is_seen_everywhere(monkeypatch):
    """Edit one declaration: the flag, the request and the table follow it."""
    changed = dataclasses.replace(OPTIONS["max_attempts"], default=5, high=7)
    monkeypatch.setitem(OPTIONS, "max_attempts", changed)
    assert actions("write")["--attempts"].default == 5
    with pytest.raises(InputError, match="max_attempts must be from 1 to 7"):
        ScreenplayRequest(max_attempts=8)
    assert "| `max_attempts` | `--attempts` | `max_attempts` | `5` | 1 to 7 |" in option_table()
    assert isinstance(changed, Option)
