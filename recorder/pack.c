/*
 * pack.c — compression of the big values: row stories (`trail`) and
 * outside calls with their bodies (`calls`). docs/audit.md "Packed
 * values"; ADR 0022 says why and what was measured.
 *
 * A packed value is
 *   u8 codec   PACK_RAW: the bytes follow as they are;
 *              PACK_ZSTD: a zstd frame follows;
 *              PACK_DICT: uv dict id, then a zstd frame made with that
 *              dictionary of the run (table `dicts`, key (run, id));
 *   uv length  of the unpacked bytes (PACK_ZSTD, PACK_DICT)
 *   bytes
 * Frames carry no checksum, dictionary id or content size (the length
 * above says it): ~6 bytes of frame overhead a value.
 *
 * The writer thread packs (apply.c calls rec__pack for every put of a
 * packed table), so the producers never pay for it. Values are small
 * (a row's story is a few hundred bytes) and alike, so a dictionary does
 * most of the work: the writer keeps the first values of a run as
 * samples and, once it has TRAIN_BYTES of them, trains a dictionary
 * (ZDICT_trainFromBuffer), stores it in the same transaction as the first
 * value packed with it and uses it for the rest of the run (a resume
 * loads it back). Until then values are packed without one.
 *
 * ELSPETH_TRAIL_PACK=raw|zstd|dict (default dict) chooses the codec; it
 * exists for bench/trail.sh, which measures the three side by side.
 */
#include <stdlib.h>
#include <string.h>

#include <zdict.h>
#include <zstd.h>

#include "recorder/recorder_internal.h"
#include "recorder/story.h"

/* The most a packed value may unpack to (a row's story fragment). */
#define UNPACK_MAX ((uint64_t)1 << 30)
#define PACK_RAW 0
#define PACK_ZSTD 1
#define PACK_DICT 2

#define LEVEL 3
#define DICT_ID 1
#define DICT_CAP ((size_t)16 << 10)
#define TRAIN_BYTES ((size_t)96 << 10)
#define TRAIN_MAX_SAMPLES 4000
#define SAMPLE_MAX ((size_t)8 << 10) /* bigger values are not samples */

struct rec__packer {
	int mode;                /* PACK_RAW, PACK_ZSTD or PACK_DICT */
	ZSTD_CCtx *cctx;
	uint64_t run;            /* the run the state below is for */
	bool run_known;
	ZSTD_CDict *cdict;
	void *dict;              /* its bytes, while not yet committed */
	size_t dict_len;
	bool dict_pending;       /* to put in the current txn */
	bool gave_up;            /* training failed: no dictionary */
	core_buf samples;
	size_t *sizes;
	size_t nsamples;
	core_buf out;
};

static int mode_from_env(void)
{
	const char *m = getenv("ELSPETH_TRAIL_PACK");

	if (m && !strcmp(m, "raw"))
		return PACK_RAW;
	if (m && !strcmp(m, "zstd"))
		return PACK_ZSTD;
	return PACK_DICT;
}

int rec__packer_init(rec_env *env)
{
	rec__packer *p = calloc(1, sizeof(*p));

	if (!p || !(p->cctx = ZSTD_createCCtx())) {
		free(p);
		return CORE_ENOMEM;
	}
	p->mode = mode_from_env();
	p->sizes = calloc(TRAIN_MAX_SAMPLES, sizeof(*p->sizes));
	if (!p->sizes) {
		ZSTD_freeCCtx(p->cctx);
		free(p);
		return CORE_ENOMEM;
	}
	ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_contentSizeFlag, 0);
	ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_checksumFlag, 0);
	ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_dictIDFlag, 0);
	env->packer = p;
	return 0;
}

static void run_reset(rec__packer *p)
{
	ZSTD_freeCDict(p->cdict);
	p->cdict = NULL;
	free(p->dict);
	p->dict = NULL;
	p->dict_len = 0;
	p->dict_pending = false;
	p->gave_up = false;
	p->nsamples = 0;
	core_buf_reset(&p->samples);
	p->run_known = false;
}

void rec__packer_free(rec_env *env)
{
	rec__packer *p = env->packer;

	if (!p)
		return;
	run_reset(p);
	ZSTD_freeCCtx(p->cctx);
	core_buf_release(&p->samples);
	core_buf_release(&p->out);
	free(p->sizes);
	free(p);
	env->packer = NULL;
}

bool rec__table_packed(rec_table t)
{
	return t == REC_TRAIL || t == REC_CALLS;
}

static rec_key dict_key(uint64_t run)
{
	rec_key k;

	rec_key_init(&k);
	rec_key_u64(&k, run);
	rec_key_u32(&k, DICT_ID);
	return k;
}

/* The run's dictionary, if one was stored (a resumed run's). */
static int run_enter(rec_env *env, MDB_txn *txn, uint64_t run)
{
	rec__packer *p = env->packer;
	rec_key k = dict_key(run);
	MDB_val mk = { k.len, k.b }, v;
	int rc;

	run_reset(p);
	p->run = run;
	p->run_known = true;
	rc = mdb_get(txn, env->dbi[REC_DICTS], &mk, &v);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc || (rc = rec__unseal(REC_DICTS, &mk, &v)))
		return rc;
	p->cdict = ZSTD_createCDict(v.mv_data, v.mv_size, LEVEL);
	if (!p->cdict)
		p->gave_up = true;
	return 0;
}

static void train(rec__packer *p)
{
	size_t n;

	p->dict = malloc(DICT_CAP);
	if (!p->dict) {
		p->gave_up = true;
		return;
	}
	n = ZDICT_trainFromBuffer(p->dict, DICT_CAP, p->samples.data,
				  p->sizes, (unsigned)p->nsamples);
	if (ZDICT_isError(n) || !(p->cdict = ZSTD_createCDict(p->dict, n, LEVEL))) {
		free(p->dict);
		p->dict = NULL;
		p->gave_up = true;
		return;
	}
	p->dict_len = n;
	p->dict_pending = true;
	core_buf_release(&p->samples);
}

static void sample(rec__packer *p, const void *v, size_t n)
{
	if (p->cdict || p->gave_up || n > SAMPLE_MAX)
		return;
	if (core_buf_append(&p->samples, v, n)) {
		p->gave_up = true;
		return;
	}
	p->sizes[p->nsamples++] = n;
	if (p->samples.len >= TRAIN_BYTES || p->nsamples == TRAIN_MAX_SAMPLES)
		train(p);
}

int rec__pack(rec_env *env, MDB_txn *txn, const uint8_t *key,
	      const void *val, size_t vlen, MDB_val *out)
{
	rec__packer *p = env->packer;
	uint64_t run = rec_key_get_u64(key, 0);
	size_t bound, hdr, n;
	int rc, codec;

	if (p->mode != PACK_RAW && (!p->run_known || p->run != run) &&
	    (rc = run_enter(env, txn, run)))
		return rc;
	codec = p->mode;
	if (codec == PACK_DICT) {
		sample(p, val, vlen);
		if (!p->cdict)
			codec = PACK_ZSTD;
	}
	if (p->dict_pending) {
		rec_key k = dict_key(run);
		MDB_val mk = { k.len, k.b }, dv = { p->dict_len, p->dict };

		if ((rc = rec__put(txn, env->dbi[REC_DICTS], REC_DICTS, &mk, &dv, 0)))
			return rc;
	}
	bound = ZSTD_compressBound(vlen);
	core_buf_reset(&p->out);
	if (core_buf_reserve(&p->out, bound + 24))
		return CORE_ENOMEM;
	p->out.data[0] = (char)codec;
	p->out.len = 1;
	if (codec != PACK_RAW) {
		if (codec == PACK_DICT)
			story_uv(&p->out, DICT_ID);
		story_uv(&p->out, vlen);
		hdr = p->out.len;
		ZSTD_CCtx_reset(p->cctx, ZSTD_reset_session_only);
		ZSTD_CCtx_setParameter(p->cctx, ZSTD_c_compressionLevel, LEVEL);
		ZSTD_CCtx_refCDict(p->cctx, codec == PACK_DICT ? p->cdict : NULL);
		n = ZSTD_compress2(p->cctx, p->out.data + hdr, bound, val, vlen);
		if (!ZSTD_isError(n) && hdr + n < 1 + vlen) {
			out->mv_data = p->out.data;
			out->mv_size = hdr + n;
			return 0;
		}
		p->out.data[0] = PACK_RAW; /* did not pay */
		p->out.len = 1;
	}
	if (core_buf_append(&p->out, val, vlen))
		return CORE_ENOMEM;
	out->mv_data = p->out.data;
	out->mv_size = p->out.len;
	return 0;
}

void rec__pack_committed(rec_env *env, bool ok)
{
	rec__packer *p = env->packer;

	/* An aborted transaction is retried: a pending dictionary is put
	 * again with it. */
	if (p && ok && p->dict_pending) {
		p->dict_pending = false;
		free(p->dict);
		p->dict = NULL;
	}
}

/* ------------------------------------------------------------ reading */

struct rec__unpacker {
	ZSTD_DCtx *dctx;
	uint64_t run;
	ZSTD_DDict *ddict;
	bool have;
	core_buf out;
};

void rec__unpacker_free(rec__unpacker *u)
{
	if (!u)
		return;
	ZSTD_freeDCtx(u->dctx);
	ZSTD_freeDDict(u->ddict);
	core_buf_release(&u->out);
	free(u);
}

static int ddict_load(rec_txn *t, rec__unpacker *u, uint64_t run)
{
	rec_key k = dict_key(run);
	const void *v;
	size_t n;
	int rc;

	ZSTD_freeDDict(u->ddict);
	u->ddict = NULL;
	u->have = false;
	rc = rec__get_raw(t, REC_DICTS, &k, &v, &n);
	if (rc)
		return rc == REC_NOTFOUND ? CORE_EDATA : rc;
	if (!(u->ddict = ZSTD_createDDict(v, n)))
		return CORE_ENOMEM;
	u->run = run;
	u->have = true;
	return 0;
}

int rec__unpack(rec_txn *t, rec__unpacker **up, const void *key,
		const void *val, size_t vlen, const void **out, size_t *outlen)
{
	const uint8_t *p = val;
	story_in in = { p, p + vlen, 0 };
	rec__unpacker *u = *up;
	uint64_t len, id = 0;
	unsigned long long fsize;
	int codec;
	size_t n;
	int rc;

	if (!vlen)
		return CORE_EDATA;
	codec = *in.p++;
	if (codec == PACK_RAW) {
		*out = in.p;
		*outlen = vlen - 1;
		return 0;
	}
	if (codec == PACK_DICT)
		id = story_get_uv(&in);
	len = story_get_uv(&in);
	/* Not a zstd frame, a frame whose declared size disagrees (the
	 * writer declares none), or a length past UNPACK_MAX: damage, and
	 * nothing is allocated for it. */
	fsize = ZSTD_getFrameContentSize(in.p, (size_t)(in.end - in.p));
	if (in.bad || (codec != PACK_ZSTD && codec != PACK_DICT) ||
	    (codec == PACK_DICT && id != DICT_ID) || len > UNPACK_MAX ||
	    fsize == ZSTD_CONTENTSIZE_ERROR ||
	    (fsize != ZSTD_CONTENTSIZE_UNKNOWN && fsize != len))
		return CORE_EDATA;
	if (!u) {
		if (!(u = calloc(1, sizeof(*u))) || !(u->dctx = ZSTD_createDCtx())) {
			free(u);
			return CORE_ENOMEM;
		}
		*up = u;
	}
	if (codec == PACK_DICT) {
		uint64_t run = rec_key_get_u64(key, 0);

		if ((!u->have || u->run != run) && (rc = ddict_load(t, u, run)))
			return rc;
	}
	core_buf_reset(&u->out);
	if (core_buf_reserve(&u->out, (size_t)len + 1))
		return CORE_ENOMEM;
	n = codec == PACK_DICT ?
	    ZSTD_decompress_usingDDict(u->dctx, u->out.data, (size_t)len, in.p,
				       (size_t)(in.end - in.p), u->ddict) :
	    ZSTD_decompressDCtx(u->dctx, u->out.data, (size_t)len, in.p,
				(size_t)(in.end - in.p));
	if (ZSTD_isError(n) || n != len)
		return CORE_EDATA;
	*out = u->out.data;
	*outlen = n;
	return 0;
}
