"""The bounds a record must keep before kingrec spends memory or time on it.

A real King match is small: at most a few dozen deals of 52 cards, four players, a few tags.
Records from anyone (uploads, files from other programs) are held to these bounds *before*
they are decoded into Python objects, so input built to hurt the reader (a frame claiming
200,000 empty deals, a 100 MiB JSON line) costs time linear in its size and bounded memory,
and is reported with the code ``LIMIT_EXCEEDED`` naming the bound. The format spec
(docs/FORMAT.md) lists the same numbers; other implementations may rely on them.
"""

from __future__ import annotations

__all__ = [
    "MAX_DEALS",
    "MAX_FIXED_ORDER",
    "MAX_FRAME_BYTES",
    "MAX_HAND_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_JSON_LINE_BYTES",
    "MAX_PLAYERS",
    "MAX_PLAYS",
    "MAX_SCORES",
    "MAX_STRING_BYTES",
    "MAX_TAGS",
]

# One .krec frame's payload (a serialized Match). A 28-deal match with think times and
# metadata is about 10 KiB; the bound leaves room for long names and tags.
MAX_FRAME_BYTES = 1 << 20

# One JSON record (a line of JSON Lines, or one match of a JSON document). Card names and
# keys make the JSON form a few times larger than the frame.
MAX_JSON_LINE_BYTES = 4 << 20

# Nesting depth of a JSON record (a match is 4 levels deep; more is hostile).
MAX_JSON_DEPTH = 32

MAX_DEALS = 256  # deals in one match (and a ruleset's deal_count)
MAX_PLAYS = 104  # card bytes in one deal's plays (52 are legal; the rest is a finding)
MAX_HAND_BYTES = 104  # card bytes in one deal's hands (52 are legal)
MAX_PLAYERS = 16  # players listed in one match (4 are legal)
MAX_TAGS = 64  # metadata tags of one match
MAX_STRING_BYTES = 1024  # any one string: ids, names, event, site, tag keys and values
MAX_SCORES = 16  # claimed scores of a deal, claimed totals of a match (4 are legal)
MAX_FIXED_ORDER = 256  # contracts in a ruleset's fixed order
