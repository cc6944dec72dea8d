"""ComfyUI's real web page in headless Chromium (Debian's ``chromium``), driven by Playwright.

No browser is downloaded: Playwright launches the system Chromium (``executable_path``). The
page is the front end the test's ComfyUI server serves; workflows are loaded, built and exported
through the front end's own ``app`` object, the way a user's browser does it.

- ``ComfyPage(server_url)``: a context manager; ``load(workflow, name)`` returns what the graph
  holds (node count, missing node types, nodes with errors); ``to_prompt()`` is
  ``app.graphToPrompt()`` (the API format the server runs); ``build(spec)`` makes a UI-format
  workflow from a spec with the front end's own node classes (``examples.py``);
  ``set_widgets(node_type, values)``; ``queue()`` clicks the Run (queue) button, as a user does;
  ``images(node_type)`` are the images a node shows once loaded by the browser;
  ``screenshot(path)``.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from pathlib import Path
from typing import Any

ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1920, "height": 1080}
SETTINGS = {
    "Comfy.TutorialCompleted": True,  # a fresh user directory would open the templates dialog
    "Comfy.Minimap.Visible": False,
    "LiteGraph.Canvas.MinFontSizeForLOD": 1,  # draw widgets and text even when zoomed out
}
# Front-end-only node types: never sent to the server.
VIRTUAL_TYPES = {"Note", "MarkdownNote", "Reroute", "PrimitiveNode"}


class BrowserUnavailable(RuntimeError):
    pass


def require_browser() -> None:
    """Skip the calling test when no chromium runs here; fail it where the browser test is
    required (``MANGAKA_REQUIRE_BROWSER=1``, as CI sets it)."""
    import os

    import pytest

    try:
        chromium_path()
    except BrowserUnavailable as exc:
        if os.environ.get("MANGAKA_REQUIRE_BROWSER") == "1":
            pytest.fail(f"the browser test is required (MANGAKA_REQUIRE_BROWSER=1): {exc}", pytrace=False)
        pytest.skip(str(exc))


def chromium_path() -> str:
    found = os.environ.get("MANGAKA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise BrowserUnavailable("Debian's chromium is not installed (apt-get install chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError as exc:
        raise BrowserUnavailable(
            f"playwright is not installed ({exc}); pip install -r requirements-dev.txt"
        ) from None
    return found


_READY = (
    "() => !!(window.app && window.app.graph && window.app.canvas && window.LiteGraph "
    "&& LiteGraph.registered_node_types)"
)

# ``absent``: combo values not among the server's choices (a model file the user has yet to
# download). Frontend 1.58 flags such a node ``has_errors`` (its "missing models" report); 0.3.75's
# own frontend does not. ``errors`` are the nodes flagged for anything else.
_LOAD = """async ([wf, name]) => {
  await app.loadGraphData(wf, true, true, name, {showMissingNodesDialog: false});
  await new Promise(r => setTimeout(r, 300));  // 1.58 flags missing models just after the load
  const nodes = app.graph._nodes;
  const choices = w => typeof w.options?.values === 'function' ? w.options.values() : w.options?.values;
  const absent = n => (n.widgets || []).filter(w => w.type === 'combo' && Array.isArray(choices(w))
    && !choices(w).includes(w.value)).map(w => `${n.type}.${w.name}=${w.value}`);
  return {
    nodes: nodes.length,
    missing: nodes.filter(n => !(n.type in LiteGraph.registered_node_types)).map(n => n.type),
    absent: nodes.flatMap(absent),
    flagged: nodes.filter(n => n.has_errors).map(n => n.type),
    errors: nodes.filter(n => n.has_errors && !absent(n).length).map(n => n.type),
    dialog: !!document.querySelector('[aria-labelledby="global-missing-nodes"]'),
  };
}"""

_ROUND_TRIP = """() => {
  const bad = {};
  const choices = w => typeof w.options?.values === 'function' ? w.options.values() : w.options?.values;
  for (const type of Object.keys(LiteGraph.registered_node_types).filter(t => t.startsWith('Mangaka'))) {
    const node = LiteGraph.createNode(type);
    app.graph.add(node);
    for (const w of node.widgets || []) {
      if (w.type === 'number') w.value = (w.options?.min ?? 0) + 1;
      else if (w.type === 'toggle') w.value = !w.value;
      else if (w.type === 'combo') { const c = choices(w) || []; if (c.length) w.value = c[c.length - 1]; }
      else if (typeof w.value === 'string') w.value = `value of ${w.name}`;
    }
    const saved = JSON.parse(JSON.stringify(node.serialize()));
    const loaded = LiteGraph.createNode(type);
    app.graph.add(loaded);
    saved.id = loaded.id;
    loaded.configure(saved);
    const lost = (node.widgets || []).filter((w, i) => JSON.stringify(w.value ?? null)
      !== JSON.stringify(loaded.widgets[i]?.value ?? null)).map(w => w.name);
    if (lost.length) bad[type] = lost;
  }
  app.graph.clear();
  return bad;
}"""

_BUILD = """async (spec) => {
  app.graph.clear();
  const made = {};
  for (const s of spec.nodes) {
    const node = LiteGraph.createNode(s.type);
    if (!node) throw new Error(`unknown node type ${s.type}`);
    node.id = s.id;
    app.graph.add(node);
    if (s.pos) node.pos = s.pos;
    if (s.size) node.size = [Math.max(s.size[0], node.size[0]), Math.max(s.size[1], node.size[1])];
    if (s.title) node.title = s.title;
    if (s.color) { node.color = s.color; node.bgcolor = s.bgcolor; }
    for (const [name, value] of Object.entries(s.widgets || {})) {
      const w = (node.widgets || []).find(w => w.name === name);
      if (!w) throw new Error(`${s.type} has no widget ${name}: ${(node.widgets || []).map(w => w.name)}`);
      w.value = value;
      if (w.callback) { try { w.callback(value); } catch (e) {} }
    }
    made[s.id] = node;
  }
  for (const [from, output, to, input] of spec.links) {
    const a = made[from], b = made[to];
    const o = a.outputs.findIndex(x => x.name === output);
    const i = b.inputs.findIndex(x => x.name === input);
    if (o < 0) throw new Error(`${a.type} has no output ${output}: ${a.outputs.map(x => x.name)}`);
    if (i < 0) throw new Error(`${b.type} has no input ${input}: ${b.inputs.map(x => x.name)}`);
    if (!a.connect(o, b, i)) throw new Error(`cannot link ${a.type}.${output} to ${b.type}.${input}`);
  }
  // Columns (spec.col), stacked top to bottom with the front end's own node sizes.
  const title = LiteGraph.NODE_TITLE_HEIGHT || 30, gap = 50;
  const cols = [...new Set(spec.nodes.filter(s => s.col !== undefined).map(s => s.col))];
  cols.sort((a, b) => a - b);
  let x = 0;
  for (const c of cols) {
    const members = spec.nodes.filter(s => s.col === c).map(s => made[s.id]);
    let y = title;
    for (const node of members) { node.pos = [x, y]; y += node.size[1] + title + gap; }
    x += Math.max(...members.map(n => n.size[0])) + gap;
  }
  for (const g of spec.groups || []) {
    const group = new LiteGraph.LGraphGroup(g.title);
    group.pos = g.pos; group.size = g.size;
    if (g.color) group.color = g.color;
    app.graph.add(group);
  }
  app.graph.setDirtyCanvas(true, true);
  const wf = app.graph.serialize();
  return JSON.parse(JSON.stringify(wf));
}"""


_GRAPH_BOX = """() => {
  const ds = app.canvas.ds, rect = app.canvas.canvas.getBoundingClientRect();
  const title = LiteGraph.NODE_TITLE_HEIGHT || 30;
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const n of app.graph._nodes) {
    x0 = Math.min(x0, n.pos[0]); y0 = Math.min(y0, n.pos[1] - title);
    x1 = Math.max(x1, n.pos[0] + n.size[0]); y1 = Math.max(y1, n.pos[1] + n.size[1]);
  }
  const sx = v => rect.left + (v + ds.offset[0]) * ds.scale;
  const sy = v => rect.top + (v + ds.offset[1]) * ds.scale;
  return {x: Math.floor(sx(x0)), y: Math.floor(sy(y0)), w: Math.ceil((x1 - x0) * ds.scale),
          h: Math.ceil((y1 - y0) * ds.scale)};
}"""


_SET_WIDGETS = """([type, values]) => {
  const nodes = app.graph._nodes.filter(n => n.type === type);
  if (!nodes.length) throw new Error(`no ${type} node in the graph`);
  for (const node of nodes) {
    for (const [name, value] of Object.entries(values)) {
      const w = (node.widgets || []).find(w => w.name === name);
      if (!w) throw new Error(`${type} has no widget ${name}: ${(node.widgets || []).map(w => w.name)}`);
      w.value = value;
    }
  }
  app.graph.setDirtyCanvas(true, true);
  return nodes.length;
}"""

# The text of each "saved" box, read from its element on the page when it has one (DOM widget).
_SAVED = """(type) => app.graph._nodes.filter(n => n.type === type)
  .map(n => (n.widgets || []).find(w => w.name === 'saved'))
  .filter(w => w && (w.inputEl ? w.inputEl.isConnected && w.inputEl.value : w.value))
  .map(w => w.inputEl ? w.inputEl.value : w.value)"""

_IMAGES = """(type) => app.graph._nodes.filter(n => n.type === type).flatMap(n => (n.imgs || [])
  .filter(i => i.complete && i.naturalWidth > 0)
  .map(i => ({node: String(n.id), src: i.src, width: i.naturalWidth, height: i.naturalHeight})))"""


def workflow_for_view(workflow: dict[str, Any]) -> dict[str, Any]:
    """A copy without the saved view (``extra.ds``), so the front end fits the graph on screen."""
    copy = json.loads(json.dumps(workflow))
    copy.get("extra", {}).pop("ds", None)
    return copy


class ComfyPage:
    def __init__(
        self, server_url: str, timeout_ms: int = 60_000, settings: dict[str, Any] | None = None
    ) -> None:
        self.url = server_url.rstrip("/")
        self.timeout_ms = timeout_ms
        self.settings = {"Comfy.Locale": "en", **SETTINGS, **(settings or {})}
        self.console: list[str] = []

    def __enter__(self) -> ComfyPage:
        from playwright.sync_api import sync_playwright

        executable = chromium_path()
        request = urllib.request.Request(
            f"{self.url}/api/settings",
            data=json.dumps(self.settings).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        urllib.request.urlopen(request, timeout=30).read()
        self._pw = sync_playwright().start()
        try:
            self.browser = self._pw.chromium.launch(executable_path=executable, headless=True, args=ARGS)
            self.page = self.browser.new_page(viewport=VIEWPORT)
            # The "Nodes 2.0" banner would cover the top of every screenshot.
            self.page.add_init_script("localStorage.setItem('vueNodesBannerDismissed', 'true')")
            self.page.set_default_timeout(self.timeout_ms)
            self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
            self.page.goto(self.url, wait_until="domcontentloaded")
            self.page.wait_for_function(_READY, timeout=self.timeout_ms)
        except Exception:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        browser = getattr(self, "browser", None)
        if browser is not None:
            browser.close()
        self._pw.stop()

    def load(self, workflow: dict[str, Any], name: str = "workflow") -> dict[str, Any]:
        info = self.page.evaluate(_LOAD, [workflow_for_view(workflow), name])
        self.page.wait_for_timeout(500)  # let the canvas draw before a screenshot
        return info

    def to_prompt(self) -> dict[str, Any]:
        return self.page.evaluate("async () => (await app.graphToPrompt()).output")

    def set_widgets(self, node_type: str, values: dict[str, Any]) -> int:
        """Set widget values on every node of ``node_type``; returns how many nodes."""
        return self.page.evaluate(_SET_WIDGETS, [node_type, values])

    def queue(self) -> None:
        """Click the Run button, as a user does: in 0.3.75's frontend the first button of the
        ``queue-button`` group, in 1.58 the ``queue-button`` button itself."""
        self.page.locator(
            'button[data-testid="queue-button"], [data-testid="queue-button"] button'
        ).first.click()

    def round_trip(self) -> dict[str, list]:
        """Every Mangaka node made fresh, each widget set off its default, saved (``serialize``)
        and loaded into another node (``configure``): the widgets whose value did not come back."""
        return self.page.evaluate(_ROUND_TRIP)

    def images(self, node_type: str) -> list[dict[str, Any]]:
        """The images shown on every ``node_type`` node that the browser has loaded (src and size)."""
        return self.page.evaluate(_IMAGES, node_type)

    def wait_for_images(self, node_type: str, timeout_s: float) -> list[dict[str, Any]]:
        """``images(node_type)`` once there are any; [] after ``timeout_s``."""
        import time

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.images(node_type)
            if found:
                return found
            self.page.wait_for_timeout(500)
        return []

    def saved_text(self, node_type: str, timeout_s: float = 120) -> str:
        """The "saved" box the pack's front-end extension (web/js/mangaka.js) shows on the first
        ``node_type`` node once it has run: its text, read from the box on the page ("" after
        ``timeout_s``)."""
        import time

        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.page.evaluate(_SAVED, node_type)
            if found:
                return found[0]
            self.page.wait_for_timeout(500)
        return ""

    def build(self, spec: dict[str, Any]) -> dict[str, Any]:
        return self.page.evaluate(_BUILD, spec)

    def screenshot(self, path: Path, pad: int = 24) -> Path:
        """The graph's part of the screen (every node, with ``pad`` pixels around) as a JPEG."""
        box = self.page.evaluate(_GRAPH_BOX)
        left, top = max(0, box["x"] - pad), max(0, box["y"] - pad)
        clip = {
            "x": left,
            "y": top,
            "width": min(VIEWPORT["width"], box["x"] + box["w"] + pad) - left,
            "height": min(VIEWPORT["height"], box["y"] + box["h"] + pad) - top,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), type="jpeg", quality=85, clip=clip)
        return path
