# cython: language_level=3
# CPython's random.Random in C: the Mersenne Twister of _randommodule.c and the random
# module's algorithms the simulator uses (_randbelow, random, gauss, normalvariate), with the
# same libm calls in the same order, so a stream taken over from ``getstate()`` continues
# exactly as Python's would (the simulator twins must give byte-identical matches).

from libc.math cimport cos, log, sin, sqrt
from libc.stdint cimport uint32_t

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline int kmt_bit_length(unsigned int x) {
        unsigned long i; if (!x) return 0; _BitScanReverse(&i, x); return (int)i + 1;
    }
    #else
    static inline int kmt_bit_length(unsigned int x) { return x ? 32 - __builtin_clz(x) : 0; }
    #endif
    """
    int bit_length "kmt_bit_length"(unsigned int x) nogil

cdef enum:
    MT_N = 624
    MT_M = 397


ctypedef struct MT:
    uint32_t state[MT_N]
    int index
    bint has_gauss
    double gauss_next
    double nv_magicconst  # random.NV_MAGICCONST, taken with the state
    double twopi  # random.TWOPI


cdef inline int mt_load(MT* mt, object state) except -1:
    """Take over a ``random.Random().getstate()``."""
    from random import NV_MAGICCONST, TWOPI

    mt.nv_magicconst = NV_MAGICCONST
    mt.twopi = TWOPI
    version, internal, gauss_next = state
    if version != 3 or len(internal) != MT_N + 1:
        raise ValueError("unsupported random.Random state")
    cdef int i
    for i in range(MT_N):
        mt.state[i] = <uint32_t>internal[i]
    mt.index = internal[MT_N]
    mt.has_gauss = gauss_next is not None
    mt.gauss_next = gauss_next if gauss_next is not None else 0.0
    return 0


cdef inline uint32_t genrand(MT* mt) noexcept nogil:
    """``genrand_uint32`` of CPython's ``_randommodule.c``."""
    cdef uint32_t y
    cdef uint32_t* s = mt.state
    cdef int kk
    if mt.index >= MT_N:
        for kk in range(MT_N - MT_M):
            y = (s[kk] & 0x80000000U) | (s[kk + 1] & 0x7FFFFFFFU)
            s[kk] = s[kk + MT_M] ^ (y >> 1) ^ (0x9908B0DFU if y & 1 else 0U)
        for kk in range(MT_N - MT_M, MT_N - 1):
            y = (s[kk] & 0x80000000U) | (s[kk + 1] & 0x7FFFFFFFU)
            s[kk] = s[kk + (MT_M - MT_N)] ^ (y >> 1) ^ (0x9908B0DFU if y & 1 else 0U)
        y = (s[MT_N - 1] & 0x80000000U) | (s[0] & 0x7FFFFFFFU)
        s[MT_N - 1] = s[MT_M - 1] ^ (y >> 1) ^ (0x9908B0DFU if y & 1 else 0U)
        mt.index = 0
    y = s[mt.index]
    mt.index += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680U
    y ^= (y << 15) & 0xEFC60000U
    y ^= y >> 18
    return y


cdef inline double rnd(MT* mt) noexcept nogil:
    """``Random.random()``."""
    cdef uint32_t a = genrand(mt) >> 5
    cdef uint32_t b = genrand(mt) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


cdef inline int randbelow(MT* mt, int n) noexcept nogil:
    """``Random._randbelow(n)`` for 0 < n < 2**31 (``_randbelow_with_getrandbits``)."""
    cdef int k = bit_length(<unsigned int>n)
    cdef uint32_t r = genrand(mt) >> (32 - k)
    while r >= <uint32_t>n:
        r = genrand(mt) >> (32 - k)
    return <int>r


cdef inline double normalvariate(MT* mt, double mu, double sigma) noexcept nogil:
    cdef double u1, u2, z, zz
    while True:
        u1 = rnd(mt)
        u2 = 1.0 - rnd(mt)
        z = mt.nv_magicconst * (u1 - 0.5) / u2
        zz = z * z / 4.0
        if zz <= -log(u2):
            break
    return mu + z * sigma


cdef inline double gauss(MT* mt, double mu, double sigma) noexcept nogil:
    cdef double z, x2pi, g2rad
    if mt.has_gauss:
        z = mt.gauss_next
        mt.has_gauss = False
    else:
        x2pi = rnd(mt) * mt.twopi
        g2rad = sqrt(-2.0 * log(1.0 - rnd(mt)))
        z = cos(x2pi) * g2rad
        mt.gauss_next = sin(x2pi) * g2rad
        mt.has_gauss = True
    return mu + z * sigma
