/*
 * bench_cose: COSE_Sign1 verification rate (ota_cose_sign1_verify: strict
 * decode + Sig_structure + signature check) against OpenSSL's raw
 * EVP_DigestVerify on the same key, the same to-be-signed bytes and the same
 * signature (pre-converted to what OpenSSL takes), for ES256 and EdDSA with a
 * 1 KiB payload.
 *
 * Both sides run in the same process, interleaved in ROUNDS rounds of about
 * ROUND_SECONDS each; each side's figure is its best round (the least
 * disturbed by other load), and the ratio is ours / OpenSSL's.
 * Prints one JSON object per line (DESIGN.md section 9).
 *
 *   bench_cose [ROUNDS [ROUND_SECONDS]]     defaults: 9 rounds, 0.25 s
 */
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ota/cose.h"
#include "ota/key.h"

#define PAYLOAD_BYTES 1024u

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_cose: %s\n", what);
	exit(1);
}

typedef struct {
	ota_alg alg;
	const char *name;      /* "es256" */
	ota_key *key;
	uint8_t *msg;          /* COSE_Sign1 */
	size_t msg_len;
	uint8_t tbs[PAYLOAD_BYTES + 64]; /* Sig_structure */
	size_t tbs_len;
	uint8_t sig[160];      /* as OpenSSL takes it: DER for ECDSA */
	size_t sig_len;
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

static void setup(fixture *f, ota_alg alg, const char *name)
{
	memset(f, 0, sizeof *f);
	f->alg = alg;
	f->name = name;
	if (ota_key_generate(alg, &f->key) != OTA_OK)
		die("key generation failed");
	f->pkey = ota_key_evp(f->key);
	f->md = alg == OTA_ALG_EDDSA ? NULL : EVP_sha256();

	uint8_t payload[PAYLOAD_BYTES];
	for (size_t i = 0; i < sizeof payload; i++)
		payload[i] = (uint8_t)(i * 131u + 7u);
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.alg = alg;
	so.include_kid = true;
	ota_error err;
	if (ota_cose_sign1_sign(f->key, ota_bytes_make(payload, sizeof payload), &so, &f->msg,
	                        &f->msg_len, &err) != OTA_OK)
		die("signing failed");

	ota_cose_sign1 m;
	if (ota_cose_sign1_verify(ota_bytes_make(f->msg, f->msg_len), f->key, NULL, &m, &err) !=
	    OTA_OK)
		die("our own message does not verify");

	/* Sig_structure = ["Signature1", protected, h'', payload], built here
	 * independently of verify/ */
	size_t n = 0;
	f->tbs[n++] = 0x84;
	f->tbs[n++] = 0x6a;
	memcpy(f->tbs + n, "Signature1", 10);
	n += 10;
	n += put_head(f->tbs + n, 2, m.protected_bytes.len);
	memcpy(f->tbs + n, m.protected_bytes.ptr, m.protected_bytes.len);
	n += m.protected_bytes.len;
	f->tbs[n++] = 0x40;
	n += put_head(f->tbs + n, 2, m.payload.len);
	memcpy(f->tbs + n, m.payload.ptr, m.payload.len);
	n += m.payload.len;
	f->tbs_len = n;

	if (alg == OTA_ALG_EDDSA) {
		memcpy(f->sig, m.signature.ptr, m.signature.len);
		f->sig_len = m.signature.len;
	} else {
		/* raw r||s -> DER once, outside the timed loop (favours the baseline) */
		size_t half = m.signature.len / 2;
		ECDSA_SIG *es = ECDSA_SIG_new();
		BIGNUM *r = BN_bin2bn(m.signature.ptr, (int)half, NULL);
		BIGNUM *s = BN_bin2bn(m.signature.ptr + half, (int)half, NULL);
		if (es == NULL || r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1)
			die("ECDSA_SIG");
		unsigned char *p = f->sig;
		int dl = i2d_ECDSA_SIG(es, &p);
		ECDSA_SIG_free(es);
		if (dl <= 0 || (size_t)dl > sizeof f->sig)
			die("i2d_ECDSA_SIG");
		f->sig_len = (size_t)dl;
	}
}

static int openssl_verify_once(const fixture *f)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx == NULL)
		return 0;
	int ok = EVP_DigestVerifyInit(ctx, NULL, f->md, NULL, f->pkey) == 1 &&
	         EVP_DigestVerify(ctx, f->sig, f->sig_len, f->tbs, f->tbs_len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

static int ours_verify_once(const fixture *f)
{
	return ota_cose_sign1_verify(ota_bytes_make(f->msg, f->msg_len), f->key, NULL, NULL, NULL) ==
	       OTA_OK;
}

/* ops/s of fn over about secs seconds; dies if any verification fails. */
static double rate(int (*fn)(const fixture *), const fixture *f, double secs)
{
	unsigned long ops = 0;
	double t0 = now_s(), t;
	do {
		for (int i = 0; i < 32; i++)
			if (!fn(f))
				die("a verification failed during the benchmark");
		ops += 32;
		t = now_s();
	} while (t - t0 < secs);
	return (double)ops / (t - t0);
}

static void run(const fixture *f, long rounds, double secs)
{
	double best_ours = 0, best_ssl = 0;
	/* warm-up */
	(void)rate(ours_verify_once, f, secs / 4);
	(void)rate(openssl_verify_once, f, secs / 4);
	for (long r = 0; r < rounds; r++) {
		/* alternate which side goes first */
		double a, b;
		if (r % 2 == 0) {
			a = rate(ours_verify_once, f, secs);
			b = rate(openssl_verify_once, f, secs);
		} else {
			b = rate(openssl_verify_once, f, secs);
			a = rate(ours_verify_once, f, secs);
		}
		if (a > best_ours)
			best_ours = a;
		if (b > best_ssl)
			best_ssl = b;
	}
	printf("{\"bench\": \"cose_verify_%s\", \"value\": %.0f, \"unit\": \"ops/s\", "
	       "\"baseline\": \"openssl_evp_verify_%s\", \"baseline_value\": %.0f, "
	       "\"ratio\": %.3f}\n",
	       f->name, best_ours, f->name, best_ssl, best_ours / best_ssl);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char *end = NULL;
	long rounds = 9;
	double secs = 0.25;
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
		if (!openssl_verify_once(&f))
			die("OpenSSL does not verify the same bytes: Sig_structure mismatch");
		run(&f, rounds, secs);
		free(f.msg);
		ota_key_free(f.key);
	}
	return 0;
}
