/*
 * t_schema.c — describe_schema: every table with its columns (declared
 * type, nullability), primary key and foreign keys, as SQLAlchemy's
 * inspector reports them to ELSPETH, read from SQLite's table_info and
 * foreign_key_list.
 */
#include <ctype.h>
#include <string.h>

#include "mcp/mcp_internal.h"

static const char *str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* SQLAlchemy's name of a declared type: upper case; none is "NULL". */
static json_t *type_name(const char *declared)
{
	char buf[128];
	size_t i;

	if (!declared || !*declared)
		return json_string("NULL");
	for (i = 0; declared[i] && i + 1 < sizeof(buf); i++)
		buf[i] = (char)toupper((unsigned char)declared[i]);
	buf[i] = '\0';
	return json_string(buf);
}

static int columns(mcp_server *s, const char *table, json_t *out, core_err *err)
{
	json_t *rows, *cols = NULL, *pk = NULL, *c;
	size_t i;
	int rc = mcp__rows(s, &rows, err, "SELECT name, type, \"notnull\", pk "
			   "FROM pragma_table_info(?) ORDER BY cid", "s", table);

	if (!rc && !(cols = json_array()))
		rc = mcp__oom(err);
	json_array_foreach(rc ? NULL : rows, i, c) {
		if ((rc = mcp__append(cols, json_pack("{s:O, s:o, s:b}", "name",
			json_object_get(c, "name"), "type", type_name(str(c, "type")),
			"nullable", !json_integer_value(json_object_get(c, "notnull"))), err)))
			break;
	}
	json_decref(rows);
	rows = NULL;
	/* The key's columns in key order (pk = 1, 2, ...). */
	if (!rc)
		rc = mcp__rows(s, &rows, err, "SELECT name FROM pragma_table_info(?) "
			       "WHERE pk > 0 ORDER BY pk", "s", table);
	if (!rc && !(pk = json_array()))
		rc = mcp__oom(err);
	json_array_foreach(rc ? NULL : rows, i, c)
		if ((rc = mcp__append(pk, json_incref(json_object_get(c, "name")), err)))
			break;
	json_decref(rows);
	if (!rc) {
		rc = mcp__set(out, "columns", cols, err);
		cols = NULL;
	}
	if (!rc) {
		rc = mcp__set(out, "primary_key", pk, err);
		pk = NULL;
	}
	json_decref(cols);
	json_decref(pk);
	return rc;
}

/* "table(col, col)": the referred columns, or the table's primary key
 * when the foreign key names none. */
static int reference(mcp_server *s, const char *table, const json_t *fk_rows,
		     long long id, json_t **out, core_err *err)
{
	core_buf b = { 0 };
	json_t *r, *pk = NULL;
	size_t i, n = 0;
	int rc = core_buf_printf(&b, "%s(", table);

	json_array_foreach(fk_rows, i, r) {
		if (json_integer_value(json_object_get(r, "id")) != id || rc)
			continue;
		if (!str(r, "to") && !pk)
			rc = mcp__rows(s, &pk, err, "SELECT name FROM pragma_table_info(?) "
				       "WHERE pk > 0 ORDER BY pk", "s", table);
		if (!rc)
			rc = core_buf_printf(&b, "%s%s", n ? ", " : "", str(r, "to") ? str(r, "to")
					     : str(json_array_get(pk, n), "name"));
		n++;
	}
	if (!rc)
		rc = core_buf_putc(&b, ')');
	json_decref(pk);
	if (!rc && !(*out = json_string(b.data)))
		rc = mcp__oom(err);
	core_buf_release(&b);
	return rc == CORE_ENOMEM ? mcp__oom(err) : rc;
}

/* The foreign keys in declaration order: SQLite numbers them from the
 * last declared (id 0) up. */
static int foreign_keys(mcp_server *s, const char *table, json_t *out,
			core_err *err)
{
	json_t *rows, *fks = json_array(), *r, *fk = NULL, *cols = NULL, *ref = NULL;
	long long id = -1;
	size_t i;
	int rc = mcp__rows(s, &rows, err, "SELECT id, seq, \"table\", \"from\", \"to\" "
			   "FROM pragma_foreign_key_list(?) ORDER BY id DESC, seq", "s", table);

	json_array_foreach(rc ? NULL : rows, i, r) {
		long long rid = json_integer_value(json_object_get(r, "id"));

		if (rid != id) {
			id = rid;
			if ((rc = reference(s, str(r, "table"), rows, id, &ref, err)))
				break;
			cols = json_array();
			fk = json_pack("{s:o, s:o}", "columns", cols, "references", ref);
			if ((rc = mcp__append(fks, fk, err)))
				break;
		}
		if ((rc = mcp__append(cols, json_incref(json_object_get(r, "from")), err)))
			break;
	}
	json_decref(rows);
	if (rc) {
		json_decref(fks);
		return rc;
	}
	return mcp__set(out, "foreign_keys", fks, err);
}

int mcp__describe_schema(mcp_server *s, const json_t *a, mcp_result *r,
			 core_err *err)
{
	json_t *names, *tables = json_object(), *n, *t;
	size_t i;
	int rc = mcp__rows(s, &names, err, "SELECT name FROM sqlite_master WHERE type = 'table' "
			   "AND name NOT LIKE 'sqlite~_%' ESCAPE '~' ORDER BY name", "");

	(void)a;
	json_array_foreach(rc ? NULL : names, i, n) {
		const char *name = str(n, "name");

		t = json_object();
		if ((rc = mcp__set(tables, name, t, err)) ||
		    (rc = columns(s, name, t, err)) || (rc = foreign_keys(s, name, t, err)))
			break;
	}
	if (!rc && !(r->value = json_pack("{s:O, s:I, s:s}", "tables", tables, "table_count",
					  (json_int_t)json_object_size(tables), "hint",
					  "Use the 'query' tool with SELECT statements to explore data")))
		rc = mcp__oom(err);
	json_decref(names);
	json_decref(tables);
	return rc;
}
