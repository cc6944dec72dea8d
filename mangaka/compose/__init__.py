"""Screenplay → Stable Diffusion prompts: the compiler, the character bible, style presets."""

from .bible import BibleEntry, CharacterBible, build_bible, load_bible_file, parse_bible_text
from .clip import ClipTokenizer, estimate_clip_tokens
from .compiler import CompiledPrompts, PanelPrompt, compile_prompts
from .extract import extract_json_object, screenplay_from_text
from .presets import MODES, load_style, style_names

__all__ = [
    "MODES",
    "BibleEntry",
    "CharacterBible",
    "ClipTokenizer",
    "CompiledPrompts",
    "PanelPrompt",
    "build_bible",
    "compile_prompts",
    "estimate_clip_tokens",
    "extract_json_object",
    "load_bible_file",
    "load_style",
    "parse_bible_text",
    "screenplay_from_text",
    "style_names",
]
