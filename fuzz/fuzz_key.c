/*
 * fuzz_key: key text as `--key FILE`, `ota attest sign --key` and
 * ota-attestd's verifier key read it (ota_key_load_pem: SPKI, PKCS#8 and the
 * traditional forms; ota_key_load_jwk: EC, OKP and RSA JWKs); the same bytes
 * go to both loaders.
 *
 * Invariants: a refusal names itself and leaves *out NULL; a loaded key
 * exports its public half as JWK and as PEM, and both load back to an equal
 * public key with the same kid; a private key exports as PEM and loads back
 * private; the key's default algorithm fits it, and (below RSA-4096, to
 * keep the run fast) a signature made with a private key verifies.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ota/key.h"
#include "ota/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_key(const ota_key *k, ota_err rc, ota_key *back)
{
	uint8_t a[32], b[32];
	FZ_CHECK(rc == OTA_OK && back != NULL);
	FZ_CHECK(ota_key_equal_public(k, back));
	FZ_CHECK(ota_key_kid(k, a) == OTA_OK && ota_key_kid(back, b) == OTA_OK);
	FZ_CHECK(memcmp(a, b, 32) == 0);
}

static void loaded(const ota_key *k)
{
	uint8_t kid[32];
	FZ_CHECK(ota_key_kid(k, kid) == OTA_OK);
	ota_alg alg = ota_key_default_alg(k);
	FZ_CHECK(ota_key_check_alg(k, alg) == OTA_OK);
	FZ_CHECK(ota_key_type_name(k) != NULL);

	char *jwk = NULL, *pem = NULL;
	ota_key *back = NULL;
	FZ_CHECK(ota_key_public_jwk(k, &jwk) == OTA_OK);
	same_key(k, ota_key_load_jwk(ota_bytes_make(jwk, strlen(jwk)), &back, NULL), back);
	FZ_CHECK(!ota_key_has_private(back));
	ota_key_free(back);
	back = NULL;
	FZ_CHECK(ota_key_public_pem(k, &pem) == OTA_OK);
	same_key(k, ota_key_load_pem(ota_bytes_make(pem, strlen(pem)), &back, NULL), back);
	ota_key_free(back);
	back = NULL;
	free(jwk);
	free(pem);
	if (!ota_key_has_private(k))
		return;

	size_t n = 0;
	FZ_CHECK(ota_key_private_pem(k, &pem, &n) == OTA_OK);
	same_key(k, ota_key_load_pem(ota_bytes_make(pem, n), &back, NULL), back);
	FZ_CHECK(ota_key_has_private(back));
	ota_key_free(back);
	ota_wipe(pem, n);
	free(pem);
	if (ota_key_bits(k) > 4096)
		return;
	uint8_t sig[OTA_MAX_SIG_BYTES];
	size_t sl = 0;
	static const char msg[] = "fuzz_key";
	FZ_CHECK(ota_key_sign(k, alg, ota_bytes_make(msg, sizeof msg - 1),
	                      (ota_buf){sig, sizeof sig}, &sl) == OTA_OK);
	FZ_CHECK(ota_key_verify(k, alg, ota_bytes_make(msg, sizeof msg - 1),
	                        ota_bytes_make(sig, sl)) == OTA_OK);
}

static void one(ota_err (*load)(ota_bytes, ota_key **, ota_error *), ota_bytes in)
{
	ota_key *k = (ota_key *)(uintptr_t)1;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = load(in, &k, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(k == NULL);
		return;
	}
	FZ_CHECK(k != NULL);
	loaded(k);
	ota_key_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact copy, so that ASan sees any read past the end */
	uint8_t *p = malloc(size ? size : 1);
	FZ_CHECK(p != NULL);
	memcpy(p, data, size);
	one(ota_key_load_pem, ota_bytes_make(p, size));
	one(ota_key_load_jwk, ota_bytes_make(p, size));
	free(p);
	return 0;
}
