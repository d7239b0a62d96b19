/* shard_internal.h — what the files of shard/ share. */
#ifndef ELSPETH_SHARD_INTERNAL_H
#define ELSPETH_SHARD_INTERNAL_H

#include "shard/shard.h"

#define SHD__FORMAT 1          /* the manifest's elspeth_shards */
#define SHD__MAX_SHARDS 100000

/* MANIFEST.d for MANIFEST(.json); malloc'd, NULL when out of memory. */
char *shd__workdir(const char *manifest);
/* The hash of a manifest document without its plan_hash key. */
int shd__plan_hash(json_t *doc, char out[CORE_SHA256_HEX_LEN + 1], core_err *err);
/* Writes doc to path: a temporary file beside it, fsync, rename, and
 * fsync of the directory. */
int shd__write_json(const char *path, const json_t *doc, core_err *err);

/* A shard's Landscape, open for reading, and its latest run. */
typedef struct shd__run {
	rec_env *rec;
	uint64_t run;
} shd__run;

/* Opens shard k's Landscape and checks its latest run: completed, shard
 * k of this plan, over its range, every row read. CORE_EDATA saying
 * what is wrong and the command that fixes it; s->rec may be set even
 * then (the caller closes it). */
int shd__open_run(const shd_manifest *m, uint32_t k, shd__run *s, core_err *err);

#endif
