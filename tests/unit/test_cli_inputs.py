"""The command line's inputs: every option reaches the run from every command that takes it, and
every bad input is refused before a model loads.

No model runs here. The model file is a real tiny model cut to its first 64 KiB: its GGUF header
reads, so the header checks pass, but llama.cpp would fail on it; ``load_model`` is replaced by
one that fails the test, so a refusal that came after a load could not pass.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import ClassVar

import pytest

from mangaka.cli import args as cli_args
from mangaka.cli import paths as cli_paths
from mangaka.cli.demo import DEMO_OUTPUT
from mangaka.cli.main import build_parser, main
from mangaka.demo import DEMO_CHAPTER
from mangaka.devtools.tiny_models import write_lora, write_model
from mangaka.llm import inprocess
from mangaka.llm.base import PRESETS
from mangaka.llm.loading import check_model_file
from mangaka.screenplay.generate import ScreenplayResult
from mangaka.screenplay.models import Screenplay
from mangaka.screenplay.steps import Step

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "prompts" / "samples" / "demo_book.en.txt"
GOLDEN = Screenplay.model_validate_json((ROOT / "tests/unit/data/golden_screenplay.json").read_text())
COMMANDS = ("write", "demo", "book")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A tiny model file (never loaded: ``no_model_loads``), and a LoRA for it. Not one cut short:
    the file check refuses those as damaged."""
    folder = tmp_path_factory.mktemp("cli-models")
    model = write_model(folder / "whole.gguf", "qwen35moe")
    lora = write_lora(folder / "lora.gguf", model)
    check_model_file(model)
    return {"model": model, "lora": lora}


@pytest.fixture(autouse=True)
def no_model_loads(monkeypatch):
    def load_model(*_a, **_kw):
        raise AssertionError("model loaded")

    monkeypatch.setattr(inprocess, "load_model", load_model)


def argv(
    command: str, files: dict[str, Path], tmp_path: Path, *extra: str, out: Path | None = None
) -> list[str]:
    """A valid command line for ``command`` with ``extra`` options (and ``-o out`` unless given)."""
    head = {
        "write": ["write", str(DEMO_CHAPTER)],
        "demo": ["demo"],
        "book": ["book", str(BOOK)],
    }[command]
    if "-o" not in extra:
        default = tmp_path / ("screenplays" if command == "book" else "out.json")
        extra = (*extra, "-o", str(out or default))
    if "--model" not in extra and "--remote" not in extra:
        extra = ("--model", str(files["model"]), *extra)
    return [*head, *extra]


# ---------------------------------------------------------------------------- options reach the run


class FakeLLM:
    """Stands in for LlamaCppLLM: records what it was built with."""

    made: ClassVar[list[dict]] = []

    def __init__(self, path, options=None, lora=None, lora_scale=1.0, **_kw) -> None:
        FakeLLM.made.append({"path": Path(path), "options": options, "lora": lora, "lora_scale": lora_scale})
        self.name = "fake"
        self.model = self

    def report(self) -> str:
        return "fake model"


@pytest.fixture
def recorded(monkeypatch) -> dict[str, list]:
    """Every LLM built and every screenplay request made, with a golden screenplay as the result."""
    requests: list = []

    def write_screenplay(llm, chapter, request=None, **_kw):
        requests.append(request)
        return ScreenplayResult(GOLDEN, thinking="the plan" if request.think_tokens else "")

    FakeLLM.made = []
    monkeypatch.setattr(cli_args, "LlamaCppLLM", FakeLLM)
    monkeypatch.setattr("mangaka.cli.write.write_screenplay", write_screenplay)
    monkeypatch.setattr("mangaka.batch.book.write_screenplay", write_screenplay)
    monkeypatch.setattr(  # the book's first pass: the golden cast for every chapter
        "mangaka.batch.book.write_cast", lambda *_a, **_kw: Step(list(GOLDEN.characters))
    )
    monkeypatch.setattr(
        "mangaka.cli.write.save_storyboard", lambda screenplay, output: [cli_paths.storyboard_path(output)]
    )
    return {"llms": FakeLLM.made, "requests": requests}


# option → (its value on the command line, where it lands, the value expected there)
OPTIONS = {
    "--ctx": ("4096", lambda llm, req: llm["options"].n_ctx, 4096),
    "--gpu-layers": ("3", lambda llm, req: llm["options"].n_gpu_layers, 3),
    "--threads": ("2", lambda llm, req: llm["options"].n_threads, 2),
    "--flash-attn": ("off", lambda llm, req: llm["options"].flash_attn, "off"),
    "--lora": (None, lambda llm, req: Path(llm["lora"]).name, "lora.gguf"),
    "--lora-scale": ("0.5", lambda llm, req: llm["lora_scale"], 0.5),
    "--panels": ("3", lambda llm, req: req.panels, 3),
    "--dialogue": ("2", lambda llm, req: req.dialogue, 2),
    "--language": ("en", lambda llm, req: req.language, "en"),  # the demo chapter is English: zh is refused
    "--sampling": ("greedy", lambda llm, req: req.sampling_settings, PRESETS["greedy"].replace(seed=7)),
    "--seed": ("7", lambda llm, req: req.seed, 7),
    "--attempts": ("2", lambda llm, req: req.max_attempts, 2),
    "--think": ("64", lambda llm, req: req.think_tokens, 64),
}


@pytest.mark.parametrize("option", [*OPTIONS, "-o"])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_reaches_the_run_from_every_command(command, option, files, tmp_path, recorded):
    if option == "-o":
        out = tmp_path / "elsewhere" / ("book" if command == "book" else "mine.json")
        out.parent.mkdir()
        assert main(argv(command, files, tmp_path, out=out)) == 0
        written = sorted(set(out.glob("*.json")) - {out / "bible.json"}) if command == "book" else [out]
        if command == "book":  # the series bible beside the screenplays, with the cast
            assert [c["id"] for c in json.loads((out / "bible.json").read_text())["characters"]] == [
                c.id for c in GOLDEN.characters
            ]
        assert written and all(json.loads(p.read_text())["title"] == GOLDEN.title for p in written)
        return
    value, where, expected = OPTIONS[option]
    extra = [option, value or str(files["lora"])]
    if option == "--sampling":
        extra += ["--seed", "7"]
    assert main(argv(command, files, tmp_path, *extra)) == 0
    assert recorded["llms"] and recorded["requests"]
    llm = recorded["llms"][0]
    assert llm["path"] == files["model"]
    for request in recorded["requests"]:  # book: one per chapter, all alike
        assert where(llm, request) == expected


def test_the_builders_take_the_parsed_arguments(files):
    args = build_parser().parse_args(
        ["book", str(BOOK), "--model", str(files["model"]), "--ctx", "1024", "--flash-attn", "on",
         "--panels", "2", "--seed", "5", "-o", "x"]
    )  # fmt: skip
    assert cli_args.load_options_from_args(args) == inprocess.LoadOptions(
        n_ctx=1024, n_gpu_layers=-1, n_threads=0, flash_attn="on"
    )
    request = cli_args.request_from_args(args)
    assert (request.panels, request.seed, request.dialogue) == (2, 5, 8)
    assert args.out == Path("x")


def test_book_remote_gets_its_url_model_key_name_and_concurrency(files, tmp_path, recorded, monkeypatch):
    made = []

    class FakeRemote:
        def __init__(self, url, model, *, api_key_env=None, concurrency=1) -> None:
            made.append((url, model, api_key_env, concurrency))

    monkeypatch.setattr(cli_args, "OpenAICompatibleLLM", FakeRemote)
    run = ["--remote", "http://127.0.0.1:9", "--remote-model", "qwen", "--api-key-env", "MY_KEY"]
    assert main(argv("book", files, tmp_path, *run, "--concurrency", "3")) == 0
    assert made == [("http://127.0.0.1:9", "qwen", "MY_KEY", 3)]
    assert len(recorded["requests"]) == 3 and not recorded["llms"]


# ------------------------------------------------------------------------------ the demo's picture


def test_demo_writes_its_screenplay_and_storyboard_in_the_current_folder(
    files, tmp_path, monkeypatch, capsys
):
    from PIL import Image

    monkeypatch.setattr(cli_args, "LlamaCppLLM", FakeLLM)  # the real storyboard, of a golden screenplay
    monkeypatch.setattr(
        "mangaka.cli.write.write_screenplay", lambda llm, chapter, request, **kw: ScreenplayResult(GOLDEN)
    )
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--model", str(files["model"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [str(tmp_path / DEMO_OUTPUT), str(tmp_path / "demo.storyboard.png")]
    assert json.loads(Path(lines[0]).read_text())["title"] == GOLDEN.title
    with Image.open(lines[1]) as page:
        assert page.format == "PNG" and page.height > page.width  # one A4 page, 4 lettered panels

    assert main(["demo", "--model", str(files["model"]), "-o", str(tmp_path / "mine.screenplay.json")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        str(tmp_path / "mine.screenplay.json"),
        str(tmp_path / "mine.storyboard.png"),
    ]

    mine = tmp_path / "w.json"  # write draws it when asked, and prints nothing
    assert (
        main(["write", str(DEMO_CHAPTER), "--model", str(files["model"]), "-o", str(mine), "--storyboard"])
        == 0
    )
    assert (tmp_path / "w.storyboard.png").is_file() and capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("output", "page", "picture"),
    [
        ("demo.screenplay.json", 1, "demo.storyboard.png"),
        ("out.json", 1, "out.storyboard.png"),
        ("out.JSON", 1, "out.storyboard.png"),
        ("out", 1, "out.storyboard.png"),
        ("a.b.json", 1, "a.b.storyboard.png"),
        ("demo.screenplay.json", 2, "demo.storyboard-2.png"),
    ],
)
def test_storyboard_picture_name(output, page, picture):
    assert cli_paths.storyboard_path(Path("d") / output, page) == Path("d") / picture


def test_demo_help_names_the_picture_rule(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "X.storyboard.png" in " ".join(capsys.readouterr().out.split())


# ----------------------------------------------------------------- refused before any model loads


def refused(argv_: list[str], caplog, *needles: str) -> str:
    caplog.clear()
    with caplog.at_level("INFO", logger="mangaka"):
        assert main(argv_) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1, caplog.text
    for needle in needles:
        assert needle in errors[0]
    assert not any(r.getMessage().startswith("model:") for r in caplog.records)
    return errors[0]


BAD_OPTIONS = [
    (["--panels", "0"], "--panels must be from 1 to 240, got 0"),
    (["--panels", "241"], "--panels must be from 1 to 240, got 241"),
    (["--panels", "many"], "--panels must be a whole number from 1 to 240 or 'auto', got 'many'"),
    (["--dialogue", "some"], "--dialogue must be a whole number from 0 to 480 or 'auto', got 'some'"),
    (["--scene-chars", "-1"], "--scene-chars must be from 0 to 1000000, got -1"),
    (["--dialogue", "-1"], "--dialogue must be from 0 to"),
    (["--attempts", "0"], "--attempts must be from 1 to"),
    (["--think", "-1"], "--think must be from 0 to"),
    (["--seed", "-1"], "--seed must be from 0 to"),
    (["--sampling", "bogus"], "--sampling 'bogus' is unknown; choose one of: qwen3.5-instruct"),
    (["--ctx", "0"], "--ctx must be from 512 to 262144"),
    (["--ctx", "-4096"], "--ctx must be from 512 to 262144"),
    (["--threads", "-1"], "--threads must be from 0 to 256"),
    (["--gpu-layers", "-2"], "--gpu-layers must be from -1 to 1000"),
    (["--lora-scale", "4.5"], "--lora-scale must be from -4 to 4"),
    (["--lora-scale", "-5"], "--lora-scale must be from -4 to 4"),
    (["--lora-scale", "nan"], "--lora-scale must be a number from -4 to 4"),
    (["--lora-scale", "inf"], "--lora-scale must be a number from -4 to 4"),
]


@pytest.mark.parametrize(
    ("extra", "message"), BAD_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
@pytest.mark.parametrize("command", COMMANDS)
def test_option_out_of_range_is_refused_naming_it(command, extra, message, files, tmp_path, caplog):
    refused(argv(command, files, tmp_path, *extra), caplog, message)


def test_a_good_command_does_reach_the_load(files, tmp_path, caplog):
    """The guard above is real: with every input good, the (refused) load is what stops the run
    (the last-resort handler reports its AssertionError as a bug, with the traceback saved)."""
    with caplog.at_level("INFO", logger="mangaka"):
        assert main(argv("write", files, tmp_path)) == 1
    (error,) = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert "a bug in Mangaka: AssertionError: model loaded" in error
    Path(error.rsplit("the traceback is in ", 1)[1]).unlink()


CHAPTERS = {
    "empty": ("", "is empty"),
    "blank": (" \n\t\u3000\n", "is empty"),
    "punctuation": ("……！？——“”「」。", "has no letters or digits"),
}


@pytest.mark.parametrize("kind", CHAPTERS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_chapter_with_nothing_to_adapt_is_refused(command, kind, files, tmp_path, caplog):
    text, message = CHAPTERS[kind]
    chapter = tmp_path / "chapter.txt"
    chapter.write_text(text, encoding="utf-8")
    line = argv(command, files, tmp_path)
    if command == "demo":
        line += ["--chapter", str(chapter)]
    else:
        line[1] = str(chapter)
    refused(line, caplog, str(chapter), message)


@pytest.mark.parametrize("command", ["write", "demo"])
def test_a_missing_or_folder_chapter_is_named(command, files, tmp_path, caplog):
    for chapter, message in [(tmp_path / "nope.txt", "not found"), (tmp_path, "is a folder")]:
        line = argv(command, files, tmp_path)
        if command == "write":
            line[1] = str(chapter)
        else:
            line += ["--chapter", str(chapter)]
        refused(line, caplog, f"chapter file {chapter}", message)


@pytest.mark.parametrize("command", ["write", "demo"])
def test_outputs_that_would_overwrite_the_chapter_are_refused(command, files, tmp_path, caplog):
    chapter = tmp_path / "ch.txt"
    chapter.write_text(DEMO_CHAPTER.read_text(encoding="utf-8"), encoding="utf-8")
    head = ["write", str(chapter)] if command == "write" else ["demo", "--chapter", str(chapter)]
    model = ["--model", str(files["model"])]
    refused([*head, *model, "-o", str(chapter)], caplog, "is the chapter", "overwrite", "give -o another")
    refused([*head, *model, "-o", str(tmp_path / "." / "ch.txt")], caplog, "is the chapter")
    link = tmp_path / "link.json"
    os.link(chapter, link)  # another name for the same file
    refused([*head, *model, "-o", str(link)], caplog, "is the chapter")
    refused([*head, *model, "-o", str(files["model"])], caplog, "is the model")

    plan = tmp_path / "ch.thinking.txt"  # -o ch.json --think: the plan goes to ch.thinking.txt
    plan.write_text("the chapter", encoding="utf-8")
    plan_head = [head[0], str(plan)] if command == "write" else ["demo", "--chapter", str(plan)]
    out = ["-o", str(tmp_path / "ch.json")]
    refused([*plan_head, *model, *out, "--think", "64"], caplog, "the plan file", "is the chapter")

    picture = tmp_path / "ch.storyboard.png"
    picture.write_text("the chapter", encoding="utf-8")
    pic_head = [head[0], str(picture)] if command == "write" else ["demo", "--chapter", str(picture)]
    storyboard = ["--storyboard"] if command == "write" else []
    refused([*pic_head, *model, *out, *storyboard], caplog, "the storyboard picture", "is the chapter")


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_folder_that_cannot_be_used_is_refused(command, files, tmp_path, caplog):
    a_file = tmp_path / "a-file.txt"
    a_file.write_text("x", encoding="utf-8")
    name = "screenplays" if command == "book" else "out.json"
    refused(argv(command, files, tmp_path, out=a_file / name), caplog, "is a file, not a folder")
    if command == "book":
        refused(argv(command, files, tmp_path, out=a_file), caplog, "is a file, not a folder")
    else:
        missing = tmp_path / "no-such-folder" / name
        refused(argv(command, files, tmp_path, out=missing), caplog, "does not exist", "mkdir -p")
        refused(argv(command, files, tmp_path, out=tmp_path), caplog, "is a folder; give a file name")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_this_user_cannot_write_is_refused(command, files, tmp_path, caplog, monkeypatch):
    """As root every folder is writable, so the permission answer is made up here (see below)."""
    monkeypatch.setattr(cli_paths.os, "access", lambda path, mode: Path(path) != tmp_path)
    name = "screenplays" if command == "book" else "out.json"
    refused(argv(command, files, tmp_path, out=tmp_path / name), caplog, f"{tmp_path} is not writable")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root may write anywhere")
@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_folder_not_writable_is_refused(command, files, tmp_path, caplog):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        name = "screenplays" if command == "book" else "out.json"
        refused(argv(command, files, tmp_path, out=locked / name), caplog, "is not writable")
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_model_or_lora_that_is_a_folder_says_so(command, files, tmp_path, caplog):
    folder = tmp_path / "Qwen3.5-35B-A3B-GGUF"
    folder.mkdir()
    line = argv(command, files, tmp_path, "--model", str(folder))
    refused(line, caplog, f"model {folder} is a folder, not a GGUF file; give the .gguf file inside it")
    line = argv(command, files, tmp_path, "--lora", str(folder))
    refused(line, caplog, f"LoRA {folder} is a folder, not a GGUF file; give the .gguf file inside it")


def test_book_refusals(files, tmp_path, caplog):
    refused(argv("book", files, tmp_path, "--concurrency", "0"), caplog, "--concurrency must be from 1 to 64")
    refused(argv("book", files, tmp_path, "--chapters", "9"), caplog, "chapter range '9'", "1..3")
    both = argv("book", files, tmp_path, "--model", str(files["model"]), "--remote", "http://127.0.0.1:9")
    refused(both, caplog, "give either --model FILE.gguf or --remote URL")
    remote = ["--remote", "http://127.0.0.1:9", "--lora", str(files["lora"])]
    refused(argv("book", files, tmp_path, *remote), caplog, "--lora works with --model only")
    refused(argv("book", files, tmp_path, "--remote", "ftp://x"), caplog, "must start with http://")


def test_load_options_check_themselves():
    from mangaka.errors import InputError

    for bad, message in [
        ({"n_ctx": 511}, r"n_ctx must be from 512 to 262144"),
        ({"n_ctx": 262145}, r"n_ctx must be from"),
        ({"n_ctx": 4096.0}, r"n_ctx must be a whole number"),
        ({"n_gpu_layers": 1001}, r"n_gpu_layers must be from -1 to 1000"),
        ({"n_threads": 257}, r"n_threads must be from 0 to 256"),
        ({"n_batch": 0}, r"batch \(n_batch\)"),
        ({"flash_attn": "yes"}, "flash_attn must be one of: auto, on, off"),
    ]:
        with pytest.raises(InputError, match=message):
            inprocess.LoadOptions(**bad)
    assert inprocess.LoadOptions(n_ctx=512, n_gpu_layers=-1, n_threads=256).n_ctx == 512
    assert inprocess.check_lora_scale(-4) == -4.0
    with pytest.raises(InputError, match="lora_scale must be a number"):
        inprocess.check_lora_scale(math.nan)


def test_sampling_preset_lists_the_presets():
    from mangaka.errors import InputError
    from mangaka.llm.base import sampling_preset

    with pytest.raises(InputError, match=r"choose one of: qwen3\.5-instruct, qwen3\.5-thinking, greedy"):
        sampling_preset("bogus")


def test_an_input_error_names_its_field_and_each_caller_names_it_its_own_way():
    """The engine's error says which option it is about (a field, not words to match); the command
    line names the flag and the node the widget from that field."""
    from mangaka.errors import InputError
    from mangaka.llm.loading import LoadOptions
    from mangaka.screenplay.models import MAX_PANELS
    from mangaka.screenplay.request import ScreenplayRequest

    with pytest.raises(InputError) as caught:
        ScreenplayRequest(panels=0)
    error = caught.value
    assert (error.field, str(error)) == ("panels", f"panels must be from 1 to {MAX_PANELS}, got 0")
    assert str(error.named("--panels")) == f"--panels must be from 1 to {MAX_PANELS}, got 0"
    assert error.named("--panels").field == "panels"
    assert str(error.renamed({"panels": "--panels"})) == str(error.named("--panels"))
    assert error.renamed({"dialogue": "dialogue_lines"}) is error  # no name for its field: unchanged
    with pytest.raises(InputError) as caught:
        ScreenplayRequest(dialogue=-1)
    assert str(caught.value.named("dialogue_lines")).startswith("dialogue_lines must be from 0 to ")
    with pytest.raises(InputError) as caught:
        LoadOptions(n_ctx=100)
    assert caught.value.field == "n_ctx" and str(caught.value).startswith("n_ctx must be from")
    with pytest.raises(InputError) as caught:
        ScreenplayRequest(sampling="bogus")
    assert caught.value.field == "sampling" and str(caught.value).startswith("sampling 'bogus' is unknown")
    plain = InputError("the chapter is empty")
    assert plain.field is None and plain.named("--chapter") is plain


@pytest.mark.parametrize("command", ["write", "read"])
def test_a_language_the_chapter_contradicts_is_named_as_its_flag(command, files, tmp_path, caplog):
    chapter = tmp_path / "zh.txt"
    chapter.write_text(
        "“你好，”他说。他看着窗外的雨，心里想着很多事情。\n\n“我们走吧。”她回答。\n", encoding="utf-8"
    )
    line = argv("write", files, tmp_path) if command == "write" else ["read"]
    line[1:2] = [str(chapter)]
    refused([*line, "--language", "en"], caplog, "--language is 'en'", "chapter is written in Chinese")
