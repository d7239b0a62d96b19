/* cmd_validate.c — `elspeth validate -s SETTINGS`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "run/run.h"

static const char validate_usage[] =
	"usage: elspeth validate -s SETTINGS\n"
	"\n"
	"Loads the settings, builds the graph and checks it without running it:\n"
	"keys and types, plugins and their options, gate conditions, connections,\n"
	"cycles, reachability, and the pipelines of depends_on (loaded, no cycle,\n"
	"at most 3 deep), and the schema contract of every edge (the fields a node\n"
	"needs are fields its producer guarantees, with compatible types). Nothing\n"
	"is read from the source or written.\n"
	"\n"
	"  -s, --settings FILE   the pipeline settings (YAML)\n"
	"  -v, --verbose         also print the settings format (ELSPETH 0.4.1 or\n"
	"                        0.7.1) and every edge and what flows along it\n"
	"  -h, --help            this help\n";

/* Every edge that carries rows onward, with what its producer's rows
 * look like and guarantee (the schema contracts of docs/architecture.md
 * §7); error and quarantine edges carry rows as they failed. */
static void print_edges(FILE *f, const dag_graph *g)
{
	core_buf b = { 0 };

	fputs("Edges (what flows along each):\n", f);
	for (size_t e = 0; e < g->nedges; e++) {
		const dag_edge *ed = &g->edges[e];
		const char *l = ed->label;

		core_buf_reset(&b);
		if (ed->divert)
			core_buf_puts(&b, "the rows that failed, as they were");
		else
			plg_contract_describe(dag_producer_contract(g, ed->from), true, &b);
		fprintf(f, "  edge '%s' -> '%s' (%s): %s\n", g->nodes[ed->from].name,
			g->nodes[ed->to].name, l, b.data ? b.data : "");
	}
	core_buf_release(&b);
}

/* What landscape.export writes after a completed run (ADR 0028, 0053). */
static void print_export(FILE *f, const core_settings *s)
{
	const core_audit_export_cfg *x = &s->audit_export;
	const core_audit_export_v2 *v = &x->v2;

	if (!x->enabled)
		return;
	if (!v->on) {
		fprintf(f, "Audit export: ELSPETH 0.4.1's records to sink '%s' [%s]%s\n",
			x->sink, x->json ? "json" : "csv",
			x->sign ? ", signed with $ELSPETH_SIGNING_KEY" : "");
		return;
	}
	fprintf(f, "Audit export: ELSPETH 0.7.1's %s to sink '%s' [%s], %s; chunks of at "
		"most %lld records and %lld bytes; at most %lld chunks, %lld records, "
		"%lld bytes; content store %s/%s\n", v->serialization_version, x->sink,
		x->json ? "json" : "csv", v->hmac ? "HMAC-SHA256" : "unsigned",
		v->chunk_records, v->chunk_bytes, v->chunk_limit, v->total_records,
		v->total_bytes, v->store_root, v->store_namespace);
	if (v->hmac)
		fprintf(f, "  signed by '%s', the key in $%s\n", v->signer_key_id,
			v->signing_secret_ref);
}

int cli_validate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "settings", required_argument, NULL, 's' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char *path = NULL;
	bool verbose = false;
	core_settings *s;
	dag_graph *g;
	core_err err = { 0 };
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:vh", longopts, NULL)) != -1) {
		if (c == 's')
			path = optarg;
		else if (c == 'v')
			verbose = true;
		else if (c == 'h') {
			fputs(validate_usage, stdout);
			return CLI_OK;
		} else
			return cli_bad_option("validate", c, argc, argv);
	}
	if (!path || optind != argc)
		return cli_usage_error("validate", "expected -s SETTINGS");
	if ((rc = cli_load(path, &s, &g)))
		return rc;
	if ((rc = run_validate(s, g, &err))) {
		cli_error(&err);
		rc = CLI_ERROR;
	} else {
		if (verbose)
			printf("Format: ELSPETH %s (the file has '%s:')\n",
			       s->format == CORE_FORMAT_V07 ? "0.7.1" : "0.4.1",
			       s->format == CORE_FORMAT_V07 ? "sources" : "source");
		cli_print_pipeline(stdout, g);
		if (verbose) {
			print_edges(stdout, g);
			print_export(stdout, s);
		}
		printf("Settings valid: %s\n", path);
	}
	dag_free(g);
	core_settings_free(s);
	return rc;
}
