"""The frame loop twins (``kingrec._frames_py``, ``kingrec._frames_c``): same results, any input."""

from __future__ import annotations

import functools
import importlib
import itertools
import os
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kingrec
from kingrec import _frames_py
from kingrec.checksum import crc32

PACKAGE = Path(kingrec.__file__).resolve().parent
Scan = Callable[[bytes | bytearray | memoryview, int, int, int], tuple[list[bytes], list[int], int]]


def _compiled() -> ModuleType | None:
    try:
        return importlib.import_module("kingrec._frames_c")
    except ImportError:
        return None


COMPILED = _compiled()


def _compiled_expected() -> bool:
    """CI says so, or a built extension sits next to the package."""
    if os.environ.get("KINGREC_REQUIRE_COMPILED", "") not in ("", "0"):
        return True
    return any(PACKAGE.glob("_frames_c*.so")) or any(PACKAGE.glob("_frames_c*.pyd"))


def _twins() -> list[object]:
    params: list[object] = [pytest.param(_frames_py.scan_frames, id="python")]
    if COMPILED is None:
        params.append(pytest.param(None, id="cython", marks=pytest.mark.skip("not built")))
    else:
        params.append(pytest.param(COMPILED.scan_frames, id="cython"))
    return params


@pytest.fixture(params=_twins())
def scan(request: pytest.FixtureRequest) -> Scan:
    """A ``scan_frames`` twin: the pure-Python reference or the compiled one."""
    return request.param  # type: ignore[no-any-return]


def _header(length: int, payload_crc: int) -> bytes:
    head = struct.pack("<4sII", b"KRF1", length, payload_crc)
    return head + struct.pack("<I", zlib.crc32(head))


def _frame(payload: bytes) -> bytes:
    return _header(len(payload), zlib.crc32(payload)) + payload


MAX = 1000


# -- what one scan takes -------------------------------------------------------------------


def test_consecutive_intact_frames_are_taken_with_their_offsets(scan: Scan) -> None:
    payloads = [b"", b"a", b"bc" * 40, bytes(range(256))]
    buf = b"".join(_frame(p) for p in payloads)

    got, offsets, stop = scan(buf, 0, len(buf), MAX)

    assert got == payloads
    assert all(type(p) is bytes for p in got)
    assert offsets == [0, 16, 33, 129]
    assert stop == len(buf)


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(b"KRF2" + _frame(b"xyz")[4:], id="no-marker"),
        pytest.param(_frame(b"xyz")[:13] + b"\x00" + _frame(b"xyz")[14:], id="header-crc"),
        pytest.param(_header(3, zlib.crc32(b"xyz") ^ 1) + b"xyz", id="payload-crc"),
        pytest.param(_header(MAX + 1, 0) + b"\x00" * (MAX + 1), id="over-max-payload"),
        pytest.param(_header(0xFFFFFFFF, 0), id="4-GB-length"),
    ],
)
def test_the_scan_stops_at_a_bad_frame(scan: Scan, bad: bytes) -> None:
    good = _frame(b"first") + _frame(b"second")
    buf = good + bad + _frame(b"after")
    assert scan(buf, 0, len(buf), MAX) == ([b"first", b"second"], [0, 21], len(good))


@pytest.mark.parametrize("kept", [0, 1, 4, 15, 16, 17, 24])
def test_the_scan_stops_before_a_frame_that_end_cuts(scan: Scan, kept: int) -> None:
    good = _frame(b"first") + _frame(b"second")
    buf = good + _frame(b"third one")  # 25 bytes
    end = len(good) + kept
    assert scan(buf, 0, end, MAX) == ([b"first", b"second"], [0, 21], len(good))


def test_a_payload_of_exactly_max_payload_is_taken_and_one_byte_more_is_not(scan: Scan) -> None:
    exact, over = _frame(b"m" * MAX), _frame(b"m" * (MAX + 1))
    assert scan(exact, 0, len(exact), MAX) == ([b"m" * MAX], [0], len(exact))
    assert scan(over, 0, len(over), MAX) == ([], [], 0)


def test_the_scan_runs_from_start_to_end_and_reports_buffer_offsets(scan: Scan) -> None:
    junk = b"\xffjunk\x00"
    buf = junk + _frame(b"one") + _frame(b"two") + _frame(b"three")
    two_end = len(junk) + 19 + 19

    got, offsets, stop = scan(buf, len(junk), two_end, MAX)

    assert (got, offsets, stop) == ([b"one", b"two"], [len(junk), len(junk) + 19], two_end)
    assert scan(buf, 0, len(buf), MAX) == ([], [], 0)  # the junk is no frame
    assert scan(buf, len(buf), len(buf), MAX) == ([], [], len(buf))


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_bytes_bytearray_and_memoryview_buffers_give_the_same_result(
    scan: Scan, kind: Callable[[bytes], bytes | bytearray | memoryview]
) -> None:
    data = _frame(b"one") + _frame(b"two") + b"\x00" * 5
    assert scan(kind(data), 0, len(data), MAX) == ([b"one", b"two"], [0, 19], 38)


@pytest.mark.parametrize(
    ("start", "end", "max_payload"),
    [(-1, 10, MAX), (5, 4, MAX), (0, 39, MAX), (0, 10, -1)],
)
def test_arguments_outside_the_buffer_are_refused(
    scan: Scan, start: int, end: int, max_payload: int
) -> None:
    data = _frame(b"one") + _frame(b"two")
    with pytest.raises(ValueError, match="scan_frames"):
        scan(data, start, end, max_payload)


# -- the twins agree -----------------------------------------------------------------------

_segments = st.one_of(
    st.binary(max_size=80).map(_frame),
    st.binary(max_size=80).map(lambda p: _frame(p)[:-1] + b"\x00" if p else b"KRF1"),
    st.tuples(st.integers(0, 2 * MAX), st.integers(0, 2**32 - 1)).map(lambda t: _header(*t)),
    st.binary(max_size=40),
    st.sampled_from([b"KRF1", b"KR", b"\x00" * 16, _header(0xFFFFFFFF, 0)]),
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_segments, max_size=12), data=st.data())
def test_the_twins_agree_on_any_buffer(parts: list[bytes], data: st.DataObject) -> None:
    if COMPILED is None:
        pytest.skip("the compiled twin is not built")
    buf = b"".join(parts)
    end = data.draw(st.integers(0, len(buf)))
    starts = [at for at in itertools.accumulate(map(len, parts), initial=0) if at <= end]
    start = data.draw(st.sampled_from(starts) | st.integers(0, end))
    max_payload = data.draw(st.sampled_from([0, 40, MAX, 2**31]))

    reference = _frames_py.scan_frames(buf, start, end, max_payload)
    assert COMPILED.scan_frames(bytearray(buf), start, end, max_payload) == reference
    payloads, offsets, stop = reference
    assert start <= stop <= end
    assert offsets == sorted(offsets) and all(start <= at < stop for at in offsets)
    assert [buf[at + 16 : at + 16 + len(p)] for at, p in zip(offsets, payloads, strict=True)] == (
        payloads
    )


# -- walking headers only (kingrec.judges cuts a file into spans with it) ------------------

Walk = Callable[[bytes | bytearray | memoryview, int, int, int, int, int], tuple[int, int, bool]]


def _walk_twins() -> list[object]:
    params: list[object] = [pytest.param(_frames_py.walk_headers, id="python")]
    if COMPILED is None:
        params.append(pytest.param(None, id="cython", marks=pytest.mark.skip("not built")))
    else:
        params.append(pytest.param(COMPILED.walk_headers, id="cython"))
    return params


@pytest.fixture(params=_walk_twins())
def walk(request: pytest.FixtureRequest) -> Walk:
    """A ``walk_headers`` twin."""
    return request.param  # type: ignore[no-any-return]


def test_the_walk_takes_sound_headers_without_reading_payloads(walk: Walk) -> None:
    # The second payload's checksum is wrong: the walk does not look at payloads.
    bad_payload = _header(3, zlib.crc32(b"xyz") ^ 1) + b"xyz"
    buf = _frame(b"first") + bad_payload + _frame(b"")
    assert walk(buf, 0, len(buf), len(buf), MAX, 10**9) == (3, len(buf), True)


def test_the_walk_stops_at_an_unsound_header_and_says_so(walk: Walk) -> None:
    good = _frame(b"first")
    buf = good + b"KRF2" + _frame(b"xyz")[4:]
    assert walk(buf, 0, len(buf), len(buf), MAX, 10**9) == (1, len(good), False)


def test_a_payload_running_past_the_bound_stops_the_walk_but_past_the_buffer_does_not(
    walk: Walk,
) -> None:
    buf = _frame(b"first") + _frame(b"second")
    head_only = len(_frame(b"first")) + 16  # the second header, none of its payload
    # The buffer ends inside the payload, the file (bound) does not: taken, for want of bytes.
    assert walk(buf[:head_only], 0, head_only, len(buf), MAX, 10**9) == (2, len(buf), True)
    # The file ends inside the payload: the frame runs past the end.
    assert walk(buf, 0, len(buf), len(buf) - 1, MAX, 10**9) == (1, len(_frame(b"first")), False)


def test_the_walk_stops_at_the_first_frame_boundary_past_the_limit(walk: Walk) -> None:
    buf = b"".join(_frame(bytes(10)) for _ in range(5))  # frames of 26 bytes
    assert walk(buf, 0, len(buf), len(buf), MAX, 27) == (2, 52, True)
    assert walk(buf, 26, len(buf), len(buf), MAX, 26) == (1, 52, True)
    assert walk(buf, 0, 10, len(buf), MAX, 10**9) == (0, 0, True)  # a header cut by end
    assert walk(buf, 0, 30, len(buf), MAX, 10**9) == (1, 26, True)  # the next one cut


def test_walk_arguments_outside_the_buffer_are_refused(walk: Walk) -> None:
    with pytest.raises(ValueError, match="walk_headers"):
        walk(b"x" * 10, 0, 11, 11, MAX, 1)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_segments, max_size=12), data=st.data())
def test_the_walk_twins_agree_and_walk_where_the_scan_takes_frames(
    parts: list[bytes], data: st.DataObject
) -> None:
    buf = b"".join(parts)
    end = data.draw(st.integers(0, len(buf)))
    starts = [at for at in itertools.accumulate(map(len, parts), initial=0) if at <= end]
    start = data.draw(st.sampled_from(starts) | st.integers(0, end))
    bound = data.draw(st.sampled_from([end, len(buf), len(buf) + 100]) | st.integers(0, 10**4))
    max_payload = data.draw(st.sampled_from([0, 40, MAX, 2**31]))
    limit = data.draw(st.sampled_from([10**9, 1]) | st.integers(-5, 300))

    reference = _frames_py.walk_headers(buf, start, end, bound, max_payload, limit)
    if COMPILED is not None:
        assert COMPILED.walk_headers(bytearray(buf), start, end, bound, max_payload, limit) == (
            reference
        )
    frames, stop, _ = reference
    # Every frame the scan takes whole within the buffer, the walk takes too, in the same
    # places (the walk may go on past a bad payload checksum: it does not read payloads).
    scan_end = max(start, min(end, bound))
    payloads, _, scan_stop = _frames_py.scan_frames(buf, start, scan_end, max_payload)
    if limit >= len(buf) + 1:
        assert frames >= len(payloads) and stop >= scan_stop


# -- finding the first frame at or after an offset (a --jobs worker syncs with it) ---------

Find = Callable[[bytes | bytearray | memoryview, int, int, int, int, int], int]


def _find_twins() -> list[object]:
    params: list[object] = [pytest.param(_frames_py.find_frame, id="python")]
    if COMPILED is None:
        params.append(pytest.param(None, id="cython", marks=pytest.mark.skip("not built")))
    else:
        params.append(pytest.param(COMPILED.find_frame, id="cython"))
    return params


@pytest.fixture(params=_find_twins())
def find(request: pytest.FixtureRequest) -> Find:
    """A ``find_frame`` twin."""
    return request.param  # type: ignore[no-any-return]


def test_the_first_sound_header_at_or_after_start_is_found(find: Find) -> None:
    first, second = _frame(b"first"), _frame(b"second")
    buf = first + second
    n = len(buf)
    assert find(buf, 0, n, n, MAX, n) == 0
    assert find(buf, 1, n, n, MAX, n) == len(first)
    assert find(buf, len(first) + 1, n, n, MAX, n) == -1


def test_marker_bytes_bad_headers_and_frames_past_the_bound_are_passed_over(find: Find) -> None:
    junk = b"KRF1KRF1" + b"KRF2" + _frame(b"xyz")[:13] + b"\x00" + _frame(b"xyz")[14:]
    over = _header(MAX + 1, 0) + b"\x00" * 4
    buf = junk + over + _frame(b"found")
    n = len(buf)
    assert find(buf, 0, n, n, MAX, n) == len(junk) + len(over)
    # A sound header whose payload runs past the bound (the file's end) is no frame.
    assert find(buf, 0, n, n - 1, MAX, n) == -1
    # Past the buffer but not the bound it is: the buffer need only hold the header.
    assert find(buf, 0, n - 2, n, MAX, n) == len(junk) + len(over)
    # The payload's checksum is not read.
    bad_payload = _header(3, zlib.crc32(b"xyz") ^ 1) + b"xyz"
    assert find(b"\x00" + bad_payload, 0, 20, 20, MAX, 20) == 1


def test_a_frame_inside_a_payload_is_found_as_a_frame(find: Find) -> None:
    """The sync cannot tell header-shaped bytes in a payload from a frame: the caller must
    check that what it took follows on from the frames before."""
    inner = _frame(b"looks like a frame")
    buf = _frame(b"<" + inner + b">")
    n = len(buf)
    assert find(buf, 1, n, n, MAX, n) == 16 + 1


def test_only_headers_starting_before_the_limit_are_found(find: Find) -> None:
    buf = b"\x00" * 5 + _frame(b"a")
    n = len(buf)
    assert find(buf, 0, n, n, MAX, 5) == -1
    assert find(buf, 0, n, n, MAX, 6) == 5
    assert find(buf, 2, n, n, MAX, 3) == -1
    assert find(buf, 2, n, n, MAX, 4) == 5
    assert find(buf, 0, n, n, MAX, -3) == -1
    assert find(buf, 0, n, n, MAX, 10**9) == 5


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_find_takes_any_buffer(find: Find, kind: Callable[[bytes], bytes]) -> None:
    data = b"\xff" * 3 + _frame(b"one")
    n = len(data)
    assert find(kind(data), 0, n, n, MAX, n) == 3
    assert find(memoryview(data)[1:], 0, n - 1, n - 1, MAX, n) == 2


def test_find_arguments_outside_the_buffer_are_refused(find: Find) -> None:
    with pytest.raises(ValueError, match="find_frame"):
        find(b"x" * 10, 0, 11, 11, MAX, 11)
    with pytest.raises(ValueError, match="find_frame"):
        find(b"x" * 10, 5, 4, 11, MAX, 11)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_segments, max_size=12), data=st.data())
def test_the_find_twins_agree_and_find_the_first_frame_the_walk_would_take(
    parts: list[bytes], data: st.DataObject
) -> None:
    buf = b"".join(parts)
    end = data.draw(st.integers(0, len(buf)))
    start = data.draw(st.integers(0, end))
    bound = data.draw(st.sampled_from([end, len(buf), len(buf) + 100]) | st.integers(0, 10**4))
    limit = data.draw(st.sampled_from([10**9, end - start, 0]) | st.integers(-5, len(buf) + 5))
    max_payload = data.draw(st.sampled_from([0, 40, MAX, 2**31]))

    reference = _frames_py.find_frame(buf, start, end, bound, max_payload, limit)
    if COMPILED is not None:
        got = COMPILED.find_frame(bytearray(buf), start, end, bound, max_payload, limit)
        assert got == reference
    # Brute force: the first offset from which the walk takes a frame.
    walk = _frames_py.walk_headers
    expected = next(
        (
            at
            for at in range(start, min(start + limit, end))
            if walk(buf, at, end, bound, max_payload, 1)[:2] != (0, at)
        ),
        -1,
    )
    assert reference == expected


def test_the_format_crc32_is_zlibs_on_any_bytes_and_buffer() -> None:
    for size in (0, 1, 15, 16, 63, 64, 65, 4976, 70_001):
        data = bytes((i * 131 + size) & 0xFF for i in range(size))
        assert crc32(data) == zlib.crc32(data)
        assert crc32(memoryview(bytearray(data))[1:]) == zlib.crc32(data[1:])
        assert crc32(data, 0x1234) == zlib.crc32(data, 0x1234)


# -- which twin the reader uses --------------------------------------------------------------


def _loop_in_subprocess(**env: str) -> str:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from kingrec.container import reader; print(reader._scan_frames.__module__)",
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def test_the_reader_uses_the_compiled_loop_when_it_is_built() -> None:
    if not _compiled_expected():
        pytest.skip("no compiled frame loop is built and KINGREC_REQUIRE_COMPILED is not set")
    assert _loop_in_subprocess(KINGREC_PURE_PYTHON="") == "kingrec._frames_c"
    assert _loop_in_subprocess(KINGREC_PURE_PYTHON="0") == "kingrec._frames_c"


def test_the_pure_python_switch_forces_the_reference_loop() -> None:
    assert _loop_in_subprocess(KINGREC_PURE_PYTHON="1") == "kingrec._frames_py"


# -- judging frames where they lie (the batch checker, kingrec.judges) ---------------------


@functools.cache
def _matches() -> list[bytes]:
    """Real records: clean ones of two rulesets, and one with a finding."""
    from kingrec.rules import PRESETS
    from kingrec.simulate import simulate_match

    clean = [simulate_match(PRESETS[name], 4).SerializeToString() for name in ("classic", "short")]
    broken = simulate_match(PRESETS["classic"], 5)
    broken.deals[2].plays = bytes(reversed(broken.deals[2].plays))
    return [*clean, broken.SerializeToString()]


def test_a_mapped_file_cut_short_under_the_walk_or_the_sync_raises_oserror(
    tmp_path: Path,
) -> None:
    """The compiled walk and sync read a mapped file under the SIGBUS guard: pages gone (the
    file cut short after it was mapped) raise OSError, and this process lives on; before
    the cut they walk and find as over the same bytes in a buffer."""
    import mmap

    if COMPILED is None:
        pytest.skip("the compiled frame loop is not built")
    frame = _frame(b"p" * 3000)
    data = frame * 40  # some 30 pages of headers to walk
    path = tmp_path / "cut.krec"
    path.write_bytes(data)
    n, big = len(data), 1 << 20
    with open(path, "rb") as f, mmap.mmap(f.fileno(), n, access=mmap.ACCESS_READ) as mapping:
        assert COMPILED.walk_headers(mapping, 0, n, n, big, n) == (40, n, True)
        assert COMPILED.find_frame(mapping, 1, n, n, big, n) == len(frame)
        os.truncate(path, 4096)
        with pytest.raises(OSError, match="walk_headers: the buffer lost pages"):
            COMPILED.walk_headers(mapping, 0, n, n, big, n)
        with pytest.raises(OSError, match="find_frame: the buffer lost pages"):
            COMPILED.find_frame(mapping, 8192, n, n, big, n)
        # The pages still there are read as before.
        assert COMPILED.walk_headers(mapping, 0, n, n, big, 4096) == (2, 2 * len(frame), True)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(_segments | st.integers(0, 2).map(lambda i: _frame(_matches()[i])), max_size=12),
    data=st.data(),
)
def test_frames_judged_where_they_lie_are_the_frames_the_scan_takes_judged(
    parts: list[bytes], data: st.DataObject
) -> None:
    """``check_frames`` is ``scan_frames`` (up to ``max_frames`` frames) then ``check_run``
    of the payloads it took: the same stop, offsets, verdicts and keys."""
    from kingrec.fastcheck import checker_of

    checker = checker_of()
    if checker is None:
        pytest.skip("the compiled checker is not built")
    buf = b"".join(parts)
    end = data.draw(st.integers(0, len(buf)))
    starts = [at for at in itertools.accumulate(map(len, parts), initial=0) if at <= end]
    start = data.draw(st.sampled_from(starts) | st.integers(0, end))
    max_payload = data.draw(st.sampled_from([0, 40, 1 << 20]))
    max_frames = data.draw(st.integers(0, 13))
    # The payloads' checksum in C (where libdeflate is found) or by a call to
    # kingrec.checksum.crc32 (the fallback): the same frames either way.
    in_c = data.draw(st.booleans())

    payloads, offsets, stop = _frames_py.scan_frames(buf, start, end, max_payload)
    if len(offsets) > max_frames:
        stop, payloads, offsets = offsets[max_frames], payloads[:max_frames], offsets[:max_frames]
    clean, deals, dirty, keys = checker.check_run(payloads)
    was = _fastcheck_c().use_crc_in_c(in_c)
    try:
        got = checker.check_frames(bytearray(buf), start, end, max_payload, max_frames)
    finally:
        _fastcheck_c().use_crc_in_c(was)
    assert got[0] == stop
    assert list(memoryview(got[1]).cast("Q")) == offsets
    assert got[2:] == (clean, deals, dirty, [payloads[i] for i in dirty], keys)


def _fastcheck_c() -> ModuleType:
    return importlib.import_module("kingrec._fastcheck_c")


def test_check_frames_checksums_payloads_in_c_with_the_formats_crc() -> None:
    """Where libdeflate is found, ``check_frames`` checksums each payload in C: a frame is
    taken when its payload's CRC-32 is kingrec.checksum.crc32's, at any length (the vector
    loop and its tail), and stops at the first whose payload differs by one bit."""
    from kingrec.fastcheck import checker_of

    checker = checker_of()
    if checker is None:
        pytest.skip("the compiled checker is not built")
    module = _fastcheck_c()
    if not module.crc_in_c():
        pytest.skip("no libdeflate here: payloads are checksummed by kingrec.checksum.crc32")
    payloads = [os.urandom(n) for n in (0, 1, 15, 16, 17, 63, 64, 65, 255, 1000, 5000, 70000)]
    buf = bytearray(b"".join(_header(len(p), crc32(p)) + p for p in payloads))
    assert checker.check_frames(buf, 0, len(buf), 1 << 20, 100)[0] == len(buf)
    flipped = 16 * 11 + sum(map(len, payloads[:10])) + 2500  # a bit of the 5000-byte one's
    buf[flipped] ^= 0x10
    stop = checker.check_frames(buf, 0, len(buf), 1 << 20, 100)[0]
    assert stop == 16 * 10 + sum(map(len, payloads[:10]))


def test_check_run_unkeyed_judges_alike_and_keys_nothing() -> None:
    """The store keys records by sha256: its judge asks ``check_run`` for no content keys."""
    from kingrec.fastcheck import checker_of

    checker = checker_of()
    if checker is None:
        pytest.skip("the compiled checker is not built")
    payloads = [*_matches(), *_matches()]
    clean, deals, dirty, keys = checker.check_run(payloads)
    assert (clean, deals, dirty) == checker.check_run(payloads, False)[:3]
    assert dirty and clean and len(keys) == 8 * clean
    assert checker.check_run(payloads, False)[3] == b""


def test_check_frames_refuses_arguments_outside_the_buffer() -> None:
    from kingrec.fastcheck import checker_of

    checker = checker_of()
    if checker is None:
        pytest.skip("the compiled checker is not built")
    for start, end, max_payload, frames in [
        (-1, 0, 9, 1),
        (0, 9, 9, 1),
        (2, 1, 9, 1),
        (0, 0, -1, 1),
        (0, 0, 9, -1),
    ]:
        with pytest.raises(ValueError, match="check_frames: need"):
            checker.check_frames(bytearray(8), start, end, max_payload, frames)
