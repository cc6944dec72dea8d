"""Where a panel's picture is calm: balloons go there rather than over faces and detail.

A panel's balloons are packed in reading order (``plan._pack``: shelves from the top, from the
reading-start side). :func:`calm_shift` then moves that group as one block, so the order between
the balloons is the same, to the offset inside the panel where the block covers the least:

- **detail**: the picture's edge energy (how much each pixel differs from its right and lower
  neighbours), averaged over cells of a few pixels and scaled so the panel's busiest cell is 1;
- **the centre of interest**: a picture's subject is usually near its centre, so each cell also
  costs a little more the nearer it is to the panel's centre (``CENTRE_WEIGHT``);
- **an avoid mask** (a user's face or subject detector through Compose Page's ``avoid`` input, or
  a storyboard card's header and text rows): covering any of it costs more than any detail can.

The group stays where it was packed unless another offset is clearly calmer (``GAIN``), so a flat
picture keeps today's placement. When every offset still covers part of the avoid mask, the group
stays where it was packed and the panel is named in the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .balloon import Box

CELL = 8  # px: the grid the cost is summed on
STEPS = 9  # offsets tried along each axis
CENTRE_WEIGHT = 0.15
AVOID_COST = 1000.0  # per cell: more than any amount of detail
GAIN = 0.7  # move only when the best offset costs at most this share of where the group was packed


@dataclass(frozen=True)
class CalmMap:
    """A panel's cost per cell (``CELL`` px, from the panel's top-left ``origin``), summed for fast box
    sums; ``avoid`` the same for the avoid mask alone (cells touched)."""

    origin: tuple[int, int]
    cost: Any  # numpy integral image of the cost, shape (rows + 1, cols + 1)
    avoid: Any  # numpy integral image of avoided cells

    def _sum(self, table: Any, box: Box) -> float:
        x0 = max(0, (box.x - self.origin[0]) // CELL)
        y0 = max(0, (box.y - self.origin[1]) // CELL)
        x1 = min(table.shape[1] - 1, -(-(box.right - self.origin[0]) // CELL))
        y1 = min(table.shape[0] - 1, -(-(box.bottom - self.origin[1]) // CELL))
        if x1 <= x0 or y1 <= y0:
            return 0.0
        return float(table[y1, x1] - table[y0, x1] - table[y1, x0] + table[y0, x0])

    def cost_of(self, box: Box) -> float:
        return self._sum(self.cost, box)

    def avoided(self, box: Box) -> float:
        return self._sum(self.avoid, box)


def calm_map(picture: Any, origin: tuple[int, int], avoid: Any | None = None) -> CalmMap:
    """The cost map of a panel's ``picture`` (a PIL image, the panel as placed) with its top-left at
    ``origin`` on the page; ``avoid``: an "L" image of the same size, nonzero where no balloon may go."""
    import numpy as np

    grey = np.asarray(picture.convert("L"), dtype=np.float32)
    energy = np.zeros_like(grey)
    energy[:, :-1] += np.abs(np.diff(grey, axis=1))
    energy[:-1, :] += np.abs(np.diff(grey, axis=0))
    rows, cols = -(-grey.shape[0] // CELL), -(-grey.shape[1] // CELL)
    padded = np.zeros((rows * CELL, cols * CELL), dtype=np.float32)
    padded[: grey.shape[0], : grey.shape[1]] = energy
    cells = padded.reshape(rows, CELL, cols, CELL).mean(axis=(1, 3))
    peak = float(cells.max())
    detail = cells / peak if peak > 0 else cells
    yy, xx = np.mgrid[0:rows, 0:cols]
    dist = np.hypot((yy + 0.5) / rows - 0.5, (xx + 0.5) / cols - 0.5) / np.hypot(0.5, 0.5)
    cost = detail + CENTRE_WEIGHT * (1.0 - dist)
    blocked = np.zeros((rows, cols), dtype=np.float32)
    if avoid is not None:
        mask = np.zeros((rows * CELL, cols * CELL), dtype=np.float32)
        mask[: grey.shape[0], : grey.shape[1]] = np.asarray(avoid.convert("L"), dtype=np.float32) > 127
        blocked = (mask.reshape(rows, CELL, cols, CELL).max(axis=(1, 3)) > 0).astype(np.float32)
        cost = cost + AVOID_COST * blocked

    def integral(a: Any) -> Any:
        out = np.zeros((a.shape[0] + 1, a.shape[1] + 1), dtype=np.float64)
        out[1:, 1:] = a.cumsum(0).cumsum(1)
        return out

    return CalmMap(origin, integral(cost), integral(blocked))


def _offsets(low: int, high: int) -> list[int]:
    if high <= low:
        return [0] if low <= 0 <= high else [low]
    values = {low + (high - low) * k // (STEPS - 1) for k in range(STEPS)}
    return sorted(values | ({0} if low <= 0 <= high else set()))


def calm_shift(
    boxes: Sequence[Box | None], inner: Box, calm: CalmMap, tails: Sequence[int] = ()
) -> tuple[list[Box | None], bool]:
    """``boxes`` moved together to the calmest offset inside ``inner`` (each box's room below for its
    tail, ``tails``, kept inside too). Returns the boxes and whether they are clear of the avoid
    mask (False: no offset clears it; the boxes are where they were packed)."""
    placed = [(k, b) for k, b in enumerate(boxes) if b is not None]
    if not placed:
        return list(boxes), True
    below = [tails[k] if k < len(tails) else 0 for k, _ in placed]
    left = min(b.x for _, b in placed)
    top = min(b.y for _, b in placed)
    right = max(b.right for _, b in placed)
    bottom = max(b.bottom + t for (_, b), t in zip(placed, below, strict=True))
    xs = _offsets(inner.x - left, inner.right - right)
    ys = _offsets(inner.y - top, inner.bottom - min(inner.bottom, bottom))

    def moved(dx: int, dy: int) -> list[Box]:
        return [Box(b.x + dx, b.y + dy, b.w, b.h) for _, b in placed]

    def score(dx: int, dy: int) -> tuple[float, float]:
        shifted = moved(dx, dy)
        return sum(calm.avoided(b) for b in shifted), sum(calm.cost_of(b) for b in shifted)

    packed_avoid, packed_cost = score(0, 0)
    best = min(
        ((score(dx, dy), (dx, dy)) for dy in ys for dx in xs),
        key=lambda s: (s[0], abs(s[1][0]) + abs(s[1][1])),
    )
    (avoid, cost), (dx, dy) = best
    if avoid > 0:
        return list(boxes), packed_avoid == 0
    if packed_avoid == 0 and cost > GAIN * packed_cost:
        return list(boxes), True
    out: list[Box | None] = list(boxes)
    for (k, _), box in zip(placed, moved(dx, dy), strict=True):
        out[k] = box
    return out, True
