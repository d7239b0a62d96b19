/*
 * hash.h — the mock server's hashes and deterministic random draws. Every
 * "random" choice of the mock is a pure function of these, so answers and
 * fates never depend on timing or request order.
 */
#ifndef MOCK_HASH_H
#define MOCK_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SHA-256 of data; out gets 32 bytes. */
void mock_sha256(const void *data, size_t len, uint8_t out[32]);
/* The first 8 bytes of SHA-256, big-endian. */
uint64_t mock_hash64(const void *data, size_t len);
/* h combined with a string (e.g. a property name), well mixed. */
uint64_t mock_hash_with(uint64_t h, const char *s);

/* splitmix64: a deterministic stream of 64-bit values from *state. */
uint64_t mock_rng_next(uint64_t *state);
/* A uniform double in [0, 1) from the stream. */
double mock_rng_unit(uint64_t *state);
/* A stream state from a seed and three values (order matters). */
uint64_t mock_rng_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

#endif
