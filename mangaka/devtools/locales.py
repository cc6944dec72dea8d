"""The nodes' words in ComfyUI's own interface: English, Chinese, Japanese and Korean locales and
help pages.

    .venv/bin/python -m mangaka.devtools.locales   # rewrite the help pages (and docs/nodes.md) from the
                                                   # nodes, and the declared options' names and tooltips
                                                   # in locales/{zh,ja,ko}/nodeDefs.json

ComfyUI serves a custom node pack's ``locales/<lang>/nodeDefs.json`` at ``/i18n`` (the front end
shows node titles, input and output names and tooltips in the user's language) and its help pages
from the web directory: ``web/docs/<NodeId>.md``, and ``web/docs/<NodeId>/<lang>.md`` for another
language. The help pages are generated from the nodes' own schemas (``/object_info`` of a real
server) and, in each language of ``UI_LANGUAGES``, from ``locales/<lang>/nodeDefs.json``: the
declared widgets' names and tooltips written from their declarations (``with_declarations``), the
rest (node names, descriptions, the other inputs, the outputs) by hand. ``tests/comfy/test_locales.py``
fails when a locale misses a node, an input, an output or a tooltip the English has, or keeps one
the nodes no longer have, or when a generated file is not current.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..options import UI_LANGUAGES
from ..surfaces import NODES, OPTION_SETS
from . import docs
from .comfy_server import PACK_FOLDER, ComfyServer, find_install

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ROOT / "locales"
DOCS = ROOT / "web" / "docs"
# Inputs whose choices are the files this installation has: never listed in a help page.
FILE_CHOICES = {"model", "lora", "bible_file", "checkpoint"}
HEADINGS = {
    "en": {"inputs": "Inputs", "outputs": "Outputs", "optional": "optional", "choices": "choices"},
    "zh": {"inputs": "输入", "outputs": "输出", "optional": "可选", "choices": "可选值"},
    "ja": {"inputs": "入力", "outputs": "出力", "optional": "任意", "choices": "選択肢"},
    "ko": {"inputs": "입력", "outputs": "출력", "optional": "선택", "choices": "선택지"},
}


def locale_path(lang: str) -> Path:
    """Where the ``lang`` locale is: ``locales/<lang>/nodeDefs.json``."""
    return LOCALES / lang / "nodeDefs.json"


def read_locale(lang: str) -> dict[str, Any]:
    """The ``lang`` locale as it is written."""
    return json.loads(locale_path(lang).read_text(encoding="utf-8"))


def with_declarations(
    locale: dict[str, Any], en: dict[str, Any] | None = None, lang: str = "zh"
) -> dict[str, Any]:
    """The ``lang`` locale with each declared widget's name and tooltip in ``lang`` from its
    declaration, on every node that shows it (the rest as written by hand); ``en`` (``english``: the
    nodes as the server has them) adds the entry of a declared widget a node has and the locale lacks."""
    out = json.loads(json.dumps(locale))
    for key, nodes in NODES.items():  # the nodes that show each declared set (mangaka/surfaces.py)
        by_widget = {o.widget: o for o in OPTION_SETS[key].options.values() if o.widget}
        for node in nodes:
            for widget in (en or {}).get(node, {}).get("inputs", {}):
                if widget in by_widget:
                    out[node]["inputs"].setdefault(widget, {})
            for widget, entry in out[node]["inputs"].items():
                if widget in by_widget:
                    entry["name"] = by_widget[widget].name_in(lang)
                    entry["tooltip"] = by_widget[widget].help_in(lang)
    return out


def ours(object_info: dict[str, Any]) -> dict[str, Any]:
    """The pack's nodes (not the test probes, ``MangakaTest…``)."""
    return {
        k: v
        for k, v in sorted(object_info.items())
        if k.startswith("Mangaka") and not k.startswith("MangakaTest")
    }


def _inputs(node: dict[str, Any]) -> list[tuple[str, list[Any], bool]]:
    """(name, spec, optional) in the node's own order."""
    order = node.get("input_order", {})
    out = []
    for kind in ("required", "optional"):
        specs = node["input"].get(kind, {})
        for name in order.get(kind, list(specs)):
            out.append((name, specs[name], kind == "optional"))
    return out


def _options(spec: list[Any]) -> dict[str, Any]:
    return spec[1] if len(spec) > 1 and isinstance(spec[1], dict) else {}


def _choices(spec: list[Any]) -> list[str]:
    if isinstance(spec[0], list):
        return [str(c) for c in spec[0]]
    return [str(c) for c in _options(spec).get("options", [])] if spec[0] == "COMBO" else []


def english(object_info: dict[str, Any]) -> dict[str, Any]:
    """The nodes' own words, in the shape of a ``nodeDefs.json`` locale."""
    defs: dict[str, Any] = {}
    for node_id, node in ours(object_info).items():
        entry: dict[str, Any] = {"display_name": node["display_name"]}
        if node.get("description"):
            entry["description"] = node["description"]
        entry["inputs"] = {}
        for name, spec, _ in _inputs(node):
            item = {"name": name}
            for key in ("tooltip", "placeholder"):  # the pack's script puts a placeholder on its box
                if _options(spec).get(key):
                    item[key] = _options(spec)[key]
            entry["inputs"][name] = item
        tips = node.get("output_tooltips") or [None] * len(node["output_name"])
        entry["outputs"] = {
            str(i): {"name": name, **({"tooltip": tip} if tip else {})}
            for i, (name, tip) in enumerate(zip(node["output_name"], tips, strict=True))
        }
        defs[node_id] = entry
    return defs


def missing_translations(en: dict[str, Any], locale: dict[str, Any]) -> list[str]:
    """What a locale lacks (or keeps that the nodes no longer have), one line each."""
    problems = [f"{n}: not translated" for n in en if n not in locale]
    problems += [f"{n}: no such node" for n in locale if n not in en]
    for node_id, entry in en.items():
        other = locale.get(node_id)
        if other is None:
            continue
        for key in ("display_name", "description"):
            if key in entry and not other.get(key):
                problems.append(f"{node_id}.{key}: not translated")
        for part in ("inputs", "outputs"):
            theirs = other.get(part, {})
            problems += [f"{node_id}.{part}.{k}: no such {part[:-1]}" for k in theirs if k not in entry[part]]
            for key, item in entry[part].items():
                mine = theirs.get(key, {})
                for field in item:
                    if not mine.get(field):
                        problems.append(f"{node_id}.{part}.{key}.{field}: not translated")
    return problems


def help_page(node: dict[str, Any], words: dict[str, Any], lang: str) -> str:
    """A node's help page in ``lang``: what it does, then each input and output."""
    h = HEADINGS[lang]
    lines = [f"# {words['display_name']}", "", words.get("description", ""), "", f"## {h['inputs']}", ""]
    for name, spec, optional in _inputs(node):
        item = words["inputs"][name]
        tags = [str(spec[0]) if isinstance(spec[0], str) else "COMBO"] + ([h["optional"]] if optional else [])
        line = f"- **{item['name']}** (`{name}`, {', '.join(tags)})"
        if item.get("tooltip"):
            line += f": {item['tooltip']}"
        choices = [] if name in FILE_CHOICES else _choices(spec)
        if choices and len(choices) <= 12:
            line += f" ({h['choices']}: {', '.join(f'`{c}`' for c in choices)})"
        lines.append(line)
    lines += ["", f"## {h['outputs']}", ""]
    for key, item in words["outputs"].items():
        kind = node["output"][int(key)]
        line = f"- **{item['name']}** (`{node['output_name'][int(key)]}`, {kind})"
        lines.append(line + (f": {item['tooltip']}" if item.get("tooltip") else ""))
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def generated(object_info: dict[str, Any]) -> dict[Path, str]:
    """Every generated file and its text: the help pages, English and (where a locale covers the
    node) in each language of ``UI_LANGUAGES``."""
    en = english(object_info)
    locales = {lang: read_locale(lang) for lang in UI_LANGUAGES}
    files: dict[Path, str] = {}
    for node_id, node in ours(object_info).items():
        files[DOCS / f"{node_id}.md"] = help_page(node, en[node_id], "en")
        for lang, words in locales.items():
            mine = words.get(node_id)
            if mine and not missing_translations({node_id: en[node_id]}, {node_id: mine}):
                files[DOCS / node_id / f"{lang}.md"] = help_page(node, mine, lang)
    return files


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        server = ComfyServer(find_install(), Path(tmp), {PACK_FOLDER: ROOT}).start()
        try:
            info = server.get_json("/object_info")
        finally:
            server.stop()
    en = english(info)
    written = {}
    for lang in UI_LANGUAGES:
        written[lang] = with_declarations(read_locale(lang), en, lang)
        text = json.dumps(written[lang], ensure_ascii=False, indent=2) + "\n"
        locale_path(lang).write_text(text, encoding="utf-8")
    for path, text in generated(info).items():  # the translated pages read the locales just written
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for path, text in docs.pages().items():  # docs/nodes.md is made from the help pages just written
        path.write_text(text, encoding="utf-8")
    for lang, words in written.items():
        for problem in missing_translations(en, words):
            sys.stderr.write(f"locales/{lang}: {problem}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
