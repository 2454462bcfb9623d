/* nonce-store/challenge.c - the challenge as an identified JSON object. */
#include <stdlib.h>
#include <string.h>

#include "ota/json.h"
#include "ota/nonce.h"

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
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "kind", "ota.challenge/v1",
	                      "nonce", b64, "txn", c->txn, "issuer", c->issuer, "scope", c->scope,
	                      "issued_at", (json_int_t)c->issued_at, "expires_at",
	                      (json_int_t)c->expires_at, "epoch", (json_int_t)c->epoch);
	free(b64);
	if (o == NULL)
		return OTA_ERR_NOMEM;
	e = ota_jcs_serialize(o, out, out_len, NULL);
	json_decref(o);
	return e;
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
