/*
 * nonce-store/challenge.c - the challenge as an identified JSON object.
 *
 * Its JCS bytes (RFC 8785) are written directly, members in their sorted
 * order, without building a jansson object: every admission hashes them
 * (the acceptance names the challenge by this identity), and the jansson
 * object and generic serializer cost more than the rest of the identity.
 * The output is byte for byte what ota_jcs_serialize writes for the same
 * object (nonce_test compares the two on random and hostile strings).
 */
#include <stdlib.h>
#include <string.h>

#include "ota/json.h"
#include "ota/nonce.h"

typedef struct jbuf {
	char *p;
	size_t len, cap;
} jbuf;

static void put(jbuf *b, const char *s, size_t n)
{
	memcpy(b->p + b->len, s, n); /* cap was sized for the worst case */
	b->len += n;
}

static void put_lit(jbuf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* A JCS string (RFC 8785 section 3.2.2.2); false if s is not UTF-8. */
static bool put_str(jbuf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);
	b->p[b->len++] = '"';
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		if (c >= 0x80) {
			uint32_t cp;
			size_t k = ota_utf8_next(u + i, n - i, &cp);
			if (k == 0)
				return false;
			put(b, s + i, k);
			i += k;
			continue;
		}
		char e[6];
		size_t k = ota_jcs_escape(c, e);
		if (k != 0)
			put(b, e, k);
		else
			b->p[b->len++] = (char)c;
		i++;
	}
	b->p[b->len++] = '"';
	return true;
}

/* An I-JSON integer (what ota_jcs_serialize accepts); false outside
 * +-(2^53-1). */
static bool put_int(jbuf *b, int64_t v)
{
	if (v > OTA_JSON_MAX_SAFE_INT || v < -OTA_JSON_MAX_SAFE_INT)
		return false;
	char num[24];
	put(b, num, ota_jcs_integer(v, num));
	return true;
}

ota_err ota_challenge_jcs(const ota_challenge *c, char **out, size_t *out_len)
{
	if (out == NULL || out_len == NULL)
		return OTA_ERR_USAGE;
	*out = NULL;
	*out_len = 0;
	if (c == NULL || c->nonce_len < OTA_NONCE_MIN_BYTES || c->nonce_len > OTA_NONCE_MAX_BYTES)
		return OTA_ERR_USAGE;
	char *b64 = NULL;
	ota_err e = ota_base64url_encode(ota_bytes_make(c->nonce, c->nonce_len), &b64);
	if (e != OTA_OK)
		return e;
	/* the text fields are NUL-terminated within their arrays */
	size_t tl = strnlen(c->txn, sizeof c->txn), il = strnlen(c->issuer, sizeof c->issuer),
	       sl = strnlen(c->scope, sizeof c->scope);
	if (tl == sizeof c->txn || il == sizeof c->issuer || sl == sizeof c->scope) {
		free(b64);
		return OTA_ERR_USAGE;
	}
	/* worst case: every text byte escaped as \u00XX, three integers of
	 * at most 17 characters, the member names and punctuation */
	jbuf b = {NULL, 0, 6 * (tl + il + sl) + strlen(b64) + 256};
	b.p = malloc(b.cap);
	if (b.p == NULL) {
		free(b64);
		return OTA_ERR_NOMEM;
	}
	/* members in JCS order (UTF-16 code units of the names: ASCII here) */
	bool ok = true;
	put_lit(&b, "{\"epoch\":");
	ok = ok && put_int(&b, c->epoch);
	put_lit(&b, ",\"expires_at\":");
	ok = ok && put_int(&b, c->expires_at);
	put_lit(&b, ",\"issued_at\":");
	ok = ok && put_int(&b, c->issued_at);
	put_lit(&b, ",\"issuer\":");
	bool text = put_str(&b, c->issuer);
	put_lit(&b, ",\"kind\":\"ota.challenge/v1\",\"nonce\":");
	text = text && put_str(&b, b64);
	put_lit(&b, ",\"scope\":");
	text = text && put_str(&b, c->scope);
	put_lit(&b, ",\"txn\":");
	text = text && put_str(&b, c->txn);
	put_lit(&b, "}");
	free(b64);
	if (!ok || !text) {
		free(b.p);
		return !ok ? OTA_ERR_JSON_NUMBER_RANGE : OTA_ERR_JSON_INVALID_UTF8;
	}
	b.p[b.len] = '\0';
	*out = b.p;
	*out_len = b.len;
	return OTA_OK;
}

ota_err ota_challenge_identity(const ota_challenge *c, char out[OTA_ID_LEN + 1])
{
	char *j = NULL;
	size_t n = 0;
	out[0] = '\0';
	ota_err e = ota_challenge_jcs(c, &j, &n);
	if (e != OTA_OK)
		return e;
	e = ota_sha256_id(ota_bytes_make(j, n), out);
	free(j);
	return e;
}
