/*
 * fuzz_csv.c — libFuzzer harness for the CSV record reader.
 *
 * The first byte picks the delimiter; the rest is the file. Checks the
 * reader's promises: every field is NUL-terminated valid UTF-8 that jansson
 * accepts, lines and offsets only move forward, and seeking back to a
 * reported record start reads the same record again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/plugins_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_record(const plg__csv_reader *rd, size_t size)
{
	const char *f;
	json_t *s;
	size_t i, len;

	if (rd->nfields == 0 || rd->offset >= size || rd->line < 1)
		abort();
	for (i = 0; i < rd->nfields; i++) {
		f = plg__csv_field(rd, i, &len);
		if (f[len] != '\0' || !core_utf8_valid(f, len))
			abort();
		s = json_stringn(f, len);
		if (!s)
			abort();
		json_decref(s);
	}
}

/* A copy of the current record's fields, to compare after a seek. */
static char *snapshot(const plg__csv_reader *rd, size_t *n)
{
	core_buf b = {0};
	const char *f;
	size_t i, len;

	for (i = 0; i < rd->nfields; i++) {
		f = plg__csv_field(rd, i, &len);
		core_buf_append(&b, f, len + 1);
	}
	*n = b.len;
	return core_buf_steal(&b);
}

static void run(const uint8_t *data, size_t size, char delim)
{
	plg__csv_reader rd;
	core_err err;
	uint64_t off = 0;
	long line = 0, last = 0, seek_line = 0;
	char *snap = NULL, *again;
	size_t nsnap = 0, n, records = 0;
	FILE *fp = fmemopen((void *)data, size, "rb");

	if (!fp)
		return;
	plg__csv_reader_init(&rd, fp, delim);
	while (plg__csv_reader_next(&rd, &err) == 1) {
		check_record(&rd, size);
		if (rd.line <= last)
			abort();
		last = rd.line;
		if (++records == 2 && !rd.error[0]) {
			off = rd.offset;
			seek_line = line = rd.line;
			snap = snapshot(&rd, &nsnap);
		}
	}
	if (snap && plg__csv_reader_seek(&rd, off, seek_line, &err) == 0 &&
	    plg__csv_reader_next(&rd, &err) == 1) {
		again = snapshot(&rd, &n);
		if (rd.line != line || n != nsnap || memcmp(snap, again, n))
			abort();
		free(again);
	}
	free(snap);
	plg__csv_reader_release(&rd);
	fclose(fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char delims[] = {',', ';', '\t', '|'};

	if (size < 2)
		return 0;
	run(data + 1, size - 1, delims[data[0] & 3]);
	return 0;
}
