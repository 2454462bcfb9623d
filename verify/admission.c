/*
 * verify/admission.c - attestation admission: COSE verification with the
 * key chosen by kid from the trust root at the verifier's time, issuer role
 * and scope, freshness, challenge binding; then consume + head advance +
 * stored acceptance in one transaction of the nonce store.
 */
#include <stdlib.h>
#include <string.h>

#include "ota/admission.h"
#include "ota/cose.h"

void ota_admission_opts_init(ota_admission_opts *o)
{
	if (o == NULL)
		return;
	memset(o, 0, sizeof *o);
	o->max_age = 300;
	o->max_skew = 30;
	o->max_lifetime = 900;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

ota_err ota_admission_prepare(const ota_admission_ctx *ctx, ota_bytes cose, ota_bytes expect_nonce,
                              int64_t now, ota_admission *out, ota_error *err)
{
	ota_err e;
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "admission", "out is NULL");
	memset(out, 0, sizeof *out);
	if (ctx == NULL || ctx->root == NULL || ctx->store == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "admission", "no trust root or store");
	const ota_admission_opts *o = &ctx->opts;
	/* ota-verify archive allows OTA_ATT_MAX_SKEW around iat: a wider skew
	 * here would admit attestations whose archives never verify */
	if (o->max_skew < 0 || o->max_skew > OTA_ATT_MAX_SKEW)
		return ota_error_set(err, OTA_ERR_USAGE, "max_skew",
		                     "%lld s; 0 to %d (the skew ota-verify archive allows)",
		                     (long long)o->max_skew, OTA_ATT_MAX_SKEW);

	/* 0. the verifier's own trust root, at the time it judges: an
	 * acceptance signed after it expired is one ota-verify archive refuses
	 * (it judges the latest snapshot's expiry at the receipt's time) */
	if (now >= ota_trust_root_expires(ctx->root))
		return ota_error_set(err, OTA_ERR_TRUST_EXPIRED, "trust_root",
		                     "the verifier's trust root version %lld expired at %lld (now %lld)",
		                     (long long)ota_trust_root_version(ctx->root),
		                     (long long)ota_trust_root_expires(ctx->root), (long long)now);

	/* 1. strict COSE structure */
	ota_cose_verify_opts vo;
	memset(&vo, 0, sizeof vo);
	vo.allow_untagged = o->allow_untagged;
	ota_cose_sign1 m;
	if ((e = ota_cose_sign1_decode(cose, &vo, &m, err)) != OTA_OK)
		goto out_clear;
	if (m.kid.len == 0 || !m.kid_protected) {
		e = ota_error_set(err, OTA_ERR_ATT_KID_MISSING, "kid",
		                  m.kid.len == 0
		                      ? "attestations name their key by kid in the protected header"
		                      : "the kid is only in the unprotected header; attestations name "
		                        "their key by kid in the protected header");
		goto out_clear;
	}
	/* nothing unsigned rides along: the bytes (and so the identity) of an
	 * attestation are the signer's alone */
	if (m.unprotected_labels != 0) {
		e = ota_error_set(err, OTA_ERR_ATT_UNPROTECTED, "unprotected",
		                  "the unprotected header has %zu labels; it must be empty",
		                  m.unprotected_labels);
		goto out_clear;
	}
	if (m.detached) {
		e = ota_error_set(err, OTA_ERR_ATT_MALFORMED, "payload", "detached payload");
		goto out_clear;
	}

	/* 2. the key named by kid, judged now (never at the signer's iat) */
	const ota_key *key = NULL;
	const ota_trust_principal *who = NULL;
	if ((e = ota_trust_lookup(ctx->root, m.kid, m.alg, OTA_TRUST_ROLE_ISSUER, NULL, now, &key,
	                          &who, err)) != OTA_OK)
		goto out_clear;
	/* 3. signature; only then is the payload worth parsing */
	if ((e = ota_cose_sign1_check(&m, key, ota_bytes_make(NULL, 0), err)) != OTA_OK)
		goto out_clear;
	/* (r, n - s) verifies as well: anyone could turn a provider's
	 * attestation into other bytes (another identity). Only the low-S
	 * form is admitted. */
	if (ota_key_sig_is_high_s(m.alg, m.signature)) {
		e = ota_error_set(err, OTA_ERR_ATT_SIG_HIGH_S, "signature",
		                  "ECDSA s is above n/2; providers sign in low-S form (s := n - s)");
		goto out_clear;
	}
	if ((e = ota_attestation_parse(m.payload, &out->claims, err)) != OTA_OK)
		goto out_clear;
	ota_attestation *c = &out->claims;
	const char *pid = ota_trust_principal_id(who);
	if (pid == NULL || strcmp(pid, c->iss) != 0) {
		e = ota_error_set(err, OTA_ERR_ATT_KEY_ISSUER, "iss",
		                  "iss \"%s\" is not the principal of the signing key", c->iss);
		goto out_clear;
	}
	if (!ota_attestation_kind_admissible(c->kind)) {
		e = ota_error_set(err, OTA_ERR_ATT_KIND, "kind", "kind \"%s\" cannot be submitted",
		                  c->kind);
		goto out_clear;
	}
	/* 4. the principal's scope covers this provider target */
	ota_trust_scope_req scope = {NULL, NULL, c->provider};
	if ((e = ota_trust_lookup(ctx->root, m.kid, m.alg, OTA_TRUST_ROLE_ISSUER, &scope, now, NULL,
	                          NULL, err)) != OTA_OK)
		goto out_clear;
	const char *root_id = ota_trust_root_identity(ctx->root);
	if (root_id == NULL || strcmp(root_id, c->trust_root) != 0) {
		e = ota_error_set(err, OTA_ERR_ATT_TRUST_ROOT, "trust_root",
		                  "attestation names %s, the verifier holds %s", c->trust_root,
		                  root_id != NULL ? root_id : "none");
		goto out_clear;
	}

	/* 5. freshness at the verifier's time */
	if (c->iat > now + o->max_skew) {
		e = ota_error_set(err, OTA_ERR_ATT_NOT_YET_VALID, "iat", "iat %lld is ahead of %lld",
		                  (long long)c->iat, (long long)now);
		goto out_clear;
	}
	if (c->iat < now - o->max_age) {
		e = ota_error_set(err, OTA_ERR_ATT_STALE, "iat", "iat %lld older than %lld s",
		                  (long long)c->iat, (long long)o->max_age);
		goto out_clear;
	}
	if (c->exp <= now) {
		e = ota_error_set(err, OTA_ERR_ATT_EXPIRED, "exp", "expired at %lld", (long long)c->exp);
		goto out_clear;
	}
	if (c->exp <= c->iat || c->exp - c->iat > o->max_lifetime) {
		e = ota_error_set(err, OTA_ERR_ATT_LIFETIME, "exp", "lifetime %lld s, at most %lld",
		                  (long long)(c->exp - c->iat), (long long)o->max_lifetime);
		goto out_clear;
	}

	/* 6. the challenge (read only; the consume decides) */
	ota_bytes nonce = ota_bytes_make(c->nonce, c->nonce_len);
	if (expect_nonce.len > 0 && !ota_ct_equal(expect_nonce, nonce)) {
		e = ota_error_set(err, OTA_ERR_ATT_NONCE_MISMATCH, "eat_nonce",
		                  "not the challenge this submission expects");
		goto out_clear;
	}
	if ((e = ota_nonce_store_peek(ctx->store, nonce, now, &out->challenge, err)) != OTA_OK)
		goto out_clear;
	if (strcmp(out->challenge.issuer, c->iss) != 0) {
		e = ota_error_set(err, OTA_ERR_NONCE_ISSUER_MISMATCH, "iss",
		                  "challenge was issued to another issuer");
		goto out_clear;
	}
	if (strcmp(out->challenge.txn, c->txn) != 0) {
		e = ota_error_set(err, OTA_ERR_ATT_TXN_MISMATCH, "txn",
		                  "attestation txn differs from the challenge's");
		goto out_clear;
	}
	/* the key must also have been valid when the challenge was issued
	 * (the endpoint's time, never the attester's iat) */
	if ((e = ota_trust_lookup(ctx->root, m.kid, m.alg, OTA_TRUST_ROLE_ISSUER, NULL,
	                          out->challenge.issued_at, NULL, NULL, err)) != OTA_OK)
		goto out_clear;
	if (strcmp(out->challenge.scope, c->provider) != 0) {
		e = ota_error_set(err, OTA_ERR_ATT_SCOPE_MISMATCH, "provider",
		                  "challenge scope is \"%s\"", out->challenge.scope);
		goto out_clear;
	}
	/* an answer made before its question: the attester's clock is behind
	 * by more than the skew (ota-verify archive refuses it as not fresh) */
	if (c->iat < out->challenge.issued_at - o->max_skew) {
		e = ota_error_set(err, OTA_ERR_ATT_BEFORE_CHALLENGE, "iat",
		                  "iat %lld is before the challenge was issued (%lld), beyond %lld s "
		                  "of skew",
		                  (long long)c->iat, (long long)out->challenge.issued_at,
		                  (long long)o->max_skew);
		goto out_clear;
	}

	/* 7. identities */
	if ((e = ota_sha256_id(cose, out->record_id)) != OTA_OK ||
	    (e = ota_challenge_identity(&out->challenge, out->challenge_id)) != OTA_OK) {
		ota_error_set(err, e, "admission", "identity");
		goto out_clear;
	}
	copy_str(out->trust_root_id, sizeof out->trust_root_id, root_id);
	copy_str(out->issuer_principal, sizeof out->issuer_principal, pid);
	memcpy(out->kid, m.kid.ptr, sizeof out->kid);
	out->alg = m.alg;
	out->judged_at = now;
	out->cose = cose;
	return OTA_OK;
out_clear:
	memset(out, 0, sizeof *out);
	return e;
}

void ota_admission_op(ota_admission *a, ota_bytes acceptance, ota_nonce_op *op)
{
	memset(op, 0, sizeof *op);
	a->binding.txn = a->challenge.txn;
	a->binding.issuer = a->challenge.issuer;
	a->binding.scope = a->challenge.scope;
	op->kind = OTA_NONCE_OP_ADMIT;
	op->nonce = ota_bytes_make(a->claims.nonce, a->claims.nonce_len);
	op->expect = &a->binding;
	op->boundary = a->claims.boundary;
	op->prior = a->claims.has_prior ? a->claims.prior : NULL;
	op->record_id = a->record_id;
	op->attestation = a->cose;
	op->acceptance = acceptance;
	/* the store records the time the acceptance signs (its iat), not the
	 * clock of the later commit */
	op->accepted_at = a->judged_at;
	/* where the peek found the challenge: the commit reads that row
	 * rather than searching the nonce index again (checked by nonce) */
	op->challenge_row = a->challenge.row;
}

ota_err ota_admission_admit(const ota_admission_ctx *ctx, ota_bytes cose, ota_bytes expect_nonce,
                            int64_t now, ota_acceptance_fn fn, void *fn_ctx,
                            ota_nonce_committer *committer, ota_admission *out,
                            uint8_t **acceptance_out, size_t *acceptance_len, ota_error *err)
{
	ota_err e;
	ota_admission local;
	ota_admission *a = out != NULL ? out : &local;
	if (acceptance_out != NULL)
		*acceptance_out = NULL;
	if (acceptance_len != NULL)
		*acceptance_len = 0;
	if (fn == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "admission", "no acceptance builder");
	if ((e = ota_admission_prepare(ctx, cose, expect_nonce, now, a, err)) != OTA_OK)
		return e;
	uint8_t *acc = NULL;
	size_t acc_len = 0;
	if ((e = fn(fn_ctx, a, &acc, &acc_len, err)) != OTA_OK)
		goto out_clear;
	ota_nonce_op op;
	ota_admission_op(a, ota_bytes_make(acc, acc_len), &op);
	if (committer != NULL) {
		e = ota_nonce_committer_run(committer, &op);
	} else {
		ota_error oe;
		ota_error_clear(&oe);
		e = ota_nonce_store_commit_batch(ctx->store, &op, 1, now, &oe);
		if (e == OTA_OK)
			e = op.result;
	}
	if (e != OTA_OK) {
		ota_error_set(err, e, "admission", "%s", ota_err_message(e));
		free(acc);
		goto out_clear;
	}
	if (acceptance_out != NULL) {
		*acceptance_out = acc;
		if (acceptance_len != NULL)
			*acceptance_len = acc_len;
	} else {
		free(acc);
	}
	return OTA_OK;
out_clear:
	memset(a, 0, sizeof *a);
	return e;
}
