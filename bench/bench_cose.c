/*
 * bench_cose: COSE_Sign1 verification rate (ota_cose_sign1_verify: strict
 * decode + Sig_structure + signature check) against OpenSSL's raw
 * EVP_DigestVerify on the same key, the same to-be-signed bytes and the same
 * signatures (pre-converted to what OpenSSL takes), for ES256 and EdDSA with
 * a 1 KiB payload.
 *
 * The signatures are distinct: per algorithm, NSIG messages with distinct
 * payloads (the first four bytes are the message's index), each signed once
 * by the same key, and every side verifies them in turn, in the same order.
 * Verifying one message over and over would let the CPU's branch predictor
 * learn the data-dependent branches of a verification (ours: the inverse of
 * s in common/ec_fast.c; OpenSSL's have their own), which flatters branchy
 * code on every side; an endpoint or an archive verifier sees a new
 * signature every time.
 *
 * Baselines, on the same key, bytes and signatures, in the same process:
 *   openssl_evp_verify_<alg>: EVP_DigestVerifyInit + EVP_DigestVerify per
 *     message, the plain one-shot use of the EVP API;
 *   openssl_evp_verify_<alg>_prepared: what a tuned caller does, with the
 *     digest fetched and the verification context initialised once and
 *     copied per message (the technique common/key.c uses), so this ratio
 *     isolates the cost of COSE decoding and Sig_structure assembly.
 *
 * The three run interleaved in small batches (the order rotating), timed in
 * thread CPU time, so that other load on the machine hits them alike; each of ROUNDS rounds lasts
 * about 3 x ROUND_SECONDS and yields one rate per side and one ratio per
 * baseline; the printed figures are the medians over the rounds.
 * Prints one JSON object per line (DESIGN.md section 9).
 *
 *   bench_cose [ROUNDS [ROUND_SECONDS]]     defaults: 9 rounds, 0.2 s
 */
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ota/cose.h"
#include "ota/key.h"

#include "bench_util.h"

#define PAYLOAD_BYTES 1024u
#define NSIG 64 /* distinct messages (and signatures) per algorithm */

/*
 * This thread's CPU time: time spent descheduled while other processes run
 * on the machine (CI shares two cores) is not charged to whichever side
 * happened to be running.
 */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_cose: %s\n", what);
	exit(1);
}

/* One signed message and what the baselines take for it. */
typedef struct {
	uint8_t *msg;          /* COSE_Sign1 */
	size_t msg_len;
	uint8_t tbs[PAYLOAD_BYTES + 64]; /* Sig_structure */
	size_t tbs_len;
	uint8_t sig[160];      /* as OpenSSL takes it: DER for ECDSA */
	size_t sig_len;
} signed_msg;

typedef struct {
	ota_alg alg;
	const char *name;      /* "es256" */
	ota_key *key;
	signed_msg *m;         /* NSIG messages, distinct payloads, one key */
	const EVP_MD *md;      /* NULL for EdDSA */
	EVP_PKEY *pkey;        /* borrowed from key */
} fixture;

/* CBOR head of major type mt (definite length n < 2^16). */
static size_t put_head(uint8_t *w, unsigned mt, size_t n)
{
	uint8_t m = (uint8_t)(mt << 5);
	if (n < 24) {
		w[0] = (uint8_t)(m | n);
		return 1;
	}
	if (n <= 0xff) {
		w[0] = (uint8_t)(m | 24);
		w[1] = (uint8_t)n;
		return 2;
	}
	w[0] = (uint8_t)(m | 25);
	w[1] = (uint8_t)(n >> 8);
	w[2] = (uint8_t)n;
	return 3;
}

/* Signs message idx (a payload of its own) and precomputes what the
 * baselines take; dies unless our verifier accepts it. */
static void sign_one(const fixture *f, size_t idx, signed_msg *sm)
{
	uint8_t payload[PAYLOAD_BYTES];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)(i * 131u + 7u);
	for (size_t i = 0; i < 4; i++) /* distinct per message */
		payload[i] = (uint8_t)(idx >> (8 * i));
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.alg = f->alg;
	so.include_kid = true;
	ota_error err;
	if (ota_cose_sign1_sign(f->key, ota_bytes_make(payload, sizeof payload), &so, &sm->msg,
	                        &sm->msg_len, &err) != OTA_OK)
		die("signing failed");

	ota_cose_sign1 m;
	if (ota_cose_sign1_verify(ota_bytes_make(sm->msg, sm->msg_len), f->key, NULL, &m, &err) !=
	    OTA_OK)
		die("our own message does not verify");

	/* Sig_structure = ["Signature1", protected, h'', payload], built here
	 * independently of verify/ */
	size_t n = 0;
	sm->tbs[n++] = 0x84;
	sm->tbs[n++] = 0x6a;
	memcpy(sm->tbs + n, "Signature1", 10);
	n += 10;
	n += put_head(sm->tbs + n, 2, m.protected_bytes.len);
	memcpy(sm->tbs + n, m.protected_bytes.ptr, m.protected_bytes.len);
	n += m.protected_bytes.len;
	sm->tbs[n++] = 0x40;
	n += put_head(sm->tbs + n, 2, m.payload.len);
	memcpy(sm->tbs + n, m.payload.ptr, m.payload.len);
	n += m.payload.len;
	sm->tbs_len = n;

	if (f->alg == OTA_ALG_EDDSA) {
		if (m.signature.len > sizeof sm->sig)
			die("EdDSA signature too long");
		memcpy(sm->sig, m.signature.ptr, m.signature.len);
		sm->sig_len = m.signature.len;
	} else {
		/* raw r||s -> DER once, outside the timed loop (favours the baseline) */
		size_t half = m.signature.len / 2;
		ECDSA_SIG *es = ECDSA_SIG_new();
		BIGNUM *r = BN_bin2bn(m.signature.ptr, (int)half, NULL);
		BIGNUM *s = BN_bin2bn(m.signature.ptr + half, (int)half, NULL);
		if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1)
			die("ECDSA_SIG");
		unsigned char *p = sm->sig;
		int dl = i2d_ECDSA_SIG(es, &p);
		ECDSA_SIG_free(es);
		if (dl <= 0 || (size_t)dl > sizeof sm->sig)
			die("i2d_ECDSA_SIG");
		sm->sig_len = (size_t)dl;
	}
}

static void setup(fixture *f, ota_alg alg, const char *name)
{
	memset(f, 0, sizeof *f);
	f->alg = alg;
	f->name = name;
	if (ota_key_generate(alg, &f->key) != OTA_OK)
		die("key generation failed");
	f->pkey = ota_key_evp(f->key);
	f->md = alg == OTA_ALG_EDDSA ? NULL : EVP_sha256();
	f->m = calloc(NSIG, sizeof *f->m);
	if (f->m == NULL)
		die("out of memory");
	for (size_t i = 0; i < NSIG; i++) {
		sign_one(f, i, &f->m[i]);
		for (size_t j = 0; j < i; j++)
			if (f->m[j].sig_len == f->m[i].sig_len &&
			    memcmp(f->m[j].sig, f->m[i].sig, f->m[i].sig_len) == 0)
				die("two messages have the same signature");
	}
}

static void teardown(fixture *f)
{
	for (size_t i = 0; i < NSIG; i++)
		free(f->m[i].msg);
	free(f->m);
	ota_key_free(f->key);
}

static int openssl_verify_once(const fixture *f, const signed_msg *m)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return 0;
	int ok = EVP_DigestVerifyInit(ctx, NULL, f->md, NULL, f->pkey) == 1 &&
	         EVP_DigestVerify(ctx, m->sig, m->sig_len, m->tbs, m->tbs_len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

/* Prepared once per key, read-only afterwards. */
static EVP_MD *prep_md;            /* ECDSA: SHA-256 fetched once */
static EVP_PKEY_CTX *prep_vctx;    /* ECDSA: verify-initialised */
static EVP_MD_CTX *prep_edctx;     /* EdDSA: DigestVerifyInit done */

static void prepare(const fixture *f)
{
	if (f->alg == OTA_ALG_EDDSA) {
		prep_edctx = EVP_MD_CTX_new();
		if (prep_edctx == NULL ||
		    EVP_DigestVerifyInit(prep_edctx, NULL, NULL, NULL, f->pkey) != 1)
			die("EdDSA prepared context");
	} else {
		prep_md = EVP_MD_fetch(NULL, "SHA256", NULL);
		prep_vctx = EVP_PKEY_CTX_new_from_pkey(NULL, f->pkey, NULL);
		if (prep_md == NULL || prep_vctx == NULL || EVP_PKEY_verify_init(prep_vctx) != 1)
			die("ECDSA prepared context");
	}
}

static void unprepare(void)
{
	EVP_MD_CTX_free(prep_edctx);
	EVP_PKEY_CTX_free(prep_vctx);
	EVP_MD_free(prep_md);
	prep_edctx = NULL;
	prep_vctx = NULL;
	prep_md = NULL;
}

static int openssl_prepared_once(const fixture *f, const signed_msg *m)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return 0;
	int ok;
	if (f->alg == OTA_ALG_EDDSA) {
		ok = EVP_MD_CTX_copy_ex(ctx, prep_edctx) == 1 &&
		     EVP_DigestVerify(ctx, m->sig, m->sig_len, m->tbs, m->tbs_len) == 1;
	} else {
		uint8_t dig[EVP_MAX_MD_SIZE];
		unsigned dl = 0;
		EVP_PKEY_CTX *pc = NULL;
		ok = EVP_DigestInit_ex(ctx, prep_md, NULL) == 1 &&
		     EVP_DigestUpdate(ctx, m->tbs, m->tbs_len) == 1 &&
		     EVP_DigestFinal_ex(ctx, dig, &dl) == 1 &&
		     (pc = EVP_PKEY_CTX_dup(prep_vctx)) != NULL &&
		     EVP_PKEY_verify(pc, m->sig, m->sig_len, dig, dl) == 1;
		EVP_PKEY_CTX_free(pc);
	}
	EVP_MD_CTX_free(ctx);
	return ok;
}

static int ours_verify_once(const fixture *f, const signed_msg *m)
{
	return ota_cose_sign1_verify(ota_bytes_make(m->msg, m->msg_len), f->key, NULL, NULL, NULL) ==
	       OTA_OK;
}

#define SIDES 3
#define BATCH 16
typedef int (*verify_fn)(const fixture *, const signed_msg *);
static const verify_fn side_fn[SIDES] = {ours_verify_once, openssl_verify_once,
                                         openssl_prepared_once};

/*
 * Seconds taken by BATCH calls of fn, on the messages *next, *next + 1, ...
 * (mod NSIG); *next is the side's own counter, so every side goes through
 * the same messages in the same order. Dies if any verification fails.
 */
static double time_batch(verify_fn fn, const fixture *f, unsigned long *next)
{
	double t0 = now_s();
	for (int i = 0; i < BATCH; i++)
		if (!fn(f, &f->m[(*next)++ % NSIG]))
			die("a verification failed during the benchmark");
	return now_s() - t0;
}

static void run(const fixture *f, long rounds, double secs)
{
	double *rate[SIDES], *ratio[SIDES];
	for (int s = 0; s < SIDES; s++) {
		rate[s] = calloc((size_t)rounds, sizeof(double));
		ratio[s] = calloc((size_t)rounds, sizeof(double));
		if (rate[s] == NULL || ratio[s] == NULL)
			die("out of memory");
	}
	unsigned long next[SIDES] = {0}; /* per side: the next message, mod NSIG */
	for (int s = 0; s < SIDES; s++) /* warm-up */
		(void)time_batch(side_fn[s], f, &next[s]);
	for (long r = 0; r < rounds; r++) {
		double t[SIDES] = {0};
		unsigned long batches = 0;
		do {
			for (int k = 0; k < SIDES; k++) {
				int s = (int)((batches + (unsigned long)k) % SIDES);
				t[s] += time_batch(side_fn[s], f, &next[s]);
			}
			batches++;
		} while (t[0] + t[1] + t[2] < SIDES * secs);
		for (int s = 0; s < SIDES; s++)
			rate[s][r] = (double)(batches * BATCH) / t[s];
		for (int s = 1; s < SIDES; s++)
			ratio[s][r] = rate[0][r] / rate[s][r];
	}
	double ours = bench_median(rate[0], (size_t)rounds);
	static const char *const suffix[SIDES] = {"", "", "_prepared"};
	for (int s = 1; s < SIDES; s++)
		printf("{\"bench\": \"cose_verify_%s%s\", \"value\": %.0f, \"unit\": \"ops/s\", "
		       "\"baseline\": \"openssl_evp_verify_%s%s\", \"baseline_value\": %.0f, "
		       "\"ratio\": %.3f}\n",
		       f->name, s == 1 ? "" : "_vs_prepared", ours, f->name, suffix[s],
		       bench_median(rate[s], (size_t)rounds),
		       bench_median(ratio[s], (size_t)rounds));
	fflush(stdout);
	for (int s = 0; s < SIDES; s++) {
		free(rate[s]);
		free(ratio[s]);
	}
}

int main(int argc, char **argv)
{
	char *end = NULL;
	long rounds = 9;
	double secs = 0.2;
	if (argc > 1) {
		rounds = strtol(argv[1], &end, 10);
		if (*end != '\0')
			rounds = 0;
	}
	if (argc > 2) {
		secs = strtod(argv[2], &end);
		if (*end != '\0')
			secs = 0;
	}
	if (argc > 3 || rounds < 1 || rounds > 1000 || !(secs > 0.0 && secs < 60.0)) {
		fprintf(stderr, "usage: bench_cose [ROUNDS [ROUND_SECONDS]]\n");
		return 2;
	}
	static const struct {
		ota_alg alg;
		const char *name;
	} cases[] = {{OTA_ALG_ES256, "es256"}, {OTA_ALG_EDDSA, "eddsa"}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fixture f;
		setup(&f, cases[i].alg, cases[i].name);
		prepare(&f);
		for (size_t k = 0; k < NSIG; k++)
			if (!openssl_verify_once(&f, &f.m[k]) || !openssl_prepared_once(&f, &f.m[k]))
				die("OpenSSL does not verify the same bytes: Sig_structure mismatch");
		run(&f, rounds, secs);
		unprepare();
		teardown(&f);
	}
	return 0;
}
