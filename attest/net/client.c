/*
 * attest/net/client.c - libcurl client of ota-attestd (ota attest challenge
 * / submit). Answers are capped; error answers map back to their stable
 * error names.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ota/admission.h"
#include "ota/attestd.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/limits.h"

#define MAX_ANSWER OTA_MAX_HTTP_ANSWER_BYTES

typedef struct sink {
	char *p;
	size_t len;
	bool too_large;
} sink;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	sink *s = ud;
	size_t n = size * nmemb;
	if (s->too_large || n > MAX_ANSWER - s->len) {
		s->too_large = true;
		return 0;
	}
	char *np = realloc(s->p, s->len + n + 1);
	if (np == NULL)
		return 0;
	s->p = np;
	memcpy(s->p + s->len, ptr, n);
	s->len += n;
	s->p[s->len] = '\0';
	return n;
}

static ota_err exchange(const char *base_url, const char *path, const char *ctype, ota_bytes body,
                        bool post, char **out, size_t *out_len, long *status, ota_error *err)
{
	*out = NULL;
	if (out_len != NULL)
		*out_len = 0;
	*status = 0;
	if (base_url == NULL || strlen(base_url) > 2000)
		return ota_error_set(err, OTA_ERR_USAGE, "url", "missing or too long");
	char url[2100];
	size_t bl = strlen(base_url);
	while (bl > 0 && base_url[bl - 1] == '/')
		bl--;
	snprintf(url, sizeof url, "%.*s%s", (int)bl, base_url, path);
	CURL *c = curl_easy_init();
	if (c == NULL)
		return ota_error_set(err, OTA_ERR_HTTP_TRANSPORT, url, "curl_easy_init failed");
	sink s = {NULL, 0, false};
	struct curl_slist *h = NULL;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	/* libcurl's defaults, said here: a redirect is an answer like any
	 * other (a 3xx is no success), never followed elsewhere */
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
	if (post) {
		char hdr[128];
		snprintf(hdr, sizeof hdr, "Content-Type: %s", ctype);
		h = curl_slist_append(h, hdr);
		h = curl_slist_append(h, "Expect:");
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, (const char *)body.ptr);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
	}
	CURLcode rc = curl_easy_perform(c);
	ota_err e = OTA_OK;
	if (rc != CURLE_OK) {
		e = ota_error_set(err, s.too_large ? OTA_ERR_ATT_PROTOCOL : OTA_ERR_HTTP_TRANSPORT, url,
		                  "%s", s.too_large ? "answer too large" : curl_easy_strerror(rc));
		free(s.p);
	} else {
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		if (s.p == NULL)
			s.p = calloc(1, 1);
		*out = s.p;
		if (out_len != NULL)
			*out_len = s.len;
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return e;
}

/* an "sha256:" + 64 lowercase hex identity */
static bool is_id(const char *s)
{
	if (s == NULL || strlen(s) != OTA_ID_LEN || strncmp(s, "sha256:", 7) != 0)
		return false;
	for (size_t i = 7; i < OTA_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* member k of o is base64 (url: base64url without padding) of min..max bytes */
static bool is_b64(json_t *o, const char *k, bool url, size_t min, size_t max)
{
	json_t *v = json_object_get(o, k);
	if (!json_is_string(v))
		return false;
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		          (url ? (c == '-' || c == '_') : (c == '+' || c == '/' || c == '='));
		if (!ok)
			return false;
	}
	uint8_t *b = NULL;
	size_t bl = 0;
	if (ota_base64_decode(s, n, &b, &bl) != OTA_OK)
		return false;
	free(b);
	return bl >= min && bl <= max;
}

/* s non-empty text without C0 or C1 controls, DEL or bidirectional
 * controls (it reaches a terminal) */
static bool is_plain_text(const char *s)
{
	if (s == NULL || s[0] == '\0')
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
		if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* U+0080..U+009F */
			return false;
		/* U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069 reorder
		 * what the terminal shows of the text around them (CVE-2021-42574) */
		if (*p == 0xd8 && p[1] == 0x9c)
			return false;
		if (*p == 0xe2 && p[1] == 0x80 &&
		    (p[2] == 0x8e || p[2] == 0x8f || (p[2] >= 0xaa && p[2] <= 0xae)))
			return false;
		if (*p == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)
			return false;
	}
	return true;
}

/* One answer object o (borrowed) with its HTTP status, as
 * ota_attest_client_answer judges it. */
static ota_err judge_object(json_t *o, long status, ota_attest_answer_kind kind, ota_error *err)
{
	if (!json_is_object(o))
		return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "HTTP %ld, not a JSON object",
		                     status);
	if (status >= 200 && status < 300 && json_is_true(json_object_get(o, "ok"))) {
		/* the members `ota attest` prints and writes */
		bool shaped;
		const char *what;
		if (kind == OTA_ATTEST_ANSWER_CHALLENGE) {
			shaped = is_id(json_string_value(json_object_get(o, "challenge"))) &&
			         is_b64(o, "nonce", true, OTA_NONCE_MIN_BYTES, OTA_NONCE_MAX_BYTES);
			what = "challenge (an identity) and nonce (base64url of 16..64 bytes)";
		} else {
			shaped = is_id(json_string_value(json_object_get(o, "attestation"))) &&
			         is_b64(o, "acceptance", false, 1, MAX_ANSWER);
			what = "attestation (an identity) and acceptance (base64 COSE)";
		}
		if (!shaped)
			return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "HTTP %ld without %s",
			                     status, what);
		return OTA_OK;
	}
	const char *code = json_string_value(json_object_get(o, "code"));
	const char *where = json_string_value(json_object_get(o, "where"));
	const char *msg = json_string_value(json_object_get(o, "message"));
	ota_err named;
	/* the answer's where and message only when they are plain text: the
	 * CLI prints them (a refusal always names a where) */
	if (code != NULL && ota_err_from_name(code, &named) && named != OTA_OK)
		return ota_error_set(err, named, is_plain_text(where) ? where : "answer", "%s",
		                     is_plain_text(msg) ? msg : code);
	return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "HTTP %ld without a known code",
	                     status);
}

/* body as one strict JSON object (new in *o) */
static ota_err parse_answer(const char *body, size_t len, long status, json_t **o, ota_error *err)
{
	*o = NULL;
	if (body == NULL || len > MAX_ANSWER)
		return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "HTTP %ld, %s", status,
		                     body == NULL ? "no body" : "answer too large");
	if (ota_json_parse(ota_bytes_make(body, len), o, NULL) != OTA_OK || !json_is_object(*o)) {
		json_decref(*o);
		*o = NULL;
		return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "HTTP %ld, not a JSON object",
		                     status);
	}
	return OTA_OK;
}

ota_err ota_attest_client_answer(const char *body, size_t len, long status,
                                 ota_attest_answer_kind kind, ota_error *err)
{
	json_t *o = NULL;
	ota_err e = parse_answer(body, len, status, &o, err);
	if (e == OTA_OK)
		e = judge_object(o, status, kind, err);
	json_decref(o);
	return e;
}

ota_err ota_attest_client_challenge(const char *base_url, const ota_nonce_binding *b,
                                    size_t nonce_len, int64_t ttl, char **out, ota_error *err)
{
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "out is NULL");
	*out = NULL;
	if (b == NULL || b->txn == NULL || b->issuer == NULL || b->scope == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "txn, issuer and scope are required");
	json_t *req = json_pack("{s:s, s:s, s:s}", "txn", b->txn, "issuer", b->issuer, "scope", b->scope);
	if (req == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "client", "request");
	if (nonce_len > 0)
		json_object_set_new(req, "nonce_bytes", json_integer((json_int_t)nonce_len));
	if (ttl > 0)
		json_object_set_new(req, "ttl", json_integer((json_int_t)ttl));
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (body == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "client", "request");
	char *ans = NULL;
	size_t al = 0;
	long st = 0;
	ota_err e = exchange(base_url, "/v1/challenges", "application/json",
	                     ota_bytes_make(body, strlen(body)), true, &ans, &al, &st, err);
	free(body);
	if (e != OTA_OK)
		return e;
	if ((e = ota_attest_client_answer(ans, al, st, OTA_ATTEST_ANSWER_CHALLENGE, err)) !=
	    OTA_OK) {
		free(ans);
		return e;
	}
	*out = ans;
	return OTA_OK;
}

/* One POST of the attestation: *out the judged answer. */
static ota_err post_once(const char *base_url, ota_bytes cose, char **out, ota_error *err)
{
	char *ans = NULL;
	size_t al = 0;
	long st = 0;
	ota_err e = exchange(base_url, "/v1/attestations", "application/cose", cose, true, &ans, &al,
	                     &st, err);
	if (e != OTA_OK)
		return e;
	if ((e = ota_attest_client_answer(ans, al, st, OTA_ATTEST_ANSWER_ACCEPTANCE, err)) !=
	    OTA_OK) {
		free(ans);
		return e;
	}
	*out = ans;
	return OTA_OK;
}

ota_err ota_attest_client_lookup(const char *base_url, ota_bytes cose, char **out, ota_error *err)
{
	if (out == NULL || cose.ptr == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "bad arguments");
	*out = NULL;
	char id[OTA_ID_LEN + 1];
	ota_cose_sign1 m;
	ota_attestation *c = malloc(sizeof *c);
	if (c == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "client", "claims");
	ota_err e;
	if ((e = ota_sha256_id(cose, id)) != OTA_OK) {
		free(c);
		return ota_error_set(err, e, "attestation", "cannot hash");
	}
	if ((e = ota_cose_sign1_decode(cose, NULL, &m, err)) != OTA_OK ||
	    (e = ota_attestation_parse(m.payload, c, err)) != OTA_OK) {
		free(c);
		return e;
	}
	CURL *h = curl_easy_init();
	char *t = h != NULL ? curl_easy_escape(h, c->txn, 0) : NULL;
	char *b = h != NULL ? curl_easy_escape(h, c->boundary, 0) : NULL;
	free(c);
	char *path = NULL;
	if (t != NULL && b != NULL) {
		size_t n = strlen(t) + strlen(b) + OTA_ID_LEN + 64;
		path = malloc(n);
		if (path != NULL)
			snprintf(path, n, "/v1/acceptances/%s?txn=%s&boundary=%s", id, t, b);
	}
	curl_free(t);
	curl_free(b);
	if (h != NULL)
		curl_easy_cleanup(h);
	if (path == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "client", "lookup path");
	char *ans = NULL;
	size_t al = 0;
	long st = 0;
	e = exchange(base_url, path, NULL, ota_bytes_make(NULL, 0), false, &ans, &al, &st, err);
	free(path);
	if (e != OTA_OK)
		return e;
	/* the stored acceptance: the same judgement as an answer to the POST,
	 * and it must be of the attestation looked up */
	json_t *o = NULL;
	const char *aid = NULL;
	if ((e = ota_attest_client_answer(ans, al, st, OTA_ATTEST_ANSWER_ACCEPTANCE, err)) == OTA_OK &&
	    (ota_json_parse(ota_bytes_make(ans, al), &o, NULL) != OTA_OK ||
	     (aid = json_string_value(json_object_get(o, "attestation"))) == NULL ||
	     strcmp(aid, id) != 0))
		e = ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
		                  "the stored acceptance is of another attestation");
	free(ans);
	if (e != OTA_OK) {
		json_decref(o);
		return e;
	}
	json_t *r = json_pack("{s:b, s:s, s:s, s:O, s:b}", "ok", 1, "result", "accepted", "attestation",
	                      id, "acceptance", json_object_get(o, "acceptance"), "recovered", 1);
	json_decref(o);
	char *text = r != NULL ? json_dumps(r, JSON_COMPACT) : NULL;
	json_decref(r);
	if (text == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "client", "answer");
	*out = text;
	return OTA_OK;
}

ota_err ota_attest_client_submit(const char *base_url, ota_bytes cose, char **out, ota_error *err)
{
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "out is NULL");
	*out = NULL;
	ota_error first;
	ota_error_clear(&first);
	ota_err e = post_once(base_url, cose, out, &first);
	if (e != OTA_ERR_HTTP_TRANSPORT) {
		if (e != OTA_OK)
			ota_error_set(err, first.code, first.where, "%s", first.what);
		return e;
	}
	/* The answer was lost: the transaction may have committed (an
	 * endpoint killed, a connection cut, after the commit) or not (before
	 * it). The stored acceptance answers the first; the challenge, still
	 * live, lets one more POST answer the second; a replay then means that
	 * POST lost to the first one, whose acceptance is stored by now. */
	ota_error le;
	ota_error_clear(&le);
	ota_err lr = ota_attest_client_lookup(base_url, cose, out, &le);
	if (lr == OTA_OK)
		return OTA_OK;
	if (lr == OTA_ERR_NOT_FOUND) {
		ota_error pe;
		ota_error_clear(&pe);
		ota_err pr = post_once(base_url, cose, out, &pe);
		if (pr == OTA_OK)
			return OTA_OK;
		if (pr == OTA_ERR_NONCE_REPLAYED) {
			ota_error_clear(&le);
			if (ota_attest_client_lookup(base_url, cose, out, &le) == OTA_OK)
				return OTA_OK;
		}
		if (pr != OTA_ERR_HTTP_TRANSPORT && pr != OTA_ERR_NONCE_REPLAYED) {
			/* the retry's answer is the endpoint's word on these bytes */
			return ota_error_set(err, pe.code, pe.where, "%s", pe.what);
		}
	}
	return ota_error_set(err, first.code, first.where, "%s (the stored acceptance: %s)",
	                     first.what, lr == OTA_OK ? "found" : le.what);
}

ota_err ota_attest_client_get(const char *base_url, const char *path, char **out, size_t *out_len,
                              long *status, ota_error *err)
{
	if (out == NULL || status == NULL || path == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "bad arguments");
	return exchange(base_url, path, NULL, ota_bytes_make(NULL, 0), false, out, out_len, status, err);
}

/* ---- batches (application/cbor-seq) ---- */

void ota_attest_batch_results_free(ota_attest_batch_result *res, size_t n)
{
	if (res == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		free(res[i].answer);
		res[i].answer = NULL;
	}
}

/* every result OTA_OK with no answer yet (res may hold anything) */
static void results_clear(ota_attest_batch_result *res, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		res[i].rc = OTA_OK;
		ota_error_clear(&res[i].err);
		res[i].answer = NULL;
	}
}

/* every result becomes e (an error of the batch as a whole) */
static void results_set_all(ota_attest_batch_result *res, size_t n, const ota_error *e)
{
	for (size_t i = 0; i < n; i++) {
		free(res[i].answer);
		res[i].answer = NULL;
		res[i].rc = e->code;
		res[i].err = *e;
	}
}

/* the answer for one item: o (borrowed) judged as the single route's, and
 * an acceptance must name id; sets r. OTA_ERR_ATT_PROTOCOL (err filled)
 * when the entry is not one the endpoint writes. */
static ota_err batch_entry(json_t *o, size_t i, const char *id, ota_attest_batch_result *r,
                           ota_error *err)
{
	json_t *okv = json_object_get(o, "ok");
	if (!json_is_object(o) || !json_is_boolean(okv))
		return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
		                     "result %zu is not an object with a boolean ok", i);
	ota_error_clear(&r->err);
	if (json_is_true(okv)) {
		if (judge_object(o, 201, OTA_ATTEST_ANSWER_ACCEPTANCE, &r->err) != OTA_OK)
			return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
			                     "result %zu: an acceptance without its members", i);
		if (strcmp(json_string_value(json_object_get(o, "attestation")), id) != 0)
			return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
			                     "result %zu accepts another attestation than item %zu", i, i);
		r->answer = json_dumps(o, JSON_COMPACT);
		if (r->answer == NULL)
			return ota_error_set(err, OTA_ERR_NOMEM, "client", "answer");
		r->rc = OTA_OK;
		return OTA_OK;
	}
	json_t *st = json_object_get(o, "status");
	json_int_t s = json_is_integer(st) ? json_integer_value(st) : 0;
	if (s < 400 || s > 599)
		return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
		                     "result %zu: a refusal without a 4xx or 5xx status", i);
	r->rc = judge_object(o, (long)s, OTA_ATTEST_ANSWER_ACCEPTANCE, &r->err);
	if (r->rc == OTA_ERR_ATT_PROTOCOL) /* no known code */
		return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "result %zu: %s", i,
		                     r->err.what);
	return OTA_OK;
}

ota_err ota_attest_client_batch_answer(const char *body, size_t len, long status, size_t n,
                                       const char (*ids)[OTA_ID_LEN + 1],
                                       ota_attest_batch_result *res, ota_error *err)
{
	if (res == NULL || ids == NULL || n == 0 || n > OTA_MAX_ATTESTATION_BATCH)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "bad arguments");
	results_clear(res, n);
	json_t *o = NULL;
	ota_err e = parse_answer(body, len, status, &o, err);
	if (e == OTA_OK && !(status == 200 && json_is_true(json_object_get(o, "ok")))) {
		/* the batch refused as a whole, with its code */
		e = status >= 200 && status < 300
		        ? ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
		                        "HTTP %ld without a batch's results", status)
		        : judge_object(o, status, OTA_ATTEST_ANSWER_ACCEPTANCE, err);
	}
	if (e == OTA_OK) {
		json_t *rs = json_object_get(o, "results"), *ac = json_object_get(o, "accepted"),
		       *rf = json_object_get(o, "refused");
		if (!json_is_array(rs) || json_array_size(rs) != n || !json_is_integer(ac) ||
		    !json_is_integer(rf) || json_integer_value(ac) < 0 || json_integer_value(rf) < 0 ||
		    (size_t)json_integer_value(ac) + (size_t)json_integer_value(rf) != n)
			e = ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
			                  "HTTP 200 without %zu results and their counts", n);
		size_t k = 0;
		for (size_t i = 0; e == OTA_OK && i < n; i++) {
			e = batch_entry(json_array_get(rs, i), i, ids[i], &res[i], err);
			k += e == OTA_OK && res[i].rc == OTA_OK;
		}
		if (e == OTA_OK && k != (size_t)json_integer_value(ac))
			e = ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer",
			                  "\"accepted\" says %lld, the results %zu",
			                  (long long)json_integer_value(ac), k);
	}
	json_decref(o);
	if (e != OTA_OK)
		results_set_all(res, n, err);
	return e;
}

/* One POST of items[pick[0..m)] as a batch; out[0..m) their results. */
static ota_err post_batch(const char *base_url, const ota_bytes *items, const size_t *pick,
                          size_t m, const char (*ids)[OTA_ID_LEN + 1],
                          ota_attest_batch_result *out, ota_error *err)
{
	size_t total = 0;
	for (size_t j = 0; j < m; j++) {
		if (items[pick[j]].len > SIZE_MAX - total)
			return ota_error_set(err, OTA_ERR_TOO_LARGE, "batch", "items too large");
		total += items[pick[j]].len;
	}
	uint8_t *body = malloc(total > 0 ? total : 1);
	char(*pid)[OTA_ID_LEN + 1] = malloc(m * sizeof *pid);
	if (body == NULL || pid == NULL) {
		free(body);
		free(pid);
		return ota_error_set(err, OTA_ERR_NOMEM, "client", "batch");
	}
	size_t off = 0;
	for (size_t j = 0; j < m; j++) {
		memcpy(body + off, items[pick[j]].ptr, items[pick[j]].len);
		off += items[pick[j]].len;
		memcpy(pid[j], ids[pick[j]], sizeof pid[j]);
	}
	char *ans = NULL;
	size_t al = 0;
	long st = 0;
	ota_err e = exchange(base_url, "/v1/attestations", "application/cbor-seq",
	                     ota_bytes_make(body, total), true, &ans, &al, &st, err);
	free(body);
	if (e == OTA_OK)
		e = ota_attest_client_batch_answer(ans, al, st, m, (const char(*)[OTA_ID_LEN + 1])pid,
		                                   out, err);
	free(ans);
	free(pid);
	return e;
}

ota_err ota_attest_client_submit_batch(const char *base_url, const ota_bytes *items, size_t n,
                                       ota_attest_batch_result *res, ota_error *err)
{
	if (res == NULL || items == NULL || n == 0 || n > OTA_MAX_ATTESTATION_BATCH)
		return ota_error_set(err, OTA_ERR_USAGE, "client",
		                     "a batch holds 1 to %u attestations", OTA_MAX_ATTESTATION_BATCH);
	results_clear(res, n);
	char(*ids)[OTA_ID_LEN + 1] = malloc(n * sizeof *ids);
	size_t *pick = malloc(n * sizeof *pick);
	ota_attest_batch_result *again = calloc(n, sizeof *again);
	ota_err e = OTA_OK;
	if (ids == NULL || pick == NULL || again == NULL)
		e = ota_error_set(err, OTA_ERR_NOMEM, "client", "batch");
	for (size_t i = 0; e == OTA_OK && i < n; i++) {
		if (items[i].ptr == NULL || ota_sha256_id(items[i], ids[i]) != OTA_OK)
			e = ota_error_set(err, OTA_ERR_USAGE, "client", "item %zu has no bytes", i);
		pick[i] = i;
	}
	if (e != OTA_OK) {
		results_set_all(res, n, err);
		free(ids);
		free(pick);
		free(again);
		return e;
	}
	const char(*cids)[OTA_ID_LEN + 1] = (const char(*)[OTA_ID_LEN + 1])ids;
	ota_error first;
	ota_error_clear(&first);
	e = post_batch(base_url, items, pick, n, cids, res, &first);
	if (e != OTA_ERR_HTTP_TRANSPORT) {
		if (e != OTA_OK) {
			results_set_all(res, n, &first);
			ota_error_set(err, first.code, first.where, "%s", first.what);
		}
		free(ids);
		free(pick);
		free(again);
		return e;
	}
	/* The answer was lost, as in ota_attest_client_submit: each item's
	 * stored acceptance answers for the items the lost batch committed;
	 * the rest, whose challenges are still live, go once more together. */
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		ota_error le;
		ota_error_clear(&le);
		ota_err lr = ota_attest_client_lookup(base_url, items[i], &res[i].answer, &le);
		if (lr == OTA_OK)
			continue;
		if (lr == OTA_ERR_NOT_FOUND) {
			pick[m++] = i;
			continue;
		}
		res[i].rc = first.code;
		ota_error_set(&res[i].err, first.code, first.where, "%s (the stored acceptance: %s)",
		              first.what, le.what);
	}
	ota_error pe;
	ota_error_clear(&pe);
	ota_err pr = m > 0 ? post_batch(base_url, items, pick, m, cids, again, &pe) : OTA_OK;
	for (size_t j = 0; j < m; j++) {
		ota_attest_batch_result *r = &res[pick[j]];
		if (pr == OTA_OK && again[j].rc == OTA_OK) {
			r->answer = again[j].answer;
			again[j].answer = NULL;
			continue;
		}
		if (pr == OTA_OK && again[j].rc != OTA_ERR_NONCE_REPLAYED) {
			/* the retry's answer is the endpoint's word on these bytes */
			r->rc = again[j].rc;
			r->err = again[j].err;
			continue;
		}
		if (pr == OTA_OK) { /* lost the race to the first batch: stored by now */
			ota_error le;
			ota_error_clear(&le);
			if (ota_attest_client_lookup(base_url, items[pick[j]], &r->answer, &le) == OTA_OK)
				continue;
		}
		if (pr != OTA_OK && pr != OTA_ERR_HTTP_TRANSPORT) {
			r->rc = pe.code; /* the retry refused as a whole */
			r->err = pe;
			continue;
		}
		r->rc = first.code;
		r->err = first;
	}
	ota_attest_batch_results_free(again, m);
	free(again);
	free(ids);
	free(pick);
	return OTA_OK;
}
