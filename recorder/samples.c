/*
 * samples.c — the run's metric samples (REC_SAMPLES, docs/report.md):
 * their key. The engine takes them (engine/sample.c), `elspeth report`
 * draws them, `elspeth verify` checks them (verify.c).
 */
#include "recorder/recorder.h"

int rec_sample_put(rec_env *env, const Elspeth__SampleRecord *s)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, s->run_id);
	rec_key_u32(&k, s->attempt);
	rec_key_u32(&k, s->index);
	return rec_put_msg(env, REC_SAMPLES, &k, &s->base);
}
