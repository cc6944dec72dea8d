"""The surfaces layer (``mangaka/cli/``) and the registry of shown options (``mangaka/surfaces.py``):
adding a command is one module plus one registry entry, as ARCHITECTURE.md shows it."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mangaka import cli
from mangaka.cli import main as cli_main
from mangaka.surfaces import COMMANDS, NODES, OPTION_SETS
from tests.history import tree_before

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


def test_a_new_command_is_one_module_and_one_registry_entry(monkeypatch, caplog, tmp_path):
    name, text = architecture_diff()
    path = tmp_path / f"{name}.py"  # the new module as a file, imported as mangaka.cli.<name>
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"mangaka.cli.{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
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


# What later issues changed on purpose since the tree before the commands moved into mangaka/cli/
# (issue 53; tests/history.py): bench's --threads/--gpu-layers became the declared flags (issue 53,
# point 2, with their ranges in the help); demo and book gained --video, and video is a new
# command (issue 54); the Screenwriter's option speaker_guesses is a flag of the commands that write
# and an eval --compare key (issue 52).
CHANGED_SINCE = {("bench", "--threads"), ("bench", "--gpu-layers"), ("eval", "--compare")}
ADDED_SINCE = {("demo", "--video"), ("book", "--video")}
ADDED_SINCE |= {(command, "--speaker-guesses") for command in ("write", "demo", "book", "eval")}

DUMP = """
import json, sys
from mangaka.__main__ import build_parser
parser = build_parser()
sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
out = {}
for name, p in sub.choices.items():
    out[name] = {
        ", ".join(a.option_strings) or a.dest: [a.help, repr(a.default), repr(a.choices), a.metavar]
        for a in p._actions
    }
sys.stdout.write(json.dumps(out))
"""


def _flags(parser) -> dict[str, dict[str, list]]:
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {
        name: {
            ", ".join(a.option_strings) or a.dest: [a.help, repr(a.default), repr(a.choices), a.metavar]
            for a in p._actions
        }
        for name, p in sub.choices.items()
    }


def test_every_command_flag_and_help_is_the_pre_move_trees_but_where_an_issue_changed_it(tmp_path):
    """Issue 53's move changed no flag, help text, default or choice of any command: the parser of
    the tree before it (read from git history) against today's, flag by flag; the differences are
    the ones later issues made on purpose (``CHANGED_SINCE``, ``ADDED_SINCE``, new commands)."""
    tree_before(tmp_path, "mangaka", "prompts", "schemas")
    dumped = subprocess.run(
        [sys.executable, "-c", DUMP], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)},
    )  # fmt: skip
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    before = json.loads(dumped.stdout.replace(str(tmp_path), "<ROOT>"))  # a default under the pack root
    now = json.loads(json.dumps(_flags(cli_main.build_parser())).replace(str(ROOT), "<ROOT>"))
    assert set(before) <= set(now)
    changed, added = set(), set()
    for command, flags in before.items():
        for flag, said in flags.items():
            if flag not in now[command]:
                changed.add((command, flag))
            elif now[command][flag] != said:
                changed.add((command, flag.split(", ")[-1]))
        added |= {(command, f.split(", ")[-1]) for f in set(now[command]) - set(flags)}
    assert changed == CHANGED_SINCE
    assert added == ADDED_SINCE


# Each refused before a model loads, through ``main`` in-process, its log and stderr kept.
ERRORS = """
import contextlib, io, json, logging, sys
from mangaka.__main__ import main
out = []
for argv in json.loads(sys.argv[1]):
    said, err = io.StringIO(), io.StringIO()
    handler = logging.StreamHandler(said)
    logging.getLogger().addHandler(handler)
    with contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    logging.getLogger().removeHandler(handler)
    out.append([code, said.getvalue() + err.getvalue()])
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(out, f)
"""
MODEL = ["--model", "model.gguf"]
REFUSED = [
    ["write", "missing.txt", *MODEL],
    ["write", "empty.txt", *MODEL],
    ["write", "chapter.txt", "--model", "missing.gguf"],
    ["write", "chapter.txt", *MODEL],
    ["write", "chapter.txt", *MODEL, "--panels", "0"],
    ["write", "chapter.txt", *MODEL, "--dialogue", "500"],
    ["write", "chapter.txt", *MODEL, "--sampling", "wild"],
    ["write", "chapter.txt", *MODEL, "--ctx", "100"],
    ["write", "chapter.txt", *MODEL, "--think", "-5"],
    ["write", "chapter.txt", *MODEL, "--lora-scale", "9"],
    ["write", "chapter.txt", *MODEL, "--jump-forward", "fast"],
    ["write", "chapter.txt", *MODEL, "--reading", "bad.json"],
    ["write", "chapter.txt", *MODEL, "--language", "xx"],
    ["read", "missing.txt"],
    ["read", "ja.txt", "--language", "en"],
    ["page", "missing.json"],
    ["page", "bad.json"],
    ["book", "missing", *MODEL],
    ["book", "chapter.txt", *MODEL, "--jobs", "0"],
    ["eval", "nosuchset", *MODEL],
    ["eval", "gold", *MODEL, "--seeds", "0"],
    ["eval", "gold", *MODEL, "--chapters", "xx9"],
    ["dataset", "missing", "-o", "out.jsonl"],
    ["queue", "missing", "--workflow", "missing.json", "--server", "http://127.0.0.1:1"],
    ["bench", "--only", "nonsense"],
    ["demo", "--model", "missing.gguf"],
]
# Messages later issues changed on purpose: the contradicted language names its flag (issue 52),
# bench lists its new part, video (issue 54), and a screenplay file with no screenplay in it asks
# for a file, not for a node to connect (after issue 55).
REWORDED_SINCE = {"read ja.txt --language en", "bench --only nonsense", "page bad.json"}


def _refusals(tree: Path, work: Path) -> list[list]:
    done = subprocess.run(
        [sys.executable, "-c", ERRORS, json.dumps(REFUSED), "said.json"], cwd=work, capture_output=True,
        text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "HOME": str(work)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    said = (work / "said.json").read_text(encoding="utf-8")
    return json.loads(said.replace(str(tree), "<ROOT>").replace(str(work), "<WORK>"))


def _without_usage(said: str) -> str:
    """A refusal without argparse's usage lines before its ``error:`` line."""
    return re.sub(r"^usage: .*?(?=^\S[^\n]*: error:)", "usage: …\n", said, flags=re.S | re.M)


def test_every_refusal_says_what_the_pre_move_tree_said(tmp_path):
    """The move changed no error message: each input above refused by the tree before it and by
    today's, with the same exit code and the same words (paths aside)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "chapter.txt").write_text('"Sit down," said the old man.\\n\\nMei sat.\\n', encoding="utf-8")
    (work / "ja.txt").write_text("「座れ」と老人が言った。\\n\\n芽衣は座った。\\n" * 3, encoding="utf-8")
    (work / "empty.txt").write_text("  \\n", encoding="utf-8")
    (work / "model.gguf").write_bytes(b"not a GGUF file at all")
    (work / "bad.json").write_text("{not json", encoding="utf-8")
    (work / "reading.json").write_text('{"quotes": 3}', encoding="utf-8")
    before = _refusals(tree_before(tmp_path / "before", "mangaka", "prompts", "schemas"), work)
    now = _refusals(ROOT, work)
    assert [i for i, was in enumerate(before) if was[0] in (0, None)] == [], before  # all refused
    # The command list in a usage line grew with issue 54's new command, and the write commands'
    # usage with issue 52's --speaker-guesses: argparse's usage lines are its own; its error is ours.
    now = [[code, said.replace(",schemas,video}", ",schemas}")] for code, said in now]
    before, now = ([[code, _without_usage(said)] for code, said in found] for found in (before, now))
    changed = [i for i, (was, is_) in enumerate(zip(before, now, strict=True)) if was != is_]
    assert {" ".join(REFUSED[i]) for i in changed} == REWORDED_SINCE, [(before[i], now[i]) for i in changed]
