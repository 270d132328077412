"""Which record, and which deal of it, a person means.

People count from 1 and count what ``kingrec validate`` lists: record ``n`` of a file is
frame ``n`` of a .krec file as a person reads it (``frame`` 0 of the format is record 1),
and the ``n``-th record of JSON records, damaged ones included, so that a damaged frame
does not shift the count. A deal ``n`` is the ``n``-th deal of a match, as the validator's
findings number them.

The failures are ``KingrecError``s naming what there is instead: ``RecordNotFoundError``
(no such record, with how many the file holds), ``DamagedFileError`` (the record asked
for is damaged) and ``DealNotFoundError`` (with the deals the match has).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .errors import DamagedFileError, KingrecError
from .records import Damage, Record
from .v1 import record_pb2 as pb

__all__ = [
    "DealNotFoundError",
    "RecordNotFoundError",
    "deal_position",
    "pick_record",
    "record_number",
]


class RecordNotFoundError(KingrecError):
    """No record of a file has the id or number asked for."""

    code = "NO_SUCH_RECORD"


class DealNotFoundError(KingrecError):
    """A deal number outside the deals a match holds."""

    code = "NO_SUCH_DEAL"


def record_number(item: Record | Damage, position: int) -> int:
    """The number a person reads for a record: its frame index plus 1 in a .krec file, else
    its 1-based ``position`` among the file's records (damaged ones counted)."""
    frame = item.location.frame
    return frame + 1 if frame is not None else position


def pick_record(
    items: Iterable[Record | Damage],
    *,
    match_id: str | None = None,
    number: int | None = None,
    name: str = "the file",
    on_damage: Callable[[Damage], object] | None = None,
) -> Record:
    """The record with ``match_id``, or record ``number`` (1-based), or else the first one.

    Damage read on the way, the record asked for included, is passed to ``on_damage`` (so a
    reader can say what was passed over and where); the items after the record are not
    read. ``name`` names the file in the errors.
    """
    if match_id is not None and number is not None:
        raise ValueError("pick a record by match_id or by number, not both")
    if number is not None and number < 1:
        raise RecordNotFoundError(f"there is no record {number}: records are numbered from 1")
    records = damaged = 0
    for position, item in enumerate(items, 1):
        at = record_number(item, position)
        if isinstance(item, Damage):
            damaged += 1
            if on_damage is not None:
                on_damage(item)
            if number is not None and at == number:
                raise DamagedFileError(
                    f"record {number} of {name} is damaged ({item.code}); it cannot be shown",
                    (item,),
                )
            continue
        records += 1
        if match_id is not None:
            if item.match.match_id == match_id:
                return item
        elif number is None or at == number:
            return item
    held = f"{name} holds {records} readable record(s)"
    if damaged:
        held += f" and {damaged} damaged one(s)"
    if match_id is not None:
        raise RecordNotFoundError(f"no match {match_id!r}: {held}")
    if number is None:
        raise RecordNotFoundError(f"no record to show: {held}")
    raise RecordNotFoundError(f"there is no record {number}: {held}")


def deal_position(match: pb.Match, number: int) -> int:
    """The index in ``match.deals`` of deal ``number`` (1-based, by position in the match)."""
    count = len(match.deals)
    if 1 <= number <= count:
        return number - 1
    who = f"match {match.match_id!r}" if match.match_id else "the match"
    if not count:
        raise DealNotFoundError(f"there is no deal {number}: {who} has no deals")
    span = "deal 1" if count == 1 else f"deals 1 to {count}"
    raise DealNotFoundError(f"there is no deal {number}: {who} has {span}")
