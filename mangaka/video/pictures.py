"""The panels' pictures for a motion comic, opened when their shot comes and not before.

A chapter's pictures held decoded at once would make a long video's memory grow with its panels
(a 768×1024 picture is 2.4 MB; a five-minute video has some seventy). ``PanelFiles`` reads each
file's size up front, checks that every file decodes (then lets it go), and decodes a file again
when the renderer asks for it; ``StoryboardCards`` draws a panel's card when asked. A plain list
of Pillow images works as well (ComfyUI's IMAGE tensors are in memory already).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import overload

from PIL import Image

from ..errors import InputError
from ..page.storyboard import DEFAULT_HEIGHT, DEFAULT_WIDTH, render_card
from ..screenplay.models import Screenplay

_READ_ERRORS = (OSError, ValueError, EOFError, SyntaxError, Image.DecompressionBombError)


def open_panel_image(path: Path, flag: str = "--images") -> Image.Image:
    """The picture file ``path``, decoded now (a truncated file fails here, naming itself);
    ``InputError`` naming ``flag`` and the file when Pillow cannot read it."""
    try:
        image = Image.open(path)
        image.load()
    except _READ_ERRORS as exc:
        raise InputError(
            f"{flag}: {path} is not an image Pillow can read ({exc}); replace it, or move it out "
            f"of {path.parent}"
        ) from None
    return image


def size_of(pictures: Sequence[Image.Image], index: int) -> tuple[int, int]:
    """Picture ``index``'s size, without decoding it where the sequence knows it."""
    sizes = getattr(pictures, "sizes", None)
    return sizes[index] if sizes is not None else pictures[index].size


class _Lazy(Sequence[Image.Image]):
    sizes: list[tuple[int, int]]

    def __len__(self) -> int:
        return len(self.sizes)

    @overload
    def __getitem__(self, index: int) -> Image.Image: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Image.Image]: ...
    def __getitem__(self, index: int | slice) -> Image.Image | Sequence[Image.Image]:
        if isinstance(index, slice):
            return [self._load(i) for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self._load(index % len(self))

    def _load(self, index: int) -> Image.Image:
        raise NotImplementedError


class PanelFiles(_Lazy):
    """Panel pictures from image files, in the order given; each decoded once now (a file
    Pillow cannot read is refused by name, ``flag`` first) and again when its shot comes."""

    def __init__(self, paths: Sequence[Path], flag: str = "--images") -> None:
        self.paths = list(paths)
        self.flag = flag
        self.sizes = [self._check(p) for p in self.paths]

    def _check(self, path: Path) -> tuple[int, int]:
        image = open_panel_image(path, self.flag)
        size = image.size
        image.close()
        return size

    def _load(self, index: int) -> Image.Image:
        return open_panel_image(self.paths[index], self.flag)


class StoryboardCards(_Lazy):
    """Each panel's storyboard card, drawn when its shot comes."""

    def __init__(self, sp: Screenplay, width: int = DEFAULT_WIDTH, height: int = DEFAULT_HEIGHT) -> None:
        self.sp = sp
        self.width, self.height = width, height
        self.sizes = [(width, height)] * len(sp.panels)

    def _load(self, index: int) -> Image.Image:
        return render_card(self.sp, index, self.width, self.height)
