/*
 * expr_coll.c — sets and dicts in gate expressions: set literals {1, 2},
 * dict literals {'a': 1} (ELSPETH allows both, mostly for `in`), and the
 * row's own objects where a dict is expected.
 *
 * Python's rules: only None, bool, int, float, str and tuples of those are
 * hashable; equal values are one item or key whatever their type (1, 1.0
 * and True); a set keeps each value once, a dict keeps the first key and
 * the last value. A built set or dict is an array of entries in the order
 * first written plus an open-addressing table of their indices, so
 * building is linear and a lookup constant. Python prints a set in the
 * order of its hash table (for strings, different in each process); ours
 * prints the order written, which is at least the same every time.
 */
#include <math.h>
#include <string.h>

#include "expr/expr_internal.h"

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Equal values hash alike: an integral float hashes as the integer. */
static uint64_t hash(const expr__val *v)
{
	uint64_t h = 0xcbf29ce484222325ULL, bits;
	size_t i;

	switch (v->kind) {
	case DAG__V_BOOL:
		return mix((uint64_t)v->u.b);
	case DAG__V_INT:
		return mix((uint64_t)v->u.i);
	case DAG__V_FLOAT:
		if (v->u.d >= -9223372036854775808.0 &&
		    v->u.d < 9223372036854775808.0 && v->u.d == trunc(v->u.d))
			return mix((uint64_t)(long long)v->u.d);
		memcpy(&bits, &v->u.d, sizeof(bits));
		return mix(bits);
	case DAG__V_STR:
		for (i = 0; i < v->u.s.n; i++)
			h = (h ^ (unsigned char)v->u.s.p[i]) * 0x100000001b3ULL;
		return mix(h);
	case DAG__V_ARR:	/* a tuple: hashable() said so */
		for (i = 0; i < v->u.l.n; i++)
			h = mix(h ^ hash(&v->u.l.items[i])) + i;
		return h;
	default:
		return 0x4e6f6e65ULL;	/* None */
	}
}

bool expr__hashable(const expr__val *v)
{
	size_t i;

	switch (v->kind) {
	case DAG__V_NONE:
	case DAG__V_BOOL:
	case DAG__V_INT:
	case DAG__V_FLOAT:
	case DAG__V_STR:
		return true;
	case DAG__V_ARR:
		if (!v->tuple)
			return false;
		for (i = 0; i < v->u.l.n; i++)
			if (!expr__hashable(&v->u.l.items[i]))
				return false;
		return true;
	default:
		return false;
	}
}

int expr__unhashable(expr__ctx *c, uint32_t n, const expr__val *v)
{
	char where[128];

	return expr__rt_error(c, "unhashable type: '%s' (in `%s`)",
			     expr__type_name(v),
			     expr__snippet(c->e, n, where, sizeof(where)));
}

/* The slot holding key in coll's table, or the free slot where it goes. */
static size_t probe(const expr__val *coll, const expr__val *key)
{
	const expr__table *t = coll->u.l.tab;
	size_t per = coll->kind == DAG__V_MAP ? 2 : 1;
	size_t j = (size_t)hash(key) & t->mask;

	while (t->slots[j] &&
	       !expr__equal(&coll->u.l.items[(t->slots[j] - 1) * per], key))
		j = (j + 1) & t->mask;
	return j;
}

static size_t entry_weight(const expr__val *items, size_t i, bool map)
{
	if (!map)
		return 2 + expr__weight(&items[i]);
	return 4 + expr__weight(&items[2 * i]) + expr__weight(&items[2 * i + 1]);
}

int expr__make_coll(expr__ctx *c, uint32_t n, expr__vkind kind, expr__val *items,
		   size_t count, expr__val *out)
{
	bool map = kind == DAG__V_MAP;
	size_t per = map ? 2 : 1, cap = 8, i, j, k = 0, weight = 2;
	expr__table *t;

	for (i = 0; i < count; i++)
		if (!expr__hashable(&items[i * per]))
			return expr__unhashable(c, n, &items[i * per]);
	while (cap < 2 * count)
		cap *= 2;
	if (!(t = expr__arena_alloc(&c->arena, sizeof(*t) + cap * sizeof(t->slots[0]))))
		return expr__alloc_error(c);
	memset(t->slots, 0, cap * sizeof(t->slots[0]));
	t->mask = cap - 1;
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->u.l.items = items;
	out->u.l.tab = t;
	for (i = 0; i < count; i++) {
		j = probe(out, &items[i * per]);
		if (t->slots[j]) {
			if (map)	/* the first key stays, the last value wins */
				items[(t->slots[j] - 1) * 2 + 1] = items[i * 2 + 1];
			continue;
		}
		if (k != i)
			memmove(&items[k * per], &items[i * per], per * sizeof(*items));
		t->slots[j] = (uint32_t)(k + 1);
		k++;
	}
	for (i = 0; i < k && weight <= DAG__ARENA_LIMIT; i++)
		weight += entry_weight(items, i, map);
	if (expr__arena_charge(&c->arena, weight))
		return expr__alloc_error(c);
	out->u.l.n = k;
	out->u.l.weight = weight;
	return 0;
}

bool expr__is_dict(const expr__val *v)
{
	return v->kind == DAG__V_DICT || v->kind == DAG__V_MAP;
}

size_t expr__dict_len(const expr__val *v)
{
	return v->kind == DAG__V_DICT ? json_object_size(v->u.j) : v->u.l.n;
}

bool expr__lookup(const expr__val *coll, const expr__val *key, expr__val *value)
{
	const json_t *j;
	size_t at;

	if (coll->kind == DAG__V_DICT) {
		j = key->kind == DAG__V_STR ?
		    json_object_getn(coll->u.j, key->u.s.p, key->u.s.n) : NULL;
		if (j && value)
			expr__from_json(j, value);
		return j != NULL;
	}
	at = probe(coll, key);
	if (!coll->u.l.tab->slots[at])
		return false;
	if (value && coll->kind == DAG__V_MAP)
		*value = coll->u.l.items[(coll->u.l.tab->slots[at] - 1) * 2 + 1];
	return true;
}

void expr__coll_at(const expr__val *v, size_t i, void **iter, expr__val *key,
		  expr__val *value)
{
	json_t *o = (json_t *)v->u.j;

	if (v->kind == DAG__V_SET) {
		*key = v->u.l.items[i];
		return;
	}
	if (v->kind == DAG__V_MAP) {
		*key = v->u.l.items[2 * i];
		if (value)
			*value = v->u.l.items[2 * i + 1];
		return;
	}
	*iter = i ? json_object_iter_next(o, *iter) : json_object_iter(o);
	memset(key, 0, sizeof(*key));
	key->kind = DAG__V_STR;
	key->u.s.p = json_object_iter_key(*iter);
	key->u.s.n = json_object_iter_key_len(*iter);
	if (value)
		expr__from_json(json_object_iter_value(*iter), value);
}

/* Every item (key) of a is in b, with an equal value for dicts. */
static bool all_in(const expr__val *a, const expr__val *b)
{
	size_t i, n = a->kind == DAG__V_SET ? a->u.l.n : expr__dict_len(a);
	bool dict = a->kind != DAG__V_SET;
	expr__val k, x, y;
	void *it = NULL;

	for (i = 0; i < n; i++) {
		expr__coll_at(a, i, &it, &k, dict ? &x : NULL);
		if (!expr__lookup(b, &k, dict ? &y : NULL) ||
		    (dict && !expr__equal(&x, &y)))
			return false;
	}
	return true;
}

bool expr__coll_equal(const expr__val *a, const expr__val *b)
{
	if (a->kind == DAG__V_SET && b->kind == DAG__V_SET)
		return a->u.l.n == b->u.l.n && all_in(a, b);
	if (expr__is_dict(a) && expr__is_dict(b))
		return expr__dict_len(a) == expr__dict_len(b) && all_in(a, b);
	return false;
}

bool expr__subset(const expr__val *a, const expr__val *b, bool strict)
{
	if (a->u.l.n > b->u.l.n || (strict && a->u.l.n == b->u.l.n))
		return false;
	return all_in(a, b);
}

int expr__set_difference(expr__ctx *c, uint32_t n, const expr__val *a,
			const expr__val *b, expr__val *out)
{
	expr__val *items = NULL;
	size_t i, k = 0;

	if (a->u.l.n &&
	    !(items = expr__arena_alloc(&c->arena, a->u.l.n * sizeof(*items))))
		return expr__alloc_error(c);
	for (i = 0; i < a->u.l.n; i++)
		if (!expr__lookup(b, &a->u.l.items[i], NULL))
			items[k++] = a->u.l.items[i];
	return expr__make_coll(c, n, DAG__V_SET, items, k, out);
}
