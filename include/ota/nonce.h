/*
 * ota/nonce.h - single-use challenges in an embedded sqlite (WAL) store
 * (DESIGN.md section 6), plus the per-(txn, issuer, boundary) head and the stored
 * acceptances that attestation admission advances in the same transaction.
 *
 * A challenge is 16..64 random bytes from the OS (32 by default), bound at
 * issue to a txn, an issuer, a scope and an expiry (300 s by default).
 * Consumption is a conditional UPDATE inside one transaction: exactly one
 * consumer can ever see the row flip from live to consumed.
 * Consumed rows are kept until expiry + skew, so a replay (nonce_replayed)
 * is told apart from a nonce never issued (nonce_unknown) and from an
 * expired one (nonce_expired). Durability: see docs/nonce-store.md.
 *
 * A store handle may be shared by threads (an internal mutex serialises
 * use). Several processes may open the same file (sqlite locking; the race
 * test does that). Time is always injected (`now`, Unix seconds).
 */
#ifndef OTA_NONCE_H
#define OTA_NONCE_H

#include "ota/common.h"
#include "ota/limits.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ota_nonce_sync {
	/* synchronous=FULL: every commit is fsynced before it returns. A
	 * consumed challenge cannot come back after a power loss. Default. */
	OTA_NONCE_SYNC_FULL = 0,
	/* synchronous=NORMAL: commits are fsynced at checkpoints only. A power
	 * loss may roll back recent commits, so every open durably bumps the
	 * epoch and challenges of an epoch that ran NORMAL become invalid
	 * (nonce_stale_epoch) at the next open. One process per file. */
	OTA_NONCE_SYNC_NORMAL = 1
} ota_nonce_sync;

typedef struct ota_nonce_opts {
	ota_nonce_sync sync;  /* default OTA_NONCE_SYNC_FULL */
	int64_t skew;         /* seconds consumed rows outlive expiry; default 60 */
	int busy_timeout_ms;  /* wait for another writer at most this; default 10000 */
} ota_nonce_opts;

/* Fills o with the defaults above. */
OTA_API void ota_nonce_opts_init(ota_nonce_opts *o);

/* What a challenge is bound to. All three are required NUL-terminated
 * strings (borrowed) of at most OTA_MAX_TXN_BYTES, OTA_MAX_ISSUER_BYTES and
 * OTA_MAX_SCOPE_BYTES; none may be empty (scope may be "*"). */
typedef struct ota_nonce_binding {
	const char *txn;
	const char *issuer;
	const char *scope;
} ota_nonce_binding;

/* A challenge record (a plain value: copy it freely). */
typedef struct ota_challenge {
	uint8_t nonce[OTA_NONCE_MAX_BYTES];
	size_t nonce_len;
	int64_t epoch;       /* store epoch at issue */
	int64_t issued_at;
	int64_t expires_at;
	int64_t consumed_at; /* 0 while live */
	char txn[OTA_MAX_TXN_BYTES + 1];
	char issuer[OTA_MAX_ISSUER_BYTES + 1];
	char scope[OTA_MAX_SCOPE_BYTES + 1];
	int64_t row;         /* where the store keeps it (its rowid; 0: unknown): a
	                        lookup hint for ota_nonce_op.challenge_row, no part
	                        of the challenge or its identity */
} ota_challenge;

typedef struct ota_nonce_store ota_nonce_store;

/*
 * Opens (creating if needed) the store at path, in WAL mode, and durably
 * bumps its epoch (a synchronous=FULL write) before anything else. *out is
 * new (ota_nonce_store_close). Errors: usage, database_error,
 * nonce_store_schema.
 */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_open(const char *path, const ota_nonce_opts *o,
                                                   ota_nonce_store **out, ota_error *err);
/* Closes s; NULL is a no-op. */
OTA_API void ota_nonce_store_close(ota_nonce_store *s);
/* The epoch this handle bumped at open. */
OTA_API int64_t ota_nonce_store_epoch(const ota_nonce_store *s);
/* Challenges of epochs below this are refused (nonce_stale_epoch). */
OTA_API int64_t ota_nonce_store_min_epoch(const ota_nonce_store *s);

/*
 * Issues a fresh challenge of nonce_len bytes (0 = 32; 16..64 allowed,
 * nonce_length otherwise) living ttl seconds (0 = 300; 1..OTA_NONCE_MAX_TTL,
 * nonce_ttl otherwise) from now. Committed (durably in FULL mode) before it
 * returns. *out is cleared on failure. Errors: nonce_length, nonce_ttl,
 * nonce_binding_invalid, nonce_random_failed, nonce_store_busy,
 * database_error.
 */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_issue(ota_nonce_store *s, const ota_nonce_binding *b,
                                                    size_t nonce_len, int64_t ttl, int64_t now,
                                                    ota_challenge *out, ota_error *err);

/*
 * Consumes nonce exactly once, in its own transaction. When expect is not
 * NULL, the challenge must be bound to exactly that txn, issuer and scope
 * (a mismatch does not consume it). out (may be NULL) receives the record
 * on success and is cleared on failure.
 * A challenge is live for issued_at <= now < expires_at.
 * Errors: nonce_unknown, nonce_replayed, nonce_expired, nonce_stale_epoch,
 * nonce_not_yet_issued (now before issued_at: the clock went back),
 * nonce_txn_mismatch, nonce_issuer_mismatch, nonce_scope_mismatch,
 * nonce_length, nonce_store_busy, database_error.
 */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_consume(ota_nonce_store *s, ota_bytes nonce,
                                                      const ota_nonce_binding *expect, int64_t now,
                                                      ota_challenge *out, ota_error *err);

/*
 * Reads a challenge without changing it (for early refusal and to build the
 * acceptance before the consuming transaction). Never a decision: only a
 * consume decides. Returns the same codes a consume would (nonce_unknown,
 * nonce_replayed, nonce_expired, nonce_stale_epoch, nonce_not_yet_issued)
 * or OTA_OK with *out. A challenge issued through s is answered from s's
 * memory (docs/nonce-store.md, "The peek cache"), exactly as the file would
 * answer for what was done through s; another process's consume or purge
 * of it is seen only by the consume, which re-checks everything.
 */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_peek(ota_nonce_store *s, ota_bytes nonce, int64_t now,
                                                   ota_challenge *out, ota_error *err);

/* ---- batches: one transaction, one fsync, many operations ---- */

typedef enum ota_nonce_op_kind {
	OTA_NONCE_OP_ISSUE = 1,   /* issue a challenge (binding, nonce_len, ttl) */
	OTA_NONCE_OP_CONSUME = 2, /* consume nonce (expect optional) */
	OTA_NONCE_OP_ADMIT = 3    /* consume + head compare-and-advance + store */
} ota_nonce_op_kind;

/*
 * One operation of a batch. Inputs are borrowed for the duration of the
 * call. A refused operation writes nothing (an admission decides every
 * refusal before its first write), so a refusal touches only that
 * operation's result; the batch then commits once. `result` and
 * `challenge` are outputs.
 *
 * ADMIT: the lane is (expect->txn, expect->issuer, boundary): each issuer's
 * boundaries are its own, so no issuer can advance, fork or take first
 * another's. It consumes `nonce` (bound to `expect`, required), requires
 * the current head of the lane to equal `prior` (NULL or "" when no record
 * was accepted yet for it), advances the head to `record_id` and stores
 * attestation + acceptance under record_id, all or nothing.
 * Head refusals: attestation_prior_missing (a head exists but no prior was
 * given), attestation_prior_fork (prior is an earlier record of the lane,
 * not its head), attestation_prior_unknown (prior names no accepted record
 * of the lane: skipped, invented, or another issuer's),
 * attestation_duplicate.
 */
typedef struct ota_nonce_op {
	ota_nonce_op_kind kind;
	/* ISSUE */
	const ota_nonce_binding *binding;
	size_t nonce_len;
	int64_t ttl;
	/* CONSUME / ADMIT */
	ota_bytes nonce;
	const ota_nonce_binding *expect;
	/* ADMIT */
	const char *boundary;    /* identity of the boundary (lane key with txn, issuer) */
	const char *prior;       /* expected current head, NULL/"" for the first */
	const char *record_id;   /* identity of the attestation: the new head */
	ota_bytes attestation;   /* COSE bytes stored with the acceptance */
	ota_bytes acceptance;    /* signed acceptance COSE bytes */
	int64_t accepted_at;     /* the time the acceptance signs (its iat), stored as
	                            the challenge's consumed_at and the acceptance's
	                            accepted_at; 0: the batch's now. The challenge must
	                            be unexpired at both. */
	int64_t challenge_row;   /* optional: the challenge's row as a read reported it
	                            (ota_challenge.row), so the store need not look the
	                            nonce up in its index; a row that does not hold
	                            this nonce is ignored. 0: none. */
	/* outputs */
	ota_err result;
	ota_challenge challenge;
} ota_nonce_op;

/*
 * Runs ops[0..n) in one transaction (BEGIN IMMEDIATE ... COMMIT). Returns
 * OTA_OK once the commit has returned (durable in FULL mode): only then do
 * ops[i].result say what happened. Any other return means nothing was
 * committed, and every ops[i].result carries that error too: never
 * acknowledge such an operation.
 */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_commit_batch(ota_nonce_store *s, ota_nonce_op *ops,
                                                           size_t n, int64_t now, ota_error *err);

/* ota_nonce_store_commit_batch that also reports, in errs[i] (errs may be
 * NULL), the detail (where, what) of each operation's result. */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_commit_batch_errs(ota_nonce_store *s,
                                                                ota_nonce_op *ops, size_t n,
                                                                int64_t now, ota_error *errs,
                                                                ota_error *err);

/* Deletes every challenge whose expires_at + skew <= now; *deleted (may be
 * NULL) receives the count. */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_purge(ota_nonce_store *s, int64_t now,
                                                    uint64_t *deleted, ota_error *err);

/* ---- stored acceptances and heads ---- */

/*
 * Looks up the stored acceptance of record_id on the lane (txn, boundary)
 * its attestation names (acceptances are indexed by lane and record id:
 * docs/nonce-store.md). *attestation and *acceptance (either may be NULL)
 * are new (free()). not_found when absent.
 */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_acceptance_get(
	ota_nonce_store *s, const char *txn, const char *boundary, const char *record_id,
	uint8_t **attestation, size_t *att_len, uint8_t **acceptance, size_t *acc_len,
	ota_error *err);
/* Current head of the lane (txn, issuer, boundary) into out (OTA_ID_LEN+1
 * bytes, or larger ids up to 256); "" when none. */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_head_get(ota_nonce_store *s, const char *txn,
                                                       const char *issuer, const char *boundary,
                                                       char *out, size_t out_cap,
                                                       ota_error *err);
/* Counts (for /metrics): live challenges, consumed-and-kept, acceptances. */
OTA_API OTA_NODISCARD ota_err ota_nonce_store_counts(ota_nonce_store *s, uint64_t *live,
                                                     uint64_t *consumed, uint64_t *accepted,
                                                     ota_error *err);

/* ---- challenge identity ---- */

/*
 * The challenge as an identified JSON object (DESIGN.md section 3):
 * {"kind":"ota.challenge/v1","nonce":base64url,"txn","issuer","scope",
 *  "issued_at","expires_at","epoch"}; *out new (free()), JCS bytes.
 */
OTA_API OTA_NODISCARD ota_err ota_challenge_jcs(const ota_challenge *c, char **out, size_t *out_len);
/* sha256: identity of ota_challenge_jcs. */
OTA_API OTA_NODISCARD ota_err ota_challenge_identity(const ota_challenge *c,
                                                     char out[OTA_ID_LEN + 1]);

/* ---- group commit ---- */

/*
 * A group committer: a thread that drains a queue of operations and runs up
 * to max_batch of them per transaction (one fsync). ota_nonce_committer_run
 * blocks the caller until its operation's transaction has committed (or
 * failed), so nothing is acknowledged before it is durable. Borrowed s must
 * outlive the committer. *out new (ota_nonce_committer_free, which drains
 * and joins). clock supplies `now` for each batch (NULL: system clock).
 */
typedef struct ota_nonce_committer ota_nonce_committer;
OTA_API OTA_NODISCARD ota_err ota_nonce_committer_new(ota_nonce_store *s, size_t max_batch,
                                                      const ota_clock *clock,
                                                      ota_nonce_committer **out);
OTA_API void ota_nonce_committer_free(ota_nonce_committer *c);
/* Queues op, waits for its batch; returns op->result (or the batch error). */
OTA_API OTA_NODISCARD ota_err ota_nonce_committer_run(ota_nonce_committer *c, ota_nonce_op *op);
/* Batches committed and operations run so far (metrics). */
OTA_API void ota_nonce_committer_stats(ota_nonce_committer *c, uint64_t *batches, uint64_t *ops);

#ifdef __cplusplus
}
#endif
#endif
