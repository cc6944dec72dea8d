"""Pages without diffusion: the Storyboard previz cards and the font and lettering helpers that the
page composer reuses (Noto Sans CJK from PyPI, line wrapping with kinsoku)."""
