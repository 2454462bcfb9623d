/*
 * The archive writer: a runner receipt + the contract bytes, overlays,
 * selection and trust-root chain -> one ota.archive/v1 JSON document whose
 * receipt is signed by the runner (COSE_Sign1 over JCS(receipt)).
 */
#include <stdlib.h>
#include <string.h>

#include "ota/archive.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/nonce.h"
#include "ota/trust.h"

static json_t *b64_json(ota_bytes b)
{
	char *s = NULL;
	if (ota_base64_encode(b, &s) != OTA_OK)
		return NULL;
	json_t *j = json_string(s);
	free(s);
	return j;
}

static int add_new(json_t *o, const char *k, json_t *v)
{
	return v == NULL ? -1 : json_object_set_new(o, k, v);
}

static json_t *platform_json(const ota_platform *p)
{
	return json_pack("{s:s, s:s, s:s}", "os", p->os, "architecture", p->architecture,
	                 "variant", p->variant);
}

/* The challenge of one runner record as an archive member. */
static ota_err challenge_member(const json_t *ch, const char *txn, const char *issuer,
                                const char *scope, json_t **out, char id[OTA_ID_LEN + 1],
                                ota_error *err)
{
	*out = NULL;
	const char *nonce_b64 = json_string_value(json_object_get(ch, "nonce"));
	if (nonce_b64 == NULL)
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "challenge", "no nonce");
	const char *t = json_string_value(json_object_get(ch, "txn"));
	const char *i = json_string_value(json_object_get(ch, "issuer"));
	const char *s = json_string_value(json_object_get(ch, "scope"));
	ota_challenge c;
	memset(&c, 0, sizeof c);
	uint8_t *n = NULL;
	size_t nl = 0;
	if (ota_base64_decode(nonce_b64, strlen(nonce_b64), &n, &nl) != OTA_OK ||
	    nl > sizeof c.nonce) {
		free(n);
		return ota_error_set(err, OTA_ERR_ARCHIVE_BASE64, "challenge.nonce", "bad nonce");
	}
	memcpy(c.nonce, n, nl);
	c.nonce_len = nl;
	/* archives carry standard padded base64; ota-attestd hands out the
	 * nonce as base64url (its challenge_record), so re-encode the bytes */
	char *canon = NULL;
	if (ota_base64_encode(ota_bytes_make(n, nl), &canon) != OTA_OK) {
		free(n);
		return ota_error_set(err, OTA_ERR_NOMEM, "challenge.nonce", "out of memory");
	}
	free(n);
	c.epoch = json_integer_value(json_object_get(ch, "epoch"));
	c.issued_at = json_integer_value(json_object_get(ch, "issued_at"));
	c.expires_at = json_integer_value(json_object_get(ch, "expires_at"));
	c.consumed_at = json_integer_value(json_object_get(ch, "consumed_at"));
	snprintf(c.txn, sizeof c.txn, "%s", t != NULL ? t : txn);
	snprintf(c.issuer, sizeof c.issuer, "%s", i != NULL ? i : issuer);
	snprintf(c.scope, sizeof c.scope, "%s", s != NULL ? s : scope);
	ota_err rc = ota_challenge_identity(&c, id);
	if (rc != OTA_OK) {
		free(canon);
		return ota_error_set(err, rc, "challenge", "cannot compute the challenge identity");
	}
	*out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "identity", id, "nonce",
	                 canon, "txn", c.txn, "issuer", c.issuer, "scope", c.scope, "epoch",
	                 (json_int_t)c.epoch, "issued_at", (json_int_t)c.issued_at, "expires_at",
	                 (json_int_t)c.expires_at, "consumed_at", (json_int_t)c.consumed_at);
	free(canon);
	return *out != NULL ? OTA_OK : OTA_ERR_NOMEM;
}

ota_err ota_archive_build(const ota_archive_input *in, char **out, size_t *out_len,
                          ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	if (in == NULL || in->receipt == NULL || in->lane == NULL || in->contract.ptr == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "archive", "receipt, lane and contract required");
	const json_t *atts = json_object_get(in->receipt, "attestations");
	const json_t *evid = json_object_get(in->receipt, "evidence");
	const json_t *sp = json_object_get(in->receipt, "sandbox_policy");
	if (!json_is_array(atts) || !json_is_array(evid) || !json_is_object(sp))
		return ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "receipt",
		                     "not a runner receipt (attestations, evidence, sandbox_policy)");
	ota_err rc = OTA_OK;
	json_t *ar = json_object(), *receipt = json_deep_copy(in->receipt);
	json_t *challenges = json_array(), *att_out = json_array(), *acc_out = json_array();
	json_t *att_ids = json_array(), *ev_ids = json_array(), *ch_ids = json_array();
	json_t *overlays = json_array(), *chain = json_array(), *evidence = json_array();
	json_t *acc_ids = json_array(), *trust_ids = json_array();
	char *jcs = NULL, *text = NULL;
	uint8_t *msg = NULL;
	size_t jl = 0, ml = 0;
	if (ar == NULL || receipt == NULL || challenges == NULL || att_out == NULL ||
	    acc_out == NULL || att_ids == NULL || ev_ids == NULL || ch_ids == NULL ||
	    overlays == NULL || chain == NULL || evidence == NULL || acc_ids == NULL ||
	    trust_ids == NULL) {
		rc = OTA_ERR_NOMEM;
		goto out;
	}
	json_object_del(receipt, "attestations");
	json_object_del(receipt, "evidence");
	const char *txn = json_string_value(json_object_get(in->receipt, "txn"));
	const char *issuer =
		json_string_value(json_object_get(json_object_get(sp, "attestation"), "issuer_identity"));
	const char *scope = json_string_value(json_object_get(sp, "provider_target"));
	json_int_t last_accept = 0; /* the receipt is signed as of the last acceptance */
	/* attestations and their challenges, in the runner's order */
	for (size_t i = 0; rc == OTA_OK && i < json_array_size(atts); i++) {
		const json_t *a = json_array_get(atts, i);
		const char *cose = json_string_value(json_object_get(a, "cose_sign1"));
		const char *id = json_string_value(json_object_get(a, "identity"));
		if (cose == NULL || id == NULL) {
			rc = ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "receipt.attestations",
			                   "attestation %zu has no cose_sign1 or identity", i);
			break;
		}
		json_t *chm = NULL;
		char chid[OTA_ID_LEN + 1];
		rc = challenge_member(json_object_get(a, "challenge"), txn != NULL ? txn : "txn",
		                      issuer != NULL ? issuer : "runner:local",
		                      scope != NULL ? scope : "oci_local", &chm, chid, err);
		if (rc != OTA_OK)
			break;
		json_int_t used_at = json_integer_value(json_object_get(chm, "consumed_at"));
		if (used_at > last_accept)
			last_accept = used_at;
		if (json_array_append_new(challenges, chm) != 0 ||
		    json_array_append_new(ch_ids, json_pack("{s:s, s:I}", "identity", chid,
		                                            "consumed_at", used_at)) != 0 ||
		    json_array_append_new(att_out, json_pack("{s:s, s:s, s:s}", "identity", id,
		                                             "challenge", chid, "cose_sign1", cose)) != 0 ||
		    json_array_append_new(att_ids, json_string(id)) != 0)
			rc = OTA_ERR_NOMEM;
	}
	for (size_t i = 0; rc == OTA_OK && i < json_array_size(evid); i++) {
		char id[OTA_ID_LEN + 1];
		const json_t *r = json_array_get(evid, i);
		rc = ota_json_identity(r, id, err);
		if (rc == OTA_OK && (json_array_append(evidence, (json_t *)(uintptr_t)r) != 0 ||
		                     json_array_append_new(ev_ids, json_string(id)) != 0))
			rc = OTA_ERR_NOMEM;
	}
	for (size_t i = 0; rc == OTA_OK && i < in->nacceptances; i++) {
		char id[OTA_ID_LEN + 1];
		json_t *b = b64_json(in->acceptances[i]);
		rc = ota_sha256_id(in->acceptances[i], id);
		if (rc == OTA_OK && (b == NULL || json_array_append_new(acc_out, json_pack("{s:s, s:o}",
		                                  "identity", id, "cose_sign1", b)) != 0 ||
		                     json_array_append_new(acc_ids, json_string(id)) != 0))
			rc = OTA_ERR_NOMEM;
	}
	for (size_t i = 0; rc == OTA_OK && i < in->noverlays; i++) {
		const ota_archive_overlay_src *s = &in->overlays[i];
		json_t *b = b64_json(s->bytes);
		if (b == NULL || json_array_append_new(
		                         overlays, json_pack("{s:s, s:o}", "source",
		                                             s->source == OTA_OVERLAY_ORG_POLICY
		                                                     ? "org_policy"
		                                                     : "file",
		                                             "bytes", b)) != 0)
			rc = OTA_ERR_NOMEM;
	}
	for (size_t i = 0; rc == OTA_OK && i < in->ntrust; i++) {
		json_t *b = b64_json(in->trust_chain[i]);
		ota_trust_root *tr = NULL;
		rc = ota_trust_root_parse(in->trust_chain[i], &tr, err);
		if (rc == OTA_OK &&
		    (b == NULL || json_array_append_new(chain, b) != 0 ||
		     json_array_append_new(trust_ids, json_string(ota_trust_root_identity(tr))) != 0))
			rc = OTA_ERR_NOMEM;
		else if (rc != OTA_OK)
			json_decref(b);
		ota_trust_root_free(tr);
	}
	if (rc != OTA_OK)
		goto out;
	char snap[OTA_ID_LEN + 1];
	rc = ota_sha256_id(in->contract, snap);
	if (rc != OTA_OK)
		goto out;
	json_t *selection = json_pack("{s:s, s:s, s:b, s:s?, s:o}", "lane_kind",
	                              in->lane_kind == OTA_LANE_WORKFLOW ? "workflow" : "task",
	                              "lane", in->lane, "agent", in->agent, "sandbox_target",
	                              in->sandbox_target, "native_platform",
	                              platform_json(&in->native_platform));
	if (selection == NULL) {
		rc = OTA_ERR_NOMEM;
		goto out;
	}
	/* the signed receipt: the runner's, with the moved members bound by the
	 * identity (JCS digest) of their lists, in order */
	char dg[5][OTA_ID_LEN + 1];
	const json_t *lists[5] = {att_ids, ch_ids, acc_ids, ev_ids,
	                          json_object_get(in->receipt, "sandbox_admission")};
	for (int i = 0; i < 5; i++)
		if (rc == OTA_OK)
			rc = lists[i] != NULL ? ota_jcs_identity(lists[i], dg[i], err)
			                      : ota_error_set(err, OTA_ERR_ARCHIVE_MALFORMED, "receipt",
			                                      "no sandbox_admission");
	if (rc != OTA_OK) {
		json_decref(selection);
		goto out;
	}
	json_object_del(receipt, "sandbox_admission");
	json_decref(att_ids);
	json_decref(ch_ids);
	json_decref(acc_ids);
	json_decref(ev_ids);
	att_ids = ch_ids = acc_ids = ev_ids = NULL;
	if (add_new(receipt, "contract_snapshot_identity", json_string(snap)) != 0 ||
	    add_new(receipt, "selection", json_deep_copy(selection)) != 0 ||
	    add_new(receipt, "attestations_digest", json_string(dg[0])) != 0 ||
	    add_new(receipt, "challenges_digest", json_string(dg[1])) != 0 ||
	    add_new(receipt, "acceptances_digest", json_string(dg[2])) != 0 ||
	    add_new(receipt, "evidence_digest", json_string(dg[3])) != 0 ||
	    add_new(receipt, "sandbox_admission_identity", json_string(dg[4])) != 0 ||
	    add_new(receipt, "trust_chain_identities", trust_ids) != 0 ||
	    add_new(receipt, "signed_at",
	            json_integer(last_accept != 0 ? last_accept : in->signed_at)) != 0) {
		att_ids = ch_ids = ev_ids = acc_ids = trust_ids = NULL;
		json_decref(selection);
		rc = OTA_ERR_NOMEM;
		goto out;
	}
	att_ids = ch_ids = ev_ids = acc_ids = trust_ids = NULL;
	rc = ota_jcs_serialize(receipt, &jcs, &jl, err);
	if (rc == OTA_OK && in->runner_key != NULL) {
		ota_cose_sign_opts so;
		memset(&so, 0, sizeof so);
		so.include_kid = true;
		rc = ota_cose_sign1_sign(in->runner_key, ota_bytes_make(jcs, jl), &so, &msg, &ml, err);
	}
	json_t *rmember = NULL;
	if (rc == OTA_OK) {
		char rid[OTA_ID_LEN + 1];
		if (msg != NULL) {
			rc = ota_sha256_id(ota_bytes_make(msg, ml), rid);
			rmember = json_pack("{s:s, s:o}", "identity", rid, "cose_sign1",
			                    b64_json(ota_bytes_make(msg, ml)));
		} else {
			/* unsigned: kept for inspection; verification refuses it */
			rmember = json_pack("{s:n, s:O}", "cose_sign1", "unsigned", receipt);
		}
		if (rmember == NULL)
			rc = OTA_ERR_NOMEM;
	}
	if (rc != OTA_OK) {
		json_decref(selection);
		json_decref(rmember);
		goto out;
	}
	json_t *contract = json_pack("{s:s, s:o}", "snapshot_identity", snap, "bytes",
	                             b64_json(in->contract));
	if (contract == NULL || add_new(ar, "kind", json_string(OTA_ARCHIVE_KIND)) != 0 ||
	    add_new(ar, "contract", contract) != 0 || add_new(ar, "overlays", overlays) != 0 ||
	    add_new(ar, "selection", selection) != 0 || add_new(ar, "trust_chain", chain) != 0 ||
	    add_new(ar, "challenges", challenges) != 0 ||
	    add_new(ar, "attestations", att_out) != 0 || add_new(ar, "acceptances", acc_out) != 0 ||
	    add_new(ar, "evidence", evidence) != 0 || add_new(ar, "receipt", rmember) != 0) {
		overlays = chain = challenges = att_out = acc_out = evidence = NULL;
		rc = OTA_ERR_NOMEM;
		goto out;
	}
	overlays = chain = challenges = att_out = acc_out = evidence = NULL;
	text = json_dumps(ar, JSON_COMPACT | JSON_SORT_KEYS);
	if (text == NULL) {
		rc = OTA_ERR_NOMEM;
		goto out;
	}
	*out = text;
	*out_len = strlen(text);
	text = NULL;
out:
	free(jcs);
	free(msg);
	free(text);
	json_decref(ar);
	json_decref(receipt);
	json_decref(challenges);
	json_decref(att_out);
	json_decref(acc_out);
	json_decref(att_ids);
	json_decref(ev_ids);
	json_decref(ch_ids);
	json_decref(acc_ids);
	json_decref(trust_ids);
	json_decref(overlays);
	json_decref(chain);
	json_decref(evidence);
	return rc;
}
