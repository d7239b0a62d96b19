/* test_recorder_chain.c — each run's records chained to a head in its run
 * record (recorder/chain.c): every clean edit of a chained run — a record
 * changed (and resealed), removed, added, moved to another key, the run
 * record itself changed — is a violation of verify; an edit of another
 * run is not; an editor who recomputes the head without the key is caught
 * by the signature when the run was signed, and by "not signed" when the
 * verifier holds the key. Edits go through LMDB in a rec_write_sync
 * callback, as a person who can write the file would make them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include <lmdb.h>

#include "test_recorder_util.h"
#include "recorder/recorder_internal.h"

#define KEY "chain-test-key"

typedef struct fixture {
	tdir d;
	rec_env *env;
} fixture;

static void put_run(rec_env *env, uint64_t run)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
	rec_key k = key1(run);

	r.run_id = run;
	r.status = "completed";
	r.canonical_version = CORE_CANONICAL_VERSION;
	cr_assert_eq(rec_put_msg(env, REC_RUNS, &k, &r.base), 0);
}

static void put_node(rec_env *env, uint64_t run, uint32_t id)
{
	Elspeth__NodeRecord n = ELSPETH__NODE_RECORD__INIT;
	rec_key k = key1(run);

	rec_key_u32(&k, id);
	n.run_id = run;
	n.node_id = id;
	n.name = "node";
	n.kind = "transform";
	n.plugin = "test";
	cr_assert_eq(rec_put_msg(env, REC_NODES, &k, &n.base), 0);
}

/* Runs 1 and 2, three nodes each, ended and chained (signed with key
 * when it is not NULL). */
static void fixture_open(fixture *fx, const char *key)
{
	core_err err = { 0 };

	memset(fx, 0, sizeof(*fx));
	tdir_make(&fx->d);
	fx->env = env_open(fx->d.path, 0);
	for (uint64_t run = 1; run <= 2; run++) {
		put_run(fx->env, run);
		for (uint32_t i = 0; i < 3; i++)
			put_node(fx->env, run, i);
		cr_assert_eq(rec_run_chain(fx->env, run, key, &err), 0, "%s", err.msg);
	}
	env_flush(fx->env);
}

static void fixture_close(fixture *fx)
{
	env_close(fx->env);
	tdir_remove(&fx->d);
}

/* verify's report on run. */
static json_t *verify_run(fixture *fx, uint64_t run)
{
	core_err err = { 0 };
	json_t *rep = NULL;

	cr_assert_eq(rec_verify(fx->env, run, &rep, &err), 0, "%s", err.msg);
	return rep;
}

static const char *chain_field(const json_t *rep, const char *f)
{
	return json_string_value(json_object_get(json_object_get(rep, "chain"), f));
}

/* The report's violations hold one containing want. */
static bool has_violation(const json_t *rep, const char *want)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(rep, "violations"), i, v)
		if (strstr(json_string_value(v), want))
			return true;
	return false;
}

static void expect_intact(fixture *fx, uint64_t run)
{
	json_t *rep = verify_run(fx, run);
	char *all = json_dumps(json_object_get(rep, "violations"), 0);

	cr_assert_str_eq(chain_field(rep, "status"), "intact", "run %llu: %s",
			 (unsigned long long)run, all);
	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 0,
		     "%s", all);
	free(all);
	json_decref(rep);
}

static void expect_broken(fixture *fx, uint64_t run, const char *why)
{
	json_t *rep = verify_run(fx, run);
	char *all = json_dumps(json_object_get(rep, "violations"), 0);

	cr_assert_str_eq(chain_field(rep, "status"), "broken", "%s: %s", why, all);
	cr_assert(has_violation(rep, "no longer match the head of their chain"),
		  "%s: %s", why, all);
	free(all);
	json_decref(rep);
}

/* ----------------------------------------------------------- editing */

typedef enum edit_kind { CHANGE, REMOVE, ADD, MOVE, RUN_RECORD } edit_kind;

typedef struct edit {
	edit_kind kind;
	uint64_t run;
} edit;

/* A clean edit: through LMDB, every value resealed (rec_txn_put). */
static int do_edit(void *ctx, rec_env *env, void *mdb_txn)
{
	edit *e = ctx;
	Elspeth__NodeRecord n = ELSPETH__NODE_RECORD__INIT;
	rec_key k = key1(e->run), k2 = key1(e->run);
	MDB_val mk;
	uint8_t buf[256];
	size_t len;

	rec_key_u32(&k, 1);
	mk.mv_size = k.len;
	mk.mv_data = k.b;
	n.run_id = e->run;
	n.node_id = 1;
	n.name = "renamed";
	n.kind = "transform";
	n.plugin = "test";
	len = elspeth__node_record__pack(&n, buf);
	switch (e->kind) {
	case CHANGE:
		return rec_txn_put(env, mdb_txn, REC_NODES, &k, buf, len);
	case REMOVE:
		return mdb_del(mdb_txn, env->dbi[REC_NODES], &mk, NULL);
	case ADD:
		rec_key_u32(&k2, 9);
		return rec_txn_put(env, mdb_txn, REC_NODES, &k2, buf, len);
	case MOVE: { /* node 1's stored value under key 7, node 1 gone */
		MDB_val v;
		int rc = mdb_get(mdb_txn, env->dbi[REC_NODES], &mk, &v);

		if (rc)
			return rc;
		memcpy(buf, v.mv_data, v.mv_size - REC__SEAL_LEN);
		len = v.mv_size - REC__SEAL_LEN;
		if ((rc = mdb_del(mdb_txn, env->dbi[REC_NODES], &mk, NULL)))
			return rc;
		rec_key_u32(&k2, 7);
		return rec_txn_put(env, mdb_txn, REC_NODES, &k2, buf, len);
	}
	case RUN_RECORD: { /* the run record's status, its head kept */
		rec_key run_key = key1(e->run);
		MDB_val rk = { run_key.len, run_key.b }, v;
		Elspeth__RunRecord *r;
		int rc;

		if ((rc = mdb_get(mdb_txn, env->dbi[REC_RUNS], &rk, &v)) ||
		    (rc = rec__unseal(REC_RUNS, &rk, &v)))
			return rc;
		r = elspeth__run_record__unpack(NULL, v.mv_size, v.mv_data);
		if (!r)
			return CORE_EDATA;
		r->succeeded = 1000;
		len = elspeth__run_record__get_packed_size(r);
		cr_assert_lt(len, sizeof(buf));
		elspeth__run_record__pack(r, buf);
		elspeth__run_record__free_unpacked(r, NULL);
		return rec_txn_put(env, mdb_txn, REC_RUNS, &run_key, buf, len);
	}
	}
	return CORE_EINTERNAL;
}

static void edit_run(fixture *fx, edit_kind kind, uint64_t run)
{
	edit e = { kind, run };
	core_err err = { 0 };

	cr_assert_eq(rec_write_sync(fx->env, do_edit, &e, &err), 0, "%s", err.msg);
}

/* ------------------------------------------------------------- tests */

Test(chain, an_ended_run_verifies_intact)
{
	fixture fx;
	json_t *rep;

	fixture_open(&fx, NULL);
	rep = verify_run(&fx, 1);
	cr_assert_str_eq(chain_field(rep, "status"), "intact");
	cr_assert_str_eq(chain_field(rep, "signature"), "unsigned");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(rep, "chain"),
							 "records")), 3);
	json_decref(rep);
	fixture_close(&fx);
}

Test(chain, every_clean_edit_of_a_run_breaks_its_chain)
{
	static const struct {
		edit_kind kind;
		const char *name;
	} edits[] = {
		{ CHANGE, "a record changed and resealed" },
		{ REMOVE, "a record removed" },
		{ ADD, "a record added" },
		{ MOVE, "a record moved to another key" },
		{ RUN_RECORD, "the run record's counts changed" },
	};

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		fixture fx;

		fixture_open(&fx, NULL);
		edit_run(&fx, edits[i].kind, 1);
		expect_broken(&fx, 1, edits[i].name);
		expect_intact(&fx, 2); /* the other run is not affected */
		fixture_close(&fx);
	}
}

Test(chain, a_recomputed_head_passes_only_without_a_key)
{
	core_err err = { 0 };
	fixture fx;
	json_t *rep;

	/* Unsigned: an editor who recomputes the head is not found (the
	 * limit docs/audit.md states), unless the verifier holds a key. */
	fixture_open(&fx, NULL);
	edit_run(&fx, CHANGE, 1);
	cr_assert_eq(rec_run_chain(fx.env, 1, NULL, &err), 0, "%s", err.msg);
	expect_intact(&fx, 1);
	cr_assert_eq(setenv("ELSPETH_SIGNING_KEY", KEY, 1), 0);
	rep = verify_run(&fx, 1);
	cr_assert(has_violation(rep, "chain is not signed, and ELSPETH_SIGNING_KEY is set"));
	json_decref(rep);
	unsetenv("ELSPETH_SIGNING_KEY");
	fixture_close(&fx);
}

Test(chain, a_signed_head_rewritten_without_the_key_is_found)
{
	core_err err = { 0 };
	fixture fx;
	json_t *rep;

	cr_assert_eq(setenv("ELSPETH_SIGNING_KEY", KEY, 1), 0);
	fixture_open(&fx, KEY);
	expect_intact(&fx, 1);
	rep = verify_run(&fx, 1);
	cr_assert_str_eq(chain_field(rep, "signature"), "valid");
	json_decref(rep);
	/* the editor recomputes the head, signed with a key of their own */
	edit_run(&fx, CHANGE, 1);
	cr_assert_eq(rec_run_chain(fx.env, 1, "guessed", &err), 0, "%s", err.msg);
	rep = verify_run(&fx, 1);
	cr_assert_str_eq(chain_field(rep, "status"), "intact");
	cr_assert_str_eq(chain_field(rep, "signature"), "invalid");
	cr_assert(has_violation(rep, "does not match ELSPETH_SIGNING_KEY"));
	json_decref(rep);
	/* without a key, verify says it did not check the signature */
	unsetenv("ELSPETH_SIGNING_KEY");
	rep = verify_run(&fx, 2);
	cr_assert_str_eq(chain_field(rep, "signature"),
			 "not checked (ELSPETH_SIGNING_KEY is not set)");
	json_decref(rep);
	fixture_close(&fx);
}

Test(chain, an_ended_run_without_a_head_is_a_violation)
{
	fixture fx;
	json_t *rep;

	memset(&fx, 0, sizeof(fx));
	tdir_make(&fx.d);
	fx.env = env_open(fx.d.path, 0);
	put_run(fx.env, 1);
	put_node(fx.env, 1, 0);
	env_flush(fx.env);
	rep = verify_run(&fx, 1);
	cr_assert_str_eq(chain_field(rep, "status"), "missing");
	cr_assert(has_violation(rep, "holds no head of its chain"));
	json_decref(rep);
	fixture_close(&fx);
}

/* A reader polling the run records while runs end never sees a finished
 * run record without its head: rec_run_end writes the final record and
 * its head in one transaction (a put followed by rec_run_chain would
 * commit twice, and a crash between the two would leave an intact trail
 * that verify reports as damaged). */
#define END_RUNS 200

typedef struct poller {
	rec_env *env;
	atomic_bool stop;
	unsigned seen_ended;
	char bad[200];
} poller;

static void *poll_runs(void *arg)
{
	poller *p = arg;
	core_err err = { 0 };

	while (!atomic_load(&p->stop) && !p->bad[0]) {
		rec_txn *t = NULL;

		if (rec_read_begin(p->env, &t, &err))
			break;
		for (uint64_t run = 1; run <= END_RUNS && !p->bad[0]; run++) {
			rec_key k = key1(run);
			const void *v;
			size_t n;
			Elspeth__RunRecord *r;

			if (rec_get(t, REC_RUNS, &k, &v, &n))
				continue;
			r = elspeth__run_record__unpack(NULL, n, v);
			if (!r) {
				snprintf(p->bad, sizeof(p->bad), "run %llu: unreadable",
					 (unsigned long long)run);
				break;
			}
			if (strcmp(r->status, "running")) {
				p->seen_ended++;
				if (!r->chain_head[0])
					snprintf(p->bad, sizeof(p->bad),
						 "run %llu: status %s without a head",
						 (unsigned long long)run, r->status);
			}
			elspeth__run_record__free_unpacked(r, NULL);
		}
		rec_read_end(t);
	}
	return NULL;
}

Test(chain, a_run_ends_with_its_head_in_one_transaction)
{
	core_err err = { 0 };
	poller p = { 0 };
	pthread_t th;
	fixture fx;
	json_t *rep;

	memset(&fx, 0, sizeof(fx));
	tdir_make(&fx.d);
	fx.env = env_open(fx.d.path, 0);
	p.env = fx.env; /* another thread of the same process */
	cr_assert_eq(pthread_create(&th, NULL, poll_runs, &p), 0);
	for (uint64_t run = 1; run <= END_RUNS; run++) {
		Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
		rec_key k = key1(run);

		r.run_id = run;
		r.status = "running";
		r.canonical_version = CORE_CANONICAL_VERSION;
		cr_assert_eq(rec_put_msg(fx.env, REC_RUNS, &k, &r.base), 0);
		for (uint32_t i = 0; i < 3; i++)
			put_node(fx.env, run, i);
		env_flush(fx.env);
		r.status = run % 2 ? "completed" : "failed";
		r.rows = run;
		cr_assert_eq(rec_run_end(fx.env, &r, NULL, &err), 0, "%s", err.msg);
	}
	env_flush(fx.env);
	atomic_store(&p.stop, true);
	pthread_join(th, NULL);
	cr_assert_eq(p.bad[0], 0, "%s", p.bad);
	cr_assert_gt(p.seen_ended, 0, "the reader never saw an ended run");
	rep = verify_run(&fx, 7);
	cr_assert_str_eq(chain_field(rep, "status"), "intact");
	json_decref(rep);
	fixture_close(&fx);
}
