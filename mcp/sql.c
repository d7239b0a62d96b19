/* sql.c — running the tools' SQL: binding, rows as JSON objects. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp_internal.h"

int mcp__db_error(mcp_server *s, core_err *err, const char *what)
{
	return core_err_set(err, CORE_EIO, "%s: %s", what,
			    s->db ? sqlite3_errmsg(s->db) : "out of memory");
}

int mcp__oom(core_err *err)
{
	return core_err_set(err, CORE_ENOMEM, "out of memory");
}

static json_t *text_value(const char *p, size_t n)
{
	core_buf b = { 0 };
	json_t *v;

	if (core_utf8_valid(p, n))
		return json_stringn(p ? p : "", n);
	if (core_utf8_append_lossy(&b, p, n)) {
		core_buf_release(&b);
		return NULL;
	}
	v = json_stringn(b.data, b.len);
	core_buf_release(&b);
	return v;
}

static json_t *blob_value(const unsigned char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	char *s = malloc(2 * n + 1);
	json_t *v;

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		s[2 * i] = hex[p[i] >> 4];
		s[2 * i + 1] = hex[p[i] & 15];
	}
	v = json_stringn(s, 2 * n);
	free(s);
	return v;
}

json_t *mcp__value(sqlite3_stmt *st, int i)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		return json_integer(sqlite3_column_int64(st, i));
	case SQLITE_FLOAT:
		return json_real(sqlite3_column_double(st, i));
	case SQLITE_TEXT:
		return text_value((const char *)sqlite3_column_text(st, i),
				  (size_t)sqlite3_column_bytes(st, i));
	case SQLITE_BLOB:
		return blob_value(sqlite3_column_blob(st, i),
				  (size_t)sqlite3_column_bytes(st, i));
	default:
		return json_null();
	}
}

json_t *mcp__row_object(sqlite3_stmt *st)
{
	json_t *o = json_object();
	int n = sqlite3_column_count(st);

	for (int i = 0; o && i < n; i++) {
		const char *name = sqlite3_column_name(st, i);
		json_t *v = mcp__value(st, i);

		/* A repeated name keeps its first place and its last value,
		 * as Python's dict(zip(columns, row)) does. */
		if (!name || !v || json_object_set_new(o, name, v)) {
			if (!name)
				json_decref(v);
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

/* Prepares sql and binds the arguments described by types. */
static int prepare(mcp_server *s, sqlite3_stmt **st, core_err *err,
		   const char *sql, const char *types, va_list ap)
{
	int rc = sqlite3_prepare_v2(s->db, sql, -1, st, NULL);

	if (rc != SQLITE_OK)
		return mcp__db_error(s, err, "reading the audit trail");
	for (int i = 0; types && types[i]; i++) {
		if (types[i] == 's') {
			const char *v = va_arg(ap, const char *);

			rc = v ? sqlite3_bind_text(*st, i + 1, v, -1, SQLITE_TRANSIENT)
			       : sqlite3_bind_null(*st, i + 1);
		} else {
			rc = sqlite3_bind_int64(*st, i + 1, va_arg(ap, long long));
		}
		if (rc != SQLITE_OK) {
			sqlite3_finalize(*st);
			*st = NULL;
			return mcp__db_error(s, err, "reading the audit trail");
		}
	}
	return 0;
}

/* Steps st to the end (max < 0) or through at most max rows. */
static int collect(mcp_server *s, sqlite3_stmt *st, long max, json_t *arr,
		   core_err *err)
{
	int rc;

	for (long n = 0; max < 0 || n < max; n++) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_DONE)
			return 0;
		if (rc != SQLITE_ROW)
			return mcp__db_error(s, err, "reading the audit trail");
		if (mcp__append(arr, mcp__row_object(st), err))
			return CORE_ENOMEM;
	}
	return 0;
}

static int run(mcp_server *s, long max, json_t **out, core_err *err,
	       const char *sql, const char *types, va_list ap)
{
	sqlite3_stmt *st;
	json_t *arr;
	int rc;

	*out = NULL;
	if ((rc = prepare(s, &st, err, sql, types, ap)))
		return rc;
	arr = json_array();
	rc = arr ? collect(s, st, max, arr, err) : mcp__oom(err);
	sqlite3_finalize(st);
	if (rc)
		json_decref(arr);
	else
		*out = arr;
	return rc;
}

int mcp__rows(mcp_server *s, json_t **out, core_err *err, const char *sql,
	      const char *types, ...)
{
	va_list ap;
	int rc;

	va_start(ap, types);
	rc = run(s, -1, out, err, sql, types, ap);
	va_end(ap);
	return rc;
}

int mcp__row(mcp_server *s, json_t **out, core_err *err, const char *sql,
	     const char *types, ...)
{
	json_t *arr;
	va_list ap;
	int rc;

	*out = NULL;
	va_start(ap, types);
	rc = run(s, 1, &arr, err, sql, types, ap);
	va_end(ap);
	if (rc)
		return rc;
	*out = json_incref(json_array_get(arr, 0));
	json_decref(arr);
	return 0;
}

int mcp__count(mcp_server *s, long long *n, core_err *err, const char *sql,
	       const char *types, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int rc;

	*n = 0;
	va_start(ap, types);
	rc = prepare(s, &st, err, sql, types, ap);
	va_end(ap);
	if (rc)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*n = sqlite3_column_int64(st, 0);
	rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? 0
		: mcp__db_error(s, err, "reading the audit trail");
	sqlite3_finalize(st);
	return rc;
}

bool mcp__has_table(mcp_server *s, const char *name)
{
	long long n = 0;
	core_err err = { 0 };

	mcp__count(s, &n, &err,
		   "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
		   "s", name);
	return n > 0;
}

int mcp__set(json_t *obj, const char *key, json_t *v, core_err *err)
{
	if (!v || json_object_set_new(obj, key, v))
		return mcp__oom(err);
	return 0;
}

int mcp__append(json_t *arr, json_t *v, core_err *err)
{
	if (!v || json_array_append_new(arr, v))
		return mcp__oom(err);
	return 0;
}

int mcp__payload(mcp_server *s, const char *hash, json_t **out, core_err *err)
{
	sqlite3_stmt *st;
	json_error_t je;
	int rc;

	*out = NULL;
	if (!s->payloads || !hash)
		return 0;
	if (sqlite3_prepare_v2(s->db, "SELECT data FROM elspeth_payloads WHERE hash = ?",
			       -1, &st, NULL) != SQLITE_OK)
		return mcp__db_error(s, err, "reading a payload");
	sqlite3_bind_text(st, 1, hash, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*out = json_loadb(sqlite3_column_blob(st, 0),
				  (size_t)sqlite3_column_bytes(st, 0),
				  JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		rc = *out ? 0 : core_err_set(err, CORE_EDATA,
			"the payload %s is not JSON: %s", hash, je.text);
	} else {
		rc = rc == SQLITE_DONE ? 0 : mcp__db_error(s, err, "reading a payload");
	}
	sqlite3_finalize(st);
	return rc;
}
