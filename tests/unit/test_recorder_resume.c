/* test_recorder_resume.c — verify and explain on the records of resumed
 * runs (superseded tokens and batches, replayed calls, resumes, tokens
 * waiting in a checkpoint's aggregation buffers), on Landscapes built by
 * hand; each resume rule is paired with the same record outside it, which
 * verify must still flag. A row's records go into its story (with its
 * payload), as the engine writes them; calls carry their bodies. */
#include "test_recorder_util.h"

#define RUN 1
#define MAX_TOKENS 64

typedef struct fixture {
	tdir d;
	rec_env *env;
	char sink_path[160]; /* root/out.txt, holding "hello\n" */
	uint64_t token_row[MAX_TOKENS]; /* the row of each token put */
	uint64_t nodes_put;  /* bit n: node n was put */
} fixture;

/* The row whose story holds the token's records. */
static uint64_t row_of(const fixture *fx, uint64_t token)
{
	cr_assert_lt(token, MAX_TOKENS);
	cr_assert_neq(fx->token_row[token], 0, "token %llu was not put",
		      (unsigned long long)token);
	return fx->token_row[token];
}

static void fixture_open(fixture *fx)
{
	FILE *f;

	memset(fx, 0, sizeof(*fx));
	tdir_make(&fx->d);
	fx->env = env_open(fx->d.path, 0);
	snprintf(fx->sink_path, sizeof(fx->sink_path), "%s/out.txt", fx->d.root);
	f = fopen(fx->sink_path, "wb");
	cr_assert_not_null(f);
	fputs("hello\n", f);
	fclose(f);
}

static void fixture_close(fixture *fx)
{
	env_close(fx->env);
	tdir_remove(&fx->d);
}

/* ------------------------------------------------------------ records */

static void put_run(fixture *fx, const char *status)
{
	Elspeth__RunRecord r = ELSPETH__RUN_RECORD__INIT;
	rec_key k = key1(RUN);

	r.run_id = RUN;
	r.status = (char *)status;
	r.canonical_version = CORE_CANONICAL_VERSION;
	cr_assert_eq(rec_put_msg(fx->env, REC_RUNS, &k, &r.base), 0);
}

static void put_node(fixture *fx, uint32_t id, const char *name, const char *kind)
{
	Elspeth__NodeRecord n = ELSPETH__NODE_RECORD__INIT;
	rec_key k = key1(RUN);

	rec_key_u32(&k, id);
	n.run_id = RUN;
	n.node_id = id;
	n.name = (char *)name;
	n.kind = (char *)kind;
	n.plugin = "test";
	cr_assert_eq(rec_put_msg(fx->env, REC_NODES, &k, &n.base), 0);
	if (id < 64)
		fx->nodes_put |= 1ull << id;
}

static void put_row(fixture *fx, uint64_t seq)
{
	Elspeth__RowRecord r = ELSPETH__ROW_RECORD__INIT;
	char hash[CORE_SHA256_HEX_LEN + 1];

	story_payload(fx->env, RUN, seq, "{\"a\":1}", 7, hash);
	r.run_id = RUN;
	r.row_id = r.seq = seq;
	r.source_hash = r.payload_ref = hash;
	r.where = "line 2";
	story_put(fx->env, RUN, seq, &r.base);
}

static void put_token(fixture *fx, uint64_t token, uint64_t row)
{
	Elspeth__TokenRecord t = ELSPETH__TOKEN_RECORD__INIT;

	cr_assert_lt(token, MAX_TOKENS);
	fx->token_row[token] = row;
	t.run_id = RUN;
	t.token_id = token;
	t.row_id = row;
	story_put(fx->env, RUN, row, &t.base);
}

static void put_parent(fixture *fx, uint64_t token, uint64_t parent)
{
	Elspeth__TokenParentRecord p = ELSPETH__TOKEN_PARENT_RECORD__INIT;

	p.run_id = RUN;
	p.token_id = token;
	p.parent_token_id = parent;
	story_put(fx->env, RUN, row_of(fx, token), &p.base);
}

static void put_outcome(fixture *fx, uint64_t token, uint64_t row,
			const char *outcome, const char *sink)
{
	Elspeth__TokenOutcomeRecord o = ELSPETH__TOKEN_OUTCOME_RECORD__INIT;

	o.run_id = RUN;
	o.token_id = token;
	o.row_id = row;
	o.outcome = (char *)outcome;
	o.sink = (char *)sink;
	story_put(fx->env, RUN, row, &o.base);
}

/* An artifact of `length` bytes at `offset` of the sink file, hashed as
 * "hello\n" (so [0, 6) matches and anything else does not). */
static void put_artifact(fixture *fx, uint64_t token, uint64_t offset, uint64_t length)
{
	Elspeth__ArtifactRecord a = ELSPETH__ARTIFACT_RECORD__INIT;
	uint8_t d[CORE_SHA256_LEN];
	char hex[CORE_SHA256_HEX_LEN + 1];

	core_sha256("hello\n", 6, d);
	core_hex(d, sizeof(d), hex);
	a.run_id = RUN;
	a.token_id = token;
	a.sink = "out";
	a.path = fx->sink_path;
	a.offset = offset;
	a.length = length;
	a.content_hash = hex;
	story_put(fx->env, RUN, row_of(fx, token), &a.base);
}

/* A token COMPLETED to sink "out" with a good artifact. */
static void put_done(fixture *fx, uint64_t token, uint64_t row)
{
	put_token(fx, token, row);
	put_outcome(fx, token, row, "COMPLETED", "out");
	put_artifact(fx, token, 0, 6);
}

static void put_state(fixture *fx, uint64_t state, uint64_t token,
		      uint32_t node, const char *status)
{
	Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;

	/* a state is at a node of the run (verify checks it) */
	if (node < 64 && !(fx->nodes_put & 1ull << node))
		put_node(fx, node, "node", "transform");
	s.run_id = RUN;
	s.state_id = state;
	s.token_id = token;
	s.node_id = node;
	s.status = (char *)status;
	story_put(fx->env, RUN, row_of(fx, token), &s.base);
}

static void body_hash(const char *body, char hex[CORE_SHA256_HEX_LEN + 1])
{
	uint8_t d[CORE_SHA256_LEN];

	core_sha256(body, strlen(body), d);
	core_hex(d, sizeof(d), hex);
}

/* A call whose request and response bodies are `req` and `resp` (in the
 * record, with their hashes). */
static void put_call(fixture *fx, uint64_t state, uint32_t index,
		     const char *status, const char *req, const char *resp,
		     const char *replayed_from)
{
	Elspeth__CallRecord c = ELSPETH__CALL_RECORD__INIT;
	char rq[CORE_SHA256_HEX_LEN + 1], rs[CORE_SHA256_HEX_LEN + 1];
	rec_key k = key2(RUN, state);

	rec_key_u32(&k, index);
	body_hash(req, rq);
	body_hash(resp, rs);
	c.request.data = (uint8_t *)req;
	c.request.len = strlen(req);
	c.response.data = (uint8_t *)resp;
	c.response.len = strlen(resp);
	c.run_id = RUN;
	c.state_id = state;
	c.call_index = index;
	c.call_type = "llm";
	c.status = (char *)status;
	c.http_status = 200;
	c.request_hash = rq;
	c.response_hash = rs;
	c.replayed_from = (char *)replayed_from;
	cr_assert_eq(rec_put_msg(fx->env, REC_CALLS, &k, &c.base), 0);
}

static void put_superseded(fixture *fx, uint64_t token, uint64_t row, uint32_t attempt,
			   const char *reason)
{
	Elspeth__SupersededRecord s = ELSPETH__SUPERSEDED_RECORD__INIT;
	rec_key k = key2(RUN, token);

	s.run_id = RUN;
	s.token_id = token;
	s.row_id = row;
	s.attempt = attempt;
	s.reason = (char *)reason;
	cr_assert_eq(rec_put_msg(fx->env, REC_SUPERSEDED, &k, &s.base), 0);
}

static void put_resume(fixture *fx, uint32_t attempt)
{
	Elspeth__ResumeRecord r = ELSPETH__RESUME_RECORD__INIT;
	rec_key k = key1(RUN);

	rec_key_u32(&k, attempt);
	r.run_id = RUN;
	r.attempt = attempt;
	r.status = "completed";
	r.previous_status = "interrupted";
	r.from_released_seq = 10;
	r.rows_reused = 3;
	r.rows_rerun = 2;
	r.tokens_superseded = 4;
	r.calls_replayed = 1;
	r.max_rows_in_flight = 8;
	cr_assert_eq(rec_put_msg(fx->env, REC_RESUMES, &k, &r.base), 0);
}

/* A batch of node 1 with the given members (none when n is 0). */
static void put_batch(fixture *fx, uint64_t batch, const char *status,
		      const uint64_t *members, size_t n)
{
	Elspeth__BatchRecord b = ELSPETH__BATCH_RECORD__INIT;
	rec_key k = key2(RUN, batch);
	size_t i;

	b.run_id = RUN;
	b.batch_id = batch;
	b.node_id = 1;
	b.trigger = "count";
	b.status = (char *)status;
	cr_assert_eq(rec_put_msg(fx->env, REC_BATCHES, &k, &b.base), 0);
	for (i = 0; i < n; i++) {
		Elspeth__BatchMemberRecord m = ELSPETH__BATCH_MEMBER_RECORD__INIT;
		rec_key mk = key2(RUN, batch);

		rec_key_u32(&mk, (uint32_t)i);
		m.run_id = RUN;
		m.batch_id = batch;
		m.token_id = members[i];
		m.ordinal = (uint32_t)i;
		cr_assert_eq(rec_put_msg(fx->env, REC_BATCH_MEMBERS, &mk, &m.base), 0);
	}
}

/* The run's checkpoint, with `member` waiting in node 1's buffer. */
static void put_checkpoint(fixture *fx, uint64_t member)
{
	Elspeth__Checkpoint c = ELSPETH__CHECKPOINT__INIT;
	Elspeth__CheckpointAggregation agg = ELSPETH__CHECKPOINT_AGGREGATION__INIT;
	Elspeth__CheckpointToken tok = ELSPETH__CHECKPOINT_TOKEN__INIT;
	Elspeth__CheckpointAggregation *aggs[1] = { &agg };
	Elspeth__CheckpointToken *toks[1] = { &tok };
	rec_key k = key1(RUN);

	tok.token_id = member;
	tok.to = 2;
	agg.node_id = 1;
	agg.name = "batch";
	agg.n_members = 1;
	agg.members = toks;
	c.format_version = 1;
	c.run_id = RUN;
	c.reason = "interrupt";
	c.n_aggregations = 1;
	c.aggregations = aggs;
	cr_assert_eq(rec_put_msg(fx->env, REC_CHECKPOINTS, &k, &c.base), 0);
}

/* The run's checkpoint, holding row `seq` unreleased (in flight). */
static void put_checkpoint_row(fixture *fx, uint64_t seq)
{
	Elspeth__Checkpoint c = ELSPETH__CHECKPOINT__INIT;
	Elspeth__CheckpointRow row = ELSPETH__CHECKPOINT_ROW__INIT;
	Elspeth__CheckpointRow *rows[1] = { &row };
	rec_key k = key1(RUN);

	row.seq = seq;
	c.format_version = 1;
	c.run_id = RUN;
	c.reason = "interrupt";
	c.released_through_seq = seq - 1;
	c.n_rows = 1;
	c.rows = rows;
	cr_assert_eq(rec_put_msg(fx->env, REC_CHECKPOINTS, &k, &c.base), 0);
}

/* --------------------------------------------------------- assertions */

static json_t *verify_run(fixture *fx)
{
	core_err err = { 0 };
	json_t *rep = NULL;
	int rc;

	trail_flush(fx->env);
	/* the run ends: its records are chained (recorder/chain.c) */
	cr_assert_eq(rec_run_chain(fx->env, RUN, NULL, &err), 0, "%s", err.msg);
	rc = rec_verify(fx->env, RUN, &rep, &err);
	cr_assert_eq(rc, 0, "rec_verify: %d %s", rc, err.msg);
	cr_assert_not_null(rep);
	return rep;
}

static long long checked(const json_t *rep, const char *what)
{
	json_t *v = json_object_get(json_object_get(rep, "checked"), what);

	cr_assert(json_is_integer(v), "checked.%s is missing", what);
	return (long long)json_integer_value(v);
}

/* The report's violations, one a line, for failure messages. */
static char *violations_text(const json_t *rep)
{
	char *s = json_dumps(json_object_get(rep, "violations"), JSON_INDENT(1));

	return s ? s : strdup("?");
}

static void assert_clean(const json_t *rep)
{
	char *text = violations_text(rep);

	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), 0,
		     "expected no violations, got %s", text);
	free(text);
}

/* Exactly one violation contains `want`. */
static void assert_violation(const json_t *rep, const char *want)
{
	const json_t *v;
	size_t i, n = 0;
	char *text = violations_text(rep);

	json_array_foreach(json_object_get(rep, "violations"), i, v)
		if (strstr(json_string_value(v), want))
			n++;
	cr_assert_eq(n, 1, "expected one violation with \"%s\", got %s", want, text);
	free(text);
}

static void assert_count(const json_t *rep, long long want)
{
	char *text = violations_text(rep);

	cr_assert_eq(json_integer_value(json_object_get(rep, "violation_count")), want,
		     "expected %lld violations, got %s", want, text);
	free(text);
}

/* ---------------------------------------------------------------- verify */

/* Row 1 was in flight at the crash: tokens 1-4 of the first attempt are
 * superseded, token 5 is the resume's. Token 1 has no outcome and an open
 * state; token 2 is COMPLETED with an artifact the resume cut off the file;
 * token 3 FORKED into token 4, which never got further (no outcome), and
 * token 6 FORKED with no child at all. */
static void put_resumed_row(fixture *fx)
{
	put_row(fx, 1);
	put_token(fx, 1, 1);
	put_state(fx, 1, 1, 1, "open");
	put_token(fx, 2, 1);
	put_outcome(fx, 2, 1, "COMPLETED", "out");
	put_artifact(fx, 2, 6, 6);
	put_token(fx, 3, 1);
	put_outcome(fx, 3, 1, "FORKED", "");
	put_token(fx, 4, 1);
	put_parent(fx, 4, 3);
	put_token(fx, 6, 1);
	put_outcome(fx, 6, 1, "FORKED", "");
	for (uint64_t t = 1; t <= 6; t++)
		if (t != 5)
			put_superseded(fx, t, 1, 1, "in flight at the crash");
	put_done(fx, 5, 1);
	put_state(fx, 2, 5, 1, "completed");
	put_resume(fx, 1);
}

Test(recorder_resume, superseded_tokens_need_no_outcome_closed_state_or_artifact,
     .timeout = TIMEOUT)
{
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_resumed_row(&fx);
	rep = verify_run(&fx);
	assert_clean(rep);
	cr_assert_eq(checked(rep, "tokens"), 6);
	cr_assert_eq(checked(rep, "superseded"), 5);
	cr_assert_eq(checked(rep, "resumes"), 1);
	cr_assert_eq(checked(rep, "replayed_calls"), 0);
	cr_assert_eq(checked(rep, "artifacts"), 1, "the superseded artifact is not checked");
	json_decref(rep);
	fixture_close(&fx);
}

/* The same records without the superseded marks: each is a violation. */
Test(recorder_resume, the_same_tokens_not_superseded_are_violations, .timeout = TIMEOUT)
{
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_row(&fx, 1);
	put_token(&fx, 1, 1);
	put_state(&fx, 1, 1, 1, "open");
	put_token(&fx, 2, 1);
	put_outcome(&fx, 2, 1, "COMPLETED", "out");
	put_artifact(&fx, 2, 6, 6);
	put_token(&fx, 6, 1);
	put_outcome(&fx, 6, 1, "FORKED", "");
	put_token(&fx, 7, 1);
	put_outcome(&fx, 7, 1, "ROUTED", "out"); /* no artifact */
	rep = verify_run(&fx);
	assert_violation(rep, "token 1 has no terminal outcome");
	assert_violation(rep, "node state 1 (token 1) is not closed");
	assert_violation(rep, "token 2: ");
	assert_violation(rep, "are beyond the end of the file");
	assert_violation(rep, "token 6 is FORKED but no token descends from it");
	assert_violation(rep, "token 7 (row 1): ROUTED to sink 'out' but no artifact");
	assert_count(rep, 5);
	cr_assert_eq(checked(rep, "superseded"), 0);
	cr_assert_eq(checked(rep, "resumes"), 0);
	json_decref(rep);
	fixture_close(&fx);
}

Test(recorder_resume, superseded_token_must_be_recorded, .timeout = TIMEOUT)
{
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_row(&fx, 1);
	put_done(&fx, 1, 1);
	put_superseded(&fx, 9, 1, 1, "in flight at the crash");
	rep = verify_run(&fx);
	assert_violation(rep, "superseded token 9 is not recorded");
	assert_count(rep, 1);
	json_decref(rep);
	fixture_close(&fx);
}

/* Batch 1 was flushed after the last checkpoint and again by the resume
 * (batch 2): its member 1 (superseded) has no outcome, and batch 3 (also
 * superseded) lost its members to the crash. Batch 4 is not superseded and
 * its member 3 has no outcome: a violation. */
Test(recorder_resume, superseded_batch_members_need_no_outcome, .timeout = TIMEOUT)
{
	const uint64_t m1[] = { 1 }, m2[] = { 2 }, m4[] = { 3 };
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_row(&fx, 1);
	put_token(&fx, 1, 1);
	put_superseded(&fx, 1, 1, 1, "in flight at the crash");
	put_token(&fx, 2, 1);
	put_outcome(&fx, 2, 1, "CONSUMED_IN_BATCH", "");
	put_token(&fx, 3, 1);
	put_superseded(&fx, 3, 1, 1, "in flight at the crash");
	put_batch(&fx, 1, "superseded", m1, 1);
	put_batch(&fx, 2, "flushed", m2, 1);
	put_batch(&fx, 3, "superseded", NULL, 0);
	put_batch(&fx, 4, "flushed", m4, 1);
	put_batch(&fx, 5, "flushed", NULL, 0);
	rep = verify_run(&fx);
	assert_violation(rep, "batch 4: member token 3 has no outcome");
	assert_violation(rep, "batch 5 of node 1 has no members");
	assert_count(rep, 2);
	cr_assert_eq(checked(rep, "batches"), 5);
	json_decref(rep);
	fixture_close(&fx);
}

/* A node state is recorded after its calls: the crash lost state 8 of
 * superseded token 1 but not its call; state 9's call (token 2, not
 * superseded) has no state either, which is a violation. */
Test(recorder_resume, superseded_tokens_calls_may_lack_their_state, .timeout = TIMEOUT)
{
	Elspeth__CallRecord c = ELSPETH__CALL_RECORD__INIT;
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_row(&fx, 1);
	put_token(&fx, 1, 1);
	put_superseded(&fx, 1, 1, 1, "in flight at the crash");
	put_done(&fx, 2, 1);
	for (uint64_t st = 8; st <= 9; st++) {
		rec_key k = key2(RUN, st);

		rec_key_u32(&k, 0);
		c.run_id = RUN;
		c.state_id = st;
		c.token_id = st - 7;
		c.row_id = 1;
		c.call_type = "llm";
		c.status = "error";
		cr_assert_eq(rec_put_msg(fx.env, REC_CALLS, &k, &c.base), 0);
	}
	rep = verify_run(&fx);
	assert_violation(rep, "call 0 of node state 9: the node state is not recorded");
	assert_count(rep, 1);
	json_decref(rep);
	fixture_close(&fx);
}

/* A replayed call names a successful call of the run with the same request:
 * state 1 has the original (call 0); state 2 replays it (call 0) and then
 * sends one of its own (call 1). */
static void put_good_replay(fixture *fx)
{
	put_row(fx, 1);
	put_done(fx, 1, 1);
	put_state(fx, 1, 1, 1, "completed");
	put_superseded(fx, 1, 1, 1, "in flight at the crash");
	put_done(fx, 2, 1);
	put_state(fx, 2, 2, 1, "completed");
	put_call(fx, 1, 0, "success", "{\"q\":1}", "{\"a\":1}", "");
	put_call(fx, 2, 0, "replayed", "{\"q\":1}", "{\"a\":1}", "1/0");
	put_call(fx, 2, 1, "success", "{\"q\":2}", "{\"a\":2}", "");
	put_resume(fx, 1);
}

Test(recorder_resume, replayed_call_naming_a_good_call_verifies, .timeout = TIMEOUT)
{
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_good_replay(&fx);
	rep = verify_run(&fx);
	assert_clean(rep);
	cr_assert_eq(checked(rep, "calls"), 3);
	cr_assert_eq(checked(rep, "replayed_calls"), 1);
	json_decref(rep);
	fixture_close(&fx);
}

Test(recorder_resume, bad_replayed_calls_are_violations, .timeout = TIMEOUT)
{
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_good_replay(&fx);
	put_call(&fx, 1, 1, "error", "{\"q\":3}", "", "");
	put_done(&fx, 3, 1);
	put_state(&fx, 3, 3, 1, "completed");
	put_call(&fx, 3, 0, "replayed", "{\"q\":1}", "{\"a\":1}", "1/x");
	put_call(&fx, 3, 1, "replayed", "{\"q\":1}", "{\"a\":1}", "1/7");
	put_call(&fx, 3, 2, "replayed", "{\"q\":3}", "", "1/1");
	put_call(&fx, 3, 3, "replayed", "{\"q\":9}", "{\"a\":1}", "1/0");
	put_call(&fx, 3, 4, "replayed", "{\"q\":1}", "{\"a\":9}", "1/0");
	put_call(&fx, 3, 5, "replayed", "{\"q\":1}", "{\"a\":1}", "");
	put_call(&fx, 3, 6, "success", "{\"q\":1}", "{\"a\":1}", "1/0");
	put_call(&fx, 3, 8, "replayed", "{\"q\":1}", "{\"a\":1}", "1/0");
	put_call(&fx, 3, 9, "replayed", "{\"q\":1}", "{\"a\":1}", "-1/0");
	put_call(&fx, 3, 10, "replayed", "{\"q\":1}", "{\"a\":1}", "1/4294967296");
	rep = verify_run(&fx);
	assert_violation(rep, "call 0 of node state 3: replayed from '1/x', which is not STATE/INDEX");
	assert_violation(rep, "call 1 of node state 3: replayed from call 1/7, which is not recorded");
	assert_violation(rep, "call 2 of node state 3: replayed from call 1/1, whose status is 'error'");
	assert_violation(rep, "call 3 of node state 3: replayed from call 1/0, which sent a different request");
	assert_violation(rep, "call 4 of node state 3: replayed from call 1/0, whose answer differs");
	assert_violation(rep, "call 5 of node state 3: replayed, but does not name the call");
	assert_violation(rep, "call 6 of node state 3: has replayed_from '1/0' but status 'success'");
	assert_violation(rep, "call 8 of node state 3: expected call index 7");
	assert_violation(rep, "call 9 of node state 3: replayed from '-1/0', which is not STATE/INDEX");
	assert_violation(rep, "call 10 of node state 3: replayed from '1/4294967296', which is not");
	assert_count(rep, 10);
	cr_assert_eq(checked(rep, "replayed_calls"), 10);
	json_decref(rep);
	fixture_close(&fx);
}

/* Verifies a run in `status` with rows 1 and 2 (tokens 1 and 2, no
 * outcomes) whose checkpoint holds either token 1 in an aggregation
 * buffer (buffered) or row 2, with a second token 3, as unreleased. */
static json_t *verify_held(const char *status, bool buffered)
{
	fixture fx;
	json_t *rep;

	fixture_open(&fx);
	put_run(&fx, status);
	put_row(&fx, 1);
	put_row(&fx, 2);
	put_token(&fx, 1, 1);
	put_token(&fx, 2, 2);
	if (buffered) {
		put_checkpoint(&fx, 1);
	} else {
		put_token(&fx, 3, 2);
		put_checkpoint_row(&fx, 2);
	}
	rep = verify_run(&fx);
	fixture_close(&fx);
	return rep;
}

/* Token 1 waits in the checkpoint's aggregation buffer, token 2 does not:
 * in an interrupted (or crashed, or failed) run only token 2 lacks an
 * outcome; in a completed run both do. */
Test(recorder_resume, tokens_in_a_checkpoint_buffer_need_no_outcome_until_completed,
     .timeout = TIMEOUT)
{
	static const char *const unfinished[] = { "interrupted", "running", "failed" };
	json_t *rep;

	for (size_t i = 0; i < 3; i++) {
		rep = verify_held(unfinished[i], true);
		assert_violation(rep, "token 2 has no terminal outcome");
		assert_count(rep, 1);
		json_decref(rep);
	}
	rep = verify_held("completed", true);
	assert_violation(rep, "token 1 has no terminal outcome");
	assert_violation(rep, "token 2 has no terminal outcome");
	assert_count(rep, 2);
	json_decref(rep);
}

/* Row 2 was cut short by an interrupt and is held unreleased by the
 * checkpoint: its tokens need no outcome until the run completes; row 1's
 * token still does. */
Test(recorder_resume, tokens_of_unreleased_checkpoint_rows_need_no_outcome_until_completed,
     .timeout = TIMEOUT)
{
	json_t *rep = verify_held("interrupted", false);

	assert_violation(rep, "token 1 has no terminal outcome");
	assert_count(rep, 1);
	json_decref(rep);
	rep = verify_held("completed", false);
	assert_violation(rep, "token 2 has no terminal outcome");
	assert_violation(rep, "token 3 has no terminal outcome");
	assert_count(rep, 3);
	json_decref(rep);
}

/* --------------------------------------------------------------- explain */

static json_t *explain_row(fixture *fx, uint64_t seq, uint64_t token)
{
	core_err err = { 0 };
	json_t *doc = NULL;
	int rc;

	trail_flush(fx->env);
	rc = rec_explain(fx->env, RUN, seq, token, &doc, &err);
	cr_assert_eq(rc, 0, "rec_explain: %d %s", rc, err.msg);
	cr_assert_not_null(doc);
	return doc;
}

static json_t *token_at(const json_t *doc, size_t i)
{
	json_t *t = json_array_get(json_object_get(doc, "tokens"), i);

	cr_assert_not_null(t, "no token %zu", i);
	return t;
}

/* The explain of row 1 of put_resumed_row + put_good_replay's calls, with
 * token 7 superseded but never recorded (the crash lost the story it was
 * gathered in: only the superseded record names it). Token 1's state 3
 * comes after the row was sealed: a fragment of its own. */
static json_t *explain_resumed(fixture *fx, uint64_t token)
{
	fixture_open(fx);
	put_run(fx, "completed");
	put_node(fx, 0, "source", "source");
	put_node(fx, 1, "llm", "transform");
	put_resumed_row(fx);
	story_seal(fx->env, RUN, 1);
	put_state(fx, 3, 1, 1, "completed");
	put_call(fx, 3, 0, "success", "{\"q\":1}", "{\"a\":1}", "");
	put_call(fx, 2, 0, "replayed", "{\"q\":1}", "{\"a\":1}", "3/0");
	put_superseded(fx, 7, 1, 2, "cut off");
	return explain_row(fx, token ? 0 : 1, token);
}

Test(recorder_resume, explain_marks_superseded_tokens_and_lists_resumes,
     .timeout = TIMEOUT)
{
	fixture fx;
	json_t *doc = explain_resumed(&fx, 0), *t, *s, *r, *calls;
	const uint64_t want[] = { 1, 2, 3, 4, 5, 6, 7 };

	cr_assert_eq(json_array_size(json_object_get(doc, "tokens")), 7);
	for (size_t i = 0; i < 7; i++) {
		t = token_at(doc, i);
		cr_assert_eq(json_integer_value(json_object_get(t, "token_id")),
			     (json_int_t)want[i], "tokens in token order");
		s = json_object_get(t, "superseded");
		if (want[i] == 5) {
			cr_assert_null(s, "the resume's token is not superseded");
			continue;
		}
		cr_assert(json_is_object(s), "token %zu is marked superseded", (size_t)want[i]);
		cr_assert_eq(json_integer_value(json_object_get(s, "attempt")),
			     want[i] == 7 ? 2 : 1);
		cr_assert_str_eq(json_string_value(json_object_get(s, "reason")),
				 want[i] == 7 ? "cut off" : "in flight at the crash");
	}
	/* The superseded token keeps its outcome and artifact in the story. */
	t = token_at(doc, 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_object_get(t, "outcome"),
							   "outcome")), "COMPLETED");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(t, "artifact"),
							"offset")), 6);

	/* The row's source data: its payload, from the row's story. */
	r = json_object_get(json_object_get(doc, "row"), "source");
	cr_assert_null(json_object_get(r, "missing"), "the row's payload is in its story");
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(r, "data"), "a")), 1);

	r = json_object_get(doc, "resumes");
	cr_assert_eq(json_array_size(r), 1);
	r = json_array_get(r, 0);
	cr_assert_eq(json_integer_value(json_object_get(r, "attempt")), 1);
	cr_assert_str_eq(json_string_value(json_object_get(r, "status")), "completed");
	cr_assert_eq(json_integer_value(json_object_get(r, "from_released_seq")), 10);
	cr_assert_eq(json_integer_value(json_object_get(r, "rows_reused")), 3);
	cr_assert_eq(json_integer_value(json_object_get(r, "rows_rerun")), 2);
	cr_assert_eq(json_integer_value(json_object_get(r, "tokens_superseded")), 4);
	cr_assert_eq(json_integer_value(json_object_get(r, "calls_replayed")), 1);
	cr_assert_eq(json_integer_value(json_object_get(r, "max_rows_in_flight")), 8);
	cr_assert(json_object_get(r, "started_at") != NULL);

	/* Token 1's state 3 made the call; token 5's state 2 replayed it. */
	calls = json_object_get(json_array_get(json_object_get(token_at(doc, 0), "states"), 1),
				"calls");
	cr_assert_eq(json_array_size(calls), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(calls, 0),
							   "status")), "success");
	cr_assert_null(json_object_get(json_array_get(calls, 0), "replayed_from"));
	/* The bodies, from the call's own record. */
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(json_object_get(
		json_array_get(calls, 0), "request"), "data"), "q")), 1);
	cr_assert_eq(json_integer_value(json_object_get(json_object_get(json_object_get(
		json_array_get(calls, 0), "response"), "data"), "a")), 1);
	calls = json_object_get(json_array_get(json_object_get(token_at(doc, 4), "states"), 0),
				"calls");
	cr_assert_eq(json_array_size(calls), 1);
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(calls, 0),
							   "status")), "replayed");
	cr_assert_str_eq(json_string_value(json_object_get(json_array_get(calls, 0),
							   "replayed_from")), "3/0");
	json_decref(doc);
	fixture_close(&fx);
}

Test(recorder_resume, explain_by_superseded_token_tells_the_whole_row, .timeout = TIMEOUT)
{
	fixture fx;
	json_t *doc = explain_resumed(&fx, 4); /* the forked child, superseded */

	cr_assert_eq(json_integer_value(json_object_get(json_object_get(doc, "row"), "seq")), 1);
	cr_assert_eq(json_array_size(json_object_get(doc, "tokens")), 7);
	json_decref(doc);
	fixture_close(&fx);
}

Test(recorder_resume, explain_of_a_run_never_resumed_has_no_marks, .timeout = TIMEOUT)
{
	fixture fx;
	json_t *doc, *t, *r;
	const uint64_t m[] = { 1 };

	fixture_open(&fx);
	put_run(&fx, "completed");
	put_node(&fx, 0, "source", "source");
	put_node(&fx, 1, "batch", "transform");
	put_row(&fx, 1);
	put_done(&fx, 1, 1);
	put_batch(&fx, 1, "flushed", m, 1);
	put_state(&fx, 1, 1, 1, "completed");
	{
		/* the aggregation state names its batch in its context */
		Elspeth__NodeStateRecord s = ELSPETH__NODE_STATE_RECORD__INIT;

		s.run_id = RUN;
		s.state_id = 1;
		s.token_id = 1;
		s.node_id = 1;
		s.status = "completed";
		s.context_json = "{\"batch_id\":1}";
		story_put(fx.env, RUN, 1, &s.base); /* replaces the state put above */
	}
	doc = explain_row(&fx, 1, 0);
	r = json_object_get(doc, "resumes");
	cr_assert(json_is_array(r), "resumes is always there");
	cr_assert_eq(json_array_size(r), 0);
	t = token_at(doc, 0);
	cr_assert_null(json_object_get(t, "superseded"));
	r = json_object_get(json_array_get(json_object_get(t, "states"), 0), "batch");
	cr_assert_str_eq(json_string_value(json_object_get(r, "status")), "flushed");
	json_decref(doc);
	fixture_close(&fx);
}
