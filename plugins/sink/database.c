/*
 * database.c — the "database" sink: rows into a table of an SQLite file
 * or a PostgreSQL database, with ELSPETH 0.4.1's options (url, table,
 * if_exists, validate_input, schema) and its table (database_table.c).
 *
 * Checkpoints and resume (ADR 0023): rows are committed once per
 * checkpoint (plg_sink_ops.commit), each commit with a ledger entry in
 * the same transaction (database_ledger.c). The sink's position is the
 * number of rows its writer — this sink of this run, keyed by the run's
 * key (plg_env.run_key) and the sink's options path — has committed, and its
 * hash the chain hash of those rows. A resume deletes the rows of every
 * commit after the checkpoint's position, found through the ledger, and
 * goes on from there; verify checks, reading only, that the ledger still
 * holds the position and chain the checkpoint names.
 *
 * ELSPETH 0.7.1's `effect_ledger` (ADR 0047): the entries go into the
 * operator's ledger table instead, and the sink issues no DDL and deletes
 * nothing — the target table and the ledger must be there. A resume
 * then takes nothing back: the rows committed after the checkpoint stay,
 * and the same rows, coming again, are checked against their commits'
 * chain hashes instead of being written twice.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "plugins/sink/database_internal.h"

/* ---------------------------------------------------------------- options */

static int parse_table(dbs_sink *s, const core_node *opts, core_err *err)
{
	const core_node *n = core_map_get(opts, "table");
	const char *table = NULL;
	int rc;

	if ((rc = core_opt_str(opts, "table", true, &table, err)))
		return rc;
	if (!table[strspn(table, " \t\r\n")])
		return core_err_at(err, CORE_ECONFIG, n, "table name must not be empty");
	if (!strcmp(table, DBS_LEDGER))
		return core_err_at(err, CORE_ECONFIG, n, "'%s' is the database sink's "
				   "own ledger of commits; choose another table", table);
	s->t.name = strdup(table);
	if (!s->t.name)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	core_buf_reset(&s->tmp);
	if (dbs__quote(&s->tmp, table) || !(s->t.qname = strdup(s->tmp.data)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

static const plg_option db_own[] = {
	{ "url", "string", true, NULL,
	  "sqlite:///FILE or postgresql://user:password@host/db (SQLAlchemy's forms)" },
	{ "table", "string", true, NULL,
	  "the table written (created from the schema when missing)" },
	{ "if_exists", "string", false, "\"append\"",
	  "append, or replace (the table is emptied first)" },
	{ "validate_input", "boolean", false, "false",
	  "check each row against the schema before writing" },
	{ "schema", "object", true, NULL,
	  "the table's columns (schema: {mode: observed} takes them from the first row)" },
	{ "effect_ledger", "object", false, NULL,
	  "ELSPETH 0.7.1's operator-provisioned ledger: {table: _elspeth_..., "
	  "schema_version: 1, permissions: [select, insert]}" },
	{ NULL }
};
static const plg_option *const db_opts[] = { db_own, NULL };

/* effect_ledger, as 0.7.1 checks it: a table named _elspeth_..., schema
 * version 1, and exactly the permissions select and insert. */
static int parse_effect(dbs_sink *s, const core_node *opts, core_err *err)
{
	static const char *const keys[] = { "table", "schema_version", "permissions", NULL };
	const core_node *n = core_map_get(opts, "effect_ledger"), *perm;
	const char *table = NULL, **p = NULL;
	long long version = 1;
	size_t np = 0;
	bool sel = false, ins = false, bad = false;
	regex_t re;
	int rc;

	if (!n || core_node_is_null(n))
		return 0;
	if ((rc = core_map_check_keys(n, keys, err)) ||
	    (rc = core_opt_str(n, "table", true, &table, err)))
		return rc;
	if (regcomp(&re, "^_elspeth_[A-Za-z0-9_]+$", REG_EXTENDED | REG_NOSUB))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	bad = regexec(&re, table, 0, NULL, 0) != 0;
	regfree(&re);
	if (bad)
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "table"),
			"effect ledger table must be a namespaced identifier beginning "
			"with '_elspeth_' (letters, digits and '_'), got '%s'", table);
	if (core_map_get(n, "schema_version") &&
	    core_node_int(core_map_get(n, "schema_version"), 1, 1, &version, err))
		return core_err_at(err, CORE_ECONFIG, core_map_get(n, "schema_version"),
				   "effect ledger schema_version must be 1");
	if (!(perm = core_map_get(n, "permissions")))
		return core_err_missing(err, n, "permissions", "permissions",
					"the runtime's grants on the ledger: [select, insert]");
	if ((rc = core_node_str_list(perm, &p, &np, err)))
		return rc;
	for (size_t i = 0; i < np; i++) {
		sel |= !strcmp(p[i], "select");
		ins |= !strcmp(p[i], "insert");
		bad |= strcmp(p[i], "select") && strcmp(p[i], "insert");
	}
	free(p);
	if (bad || !sel || !ins)
		return core_err_at(err, CORE_ECONFIG, perm,
			"effect ledger permissions must declare exactly 'select' and 'insert'");
	if (s->replace)
		return core_err_at(err, CORE_ECONFIG, core_map_get(opts, "if_exists"),
			"Database sink effect mode 'replace' is not supported; provision a "
			"new target table and use if_exists='append'");
	core_buf_reset(&s->tmp);
	if (!(s->effect = strdup(table)) || dbs__quote(&s->tmp, table) ||
	    !(s->qeffect = strdup(s->tmp.data)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return 0;
}

static int parse_options(dbs_sink *s, const core_node *opts, core_err *err)
{
	static const char *const modes[] = { "append", "replace", NULL };
	const core_node *mode = core_map_get(opts, "if_exists");
	const core_node *url = core_map_get(opts, "url");
	const char *ignored;
	int m = 0, rc;

	s->options = opts;
	if ((rc = plg__check_options(opts, db_opts, err)) ||
	    (rc = core_opt_str(opts, "url", true, &ignored, err)) ||
	    (rc = dbs__url_parse(url, &s->url, err)) ||
	    (rc = parse_table(s, opts, err)) ||
	    (mode && (rc = core_node_enum(mode, modes, &m, err))) ||
	    (rc = core_opt_bool(opts, "validate_input", &s->validate, err)))
		return rc;
	if (!core_map_get(opts, "schema"))
		return core_err_at(err, CORE_ECONFIG, opts,
				   "missing required key 'schema' (the table's columns "
				   "come from it; schema: {mode: observed} takes them "
				   "from the first row)");
	if ((rc = plg__schema_parse(core_map_get(opts, "schema"), &s->schema, err)))
		return rc;
	s->replace = m == 1;
	s->be = s->url.kind == DBS_SQLITE ? &dbs__sqlite : &dbs__pg;
	if ((rc = parse_effect(s, opts, err)))
		return rc;
	s->lg = (dbs_ledger){ s->be, s->effect, s->qeffect };
	return 0;
}

static void sink_free(dbs_sink *s)
{
	if (!s)
		return;
	dbs__db_detach(s);
	dbs__url_release(&s->url);
	dbs__table_release(&s->t);
	free(s->t.name);
	free(s->t.qname);
	plg__schema_free(s->schema);
	free(s->writer);
	free(s->effect);
	free(s->qeffect);
	dbs__entries_release(&s->after);
	free(s->ranges);
	core_buf_release(&s->sql);
	core_buf_release(&s->scratch);
	core_buf_release(&s->canon);
	core_buf_release(&s->tmp);
	free(s->vals);
	free(s);
}

/* This sink of this run, in the ledger: "RUN_KEY/sinks.NAME.options";
 * a run that is not recorded (nothing can resume it) gets a random key. */
static int writer_key(dbs_sink *s, const plg_env *env, core_err *err)
{
	const char *run = plg_env_run_key(env), *path = s->options->path;
	char once[40] = "once-";
	uint8_t r[16];
	core_buf b = { 0 };

	if (!run) {
		if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return core_err_set(err, CORE_EIO, "getrandom failed");
		core_hex(r, sizeof(r), once + 5);
		run = once;
	}
	if (core_buf_printf(&b, "%s/%s", run, path ? path : "sink"))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	s->writer = core_buf_steal(&b);
	return 0;
}

/* ------------------------------------------------------------- the table */

/* An existing table's columns (none when it does not exist), checked
 * against the schema as ELSPETH checks a table it resumes into. */
static int load_table(dbs_sink *s, core_err *err)
{
	char **names = NULL;
	size_t n = 0;
	bool exists = false;
	int rc;

	if (s->replace)
		return 0; /* dropped and created at the first row */
	rc = s->be->columns(s->db->conn, s->t.name, &names, &n, &exists, err);
	if (!rc && !exists && s->effect)
		rc = core_err_at(err, CORE_ECONFIG, core_map_get(s->options, "table"),
			"table '%s' does not exist in %s: with effect_ledger the database "
			"sink never creates tables (ELSPETH 0.7.1's contract); provision "
			"it first", s->t.name, s->url.sanitized);
	if (!rc && exists)
		rc = dbs__table_set_cols(&s->t, s->schema, names, n, err);
	if (!rc && exists)
		rc = dbs__table_check(&s->t, s->schema, core_map_get(s->options, "table"),
				      s->url.sanitized, err);
	if (!rc && exists && s->be->rowid_name)
		rc = s->be->rowid_name(s->db->conn, s->t.qname, names, n, &s->t.rowid, err);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* ---------------------------------------------------------------- resume */

static void remember(dbs_sink *s, uint64_t pos)
{
	if (s->nrecent == DBS_RECENT) {
		memmove(s->recent, s->recent + 1, (DBS_RECENT - 1) * sizeof(*s->recent));
		s->nrecent--;
	}
	s->recent[s->nrecent++] = pos;
}

static int no_record(const dbs_sink *s, const plg_sink_pos *at, uint64_t have,
		     core_err *err)
{
	return core_err_set(err, CORE_EDATA,
		"table '%s' in %s: the checkpoint counts %llu rows committed by this "
		"run, and the database's record of its commits (%s) has %llu: the "
		"database was replaced or restored since the run stopped; nothing "
		"was changed", s->t.name, s->url.sanitized, (unsigned long long)at->pos,
		DBS_LEDGER, (unsigned long long)have);
}

/* Checks the writer's ledger entries against the checkpoint's position. */
static int check_entries(const dbs_sink *s, const dbs_entries *l,
			 const plg_sink_pos *at, core_err *err)
{
	uint64_t most = 0;

	for (size_t i = 0; i < l->n; i++) {
		if (l->e[i].after > most)
			most = l->e[i].after;
		if (l->e[i].after == at->pos && at->hash[0] &&
		    strcmp(l->e[i].chain, at->hash))
			return core_err_set(err, CORE_EDATA,
				"table '%s' in %s: the rows 1..%llu the database's record "
				"names differ from those the checkpoint counts (hash %.12s..., "
				"checkpoint %.12s...); nothing was changed", s->t.name,
				s->url.sanitized, (unsigned long long)at->pos, l->e[i].chain,
				at->hash);
	}
	return at->pos > most ? no_record(s, at, most, err) : 0;
}

/* Deletes the rows of each commit after the checkpoint, in one
 * transaction with their ledger entries. */
static int take_back(dbs_sink *s, const dbs_entries *l, const plg_sink_pos *at,
		     core_err *err)
{
	dbs_conn *c = s->db->conn;
	int rc = 0;
	size_t lost = 0;

	for (size_t i = 0; i < l->n; i++)
		lost += l->e[i].after > at->pos;
	if (!lost)
		return 0;
	if ((rc = s->be->exec(c, s->be->begin_sql, NULL, 0, NULL, err)))
		return rc;
	for (size_t i = l->n; i-- > 0 && !rc;) {
		const dbs_entry *e = &l->e[i];
		uint64_t n = 0;

		if (e->after <= at->pos)
			continue;
		if (!s->t.ncols)
			rc = core_err_set(err, CORE_EDATA, "table '%s' in %s is gone, though "
					  "the run committed rows to it after its last "
					  "checkpoint; nothing was changed", s->t.name,
					  s->url.sanitized);
		else if (!(rc = s->be->delete_ref(c, s->t.qname, s->t.rowid, e->ref,
						  &n, err)) && n != e->after - e->before)
			rc = core_err_set(err, CORE_EDATA,
				"table '%s' in %s: commit %llu of this run wrote %llu rows "
				"after its last checkpoint, and %llu of them are there to "
				"delete: the table was changed since the run stopped; nothing "
				"was changed", s->t.name, s->url.sanitized,
				(unsigned long long)e->seq,
				(unsigned long long)(e->after - e->before), (unsigned long long)n);
		if (!rc)
			rc = dbs__ledger_drop(s->be, c, s->writer, e->seq, err);
	}
	if (!rc)
		return s->be->exec(c, "COMMIT", NULL, 0, NULL, err);
	{
		core_err ignored;

		s->be->exec(c, "ROLLBACK", NULL, 0, NULL, &ignored);
	}
	return rc;
}

/* Effect ledger: the commits after the checkpoint stay; the rows that
 * come again up to their end are checked against them (database_txn.c),
 * not written. */
static int keep_published(dbs_sink *s, const dbs_entries *l,
			  const plg_sink_pos *at, core_err *err)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		if (l->e[i].after > at->pos) {
			n++;
			if (l->e[i].after > s->published)
				s->published = l->e[i].after;
		}
	if (!n)
		return 0;
	if (!(s->after.e = calloc(n, sizeof(*s->after.e))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (size_t i = 0; i < l->n; i++)
		if (l->e[i].after > at->pos) {
			s->after.e[s->after.n] = l->e[i];
			if (!(s->after.e[s->after.n].ref = strdup(l->e[i].ref)))
				return core_err_set(err, CORE_ENOMEM, "out of memory");
			s->after.n++;
		}
	return 0;
}

/* The writer's last commit in the ledger, so a new one never reuses
 * its number (a fresh sink of a run has none). */
static int last_seq(dbs_sink *s, core_err *err)
{
	dbs_entries l = { 0 };
	int rc = dbs__ledger_load(&s->lg, s->db->conn, s->writer, false, &l, err);

	for (size_t i = 0; !rc && i < l.n; i++)
		if (l.e[i].seq > s->seq)
			s->seq = l.e[i].seq;
	dbs__entries_release(&l);
	return rc;
}

/* A resume: the sink continues from the checkpoint's position. */
static int resume_at(dbs_sink *s, const plg_sink_pos *at, core_err *err)
{
	dbs_entries l = { 0 };
	int rc;

	if ((rc = dbs__ledger_load(&s->lg, s->db->conn, s->writer, false, &l, err)))
		return rc;
	if ((rc = check_entries(s, &l, at, err)))
		goto out;
	/* The table was replaced by an earlier commit of this run: append. */
	if (l.n)
		s->replace = false;
	if ((rc = load_table(s, err)))
		goto out;
	/* an effect ledger keeps what was published; ours takes it back */
	if ((rc = s->effect ? keep_published(s, &l, at, err) : take_back(s, &l, at, err)))
		goto out;
	for (size_t i = 0; i < l.n; i++)
		if (l.e[i].seq > s->seq)
			s->seq = l.e[i].seq;
	s->committed = at->pos;
	if (strlen(at->hash) == CORE_SHA256_HEX_LEN)
		memcpy(s->chain, at->hash, sizeof(s->chain));
	memcpy(s->chain_txn, s->chain, sizeof(s->chain));
	remember(s, at->pos);
out:
	dbs__entries_release(&l);
	return rc;
}

/* ----------------------------------------------------------------- ops */

static int start(const plg_env *env, const core_node *options,
		 const plg_sink_pos *at, void **state, core_err *err)
{
	dbs_sink *s = calloc(1, sizeof(*s));
	uint8_t d[CORE_SHA256_LEN];
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	core_sha256("", 0, d);
	core_hex(d, sizeof(d), s->chain);
	memcpy(s->chain_txn, s->chain, sizeof(s->chain));
	if ((rc = parse_options(s, options, err)) ||
	    (rc = writer_key(s, env, err)) ||
	    (rc = dbs__db_attach(s, err)) ||
	    (rc = s->effect ? dbs__effect_check(&s->lg, s->db->conn,
						core_map_get(options, "effect_ledger"),
						s->url.sanitized, err) :
			      dbs__ledger_create(s->be, s->db->conn, err)) ||
	    (rc = at ? resume_at(s, at, err) : last_seq(s, err)) ||
	    (!at && (rc = load_table(s, err)))) {
		sink_free(s);
		return rc;
	}
	*state = s;
	return 0;
}

static int db_open(const plg_env *env, const core_node *options,
		   void **state, core_err *err)
{
	return start(env, options, NULL, state, err);
}

static int db_resume(const plg_env *env, const core_node *options,
		     const plg_sink_pos *at, void **state, core_err *err)
{
	return start(env, options, at, state, err);
}

static int db_check(const core_node *options, core_err *err)
{
	dbs_sink *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	rc = parse_options(s, options, err);
	sink_free(s);
	return rc;
}

static int db_write(void *state, const json_t *row, plg_write_info *info,
		    core_err *err)
{
	return dbs__write(state, row, info, err);
}

static int db_commit(void *state, core_err *err)
{
	return dbs__commit(state, err);
}

static int db_flush(void *state, core_err *err)
{
	dbs_sink *s = state;
	int rc = dbs__commit(s, err);

	/* The ledger keeps what remember()'s rule keeps: the end's
	 * checkpoint may be one of the few not durable yet (a resume that
	 * stopped early writes none). */
	pthread_mutex_lock(&s->db->lock);
	if (!rc && s->nrecent == DBS_RECENT && !s->effect)
		rc = dbs__ledger_trim(s->be, s->db->conn, s->writer, s->recent[0], err);
	pthread_mutex_unlock(&s->db->lock);
	return rc;
}

/* What was written stays, as in a file: committed (a resume deletes the
 * rows after its checkpoint), unless the transaction was lost. */
static int db_close(void *state, core_err *err)
{
	dbs_sink *s = state;
	int rc = 0;

	if (!s)
		return 0;
	if (s->db && (rc = dbs__broken(s, err)))
		dbs__rollback(s->db);
	else if (s->db)
		rc = dbs__commit(s, err);
	if (!rc && s->committed < s->published)
		rc = core_err_set(err, CORE_EDATA,
			"table '%s' in %s: an earlier attempt of this run committed rows "
			"1..%llu, and this one ended after %llu of them: the effect ledger "
			"keeps them (nothing is deleted)", s->t.name, s->url.sanitized,
			(unsigned long long)s->published, (unsigned long long)s->committed);
	sink_free(s);
	return rc;
}

static void db_position(void *state, plg_sink_pos *out)
{
	dbs_sink *s = state;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&s->db->lock);
	out->pos = s->committed;
	out->rows = s->committed;
	memcpy(out->hash, s->chain, sizeof(out->hash));
	remember(s, s->committed);
	pthread_mutex_unlock(&s->db->lock);
	out->fd = -1;
}

static int db_verify(const plg_env *env, const core_node *options,
		     const plg_sink_pos *at, core_err *err)
{
	dbs_sink *s = calloc(1, sizeof(*s));
	dbs_entries l = { 0 };
	dbs_conn *c = NULL;
	char **names = NULL;
	size_t n = 0;
	bool exists = false;
	int rc;

	if (!s)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if ((rc = parse_options(s, options, err)) || !at->pos ||
	    (rc = writer_key(s, env, err)) ||
	    (rc = s->be->connect(&s->url, true, &c, err)) ||
	    (rc = dbs__ledger_load(&s->lg, c, s->writer, true, &l, err)) ||
	    (rc = check_entries(s, &l, at, err)) ||
	    (rc = s->be->columns(c, s->t.name, &names, &n, &exists, err)))
		goto out;
	if (!exists)
		rc = core_err_set(err, CORE_EDATA, "table '%s' in %s is gone; the "
				  "checkpoint counts %llu rows in it (restore it, or start "
				  "a new run)", s->t.name, s->url.sanitized,
				  (unsigned long long)at->pos);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	dbs__entries_release(&l);
	if (s->be)
		s->be->disconnect(c);
	sink_free(s);
	return rc;
}

const plg_sink_ops plg__database_sink = {
	.name = "database",
	.description = "Write rows to a database table (SQLite, PostgreSQL), one "
		       "transaction per checkpoint",
	.options = db_opts,
	.open = db_open,
	.check = db_check,
	.write = db_write,
	.flush = db_flush,
	.close = db_close,
	.position = db_position,
	.resume = db_resume,
	.target = dbs__target,
	.verify = db_verify,
	.commit = db_commit,
};
