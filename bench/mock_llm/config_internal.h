/*
 * config_internal.h — the option table's row and the helpers shared by
 * config.c (the table, argv and JSON) and config_set.c (the options with
 * their own syntax).
 */
#ifndef MOCK_CONFIG_INTERNAL_H
#define MOCK_CONFIG_INTERNAL_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "config.h"

/* Sets an option from its text form: 0, or -1 with a message in err. */
typedef int (*mock__set_fn)(mock_cfg *c, const char *v, char *err, size_t n);
/* An option's value as JSON (a new reference). */
typedef json_t *(*mock__get_fn)(const mock_cfg *c);

enum mock__kind { K_LONG, K_DBL, K_STR, K_ENUM, K_FN };

struct mock__opt {
	const char *name;
	const char *metavar;
	const char *def;
	enum mock__kind kind;
	size_t off;
	double lo, hi;  /* inclusive range for K_LONG and K_DBL */
	int startup;    /* refused by POST /admin/config */
	mock__set_fn fn; /* K_FN */
	mock__get_fn get; /* K_FN */
	const char *const *names; /* K_ENUM: the words, NULL-terminated */
	const char *help;
};

/* The option named name[0..len) ('_' may stand for '-'), or NULL. */
const struct mock__opt *mock__cfg_find(const char *name, size_t len);

/* Writes "--NAME: bad value 'V': <fmt...>" to err; returns -1. */
int mock__cfg_bad(char *err, size_t n, const struct mock__opt *o,
		  const char *v, const char *fmt, ...) MOCK_PRINTF(5, 6);

/* Parse a whole string as a finite double or a long: 0, or -1. */
int mock__cfg_double(const char *v, double *out);
int mock__cfg_long(const char *v, long *out);

void mock__cfg_free_labels(mock_cfg *c);

/* The K_FN options. */
int mock__set_answer(mock_cfg *c, const char *v, char *err, size_t n);
int mock__set_labels(mock_cfg *c, const char *v, char *err, size_t n);
int mock__set_latency(mock_cfg *c, const char *v, char *err, size_t n);
int mock__set_schedule(mock_cfg *c, const char *v, char *err, size_t n);
int mock__set_cschedule(mock_cfg *c, const char *v, char *err, size_t n);
int mock__set_rpm(mock_cfg *c, const char *v, char *err, size_t n);
int mock__set_status(mock_cfg *c, const char *v, char *err, size_t n);
json_t *mock__get_answer(const mock_cfg *c);
json_t *mock__get_labels(const mock_cfg *c);
json_t *mock__get_latency(const mock_cfg *c);
json_t *mock__get_schedule(const mock_cfg *c);
json_t *mock__get_cschedule(const mock_cfg *c);
json_t *mock__get_rpm(const mock_cfg *c);
json_t *mock__get_status(const mock_cfg *c);

#endif
