"""Camera moves over a still picture: which move a shot gets, and where the camera looks at a
moment of it.

The camera is a window over the picture with the picture's own shape; a zoom of ``z`` shows
``1/z`` of its width and height. Every window lies inside the picture (never a border of nothing),
and the zoom is at most ``1 + MAX_AMOUNT`` (at ``camera`` 1), so at least 83 % of the picture's
width and height stays in view: a face drawn anywhere but the outer edge stays in frame.

Which move, from the panel's shot and angle:

- close-ups and inserts push in slowly toward the upper middle, where a face usually is;
- wide and establishing shots pan across in the reading direction (right to left for manga:
  the window starts at the right edge and ends at the left) or pull out, chosen by the seed;
- a low or worm's-eye angle tilts up (the window rises from the bottom), a high or bird's-eye
  angle tilts down;
- medium and full shots drift in the reading direction, or push in, chosen by the seed.

How fast is bounded too: a move covers at most ``MAX_SPEED`` of the picture a second, so a short
shot moves less instead of whipping across.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal, get_args

Move = Literal["push_in", "pull_out", "pan", "tilt_up", "tilt_down", "hold"]
MOVES: tuple[str, ...] = get_args(Move)

MAX_AMOUNT = 0.2  # the largest zoom over 1 a move reaches (camera 1)
MAX_SPEED = 0.05  # the most of the picture's size a move travels (or zooms) in a second
FOCUS_Y = 0.42  # where a push in aims, from the top: a face sits above the middle

_CLOSE = frozenset({"close_up", "extreme_close_up", "medium_close_up", "insert"})
_WIDE = frozenset({"wide", "establishing"})
_UP = frozenset({"low", "worms_eye"})
_DOWN = frozenset({"high", "birds_eye"})


def _pick(seed: int, key: str, choices: tuple[str, ...]) -> str:
    """One of ``choices``, the same for the same seed and key on every machine and Python."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return choices[digest[0] % len(choices)]


def choose_move(shot: str, angle: str, seed: int, key: str) -> Move:
    """The move for a panel's ``shot`` and ``angle`` (``key``, the panel's id, varies the seed's
    choice from panel to panel)."""
    if angle in _UP:
        return "tilt_up"
    if angle in _DOWN:
        return "tilt_down"
    if shot in _CLOSE:
        return "push_in"
    if shot in _WIDE:
        return _pick(seed, key, ("pan", "pull_out"))  # type: ignore[return-value]
    return _pick(seed, key, ("pan", "push_in"))  # type: ignore[return-value]


def move_amount(camera: float, seconds: float) -> float:
    """How far a move goes (a zoom over 1): ``camera`` of ``MAX_AMOUNT``, less when the move's
    ``seconds`` are too few to go that far at ``MAX_SPEED``."""
    return round(min(camera * MAX_AMOUNT, MAX_SPEED * max(seconds, 0.0)), 4)


def ease(p: float) -> float:
    """Smooth start and stop (smoothstep) of a progress from 0 to 1."""
    p = min(max(p, 0.0), 1.0)
    return p * p * (3.0 - 2.0 * p)


@dataclass(frozen=True)
class Window:
    """Where the camera looks: a box of the picture in its pixels, ``(left, top, right, bottom)``."""

    left: float
    top: float
    right: float
    bottom: float

    @property
    def box(self) -> tuple[float, float, float, float]:
        return (self.left, self.top, self.right, self.bottom)


def window(move: str, amount: float, direction: str, progress: float, size: tuple[int, int]) -> Window:
    """The camera's window over a picture of ``size`` at ``progress`` (0 to 1, eased here) of a
    ``move`` of ``amount``; ``direction`` (``rtl``/``ltr``) is the way a pan runs."""
    w, h = size
    p = ease(progress)
    if move == "push_in":
        zoom = 1.0 + amount * p
    elif move == "pull_out":
        zoom = 1.0 + amount * (1.0 - p)
    elif move == "hold":
        zoom = 1.0
    else:
        zoom = 1.0 + amount
    vw, vh = w / zoom, h / zoom
    room_x, room_y = w - vw, h - vh
    if move == "pan":
        x = room_x * (1.0 - p) if direction == "rtl" else room_x * p
        y = room_y / 2
    elif move == "tilt_up":
        x, y = room_x / 2, room_y * (1.0 - p)
    elif move == "tilt_down":
        x, y = room_x / 2, room_y * p
    else:  # a zoom aims at the upper middle
        x, y = room_x / 2, FOCUS_Y * h - vh / 2
    x = min(max(x, 0.0), room_x)
    y = min(max(y, 0.0), room_y)
    return Window(x, y, x + vw, y + vh)
