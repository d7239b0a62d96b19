/*
 * pg.c — a PostgreSQL connection as the project opens them (core.h):
 * the database sink's and the SQL trail's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "core/core.h"

void core_pg_message(char *out, size_t cap, const char *msg)
{
	size_t n;

	snprintf(out, cap, "%s", msg && *msg ? msg : "no message");
	n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
	for (char *p = out; *p; p++)
		if (*p == '\n')
			*p = ' ';
}

static void quiet(void *arg, const char *msg)
{
	(void)arg, (void)msg; /* NOTICEs ("already exists, skipping") */
}

int core_pg_connect(const char *url, bool readonly, struct pg_conn **out, char **shown,
		    core_err *err)
{
	/* The url comes last: what it says wins over these defaults. */
	const char *keys[5] = { "connect_timeout", "fallback_application_name" };
	const char *vals[5] = { "10", "elspeth" };
	const char *sep = strstr(url, "://");
	char *plain = NULL, msg[1024];
	PGconn *pg;
	int k = 2, rc;

	*out = NULL;
	if (!(*shown = core_url_sanitize(url)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	/* SQLAlchemy's postgresql+psycopg2:// is libpq's postgresql:// */
	if (sep && memchr(url, '+', (size_t)(sep - url))) {
		size_t n = strlen(sep) + sizeof("postgresql");

		if (!(plain = malloc(n)))
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		snprintf(plain, n, "postgresql%s", sep);
	}
	if (readonly) {
		keys[k] = "options";
		vals[k++] = "-c default_transaction_read_only=on";
	}
	keys[k] = "dbname";
	vals[k++] = plain ? plain : url;
	pg = PQconnectdbParams(keys, vals, 1);
	free(plain);
	if (!pg)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	if (PQstatus(pg) != CONNECTION_OK) {
		core_pg_message(msg, sizeof(msg), PQerrorMessage(pg));
		rc = core_err_set(err, CORE_EIO, "cannot connect to %s: %s", *shown, msg);
		PQfinish(pg);
		return rc;
	}
	PQsetNoticeProcessor(pg, quiet, NULL);
	if (PQsetClientEncoding(pg, "UTF8")) {
		core_pg_message(msg, sizeof(msg), PQerrorMessage(pg));
		rc = core_err_set(err, CORE_EIO, "%s: %s", *shown, msg);
		PQfinish(pg);
		return rc;
	}
	*out = pg;
	return 0;
}
