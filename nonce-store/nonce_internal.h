/* nonce-store/nonce_internal.h - private helpers shared inside ota_nonce. */
#ifndef OTA_NONCE_INTERNAL_H
#define OTA_NONCE_INTERNAL_H
#include "ota/nonce.h"

/*
 * The "issuer" claim of a stored acceptance (a tagged COSE_Sign1 of our
 * own, single or batch form) into out (cap bytes, NUL-terminated). Reads
 * only, checks no signature: for the schema 1 -> 2 migration, over bytes
 * this store wrote. false when the bytes are not such a record or the claim
 * is missing, not text, or does not fit.
 */
bool nonce_acceptance_issuer(ota_bytes acceptance, char *out, size_t cap);

/*
 * The VFS (walbuf.c) over sqlite's default one that writes a transaction's
 * WAL frames in one call, by the time sqlite syncs the WAL or the commit
 * frame is complete. Registered (not as the default) on the first call;
 * an SQLITE_ code. Only for a connection that runs synchronous=FULL.
 */
#define NONCE_WALBUF_VFS "ota-walbuf"
int nonce_walbuf_register(void);

/*
 * The peek cache (peek_cache.c): the challenges this store handle issued,
 * so that ota_nonce_store_peek answers them without sqlite. Written by
 * store.c only after a COMMIT, under the writer mutex; read by peeks from
 * any thread. Bounded: NONCE_PEEK_CACHE_ENTRIES records and
 * NONCE_PEEK_CACHE_BYTES of them (a record is a 56-byte header plus the
 * nonce and the three binding strings at their own lengths, about 150
 * bytes for a 32-byte nonce and short bindings); a challenge that does not
 * fit is not cached.
 */
#define NONCE_PEEK_CACHE_ENTRIES ((size_t)1 << 17)
#define NONCE_PEEK_CACHE_BYTES ((size_t)64 << 20)
typedef struct nonce_cache nonce_cache;
/* NULL when out of memory (the store then peeks through sqlite). */
nonce_cache *nonce_cache_new(size_t max_entries, size_t max_bytes);
void nonce_cache_free(nonce_cache *c);
/* rec: a committed challenge; now: the clock of its transaction (a full
 * shard sweeps entries expired at now, at most once per second of it). */
void nonce_cache_put(nonce_cache *c, const ota_challenge *rec, int64_t now);
/* a committed consumption of nonce, if cached */
void nonce_cache_consumed(nonce_cache *c, const uint8_t *nonce, size_t len, int64_t consumed_at);
/* the record of nonce into out (cleared by the caller) when cached */
bool nonce_cache_get(nonce_cache *c, ota_bytes nonce, ota_challenge *out);
/* drops every entry with expires_at <= cutoff (a committed purge) */
void nonce_cache_purge(nonce_cache *c, int64_t cutoff);
void nonce_cache_stats(nonce_cache *c, uint64_t *hits, uint64_t *entries);

/* For tests only: peeks the cache of s answered, and its entries. */
void nonce_store_peek_cache_stats(ota_nonce_store *s, uint64_t *hits, uint64_t *entries);
/* For tests only: replaces the (empty) cache of s by one of these caps;
 * max_entries 0: no cache at all. Call before any other thread uses s. */
void nonce_store_peek_cache_reset(ota_nonce_store *s, size_t max_entries, size_t max_bytes);
/* For tests only: the checkpointer's thresholds, in WAL frames (store.c,
 * CKPT_FRAMES, CKPT_TAIL, CKPT_HARD) and its back-off after a RESTART that
 * could not finish (CKPT_BACKOFF_MS), and what it did: its passes (PASSIVE
 * copies, then a RESTART unless backing off), the RESTARTs that succeeded
 * and those that found a reader in the way (SQLITE_BUSY), and the
 * checkpoints the writer ran itself. */
void nonce_store_checkpoint_limits(ota_nonce_store *s, int frames, int tail, int hard,
                                   int64_t backoff_ms);
void nonce_store_checkpoint_stats(ota_nonce_store *s, uint64_t *passes, uint64_t *restarts,
                                  uint64_t *restarts_busy, uint64_t *writer_ckpts);
/* For tests only: the checkpointer's last pass, for a failure's message:
 * the result codes of its last PASSIVE and RESTART (-1: none tried) and the
 * WAL's frames and those copied, as the last checkpoint reported them. */
void nonce_store_checkpoint_last(ota_nonce_store *s, int *rc_passive, int *rc_restart, int *log,
                                 int *done);
#endif
