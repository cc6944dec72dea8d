"""The surfaces layer (``mangaka/cli/``) and the registry of shown options (``mangaka/surfaces.py``):
adding a command is one module plus one registry entry, as ARCHITECTURE.md shows it."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from mangaka import cli
from mangaka.cli import main as cli_main
from mangaka.surfaces import COMMANDS, NODES, OPTION_SETS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def architecture_diff() -> tuple[str, str]:
    """The new command's name and its module's text, from ARCHITECTURE.md's worked diff."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    diff = text.split("# mangaka/cli/__init__.py", 1)[1].split("```", 1)[0]
    name = re.search(r'^\+COMMANDS = \(.*"(\w+)"\)$', diff, re.M).group(1)
    body = diff.split("(new)\n", 1)[1]
    module = "\n".join(line[1:] for line in body.splitlines() if line.startswith("+"))
    return name, module


def test_a_new_command_is_one_module_and_one_registry_entry(monkeypatch, caplog):
    name, text = architecture_diff()
    module = types.ModuleType(f"mangaka.cli.{name}")
    exec(compile(text, f"mangaka/cli/{name}.py", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, f"mangaka.cli.{name}", module)
    monkeypatch.setattr(cli_main, "COMMANDS", (*cli.COMMANDS, name))
    assert name in cli_main.build_parser().format_help()
    caplog.set_level("INFO")
    assert cli_main.main([name]) == 0
    assert "hello" in caplog.text


def test_every_command_module_has_a_parser_and_a_run():
    for name in cli.COMMANDS:
        module = __import__(f"mangaka.cli.{name}", fromlist=["run"])
        assert callable(module.add_parser) and callable(module.run), name


def test_the_registry_names_real_commands_sets_and_fields():
    assert set(COMMANDS) <= set(cli.COMMANDS)
    for command, shown in COMMANDS.items():
        for s in shown:
            assert s.set in OPTION_SETS, (command, s.set)
            assert set(s.fields or ()) <= set(OPTION_SETS[s.set].options), (command, s.fields)
            assert set(s.defaults) <= set(OPTION_SETS[s.set].options), (command, s.defaults)
    assert set(NODES) == set(OPTION_SETS)


@pytest.mark.parametrize(("flag", "value"), [("--threads", "-3"), ("--gpu-layers", "5000")])
def test_bench_refuses_its_declared_flags_out_of_range_before_running(flag, value, caplog):
    """bench shows Load LLM's --threads/--gpu-layers with their ranges; it holds to them."""
    assert cli_main.main(["bench", flag, value, "--only", "page"]) == 1
    assert f"{flag} must be from" in caplog.text
