/*
 * nonce-store/store.c - single-use challenges, heads and stored acceptances
 * in one sqlite (WAL) file. See include/ota/nonce.h and docs/nonce-store.md.
 */
#include "ota/nonce.h"

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "nonce_internal.h"
#include "ota/sqlite.h"

/* 1: heads without an owner; 2: each (txn, boundary) lane bound to the
 * issuer of its first accepted record (heads.issuer); 3: acceptances found
 * by lane and record id (UNIQUE(txn, boundary, record_id)), no longer by a
 * record id index over all of them; 4: a lane is (txn, issuer, boundary),
 * each issuer's boundaries its own (no issuer can take a boundary name
 * before the issuer it belongs to). Older files are migrated when opened
 * (migrate_v1, migrate_v2, migrate_v3). */
#define SCHEMA_VERSION 4

static const char schema_sql[] =
	"CREATE TABLE IF NOT EXISTS ota_meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;"
	/* Rows live in issue order (rowid), found through the nonce index:
	 * a consume rewrites a table page near its neighbours in time (few
	 * WAL pages per batch), never the index. */
	"CREATE TABLE IF NOT EXISTS challenges(id INTEGER PRIMARY KEY,"
	" nonce BLOB NOT NULL UNIQUE, epoch INTEGER NOT NULL, txn TEXT NOT NULL,"
	" issuer TEXT NOT NULL, scope TEXT NOT NULL, issued_at INTEGER NOT NULL,"
	" expires_at INTEGER NOT NULL, consumed_at INTEGER);"
	"CREATE INDEX IF NOT EXISTS challenges_expiry ON challenges(expires_at);"
	/* a lane is (txn, issuer, boundary): the issuer is the challenge's,
	 * which admission requires to be the attestation's signer */
	/* (the key's columns first and in its order: sqlite 3.40's
	 * integrity_check reports NULLs in a WITHOUT ROWID table whose key
	 * columns are declared in another order) */
	"CREATE TABLE IF NOT EXISTS heads(txn TEXT NOT NULL, issuer TEXT NOT NULL,"
	" boundary TEXT NOT NULL, head TEXT NOT NULL, PRIMARY KEY(txn, issuer, boundary))"
	" WITHOUT ROWID;"
	/* Acceptances too are appended in commit order, found by their lane
	 * and record id: a new record's index entry lands beside its lane's
	 * earlier ones (the pages its heads row and its lane's recent records
	 * are on), where an index of record ids alone (hashes) put every new
	 * entry on a page of its own across the whole history. A record id
	 * covers the COSE bytes, which carry the txn and boundary claims, so
	 * it names one lane. */
	"CREATE TABLE IF NOT EXISTS acceptances(seq INTEGER PRIMARY KEY,"
	" record_id TEXT NOT NULL,"
	" txn TEXT NOT NULL, boundary TEXT NOT NULL, prior TEXT NOT NULL,"
	" nonce BLOB NOT NULL, accepted_at INTEGER NOT NULL,"
	" attestation BLOB NOT NULL, acceptance BLOB NOT NULL,"
	/* the lane's issuer (last: where schema 3 -> 4 adds it) */
	" issuer TEXT NOT NULL DEFAULT '',"
	" UNIQUE(txn, boundary, record_id));";

enum {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_ISSUE,
	ST_CONSUME,
	ST_CONSUME_ROW,
	ST_GET,
	ST_GET_ROW,
	ST_HEAD_GET,
	ST_HEAD_INSERT,
	ST_HEAD_CAS,
	ST_ACC_EXISTS,
	ST_ACC_INSERT,
	ST_ACC_GET,
	ST_PURGE,
	ST_COUNT_
};

static const char *const stmt_sql[ST_COUNT_] = {
	[ST_BEGIN] = "BEGIN IMMEDIATE",
	[ST_COMMIT] = "COMMIT",
	[ST_ROLLBACK] = "ROLLBACK",
	[ST_ISSUE] = "INSERT INTO challenges(nonce, epoch, txn, issuer, scope, issued_at, expires_at)"
		     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	/* The one decision: a live, unexpired, current-epoch row flips to
	 * consumed, and only one statement can ever see it flip. ?1 is the
	 * time it must be unexpired at, ?7 the time recorded. (No RETURNING:
	 * sqlite builds an ephemeral table for it on every run, which cost
	 * more than the whole UPDATE; the row is read back afterwards in the
	 * same transaction.) */
	[ST_CONSUME] = "UPDATE challenges SET consumed_at = ?7"
		       " WHERE nonce = ?2 AND consumed_at IS NULL AND expires_at > ?1 AND issued_at <= ?7"
		       " AND epoch >= ?3 AND (?4 IS NULL OR txn = ?4)"
		       " AND (?5 IS NULL OR issuer = ?5) AND (?6 IS NULL OR scope = ?6)",
	/* The same decision for an admission, on the row its read found (by
	 * rowid: no second walk of the nonce index). Every condition is still
	 * in the WHERE, the read before it only explains a refusal. */
	[ST_CONSUME_ROW] = "UPDATE challenges SET consumed_at = ?7"
			   " WHERE id = ?8 AND nonce = ?2 AND consumed_at IS NULL AND expires_at > ?1"
			   " AND issued_at <= ?7 AND epoch >= ?3 AND txn = ?4 AND issuer = ?5 AND scope = ?6",
	[ST_GET] = "SELECT epoch, txn, issuer, scope, issued_at, expires_at, consumed_at, id"
		   " FROM challenges WHERE nonce = ?1",
	/* the same row by the rowid a read reported (its nonce is compared) */
	[ST_GET_ROW] = "SELECT epoch, txn, issuer, scope, issued_at, expires_at, consumed_at, id, nonce"
		       " FROM challenges WHERE id = ?1",
	[ST_HEAD_GET] = "SELECT head FROM heads WHERE txn = ?1 AND issuer = ?2 AND boundary = ?3",
	[ST_HEAD_INSERT] = "INSERT INTO heads(txn, issuer, boundary, head) VALUES(?1, ?2, ?3, ?4)",
	[ST_HEAD_CAS] = "UPDATE heads SET head = ?4 WHERE txn = ?1 AND issuer = ?2 AND boundary = ?3"
	                " AND head = ?5",
	[ST_ACC_EXISTS] = "SELECT 1 FROM acceptances WHERE record_id = ?1 AND txn = ?2"
	                  " AND boundary = ?3 AND issuer = ?4",
	[ST_ACC_INSERT] = "INSERT INTO acceptances(record_id, txn, boundary, prior, nonce, accepted_at,"
			  " attestation, acceptance, issuer) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	[ST_ACC_GET] = "SELECT attestation, acceptance FROM acceptances"
		       " WHERE txn = ?2 AND boundary = ?3 AND record_id = ?1",
	[ST_PURGE] = "DELETE FROM challenges WHERE expires_at <= ?1 - ?2",
};

/*
 * Connections for reads (peek, lookups, counts): in WAL mode they never wait
 * for the writer's fsync. Several, so that the threads that peek at once
 * (one per event loop in ota-attestd) do not queue on one mutex; a thread
 * keeps to the reader its first call picked. (Not memory-mapped: the file
 * grows with every checkpoint here, and sqlite then remaps it, which cost
 * the peek more in page faults and TLB shootdowns than the reads it saved.)
 */
#define READERS 4

typedef struct reader {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT_];
	pthread_mutex_t mu;
	bool mu_ok;
} reader;

/*
 * WAL checkpoints, off the writer's thread. sqlite's automatic checkpoint
 * runs inside the COMMIT that crosses its threshold: the writer copied
 * 4096 pages into the database and synced it (16 MiB, tens of ms, up to
 * 100+ on this machine's disk) while every operation queued behind it
 * waited, and its CPU (about 20 % of the group commit's) was on the
 * committer's thread. Here the writer only notes, in its WAL hook, that
 * the WAL has CKPT_FRAMES frames, and a thread of the handle with a
 * connection of its own copies them (PASSIVE: beside the writer, never
 * blocking it; again while a pass leaves CKPT_TAIL frames or more
 * uncopied, at most 8 passes), then runs a RESTART checkpoint: it holds
 * the writer back only for the tail the passes left, and the next
 * transaction writes the WAL from its start again, so the WAL does not
 * grow under a load that never pauses. Should the WAL still reach
 * CKPT_HARD frames (the thread could not start, or cannot keep up, or a
 * reader holds the log), the writer checkpoints itself, as sqlite would.
 * Commits are durable in the WAL either way: a checkpoint only moves them.
 */
#define CKPT_FRAMES 4096
#define CKPT_TAIL 256
#define CKPT_HARD (4 * CKPT_FRAMES)
/* How long the checkpointer waits for a lock. A RESTART holds the writer
 * lock while it waits for the readers to leave the log, so the writer may
 * wait as long: a reader that keeps its snapshot (another process reading
 * the file) costs the writer at most this per attempt, and then the WAL
 * just grows until the reader lets go (the writer's own checkpoints at
 * CKPT_HARD cannot pass a reader either). */
#define CKPT_BUSY_MS 50
/* After a RESTART that could not finish (SQLITE_BUSY: a reader on an old
 * snapshot), none for this long, only PASSIVE passes: else each of the
 * writer's commits would wake the checkpointer into another RESTART and
 * another wait of up to CKPT_BUSY_MS with the writer lock held. */
#define CKPT_BACKOFF_MS 1000
/* A RESTART that found the lock busy is tried again once its back-off is
 * over, by the checkpointer itself (a timed wait), up to this many times
 * in a row: without it the last burst's WAL, when its last RESTART met a
 * commit or a reader, stays unrestarted until the next commit wakes the
 * checkpointer, however long the store then stays idle. */
#define CKPT_RETRIES 8

typedef struct checkpointer {
	sqlite3 *db; /* its own connection (the thread's) */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool started; /* thread, mu and cv live */
	bool due, stop;
	int frames, tail, hard; /* CKPT_FRAMES, CKPT_TAIL, CKPT_HARD (tests change them) */
	int64_t backoff_us;       /* CKPT_BACKOFF_MS */
	int64_t no_restart_until; /* mono_us(); 0 when setting the limits */
	int64_t retry_at;         /* mono_us() of its own next try; 0: none */
	int retries;              /* busy RESTARTs in a row (CKPT_RETRIES) */
	uint64_t passes, restarts, restarts_busy, writer_ckpts;
	int last_passive, last_restart, last_log, last_done; /* the last pass's (tests) */
} checkpointer;

struct ota_nonce_store {
	sqlite3 *db;                 /* the writer: every transaction (mu) */
	sqlite3_stmt *st[ST_COUNT_];
	pthread_mutex_t mu;
	checkpointer ck;
	char *path;
	reader rd[READERS];
	atomic_uint next_reader;
	/* the challenges this handle issued (peek_cache.c); NULL: none */
	nonce_cache *cache;
	ota_nonce_opts opts;
	int64_t epoch;
	int64_t min_epoch;
	int64_t busy_start_us;
	bool mu_ok;
	char where[128];
};

void ota_nonce_opts_init(ota_nonce_opts *o)
{
	if (o == NULL)
		return;
	memset(o, 0, sizeof *o);
	o->sync = OTA_NONCE_SYNC_FULL;
	o->skew = OTA_NONCE_DEFAULT_SKEW;
	o->busy_timeout_ms = 10000;
}

static int64_t mono_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Short sleeps (sqlite's default handler sleeps whole milliseconds and
 * more), bounded by busy_timeout_ms for one lock wait. */
static int busy_cb(void *ctx, int count)
{
	ota_nonce_store *s = ctx;
	int64_t now = mono_us();
	if (count == 0)
		s->busy_start_us = now;
	if (now - s->busy_start_us > (int64_t)s->opts.busy_timeout_ms * 1000)
		return 0;
	long ns = count < 20 ? 20000L : count < 200 ? 200000L : 1000000L;
	struct timespec d = {0, ns};
	nanosleep(&d, NULL);
	return 1;
}

static ota_err db_err(ota_nonce_store *s, int rc, ota_error *err, const char *what)
{
	int prim = rc & 0xff;
	if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
		return ota_error_set(err, OTA_ERR_NONCE_BUSY, s->where, "%s: %s", what,
		                     sqlite3_errstr(rc));
	return ota_error_set(err, OTA_ERR_DB, s->where, "%s: %s", what,
	                     s->db != NULL ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
}

/* Runs a statement that yields no row we need. */
static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	while (rc == SQLITE_ROW)
		rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static ota_err exec_sql(ota_nonce_store *s, const char *sql, ota_error *err)
{
	int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, sql);
	return OTA_OK;
}

static int64_t meta_get(ota_nonce_store *s, const char *k, int64_t dflt)
{
	sqlite3_stmt *st = NULL;
	int64_t v = dflt;
	if (sqlite3_prepare_v2(s->db, "SELECT v FROM ota_meta WHERE k = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return dflt;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int meta_set(ota_nonce_store *s, const char *k, int64_t v)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO ota_meta(k, v) VALUES(?1, ?2)",
	                            -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, v);
	rc = step_done(st);
	sqlite3_finalize(st);
	return rc;
}

static bool str_ok(const char *v, size_t max);

/*
 * Schema 1 -> 2, inside open_epoch's transaction: heads gains its owner,
 * the issuer of the lane's first accepted record (the one stored with
 * prior ""), read from that record's stored acceptance (its "issuer"
 * claim). A lane whose first acceptance is missing or unreadable stops the
 * open (nonce_store_schema): nothing is guessed, nothing is half-migrated.
 */
/*
 * The first schema 1 stores kept challenges and acceptances WITHOUT ROWID,
 * keyed by nonce and by record id (no id / seq column). Such tables are
 * rebuilt in today's layout, rows in issue and acceptance order, inside the
 * same transaction.
 */
static ota_err relayout_v1(ota_nonce_store *s, ota_error *err)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(
		s->db, "SELECT 1 FROM pragma_table_info('challenges') WHERE name = 'id'", -1, &q, NULL);
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, "migrate schema 1");
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	if (rc == SQLITE_ROW)
		return OTA_OK; /* today's layout */
	if (rc != SQLITE_DONE)
		return db_err(s, rc, err, "migrate schema 1");
	ota_err e;
	if ((e = exec_sql(s,
	                  "DROP INDEX IF EXISTS challenges_expiry;"
	                  "ALTER TABLE challenges RENAME TO challenges_v1;"
	                  "ALTER TABLE acceptances RENAME TO acceptances_v1;",
	                  err)) != OTA_OK ||
	    (e = exec_sql(s, schema_sql, err)) != OTA_OK)
		return e;
	return exec_sql(s,
	                "INSERT INTO challenges(nonce, epoch, txn, issuer, scope, issued_at, expires_at,"
	                " consumed_at) SELECT nonce, epoch, txn, issuer, scope, issued_at, expires_at,"
	                " consumed_at FROM challenges_v1 ORDER BY issued_at, nonce;"
	                "INSERT INTO acceptances(record_id, txn, boundary, prior, nonce, accepted_at,"
	                " attestation, acceptance) SELECT record_id, txn, boundary, prior, nonce,"
	                " accepted_at, attestation, acceptance FROM acceptances_v1"
	                " ORDER BY accepted_at, record_id;"
	                "DROP TABLE challenges_v1; DROP TABLE acceptances_v1;",
	                err);
}

static ota_err migrate_v1(ota_nonce_store *s, ota_error *err)
{
	ota_err e;
	sqlite3_stmt *lanes = NULL, *first = NULL, *set = NULL;
	if ((e = relayout_v1(s, err)) != OTA_OK ||
	    (e = exec_sql(s, "ALTER TABLE heads ADD COLUMN issuer TEXT NOT NULL DEFAULT ''", err)) !=
	            OTA_OK)
		return e;
	int rc = sqlite3_prepare_v2(s->db, "SELECT txn, boundary FROM heads", -1, &lanes, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db,
		                        "SELECT acceptance FROM acceptances WHERE txn = ?1 AND"
		                        " boundary = ?2 AND prior = '' ORDER BY seq LIMIT 1",
		                        -1, &first, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(s->db,
		                        "UPDATE heads SET issuer = ?3 WHERE txn = ?1 AND boundary = ?2",
		                        -1, &set, NULL);
	if (rc != SQLITE_OK) {
		e = db_err(s, rc, err, "migrate schema 1");
		goto out;
	}
	while ((rc = sqlite3_step(lanes)) == SQLITE_ROW) {
		const unsigned char *txn = sqlite3_column_text(lanes, 0);
		const unsigned char *boundary = sqlite3_column_text(lanes, 1);
		char owner[OTA_MAX_ISSUER_BYTES + 1];
		bool got = false;
		sqlite3_bind_text(first, 1, (const char *)txn, -1, SQLITE_STATIC);
		sqlite3_bind_text(first, 2, (const char *)boundary, -1, SQLITE_STATIC);
		if ((rc = sqlite3_step(first)) == SQLITE_ROW) {
			ota_bytes acc = ota_bytes_make(sqlite3_column_blob(first, 0),
			                               (size_t)sqlite3_column_bytes(first, 0));
			got = nonce_acceptance_issuer(acc, owner, sizeof owner);
		}
		sqlite3_reset(first);
		sqlite3_clear_bindings(first);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
			e = db_err(s, rc, err, "migrate schema 1");
			goto out;
		}
		if (!got || !str_ok(owner, OTA_MAX_ISSUER_BYTES)) {
			e = ota_error_set(err, OTA_ERR_NONCE_SCHEMA, s->where,
			                  "schema 1 cannot be migrated: no readable first acceptance"
			                  " for txn \"%.64s\", boundary \"%.64s\"",
			                  txn != NULL ? (const char *)txn : "",
			                  boundary != NULL ? (const char *)boundary : "");
			goto out;
		}
		sqlite3_bind_text(set, 1, (const char *)txn, -1, SQLITE_STATIC);
		sqlite3_bind_text(set, 2, (const char *)boundary, -1, SQLITE_STATIC);
		sqlite3_bind_text(set, 3, owner, -1, SQLITE_STATIC);
		rc = step_done(set);
		sqlite3_clear_bindings(set);
		if (rc != SQLITE_OK) {
			e = db_err(s, rc, err, "migrate schema 1");
			goto out;
		}
	}
	e = rc == SQLITE_DONE ? OTA_OK : db_err(s, rc, err, "migrate schema 1");
out:
	sqlite3_finalize(set);
	sqlite3_finalize(first);
	sqlite3_finalize(lanes);
	return e;
}

/* A table rebuilt in today's layout: rename (the old table out of the way),
 * today's schema (creates the new one), copy (the rows across, the old
 * table dropped). */
static ota_err rebuild(ota_nonce_store *s, const char *rename, const char *copy, ota_error *err)
{
	ota_err e;
	if ((e = exec_sql(s, rename, err)) != OTA_OK || (e = exec_sql(s, schema_sql, err)) != OTA_OK)
		return e;
	return exec_sql(s, copy, err);
}

/*
 * Schema 2 -> 3, inside open_epoch's transaction: acceptances is rebuilt
 * without the index of record ids alone (sqlite cannot drop the index of a
 * UNIQUE column), its rows in the same order with the same seq. A table
 * already in today's layout (a schema 1 store rebuilt by relayout_v1) is
 * left as it is.
 */
static ota_err migrate_v2(ota_nonce_store *s, ota_error *err)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(s->db,
	                            "SELECT 1 FROM pragma_index_list('acceptances') AS il"
	                            " WHERE il.\"unique\" = 1"
	                            " AND (SELECT count(*) FROM pragma_index_info(il.name)) = 1"
	                            " AND (SELECT name FROM pragma_index_info(il.name)) = 'record_id'",
	                            -1, &q, NULL);
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, "migrate schema 2");
	rc = sqlite3_step(q);
	sqlite3_finalize(q);
	if (rc == SQLITE_DONE)
		return OTA_OK; /* no index of record ids alone: today's layout */
	if (rc != SQLITE_ROW)
		return db_err(s, rc, err, "migrate schema 2");
	return rebuild(s, "ALTER TABLE acceptances RENAME TO acceptances_v2;",
	               "INSERT INTO acceptances(seq, record_id, txn, boundary, prior, nonce,"
	               " accepted_at, attestation, acceptance) SELECT seq, record_id, txn, boundary,"
	               " prior, nonce, accepted_at, attestation, acceptance FROM acceptances_v2"
	               " ORDER BY seq;"
	               "DROP TABLE acceptances_v2;",
	               err);
}

/* One integer from sql (-1 when no row). */
static ota_err query_int(ota_nonce_store *s, const char *sql, int64_t *out, ota_error *err)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(s->db, sql, -1, &q, NULL);
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, "migrate schema 3");
	rc = sqlite3_step(q);
	*out = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
	sqlite3_finalize(q);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? OTA_OK : db_err(s, rc, err, "migrate schema 3");
}

/*
 * Schema 3 -> 4, inside open_epoch's transaction: heads is rebuilt keyed
 * by (txn, issuer, boundary), the same rows (each schema 3 lane has one
 * owner, so no two rows collide), and each acceptance gains its lane's
 * issuer, its (txn, boundary) lane's owner (every row is rewritten once:
 * the open takes time in proportion to the stored acceptances). Tables
 * already so are left as they are.
 */
static ota_err migrate_v3(ota_nonce_store *s, ota_error *err)
{
	int64_t pk, has;
	ota_err e;
	if ((e = query_int(s, "SELECT pk FROM pragma_table_info('heads') WHERE name = 'issuer'", &pk,
	                   err)) != OTA_OK ||
	    (e = query_int(s, "SELECT count(*) FROM pragma_table_info('acceptances')"
	                      " WHERE name = 'issuer'",
	                   &has, err)) != OTA_OK)
		return e;
	if (pk < 0)
		return ota_error_set(err, OTA_ERR_NONCE_SCHEMA, s->where,
		                     "schema 3 cannot be migrated: heads has no issuer");
	if (has == 0 &&
	    (e = exec_sql(s, "ALTER TABLE acceptances ADD COLUMN issuer TEXT NOT NULL DEFAULT ''",
	                  err)) != OTA_OK)
		return e;
	if (pk > 0) { /* today's key: every acceptance already names its issuer */
		int64_t unnamed;
		if ((e = query_int(s, "SELECT count(*) FROM acceptances WHERE issuer = ''", &unnamed,
		                   err)) != OTA_OK)
			return e;
		return unnamed == 0 ? OTA_OK
		                    : ota_error_set(err, OTA_ERR_NONCE_SCHEMA, s->where,
		                                    "%lld acceptances name no issuer",
		                                    (long long)unnamed);
	}
	if ((e = exec_sql(s,
	                  "UPDATE acceptances SET issuer = coalesce((SELECT h.issuer FROM heads AS h"
	                  " WHERE h.txn = acceptances.txn AND h.boundary = acceptances.boundary), '')"
	                  " WHERE issuer = '';",
	                  err)) != OTA_OK)
		return e;
	int64_t orphans;
	if ((e = query_int(s, "SELECT count(*) FROM acceptances WHERE issuer = ''",
	                   &orphans, err)) != OTA_OK)
		return e;
	if (orphans != 0)
		return ota_error_set(err, OTA_ERR_NONCE_SCHEMA, s->where,
		                     "schema 3 cannot be migrated: %lld acceptances on no lane",
		                     (long long)orphans);
	return rebuild(s, "ALTER TABLE heads RENAME TO heads_v3;",
	               "INSERT INTO heads(txn, issuer, boundary, head) SELECT txn, issuer, boundary,"
	               " head FROM heads_v3;"
	               "DROP TABLE heads_v3;",
	               err);
}

/* The checkpointer's thread: PASSIVE passes until the uncopied tail is
 * short, then one RESTART (see CKPT_FRAMES). Errors are not fatal: the
 * frames stay in the WAL, and the writer checkpoints itself at CKPT_HARD. */
static void *ckpt_main(void *arg)
{
	ota_nonce_store *s = arg;
	checkpointer *c = &s->ck;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->due && !c->stop) {
			if (c->retry_at == 0) {
				pthread_cond_wait(&c->cv, &c->mu);
				continue;
			}
			struct timespec at = {(time_t)(c->retry_at / 1000000),
			                      (long)(c->retry_at % 1000000) * 1000};
			pthread_cond_timedwait(&c->cv, &c->mu, &at);
			if (c->retry_at != 0 && mono_us() >= c->retry_at) {
				c->retry_at = 0;
				c->due = true;
			}
		}
		if (c->stop)
			break;
		c->due = false;
		int tail = c->tail;
		int64_t backoff = c->backoff_us, until = c->no_restart_until;
		pthread_mutex_unlock(&c->mu);
		int log = -1, done = -1, rc = SQLITE_OK;
		for (int pass = 0; pass < 8; pass++) {
			rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
			if (rc != SQLITE_OK || log < 0 || log - done < tail)
				break;
		}
		/* The RESTART even when the tail is still long (a writer faster than
		 * the passes): the writer then waits for that tail, which is the
		 * back-pressure that keeps the WAL bounded. (log -1: not in WAL mode,
		 * nothing was checkpointed.) */
		uint64_t restarted = 0, busy = 0;
		int rc_passive = rc, rc_restart = -1;
		if (rc == SQLITE_OK && log >= 0 && mono_us() >= until) {
			rc = rc_restart =
			    sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_RESTART, &log, &done);
			if (rc == SQLITE_OK && log >= 0)
				restarted = 1;
			else if ((rc & 0xff) == SQLITE_BUSY)
				busy = 1;
		}
		pthread_mutex_lock(&c->mu);
		/* a PASSIVE that found the checkpoint lock taken (the writer's own
		 * checkpoint at CKPT_HARD) is tried again the same way */
		if (busy || (rc_passive & 0xff) == SQLITE_BUSY) {
			c->no_restart_until = mono_us() + backoff;
			c->retry_at = c->retries < CKPT_RETRIES ? c->no_restart_until : 0;
			c->retries++;
		} else if (restarted) {
			c->retry_at = 0;
			c->retries = 0;
		}
		c->passes++;
		c->last_passive = rc_passive;
		c->last_restart = rc_restart;
		c->last_log = log;
		c->last_done = done;
		c->restarts += restarted;
		c->restarts_busy += busy;
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Starts the checkpointer (its connection, then its thread), when the
 * store is opened, with the readers; when it cannot, the writer keeps
 * checkpointing itself. */
static void ckpt_start(ota_nonce_store *s)
{
	checkpointer *c = &s->ck;
	bool mu = false, cv = false;
	if (sqlite3_open_v2(s->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK)
		goto fail;
	sqlite3_busy_timeout(c->db, CKPT_BUSY_MS);
	pthread_condattr_t ca; /* the retries' timed waits: mono_us's clock */
	if (pthread_condattr_init(&ca) != 0)
		goto fail;
	/* a connection learns that the file is in WAL mode when it first reads
	 * it; until then a checkpoint through it does nothing and says OK */
	if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
	    sqlite3_exec(c->db, "SELECT count(*) FROM ota_meta", NULL, NULL, NULL) == SQLITE_OK &&
	    (mu = pthread_mutex_init(&c->mu, NULL) == 0))
		cv = pthread_cond_init(&c->cv, &ca) == 0;
	pthread_condattr_destroy(&ca);
	if (!cv)
		goto fail;
	/* with every signal blocked: the process's handlers (ota run's
	 * SIGINT/SIGTERM, which must interrupt the caller's waits) keep
	 * receiving them on the caller's threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&c->thread, NULL, ckpt_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		goto fail;
	pthread_setname_np(c->thread, "ota-checkpoint"); /* top -H, perf */
	c->started = true;
	return;
fail:
	if (cv)
		pthread_cond_destroy(&c->cv);
	if (mu)
		pthread_mutex_destroy(&c->mu);
	sqlite3_close(c->db);
	c->db = NULL;
}

static void ckpt_stop(ota_nonce_store *s)
{
	checkpointer *c = &s->ck;
	if (!c->started)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	sqlite3_close(c->db);
	c->db = NULL;
	c->started = false;
}

/* The writer's WAL hook, after each of its commits (under s->mu): frames
 * is the number of frames in the WAL. */
static int wal_hook(void *ctx, sqlite3 *db, const char *name, int frames)
{
	ota_nonce_store *s = ctx;
	checkpointer *c = &s->ck;
	if (frames < c->frames)
		return SQLITE_OK;
	if (frames < c->hard && c->started) {
		pthread_mutex_lock(&c->mu);
		c->due = true;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->mu);
		return SQLITE_OK;
	}
	/* as sqlite's own automatic checkpoint: PASSIVE, its result ignored */
	(void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	c->writer_ckpts++;
	return SQLITE_OK;
}

/* Creates the schema and durably bumps the epoch (synchronous=FULL). */
static ota_err open_epoch(ota_nonce_store *s, ota_error *err)
{
	ota_err e;
	int rc;
	/* Checkpoints every CKPT_FRAMES = 4096 WAL pages (16 MiB at 4 KiB
	 * pages; sqlite's default is 1000), by the checkpointer: the pages
	 * written by every commit (interior pages, the last leaf of each
	 * table, the header page) are copied into the database once per
	 * checkpoint, not once per 1000 frames. The WAL hook replaces sqlite's
	 * automatic checkpoint.
	 * A 16 MiB page cache, not 64: at every COMMIT sqlite walks the
	 * whole hash of its page cache once a B-tree split in the transaction
	 * has renumbered pages through the pending-byte page (balance_nonroot;
	 * schema 2's random record_id keys split often), so the walk grows with the
	 * cache, and a larger cache also costs the writer fresh memory for
	 * acceptance rows it never reads again. Store-only admissions, 150,000
	 * and 600,000 of them: 24.2 -> 22.1 and 28.9 -> 27.6 us of CPU each. */
	if ((e = exec_sql(s, "PRAGMA synchronous=FULL", err)) != OTA_OK ||
	    (e = exec_sql(s, "PRAGMA cache_size=-16384", err)) != OTA_OK)
		return e;
	sqlite3_wal_hook(s->db, wal_hook, s);
	if ((e = exec_sql(s, "BEGIN IMMEDIATE", err)) != OTA_OK)
		return e;
	if ((e = exec_sql(s, schema_sql, err)) != OTA_OK)
		goto out_rollback;
	int64_t ver = meta_get(s, "schema", 0);
	if (ver >= 1 && ver <= 3) {
		if ((ver == 1 && (e = migrate_v1(s, err)) != OTA_OK) ||
		    (ver <= 2 && (e = migrate_v2(s, err)) != OTA_OK) ||
		    (e = migrate_v3(s, err)) != OTA_OK)
			goto out_rollback;
	} else if (ver != 0 && ver != SCHEMA_VERSION) {
		e = ota_error_set(err, OTA_ERR_NONCE_SCHEMA, s->where, "schema version %lld",
		                  (long long)ver);
		goto out_rollback;
	}
	int64_t epoch = meta_get(s, "epoch", 0) + 1;
	int64_t min_epoch = meta_get(s, "min_epoch", 1);
	/* An epoch that ran with synchronous=NORMAL may have lost consumes
	 * in a power loss: nothing issued in it (or before) stays valid. */
	if (meta_get(s, "last_sync", OTA_NONCE_SYNC_FULL) == OTA_NONCE_SYNC_NORMAL ||
	    s->opts.sync == OTA_NONCE_SYNC_NORMAL)
		min_epoch = epoch;
	if ((rc = meta_set(s, "schema", SCHEMA_VERSION)) != SQLITE_OK ||
	    (rc = meta_set(s, "epoch", epoch)) != SQLITE_OK ||
	    (rc = meta_set(s, "min_epoch", min_epoch)) != SQLITE_OK ||
	    (rc = meta_set(s, "last_sync", (int64_t)s->opts.sync)) != SQLITE_OK) {
		e = db_err(s, rc, err, "epoch bump");
		goto out_rollback;
	}
	if ((e = exec_sql(s, "COMMIT", err)) != OTA_OK)
		goto out_rollback;
	s->epoch = epoch;
	s->min_epoch = min_epoch;
	if (s->opts.sync == OTA_NONCE_SYNC_NORMAL)
		return exec_sql(s, "PRAGMA synchronous=NORMAL", err);
	return OTA_OK;
out_rollback:
	sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return e;
}

ota_err ota_nonce_store_open(const char *path, const ota_nonce_opts *o, ota_nonce_store **out,
                             ota_error *err)
{
	ota_err e;
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "out is NULL");
	*out = NULL;
	if (path == NULL || path[0] == '\0')
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "no path");
	ota_nonce_store *s = calloc(1, sizeof *s);
	if (s == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "nonce-store", "store");
	if (o != NULL)
		s->opts = *o;
	else
		ota_nonce_opts_init(&s->opts);
	if (s->opts.skew < 0)
		s->opts.skew = 0;
	if (s->opts.busy_timeout_ms <= 0)
		s->opts.busy_timeout_ms = 10000;
	snprintf(s->where, sizeof s->where, "nonce-store:%s", path);
	s->ck.frames = CKPT_FRAMES;
	s->ck.tail = CKPT_TAIL;
	s->ck.hard = CKPT_HARD;
	s->ck.backoff_us = (int64_t)CKPT_BACKOFF_MS * 1000;
	if ((s->path = strdup(path)) == NULL) {
		free(s);
		return ota_error_set(err, OTA_ERR_NOMEM, "nonce-store", "path");
	}
	if (pthread_mutex_init(&s->mu, NULL) != 0) {
		free(s->path);
		free(s);
		return ota_error_set(err, OTA_ERR_INTERNAL, "nonce-store", "mutex");
	}
	s->mu_ok = true;
	/* without it (out of memory) every peek reads sqlite */
	s->cache = nonce_cache_new(NONCE_PEEK_CACHE_ENTRIES, NONCE_PEEK_CACHE_BYTES);
	for (int i = 0; i < READERS; i++) {
		if (pthread_mutex_init(&s->rd[i].mu, NULL) != 0) {
			e = ota_error_set(err, OTA_ERR_INTERNAL, "nonce-store", "mutex");
			goto out_close;
		}
		s->rd[i].mu_ok = true;
	}
	/* the store's records are what makes a nonce single-use: it is made
	 * 0600 in a 0700 directory by us, and one that another user owns or
	 * may write (or a symlink) is refused before sqlite opens it */
	if ((e = ota_private_file_check(path, OTA_PRIVATE_CREATE, err)) != OTA_OK)
		goto out_close;
	/* In synchronous=FULL (sqlite syncs the WAL before each COMMIT
	 * returns) the writer gathers each transaction's WAL frames into one
	 * write (walbuf.c): two system calls per page otherwise. */
	const char *vfs = NULL;
	if (s->opts.sync == OTA_NONCE_SYNC_FULL && nonce_walbuf_register() == SQLITE_OK)
		vfs = NONCE_WALBUF_VFS;
	int rc = sqlite3_open_v2(path, &s->db,
	                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
	                         vfs);
	if (rc != SQLITE_OK) {
		e = db_err(s, rc, err, "open");
		goto out_close;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_handler(s->db, busy_cb, s);
	rc = ota_sqlite_wal(s->db);
	if (rc != SQLITE_OK) {
		e = db_err(s, rc, err, "journal_mode=WAL");
		goto out_close;
	}
	if ((e = open_epoch(s, err)) != OTA_OK)
		goto out_close;
	for (int i = 0; i < ST_COUNT_; i++) {
		rc = sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
		                        NULL);
		if (rc != SQLITE_OK) {
			e = db_err(s, rc, err, stmt_sql[i]);
			goto out_close;
		}
	}
	for (int k = 0; k < READERS; k++) {
		reader *r = &s->rd[k];
		rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
		if (rc != SQLITE_OK) {
			e = db_err(s, rc, err, "open reader");
			goto out_close;
		}
		sqlite3_extended_result_codes(r->db, 1);
		sqlite3_busy_timeout(r->db, s->opts.busy_timeout_ms);
		static const int reads[] = {ST_GET, ST_HEAD_GET, ST_ACC_GET};
		for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++) {
			rc = sqlite3_prepare_v3(r->db, stmt_sql[reads[i]], -1, SQLITE_PREPARE_PERSISTENT,
			                        &r->st[reads[i]], NULL);
			if (rc != SQLITE_OK) {
				e = db_err(s, rc, err, stmt_sql[reads[i]]);
				goto out_close;
			}
		}
	}
	ckpt_start(s);
	*out = s;
	return OTA_OK;
out_close:
	ota_nonce_store_close(s);
	return e;
}

void ota_nonce_store_close(ota_nonce_store *s)
{
	if (s == NULL)
		return;
	/* its connection first: the writer's close (the last) then
	 * checkpoints what is left and removes the WAL */
	ckpt_stop(s);
	for (int k = 0; k < READERS; k++) {
		for (int i = 0; i < ST_COUNT_; i++)
			sqlite3_finalize(s->rd[k].st[i]);
		sqlite3_close(s->rd[k].db);
		if (s->rd[k].mu_ok)
			pthread_mutex_destroy(&s->rd[k].mu);
	}
	for (int i = 0; i < ST_COUNT_; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close(s->db);
	if (s->mu_ok)
		pthread_mutex_destroy(&s->mu);
	nonce_cache_free(s->cache);
	free(s->path);
	free(s);
}

void nonce_store_checkpoint_limits(ota_nonce_store *s, int frames, int tail, int hard,
                                   int64_t backoff_ms)
{
	pthread_mutex_lock(&s->mu);
	if (s->ck.started)
		pthread_mutex_lock(&s->ck.mu);
	s->ck.frames = frames;
	s->ck.tail = tail;
	s->ck.hard = hard;
	s->ck.backoff_us = backoff_ms * 1000;
	s->ck.no_restart_until = 0;
	s->ck.retry_at = 0;
	s->ck.retries = 0;
	if (s->ck.started)
		pthread_mutex_unlock(&s->ck.mu);
	pthread_mutex_unlock(&s->mu);
}

void nonce_store_checkpoint_last(ota_nonce_store *s, int *rc_passive, int *rc_restart, int *log,
                                 int *done)
{
	*rc_passive = *rc_restart = *log = *done = -1;
	pthread_mutex_lock(&s->mu);
	if (s->ck.started) {
		pthread_mutex_lock(&s->ck.mu);
		*rc_passive = s->ck.last_passive;
		*rc_restart = s->ck.last_restart;
		*log = s->ck.last_log;
		*done = s->ck.last_done;
		pthread_mutex_unlock(&s->ck.mu);
	}
	pthread_mutex_unlock(&s->mu);
}

void nonce_store_checkpoint_stats(ota_nonce_store *s, uint64_t *passes, uint64_t *restarts,
                                  uint64_t *restarts_busy, uint64_t *writer_ckpts)
{
	pthread_mutex_lock(&s->mu);
	*writer_ckpts = s->ck.writer_ckpts;
	*passes = *restarts = *restarts_busy = 0;
	if (s->ck.started) {
		pthread_mutex_lock(&s->ck.mu);
		*passes = s->ck.passes;
		*restarts = s->ck.restarts;
		*restarts_busy = s->ck.restarts_busy;
		pthread_mutex_unlock(&s->ck.mu);
	}
	pthread_mutex_unlock(&s->mu);
}

void nonce_store_peek_cache_stats(ota_nonce_store *s, uint64_t *hits, uint64_t *entries)
{
	nonce_cache_stats(s->cache, hits, entries);
}

void nonce_store_peek_cache_reset(ota_nonce_store *s, size_t max_entries, size_t max_bytes)
{
	nonce_cache_free(s->cache);
	s->cache = max_entries > 0 ? nonce_cache_new(max_entries, max_bytes) : NULL;
}

int64_t ota_nonce_store_epoch(const ota_nonce_store *s)
{
	return s != NULL ? s->epoch : 0;
}

int64_t ota_nonce_store_min_epoch(const ota_nonce_store *s)
{
	return s != NULL ? s->min_epoch : 0;
}

/* ---- helpers ---- */

/* The reader of the calling thread, locked (reader_unlock). */
static reader *reader_lock(ota_nonce_store *s)
{
	static _Thread_local const ota_nonce_store *home_store;
	static _Thread_local unsigned home;
	if (home_store != s) {
		home_store = s;
		home = atomic_fetch_add(&s->next_reader, 1) % READERS;
	}
	reader *r = &s->rd[home];
	pthread_mutex_lock(&r->mu);
	return r;
}

static void reader_unlock(reader *r)
{
	pthread_mutex_unlock(&r->mu);
}

static bool str_ok(const char *v, size_t max)
{
	if (v == NULL || v[0] == '\0')
		return false;
	size_t n = strnlen(v, max + 1);
	if (n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return false;
	return true;
}

static ota_err check_binding(ota_nonce_store *s, const ota_nonce_binding *b, ota_error *err)
{
	if (b == NULL)
		return ota_error_set(err, OTA_ERR_NONCE_BINDING, s->where, "no binding");
	if (!str_ok(b->txn, OTA_MAX_TXN_BYTES))
		return ota_error_set(err, OTA_ERR_NONCE_BINDING, "txn", "missing, too long or control characters");
	if (!str_ok(b->issuer, OTA_MAX_ISSUER_BYTES))
		return ota_error_set(err, OTA_ERR_NONCE_BINDING, "issuer", "missing, too long or control characters");
	if (!str_ok(b->scope, OTA_MAX_SCOPE_BYTES))
		return ota_error_set(err, OTA_ERR_NONCE_BINDING, "scope", "missing, too long or control characters");
	return OTA_OK;
}

static void copy_text(char *dst, size_t cap, const unsigned char *src)
{
	size_t n = 0;
	if (src != NULL) {
		n = strnlen((const char *)src, cap - 1);
		memcpy(dst, src, n);
	}
	dst[n] = '\0';
}

/* Row columns: epoch, txn, issuer, scope, issued_at, expires_at, consumed_at, id. */
static void fill_challenge(sqlite3_stmt *st, ota_bytes nonce, ota_challenge *c)
{
	memset(c, 0, sizeof *c);
	memcpy(c->nonce, nonce.ptr, nonce.len);
	c->nonce_len = nonce.len;
	c->epoch = sqlite3_column_int64(st, 0);
	copy_text(c->txn, sizeof c->txn, sqlite3_column_text(st, 1));
	copy_text(c->issuer, sizeof c->issuer, sqlite3_column_text(st, 2));
	copy_text(c->scope, sizeof c->scope, sqlite3_column_text(st, 3));
	c->issued_at = sqlite3_column_int64(st, 4);
	c->expires_at = sqlite3_column_int64(st, 5);
	c->consumed_at = sqlite3_column_type(st, 6) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 6);
	c->row = sqlite3_column_int64(st, 7);
}

static ota_err fill_random(ota_nonce_store *s, uint8_t *p, size_t n, ota_error *err)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return ota_error_set(err, OTA_ERR_NONCE_RANDOM, s->where, "getrandom: %s",
			                     strerror(errno));
		}
		got += (size_t)r;
	}
	return OTA_OK;
}

/* ---- single operations (inside a transaction; the caller holds mu) ---- */

static ota_err do_issue(ota_nonce_store *s, const ota_nonce_binding *b, size_t nonce_len,
                        int64_t ttl, int64_t now, ota_challenge *out, ota_error *err)
{
	ota_err e;
	if (nonce_len == 0)
		nonce_len = OTA_NONCE_DEFAULT_BYTES;
	if (nonce_len < OTA_NONCE_MIN_BYTES || nonce_len > OTA_NONCE_MAX_BYTES)
		return ota_error_set(err, OTA_ERR_NONCE_LENGTH, "nonce_len", "%zu bytes", nonce_len);
	if (ttl == 0)
		ttl = OTA_NONCE_DEFAULT_TTL;
	if (ttl < 1 || ttl > OTA_NONCE_MAX_TTL)
		return ota_error_set(err, OTA_ERR_NONCE_TTL, "ttl", "%lld seconds", (long long)ttl);
	if ((e = check_binding(s, b, err)) != OTA_OK)
		return e;
	memset(out, 0, sizeof *out);
	for (int attempt = 0; attempt < 3; attempt++) {
		if ((e = fill_random(s, out->nonce, nonce_len, err)) != OTA_OK)
			return e;
		sqlite3_stmt *st = s->st[ST_ISSUE];
		sqlite3_bind_blob(st, 1, out->nonce, (int)nonce_len, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, s->epoch);
		sqlite3_bind_text(st, 3, b->txn, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, b->issuer, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, b->scope, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 6, now);
		sqlite3_bind_int64(st, 7, now + ttl);
		int rc = step_done(st);
		sqlite3_clear_bindings(st);
		if (rc == SQLITE_CONSTRAINT_UNIQUE || rc == SQLITE_CONSTRAINT_PRIMARYKEY)
			continue; /* 2^-128 at least; draw again */
		if (rc != SQLITE_OK)
			return db_err(s, rc, err, "issue");
		out->nonce_len = nonce_len;
		out->row = sqlite3_last_insert_rowid(s->db);
		out->epoch = s->epoch;
		out->issued_at = now;
		out->expires_at = now + ttl;
		copy_text(out->txn, sizeof out->txn, (const unsigned char *)b->txn);
		copy_text(out->issuer, sizeof out->issuer, (const unsigned char *)b->issuer);
		copy_text(out->scope, sizeof out->scope, (const unsigned char *)b->scope);
		return OTA_OK;
	}
	return ota_error_set(err, OTA_ERR_NONCE_RANDOM, s->where, "repeated nonce collisions");
}

/* Why a challenge cannot be consumed now, recorded as consumed at `at`
 * (rec is the stored row). */
static ota_err judge(ota_nonce_store *s, const ota_challenge *rec, const ota_nonce_binding *expect,
                     int64_t now, int64_t at, ota_error *err)
{
	if (rec->consumed_at != 0)
		return ota_error_set(err, OTA_ERR_NONCE_REPLAYED, "eat_nonce", "consumed at %lld",
		                     (long long)rec->consumed_at);
	if (rec->epoch < s->min_epoch)
		return ota_error_set(err, OTA_ERR_NONCE_STALE_EPOCH, "eat_nonce",
		                     "issued in epoch %lld, valid from %lld", (long long)rec->epoch,
		                     (long long)s->min_epoch);
	if (rec->expires_at <= now)
		return ota_error_set(err, OTA_ERR_NONCE_EXPIRED, "eat_nonce", "expired at %lld",
		                     (long long)rec->expires_at);
	/* judged before its issue: the clock went back. Consumed then, its
	 * consumed_at (the acceptance time) would precede its issued_at, which
	 * no verifier of the archive takes as fresh. */
	if (rec->issued_at > at)
		return ota_error_set(err, OTA_ERR_NONCE_NOT_YET_ISSUED, "eat_nonce",
		                     "issued at %lld, judged at %lld", (long long)rec->issued_at,
		                     (long long)at);
	if (expect != NULL) {
		if (expect->txn != NULL && strcmp(expect->txn, rec->txn) != 0)
			return ota_error_set(err, OTA_ERR_NONCE_TXN_MISMATCH, "txn",
			                     "challenge is bound to another txn");
		if (expect->issuer != NULL && strcmp(expect->issuer, rec->issuer) != 0)
			return ota_error_set(err, OTA_ERR_NONCE_ISSUER_MISMATCH, "iss",
			                     "challenge is bound to another issuer");
		if (expect->scope != NULL && strcmp(expect->scope, rec->scope) != 0)
			return ota_error_set(err, OTA_ERR_NONCE_SCOPE_MISMATCH, "scope",
			                     "challenge is bound to another scope");
	}
	return OTA_OK;
}

/* The challenge row of nonce into rec. */
static ota_err do_get(ota_nonce_store *s, sqlite3_stmt *st, ota_bytes nonce, ota_challenge *rec,
                      ota_error *err)
{
	sqlite3_bind_blob(st, 1, nonce.ptr, (int)nonce.len, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	ota_err e = OTA_OK;
	if (rc == SQLITE_ROW)
		fill_challenge(st, nonce, rec);
	else if (rc == SQLITE_DONE)
		e = ota_error_set(err, OTA_ERR_NONCE_UNKNOWN, "eat_nonce",
		                  "no challenge with this nonce");
	else
		e = db_err(s, rc, err, "lookup");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return e;
}

static ota_err check_nonce_len(ota_bytes nonce, ota_error *err)
{
	if (nonce.ptr == NULL || nonce.len < OTA_NONCE_MIN_BYTES || nonce.len > OTA_NONCE_MAX_BYTES)
		return ota_error_set(err, OTA_ERR_NONCE_LENGTH, "eat_nonce", "%zu bytes", nonce.len);
	return OTA_OK;
}

/* Consumes nonce, recording consumed_at; the challenge must be unexpired
 * at both now and consumed_at, and issued at or before consumed_at. */
static ota_err do_consume(ota_nonce_store *s, ota_bytes nonce, const ota_nonce_binding *expect,
                          int64_t now, int64_t consumed_at, ota_challenge *out, ota_error *err)
{
	ota_err e;
	if ((e = check_nonce_len(nonce, err)) != OTA_OK)
		return e;
	if (consumed_at > now)
		now = consumed_at;
	sqlite3_stmt *st = s->st[ST_CONSUME];
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 7, consumed_at);
	sqlite3_bind_blob(st, 2, nonce.ptr, (int)nonce.len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, s->min_epoch);
	if (expect != NULL) {
		if (expect->txn != NULL)
			sqlite3_bind_text(st, 4, expect->txn, -1, SQLITE_STATIC);
		if (expect->issuer != NULL)
			sqlite3_bind_text(st, 5, expect->issuer, -1, SQLITE_STATIC);
		if (expect->scope != NULL)
			sqlite3_bind_text(st, 6, expect->scope, -1, SQLITE_STATIC);
	}
	int rc = step_done(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, "consume");
	bool won = sqlite3_changes(s->db) == 1;
	/* The row as it stands in this same transaction: the record just
	 * consumed, or why it could not be (this read decides nothing). */
	ota_challenge rec;
	if ((e = do_get(s, s->st[ST_GET], nonce, &rec, err)) != OTA_OK)
		return won && e == OTA_ERR_NONCE_UNKNOWN
			       ? ota_error_set(err, OTA_ERR_INTERNAL, s->where, "consumed row not found")
			       : e;
	if (won) {
		*out = rec;
		return OTA_OK;
	}
	e = judge(s, &rec, expect, now, consumed_at, err);
	if (e == OTA_OK) /* cannot happen: the UPDATE would have matched */
		e = ota_error_set(err, OTA_ERR_INTERNAL, s->where, "consume did not match a live row");
	return e;
}

/* The head of the lane (txn, issuer, boundary) into out. */
static ota_err head_get(ota_nonce_store *s, sqlite3_stmt *st, const char *txn,
                        const char *issuer, const char *boundary, char *out, size_t cap,
                        bool *found, ota_error *err)
{
	sqlite3_bind_text(st, 1, txn, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, issuer, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, boundary, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	ota_err e = OTA_OK;
	*found = false;
	if (cap > 0)
		out[0] = '\0';
	if (rc == SQLITE_ROW) {
		*found = true;
		if (cap > 0)
			copy_text(out, cap, sqlite3_column_text(st, 0));
	} else if (rc != SQLITE_DONE) {
		e = db_err(s, rc, err, "head");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return e;
}

/* The challenge at rowid row into rec when that row holds nonce (*found);
 * nothing found otherwise (a hint only: the caller then looks the nonce up). */
static ota_err get_row(ota_nonce_store *s, int64_t row, ota_bytes nonce, ota_challenge *rec,
                       bool *found, ota_error *err)
{
	sqlite3_stmt *st = s->st[ST_GET_ROW];
	*found = false;
	sqlite3_bind_int64(st, 1, row);
	int rc = sqlite3_step(st);
	ota_err e = OTA_OK;
	if (rc == SQLITE_ROW) {
		const void *n = sqlite3_column_blob(st, 8);
		if (n != NULL && (size_t)sqlite3_column_bytes(st, 8) == nonce.len &&
		    memcmp(n, nonce.ptr, nonce.len) == 0) {
			fill_challenge(st, nonce, rec);
			*found = true;
		}
	} else if (rc != SQLITE_DONE) {
		e = db_err(s, rc, err, "lookup");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return e;
}

/*
 * An admission without a savepoint of its own: every refusal is decided by
 * reads before its first write (lane owner, the challenge as it stands,
 * the prior), and the first write, the stored acceptance, changes nothing
 * when it is refused (attestation_duplicate: one row, one UNIQUE index,
 * checked before anything is written). The writes after it cannot be
 * refused: this transaction holds the write lock and has just read the
 * rows they change. Should one not change exactly its row, that is
 * internal_error, fatal to the whole batch (rolled back), never a refusal
 * that would leave the acceptance stored. Refusals keep their order:
 * lane owner, then the challenge (as a consume judges it), then prior,
 * then duplicate.
 */
static ota_err do_admit(ota_nonce_store *s, ota_nonce_op *op, int64_t now, ota_error *err)
{
	ota_err e;
	if (op->expect == NULL || (e = check_binding(s, op->expect, err)) != OTA_OK)
		return op->expect == NULL
			       ? ota_error_set(err, OTA_ERR_NONCE_BINDING, s->where, "admit needs a binding")
			       : e;
	if (!str_ok(op->boundary, OTA_MAX_RECORD_ID_BYTES) ||
	    !str_ok(op->record_id, OTA_MAX_RECORD_ID_BYTES) ||
	    (op->prior != NULL && op->prior[0] != '\0' &&
	     !str_ok(op->prior, OTA_MAX_RECORD_ID_BYTES)) ||
	    op->attestation.ptr == NULL || op->acceptance.ptr == NULL ||
	    op->attestation.len > INT32_MAX || op->acceptance.len > INT32_MAX ||
	    op->accepted_at < 0)
		return ota_error_set(err, OTA_ERR_USAGE, s->where, "admit: bad boundary, ids or records");
	if ((e = check_nonce_len(op->nonce, err)) != OTA_OK)
		return e;
	const ota_nonce_binding *b = op->expect;
	const char *txn = b->txn;
	const char *prior = op->prior != NULL ? op->prior : "";
	char head[OTA_MAX_RECORD_ID_BYTES + 1];
	bool found;
	/* The lane is the challenge's issuer's (txn, issuer, boundary): another
	 * issuer's records of the same txn and boundary name are another lane,
	 * which this one can neither advance nor take first. */
	if ((e = head_get(s, s->st[ST_HEAD_GET], txn, b->issuer, op->boundary, head, sizeof head,
	                  &found, err)) != OTA_OK)
		return e;
	/* the challenge, judged as the consuming UPDATE below will judge it:
	 * unexpired at both now and at, issued at or before at */
	int64_t at = op->accepted_at != 0 ? op->accepted_at : now;
	if (at > now)
		now = at;
	ota_challenge rec;
	bool have = false;
	if (op->challenge_row > 0 &&
	    (e = get_row(s, op->challenge_row, op->nonce, &rec, &have, err)) != OTA_OK)
		return e;
	if ((!have && (e = do_get(s, s->st[ST_GET], op->nonce, &rec, err)) != OTA_OK) ||
	    (e = judge(s, &rec, b, now, at, err)) != OTA_OK)
		return e;
	if (!found && prior[0] != '\0')
		return ota_error_set(err, OTA_ERR_ATT_PRIOR_UNKNOWN, "prior",
		                     "no record of this issuer accepted yet for this txn and boundary");
	if (found && prior[0] == '\0')
		return ota_error_set(err, OTA_ERR_ATT_PRIOR_MISSING, "prior",
		                     "a record was already accepted for this boundary");
	if (found && strcmp(prior, head) != 0) {
		sqlite3_stmt *q = s->st[ST_ACC_EXISTS];
		sqlite3_bind_text(q, 1, prior, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, txn, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, op->boundary, -1, SQLITE_STATIC);
		/* a fork is an earlier record of this lane: another issuer's
		 * record of the same txn and boundary is no record of it */
		sqlite3_bind_text(q, 4, b->issuer, -1, SQLITE_STATIC);
		int qrc = sqlite3_step(q);
		sqlite3_reset(q);
		sqlite3_clear_bindings(q);
		if (qrc == SQLITE_ROW)
			return ota_error_set(err, OTA_ERR_ATT_PRIOR_FORK, "prior",
			                     "prior is not the current head");
		if (qrc != SQLITE_DONE)
			return db_err(s, qrc, err, "prior lookup");
		return ota_error_set(err, OTA_ERR_ATT_PRIOR_UNKNOWN, "prior",
		                     "prior names no accepted record of this issuer's lane");
	}
	/* the first write: refused (duplicate) it has written nothing */
	sqlite3_stmt *st = s->st[ST_ACC_INSERT];
	sqlite3_bind_text(st, 1, op->record_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, txn, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, op->boundary, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, prior, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 5, op->nonce.ptr, (int)op->nonce.len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, at);
	sqlite3_bind_blob(st, 7, op->attestation.ptr, (int)op->attestation.len, SQLITE_STATIC);
	sqlite3_bind_blob(st, 8, op->acceptance.ptr, (int)op->acceptance.len, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, b->issuer, -1, SQLITE_STATIC);
	int rc = step_done(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_CONSTRAINT_UNIQUE)
		return ota_error_set(err, OTA_ERR_ATT_DUPLICATE, "record_id", "already accepted");
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, "store acceptance");
	/* the one decision, on the row read above */
	st = s->st[ST_CONSUME_ROW];
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_blob(st, 2, op->nonce.ptr, (int)op->nonce.len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, s->min_epoch);
	sqlite3_bind_text(st, 4, txn, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, b->issuer, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, b->scope, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, at);
	sqlite3_bind_int64(st, 8, rec.row);
	rc = step_done(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, "consume");
	if (sqlite3_changes(s->db) != 1) /* cannot happen: the row was just judged live */
		return ota_error_set(err, OTA_ERR_INTERNAL, s->where,
		                     "consume did not match the row judged live");
	rec.consumed_at = at;
	if (!found) {
		st = s->st[ST_HEAD_INSERT];
	} else {
		st = s->st[ST_HEAD_CAS];
		sqlite3_bind_text(st, 5, prior, -1, SQLITE_STATIC);
	}
	sqlite3_bind_text(st, 1, txn, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, b->issuer, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, op->boundary, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, op->record_id, -1, SQLITE_STATIC);
	rc = step_done(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_OK)
		return db_err(s, rc, err, "head advance");
	if (sqlite3_changes(s->db) != 1) /* cannot happen: the head was just read */
		return ota_error_set(err, OTA_ERR_INTERNAL, s->where, "head moved");
	op->challenge = rec;
	return OTA_OK;
}

static ota_err run_op(ota_nonce_store *s, ota_nonce_op *op, int64_t now, ota_error *err)
{
	switch (op->kind) {
	case OTA_NONCE_OP_ISSUE:
		return do_issue(s, op->binding, op->nonce_len, op->ttl, now, &op->challenge, err);
	case OTA_NONCE_OP_CONSUME:
		return do_consume(s, op->nonce, op->expect, now, now, &op->challenge, err);
	case OTA_NONCE_OP_ADMIT:
		return do_admit(s, op, now, err);
	default:
		return ota_error_set(err, OTA_ERR_USAGE, s->where, "unknown operation kind");
	}
}

static bool is_fatal(ota_err e)
{
	return e == OTA_ERR_DB || e == OTA_ERR_NONCE_BUSY || e == OTA_ERR_NOMEM ||
	       e == OTA_ERR_INTERNAL || e == OTA_ERR_NONCE_RANDOM;
}

/* The batch engine; the caller holds mu. errs (may be NULL) receives the
 * detail of each operation. */
static ota_err commit_locked(ota_nonce_store *s, ota_nonce_op *ops, size_t n, int64_t now,
                             ota_error *errs, ota_error *err)
{
	int rc = step_done(s->st[ST_BEGIN]);
	ota_err e;
	if (rc != SQLITE_OK) {
		e = db_err(s, rc, err, "begin");
		goto out_fail_all;
	}
	for (size_t i = 0; i < n; i++) {
		ota_error local;
		ota_error *oe = errs != NULL ? &errs[i] : &local;
		ota_error_clear(oe);
		/* No savepoints: a refused operation has written nothing (ISSUE
		 * and CONSUME are one statement that matched no row or failed;
		 * ADMIT decides every refusal before its first write, see
		 * do_admit), and a fatal error rolls the whole batch back. */
		ops[i].result = run_op(s, &ops[i], now, oe);
		if (ops[i].result != OTA_OK && ops[i].kind != OTA_NONCE_OP_ISSUE)
			memset(&ops[i].challenge, 0, sizeof ops[i].challenge);
		if (is_fatal(ops[i].result)) {
			e = ops[i].result;
			ota_error_set(err, e, oe->where, "%s", oe->what);
			goto out_rollback;
		}
		if (n == 1 && ops[i].result != OTA_OK) {
			/* single refused op: nothing to keep */
			step_done(s->st[ST_ROLLBACK]);
			return OTA_OK;
		}
	}
	rc = step_done(s->st[ST_COMMIT]);
	if (rc != SQLITE_OK) {
		e = db_err(s, rc, err, "commit");
		goto out_rollback;
	}
	/* Committed: the peek cache learns what this transaction did, still
	 * under mu, so that it sees the handle's commits in their order (a
	 * consume can never reach the cache before its challenge's issue). A
	 * refused operation changed nothing. */
	for (size_t i = 0; i < n; i++) {
		const ota_nonce_op *op = &ops[i];
		if (op->result != OTA_OK)
			continue;
		if (op->kind == OTA_NONCE_OP_ISSUE)
			nonce_cache_put(s->cache, &op->challenge, now);
		else /* CONSUME, ADMIT */
			nonce_cache_consumed(s->cache, op->challenge.nonce, op->challenge.nonce_len,
			                     op->challenge.consumed_at);
	}
	return OTA_OK;
out_rollback:
	if (!sqlite3_get_autocommit(s->db))
		step_done(s->st[ST_ROLLBACK]);
out_fail_all:
	for (size_t i = 0; i < n; i++) {
		ops[i].result = e;
		memset(&ops[i].challenge, 0, sizeof ops[i].challenge);
		if (errs != NULL)
			errs[i] = err != NULL ? *err : errs[i];
	}
	return e;
}

ota_err ota_nonce_store_commit_batch_errs(ota_nonce_store *s, ota_nonce_op *ops, size_t n,
                                          int64_t now, ota_error *errs, ota_error *err)
{
	if (s == NULL || (ops == NULL && n > 0))
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "no store or ops");
	if (n == 0)
		return OTA_OK;
	if (n > OTA_NONCE_MAX_BATCH)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, s->where, "batch of %zu", n);
	pthread_mutex_lock(&s->mu);
	ota_err e = commit_locked(s, ops, n, now, errs, err);
	pthread_mutex_unlock(&s->mu);
	return e;
}

ota_err ota_nonce_store_commit_batch(ota_nonce_store *s, ota_nonce_op *ops, size_t n, int64_t now,
                                     ota_error *err)
{
	return ota_nonce_store_commit_batch_errs(s, ops, n, now, NULL, err);
}

/* Commits one operation in its own transaction; its own refusal is the result. */
static ota_err commit_one(ota_nonce_store *s, ota_nonce_op *op, int64_t now, ota_error *err)
{
	ota_error oe;
	ota_error_clear(&oe);
	ota_err e = ota_nonce_store_commit_batch_errs(s, op, 1, now, &oe, err);
	if (e != OTA_OK)
		return e;
	if (op->result != OTA_OK)
		return ota_error_set(err, op->result, oe.where, "%s", oe.what);
	return OTA_OK;
}

ota_err ota_nonce_store_issue(ota_nonce_store *s, const ota_nonce_binding *b, size_t nonce_len,
                              int64_t ttl, int64_t now, ota_challenge *out, ota_error *err)
{
	if (out == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "out is NULL");
	memset(out, 0, sizeof *out);
	ota_nonce_op op;
	memset(&op, 0, sizeof op);
	op.kind = OTA_NONCE_OP_ISSUE;
	op.binding = b;
	op.nonce_len = nonce_len;
	op.ttl = ttl;
	ota_err e = commit_one(s, &op, now, err);
	if (e != OTA_OK)
		return e;
	*out = op.challenge;
	return OTA_OK;
}

ota_err ota_nonce_store_consume(ota_nonce_store *s, ota_bytes nonce, const ota_nonce_binding *expect,
                                int64_t now, ota_challenge *out, ota_error *err)
{
	if (out != NULL)
		memset(out, 0, sizeof *out);
	ota_nonce_op op;
	memset(&op, 0, sizeof op);
	op.kind = OTA_NONCE_OP_CONSUME;
	op.nonce = nonce;
	op.expect = expect;
	ota_err e = commit_one(s, &op, now, err);
	if (e != OTA_OK)
		return e;
	if (out != NULL)
		*out = op.challenge;
	return OTA_OK;
}

ota_err ota_nonce_store_peek(ota_nonce_store *s, ota_bytes nonce, int64_t now, ota_challenge *out,
                             ota_error *err)
{
	ota_challenge rec;
	ota_err e;
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (s == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "no store");
	if ((e = check_nonce_len(nonce, err)) != OTA_OK)
		return e;
	/* A challenge this handle issued is answered from memory: no read
	 * transaction, whose start after every group commit costs sqlite its
	 * page cache (pread64 and fcntl locks). What other processes did to it
	 * the cache does not see; a stale "live" only moves the refusal to the
	 * consuming transaction, whose UPDATE re-checks every condition. */
	memset(&rec, 0, sizeof rec);
	if (!nonce_cache_get(s->cache, nonce, &rec)) {
		reader *rd = reader_lock(s);
		e = do_get(s, rd->st[ST_GET], nonce, &rec, err);
		reader_unlock(rd);
		if (e != OTA_OK)
			return e;
	}
	if ((e = judge(s, &rec, NULL, now, now, err)) != OTA_OK)
		return e;
	if (out != NULL)
		*out = rec;
	return OTA_OK;
}

ota_err ota_nonce_store_purge(ota_nonce_store *s, int64_t now, uint64_t *deleted, ota_error *err)
{
	if (deleted != NULL)
		*deleted = 0;
	if (s == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "no store");
	pthread_mutex_lock(&s->mu);
	sqlite3_stmt *st = s->st[ST_PURGE];
	sqlite3_bind_int64(st, 1, now);
	sqlite3_bind_int64(st, 2, s->opts.skew);
	int rc = step_done(st);
	sqlite3_clear_bindings(st);
	ota_err e = OTA_OK;
	if (rc != SQLITE_OK) {
		e = db_err(s, rc, err, "purge");
	} else {
		/* the rows just deleted (autocommit: committed) leave the peek
		 * cache too, under mu like every change to it */
		int64_t cutoff = now >= INT64_MIN + s->opts.skew ? now - s->opts.skew : INT64_MIN;
		nonce_cache_purge(s->cache, cutoff);
		if (deleted != NULL)
			*deleted = (uint64_t)sqlite3_changes64(s->db);
	}
	pthread_mutex_unlock(&s->mu);
	return e;
}

ota_err ota_nonce_store_acceptance_get(ota_nonce_store *s, const char *txn, const char *boundary,
                                       const char *record_id, uint8_t **attestation,
                                       size_t *att_len, uint8_t **acceptance, size_t *acc_len,
                                       ota_error *err)
{
	if (attestation != NULL)
		*attestation = NULL;
	if (acceptance != NULL)
		*acceptance = NULL;
	if (att_len != NULL)
		*att_len = 0;
	if (acc_len != NULL)
		*acc_len = 0;
	if (s == NULL || txn == NULL || boundary == NULL || record_id == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "no store, lane or id");
	reader *rd = reader_lock(s);
	sqlite3_stmt *st = rd->st[ST_ACC_GET];
	sqlite3_bind_text(st, 1, record_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, txn, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, boundary, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	ota_err e = OTA_OK;
	if (rc == SQLITE_ROW) {
		uint8_t **outs[2] = {attestation, acceptance};
		size_t *lens[2] = {att_len, acc_len};
		for (int i = 0; i < 2 && e == OTA_OK; i++) {
			if (outs[i] == NULL)
				continue;
			size_t n = (size_t)sqlite3_column_bytes(st, i);
			const void *p = sqlite3_column_blob(st, i);
			uint8_t *c = malloc(n > 0 ? n : 1);
			if (c == NULL) {
				e = ota_error_set(err, OTA_ERR_NOMEM, s->where, "acceptance");
				break;
			}
			if (n > 0)
				memcpy(c, p, n);
			*outs[i] = c;
			if (lens[i] != NULL)
				*lens[i] = n;
		}
	} else if (rc == SQLITE_DONE) {
		e = ota_error_set(err, OTA_ERR_NOT_FOUND, "record_id", "no acceptance stored");
	} else {
		e = db_err(s, rc, err, "acceptance");
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	reader_unlock(rd);
	if (e != OTA_OK) {
		if (attestation != NULL) {
			free(*attestation);
			*attestation = NULL;
		}
		if (acceptance != NULL) {
			free(*acceptance);
			*acceptance = NULL;
		}
		if (att_len != NULL)
			*att_len = 0;
		if (acc_len != NULL)
			*acc_len = 0;
	}
	return e;
}

ota_err ota_nonce_store_head_get(ota_nonce_store *s, const char *txn, const char *issuer,
                                 const char *boundary, char *out, size_t out_cap, ota_error *err)
{
	if (s == NULL || txn == NULL || issuer == NULL || boundary == NULL || out == NULL ||
	    out_cap == 0)
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "bad arguments");
	bool found;
	reader *rd = reader_lock(s);
	ota_err e = head_get(s, rd->st[ST_HEAD_GET], txn, issuer, boundary, out, out_cap, &found,
	                     err);
	reader_unlock(rd);
	return e;
}

ota_err ota_nonce_store_counts(ota_nonce_store *s, uint64_t *live, uint64_t *consumed,
                               uint64_t *accepted, ota_error *err)
{
	if (s == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "nonce-store", "no store");
	static const char *const q[3] = {
		"SELECT count(*) FROM challenges WHERE consumed_at IS NULL",
		"SELECT count(*) FROM challenges WHERE consumed_at IS NOT NULL",
		"SELECT count(*) FROM acceptances",
	};
	uint64_t *outs[3] = {live, consumed, accepted};
	ota_err e = OTA_OK;
	reader *rd = reader_lock(s);
	for (int i = 0; i < 3 && e == OTA_OK; i++) {
		if (outs[i] == NULL)
			continue;
		*outs[i] = 0;
		sqlite3_stmt *st = NULL;
		int rc = sqlite3_prepare_v2(rd->db, q[i], -1, &st, NULL);
		if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
			*outs[i] = (uint64_t)sqlite3_column_int64(st, 0);
		else
			e = db_err(s, rc, err, "count");
		sqlite3_finalize(st);
	}
	reader_unlock(rd);
	return e;
}
