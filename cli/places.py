"""Places in a file as people read them: frames counted from 1, like records and deals.

The format and the JSON reports number frames from 0 (``"frame": 0`` is the first); every
line a person reads numbers them from 1, the way ``kingrec show --index`` counts. The
library's damage sentences name frames by the format's index, so they are renumbered here
for the same reader.
"""

from __future__ import annotations

import re

from kingrec.findings import Location

__all__ = ["damage_sentence", "place"]


def place(location: Location) -> str:
    """``samples/x.krec, frame 1, byte 12`` or ``samples/x.jsonl, line 3``."""
    parts = [location.file or "<record>"]
    if location.line is not None:
        parts.append(f"line {location.line}")
    if location.frame is not None:
        parts.append(f"frame {location.frame + 1}")
    if location.offset is not None:
        parts.append(f"byte {location.offset}")
    return ", ".join(parts)


# Patterns are compiled by re on first use (and kept in its cache): compiling each when the
# module loads cost a run that never uses it about a million instructions.
_FRAME_INDEX = r"\bframe (\d+)\b"


def damage_sentence(location: Location, message: str) -> str:
    """A library damage sentence with the frames it names counted from 1, like ``place``."""
    if location.frame is None:
        return message
    return re.sub(_FRAME_INDEX, lambda m: f"frame {int(m.group(1)) + 1}", message)
