"""Prompts are data files: ``<pack>/prompts/<name>.<language>.md``, filled with ``$placeholders``.

Placeholders use ``string.Template`` syntax (``$name`` or ``${name}``; ``$$`` for a literal
dollar sign), so JSON examples with literal braces need no escaping. A placeholder without a value
is an error, never left in the prompt.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from string import Template

from .errors import InputError, MangakaError

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


def prompt_languages(name: str) -> list[str]:
    """Languages that ``name`` (e.g. ``"screenwriter/cast"``) has a file for."""
    folder = (PROMPTS_DIR / name).parent
    stem = Path(name).name
    return sorted(p.name[len(stem) + 1 : -3] for p in folder.glob(f"{stem}.*.md"))


@cache
def load_prompt(name: str, language: str) -> str:
    """The text of prompt ``name`` in ``language``; raises ``InputError`` listing the languages it has."""
    if ".." in Path(name).parts or Path(name).is_absolute():
        raise InputError(f"prompt name {name!r} must be a path inside {PROMPTS_DIR}")
    path = PROMPTS_DIR / f"{name}.{language}.md"
    if not path.is_file():
        found = prompt_languages(name)
        if not found:
            raise MangakaError(
                f"no prompt {name!r} in {PROMPTS_DIR}; the pack's prompts folder is incomplete"
            )
        raise InputError(f"prompt {name!r} has no {language!r} version; it exists in: {', '.join(found)}")
    return path.read_text(encoding="utf-8")


def render_prompt(text: str, **values: object) -> str:
    """Fill ``$placeholders`` in ``text``; a placeholder with no value raises ``MangakaError``."""
    try:
        return Template(text).substitute({k: str(v) for k, v in values.items()})
    except KeyError as e:
        raise MangakaError(
            f"prompt placeholder ${e.args[0]} has no value; given: {', '.join(sorted(values))}"
        ) from None
    except ValueError as e:
        raise MangakaError(f"prompt has a stray '$' ({e}); write $$ for a literal dollar sign") from None


def prompt(name: str, language: str, **values: object) -> str:
    """``load_prompt`` then ``render_prompt``, stripped of surrounding blank lines."""
    return render_prompt(load_prompt(name, language), **values).strip()
