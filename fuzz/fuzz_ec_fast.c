/*
 * fuzz_ec_fast: ECDSA P-256 verification with the table of multiples of the
 * public key (common/ec_fast.c) against OpenSSL's EVP verification, on
 * arbitrary digests and signatures: the input's first 32 bytes are the
 * digest, the next 64 the signature r||s (missing bytes are zero, bytes
 * past 96 are ignored). The key is a fixed test fixture (its public point
 * below); fuzz/seeds/fuzz_ec_fast/ holds valid signatures made with its
 * private half, which is not kept.
 *
 * Invariant: the two answers are equal (valid or not), on every input.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "common/ec_fast.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* FIXTURE: a P-256 public key made for this target */
static const uint8_t FIXTURE_PUB[65] = { 0x04, 0xd7, 0x4a, 0x50, 0xc6, 0xcc, 0xc0, 0x6d, 0xec, 0x20, 0x62, 0xc4, 0x56, 0xc4, 0x7d, 0x28, 0xe2, 0x66, 0x67, 0xb6, 0xc9, 0x56, 0xa0, 0xfb, 0xb4, 0x55, 0x0f, 0x02, 0xb7, 0x32, 0x48, 0xab, 0x54, 0x21, 0x55, 0x66, 0xd4, 0x2c, 0xb1, 0x43, 0xb7, 0xf1, 0xeb, 0xa7, 0x8e, 0xcb, 0xc0, 0xea, 0xf1, 0x57, 0xf2, 0xfd, 0x1e, 0x18, 0x69, 0x89, 0xc9, 0x94, 0x79, 0x38, 0x0b, 0x73, 0x64, 0xb2, 0xe0};

static EVP_PKEY *g_pk;
static ota_ec_fast *g_fast;

static void setup(void)
{
	OSSL_PARAM_BLD *b = OSSL_PARAM_BLD_new();
	FZ_CHECK(b != NULL);
	FZ_CHECK(OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1);
	FZ_CHECK(OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, FIXTURE_PUB,
	                                          sizeof FIXTURE_PUB) == 1);
	OSSL_PARAM *ps = OSSL_PARAM_BLD_to_param(b);
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	FZ_CHECK(ps != NULL && c != NULL && EVP_PKEY_fromdata_init(c) == 1);
	FZ_CHECK(EVP_PKEY_fromdata(c, &g_pk, EVP_PKEY_PUBLIC_KEY, ps) == 1);
	EVP_PKEY_CTX_free(c);
	OSSL_PARAM_free(ps);
	OSSL_PARAM_BLD_free(b);
	g_fast = ota_ec_fast_new(g_pk);
	FZ_CHECK(g_fast != NULL);
}

static int evp_answer(const uint8_t dig[32], const uint8_t sig[64])
{
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
	FZ_CHECK(es != NULL && r != NULL && s != NULL && ECDSA_SIG_set0(es, r, s) == 1);
	unsigned char *der = NULL;
	int dl = i2d_ECDSA_SIG(es, &der);
	FZ_CHECK(dl > 0);
	EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, g_pk, NULL);
	FZ_CHECK(c != NULL && EVP_PKEY_verify_init(c) == 1);
	int v = EVP_PKEY_verify(c, der, (size_t)dl, dig, 32);
	EVP_PKEY_CTX_free(c);
	OPENSSL_free(der);
	ECDSA_SIG_free(es);
	return v == 1 ? 1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (g_fast == NULL)
		setup();
	uint8_t in[96] = {0};
	memcpy(in, data, size < sizeof in ? size : sizeof in);
	int fast = ota_ec_fast_verify(g_fast, in, in + 32);
	FZ_CHECK(fast == 0 || fast == 1);
	FZ_CHECK(fast == evp_answer(in, in + 32));
	return 0;
}
