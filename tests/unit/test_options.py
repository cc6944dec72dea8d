"""Every user-facing option is declared once (``mangaka/options.py``): the Screenwriter's, Load LLM's,
Compose Page's and the book's. The command line's flags, the engine's defaults and range checks,
eval's ``--compare`` keys, the docs' tables and the Chinese, Japanese and Korean names and tooltips agree
with each declaration (the nodes' widgets are compared in the comfy tier, ``tests/comfy/test_locales.py``)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from mangaka.batch.options import BOOK_OPTIONS
from mangaka.cli import COMMANDS as COMMANDS_ALL
from mangaka.cli.eval import COMPARE_KEYS
from mangaka.cli.main import build_parser
from mangaka.devtools.docs import option_tables
from mangaka.devtools.locales import missing_translations, read_locale, with_declarations
from mangaka.errors import InputError
from mangaka.llm.loading import LoadOptions
from mangaka.llm.options import LOAD_OPTIONS, RUN_OPTIONS, RunOptions
from mangaka.options import UI_LANGUAGES, Option, option_table
from mangaka.page.layout import LayoutOptions
from mangaka.page.options import AUTOMATIC, LAYOUT_FIELDS, PAGE_OPTIONS, layout_from, lettering_from
from mangaka.screenplay.options import OPTIONS
from mangaka.screenplay.request import ScreenplayRequest
from mangaka.surfaces import COMMANDS, NODES, OPTION_SETS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def actions(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {flag: a for a in sub._actions for flag in a.option_strings}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_flag_is_its_declaration(command):
    """Each command has the flags the registry (``mangaka/surfaces.py``) says it shows, each as
    declared, with the command's own default where the registry gives one."""
    found = actions(command)
    for shown in COMMANDS[command]:
        for o in shown.options().values():
            if o.flag is None:
                continue
            action = found[o.flag]
            default = shown.defaults.get(o.field, o.default)
            assert (action.dest, action.default) == (o.dest, default), (command, o.field)
            expected = list(o.choices) if o.choices and o.strict else None
            assert (list(action.choices) if action.choices else None) == expected, o.field
            assert o.help.replace("%", "%%") in action.help, o.field


def test_no_command_shows_a_declared_flag_the_registry_does_not_list():
    """A flag of a declared option on a command is there because the registry says so (a flag of
    the command's own that shares a name, eval's ``--chapters``, has its own help)."""
    helps = {o.flag: o.help for s in OPTION_SETS.values() for o in s.options.values() if o.flag}
    for command in COMMANDS_ALL:
        listed = {o.flag for shown in COMMANDS.get(command, ()) for o in shown.options().values()}
        found = actions(command)
        extra = {f for f in found if f in helps and helps[f] in (found[f].help or "") and f not in listed}
        assert not extra, (command, extra)


def test_the_request_takes_its_defaults_and_ranges_from_the_declarations():
    fields = {f.name: f.default for f in dataclasses.fields(ScreenplayRequest)}
    assert set(OPTIONS) == set(fields), "an option without a field, or a field without a declaration"
    for o in OPTIONS.values():
        assert fields[o.field] == o.default, o.field
        if o.low is not None:
            with pytest.raises(InputError) as caught:
                ScreenplayRequest(**{o.field: o.high + 1})
            assert caught.value.field == o.field
            assert getattr(ScreenplayRequest(**{o.field: o.high}), o.field) == o.high


def test_load_options_take_their_defaults_and_ranges_from_the_declarations():
    defaults = LoadOptions()
    for name in ("n_ctx", "n_gpu_layers", "n_threads", "flash_attn"):
        o = LOAD_OPTIONS[name]
        assert getattr(defaults, name) == o.default, name
        bad = o.high + 1 if o.low is not None else "sometimes"
        with pytest.raises(InputError) as caught:
            LoadOptions(**{name: bad})
        assert caught.value.field == name
        good = o.high if o.low is not None else o.choices[-1]
        assert getattr(LoadOptions(**{name: good}), name) == good
    from mangaka.llm.inprocess import check_lora_scale

    assert check_lora_scale(RUN_OPTIONS["lora_scale"].high) == 4.0
    with pytest.raises(InputError, match=r"--lora-scale must be from -4 to 4, got 4\.5"):
        check_lora_scale(4.5, "--lora-scale")


def test_run_options_take_their_defaults_and_ranges_from_the_declarations():
    """How a loaded model runs is a declared set of its own, with its own typed value: the command
    line and the node build a ``RunOptions``, nothing is popped out of the load options."""
    assert RunOptions() == RunOptions(**{k: o.default for k, o in RUN_OPTIONS.items()})
    assert not set(RUN_OPTIONS) & set(LOAD_OPTIONS)
    assert {f.name for f in dataclasses.fields(RunOptions)} == set(RUN_OPTIONS)
    assert {f.name for f in dataclasses.fields(LoadOptions)} >= set(LOAD_OPTIONS)
    for bad in ({"lora_scale": 9.0}, {"memory": "forever"}, {"jump_forward": "fast"}):
        with pytest.raises(InputError) as caught:
            RunOptions(**bad)
        assert caught.value.field == next(iter(bad))


def test_the_layout_takes_its_defaults_and_ranges_from_the_declarations():
    defaults = LayoutOptions()
    declared = {name: PAGE_OPTIONS[name].default for name in LAYOUT_FIELDS}
    made = layout_from(declared)
    for name in LAYOUT_FIELDS:
        if name in ("width", "height"):
            continue  # a preset's size: used only with a custom page
        expected = None if name in AUTOMATIC else declared[name]
        assert getattr(defaults, name) == getattr(made, name) == expected, name
    custom = layout_from({**declared, "page": "custom"})
    assert (custom.width, custom.height) == (PAGE_OPTIONS["width"].default, PAGE_OPTIONS["height"].default)
    for name in ("panels_per_page", "margin", "gutter", "bleed"):
        with pytest.raises(InputError) as caught:
            layout_from({**declared, name: PAGE_OPTIONS[name].high + 1})
        assert caught.value.field == name
    lettering, drawing = lettering_from(
        {**declared, **{n: PAGE_OPTIONS[n].default for n in PAGE_OPTIONS}}, "zh"
    )
    assert (lettering.vertical, lettering.max_font_size, drawing) == (
        False,
        None,
        {"letter": True, "border": None},
    )
    with pytest.raises(InputError) as caught:
        lettering_from({**{n: o.default for n, o in PAGE_OPTIONS.items()}, "border": 101}, "en")
    assert caught.value.field == "border"


def test_the_book_options_check_their_ranges():
    for o in BOOK_OPTIONS.values():
        if o.low is not None:
            with pytest.raises(InputError, match=f"{o.flag} must be from {o.low} to {o.high}"):
                o.check(o.high + 1, o.flag)
            assert o.check(o.low) == o.low


def test_compare_keys_are_the_declared_flags():
    for o in (*LOAD_OPTIONS.values(), *RUN_OPTIONS.values(), *OPTIONS.values()):
        if o.flag:
            assert (o.dest in COMPARE_KEYS) == o.compare, o.field
            if o.compare:
                assert COMPARE_KEYS[o.dest][0] == o.dest


@pytest.mark.parametrize("lang", list(UI_LANGUAGES))
@pytest.mark.parametrize("target", sorted(NODES))
def test_the_translated_names_and_tooltips_are_the_declared_ones(target, lang):
    """Each language's locale has the names and tooltips of declared widgets written from the
    declarations (``mangaka/devtools/locales.py``); each declared widget is on one of the nodes said
    to show it; each declaration has its help, and a widget its name, in every language."""
    options = OPTION_SETS[target].options
    assert [o.field for o in options.values() if not (o.help and o.help_in(lang))] == [], "no help"
    assert [o.field for o in options.values() if o.widget and not o.name_in(lang)] == [], "no name"
    locale = read_locale(lang)
    assert with_declarations(locale, lang=lang) == locale, "run .venv/bin/python -m mangaka.devtools.locales"
    shown = {w for node in NODES[target] for w in locale[node]["inputs"]}
    assert {o.widget for o in options.values() if o.widget} <= shown


@pytest.mark.parametrize("lang", [lang for lang in UI_LANGUAGES if lang != "zh"])
def test_each_locale_translates_all_the_chinese_one_does(lang):
    """Without a server: every node, name, description, input, output and tooltip of the Chinese
    locale is in the others too (the comfy tier checks each against the nodes themselves)."""
    assert missing_translations(read_locale("zh"), read_locale(lang)) == []


def test_a_declaration_without_a_language_fails_the_check(monkeypatch):
    lacking = dataclasses.replace(PAGE_OPTIONS["bleed"], name_ko="")
    monkeypatch.setitem(PAGE_OPTIONS, "bleed", lacking)
    with pytest.raises(AssertionError, match="no name"):
        test_the_translated_names_and_tooltips_are_the_declared_ones("page", "ko")


def test_a_changed_chinese_name_or_help_is_written_into_the_locale(monkeypatch):
    zh = read_locale("zh")
    changed = dataclasses.replace(LOAD_OPTIONS["n_threads"], name_zh="线程个数", help_zh="线程")
    monkeypatch.setitem(LOAD_OPTIONS, "n_threads", changed)
    entry = with_declarations(zh)["MangakaLoadLLM"]["inputs"]["threads"]
    assert entry == {"name": "线程个数", "tooltip": "线程"}


def test_a_new_declared_widget_gets_its_translations_on_the_node_that_shows_it(monkeypatch):
    """The diff ARCHITECTURE.md shows for a new option: the declaration alone gives each locale its
    name and tooltip (Chinese, Japanese, Korean), once the node shows the widget (the Screenwriter
    shows every declared widget it does not place itself, last)."""
    zh = read_locale("zh")
    new = Option(
        "max_scenes", 0, "At most this many scenes (0: no limit)", "最多场景数（0：不限）",
        low=0, high=100, flag="--max-scenes", widget="max_scenes", name_zh="最多场景数", compare=True,
        name_ja="最大シーン数", help_ja="最大シーン数（0：制限なし）",
        name_ko="최대 장면 수", help_ko="최대 장면 수(0: 제한 없음)",
    )  # fmt: skip
    monkeypatch.setitem(OPTIONS, "max_scenes", new)
    en = {"MangakaScreenwriter": {"inputs": {"max_scenes": {"name": "max_scenes"}}}}
    entry = with_declarations(zh, en)["MangakaScreenwriter"]["inputs"]["max_scenes"]
    assert entry == {"name": "最多场景数", "tooltip": "最多场景数（0：不限）"}
    assert "max_scenes" not in with_declarations(zh, en)["MangakaSeriesCast"]["inputs"]
    for lang in ("ja", "ko"):
        entry = with_declarations(read_locale(lang), en, lang)["MangakaScreenwriter"]["inputs"]["max_scenes"]
        assert entry == {"name": new.name_in(lang), "tooltip": new.help_in(lang)}
    assert actions("write")["--max-scenes"].default == 0


def test_the_docs_tables_are_generated_from_the_declarations():
    assert option_tables() in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for options in (OPTIONS, LOAD_OPTIONS, PAGE_OPTIONS, BOOK_OPTIONS):
        assert option_table(options) in option_tables()


def test_a_changed_declaration_is_seen_everywhere(monkeypatch):
    """Edit one declaration: the flag, the request and the table follow it."""
    changed = dataclasses.replace(OPTIONS["max_attempts"], default=5, high=7)
    monkeypatch.setitem(OPTIONS, "max_attempts", changed)
    assert actions("write")["--attempts"].default == 5
    with pytest.raises(InputError, match="max_attempts must be from 1 to 7"):
        ScreenplayRequest(max_attempts=8)
    assert "| `max_attempts` | `--attempts` | `max_attempts` | `5` | 1 to 7 |" in option_table(OPTIONS)
    ctx = dataclasses.replace(LOAD_OPTIONS["n_ctx"], high=4096)
    monkeypatch.setitem(LOAD_OPTIONS, "n_ctx", ctx)
    with pytest.raises(InputError, match="n_ctx must be from 512 to 4096 tokens"):
        LoadOptions(n_ctx=8192)
    assert "4096" in actions("write")["--ctx"].help


def test_a_value_of_the_wrong_kind_is_refused_with_its_name():
    for o, bad in (
        (LOAD_OPTIONS["n_threads"], 2.5),
        (LOAD_OPTIONS["n_threads"], True),
        (RUN_OPTIONS["lora_scale"], float("nan")),
        (PAGE_OPTIONS["weighted"], "yes"),
        (PAGE_OPTIONS["direction"], "up"),
    ):
        with pytest.raises(InputError) as caught:
            o.check(bad, o.widget)
        assert caught.value.field == o.field and str(caught.value).startswith(f"{o.widget} must be")
