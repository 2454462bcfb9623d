/*
 * nonce-store/peek_cache.c - the challenges a store handle issued, in
 * memory, so that ota_nonce_store_peek answers them without a sqlite read
 * transaction (docs/nonce-store.md, "The peek cache").
 *
 * Only store.c writes it, under the store's writer mutex and only after a
 * COMMIT returned: a challenge is put once its issuing transaction has
 * committed, marked consumed once a consuming transaction has, dropped when
 * a purge deleted its row. So for everything done through this handle it
 * answers exactly as the database would. What another process did (or
 * this handle before a restart) it does not know: a stale entry may say
 * live for a challenge consumed or purged elsewhere. That only delays the
 * refusal to the consuming transaction, which re-checks every condition in
 * its UPDATE's WHERE: a peek is never a decision.
 *
 * Peeks lock one of SHARDS mutexes (chosen by the nonce), so event loops
 * rarely wait on each other or on the committer. Records are compact: the
 * nonce and the three binding strings at their own lengths after a fixed
 * header, one allocation each. Bounded by an entry cap and a byte cap;
 * when either is reached, the shard drops its expired entries and those of
 * consumed challenges (at most once per second of the store's clock per
 * shard), and a new challenge that still does not fit is not cached: its
 * peeks read sqlite. Under a steady load nearly every entry is consumed
 * soon after its issue, so a full shard frees itself for the challenges
 * about to be answered, where keeping the consumed ones until they expired
 * (300 s) would have left every challenge issued after the first 2^17
 * uncached.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nonce_internal.h"

#define SHARDS 8u

typedef struct cnode {
	struct cnode *next;
	int64_t epoch;
	int64_t issued_at;
	int64_t expires_at;
	int64_t consumed_at;
	int64_t row;
	uint16_t txn_len;
	uint16_t issuer_len;
	uint16_t scope_len;
	uint8_t nonce_len;
	unsigned char data[]; /* nonce, txn, issuer, scope (no NULs) */
} cnode;

typedef struct shard {
	pthread_mutex_t mu;
	cnode **buckets;
	size_t mask;      /* buckets - 1 */
	size_t count;
	size_t cap;       /* entries */
	size_t bytes;     /* allocated by its records */
	size_t max_bytes;
	int64_t last_sweep;
	int64_t min_expiry; /* no entry expires before this (a lower bound) */
	uint64_t hits;
	bool mu_ok;
	char pad_[64];    /* keep shards' mutexes off one cache line */
} shard;

struct nonce_cache {
	shard sh[SHARDS];
};

static uint64_t key_hash(const uint8_t *nonce, size_t len)
{
	/* issued nonces are uniformly random: their bytes are the hash. A
	 * peeked nonce may be anything, but only chooses which chain of
	 * random keys is walked. */
	uint64_t h;
	memcpy(&h, nonce, sizeof h); /* len >= OTA_NONCE_MIN_BYTES (16) */
	return h ^ (uint64_t)len;
}

static shard *shard_of(nonce_cache *c, uint64_t h)
{
	return &c->sh[h % SHARDS];
}

static cnode **bucket_of(shard *s, uint64_t h)
{
	return &s->buckets[(h / SHARDS) & s->mask];
}

static size_t node_size(const cnode *n)
{
	return sizeof *n + n->nonce_len + n->txn_len + n->issuer_len + n->scope_len;
}

nonce_cache *nonce_cache_new(size_t max_entries, size_t max_bytes)
{
	if (max_entries < SHARDS)
		max_entries = SHARDS;
	nonce_cache *c = calloc(1, sizeof *c);
	if (c == NULL)
		return NULL;
	size_t per = max_entries / SHARDS, nb = 1;
	while (nb < per)
		nb <<= 1;
	for (unsigned i = 0; i < SHARDS; i++) {
		shard *s = &c->sh[i];
		s->buckets = calloc(nb, sizeof *s->buckets);
		if (s->buckets == NULL || pthread_mutex_init(&s->mu, NULL) != 0) {
			nonce_cache_free(c);
			return NULL;
		}
		s->mu_ok = true;
		s->mask = nb - 1;
		s->cap = per;
		s->max_bytes = max_bytes / SHARDS;
		s->last_sweep = INT64_MIN;
		s->min_expiry = INT64_MAX;
	}
	return c;
}

void nonce_cache_free(nonce_cache *c)
{
	if (c == NULL)
		return;
	for (unsigned i = 0; i < SHARDS; i++) {
		shard *s = &c->sh[i];
		if (s->buckets != NULL) {
			for (size_t b = 0; b <= s->mask; b++) {
				cnode *n = s->buckets[b];
				while (n != NULL) {
					cnode *next = n->next;
					free(n);
					n = next;
				}
			}
			free(s->buckets);
		}
		if (s->mu_ok)
			pthread_mutex_destroy(&s->mu);
	}
	free(c);
}

/* Unlinks and frees every entry of s for which expires_at <= cutoff, and
 * with consumed every consumed one (no walk when nothing can go:
 * ota-attestd purges every 4,096 issues). A dropped entry's peeks read
 * sqlite, which answers the same. */
static void shard_drop(shard *s, int64_t cutoff, bool consumed)
{
	if (!consumed && cutoff < s->min_expiry)
		return;
	int64_t min = INT64_MAX;
	for (size_t b = 0; b <= s->mask && s->count > 0; b++) {
		cnode **pp = &s->buckets[b];
		while (*pp != NULL) {
			cnode *n = *pp;
			if (n->expires_at <= cutoff || (consumed && n->consumed_at != 0)) {
				*pp = n->next;
				s->count--;
				s->bytes -= node_size(n);
				free(n);
			} else {
				if (n->expires_at < min)
					min = n->expires_at;
				pp = &n->next;
			}
		}
	}
	s->min_expiry = min;
}

static cnode **find(shard *s, uint64_t h, const uint8_t *nonce, size_t len)
{
	cnode **pp = bucket_of(s, h);
	while (*pp != NULL && ((*pp)->nonce_len != len || memcmp((*pp)->data, nonce, len) != 0))
		pp = &(*pp)->next;
	return pp;
}

void nonce_cache_put(nonce_cache *c, const ota_challenge *rec, int64_t now)
{
	if (c == NULL || rec->nonce_len < OTA_NONCE_MIN_BYTES || rec->nonce_len > OTA_NONCE_MAX_BYTES)
		return;
	size_t tl = strnlen(rec->txn, sizeof rec->txn - 1);
	size_t il = strnlen(rec->issuer, sizeof rec->issuer - 1);
	size_t sl = strnlen(rec->scope, sizeof rec->scope - 1);
	size_t sz = sizeof(cnode) + rec->nonce_len + tl + il + sl;
	cnode *n = malloc(sz);
	if (n == NULL)
		return; /* not cached: its peeks read sqlite */
	n->next = NULL;
	n->epoch = rec->epoch;
	n->issued_at = rec->issued_at;
	n->expires_at = rec->expires_at;
	n->consumed_at = rec->consumed_at;
	n->row = rec->row;
	n->nonce_len = (uint8_t)rec->nonce_len;
	n->txn_len = (uint16_t)tl;
	n->issuer_len = (uint16_t)il;
	n->scope_len = (uint16_t)sl;
	unsigned char *p = n->data;
	memcpy(p, rec->nonce, rec->nonce_len);
	p += rec->nonce_len;
	memcpy(p, rec->txn, tl);
	p += tl;
	memcpy(p, rec->issuer, il);
	p += il;
	memcpy(p, rec->scope, sl);

	uint64_t h = key_hash(rec->nonce, rec->nonce_len);
	shard *s = shard_of(c, h);
	pthread_mutex_lock(&s->mu);
	cnode **pp = find(s, h, rec->nonce, rec->nonce_len);
	if (*pp != NULL) {
		/* the database holds one row per nonce: this one replaces
		 * whatever an earlier row of it left here */
		cnode *old = *pp;
		*pp = old->next;
		s->count--;
		s->bytes -= node_size(old);
		free(old);
	}
	if ((s->count >= s->cap || s->bytes + sz > s->max_bytes) && now > s->last_sweep) {
		s->last_sweep = now;
		shard_drop(s, now, true);
	}
	if (s->count >= s->cap || s->bytes + sz > s->max_bytes) {
		pthread_mutex_unlock(&s->mu);
		free(n);
		return;
	}
	cnode **b = bucket_of(s, h);
	n->next = *b;
	*b = n;
	s->count++;
	s->bytes += sz;
	if (n->expires_at < s->min_expiry)
		s->min_expiry = n->expires_at;
	pthread_mutex_unlock(&s->mu);
}

void nonce_cache_consumed(nonce_cache *c, const uint8_t *nonce, size_t len, int64_t consumed_at)
{
	if (c == NULL || len < OTA_NONCE_MIN_BYTES || len > OTA_NONCE_MAX_BYTES)
		return;
	uint64_t h = key_hash(nonce, len);
	shard *s = shard_of(c, h);
	pthread_mutex_lock(&s->mu);
	cnode *n = *find(s, h, nonce, len);
	if (n != NULL)
		n->consumed_at = consumed_at;
	pthread_mutex_unlock(&s->mu);
}

bool nonce_cache_get(nonce_cache *c, ota_bytes nonce, ota_challenge *out)
{
	if (c == NULL || nonce.len < OTA_NONCE_MIN_BYTES || nonce.len > OTA_NONCE_MAX_BYTES)
		return false;
	uint64_t h = key_hash(nonce.ptr, nonce.len);
	shard *s = shard_of(c, h);
	pthread_mutex_lock(&s->mu);
	const cnode *n = *find(s, h, nonce.ptr, nonce.len);
	if (n == NULL) {
		pthread_mutex_unlock(&s->mu);
		return false;
	}
	/* out was cleared by the caller: the record is byte for byte what
	 * fill_challenge (store.c) makes of the row */
	const unsigned char *p = n->data;
	memcpy(out->nonce, p, n->nonce_len);
	out->nonce_len = n->nonce_len;
	p += n->nonce_len;
	memcpy(out->txn, p, n->txn_len);
	p += n->txn_len;
	memcpy(out->issuer, p, n->issuer_len);
	p += n->issuer_len;
	memcpy(out->scope, p, n->scope_len);
	out->epoch = n->epoch;
	out->issued_at = n->issued_at;
	out->expires_at = n->expires_at;
	out->consumed_at = n->consumed_at;
	out->row = n->row;
	s->hits++;
	pthread_mutex_unlock(&s->mu);
	return true;
}

void nonce_cache_purge(nonce_cache *c, int64_t cutoff)
{
	if (c == NULL)
		return;
	for (unsigned i = 0; i < SHARDS; i++) {
		shard *s = &c->sh[i];
		pthread_mutex_lock(&s->mu);
		shard_drop(s, cutoff, false);
		pthread_mutex_unlock(&s->mu);
	}
}

void nonce_cache_stats(nonce_cache *c, uint64_t *hits, uint64_t *entries)
{
	uint64_t h = 0, n = 0;
	for (unsigned i = 0; c != NULL && i < SHARDS; i++) {
		shard *s = &c->sh[i];
		pthread_mutex_lock(&s->mu);
		h += s->hits;
		n += s->count;
		pthread_mutex_unlock(&s->mu);
	}
	if (hits != NULL)
		*hits = h;
	if (entries != NULL)
		*entries = n;
}
