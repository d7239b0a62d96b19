/*
 * database_url.c — the database sink's `url`: SQLAlchemy's spellings of
 * SQLite and PostgreSQL urls (what ELSPETH's settings hold), and the url
 * without its password for messages and the audit trail.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/sink/database_internal.h"

void dbs__url_release(dbs_url *u)
{
	free(u->conninfo);
	free(u->sanitized);
	memset(u, 0, sizeof(*u));
}

/* Whether scheme [s, e) is name or name+driver (SQLAlchemy). */
static bool scheme_is(const char *s, const char *e, const char *name)
{
	size_t n = strlen(name);

	return (size_t)(e - s) >= n && !strncasecmp(s, name, n) &&
	       (s + n == e || s[n] == '+');
}

static int sqlite_path(const core_node *n, const char *rest, dbs_url *u,
		       core_err *err)
{
	const char *path;

	if (strchr(rest, '?'))
		return core_err_at(err, CORE_ECONFIG, n,
				   "query parameters are not supported in a sqlite url "
				   "(got '%s')", u->sanitized);
	if (rest[0] && rest[0] != '/')
		return core_err_at(err, CORE_ECONFIG, n,
				   "a sqlite url is sqlite:///relative/file.db or "
				   "sqlite:////absolute/file.db (got '%s')", u->sanitized);
	path = rest[0] ? rest + 1 : "";
	u->kind = DBS_SQLITE;
	u->conninfo = strdup(!path[0] || !strcmp(path, ":memory:") ? ":memory:" : path);
	return u->conninfo ? 0 : core_err_set(err, CORE_ENOMEM, "out of memory");
}

int dbs__url_parse(const core_node *n, dbs_url *u, core_err *err)
{
	const char *url, *sep;
	int rc;

	memset(u, 0, sizeof(*u));
	if ((rc = core_node_str(n, &url, err)))
		return rc;
	if (!(u->sanitized = core_url_sanitize(url)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	sep = strstr(url, "://");
	if (!sep)
		rc = core_err_at(err, CORE_ECONFIG, n,
				 "expected a database url such as sqlite:///out/results.db "
				 "or postgresql://user@host/dbname (got '%s')", u->sanitized);
	else if (scheme_is(url, sep, "sqlite"))
		rc = sqlite_path(n, sep + 3, u, err);
	else if (scheme_is(url, sep, "postgresql")) {
		size_t len = strlen(sep) + sizeof("postgresql");

		u->kind = DBS_PG;
		if ((u->conninfo = malloc(len)))
			snprintf(u->conninfo, len, "postgresql%s", sep);
		else
			rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	} else if (scheme_is(url, sep, "postgres"))
		rc = core_err_at(err, CORE_ECONFIG, n,
				 "write postgresql:// (as SQLAlchemy, and so ELSPETH, "
				 "requires), not postgres://");
	else
		rc = core_err_at(err, CORE_ECONFIG, n,
				 "database '%.*s' is not supported: the database sink "
				 "writes to SQLite (sqlite:///file.db) and PostgreSQL "
				 "(postgresql://user@host/dbname)", (int)(sep - url), url);
	if (rc)
		dbs__url_release(u);
	return rc;
}

/* ------------------------------------------------------------- targets
 * plg_sink_ops.target hands out a string that must stay valid while the
 * options do: each distinct one is kept once for the process (a cache of
 * names shared by every run, not any run's state). */

static pthread_mutex_t target_lock = PTHREAD_MUTEX_INITIALIZER;
static char **targets;
static size_t ntargets;

static const char *keep(char *s)
{
	const char *kept = NULL;
	char **grown;

	pthread_mutex_lock(&target_lock);
	for (size_t i = 0; i < ntargets && !kept; i++)
		if (!strcmp(targets[i], s))
			kept = targets[i];
	if (!kept && (grown = realloc(targets, (ntargets + 1) * sizeof(*grown)))) {
		targets = grown;
		kept = targets[ntargets++] = s;
		s = NULL;
	}
	pthread_mutex_unlock(&target_lock);
	free(s);
	return kept;
}

const char *dbs__target(const plg_env *env, const core_node *options)
{
	const core_node *url = core_map_get(options, "url");
	const core_node *table = core_map_get(options, "table");
	char *clean, *s;
	size_t n;

	(void)env; /* a database table is no part file */
	if (!url || url->kind != CORE_NODE_SCALAR || !table ||
	    table->kind != CORE_NODE_SCALAR)
		return NULL;
	if (!(clean = core_url_sanitize(url->value)))
		return NULL;
	n = strlen(clean) + strlen(table->value) + 8;
	if ((s = malloc(n)))
		snprintf(s, n, "db://%s@%s", table->value, clean);
	free(clean);
	return s ? keep(s) : NULL;
}

int dbs__quote(core_buf *b, const char *name)
{
	int rc = core_buf_putc(b, '"');

	for (const char *p = name; !rc && *p; p++)
		rc = *p == '"' ? core_buf_puts(b, "\"\"") : core_buf_putc(b, *p);
	return rc ? rc : core_buf_putc(b, '"');
}

int dbs__col_add(dbs_col_list *l, const char *name)
{
	char **grown;

	if (!(grown = realloc(l->names, (l->n + 1) * sizeof(*grown))) ||
	    !(grown[l->n] = strdup(name))) {
		if (grown)
			l->names = grown;
		l->oom = true;
		return CORE_ENOMEM;
	}
	l->names = grown;
	l->n++;
	return 0;
}

int dbs__col_done(dbs_col_list *l, int rc, char ***names, size_t *n,
		  core_err *err)
{
	if (l->oom)
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	if (rc) {
		for (size_t i = 0; i < l->n; i++)
			free(l->names[i]);
		free(l->names);
		return rc;
	}
	*names = l->names;
	*n = l->n;
	return 0;
}
