"""Which record files a list of paths means: files as given, directories by their record files.

``record_paths(["a.krec", "matches/", "-"])`` yields ``a.krec``, then every record file under
``matches/`` (recursively, sorted by name, so a listing is stable), then ``-`` (standard
input). A record file is one named ``.krec``, ``.jsonl``, ``.json`` or ``.ndjson``; inside a
directory, hidden entries (a leading ``.``, like the temporary files of ``kingrec.safefile``)
and other files are passed over, and so is a JSON file whose content shows it holds no
matches (a manifest beside the records): it is yielded as ``NotRecords``, with a sentence,
so that callers say what they skipped. A path given as a file is yielded as it is, whatever its
name, and whether or not it exists: opening it is the reader's work, and the reader reports
what is wrong with it. A directory that cannot be listed, or that holds no record file at
all, is yielded as a ``PathProblem`` with a sentence, and the walk goes on with the next.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import NamedTuple

__all__ = ["RECORD_SUFFIXES", "NotRecords", "PathProblem", "record_paths"]

RECORD_SUFFIXES = (".krec", ".jsonl", ".json", ".ndjson")


# NamedTuples: a frozen slotted dataclass cost some 4 M instructions to load, each.
class PathProblem(NamedTuple):
    """A path given that yields no record file: an unreadable or empty directory."""

    path: str
    message: str  # a sentence naming the path
    code: str = "UNREADABLE"


class NotRecords(NamedTuple):
    """A file of a directory walk passed over: named as a record file, but its content is not."""

    path: str
    message: str  # a sentence naming the path and what it holds instead


def record_paths(paths: Iterable[str]) -> Iterator[str | PathProblem | NotRecords]:
    """The record files ``paths`` mean, in order, with a ``PathProblem`` where one has none
    and a ``NotRecords`` for each file of a directory passed over for its content."""
    for path in paths:
        if path != "-" and os.path.isdir(path):
            yield from _directory(path)
        else:
            yield path


def _directory(top: str) -> Iterator[str | PathProblem | NotRecords]:
    found = False
    for item in _walk(top, set()):
        found = found or isinstance(item, str)
        yield item
    if not found:
        kinds = ", ".join(RECORD_SUFFIXES)
        yield PathProblem(top, f"{top}: no record files ({kinds}) in this directory")


def _walk(folder: str, seen: set[tuple[int, int]]) -> Iterator[str | PathProblem | NotRecords]:
    try:
        stat = os.stat(folder)
        if (stat.st_dev, stat.st_ino) in seen:  # a symbolic link back up the tree
            return
        seen.add((stat.st_dev, stat.st_ino))
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        yield PathProblem(folder, f"{folder}: cannot list: {exc.strerror or exc}")
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            is_dir = entry.is_dir()
            is_file = not is_dir and entry.is_file()
        except OSError as exc:
            yield PathProblem(entry.path, f"{entry.path}: cannot read: {exc.strerror or exc}")
            continue
        if is_dir:
            yield from _walk(entry.path, seen)
        elif is_file and entry.name.lower().endswith(RECORD_SUFFIXES):
            yield _judged(entry.path)


def _judged(path: str) -> str | NotRecords:
    """A JSON file of a walk, unless its start shows it holds no matches. A .krec file, and
    a file that cannot be opened here, are the reader's to judge and to report."""
    if path.lower().endswith(".krec"):
        return path
    from .jsonl.sniff import HEAD_BYTES, not_matches  # a walk of .krec files needs none of it

    try:
        with open(path, "rb") as file:
            head = file.read(HEAD_BYTES)
    except OSError:
        return path
    why = not_matches(head)
    return path if why is None else NotRecords(path, f"{path}: skipped: {why}")
