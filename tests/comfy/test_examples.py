"""The example workflows in ComfyUI's server and in its real web page.

- Server: every node type of every example is registered; the examples are listed by the
  template browser; ``storyboard`` and ``book_batch`` run end to end with the tiny model;
  ``manga_page`` without its checkpoint is refused naming it, and with a real checkpoint (random
  weights, written at test time) its KSampler runs once per panel and Compose Page puts every
  image in its panel's frame by panel id; the same for a two-chapter book through the sampler.
  A probe pack (tests/comfy/probes) tints the k-th drawn image with colour k, so the test reads
  off the saved pages which image landed where.
- Browser (headless Debian chromium through Playwright): each example loads with no missing
  node, the expected node count, and its API-format twin equals what the front end's
  ``app.graphToPrompt()`` makes of it, so a UI file changed without regenerating the twin
  (``python tests/comfy/examples.py``) fails here. A screenshot of each is saved. These tests, and
  the run queued from the page, go through 0.3.75's own frontend and through
  ``comfyui-frontend-package`` 1.58.1 (the ``frontend`` fixture, tests/comfy/conftest.py).
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from mangaka.names import fold
from mangaka.screenplay import SeriesBible, load_series_bible
from tests.comfy.browser import VIRTUAL_TYPES, ComfyPage, require_browser
from tests.comfy.examples import EXAMPLES, SPECS, twin_path
from tests.comfy.harness import write_tiny_checkpoint
from tests.comfy.probes import TINT, tag_colour
from tests.comfy.support import MODEL, tiny_prompt, twin

NAMES = sorted(SPECS)
MODEL_FILES = (".gguf", ".safetensors")


def ui(name: str) -> dict:
    return json.loads((EXAMPLES / f"{name}.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def page(browser_server):
    require_browser()
    with ComfyPage(browser_server.url) as opened:
        yield opened


def test_each_example_has_a_thumbnail_and_a_twin():
    for name in NAMES:
        assert (EXAMPLES / f"{name}.json").is_file()
        with Image.open(EXAMPLES / f"{name}.jpg") as thumb:
            assert thumb.format == "JPEG" and thumb.width >= 600
        assert twin_path(name).is_file()


def test_every_node_type_of_every_example_is_registered(server):
    info = server.object_info()
    for name in NAMES:
        types = {node["type"] for node in ui(name)["nodes"]} - VIRTUAL_TYPES
        assert types - set(info) == set(), name
        assert {node["class_type"] for node in twin(name).values()} <= set(info)


def test_the_template_browser_lists_the_examples(server):
    listed = server.get_json("/api/workflow_templates")
    assert sorted(listed.get("comfyui-mangaka", [])) == sorted(p.stem for p in EXAMPLES.glob("*.json")), (
        listed
    )


@pytest.mark.parametrize("name", NAMES)
def test_example_loads_in_the_browser_and_its_twin_is_current(page, name, browser_artifacts):
    workflow = ui(name)
    info = page.load(workflow, name)
    assert info["missing"] == [] and info["errors"] == [] and not info["dialog"], info
    # Only the model files a user downloads are not among the choices (the test server lacks them).
    assert all(value.endswith(MODEL_FILES) for value in info["absent"]), info
    assert info["nodes"] == len(workflow["nodes"])
    assert page.to_prompt() == twin(name), (
        f"example_workflows/api/{name}.json is not what the front end exports from {name}.json; "
        "run `python tests/comfy/examples.py`"
    )
    shot = page.screenshot(browser_artifacts / f"example_{name}.jpg")
    with Image.open(shot) as image:
        assert image.width > 300 and image.height > 200


def test_storyboard_example_runs_end_to_end_and_yields_pages(server):
    result = server.run_prompt(tiny_prompt(twin("storyboard")), timeout=300)
    assert result.status == "success", result.describe()
    saves = [n for n, node in twin("storyboard").items() if node["class_type"] == "SaveImage"]
    pages = result.outputs[saves[0]]["images"]
    assert len(pages) == 1
    with Image.open(server.base_dir / "output" / pages[0]["subfolder"] / pages[0]["filename"]) as image:
        assert image.size == (2480, 3508)


def test_book_batch_example_gives_every_chapter_its_pages_in_one_run(server):
    prompt = tiny_prompt(twin("book_batch"))
    result = server.run_prompt(prompt, timeout=600)
    assert result.status == "success", result.describe()
    split = next(k for k, v in prompt.items() if v["class_type"] == "MangakaSplitChapters")
    assert "Chapter 3" in prompt[split]["inputs"]["book"]
    saved = next(k for k, v in prompt.items() if v["class_type"] == "SaveImage")
    assert len(result.outputs[saved]["images"]) == 3  # three chapters of two panels: a page each


def _book_with_bible(bible: str = "") -> dict:
    """``book_batch`` on the tiny model, a starting bible typed into Series Cast, and a preview of
    every chapter's screenplay JSON (node 920)."""
    prompt = tiny_prompt(twin("book_batch"))
    prompt[_of(prompt, "MangakaSeriesCast")]["inputs"]["bible"] = bible
    prompt["920"] = {
        "class_type": "PreviewAny",
        "inputs": {"source": [_of(prompt, "MangakaScreenwriter"), 1]},
    }
    return prompt


def _run_book(server, prompt: dict) -> tuple[SeriesBible, list[dict]]:
    """The saved series bible and each chapter's screenplay of one book_batch run."""
    result = server.run_prompt(prompt, timeout=600)
    assert result.status == "success", result.describe()
    [saved] = result.outputs[_of(prompt, "MangakaSaveSeriesBible")]["files"]
    assert saved["type"] == "output" and saved["filename"].startswith("bible_")
    bible = load_series_bible(server.base_dir / "output" / saved["subfolder"] / saved["filename"])
    screenplays = [json.loads(text) for text in result.outputs["920"]["text"]]
    assert len(screenplays) == 3
    return bible, screenplays


def _check_one_cast(bible: SeriesBible, screenplays: list[dict]) -> None:
    """Every chapter's characters are entries of the one saved bible, by name: one id per person."""
    ids_of_name: dict[str, set[str]] = {}
    for number, screenplay in enumerate(screenplays, 1):
        for c in screenplay["characters"]:
            entry = bible.character(c["id"])
            assert entry is not None, f"chapter {number}: {c['id']} is not in the saved bible"
            assert c["name"] in entry.names, (number, c, entry)
            assert entry.first_chapter is not None
            ids_of_name.setdefault(fold(c["name"]), set()).add(c["id"])
    assert all(len(ids) == 1 for ids in ids_of_name.values()), ids_of_name


def test_book_batch_keeps_one_cast_across_its_chapters_and_a_hand_edit(server):
    """Series Cast reads the three chapters' casts into one bible; each chapter's Screenwriter
    writes with it, and Save Series Bible saves one bible holding every chapter's people. Then a
    person edits an entry of the saved bible (``edited``, a new look) and starts the book from it:
    the entry stays as they wrote it, and every chapter that shows them shows their look.

    The random model's cast changes with the bible it is shown, so the edit goes on the person
    the previous run's first chapter showed, until a run shows the edited person (a few runs)."""
    bible, screenplays = _run_book(server, _book_with_bible())
    _check_one_cast(bible, screenplays)
    look = "hand-edited look: silver hair, green cloak"
    shown: list[dict] = []
    for _ in range(6):
        data = json.loads(bible.to_json())
        target = screenplays[0]["characters"][0]["id"]
        for entry in data["characters"]:
            if entry["id"] == target:
                entry.update(edited=True, appearance=look)
        edited = {c["id"]: c for c in data["characters"] if c["edited"]}
        bible, screenplays = _run_book(server, _book_with_bible(json.dumps(data)))
        _check_one_cast(bible, screenplays)
        for entry_id, entry in edited.items():
            assert bible.character(entry_id).model_dump(mode="json") == entry  # as the person left it
        shown = [c for sp in screenplays for c in sp["characters"] if c["id"] in edited]
        assert all(c["appearance"] == look for c in shown), shown
        if shown:
            break
    assert shown, "no run showed an edited person"


def test_manga_page_without_its_checkpoint_is_refused_naming_it(server):
    status, body = server.post_prompt(tiny_prompt(twin("manga_page")))
    assert status == 400
    assert "sd_xl_base_1.0.safetensors" in json.dumps(body)


@pytest.fixture(scope="module")
def tiny_checkpoint(server):
    """A random-weight SD1.5 checkpoint in this server's models/checkpoints (tiny_checkpoint.py)."""
    return write_tiny_checkpoint(server)


IMAGE_HALF = {
    "MangakaScreenplayToPrompts",
    "CheckpointLoaderSimple",
    "CLIPTextEncode",
    "EmptyLatentImage",
    "KSampler",
    "VAEDecode",
}


def _of(prompt: dict, class_type: str) -> str:
    return next(k for k, v in prompt.items() if v["class_type"] == class_type)


def _sampled(prompt: dict, checkpoint: str, panels: int) -> dict:
    """The example on the tiny models: the test checkpoint, a 64×96 latent, two sampler steps."""
    tiny_prompt(prompt, panels=panels)
    for node in prompt.values():
        if node["class_type"] == "CheckpointLoaderSimple":
            node["inputs"]["ckpt_name"] = checkpoint
        elif node["class_type"] == "EmptyLatentImage":
            node["inputs"].update(width=64, height=96)
        elif node["class_type"] == "KSampler":
            node["inputs"]["steps"] = 2
    return prompt


def _tagged(prompt: dict, order: str) -> dict:
    """The probe (tests/comfy/probes) between VAE Decode and Compose Page: the k-th image the
    sampler drew is tinted with colour k; previews of the images, their ids and the layout."""
    decode, prompts = _of(prompt, "VAEDecode"), _of(prompt, "MangakaScreenplayToPrompts")
    compose = _of(prompt, "MangakaComposePage")
    prompt["910"] = {
        "class_type": "MangakaTestTagPanels",
        "inputs": {"images": [decode, 0], "panel_ids": [prompts, 4], "order": order},
    }
    prompt[compose]["inputs"].update(images=["910", 0], panel_ids=["910", 1])
    prompt["911"] = {"class_type": "PreviewImage", "inputs": {"images": [decode, 0]}}
    prompt["912"] = {"class_type": "PreviewAny", "inputs": {"source": [prompts, 4]}}  # ids, drawn order
    prompt["913"] = {"class_type": "PreviewAny", "inputs": {"source": [compose, 1]}}  # layout_json
    return prompt


def _colour_in(page: Image.Image, frame: dict, candidates: range) -> int:
    """Which tag colour fills most of ``frame`` (balloons and borders aside), by a grid of samples."""
    grey = 128  # the random checkpoint's images are near-uniform mid grey
    expected = {k: tuple(TINT * c + (1 - TINT) * grey for c in tag_colour(k)) for k in candidates}
    votes = dict.fromkeys(candidates, 0)
    samples = 0
    for gy in range(1, 20):
        for gx in range(1, 20):
            pixel = page.getpixel((frame["x"] + frame["w"] * gx // 20, frame["y"] + frame["h"] * gy // 20))
            samples += 1
            k, distance = min(
                (
                    (k, max(abs(a - b) for a, b in zip(pixel, rgb, strict=True)))
                    for k, rgb in expected.items()
                ),
                key=lambda kd: kd[1],
            )
            if distance < 40:
                votes[k] += 1
    best = max(votes, key=votes.get)
    assert votes[best] > samples // 3, (frame, votes)
    return best


def _check_placement(server, result, prompt: dict, chapters: list[int]) -> None:
    """Every frame of every saved page shows the image drawn for its panel id, in its chapter."""
    ids = result.outputs["912"]["text"]  # panel ids in the order the sampler drew them
    assert len(ids) == sum(chapters)
    layout = json.loads(result.outputs["913"]["text"][0])
    layouts = layout["chapters"] if len(chapters) > 1 else [layout]
    saved = result.outputs[_of(prompt, "SaveImage")]["images"]
    assert len(saved) == sum(len(c["pages"]) for c in layouts)
    files = iter(saved)
    start = 0
    for count, chapter in zip(chapters, layouts, strict=True):
        drawn = ids[start : start + count]
        placed = set()
        for page in chapter["pages"]:
            entry = next(files)
            with Image.open(server.base_dir / "output" / entry["subfolder"] / entry["filename"]) as image:
                rgb = image.convert("RGB")
                for frame in page["frames"]:
                    k = _colour_in(rgb, frame, range(len(ids)))
                    assert start <= k < start + count, (
                        f"a frame of chapter {chapters.index(count) + 1} shows image {k}"
                    )
                    assert drawn[k - start] == frame["panel_id"], (frame, k, drawn)
                    placed.add(frame["panel_id"])
        assert placed == set(drawn)
        start += count


def _check_progress(result, prompt: dict, busy: tuple[str, ...]) -> None:
    """Every node of the run reaches the front end: ``execution_cached`` or an ``executing``
    message for each, ComfyUI's per-node progress state ending "finished" for each that ran, and
    progress bars from the slow ones."""
    cached = {node for m in result.of_type("execution_cached") for node in m.get("nodes", [])}
    executing = {m.get("node") for m in result.of_type("executing")}
    assert set(prompt) <= executing | cached, sorted(set(prompt) - executing - cached)
    final = result.of_type("progress_state")[-1]["nodes"]
    states = {node: final.get(node, {}).get("state") for node in set(prompt) - cached}
    assert set(states.values()) == {"finished"}, states
    with_bars = {m.get("node") for m in result.progress}
    for class_type in busy:
        nodes = {k for k, v in prompt.items() if v["class_type"] == class_type}
        assert nodes <= with_bars, (class_type, sorted(with_bars))


def _check_saved_manga(server, shown: dict, page: Image.Image) -> None:
    """Save Manga wrote a CBZ, an EPUB and a PDF of the page into the output folder, and says so: the
    CBZ opens in comictagger's comicapi as right-to-left manga holding the page's own pixels."""
    from comicapi.comicarchive import ComicArchive

    names = [item["filename"] for item in shown["files"]]
    assert names == ["manga_00001.cbz", "manga_00001.epub", "manga_00001.pdf"], shown
    assert shown["text"] == [f"saved {name}" for name in names]
    folder = server.base_dir / "output" / shown["files"][0]["subfolder"]
    archive = ComicArchive(str(folder / names[0]))
    meta = archive.read_cix()
    assert (meta.manga, meta.page_count) == ("YesAndRightToLeft", 1)
    with Image.open(io.BytesIO(archive.get_page(0))) as inside:
        assert inside.convert("RGB").tobytes() == page.convert("RGB").tobytes()
    with zipfile.ZipFile(folder / names[1]) as epub:
        assert 'page-progression-direction="rtl"' in epub.read("OEBPS/content.opf").decode()
    assert (folder / names[2]).read_bytes().startswith(b"%PDF-")


def test_manga_page_draws_every_panel_with_a_real_sampler(server, tiny_checkpoint):
    """The example as shipped, with a real checkpoint (random weights), a real KSampler and VAE
    Decode: one queued run samples once per panel, and Compose Page puts each image in its
    panel's frame by panel id even when the images arrive reversed (the probe tints the k-th
    drawn image with colour k and reverses the list), letters the page and saves it."""
    panels = 3
    prompt = _tagged(_sampled(twin("manga_page"), tiny_checkpoint, panels), order="reverse")
    result = server.run_prompt(prompt, timeout=600)
    assert result.status == "success", result.describe()
    assert len(result.outputs["911"]["images"]) == panels  # the sampler ran once per panel
    [page] = result.outputs[_of(prompt, "SaveImage")]["images"]
    with Image.open(server.base_dir / "output" / page["subfolder"] / page["filename"]) as image:
        assert image.size == (2480, 3508)  # the example's A4 page at 300 dpi
        _check_saved_manga(server, result.outputs[_of(prompt, "MangakaSaveManga")], image)
    _check_placement(server, result, prompt, [panels])
    _check_progress(result, prompt, busy=("MangakaScreenwriter", "KSampler", "MangakaComposePage"))


def _book_with_a_sampler(checkpoint: str, chapters: str) -> dict:
    """``book_batch`` with ``manga_page``'s image half (SD Prompts, the checkpoint, text encoders,
    KSampler, VAE Decode) drawing Compose Page's images, and the probe before Compose Page."""
    book = tiny_prompt(twin("book_batch"), panels=3)
    page = _sampled(twin("manga_page"), checkpoint, panels=3)
    half = {k: v for k, v in page.items() if v["class_type"] in IMAGE_HALF}
    rename = {k: f"7{int(k):02d}" for k in half}
    for k, node in half.items():
        inputs = {
            name: [rename[value[0]], value[1]] if isinstance(value, list) and value[0] in rename else value
            for name, value in node["inputs"].items()
        }
        book[rename[k]] = {**node, "inputs": inputs}
    book[_of(book, "MangakaScreenplayToPrompts")]["inputs"]["screenplay"] = [
        _of(book, "MangakaScreenwriter"),
        0,
    ]
    book[_of(book, "MangakaSplitChapters")]["inputs"]["chapters"] = chapters
    return _tagged(book, order="keep")


def test_a_book_with_a_real_sampler_gives_each_chapter_the_images_of_its_own_panels(
    server,
    tiny_checkpoint,
):
    """Two chapters in one queued run through the real sampler: SD Prompts' lists carry both
    chapters' panels (six images in a row), and Compose Page gives each chapter a page made of
    its own panels' images, each in its panel's frame."""
    prompt = _book_with_a_sampler(tiny_checkpoint, chapters="1-2")
    result = server.run_prompt(prompt, timeout=600)
    assert result.status == "success", result.describe()
    assert len(result.outputs["911"]["images"]) == 6  # 2 chapters × 3 panels, one sample each
    _check_placement(server, result, prompt, [3, 3])
    _check_progress(result, prompt, busy=("MangakaScreenwriter", "KSampler", "MangakaComposePage"))


def test_every_node_keeps_its_widget_values_when_saved_and_loaded(page):
    """A workflow saved and opened again holds what the user set. Frontend 1.58 restored the
    values of a node with a ``force_input`` string among its widget inputs one widget late (Motion
    Comic's ``timeline``: json_text took bible's value); such inputs come after the widgets."""
    assert page.round_trip() == {}


def test_manga_page_queued_from_the_page_shows_its_saved_page(page, browser_server, browser_artifacts):
    """The user's path: load manga_page in the browser, pick the models, click Run; the lettered
    page the server saved appears on the Save Image node, loaded by the browser."""
    server, tiny_checkpoint = browser_server, write_tiny_checkpoint(browser_server)
    info = page.load(ui("manga_page"), "manga_page")
    assert info["missing"] == [] and info["errors"] == [], info
    page.set_widgets("MangakaLoadLLM", {"model": MODEL, "threads": 1, "gpu_layers": 0})
    page.set_widgets(
        "MangakaScreenwriter",
        {"panels": 2, "dialogue_lines": 2, "max_characters": 3, "sampling": "greedy", "seed": 11},
    )
    page.set_widgets("CheckpointLoaderSimple", {"ckpt_name": tiny_checkpoint})
    page.set_widgets("EmptyLatentImage", {"width": 64, "height": 96})
    page.set_widgets("KSampler", {"steps": 2})
    # Its own name: the server's other runs count manga_00001… (pytest orders by frontend).
    page.set_widgets("MangakaSaveManga", {"filename_prefix": "mangaka/from_page"})
    page.queue()
    shown = page.wait_for_images("SaveImage", timeout_s=300)
    saved = page.saved_text("MangakaSaveManga")  # the box the pack's front-end extension adds
    page.screenshot(browser_artifacts / "manga_page_run.jpg")
    assert shown, (
        f"no image on Save Image after 5 minutes; console: {page.console[-20:]}\n{server.log_tail()}"
    )
    assert "filename=page_" in shown[0]["src"] and "subfolder=mangaka" in shown[0]["src"], shown
    assert (shown[0]["width"], shown[0]["height"]) == (2480, 3508), shown
    assert re.fullmatch(
        r"saved from_page_\d{5}\.cbz\nsaved from_page_\d{5}\.epub\nsaved from_page_\d{5}\.pdf", saved
    ), saved


def test_examples_folder_has_only_listed_workflows():
    assert sorted(p.stem for p in EXAMPLES.glob("*.json")) == NAMES
    assert Path(EXAMPLES / "api").is_dir()
