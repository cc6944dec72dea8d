"""Quoted spans of a chapter: the engine's quote finder (``mangaka.source.quotes``), re-exported
where ``eval`` has always imported it."""

from __future__ import annotations

from ..source.quotes import MAX_QUOTE_CHARS, QUOTE_MARKS, find_quote_spans, find_quotes

__all__ = ["MAX_QUOTE_CHARS", "QUOTE_MARKS", "find_quote_spans", "find_quotes"]
