"""The lettering tests' samples: page sizes, lines in three languages, panels, a blank page."""

from __future__ import annotations

from PIL import Image

from mangaka.page.lettering import Box, LineSpec

A4 = 2480  # A4 at 300 dpi
B5_600 = 4299  # B5 at 600 dpi
BACKGROUND = (90, 160, 210)

EN = [
    LineSpec("d1", "narrator", "Later that night, the station was empty.", "narration"),
    LineSpec("d2", "akira", "Did we miss it? The last train left already, I think!", "worried"),
    LineSpec("d3", "mei", "Listen...", "whisper"),
    LineSpec("d4", "akira", "RUN!", "shout"),
    LineSpec("d5", "mei", "What was that noise?", "thinking"),
]
ZH = [
    LineSpec("z1", "narrator", "那天夜里，车站空无一人。", "narration"),
    LineSpec("z2", "lin", "你好，世界！今天天气很好。我们去公园散步吧？", "happy"),
    LineSpec("z3", "wang", "「好啊」，她笑着说……", "neutral"),
    LineSpec("z4", "lin", "快跑！", "shout"),
]
JA = [
    LineSpec("j1", "narrator", "その夜、駅には誰もいなかった。", "narration"),
    LineSpec("j2", "akira", "「こんにちは。」ちょっと待って……ね？", "neutral"),
    LineSpec("j3", "mei", "コーヒーを飲みましょう！", "happy"),
    LineSpec("j4", "akira", "どうしよう…", "thinking"),
    LineSpec("j5", "mei", "静かに。", "whisper"),
]
SAMPLES = {"en": EN, "zh": ZH, "ja": JA}
PANELS = [
    Box(100, 100, 1100, 1050),  # a quarter of an A4 page
    Box(100, 1230, 2280, 900),  # a wide strip
    Box(1280, 100, 700, 1600),  # a tall one
    Box(60, 2400, 520, 560),  # a small one
]


def blank_page(mode: str = "RGB") -> Image.Image:
    colour = {"RGB": BACKGROUND, "RGBA": (*BACKGROUND, 255), "L": 128}[mode]
    return Image.new(mode, (A4, 1800), colour)
