/*
 * decode.c — source files in an encoding other than UTF-8 (ADR 0056).
 *
 * ELSPETH opens a source file with Python's codec of the `encoding`
 * option. Here a UTF-8 file is read as it is; any other is decoded once,
 * at open, by iconv into an unlinked temporary file of UTF-8, which the
 * source then reads as usual. Byte offsets (checkpoints, resume) are
 * offsets in that decoded stream, which is the same on every open of the
 * same file. A byte the codec cannot decode stops the open, naming the
 * file and the byte, as Python's strict decoding stops ELSPETH's read.
 */
#include <errno.h>
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/plugins_internal.h"

/* Python's spellings of UTF-8, which are read without decoding. */
static bool is_utf8(const char *enc)
{
	static const char *const names[] = { "utf-8", "utf8", "utf_8", "u8", "utf",
					     "utf-8-sig", "utf_8_sig", NULL };

	for (size_t i = 0; enc && names[i]; i++)
		if (!strcasecmp(enc, names[i]))
			return true;
	return !enc;
}

/* iconv's name for a Python codec name: a few spellings Python knows and
 * glibc does not, else the name in upper case with '_' as '-'. */
static void iconv_name(const char *enc, char *out, size_t cap)
{
	static const char *const map[][2] = {
		{ "latin-1", "ISO-8859-1" }, { "latin_1", "ISO-8859-1" },
		{ "latin1", "ISO-8859-1" }, { "l1", "ISO-8859-1" },
		{ "iso8859-1", "ISO-8859-1" }, { "iso8859_1", "ISO-8859-1" },
		{ "windows-1252", "CP1252" }, { "us-ascii", "ASCII" },
		{ "utf-16-le", "UTF-16LE" }, { "utf-16-be", "UTF-16BE" },
		{ "utf_16_le", "UTF-16LE" }, { "utf_16_be", "UTF-16BE" },
		{ "mac-roman", "MACINTOSH" }, { "mac_roman", "MACINTOSH" },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcasecmp(enc, map[i][0])) {
			snprintf(out, cap, "%s", map[i][1]);
			return;
		}
	for (i = 0; enc[i] && i + 1 < cap; i++)
		out[i] = enc[i] == '_' ? '-' : (char)(enc[i] >= 'a' && enc[i] <= 'z' ?
						      enc[i] - 'a' + 'A' : enc[i]);
	out[i] = '\0';
}

int plg__codec_check(const char *enc)
{
	char name[64];
	iconv_t cd;

	if (is_utf8(enc))
		return 0;
	iconv_name(enc, name, sizeof(name));
	if ((cd = iconv_open("UTF-8", name)) == (iconv_t)-1)
		return -1;
	iconv_close(cd);
	return 0;
}

/* Decodes all of in into out; the offset of a byte it cannot decode in
 * *bad. */
static int decode_all(iconv_t cd, FILE *in, FILE *out, uint64_t *bad)
{
	char ib[65536], ob[4 * 65536 + 16];
	size_t have = 0;
	uint64_t at = 0; /* offset of ib[0] in the file */
	bool eof = false;

	while (!eof || have) {
		size_t n = eof ? 0 : fread(ib + have, 1, sizeof(ib) - have, in);
		char *ip = ib, *op = ob;
		size_t il, ol = sizeof(ob);

		if (!n && ferror(in))
			return -1;
		eof = eof || n == 0;
		have += n;
		il = have;
		if (iconv(cd, &ip, &il, &op, &ol) == (size_t)-1 && errno != E2BIG &&
		    !(errno == EINVAL && !eof)) {
			*bad = at + (uint64_t)(ip - ib);
			return errno == EILSEQ || errno == EINVAL ? 1 : -1;
		}
		if (fwrite(ob, 1, (size_t)(op - ob), out) != (size_t)(op - ob))
			return -1;
		at += (uint64_t)(ip - ib);
		memmove(ib, ip, il);
		if (eof && il == have && il) { /* nothing more will come */
			*bad = at;
			return 1;
		}
		have = il;
	}
	return 0;
}

FILE *plg__open_decoded(const char *path, const char *enc, core_err *err)
{
	char name[64];
	uint64_t bad = 0;
	FILE *in, *out;
	iconv_t cd;
	int rc;

	if (is_utf8(enc))
		return fopen(path, "rb");
	iconv_name(enc, name, sizeof(name));
	if ((cd = iconv_open("UTF-8", name)) == (iconv_t)-1) {
		core_err_set(err, CORE_ECONFIG, "unknown encoding: %s", enc);
		errno = EINVAL;
		return NULL;
	}
	if (!(in = fopen(path, "rb"))) {
		iconv_close(cd);
		return NULL; /* errno: the caller names the file */
	}
	if (!(out = tmpfile())) {
		core_err_set(err, CORE_EIO, "%s: no temporary file to decode it into: %s",
			     path, strerror(errno));
	} else if ((rc = decode_all(cd, in, out, &bad))) {
		if (rc > 0)
			core_err_set(err, CORE_EDATA, "%s: byte %llu cannot be decoded as %s "
				     "(the file is not in the encoding it names)", path,
				     (unsigned long long)bad, enc);
		else
			core_err_set(err, CORE_EIO, "%s: decoding it from %s failed: %s", path,
				     enc, strerror(errno));
		fclose(out);
		out = NULL;
	} else if (fflush(out) || fseeko(out, 0, SEEK_SET)) {
		core_err_set(err, CORE_EIO, "%s: %s", path, strerror(errno));
		fclose(out);
		out = NULL;
	}
	fclose(in);
	iconv_close(cd);
	if (!out)
		errno = EILSEQ; /* err says why */
	return out;
}
