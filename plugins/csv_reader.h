/*
 * csv_reader.h — an RFC 4180 record reader over a FILE*, and the UTF-8
 * helpers the text sources share. Internal to the plugins module.
 *
 * Dialect: a one-byte delimiter (not '"', CR or LF); fields may be quoted
 * with '"', a doubled quote inside quotes is one quote, and quoted fields
 * may hold delimiters, quotes, CR and LF. Records end with LF or CRLF (a
 * CR before the LF is dropped); the last record may lack a line end. A
 * UTF-8 byte order mark at the start of the file is skipped. Blank
 * physical lines between records are skipped (they are not records).
 * Leniency, as Python's csv module: a quote inside an unquoted field is a
 * literal character, and text after a closing quote is appended ("ab"c is
 * abc).
 *
 * Row errors do not stop the reader: a record holding invalid UTF-8 comes
 * back with its bad bytes replaced by U+FFFD and `error` naming the line and
 * field; an unterminated quote at end of file comes back as the last record
 * with `error` naming the line where it started. Every returned field is
 * therefore valid UTF-8 (it may contain NUL bytes; use the length).
 */
#ifndef ELSPETH_PLUGINS_CSV_READER_H
#define ELSPETH_PLUGINS_CSV_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/core.h"

typedef struct plg__csv_span {
	size_t off, len; /* into data */
} plg__csv_span;

/* Zero-initialise or plg__csv_reader_init; plg__csv_reader_release frees.
 * The public fields describe the current record and are valid until the
 * next call on the reader. */
typedef struct plg__csv_reader {
	long line;        /* physical line (1-based) where the record starts */
	uint64_t offset;  /* byte offset in the file where it starts */
	size_t nfields;
	char error[256];  /* "" or the row error ("line 4, field 2: ...") */

	/* private */
	FILE *fp;         /* not owned */
	char delim;
	bool in_quotes;
	bool eof;
	long lines_read;
	uint64_t pos;     /* bytes consumed so far */
	char *ln;         /* getdelim buffer */
	size_t ln_cap;
	core_buf data;    /* field bytes, each field NUL-terminated */
	size_t fstart;    /* where the open field starts in data */
	core_buf scratch; /* for U+FFFD replacement */
	plg__csv_span *spans;
	size_t spans_cap;
} plg__csv_reader;

/* fp stays the caller's (it is never closed here); it should be opened in
 * binary mode at offset 0. */
void plg__csv_reader_init(plg__csv_reader *r, FILE *fp, char delim);
void plg__csv_reader_release(plg__csv_reader *r);

/* Reads the next record. 1: a record (check r->error for a row error);
 * 0: end of file; <0: fatal (CORE_EIO read error, CORE_ENOMEM), err set. */
int plg__csv_reader_next(plg__csv_reader *r, core_err *err);

/* Skips n physical lines (not records: quotes are not interpreted). 0, or
 * <0 with err set. Reaching end of file is not an error. */
int plg__csv_reader_skip_lines(plg__csv_reader *r, long long n, core_err *err);

/* Repositions at a record start previously reported by r->offset and
 * r->line (for resuming). 0, or CORE_EIO with err set. */
int plg__csv_reader_seek(plg__csv_reader *r, uint64_t offset, long line,
			 core_err *err);

/* Field i (< r->nfields) of the current record, NUL-terminated; *len
 * receives its length (it may hold NUL bytes). */
static inline const char *plg__csv_field(const plg__csv_reader *r, size_t i,
					 size_t *len)
{
	*len = r->spans[i].len;
	return r->data.data + r->spans[i].off;
}

/* ---- UTF-8 (the same rules as jansson: no overlongs, no surrogates,
 * nothing above U+10FFFF) ---- */

/* The offset of the first invalid byte, or len when s is valid. */
size_t plg__utf8_check(const char *s, size_t len);
/* Appends s to b with each invalid byte replaced by U+FFFD. */
int plg__utf8_lossy(core_buf *b, const char *s, size_t len);

/* The `encoding` option of a text source: absent or utf-8 (utf8,
 * utf-8-sig, any case) is 0; anything else is CORE_ECONFIG naming it. */
int plg__check_encoding(const core_node *options, core_err *err);

#endif /* ELSPETH_PLUGINS_CSV_READER_H */
