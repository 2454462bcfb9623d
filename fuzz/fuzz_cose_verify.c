/*
 * libFuzzer target: strict COSE_Sign1 decoding and verification with fixed
 * public keys (those of the public COSE example vectors, so seeds taken from
 * vectors/ reach a successful signature check).
 *
 * Input: one option byte, then the message.
 *   bit 0  allow untagged
 *   bit 1  external AAD = 11 aa 22 bb (the AAD of the public vectors)
 *   bit 2  detached payload "This is the content." supplied
 *   bits 3-4  key: 0 P-256, 1 P-384, 2 P-521, 3 Ed25519
 *   bit 5  also verify through a key set (ota_cose_sign1_verify_with) whose
 *          lookup returns that key for a kid of "11" (the public vectors'
 *          kid) or the key's own 32-byte kid
 *
 * Asserts: decode and verify agree (same refusal, or both accept); on
 * failure outputs are zeroed and the error is named; on success every span
 * points into the message (or the detached payload), the alg fits the key
 * and decode + check give the same answer as verify; the key-set path never
 * accepts what the single-key path refuses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ota/cose.h"
#include "ota/key.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const key_jwk[4] = {
	"{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"usWxHK2PmfnHKwXPS54m0kTcGJ90UiglWiGahtagnv8\","
	"\"y\":\"IBOL-C3BttVivg-lSreASjpkttcsz-1rb7btKLv8EX4\"}",
	"{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"kTJyP2KSsBBhnb4kjWmMF7WHVsY55xUPgb7k64rDcjatChoZ1nvjKm"
	"YmPh5STRKc\",\"y\":\"mM0weMVU2DKsYDxDJkEP9hZiRZtB8fPfXbzINZj_fF7YQRynNWedHEyzAJOX2e8s\"}",
	"{\"kty\":\"EC\",\"crv\":\"P-521\",\"x\":\"AHKZLLOsCOzz5cY97ewNUajB957y-C-U88c3v13nmGZx6sYl_oJXu9A"
	"5RkTKqjqvjyekWF-7ytDyRXYgCF5cj0Kt\",\"y\":\"AdymlHvOiLxXkEhayXQnNCvDX4h9htZaCJN34kfmC6pV5OhQHi"
	"raVySsUdaQkAgDPrwQrJmbnX9cwlGfP-HqHZR1\"}",
	"{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}",
};

static const uint8_t aad[] = {0x11, 0xaa, 0x22, 0xbb};
static const char detached[] = "This is the content.";

static void check(int ok)
{
	if (!ok)
		abort();
}

/* Loaded once per process; a harness, not library code. */
static ota_key *keys[4];

static const ota_key *key_for(unsigned i)
{
	if (keys[i] == NULL) {
		ota_err rc = ota_key_load_jwk(ota_bytes_make(key_jwk[i], strlen(key_jwk[i])),
		                              &keys[i], NULL);
		check(rc == OTA_OK && keys[i] != NULL);
	}
	return keys[i];
}

static ota_err lookup(void *ctx, ota_bytes kid, ota_alg alg, const ota_key **out, ota_error *err)
{
	const ota_key *key = ctx;
	uint8_t own[32];
	(void)alg;
	*out = NULL;
	check(ota_key_kid(key, own) == OTA_OK);
	if ((kid.len == 2 && memcmp(kid.ptr, "11", 2) == 0) ||
	    (kid.len == 32 && memcmp(kid.ptr, own, 32) == 0)) {
		*out = key;
		return OTA_OK;
	}
	return ota_error_set(err, OTA_ERR_COSE_KID_UNKNOWN, "kid", "not in the fuzz key set");
}

static int inside(ota_bytes span, ota_bytes whole)
{
	if (span.len == 0)
		return 1;
	return span.ptr >= whole.ptr && span.len <= whole.len &&
	       (size_t)(span.ptr - whole.ptr) <= whole.len - span.len;
}

static int is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t opt = data[0];
	/* a copy of exactly the message, so ASan sees any read past its end */
	size_t mlen = size - 1;
	uint8_t *mbuf = malloc(mlen ? mlen : 1);
	check(mbuf != NULL);
	if (mlen)
		memcpy(mbuf, data + 1, mlen);
	ota_bytes msg = ota_bytes_make(mbuf, mlen);

	ota_cose_verify_opts o;
	memset(&o, 0, sizeof o);
	o.allow_untagged = (opt & 1) != 0;
	if (opt & 2)
		o.external_aad = ota_bytes_make(aad, sizeof aad);
	if (opt & 4) {
		o.have_detached_payload = true;
		o.detached_payload = ota_bytes_make(detached, sizeof detached - 1);
	}
	const ota_key *key = key_for((opt >> 3) & 3);

	ota_cose_sign1 dec, ver;
	ota_error e1, e2;
	ota_error_clear(&e1);
	ota_error_clear(&e2);
	memset(&dec, 0xa5, sizeof dec);
	memset(&ver, 0xa5, sizeof ver);
	ota_err rd = ota_cose_sign1_decode(msg, &o, &dec, &e1);
	ota_err rv = ota_cose_sign1_verify(msg, key, &o, &ver, &e2);

	if (opt & 0x20) {
		ota_cose_sign1 ks;
		ota_error e4;
		ota_error_clear(&e4);
		memset(&ks, 0xa5, sizeof ks);
		ota_err rk = ota_cose_sign1_verify_with(msg, lookup, (void *)(uintptr_t)key, &o, &ks,
		                                        &e4);
		if (rk == OTA_OK)
			check(rv == OTA_OK && ks.alg == ver.alg && ks.payload.ptr == ver.payload.ptr &&
			      ks.payload.len == ver.payload.len);
		else
			check(e4.code == rk && is_zero(&ks, sizeof ks));
		if (rd != OTA_OK)
			check(rk == rd);
	}
	if (rd != OTA_OK) {
		/* a structural refusal: verify must refuse the same way */
		check(rv == rd);
		check(e1.code == rd && e2.code == rv);
		check(is_zero(&dec, sizeof dec) && is_zero(&ver, sizeof ver));
		goto out;
	}
	check(inside(dec.protected_bytes, msg));
	check(inside(dec.kid, msg));
	check(inside(dec.signature, msg));
	check(dec.detached ? (dec.payload.ptr == o.detached_payload.ptr &&
	                      dec.payload.len == o.detached_payload.len)
	                   : inside(dec.payload, msg));
	check(dec.tagged || o.allow_untagged);
	check(ota_alg_is_known((int64_t)dec.alg));

	ota_error e3;
	ota_error_clear(&e3);
	ota_err rc = ota_cose_sign1_check(&dec, key, o.external_aad, &e3);
	check(rc == rv);
	if (rv != OTA_OK) {
		check(e2.code == rv);
		check(is_zero(&ver, sizeof ver));
		goto out;
	}
	/* accepted: verify's view equals decode's, and the alg fits the key */
	check(memcmp(&ver, &dec, sizeof ver) == 0 || (ver.alg == dec.alg &&
	      ver.payload.ptr == dec.payload.ptr && ver.payload.len == dec.payload.len &&
	      ver.signature.ptr == dec.signature.ptr && ver.signature.len == dec.signature.len));
	check(ota_key_check_alg(key, dec.alg) == OTA_OK);
out:
	free(mbuf);
	return 0;
}
