"""User-facing options, each declared once: its engine field, command-line flag, node widget, default,
range or choices, and its help in English, Chinese, Japanese and Korean.

Six sets are declared with ``Option`` (``surfaces.py`` lists them): the Screenwriter's
(``screenplay/options.py``), Load LLM's load and run options (``llm/options.py``), Compose Page's
(``page/options.py``), the book's (``batch/options.py``) and the motion comic's
(``video/options.py``).
From each declaration come the command-line flags (``add_flags``), the node widgets
(``nodes/_comfy.py:widget``), the engine's range checks (``Option.check``), the option tables in
``docs/cli.md`` (``option_table``) and the widget names and tooltips in
``locales/<lang>/nodeDefs.json`` for each language of ``UI_LANGUAGES`` (from ``name_zh`` and ``help_zh``,
``name_ja`` and ``help_ja``, ``name_ko`` and ``help_ko``). ``tests/unit/test_options.py`` and
``tests/comfy/test_locales.py`` fail when a flag, a widget, a doc table or a locale entry disagrees
with its declaration, or when a declaration lacks a language's name or help.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InputError

UNSET = "unset by default"  # what a flag's help says of a default of None (a command may say more)
# The languages of ComfyUI's interface, besides English, that each declaration names its widget and
# says its help in (``locales/<lang>/nodeDefs.json``, ``web/docs/<Node>/<lang>.md``), each by its name.
UI_LANGUAGES = {"zh": "中文", "ja": "日本語", "ko": "한국어"}


@dataclass(frozen=True)
class Option:
    """One option. ``low``/``high``: a number's range (a whole number's unless the default is a
    float); ``meaning``: what its special values mean, said after the range (`` (-1 = all)``);
    ``auto``: the word ``auto`` is taken too (a count from the chapter; the command line only);
    ``choices``: the values a text option takes (``strict``: the command line refuses others itself;
    otherwise the engine refuses them, listing the choices); ``labels``: the node's words for the
    choices, in their order. ``flag``/``widget``: its name on the command line and on its node (None:
    not there). ``name_zh``/``help_zh``: the widget's name and tooltip in the Chinese interface
    (``name_ja``/``help_ja`` Japanese, ``name_ko``/``help_ko`` Korean). ``step``: the widget's
    step. ``compare``: an ``eval --compare`` key (the Screenwriter's and Load LLM's options).
    ``max_chars``: a text's longest (a text with a default is never empty); ``fix``: what a refusal of a
    choice or a text adds, how to choose; ``objects``: types taken as they are besides the
    choices (``Sampling`` settings for the sampling preset). A default of None is taken too."""

    field: str
    default: Any
    help: str
    help_zh: str
    low: float | None = None
    high: float | None = None
    meaning: str = ""
    auto: bool = False
    choices: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    strict: bool = True
    flag: str | None = None
    widget: str | None = None
    name_zh: str = ""
    name_ja: str = ""
    help_ja: str = ""
    name_ko: str = ""
    help_ko: str = ""
    metavar: str | None = None
    step: float | None = None
    compare: bool = False
    max_chars: int | None = None
    fix: str = ""
    objects: tuple[type, ...] = ()

    @property
    def kind(self) -> str:
        """``bool``, ``float``, ``int``, ``choice`` or ``text``: the widget and the flag's type."""
        if isinstance(self.default, bool):
            return "bool"
        if isinstance(self.default, float):
            return "float"
        if self.low is not None:
            return "int"
        return "choice" if self.choices else "text"

    def name_in(self, lang: str) -> str:
        """The widget's name in the interface language ``lang`` (one of ``UI_LANGUAGES``)."""
        return getattr(self, f"name_{lang}")

    def help_in(self, lang: str) -> str:
        """The help (the widget's tooltip) in the interface language ``lang``."""
        return getattr(self, f"help_{lang}")

    @property
    def widget_choices(self) -> dict[str, str]:
        """The node's combo values → the engine's values."""
        return dict(zip(self.labels or self.choices, self.choices, strict=True))

    @property
    def widget_default(self) -> Any:
        """The widget's default: the default, in the node's words for a choice."""
        if not self.choices or self.default is None:
            return self.default
        return (self.labels or self.choices)[self.choices.index(self.default)]

    @property
    def dest(self) -> str:
        """The ``argparse`` attribute its flag sets."""
        return (self.flag or "").lstrip("-").replace("-", "_")

    def bounds(self) -> str:
        """``512 to 262144``, ``-4 to 4``: the range as the messages and tables say it."""
        return f"{_number(self.low)} to {_number(self.high)}"

    def flag_help(self, default: Any = ..., unset: str = UNSET) -> str:
        """The command line's help: the help, the range (and ``auto``), the default (``default``: a
        command's own, else the declared one; ``unset``: what a command says when it is None)."""
        bounds = f"; {self.bounds()}{self.meaning}" if self.low is not None else ""
        auto = " or auto (counted from the chapter)" if self.auto else ""
        text = self.help.replace("%", "%%")  # argparse formats the help with %
        if self.kind == "bool":
            return text
        default = self.default if default is ... else default
        said = unset if default in (None, "") else "default %(default)s"
        return f"{text}{bounds}{auto} ({said})"

    def check(self, value: Any, label: str | None = None) -> Any:
        """``value`` if it is in the declared range or choices, else ``InputError`` about the field
        (``label``: how the message names it, the field by default); ``auto`` as the word ``auto``
        where the option takes it."""
        if (value is None and self.default is None) or isinstance(value, self.objects):
            return value
        kind = self.kind
        if kind in ("int", "float"):
            return self._check_number(value, label)
        if kind == "bool" and not isinstance(value, bool):
            raise InputError.about(self.field, f"must be true or false, got {value!r}", label)
        if self.choices and value not in self.choices:
            known = ", ".join(self.choices)
            if not self.strict:  # a name the command line let through (a sampling preset)
                raise InputError.about(self.field, f"{value!r} is unknown; choose one of: {known}", label)
            fix = f" ({self.fix})" if self.fix else ""
            raise InputError.about(self.field, f"must be one of: {known}; got {value!r}{fix}", label)
        if kind == "text" and not isinstance(value, str):
            raise InputError.about(self.field, f"must be text, got {type(value).__name__}", label)
        if kind == "text" and self.default and not value.strip():  # a text with a default is never empty
            raise InputError.about(self.field, f"is empty{': ' + self.fix if self.fix else ''}", label)
        if self.max_chars is not None and len(value) > self.max_chars:
            raise InputError.about(
                self.field, f"is {len(value)} characters long; at most {self.max_chars}", label
            )
        return value

    def _check_number(self, value: Any, label: str | None) -> Any:
        if self.auto and isinstance(value, str):
            if value.strip().casefold() == "auto":
                return "auto"
            raise InputError.about(
                self.field, f"must be a whole number from {self.bounds()} or 'auto', got {value!r}", label
            )
        number = (int, float) if self.kind == "float" else int
        if isinstance(value, bool) or not isinstance(value, number) or not math.isfinite(value):
            noun = "a number" if self.kind == "float" else "a whole number"
            raise InputError.about(
                self.field, f"must be {noun} from {self.bounds()}{self.meaning}, got {value!r}", label
            )
        if not self.low <= value <= self.high:
            raise InputError.about(
                self.field, f"must be from {self.bounds()}{self.meaning}, got {_number(value)}", label
            )
        return float(value) if self.kind == "float" else value


def _number(value: float | None) -> str:
    """A whole number as written, a float without trailing zeros (``-4``, ``0.05``)."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def declare(*options: Option) -> dict[str, Option]:
    """A set of options by field, in the order given (the order of flags, widgets and tables)."""
    return {o.field: o for o in options}


def flag_names(options: Mapping[str, Option]) -> dict[str, str]:
    """field → flag, for ``InputError.renamed``."""
    return {o.field: o.flag for o in options.values() if o.flag}


def widget_names(options: Mapping[str, Option]) -> dict[str, str]:
    """field → widget, for ``InputError.renamed``."""
    return {o.field: o.widget for o in options.values() if o.widget}


def count_or_auto(text: str) -> int | str:
    """A count on the command line: a whole number, else the text as given (``auto``; the engine
    checks it and names the option)."""
    try:
        return int(text)
    except ValueError:
        return text


def add_flags(
    p: argparse.ArgumentParser,
    options: Mapping[str, Option],
    defaults: Mapping[str, Any] | None = None,
    unset: str = UNSET,
) -> None:
    """The flags of every option in ``options`` that has one, from its declaration (``defaults``: a
    command's own defaults by field, said in its help; ``unset``: how its help says a None one)."""
    for o in options.values():
        if o.flag is None:
            continue
        default = (defaults or {}).get(o.field, o.default)
        kwargs: dict[str, Any] = {"default": default, "help": o.flag_help(default, unset), "dest": o.dest}
        if o.kind == "bool":
            kwargs["action"] = argparse.BooleanOptionalAction if default else "store_true"
        elif o.kind == "float":
            kwargs["type"] = float
        elif o.kind == "int":
            kwargs["type"] = count_or_auto if o.auto else int
        if o.choices and o.strict:
            kwargs["choices"] = o.choices
        elif o.choices:
            kwargs["help"] += f"; one of: {', '.join(o.choices)}"
        if o.metavar:
            kwargs["metavar"] = o.metavar
        p.add_argument(o.flag, **kwargs)


def fields_from_args(args: argparse.Namespace, options: Mapping[str, Option]) -> dict[str, Any]:
    """The engine's fields the command line set (every option of ``options`` with a flag)."""
    return {o.field: getattr(args, o.dest) for o in options.values() if o.flag and hasattr(args, o.dest)}


def option_table(options: Mapping[str, Option]) -> str:
    """The options as a Markdown table (``docs/cli.md``)."""
    rows = ["| option | flag | node widget | default | values | help |", "|---|---|---|---|---|---|"]
    for o in options.values():
        if o.low is not None:
            values = o.bounds() + (" or `auto`" if o.auto else "") + o.meaning
        elif o.kind == "bool":
            values = "`true`, `false`"
        else:
            values = ", ".join(f"`{c}`" for c in o.choices) or "text"
        flag = f"`{o.flag}`" if o.flag else ""
        widget = f"`{o.widget}`" if o.widget else ""
        default = "empty" if o.default == "" else f"`{o.default}`"
        rows.append(f"| `{o.field}` | {flag} | {widget} | {default} | {values} | {o.help} |")
    return "\n".join(rows) + "\n"
