/*
 * expr_run.c — the public entry points that evaluate a compiled
 * expression: expr_eval (a JSON result) and expr_route_key (a
 * string key, written without building JSON).
 */
#include <stdio.h>
#include <string.h>

#include "expr/expr_internal.h"

static int check_args(const expr_code *e, const json_t *row, core_err *err)
{
	if (!e)
		return core_err_set(err, CORE_EINTERNAL, "no expression given");
	if (!json_is_object(row))
		return core_err_set(err, CORE_EEXPR,
				    "row is not a JSON object (expression `%.200s`)",
				    e->src);
	return 0;
}

int expr_eval(const expr_code *e, const json_t *row, json_t **result,
		  core_err *err)
{
	expr__ctx c = { .e = e, .row = row, .err = err };
	char num[40];
	expr__val v;
	int rc;

	*result = NULL;
	if ((rc = check_args(e, row, err)) ||
	    (rc = expr__eval_node(&c, e->root, &v)))
		goto out_release;
	*result = expr__to_json(&v);
	if (*result)
		goto out_release;
	if (v.kind == DAG__V_FLOAT) {
		core_format_double_py(v.u.d, num, sizeof(num));
		rc = core_err_set(err, CORE_EEXPR,
				  "result %s is not a finite number and has no JSON form",
				  num);
	} else {
		/* (jansson's out of memory aside) a container holding one */
		rc = core_err_set(err, CORE_EEXPR,
				  "the result (a %s) has no JSON form: it holds a number that is not finite or a dict key that is not a string",
				  expr__type_name(&v));
	}
out_release:
	expr__arena_release(&c.arena);
	return rc;
}

static int put_key(char *buf, size_t cap, const char *s, size_t n,
		   core_err *err)
{
	if (n >= cap)
		return core_err_set(err, CORE_EEXPR,
				    "route key of %zu bytes does not fit in %zu",
				    n, cap);
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

static int format_key(const expr__val *v, char *buf, size_t cap,
		      core_err *err)
{
	core_buf b = { 0 };
	char num[40];
	int rc;

	switch (v->kind) {
	case DAG__V_BOOL:
		return put_key(buf, cap, v->u.b ? "true" : "false",
			       v->u.b ? 4 : 5, err);
	case DAG__V_STR:
		return put_key(buf, cap, v->u.s.p, v->u.s.n, err);
	case DAG__V_NONE:
		return put_key(buf, cap, "None", 4, err);
	case DAG__V_INT:
		snprintf(num, sizeof(num), "%lld", v->u.i);
		return put_key(buf, cap, num, strlen(num), err);
	case DAG__V_FLOAT:
		core_format_double_py(v->u.d, num, sizeof(num));
		return put_key(buf, cap, num, strlen(num), err);
	default:
		break;
	}
	if (expr__append_str(&b, v, false))
		rc = core_err_set(err, CORE_ENOMEM, "out of memory");
	else
		rc = put_key(buf, cap, b.data, b.len, err);
	core_buf_release(&b);
	return rc;
}

int expr_route_key(const expr_code *e, const json_t *row, char *buf,
		       size_t cap, core_err *err)
{
	expr__ctx c = { .e = e, .row = row, .err = err };
	expr__val v;
	int rc;

	if (cap)
		buf[0] = '\0';
	if (!(rc = check_args(e, row, err)) &&
	    !(rc = expr__eval_node(&c, e->root, &v)))
		rc = format_key(&v, buf, cap, err);
	expr__arena_release(&c.arena);
	return rc;
}
