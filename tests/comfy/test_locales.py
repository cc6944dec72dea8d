"""Chinese, Japanese and Korean in ComfyUI's own interface, and a help page for every node
(mangaka/devtools/locales.py): each locale covers every node, input and output the nodes have, the
generated help pages are current, the server serves them, and the real page, switched to each
language, shows the Screenwriter's translated title and its translated help page."""

from __future__ import annotations

import urllib.request

import pytest

from mangaka.devtools.locales import english, generated, missing_translations, read_locale
from mangaka.options import UI_LANGUAGES
from mangaka.surfaces import NODES, OPTION_SETS
from tests.comfy.browser import ComfyPage, require_browser
from tests.comfy.harness import PACK_FOLDER

# Each language's words the tests look for: the Screenwriter's title, its chapter input, the
# help page's inputs heading.
SCREENWRITER = {
    "zh": ("编剧", "章节", "输入"),
    "ja": ("脚本家", "章", "入力"),
    "ko": ("각본가", "챕터", "입력"),
}
ENGLISH_HINT = "Paste a chapter of the novel here"


@pytest.mark.parametrize("lang", list(UI_LANGUAGES))
def test_each_locale_covers_every_node_input_and_output(server, lang):
    assert missing_translations(english(server.object_info()), read_locale(lang)) == []


@pytest.mark.parametrize("target", sorted(NODES))
def test_the_widgets_are_their_declarations(server, target):
    """Each widget's default, range, step, choices and tooltip are its option's declaration, on every
    node that shows it: a widget edited by hand in a node fails here."""
    from mangaka.devtools.locales import _choices, _options

    options = OPTION_SETS[target].options
    info = server.object_info()
    shown = set()
    for node_id in NODES[target]:
        node = info[node_id]["input"]
        specs = {**node.get("required", {}), **node.get("optional", {})}
        for o in options.values():
            if o.widget is None or o.widget not in specs:
                continue
            shown.add(o.widget)
            spec, got = specs[o.widget], _options(specs[o.widget])
            assert (got.get("default"), got.get("tooltip")) == (o.widget_default, o.help), (node_id, o.field)
            if o.low is not None:
                assert (got.get("min"), got.get("max")) == (o.low, o.high), (node_id, o.field)
                assert o.step is None or got.get("step") == o.step, (node_id, o.field)
            elif o.choices:
                assert _choices(spec) == list(o.widget_choices), (node_id, o.field)
    assert shown == {o.widget for o in options.values() if o.widget}, "a declared widget on no node"


def test_the_help_pages_are_current(server):
    """Regenerate with ``.venv/bin/python -m mangaka.devtools.locales`` when a node changes."""
    info = server.object_info()
    files = generated(info)
    nodes = english(info)
    # English and each translation for every node
    assert len(files) == (1 + len(UI_LANGUAGES)) * len(nodes)
    stale = [str(p) for p, text in files.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    assert stale == [], "run .venv/bin/python -m mangaka.devtools.locales"


def test_the_server_serves_the_locales_and_the_help_pages(server):
    i18n = server.get_json("/i18n")
    pages = [("MangakaScreenwriter.md", "# Screenwriter")]
    for lang, (title, _, _) in SCREENWRITER.items():
        assert i18n[lang]["nodeDefs"]["MangakaScreenwriter"]["display_name"] == title
        pages.append((f"MangakaScreenwriter/{lang}.md", f"# {title}"))
    for path, first in pages:
        url = f"{server.url}/extensions/{PACK_FOLDER}/docs/{path}"
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert answer.read().decode("utf-8").startswith(first + "\n")


_TRANSLATED = """async ([pack, lang]) => {
  const node = LiteGraph.createNode("MangakaScreenwriter");
  app.graph.add(node);
  node.pos = [80, 160];  // below the workflow tabs, so the title shows in the screenshot
  app.graph.setDirtyCanvas(true, true);
  // Where the front end's node help panel looks for a custom node's page in the user's language.
  const help = await fetch(`/extensions/${pack}/docs/MangakaScreenwriter/${lang}.md`);
  await new Promise(done => setTimeout(done, 500));  // the front end draws the text box
  return {title: node.title, inputs: node.inputs.map(i => i.label || i.localized_name || i.name),
          help: await help.text(),
          boxes: [...document.querySelectorAll("textarea")].map(box => box.placeholder)};
}"""


@pytest.mark.parametrize("lang", list(UI_LANGUAGES))
def test_the_page_in_each_language_shows_the_screenwriters_title_and_help(
    browser_server, browser_artifacts, lang
):
    """In 0.3.75's own frontend and in 1.58.1 (the ``frontend`` fixture, tests/comfy/conftest.py)."""
    require_browser()
    title, chapter, inputs = SCREENWRITER[lang]
    with ComfyPage(browser_server.url, settings={"Comfy.Locale": lang}) as page:
        page.page.evaluate("() => app.graph.clear()")
        shown = page.page.evaluate(_TRANSLATED, [PACK_FOLDER, lang])
        page.page.wait_for_timeout(500)
        shot = page.screenshot(browser_artifacts / f"screenwriter_{lang}.jpg")  # kept after the run
    assert shown["title"] == title, shown
    assert "LLM" in shown["inputs"] and chapter in shown["inputs"], shown["inputs"]
    assert shown["help"].startswith(f"# {title}\n") and f"## {inputs}" in shown["help"]
    # The chapter box's grey hint, which no front end takes from a locale: web/js/mangaka_i18n.js.
    hint = read_locale(lang)["MangakaScreenwriter"]["inputs"]["chapter"]["placeholder"]
    assert hint in shown["boxes"] and ENGLISH_HINT not in shown["boxes"], shown["boxes"]
    # A box without a hint shows its input's name: translated as the label is.
    bible = read_locale(lang)["MangakaScreenwriter"]["inputs"]["bible"]["name"]
    assert bible in shown["boxes"] and "bible" not in shown["boxes"], shown["boxes"]
    assert shot.stat().st_size > 10_000
