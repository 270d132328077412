"""``kingrec.paths.record_paths``: which record files a list of paths means."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kingrec.paths import NotRecords, PathProblem, record_paths


def _touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def test_files_are_yielded_as_given_whatever_their_name_and_whether_or_not_they_exist(
    tmp_path: Path,
) -> None:
    given = [str(tmp_path / "notes.txt"), "-", str(tmp_path / "missing.krec")]
    assert list(record_paths(given)) == given


def test_a_directory_means_its_record_files_below_it_in_name_order(tmp_path: Path) -> None:
    _touch(tmp_path, "b.krec", "a.jsonl", "c.json", "d.ndjson", "e.txt", "Z.KREC", "sub/x.krec")
    _touch(tmp_path, "sub/deeper/y.jsonl", ".hidden.krec", ".git/z.krec", ".m.krec.kingrec-1.tmp")
    found = [Path(str(p)).relative_to(tmp_path).as_posix() for p in record_paths([str(tmp_path)])]
    assert found == ["Z.KREC", "a.jsonl", "b.krec", "c.json", "d.ndjson", "sub/deeper/y.jsonl",
                     "sub/x.krec"]  # fmt: skip


def test_order_of_the_arguments_is_kept(tmp_path: Path) -> None:
    _touch(tmp_path, "d/a.krec", "d/b.krec", "c.krec")
    paths = [str(tmp_path / "c.krec"), str(tmp_path / "d"), str(tmp_path / "c.krec")]
    assert list(record_paths(paths)) == [paths[0], str(tmp_path / "d" / "a.krec"),
                                         str(tmp_path / "d" / "b.krec"), paths[0]]  # fmt: skip


def test_a_directory_without_record_files_is_a_problem_and_the_walk_goes_on(
    tmp_path: Path,
) -> None:
    _touch(tmp_path, "empty/readme.txt", "full/a.krec")
    items = list(record_paths([str(tmp_path / "empty"), str(tmp_path / "full")]))
    assert isinstance(items[0], PathProblem)
    assert items[0].path == str(tmp_path / "empty")
    assert "no record files" in items[0].message and str(tmp_path / "empty") in items[0].message
    assert items[1:] == [str(tmp_path / "full" / "a.krec")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_an_unreadable_directory_is_a_problem(tmp_path: Path) -> None:  # pragma: no cover
    _touch(tmp_path, "locked/a.krec", "open/b.krec")
    (tmp_path / "locked").chmod(0)
    try:
        items = list(record_paths([str(tmp_path)]))
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert isinstance(items[0], PathProblem) and "cannot list" in items[0].message
    assert items[1] == str(tmp_path / "open" / "b.krec")


def test_a_link_back_up_the_tree_is_followed_once(tmp_path: Path) -> None:
    _touch(tmp_path, "a/x.krec")
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a")
    assert list(record_paths([str(tmp_path / "a")])) == [str(tmp_path / "a" / "x.krec")]


MATCH = b'{"format_version": 1, "match_id": "m1", "deals": []}\n'


@pytest.mark.parametrize(
    ("content", "skipped"),
    [
        (b'{\n "samples": [{"file": "valid/classic.krec"}]\n}\n', True),  # the manifest
        (b'\xef\xbb\xbf  [ {"name": "x"}, {"match_id": "m"} ]', True),
        (b"{}", True),
        (MATCH, False),
        (b'[{"matchId": "m1"}]', False),  # protobuf's JSON names
        (b'{"_unknown": "CAE="}', False),
        (b"", False),  # no records, but nothing to skip: the reader counts the file
        (b'this line is damaged\n{"match_id": "m2"}\n', False),  # the reader reports it
        (b'{"samples": [' + b"[" * 100_000, False),  # cut off or too deep: cannot be told
        (b"[" * 100_000 + b"{}" + b"]" * 100_000, False),
    ],
)
def test_a_json_file_of_a_directory_is_judged_by_its_first_object(
    tmp_path: Path, content: bytes, skipped: bool
) -> None:
    (tmp_path / "a.json").write_bytes(content)
    (tmp_path / "b.jsonl").write_bytes(MATCH)
    items = list(record_paths([str(tmp_path)]))
    assert items[1:] == [str(tmp_path / "b.jsonl")]
    if skipped:
        assert isinstance(items[0], NotRecords) and items[0].path == str(tmp_path / "a.json")
        assert items[0].message.startswith(f"{tmp_path / 'a.json'}: skipped: not match records")
    else:
        assert items[0] == str(tmp_path / "a.json")


def test_a_json_file_given_by_name_is_taken_whatever_it_holds(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_bytes(b'{"samples": []}')
    assert list(record_paths([str(tmp_path / "manifest.json")])) == [
        str(tmp_path / "manifest.json")
    ]


def test_a_directory_whose_only_json_holds_no_matches_says_so_twice(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b'{"port": 50051}')
    items = list(record_paths([str(tmp_path)]))
    assert [type(i) for i in items] == [NotRecords, PathProblem]
    assert isinstance(items[0], NotRecords) and '"port"' in items[0].message


def test_a_hostile_key_is_written_escaped(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_bytes(b'{"\\u001b[2J": 1}')
    (item,) = list(record_paths([str(tmp_path)]))[:1]
    assert isinstance(item, NotRecords) and "\x1b" not in item.message and "\\u001b" in item.message
