/*
 * attest/net/server.c - ota-attestd's HTTP endpoint over libmicrohttpd.
 * See include/ota/attestd.h and docs/attestation.md.
 *
 * Threads: MHD runs a pool of `threads` event loops (epoll; one per core by
 * default). A request that needs a durable write (an attestation to admit,
 * a challenge to issue) is judged on its pool thread (COSE, signature,
 * claims, challenge peek), then queued for the group committer of this
 * file and its connection suspended, so a pool thread never waits for an
 * fsync. The committer thread takes up to max_batch queued jobs, signs the
 * acceptances of the batch's admissions with one signature over a Merkle
 * tree (ota_acceptance_build_batch), runs the operations in one sqlite
 * transaction (ota_nonce_store_commit_batch) and only after COMMIT has
 * returned resumes each connection; its pool thread then renders the answer
 * (JSON, base64) and sends it: nothing is acknowledged before it is
 * durable, and the one thread every batch waits on does no more than the
 * batch itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <strings.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ota/acceptance.h"
#include "ota/attestd.h"
#include "ota/cbor.h"
#include "ota/http.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/trust.h"

/*
 * Each connection's libmicrohttpd memory pool: the request head (a longer
 * one is refused by MHD, 431), the read buffer (half the pool at first, so
 * a head and a body of a few KiB come in one recv) and the answer's head.
 * libmicrohttpd 0.9.75 zeroes the whole pool at every request of a
 * keep-alive connection (MHD_pool_reset), and every connection has its own:
 * at 16 KiB that memset, and the 8 MiB of pools of 512 connections it
 * walks, cost about 2 us of CPU per request (GET /healthz 18.4 -> 16.7 us
 * at 8 KiB, mean of 5 runs of bench_attestd).
 */
#define CONN_POOL_BYTES (8u * 1024u)
/* the largest body buffer a connection keeps between its requests */
#define SPARE_BUF_BYTES (16u * 1024u)

/* An answer: status, content type and a malloc'ed body (owned). */
typedef struct answer {
	unsigned status;
	const char *ctype;
	char *body;
	size_t len;
	const char *allow; /* the route's methods, with a 405 (RFC 9110 section 15.5.6) */
} answer;

/* READING -> QUEUED (suspended, the committer's) -> COMMITTED (its operation
 * committed or refused; resumed) or READY (answer filled without a commit)
 * -> DONE (answer queued) */
enum { RQ_READING = 0, RQ_QUEUED, RQ_COMMITTED, RQ_READY, RQ_DONE };
enum { JOB_NONE = 0, JOB_ISSUE, JOB_ADMIT, JOB_BATCH };

enum { CONN_BUSY = 0, CONN_IDLE = 1, CONN_SHED = 2 };

/*
 * One connection, as the request-deadline watchdog sees it (MHD's socket
 * context; linked under ota_attestd.wmu). MHD's own timeout is an idle
 * timeout: a client sending a byte now and then holds its connection, and
 * --max-connections of them lock every other client out for as long as
 * they keep dribbling. The watchdog shuts down (never closes: the fd is
 * MHD's) a connection whose request has not been read, or whose answer
 * not written, within request_timeout_s of since; MHD then sees the end of
 * the stream and closes it. since restarts at the connection's start, when
 * a request is complete (its answer begins), when a suspended request is
 * resumed, and when a request ends (the next one begins); a connection
 * suspended for its group commit is never shut down.
 */
typedef struct conn_watch {
	int fd;
	struct timespec since; /* CLOCK_MONOTONIC */
	bool paused;           /* suspended for the group commit */
	bool killed;           /* shut down by the watchdog */
	/* CONN_IDLE between requests (or before the first one's head is in):
	 * such a connection holds a slot doing nothing, and is the one shut
	 * down when the slots run short (watchdog_main). Claimed by compare
	 * and swap on both sides: the watchdog takes CONN_IDLE to CONN_SHED
	 * before it shuts the connection down, a request's first call takes
	 * CONN_IDLE to CONN_BUSY before it does anything, so a request is
	 * either never shed or refused before it begins (nothing consumed,
	 * no answer lost after a commit) */
	atomic_int state;
	struct conn_watch *prev, *next;
	/* the connection's last request, kept for its next one (a req is
	 * several KiB: malloc and free of it, and of its body buffer, on every
	 * request cost more than keeping one per connection); its pool
	 * thread's only, never the watchdog's */
	struct req *spare;
} conn_watch;

/*
 * One operation of a group commit: a challenge to issue (JOB_ISSUE) or an
 * attestation to admit (JOB_ADMIT), a single POST's or one item of a batch
 * POST's (application/cbor-seq).
 */
typedef struct slot {
	int job;
	ota_err pre;                 /* a batch item refused before the queue (its
	                                detail in op_err), else OTA_OK */
	ota_nonce_op op;
	ota_error op_err;            /* the detail of op.result (committer) */
	uint8_t *acc;
	size_t acc_len;
	ota_admission adm;           /* last: the largest; prepare clears it */
} slot;

typedef struct req {
	uint8_t *buf;
	size_t len, cap;
	size_t discarded;            /* of a body past the cap, bytes thrown away */
	bool too_large;
	bool counted;                /* in d->inflight until completed */
	int state;
	int job;                     /* JOB_ISSUE, JOB_ADMIT (one.job) or JOB_BATCH */
	struct MHD_Connection *conn;
	struct req *next;            /* committer queue */
	const char *method, *url;    /* MHD's, valid while the request lives */
	answer ans;                  /* rendered on resume (or by enqueue), then sent */
	/* JOB_ISSUE */
	json_t *json;                /* the parsed body; binding points into it */
	ota_nonce_binding binding;
	/* JOB_ADMIT, JOB_BATCH */
	int64_t now;
	/* JOB_BATCH: its items in the order of the body, nitems of them, nqueued
	 * of them queued (the others refused before the queue); counted in
	 * d->batch_items until completed */
	slot *items;
	size_t nitems, nqueued;
	slot one;                    /* JOB_ISSUE, JOB_ADMIT; last (its adm) */
} req;

struct ota_attestd {
	struct MHD_Daemon *mhd;
	int listen_fd;
	uint16_t port;
	ota_attestd_opts opts;
	ota_clock clock;
	ota_nonce_store *store;
	ota_trust_root *root;
	uint8_t *root_json;
	size_t root_json_len;
	ota_key *vkey;
	uint8_t vkid[32]; /* vkey's kid, judged in the root at each admission */
	char verifier_id[OTA_ATT_TEXT_MAX + 1];
	ota_acceptance_signer signer;
	ota_admission_ctx actx;
	atomic_ullong requests, challenges, accepted, refused, http_errors, too_large;
	/* the group committer */
	pthread_t committer;
	bool committer_started;
	pthread_mutex_t mu;
	pthread_cond_t work;  /* queue not empty, or stopping */
	pthread_cond_t idle;  /* queue empty and no batch running */
	req *qhead, *qtail;
	bool closing;         /* no more jobs are queued */
	bool stop;            /* the committer exits once the queue is empty */
	bool busy;            /* a batch is running */
	/* the batch: its requests, their operations (slots) and the arrays
	 * of the transaction, each of max_batch - 1 + OTA_MAX_ATTESTATION_BATCH */
	ota_nonce_op *bops;
	req **breqs;
	slot **bslots;
	ota_admission **badm;  /* the batch's admissions, its acceptances */
	uint8_t **baccs;
	size_t *bacc_lens;
	ota_error *berrs;      /* the detail of each operation of the batch */
	atomic_ullong batches, batch_ops;
	atomic_uint inflight; /* requests queued, not yet completed */
	/* items of batch requests being judged, queued or answered: at most
	 * OTA_MAX_BATCH_ITEMS_IN_FLIGHT (each holds ~7 KiB until completed) */
	atomic_uint batch_items;
	/* the request-deadline watchdog (conn_watch) */
	pthread_t watchdog;
	bool watchdog_started;
	pthread_mutex_t wmu;
	pthread_cond_t wcond;
	bool wstop;
	conn_watch *watch;
	atomic_ullong request_timeouts, idle_shed;
	atomic_ullong batch_requests; /* batch requests answered 200 */
	size_t nconn; /* connections open (under wmu) */
	uint64_t issued_since_purge; /* committer thread only */
	/* the store's gauges for GET /metrics: counted (three scans of the
	 * store) at start and then every GAUGE_PERIOD_S by the watchdog thread,
	 * never on a request's thread */
	atomic_ullong g_live, g_consumed, g_stored;
	struct timespec gauges_at; /* watchdog thread only (after start) */
};

#define GAUGE_PERIOD_S 5

static void gauges_refresh(ota_attestd *d)
{
	uint64_t live = 0, consumed = 0, stored = 0;
	if (ota_nonce_store_counts(d->store, &live, &consumed, &stored, NULL) == OTA_OK) {
		atomic_store(&d->g_live, live);
		atomic_store(&d->g_consumed, consumed);
		atomic_store(&d->g_stored, stored);
	}
	clock_gettime(CLOCK_MONOTONIC, &d->gauges_at);
}

void ota_attestd_opts_init(ota_attestd_opts *o)
{
	if (o == NULL)
		return;
	memset(o, 0, sizeof *o);
	o->bind_addr = "127.0.0.1";
	o->max_connections = OTA_MAX_HTTP_CONNECTIONS;
	o->timeout_s = OTA_HTTP_TIMEOUT_SECONDS;
	o->request_timeout_s = OTA_HTTP_REQUEST_SECONDS;
	o->max_body = OTA_MAX_HTTP_BODY_BYTES;
	o->threads = 0;
	o->max_batch = 256;
	o->max_batch_items = OTA_MAX_BATCH_ITEMS_IN_FLIGHT;
	o->sync = OTA_NONCE_SYNC_FULL;
	ota_admission_opts_init(&o->admission);
}

static int64_t now_of(const ota_attestd *d)
{
	return ota_clock_now(&d->clock);
}

/* ---- logging ---- */

static bool logging(const ota_attestd *d)
{
	return d->opts.log != NULL;
}

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

/* ---- a small JSON text builder (the hot answer is built without jansson) ---- */

typedef struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
} sbuf;

static void sb_reserve(sbuf *b, size_t n)
{
	if (b->oom || b->cap - b->len >= n)
		return;
	size_t nc = b->cap == 0 ? 1024 : b->cap;
	while (nc - b->len < n)
		nc *= 2;
	char *np = realloc(b->p, nc);
	if (np == NULL) {
		b->oom = true;
		return;
	}
	b->p = np;
	b->cap = nc;
}

static void sb_raw(sbuf *b, const char *s, size_t n)
{
	sb_reserve(b, n + 1);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_lit(sbuf *b, const char *s)
{
	sb_raw(b, s, strlen(s));
}

/* A JSON string of characters that never need escaping (base64, base64url,
 * sha256: identities): quoted as is, without sb_str's scan. */
static void sb_plain(sbuf *b, const char *s)
{
	size_t n = strlen(s);
	sb_reserve(b, n + 3);
	if (b->oom)
		return;
	b->p[b->len] = '"';
	memcpy(b->p + b->len + 1, s, n);
	b->p[b->len + 1 + n] = '"';
	b->len += n + 2;
	b->p[b->len] = '\0';
}

/* A JSON string: quotes, backslashes and control characters escaped (as
 * jansson does; UTF-8 passes through). */
static void sb_str(sbuf *b, const char *s)
{
	size_t n = strlen(s), plain = 0;
	while (plain < n && (unsigned char)s[plain] >= 0x20 && s[plain] != '"' && s[plain] != '\\')
		plain++;
	if (plain == n) { /* nothing to escape (base64, identities, most text) */
		sb_plain(b, s);
		return;
	}
	sb_reserve(b, 6 * n + 3);
	if (b->oom)
		return;
	char *w = b->p + b->len;
	*w++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\') {
			*w++ = '\\';
			*w++ = (char)ch;
		} else if (ch < 0x20) {
			static const char hex[] = "0123456789abcdef";
			const char *esc = ch == '\n' ? "\\n" : ch == '\t' ? "\\t" : ch == '\r' ? "\\r"
			                : ch == '\b' ? "\\b" : ch == '\f' ? "\\f" : NULL;
			if (esc != NULL) {
				*w++ = esc[0];
				*w++ = esc[1];
			} else {
				memcpy(w, "\\u00", 4);
				w[4] = hex[ch >> 4];
				w[5] = hex[ch & 15];
				w += 6;
			}
		} else {
			*w++ = (char)ch;
		}
	}
	*w++ = '"';
	*w = '\0';
	b->len = (size_t)(w - b->p);
}


/* A JSON string holding the base64 of in (RFC 4648 section 4, padded) or,
 * url, its base64url (section 5, unpadded): the characters
 * ota_base64_encode and ota_base64url_encode write, encoded straight into
 * the answer (no copy, no strlen). */
static void sb_b64(sbuf *b, const uint8_t *in, size_t n, bool url)
{
	static const char std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	sb_reserve(b, (n + 2) / 3 * 4 + 3);
	if (b->oom)
		return;
	const char *t = url ? safe : std;
	char *w = b->p + b->len;
	*w++ = '"';
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		w[0] = t[v >> 18];
		w[1] = t[v >> 12 & 63];
		w[2] = t[v >> 6 & 63];
		w[3] = t[v & 63];
		w += 4;
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (n - i == 2)
			v |= (uint32_t)in[i + 1] << 8;
		*w++ = t[v >> 18];
		*w++ = t[v >> 12 & 63];
		if (n - i == 2)
			*w++ = t[v >> 6 & 63];
		else if (!url)
			*w++ = '=';
		if (!url)
			*w++ = '=';
	}
	*w++ = '"';
	*w = '\0';
	b->len = (size_t)(w - b->p);
}

static void sb_int(sbuf *b, long long v)
{
	char t[32];
	int n = snprintf(t, sizeof t, "%lld", v);
	sb_raw(b, t, (size_t)n);
}

/* ---- responses ---- */

static unsigned status_for(ota_err e)
{
	switch (e) {
	case OTA_OK:
		return MHD_HTTP_OK;
	case OTA_ERR_HTTP_BODY_TOO_LARGE:
	case OTA_ERR_TOO_LARGE:
		return MHD_HTTP_CONTENT_TOO_LARGE;
	/* attestation_too_large and too_deep fall to 403: a body within the
	 * HTTP cap whose attestation payload is too large or nests too deep
	 * is a payload refusal (docs/attestation.md). A JSON request body
	 * nesting too deep is answered 400 by its route. */
	case OTA_ERR_HTTP_METHOD:
		return MHD_HTTP_METHOD_NOT_ALLOWED;
	case OTA_ERR_HTTP_NOT_FOUND:
	case OTA_ERR_NOT_FOUND:
		return MHD_HTTP_NOT_FOUND;
	case OTA_ERR_HTTP_CONTENT_TYPE:
		return MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
	case OTA_ERR_HTTP_BAD_REQUEST:
	case OTA_ERR_ATT_BATCH_MALFORMED:
	case OTA_ERR_USAGE:
	case OTA_ERR_JSON_SYNTAX:
	case OTA_ERR_JSON_DUPLICATE_KEY:
	case OTA_ERR_JSON_INVALID_UTF8:
	case OTA_ERR_JSON_NUMBER_RANGE:
	case OTA_ERR_JSON_TYPE:
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

static void answer_set(answer *a, unsigned status, const char *ctype, char *body, size_t len)
{
	a->status = status;
	a->ctype = ctype;
	a->body = body;
	a->len = len;
	a->allow = NULL;
}

/* o (consumed) as compact JSON with sorted keys and a newline. */
static void answer_json(answer *a, unsigned status, json_t *o)
{
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(o);
	if (s == NULL) {
		answer_set(a, 0, NULL, NULL, 0); /* no answer: the connection is closed */
		return;
	}
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (t == NULL) {
		free(s);
		answer_set(a, 0, NULL, NULL, 0);
		return;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	answer_set(a, status, "application/json", t, n + 1);
}

/*
 * in as valid UTF-8 in out (cap bytes, NUL-terminated, cut at a character
 * boundary): each byte that does not start a valid sequence is '?'. A
 * refusal's where and message can hold the request's own bytes (a decoded
 * path such as /%ff, a claim's name, a value cut by a %.Ns), which jansson
 * refuses to pack: the answer and its log line were then lost.
 */
static const char *utf8_safe(const char *in, char *out, size_t cap)
{
	size_t n = strlen(in), o = 0;
	for (size_t i = 0; i < n && o + 5 < cap;) {
		uint32_t cp = 0;
		size_t k = ota_utf8_next((const unsigned char *)in + i, n - i, &cp);
		if (k == 0 || cp == 0) {
			out[o++] = '?';
			i++;
			continue;
		}
		memcpy(out + o, in + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
	return out;
}

/* The error answer of e with status st. */
static void answer_error_status(ota_attestd *d, answer *a, const char *method, const char *url,
                                const ota_error *e, unsigned st)
{
	if (st >= 500)
		atomic_fetch_add(&d->http_errors, 1);
	char where[sizeof e->where + 8], what[sizeof e->what + 8], path[1024];
	utf8_safe(e->where, where, sizeof where);
	utf8_safe(e->what[0] != '\0' ? e->what : ota_err_message(e->code), what, sizeof what);
	json_t *o = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", ota_err_name(e->code), "where",
	                      where, "message", what);
	if (logging(d))
		log_json(d, json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:s}", "level",
		                      st >= 500 ? "error" : "warn", "event", "refused", "method",
		                      utf8_safe(method, path, 64), "path",
		                      utf8_safe(url, path + 64, sizeof path - 64), "status", (int)st,
		                      "code", ota_err_name(e->code), "where", where));
	answer_json(a, st, o);
}

static void answer_error(ota_attestd *d, answer *a, const char *method, const char *url,
                         const ota_error *e)
{
	answer_error_status(d, a, method, url, e, status_for(e->code));
}

static void answer_fail(ota_attestd *d, answer *a, const char *method, const char *url,
                        ota_err code, const char *where, const char *what)
{
	ota_error e;
	ota_error_clear(&e);
	ota_error_set(&e, code, where, "%s", what);
	answer_error(d, a, method, url, &e);
}

/* Queues a (its body handed over to MHD either way). */
static enum MHD_Result answer_send(struct MHD_Connection *c, answer *a)
{
	if (a->body == NULL)
		return MHD_NO;
	struct MHD_Response *r =
		MHD_create_response_from_buffer(a->len, a->body, MHD_RESPMEM_MUST_FREE);
	a->body = NULL;
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->ctype);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (a->allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, a->allow);
	enum MHD_Result ret = MHD_queue_response(c, a->status, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---- the group committer ---- */

static void finish_job(ota_attestd *d, req *r);

/*
 * Hands r (its op filled) to the committer and suspends its connection;
 * the committer commits r's operation and resumes it (its pool thread then
 * renders the answer). Called on the request's pool thread, which must not
 * touch r until then.
 */
static void enqueue(ota_attestd *d, struct MHD_Connection *c, req *r)
{
	r->conn = c;
	r->state = RQ_QUEUED;
	MHD_suspend_connection(c); /* before the committer can see r */
	pthread_mutex_lock(&d->mu);
	if (d->closing) { /* not counted: the stop does not wait for this answer */
		pthread_mutex_unlock(&d->mu);
		answer_fail(d, &r->ans, r->method, r->url, OTA_ERR_HTTP_UNAVAILABLE, "attestd",
		            "shutting down");
		r->state = RQ_READY;
		MHD_resume_connection(c);
		return;
	}
	r->counted = true;
	atomic_fetch_add(&d->inflight, 1);
	r->next = NULL;
	if (d->qtail != NULL)
		d->qtail->next = r;
	else
		d->qhead = r;
	d->qtail = r;
	pthread_cond_signal(&d->work);
	pthread_mutex_unlock(&d->mu);
}

/*
 * The acceptances of the batch's admissions: one Merkle tree over their
 * payloads and one signature over its root (ota_acceptance_build_batch),
 * then each ADMIT operation. If signing fails, those jobs carry the error
 * (op.kind 0: not part of the transaction).
 */
static void sign_batch(ota_attestd *d, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (d->bslots[i]->job == JOB_ADMIT)
			d->badm[k++] = &d->bslots[i]->adm;
	if (k == 0)
		return;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_acceptance_build_batch(&d->signer, (const ota_admission *const *)d->badm, k,
	                                        d->baccs, d->bacc_lens, &e);
	for (size_t i = 0, j = 0; i < n; i++) {
		slot *s = d->bslots[i];
		if (s->job != JOB_ADMIT)
			continue;
		if (rc != OTA_OK) {
			memset(&s->op, 0, sizeof s->op);
			s->op.result = rc;
			s->op_err = e;
			continue;
		}
		s->acc = d->baccs[j];
		s->acc_len = d->bacc_lens[j];
		j++;
		ota_admission_op(&s->adm, ota_bytes_make(s->acc, s->acc_len), &s->op);
	}
}

/* r's operations (its one, or a batch's queued items) appended to d->bslots[*m]. */
static void take_slots(ota_attestd *d, req *r, size_t *m)
{
	if (r->job != JOB_BATCH) {
		d->bslots[(*m)++] = &r->one;
		return;
	}
	for (size_t i = 0; i < r->nitems; i++)
		if (r->items[i].pre == OTA_OK)
			d->bslots[(*m)++] = &r->items[i];
}

static void *committer_main(void *arg)
{
	ota_attestd *d = arg;
	pthread_mutex_lock(&d->mu);
	for (;;) {
		while (d->qhead == NULL && !d->stop)
			pthread_cond_wait(&d->work, &d->mu);
		if (d->qhead == NULL)
			break; /* stopping, nothing left */
		/* whole requests, until max_batch operations are taken: a batch
		 * request (at most OTA_MAX_ATTESTATION_BATCH items) is never split
		 * between two transactions, so the arrays hold max_batch - 1 +
		 * OTA_MAX_ATTESTATION_BATCH */
		size_t n = 0, ns = 0;
		while (d->qhead != NULL && ns < d->opts.max_batch) {
			req *r = d->qhead;
			d->qhead = r->next;
			if (d->qhead == NULL)
				d->qtail = NULL;
			d->breqs[n++] = r;
			take_slots(d, r, &ns);
		}
		d->busy = true;
		pthread_mutex_unlock(&d->mu);

		sign_batch(d, ns);
		size_t m = 0; /* operations of this transaction */
		for (size_t i = 0; i < ns; i++)
			if (d->bslots[i]->op.kind != 0)
				d->bops[m++] = d->bslots[i]->op;
		int64_t now = now_of(d);
		if (m > 0) {
			/* on failure every op's result (and detail) carries the error */
			ota_error be_err;
			ota_error_clear(&be_err);
			for (size_t i = 0; i < m; i++)
				ota_error_clear(&d->berrs[i]);
			ota_err be = ota_nonce_store_commit_batch_errs(d->store, d->bops, m, now, d->berrs,
			                                     &be_err);
			(void)be;
			atomic_fetch_add(&d->batches, 1);
			atomic_fetch_add(&d->batch_ops, m);
		}
		for (size_t i = 0, j = 0; i < ns; i++) {
			slot *s = d->bslots[i];
			if (s->op.kind != 0) {
				s->op.result = d->bops[j].result;
				s->op.challenge = d->bops[j].challenge;
				s->op_err = d->berrs[j];
				j++;
			}
			if (s->job == JOB_ISSUE && s->op.result == OTA_OK)
				d->issued_since_purge++;
		}
		/* committed (or refused): each pool thread renders and sends its
		 * answer once resumed */
		for (size_t i = 0; i < n; i++) {
			req *r = d->breqs[i];
			r->state = RQ_COMMITTED;
			MHD_resume_connection(r->conn); /* r is the pool thread's again */
		}
		if (d->issued_since_purge >= 4096) {
			d->issued_since_purge = 0;
			uint64_t gone = 0;
			if (ota_nonce_store_purge(d->store, now, &gone, NULL) == OTA_OK && gone > 0)
				log_json(d, json_pack("{s:s, s:s, s:I}", "level", "info", "event", "purged",
				                      "count", (json_int_t)gone));
		}
		pthread_mutex_lock(&d->mu);
		d->busy = false;
		if (d->qhead == NULL)
			pthread_cond_broadcast(&d->idle);
	}
	d->busy = false;
	pthread_cond_broadcast(&d->idle);
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

/* ---- routes ---- */

/* The request's one Content-Type header is the media type want (the
 * handler has refused a request with more than one). */
static bool content_type_is(struct MHD_Connection *c, const char *want,
                            const char *const *allowed)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	/* ota_http_media_type_is (common/http.c; fuzz_media_type) */
	return ct != NULL && ota_http_media_type_is(ct, strlen(ct), want, allowed);
}

/* Parameters allowed with the endpoint's media types (docs/attestation.md). */
static const char *const json_params[] = {"charset=utf-8", NULL};
static const char *const cose_params[] = {"cose-type=cose-sign1", NULL};
static const char *const no_params[] = {NULL};

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

/* true when r was queued (the answer comes from the committer) */
static bool route_challenges(ota_attestd *d, struct MHD_Connection *c, req *r, answer *a)
{
	const char *method = r->method, *url = r->url;
	ota_error e;
	ota_error_clear(&e);
	if (!content_type_is(c, "application/json", json_params)) {
		answer_fail(d, a, method, url, OTA_ERR_HTTP_CONTENT_TYPE, "content-type",
		            "want application/json");
		return false;
	}
	if (r->len > OTA_MAX_JSON_REQUEST_BYTES) {
		answer_fail(d, a, method, url, OTA_ERR_HTTP_BODY_TOO_LARGE, "body", "JSON body too large");
		return false;
	}
	json_t *o = NULL;
	if (ota_json_parse(ota_bytes_make(r->buf, r->len), &o, &e) != OTA_OK) {
		/* not the JSON asked for (too_deep included): a malformed request */
		answer_error_status(d, a, method, url, &e, MHD_HTTP_BAD_REQUEST);
		return false;
	}
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		if (strcmp(k, "txn") != 0 && strcmp(k, "issuer") != 0 && strcmp(k, "scope") != 0 &&
		    strcmp(k, "nonce_bytes") != 0 && strcmp(k, "ttl") != 0) {
			json_decref(o);
			answer_fail(d, a, method, url, OTA_ERR_HTTP_BAD_REQUEST, "body", "unknown member");
			return false;
		}
	}
	ota_nonce_binding b = {json_str(o, "txn"), json_str(o, "issuer"), json_str(o, "scope")};
	json_t *nb = json_object_get(o, "nonce_bytes"), *tt = json_object_get(o, "ttl");
	if (b.txn == NULL || b.issuer == NULL || b.scope == NULL || (nb != NULL && !json_is_integer(nb)) ||
	    (tt != NULL && !json_is_integer(tt))) {
		json_decref(o);
		answer_fail(d, a, method, url, OTA_ERR_HTTP_BAD_REQUEST, "body",
		            "want {txn, issuer, scope: strings, nonce_bytes?, ttl?: integers}");
		return false;
	}
	/* only an absent member means the default: an explicit value
	 * (0 included) must be in the documented range */
	json_int_t nbytes = nb != NULL ? json_integer_value(nb) : 0;
	json_int_t ttl = tt != NULL ? json_integer_value(tt) : d->opts.challenge_ttl;
	if (nb != NULL && (nbytes < OTA_NONCE_MIN_BYTES || nbytes > OTA_NONCE_MAX_BYTES)) {
		json_decref(o);
		answer_fail(d, a, method, url, OTA_ERR_NONCE_LENGTH, "nonce_bytes", "16..64");
		return false;
	}
	/* the operator's --challenge-ttl is the longest a client may ask for,
	 * not only the default: a challenge outstanding longer is a longer
	 * window for its answer, and a longer-lived row in the store */
	if (tt != NULL && (ttl < 1 || ttl > d->opts.challenge_ttl)) {
		json_decref(o);
		ota_error_set(&e, OTA_ERR_NONCE_TTL, "ttl",
		              "1..%lld seconds (the endpoint's --challenge-ttl)",
		              (long long)d->opts.challenge_ttl);
		answer_error(d, a, method, url, &e);
		return false;
	}
	if (principal_is_issuer(d, b.issuer, &e) != OTA_OK) {
		json_decref(o);
		answer_error(d, a, method, url, &e);
		return false;
	}
	r->json = o; /* b points into it; released once the job is answered */
	r->binding = b;
	r->job = JOB_ISSUE;
	r->one.job = JOB_ISSUE;
	memset(&r->one.op, 0, sizeof r->one.op);
	r->one.op.kind = OTA_NONCE_OP_ISSUE;
	r->one.op.binding = &r->binding;
	r->one.op.nonce_len = (size_t)nbytes;
	r->one.op.ttl = (int64_t)ttl;
	enqueue(d, c, r);
	return true;
}

static void finish_issue(ota_attestd *d, req *r)
{
	const char *method = r->method, *url = r->url;
	answer *a = &r->ans;
	ota_err rc = r->one.op.result;
	if (rc != OTA_OK) {
		if (r->one.op_err.code == rc)
			answer_error(d, a, method, url, &r->one.op_err);
		else
			answer_fail(d, a, method, url, rc, "challenge", ota_err_message(rc));
		return;
	}
	ota_challenge *ch = &r->one.op.challenge;
	char id[OTA_ID_LEN + 1];
	char *nonce = NULL;
	if (ota_challenge_identity(ch, id) != OTA_OK ||
	    ota_base64url_encode(ota_bytes_make(ch->nonce, ch->nonce_len), &nonce) != OTA_OK) {
		answer_fail(d, a, method, url, OTA_ERR_NOMEM, "challenge", "encoding");
		return;
	}
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
	answer_json(a, MHD_HTTP_CREATED, out);
}

/*
 * Judges one attestation as of now into s (s->job JOB_ADMIT when it may be
 * queued): the admission's checks, then this endpoint's verifier key. The
 * acceptance is signed as of now and verified by ota-verify at that time:
 * the verifier key must be valid then, not only at start (a valid_until or
 * revoked_at may pass while the endpoint runs), and trusted for the
 * attestation's provider target, as ota-verify judges it (an acceptance
 * from a verifier scoped to other providers vouches for nothing).
 */
static ota_err judge(ota_attestd *d, ota_bytes cose, int64_t now, slot *s, ota_error *e)
{
	ota_err rc = ota_admission_prepare(&d->actx, cose, ota_bytes_make(NULL, 0), now, &s->adm, e);
	if (rc == OTA_OK) {
		ota_trust_scope_req scope = {NULL, NULL, s->adm.claims.provider};
		ota_error ve;
		ota_error_clear(&ve);
		rc = ota_trust_lookup(d->root, ota_bytes_make(d->vkid, sizeof d->vkid),
		                      ota_key_default_alg(d->vkey), OTA_TRUST_ROLE_VERIFIER, &scope, now,
		                      NULL, NULL, &ve);
		if (rc != OTA_OK)
			ota_error_set(e, rc, ve.where, "this endpoint's verifier key: %.300s", ve.what);
	}
	s->job = rc == OTA_OK ? JOB_ADMIT : JOB_NONE;
	return rc;
}

static bool route_batch(ota_attestd *d, struct MHD_Connection *c, req *r, answer *a);
static void finish_batch(ota_attestd *d, req *r, answer *a);

static bool route_attestations(ota_attestd *d, struct MHD_Connection *c, req *r, answer *a)
{
	const char *method = r->method, *url = r->url;
	if (content_type_is(c, "application/cbor-seq", no_params))
		return route_batch(d, c, r, a);
	if (!content_type_is(c, "application/cose", cose_params)) {
		answer_fail(d, a, method, url, OTA_ERR_HTTP_CONTENT_TYPE, "content-type",
		            "want application/cose (or application/cbor-seq, a batch)");
		return false;
	}
	ota_error e;
	ota_error_clear(&e);
	r->now = now_of(d);
	if (judge(d, ota_bytes_make(r->buf, r->len), r->now, &r->one, &e) != OTA_OK) {
		atomic_fetch_add(&d->refused, 1);
		answer_error(d, a, method, url, &e);
		return false;
	}
	/* the committer signs the acceptances of its batch (one signature)
	 * and fills the ADMIT operation */
	r->job = JOB_ADMIT;
	enqueue(d, c, r);
	return true;
}

/* Gives back r's batch items (their acceptances, the array, the count). */
static void batch_release(ota_attestd *d, req *r)
{
	if (r->items == NULL)
		return;
	for (size_t i = 0; i < r->nitems; i++)
		free(r->items[i].acc);
	free(r->items);
	atomic_fetch_sub(&d->batch_items, (unsigned)r->nitems);
	r->items = NULL;
	r->nitems = r->nqueued = 0;
}

/*
 * POST /v1/attestations with Content-Type application/cbor-seq (RFC 8742):
 * 1..OTA_MAX_ATTESTATION_BATCH attestations, each a whole COSE_Sign1 as the
 * single route takes it, one after the other. Each is judged on its own
 * (a refused item does not stop the others) and the admitted ones are
 * queued together: they commit in one transaction, in the body's order (a
 * later item may name an earlier one as its prior). The answer, once that
 * transaction has committed, is 200 with one result per item, in order
 * (finish_batch). Framing that cannot be split into items, an empty body
 * and too many items refuse the whole request, before anything is judged.
 */
static bool route_batch(ota_attestd *d, struct MHD_Connection *c, req *r, answer *a)
{
	const char *method = r->method, *url = r->url;
	ota_bytes part[OTA_MAX_ATTESTATION_BATCH];
	size_t n = 0, bad_at = 0;
	ota_error e;
	ota_error_clear(&e);
	/* this only frames the items; the COSE decoder judges each strictly */
	ota_err rc = ota_cbor_seq_split(ota_bytes_make(r->buf, r->len), OTA_MAX_COSE_DEPTH + 4, part,
	                                OTA_MAX_ATTESTATION_BATCH, &n, &bad_at);
	if (rc == OTA_ERR_TOO_LARGE)
		ota_error_set(&e, rc, "batch", "more than %u attestations in one batch",
		              OTA_MAX_ATTESTATION_BATCH);
	else if (rc != OTA_OK)
		ota_error_set(&e, rc, "batch", "item %zu at byte %zu is not one whole CBOR item", n,
		              bad_at);
	else if (n == 0)
		ota_error_set(&e, OTA_ERR_ATT_BATCH_MALFORMED, "batch", "an empty batch");
	if (e.code != OTA_OK) {
		answer_error(d, a, method, url, &e);
		return false;
	}
	unsigned held = atomic_fetch_add(&d->batch_items, (unsigned)n);
	if (held + n > d->opts.max_batch_items) {
		atomic_fetch_sub(&d->batch_items, (unsigned)n);
		answer_fail(d, a, method, url, OTA_ERR_HTTP_UNAVAILABLE, "batch",
		            "too many batch items in flight; retry");
		return false;
	}
	r->items = malloc(n * sizeof *r->items);
	if (r->items == NULL) {
		atomic_fetch_sub(&d->batch_items, (unsigned)n);
		answer_fail(d, a, method, url, OTA_ERR_NOMEM, "batch", "items");
		return false;
	}
	r->nitems = n;
	r->nqueued = 0;
	r->now = now_of(d);
	for (size_t i = 0; i < n; i++) {
		slot *s = &r->items[i];
		memset(s, 0, offsetof(slot, adm));
		ota_error_clear(&s->op_err);
		s->pre = judge(d, part[i], r->now, s, &s->op_err);
		if (s->pre == OTA_OK)
			r->nqueued++;
		else
			atomic_fetch_add(&d->refused, 1);
	}
	r->job = JOB_BATCH;
	if (r->nqueued == 0) { /* nothing to commit: answered now */
		finish_batch(d, r, a);
		return false;
	}
	enqueue(d, c, r);
	return true;
}

/* The 201 answer's object of an admitted attestation into b, keys in
 * sorted order (as jansson's JSON_SORT_KEYS would write them). */
static void render_accepted(ota_attestd *d, sbuf *b, const slot *s, int64_t now)
{
	const ota_admission *ad = &s->adm;
	const ota_challenge *ch = &ad->challenge;
	sb_lit(b, "{\"acceptance\":");
	sb_b64(b, s->acc, s->acc_len, false);
	sb_lit(b, ",\"accepted_at\":");
	sb_int(b, (long long)now);
	sb_lit(b, ",\"attestation\":");
	sb_plain(b, ad->record_id);
	sb_lit(b, ",\"boundary\":");
	sb_str(b, ad->claims.boundary);
	sb_lit(b, ",\"challenge\":");
	sb_plain(b, ad->challenge_id);
	sb_lit(b, ",\"challenge_record\":");
	/* the challenge object in its JCS form (RFC 8785: sorted keys, no
	 * spaces, integers, strings escaped as sb_str does), the bytes its
	 * identity hashes (ota_challenge_jcs writes the same) */
	sb_lit(b, "{\"epoch\":");
	sb_int(b, (long long)ch->epoch);
	sb_lit(b, ",\"expires_at\":");
	sb_int(b, (long long)ch->expires_at);
	sb_lit(b, ",\"issued_at\":");
	sb_int(b, (long long)ch->issued_at);
	sb_lit(b, ",\"issuer\":");
	sb_str(b, ch->issuer);
	sb_lit(b, ",\"kind\":\"ota.challenge/v1\",\"nonce\":");
	sb_b64(b, ch->nonce, ch->nonce_len, true);
	sb_lit(b, ",\"scope\":");
	sb_str(b, ch->scope);
	sb_lit(b, ",\"txn\":");
	sb_str(b, ch->txn);
	sb_lit(b, "}");
	sb_lit(b, ",\"issuer\":");
	sb_str(b, ad->issuer_principal);
	sb_lit(b, ",\"ok\":true,\"prior\":");
	if (ad->claims.has_prior)
		sb_str(b, ad->claims.prior);
	else
		sb_lit(b, "null");
	sb_lit(b, ",\"result\":\"accepted\",\"txn\":");
	sb_str(b, ad->claims.txn);
	sb_lit(b, "}");
	atomic_fetch_add(&d->accepted, 1);
	if (d->opts.log_requests)
		log_json(d, json_pack("{s:s, s:s, s:s, s:s, s:s}", "level", "info", "event", "accepted",
		                      "attestation", ad->record_id, "txn", ad->claims.txn, "issuer",
		                      ad->issuer_principal));
}

/* The refusal of a committed slot: the store's (or the signer's) detail,
 * e.g. where "eat_nonce", "consumed at ..."; a generic one only if none
 * came back. */
static void slot_refusal(const slot *s, ota_error *e)
{
	ota_err rc = s->op.result;
	ota_error_clear(e);
	if (s->op_err.code == rc)
		*e = s->op_err;
	else
		ota_error_set(e, rc, "admission", "%s", ota_err_message(rc));
}

/* The 201 answer of an admitted attestation (or its refusal). */
static void finish_admit(ota_attestd *d, req *r)
{
	const char *method = r->method, *url = r->url;
	answer *a = &r->ans;
	const slot *s = &r->one;
	if (s->op.result != OTA_OK) {
		ota_error e;
		slot_refusal(s, &e);
		atomic_fetch_add(&d->refused, 1);
		answer_error(d, a, method, url, &e);
		return;
	}
	/* one allocation: the acceptance's base64 and the rest (each text
	 * member is at most OTA_ATT_TEXT_MAX bytes; sb_str grows the buffer
	 * for one that must be escaped) */
	sbuf b = {NULL, 0, 0, false};
	sb_reserve(&b, (s->acc_len + 2) / 3 * 4 + 2048);
	render_accepted(d, &b, s, r->now);
	sb_lit(&b, "\n");
	if (b.oom) {
		free(b.p);
		answer_fail(d, a, method, url, OTA_ERR_NOMEM, "acceptance", "answer");
		return;
	}
	answer_set(a, MHD_HTTP_CREATED, "application/json", b.p, b.len);
}

/*
 * The 200 answer of a batch request:
 *   {"accepted":K,"ok":true,"refused":R,"results":[...]}
 * results in the order of the body, each the single route's answer object
 * for that attestation: an accepted one's 201 object, or a refusal's
 * {"code","message","ok":false,"status","where"} with the status the
 * single route would have answered. "ok" is true when the request was
 * read and judged; each item says its own result.
 */
static void finish_batch(ota_attestd *d, req *r, answer *a)
{
	const char *method = r->method, *url = r->url;
	size_t acc_bytes = 0, k = 0;
	for (size_t i = 0; i < r->nitems; i++) {
		acc_bytes += (r->items[i].acc_len + 2) / 3 * 4 + 2048;
		k += r->items[i].pre == OTA_OK && r->items[i].op.result == OTA_OK;
	}
	sbuf b = {NULL, 0, 0, false};
	sb_reserve(&b, acc_bytes + 128);
	sb_lit(&b, "{\"accepted\":");
	sb_int(&b, (long long)k);
	sb_lit(&b, ",\"ok\":true,\"refused\":");
	sb_int(&b, (long long)(r->nitems - k));
	sb_lit(&b, ",\"results\":[");
	for (size_t i = 0; i < r->nitems; i++) {
		const slot *s = &r->items[i];
		if (i > 0)
			sb_lit(&b, ",");
		if (s->pre == OTA_OK && s->op.result == OTA_OK) {
			render_accepted(d, &b, s, r->now);
			continue;
		}
		ota_error e;
		if (s->pre != OTA_OK) {
			e = s->op_err;
		} else {
			slot_refusal(s, &e);
			atomic_fetch_add(&d->refused, 1);
		}
		unsigned st = status_for(e.code);
		char where[sizeof e.where + 8], what[sizeof e.what + 8];
		utf8_safe(e.where, where, sizeof where);
		utf8_safe(e.what[0] != '\0' ? e.what : ota_err_message(e.code), what, sizeof what);
		sb_lit(&b, "{\"code\":");
		sb_str(&b, ota_err_name(e.code));
		sb_lit(&b, ",\"message\":");
		sb_str(&b, what);
		sb_lit(&b, ",\"ok\":false,\"status\":");
		sb_int(&b, (long long)st);
		sb_lit(&b, ",\"where\":");
		sb_str(&b, where);
		sb_lit(&b, "}");
		if (logging(d))
			log_json(d, json_pack("{s:s, s:s, s:s, s:I, s:i, s:s, s:s}", "level",
			                      st >= 500 ? "error" : "warn", "event", "refused", "path",
			                      "/v1/attestations (batch)", "item", (json_int_t)i, "status",
			                      (int)st, "code", ota_err_name(e.code), "where", where));
	}
	sb_lit(&b, "]}\n");
	if (b.oom) {
		free(b.p);
		answer_fail(d, a, method, url, OTA_ERR_NOMEM, "batch", "answer");
		return;
	}
	atomic_fetch_add(&d->batch_requests, 1);
	answer_set(a, MHD_HTTP_OK, "application/json", b.p, b.len);
}

/* Renders the answer of r's committed (or refused) job, on its pool thread. */
static void finish_job(ota_attestd *d, req *r)
{
	if (r->job == JOB_ISSUE)
		finish_issue(d, r);
	else if (r->job == JOB_BATCH)
		finish_batch(d, r, &r->ans);
	else
		finish_admit(d, r);
	json_decref(r->json);
	r->json = NULL;
}

/* The lane of GET /v1/acceptances/<id>?txn=T&boundary=B: each exactly
 * once, nothing else, 1..OTA_ATT_TEXT_MAX bytes without NUL (what an
 * attestation's txn and boundary claims may hold). */
typedef struct {
	const char *txn, *boundary;
	int ntxn, nboundary, other;
} lane_query;

static enum MHD_Result lane_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                size_t key_len, const char *value, size_t value_len)
{
	(void)kind;
	lane_query *q = cls;
	bool ok = value != NULL && value_len > 0 && value_len <= OTA_ATT_TEXT_MAX &&
	          strlen(value) == value_len && strlen(key) == key_len;
	if (ok && strcmp(key, "txn") == 0) {
		q->txn = value;
		q->ntxn++;
	} else if (ok && strcmp(key, "boundary") == 0) {
		q->boundary = value;
		q->nboundary++;
	} else {
		q->other++;
	}
	return MHD_YES;
}

static void route_acceptance(ota_attestd *d, struct MHD_Connection *c, answer *a,
                             const char *method, const char *url, const char *id)
{
	ota_error e;
	ota_error_clear(&e);
	lane_query q = {0};
	(void)MHD_get_connection_values_n(c, MHD_GET_ARGUMENT_KIND, lane_arg, &q);
	/* a malformed request: 400 (403 is for refused attestations) */
	if (!ota_id_is_valid(id)) {
		ota_error_set(&e, OTA_ERR_ID_MALFORMED, "id", "want sha256:<64 hex>");
		answer_error_status(d, a, method, url, &e, MHD_HTTP_BAD_REQUEST);
		return;
	}
	if (q.ntxn != 1 || q.nboundary != 1 || q.other != 0) {
		ota_error_set(&e, OTA_ERR_HTTP_BAD_REQUEST, "query",
		              "want ?txn=T&boundary=B, each once, 1..%u bytes, nothing else",
		              (unsigned)OTA_ATT_TEXT_MAX);
		answer_error_status(d, a, method, url, &e, MHD_HTTP_BAD_REQUEST);
		return;
	}
	uint8_t *acc = NULL;
	size_t acc_len = 0;
	if (ota_nonce_store_acceptance_get(d->store, q.txn, q.boundary, id, NULL, NULL, &acc,
	                                   &acc_len, &e) != OTA_OK) {
		answer_error(d, a, method, url, &e);
		return;
	}
	char *b64 = NULL;
	ota_err rc = ota_base64_encode(ota_bytes_make(acc, acc_len), &b64);
	free(acc);
	if (rc != OTA_OK) {
		answer_fail(d, a, method, url, OTA_ERR_NOMEM, "acceptance", "encoding");
		return;
	}
	json_t *out = json_pack("{s:b, s:s, s:s}", "ok", 1, "attestation", id, "acceptance", b64);
	free(b64);
	answer_json(a, MHD_HTTP_OK, out);
}

static void route_metrics(ota_attestd *d, answer *a)
{
	uint64_t live = atomic_load(&d->g_live), consumed = atomic_load(&d->g_consumed),
		 stored = atomic_load(&d->g_stored), batches = 0, ops = 0;
	batches = atomic_load(&d->batches);
	ops = atomic_load(&d->batch_ops);
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (f == NULL) {
		answer_set(a, 0, NULL, NULL, 0);
		return;
	}
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
		{"ota_attestd_request_timeouts_total", "counter",
		 "connections shut down past the request deadline (http_request_timeout)",
		 atomic_load(&d->request_timeouts)},
		{"ota_attestd_idle_connections_shed_total", "counter",
		 "keep-alive connections idle between requests shut down while the slots ran short",
		 atomic_load(&d->idle_shed)},
		{"ota_attestd_attestation_batches_total", "counter",
		 "batch requests (application/cbor-seq) answered with one result per item",
		 atomic_load(&d->batch_requests)},
		{"ota_attestd_batch_items_in_flight", "gauge",
		 "attestations of batch requests held now (capped by --max-batch-items)",
		 (unsigned long long)atomic_load(&d->batch_items)},
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
		answer_set(a, 0, NULL, NULL, 0);
		return;
	}
	answer_set(a, MHD_HTTP_OK, "text/plain; version=0.0.4", s, n);
}

static void answer_method(ota_attestd *d, answer *a, const char *method, const char *url,
                          const char *allow);

/* Fills *a, or queues r and returns true (the committer answers). */
static bool dispatch(ota_attestd *d, struct MHD_Connection *c, req *r, answer *a)
{
	const char *url = r->url, *method = r->method;
	/* HEAD is GET without the body (MHD sends the head only) */
	bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0,
	     post = strcmp(method, "POST") == 0;
	if (r->too_large) {
		atomic_fetch_add(&d->too_large, 1);
		answer_fail(d, a, method, url, OTA_ERR_HTTP_BODY_TOO_LARGE, "body", "request body too large");
		return false;
	}
	if (strcmp(url, "/v1/attestations") == 0) {
		if (!post) {
			answer_method(d, a, method, url, "POST");
			return false;
		}
		return route_attestations(d, c, r, a);
	}
	if (strcmp(url, "/v1/challenges") == 0) {
		if (!post) {
			answer_method(d, a, method, url, "POST");
			return false;
		}
		return route_challenges(d, c, r, a);
	}
	if (strcmp(url, "/healthz") == 0) {
		if (!get)
			answer_method(d, a, method, url, "GET, HEAD");
		else
			answer_json(a, MHD_HTTP_OK,
			            json_pack("{s:b, s:I, s:s}", "ok", 1, "epoch",
			                      (json_int_t)ota_nonce_store_epoch(d->store), "version",
			                      ota_version()));
		return false;
	}
	if (strcmp(url, "/metrics") == 0) {
		if (!get)
			answer_method(d, a, method, url, "GET, HEAD");
		else
			route_metrics(d, a);
		return false;
	}
	if (strcmp(url, "/v1/trust-root") == 0) {
		if (!get) {
			answer_method(d, a, method, url, "GET, HEAD");
			return false;
		}
		char *copy = malloc(d->root_json_len + 1);
		if (copy != NULL)
			memcpy(copy, d->root_json, d->root_json_len);
		answer_set(a, MHD_HTTP_OK, "application/json", copy, d->root_json_len);
		return false;
	}
	if (strncmp(url, "/v1/acceptances/", 16) == 0) {
		if (!get)
			answer_method(d, a, method, url, "GET, HEAD");
		else
			route_acceptance(d, c, a, method, url, url + 16);
		return false;
	}
	answer_fail(d, a, method, url, OTA_ERR_HTTP_NOT_FOUND, url, "no such route");
	return false;
}

/* 405 http_method_not_allowed of a route that takes only allow. */
static void answer_method(ota_attestd *d, answer *a, const char *method, const char *url,
                          const char *allow)
{
	answer_fail(d, a, method, url, OTA_ERR_HTTP_METHOD, url,
	            strcmp(allow, "POST") == 0 ? "POST only" : "GET or HEAD only");
	a->allow = allow;
}

/* RFC 9110 section 5.6.2: a field name is a token. */
static bool is_token(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		      (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL)))
			return false;
	}
	return true;
}

/* What the handler judges of a request's header fields, in one walk: a
 * name that is not a token, and how many times each singleton field comes
 * (MHD keeps each one; its lookup answers the first only). */
typedef struct header_scan {
	bool bad_name;
	unsigned host, content_length, content_type, transfer_encoding;
} header_scan;

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
	header_scan *h = cls;
	(void)kind;
	(void)value;
	(void)value_size;
	if (key == NULL || !is_token(key, key_size)) {
		h->bad_name = true;
		return MHD_YES;
	}
	/* MHD's names are NUL-terminated; the length picks the candidate */
	switch (key_size) {
	case sizeof MHD_HTTP_HEADER_HOST - 1:
		h->host += strcasecmp(key, MHD_HTTP_HEADER_HOST) == 0;
		break;
	case sizeof MHD_HTTP_HEADER_CONTENT_LENGTH - 1:
		h->content_length += strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0;
		break;
	case sizeof MHD_HTTP_HEADER_CONTENT_TYPE - 1:
		h->content_type += strcasecmp(key, MHD_HTTP_HEADER_CONTENT_TYPE) == 0;
		break;
	case sizeof MHD_HTTP_HEADER_TRANSFER_ENCODING - 1:
		h->transfer_encoding += strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0;
		break;
	default:
		break;
	}
	return MHD_YES;
}

/* ---- the request deadline (conn_watch) ---- */

static conn_watch *watch_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci != NULL ? ci->socket_context : NULL;
}

/* The connection's deadline starts again (paused: suspended, none). Returns
 * false when the watchdog has already shut the connection down. */
static bool watch_restart(ota_attestd *d, struct MHD_Connection *c, bool paused)
{
	conn_watch *w = watch_of(c);
	if (w == NULL)
		return true;
	pthread_mutex_lock(&d->wmu);
	bool alive = !w->killed;
	w->paused = paused;
	clock_gettime(CLOCK_MONOTONIC, &w->since);
	pthread_mutex_unlock(&d->wmu);
	return alive;
}

static void *watchdog_main(void *arg)
{
	ota_attestd *d = arg;
	pthread_mutex_lock(&d->wmu);
	while (!d->wstop) {
		struct timespec wake;
		clock_gettime(CLOCK_REALTIME, &wake);
		wake.tv_nsec += 250 * 1000000L;
		if (wake.tv_nsec >= 1000000000L) {
			wake.tv_sec++;
			wake.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&d->wcond, &d->wmu, &wake);
		if (d->wstop)
			break;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		unsigned shut = 0, shed = 0;
		/* the slots running short (7/8 taken): a connection idle between
		 * requests for a second gives its slot up, so that keep-alive
		 * clients each sending a request now and then cannot hold every
		 * slot past any deadline (each request restarts it) */
		bool short_of_slots = d->nconn >= (size_t)d->opts.max_connections -
		                                      (size_t)d->opts.max_connections / 8;
		for (conn_watch *w = d->watch; w != NULL; w = w->next) {
			if (w->paused || w->killed)
				continue;
			int64_t ms = ((int64_t)now.tv_sec - (int64_t)w->since.tv_sec) * 1000 +
			             ((int64_t)now.tv_nsec - (int64_t)w->since.tv_nsec) / 1000000;
			int idle = CONN_IDLE;
			if (short_of_slots && ms >= 1000 &&
			    atomic_compare_exchange_strong(&w->state, &idle, CONN_SHED)) {
				shutdown(w->fd, SHUT_RDWR);
				w->killed = true;
				shed++;
				continue;
			}
			if (ms < (int64_t)d->opts.request_timeout_s * 1000)
				continue;
			/* under wmu: MHD reports the connection closed (and
			 * unlinks w) before it closes fd, so fd is still this
			 * connection's */
			shutdown(w->fd, SHUT_RDWR);
			w->killed = true;
			shut++;
		}
		if (shed > 0) {
			atomic_fetch_add(&d->idle_shed, shed);
			pthread_mutex_unlock(&d->wmu);
			log_json(d, json_pack("{s:s, s:s, s:i}", "level", "warn", "event", "idle_shed",
			                      "connections", (int)shed));
			pthread_mutex_lock(&d->wmu);
		}
		if (shut > 0) {
			atomic_fetch_add(&d->request_timeouts, shut);
			pthread_mutex_unlock(&d->wmu);
			log_json(d, json_pack("{s:s, s:s, s:s, s:i, s:i}", "level", "warn", "event",
			                      "request_timeout", "code",
			                      ota_err_name(OTA_ERR_HTTP_REQUEST_TIMEOUT), "connections",
			                      (int)shut, "deadline_s", (int)d->opts.request_timeout_s));
			pthread_mutex_lock(&d->wmu);
		}
		if (now.tv_sec - d->gauges_at.tv_sec >= GAUGE_PERIOD_S) {
			/* a count scans the store (0.2 s at a million rows): not
			 * under wmu, which every connection's start and end take */
			pthread_mutex_unlock(&d->wmu);
			gauges_refresh(d);
			pthread_mutex_lock(&d->wmu);
		}
	}
	pthread_mutex_unlock(&d->wmu);
	return NULL;
}

/* Answers r now, before reading its body (MHD closes the connection after
 * this response). */
static enum MHD_Result refuse_early(ota_attestd *d, struct MHD_Connection *c, req *r,
                                    ota_err code, const char *where, const char *what)
{
	r->too_large = code == OTA_ERR_HTTP_BODY_TOO_LARGE;
	r->state = RQ_DONE;
	atomic_fetch_add(&d->requests, 1);
	if (r->too_large)
		atomic_fetch_add(&d->too_large, 1);
	answer a = {0, NULL, NULL, 0, NULL};
	answer_fail(d, &a, r->method, r->url, code, where, what);
	return answer_send(c, &a);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
	ota_attestd *d = cls;
	req *r = *con_cls;
	if (r == NULL) {
		/* the connection's spare, its body buffer kept; adm (most of the
		 * struct) is cleared by ota_admission_prepare */
		conn_watch *w = watch_of(c);
		uint8_t *buf = NULL;
		size_t cap = 0;
		int idle = CONN_IDLE;
		if (w != NULL && !atomic_compare_exchange_strong(&w->state, &idle, CONN_BUSY) &&
		    idle == CONN_SHED)
			return MHD_NO; /* shed before this request began: nothing done */
		if (w != NULL && w->spare != NULL) {
			r = w->spare;
			w->spare = NULL;
			buf = r->buf;
			cap = r->cap;
		} else if ((r = malloc(sizeof *r)) == NULL) {
			return MHD_NO;
		}
		memset(r, 0, offsetof(req, one.adm));
		r->buf = buf;
		r->cap = cap;
		r->method = method;
		r->url = url;
		*con_cls = r;
		/* Content-Length and Content-Type are singletons: with two, MHD
		 * and a proxy in front may each take another one */
		/* a field name with whitespace before its colon ("Content-Length :
		 * 5") is not the field to MHD but may be to a proxy that trims it:
		 * the request would be framed twice (RFC 9112 section 5.1: 400) */
		header_scan h = {false, 0, 0, 0, 0};
		MHD_get_connection_values_n(c, MHD_HEADER_KIND, scan_header, &h);
		if (h.bad_name)
			return refuse_early(d, c, r, OTA_ERR_HTTP_BAD_REQUEST, "header",
			                    "a field name that is not a token");
		/* RFC 9112 section 3.2: an HTTP/1.1 request without Host, or any
		 * with two, is 400 (a proxy or cache in front may key on either) */
		if (h.host > 1 || (h.host == 0 && strcmp(version, MHD_HTTP_VERSION_1_1) == 0))
			return refuse_early(d, c, r, OTA_ERR_HTTP_BAD_REQUEST, "host",
			                    h.host > 1 ? "more than one Host header"
			                               : "an HTTP/1.1 request without Host");
		if (h.content_length > 1)
			return refuse_early(d, c, r, OTA_ERR_HTTP_BAD_REQUEST, "content-length",
			                    "more than one Content-Length header");
		if (h.content_type > 1)
			return refuse_early(d, c, r, OTA_ERR_HTTP_CONTENT_TYPE, "content-type",
			                    "more than one Content-Type header");
		/* a body framed twice (chunked and a length) is how requests are
		 * smuggled past a proxy that reads the other framing: refused */
		if (h.transfer_encoding > 1 || (h.transfer_encoding > 0 && h.content_length > 0))
			return refuse_early(d, c, r, OTA_ERR_HTTP_BAD_REQUEST, "transfer-encoding",
			                    "Transfer-Encoding with Content-Length, or twice");
		/* MHD reads a body as chunked only when the coding is exactly
		 * "chunked"; any other (identity, "gzip, chunked") left it waiting
		 * for the peer's close with no length: RFC 9112 section 6.1 says 400 */
		const char *te = h.transfer_encoding == 0
		                     ? NULL
		                     : MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		                                                   MHD_HTTP_HEADER_TRANSFER_ENCODING);
		if (te != NULL && strcasecmp(te, "chunked") != 0)
			return refuse_early(d, c, r, OTA_ERR_HTTP_BAD_REQUEST, "transfer-encoding",
			                    "a transfer coding other than chunked");
		const char *cl = h.content_length == 0
		                     ? NULL
		                     : MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		                                                   MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl != NULL) {
			char *end = NULL;
			unsigned long long v = strtoull(cl, &end, 10);
			if (end == cl || *end != '\0' || v > d->opts.max_body)
				return refuse_early(d, c, r, OTA_ERR_HTTP_BODY_TOO_LARGE, "body",
				                    "declared Content-Length over the cap");
		}
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (r->too_large) {
			/* a chunked body (no length announced) past the cap is
			 * discarded as it arrives, for one more cap's worth, so that a
			 * client that overshot gets its 413; beyond that the connection
			 * is closed, unanswered, rather than read to the end of an
			 * endless body or to the request deadline */
			if (n > d->opts.max_body - r->discarded) {
				log_json(d, json_pack("{s:s, s:s, s:s, s:s, s:I}", "level", "warn", "event",
				                      "body_cut", "code",
				                      ota_err_name(OTA_ERR_HTTP_BODY_TOO_LARGE), "path", r->url,
				                      "discarded", (json_int_t)r->discarded));
				atomic_fetch_add(&d->requests, 1);
				atomic_fetch_add(&d->too_large, 1);
				return MHD_NO;
			}
			r->discarded += n;
			return MHD_YES;
		}
		if (r->state != RQ_READING)
			return MHD_YES;
		if (n > d->opts.max_body - r->len) {
			r->too_large = true;
			r->discarded = n;
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
	switch (r->state) {
	case RQ_READING:
		break;
	case RQ_COMMITTED: /* resumed by the committer: its COMMIT has returned */
		finish_job(d, r);
		r->state = RQ_DONE;
		(void)watch_restart(d, c, false); /* the answer's own deadline */
		return answer_send(c, &r->ans);
	case RQ_READY: /* answered without a commit (shutting down) */
		r->state = RQ_DONE;
		(void)watch_restart(d, c, false);
		return answer_send(c, &r->ans);
	default:
		return MHD_YES;
	}
	/* the request is read: paused while it is judged (and, queued, while
	 * its group commit runs); a connection the watchdog has shut down is
	 * not judged, so nothing is admitted whose answer cannot be sent */
	if (!watch_restart(d, c, true)) {
		r->state = RQ_DONE;
		return MHD_NO;
	}
	atomic_fetch_add(&d->requests, 1);
	answer a = {0, NULL, NULL, 0, NULL};
	if (dispatch(d, c, r, &a))
		return MHD_YES; /* suspended; r belongs to the committer until resumed */
	r->state = RQ_DONE;
	(void)watch_restart(d, c, false);
	return answer_send(c, &a);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
	ota_attestd *d = cls;
	(void)toe;
	req *r = *con_cls;
	conn_watch *w = c != NULL ? watch_of(c) : NULL;
	if (c != NULL)
		(void)watch_restart(d, c, false); /* the next request's deadline */
	int busy = CONN_BUSY;
	if (w != NULL)
		(void)atomic_compare_exchange_strong(&w->state, &busy, CONN_IDLE);
	if (r != NULL) {
		if (r->counted)
			atomic_fetch_sub(&d->inflight, 1);
		free(r->ans.body);
		json_decref(r->json);
		free(r->one.acc);
		r->ans.body = NULL;
		r->json = NULL;
		r->one.acc = NULL;
		batch_release(d, r);
		/* kept for the connection's next request, with a body buffer of
		 * at most SPARE_BUF_BYTES (a larger one is given back) */
		if (r->cap > SPARE_BUF_BYTES) {
			free(r->buf);
			r->buf = NULL;
			r->cap = 0;
		}
		if (w != NULL && w->spare == NULL) {
			w->spare = r;
		} else {
			free(r->buf);
			free(r);
		}
		*con_cls = NULL;
	}
}

static void spare_free(conn_watch *w)
{
	if (w->spare != NULL) {
		free(w->spare->buf);
		free(w->spare);
		w->spare = NULL;
	}
}

/* Answers go out without waiting for the peer's delayed ACK of an
 * earlier segment (MHD may write the head and the body separately). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	ota_attestd *d = cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		conn_watch *w = *socket_context;
		if (w == NULL)
			return;
		pthread_mutex_lock(&d->wmu);
		if (w->prev != NULL)
			w->prev->next = w->next;
		else
			d->watch = w->next;
		if (w->next != NULL)
			w->next->prev = w->prev;
		d->nconn--;
		pthread_mutex_unlock(&d->wmu);
		spare_free(w);
		free(w);
		*socket_context = NULL;
		return;
	}
	if (toe != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci == NULL)
		return;
	int one = 1;
	setsockopt(ci->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	/* without a watch (out of memory) the connection has only the idle
	 * timeout */
	conn_watch *w = calloc(1, sizeof *w);
	if (w == NULL)
		return;
	w->fd = ci->connect_fd;
	clock_gettime(CLOCK_MONOTONIC, &w->since);
	atomic_init(&w->state, CONN_IDLE);
	pthread_mutex_lock(&d->wmu);
	d->nconn++;
	w->next = d->watch;
	if (d->watch != NULL)
		d->watch->prev = w;
	d->watch = w;
	pthread_mutex_unlock(&d->wmu);
	*socket_context = w;
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
	uint8_t *kid = d->vkid;
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
	/* refused at start, not on every request: the store issues no
	 * challenge living longer than OTA_NONCE_MAX_TTL, and admission takes
	 * no skew wider than ota-verify archive's */
	if (o->challenge_ttl < 0 || o->challenge_ttl > OTA_NONCE_MAX_TTL)
		return ota_error_set(err, OTA_ERR_USAGE, "challenge_ttl",
		                     "%lld s; 1 to %d (0: the default)", (long long)o->challenge_ttl,
		                     OTA_NONCE_MAX_TTL);
	if (o->admission.max_skew < 0 || o->admission.max_skew > OTA_ATT_MAX_SKEW)
		return ota_error_set(err, OTA_ERR_USAGE, "max_skew", "%lld s; 0 to %d",
		                     (long long)o->admission.max_skew, OTA_ATT_MAX_SKEW);
	ota_attestd *d = calloc(1, sizeof *d);
	if (d == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "attestd", "daemon");
	d->listen_fd = -1;
	d->opts = *o;
	if (d->opts.challenge_ttl == 0)
		d->opts.challenge_ttl = OTA_NONCE_DEFAULT_TTL;
	if (d->opts.bind_addr == NULL)
		d->opts.bind_addr = "127.0.0.1";
	if (d->opts.max_connections == 0)
		d->opts.max_connections = OTA_MAX_HTTP_CONNECTIONS;
	if (d->opts.timeout_s == 0)
		d->opts.timeout_s = OTA_HTTP_TIMEOUT_SECONDS;
	if (d->opts.request_timeout_s == 0)
		d->opts.request_timeout_s = OTA_HTTP_REQUEST_SECONDS;
	if (d->opts.max_body == 0 || d->opts.max_body > OTA_MAX_HTTP_BODY_BYTES)
		d->opts.max_body = OTA_MAX_HTTP_BODY_BYTES;
	if (d->opts.threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		d->opts.threads = n > 0 ? (unsigned)n : 1;
	}
	if (d->opts.threads > 64)
		d->opts.threads = 64;
	if (d->opts.max_batch == 0)
		d->opts.max_batch = 256;
	if (d->opts.max_batch_items == 0 || d->opts.max_batch_items > OTA_MAX_BATCH_ITEMS_IN_FLIGHT)
		d->opts.max_batch_items = OTA_MAX_BATCH_ITEMS_IN_FLIGHT;
	/* a batch request is never split: a transaction holds up to
	 * max_batch - 1 + OTA_MAX_ATTESTATION_BATCH operations */
	if (d->opts.max_batch > OTA_NONCE_MAX_BATCH + 1 - OTA_MAX_ATTESTATION_BATCH)
		d->opts.max_batch = OTA_NONCE_MAX_BATCH + 1 - OTA_MAX_ATTESTATION_BATCH;
	if (d->opts.admission.max_age == 0 && d->opts.admission.max_lifetime == 0)
		ota_admission_opts_init(&d->opts.admission);
	d->clock = o->clock != NULL ? *o->clock : ota_clock_system();
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->work, NULL);
	pthread_cond_init(&d->idle, NULL);
	pthread_mutex_init(&d->wmu, NULL);
	pthread_cond_init(&d->wcond, NULL);
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
	size_t bmax = d->opts.max_batch - 1 + OTA_MAX_ATTESTATION_BATCH;
	d->bops = calloc(bmax, sizeof *d->bops);
	d->breqs = calloc(bmax, sizeof *d->breqs);
	d->bslots = calloc(bmax, sizeof *d->bslots);
	d->badm = calloc(bmax, sizeof *d->badm);
	d->baccs = calloc(bmax, sizeof *d->baccs);
	d->bacc_lens = calloc(bmax, sizeof *d->bacc_lens);
	d->berrs = calloc(bmax, sizeof *d->berrs);
	if (d->bops == NULL || d->breqs == NULL || d->bslots == NULL || d->badm == NULL ||
	    d->baccs == NULL || d->bacc_lens == NULL || d->berrs == NULL) {
		e = ota_error_set(err, OTA_ERR_NOMEM, "attestd", "group committer");
		goto out_stop;
	}
	if (pthread_create(&d->committer, NULL, committer_main, d) != 0) {
		e = ota_error_set(err, OTA_ERR_INTERNAL, "attestd", "group committer thread");
		goto out_stop;
	}
	d->committer_started = true;
	pthread_setname_np(d->committer, "ota-commit"); /* top -H, perf */
	d->actx.root = d->root;
	d->actx.store = d->store;
	d->actx.opts = d->opts.admission;
	int fd = listen_on(d->opts.bind_addr, d->opts.port, &d->port, err);
	if (fd < 0) {
		e = err != NULL ? err->code : OTA_ERR_HTTP_TRANSPORT;
		goto out_stop;
	}
	d->listen_fd = fd;
	/* A pool of event loops (one per core by default); requests waiting
	 * for their group commit are suspended, not blocking a thread. */
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME;
	if (d->opts.threads > 1)
		d->mhd = MHD_start_daemon(
			flags, 0, NULL, NULL, handler, d, MHD_OPTION_LISTEN_SOCKET, fd,
			MHD_OPTION_THREAD_POOL_SIZE, (unsigned)d->opts.threads,
			MHD_OPTION_CONNECTION_LIMIT, (unsigned)d->opts.max_connections,
			MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)d->opts.max_connections_per_address,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)d->opts.timeout_s,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_POOL_BYTES,
			MHD_OPTION_NOTIFY_COMPLETED, completed, d,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, d, MHD_OPTION_END);
	else
		d->mhd = MHD_start_daemon(
			flags, 0, NULL, NULL, handler, d, MHD_OPTION_LISTEN_SOCKET, fd,
			MHD_OPTION_CONNECTION_LIMIT, (unsigned)d->opts.max_connections,
			MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)d->opts.max_connections_per_address,
			MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)d->opts.timeout_s,
			MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_POOL_BYTES,
			MHD_OPTION_NOTIFY_COMPLETED, completed, d,
			MHD_OPTION_NOTIFY_CONNECTION, on_connection, d, MHD_OPTION_END);
	if (d->mhd == NULL) {
		e = ota_error_set(err, OTA_ERR_HTTP_TRANSPORT, "attestd", "cannot start the HTTP daemon");
		goto out_stop;
	}
	d->listen_fd = -1; /* MHD's now */
	gauges_refresh(d);
	if (pthread_create(&d->watchdog, NULL, watchdog_main, d) != 0) {
		e = ota_error_set(err, OTA_ERR_INTERNAL, "attestd", "request deadline thread");
		goto out_stop;
	}
	d->watchdog_started = true;
	pthread_setname_np(d->watchdog, "ota-deadline");
	log_json(d, json_pack("{s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s, s:i}", "level", "info",
	                      "event", "listening", "addr", d->opts.bind_addr, "port", (int)d->port,
	                      "epoch", (json_int_t)ota_nonce_store_epoch(d->store), "verifier",
	                      d->verifier_id, "trust_root", ota_trust_root_identity(d->root), "sync",
	                      d->opts.sync == OTA_NONCE_SYNC_FULL ? "full" : "normal", "threads",
	                      (int)d->opts.threads));
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
		/* 1. no new jobs (answered 503 http_unavailable); the queued
		 * ones commit and their connections are resumed. (No
		 * MHD_quiesce_daemon: with a thread pool in epoll mode it races
		 * a worker that drops the listening socket at its connection
		 * limit, and MHD 0.9.75 aborts.) */
		pthread_mutex_lock(&d->mu);
		d->closing = true;
		while (d->qhead != NULL || d->busy)
			pthread_cond_wait(&d->idle, &d->mu);
		pthread_mutex_unlock(&d->mu);
		/* 2. their answers go out (bounded by the idle timeout) */
		struct timespec ms = {0, 1000000};
		for (unsigned i = 0; atomic_load(&d->inflight) > 0 && i < d->opts.timeout_s * 1000u; i++)
			nanosleep(&ms, NULL);
		MHD_stop_daemon(d->mhd); /* closes the listening socket */
		d->mhd = NULL;
		log_json(d, json_pack("{s:s, s:s, s:I, s:I}", "level", "info", "event", "stopped",
		                      "accepted", (json_int_t)atomic_load(&d->accepted), "refused",
		                      (json_int_t)atomic_load(&d->refused)));
	}
	if (d->watchdog_started) {
		pthread_mutex_lock(&d->wmu);
		d->wstop = true;
		pthread_cond_broadcast(&d->wcond);
		pthread_mutex_unlock(&d->wmu);
		pthread_join(d->watchdog, NULL);
	}
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	if (d->committer_started) {
		pthread_mutex_lock(&d->mu);
		d->closing = true;
		d->stop = true;
		pthread_cond_broadcast(&d->work);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->committer, NULL);
	}
	pthread_cond_destroy(&d->idle);
	pthread_cond_destroy(&d->work);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->wcond);
	pthread_mutex_destroy(&d->wmu);
	free(d->bops);
	free(d->breqs);
	free(d->bslots);
	free(d->badm);
	free(d->baccs);
	free(d->bacc_lens);
	free(d->berrs);
	ota_nonce_store_close(d->store);
	ota_trust_root_free(d->root);
	ota_key_free(d->vkey);
	free(d->root_json);
	free(d);
}
