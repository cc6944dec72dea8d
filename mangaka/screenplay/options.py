"""The Screenwriter's options, each declared once (an ``Option``: ``mangaka/options.py`` says what
comes from a declaration).

From ``OPTIONS`` come ``ScreenplayRequest``'s defaults and range checks (``request.py``), the
command-line flags of ``write``, ``demo``, ``book`` and ``eval`` (``add_request_args``), the
Screenwriter and Series Cast nodes' widgets and tooltips, ``eval --compare``'s keys, the option
table in ``docs/cli.md``, and the Chinese, Japanese and Korean names and tooltips in
``locales/{zh,ja,ko}/nodeDefs.json`` (from ``name_zh``/``help_zh`` and the others). Adding an
option is one entry here, plus the field in ``ScreenplayRequest`` that uses it (ARCHITECTURE.md,
"Adding an option").
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
# What the reading's guessed speakers do: shown to the model as ``likely``, or forced as sure ones are;
# auto: forced for a model of fewer than SMALL_MODEL parameters, shown to a larger or unknown one.
SPEAKER_GUESSES = ("auto", "hint", "force")
# Both models measured below it (SmolLM2-135M, Qwen2.5-0.5B) chose an open line's speaker worse than
# the reading's guesses (0.21 and 0.30 right against 0.63: docs/evaluation.md).
SMALL_MODEL = 1_000_000_000
# The languages the Screenwriter's prompt files are written in (prompts/screenwriter/*.<lang>.md).
PROMPT_LANGUAGES = ("en", "zh", "ja")


OPTIONS = declare(
    Option(
        "language", "auto",
        "Language of the chapter, its dialogue and descriptions; auto: read from the chapter's text",
        "章节、台词和描述的语言；auto：从章节文字识别",
        choices=("auto", *LANGUAGES), flag="--language", widget="language", name_zh="语言",
        name_ja="言語", help_ja="章とその台詞・描写の言語。auto：章の文章から判定します",
        name_ko="언어", help_ko="챕터와 그 대사·묘사의 언어. auto: 챕터 텍스트에서 판별합니다",
    ),
    Option(
        "panels", 6,
        f"How many panels; more than {MAX_SCENE_PANELS} are written scene by scene",
        f"分镜格数；超过 {MAX_SCENE_PANELS} 格时分场景写",
        low=1, high=MAX_PANELS, auto=True, flag="--panels", widget="panels", name_zh="分镜格数", compare=True,
        name_ja="コマ数", help_ja=f"コマ数。{MAX_SCENE_PANELS} コマを超えるとシーンごとに書きます",
        name_ko="패널 수", help_ko=f"패널 수. {MAX_SCENE_PANELS}개를 넘으면 장면별로 나누어 씁니다",
    ),
    Option(
        "dialogue", 8, "How many dialogue lines", "台词句数",
        low=0, high=MAX_DIALOGUE, auto=True, flag="--dialogue", widget="dialogue_lines",
        name_zh="台词句数", compare=True,
        name_ja="台詞数", help_ja="台詞の数",
        name_ko="대사 수", help_ko="대사 줄 수",
    ),
    Option(
        "max_characters", 8, "At most this many characters in the cast", "角色表中最多的角色数",
        low=1, high=MAX_CHARACTERS, widget="max_characters", name_zh="最多角色数",
        name_ja="最大キャラクター数", help_ja="キャスト表に載せるキャラクターの最大数",
        name_ko="최대 캐릭터 수", help_ko="등장인물 목록에 넣을 캐릭터의 최대 수",
    ),
    Option(
        "sampling", DEFAULT_SAMPLING, "Qwen3.5 model-card presets, or greedy for reproducible drafts",
        "Qwen3.5 模型卡推荐的预设，或可复现草稿用的 greedy",
        choices=tuple(PRESETS), strict=False, flag="--sampling", widget="sampling",
        name_zh="采样", compare=True, objects=(Sampling,),
        name_ja="サンプリング",
        help_ja="Qwen3.5 のモデルカード推奨プリセット、または再現できる下書き用の greedy",
        name_ko="샘플링", help_ko="Qwen3.5 모델 카드 권장 프리셋, 또는 재현 가능한 초안용 greedy",
    ),
    Option(
        "seed", 0, "Sampling seed", "采样种子",
        low=0, high=MAX_SEED, flag="--seed", widget="seed", name_zh="种子",
        name_ja="シード", help_ja="サンプリングのシード",
        name_ko="시드", help_ko="샘플링 시드",
    ),
    Option(
        "max_attempts", 3, "Tries; an invalid result is retried with the problems fed back",
        "尝试次数；结果无效时把问题反馈给模型重试",
        low=1, high=MAX_ATTEMPTS, flag="--attempts", widget="max_attempts",
        name_zh="最多尝试次数", compare=True,
        name_ja="最大試行回数", help_ja="試行回数。結果が無効なら問題点をモデルに伝えて再試行します",
        name_ko="최대 시도 횟수",
        help_ko="시도 횟수. 결과가 유효하지 않으면 문제점을 모델에 알려 다시 시도합니다",
    ),
    Option(
        "think_tokens", 0,
        "Let the model plan the adaptation first, thinking for up to this many tokens "
        "(Qwen3.5: 2000-8000); the plan guides the screenplay. 0 = no plan",
        "先让模型规划改编，最多思考这么多 token（Qwen3.5：2000-8000）；规划会指导剧本。0 = 不规划",
        low=0, high=MAX_THINK_TOKENS, flag="--think", widget="think_tokens",
        name_zh="思考 token 数", metavar="TOKENS", step=256,
        compare=True,
        name_ja="思考トークン数",
        help_ja="まずモデルに翻案を計画させ、最大でこのトークン数だけ思考させます（Qwen3.5：2000-8000）。"
        "計画が脚本の指針になります。0 = 計画なし",
        name_ko="사고 토큰 수",
        help_ko="먼저 모델이 각색을 계획하게 하고 최대 이 토큰 수만큼 생각하게 합니다(Qwen3.5: 2000-8000). "
        "계획이 각본의 지침이 됩니다. 0 = 계획 없음",
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
        name_ja="台詞の出典",
        help_ja="from the "
        "chapter：台詞はすべて章中の引用符で囲まれた台詞そのまま（長いものは複数の吹き出しに分割）"
        "かナレーション。コマは描く段落を記録し、キャストは章に名前が出る人物。"
        "free：台詞はモデル自身の言葉（引用符で発話を示さない章向け）",
        name_ko="대사 출처",
        help_ko="from the chapter: 모든 대사는 챕터에서 따옴표로 묶인 원문 그대로(긴 대사는 여러 말풍선으로 "
        "나눔)이거나 내레이션입니다. 패널은 그리는 문단을 기록하고, 등장인물은 챕터에 이름이 나오는 "
        "사람입니다. free: 대사를 모델이 직접 씁니다(따옴표로 대사를 표시하지 않는 챕터용)",
    ),
    Option(
        "speaker_hints", True,
        "Tell the model who the text says speaks each quoted line (an attribution such as "
        "'said Mei', the one the line before spoke to, the nearest name, turn-taking) as a hint; "
        "the model decides (from the chapter only)",
        "把文本所示的说话人（如“梅说”、上一句所称呼的人、最近的名字、轮流说话）作为提示告诉模型；"
        "由模型决定（仅 from the chapter）",
        flag="--speaker-hints", compare=True,
        help_ja="本文が示す各台詞の話者（「メイが言った」のような帰属表現、直前の台詞が呼びかけた相手、"
        "最も近い名前、交互の発話）をヒントとしてモデルに伝えます。決めるのはモデルです（from the chapter "
        "のみ）",
        help_ko="본문이 가리키는 각 대사의 화자('메이가 말했다' 같은 표현, 앞 대사가 부른 사람, 가장 가까운 "
        "이름, 번갈아 말하기)를 힌트로 모델에 알려 줍니다. 결정은 모델이 합니다(from the chapter 전용)",
    ),
    Option(
        "speaker_guesses", "auto",
        "What the reading's guess does for a line whose speaker the text leaves open (the likely "
        "speaker: turn-taking, the last person named before it): hint: shown to the model, which "
        "decides; force: written as the line's speaker, as a sure one is, and the model chooses "
        "only lines with no guess; auto: force for a model under 1B parameters (which chooses "
        "worse than the guesses), else hint (from the chapter only)",
        "文本未确定说话人的台词，阅读给出的猜测（轮流说话、前文最后提到的人）如何使用：hint：作为提示，"
        "由模型决定；force：像确定的说话人一样直接写入，模型只为没有猜测的台词选择；auto：参数少于 10 亿"
        "的模型（选得不如猜测）用 force，否则用 hint（仅 from the chapter）",
        choices=SPEAKER_GUESSES, flag="--speaker-guesses", compare=True,
        help_ja="本文が話者を決めていない台詞について、読み取りの推測（交互の発話、直前に名前が出た人物）の"
        "扱い。hint：モデルにヒントとして示し、モデルが決めます。force：確かな話者と同じく話者として書き込み、"
        "モデルは推測のない台詞だけを選びます。auto：パラメータ数 10 億未満のモデル（推測より選択が下手）"
        "には force、それ以外は hint（from the chapter のみ）",
        help_ko="본문이 화자를 정하지 않은 대사에 대해 읽기가 내놓은 추측"
        "(번갈아 말하기, 바로 앞에 이름이 나온 사람)을 어떻게 쓸지. "
        "hint: 모델에 힌트로 보여 주고 모델이 결정합니다. "
        "force: 확실한 화자처럼 화자로 적고, "
        "모델은 추측이 없는 대사만 고릅니다. "
        "auto: 매개변수 10억 개 미만의 모델(추측보다 잘 고르지 못함)에는 force, "
        "그 밖에는 hint(from the chapter 전용)",
    ),
    Option(
        "scene_chars", DEFAULT_SCENE_CHARS,
        "A chapter longer than this many characters is written scene by scene (0: only when it "
        "does not fit the context)",
        "超过这么多字的章节按场景分段写（0：仅在放不进上下文时）",
        low=0, high=MAX_SCENE_CHARS, flag="--scene-chars", metavar="CHARS", compare=True,
        help_ja="この文字数より長い章はシーンごとに書きます（0：コンテキストに収まらないときのみ）",
        help_ko="이 글자 수보다 긴 챕터는 장면별로 나누어 씁니다(0: 컨텍스트에 들어가지 않을 때만)",
    ),
    Option(
        "prompt_language", None,
        "The language of the Screenwriter's prompts (unset: the screenplay's own language)",
        "编剧提示词的语言（不设：与剧本语言相同）",
        choices=PROMPT_LANGUAGES, flag="--prompt-language", compare=True,
        fix="the languages prompts are written in; leave it unset for the screenplay's own language",
        help_ja="脚本家のプロンプトの言語（未設定：脚本と同じ言語）",
        help_ko="각본가 프롬프트의 언어(미설정: 각본과 같은 언어)",
    ),
    Option(
        "style", "manga", f"The adaptation's style, in words (at most {MAX_STYLE} characters)",
        f"改编风格的文字描述（最多 {MAX_STYLE} 字）",
        max_chars=MAX_STYLE, fix="name a style, e.g. 'manga' or 'shoujo manga, soft screentones'",
        help_ja=f"翻案のスタイルを言葉で（最大 {MAX_STYLE} 文字）",
        help_ko=f"각색 스타일을 말로 설명(최대 {MAX_STYLE}자)",
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
