"""The Screenwriter's options, each declared once (an ``Option``: ``mangaka/options.py`` says what
comes from a declaration).

From ``OPTIONS`` come ``ScreenplayRequest``'s defaults and range checks (``request.py``), the
command-line flags of ``write``, ``demo``, ``book`` and ``eval`` (``add_request_args``), the
Screenwriter and Series Cast nodes' widgets and tooltips, ``eval --compare``'s keys, the option
table in ``docs/cli.md``, and the Chinese tooltips in ``locales/zh/nodeDefs.json`` (checked against
``help_zh``). Adding an option is one entry here, plus the field in ``ScreenplayRequest`` that uses
it (ARCHITECTURE.md, "Adding an option").
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from ..llm.base import PRESETS, Sampling
from ..options import UNSET, Option, add_flags, declare, fields_from_args
from ..options import option_table as table_of
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


OPTIONS = declare(
    Option(
        "language", "auto",
        "Language of the chapter, its dialogue and descriptions; auto: read from the chapter's text",
        "章节、台词和描述的语言；auto：从章节文字识别",
        choices=("auto", *LANGUAGES), flag="--language", widget="language", name_zh="语言",
    ),
    Option(
        "panels", 6,
        f"How many panels; more than {MAX_SCENE_PANELS} are written scene by scene",
        f"分镜格数；超过 {MAX_SCENE_PANELS} 格时分场景写",
        low=1, high=MAX_PANELS, auto=True, flag="--panels", widget="panels", name_zh="分镜格数", compare=True,
    ),
    Option(
        "dialogue", 8, "How many dialogue lines", "台词句数",
        low=0, high=MAX_DIALOGUE, auto=True, flag="--dialogue", widget="dialogue_lines",
        name_zh="台词句数", compare=True,
    ),
    Option(
        "max_characters", 8, "At most this many characters in the cast", "角色表中最多的角色数",
        low=1, high=MAX_CHARACTERS, widget="max_characters", name_zh="最多角色数",
    ),
    Option(
        "sampling", DEFAULT_SAMPLING, "Qwen3.5 model-card presets, or greedy for reproducible drafts",
        "Qwen3.5 模型卡推荐的预设，或可复现草稿用的 greedy",
        choices=tuple(PRESETS), strict=False, flag="--sampling", widget="sampling",
        name_zh="采样", compare=True, objects=(Sampling,),
    ),
    Option(
        "seed", 0, "Sampling seed", "采样种子",
        low=0, high=MAX_SEED, flag="--seed", widget="seed", name_zh="种子",
    ),
    Option(
        "max_attempts", 3, "Tries; an invalid result is retried with the problems fed back",
        "尝试次数；结果无效时把问题反馈给模型重试",
        low=1, high=MAX_ATTEMPTS, flag="--attempts", widget="max_attempts",
        name_zh="最多尝试次数", compare=True,
    ),
    Option(
        "think_tokens", 0,
        "Let the model plan the adaptation first, thinking for up to this many tokens "
        "(Qwen3.5: 2000-8000); the plan guides the screenplay. 0 = no plan",
        "先让模型规划改编，最多思考这么多 token（Qwen3.5：2000-8000）；规划会指导剧本。0 = 不规划",
        low=0, high=MAX_THINK_TOKENS, flag="--think", widget="think_tokens",
        name_zh="思考 token 数", metavar="TOKENS", step=256,
        compare=True,
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
        widget="dialogue", name_zh="台词来源", compare=True,
        fix="chapter: the chapter's quoted lines, verbatim; free: lines in the model's words, for a "
        "chapter without quote marks",
    ),
    Option(
        "speaker_hints", True,
        "Tell the model who the text says speaks each quoted line (an attribution such as "
        "'said Mei', the one the line before spoke to, the nearest name, turn-taking) as a hint; "
        "the model decides (from the chapter only)",
        "把文本所示的说话人（如“梅说”、上一句所称呼的人、最近的名字、轮流说话）作为提示告诉模型；"
        "由模型决定（仅 from the chapter）",
        flag="--speaker-hints", compare=True,
    ),
    Option(
        "scene_chars", DEFAULT_SCENE_CHARS,
        "A chapter longer than this many characters is written scene by scene (0: only when it "
        "does not fit the context)",
        "超过这么多字的章节按场景分段写（0：仅在放不进上下文时）",
        low=0, high=MAX_SCENE_CHARS, flag="--scene-chars", metavar="CHARS", compare=True,
    ),
    Option(
        "prompt_language", None,
        "The language of the Screenwriter's prompts (unset: the screenplay's own language)",
        "编剧提示词的语言（不设：与剧本语言相同）",
        choices=PROMPT_LANGUAGES, flag="--prompt-language", compare=True,
        fix="the languages prompts are written in; leave it unset for the screenplay's own language",
    ),
    Option(
        "style", "manga", f"The adaptation's style, in words (at most {MAX_STYLE} characters)",
        f"改编风格的文字描述（最多 {MAX_STYLE} 字）",
        max_chars=MAX_STYLE, fix="name a style, e.g. 'manga' or 'shoujo manga, soft screentones'",
    ),
)  # fmt: skip


def add_request_args(
    p: argparse.ArgumentParser, defaults: Mapping[str, Any] | None = None, unset: str = UNSET
) -> None:
    """The flags of every Screenwriter option that has one (``defaults``: a command's own;
    ``unset``: how the help says a None one)."""
    add_flags(p, OPTIONS, defaults, unset)


def request_fields_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The request's fields the command line set (every option with a flag)."""
    return fields_from_args(args, OPTIONS)


def option_table() -> str:
    """The Screenwriter's options as a Markdown table (``docs/cli.md``)."""
    return table_of(OPTIONS)
