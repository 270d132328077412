# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The frame loop of the ``.krec`` reader, compiled: the fast twin of ``kingrec._frames_py``.

``scan_frames`` takes the same arguments and gives the same results as the reference; read
that file for what it does. Here the headers are read and checked in C, with no Python
object per frame but the payload handed back. ``walk_headers`` and ``find_frame`` read under
the SIGBUS guard (``_busguard.pxd``): ``kingrec.judges`` hands them ranges of a file mapped
in memory, and a page gone under them (the file cut short) raises OSError instead of ending
the process.

The checksum is the format's CRC-32 (zlib's: IEEE, reflected, polynomial 0xEDB88320). A
header is judged by ``_framing.pxd`` (shared with the batch checker); a payload goes to
``kingrec.checksum.crc32`` on the payload bytes the scan hands back anyway: ISA-L's folding
CRC where installed (over 20 GB/s on 5 KB payloads on the benchmark machine), else
zlib's (2.1 GB/s, which beat a slice-by-8 table in C at 1.3), and calling it needs no
headers at build time.
"""

import errno

from kingrec.checksum import crc32

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.string cimport memchr

from kingrec._busguard cimport guarded
from kingrec._framing cimport FRAME_HEADER as HEADER_SIZE, header_sound, whole_frame
from kingrec._framing cimport le32 as _le32

__all__ = ["find_frame", "scan_frames", "walk_headers"]

cdef object _payload_crc = crc32


def scan_frames(buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t max_payload):
    """The intact frames of ``buf[start:end]`` in a row: see ``_frames_py.scan_frames``."""
    cdef Py_buffer view
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)  # any contiguous buffer, as bytes
    try:
        return _scan(<const unsigned char*>view.buf, view.len, start, end, max_payload)
    finally:
        PyBuffer_Release(&view)


cdef tuple _scan(const unsigned char* data, Py_ssize_t size, Py_ssize_t start, Py_ssize_t end,
                 Py_ssize_t max_payload):
    _refuse_outside("scan_frames", start, end, size, max_payload)
    cdef list payloads = []
    cdef list offsets = []
    cdef Py_ssize_t pos = start, length
    cdef bytes payload
    while True:
        length = whole_frame(data, pos, end, max_payload)
        if length < 0:
            break
        payload = PyBytes_FromStringAndSize(<const char*>data + pos + HEADER_SIZE, length)
        if _payload_crc(payload) != _le32(data + pos + 8):
            break
        payloads.append(payload)
        offsets.append(pos)
        pos += HEADER_SIZE + length
    return payloads, offsets, pos


def walk_headers(buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t bound, Py_ssize_t max_payload,
                 Py_ssize_t limit):
    """The sound frame headers of ``buf`` in a row: see ``_frames_py.walk_headers``.

    ``buf`` may be a file mapped in memory: a page of it gone under the walk (the file cut
    short meanwhile) raises ``OSError`` (``_gone``) instead of ending the process."""
    cdef Py_buffer view
    cdef _Span span
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        _refuse_outside("walk_headers", start, end, view.len, max_payload)
        span = _Span(<const unsigned char*>view.buf, start, end, bound, max_payload, limit,
                     start, 0, False)
        if guarded(_walk, &span) == -2:
            _gone("walk_headers")
        return span.frames, span.pos, span.sound
    finally:
        PyBuffer_Release(&view)


# A walk over a buffer: its bounds, then what it found (read only when it ran to its end:
# after a SIGBUS the walk's progress is dropped, so none of it needs to be volatile).
cdef struct _Span:
    const unsigned char* data
    Py_ssize_t start, end, bound, max_payload, limit
    Py_ssize_t pos, frames
    bint sound


cdef int _walk(void* run) except -1:
    cdef _Span* s = <_Span*>run
    cdef const unsigned char* data = s.data
    cdef Py_ssize_t pos = s.start, frames = 0
    cdef const unsigned char* head
    cdef size_t length
    s.sound = True
    while pos - s.start < s.limit and s.end - pos >= HEADER_SIZE:
        head = data + pos
        length = _le32(head + 4)
        if (not header_sound(head, s.max_payload)
                or s.bound - pos - HEADER_SIZE < <Py_ssize_t>length):
            s.sound = False
            break
        pos += HEADER_SIZE + <Py_ssize_t>length
        frames += 1
    s.frames, s.pos = frames, pos
    return 0


def find_frame(buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t bound, Py_ssize_t max_payload,
               Py_ssize_t limit):
    """The first sound frame header at or after ``start``: see ``_frames_py.find_frame``.

    ``buf`` may be a file mapped in memory, as for ``walk_headers``."""
    cdef Py_buffer view
    cdef _Span span
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        _refuse_outside("find_frame", start, end, view.len, max_payload)
        span = _Span(<const unsigned char*>view.buf, start, end, bound, max_payload, limit,
                     -1, 0, False)
        if guarded(_find, &span) == -2:
            _gone("find_frame")
        return span.pos
    finally:
        PyBuffer_Release(&view)


cdef int _find(void* run) except -1:
    # Each candidate is a "K" found by memchr: a stretch of bad headers (or of marker bytes)
    # costs a header checksum per marker, never a payload's.
    cdef _Span* s = <_Span*>run
    cdef const unsigned char* data = s.data
    cdef Py_ssize_t last = s.end - HEADER_SIZE + 1  # the candidates are < last
    cdef Py_ssize_t at = s.start
    cdef const unsigned char* hit
    if s.limit < last - s.start:
        last = s.start + s.limit
    while at < last:
        hit = <const unsigned char*>memchr(data + at, 0x4B, last - at)  # b"K"
        if hit == NULL:
            break
        at = hit - data
        if (header_sound(hit, s.max_payload)
                and s.bound - at - HEADER_SIZE >= <Py_ssize_t>_le32(hit + 4)):
            s.pos = at
            break
        at += 1
    return 0


cdef int _gone(str name) except -1:
    """A walk stopped by a SIGBUS: the mapped file lost pages under it."""
    raise OSError(errno.EFAULT, f"{name}: the buffer lost pages under the walk "
                                "(a file mapped in memory, cut short meanwhile)")


cdef int _refuse_outside(str name, Py_ssize_t start, Py_ssize_t end, Py_ssize_t size,
                         Py_ssize_t max_payload) except -1:
    """A walk's span must lie in its buffer of ``size`` bytes: see ``_frames_py``."""
    if not (0 <= start <= end <= size) or max_payload < 0:
        raise ValueError(
            f"{name}: need 0 <= start <= end <= {size} and max_payload >= 0, "
            f"got start={start}, end={end}, max_payload={max_payload}"
        )
    return 0
