"""The example workflows in ComfyUI's server and in its real web page.

- Server: every node type of every example is registered; the examples are listed by the
  template browser; ``storyboard`` runs end to end with the tiny model; ``manga_page`` without
  its checkpoint is refused naming it, and runs through Compose Page with a stand-in for the
  image model (a test-only variant).
- Browser (headless Debian chromium through Playwright): each example loads with no missing
  node, the expected node count, and its API-format twin equals what the front end's
  ``app.graphToPrompt()`` makes of it, so a UI file changed without regenerating the twin
  (``python tests/comfy/examples.py``) fails here. A screenshot of each is saved.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from tests.comfy.browser import VIRTUAL_TYPES, BrowserUnavailable, ComfyPage, chromium_path
from tests.comfy.examples import EXAMPLES, SPECS, twin_path
from tests.comfy.harness import write_tiny_checkpoint
from tests.comfy.test_nodes import MODEL, server  # noqa: F401 - the module's server fixture

NAMES = sorted(SPECS)


def ui(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.json").read_text(encoding="utf-8"))


def twin(name: str) -> dict:
    return json.loads(twin_path(name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page(server, tmp_path_factory):  # noqa: F811
    try:
        chromium_path()
    except BrowserUnavailable as exc:
        if os.environ.get("MANGAKA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test is required (MANGAKA_REQUIRE_BROWSER=1): {exc}", pytrace=False)
        pytest.skip(str(exc))
    with ComfyPage(server.url) as opened:
        yield opened


def test_each_example_has_a_thumbnail_and_a_twin():
    for name in NAMES:
        assert (EXAMPLES / f"{name}.json").is_file()
        with Image.open(EXAMPLES / f"{name}.jpg") as thumb:
            assert thumb.format == "JPEG" and thumb.width >= 600
        assert twin_path(name).is_file()


def test_every_node_type_of_every_example_is_registered(server):  # noqa: F811
    info = server.object_info()
    for name in NAMES:
        types = {node["type"] for node in ui(name)["nodes"]} - VIRTUAL_TYPES
        assert types - set(info) == set(), name
        assert {node["class_type"] for node in twin(name).values()} <= set(info)


def test_the_template_browser_lists_the_examples(server):  # noqa: F811
    listed = server.get_json("/api/workflow_templates")
    assert sorted(listed.get("comfyui-mangaka", [])) == sorted(p.stem for p in EXAMPLES.glob("*.json")), (
        listed
    )


@pytest.mark.parametrize("name", NAMES)
def test_example_loads_in_the_browser_and_its_twin_is_current(page, name, tmp_path):
    workflow = ui(name)
    info = page.load(workflow, name)
    assert info["missing"] == [] and info["errors"] == [] and not info["dialog"], info
    assert info["nodes"] == len(workflow["nodes"])
    assert page.to_prompt() == twin(name), (
        f"example_workflows/api/{name}.json is not what the front end exports from {name}.json; "
        "run `python tests/comfy/examples.py`"
    )
    shot = page.screenshot(tmp_path / f"{name}.jpg")
    with Image.open(shot) as image:
        assert image.width > 300 and image.height > 200


def _tiny(prompt: dict, panels: int = 2) -> dict:
    for node in prompt.values():
        if node["class_type"] == "MangakaLoadLLM":
            node["inputs"].update(model=MODEL, threads=1, gpu_layers=0)
        if node["class_type"] == "MangakaScreenwriter":
            node["inputs"].update(panels=panels, dialogue_lines=2, max_characters=3, sampling="greedy")
    return prompt


def test_storyboard_example_runs_end_to_end_and_yields_pages(server):  # noqa: F811
    result = server.run_prompt(_tiny(twin("storyboard")), timeout=300)
    assert result.status == "success", result.describe()
    saves = [n for n, node in twin("storyboard").items() if node["class_type"] == "SaveImage"]
    pages = result.outputs[saves[0]]["images"]
    assert len(pages) == 1
    with Image.open(server.base_dir / "output" / pages[0]["subfolder"] / pages[0]["filename"]) as image:
        assert image.size == (2480, 3508)


def test_book_batch_example_gives_every_chapter_its_pages_in_one_run(server):  # noqa: F811
    prompt = _tiny(twin("book_batch"))
    result = server.run_prompt(prompt, timeout=600)
    assert result.status == "success", result.describe()
    split = next(k for k, v in prompt.items() if v["class_type"] == "MangakaSplitChapters")
    assert "Chapter 3" in prompt[split]["inputs"]["book"]
    saved = next(k for k, v in prompt.items() if v["class_type"] == "SaveImage")
    assert len(result.outputs[saved]["images"]) == 3  # three chapters of two panels: a page each


def test_a_book_with_one_image_per_panel_gets_each_chapters_images(server):  # noqa: F811
    """Several chapters with one image per panel in a flat list, as SD Prompts' lists through a
    sampler give them (RebatchImages to 1 stands in for the sampler), and SD Prompts' panel ids:
    Compose Page cuts both by the chapters' panel counts."""
    prompt = _tiny(twin("book_batch"))
    writer = next(k for k, v in prompt.items() if v["class_type"] == "MangakaScreenwriter")
    cards = next(k for k, v in prompt.items() if v["class_type"] == "MangakaStoryboard")
    compose = next(k for k, v in prompt.items() if v["class_type"] == "MangakaComposePage")
    prompt["901"] = {"class_type": "RebatchImages", "inputs": {"images": [cards, 0], "batch_size": 1}}
    prompt["902"] = {
        "class_type": "MangakaScreenplayToPrompts",
        "inputs": {"screenplay": [writer, 0], "style": "manga_bw", "mode": "tags", "json_text": ""},
    }
    prompt["903"] = {"class_type": "PreviewAny", "inputs": {"source": [compose, 2]}}  # report
    prompt[compose]["inputs"].update(images=["901", 0], panel_ids=["902", 4])
    result = server.run_prompt(prompt, timeout=600)
    assert result.status == "success", result.describe()
    saved = next(k for k, v in prompt.items() if v["class_type"] == "SaveImage")
    assert len(result.outputs[saved]["images"]) == 3  # three chapters of two panels: a page each
    report = "\n".join(result.outputs["903"]["text"]).splitlines()  # "<title>: 1 pages, 2 panels"
    assert len(report) == 3 and all(line.endswith(": 1 pages, 2 panels") for line in report), report


def test_manga_page_without_its_checkpoint_is_refused_naming_it(server):  # noqa: F811
    status, body = server.post_prompt(_tiny(twin("manga_page")))
    assert status == 400
    assert "sd_xl_base_1.0.safetensors" in json.dumps(body)


def test_manga_page_runs_through_compose_page_with_a_stand_in_image_model(server):  # noqa: F811
    """Test-only variant: the checkpoint, text encoders, sampler and decoder are replaced by an
    empty image per panel; everything else is the example as shipped."""
    prompt = _tiny(twin("manga_page"), panels=3)
    image_model = {"CheckpointLoaderSimple", "CLIPTextEncode", "EmptyLatentImage", "KSampler", "VAEDecode"}
    prompt = {k: v for k, v in prompt.items() if v["class_type"] not in image_model}
    prompt["900"] = {
        "class_type": "EmptyImage",
        "inputs": {"width": 832, "height": 1216, "batch_size": 3, "color": 0x777777},
    }
    compose = next(k for k, v in prompt.items() if v["class_type"] == "MangakaComposePage")
    prompt[compose]["inputs"]["images"] = ["900", 0]
    prompt[compose]["inputs"].pop("panel_ids")  # one batch of three: images go to panels in order
    result = server.run_prompt(prompt, timeout=300)
    assert result.status == "success", result.describe()
    saved = next(k for k, v in prompt.items() if v["class_type"] == "SaveImage")
    assert len(result.outputs[saved]["images"]) == 1


@pytest.fixture(scope="module")
def tiny_checkpoint(server):  # noqa: F811
    """A random-weight SD1.5 checkpoint in this server's models/checkpoints (tiny_checkpoint.py)."""
    return write_tiny_checkpoint(server)


def test_manga_page_draws_every_panel_with_a_real_sampler(server, tiny_checkpoint):  # noqa: F811
    """The example as shipped, with a real checkpoint (random weights), a real KSampler and VAE
    Decode: one queued run samples once per panel and Compose Page letters the page."""
    panels = 3
    prompt = _tiny(twin("manga_page"), panels=panels)
    for node in prompt.values():
        if node["class_type"] == "CheckpointLoaderSimple":
            node["inputs"]["ckpt_name"] = tiny_checkpoint
        elif node["class_type"] == "EmptyLatentImage":
            node["inputs"].update(width=64, height=96)
        elif node["class_type"] == "KSampler":
            node["inputs"]["steps"] = 2
    decode = next(k for k, v in prompt.items() if v["class_type"] == "VAEDecode")
    prompt["901"] = {"class_type": "PreviewImage", "inputs": {"images": [decode, 0]}}
    result = server.run_prompt(prompt, timeout=600)
    assert result.status == "success", result.describe()
    assert len(result.outputs["901"]["images"]) == panels  # the sampler ran once per panel
    saved = next(k for k, v in prompt.items() if v["class_type"] == "SaveImage")
    [page] = result.outputs[saved]["images"]
    with Image.open(server.base_dir / "output" / page["subfolder"] / page["filename"]) as image:
        assert image.size == (2480, 3508)  # the example's A4 page at 300 dpi


def test_examples_folder_has_only_listed_workflows():
    assert sorted(p.stem for p in EXAMPLES.glob("*.json")) == NAMES
    assert Path(EXAMPLES / "api").is_dir()
