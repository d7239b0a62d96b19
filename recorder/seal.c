/*
 * seal.c — every value the recorder stores (except REC_META's format
 * marker and settings) ends with a seal: the CRC-32C (Castagnoli) of its
 * table's name, its key and its bytes, 4 bytes little-endian. Read back,
 * a value whose seal does not match is damage (CORE_EDATA), whatever
 * reads it: verify, export, explain, resume. A seal finds every change of
 * up to 3 bits in a value or its key, and all but 1 in 2^32 of the rest;
 * it is not a signature (whoever can write the file can recompute it):
 * docs/audit.md "Damage and tampering" says what is and is not found.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "recorder/recorder_internal.h"

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int b = 0; b < 8; b++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[i] = c;
	}
}

static uint32_t crc_step(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		crc = table[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
	return crc;
}

static uint32_t seal_of(rec_table t, const MDB_val *k, const void *v, size_t n)
{
	const char *name = rec_table_name(t);
	uint32_t crc = 0xffffffffu;

	pthread_once(&table_once, make_table);
	crc = crc_step(crc, name, strlen(name) + 1);
	crc = crc_step(crc, k->mv_data, k->mv_size);
	crc = crc_step(crc, v, n);
	return crc ^ 0xffffffffu;
}

/* Where the last damaged value this thread read was: rec_damage_where. */
static _Thread_local char where[200];

static void note_damage(rec_table t, const MDB_val *k)
{
	const uint8_t *b = k->mv_data;
	size_t n = 0, i = 0;

	n += (size_t)snprintf(where + n, sizeof(where) - n, "table %s, key (",
			      rec_table_name(t));
	while (i < k->mv_size && n < sizeof(where) - 24) {
		size_t w = k->mv_size - i >= 8 ? 8 : k->mv_size - i >= 4 ? 4 : 1;
		uint64_t v = 0;

		for (size_t j = 0; j < w; j++)
			v = v << 8 | b[i + j];
		n += (size_t)snprintf(where + n, sizeof(where) - n, "%s%llu", i ? ", " : "",
				      (unsigned long long)v);
		i += w;
	}
	snprintf(where + n, sizeof(where) - n, ")");
}

const char *rec_damage_where(void)
{
	return where;
}

void rec__damage_clear(void)
{
	where[0] = '\0';
}

void rec__damage_set(const char *w)
{
	snprintf(where, sizeof(where), "%s", w);
}

bool rec__sealed_table(rec_table t)
{
	return t != REC_META;
}

int rec__put(MDB_txn *txn, MDB_dbi dbi, rec_table t, MDB_val *k, const MDB_val *v,
	     unsigned flags)
{
	MDB_val r = { v->mv_size + REC__SEAL_LEN, NULL };
	uint32_t s;
	uint8_t *p;
	int rc;

	if (!rec__sealed_table(t))
		return mdb_put(txn, dbi, k, (MDB_val *)v, flags);
	if ((rc = mdb_put(txn, dbi, k, &r, flags | MDB_RESERVE)))
		return rc;
	p = r.mv_data;
	if (v->mv_size)
		memcpy(p, v->mv_data, v->mv_size);
	s = seal_of(t, k, v->mv_data, v->mv_size);
	for (int i = 0; i < REC__SEAL_LEN; i++)
		p[v->mv_size + (size_t)i] = (uint8_t)(s >> (8 * i));
	return 0;
}

int rec__unseal(rec_table t, const MDB_val *k, MDB_val *v)
{
	const uint8_t *p = v->mv_data;
	uint32_t want = 0;
	size_t n;

	if (!rec__sealed_table(t))
		return 0;
	if (v->mv_size < REC__SEAL_LEN) {
		note_damage(t, k);
		return CORE_EDATA;
	}
	n = v->mv_size - REC__SEAL_LEN;
	for (int i = 0; i < REC__SEAL_LEN; i++)
		want |= (uint32_t)p[n + (size_t)i] << (8 * i);
	if (seal_of(t, k, p, n) != want) {
		note_damage(t, k);
		return CORE_EDATA;
	}
	v->mv_size = n;
	return 0;
}
