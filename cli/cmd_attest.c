/*
 * ota attest - the provider side of the attestation endpoint:
 *   ota attest challenge --url URL --txn T --issuer I --scope S [--ttl S] [--bytes N] [--json]
 *   ota attest sign --key KEY --claims CLAIMS.json [--out FILE]
 *   ota attest submit --url URL (FILE.cose | --key KEY --claims CLAIMS.json)
 *                     [--trust PINNED.json [--trust NEXT.json]...] [--out ACC.cose] [--json]
 *   ota attest submit --url URL FILE.cose FILE.cose... [--trust ...] [--out-dir DIR] [--json]
 *                     (batches of up to 128: application/cbor-seq)
 * CLAIMS.json holds the attestation claims with the challenge's nonce as
 * base64url in "eat_nonce" (docs/attestation.md); iat defaults to now and
 * exp to iat + 120.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ota/admission.h"
#include "ota/attestd.h"
#include "ota/cbor.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/acceptance.h"
#include "ota/key.h"
#include "ota/limits.h"
#include "ota/trust.h"

static const char usage_text[] =
	"usage: ota attest challenge --url URL --txn T --issuer I --scope S [--ttl S] [--bytes N] [--json]\n"
	"       ota attest sign --key KEY --claims CLAIMS.json --out FILE.cose\n"
	"       ota attest submit --url URL (FILE.cose | --key KEY --claims CLAIMS.json)\n"
	"                         [--trust PINNED.json [--trust NEXT.json]...]\n"
	"                         [--out ACCEPTANCE.cose] [--json]\n"
	"       ota attest submit --url URL FILE.cose FILE.cose... [--trust PINNED.json]...\n"
	"                         [--out-dir DIR] [--json]\n";

/* The endpoint's answer with --json: all of it, every non-ASCII character
 * as \uXXXX (jansson escapes C0 controls; C1 controls such as U+009B CSI
 * and bidirectional overrides would reach the terminal raw otherwise). */
static void print_answer_json(const json_t *o)
{
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
	if (s == NULL) {
		fputs("{\"code\":\"out_of_memory\"}\n", stdout);
		return;
	}
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
}

#define MAX_TRUST 64

/*
 * --trust: the acceptance the endpoint answered is checked before it is
 * believed or written: the trust-root chain from the pinned snapshot (as
 * ota-verify trust), then the acceptance's signature by a verifier principal
 * of the latest snapshot, judged now (ota_acceptance_verify), and that it
 * accepts exactly the attestation sent (sha256 of its bytes) and the
 * challenge and attestation the answer names. Without --trust the answer is
 * the endpoint's word (a TLS-less, unauthenticated one over plain HTTP).
 */
/* The latest snapshot of the --trust chain (new in *latest), judged now. */
static ota_err trust_latest(const char *const *trust, size_t ntrust, ota_trust_root **latest,
                            ota_error *e)
{
	uint8_t *bufs[MAX_TRUST];
	ota_bytes spans[MAX_TRUST];
	size_t nb = 0;
	ota_err rc = OTA_OK;
	*latest = NULL;
	for (size_t i = 0; i < ntrust && rc == OTA_OK; i++) {
		size_t l = 0;
		rc = ota_file_read(trust[i], OTA_MAX_TRUST_ROOT_BYTES, &bufs[i], &l, e);
		if (rc == OTA_OK) {
			spans[i] = ota_bytes_make(bufs[i], l);
			nb++;
		}
	}
	if (rc == OTA_OK) {
		ota_trust_verify_opts o = {.at = (int64_t)time(NULL), .pinned_name = trust[0],
		                           .chain_names = trust + 1};
		rc = ota_trust_chain_verify(spans[0], spans + 1, nb - 1, &o, latest, e);
	}
	for (size_t i = 0; i < nb; i++)
		free(bufs[i]);
	return rc;
}

/* acc, the acceptance of answer, checked against latest (see above) */
static ota_err check_acceptance(const ota_trust_root *latest, ota_bytes sent,
                                const json_t *answer, ota_bytes acc, ota_error *e)
{
	ota_acceptance a;
	ota_err rc = ota_acceptance_verify(acc, latest, (int64_t)time(NULL), &a, e);
	char sent_id[OTA_ID_LEN + 1];
	if (rc == OTA_OK && (rc = ota_sha256_id(sent, sent_id)) != OTA_OK)
		ota_error_set(e, rc, "attestation", "cannot hash");
	const char *ans_att = json_string_value(json_object_get(answer, "attestation"));
	const char *ans_chal = json_string_value(json_object_get(answer, "challenge"));
	/* a recovered answer (the stored acceptance, looked up after the
	 * POST's answer was lost) names the attestation alone; a challenge an
	 * answer names is always compared */
	bool recovered = json_is_true(json_object_get(answer, "recovered")) && ans_chal == NULL;
	if (rc == OTA_OK && strcmp(a.attestation, sent_id) != 0)
		rc = ota_error_set(e, OTA_ERR_ATT_PROTOCOL, "acceptance",
		                   "accepts attestation %s, not the one sent (%s)", a.attestation,
		                   sent_id);
	else if (rc == OTA_OK && (ans_att == NULL || strcmp(ans_att, a.attestation) != 0 ||
	                          (!recovered && (ans_chal == NULL || strcmp(ans_chal, a.challenge) != 0))))
		rc = ota_error_set(e, OTA_ERR_ATT_PROTOCOL, "acceptance",
		                   "the answer's attestation or challenge is not the signed one");
	return rc;
}

/* The acceptance of answer o (base64 "acceptance") decoded into *acc
 * (new) and, with a trust root (--trust), checked against the attestation
 * sent. */
static ota_err answer_acceptance(const ota_trust_root *latest, ota_bytes sent, const json_t *o,
                                 uint8_t **acc, size_t *al, ota_error *e)
{
	const char *b64 = json_string_value(json_object_get(o, "acceptance"));
	*acc = NULL;
	*al = 0;
	if (b64 == NULL || ota_base64_decode(b64, strlen(b64), acc, al) != OTA_OK)
		return ota_error_set(e, OTA_ERR_ATT_PROTOCOL, "acceptance", "missing or not base64");
	return latest != NULL ? check_acceptance(latest, sent, o, ota_bytes_make(*acc, *al), e)
	                      : OTA_OK;
}

/* the exit status of a refusal or error: the endpoint unreachable or
 * answering nonsense is 3 */
static int exit_for(const ota_error *e)
{
	if (e->code == OTA_ERR_HTTP_TRANSPORT || e->code == OTA_ERR_ATT_PROTOCOL)
		return CLI_INTERNAL;
	return cli_error_exit(e);
}

static int fail_exit(const ota_error *e)
{
	(void)cli_fail("ota attest", e);
	return exit_for(e);
}

/* A text claim of 1..cap-1 bytes into dst (absent: left ""). An empty
 * string is refused as the endpoint refuses it, never dropped. */
static bool copy_claim(json_t *o, const char *k, char *dst, size_t cap, ota_error *e)
{
	json_t *v = json_object_get(o, k);
	if (v == NULL)
		return true;
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    strlen(json_string_value(v)) >= cap) {
		ota_error_set(e, OTA_ERR_ATT_CLAIM_TYPE, k,
		              "must be a non-empty string shorter than %zu bytes", cap);
		return false;
	}
	snprintf(dst, cap, "%s", json_string_value(v));
	return true;
}

/* A base64url claim of 1..cap bytes into dst (absent: *len 0, or refused when required). */
static bool b64_claim(json_t *o, const char *k, bool required, uint8_t *dst, size_t cap,
                      size_t *len, ota_error *e)
{
	const json_t *v = json_object_get(o, k);
	*len = 0;
	if (v == NULL) {
		if (required)
			ota_error_set(e, OTA_ERR_ATT_CLAIM_MISSING, k, "base64url bytes");
		return !required;
	}
	uint8_t *b = NULL;
	size_t n = 0;
	if (!json_is_string(v) ||
	    ota_base64_decode(json_string_value(v), json_string_length(v), &b, &n) != OTA_OK ||
	    n == 0 || n > cap) {
		free(b);
		ota_error_set(e, OTA_ERR_ATT_CLAIM_TYPE, k, "base64url of 1..%zu bytes", cap);
		return false;
	}
	memcpy(dst, b, n);
	*len = n;
	free(b);
	return true;
}

/* Members of o all in names (NULL-terminated); else attestation_claim_unknown. */
static bool known_members(json_t *o, const char *where, const char *const *names, ota_error *e)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		size_t i = 0;
		while (names[i] != NULL && strcmp(names[i], k) != 0)
			i++;
		if (names[i] == NULL) {
			ota_error_set(e, OTA_ERR_ATT_CLAIM_UNKNOWN, where, "unknown claim %s", k);
			return false;
		}
	}
	return true;
}

typedef struct {
	uint8_t *enc; /* the encoded key */
	size_t len;
	json_t *v;
} body_member;

static int body_member_cmp(const void *a, const void *b)
{
	const body_member *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->enc, y->enc, n);
	return c != 0 ? c : (x->len < y->len ? -1 : x->len > y->len);
}

/*
 * The JSON body as CBOR in the deterministic form of RFC 8949 section 4.2.1
 * (shortest heads, definite lengths, map keys in the bytewise order of their
 * encodings): strings -> text, integers -> ints, true/false/null, arrays,
 * objects -> maps with text keys. Floats are refused; 16 levels at most.
 */
static bool body_cbor(ota_cbor_wr *w, const json_t *v, unsigned depth, ota_error *e)
{
	if (depth > 16) {
		ota_error_set(e, OTA_ERR_TOO_DEEP, "body", "nests deeper than 16");
		return false;
	}
	switch (json_typeof(v)) {
	case JSON_STRING:
		ota_cbor_head(w, 3, json_string_length(v));
		ota_cbor_put(w, json_string_value(v), json_string_length(v));
		return true;
	case JSON_INTEGER:
		ota_cbor_int(w, (int64_t)json_integer_value(v));
		return true;
	case JSON_TRUE:
		ota_cbor_head(w, 7, 21);
		return true;
	case JSON_FALSE:
		ota_cbor_head(w, 7, 20);
		return true;
	case JSON_NULL:
		ota_cbor_null(w);
		return true;
	case JSON_ARRAY: {
		ota_cbor_head(w, 4, json_array_size(v));
		for (size_t i = 0; i < json_array_size(v); i++)
			if (!body_cbor(w, json_array_get(v, i), depth + 1, e))
				return false;
		return true;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		body_member *m = calloc(n + 1, sizeof *m);
		if (m == NULL) {
			ota_error_set(e, OTA_ERR_NOMEM, "body", NULL);
			return false;
		}
		const char *k;
		json_t *x;
		bool ok = true;
		json_object_foreach((json_t *)(uintptr_t)v, k, x) {
			ota_cbor_wr kw = {0};
			ota_cbor_head(&kw, 3, strlen(k));
			ota_cbor_put(&kw, k, strlen(k));
			m[i++] = (body_member){kw.p, kw.len, x};
			ok = ok && !kw.oom;
		}
		qsort(m, i, sizeof *m, body_member_cmp);
		ota_cbor_head(w, 5, i);
		for (size_t j = 0; ok && j < i; j++) {
			ota_cbor_put(w, m[j].enc, m[j].len);
			ok = body_cbor(w, m[j].v, depth + 1, e);
		}
		for (size_t j = 0; j < i; j++)
			free(m[j].enc);
		free(m);
		if (!ok && e->code == OTA_OK)
			ota_error_set(e, OTA_ERR_NOMEM, "body", NULL);
		return ok;
	}
	case JSON_REAL:
	default:
		ota_error_set(e, OTA_ERR_ATT_CLAIM_TYPE, "body", "floats have no place in a body");
		return false;
	}
}

/* CLAIMS.json -> signed COSE (new). */
static ota_err build_signed(const char *key_path, const char *claims_path, uint8_t **out,
                            size_t *out_len, ota_error *e)
{
	ota_err rc;
	ota_key *key = NULL;
	uint8_t *text = NULL, *payload = NULL;
	size_t tl = 0, pl = 0;
	json_t *o = NULL;
	ota_attestation a;
	memset(&a, 0, sizeof a);
	if ((rc = ota_key_load_file(key_path, &key, e)) != OTA_OK)
		return rc;
	if ((rc = ota_file_read(claims_path, OTA_MAX_JSON_REQUEST_BYTES, &text, &tl, e)) != OTA_OK)
		goto out;
	if ((rc = ota_json_parse(ota_bytes_make(text, tl), &o, e)) != OTA_OK)
		goto out;
	if (!json_is_object(o)) {
		rc = ota_error_set(e, OTA_ERR_JSON_TYPE, claims_path, "claims must be an object");
		goto out;
	}
	static const char *const top[] = {"iss",      "exp",      "iat",      "cti",  "eat_nonce",
	                                  "kind",     "txn",      "trust_root", "provider",
	                                  "adapter",  "platform", "segment",  "policy", "boundary",
	                                  "prior",    "body",     NULL};
	static const char *const pn[] = {"canonical", "effective", NULL};
	static const char *const fn[] = {"os", "architecture", "variant", NULL};
	json_t *pol = json_object_get(o, "policy"), *plat = json_object_get(o, "platform");
	if (!known_members(o, "claims", top, e) ||
	    (pol != NULL && (!json_is_object(pol) || !known_members(pol, "policy", pn, e))) ||
	    (plat != NULL && (!json_is_object(plat) || !known_members(plat, "platform", fn, e)))) {
		rc = e->code != OTA_OK ? e->code
		                       : ota_error_set(e, OTA_ERR_ATT_CLAIM_TYPE, "claims",
		                                       "policy and platform are objects");
		goto out;
	}
	/* an empty map is refused by the endpoint (attestation_claim_type),
	 * so it is refused here too rather than dropped */
	if (pol != NULL && json_object_size(pol) == 0) {
		rc = ota_error_set(e, OTA_ERR_ATT_CLAIM_TYPE, "policy", "must be an object of 1..2 members");
		goto out;
	}
	if (plat != NULL && json_object_size(plat) == 0) {
		rc = ota_error_set(e, OTA_ERR_ATT_CLAIM_TYPE, "platform",
		                   "must be an object of 1..3 members");
		goto out;
	}
	json_t *pv = json_object_get(o, "prior");
	if (pv != NULL && json_is_null(pv))
		json_object_del(o, "prior"); /* null: the first record of its boundary */
	if (!copy_claim(o, "iss", a.iss, sizeof a.iss, e) || !copy_claim(o, "kind", a.kind, sizeof a.kind, e) ||
	    !copy_claim(o, "txn", a.txn, sizeof a.txn, e) ||
	    !copy_claim(o, "trust_root", a.trust_root, sizeof a.trust_root, e) ||
	    !copy_claim(o, "provider", a.provider, sizeof a.provider, e) ||
	    !copy_claim(o, "adapter", a.adapter, sizeof a.adapter, e) ||
	    !copy_claim(o, "segment", a.segment, sizeof a.segment, e) ||
	    !copy_claim(o, "boundary", a.boundary, sizeof a.boundary, e) ||
	    !copy_claim(o, "prior", a.prior, sizeof a.prior, e) ||
	    (pol != NULL && (!copy_claim(pol, "canonical", a.policy_canonical, sizeof a.policy_canonical, e) ||
	                     !copy_claim(pol, "effective", a.policy_effective, sizeof a.policy_effective, e))) ||
	    (plat != NULL && (!copy_claim(plat, "os", a.platform_os, sizeof a.platform_os, e) ||
	                      !copy_claim(plat, "architecture", a.platform_arch, sizeof a.platform_arch, e) ||
	                      !copy_claim(plat, "variant", a.platform_variant, sizeof a.platform_variant, e)))) {
		rc = e->code;
		goto out;
	}
	a.has_prior = a.prior[0] != '\0';
	json_t *iat = json_object_get(o, "iat"), *exp = json_object_get(o, "exp");
	/* the decoder's range (ota_attestation_parse: at most INT64_MAX / 2,
	 * so that iat + 120 below, and every sum of times a verifier makes,
	 * cannot overflow) */
	bool bad_iat = iat != NULL && (!json_is_integer(iat) || json_integer_value(iat) < 0 ||
	                               json_integer_value(iat) > INT64_MAX / 2);
	bool bad_exp = exp != NULL && (!json_is_integer(exp) || json_integer_value(exp) < 0 ||
	                               json_integer_value(exp) > INT64_MAX / 2);
	if (bad_iat || bad_exp) {
		rc = ota_error_set(e, OTA_ERR_ATT_CLAIM_TYPE, bad_iat ? "iat" : "exp",
		                   "seconds: a non-negative integer of at most 2^62 - 1");
		goto out;
	}
	a.iat = iat != NULL ? (int64_t)json_integer_value(iat) : (int64_t)time(NULL);
	a.exp = exp != NULL ? (int64_t)json_integer_value(exp) : a.iat + 120;
	if (!b64_claim(o, "cti", false, a.cti, sizeof a.cti, &a.cti_len, e) ||
	    !b64_claim(o, "eat_nonce", true, a.nonce, sizeof a.nonce, &a.nonce_len, e)) {
		rc = e->code;
		goto out;
	}
	ota_cbor_wr bw = {0};
	const json_t *body = json_object_get(o, "body");
	if (body != NULL) {
		if (!body_cbor(&bw, body, 0, e)) {
			free(bw.p);
			rc = e->code;
			goto out;
		}
		if (bw.oom) {
			free(bw.p);
			rc = ota_error_set(e, OTA_ERR_NOMEM, "body", NULL);
			goto out;
		}
		a.body = ota_bytes_make(bw.p, bw.len);
	}
	rc = ota_attestation_encode(&a, &payload, &pl);
	free(bw.p);
	if (rc != OTA_OK) {
		ota_error_set(e, rc, claims_path, "cannot encode the claims");
		goto out;
	}
	/* refuse locally what the endpoint would refuse as malformed */
	ota_attestation check;
	if ((rc = ota_attestation_parse(ota_bytes_make(payload, pl), &check, e)) != OTA_OK)
		goto out;
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	rc = ota_cose_sign1_sign(key, ota_bytes_make(payload, pl), &so, out, out_len, e);
out:
	json_decref(o);
	free(text);
	free(payload);
	ota_key_free(key);
	return rc;
}

/*
 * ota attest submit FILE.cose FILE.cose...: batches of up to
 * OTA_MAX_ATTESTATION_BATCH attestations and OTA_MAX_HTTP_BODY_BYTES
 * (application/cbor-seq), one line
 * per file in order ("accepted ID FILE" or "refused CODE FILE", the
 * refusal's where and message on standard error), or with --json one object
 * {"ok", "accepted", "refused", "results": [...]} whose results carry
 * "file". With --trust the chain is judged once, before anything is sent,
 * and each acceptance is checked as for one file; one that fails is
 * reported as refused. --out-dir writes each checked
 * acceptance as DIR/sha256-<hex>.acceptance.cose (hex: the attestation's);
 * one that cannot be written is reported with its error. Exit 0 only when every file was
 * accepted; else the status of the first refusal.
 */
static int submit_many(const char *url, char *const *files, size_t nf, const char *const *trust,
                       size_t ntrust, bool json, const char *out_dir)
{
	ota_error e;
	ota_error_clear(&e);
	/* --out-dir: opened before anything is sent */
	int dirfd = -1;
	if (out_dir != NULL) {
		dirfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0) {
			ota_error_set(&e, OTA_ERR_IO, out_dir, "cannot open the directory: %s",
			              strerror(errno));
			return fail_exit(&e);
		}
	}
	/* --trust: the chain judged once, before anything is sent */
	ota_trust_root *latest = NULL;
	if (ntrust > 0 && trust_latest(trust, ntrust, &latest, &e) != OTA_OK) {
		if (dirfd >= 0)
			close(dirfd);
		return fail_exit(&e);
	}
	uint8_t **bufs = calloc(nf, sizeof *bufs);
	ota_bytes *items = calloc(nf, sizeof *items);
	ota_attest_batch_result *res = calloc(OTA_MAX_ATTESTATION_BATCH, sizeof *res);
	json_t *out = json ? json_array() : NULL;
	int rc = CLI_OK;
	if (bufs == NULL || items == NULL || res == NULL || (json && out == NULL)) {
		ota_error_set(&e, OTA_ERR_NOMEM, "submit", "batch");
		rc = fail_exit(&e);
	}
	/* every file is read before anything is sent */
	for (size_t i = 0; rc == CLI_OK && i < nf; i++) {
		size_t l = 0;
		if (ota_file_read(files[i], OTA_MAX_HTTP_BODY_BYTES, &bufs[i], &l, &e) != OTA_OK)
			rc = fail_exit(&e);
		items[i] = ota_bytes_make(bufs[i], l);
	}
	size_t accepted = 0, refused = 0;
	int first_fail = CLI_OK;
	for (size_t off = 0, m = 0; rc == CLI_OK && off < nf; off += m) {
		/* up to 128 files and, past the first, OTA_MAX_HTTP_BODY_BYTES in
		 * all (the endpoint's default body cap) */
		size_t bytes = items[off].len;
		for (m = 1; off + m < nf && m < OTA_MAX_ATTESTATION_BATCH &&
		            items[off + m].len <= OTA_MAX_HTTP_BODY_BYTES - bytes;
		     m++)
			bytes += items[off + m].len;
		ota_error be;
		ota_error_clear(&be);
		/* an error of the batch as a whole is every item's result; over
		 * an endpoint's smaller --max-body (refused whole, nothing
		 * consumed) the batch is halved until it fits or holds one file */
		ota_err brc = ota_attest_client_submit_batch(url, items + off, m, res, &be);
		while (brc == OTA_ERR_HTTP_BODY_TOO_LARGE && m > 1) {
			ota_attest_batch_results_free(res, m);
			m = (m + 1) / 2;
			ota_error_clear(&be);
			brc = ota_attest_client_submit_batch(url, items + off, m, res, &be);
		}
		if (brc != OTA_OK && !json)
			fprintf(stderr, "ota attest: the batch of %zu from %s was refused whole\n", m,
			        files[off]);
		for (size_t j = 0; j < m; j++) {
			size_t i = off + j;
			ota_error ie = res[j].err;
			json_t *o = NULL;
			if (res[j].rc == OTA_OK) {
				o = json_loads(res[j].answer, 0, NULL);
				if (o == NULL)
					ota_error_set(&ie, OTA_ERR_NOMEM, "answer", "cannot read");
			}
			if (o != NULL && (latest != NULL || dirfd >= 0)) {
				uint8_t *acc = NULL;
				size_t al = 0;
				ota_err arc = answer_acceptance(latest, items[i], o, &acc, &al, &ie);
				/* written only once checked: sha256-<hex>.acceptance.cose,
				 * named by the attestation it accepts */
				char name[OTA_ID_LEN + 32];
				const char *aid = json_string_value(json_object_get(o, "attestation"));
				if (arc == OTA_OK && dirfd >= 0) {
					snprintf(name, sizeof name, "sha256-%s.acceptance.cose", aid + 7);
					arc = ota_file_write_atomic_at(dirfd, name, ota_bytes_make(acc, al), 0644,
					                               NULL, &ie);
					if (arc == OTA_OK && json)
						json_object_set_new(o, "acceptance_file", json_string(name));
				}
				free(acc);
				if (arc != OTA_OK) {
					json_decref(o);
					o = NULL;
				}
			}
			if (o != NULL) {
				accepted++;
				if (json) {
					json_object_set_new(o, "file", json_string(files[i]));
					json_array_append_new(out, o);
				} else {
					printf("accepted %s %s\n",
					       json_string_value(json_object_get(o, "attestation")), files[i]);
					json_decref(o);
				}
				continue;
			}
			refused++;
			if (first_fail == CLI_OK)
				first_fail = exit_for(&ie);
			if (json) {
				json_t *ej = cli_error_json(&ie);
				if (ej != NULL)
					json_object_set_new(ej, "file", json_string(files[i]));
				json_array_append_new(out, ej);
			} else {
				printf("refused %s %s\n", ota_err_name(ie.code), files[i]);
				char prog[4200];
				snprintf(prog, sizeof prog, "ota attest: %s", files[i]);
				(void)cli_fail(prog, &ie);
			}
		}
		ota_attest_batch_results_free(res, m);
	}
	if (rc == CLI_OK && json) {
		json_t *top = json_pack("{s:b, s:I, s:I, s:O}", "ok", refused == 0, "accepted",
		                        (json_int_t)accepted, "refused", (json_int_t)refused, "results",
		                        out);
		if (top != NULL)
			print_answer_json(top);
		json_decref(top);
	}
	json_decref(out);
	for (size_t i = 0; bufs != NULL && i < nf; i++)
		free(bufs[i]);
	free(bufs);
	free(items);
	free(res);
	ota_trust_root_free(latest);
	if (dirfd >= 0)
		close(dirfd);
	return rc != CLI_OK ? rc : first_fail;
}

int cmd_attest(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(usage_text, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	if (cli_help_asked()) {
		fputs(usage_text, stdout);
		return CLI_OK;
	}
	const char *sub = argv[1];
	static const struct option lo[] = {
		{"url", required_argument, NULL, 'u'},
		{"txn", required_argument, NULL, 't'},
		{"issuer", required_argument, NULL, 'i'},
		{"scope", required_argument, NULL, 's'},
		{"ttl", required_argument, NULL, 'T'},
		{"bytes", required_argument, NULL, 'n'},
		{"key", required_argument, NULL, 'k'},
		{"claims", required_argument, NULL, 'c'},
		{"out", required_argument, NULL, 'o'},
		{"out-dir", required_argument, NULL, 'D'},
		{"json", no_argument, NULL, 'j'},
		{"trust", required_argument, NULL, 'R'},
		{NULL, 0, NULL, 0},
	};
	const char *url = NULL, *key = NULL, *claims = NULL, *outp = NULL, *out_dir = NULL;
	ota_nonce_binding b = {NULL, NULL, NULL};
	long long ttl = 0, nbytes = 0;
	bool json = false;
	const char *trust[MAX_TRUST];
	size_t ntrust = 0;
	int ch;
	optind = 2;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end = NULL;
		switch (ch) {
		case 'u': url = optarg; break;
		case 't': b.txn = optarg; break;
		case 'i': b.issuer = optarg; break;
		case 's': b.scope = optarg; break;
		case 'k': key = optarg; break;
		case 'c': claims = optarg; break;
		case 'o': outp = optarg; break;
		case 'D': out_dir = optarg; break;
		case 'j': json = true; break;
		case 'R':
			if (ntrust == MAX_TRUST)
				return cli_usage("ota attest", "at most 64 --trust snapshots");
			trust[ntrust++] = optarg;
			break;
		case 'T':
		case 'n': {
			long long v = strtoll(optarg, &end, 10);
			/* 0 is no default: leave the option out for that */
			if (end == optarg || *end != '\0' || v < 1 || v > 1000000)
				return cli_usage("ota attest", "--ttl and --bytes take a positive integer");
			if (ch == 'T')
				ttl = v;
			else
				nbytes = v;
			break;
		}
		default:
			fputs(usage_text, stderr);
			return CLI_USAGE;
		}
	}
	if (out_dir != NULL &&
	    (strcmp(sub, "submit") != 0 || key != NULL || claims != NULL || argc - optind < 2))
		return cli_usage("ota attest", "--out-dir is for submit with several files (one: --out)");
	ota_error e;
	ota_error_clear(&e);
	if (strcmp(sub, "challenge") == 0) {
		if (url == NULL || b.txn == NULL || b.issuer == NULL || b.scope == NULL || optind != argc)
			return cli_usage("ota attest", "challenge needs --url, --txn, --issuer and --scope");
		char *ans = NULL;
		if (ota_attest_client_challenge(url, &b, (size_t)nbytes, ttl, &ans, &e) != OTA_OK)
			return fail_exit(&e);
		json_t *o = json_loads(ans, 0, NULL);
		free(ans);
		if (o == NULL)
			return CLI_INTERNAL;
		if (json)
			print_answer_json(o);
		else
			printf("%s %s\n", json_string_value(json_object_get(o, "challenge")),
			       json_string_value(json_object_get(o, "nonce")));
		json_decref(o);
		return CLI_OK;
	}
	if (strcmp(sub, "sign") == 0 || strcmp(sub, "submit") == 0) {
		bool submit = strcmp(sub, "submit") == 0;
		uint8_t *msg = NULL;
		size_t ml = 0;
		if (submit && url == NULL)
			return cli_usage("ota attest", "submit needs --url");
		if (!submit && ntrust > 0)
			return cli_usage("ota attest", "--trust is an option of submit");
		if (key != NULL || claims != NULL) {
			if (key == NULL || claims == NULL || optind != argc)
				return cli_usage("ota attest", "--key and --claims go together");
			if (build_signed(key, claims, &msg, &ml, &e) != OTA_OK)
				return fail_exit(&e);
		} else if (submit && argc - optind > 1) {
			if (outp != NULL)
				return cli_usage("ota attest",
				                 "--out takes the acceptance of one file; with several, "
				                 "--out-dir DIR");
			return submit_many(url, argv + optind, (size_t)(argc - optind), trust, ntrust,
			                   json, out_dir);
		} else {
			if (!submit || optind + 1 != argc)
				return cli_usage("ota attest", "give FILE.cose or --key and --claims");
			if (ota_file_read(argv[optind], OTA_MAX_HTTP_BODY_BYTES, &msg, &ml, &e) != OTA_OK)
				return fail_exit(&e);
		}
		if (!submit) {
			if (outp == NULL) {
				free(msg);
				return cli_usage("ota attest", "sign needs --out");
			}
			ota_err rc = ota_file_write_atomic(outp, ota_bytes_make(msg, ml), 0644, &e);
			free(msg);
			return rc == OTA_OK ? CLI_OK : fail_exit(&e);
		}
		char *ans = NULL;
		ota_err rc = ota_attest_client_submit(url, ota_bytes_make(msg, ml), &ans, &e);
		if (rc != OTA_OK) {
			free(msg);
			if (json) {
				json_t *ej = cli_error_json(&e);
				cli_print_json(ej);
				json_decref(ej);
			}
			return fail_exit(&e);
		}
		json_t *o = json_loads(ans, 0, NULL);
		free(ans);
		if (o == NULL) {
			free(msg);
			return CLI_INTERNAL;
		}
		if (outp != NULL || ntrust > 0) {
			uint8_t *acc = NULL;
			size_t al = 0;
			/* checked before it is written: a refused one is not kept */
			ota_trust_root *latest = NULL;
			ota_err arc = ntrust > 0 ? trust_latest(trust, ntrust, &latest, &e) : OTA_OK;
			if (arc == OTA_OK)
				arc = answer_acceptance(latest, ota_bytes_make(msg, ml), o, &acc, &al, &e);
			ota_trust_root_free(latest);
			if (arc == OTA_OK && outp != NULL)
				arc = ota_file_write_atomic(outp, ota_bytes_make(acc, al), 0644, &e);
			free(acc);
			if (arc != OTA_OK) {
				free(msg);
				json_decref(o);
				if (json) {
					json_t *ej = cli_error_json(&e);
					cli_print_json(ej);
					json_decref(ej);
				}
				return fail_exit(&e);
			}
		}
		free(msg);
		if (json)
			print_answer_json(o);
		else
			printf("accepted %s\n", json_string_value(json_object_get(o, "attestation")));
		json_decref(o);
		return CLI_OK;
	}
	fputs(usage_text, stderr);
	return CLI_USAGE;
}
