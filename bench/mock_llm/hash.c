/* hash.c — SHA-256 (OpenSSL), FNV-1a and splitmix64 (see hash.h). */
#include "hash.h"

#include <openssl/sha.h>

void mock_sha256(const void *data, size_t len, uint8_t out[32])
{
	SHA256(data, len, out);
}

uint64_t mock_hash64(const void *data, size_t len)
{
	uint8_t d[32];
	uint64_t h = 0;

	mock_sha256(data, len, d);
	for (int i = 0; i < 8; i++)
		h = h << 8 | d[i];
	return h;
}

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t mock_hash_with(uint64_t h, const char *s)
{
	uint64_t f = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *s; s++)
		f = (f ^ (uint8_t)*s) * 0x100000001b3ULL;
	return mix(h ^ mix(f));
}

uint64_t mock_rng_next(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ULL;
	return mix(*state);
}

double mock_rng_unit(uint64_t *state)
{
	return (double)(mock_rng_next(state) >> 11) * 0x1.0p-53;
}

uint64_t mock_rng_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
	return mix(mix(mix(mix(seed) ^ a) ^ b) ^ c);
}
