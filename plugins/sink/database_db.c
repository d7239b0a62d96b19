/*
 * database_db.c — the databases the database sinks of the process write:
 * one connection (and so one transaction) per database, shared by the
 * sinks whose urls name it (ADR 0023). SQLite lets one connection write
 * a file at a time: two sinks with a transaction open each on one file
 * would wait for each other until the busy timeout.
 *
 * A database is known by its backend and url (a SQLite file by its real
 * directory and name, so two spellings of one file are one database; an
 * in-memory SQLite database is its sink's own, as with SQLAlchemy). Two
 * sinks writing the same table of one database are refused: a resume
 * could not tell their rows apart in PostgreSQL (one transaction id).
 *
 * Thread rules: attach and detach run when sinks open and close (one
 * thread); the registry's lock guards the list. A dbs_db's transaction
 * is guarded by its own lock (database_txn.c).
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/sink/database_internal.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static dbs_db **dbs;
static size_t ndbs;

/* The registry's key of s's database, malloc'd. */
static char *db_key(dbs_sink *s, core_err *err)
{
	const char *info = s->url.conninfo;
	char dir[PATH_MAX], real[PATH_MAX], *d, *b, *key;
	core_buf k = { 0 };
	int rc;

	if (s->url.kind == DBS_PG)
		rc = core_buf_printf(&k, "pg:%s", info);
	else if (!strcmp(info, ":memory:"))
		rc = core_buf_printf(&k, "sqlite-memory:%p", (void *)s);
	else {
		if ((rc = core_mkdir_parents(info, err)))
			return core_err_prefix(err, "%s", s->url.sanitized), NULL;
		snprintf(dir, sizeof(dir), "%s", info);
		d = dirname(dir);
		if (!realpath(d, real))
			snprintf(real, sizeof(real), "%s", d);
		snprintf(dir, sizeof(dir), "%s", info);
		b = basename(dir);
		rc = core_buf_printf(&k, "sqlite:%s/%s", real, b);
	}
	if (rc || !(key = core_buf_steal(&k))) {
		core_buf_release(&k);
		core_err_set(err, CORE_ENOMEM, "out of memory");
		return NULL;
	}
	return key;
}

static void db_free(dbs_db *db)
{
	if (!db)
		return;
	if (db->be)
		db->be->disconnect(db->conn);
	core_buf_release(&db->log);
	pthread_mutex_destroy(&db->lock);
	free(db->sinks);
	free(db->key);
	free(db);
}

static dbs_db *db_new(dbs_sink *s, char *key, core_err *err)
{
	dbs_db *db = calloc(1, sizeof(*db));

	if (!db) {
		free(key);
		core_err_set(err, CORE_ENOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&db->lock, NULL);
	db->key = key;
	db->be = s->be;
	if (s->be->connect(&s->url, false, &db->conn, err)) {
		db->be = NULL;
		db_free(db);
		return NULL;
	}
	return db;
}

/* A sink already attached to db that writes s's table, or NULL. */
static dbs_sink *same_table(const dbs_db *db, const dbs_sink *s)
{
	for (size_t i = 0; i < db->nsinks; i++)
		if (!strcmp(db->sinks[i]->t.name, s->t.name))
			return db->sinks[i];
	return NULL;
}

static int join(dbs_db *db, dbs_sink *s, core_err *err)
{
	dbs_sink **grown, *other = same_table(db, s);

	if (other)
		return core_err_at(err, CORE_ECONFIG, core_map_get(s->options, "table"),
				   "table '%s' in %s is written by another database sink "
				   "too (%s); two sinks cannot share a table: route their "
				   "rows to one of them", s->t.name, s->url.sanitized,
				   other->options->path ? other->options->path : "?");
	if (!(grown = realloc(db->sinks, (db->nsinks + 1) * sizeof(*grown))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	db->sinks = grown;
	grown[db->nsinks++] = s;
	if (!db->where)
		db->where = s->url.sanitized;
	s->db = db;
	return 0;
}

int dbs__db_attach(dbs_sink *s, core_err *err)
{
	char *key = db_key(s, err);
	dbs_db *db = NULL, **grown;
	int rc;

	if (!key)
		return err->code;
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < ndbs && !db; i++)
		if (!strcmp(dbs[i]->key, key))
			db = dbs[i];
	if (db) {
		free(key);
		rc = join(db, s, err);
	} else if (!(db = db_new(s, key, err))) {
		rc = err->code;
	} else if (!(grown = realloc(dbs, (ndbs + 1) * sizeof(*grown)))) {
		db_free(db);
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	} else {
		dbs = grown;
		dbs[ndbs++] = db;
		if ((rc = join(db, s, err))) {
			ndbs--;
			db_free(db);
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

void dbs__db_detach(dbs_sink *s)
{
	dbs_db *db = s->db;
	size_t i;

	if (!db)
		return;
	pthread_mutex_lock(&reg_lock);
	for (i = 0; i < db->nsinks && db->sinks[i] != s; i++)
		;
	if (i < db->nsinks)
		memmove(&db->sinks[i], &db->sinks[i + 1], (db->nsinks - i - 1) * sizeof(*db->sinks));
	db->nsinks -= i < db->nsinks;
	if (db->where == s->url.sanitized)
		db->where = db->nsinks ? db->sinks[0]->url.sanitized : NULL;
	if (!db->nsinks) {
		for (i = 0; i < ndbs && dbs[i] != db; i++)
			;
		if (i < ndbs)
			memmove(&dbs[i], &dbs[i + 1], (ndbs - i - 1) * sizeof(*dbs));
		ndbs -= i < ndbs;
		if (!ndbs) {
			free(dbs);
			dbs = NULL;
		}
		db_free(db);
	}
	s->db = NULL;
	pthread_mutex_unlock(&reg_lock);
}
