"""The README and docs/: a short README for users, generated references that are current, and no
broken link anywhere in the repository's Markdown."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from mangaka.devtools import docs

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
README_LIMIT = 15 * 1024
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
DOC_PAGES = [
    "books.md", "cli.md", "comfyui.md", "evaluation.md", "lora.md", "native.md", "nodes.md",
    "pages.md", "performance.md", "reliability.md", "remote.md", "screenplay.md", "testing.md", "video.md",
]  # fmt: skip


def markdown_files() -> list[Path]:
    """Every Markdown file git tracks or would track (not the ignored venvs and caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    return [ROOT / name for name in listed if (ROOT / name).exists()]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def broken_links(path: Path) -> list[str]:
    """The links in ``path`` (outside code blocks) to a file or heading that is not there."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not followed (no network in tests)
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target} (no heading #{anchor} in {resolved.name})")
    return broken


def test_the_readme_is_short_and_links_every_docs_page():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) <= README_LIMIT
    for page in DOC_PAGES:
        assert (ROOT / "docs" / page).is_file(), page
        assert f"(docs/{page})" in readme, f"the README does not link docs/{page}"
    assert sorted(p.name for p in (ROOT / "docs").glob("*.md")) == sorted(DOC_PAGES)


def test_no_markdown_file_has_a_broken_link():
    files = markdown_files()
    assert ROOT / "README.md" in files and len(files) > len(DOC_PAGES)
    broken = {str(p.relative_to(ROOT)): b for p in files if (b := broken_links(p))}
    assert broken == {}


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    """The check itself: a link to a file that is not there, and to a heading that is not there."""
    (tmp_path / "other.md").write_text("# Other\n\n## A heading: with `code`\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#a-heading-with-code) [gone](nothere.md) [no heading](other.md#nope)\n"
        "```\n[in code](ignored.md)\n```\n[web](https://example.com/x)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["nothere.md (no such file)", "other.md#nope (no heading #nope in other.md)"]


def test_the_generated_references_are_current():
    """docs/cli.md from the parser and docs/nodes.md from the help pages, as the generator writes them
    now (run ``python -m mangaka.devtools.docs`` after changing a flag or a node)."""
    assert docs.stale() == []
    check = subprocess.run([sys.executable, "-m", "mangaka.devtools.docs", "--check"], cwd=ROOT)
    assert check.returncode == 0


def test_the_cli_reference_lists_every_command_and_a_changed_flag_makes_it_stale(monkeypatch):
    from mangaka.cli.main import build_parser

    page = docs.cli_page()
    for name in docs._subcommands(build_parser()):
        assert f"## `{name}`" in page
    assert "--jump-forward {off,exact,canonical}" in page
    original = build_parser

    def changed():
        parser = original()
        docs._subcommands(parser)["write"].add_argument("--new-option", help="a new option")
        return parser

    monkeypatch.setattr("mangaka.devtools.docs.build_parser", changed)
    assert docs.DOCS / "cli.md" in docs.stale()


def test_the_node_reference_has_every_help_page():
    page = docs.nodes_page()
    for help_page in (ROOT / "web" / "docs").glob("*.md"):
        assert f"(../web/docs/{help_page.name})" in page
        for lang in ("zh", "ja", "ko"):
            assert f"(../web/docs/{help_page.stem}/{lang}.md)" in page
