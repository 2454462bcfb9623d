/*
 * attest/acceptance.c - builds and signs acceptance records (kind
 * acceptance) for prepared admissions. See include/ota/acceptance.h.
 */
#include <stdlib.h>
#include <string.h>

#include "ota/acceptance.h"
#include "ota/cbor.h"
#include "ota/cose.h"

ota_err ota_acceptance_build(void *ctx, const ota_admission *a, uint8_t **out, size_t *out_len,
                             ota_error *err)
{
	const ota_acceptance_signer *s = ctx;
	if (out == NULL || out_len == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no output");
	*out = NULL;
	*out_len = 0;
	if (s == NULL || s->key == NULL || s->verifier_id == NULL || a == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "acceptance", "no signer or admission");
	uint8_t kid[32];
	ota_err e = ota_key_kid(s->key, kid);
	if (e != OTA_OK)
		return ota_error_set(err, e, "acceptance", "verifier kid");
	ota_cbor_wr w = {0};
	ota_cbor_head(&w, 5, 13);
	ota_cbor_head(&w, 0, 1);
	ota_cbor_text(&w, s->verifier_id);
	ota_cbor_head(&w, 0, 6);
	ota_cbor_head(&w, 0, (uint64_t)(a->judged_at < 0 ? 0 : a->judged_at));
	ota_cbor_head(&w, 0, 10);
	ota_cbor_bstr(&w, a->claims.nonce, a->claims.nonce_len);
	ota_cbor_text(&w, "kind");
	ota_cbor_text(&w, "acceptance");
	ota_cbor_text(&w, "result");
	ota_cbor_text(&w, "accepted");
	ota_cbor_text(&w, "attestation");
	ota_cbor_text(&w, a->record_id);
	ota_cbor_text(&w, "challenge");
	ota_cbor_text(&w, a->challenge_id);
	ota_cbor_text(&w, "issuer");
	ota_cbor_text(&w, a->issuer_principal);
	ota_cbor_text(&w, "txn");
	ota_cbor_text(&w, a->claims.txn);
	ota_cbor_text(&w, "boundary");
	ota_cbor_text(&w, a->claims.boundary);
	ota_cbor_text(&w, "prior");
	if (a->claims.has_prior)
		ota_cbor_text(&w, a->claims.prior);
	else
		ota_cbor_head(&w, 7, 22); /* null */
	ota_cbor_text(&w, "trust_root");
	ota_cbor_text(&w, a->trust_root_id);
	ota_cbor_text(&w, "verifier");
	ota_cbor_head(&w, 5, 3);
	ota_cbor_text(&w, "id");
	ota_cbor_text(&w, s->verifier_id);
	ota_cbor_text(&w, "version");
	ota_cbor_text(&w, ota_version());
	ota_cbor_text(&w, "kid");
	ota_cbor_bstr(&w, kid, sizeof kid);
	if (w.oom) {
		free(w.p);
		return ota_error_set(err, OTA_ERR_NOMEM, "acceptance", "payload");
	}
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	e = ota_cose_sign1_sign(s->key, ota_bytes_make(w.p, w.len), &so, out, out_len, err);
	free(w.p);
	return e;
}
