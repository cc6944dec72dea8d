"""The Screenwriter's options, each declared once: the request's field, its command-line flag and its
node widget, default, range or choices, and its help in English and Chinese.

From ``OPTIONS`` come ``ScreenplayRequest``'s defaults and range checks (``request.py``), the
command-line flags of ``write``, ``demo``, ``book`` and ``eval`` (``add_request_args``), the
Screenwriter node's widgets and tooltips (``nodes/screenplay.py``), ``eval --compare``'s keys for
them, the option table in ``docs/cli.md``, and the Chinese tooltips in ``locales/zh/nodeDefs.json``
(checked against ``help_zh``). Adding an option is one entry here, plus the field in
``ScreenplayRequest`` that uses it; ``tests/unit/test_options.py`` fails when a flag, a widget, a
doc table or a locale entry disagrees with its declaration.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from ..llm.base import PRESETS
from .models import LANGUAGES, MAX_CHARACTERS, MAX_DIALOGUE, MAX_PANELS, MAX_SCENE_PANELS
from .scenes import DEFAULT_SCENE_CHARS

MAX_STYLE = 200
MAX_ATTEMPTS = 10
MAX_THINK_TOKENS = 32768
MAX_SEED = 2**31 - 1
MAX_SCENE_CHARS = 1_000_000
DEFAULT_SAMPLING = "qwen3.5-instruct"
# Where dialogue comes from: the chapter's own quoted lines, verbatim (each line one of them or a
# narrator caption), or the model's own words (the behaviour before source maps; for chapters
# without quote marks).
DIALOGUE_FROM = ("chapter", "free")
# The languages the Screenwriter's prompt files are written in (prompts/screenwriter/*.<lang>.md).
PROMPT_LANGUAGES = ("en", "zh", "ja")


@dataclass(frozen=True)
class Option:
    """One option. ``low``/``high``: a whole number's range; ``auto``: the word ``auto`` is taken
    too (a count from the chapter; the command line only: the node has its ``auto_counts``);
    ``choices``: the values a text option takes (``strict``: the command line refuses others
    itself; otherwise the request refuses them, listing the choices). ``flag``/``widget``: its name
    on the command line and on the Screenwriter node (None: not there). ``compare``: an
    ``eval --compare`` key (not ``seed`` or ``language``, which eval sets per run)."""

    field: str
    default: Any
    help: str
    help_zh: str
    low: int | None = None
    high: int | None = None
    auto: bool = False
    choices: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()  # the node's words for the choices, in their order (default: the choices)
    strict: bool = True
    flag: str | None = None
    widget: str | None = None
    metavar: str | None = None
    compare: bool = True

    @property
    def widget_choices(self) -> dict[str, str]:
        """The node's combo values → the request's values."""
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

    def flag_help(self) -> str:
        """The command line's help: the help, the range (and ``auto``), the default."""
        bounds = f"; {self.low} to {self.high}" if self.low is not None else ""
        auto = " or auto (counted from the chapter)" if self.auto else ""
        default = "default %(default)s" if self.default is not None else "no default"  # demo sets its own
        return f"{self.help}{bounds}{auto} ({default})"


def _options(*options: Option) -> dict[str, Option]:
    return {o.field: o for o in options}


OPTIONS = _options(
    Option(
        "language", "en", "Language of the dialogue and descriptions", "台词和描述使用的语言",
        choices=LANGUAGES, flag="--language", widget="language", compare=False,
    ),
    Option(
        "panels", 6,
        f"How many panels; more than {MAX_SCENE_PANELS} are written scene by scene",
        f"分镜格数；超过 {MAX_SCENE_PANELS} 格时分场景写",
        low=1, high=MAX_PANELS, auto=True, flag="--panels", widget="panels",
    ),
    Option(
        "dialogue", 8, "How many dialogue lines", "台词句数",
        low=0, high=MAX_DIALOGUE, auto=True, flag="--dialogue", widget="dialogue_lines",
    ),
    Option(
        "max_characters", 8, "At most this many characters in the cast", "角色表中最多的角色数",
        low=1, high=MAX_CHARACTERS, widget="max_characters",
    ),
    Option(
        "sampling", DEFAULT_SAMPLING, "Qwen3.5 model-card presets, or greedy for reproducible drafts",
        "Qwen3.5 模型卡推荐的预设，或可复现草稿用的 greedy",
        choices=tuple(PRESETS), strict=False, flag="--sampling", widget="sampling",
    ),
    Option(
        "seed", 0, "Sampling seed", "采样种子",
        low=0, high=MAX_SEED, flag="--seed", widget="seed", compare=False,
    ),
    Option(
        "max_attempts", 3, "Tries; an invalid result is retried with the problems fed back",
        "尝试次数；结果无效时把问题反馈给模型重试",
        low=1, high=MAX_ATTEMPTS, flag="--attempts", widget="max_attempts",
    ),
    Option(
        "think_tokens", 0,
        "Let the model plan the adaptation first, thinking for up to this many tokens "
        "(Qwen3.5: 2000-8000); the plan guides the screenplay. 0 = no plan",
        "先让模型规划改编，最多思考这么多 token（Qwen3.5：2000-8000）；规划会指导剧本。0 = 不规划",
        low=0, high=MAX_THINK_TOKENS, flag="--think", widget="think_tokens", metavar="TOKENS",
    ),
    Option(
        "dialogue_from", "chapter",
        "from the chapter: every line is one of the chapter's quoted lines, verbatim (a long one "
        "over several balloons), or a narrator caption; panels record the paragraphs they draw and "
        "the cast is the people the chapter names. free: lines in the model's own words (for a "
        "chapter that does not mark speech with quote marks)",
        "from the chapter：每句台词都是章节中带引号的原话（过长的分成几个气泡），或旁白；"
        "分镜格记录所画的段落，角色就是章节中点名的人。free：台词由模型自己写（适用于不用引号标出对话的章节）",
        choices=DIALOGUE_FROM, labels=("from the chapter", "free"), flag="--dialogue-from",
        widget="dialogue",
    ),
    Option(
        "scene_chars", DEFAULT_SCENE_CHARS,
        "A chapter longer than this many characters is written scene by scene (0: only when it "
        "does not fit the context)",
        "超过这么多字的章节按场景分段写（0：仅在放不进上下文时）",
        low=0, high=MAX_SCENE_CHARS, flag="--scene-chars", metavar="CHARS",
    ),
    Option(
        "prompt_language", None,
        "The language of the Screenwriter's prompts (unset: the screenplay's own language)",
        "编剧提示词的语言（不设：与剧本语言相同）",
        choices=PROMPT_LANGUAGES, flag="--prompt-language",
    ),
    Option(
        "style", "manga", f"The adaptation's style, in words (at most {MAX_STYLE} characters)",
        f"改编风格的文字描述（最多 {MAX_STYLE} 字）",
    ),
)  # fmt: skip


def count_or_auto(text: str) -> int | str:
    """A count on the command line: a whole number, else the text as given (``auto``; the request
    checks it and names the option)."""
    try:
        return int(text)
    except ValueError:
        return text


def add_request_args(p: argparse.ArgumentParser) -> None:
    """The flags of every option that has one, from its declaration."""
    for o in OPTIONS.values():
        if o.flag is None:
            continue
        kwargs: dict[str, Any] = {"default": o.default, "help": o.flag_help(), "dest": o.dest}
        if o.low is not None:
            kwargs["type"] = count_or_auto if o.auto else int
        if o.choices and o.strict:
            kwargs["choices"] = o.choices
        elif o.choices:
            kwargs["help"] += f"; one of: {', '.join(o.choices)}"
        if o.metavar:
            kwargs["metavar"] = o.metavar
        p.add_argument(o.flag, **kwargs)


def request_fields_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The request's fields the command line set (every option with a flag)."""
    return {o.field: getattr(args, o.dest) for o in OPTIONS.values() if o.flag and hasattr(args, o.dest)}


def option_table() -> str:
    """The options as a Markdown table (``docs/cli.md``)."""
    rows = ["| option | flag | node widget | default | values | help |", "|---|---|---|---|---|---|"]
    for o in OPTIONS.values():
        if o.low is not None:
            values = f"{o.low} to {o.high}" + (" or `auto`" if o.auto else "")
        else:
            values = ", ".join(f"`{c}`" for c in o.choices) or "text"
        flag = f"`{o.flag}`" if o.flag else ""
        widget = f"`{o.widget}`" if o.widget else ""
        rows.append(f"| `{o.field}` | {flag} | {widget} | `{o.default}` | {values} | {o.help} |")
    return "\n".join(rows) + "\n"
