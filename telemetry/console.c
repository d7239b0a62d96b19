/*
 * console.c — ELSPETH's console exporter: each event one line on stdout
 * or stderr, as JSON (format: json, the default) or as its "pretty" text
 * (telemetry/exporters/console.py; tests/fixtures/elspeth_telemetry/
 * SPEC.md §2.1):
 *
 *   {"timestamp": "2026-11-28T01:43:03.292912+00:00", "run_id": "7", ...,
 *    "event_type": "RunStarted"}
 *   [2026-11-28T01:43:03.292912+00:00] RunStarted: 7 (config_hash=…, source_plugin=csv)
 *
 * JSON is Python's json.dumps (", " and ": ", ASCII only, floats as
 * repr); pretty lists every field but timestamp and run_id, sorted by
 * name, None left out, values as Python's str() prints them. Each line
 * is one write, so lines from other writers never cut into it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telemetry/tel_internal.h"

typedef struct console {
	bool pretty;
	int fd;
	core_buf line;
} console;

static int check_choice(const tel_opts *o, const char *key, const char *dflt,
			const char *const *choices, const char *list, int *out,
			core_err *err)
{
	const char *v = dflt;
	int rc = tel__opt_str(o, key, NULL, false, &v, err);

	if (rc)
		return rc;
	for (int i = 0; choices[i]; i++)
		if (!strcmp(v, choices[i])) {
			*out = i;
			return 0;
		}
	return tel__fail(o, key, err, "Invalid %s '%s'. Must be one of: %s", key, v, list);
}

static int console_configure(const core_node *options, void **state, core_err *err)
{
	static const char *const formats[] = { "json", "pretty", NULL };
	static const char *const outputs[] = { "stdout", "stderr", NULL };
	tel_opts o = { .exporter = "console", .map = options };
	int format = 0, output = 0, rc;
	console *c;

	/* A null value is a type error in ELSPETH ("got NoneType"). */
	if ((options && core_map_get(options, "format") &&
	     core_node_is_null(core_map_get(options, "format")) &&
	     (rc = tel__fail(&o, "format", err, "'format' must be a string, got NoneType"))) ||
	    (rc = check_choice(&o, "format", "json", formats, "json, pretty", &format, err)) ||
	    (options && core_map_get(options, "output") &&
	     core_node_is_null(core_map_get(options, "output")) &&
	     (rc = tel__fail(&o, "output", err, "'output' must be a string, got NoneType"))) ||
	    (rc = check_choice(&o, "output", "stdout", outputs, "stderr, stdout", &output, err)))
		return rc;
	if (!(c = calloc(1, sizeof(*c))))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	c->pretty = format == 1;
	c->fd = output ? STDERR_FILENO : STDOUT_FILENO;
	*state = c;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int pretty(core_buf *b, const tel_record *r, const char *ts)
{
	const char **keys;
	size_t n = 0, cap = json_object_size(r->fields);
	const char *k;
	json_t *v;
	int rc = 0;

	if (!(keys = calloc(cap ? cap : 1, sizeof(*keys))))
		return CORE_ENOMEM;
	json_object_foreach(r->fields, k, v)
		if (strcmp(k, "run_id") && !json_is_null(v))
			keys[n++] = k;
	qsort(keys, n, sizeof(*keys), cmp_str);
	core_buf_printf(b, "[%s] %s: %s", ts, r->type, r->run_id);
	for (size_t i = 0; !rc && i < n; i++) {
		core_buf_puts(b, i ? ", " : " (");
		core_buf_puts(b, keys[i]);
		core_buf_putc(b, '=');
		rc = core_py_str(b, json_object_get(r->fields, keys[i]));
	}
	if (n)
		core_buf_putc(b, ')');
	free(keys);
	return rc;
}

static int json_line(core_buf *b, const tel_record *r, const char *ts)
{
	json_t *d = json_object();
	json_t *v;
	const char *k;
	int rc;

	if (!d)
		return CORE_ENOMEM;
	json_object_set_new(d, "timestamp", json_string(ts));
	json_object_foreach(r->fields, k, v)
		json_object_set(d, k, v);
	json_object_set_new(d, "event_type", json_string(r->type));
	rc = core_json_append_py(b, d, -1, 0);
	json_decref(d);
	return rc;
}

static int console_export(void *state, const tel_record *r, core_err *err)
{
	console *c = state;
	char ts[40];
	const char *p;
	size_t left;
	ssize_t w;
	int rc;

	tel__iso(r->at_ns, ts);
	c->line.len = 0;
	rc = c->pretty ? pretty(&c->line, r, ts) : json_line(&c->line, r, ts);
	if (rc || core_buf_putc(&c->line, '\n'))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	for (p = c->line.data, left = c->line.len; left; p += w, left -= (size_t)w)
		if ((w = write(c->fd, p, left)) < 0)
			return core_err_set(err, CORE_EIO, "writing to %s: %s",
					    c->fd == STDERR_FILENO ? "stderr" : "stdout",
					    strerror(errno));
	return 0;
}

static void console_close(void *state)
{
	console *c = state;

	if (!c)
		return;
	core_buf_release(&c->line);
	free(c);
}

const tel_exporter_ops tel__console = {
	.name = "console",
	.configure = console_configure,
	.export = console_export,
	.close = console_close,
};
