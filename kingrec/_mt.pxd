# cython: language_level=3, cdivision=True
# CPython's random.Random in C: the Mersenne Twister of _randommodule.c and the random
# module's algorithms the simulator uses (_randbelow, random, gauss, normalvariate), with the
# same libm calls in the same order, so a stream taken over from ``getstate()`` continues
# exactly as Python's would (the simulator twins must give byte-identical matches).

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.math cimport cos, log, sin, sqrt
from libc.stdint cimport uint32_t

cdef extern from *:
    """
    #include <string.h>
    /* init_genrand and init_by_array of CPython's _randommodule.c, as they are there. */
    static void kmt_init_genrand(uint32_t *mt, uint32_t s) {
        int mti;
        mt[0] = s;
        for (mti = 1; mti < 624; mti++) {
            mt[mti] = (1812433253U * (mt[mti - 1] ^ (mt[mti - 1] >> 30)) + (uint32_t)mti);
        }
    }
    /* init_genrand(19650218), where every init_by_array starts: computed once. */
    static uint32_t kmt_base[624];
    static int kmt_base_ready = 0;
    static void kmt_init_by_array(uint32_t *mt, const uint32_t *init_key, size_t key_length) {
        size_t i, j, k;
        if (!kmt_base_ready) {
            kmt_init_genrand(kmt_base, 19650218U);
            kmt_base_ready = 1;
        }
        memcpy(mt, kmt_base, sizeof kmt_base);
        i = 1; j = 0;
        k = (624 > key_length ? 624 : key_length);
        for (; k; k--) {
            mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525U))
                    + init_key[j] + (uint32_t)j;
            i++; j++;
            if (i >= 624) { mt[0] = mt[623]; i = 1; }
            if (j >= key_length) j = 0;
        }
        for (k = 623; k; k--) {
            mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;
            i++;
            if (i >= 624) { mt[0] = mt[623]; i = 1; }
        }
        mt[0] = 0x80000000U;
    }
    /* kmt_init_by_array of two generators at once, for keys of at most 624 words (so both
       first loops run 624 times and the two walk the state in step): one chain of
       multiplications each, interleaved, so the processor runs them side by side (each
       alone is a chain of dependent operations; seeding a match's two streams was 5% of its
       instructions, one after the other). */
    static void kmt_init_by_arrays(uint32_t *a, const uint32_t *ka, size_t na,
                                   uint32_t *b, const uint32_t *kb, size_t nb) {
        size_t i, ja, jb, k;
        if (!kmt_base_ready) {
            kmt_init_genrand(kmt_base, 19650218U);
            kmt_base_ready = 1;
        }
        memcpy(a, kmt_base, sizeof kmt_base);
        memcpy(b, kmt_base, sizeof kmt_base);
        i = 1; ja = 0; jb = 0;
        for (k = 624; k; k--) {
            a[i] = (a[i] ^ ((a[i - 1] ^ (a[i - 1] >> 30)) * 1664525U)) + ka[ja] + (uint32_t)ja;
            b[i] = (b[i] ^ ((b[i - 1] ^ (b[i - 1] >> 30)) * 1664525U)) + kb[jb] + (uint32_t)jb;
            i++; ja++; jb++;
            if (i >= 624) { a[0] = a[623]; b[0] = b[623]; i = 1; }
            if (ja >= na) ja = 0;
            if (jb >= nb) jb = 0;
        }
        for (k = 623; k; k--) {
            a[i] = (a[i] ^ ((a[i - 1] ^ (a[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;
            b[i] = (b[i] ^ ((b[i - 1] ^ (b[i - 1] >> 30)) * 1566083941U)) - (uint32_t)i;
            i++;
            if (i >= 624) { a[0] = a[623]; b[0] = b[623]; i = 1; }
        }
        a[0] = 0x80000000U;
        b[0] = 0x80000000U;
    }
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
    void init_by_array "kmt_init_by_array"(uint32_t* mt, const uint32_t* key, size_t n) nogil
    void init_by_arrays "kmt_init_by_arrays"(
        uint32_t* a, const uint32_t* ka, size_t na, uint32_t* b, const uint32_t* kb, size_t nb
    ) nogil

cdef enum:
    MT_N = 624
    MT_M = 397


ctypedef struct MT:
    uint32_t state[MT_N]
    uint32_t out[MT_N]  # the state's words tempered: what genrand returns, in order
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
    if version != 3 or len(internal) != MT_N + 1 or not 0 <= internal[MT_N] <= MT_N:
        raise ValueError("unsupported random.Random state")
    cdef int i
    for i in range(MT_N):
        mt.state[i] = <uint32_t>internal[i]
    mt.index = internal[MT_N]
    if mt.index < MT_N:  # taken over partway: the words left are drawn from out
        temper_all(mt)
    mt.has_gauss = gauss_next is not None
    mt.gauss_next = gauss_next if gauss_next is not None else 0.0
    return 0


cdef inline uint32_t* seed_key(object seed, Py_ssize_t* nwords) except NULL:
    """The key ``random_seed`` of _randommodule.c makes of an int ``seed``: the 32-bit words
    of abs(seed), least significant first (at least one). PyMem_Free it."""
    cdef const unsigned char* b
    cdef uint32_t* key
    cdef Py_ssize_t i
    n = abs(seed)
    nwords[0] = max(1, (n.bit_length() + 31) // 32)
    raw = n.to_bytes(4 * nwords[0], "little")
    b = raw
    key = <uint32_t*>PyMem_Malloc(nwords[0] * sizeof(uint32_t))
    if key == NULL:
        raise MemoryError()
    for i in range(nwords[0]):
        key[i] = (<uint32_t>b[4 * i] | <uint32_t>b[4 * i + 1] << 8
                  | <uint32_t>b[4 * i + 2] << 16 | <uint32_t>b[4 * i + 3] << 24)
    return key


cdef inline void seeded(MT* mt, const MT* like) noexcept nogil:
    """The rest of a freshly seeded generator: no word drawn, no gauss kept, the random
    module's constants taken from ``like`` (an MT that ``mt_load`` filled)."""
    mt.index = MT_N
    mt.has_gauss = False
    mt.gauss_next = 0.0
    mt.nv_magicconst = like.nv_magicconst
    mt.twopi = like.twopi


cdef inline int mt_seed(MT* mt, object seed, const MT* like) except -1:
    """``random.Random(seed)`` for an int ``seed``: ``random_seed`` of _randommodule.c, the
    key of ``seed_key`` through ``init_by_array``. (A str seed is an int to Python too:
    ``_sim_c.seed_of_str``.)"""
    cdef Py_ssize_t nwords
    cdef uint32_t* key = seed_key(seed, &nwords)
    init_by_array(mt.state, key, nwords)
    PyMem_Free(key)
    seeded(mt, like)
    return 0


cdef inline int mt_seed_pair(MT* a, object seed_a, MT* b, object seed_b,
                             const MT* like) except -1:
    """``mt_seed(a, seed_a, like)`` and ``mt_seed(b, seed_b, like)``, the two seeded in one
    interleaved pass when both keys fit the state's 624 words, one after the other when
    not (the think-time clock's seed holds the match seed's digits: past some 2,400 digits
    its key is longer)."""
    cdef Py_ssize_t na, nb
    cdef uint32_t* ka = seed_key(seed_a, &na)
    cdef uint32_t* kb
    try:
        kb = seed_key(seed_b, &nb)
    except BaseException:
        PyMem_Free(ka)
        raise
    if na <= MT_N and nb <= MT_N:
        init_by_arrays(a.state, ka, na, b.state, kb, nb)
    else:
        init_by_array(a.state, ka, na)
        init_by_array(b.state, kb, nb)
    PyMem_Free(ka)
    PyMem_Free(kb)
    seeded(a, like)
    seeded(b, like)
    return 0


cdef inline void temper_all(MT* mt) noexcept nogil:
    """``out``: every word of the state tempered, as ``genrand_uint32`` tempers the word it
    returns. One loop without a branch, which the compiler turns into vector instructions:
    tempering a word at each draw was a quarter of the simulator's instructions."""
    cdef uint32_t y
    cdef int kk
    for kk in range(MT_N):
        y = mt.state[kk]
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680U
        y ^= (y << 15) & 0xEFC60000U
        y ^= y >> 18
        mt.out[kk] = y


cdef inline void twist(MT* mt) noexcept nogil:
    """The state's next 624 words (``genrand_uint32`` of CPython's ``_randommodule.c`` when
    its words are used up), tempered into ``out``; the branch on a word's low bit is a mask,
    so these loops are vectorized too."""
    cdef uint32_t y
    cdef uint32_t* s = mt.state
    cdef int kk
    for kk in range(MT_N - MT_M):
        y = (s[kk] & 0x80000000U) | (s[kk + 1] & 0x7FFFFFFFU)
        s[kk] = s[kk + MT_M] ^ (y >> 1) ^ ((0U - (y & 1U)) & 0x9908B0DFU)
    for kk in range(MT_N - MT_M, MT_N - 1):
        y = (s[kk] & 0x80000000U) | (s[kk + 1] & 0x7FFFFFFFU)
        s[kk] = s[kk + (MT_M - MT_N)] ^ (y >> 1) ^ ((0U - (y & 1U)) & 0x9908B0DFU)
    y = (s[MT_N - 1] & 0x80000000U) | (s[0] & 0x7FFFFFFFU)
    s[MT_N - 1] = s[MT_M - 1] ^ (y >> 1) ^ ((0U - (y & 1U)) & 0x9908B0DFU)
    temper_all(mt)
    mt.index = 0


cdef inline uint32_t genrand(MT* mt) noexcept nogil:
    """``genrand_uint32`` of CPython's ``_randommodule.c``: the next tempered word."""
    if mt.index >= MT_N:
        twist(mt)
    mt.index += 1
    return mt.out[mt.index - 1]


cdef inline double rnd(MT* mt) noexcept nogil:
    """``Random.random()``: two words, read in one step when both are left (one test of
    the index, not two: most of a simulated deal's words are drawn here)."""
    cdef uint32_t a, b
    if mt.index <= MT_N - 2:
        a = mt.out[mt.index] >> 5
        b = mt.out[mt.index + 1] >> 6
        mt.index += 2
    else:
        a = genrand(mt) >> 5
        b = genrand(mt) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


cdef inline int randbelow(MT* mt, int n) noexcept nogil:
    """``Random._randbelow(n)`` for 0 < n < 2**31 (``_randbelow_with_getrandbits``)."""
    cdef int k = bit_length(<unsigned int>n)
    cdef uint32_t r = genrand(mt) >> (32 - k)
    while r >= <uint32_t>n:
        r = genrand(mt) >> (32 - k)
    return <int>r


cdef inline bint nv_accepts(double zz, double u2) noexcept nogil:
    """``zz <= -log(u2)`` (u2 in (0, 1]), as Python's normalvariate tests it, calling libm
    only when ``zz`` is within 2**-40 of the bounds on -log(u2) with t = 1 - u2:
    2t/(1+u2) <= -log(u2) <= t(1+u2)/(2 u2). The margin dwarfs the few roundings of the
    products and the error of libm's log (under one ulp), so outside it the answer is the
    one log would give; nine draws in ten are settled without it (log was 6% of a
    simulated deal's instructions)."""
    cdef double t = 1.0 - u2
    if zz * (1.0 + u2) <= 2.0 * t * (1.0 - 9.094947017729282e-13):
        return True
    if zz * (2.0 * u2) > t * (1.0 + u2) * (1.0 + 9.094947017729282e-13):
        return False
    return zz <= -log(u2)


cdef inline double normalvariate(MT* mt, double mu, double sigma) noexcept nogil:
    """``Random.normalvariate`` (Kinderman and Monahan's ratio of uniforms)."""
    cdef double u1, u2, z, zz
    while True:
        u1 = rnd(mt)
        u2 = 1.0 - rnd(mt)
        z = mt.nv_magicconst * (u1 - 0.5) / u2
        zz = z * z / 4.0
        if nv_accepts(zz, u2):
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
