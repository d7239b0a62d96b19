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

#endif
