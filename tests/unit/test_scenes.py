"""Long chapters, scene by scene: where a chapter is cut, how counts are spread, and the assembled
screenplay (ids running on, each panel's scene, the story so far in each scene's prompt)."""

from __future__ import annotations

import random

import pytest

from mangaka.errors import InputError
from mangaka.page.layout import LayoutOptions, layout_pages
from mangaka.screenplay import write_screenplay
from mangaka.screenplay.models import MAX_SCENE_PANELS, Screenplay
from mangaka.screenplay.request import ScreenplayRequest
from mangaka.screenplay.scenes import (
    AUTO,
    Scene,
    auto_dialogue,
    auto_panels,
    last_sentences,
    paragraphs,
    scene_counts,
    split_scenes,
    spread,
    story_so_far,
)
from tests.fakes import CAST, FakeScriptedLLM, panel

WORDS = "salt road well goat rope market lantern ferry dusk pier brother river".split()


def prose(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))).capitalize() + "."
        for _ in range(sentences)
    )


def covered(scenes: list[Scene], n: int) -> list[int]:
    return [i for s in scenes for i in range(s.first, s.last + 1)] if scenes else []


@pytest.mark.parametrize("seed", range(40))
def test_scenes_cover_every_paragraph_once_in_order_and_lose_no_text(seed):
    rng = random.Random(seed)
    parts = []
    for _ in range(rng.randint(1, 60)):
        parts.append(prose(rng, rng.randint(1, 8)))
        if rng.random() < 0.1:
            parts.append(rng.choice(["***", "* * *", "◇◇◇", "---"]))
    chapter = "\n\n".join(parts)
    limit = rng.choice([200, 600, 2000])
    scenes = split_scenes(chapter, limit)
    paras = paragraphs(chapter)
    assert covered(scenes, len(paras)) == list(range(len(paras)))
    story = [p.text for p in paras if not p.separator]
    assert [t for s in scenes for t in s.text.split("\n\n")] == story
    for s in scenes:  # a scene over the limit is one paragraph that alone is over it
        assert sum(len(t) for t in s.text.split("\n\n")) <= limit or "\n\n" not in s.text
    assert [s.number for s in scenes] == list(range(1, len(scenes) + 1))


def test_a_separator_always_ends_a_scene_and_a_time_shift_is_preferred():
    a = "Mara drew water at dawn. The rope was fraying."
    b = "She carried the bucket home."
    chapter = "\n\n".join([a, b, "***", a, b, "The next morning the well was dry.", b, b])
    scenes = split_scenes(chapter, 10_000)
    assert [s.text.split("\n\n")[0] for s in scenes] == [a, a]  # cut at *** though all fits
    cut = split_scenes("\n\n".join([a, b, b, "Three days later, Ilse came.", b, b]), 130)
    assert cut[1].text.startswith("Three days later")
    assert cut[1].overlap == last_sentences(cut[0].text)


def test_two_blank_lines_are_a_scene_break_and_a_chapter_without_blank_lines_splits_at_line_breaks():
    assert len(split_scenes("One.\n\nTwo.\n\n\n\nThree.", 10_000)) == 2
    lines = "\n".join(f"Line {i} of a web novel without blank lines." for i in range(30))
    scenes = split_scenes(lines, 300)
    assert len(scenes) > 1
    assert covered(scenes, 30) == list(range(30))


def test_a_paragraph_that_alone_does_not_fit_is_named_with_its_token_count():
    chapter = "Short one.\n\n" + "A very long paragraph. " * 50 + "\n\nShort two."
    with pytest.raises(InputError) as err:
        split_scenes(chapter, 100, room=500)
    message = str(err.value)
    assert "paragraph 2 ('A very long paragraph." in message
    assert "is 1150 tokens" in message and "room for 500" in message
    assert "larger context" in message and "blank lines" in message


def test_a_chapter_of_only_separators_has_nothing_to_split():
    with pytest.raises(InputError, match="no paragraphs of text"):
        split_scenes("***\n\n◇◇◇", 100)


def test_spread_keeps_the_total_the_bounds_and_the_proportions():
    assert spread(10, [1, 1], 1, 24) == [5, 5]
    assert spread(30, [1, 2, 3], 1, 24) == [5, 10, 15]
    assert spread(3, [100, 1, 1], 1, 24) == [1, 1, 1]
    assert spread(50, [1, 1], 1, 24) is None
    assert spread(1, [1, 1], 1, 24) is None
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 12)
        weights = [rng.random() * 10 for _ in range(n)]
        total = rng.randint(n, n * 24)
        counts = spread(total, weights, 1, 24)
        assert counts is not None and sum(counts) == total and all(1 <= c <= 24 for c in counts)


def test_auto_counts_follow_length_and_dialogue_density():
    assert auto_panels("字" * 2000) == 10  # 200 CJK characters a panel
    assert auto_panels("word " * 2000) == 10  # 800 other characters a panel
    assert auto_panels("短") == 1
    talk = " ".join(f'"Line {i}," she said.' for i in range(12))
    assert auto_dialogue(talk, "en", 10) == 12
    assert auto_dialogue("No one spoke at all.", "en", 10) == 5  # captions: half the panels
    assert auto_dialogue(talk * 5, "en", 10) == 20  # at most two a panel


def test_the_readme_example_of_auto_counts():
    quote = "“我们走吧。”"  # 7 characters, quote marks included
    chapter = (quote * 40) + "雨" * (10_000 - 7 * 40)
    assert len(chapter) == 10_000
    panels = auto_panels(chapter)
    assert (panels, auto_dialogue(chapter, "zh", panels)) == (50, 40)


def test_counts_over_scenes():
    scenes = [Scene(1, 0, 0, "字" * 1000), Scene(2, 1, 1, "字" * 3000)]
    assert scene_counts(scenes, 8, 4, "zh") == [(2, 1), (6, 3)]
    assert scene_counts(scenes, AUTO, AUTO, "zh") == [(5, 3), (15, 8)]
    assert scene_counts(scenes, 60, 4, "zh") is None  # more than one call writes: split smaller
    with pytest.raises(InputError, match="panels: 1 is fewer than the 2 scenes"):
        scene_counts(scenes, 1, 0, "zh")
    with pytest.raises(InputError, match=f"at most {MAX_SCENE_PANELS}"):
        scene_counts(scenes, 60, 4, "zh", clamp=True)


def test_story_so_far_keeps_the_latest_actions_within_its_limit():
    actions = [f"Action number {i} happens here." for i in range(100)]
    summary = story_so_far(actions, limit=120)
    assert summary.startswith("…") and summary.endswith("Action number 99 happens here.")
    assert len(summary) < 160


def scene_script(title: str, panels: int, lines: int) -> dict:
    return {
        "title": title,
        "dialogue": [
            {
                "speaker": "akira",
                "line": f"{title} line {i}",
                "emotion": "neutral",
                "panel": f"p{i % panels + 1}",
            }
            for i in range(lines)
        ],
        "panels": [
            panel(f"p{j}", ["akira"]) | {"action": f"{title} action {j}"} for j in range(1, panels + 1)
        ],
    }


def scene_text(first: str, quotes: int) -> str:
    """30 sentences of one length, ``quotes`` of them spoken."""
    said = ['Akira said "wait for me" at the gate.'] * quotes
    told = ["Akira was walking by the long gate."] * (30 - quotes)
    return " ".join([first, *said, *told])


def test_a_long_chapter_is_written_scene_by_scene_into_one_screenplay_with_continuous_ids():
    one = scene_text("Akira ran for the last train.", 10)
    two = scene_text("The next morning Mei found the ticket.", 20)
    three = scene_text("Akira thanked her at the gate.", 30)
    chapter = "\n\n".join([one, "***", two, "***", three])
    replies = [CAST, CAST, CAST, scene_script("A", 2, 1), scene_script("B", 2, 2), scene_script("C", 2, 3)]
    llm = FakeScriptedLLM(*replies, n_ctx=200_000)
    result = write_screenplay(
        llm, chapter, ScreenplayRequest(panels=6, dialogue=6, scene_chars=1500, dialogue_from="free")
    )
    sp = result.screenplay
    assert [(s.panels, s.dialogue) for s in result.scenes] == [(2, 1), (2, 2), (2, 3)]
    assert [p.id for p in sp.panels] == [f"p{i}" for i in range(1, 7)]
    assert [d.id for d in sp.dialogue] == [f"d{i}" for i in range(1, 7)]
    assert [p.scene for p in sp.panels] == [1, 1, 2, 2, 3, 3]
    assert [d.line for d in sp.dialogue] == [
        "A line 0",
        "B line 0",
        "B line 1",
        "C line 0",
        "C line 2",
        "C line 1",
    ]
    assert sp.panels[4].dialogue == ["d4", "d5"] and sp.panels[5].dialogue == ["d6"]  # reading order
    assert sp.title == "A" and [c.id for c in sp.characters] == ["akira", "mei"]
    # three cast calls, then three scripts, each shown only its own scene
    kinds = ["panels" in (c["schema"] or {}).get("properties", {}) for c in llm.calls]
    assert kinds == [False, False, False, True, True, True]
    third = llm.calls[5]["messages"]
    assert three in third[1]["content"] and one not in third[1]["content"]
    note = third[2]["content"]
    assert "scene 3 of 3" in note and "B action 2" in note
    assert last_sentences(two) in note  # the end of the scene before
    assert "scene 1 of 3" in llm.calls[3]["messages"][2]["content"]
    assert "story_so_far" not in llm.calls[3]["messages"][2]["content"]
    # stored with scenes; a screenplay written in one call is stored as before (no scene keys)
    data = sp.model_dump(mode="json")
    assert [p["scene"] for p in data["panels"]] == [1, 1, 2, 2, 3, 3]
    assert Screenplay.model_validate(data) == sp


def test_a_fixed_count_too_small_for_the_scenes_is_refused_before_any_call():
    chapter = "\n\n".join(["Akira ran. " * 20, "***", "Mei waited. " * 20, "***", "They met. " * 20])
    llm = FakeScriptedLLM(n_ctx=200_000)
    with pytest.raises(InputError, match="panels: 2 is fewer than the 3 scenes"):
        write_screenplay(llm, chapter, ScreenplayRequest(panels=2, dialogue=0, scene_chars=100))
    assert llm.calls == []


def test_a_60_panel_chapter_becomes_even_pages_without_a_lone_last_panel():
    for count in (25, 60, 61, 97, 240):
        panels = [{"id": f"p{i}", "shot": "medium"} for i in range(1, count + 1)]
        pages = layout_pages(panels, LayoutOptions())
        sizes = [len(page.frames) for page in pages]
        assert sum(sizes) == count
        assert min(sizes) >= LayoutOptions().panels_per_page // 2, (count, sizes)
