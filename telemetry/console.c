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
	core_buf out;              /* whole lines not written yet */
} console;

#define OUT_FLUSH (64 * 1024)  /* written when this much waits */

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

static int cmp_field(const void *a, const void *b)
{
	return strcmp((*(const tel_field *const *)a)->key, (*(const tel_field *const *)b)->key);
}

/* A field's value as Python's str() prints it (pretty). */
static int py_value(core_buf *b, const tel_field *f)
{
	char num[48];
	json_t *j;
	int rc;

	switch (f->type) {
	case TEL_F_STR:
		return core_buf_puts(b, f->s);
	case TEL_F_INT:
		return core_buf_printf(b, "%lld", (long long)f->i);
	case TEL_F_REAL:
		core_format_double_py(f->d, num, sizeof(num));
		return core_buf_puts(b, num);
	case TEL_F_JSON:
		return core_py_str(b, f->j);
	case TEL_F_STRS:
		if (!(j = tel__field_json(f)))
			return CORE_ENOMEM;
		rc = core_py_str(b, j);
		json_decref(j);
		return rc;
	case TEL_F_NULL:
		break;
	}
	return core_buf_puts(b, "None");
}

/* [time] Type: run (k=v, ...): every field but run_id, sorted, None out. */
static int pretty(core_buf *b, const tel_record *r, const char *ts)
{
	const tel_field *keys[TEL_FIELDS];
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->f[i].key, "run_id") && r->f[i].type != TEL_F_NULL)
			keys[n++] = &r->f[i];
	qsort(keys, n, sizeof(*keys), cmp_field);
	core_buf_printf(b, "[%s] %s: %s", ts, r->type, r->run_id);
	for (size_t i = 0; !rc && i < n; i++) {
		core_buf_puts(b, i ? ", " : " (");
		core_buf_puts(b, keys[i]->key);
		core_buf_putc(b, '=');
		rc = py_value(b, keys[i]);
	}
	if (n)
		core_buf_putc(b, ')');
	return rc;
}

/* A field's value as Python's json.dumps writes it. */
static int json_value(core_buf *b, const tel_field *f)
{
	char num[48];
	int rc = 0;

	switch (f->type) {
	case TEL_F_STR:
		return core_json_append_py_str(b, f->s, strlen(f->s));
	case TEL_F_INT:
		return core_buf_printf(b, "%lld", (long long)f->i);
	case TEL_F_REAL:
		core_format_double_py(f->d, num, sizeof(num));
		return core_buf_puts(b, num);
	case TEL_F_JSON:
		return core_json_append_py(b, f->j, -1, 0);
	case TEL_F_STRS:
		rc = core_buf_putc(b, '[');
		for (size_t i = 0; !rc && i < f->nstrs; i++) {
			if (i)
				rc = core_buf_puts(b, ", ");
			if (!rc)
				rc = core_json_append_py_str(b, f->strs[i], strlen(f->strs[i]));
		}
		return rc ? rc : core_buf_putc(b, ']');
	case TEL_F_NULL:
		break;
	}
	return core_buf_puts(b, "null");
}

/* {"timestamp": …, the fields…, "event_type": …} (the keys are our own
 * ASCII names). */
static int json_line(core_buf *b, const tel_record *r, const char *ts)
{
	int rc = core_buf_puts(b, "{\"timestamp\": \"");

	if (!rc)
		rc = core_buf_puts(b, ts);
	if (!rc)
		rc = core_buf_putc(b, '"');
	for (size_t i = 0; !rc && i < r->n; i++) {
		rc = core_buf_puts(b, ", \"");
		if (!rc)
			rc = core_buf_puts(b, r->f[i].key);
		if (!rc)
			rc = core_buf_puts(b, "\": ");
		if (!rc)
			rc = json_value(b, &r->f[i]);
	}
	if (!rc)
		rc = core_buf_puts(b, ", \"event_type\": \"");
	if (!rc)
		rc = core_buf_puts(b, r->type);
	return rc ? rc : core_buf_puts(b, "\"}");
}

/* Writes what waits: whole lines only, so no other writer's text lands
 * inside one. */
static int console_write(console *c, core_err *err)
{
	const char *p;
	size_t left;
	ssize_t w;

	for (p = c->out.data, left = c->out.len; left; p += w, left -= (size_t)w)
		if ((w = write(c->fd, p, left)) < 0) {
			if (errno == EINTR) {
				w = 0;
				continue;
			}
			c->out.len = 0;
			return core_err_set(err, CORE_EIO, "writing to %s: %s",
					    c->fd == STDERR_FILENO ? "stderr" : "stdout",
					    strerror(errno));
		}
	c->out.len = 0;
	return 0;
}

/* Lines wait in a buffer while more events are queued (the manager
 * calls idle when the queue is empty), so a busy run writes 64 KiB at a
 * time and a quiet one at once. */
static int console_export(void *state, const tel_record *r, core_err *err)
{
	console *c = state;
	char ts[40];
	int rc;

	core_iso_utc(r->at_ns, ts);
	rc = c->pretty ? pretty(&c->out, r, ts) : json_line(&c->out, r, ts);
	if (rc || core_buf_putc(&c->out, '\n'))
		return core_err_set(err, CORE_ENOMEM, "out of memory");
	return c->out.len >= OUT_FLUSH ? console_write(c, err) : 0;
}

static int console_flush(void *state, core_err *err)
{
	return console_write(state, err);
}

static void console_close(void *state)
{
	console *c = state;

	if (!c)
		return;
	console_write(c, &(core_err){ 0 });
	core_buf_release(&c->out);
	free(c);
}

const tel_exporter_ops tel__console = {
	.name = "console",
	.configure = console_configure,
	.export = console_export,
	.flush = console_flush,
	.idle = console_flush,
	.close = console_close,
};
