/* err.c — error values and messages. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"

int core_err_vset(core_err *err, int code, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	err->code = code;
	err->retryable = false;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return code;
}

int core_err_set(core_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	core_err_vset(err, code, fmt, ap);
	va_end(ap);
	return code;
}

int core_err_prefix(core_err *err, const char *fmt, ...)
{
	char prefix[512], old[sizeof(err->msg)];
	va_list ap;
	int n;

	if (!err)
		return CORE_EINTERNAL;
	va_start(ap, fmt);
	n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	if (n < 0)
		return err->code;
	memcpy(old, err->msg, sizeof(old));
	/* "%.*s" bounds both parts so the result always fits. */
	snprintf(err->msg, sizeof(err->msg), "%.*s: %.*s", 511, prefix,
		 (int)(sizeof(err->msg) - 520), old);
	return err->code;
}

/* The ranges must not meet (core.h). */
_Static_assert(CORE_ERR_LAST <= CORE_LMDB_FIRST, "our codes reach LMDB's");
_Static_assert(CORE_LMDB_LAST < 0, "LMDB's range reaches 0 and errno");

typedef const char *(*strerror_fn)(int code);

/* Set by the recorder; read by any thread. */
static _Atomic(strerror_fn) lmdb_strerror;

void core_strerror_lmdb(const char *(*fn)(int code))
{
	atomic_store(&lmdb_strerror, fn);
}

static const char *errno_message(int code)
{
	const char *s = strerror(code);

	return s && s[0] ? s : "unknown error";
}

static const char *lmdb_message(int code)
{
	strerror_fn fn = atomic_load(&lmdb_strerror);
	const char *s = fn ? fn(code) : NULL;

	return s && s[0] ? s : "audit trail storage (LMDB) error";
}

const char *core_strerror(int code)
{
	if (code > 0)
		return errno_message(code);
	if (code >= CORE_LMDB_FIRST && code <= CORE_LMDB_LAST)
		return lmdb_message(code);
	switch ((core_code)code) {
	case CORE_OK:
		return "success";
	case CORE_ENOMEM:
		return "out of memory";
	case CORE_EIO:
		return "input/output error";
	case CORE_ECONFIG:
		return "invalid settings";
	case CORE_EUNSUPPORTED:
		return "not supported yet";
	case CORE_EDATA:
		return "invalid data";
	case CORE_EEXPR:
		return "expression error";
	case CORE_EINTERNAL:
		return "internal error";
	case CORE_ESTOPPED:
		return "interrupted";
	case CORE_ENOTFOUND:
		return "not found";
	case CORE_BREAK:
		return "stopped early by its callback (not an error)";
	case CORE_ERR_LAST:
		break;
	}
	return "unknown error";
}
