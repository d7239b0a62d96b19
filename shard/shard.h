/*
 * shard.h — sharded runs (docs/scale-out.md, ADR 0020): a plan splits the
 * source into row ranges written to a manifest; each shard is an ordinary
 * run of its range (engine.h: eng_shard) with its own Landscape and part
 * files in the shard's directory; the merge joins the parts into each
 * sink's file in source order after proving that the shards cover every
 * row exactly once.
 *
 * The manifest (JSON, docs/scale-out.md "The manifest") names the
 * settings and topology hashes, the source's size and SHA-256, and per
 * shard the first and last row, where the source stands before the first
 * (byte offset and line, or element index), and the SHA-256 of the
 * range's bytes. Its own hash (plan_hash, of its canonical JSON without
 * that key) is recorded by every shard's run: a part from another plan is
 * refused.
 *
 * Files: MANIFEST.json and beside it the directory MANIFEST.d/ holding
 * shard-NNNN/{landscape/, parts/, lock} and, after a merge, merge.json
 * (which part made which bytes of each final file).
 *
 * Thread rules: none; one thread calls these.
 */
#ifndef ELSPETH_SHARD_H
#define ELSPETH_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

typedef struct shd_range {
	uint32_t index;
	uint64_t first_row, last_row; /* last_row = first_row - 1: empty */
	plg_source_pos start;         /* the source before first_row */
	uint64_t byte_end;            /* bytes sources: the range's end */
	char sha256[CORE_SHA256_HEX_LEN + 1]; /* of [start.offset, byte_end) */
} shd_range;

typedef struct shd_manifest {
	char *path;                   /* the manifest file */
	char *dir;                    /* its working directory (MANIFEST.d) */
	char *settings_path;          /* as the plan was given it */
	char config_hash[CORE_SHA256_HEX_LEN + 1];
	char topology_hash[CORE_SHA256_HEX_LEN + 1];
	char *source_plugin, *source_path;   /* the (first) source */
	uint64_t source_size;
	char source_sha256[CORE_SHA256_HEX_LEN + 1];
	/* A pipeline with several sources (ADR 0044): each one's file, read
	 * one after another; its ranges' starts name the source they are in,
	 * and the check is of every file whole (bytes is false). */
	uint32_t nsources;            /* 1: the fields above say it all */
	struct shd_source {
		char *name, *plugin, *path;
		uint64_t size;
		char sha256[CORE_SHA256_HEX_LEN + 1];
	} *sources;                   /* nsources > 1 only */
	bool bytes;                   /* positions are byte offsets */
	uint64_t head_bytes;          /* bytes before the first row's range */
	char head_sha256[CORE_SHA256_HEX_LEN + 1];
	uint64_t rows;
	uint32_t nshards;
	uint32_t parallel;            /* shards expected to run at once */
	shd_range *ranges;
	char plan_hash[CORE_SHA256_HEX_LEN + 1];
} shd_manifest;

typedef struct shd_plan_opts {
	uint32_t shards;              /* >= 1 */
	uint32_t parallel;            /* 0: all of them */
	const char *output;           /* the manifest file to write */
} shd_plan_opts;

/* Checks that g can be sharded (a Landscape; aggregations only with one
 * shard; sinks that can be merged and do not append; sources that can
 * start at a row), reads the sources once to number their rows (several:
 * one after another, as a run reads them), hashes them,
 * and writes the manifest (temporary file, fsync, rename). *out may be
 * NULL. CORE_ECONFIG naming what cannot be sharded, CORE_EIO, CORE_EDATA
 * (the source cannot be read to its end). */
int shd_plan(dag_graph *g, const char *settings_path, const shd_plan_opts *o,
	     shd_manifest **out, core_err *err);

/* Reads and checks a manifest (its plan_hash, the ranges following each
 * other from row 1 to rows). */
int shd_load(const char *path, shd_manifest **out, core_err *err);
void shd_free(shd_manifest *m); /* NULL allowed */

/* g was built from the settings the plan was made from (config and
 * topology hashes). */
int shd_check_settings(const shd_manifest *m, dag_graph *g, core_err *err);
/* The source still holds what the plan read for shard k: its size, and
 * the bytes before the first row and of k's range (bytes sources), else
 * the whole file's hash. */
int shd_check_source(const shd_manifest *m, uint32_t k, core_err *err);

/* Shard k as the engine takes it; valid while m is. */
void shd_engine_shard(const shd_manifest *m, uint32_t k, eng_shard *out);
/* The share of a rate-limited service each shard takes: 1 / the shards
 * that run at once. */
double shd_capacity_share(const shd_manifest *m);

/* Where shard k's things are: "landscape", "parts" or "lock". */
int shd_path(const shd_manifest *m, uint32_t k, const char *what, char *buf,
	     size_t cap, core_err *err);
/* The shard holding row seq, or -1 when it is outside 1..rows. */
int shd_find_row(const shd_manifest *m, uint64_t seq);

/* Writes each sink's final file (at the path its options name) from the
 * shards' part files, in source order: refuses (CORE_EDATA saying what is
 * wrong, nothing written) unless every shard's latest run completed, was
 * run from this plan over its range and read all its rows, and each part
 * file is the one its run recorded (shd_verify checks the rest). Each file is written to a temporary
 * file, fsync'd and renamed; then MANIFEST.d/merge.json records which
 * part made which byte range. Running it again rewrites the same bytes.
 * *report (may be NULL) receives merge.json's document. */
int shd_merge(const shd_manifest *m, dag_graph *g, json_t **report,
	      core_err *err);

/* Shard k's latest run as `runs` lists it (*run, a new reference), or
 * *run NULL when the shard has not run (no Landscape, or no run in it).
 * CORE_EDATA when that run is not shard k of this plan (*run NULL then). With env, its
 * Landscape stays open there, read-only (NULL when not run or on error). */
int shd_shard_run(const shd_manifest *m, uint32_t k, rec_env **env, json_t **run,
		  core_err *err);
/* Shard k's Landscape (read-only) and its latest run, which must have
 * completed as shard k of this plan; the caller closes *env (set even
 * on error, or NULL). */
int shd_open_shard(const shd_manifest *m, uint32_t k, rec_env **env,
		   uint64_t *run, core_err *err);

/* merge.json's document, or NULL when the shards were not merged (or it
 * cannot be read). */
json_t *shd_merge_record(const shd_manifest *m);
/* Where bytes [offset, offset + len) of a part file landed in its final
 * file, by merge.json: true with *path (in rec) and *final_offset. */
bool shd_final_range(const json_t *rec, const char *part, uint64_t offset,
		     const char **path, uint64_t *final_offset);

/* `verify --manifest`: every shard's latest run (the checks of `verify`
 * and that it covers its range), the manifest's coverage of rows
 * 1..rows, and, after a merge, that each final file and part is what
 * merge.json says. *report = {"manifest", "shards": [{"shard", "run_id",
 * "status", "violation_count", "violations"}], "merge": {...} | null,
 * "violation_count", "violations"}. Returns 0 when the checks ran. */
int shd_verify(const shd_manifest *m, json_t **report, core_err *err);

#endif /* ELSPETH_SHARD_H */
