"""Motion comics: a screenplay as a timed video of its panels, with camera moves, subtitles and
voice (``timeline`` times it, ``camera`` moves over each picture, ``subtitles`` letters and
writes the lines, ``audio`` places and mixes the clips, ``render`` draws and encodes it as a
stream). PyAV and numpy are imported where a video is encoded, never at import time."""
