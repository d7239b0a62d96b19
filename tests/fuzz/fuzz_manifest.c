/*
 * fuzz_manifest.c — libFuzzer harness for the shard manifest reader
 * (shard/manifest.c).
 *
 * The input is a manifest. When it is a JSON object, its plan_hash is
 * set to what it hashes to, so that the reader goes past the check that
 * would refuse almost every mutation, into the fields and ranges. Checks
 * shd_load's promise: 0 with a manifest whose ranges cover rows 1..rows
 * in order, or an error with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "shard/shard_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/fuzz_manifest.XXXXXX", hash[CORE_SHA256_HEX_LEN + 1];
	json_error_t je;
	json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
	shd_manifest *m = NULL;
	core_err err = { 0 };
	uint64_t next = 1;
	FILE *f;
	int fd, rc;

	if (json_is_object(doc) && !shd__plan_hash(doc, hash, &err))
		json_object_set_new(doc, "plan_hash", json_string(hash));
	if ((fd = mkstemp(path)) < 0)
		abort();
	if (!(f = fdopen(fd, "w")))
		abort();
	if (doc)
		json_dumpf(doc, f, 0);
	else
		fwrite(data, 1, size, f);
	fclose(f);
	json_decref(doc);
	rc = shd_load(path, &m, &err);
	unlink(path);
	if (rc && !err.msg[0])
		abort();
	if (!rc) {
		for (uint32_t k = 0; k < m->nshards; k++) {
			if (m->ranges[k].first_row != next)
				abort();
			next = m->ranges[k].last_row + 1;
		}
		if (next != m->rows + 1)
			abort();
		shd_free(m);
	}
	return 0;
}
