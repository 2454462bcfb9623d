/*
 * attest/acceptance.c - builds and signs acceptance records (kind
 * acceptance) for prepared admissions. See include/ota/acceptance.h.
 */
#include <stdlib.h>
#include <string.h>

#include "ota/acceptance.h"
#include "ota/cose.h"

typedef struct wr {
	uint8_t *p;
	size_t len, cap;
	bool oom;
} wr;

static void put(wr *w, const void *p, size_t n)
{
	if (w->oom)
		return;
	if (w->cap - w->len < n) {
		size_t nc = w->cap * 2 + n + 256;
		uint8_t *np = realloc(w->p, nc);
		if (np == NULL) {
			w->oom = true;
			return;
		}
		w->p = np;
		w->cap = nc;
	}
	memcpy(w->p + w->len, p, n);
	w->len += n;
}

static void head(wr *w, unsigned mt, uint64_t v)
{
	uint8_t b[9];
	size_t n = 1;
	if (v < 24) {
		b[0] = (uint8_t)(mt << 5 | v);
	} else if (v <= 0xff) {
		b[0] = (uint8_t)(mt << 5 | 24);
		b[1] = (uint8_t)v;
		n = 2;
	} else if (v <= 0xffff) {
		b[0] = (uint8_t)(mt << 5 | 25);
		b[1] = (uint8_t)(v >> 8);
		b[2] = (uint8_t)v;
		n = 3;
	} else if (v <= 0xffffffffu) {
		b[0] = (uint8_t)(mt << 5 | 26);
		for (int i = 0; i < 4; i++)
			b[1 + i] = (uint8_t)(v >> (24 - 8 * i));
		n = 5;
	} else {
		b[0] = (uint8_t)(mt << 5 | 27);
		for (int i = 0; i < 8; i++)
			b[1 + i] = (uint8_t)(v >> (56 - 8 * i));
		n = 9;
	}
	put(w, b, n);
}

static void text(wr *w, const char *s)
{
	size_t n = strlen(s);
	head(w, 3, n);
	put(w, s, n);
}

static void bstr(wr *w, const uint8_t *p, size_t n)
{
	head(w, 2, n);
	put(w, p, n);
}

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
	wr w = {NULL, 0, 0, false};
	head(&w, 5, 13);
	head(&w, 0, 1);
	text(&w, s->verifier_id);
	head(&w, 0, 6);
	head(&w, 0, (uint64_t)(a->judged_at < 0 ? 0 : a->judged_at));
	head(&w, 0, 10);
	bstr(&w, a->claims.nonce, a->claims.nonce_len);
	text(&w, "kind");
	text(&w, "acceptance");
	text(&w, "result");
	text(&w, "accepted");
	text(&w, "attestation");
	text(&w, a->record_id);
	text(&w, "challenge");
	text(&w, a->challenge_id);
	text(&w, "issuer");
	text(&w, a->issuer_principal);
	text(&w, "txn");
	text(&w, a->claims.txn);
	text(&w, "boundary");
	text(&w, a->claims.boundary);
	text(&w, "prior");
	if (a->claims.has_prior)
		text(&w, a->claims.prior);
	else
		head(&w, 7, 22); /* null */
	text(&w, "trust_root");
	text(&w, a->trust_root_id);
	text(&w, "verifier");
	head(&w, 5, 3);
	text(&w, "id");
	text(&w, s->verifier_id);
	text(&w, "version");
	text(&w, ota_version());
	text(&w, "kid");
	bstr(&w, kid, sizeof kid);
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
