"""Screenplay → SD Prompts and Storyboard inside a real ComfyUI: lists that draw every panel in one
queued run, raw LLM text, bad input, and exact CLIP token counts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from PIL import Image

from mangaka.compose import (
    ClipTokenizer,
    build_bible,
    compile_prompts,
    parse_bible_text,
    screenplay_from_text,
)
from tests.comfy.support import workflow

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_TEXT = (ROOT / "tests" / "unit" / "data" / "golden_screenplay.json").read_text(encoding="utf-8")
BIBLE = '{"characters": [{"id": "lin", "trigger": "lin_mgk"}]}'


def prompts_node(source: dict, style: str = "manga_bw", mode: str = "tags", bible: str = "") -> dict:
    return {
        "class_type": "MangakaScreenplayToPrompts",
        "inputs": {**source, "style": style, "mode": mode, "bible": bible, "bible_file": "none"},
    }


def storyboard_tail(prompts_id: str, prefix: str) -> dict:
    """Storyboard from the SD Prompts node's screenplay, saved; previews of its list outputs."""
    return {
        "20": {
            "class_type": "MangakaStoryboard",
            "inputs": {"screenplay": [prompts_id, 6], "json_text": "", "width": 512, "height": 640},
        },
        "21": {"class_type": "SaveImage", "inputs": {"images": ["20", 0], "filename_prefix": prefix}},
        "22": {"class_type": "PreviewAny", "inputs": {"source": [prompts_id, 0]}},  # positive (list)
        "23": {"class_type": "PreviewAny", "inputs": {"source": [prompts_id, 5]}},  # panel_count
        "24": {"class_type": "PreviewAny", "inputs": {"source": [prompts_id, 3]}},  # dialogue (list)
        "25": {"class_type": "PreviewAny", "inputs": {"source": [prompts_id, 1]}},  # negative
    }


def saved_images(server, result, node: str = "21") -> list[Path]:
    return [
        server.base_dir / "output" / i["subfolder"] / i["filename"] for i in result.outputs[node]["images"]
    ]


def test_screenwriter_to_prompts_to_storyboard_draws_every_panel(server):
    prompt = workflow(panels=3, dialogue=2)
    del prompt["3"]
    prompt["10"] = prompts_node({"screenplay": ["2", 0], "json_text": ""})
    prompt.update(storyboard_tail("10", "mangaka/storyboard"))
    result = server.run_prompt(prompt, timeout=300)
    assert result.status == "success", result.describe()
    images = saved_images(server, result)
    assert len(images) == 3
    for path in images:
        with Image.open(path) as im:
            assert im.size == (512, 640)
    positives = result.outputs["22"]["text"]
    assert len(positives) == 3 and all(p.startswith("manga, monochrome") for p in positives)
    assert result.outputs["23"]["text"] == ["3"]
    assert len(result.outputs["24"]["text"]) == 3
    storyboard_progress = [p for p in result.progress if p.get("node") == "20"]
    assert storyboard_progress and storyboard_progress[-1]["value"] == 3


def test_raw_text_in_a_code_fence_after_a_think_block(server):
    raw = "<think>\nPlan the panels first.\n</think>\nHere it is:\n```json\n" + GOLDEN_TEXT + "\n```\nEnjoy!"
    prompt = {"10": prompts_node({"json_text": raw}, style="shoujo", bible=BIBLE)}
    prompt.update(storyboard_tail("10", "mangaka/raw"))
    result = server.run_prompt(prompt, timeout=120)
    assert result.status == "success", result.describe()
    assert len(saved_images(server, result)) == 4
    # The node gives exactly the engine's prompts, counted with ComfyUI's own CLIP tokenizer files.
    parsed = screenplay_from_text(raw)
    expected = compile_prompts(
        parsed, style="shoujo", mode="tags", bible=build_bible(parsed, parse_bible_text(BIBLE))
    )
    assert result.outputs["22"]["text"] == [p.positive for p in expected.panels]
    assert result.outputs["25"]["text"] == [expected.negative]
    assert "lin_mgk" in result.outputs["22"]["text"][1]


def test_text_that_is_not_a_screenplay_is_an_error_listing_the_problems(server):
    bad = json.loads(GOLDEN_TEXT)
    bad["panels"][0]["characters"] = ["ghost"]
    prompt = {
        "10": prompts_node({"json_text": "```json\n" + json.dumps(bad) + "\n```"}),
        "25": {"class_type": "PreviewAny", "inputs": {"source": ["10", 1]}},
    }
    result = server.run_prompt(prompt, timeout=60)
    assert result.status == "error", result.describe()
    message = result.error["exception_message"]
    assert "panels[0].characters[0]: 'ghost' is not a character id" in message
    # the queue goes on: the next run works
    ok = server.run_prompt({**prompt, "10": prompts_node({"json_text": GOLDEN_TEXT})}, timeout=60)
    assert ok.status == "success", ok.describe()


def test_bad_bible_and_unknown_style_are_readable_400s(server):
    status, body = server.post_prompt(
        {
            "10": prompts_node({"json_text": GOLDEN_TEXT}, bible="{not json"),
            "25": {"class_type": "PreviewAny", "inputs": {"source": ["10", 1]}},
        }
    )
    assert status == 400
    assert "bible: not valid JSON" in json.dumps(body)
    status, body = server.post_prompt(
        {
            "10": prompts_node({"json_text": GOLDEN_TEXT}, style="cyberpunk"),
            "25": {"class_type": "PreviewAny", "inputs": {"source": ["10", 1]}},
        }
    )
    assert status == 400
    assert "manga_bw" in json.dumps(body)  # the valid choices are listed


def test_clip_token_counts_match_the_real_clip_tokenizer(comfy_install):
    """Our CLIP BPE over ComfyUI's tokenizer files equals transformers' CLIPTokenizer, and the
    file-free estimate stays within 20% of it on English prompts."""
    folder = comfy_install.comfy_dir / "comfy" / "sd1_tokenizer"
    ours = ClipTokenizer.from_folder(folder)
    parsed = screenplay_from_text(GOLDEN_TEXT)
    texts = [
        p.positive
        for mode in ("tags", "natural")
        for p in compile_prompts(parsed, style="manga_bw", mode=mode).panels
    ]
    texts += [
        "少女站在雨中的车站，黄色雨衣",
        "「待って！」と彼女は叫んだ",
        "bird's-eye view, (masterpiece:1.2), __x__",
    ]
    script = (
        "import json, sys\n"
        "from transformers import CLIPTokenizer\n"
        f"tok = CLIPTokenizer.from_pretrained({str(folder)!r})\n"
        "print(json.dumps([tok.tokenize(t) for t in json.load(sys.stdin)]))\n"
    )
    done = subprocess.run(
        [str(comfy_install.python), "-c", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    reference = json.loads(done.stdout.strip().splitlines()[-1])
    for text, ref in zip(texts, reference, strict=True):
        assert ours.tokens(text) == ref, text
    from mangaka.compose import estimate_clip_tokens

    for text, ref in zip(texts[:8], reference[:8], strict=True):
        assert abs(estimate_clip_tokens(text) - len(ref)) <= 0.2 * len(ref), (text, len(ref))
