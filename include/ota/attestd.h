/*
 * ota/attestd.h - the attestation endpoint (libmicrohttpd) and its client
 * (libcurl): target ota_attest_net, which neither libota nor ota-verify
 * links. docs/attestation.md documents the HTTP API and its JSON shapes.
 *
 * Routes: POST /v1/challenges (JSON), POST /v1/attestations
 * (application/cose), GET /v1/acceptances/<sha256:...>?txn=T&boundary=B,
 * GET /v1/trust-root,
 * GET /healthz, GET /metrics (Prometheus text). Every error answer is JSON
 * {"ok": false, "code": <stable error name>, "where": ..., "message": ...}.
 *
 * Durable state goes through one group committer thread: an answer (a
 * challenge or an acceptance) is sent only after the sqlite transaction
 * holding it has committed; until then its connection is suspended.
 */
#ifndef OTA_ATTESTD_H
#define OTA_ATTESTD_H

#include "ota/admission.h"
#include "ota/nonce.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ota_attestd_opts {
	const char *bind_addr;        /* IPv4 literal; default "127.0.0.1" (loopback) */
	uint16_t port;                /* 0: an ephemeral port (ota_attestd_port) */
	const char *db_path;          /* nonce store (required) */
	const char *trust_root_path;  /* trust-root snapshot JSON (required) */
	const char *verifier_key_path;/* the endpoint's private key (required); its kid
	                                 must name a verifier principal of the root */
	unsigned max_connections;     /* default OTA_MAX_HTTP_CONNECTIONS */
	unsigned max_connections_per_address; /* concurrent connections from one client
	                                 address (MHD_OPTION_PER_IP_CONNECTION_LIMIT; one
	                                 more is closed as accepted, without an answer);
	                                 0 (default): no per-address limit */
	unsigned timeout_s;           /* idle connection timeout; default OTA_HTTP_TIMEOUT_SECONDS */
	unsigned request_timeout_s;   /* deadline for reading one request (from the connection's
	                                 start or the previous answer) and for writing its
	                                 answer, however often bytes arrive; a connection past it
	                                 is shut down. Default OTA_HTTP_REQUEST_SECONDS */
	size_t max_body;              /* default OTA_MAX_HTTP_BODY_BYTES */
	unsigned threads;             /* HTTP event loops (MHD thread pool); default (0): one
	                                 per online CPU. A request waiting for its group
	                                 commit is suspended and holds no thread. */
	size_t max_batch;             /* operations per group commit; default 256 */
	unsigned max_batch_items;     /* items of batch POSTs (application/cbor-seq) held at
	                                 once, judged, queued or being answered; one more
	                                 batch is 503 http_unavailable; default and at most
	                                 OTA_MAX_BATCH_ITEMS_IN_FLIGHT */
	ota_nonce_sync sync;          /* default OTA_NONCE_SYNC_FULL */
	int64_t challenge_ttl;        /* default (0): OTA_NONCE_DEFAULT_TTL; at most
	                                 OTA_NONCE_MAX_TTL, else usage at start (as is an
	                                 admission.max_skew outside 0..OTA_ATT_MAX_SKEW) */
	bool log_requests;            /* one log line per request (else refusals and errors) */
	ota_admission_opts admission; /* zeroed: ota_admission_opts_init defaults */
	/* Structured log sink: one JSON object per call, no newline. NULL: none.
	 * Called from worker threads; must be thread-safe. */
	void (*log)(void *ctx, const char *json_line);
	void *log_ctx;
	const ota_clock *clock;       /* NULL: system clock (borrowed) */
} ota_attestd_opts;

OTA_API void ota_attestd_opts_init(ota_attestd_opts *o);

typedef struct ota_attestd ota_attestd;

/*
 * Opens the store (bumping its epoch), loads and checks the trust root
 * (its own root-key threshold, not expired) and the verifier key, and
 * starts serving. *out new (ota_attestd_stop). Errors: usage, io_error,
 * key_*, trust_*, database_error, http_transport (cannot listen).
 */
OTA_API OTA_NODISCARD ota_err ota_attestd_start(const ota_attestd_opts *o, ota_attestd **out,
                                                ota_error *err);
/* The port actually listened on. */
OTA_API uint16_t ota_attestd_port(const ota_attestd *d);
/* Stops accepting, finishes the requests in flight, drains the committer,
 * closes the store and frees d. NULL is a no-op. */
OTA_API void ota_attestd_stop(ota_attestd *d);

/* ---- client (libcurl) ---- */

/*
 * POST base_url/v1/challenges. *out (new JSON text, NUL-terminated, free())
 * is the challenge object on success. Refusals come back as their stable
 * error (from the answer's "code"), with err filled. Errors also:
 * http_transport, attestation_response_invalid.
 */
OTA_API OTA_NODISCARD ota_err ota_attest_client_challenge(const char *base_url,
                                                          const ota_nonce_binding *b,
                                                          size_t nonce_len, int64_t ttl,
                                                          char **out, ota_error *err);
/*
 * POST base_url/v1/attestations with the COSE bytes. *out (new JSON text)
 * is the acceptance answer on success; refusals as above. When the answer
 * is lost (http_transport: the endpoint may have committed or not), the
 * acceptance is looked up (ota_attest_client_lookup); when none is stored,
 * the POST is sent once more (the challenge is still live), and a
 * nonce_replayed to it is answered by one more lookup. A recovered answer
 * is {"ok", "result", "attestation", "acceptance", "recovered": true}.
 * Still nothing: the first http_transport.
 */
OTA_API OTA_NODISCARD ota_err ota_attest_client_submit(const char *base_url, ota_bytes cose,
                                                       char **out, ota_error *err);
/*
 * The endpoint's answer to a POST, as the client judges it (untrusted
 * bytes; fuzz_attest_answer): at most OTA_MAX_HTTP_ANSWER_BYTES of one
 * strict JSON object (else attestation_response_invalid). A 2xx with "ok":
 * true is OTA_OK only when it carries what the caller uses: for a challenge
 * "challenge" (an sha256: identity) and "nonce" (base64url of
 * OTA_NONCE_MIN_BYTES..OTA_NONCE_MAX_BYTES bytes), for an acceptance
 * "attestation" (an identity) and "acceptance" (non-empty standard
 * base64); without them attestation_response_invalid. Any other answer is
 * the error its "code" names, where and message from the answer when they
 * are non-empty text without control characters (C0, DEL, C1: they reach a
 * terminal), else "answer" and the code; attestation_response_invalid when
 * the code is no known error name.
 */
typedef enum ota_attest_answer_kind {
	OTA_ATTEST_ANSWER_CHALLENGE = 1, /* POST /v1/challenges */
	OTA_ATTEST_ANSWER_ACCEPTANCE = 2 /* POST /v1/attestations */
} ota_attest_answer_kind;
OTA_API OTA_NODISCARD ota_err ota_attest_client_answer(const char *body, size_t len, long status,
                                                       ota_attest_answer_kind kind,
                                                       ota_error *err);
/*
 * GET base_url/v1/acceptances/<id>?txn=T&boundary=B for the attestation
 * cose (its identity and its own txn and boundary claims): *out (new JSON
 * text) {"ok": true, "result": "accepted", "attestation", "acceptance",
 * "recovered": true} when the endpoint stored its acceptance; not_found
 * when it did not; http_transport, attestation_response_invalid (also an
 * answer naming another attestation), the attestation's own decoding
 * errors.
 */
OTA_API OTA_NODISCARD ota_err ota_attest_client_lookup(const char *base_url, ota_bytes cose,
                                                       char **out, ota_error *err);
/*
 * A batch: POST base_url/v1/attestations with items[0..n) (1 to
 * OTA_MAX_ATTESTATION_BATCH COSE_Sign1 attestations) as one
 * application/cbor-seq body. OTA_OK when the endpoint answered for every
 * item: res[i] is then item i's own result, rc OTA_OK with answer (new JSON
 * text) the single route's acceptance object, or rc its refusal with err
 * filled. An answer is believed only when it lists n results whose counts
 * agree and each accepted one names the identity (sha256) of the item it
 * answers (else attestation_response_invalid). When the answer is lost
 * (http_transport), each item is looked up (ota_attest_client_lookup), the
 * ones not stored are sent once more as one batch, and a nonce_replayed to
 * that is answered by one more lookup, as ota_attest_client_submit does
 * for one; items still without an answer get the first http_transport.
 * Errors of the batch as a whole (res then all set to it): usage, the
 * endpoint's attestation_batch_malformed, too_large, http_unavailable,
 * http_content_type, http_body_too_large, and attestation_response_invalid.
 * Free the answers with ota_attest_batch_results_free.
 */
typedef struct ota_attest_batch_result {
	ota_err rc;
	ota_error err; /* rc != OTA_OK: the refusal, where and what as the endpoint said */
	char *answer;  /* rc == OTA_OK: the acceptance object (JSON text) */
} ota_attest_batch_result;
OTA_API OTA_NODISCARD ota_err ota_attest_client_submit_batch(const char *base_url,
                                                             const ota_bytes *items, size_t n,
                                                             ota_attest_batch_result *res,
                                                             ota_error *err);
OTA_API void ota_attest_batch_results_free(ota_attest_batch_result *res, size_t n);
/*
 * The endpoint's answer to a batch POST, as the client judges it
 * (untrusted bytes; fuzz_attest_answer): a 200 with a JSON object holding
 * "ok": true, integers "accepted" and "refused" that count the n entries of
 * "results", each either an acceptance (as ota_attest_client_answer judges
 * one) naming ids[i], or a refusal with a known error name. res[i] as for
 * ota_attest_client_submit_batch. Any other status is the batch's error
 * (its code, as ota_attest_client_answer reads it).
 */
OTA_API OTA_NODISCARD ota_err ota_attest_client_batch_answer(const char *body, size_t len,
                                                             long status, size_t n,
                                                             const char (*ids)[OTA_ID_LEN + 1],
                                                             ota_attest_batch_result *res,
                                                             ota_error *err);
/* GET base_url + path; *out new body (NUL-terminated), *status the HTTP status. */
OTA_API OTA_NODISCARD ota_err ota_attest_client_get(const char *base_url, const char *path,
                                                    char **out, size_t *out_len, long *status,
                                                    ota_error *err);

#ifdef __cplusplus
}
#endif
#endif
