/*
 * csv_reader.c — RFC 4180 records over a FILE* (plugins_internal.h).
 *
 * The reader takes one physical line at a time (getdelim) and scans it with
 * memchr for the delimiter or the quote, copying field bytes into one
 * buffer that is reused between records. A record that continues past a
 * line end (inside quotes) simply takes the next physical line; the only
 * state carried between lines is `in_quotes`.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "plugins/plugins_internal.h"

/* ----------------------------------------------------------------- reader */

void plg__csv_reader_init(plg__csv_reader *r, FILE *fp, char delim)
{
	memset(r, 0, sizeof(*r));
	r->fp = fp;
	r->delim = delim;
}

void plg__csv_reader_release(plg__csv_reader *r)
{
	free(r->ln);
	free(r->spans);
	core_buf_release(&r->data);
	core_buf_release(&r->scratch);
	memset(r, 0, sizeof(*r));
}

/* The next physical line (with its line end) in *p and *n; *off receives
 * the file offset of its first byte (after a BOM). 1, 0 at end, <0 fatal. */
static int read_line(plg__csv_reader *r, const char **p, size_t *n,
		     uint64_t *off, core_err *err)
{
	ssize_t got;
	const char *s;
	size_t len;

	if (r->eof)
		return 0;
	errno = 0;
	got = getdelim(&r->ln, &r->ln_cap, '\n', r->fp);
	if (got < 0) {
		if (errno == ENOMEM)
			return core_err_set(err, CORE_ENOMEM,
					    "out of memory after line %ld",
					    r->lines_read);
		if (ferror(r->fp))
			return core_err_set(err, CORE_EIO,
					    "read error after line %ld: %s",
					    r->lines_read, strerror(errno));
		r->eof = true;
		return 0;
	}
	s = r->ln;
	len = (size_t)got;
	*off = r->pos;
	if (r->pos == 0 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
		s += 3;
		len -= 3;
		*off = 3;
	}
	r->pos += (uint64_t)got;
	r->lines_read++;
	*p = s;
	*n = len;
	return 1;
}

/* Where the line's content ends: before "\n" or "\r\n" (or a final "\r"). */
static const char *content_end(const char *p, size_t n)
{
	if (n && p[n - 1] == '\n')
		n--;
	if (n && p[n - 1] == '\r')
		n--;
	return p + n;
}

static void set_utf8_error(plg__csv_reader *r, const char *s, size_t bad)
{
	if (r->error[0])
		return;
	snprintf(r->error, sizeof(r->error),
		 "line %ld, field %zu: invalid UTF-8 (byte 0x%02X at byte %zu "
		 "of the field); the file must be UTF-8",
		 r->line, r->nfields + 1, (unsigned)(unsigned char)s[bad],
		 bad + 1);
}

/* Closes the field that starts at fstart: checks its UTF-8 (replacing
 * bad bytes), NUL-terminates it and records its span. */
static int end_field(plg__csv_reader *r, size_t fstart)
{
	size_t len = r->data.len - fstart, bad, cap;
	plg__csv_span *sp;

	bad = core_utf8_check(r->data.data + fstart, len);
	if (bad < len) {
		set_utf8_error(r, r->data.data + fstart, bad);
		core_buf_reset(&r->scratch);
		if (core_utf8_append_lossy(&r->scratch, r->data.data + fstart, len))
			return CORE_ENOMEM;
		r->data.len = fstart;
		if (core_buf_append(&r->data, r->scratch.data, r->scratch.len))
			return CORE_ENOMEM;
		len = r->scratch.len;
	}
	if (r->nfields == r->spans_cap) {
		cap = r->spans_cap ? r->spans_cap * 2 : 16;
		sp = realloc(r->spans, cap * sizeof(*sp));
		if (!sp)
			return CORE_ENOMEM;
		r->spans = sp;
		r->spans_cap = cap;
	}
	r->spans[r->nfields].off = fstart;
	r->spans[r->nfields].len = len;
	r->nfields++;
	return core_buf_putc(&r->data, '\0');
}

/* Parses one physical line into the current record. 1: the record ended;
 * 0: the line ended inside quotes (its line end is field data); <0: out of
 * memory. At the top of the loop, unless in quotes, a field starts. */
static int parse_line(plg__csv_reader *r, const char *p, size_t n)
{
	const char *end = p + n, *eol = content_end(p, n), *q;
	size_t fstart = r->fstart;
	int rc;

	for (;;) {
		if (r->in_quotes) {
			q = memchr(p, '"', (size_t)(end - p));
			if (!q) {
				r->fstart = fstart;
				return core_buf_append(&r->data, p,
						       (size_t)(end - p));
			}
			if (core_buf_append(&r->data, p, (size_t)(q - p)))
				return CORE_ENOMEM;
			if (q + 1 < end && q[1] == '"') {
				if (core_buf_putc(&r->data, '"'))
					return CORE_ENOMEM;
				p = q + 2;
				continue;
			}
			r->in_quotes = false;
			p = q + 1; /* text up to the delimiter is appended */
		} else if (p < eol && *p == '"') {
			r->in_quotes = true;
			p++;
			continue;
		}
		q = memchr(p, r->delim, (size_t)(eol - p));
		if (core_buf_append(&r->data, p, (size_t)((q ? q : eol) - p)))
			return CORE_ENOMEM;
		if ((rc = end_field(r, fstart)))
			return rc;
		fstart = r->data.len;
		if (!q)
			return 1;
		p = q + 1;
	}
}

static void start_record(plg__csv_reader *r)
{
	core_buf_reset(&r->data);
	r->nfields = 0;
	r->error[0] = '\0';
	r->in_quotes = false;
	r->fstart = 0;
}

static int nomem(const plg__csv_reader *r, core_err *err)
{
	return core_err_set(err, CORE_ENOMEM,
			    "out of memory reading the record at line %ld",
			    r->line);
}

/* The end of the file came inside quotes: keep what was read. */
static int unterminated(plg__csv_reader *r, core_err *err)
{
	if (end_field(r, r->fstart))
		return nomem(r, err);
	snprintf(r->error, sizeof(r->error),
		 "line %ld: unterminated quoted field (field %zu): the file "
		 "ends before its closing quote",
		 r->line, r->nfields);
	r->in_quotes = false;
	return 1;
}

int plg__csv_reader_next(plg__csv_reader *r, core_err *err)
{
	const char *p;
	size_t n;
	uint64_t off;
	int rc;

	start_record(r);
	do { /* blank lines are not records */
		rc = read_line(r, &p, &n, &off, err);
		if (rc <= 0)
			return rc;
	} while (content_end(p, n) == p);
	r->line = r->lines_read;
	r->offset = off;
	if (core_buf_reserve(&r->data, n))
		return nomem(r, err);
	while ((rc = parse_line(r, p, n)) == 0) {
		rc = read_line(r, &p, &n, &off, err);
		if (rc < 0)
			return rc;
		if (rc == 0)
			return unterminated(r, err);
	}
	return rc < 0 ? nomem(r, err) : 1;
}

int plg__csv_reader_skip_lines(plg__csv_reader *r, long long n, core_err *err)
{
	const char *p;
	size_t len;
	uint64_t off;
	int rc;

	for (; n > 0; n--) {
		rc = read_line(r, &p, &len, &off, err);
		if (rc <= 0)
			return rc;
	}
	return 0;
}

int plg__csv_reader_seek(plg__csv_reader *r, uint64_t offset, long line,
			 core_err *err)
{
	if (fseeko(r->fp, (off_t)offset, SEEK_SET))
		return core_err_set(err, CORE_EIO,
				    "cannot seek to byte %llu: %s",
				    (unsigned long long)offset,
				    strerror(errno));
	r->pos = offset;
	r->lines_read = line > 0 ? line - 1 : 0;
	r->eof = false;
	start_record(r);
	return 0;
}
