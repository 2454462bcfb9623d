/*
 * COSE_Sign1 signing (see include/ota/cose.h). The encoding is small and
 * fixed, so it is written by hand with minimal (deterministic) CBOR heads:
 * 18([bstr({1: alg[, 4: kid]}), {}, bstr(payload) / nil, bstr(signature)]).
 */
#include <stdlib.h>
#include <string.h>

#include "ota/cbor.h"
#include "ota/cose.h"
#include "ota/limits.h"

static size_t put_int(uint8_t *w, int64_t v)
{
	return v >= 0 ? ota_cbor_head_encode(w, OTA_CBOR_UINT, (uint64_t)v)
	              : ota_cbor_head_encode(w, OTA_CBOR_NINT, (uint64_t)(-1 - v));
}

ota_err ota_cose_sign1_sign(const ota_key *key, ota_bytes payload, const ota_cose_sign_opts *o,
                            uint8_t **out, size_t *out_len, ota_error *err)
{
	static const ota_cose_sign_opts defaults;
	*out = NULL;
	*out_len = 0;
	if (o == NULL)
		o = &defaults;
	if (key == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "key", "no key");
	if (!ota_key_has_private(key))
		return ota_error_set(err, OTA_ERR_KEY_PRIVATE_REQUIRED, "key",
		                     "signing needs a private key");
	ota_alg alg = o->alg != OTA_ALG_NONE ? o->alg : ota_key_default_alg(key);
	if (!ota_alg_is_known(alg))
		return ota_error_set(err, OTA_ERR_ALG_UNKNOWN, "alg", "alg %d is not allowed", (int)alg);
	if (alg == OTA_ALG_PS256 || alg == OTA_ALG_PS384 || alg == OTA_ALG_PS512)
		return ota_error_set(err, OTA_ERR_UNSUPPORTED, "alg", "%s is for verification only",
		                     ota_alg_name(alg));
	ota_err rc = ota_key_check_alg(key, alg);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "alg", "alg %s does not fit a %s key", ota_alg_name(alg),
		                     ota_key_type_name(key));
	if (payload.len > OTA_MAX_COSE_BYTES - 1024 || o->external_aad.len > OTA_MAX_COSE_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "payload", "payload exceeds %u bytes",
		                     OTA_MAX_COSE_BYTES - 1024);

	/* protected header */
	uint8_t prot[64];
	size_t pl = 0;
	prot[pl++] = o->include_kid ? 0xa2 : 0xa1;
	prot[pl++] = 0x01;
	pl += put_int(prot + pl, alg);
	if (o->include_kid) {
		prot[pl++] = 0x04;
		pl += ota_cbor_head_encode(prot + pl, 2, 32);
		rc = ota_key_kid(key, prot + pl);
		if (rc != OTA_OK)
			return ota_error_set(err, rc, "kid", "cannot compute kid");
		pl += 32;
	}

	/* Sig_structure */
	size_t tbs_cap = 16 + 9 + pl + 9 + o->external_aad.len + 9 + payload.len;
	uint8_t *tbs = malloc(tbs_cap);
	if (tbs == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "cose", NULL);
	size_t tl = 0;
	tbs[tl++] = 0x84;
	tbs[tl++] = 0x6a;
	memcpy(tbs + tl, "Signature1", 10);
	tl += 10;
	tl += ota_cbor_head_encode(tbs + tl, 2, pl);
	memcpy(tbs + tl, prot, pl);
	tl += pl;
	tl += ota_cbor_head_encode(tbs + tl, 2, o->external_aad.len);
	if (o->external_aad.len > 0)
		memcpy(tbs + tl, o->external_aad.ptr, o->external_aad.len);
	tl += o->external_aad.len;
	tl += ota_cbor_head_encode(tbs + tl, 2, payload.len);
	if (payload.len > 0)
		memcpy(tbs + tl, payload.ptr, payload.len);
	tl += payload.len;

	uint8_t sig[OTA_MAX_SIG_BYTES];
	size_t sl = 0;
	rc = ota_key_sign(key, alg, ota_bytes_make(tbs, tl), (ota_buf){sig, sizeof sig}, &sl);
	free(tbs);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, "signature", "signing failed");

	/* message */
	size_t cap = 1 + 1 + 9 + pl + 1 + 9 + payload.len + 9 + sl;
	uint8_t *msg = malloc(cap);
	if (msg == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "cose", NULL);
	size_t ml = 0;
	if (!o->untagged)
		msg[ml++] = 0xd2; /* tag 18 */
	msg[ml++] = 0x84;
	ml += ota_cbor_head_encode(msg + ml, 2, pl);
	memcpy(msg + ml, prot, pl);
	ml += pl;
	msg[ml++] = 0xa0;
	if (o->detached) {
		msg[ml++] = 0xf6;
	} else {
		ml += ota_cbor_head_encode(msg + ml, 2, payload.len);
		if (payload.len > 0)
			memcpy(msg + ml, payload.ptr, payload.len);
		ml += payload.len;
	}
	ml += ota_cbor_head_encode(msg + ml, 2, sl);
	memcpy(msg + ml, sig, sl);
	ml += sl;
	*out = msg;
	*out_len = ml;
	return OTA_OK;
}
