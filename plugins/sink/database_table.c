/*
 * database_table.c — the database sink's target table, as ELSPETH's
 * database sink makes it: the columns of the schema (types str TEXT, int
 * INTEGER — BIGINT in PostgreSQL —, float FLOAT, bool BOOLEAN, any TEXT;
 * NOT NULL unless the field ends in '?'), with mode flexible then the
 * first row's other keys as TEXT, with mode observed the first row's
 * keys as TEXT. A row's values go in as their JSON type binds; an object
 * or array becomes the text Python's json.dumps gives it.
 */
#include <stdlib.h>
#include <string.h>

#include "plugins/sink/database_internal.h"

void dbs__table_release(dbs_table *t)
{
	for (size_t i = 0; i < t->ncols; i++)
		free(t->cols[i].name);
	free(t->cols);
	t->cols = NULL;
	t->ncols = 0;
	t->rowid = NULL;
}

static const plg_field *field_of(const plg_schema *sc, const char *name)
{
	for (size_t i = 0; sc && sc->mode != PLG_SCHEMA_OBSERVED && i < sc->nfields; i++)
		if (!strcmp(sc->fields[i].name, name))
			return &sc->fields[i];
	return NULL;
}

static int add(dbs_table *t, const plg_schema *sc, const char *name,
	       core_err *err)
{
	dbs_col *grown = realloc(t->cols, (t->ncols + 1) * sizeof(*grown));

	if (!grown)
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	t->cols = grown;
	if (!(grown[t->ncols].name = strdup(name)))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	grown[t->ncols++].field = field_of(sc, name);
	return 0;
}

static bool has_col(const dbs_table *t, const char *name)
{
	for (size_t i = 0; i < t->ncols; i++)
		if (!strcmp(t->cols[i].name, name))
			return true;
	return false;
}

int dbs__table_set_cols(dbs_table *t, const plg_schema *sc, char **names,
			size_t n, core_err *err)
{
	int rc = 0;

	dbs__table_release(t);
	for (size_t i = 0; i < n && !rc; i++)
		rc = add(t, sc, names[i], err);
	return rc;
}

int dbs__table_cols_for(dbs_table *t, const plg_schema *sc,
			const json_t *row, core_err *err)
{
	bool observed = sc->mode == PLG_SCHEMA_OBSERVED;
	const char *key;
	json_t *v;
	int rc = 0;

	dbs__table_release(t);
	for (size_t i = 0; !observed && i < sc->nfields && !rc; i++)
		rc = add(t, sc, sc->fields[i].name, err);
	if (sc->mode != PLG_SCHEMA_FIXED)
		json_object_foreach((json_t *)row, key, v) {
			if (rc)
				break;
			if (!key[0])
				rc = core_err_set(err, CORE_EDATA, "a field with an empty "
						  "name cannot be a column");
			else if (!has_col(t, key))
				rc = add(t, sc, key, err);
		}
	if (!rc && !t->ncols)
		rc = core_err_set(err, CORE_EDATA, "cannot create table '%s' from a "
				  "row with no fields", t->name);
	if (rc)
		dbs__table_release(t);
	return rc;
}

int dbs__table_create_sql(const dbs_table *t, const dbs_backend *be,
			  bool if_not_exists, core_buf *sql)
{
	int rc;

	core_buf_reset(sql);
	rc = core_buf_printf(sql, "CREATE TABLE %s%s (",
			     if_not_exists ? "IF NOT EXISTS " : "", t->qname);
	for (size_t i = 0; !rc && i < t->ncols; i++) {
		const plg_field *f = t->cols[i].field;

		rc = (i && core_buf_puts(sql, ", ")) || dbs__quote(sql, t->cols[i].name) ||
		     core_buf_printf(sql, " %s%s", be->type_name(f ? f->type : PLG_F_ANY),
				     f && !f->optional ? " NOT NULL" : "");
	}
	return rc || core_buf_putc(sql, ')') ? CORE_ENOMEM : 0;
}

/* ", "-joined names into b (for messages). */
static void list(core_buf *b, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		core_buf_printf(b, "%s%s", i ? ", " : "", names[i]);
	if (!n)
		core_buf_puts(b, "none");
}

int dbs__table_check(const dbs_table *t, const plg_schema *sc,
		     const core_node *n, const char *where, core_err *err)
{
	const char **missing, **extra;
	size_t nm = 0, nx = 0;
	core_buf msg = { 0 };
	int rc = 0;

	if (sc->mode == PLG_SCHEMA_OBSERVED)
		return 0;
	missing = calloc(sc->nfields + 1, sizeof(*missing));
	extra = calloc(t->ncols + 1, sizeof(*extra));
	if (!missing || !extra) {
		free(missing);
		free(extra);
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < sc->nfields; i++)
		if (!has_col(t, sc->fields[i].name))
			missing[nm++] = sc->fields[i].name;
	for (size_t i = 0; sc->mode == PLG_SCHEMA_FIXED && i < t->ncols; i++)
		if (!t->cols[i].field)
			extra[nx++] = t->cols[i].name;
	if (nm || nx) {
		core_buf_puts(&msg, "missing: ");
		list(&msg, missing, nm);
		if (sc->mode == PLG_SCHEMA_FIXED) {
			core_buf_puts(&msg, "; extra: ");
			list(&msg, extra, nx);
		}
		rc = core_err_at(err, CORE_ECONFIG, n,
				 "table '%s' in %s does not match the schema (mode %s: %s) "
				 "(%s); write to a new table or use if_exists: replace",
				 t->name, where, sc->mode == PLG_SCHEMA_FIXED ? "fixed" : "flexible",
				 sc->mode == PLG_SCHEMA_FIXED ? "the same columns as fields" :
				 "every field a column", msg.data ? msg.data : "");
	}
	core_buf_release(&msg);
	free(missing);
	free(extra);
	return rc;
}

/* ------------------------------------------------------------ the row */

static int not_a_column(const dbs_table *t, const char *key, core_err *err)
{
	core_buf b = { 0 };
	int rc;

	for (size_t i = 0; i < t->ncols; i++)
		core_buf_printf(&b, "%s%s", i ? ", " : "", t->cols[i].name);
	rc = core_err_set(err, CORE_EDATA,
			  "field '%s' is not a column of table '%s' (%s); declare it in "
			  "the sink's schema or drop it with field_mapper", key, t->name,
			  b.data ? b.data : "");
	core_buf_release(&b);
	return rc;
}

/* The value of v for its column; the text of an object or array goes
 * into scratch, at *off (the caller points .s at it once scratch stops
 * moving); *off is SIZE_MAX for the others. */
static int value(const plg_field *f, const json_t *v, dbs_val *out,
		 core_buf *scratch, size_t *off)
{
	memset(out, 0, sizeof(*out));
	*off = SIZE_MAX;
	switch (json_typeof(v)) {
	case JSON_STRING:
		out->kind = DBS_V_TEXT;
		out->s = json_string_value(v);
		out->len = json_string_length(v);
		return 0;
	case JSON_INTEGER:
		if (f && f->type == PLG_F_FLOAT) {
			out->kind = DBS_V_REAL;
			out->d = (double)json_integer_value(v);
		} else {
			out->kind = DBS_V_INT;
			out->i = json_integer_value(v);
		}
		return 0;
	case JSON_REAL:
		out->kind = DBS_V_REAL;
		out->d = json_real_value(v);
		return 0;
	case JSON_TRUE:
	case JSON_FALSE:
		out->kind = DBS_V_BOOL;
		out->i = json_is_true(v);
		return 0;
	case JSON_NULL:
		return 0;
	case JSON_OBJECT:
	case JSON_ARRAY:
		break;
	}
	out->kind = DBS_V_TEXT;
	*off = scratch->len;
	if (core_json_append_py(scratch, v, -1, 0))
		return CORE_ENOMEM;
	out->len = scratch->len - *off;
	return 0;
}

int dbs__table_insert(const dbs_table *t, const json_t *row, core_buf *sql,
		      dbs_val **vals, size_t *cap, size_t *n, core_buf *scratch,
		      core_err *err)
{
	size_t found = 0, *offs;
	int rc = 0;

	if (*cap < t->ncols + 1) {
		dbs_val *grown = realloc(*vals, (t->ncols + 1) * sizeof(*grown));

		if (!grown)
			return core_err_set(err, CORE_ENOMEM, "out of memory");
		*vals = grown;
		*cap = t->ncols + 1;
	}
	if (!(offs = calloc(t->ncols + 1, sizeof(*offs))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	core_buf_reset(sql);
	core_buf_reset(scratch);
	rc = core_buf_printf(sql, "INSERT INTO %s (", t->qname);
	for (size_t i = 0; !rc && i < t->ncols; i++) {
		const json_t *v = json_object_get(row, t->cols[i].name);

		if (!v)
			continue;
		rc = (found && core_buf_puts(sql, ", ")) || dbs__quote(sql, t->cols[i].name) ||
		     value(t->cols[i].field, v, &(*vals)[found], scratch, &offs[found]);
		found++;
	}
	if (!rc && found != json_object_size(row)) {
		const char *key;
		json_t *v;

		json_object_foreach((json_t *)row, key, v)
			if (!has_col(t, key))
				break;
		free(offs);
		return not_a_column(t, key ? key : "?", err);
	}
	if (!rc && !found) { /* {} : every column its default */
		core_buf_reset(sql);
		rc = core_buf_printf(sql, "INSERT INTO %s DEFAULT VALUES", t->qname);
	} else if (!rc) {
		rc = core_buf_puts(sql, ") VALUES (");
		for (size_t i = 0; !rc && i < found; i++)
			rc = core_buf_printf(sql, "%s$%zu", i ? ", " : "", i + 1);
		if (!rc)
			rc = core_buf_putc(sql, ')');
	}
	for (size_t i = 0; !rc && i < found; i++)
		if (offs[i] != SIZE_MAX)
			(*vals)[i].s = scratch->data + offs[i];
	free(offs);
	*n = found;
	return rc ? core_err_set(err, CORE_ENOMEM, "out of memory") : 0;
}
