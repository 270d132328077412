"""Tests for the .krec container (kingrec.container)."""

from __future__ import annotations

import importlib
import io
import json
import os
import struct
import subprocess
import sys
import tracemalloc
import zlib
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kingrec import _frames_py
from kingrec.container import (
    FILE_HEADER_SIZE,
    FRAME_HEADER_SIZE,
    MAGIC,
    Frame,
    FrameDamage,
    FrameInfo,
    KrecWriter,
    is_krec,
    iter_matches,
    read_frames,
    reader,
)
from kingrec.errors import (
    LimitError,
    NotRecordFileError,
    RecordFileError,
    UnreadableFileError,
    UnsupportedVersionError,
)
from kingrec.findings import Location
from kingrec.limits import MAX_FRAME_BYTES
from kingrec.records import Damage, RecordFile, open_records
from kingrec.v1 import record_pb2 as pb


class ReadOnlyStream:
    """A non-seekable stream: exposes only read(), optionally in short pieces like a pipe."""

    def __init__(self, data: bytes, max_piece: int | None = None) -> None:
        self._inner = io.BytesIO(data)
        self._max_piece = max_piece

    def read(self, n: int = -1) -> bytes:
        if self._max_piece is not None and (n < 0 or n > self._max_piece):
            n = self._max_piece
        return self._inner.read(n)


def _payloads(n: int) -> list[bytes]:
    return [pb.Match(match_id=f"m{i}").SerializeToString() for i in range(n)]


def _container(payloads: list[bytes]) -> tuple[bytes, list[FrameInfo]]:
    buf = io.BytesIO()
    with KrecWriter(buf) as w:
        infos = [w.write(p) for p in payloads]
    return buf.getvalue(), infos


def _read(data: bytes) -> list[Frame | FrameDamage]:
    return list(read_frames(io.BytesIO(data)))


def _flip(data: bytes, pos: int) -> bytes:
    return data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1 :]


def _frames_only(items: list[Frame | FrameDamage]) -> list[Frame]:
    return [it for it in items if isinstance(it, Frame)]


def _damage_only(items: list[Frame | FrameDamage]) -> list[FrameDamage]:
    return [it for it in items if isinstance(it, FrameDamage)]


# --------------------------------------------------------------------------- round trips


def test_many_matches_round_trip_through_a_path(tmp_path: Path) -> None:
    path = tmp_path / "games.krec"
    with KrecWriter.open(path) as w:
        for i in range(500):
            w.write_match(pb.Match(match_id=f"m{i}"))
        assert w.frames_written == 500

    items = list(iter_matches(path))
    assert len(items) == 500
    for i, item in enumerate(items):
        assert not isinstance(item, FrameDamage)
        frame, match = item
        assert frame.index == i
        assert match.match_id == f"m{i}"
    assert os.listdir(tmp_path) == ["games.krec"]


def test_frames_round_trip_through_bytesio_with_matching_offsets() -> None:
    payloads = [*_payloads(300), b"", b"\x00" * 70_000]
    data, infos = _container(payloads)

    frames = _read(data)
    assert all(isinstance(f, Frame) for f in frames)
    assert [f.payload for f in _frames_only(frames)] == payloads
    assert [(f.index, f.offset) for f in frames] == [(i.index, i.offset) for i in infos]
    assert infos[0].offset == FILE_HEADER_SIZE
    assert infos[-1].crc32 == zlib.crc32(payloads[-1])
    assert len(data) == infos[-1].offset + FRAME_HEADER_SIZE + infos[-1].length


def test_file_layout_matches_the_documented_format() -> None:
    data, _ = _container([b"abc"])
    assert data[:8] == b"\x89KREC\r\n\x1a"
    assert struct.unpack("<HH", data[8:12]) == (1, 0)
    marker, length, crc, header_crc = struct.unpack("<4sIII", data[12:28])
    assert (marker, length, crc) == (b"KRF1", 3, zlib.crc32(b"abc"))
    assert header_crc == zlib.crc32(data[12:24])
    assert data[28:] == b"abc"


def test_file_with_only_a_header_has_no_frames(tmp_path: Path) -> None:
    path = tmp_path / "empty.krec"
    with KrecWriter.open(path):
        pass
    assert path.read_bytes() == MAGIC + b"\x01\x00\x00\x00"
    assert list(read_frames(path)) == []
    assert list(iter_matches(path)) == []


# --------------------------------------------------------------------------- truncation


def test_last_frame_cut_inside_its_header_is_reported_truncated() -> None:
    data, infos = _container(_payloads(5))
    cut = data[: infos[4].offset + 6]

    items = _read(cut)
    assert [f.payload for f in _frames_only(items)] == _payloads(4)
    assert items[-1] == FrameDamage(
        4,
        infos[4].offset,
        "truncated",
        f"the last frame (frame 4 at byte {infos[4].offset}) is truncated: 10 bytes of its "
        "16-byte frame header are missing",
    )


def test_last_frame_cut_inside_its_payload_is_reported_truncated_with_missing_bytes() -> None:
    payloads = [*_payloads(3), b"x" * 1000]
    data, infos = _container(payloads)
    cut = data[:-400]

    items = _read(cut)
    assert [f.payload for f in _frames_only(items)] == payloads[:3]
    damage = items[-1]
    assert isinstance(damage, FrameDamage)
    assert (damage.index, damage.offset, damage.kind) == (3, infos[3].offset, "truncated")
    assert "the last frame" in damage.message
    assert "400 bytes of its 1000-byte payload are missing" in damage.message


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=40), min_size=1, max_size=6),
    data=st.data(),
)
def test_any_truncation_keeps_every_complete_frame(
    payloads: list[bytes], data: st.DataObject
) -> None:
    full, infos = _container(payloads)
    cut_at = data.draw(st.integers(FILE_HEADER_SIZE, len(full)))
    items = _read(full[:cut_at])

    complete = [i for i in infos if i.offset + FRAME_HEADER_SIZE + i.length <= cut_at]
    assert [(f.index, f.payload) for f in _frames_only(items)] == [
        (i.index, payloads[i.index]) for i in complete
    ]
    damage = _damage_only(items)
    if cut_at in {i.offset for i in infos} or cut_at == len(full):
        assert damage == []
    else:
        assert len(damage) == 1
        assert damage[0].kind == "truncated"
        assert damage[0].index == len(complete)
        assert damage[0].offset == infos[len(complete)].offset


# --------------------------------------------------------------------------- corruption


def test_flipped_payload_byte_is_reported_and_later_frames_still_read() -> None:
    payloads = _payloads(6)
    data, infos = _container(payloads)
    bad = _flip(data, infos[3].offset + FRAME_HEADER_SIZE + 1)

    items = _read(bad)
    assert [(f.index, f.payload) for f in _frames_only(items)] == [
        (i, p) for i, p in enumerate(payloads) if i != 3
    ]
    (damage,) = _damage_only(items)
    skipped = infos[4].offset - infos[3].offset
    assert damage == FrameDamage(
        3,
        infos[3].offset,
        "corrupt",
        f"frame 3 at byte {infos[3].offset} is corrupt (payload checksum mismatch); "
        f"skipped {skipped} bytes to the next frame",
    )


def test_flipped_length_byte_resynchronises_on_the_next_frame() -> None:
    payloads = [b"a" * 50, b"b" * 5000, b"c" * 50, b"d" * 50]
    data, infos = _container(payloads)
    # Make frame 1 claim a far shorter payload: without resync the reader would
    # land in the middle of b"bbbb...".
    bad = _flip(data, infos[1].offset + 5)

    items = _read(bad)
    assert [(f.index, f.payload) for f in _frames_only(items)] == [
        (0, payloads[0]),
        (2, payloads[2]),
        (3, payloads[3]),
    ]
    (damage,) = _damage_only(items)
    assert (damage.index, damage.offset, damage.kind) == (1, infos[1].offset, "corrupt")
    assert "frame header checksum mismatch" in damage.message


def test_garbage_between_frames_is_skipped_and_later_frames_keep_their_offsets() -> None:
    payloads = _payloads(4)
    data, infos = _container(payloads)
    junk = b"KRF1" + b"\x00" * 12 + b"KR" + b"z" * 200_000  # fake marker, straddles chunks
    pos = infos[2].offset
    bad = data[:pos] + junk + data[pos:]

    items = _read(bad)
    assert [f.payload for f in _frames_only(items)] == payloads
    (damage,) = _damage_only(items)
    assert (damage.index, damage.offset, damage.kind) == (2, pos, "corrupt")
    assert f"skipped {len(junk)} bytes to the next frame" in damage.message
    frames = _frames_only(items)
    assert frames[2].index == 3
    assert frames[2].offset == pos + len(junk)


def test_trailing_garbage_is_reported_as_corrupt() -> None:
    payloads = _payloads(2)
    data, _ = _container(payloads)
    items = _read(data + b"\x00" * 100)

    assert [f.payload for f in _frames_only(items)] == payloads
    (damage,) = _damage_only(items)
    assert damage.kind == "corrupt"
    assert damage.offset == len(data)
    assert "no frame marker" in damage.message
    assert "skipped the remaining 100 bytes (no further frame found)" in damage.message


def test_oversized_length_is_corrupt_even_with_a_valid_header_checksum() -> None:
    head = struct.pack("<4sII", b"KRF1", MAX_FRAME_BYTES + 1, 0)
    forged = head + struct.pack("<I", zlib.crc32(head))
    data, _ = _container([])
    tail, _ = _container([b"after"])

    items = _read(data + forged + tail[FILE_HEADER_SIZE:])
    damage, frame = items
    assert isinstance(damage, FrameDamage)
    assert damage.kind == "corrupt"
    assert "impossible payload length" in damage.message
    assert isinstance(frame, Frame)
    assert (frame.index, frame.payload) == (1, b"after")


def test_frame_cut_short_by_appended_frames_is_corrupt_not_truncated() -> None:
    # A crashed write followed by more appended frames.
    data, _ = _container([b"first", b"y" * 1000])
    tail, _ = _container([b"appended"])
    bad = data[:-500] + tail[FILE_HEADER_SIZE:]

    items = _read(bad)
    assert [f.payload for f in _frames_only(items)] == [b"first", b"appended"]
    (damage,) = _damage_only(items)
    assert (damage.index, damage.kind) == (1, "corrupt")
    assert "the next frame starts inside its payload" in damage.message


@settings(max_examples=80, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=40), min_size=1, max_size=6),
    data=st.data(),
)
def test_any_flipped_byte_damages_exactly_one_frame(
    payloads: list[bytes], data: st.DataObject
) -> None:
    full, infos = _container(payloads)
    pos = data.draw(st.integers(FILE_HEADER_SIZE, len(full) - 1))
    hit = max(i.index for i in infos if i.offset <= pos)

    items = _read(_flip(full, pos))
    assert [(f.index, f.payload) for f in _frames_only(items)] == [
        (i, p) for i, p in enumerate(payloads) if i != hit
    ]
    (damage,) = _damage_only(items)
    assert (damage.index, damage.offset, damage.kind) == (hit, infos[hit].offset, "corrupt")


def test_valid_frame_that_is_not_a_match_is_reported_undecodable() -> None:
    data, infos = _container([_payloads(1)[0], b"\xff\xff\xff", _payloads(3)[2]])
    items = list(iter_matches(io.BytesIO(data)))

    assert len(items) == 3
    damage = items[1]
    assert isinstance(damage, FrameDamage)
    assert (damage.index, damage.offset, damage.kind) == (1, infos[1].offset, "undecodable")
    last = items[2]
    assert not isinstance(last, FrameDamage)
    assert last[1].match_id == "m2"


# --------------------------------------------------------------------------- file header


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "is empty"),
        (b'{"match_id": "m1"}\n{"match_id": "m2"}\n', "looks like JSON text"),
        (b"hello, this is a note\n", "looks like text"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 20, "gzip-compressed"),
        (b"\x89KREC\n\x1a\x01\x00\x00\x00", "text-mode transfer"),
        (b"KRF1" + b"\x00" * 20, "file header is missing"),
        (b"\x00\x01\x02\x03" * 4, "first bytes: 00 01 02 03"),
    ],
)
def test_wrong_magic_raises_not_a_record_file_saying_what_the_file_looks_like(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "input.krec"
    path.write_bytes(content)
    with pytest.raises(NotRecordFileError, match=expected) as info:
        list(read_frames(path))
    assert info.value.offset == 0
    assert info.value.code == "NOT_KREC"
    assert str(path) in str(info.value)


def test_newer_format_version_asks_the_user_to_upgrade() -> None:
    data = MAGIC + struct.pack("<HH", 2, 0)
    with pytest.raises(UnsupportedVersionError) as info:
        list(read_frames(io.BytesIO(data)))
    assert "written by a newer kingrec (format 2); this one reads format 1 — upgrade kingrec" in (
        str(info.value)
    )
    assert info.value.offset == 8
    assert info.value.code == "UNSUPPORTED_VERSION"
    assert isinstance(info.value, RecordFileError)


def test_unknown_header_flags_are_rejected() -> None:
    data = MAGIC + struct.pack("<HH", 1, 4)
    with pytest.raises(UnsupportedVersionError, match="flags 0x0004") as info:
        list(read_frames(io.BytesIO(data)))
    assert info.value.offset == 10


def test_cut_file_header_raises_unreadable_file_error() -> None:
    with pytest.raises(UnreadableFileError, match="only 10 of 12 bytes") as info:
        list(read_frames(io.BytesIO(MAGIC + b"\x01\x00")))
    assert (info.value.code, info.value.offset) == ("UNREADABLE", 10)


def test_format_version_zero_is_unreadable() -> None:
    with pytest.raises(UnreadableFileError, match="invalid format version 0") as info:
        list(read_frames(io.BytesIO(MAGIC + b"\x00\x00\x00\x00")))
    assert info.value.offset == 8


def test_is_krec_sniffs_the_signature() -> None:
    data, _ = _container([b"x"])
    assert is_krec(data)
    assert is_krec(data[:8])
    assert not is_krec(data[:7])
    assert not is_krec(b'{"match_id": "m1"}')
    assert not is_krec(b"")


# --------------------------------------------------------------------------- streams & memory


def test_reads_from_a_non_seekable_stream_delivering_short_pieces() -> None:
    payloads = [*_payloads(50), b"q" * 100_000]
    data, _ = _container(payloads)
    bad = _flip(data, len(data) - 10)
    data_items = list(read_frames(ReadOnlyStream(data, max_piece=7)))
    assert [f.payload for f in _frames_only(data_items)] == payloads

    items = list(iter_matches(ReadOnlyStream(bad)))
    assert len(items) == 51
    assert isinstance(items[-1], FrameDamage)


def test_reads_from_stdin_pipe() -> None:
    data, _ = _container(_payloads(1000))
    script = (
        "import sys\n"
        "from kingrec.container import iter_matches\n"
        "print(sum(1 for _ in iter_matches(sys.stdin.buffer)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], input=data, capture_output=True, check=True
    )
    assert out.stdout.strip() == b"1000"


def test_reading_a_large_file_uses_bounded_memory(tmp_path: Path) -> None:
    # The reader reads a chunk of about MAX_FRAME_BYTES at a time (so the frame loop runs
    # over many frames per call): its memory is a few chunks, whatever the file size.
    path = tmp_path / "big.krec"
    payload = pb.Match(match_id="m" * 2000).SerializeToString()
    with KrecWriter.open(path) as w:
        for _ in range(20_000):
            w.write(payload)
    size = path.stat().st_size
    bound = 8 * MAX_FRAME_BYTES

    tracemalloc.start()
    try:
        count = sum(1 for item in read_frames(path) if isinstance(item, Frame))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert count == 20_000
    assert size > 4 * bound
    assert peak < bound, f"peak {peak} bytes while reading a {size}-byte file"


# --------------------------------------------------------------------------- writer


def test_writer_leaves_no_file_when_the_with_block_raises(tmp_path: Path) -> None:
    path = tmp_path / "out.krec"
    with pytest.raises(RuntimeError), KrecWriter.open(path) as w:
        w.write_match(pb.Match(match_id="m1"))
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_failed_rewrite_keeps_the_previous_file_intact(tmp_path: Path) -> None:
    path = tmp_path / "out.krec"
    with KrecWriter.open(path) as w:
        w.write(b"old")
    before = path.read_bytes()

    with pytest.raises(RuntimeError), KrecWriter.open(str(path)) as w:
        w.write(b"new")
        raise RuntimeError("boom")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.krec"]


def test_writer_rejects_writes_after_close_and_oversized_payloads() -> None:
    sink = io.BytesIO()
    w = KrecWriter(sink)
    with pytest.raises(LimitError, match="MAX_FRAME_BYTES"):
        w.write(b"\x00" * (MAX_FRAME_BYTES + 1))
    assert sink.getvalue() == MAGIC + b"\x01\x00\x00\x00"  # nothing of it was written
    w.write(b"\x00" * MAX_FRAME_BYTES)  # the bound itself is allowed
    w.close()
    assert w.closed
    with pytest.raises(ValueError, match="closed"):
        w.write(b"x")


def test_writing_many_frames_at_once_writes_what_one_by_one_writes() -> None:
    payloads = [b"", b"x", bytes(range(256)) * 40, b"\x00" * 7]
    one, many = io.BytesIO(), io.BytesIO()
    single = KrecWriter(one)
    infos = [single.write(p) for p in payloads]
    batch = KrecWriter(many)
    batch.write_all(payloads[:2])
    batch.write_all(payloads[2:])
    batch.write_all([])
    assert many.getvalue() == one.getvalue()
    assert batch.frames_written == single.frames_written == 4
    assert batch.write(b"next").offset == single.write(b"next").offset
    assert [i.crc32 for i in infos] == [zlib.crc32(p) for p in payloads]


def test_many_frames_with_one_oversized_are_refused_before_any_is_written() -> None:
    sink = io.BytesIO()
    w = KrecWriter(sink)
    with pytest.raises(LimitError, match="MAX_FRAME_BYTES"):
        w.write_all([b"fine", b"\x00" * (MAX_FRAME_BYTES + 1)])
    assert sink.getvalue() == MAGIC + b"\x01\x00\x00\x00"
    assert w.frames_written == 0
    w.close()
    with pytest.raises(ValueError, match="closed"):
        w.write_all([b"x"])


# --------------------------------------------------------------------------- hostile input


def _reader_twins() -> list[object]:
    params: list[object] = [pytest.param(_frames_py.scan_frames, id="python")]
    try:
        compiled = importlib.import_module("kingrec._frames_c")
    except ImportError:
        params.append(pytest.param(None, id="cython", marks=pytest.mark.skip("not built")))
    else:
        params.append(pytest.param(compiled.scan_frames, id="cython"))
    return params


def _sound_header(length: int, payload_crc: int = 0) -> bytes:
    head = struct.pack("<4sII", b"KRF1", length, payload_crc)
    return head + struct.pack("<I", zlib.crc32(head))


def _reference_read(data: bytes, max_payload: int) -> list[tuple[object, ...]]:
    """What the reader reports, the slow obvious way: all input in memory, every candidate
    frame checksummed on its own, the next frame searched from one byte after a bad one."""

    def resync(start: int) -> int:
        at = data.find(b"KRF1", start)
        while 0 <= at <= len(data) - 16:
            _, length, _, header_crc = struct.unpack_from("<4sIII", data, at)
            if length <= max_payload and zlib.crc32(data[at : at + 12]) == header_crc:
                return at
            at = data.find(b"KRF1", at + 1)
        return -1

    out: list[tuple[object, ...]] = []
    pos, index = FILE_HEADER_SIZE, 0
    while pos < len(data):
        where = f"frame {index} at byte {pos}"
        if len(data) - pos < 16:
            if b"KRF1".startswith(data[pos : pos + 4]):
                missing = 16 - (len(data) - pos)
                message = f"{missing} bytes of its 16-byte frame header are missing"
                out.append(
                    ("truncated", index, pos, f"the last frame ({where}) is truncated: {message}")
                )
                break
            reason = "no frame marker where a frame should start"
        else:
            marker, length, payload_crc, header_crc = struct.unpack_from("<4sIII", data, pos)
            stop = pos + 16 + length
            if marker != b"KRF1":
                reason = "no frame marker where a frame should start"
            elif zlib.crc32(data[pos : pos + 12]) != header_crc:
                reason = "frame header checksum mismatch"
            elif length > max_payload:
                reason = f"impossible payload length of {length} bytes"
            elif stop > len(data):
                found = resync(pos + 1)
                if found < 0:
                    message = f"{stop - len(data)} bytes of its {length}-byte payload are missing"
                    out.append(
                        (
                            "truncated",
                            index,
                            pos,
                            f"the last frame ({where}) is truncated: {message}",
                        )
                    )
                    break
                message = f"skipped {found - pos} bytes to the next frame"
                out.append(
                    (
                        "corrupt",
                        index,
                        pos,
                        f"{where} is corrupt (the next frame starts inside its payload); {message}",
                    )
                )
                pos, index = found, index + 1
                continue
            elif zlib.crc32(data[pos + 16 : stop]) == payload_crc:
                out.append(("frame", index, pos, data[pos + 16 : stop]))
                pos, index = stop, index + 1
                continue
            else:
                reason = "payload checksum mismatch"
        found = resync(pos + 1)
        if found < 0:
            tail = f"skipped the remaining {len(data) - pos} bytes (no further frame found)"
        else:
            tail = f"skipped {found - pos} bytes to the next frame"
        out.append(("corrupt", index, pos, f"{where} is corrupt ({reason}); {tail}"))
        if found < 0:
            break
        pos, index = found, index + 1
    return out


def _reports(items: Iterable[Frame | FrameDamage]) -> list[tuple[object, ...]]:
    return [
        ("frame", it.index, it.offset, it.payload)
        if isinstance(it, Frame)
        else (it.kind, it.index, it.offset, it.message)
        for it in items
    ]


_SMALL_MAX = 300  # the frame bound while the reader runs with tiny buffers

_hostile_segments = st.one_of(
    st.binary(max_size=60).map(lambda p: _sound_header(len(p), zlib.crc32(p)) + p),
    st.tuples(st.integers(0, 400), st.integers(0, 2**32 - 1)).map(lambda t: _sound_header(*t)),
    st.binary(max_size=60).map(lambda p: (_sound_header(len(p), zlib.crc32(p)) + p)[: len(p) // 2]),
    st.sampled_from([b"KRF1", b"KR", b"K", b"RF1", b"\x00" * 16, _sound_header(2**32 - 1)]),
    st.binary(max_size=40),
)


@pytest.mark.parametrize("scan", _reader_twins())
@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(_hostile_segments, max_size=25),
    piece=st.integers(1, 40),
    data=st.data(),
)
def test_any_input_is_read_as_the_reference_reading_reads_it(
    scan: object, parts: list[bytes], piece: int, data: st.DataObject
) -> None:
    # A tiny chunk (so a buffer slid down and grown all the time), tiny prefix-sum steps and
    # reads of a few bytes make a few hundred bytes cross every boundary the reader has;
    # overlapping claims of sound headers come from the segments.
    full = MAGIC + b"\x01\x00\x00\x00" + b"".join(parts)
    content = full[: data.draw(st.integers(FILE_HEADER_SIZE, len(full)))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reader, "_scan_frames", scan)
        patch.setattr(reader, "_CHUNK", 64)
        patch.setattr(reader, "_SUM_STEP", 8)
        patch.setattr(reader, "MAX_FRAME_BYTES", _SMALL_MAX)
        got = _reports(read_frames(ReadOnlyStream(content, max_piece=piece)))
    assert got == _reference_read(content, _SMALL_MAX)


def test_frames_written_inside_a_bad_frames_claimed_payload_are_read() -> None:
    # A crashed write (header and part of a long payload) followed by appended frames that
    # all lie within the length the bad header claims.
    payloads = [bytes([i]) * (i * 7) for i in range(1, 40)]
    head, _ = _container([b"first"])
    tail, _ = _container(payloads)
    claim = len(tail) + 500
    crashed = _sound_header(claim, zlib.crc32(b"z" * claim)) + b"z" * 100
    data = head + crashed + tail[FILE_HEADER_SIZE:] + b"z" * 600

    items = _read(data)
    assert [f.payload for f in _frames_only(items)] == [b"first", *payloads]
    first_damage, trailing = _damage_only(items)
    assert first_damage.message == (
        f"frame 1 at byte {len(head)} is corrupt (payload checksum mismatch); "
        f"skipped {len(crashed)} bytes to the next frame"
    )
    assert "no further frame found" in trailing.message
    assert _reports(items) == _reference_read(data, MAX_FRAME_BYTES)


MiB = 1 << 20


def _resync_bomb(size: int) -> bytes:
    """A well-formed frame header every 16 bytes, each claiming the rest of the file."""
    out = bytearray(MAGIC + b"\x01\x00\x00\x00")
    while len(out) + FRAME_HEADER_SIZE <= size:
        out += _sound_header(size - len(out) - FRAME_HEADER_SIZE)
    return bytes(out.ljust(size, b"\x00"))


def _marker_garbage(size: int) -> bytes:
    """Garbage with a frame marker every few bytes (and never a sound header)."""
    pattern = b"KRF1\x00KRF1\x07\x07KRF1\xff\xfe\xfdKRF1KRF1"
    return (MAGIC + b"\x01\x00\x00\x00" + pattern * (size // len(pattern)))[:size]


def _four_gigabyte_claims(size: int) -> bytes:
    """Sound frame headers back to back, each claiming a payload of 4 GB."""
    header = _sound_header(2**32 - 1)
    return (MAGIC + b"\x01\x00\x00\x00" + header * (size // FRAME_HEADER_SIZE))[:size]


def _long_claims_around_small_frames(size: int) -> bytes:
    """Bad headers claiming half a MiB, each followed by a small intact frame."""
    unit = _sound_header(MiB // 2) + _sound_header(1, zlib.crc32(b"x")) + b"x"
    return (MAGIC + b"\x01\x00\x00\x00" + unit * (size // len(unit)))[:size]


_HOSTILE = {
    "resync-bomb-1MiB": (_resync_bomb, MiB, 65535),
    "resync-bomb-2MiB": (_resync_bomb, 2 * MiB, 65537),
    "marker-garbage-1MiB": (_marker_garbage, MiB, 1),
    # Cheap to read, so bigger than the reader's memory may grow.
    "4GB-claims-8MiB": (_four_gigabyte_claims, 8 * MiB, 1),
    "long-claims-1MiB": (_long_claims_around_small_frames, MiB, 63549),
}

# Reads each file named on the command line ("-": standard input) and prints, per file, the
# reports and the CPU seconds, then the RSS before and after all the reading.
_HOSTILE_READER = """
import json, resource, sys, time
from kingrec import container
from kingrec.container import reader

def peak_kib():
    # VmHWM, not ru_maxrss: a child's ru_maxrss counts the RSS of the parent it came from.
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
    except OSError:  # no /proc: ru_maxrss is the best there is (KiB; bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak // 1024 if sys.platform == "darwin" else peak

before = peak_kib()
for path in sys.argv[1:]:
    start = time.process_time()
    items = sum(1 for _ in container.read_frames(sys.stdin.buffer if path == "-" else path))
    print(json.dumps({"file": path, "items": items, "cpu": time.process_time() - start}))
after = peak_kib()
print(json.dumps({"loop": reader._scan_frames.__module__, "before": before, "after": after}))
"""


@pytest.fixture(scope="module")
def hostile_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for name, (make, size, _) in _HOSTILE.items():
        paths[name] = folder / f"{name}.krec"
        paths[name].write_bytes(make(size))
    return paths


class _HostileReading:
    """A child process reading hostile files (or standard input) with one frame loop."""

    def __init__(self, paths: list[Path], pure: bool, stdin: Path | None = None) -> None:
        args = ["-"] if stdin is not None else [str(p) for p in paths]
        with open(stdin or os.devnull, "rb") as source:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _HOSTILE_READER, *args],
                env={**os.environ, "KINGREC_PURE_PYTHON": "1" if pure else ""},
                stdin=source,
                stdout=subprocess.PIPE,
                text=True,
            )

    def results(self) -> tuple[dict[str, dict[str, float]], str, int]:
        """Per file its reports and CPU seconds; the frame loop; how far the RSS rose (KiB)."""
        out, _ = self._process.communicate()
        assert self._process.returncode == 0
        *files, summary = (json.loads(line) for line in out.splitlines())
        growth = int(summary["after"]) - int(summary["before"])
        return {f["file"]: f for f in files}, summary["loop"], growth


def test_hostile_files_are_read_in_linear_time_and_bounded_memory(
    hostile_files: dict[str, Path],
) -> None:
    loops = {"kingrec._frames_py": True}
    if any(Path(_frames_py.__file__).parent.glob("_frames_c*")):
        loops["kingrec._frames_c"] = False
    # Both twins at once (the test machine has two cores); each child times its own CPU.
    readings = {
        loop: _HostileReading(list(hostile_files.values()), pure) for loop, pure in loops.items()
    }
    for loop, reading in readings.items():
        files, used, growth_kib = reading.results()
        assert used == loop
        for name, path in hostile_files.items():
            _, size, reports = _HOSTILE[name]
            got = files[str(path)]
            assert got["items"] == reports, (loop, name)
            # The old reader took 19 s for the 1 MiB bomb and 100 s for the 2 MiB one.
            assert got["cpu"] < 2.0 * size / MiB, f"{loop}, {name}: {got['cpu']:.2f} s of CPU"
        assert growth_kib * 1024 < 6 * MAX_FRAME_BYTES, f"{loop}: RSS grew by {growth_kib} KiB"


def test_a_resync_bomb_on_standard_input_is_read_in_linear_time(
    hostile_files: dict[str, Path],
) -> None:
    bomb = hostile_files["resync-bomb-2MiB"]
    files, _, growth_kib = _HostileReading([], pure=False, stdin=bomb).results()

    assert files["-"]["items"] == _HOSTILE["resync-bomb-2MiB"][2]
    assert files["-"]["cpu"] < 4.0
    assert growth_kib * 1024 < 6 * MAX_FRAME_BYTES, f"RSS grew by {growth_kib} KiB"


# --------------------------------------------------------------------------- frames in bulk


def _record_file(data: bytes, name: str = "games.krec") -> RecordFile:
    return RecordFile(name, io.BytesIO(data), len(data))


def test_frame_batches_hold_batch_items_each_in_file_order_with_damage_in_place() -> None:
    payloads = _payloads(40)
    data, infos = _container(payloads)
    bad = _flip(data, infos[17].offset + FRAME_HEADER_SIZE)

    batches = list(_record_file(bad).raw_frame_batches(batch=7))

    assert [len(b) for b in batches] == [7, 7, 7, 7, 7, 5]
    items = [item for b in batches for item in b]
    assert items == list(_record_file(bad).raw_frames())
    damage = items[17]
    assert isinstance(damage, Damage)
    assert (damage.code, damage.location) == (
        "FRAME_CORRUPT",
        Location("games.krec", 17, infos[17].offset),
    )
    intact = [item for item in items if not isinstance(item, Damage)]
    assert [(loc.frame, loc.offset, p) for loc, p in intact] == [
        (i.index, i.offset, payloads[i.index]) for i in infos if i.index != 17
    ]


def test_a_truncated_last_frame_ends_the_last_batch() -> None:
    data, infos = _container(_payloads(3))
    batches = list(_record_file(data[:-2]).raw_frame_batches(batch=256))

    assert len(batches) == 1
    *frames, last = batches[0]
    assert len(frames) == 2
    assert isinstance(last, Damage) and last.code == "FRAME_TRUNCATED"
    assert last.location.offset == infos[2].offset


def test_frame_batches_refuse_json_lines_and_a_batch_below_one() -> None:
    with pytest.raises(RecordFileError, match="JSON Lines"):
        next(_record_file(b'{"format_version": 1}\n', "x.jsonl").raw_frame_batches())
    data, _ = _container(_payloads(1))
    with pytest.raises(ValueError, match="batch"):
        next(_record_file(data).raw_frame_batches(batch=0))


def test_record_files_raise_the_error_classes_of_kingrec_errors(tmp_path: Path) -> None:
    with (
        pytest.raises(UnreadableFileError, match="cannot open") as missing,
        open_records(str(tmp_path / "missing.krec")),
    ):
        pass
    assert missing.value.code == "UNREADABLE"
    with pytest.raises(NotRecordFileError) as text:
        next(_record_file(b"hello, this is a note\n").raw_frames())
    assert text.value.code == "NOT_KREC"
    with pytest.raises(UnsupportedVersionError):
        next(_record_file(MAGIC + struct.pack("<HH", 9, 0)).raw_frames())
