/*
 * attest/net/server.c - ota-attestd's HTTP endpoint over libmicrohttpd.
 * See include/ota/attestd.h and docs/attestation.md.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <strings.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ota/acceptance.h"
#include "ota/attestd.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/trust.h"

struct ota_attestd {
	struct MHD_Daemon *mhd;
	uint16_t port;
	ota_attestd_opts opts;
	ota_clock clock;
	ota_nonce_store *store;
	ota_nonce_committer *committer;
	ota_trust_root *root;
	uint8_t *root_json;
	size_t root_json_len;
	ota_key *vkey;
	char verifier_id[OTA_ATT_TEXT_MAX + 1];
	ota_acceptance_signer signer;
	ota_admission_ctx actx;
	atomic_ullong requests, challenges, accepted, refused, http_errors, too_large;
};

typedef struct req {
	uint8_t *buf;
	size_t len, cap;
	bool too_large;
	bool answered;
	struct timespec t0;
} req;

void ota_attestd_opts_init(ota_attestd_opts *o)
{
	if (o == NULL)
		return;
	memset(o, 0, sizeof *o);
	o->bind_addr = "127.0.0.1";
	o->max_connections = OTA_MAX_HTTP_CONNECTIONS;
	o->timeout_s = OTA_HTTP_TIMEOUT_SECONDS;
	o->max_body = OTA_MAX_HTTP_BODY_BYTES;
	o->threads = 8;
	o->max_batch = 256;
	o->sync = OTA_NONCE_SYNC_FULL;
	ota_admission_opts_init(&o->admission);
}

static int64_t now_of(const ota_attestd *d)
{
	return ota_clock_now(&d->clock);
}

/* ---- logging ---- */

static void log_json(ota_attestd *d, json_t *o)
{
	if (d->opts.log == NULL || o == NULL) {
		json_decref(o);
		return;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(o, "ts", json_integer((json_int_t)ts.tv_sec));
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	if (s != NULL) {
		d->opts.log(d->opts.log_ctx, s);
		free(s);
	}
	json_decref(o);
}

/* ---- responses ---- */

static unsigned status_for(ota_err e)
{
	switch (e) {
	case OTA_OK:
		return MHD_HTTP_OK;
	case OTA_ERR_HTTP_BODY_TOO_LARGE:
	case OTA_ERR_TOO_LARGE:
	case OTA_ERR_ATT_TOO_LARGE:
		return MHD_HTTP_CONTENT_TOO_LARGE;
	case OTA_ERR_HTTP_METHOD:
		return MHD_HTTP_METHOD_NOT_ALLOWED;
	case OTA_ERR_HTTP_NOT_FOUND:
	case OTA_ERR_NOT_FOUND:
		return MHD_HTTP_NOT_FOUND;
	case OTA_ERR_HTTP_CONTENT_TYPE:
		return MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
	case OTA_ERR_HTTP_BAD_REQUEST:
	case OTA_ERR_USAGE:
	case OTA_ERR_JSON_SYNTAX:
	case OTA_ERR_JSON_DUPLICATE_KEY:
	case OTA_ERR_JSON_INVALID_UTF8:
	case OTA_ERR_JSON_NUMBER_RANGE:
	case OTA_ERR_JSON_TYPE:
	case OTA_ERR_TOO_DEEP:
	case OTA_ERR_NONCE_LENGTH:
	case OTA_ERR_NONCE_TTL:
	case OTA_ERR_NONCE_BINDING:
		return MHD_HTTP_BAD_REQUEST;
	case OTA_ERR_NONCE_REPLAYED:
	case OTA_ERR_ATT_DUPLICATE:
	case OTA_ERR_ATT_PRIOR_FORK:
	case OTA_ERR_ATT_PRIOR_MISSING:
	case OTA_ERR_ATT_PRIOR_UNKNOWN:
		return MHD_HTTP_CONFLICT;
	case OTA_ERR_NONCE_BUSY:
	case OTA_ERR_HTTP_UNAVAILABLE:
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	case OTA_ERR_NOMEM:
	case OTA_ERR_INTERNAL:
	case OTA_ERR_DB:
	case OTA_ERR_CRYPTO:
	case OTA_ERR_IO:
	case OTA_ERR_NONCE_RANDOM:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	default:
		return MHD_HTTP_FORBIDDEN; /* a refusal: the answer is "no" */
	}
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *ctype,
                                 char *body, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *o)
{
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (s == NULL)
		return MHD_NO;
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (t == NULL) {
		free(s);
		return MHD_NO;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	return send_text(c, status, "application/json", t, n + 1);
}

static enum MHD_Result send_error(ota_attestd *d, struct MHD_Connection *c, const char *method,
                                  const char *url, const ota_error *e)
{
	unsigned st = status_for(e->code);
	if (st >= 500)
		atomic_fetch_add(&d->http_errors, 1);
	json_t *o = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", ota_err_name(e->code), "where",
	                      e->where, "message",
	                      e->what[0] != '\0' ? e->what : ota_err_message(e->code));
	log_json(d, json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s}", "level",
	                      st >= 500 ? "error" : "warn", "event", "refused", "method", method,
	                      "path", url, "status", (int)st, "code", ota_err_name(e->code), "where",
	                      e->where));
	return send_json(c, st, o);
}

static enum MHD_Result fail(ota_attestd *d, struct MHD_Connection *c, const char *method,
                            const char *url, ota_err code, const char *where, const char *what)
{
	ota_error e;
	ota_error_clear(&e);
	ota_error_set(&e, code, where, "%s", what);
	return send_error(d, c, method, url, &e);
}

/* ---- routes ---- */

static bool content_type_is(struct MHD_Connection *c, const char *want)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	if (ct == NULL)
		return false;
	size_t n = strlen(want);
	return strncasecmp(ct, want, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static ota_err principal_is_issuer(const ota_attestd *d, const char *id, ota_error *err)
{
	size_t n = ota_trust_root_principal_count(d->root);
	for (size_t i = 0; i < n; i++) {
		const ota_trust_principal *p = ota_trust_root_principal(d->root, i);
		if (p != NULL && strcmp(ota_trust_principal_id(p), id) == 0) {
			if (ota_trust_principal_role(p) != OTA_TRUST_ROLE_ISSUER)
				return ota_error_set(err, OTA_ERR_ATT_ISSUER_ROLE, "issuer",
				                     "principal is not an issuer");
			return OTA_OK;
		}
	}
	return ota_error_set(err, OTA_ERR_ATT_ISSUER_UNKNOWN, "issuer",
	                     "no principal with this id in the trust root");
}

static const char *json_str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static enum MHD_Result route_challenges(ota_attestd *d, struct MHD_Connection *c, req *r,
                                        const char *method, const char *url)
{
	ota_error e;
	ota_error_clear(&e);
	if (!content_type_is(c, "application/json"))
		return fail(d, c, method, url, OTA_ERR_HTTP_CONTENT_TYPE, "content-type",
		            "want application/json");
	if (r->len > OTA_MAX_JSON_REQUEST_BYTES)
		return fail(d, c, method, url, OTA_ERR_HTTP_BODY_TOO_LARGE, "body", "JSON body too large");
	json_t *o = NULL;
	if (ota_json_parse(ota_bytes_make(r->buf, r->len), &o, &e) != OTA_OK)
		return send_error(d, c, method, url, &e);
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		if (strcmp(k, "txn") != 0 && strcmp(k, "issuer") != 0 && strcmp(k, "scope") != 0 &&
		    strcmp(k, "nonce_bytes") != 0 && strcmp(k, "ttl") != 0) {
			json_decref(o);
			return fail(d, c, method, url, OTA_ERR_HTTP_BAD_REQUEST, "body", "unknown member");
		}
	}
	ota_nonce_binding b = {json_str(o, "txn"), json_str(o, "issuer"), json_str(o, "scope")};
	json_t *nb = json_object_get(o, "nonce_bytes"), *tt = json_object_get(o, "ttl");
	if (b.txn == NULL || b.issuer == NULL || b.scope == NULL || (nb != NULL && !json_is_integer(nb)) ||
	    (tt != NULL && !json_is_integer(tt))) {
		json_decref(o);
		return fail(d, c, method, url, OTA_ERR_HTTP_BAD_REQUEST, "body",
		            "want {txn, issuer, scope: strings, nonce_bytes?, ttl?: integers}");
	}
	json_int_t nbytes = nb != NULL ? json_integer_value(nb) : 0;
	json_int_t ttl = tt != NULL ? json_integer_value(tt) : d->opts.challenge_ttl;
	if (nbytes < 0 || nbytes > 1024) {
		json_decref(o);
		return fail(d, c, method, url, OTA_ERR_NONCE_LENGTH, "nonce_bytes", "16..64");
	}
	if (principal_is_issuer(d, b.issuer, &e) != OTA_OK) {
		json_decref(o);
		return send_error(d, c, method, url, &e);
	}
	ota_nonce_op op;
	memset(&op, 0, sizeof op);
	op.kind = OTA_NONCE_OP_ISSUE;
	op.binding = &b;
	op.nonce_len = (size_t)nbytes;
	op.ttl = (int64_t)ttl;
	ota_err rc = ota_nonce_committer_run(d->committer, &op);
	json_decref(o); /* b pointed into o */
	if (rc != OTA_OK)
		return fail(d, c, method, url, rc, "challenge", ota_err_message(rc));
	ota_challenge *ch = &op.challenge;
	char id[OTA_ID_LEN + 1];
	char *nonce = NULL;
	if (ota_challenge_identity(ch, id) != OTA_OK ||
	    ota_base64url_encode(ota_bytes_make(ch->nonce, ch->nonce_len), &nonce) != OTA_OK)
		return fail(d, c, method, url, OTA_ERR_NOMEM, "challenge", "encoding");
	atomic_fetch_add(&d->challenges, 1);
	json_t *out = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "ok", 1, "challenge", id,
	                        "nonce", nonce, "txn", ch->txn, "issuer", ch->issuer, "scope", ch->scope,
	                        "issued_at", (json_int_t)ch->issued_at, "expires_at",
	                        (json_int_t)ch->expires_at, "epoch", (json_int_t)ch->epoch);
	free(nonce);
	if (d->opts.log_requests)
		log_json(d, json_pack("{s:s, s:s, s:s, s:s, s:s}", "level", "info", "event",
		                      "challenge_issued", "challenge", id, "txn", ch->txn, "issuer",
		                      ch->issuer));
	if ((atomic_load(&d->challenges) & 4095u) == 0) {
		uint64_t gone = 0;
		if (ota_nonce_store_purge(d->store, now_of(d), &gone, NULL) == OTA_OK && gone > 0)
			log_json(d, json_pack("{s:s, s:s, s:I}", "level", "info", "event", "purged",
			                      "count", (json_int_t)gone));
	}
	return send_json(c, MHD_HTTP_CREATED, out);
}

static enum MHD_Result route_attestations(ota_attestd *d, struct MHD_Connection *c, req *r,
                                          const char *method, const char *url)
{
	if (!content_type_is(c, "application/cose"))
		return fail(d, c, method, url, OTA_ERR_HTTP_CONTENT_TYPE, "content-type",
		            "want application/cose");
	ota_error e;
	ota_error_clear(&e);
	ota_admission a;
	uint8_t *acc = NULL;
	size_t acc_len = 0;
	int64_t now = now_of(d);
	ota_err rc = ota_admission_admit(&d->actx, ota_bytes_make(r->buf, r->len),
	                                 ota_bytes_make(NULL, 0), now, ota_acceptance_build, &d->signer,
	                                 d->committer, &a, &acc, &acc_len, &e);
	if (rc != OTA_OK) {
		atomic_fetch_add(&d->refused, 1);
		return send_error(d, c, method, url, &e);
	}
	char *b64 = NULL;
	if (ota_base64_encode(ota_bytes_make(acc, acc_len), &b64) != OTA_OK) {
		free(acc);
		return fail(d, c, method, url, OTA_ERR_NOMEM, "acceptance", "encoding");
	}
	free(acc);
	atomic_fetch_add(&d->accepted, 1);
	json_t *out = json_pack("{s:b, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "ok", 1, "result",
	                        "accepted", "attestation", a.record_id, "challenge", a.challenge_id,
	                        "accepted_at", (json_int_t)now, "txn", a.claims.txn, "boundary",
	                        a.claims.boundary, "issuer", a.issuer_principal, "acceptance", b64);
	free(b64);
	if (out != NULL) {
		json_object_set_new(out, "prior",
		                    a.claims.has_prior ? json_string(a.claims.prior) : json_null());
		/* the challenge itself (its identity is sha256 over these JCS
		 * bytes), for archives that must retain it */
		char *cj = NULL;
		size_t cl = 0;
		if (ota_challenge_jcs(&a.challenge, &cj, &cl) == OTA_OK) {
			json_t *co = json_loadb(cj, cl, 0, NULL);
			if (co != NULL)
				json_object_set_new(out, "challenge_record", co);
			free(cj);
		}
	}
	if (d->opts.log_requests)
		log_json(d, json_pack("{s:s, s:s, s:s, s:s, s:s}", "level", "info", "event", "accepted",
		                      "attestation", a.record_id, "txn", a.claims.txn, "issuer",
		                      a.issuer_principal));
	return send_json(c, MHD_HTTP_CREATED, out);
}

static enum MHD_Result route_acceptance(ota_attestd *d, struct MHD_Connection *c, const char *method,
                                        const char *url, const char *id)
{
	if (!ota_id_is_valid(id))
		return fail(d, c, method, url, OTA_ERR_ID_MALFORMED, "id", "want sha256:<64 hex>");
	ota_error e;
	ota_error_clear(&e);
	uint8_t *acc = NULL;
	size_t acc_len = 0;
	if (ota_nonce_store_acceptance_get(d->store, id, NULL, NULL, &acc, &acc_len, &e) != OTA_OK)
		return send_error(d, c, method, url, &e);
	char *b64 = NULL;
	ota_err rc = ota_base64_encode(ota_bytes_make(acc, acc_len), &b64);
	free(acc);
	if (rc != OTA_OK)
		return fail(d, c, method, url, OTA_ERR_NOMEM, "acceptance", "encoding");
	json_t *out = json_pack("{s:b, s:s, s:s}", "ok", 1, "attestation", id, "acceptance", b64);
	free(b64);
	return send_json(c, MHD_HTTP_OK, out);
}

static enum MHD_Result route_metrics(ota_attestd *d, struct MHD_Connection *c)
{
	uint64_t live = 0, consumed = 0, stored = 0, batches = 0, ops = 0;
	if (ota_nonce_store_counts(d->store, &live, &consumed, &stored, NULL) != OTA_OK)
		live = consumed = stored = 0;
	ota_nonce_committer_stats(d->committer, &batches, &ops);
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (f == NULL)
		return MHD_NO;
	struct {
		const char *name, *type, *help;
		unsigned long long v;
	} m[] = {
		{"ota_attestd_requests_total", "counter", "HTTP requests answered",
		 atomic_load(&d->requests)},
		{"ota_attestd_challenges_issued_total", "counter", "challenges issued",
		 atomic_load(&d->challenges)},
		{"ota_attestd_attestations_accepted_total", "counter", "attestations accepted",
		 atomic_load(&d->accepted)},
		{"ota_attestd_attestations_refused_total", "counter", "attestations refused",
		 atomic_load(&d->refused)},
		{"ota_attestd_http_errors_total", "counter", "answers with a 5xx status",
		 atomic_load(&d->http_errors)},
		{"ota_attestd_bodies_too_large_total", "counter", "request bodies over the cap",
		 atomic_load(&d->too_large)},
		{"ota_attestd_commit_batches_total", "counter", "group-commit transactions",
		 (unsigned long long)batches},
		{"ota_attestd_commit_ops_total", "counter", "operations committed in batches",
		 (unsigned long long)ops},
		{"ota_attestd_challenges_live", "gauge", "challenges issued and not consumed",
		 (unsigned long long)live},
		{"ota_attestd_challenges_consumed", "gauge", "consumed challenges kept for replay detection",
		 (unsigned long long)consumed},
		{"ota_attestd_acceptances_stored", "gauge", "acceptances stored",
		 (unsigned long long)stored},
		{"ota_attestd_store_epoch", "gauge", "nonce store epoch",
		 (unsigned long long)ota_nonce_store_epoch(d->store)},
	};
	for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", m[i].name, m[i].help, m[i].name,
		        m[i].type, m[i].name, m[i].v);
	if (fclose(f) != 0) {
		free(s);
		return MHD_NO;
	}
	return send_text(c, MHD_HTTP_OK, "text/plain; version=0.0.4", s, n);
}

static enum MHD_Result dispatch(ota_attestd *d, struct MHD_Connection *c, req *r, const char *url,
                                const char *method)
{
	bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
	if (r->too_large) {
		atomic_fetch_add(&d->too_large, 1);
		return fail(d, c, method, url, OTA_ERR_HTTP_BODY_TOO_LARGE, "body", "request body too large");
	}
	if (strcmp(url, "/healthz") == 0) {
		if (!get)
			return fail(d, c, method, url, OTA_ERR_HTTP_METHOD, url, "GET only");
		return send_json(c, MHD_HTTP_OK,
		                 json_pack("{s:b, s:I, s:s}", "ok", 1, "epoch",
		                           (json_int_t)ota_nonce_store_epoch(d->store), "version",
		                           ota_version()));
	}
	if (strcmp(url, "/metrics") == 0) {
		if (!get)
			return fail(d, c, method, url, OTA_ERR_HTTP_METHOD, url, "GET only");
		return route_metrics(d, c);
	}
	if (strcmp(url, "/v1/trust-root") == 0) {
		if (!get)
			return fail(d, c, method, url, OTA_ERR_HTTP_METHOD, url, "GET only");
		char *copy = malloc(d->root_json_len + 1);
		if (copy == NULL)
			return MHD_NO;
		memcpy(copy, d->root_json, d->root_json_len);
		return send_text(c, MHD_HTTP_OK, "application/json", copy, d->root_json_len);
	}
	if (strcmp(url, "/v1/challenges") == 0) {
		if (!post)
			return fail(d, c, method, url, OTA_ERR_HTTP_METHOD, url, "POST only");
		return route_challenges(d, c, r, method, url);
	}
	if (strcmp(url, "/v1/attestations") == 0) {
		if (!post)
			return fail(d, c, method, url, OTA_ERR_HTTP_METHOD, url, "POST only");
		return route_attestations(d, c, r, method, url);
	}
	if (strncmp(url, "/v1/acceptances/", 16) == 0) {
		if (!get)
			return fail(d, c, method, url, OTA_ERR_HTTP_METHOD, url, "GET only");
		return route_acceptance(d, c, method, url, url + 16);
	}
	return fail(d, c, method, url, OTA_ERR_HTTP_NOT_FOUND, url, "no such route");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
	ota_attestd *d = cls;
	req *r = *con_cls;
	(void)version;
	if (r == NULL) {
		r = calloc(1, sizeof *r);
		if (r == NULL)
			return MHD_NO;
		clock_gettime(CLOCK_MONOTONIC, &r->t0);
		*con_cls = r;
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		                                             MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL) {
			char *end = NULL;
			unsigned long long v = strtoull(cl, &end, 10);
			if (end == cl || *end != '\0' || v > d->opts.max_body) {
				/* answer now, without reading the body; MHD closes
				 * the connection after this response */
				r->too_large = true;
				r->answered = true;
				atomic_fetch_add(&d->requests, 1);
				atomic_fetch_add(&d->too_large, 1);
				return fail(d, c, method, url, OTA_ERR_HTTP_BODY_TOO_LARGE, "body",
				            "declared Content-Length over the cap");
			}
		}
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (r->too_large)
			return MHD_YES; /* discard: memory stays flat */
		if (n > d->opts.max_body - r->len) {
			r->too_large = true;
			free(r->buf);
			r->buf = NULL;
			r->len = r->cap = 0;
			return MHD_YES;
		}
		if (r->cap - r->len < n) {
			size_t nc = r->cap == 0 ? 4096 : r->cap;
			while (nc - r->len < n)
				nc *= 2;
			if (nc > d->opts.max_body)
				nc = d->opts.max_body;
			uint8_t *nb = realloc(r->buf, nc);
			if (nb == NULL)
				return MHD_NO;
			r->buf = nb;
			r->cap = nc;
		}
		memcpy(r->buf + r->len, upload_data, n);
		r->len += n;
		return MHD_YES;
	}
	if (r->answered)
		return MHD_YES;
	r->answered = true;
	atomic_fetch_add(&d->requests, 1);
	return dispatch(d, c, r, url, method);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)c;
	(void)toe;
	req *r = *con_cls;
	if (r != NULL) {
		free(r->buf);
		free(r);
		*con_cls = NULL;
	}
}

/* ---- lifecycle ---- */

static ota_err load_root(ota_attestd *d, int64_t now, ota_error *err)
{
	ota_err e = ota_file_read(d->opts.trust_root_path, OTA_MAX_TRUST_ROOT_BYTES, &d->root_json,
	                          &d->root_json_len, err);
	if (e != OTA_OK)
		return e;
	if ((e = ota_trust_root_parse(ota_bytes_make(d->root_json, d->root_json_len), &d->root,
	                              err)) != OTA_OK)
		return e;
	if ((e = ota_trust_root_verify_self(d->root, err)) != OTA_OK)
		return e;
	if (ota_trust_root_expires(d->root) <= now)
		return ota_error_set(err, OTA_ERR_TRUST_EXPIRED, d->opts.trust_root_path,
		                     "trust root expired");
	return OTA_OK;
}

static ota_err load_verifier(ota_attestd *d, int64_t now, ota_error *err)
{
	ota_err e = ota_key_load_file(d->opts.verifier_key_path, &d->vkey, err);
	if (e != OTA_OK)
		return e;
	if (!ota_key_has_private(d->vkey))
		return ota_error_set(err, OTA_ERR_KEY_PRIVATE_REQUIRED, d->opts.verifier_key_path,
		                     "the verifier key must be private");
	uint8_t kid[32];
	if ((e = ota_key_kid(d->vkey, kid)) != OTA_OK)
		return ota_error_set(err, e, "verifier key", "kid");
	const ota_trust_principal *who = NULL;
	if ((e = ota_trust_lookup(d->root, ota_bytes_make(kid, 32), ota_key_default_alg(d->vkey),
	                          OTA_TRUST_ROLE_VERIFIER, NULL, now, NULL, &who, err)) != OTA_OK)
		return e;
	snprintf(d->verifier_id, sizeof d->verifier_id, "%s", ota_trust_principal_id(who));
	d->signer.key = d->vkey;
	d->signer.verifier_id = d->verifier_id;
	return OTA_OK;
}

static int listen_on(const char *addr, uint16_t port, uint16_t *bound, ota_error *err)
{
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		ota_error_set(err, OTA_ERR_USAGE, "bind", "not an IPv4 address: %s", addr);
		return -1;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ota_error_set(err, OTA_ERR_HTTP_TRANSPORT, "socket", "%s", strerror(errno));
		return -1;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	socklen_t sl = sizeof sa;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
		ota_error_set(err, OTA_ERR_HTTP_TRANSPORT, "listen", "%s:%u: %s", addr, (unsigned)port,
		              strerror(errno));
		close(fd);
		return -1;
	}
	*bound = ntohs(sa.sin_port);
	return fd;
}

ota_err ota_attestd_start(const ota_attestd_opts *o, ota_attestd **out, ota_error *err)
{
	ota_err e;
	if (out == NULL || o == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "attestd", "no options");
	*out = NULL;
	if (o->db_path == NULL || o->trust_root_path == NULL || o->verifier_key_path == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "attestd",
		                     "a store, a trust root and a verifier key are required");
	ota_attestd *d = calloc(1, sizeof *d);
	if (d == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "attestd", "daemon");
	d->opts = *o;
	if (d->opts.bind_addr == NULL)
		d->opts.bind_addr = "127.0.0.1";
	if (d->opts.max_connections == 0)
		d->opts.max_connections = OTA_MAX_HTTP_CONNECTIONS;
	if (d->opts.timeout_s == 0)
		d->opts.timeout_s = OTA_HTTP_TIMEOUT_SECONDS;
	if (d->opts.max_body == 0 || d->opts.max_body > OTA_MAX_HTTP_BODY_BYTES)
		d->opts.max_body = OTA_MAX_HTTP_BODY_BYTES;
	if (d->opts.threads == 0)
		d->opts.threads = 8;
	if (d->opts.admission.max_age == 0 && d->opts.admission.max_lifetime == 0)
		ota_admission_opts_init(&d->opts.admission);
	d->clock = o->clock != NULL ? *o->clock : ota_clock_system();
	int64_t now = now_of(d);
	if ((e = load_root(d, now, err)) != OTA_OK || (e = load_verifier(d, now, err)) != OTA_OK)
		goto out_stop;
	ota_nonce_opts no;
	ota_nonce_opts_init(&no);
	no.sync = d->opts.sync;
	if ((e = ota_nonce_store_open(d->opts.db_path, &no, &d->store, err)) != OTA_OK)
		goto out_stop;
	uint64_t gone = 0;
	if (ota_nonce_store_purge(d->store, now, &gone, NULL) != OTA_OK)
		gone = 0;
	if ((e = ota_nonce_committer_new(d->store, d->opts.max_batch, &d->clock, &d->committer)) !=
	    OTA_OK) {
		ota_error_set(err, e, "attestd", "group committer");
		goto out_stop;
	}
	d->actx.root = d->root;
	d->actx.store = d->store;
	d->actx.opts = d->opts.admission;
	int fd = listen_on(d->opts.bind_addr, d->opts.port, &d->port, err);
	if (fd < 0) {
		e = err != NULL ? err->code : OTA_ERR_HTTP_TRANSPORT;
		goto out_stop;
	}
	/* Handlers block until their group commit is durable, so each
	 * connection gets its own thread (bounded by the connection limit);
	 * with a thread pool, connections sharing a thread would wait for each
	 * other's fsync. */
	(void)d->opts.threads;
	d->mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL, 0, NULL,
		NULL, handler, d, MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)d->opts.max_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)d->opts.timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64u * 1024u),
		MHD_OPTION_NOTIFY_COMPLETED, completed, d, MHD_OPTION_END);
	if (d->mhd == NULL) {
		close(fd);
		e = ota_error_set(err, OTA_ERR_HTTP_TRANSPORT, "attestd", "cannot start the HTTP daemon");
		goto out_stop;
	}
	log_json(d, json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s}", "level", "info", "event",
	                      "listening", "addr", d->opts.bind_addr, "port", (int)d->port, "epoch",
	                      (json_int_t)ota_nonce_store_epoch(d->store), "verifier", d->verifier_id,
	                      "trust_root", ota_trust_root_identity(d->root), "sync",
	                      d->opts.sync == OTA_NONCE_SYNC_FULL ? "full" : "normal"));
	*out = d;
	return OTA_OK;
out_stop:
	ota_attestd_stop(d);
	return e;
}

uint16_t ota_attestd_port(const ota_attestd *d)
{
	return d != NULL ? d->port : 0;
}

void ota_attestd_stop(ota_attestd *d)
{
	if (d == NULL)
		return;
	if (d->mhd != NULL) {
		MHD_stop_daemon(d->mhd); /* waits for the handlers in flight */
		log_json(d, json_pack("{s:s, s:s, s:I, s:I}", "level", "info", "event", "stopped",
		                      "accepted", (json_int_t)atomic_load(&d->accepted), "refused",
		                      (json_int_t)atomic_load(&d->refused)));
	}
	ota_nonce_committer_free(d->committer);
	ota_nonce_store_close(d->store);
	ota_trust_root_free(d->root);
	ota_key_free(d->vkey);
	free(d->root_json);
	free(d);
}
