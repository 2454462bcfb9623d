/*
 * attest/net/client.c - libcurl client of ota-attestd (ota attest challenge
 * / submit). Answers are capped; error answers map back to their stable
 * error names.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ota/attestd.h"
#include "ota/json.h"

#define MAX_ANSWER (1024u * 1024u)

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

/* Turns a JSON answer into OTA_OK (2xx with "ok": true) or its error. */
static ota_err judge_answer(const char *body, size_t len, long status, ota_error *err)
{
	json_t *o = NULL;
	if (ota_json_parse(ota_bytes_make(body, len), &o, NULL) != OTA_OK || !json_is_object(o)) {
		json_decref(o);
		return ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "HTTP %ld, not a JSON object",
		                     status);
	}
	ota_err e = OTA_OK;
	if (status >= 200 && status < 300 && json_is_true(json_object_get(o, "ok"))) {
		json_decref(o);
		return OTA_OK;
	}
	const char *code = json_string_value(json_object_get(o, "code"));
	const char *where = json_string_value(json_object_get(o, "where"));
	const char *msg = json_string_value(json_object_get(o, "message"));
	ota_err named;
	if (code != NULL && ota_err_from_name(code, &named) && named != OTA_OK)
		e = ota_error_set(err, named, where != NULL ? where : "", "%s", msg != NULL ? msg : code);
	else
		e = ota_error_set(err, OTA_ERR_ATT_PROTOCOL, "answer", "HTTP %ld without a known code",
		                  status);
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
	if ((e = judge_answer(ans, al, st, err)) != OTA_OK) {
		free(ans);
		return e;
	}
	*out = ans;
	return OTA_OK;
}

ota_err ota_attest_client_submit(const char *base_url, ota_bytes cose, char **out, ota_error *err)
{
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "out is NULL");
	*out = NULL;
	char *ans = NULL;
	size_t al = 0;
	long st = 0;
	ota_err e = exchange(base_url, "/v1/attestations", "application/cose", cose, true, &ans, &al,
	                     &st, err);
	if (e != OTA_OK)
		return e;
	if ((e = judge_answer(ans, al, st, err)) != OTA_OK) {
		free(ans);
		return e;
	}
	*out = ans;
	return OTA_OK;
}

ota_err ota_attest_client_get(const char *base_url, const char *path, char **out, size_t *out_len,
                              long *status, ota_error *err)
{
	if (out == NULL || status == NULL || path == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "client", "bad arguments");
	return exchange(base_url, path, NULL, ota_bytes_make(NULL, 0), false, out, out_len, status, err);
}
