"""A small valid screenplay: for tests, documentation and previews (Storyboard, Compose Page)."""

from __future__ import annotations

from typing import Any


def example_screenplay() -> dict[str, Any]:
    """A fresh copy of a small valid screenplay."""
    return {
        "version": 1,
        "title": "The Last Train",
        "language": "en",
        "characters": [
            {
                "id": "akira",
                "name": "Akira",
                "appearance": "teenage boy, messy black hair, grey eyes, school uniform",
            },
            {"id": "mei", "name": "Mei", "appearance": "girl, long brown braid, green eyes, yellow raincoat"},
        ],
        "dialogue": [
            {
                "id": "d1",
                "speaker": "narrator",
                "line": "Midnight. The station is empty.",
                "emotion": "narration",
            },
            {"id": "d2", "speaker": "akira", "line": "Did we miss it?", "emotion": "worried"},
            {"id": "d3", "speaker": "mei", "line": "Listen...", "emotion": "whisper"},
        ],
        "panels": [
            {
                "id": "p1",
                "shot": "establishing",
                "angle": "high",
                "action": "An empty rural platform under one lamp.",
                "characters": [],
                "expression": "",
                "background": "rural train station, rain",
                "lighting": "night, single sodium lamp",
                "props": ["timetable board"],
                "dialogue": ["d1"],
            },
            {
                "id": "p2",
                "shot": "medium",
                "angle": "eye_level",
                "action": "Akira turns to Mei, who raises a finger.",
                "characters": ["akira", "mei"],
                "expression": "Akira anxious, Mei calm",
                "background": "platform edge",
                "lighting": "night, wet reflections",
                "props": [],
                "dialogue": ["d2", "d3"],
            },
        ],
    }
