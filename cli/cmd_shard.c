/* cmd_shard.c — sharded runs (docs/scale-out.md): `elspeth shard plan`,
 * `elspeth run --manifest M [--shard K]` and `elspeth merge`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "run/run.h"
#include "shard/shard.h"

/* ---------------------------------------------------------------- plan */

static const char plan_usage[] =
	"usage: elspeth shard plan [-s SETTINGS] --shards N [-o MANIFEST] [--parallel M]\n"
	"\n"
	"Reads the source once and writes a manifest that splits its rows into N\n"
	"ranges of about the same size (docs/scale-out.md). Each shard then runs as\n"
	"  elspeth run --manifest MANIFEST --shard K --execute     (K = 0..N-1)\n"
	"on any machine that sees the same files, and\n"
	"  elspeth merge --manifest MANIFEST\n"
	"writes each sink's file in source order. A shard's files go to the\n"
	"directory beside the manifest, named after it (shards.json: shards.d/).\n"
	"\n"
	"  -s, --settings FILE   the pipeline settings (YAML)\n"
	"      --shards N        how many ranges (1..100000); more shards than\n"
	"                        machines lets the scheduler balance the load\n"
	"  -o, --output FILE     the manifest (default: shards.json)\n"
	"      --parallel M      how many shards run at once (default N): each takes\n"
	"                        1/M of every rate limit and pool_size\n"
	"  -h, --help            this help\n";

int cli_shard(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "shards", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	shd_plan_opts po = { .output = "shards.json" };
	const char *settings = NULL;
	unsigned long long n;
	shd_manifest *m = NULL;
	core_settings *s;
	dag_graph *g;
	core_err err = { 0 };
	int c, rc;

	if (argc < 2 || strcmp(argv[1], "plan")) {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
			fputs(plan_usage, stdout);
			return CLI_OK;
		}
		return cli_usage_error("shard", "expected: elspeth shard plan ...");
	}
	argc--;
	argv++;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			settings = optarg;
			break;
		case 'o':
			po.output = optarg;
			break;
		case 'n':
		case 'p':
			if (cli_parse_count(optarg, 100000, &n))
				return cli_usage_error("shard plan", "--%s needs a number from 1 "
						       "to 100000, got '%s'",
						       c == 'n' ? "shards" : "parallel", optarg);
			*(c == 'n' ? &po.shards : &po.parallel) = (uint32_t)n;
			break;
		case 'h':
			fputs(plan_usage, stdout);
			return CLI_OK;
		default:
			return cli_bad_option("shard plan", c, argc, argv);
		}
	}
	if (!settings || !po.shards || optind != argc)
		return cli_usage_error("shard plan", "expected -s SETTINGS --shards N");
	if ((rc = cli_load(settings, &s, &g)))
		return rc;
	rc = dag_open(g, false, &err) || shd_plan(g, settings, &po, &m, &err);
	if (rc) {
		cli_error(&err);
		rc = CLI_ERROR;
	} else {
		uint32_t most = 0;

		for (uint32_t k = 0; k < m->nshards; k++)
			if (m->ranges[k].last_row + 1 - m->ranges[k].first_row > most)
				most = (uint32_t)(m->ranges[k].last_row + 1 - m->ranges[k].first_row);
		uint64_t bytes = m->source_size;
		char from[64];

		for (uint32_t i = 1; m->sources && i < m->nsources; i++)
			bytes += m->sources[i].size;
		snprintf(from, sizeof(from), m->sources ? " and %u more sources" : "",
			 m->nsources - 1);
		printf("Planned %u shards of %llu rows (at most %u each) from %s%s (%llu bytes)\n"
		       "  manifest: %s; the shards' files will go to %s/\n"
		       "  each shard takes %.3g of every rate limit and pool_size (%u at once)\n"
		       "Run each shard (K = 0..%u), then merge:\n"
		       "  elspeth run -s %s --manifest %s --shard K --execute\n"
		       "  elspeth merge -s %s --manifest %s\n",
		       m->nshards, (unsigned long long)m->rows, most, m->source_path, from,
		       (unsigned long long)bytes, m->path, m->dir,
		       shd_capacity_share(m), m->parallel < m->nshards ? m->parallel : m->nshards,
		       m->nshards - 1, settings, m->path, settings, m->path);
	}
	shd_free(m);
	dag_free(g);
	core_settings_free(s);
	return rc;
}

/* ----------------------------------------------------------------- run */

/* The shard to run: --shard, else the scheduler's index. */
static int shard_index(const cli_run_args *a, const shd_manifest *m, uint32_t *k)
{
	static const char *const vars[] = { "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX" };
	unsigned long long n = 0;
	const char *v = NULL, *from = "--shard";

	if (a->shard >= 0) {
		n = (unsigned long long)a->shard;
	} else {
		for (size_t i = 0; i < 2 && !v; i++)
			if ((v = getenv(vars[i])) && v[0])
				from = vars[i];
			else
				v = NULL;
		if (!v)
			return cli_usage_error("run", "which shard? give --shard K (0..%u), or "
					       "run it as a task of an array job "
					       "(SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX)",
					       m->nshards - 1);
		if (strcmp(v, "0") && cli_parse_count(v, 99999, &n))
			return cli_usage_error("run", "%s is '%s', not a shard number", from, v);
	}
	if (n >= m->nshards)
		return cli_usage_error("run", "%s %llu: %s has shards 0..%u", from, n,
				       m->path, m->nshards - 1);
	*k = (uint32_t)n;
	return 0;
}

int cli_run_shard(dag_graph *g, cli_run_args *a)
{
	char rerun[8192];
	const run_shard_info *in;
	shd_manifest *m = NULL;
	run_shard *sh = NULL;
	core_err err = { 0 };
	uint32_t k = 0;
	int rc;

	if ((rc = shd_load(a->manifest, &m, &err))) {
		cli_error(&err);
		return CLI_ERROR;
	}
	rc = shard_index(a, m, &k);
	shd_free(m);
	if (rc)
		return rc;
	if (run_shard_open(g, a->manifest, k, &sh, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	in = run_shard_get(sh);
	if (in->state == RUN_SHARD_COMPLETED) {
		printf("Shard %u of %s already completed (run %llu, rows %llu..%llu): "
		       "nothing to do.\n", k, in->manifest, (unsigned long long)in->run_id,
		       (unsigned long long)in->first_row, (unsigned long long)in->last_row);
		run_shard_close(sh);
		return CLI_OK;
	}
	snprintf(rerun, sizeof(rerun), "elspeth run -s %s --manifest %s --shard %u --execute",
		 a->path, in->manifest, k);
	a->eshard = in->shard;
	a->rerun = rerun;
	a->database = in->landscape;
	a->resume = in->resume;
	if (a->resume && !a->json)
		printf("Shard %u: finishing its run %s from its checkpoint\n", k, a->resume);
	rc = cli_execute(g, a);
	run_shard_close(sh);
	return rc;
}

/* --------------------------------------------------------------- merge */

static const char merge_usage[] =
	"usage: elspeth merge --manifest MANIFEST [-s SETTINGS] [-f console|json]\n"
	"\n"
	"Writes each sink's file, in source order, from the part files of the\n"
	"shards of MANIFEST (elspeth shard plan), after checking that every shard's\n"
	"run completed over its range, passes verify, and left the part files it\n"
	"recorded. Records which part made which bytes in MANIFEST.d/merge.json.\n"
	"Safe to run again (each file is written beside and renamed).\n"
	"\n"
	"  -s, --settings FILE        the settings (default: the manifest's)\n"
	"      --manifest FILE        the plan\n"
	"  -f, --format console|json  json: merge.json's document on stdout\n"
	"  -h, --help                 this help\n";

int cli_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "manifest", required_argument, NULL, 'M' },
		{ "format", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *settings = NULL, *manifest = NULL;
	shd_manifest *m = NULL;
	core_settings *s = NULL;
	dag_graph *g = NULL;
	core_err err = { 0 };
	json_t *report = NULL;
	bool json = false;
	size_t i;
	json_t *v;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:f:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			settings = optarg;
			break;
		case 'M':
			manifest = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "json") && strcmp(optarg, "console") &&
			    strcmp(optarg, "text"))
				return cli_usage_error("merge", "--format is console or json, got '%s'",
						       optarg);
			json = !strcmp(optarg, "json");
			break;
		case 'h':
			fputs(merge_usage, stdout);
			return CLI_OK;
		default:
			return cli_bad_option("merge", c, argc, argv);
		}
	}
	if (!manifest || optind != argc)
		return cli_usage_error("merge", "expected --manifest FILE");
	if (shd_load(manifest, &m, &err)) {
		cli_error(&err);
		return CLI_ERROR;
	}
	if ((rc = cli_load(settings ? settings : m->settings_path, &s, &g))) {
		shd_free(m);
		return rc;
	}
	rc = dag_open(g, false, &err) || shd_merge(m, g, &report, &err) ? CLI_ERROR : CLI_OK;
	if (rc) {
		cli_error(&err);
	} else if (json) {
		cli_print_json(report);
	} else {
		printf("Merged %u shards, rows 1..%llu:\n", m->nshards,
		       (unsigned long long)m->rows);
		json_array_foreach(json_object_get(report, "sinks"), i, v)
			printf("  %s: %s (%lld bytes, sha256 %.16s...)\n",
			       json_string_value(json_object_get(v, "sink")),
			       json_string_value(json_object_get(v, "path")),
			       (long long)json_integer_value(json_object_get(v, "size")),
			       json_string_value(json_object_get(v, "sha256")));
		printf("  which part made which bytes: %s/merge.json\n", m->dir);
	}
	json_decref(report);
	dag_free(g);
	core_settings_free(s);
	shd_free(m);
	return rc;
}
