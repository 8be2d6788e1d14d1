// SHA-256's compression function (FIPS 180-4) for FormSyncModel.SHA256: in C because Swift's
// version ran at about 90 MB/s (a 2 KB order's once-means-once digest took 10 µs of its
// enqueue) and x86's SHA extensions hash at well over 1 GB/s.

#include "formsync_sha256.h"

#include <stdatomic.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

void formsync_sha256_blocks_portable(uint32_t state[8], const uint8_t *data, size_t blocks) {
    uint32_t w[64];
    while (blocks--) {
        for (int i = 0; i < 16; i++) {
            const uint8_t *p = data + 4 * i;
            w[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
        }
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int i = 0; i < 64; i++) {
            uint32_t t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
            uint32_t t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
            h = g; g = f; f = e; e = d + t1;
            d = c; c = b; b = a; a = t1 + t2;
        }
        state[0] += a; state[1] += b; state[2] += c; state[3] += d;
        state[4] += e; state[5] += f; state[6] += g; state[7] += h;
        data += 64;
    }
}

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#include <cpuid.h>
#include <immintrin.h>

#define FORMSYNC_SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

// Four rounds on words already scheduled (m0 holds this quarter's words).
#define PLAIN_QUARTER(m0, i)                                          \
    msg = _mm_add_epi32(m0, _mm_loadu_si128((const __m128i *)&K[i])); \
    state1 = _mm_sha256rnds2_epu32(state1, state0, msg);             \
    msg = _mm_shuffle_epi32(msg, 0x0E);                               \
    state0 = _mm_sha256rnds2_epu32(state0, state1, msg);

// Four rounds that also finish a later quarter's words, m1 (rounds 12 to 59).
#define FINISHING_QUARTER(m0, m1, m3, i)  \
    PLAIN_QUARTER(m0, i)                  \
    tmp = _mm_alignr_epi8(m0, m3, 4);     \
    m1 = _mm_add_epi32(m1, tmp);          \
    m1 = _mm_sha256msg2_epu32(m1, m0);

// Four rounds that finish m1 and start m3 (rounds 12 to 51; Intel's SHA extensions guide).
#define QUARTER(m0, m1, m3, i)          \
    FINISHING_QUARTER(m0, m1, m3, i)    \
    m3 = _mm_sha256msg1_epu32(m3, m0);

FORMSYNC_SHA_TARGET
static void sha256_blocks_shani(uint32_t state[8], const uint8_t *data, size_t blocks) {
    const __m128i byteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i msg, tmp;

    // The instructions want the state as ABEF and CDGH.
    tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1);
    __m128i state1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0x1B);
    __m128i state0 = _mm_alignr_epi8(tmp, state1, 8);
    state1 = _mm_blend_epi16(state1, tmp, 0xF0);

    while (blocks--) {
        const __m128i abefSaved = state0, cdghSaved = state1;

        // The message schedule's four registers, m[q % 4] holding quarter q's words.
        __m128i m[4];
        for (int q = 0; q < 4; q++) m[q] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * q)), byteSwap);
        PLAIN_QUARTER(m[0], 0)
        PLAIN_QUARTER(m[1], 4)
        m[0] = _mm_sha256msg1_epu32(m[0], m[1]);
        PLAIN_QUARTER(m[2], 8)
        m[1] = _mm_sha256msg1_epu32(m[1], m[2]);
        for (int q = 3; q < 13; q++) {
            QUARTER(m[q % 4], m[(q + 1) % 4], m[(q + 3) % 4], 4 * q)
        }
        FINISHING_QUARTER(m[1], m[2], m[0], 52)
        FINISHING_QUARTER(m[2], m[3], m[1], 56)
        PLAIN_QUARTER(m[3], 60)

        state0 = _mm_add_epi32(state0, abefSaved);
        state1 = _mm_add_epi32(state1, cdghSaved);
        data += 64;
    }

    tmp = _mm_shuffle_epi32(state0, 0x1B);
    state1 = _mm_shuffle_epi32(state1, 0xB1);
    state0 = _mm_blend_epi16(tmp, state1, 0xF0);
    state1 = _mm_alignr_epi8(state1, tmp, 8);
    _mm_storeu_si128((__m128i *)&state[0], state0);
    _mm_storeu_si128((__m128i *)&state[4], state1);
}

// -1 until asked; cpuid is slow under a hypervisor, so it is asked once.
static atomic_int shaExtensions = -1;

int formsync_sha256_accelerated(void) {
    int known = atomic_load_explicit(&shaExtensions, memory_order_relaxed);
    if (known >= 0) return known;
    unsigned a = 0, b = 0, c = 0, d = 0;
    int has = 0;
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        int sse41 = (c >> 19) & 1, ssse3 = (c >> 9) & 1;
        if (sse41 && ssse3 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) has = (b >> 29) & 1;
    }
    atomic_store_explicit(&shaExtensions, has, memory_order_relaxed);
    return has;
}

void formsync_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks) {
    if (formsync_sha256_accelerated()) {
        sha256_blocks_shani(state, data, blocks);
    } else {
        formsync_sha256_blocks_portable(state, data, blocks);
    }
}

#else

int formsync_sha256_accelerated(void) { return 0; }

void formsync_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks) {
    formsync_sha256_blocks_portable(state, data, blocks);
}

#endif
