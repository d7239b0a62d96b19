/*
 * sources.c — a pipeline's sources as the one source the engine reads
 * (ADR 0044). ELSPETH 0.7.1 ingests its named sources one after another
 * in the settings' order; so does the chain: every row of source 0, then
 * every row of source 1, ..., numbered by one sequence, each row tagged
 * with its source and its index there. Its position is the inner
 * source's, plus which source and how many of its rows came before, so
 * a checkpoint and a resume cross a source boundary like any other row.
 * A pipeline with one source reads the plugin directly.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"

typedef struct chain {
	plg_source_ops ops;          /* what the engine calls: these below */
	const dag_graph *g;
	unsigned n, cur;             /* sources; the one being read */
	uint64_t index;              /* rows of `cur` read so far */
	void **inst;                 /* one open instance per source */
} chain;

static const plg_source_ops *ops_of(const chain *ch, unsigned i)
{
	return ch->g->nodes[i].sops;
}

static int chain_next(void *state, plg_source_row *out, core_err *err)
{
	chain *ch = state;

	for (;;) {
		int rc = ops_of(ch, ch->cur)->next(ch->inst[ch->cur], out, err);

		if (rc > 0) {
			out->source = ch->cur;
			out->source_index = ch->index++;
			return 1;
		}
		if (rc < 0)
			return core_err_prefix(err, "source '%s'", ch->g->nodes[ch->cur].name);
		if (ch->cur + 1 == ch->n)
			return 0;
		ch->cur++;
		ch->index = 0;
	}
}

static int chain_skip(void *state, core_err *err)
{
	chain *ch = state;

	for (;;) {
		int rc = ops_of(ch, ch->cur)->skip(ch->inst[ch->cur], err);

		if (rc > 0) {
			ch->index++;
			return 1;
		}
		if (rc < 0 || ch->cur + 1 == ch->n)
			return rc;
		ch->cur++;
		ch->index = 0;
	}
}

static void chain_position(void *state, plg_source_pos *out)
{
	chain *ch = state;

	ops_of(ch, ch->cur)->position(ch->inst[ch->cur], out);
	out->source = ch->cur;
	out->index = ch->index;
}

static int chain_seek(void *state, const plg_source_pos *at, core_err *err)
{
	chain *ch = state;
	plg_source_pos inner = *at;

	if (at->source >= ch->n)
		return core_err_set(err, CORE_EDATA,
			"the checkpoint names source %u; this pipeline has %u",
			at->source, ch->n);
	inner.source = 0; /* the source's own rows before: inner.index */
	ch->cur = at->source;
	ch->index = at->index;
	return ops_of(ch, ch->cur)->seek(ch->inst[ch->cur], &inner, err);
}

static void chain_progress(void *state, uint64_t *done, uint64_t *total)
{
	chain *ch = state;
	uint64_t d = 0, t = 0;

	for (unsigned i = 0; i < ch->n; i++) {
		uint64_t di = 0, ti = 0;

		if (!ops_of(ch, i)->progress) {
			*done = *total = 0; /* unknown */
			return;
		}
		ops_of(ch, i)->progress(ch->inst[i], &di, &ti);
		d += i < ch->cur ? ti : i == ch->cur ? di : 0;
		t += ti;
	}
	*done = d;
	*total = t;
}

static void chain_close(void *state)
{
	chain *ch = state;

	if (!ch)
		return;
	for (unsigned i = 0; i < ch->n; i++)
		if (ch->inst[i])
			ops_of(ch, i)->close(ch->inst[i]);
	free(ch->inst);
	free(ch);
}

int eng__sources_open(const dag_graph *g, const plg_source_ops **ops,
		      void **state, core_err *err)
{
	bool seekable = true, skippable = true, progress = true;
	chain *ch;
	int rc;

	*state = NULL;
	*ops = g->nodes[0].sops;
	if (g->nsources == 1)
		return (*ops)->open(&g->env, g->nodes[0].options, state, err);
	ch = calloc(1, sizeof(*ch));
	if (!ch || !(ch->inst = calloc(g->nsources, sizeof(*ch->inst)))) {
		free(ch);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	ch->g = g;
	ch->n = (unsigned)g->nsources;
	/* All of them first: a missing input must not leave empty outputs. */
	for (unsigned i = 0; i < ch->n; i++) {
		const dag_node *s = &g->nodes[i];

		if ((rc = s->sops->open(&g->env, s->options, &ch->inst[i], err))) {
			chain_close(ch);
			return core_err_prefix(err, "source '%s'", s->name);
		}
		seekable = seekable && s->sops->position && s->sops->seek;
		skippable = skippable && s->sops->skip;
		progress = progress && s->sops->progress;
	}
	ch->ops = (plg_source_ops){ .name = "sources",
		.description = "the pipeline's sources, one after another",
		.next = chain_next, .close = chain_close,
		.progress = progress ? chain_progress : NULL,
		.position = seekable ? chain_position : NULL,
		.seek = seekable ? chain_seek : NULL,
		.skip = skippable ? chain_skip : NULL };
	*ops = &ch->ops;
	*state = ch;
	return 0;
}

int eng_sources_open(const dag_graph *g, const plg_source_ops **ops, void **state,
		     core_err *err)
{
	return eng__sources_open(g, ops, state, err);
}

void *eng__sources_inst(const dag_graph *g, void *state, unsigned i)
{
	return g->nsources == 1 ? state : ((chain *)state)->inst[i];
}

json_t *eng__sources_fields(const dag_graph *g, void *state, unsigned i,
			    const char **version)
{
	const plg_source_ops *ops = g->nodes[i].sops;
	void *inst = eng__sources_inst(g, state, i);

	return ops->fields && inst ? ops->fields(inst, version) : NULL;
}
