"""The motion comic's options, each declared once (``mangaka/options.py`` says what comes from
them): how long each line and shot lasts, how the camera moves, and how the video is drawn and
encoded. The ``video`` command's flags and the Motion Comic node's widgets are made from here;
``timing_from`` and ``render_from`` check the values against their declarations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..options import Option, declare

SIZES: dict[str, tuple[int, int]] = {
    "1080x1920": (1080, 1920),
    "1920x1080": (1920, 1080),
    "1080x1080": (1080, 1080),
}
DIRECTIONS = ("rtl", "ltr")

VIDEO_OPTIONS = declare(
    Option(
        "size", "1080x1920", "Frame size: vertical 9:16 for short-video apps, 16:9, or square",
        "画面尺寸：竖屏 9:16（短视频平台）、横屏 16:9 或方形", choices=tuple(SIZES),
        flag="--size", widget="size", name_zh="画面尺寸",
        name_ja="画面サイズ", help_ja="フレームサイズ：縦 9:16（ショート動画アプリ）、横 16:9、または正方形",
        name_ko="화면 크기", help_ko="프레임 크기: 세로 9:16(숏폼 앱), 가로 16:9 또는 정사각형",
    ),
    Option(
        "fps", 24, "Frames a second", "每秒帧数", low=12, high=60,
        flag="--fps", widget="fps", name_zh="帧率",
        name_ja="フレームレート", help_ja="1 秒あたりのフレーム数",
        name_ko="프레임 레이트", help_ko="초당 프레임 수",
    ),
    Option(
        "direction", "rtl", "Reading direction of the pans: rtl (manga) or ltr (comics)",
        "横摇的阅读方向：rtl（日漫，从右到左）或 ltr（欧美漫画）", choices=DIRECTIONS,
        flag="--direction", widget="direction", name_zh="阅读方向",
        name_ja="読む方向", help_ja="パンの読む方向：rtl（マンガ）または ltr（欧米のコミック）",
        name_ko="읽는 방향", help_ko="패닝의 읽는 방향: rtl(일본 만화) 또는 ltr(서양 코믹스)",
    ),
    Option(
        "chars_per_second", 6.0, "Reading speed of Chinese, Japanese and Korean lines, characters a second",
        "中日韩台词的阅读速度（每秒字数）", low=1, high=30,
        flag="--chars-per-second", widget="chars_per_second", name_zh="每秒字数", step=0.5,
        name_ja="1 秒あたりの文字数", help_ja="中国語・日本語・韓国語の台詞を読む速さ（1 秒あたりの文字数）",
        name_ko="초당 글자 수", help_ko="중국어·일본어·한국어 대사를 읽는 속도(초당 글자 수)",
    ),
    Option(
        "words_per_second", 2.5, "Reading speed of lines in other scripts, words a second",
        "其他文字台词的阅读速度（每秒词数）", low=0.5, high=10,
        flag="--words-per-second", widget="words_per_second", name_zh="每秒词数", step=0.1,
        name_ja="1 秒あたりの単語数", help_ja="ほかの文字で書かれた台詞を読む速さ（1 秒あたりの単語数）",
        name_ko="초당 단어 수", help_ko="그 밖의 문자로 쓴 대사를 읽는 속도(초당 단어 수)",
    ),
    Option(
        "min_shot", 2.0, "Shortest shot, seconds", "最短镜头时长（秒）", low=0.5, high=30,
        flag="--min-shot", widget="min_shot", name_zh="最短镜头", step=0.1, metavar="S",
        name_ja="最短ショット", help_ja="最も短いショットの長さ（秒）",
        name_ko="최단 샷", help_ko="가장 짧은 샷의 길이(초)",
    ),
    Option(
        "max_shot", 9.0, "Longest shot read from its lines, seconds; a panel with more lines is cut "
        "into one shot per group of lines", "按台词计时的最长镜头（秒）；台词更多的分镜格拆成几个镜头",
        low=1, high=120, flag="--max-shot", widget="max_shot", name_zh="最长镜头", step=0.5, metavar="S",
        name_ja="最長ショット",
        help_ja="台詞から計る最長のショット（秒）。台詞がもっと多いコマは、"
        "台詞のまとまりごとのショットに分けます",
        name_ko="최장 샷",
        help_ko="대사로 재는 가장 긴 샷(초). 대사가 더 많은 패널은 대사 묶음마다 샷을 나눕니다",
    ),
    Option(
        "pause", 0.3, "Pause between two speakers, seconds", "两位说话人之间的停顿（秒）", low=0, high=5,
        flag="--pause", widget="pause", name_zh="换人停顿", step=0.05, metavar="S",
        name_ja="話者交代の間", help_ja="話者が替わるときの間（秒）",
        name_ko="화자 전환 간격", help_ko="두 화자 사이의 멈춤(초)",
    ),
    Option(
        "beat", 2.0, "Length of a panel without lines, seconds", "无台词分镜格的时长（秒）", low=0.5, high=30,
        flag="--beat", widget="beat", name_zh="无台词时长", step=0.1, metavar="S",
        name_ja="台詞なしの長さ", help_ja="台詞のないコマの長さ（秒）",
        name_ko="대사 없는 길이", help_ko="대사 없는 패널의 길이(초)",
    ),
    Option(
        "crossfade", 0.25, "Crossfade between panels, seconds; 0 = cuts",
        "分镜格之间的淡入淡出（秒）；0 = 直接切换",
        low=0, high=2, flag="--crossfade", widget="crossfade", name_zh="交叉淡化", step=0.05, metavar="S",
        name_ja="クロスフェード", help_ja="コマ間のクロスフェード（秒）。0 = カット",
        name_ko="크로스페이드", help_ko="패널 사이 크로스페이드(초). 0 = 컷 전환",
    ),
    Option(
        "hold", 0.5, "The first and last shots hold still this long, seconds", "首尾镜头静止的时长（秒）",
        low=0, high=5, flag="--hold", widget="hold", name_zh="首尾静止", step=0.1, metavar="S",
        name_ja="最初と最後の静止", help_ja="最初と最後のショットが静止する長さ（秒）",
        name_ko="처음과 끝 정지", help_ko="첫 샷과 마지막 샷이 멈춰 있는 길이(초)",
    ),
    Option(
        "camera", 1.0, "How far the camera moves, 0 (still) to 1 (the most that keeps faces in frame)",
        "镜头运动幅度，0（静止）到 1（人物仍在画面内的最大幅度）", low=0, high=1,
        flag="--camera", widget="camera", name_zh="运镜幅度", step=0.05,
        name_ja="カメラワークの大きさ", help_ja="カメラが動く量。0（静止）から 1（顔が画面に収まる最大）",
        name_ko="카메라 움직임", help_ko="카메라가 움직이는 정도. 0(정지)부터 1(얼굴이 화면 안에 남는 최대)",
    ),
    Option(
        "seed", 0, "Picks between the moves a shot allows (the same seed, the same video)",
        "在镜头允许的运镜之间选择（同一种子，同一视频）", low=0, high=2**31 - 1,
        flag="--seed", widget="seed", name_zh="种子",
        name_ja="シード", help_ja="ショットに許されるカメラワークから選びます（同じシードなら同じ動画）",
        name_ko="시드", help_ko="샷에 허용된 카메라 움직임 중에서 고릅니다(같은 시드, 같은 영상)",
    ),
    Option(
        "subtitles", True, "Burn the subtitles into the frames (SRT and ASS are written either way)",
        "把字幕烧录进画面（SRT 和 ASS 字幕文件总会写出）",
        flag="--subtitles", widget="burn_subtitles", name_zh="烧录字幕",
        name_ja="字幕の焼き込み",
        help_ja="字幕を映像に焼き込みます（SRT と ASS はどちらの場合も書き出します）",
        name_ko="자막 입히기", help_ko="자막을 화면에 입힙니다(SRT와 ASS 파일은 어느 경우든 저장됩니다)",
    ),
    Option(
        "music_volume", 0.35, "Music level, 0 to 1; lowered to a third under the voices",
        "背景音乐音量，0 到 1；有人声时降到三分之一", low=0, high=1,
        flag="--music-volume", widget="music_volume", name_zh="音乐音量", step=0.05,
        name_ja="音楽の音量", help_ja="音楽の音量、0 から 1。声が入る間は 3 分の 1 に下げます",
        name_ko="음악 볼륨", help_ko="음악 볼륨, 0부터 1. 목소리가 나오는 동안 3분의 1로 낮춥니다",
    ),
)  # fmt: skip

TIMING_FIELDS = (
    "direction", "chars_per_second", "words_per_second", "min_shot", "max_shot", "pause", "beat",
    "crossfade", "hold", "camera", "seed",
)  # fmt: skip
RENDER_FIELDS = ("size", "fps", "subtitles", "music_volume")


def _check(values: object, fields: tuple[str, ...]) -> None:
    """Each of ``fields`` of ``values`` checked by its declaration (``InputError`` about the field)."""
    for name in fields:
        VIDEO_OPTIONS[name].check(getattr(values, name))


@dataclass(frozen=True)
class TimingOptions:
    """How a screenplay becomes a timeline (``timeline.build_timeline``); the declared defaults."""

    direction: str = VIDEO_OPTIONS["direction"].default
    chars_per_second: float = VIDEO_OPTIONS["chars_per_second"].default
    words_per_second: float = VIDEO_OPTIONS["words_per_second"].default
    min_shot: float = VIDEO_OPTIONS["min_shot"].default
    max_shot: float = VIDEO_OPTIONS["max_shot"].default
    pause: float = VIDEO_OPTIONS["pause"].default
    beat: float = VIDEO_OPTIONS["beat"].default
    crossfade: float = VIDEO_OPTIONS["crossfade"].default
    hold: float = VIDEO_OPTIONS["hold"].default
    camera: float = VIDEO_OPTIONS["camera"].default
    seed: int = VIDEO_OPTIONS["seed"].default

    def __post_init__(self) -> None:
        _check(self, TIMING_FIELDS)
        if self.min_shot > self.max_shot:
            raise InputError.about(
                "min_shot", f"({self.min_shot:g} s) is longer than max_shot ({self.max_shot:g} s); lower it"
            )


@dataclass(frozen=True)
class RenderOptions:
    """How a timeline is drawn and encoded (``render.write_video``); the declared defaults."""

    size: str = VIDEO_OPTIONS["size"].default
    fps: int = VIDEO_OPTIONS["fps"].default
    subtitles: bool = VIDEO_OPTIONS["subtitles"].default
    music_volume: float = VIDEO_OPTIONS["music_volume"].default

    def __post_init__(self) -> None:
        _check(self, RENDER_FIELDS)

    @property
    def frame_size(self) -> tuple[int, int]:
        return SIZES[self.size]


def timing_from(fields: Mapping[str, Any]) -> TimingOptions:
    """``TimingOptions`` from values by field (flags or widgets); each checked by its declaration."""
    return TimingOptions(**{k: fields[k] for k in TIMING_FIELDS if k in fields})


def render_from(fields: Mapping[str, Any]) -> RenderOptions:
    """``RenderOptions`` from values by field (flags or widgets); each checked by its declaration."""
    return RenderOptions(**{k: fields[k] for k in RENDER_FIELDS if k in fields})
