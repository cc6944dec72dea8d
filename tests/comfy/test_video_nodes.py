"""Motion Comic and Voice Script inside a real ComfyUI (issue 54).

- The ``motion_comic`` example end to end on the tiny model, its image half taken out (Motion
  Comic films the storyboard cards) and a fake TTS node (``MangakaTestTone``, tests/comfy/probes)
  run once per line of Voice Script's ``texts``: core Save Video writes an MP4 whose frames,
  frame rate, duration and 48 kHz sound PyAV reads back as the timeline says, each voice heard at
  its cue and silence before the first.
- Voice Script given a series bible text: each line of the character it gives a ``voice`` carries
  that voice name, every other line ''.
- Hostile inputs, each refused naming the input, with nothing written: more voice clips than
  lines, more panel images than panels, a timeline JSON of the wrong shape, a widget out of range.
- ``/interrupt`` while a long video renders: the prompt ends interrupted and leaves no file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mangaka.video.audio import SAMPLE_RATE
from mangaka.video.timeline import LEAD_IN
from tests.comfy.probes import tone_seconds
from tests.comfy.support import motion_comic_cards, node_of, twin

DATA = Path(__file__).resolve().parents[1] / "unit" / "data"
GOLDEN = json.loads((DATA / "golden_screenplay.json").read_text(encoding="utf-8"))
FPS = 12


def screenplay(panels: int) -> str:
    """A literal screenplay of ``panels`` panels with one line each (the golden one's, repeated)."""
    sp = {k: v for k, v in GOLDEN.items() if k not in ("dialogue", "panels")}
    sp["dialogue"] = [dict(GOLDEN["dialogue"][i % 5], id=f"d{i + 1}") for i in range(panels)]
    sp["panels"] = [
        dict(
            GOLDEN["panels"][i % 4],
            id=f"p{i + 1}",
            characters=["lin", "old_tan", "kid"],
            dialogue=[f"d{i + 1}"],
        )
        for i in range(panels)
    ]
    return json.dumps(sp)


def _cards_with_voices() -> dict:
    """``motion_comic`` on the tiny model with two panels: no image half (the storyboard cards),
    the fake TTS between Voice Script's ``texts`` and Motion Comic's ``voice``, a square video at
    12 fps, and previews of the texts spoken (902) and of the timeline (901)."""
    prompt = motion_comic_cards(panels=2, size="1080x1080", fps=FPS)
    comic, script = node_of(prompt, "MangakaMotionComic"), node_of(prompt, "MangakaVoiceScript")
    prompt["900"] = {"class_type": "MangakaTestTone", "inputs": {"text": [script, 0]}}
    prompt[comic]["inputs"]["voice"] = ["900", 0]
    prompt["901"] = {"class_type": "PreviewAny", "inputs": {"source": [comic, 3]}}
    prompt["902"] = {"class_type": "PreviewAny", "inputs": {"source": [script, 0]}}
    return prompt


def _decode(path: Path) -> dict:
    """What PyAV reads in ``path``: frame size, frame rate, frame count, sample rate and the
    sound as one mono array."""
    import av
    import numpy as np

    with av.open(str(path)) as container:
        video, audio = container.streams.video[0], container.streams.audio[0]
        found = {
            "size": (video.codec_context.width, video.codec_context.height),
            "rate": video.average_rate,
            "sample_rate": audio.codec_context.sample_rate,
            "frames": 0,
        }
        chunks = []
        for frame in container.decode(video, audio):
            if isinstance(frame, av.VideoFrame):
                found["frames"] += 1
            else:
                chunks.append(frame.to_ndarray().reshape(len(frame.layout.channels), -1).mean(axis=0))
    found["sound"] = np.concatenate(chunks)
    return found


def _rms(sound, start: float, end: float) -> float:
    import numpy as np

    part = sound[int(start * SAMPLE_RATE) : int(end * SAMPLE_RATE)]
    assert part.size, (start, end)
    return float(np.sqrt(np.mean(np.square(part, dtype=np.float64))))


def test_the_example_films_the_cards_with_a_voice_per_line_through_save_video(server):
    """Voice Script's texts go through the fake TTS once each; Motion Comic times every line by its
    clip, and Save Video writes the MP4 PyAV reads back as the timeline says."""
    prompt = _cards_with_voices()
    result = server.run_prompt(prompt, timeout=300)
    assert result.status == "success", result.describe()
    timeline = json.loads(result.outputs["901"]["text"][0])
    texts = result.outputs["902"]["text"]
    cues = [c for shot in timeline["shots"] for c in shot["cues"]]
    assert len(cues) == len(texts) >= 1
    for cue, text in zip(cues, texts, strict=True):  # each line as long as its own clip
        assert cue["text"] == text
        assert abs((cue["end"] - cue["start"]) - tone_seconds(text)) < 0.01, (cue, text)
    [saved] = result.outputs[node_of(prompt, "SaveVideo")]["images"]
    assert saved["type"] == "output" and saved["filename"].endswith(".mp4"), saved
    found = _decode(server.base_dir / "output" / saved["subfolder"] / saved["filename"])
    duration = timeline["duration"]
    assert found["size"] == (1080, 1080) and found["rate"] == FPS, found
    assert abs(found["frames"] / FPS - duration) <= 1 / FPS, (found["frames"], duration)
    assert found["sample_rate"] == SAMPLE_RATE
    sound = found["sound"]
    assert abs(len(sound) / SAMPLE_RATE - duration) <= 0.1, (len(sound), duration)
    assert _rms(sound, 0, LEAD_IN - 0.05) < 1e-3  # nothing before the first line
    for cue in cues:
        assert _rms(sound, cue["start"] + 0.05, cue["end"] - 0.05) > 0.1, cue  # the tone, at its cue


def test_voice_script_gives_each_line_the_voice_the_bible_names(server):
    """A literal screenplay and a bible text naming one character's voice: Voice Script's voices
    carry that name on the lines the character speaks and '' on every other line."""
    bible = {"version": 1, "characters": [{"id": "lin", "name": "Lin", "voice": "zh-CN-XiaoxiaoNeural"}]}
    script = {"json_text": json.dumps(GOLDEN), "bible": json.dumps(bible), "bible_file": "none"}
    prompt = {
        "1": {"class_type": "MangakaVoiceScript", "inputs": script},
        "2": {"class_type": "PreviewAny", "inputs": {"source": ["1", 1]}},
        "3": {"class_type": "PreviewAny", "inputs": {"source": ["1", 4]}},
    }
    result = server.run_prompt(prompt, timeout=120)
    assert result.status == "success", result.describe()
    lines, voices = result.outputs["2"]["text"], result.outputs["3"]["text"]
    speakers = {d["id"]: d["speaker"] for d in GOLDEN["dialogue"]}
    assert sorted(lines) == sorted(speakers), lines
    expected = ["zh-CN-XiaoxiaoNeural" if speakers[line] == "lin" else "" for line in lines]
    assert voices == expected, (lines, voices)
    assert "zh-CN-XiaoxiaoNeural" in voices and "" in voices


def _hostile(case: str) -> dict:
    """Motion Comic on a two-line literal screenplay, saved by Save Video, with one bad input."""
    example = twin("motion_comic")
    widgets = example[node_of(example, "MangakaMotionComic")]["inputs"]
    comic = {k: v for k, v in widgets.items() if not isinstance(v, list)}  # the example's widgets
    comic.update(json_text=screenplay(2), size="1080x1080", fps=FPS)
    save = {
        "video": ["1", 0],
        "filename_prefix": f"mangaka/hostile_{case}",
        "format": "auto",
        "codec": "auto",
    }
    prompt = {
        "1": {"class_type": "MangakaMotionComic", "inputs": comic},
        "2": {"class_type": "SaveVideo", "inputs": save},
    }
    if case == "voices":  # three clips for two lines
        prompt["3"] = {"class_type": "MangakaTestToneBatch", "inputs": {"count": 3}}
        comic["voice"] = ["3", 0]
    elif case == "images":  # three pictures for two panels
        prompt["3"] = {
            "class_type": "EmptyImage",
            "inputs": {"width": 64, "height": 64, "batch_size": 3, "color": 0},
        }
        comic["images"] = ["3", 0]
    elif case == "timeline":  # a timeline whose shots are not a list
        edited = {"version": 1, "title": "x", "language": "en", "shots": "p1"}
        prompt["3"] = {"class_type": "PrimitiveString", "inputs": {"value": json.dumps(edited)}}
        comic["timeline"] = ["3", 0]
    return prompt


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("voices", ["Motion Comic: voice:", "3 audio clips for 2 lines"]),
        ("images", ["Motion Comic:", "3 panel images for 2 panels"]),
        ("timeline", ["Motion Comic: timeline is not a valid timeline", "shots"]),
    ],
)
def test_a_hostile_input_is_refused_naming_it_and_nothing_is_written(server, case, said):
    before = _files(server.base_dir / "output") | _files(server.base_dir / "temp")
    result = server.run_prompt(_hostile(case), timeout=120)
    assert result.status == "error", result.describe()
    assert result.error["node_id"] == "1", result.describe()
    message = result.error["exception_message"]
    assert all(words in message for words in said), message
    after = _files(server.base_dir / "output") | _files(server.base_dir / "temp")
    assert after == before, sorted(after - before)


def test_a_widget_out_of_range_is_refused_before_the_run(server):
    prompt = _hostile("range")
    prompt["1"]["inputs"]["fps"] = 5  # the declared range is 12 to 60
    status, body = server.post_prompt(prompt)
    assert status == 400, body
    errors = body["node_errors"]["1"]["errors"]
    assert any(e["extra_info"]["input_name"] == "fps" for e in errors), errors


def test_an_interrupted_render_ends_interrupted_and_leaves_no_file(server):
    """Thirty panels at 24 fps (over a minute of video): /interrupt once its frames are being
    encoded; nothing is left in the temp or the output folder, not even the empty name taken."""
    prompt = _hostile("interrupted")
    prompt["1"]["inputs"].update(json_text=screenplay(30), size="1080x1920", fps=24)
    before = _files(server.base_dir / "output") | _files(server.base_dir / "temp")
    run = server.start_prompt(prompt)
    run.wait_for(lambda m: m.get("type") == "progress" and m["data"].get("node") == "1", timeout=120)
    assert server.interrupt() == 200
    result = run.wait(120)
    assert result.status == "interrupted", result.describe()
    after = _files(server.base_dir / "output") | _files(server.base_dir / "temp")
    assert after == before, sorted(after - before)
