"""Issue 53's move changed nothing under a user's saved workflow: every node of the tree before it
(tests/history.py), loaded in a second ComfyUI, has today's title, inputs (names, order, types,
defaults, ranges, choices, tooltips) and outputs, but where a later issue changed them on purpose."""

from __future__ import annotations

import json

from tests.comfy.harness import CHECKOUT, PACK_FOLDER
from tests.history import tree_before

# What later issues added on purpose: Motion Comic and Voice Script (issue 54).
ADDED_SINCE = {"MangakaMotionComic", "MangakaVoiceScript"}
# What the pack's own nodes show in /object_info, all of it but the module the class lives in.
SHOWN = ("display_name", "description", "category", "input", "input_order", "output", "output_name",
         "output_is_list", "output_tooltips", "output_node", "deprecated", "experimental")  # fmt: skip


def ours(info: dict) -> dict:
    return {
        name: {key: node.get(key) for key in SHOWN}
        for name, node in info.items()
        if PACK_FOLDER in str(node.get("python_module", ""))
    }


def test_every_node_shows_what_the_pre_move_tree_showed(comfy_factory, tmp_path_factory):
    """Both in servers of their own, with no models: a file list (Load LLM's models) is the same."""
    paths = ("__init__.py", "nodes", "mangaka", "prompts", "schemas", "web", "locales", "pyproject.toml")
    old = tree_before(tmp_path_factory.mktemp("before-the-move") / PACK_FOLDER, *paths)
    before = ours(comfy_factory(packs={PACK_FOLDER: old}).object_info())
    now = ours(comfy_factory(packs={PACK_FOLDER: CHECKOUT}).object_info())
    assert len(before) >= 12, sorted(before)  # the old pack loaded
    assert set(now) - set(before) == ADDED_SINCE
    assert set(before) <= set(now)
    for name, shown in before.items():
        changed = [key for key in SHOWN if json.dumps(shown[key]) != json.dumps(now[name][key])]
        assert changed == [], (name, {key: (shown[key], now[name][key]) for key in changed})
