/*
 * The (txn, issuer, boundary) lane and the times the store keeps:
 *   - each issuer's boundaries are its own: another issuer (even one scoped
 *     for the same provider, with its own valid challenge on the same txn)
 *     can neither advance nor fork an issuer's chain, nor take a boundary
 *     name first so that the issuer it belongs to is refused on it (the
 *     squatting schema 2 and 3 allowed); alone, in a batch, and after
 *     schema 1 and schema 3 stores are migrated (schema 1's owners read
 *     back from the stored acceptances, single and batch form);
 *   - the store records the time the acceptance signs (its iat), not the
 *     later clock of the commit.
 */
#include "test_util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/cose.h"

#define NOW 1800000000

typedef struct world {
	test_admission_world base; /* root, store, context, signer (test_util.c) */
	ota_key *acme_key, *other_key;
} world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	ota_trust_draft *d = test_admission_world_begin(&w->base, "lane.test", NOW - 86400,
	                                                NOW + 86400 * 30);
	/* two issuers with the same scope: only the lane tells them apart */
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->acme_key), OTA_OK);
	assert_ota(ota_key_generate(OTA_ALG_ES256, &w->other_key), OTA_OK);
	test_trust_add(d, "issuer:acme", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->acme_key,
	               NOW - 86400);
	test_trust_add(d, "issuer:other", OTA_TRUST_ROLE_ISSUER, "oci_remote", w->other_key,
	               NOW - 86400);
	test_admission_world_finish(&w->base, d, "lane.db");
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	world *w = *state;
	test_admission_world_free(&w->base);
	ota_key_free(w->acme_key);
	ota_key_free(w->other_key);
	free(w);
	return 0;
}

static void reopen(world *w)
{
	ota_nonce_store_close(w->base.store);
	w->base.store = NULL;
	ota_error e = {0};
	assert_ota(ota_nonce_store_open(w->base.db, NULL, &w->base.store, &e), OTA_OK);
	w->base.ctx.store = w->base.store;
}

/* A signed attestation of issuer iss (key k) on (txn, boundary) for a
 * fresh challenge issued to it at issued_at with ttl. *nonce_out (may be
 * NULL) receives the challenge. */
static uint8_t *attest_ttl(world *w, const char *iss, const ota_key *k, const char *txn,
                           const char *boundary, const char *prior, int64_t issued_at, int64_t ttl,
                           ota_challenge *nonce_out, size_t *len)
{
	ota_nonce_binding b = {txn, iss, "oci_remote"};
	ota_challenge c;
	assert_ota(ota_nonce_store_issue(w->base.store, &b, 0, ttl, issued_at, &c, NULL), OTA_OK);
	if (nonce_out != NULL)
		*nonce_out = c;
	ota_attestation a;
	test_attestation_claims(&a, w->base.root, iss, txn, boundary, prior);
	a.iat = NOW - 5;
	a.exp = NOW + 120;
	memcpy(a.nonce, c.nonce, c.nonce_len);
	a.nonce_len = c.nonce_len;
	return test_attestation_sign(&a, k, true, len);
}

static uint8_t *attest(world *w, const char *iss, const ota_key *k, const char *txn,
                       const char *boundary, const char *prior, ota_challenge *c, size_t *len)
{
	return attest_ttl(w, iss, k, txn, boundary, prior, NOW - 10, 0, c, len);
}

/* ota_admission_admit at NOW (prepare and commit at the same time). */
static ota_err admit(world *w, const uint8_t *msg, size_t len, char *id_out)
{
	return test_admission_admit(&w->base, ota_bytes_make(msg, len), NOW, id_out);
}

static void head_is(world *w, const char *txn, const char *iss, const char *boundary,
                    const char *want)
{
	char head[OTA_MAX_RECORD_ID_BYTES + 1];
	assert_ota(ota_nonce_store_head_get(w->base.store, txn, iss, boundary, head, sizeof head,
	                                    NULL),
	           OTA_OK);
	assert_string_equal(head, want);
}

/* The challenge is still live: a consume of it would succeed (peek says so). */
static void still_live(world *w, const ota_challenge *c)
{
	ota_challenge got;
	assert_ota(ota_nonce_store_peek(w->base.store, ota_bytes_make(c->nonce, c->nonce_len), NOW,
	                                &got, NULL),
	           OTA_OK);
	assert_int_equal(got.consumed_at, 0);
}

/* Closes the store and runs each of the SQL texts (NULL-terminated) on the
 * file, as an older build or a hand edit would have left it. */
static void close_and_exec(world *w, const char *const *sql)
{
	if (w->base.store != NULL) {
		ota_nonce_store_close(w->base.store);
		w->base.store = NULL;
	}
	sqlite3 *h = NULL;
	char *msg = NULL;
	assert_int_equal(sqlite3_open(w->base.db, &h), SQLITE_OK);
	for (; *sql != NULL; sql++)
		if (sqlite3_exec(h, *sql, NULL, NULL, &msg) != SQLITE_OK)
			fail_msg("%s: %s", *sql, msg);
	sqlite3_close(h);
}

/* The one text a query answers (NULL when no row), new (free()). */
static char *query_text(const char *db, const char *sql)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	char *v = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL
	                  ? strdup((const char *)sqlite3_column_text(st, 0))
	                  : NULL;
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

/* A fresh attestation of iss (key k) on (txn, boundary) after prior, admitted
 * at NOW: refused with want, its challenge still live. */
static void refused_live(world *w, const char *iss, const ota_key *k, const char *txn,
                         const char *boundary, const char *prior, ota_err want)
{
	ota_challenge c;
	size_t len = 0;
	uint8_t *m = attest(w, iss, k, txn, boundary, prior, &c, &len);
	assert_ota(admit(w, m, len, NULL), want);
	still_live(w, &c);
	free(m);
}

/* The same, accepted; id_out (may be NULL) its identity. */
static void accepted(world *w, const char *iss, const ota_key *k, const char *txn,
                     const char *boundary, const char *prior, char *id_out)
{
	size_t len = 0;
	uint8_t *m = attest(w, iss, k, txn, boundary, prior, NULL, &len);
	assert_ota(admit(w, m, len, id_out), OTA_OK);
	free(m);
}

/* One integer from a query with one text parameter (or -1 when no row). */
static int64_t query_int(const char *db, const char *sql, const char *arg)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (arg != NULL)
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_TRANSIENT);
	int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

static int64_t consumed_at(const char *db, const ota_challenge *c)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "SELECT consumed_at FROM challenges WHERE nonce = ?1", -1,
	                                    &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_blob(st, 1, c->nonce, (int)c->nonce_len, SQLITE_TRANSIENT);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

/* The issuers holding a lane named (txn, boundary), in order, joined by ','. */
static char *lane_owner(const char *db, const char *txn, const char *boundary)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h,
	                                    "SELECT group_concat(issuer) FROM (SELECT issuer FROM heads"
	                                    " WHERE txn = ?1 AND boundary = ?2 ORDER BY issuer)",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	sqlite3_bind_text(st, 1, txn, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, boundary, -1, SQLITE_TRANSIENT);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	char *v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(h);
	return v;
}

/* ---- each issuer's lanes ---- */

static void test_issuers_have_own_lanes(void **state)
{
	world *w = *state;
	char a1[OTA_ID_LEN + 1], a2[OTA_ID_LEN + 1], o1[OTA_ID_LEN + 1], x[OTA_ID_LEN + 1];
	accepted(w, "issuer:acme", w->acme_key, "txn-l", "b1", NULL, a1);
	/* issuer:other, its own challenge on the same txn, prior = acme's head:
	 * no record of its own lane (txn-l, other, b1); refused before anything
	 * was consumed */
	refused_live(w, "issuer:other", w->other_key, "txn-l", "b1", a1, OTA_ERR_ATT_PRIOR_UNKNOWN);
	head_is(w, "txn-l", "issuer:acme", "b1", a1);
	head_is(w, "txn-l", "issuer:other", "b1", "");
	/* without a prior it begins its own lane of that name; acme's is untouched */
	accepted(w, "issuer:other", w->other_key, "txn-l", "b1", NULL, o1);
	head_is(w, "txn-l", "issuer:other", "b1", o1);
	head_is(w, "txn-l", "issuer:acme", "b1", a1);
	/* acme's chain goes on */
	accepted(w, "issuer:acme", w->acme_key, "txn-l", "b1", a1, a2);
	head_is(w, "txn-l", "issuer:acme", "b1", a2);
	/* other cannot follow acme's head from its own lane: acme's record is
	 * no record of it (unknown, not a fork) */
	refused_live(w, "issuer:other", w->other_key, "txn-l", "b1", a2, OTA_ERR_ATT_PRIOR_UNKNOWN);
	/* forks and missing priors are judged inside a lane */
	refused_live(w, "issuer:acme", w->acme_key, "txn-l", "b1", a1, OTA_ERR_ATT_PRIOR_FORK);
	refused_live(w, "issuer:other", w->other_key, "txn-l", "b1", NULL, OTA_ERR_ATT_PRIOR_MISSING);
	/* a boundary name taken first by other is still acme's to begin */
	accepted(w, "issuer:other", w->other_key, "txn-l", "b2", NULL, x);
	accepted(w, "issuer:acme", w->acme_key, "txn-l", "b2", NULL, a1);
	head_is(w, "txn-l", "issuer:acme", "b2", a1);
	head_is(w, "txn-l", "issuer:other", "b2", x);
	/* the same boundary name in another txn is another lane */
	accepted(w, "issuer:other", w->other_key, "txn-l2", "b1", NULL, NULL);
	char *owner = lane_owner(w->base.db, "txn-l", "b1");
	assert_string_equal(owner, "issuer:acme,issuer:other");
	free(owner);
	owner = lane_owner(w->base.db, "txn-l2", "b1");
	assert_string_equal(owner, "issuer:other");
	free(owner);
	/* each record is found on its lane */
	assert_ota(ota_nonce_store_acceptance_get(w->base.store, "txn-l", "b1", o1, NULL, NULL, NULL,
	                                          NULL, NULL),
	           OTA_OK);
	assert_ota(ota_nonce_store_acceptance_get(w->base.store, "txn-l", "b1", a2, NULL, NULL, NULL,
	                                          NULL, NULL),
	           OTA_OK);
}

/* Prepared admissions of one batch, committed in one transaction. */
typedef struct {
	uint8_t *msg;
	size_t len;
	ota_admission adm;
	uint8_t *acc;
	size_t acc_len;
} prepared;

static void prepare_at(world *w, prepared *p, int64_t at)
{
	ota_error e = {0};
	assert_ota(ota_admission_prepare(&w->base.ctx, ota_bytes_make(p->msg, p->len),
	                                 ota_bytes_make(NULL, 0), at, &p->adm, &e),
	           OTA_OK);
}

/* Signs the batch (one signature, as ota-attestd does) and commits it at commit_now. */
static ota_err commit_batch_at(world *w, prepared *ps, size_t n, int64_t commit_now,
                               ota_nonce_op *ops)
{
	const ota_admission *as[8];
	uint8_t *accs[8];
	size_t lens[8];
	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		as[i] = &ps[i].adm;
	ota_error e = {0};
	assert_ota(ota_acceptance_build_batch(&w->base.signer, as, n, accs, lens, &e), OTA_OK);
	for (size_t i = 0; i < n; i++) {
		ps[i].acc = accs[i];
		ps[i].acc_len = lens[i];
		ota_admission_op(&ps[i].adm, ota_bytes_make(accs[i], lens[i]), &ops[i]);
		/* the commit reads the row the peek found (a hint, checked by nonce) */
		assert_true(ops[i].challenge_row > 0);
		assert_int_equal(ops[i].challenge_row, ps[i].adm.challenge.row);
	}
	return ota_nonce_store_commit_batch(w->base.store, ops, n, commit_now, &e);
}

static void free_prepared(prepared *ps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ps[i].msg);
		free(ps[i].acc);
	}
}

static void test_lane_in_batch(void **state)
{
	world *w = *state;
	char first[OTA_ID_LEN + 1];
	size_t len = 0;
	uint8_t *m = attest(w, "issuer:acme", w->acme_key, "txn-b", "b1", NULL, NULL, &len);
	assert_ota(admit(w, m, len, first), OTA_OK);
	free(m);
	/* one transaction: other's record following acme's, other beginning
	 * its own b1, then acme's next */
	prepared ps[3];
	memset(ps, 0, sizeof ps);
	ota_challenge oc;
	ps[0].msg = attest(w, "issuer:other", w->other_key, "txn-b", "b1", first, &oc, &ps[0].len);
	ps[1].msg = attest(w, "issuer:other", w->other_key, "txn-b", "b1", NULL, NULL, &ps[1].len);
	ps[2].msg = attest(w, "issuer:acme", w->acme_key, "txn-b", "b1", first, NULL, &ps[2].len);
	for (size_t i = 0; i < 3; i++)
		prepare_at(w, &ps[i], NOW);
	ota_nonce_op ops[3];
	assert_ota(commit_batch_at(w, ps, 3, NOW, ops), OTA_OK);
	assert_ota(ops[0].result, OTA_ERR_ATT_PRIOR_UNKNOWN);
	assert_ota(ops[1].result, OTA_OK);
	assert_ota(ops[2].result, OTA_OK);
	still_live(w, &oc);
	head_is(w, "txn-b", "issuer:acme", "b1", ps[2].adm.record_id);
	head_is(w, "txn-b", "issuer:other", "b1", ps[1].adm.record_id);
	free_prepared(ps, 3);
}

/* ---- schema 1 -> 2 ---- */

/* Turns the store file back into schema 1: heads without their owner. */
static void downgrade_to_v1(const char *db, const char *extra_sql)
{
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	const char *sql =
		"BEGIN;"
		"CREATE TABLE heads_v1(txn TEXT NOT NULL, boundary TEXT NOT NULL,"
		" head TEXT NOT NULL, PRIMARY KEY(txn, boundary)) WITHOUT ROWID;"
		"INSERT INTO heads_v1 SELECT txn, boundary, head FROM heads;"
		"DROP TABLE heads;"
		"ALTER TABLE heads_v1 RENAME TO heads;"
		"ALTER TABLE acceptances DROP COLUMN issuer;"
		"UPDATE ota_meta SET v = 1 WHERE k = 'schema';"
		"COMMIT;";
	char *msg = NULL;
	int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		fail_msg("downgrade: %s", msg);
	if (extra_sql != NULL && sqlite3_exec(h, extra_sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("downgrade: %s", msg);
	sqlite3_close(h);
}

static bool heads_has_issuer(const char *db)
{
	return query_int(db, "SELECT count(*) FROM pragma_table_info('heads') WHERE name = 'issuer'",
	                 NULL) == 1;
}

static void test_migrate_v1(void **state)
{
	world *w = *state;
	char a1[OTA_ID_LEN + 1], a2[OTA_ID_LEN + 1];
	size_t len = 0;
	/* acme's lane: two records, single-form acceptances */
	uint8_t *m = attest(w, "issuer:acme", w->acme_key, "txn-m", "b1", NULL, NULL, &len);
	assert_ota(admit(w, m, len, a1), OTA_OK);
	free(m);
	m = attest(w, "issuer:acme", w->acme_key, "txn-m", "b1", a1, NULL, &len);
	assert_ota(admit(w, m, len, a2), OTA_OK);
	free(m);
	/* other's lane: batch-form acceptance (as ota-attestd stores them) */
	prepared ps[2];
	memset(ps, 0, sizeof ps);
	ps[0].msg = attest(w, "issuer:other", w->other_key, "txn-m", "b2", NULL, NULL, &ps[0].len);
	ps[1].msg = attest(w, "issuer:acme", w->acme_key, "txn-m", "b3", NULL, NULL, &ps[1].len);
	prepare_at(w, &ps[0], NOW);
	prepare_at(w, &ps[1], NOW);
	ota_nonce_op ops[2];
	assert_ota(commit_batch_at(w, ps, 2, NOW, ops), OTA_OK);
	assert_ota(ops[0].result, OTA_OK);
	assert_ota(ops[1].result, OTA_OK);
	char o1[OTA_ID_LEN + 1];
	snprintf(o1, sizeof o1, "%s", ps[0].adm.record_id);
	free_prepared(ps, 2);

	ota_nonce_store_close(w->base.store);
	w->base.store = NULL;
	downgrade_to_v1(w->base.db, NULL);
	assert_false(heads_has_issuer(w->base.db));
	reopen(w); /* migrates */
	assert_int_equal(query_int(w->base.db, "SELECT v FROM ota_meta WHERE k = 'schema'", NULL),
	                 4);
	char *owner = lane_owner(w->base.db, "txn-m", "b1");
	assert_string_equal(owner, "issuer:acme");
	free(owner);
	owner = lane_owner(w->base.db, "txn-m", "b2");
	assert_string_equal(owner, "issuer:other");
	free(owner);
	owner = lane_owner(w->base.db, "txn-m", "b3");
	assert_string_equal(owner, "issuer:acme");
	free(owner);
	/* the lanes are their owners' after the migration */
	refused_live(w, "issuer:other", w->other_key, "txn-m", "b1", a2, OTA_ERR_ATT_PRIOR_UNKNOWN);
	refused_live(w, "issuer:acme", w->acme_key, "txn-m", "b2", o1, OTA_ERR_ATT_PRIOR_UNKNOWN);
	accepted(w, "issuer:other", w->other_key, "txn-m", "b2", o1, NULL);
	accepted(w, "issuer:acme", w->acme_key, "txn-m", "b1", a2, NULL);
	/* a second open does not migrate again */
	reopen(w);
	assert_int_equal(query_int(w->base.db, "SELECT v FROM ota_meta WHERE k = 'schema'", NULL),
	                 4);
}

/* Unique indexes of acceptances over record_id alone (schema 1 and 2). */
static const char record_id_alone_sql[] =
	"SELECT count(*) FROM pragma_index_list('acceptances') AS il WHERE il.\"unique\" = 1"
	" AND (SELECT count(*) FROM pragma_index_info(il.name)) = 1"
	" AND (SELECT name FROM pragma_index_info(il.name)) = 'record_id'";

/* ---- schema 2 -> 3 ---- */

/* Schema 3's heads: one lane per (txn, boundary), owned by an issuer. */
static const char v3_layout_sql[] =
	"BEGIN;"
	"CREATE TABLE h3(txn TEXT NOT NULL, boundary TEXT NOT NULL, head TEXT NOT NULL,"
	" issuer TEXT NOT NULL, PRIMARY KEY(txn, boundary)) WITHOUT ROWID;"
	"INSERT INTO h3 SELECT txn, boundary, head, issuer FROM heads;"
	"DROP TABLE heads; ALTER TABLE h3 RENAME TO heads;"
	"ALTER TABLE acceptances DROP COLUMN issuer;"
	"UPDATE ota_meta SET v = 3 WHERE k = 'schema';"
	"COMMIT;";

static const char heads_key_sql[] =
	"SELECT group_concat(name) FROM (SELECT name FROM pragma_table_info('heads') WHERE pk > 0"
	" ORDER BY pk)";


/* Schema 2's acceptances: a UNIQUE record_id, no lane index. */
static const char v2_layout_sql[] =
	"BEGIN;"
	"CREATE TABLE a2(seq INTEGER PRIMARY KEY, record_id TEXT NOT NULL UNIQUE,"
	" txn TEXT NOT NULL, boundary TEXT NOT NULL, prior TEXT NOT NULL,"
	" nonce BLOB NOT NULL, accepted_at INTEGER NOT NULL,"
	" attestation BLOB NOT NULL, acceptance BLOB NOT NULL);"
	"INSERT INTO a2 SELECT seq, record_id, txn, boundary, prior, nonce, accepted_at,"
	" attestation, acceptance FROM acceptances ORDER BY seq;"
	"DROP TABLE acceptances; ALTER TABLE a2 RENAME TO acceptances;"
	"UPDATE ota_meta SET v = 2 WHERE k = 'schema';"
	"COMMIT;";

static void test_migrate_v2(void **state)
{
	world *w = *state;
	char a1[OTA_ID_LEN + 1], a2[OTA_ID_LEN + 1], b1[OTA_ID_LEN + 1];
	size_t len = 0, len2 = 0;
	uint8_t *m = attest(w, "issuer:acme", w->acme_key, "txn-v2", "b1", NULL, NULL, &len);
	assert_ota(admit(w, m, len, a1), OTA_OK);
	free(m);
	m = attest(w, "issuer:acme", w->acme_key, "txn-v2", "b1", a1, NULL, &len);
	assert_ota(admit(w, m, len, a2), OTA_OK);
	free(m);
	m = attest(w, "issuer:other", w->other_key, "txn-v2", "b2", NULL, NULL, &len);
	assert_ota(admit(w, m, len, b1), OTA_OK);
	free(m);
	/* signed before the migration, submitted after it */
	uint8_t *fork = attest(w, "issuer:acme", w->acme_key, "txn-v2", "b1", a1, NULL, &len);
	uint8_t *next = attest(w, "issuer:acme", w->acme_key, "txn-v2", "b1", a2, NULL, &len2);
	int64_t seqs = query_int(w->base.db, "SELECT sum(seq * length(acceptance)) FROM acceptances",
	                         NULL);
	close_and_exec(w, (const char *const[]){v3_layout_sql, v2_layout_sql, NULL});
	assert_int_equal(query_int(w->base.db, record_id_alone_sql, NULL), 1);
	reopen(w); /* rebuilds acceptances (and heads, schema 3 -> 4) */
	assert_int_equal(query_int(w->base.db, "SELECT v FROM ota_meta WHERE k = 'schema'", NULL),
	                 4);
	assert_int_equal(query_int(w->base.db, record_id_alone_sql, NULL), 0);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT count(*) FROM pragma_index_list('acceptances') AS il"
	                           " WHERE il.\"unique\" = 1"
	                           " AND (SELECT group_concat(name) FROM pragma_index_info(il.name))"
	                           " = 'txn,boundary,record_id'",
	                           NULL),
	                 1);
	/* the same rows, in the same order, with the same bytes */
	assert_int_equal(query_int(w->base.db, "SELECT count(*) FROM acceptances", NULL), 3);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT sum(seq * length(acceptance)) FROM acceptances", NULL),
	                 seqs);
	uint8_t *acc = NULL;
	size_t al = 0;
	assert_ota(ota_nonce_store_acceptance_get(w->base.store, "txn-v2", "b1", a2, NULL, NULL,
	                                          &acc, &al, NULL),
	           OTA_OK);
	assert_true(al > 0);
	free(acc);
	assert_ota(ota_nonce_store_acceptance_get(w->base.store, "txn-v2", "b2", b1, NULL, NULL,
	                                          NULL, NULL, NULL),
	           OTA_OK);
	/* the lanes go on: a fork of b1 is told apart from an unknown prior,
	 * the next record is accepted once */
	assert_ota(admit(w, fork, len, NULL), OTA_ERR_ATT_PRIOR_FORK);
	assert_ota(admit(w, next, len2, NULL), OTA_OK);
	assert_ota(admit(w, next, len2, NULL), OTA_ERR_NONCE_REPLAYED);
	free(fork);
	free(next);
	/* a second open does not rebuild again */
	reopen(w);
	assert_int_equal(query_int(w->base.db, "SELECT count(*) FROM acceptances", NULL), 4);
}

/* ---- schema 3 -> 4 ---- */

static void test_migrate_v3(void **state)
{
	world *w = *state;
	char a1[OTA_ID_LEN + 1], o1[OTA_ID_LEN + 1];
	size_t len = 0, len2 = 0;
	accepted(w, "issuer:acme", w->acme_key, "txn-v3", "b1", NULL, a1);
	accepted(w, "issuer:other", w->other_key, "txn-v3", "b2", NULL, o1);
	/* signed before the migration, submitted after it */
	uint8_t *next = attest(w, "issuer:acme", w->acme_key, "txn-v3", "b1", a1, NULL, &len);
	uint8_t *theirs = attest(w, "issuer:other", w->other_key, "txn-v3", "b1", NULL, NULL, &len2);
	close_and_exec(w, (const char *const[]){v3_layout_sql, NULL});
	char *key = query_text(w->base.db, heads_key_sql);
	assert_non_null(key);
	assert_string_equal(key, "txn,boundary");
	free(key);
	reopen(w); /* rebuilds heads */
	assert_int_equal(query_int(w->base.db, "SELECT v FROM ota_meta WHERE k = 'schema'", NULL),
	                 4);
	key = query_text(w->base.db, heads_key_sql);
	assert_non_null(key);
	assert_string_equal(key, "txn,issuer,boundary");
	free(key);
	/* the same lanes, heads and owners; each acceptance knows its lane's issuer */
	assert_int_equal(query_int(w->base.db, "SELECT count(*) FROM heads", NULL), 2);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT count(*) FROM acceptances WHERE issuer = ?1", "issuer:acme"),
	                 1);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT count(*) FROM acceptances WHERE issuer = ?1", "issuer:other"),
	                 1);
	head_is(w, "txn-v3", "issuer:acme", "b1", a1);
	head_is(w, "txn-v3", "issuer:other", "b2", o1);
	/* acme's chain goes on, other begins its own b1 */
	assert_ota(admit(w, next, len, NULL), OTA_OK);
	assert_ota(admit(w, theirs, len2, NULL), OTA_OK);
	assert_int_equal(query_int(w->base.db, "SELECT count(*) FROM heads", NULL), 3);
	free(next);
	free(theirs);
	/* a second open does not rebuild again */
	reopen(w);
	assert_int_equal(query_int(w->base.db, "SELECT count(*) FROM heads", NULL), 3);
}

/* A schema 3 acceptance on no lane (a heads row deleted by hand) stops the
 * migration: nothing is guessed, the file stays schema 3. */
static void test_migrate_v3_orphan(void **state)
{
	world *w = *state;
	accepted(w, "issuer:acme", w->acme_key, "txn-o", "b1", NULL, NULL);
	close_and_exec(w, (const char *const[]){v3_layout_sql, "DELETE FROM heads", NULL});
	ota_nonce_store *s = NULL;
	ota_error e = {0};
	assert_ota(ota_nonce_store_open(w->base.db, NULL, &s, &e), OTA_ERR_NONCE_SCHEMA);
	assert_null(s);
	assert_non_null(strstr(e.what, "on no lane"));
	assert_int_equal(query_int(w->base.db, "SELECT v FROM ota_meta WHERE k = 'schema'", NULL),
	                 3);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT count(*) FROM pragma_table_info('acceptances')"
	                           " WHERE name = 'issuer'",
	                           NULL),
	                 0);
	/* nor is an acceptance without its issuer under today's heads */
	close_and_exec(w, (const char *const[]){
		"ALTER TABLE acceptances ADD COLUMN issuer TEXT NOT NULL DEFAULT '';"
		"DROP TABLE heads; CREATE TABLE heads(txn TEXT NOT NULL,"
		" issuer TEXT NOT NULL, boundary TEXT NOT NULL, head TEXT NOT NULL,"
		" PRIMARY KEY(txn, issuer, boundary)) WITHOUT ROWID;",
		NULL});
	ota_error e2 = {0};
	assert_ota(ota_nonce_store_open(w->base.db, NULL, &s, &e2), OTA_ERR_NONCE_SCHEMA);
	assert_null(s);
	assert_non_null(strstr(e2.what, "name no issuer"));
}

/* The first schema 1 layout: challenges and acceptances WITHOUT ROWID,
 * keyed by nonce and record id (no id, no seq). */
static const char first_layout_sql[] =
	"BEGIN;"
	"DROP INDEX challenges_expiry;"
	"CREATE TABLE c1(nonce BLOB PRIMARY KEY, epoch INTEGER NOT NULL, txn TEXT NOT NULL,"
	" issuer TEXT NOT NULL, scope TEXT NOT NULL, issued_at INTEGER NOT NULL,"
	" expires_at INTEGER NOT NULL, consumed_at INTEGER) WITHOUT ROWID;"
	"INSERT INTO c1 SELECT nonce, epoch, txn, issuer, scope, issued_at, expires_at, consumed_at"
	" FROM challenges;"
	"DROP TABLE challenges; ALTER TABLE c1 RENAME TO challenges;"
	"CREATE INDEX challenges_expiry ON challenges(expires_at);"
	"CREATE TABLE a1(record_id TEXT PRIMARY KEY, txn TEXT NOT NULL, boundary TEXT NOT NULL,"
	" prior TEXT NOT NULL, nonce BLOB NOT NULL, accepted_at INTEGER NOT NULL,"
	" attestation BLOB NOT NULL, acceptance BLOB NOT NULL) WITHOUT ROWID;"
	"INSERT INTO a1 SELECT record_id, txn, boundary, prior, nonce, accepted_at, attestation,"
	" acceptance FROM acceptances;"
	"DROP TABLE acceptances; ALTER TABLE a1 RENAME TO acceptances;"
	"COMMIT;";

static void test_migrate_v1_first_layout(void **state)
{
	world *w = *state;
	char a1[OTA_ID_LEN + 1];
	size_t len = 0, len2 = 0;
	uint8_t *m = attest(w, "issuer:acme", w->acme_key, "txn-f", "b1", NULL, NULL, &len);
	assert_ota(admit(w, m, len, a1), OTA_OK);
	/* signed before the migration, submitted after it */
	uint8_t *next = attest(w, "issuer:acme", w->acme_key, "txn-f", "b1", a1, NULL, &len2);
	ota_nonce_store_close(w->base.store);
	w->base.store = NULL;
	downgrade_to_v1(w->base.db, first_layout_sql);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT count(*) FROM pragma_table_info('challenges') WHERE name = 'id'",
	                           NULL),
	                 0);
	reopen(w); /* rebuilds the tables, then migrates */
	assert_int_equal(query_int(w->base.db, "SELECT v FROM ota_meta WHERE k = 'schema'", NULL),
	                 4);
	assert_int_equal(query_int(w->base.db, record_id_alone_sql, NULL), 0);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT count(*) FROM pragma_table_info('challenges') WHERE name = 'id'",
	                           NULL),
	                 1);
	assert_int_equal(query_int(w->base.db, "SELECT count(*) FROM acceptances", NULL), 1);
	char *owner = lane_owner(w->base.db, "txn-f", "b1");
	assert_string_equal(owner, "issuer:acme");
	free(owner);
	/* the consumed challenge stays consumed, the open one answers once */
	assert_ota(admit(w, m, len, NULL), OTA_ERR_NONCE_REPLAYED);
	assert_ota(admit(w, next, len2, NULL), OTA_OK);
	assert_ota(admit(w, next, len2, NULL), OTA_ERR_NONCE_REPLAYED);
	free(m);
	free(next);
}

static void test_migrate_v1_unreadable(void **state)
{
	world *w = *state;
	size_t len = 0;
	uint8_t *m = attest(w, "issuer:acme", w->acme_key, "txn-u", "b1", NULL, NULL, &len);
	assert_ota(admit(w, m, len, NULL), OTA_OK);
	free(m);
	ota_nonce_store_close(w->base.store);
	w->base.store = NULL;
	/* the lane's first acceptance no longer names its issuer */
	downgrade_to_v1(w->base.db,
	                "UPDATE acceptances SET acceptance = x'd2840040a0' WHERE txn = 'txn-u';");
	ota_nonce_store *s = NULL;
	ota_error e = {0};
	assert_ota(ota_nonce_store_open(w->base.db, NULL, &s, &e), OTA_ERR_NONCE_SCHEMA);
	assert_null(s);
	assert_non_null(strstr(e.what, "txn-u"));
	/* nothing half-done: still schema 1, heads untouched */
	assert_int_equal(query_int(w->base.db, "SELECT v FROM ota_meta WHERE k = 'schema'", NULL),
	                 1);
	assert_false(heads_has_issuer(w->base.db));
	/* a newer schema than ours is refused too */
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(w->base.db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "UPDATE ota_meta SET v = 5 WHERE k = 'schema'", NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(h);
	assert_ota(ota_nonce_store_open(w->base.db, NULL, &s, &e), OTA_ERR_NONCE_SCHEMA);
	assert_null(s);
}

/* ---- the stored times are the signed time ---- */

static void test_stored_time_is_signed_time(void **state)
{
	world *w = *state;
	/* judged at NOW, committed 7 s later (the committer's clock) */
	prepared p;
	memset(&p, 0, sizeof p);
	ota_challenge c;
	p.msg = attest(w, "issuer:acme", w->acme_key, "txn-t", "b1", NULL, &c, &p.len);
	prepare_at(w, &p, NOW);
	ota_nonce_op op;
	assert_ota(commit_batch_at(w, &p, 1, NOW + 7, &op), OTA_OK);
	assert_ota(op.result, OTA_OK);
	ota_acceptance acc;
	assert_ota(ota_acceptance_verify(ota_bytes_make(p.acc, p.acc_len), w->base.root, NOW, &acc,
	                                 NULL),
	           OTA_OK);
	assert_int_equal(acc.accepted_at, NOW);
	assert_int_equal(op.challenge.consumed_at, NOW);
	assert_int_equal(consumed_at(w->base.db, &c), NOW);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT accepted_at FROM acceptances WHERE record_id = ?1",
	                           p.adm.record_id),
	                 NOW);
	free_prepared(&p, 1);

	/* through the group committer (its clock reads later still) */
	int64_t later = NOW + 9;
	ota_clock ck = ota_clock_fixed(&later);
	ota_nonce_committer *cm = NULL;
	assert_ota(ota_nonce_committer_new(w->base.store, 16, &ck, &cm), OTA_OK);
	size_t len = 0;
	uint8_t *m = attest(w, "issuer:acme", w->acme_key, "txn-t", "b2", NULL, &c, &len);
	ota_admission adm;
	uint8_t *a = NULL;
	size_t al = 0;
	ota_error e = {0};
	assert_ota(ota_admission_admit(&w->base.ctx, ota_bytes_make(m, len),
	                               ota_bytes_make(NULL, 0), NOW, ota_acceptance_build,
	                               &w->base.signer, cm, &adm, &a, &al, &e),
	           OTA_OK);
	ota_nonce_committer_free(cm);
	assert_ota(ota_acceptance_verify(ota_bytes_make(a, al), w->base.root, NOW, &acc, NULL),
	           OTA_OK);
	assert_int_equal(acc.accepted_at, NOW);
	assert_int_equal(consumed_at(w->base.db, &c), NOW);
	assert_int_equal(query_int(w->base.db,
	                           "SELECT accepted_at FROM acceptances WHERE record_id = ?1",
	                           adm.record_id),
	                 NOW);
	free(a);
	free(m);

	/* a plain consume still records its own now */
	ota_nonce_binding b = {"txn-t", "issuer:acme", "oci_remote"};
	assert_ota(ota_nonce_store_issue(w->base.store, &b, 0, 0, NOW, &c, NULL), OTA_OK);
	ota_challenge got;
	assert_ota(ota_nonce_store_consume(w->base.store, ota_bytes_make(c.nonce, c.nonce_len), &b,
	                                   NOW + 3, &got, NULL),
	           OTA_OK);
	assert_int_equal(got.consumed_at, NOW + 3);
}

/* The challenge must still be unexpired when the transaction runs. */
static void test_expiry_still_judged_at_commit(void **state)
{
	world *w = *state;
	prepared p;
	memset(&p, 0, sizeof p);
	ota_challenge c;
	/* issued at NOW - 3 for 5 s: live when judged at NOW, expired at NOW + 7 */
	p.msg = attest_ttl(w, "issuer:acme", w->acme_key, "txn-x", "b1", NULL, NOW - 3, 5, &c, &p.len);
	prepare_at(w, &p, NOW);
	ota_nonce_op op;
	assert_ota(commit_batch_at(w, &p, 1, NOW + 7, &op), OTA_OK);
	assert_ota(op.result, OTA_ERR_NONCE_EXPIRED);
	assert_int_equal(consumed_at(w->base.db, &c), 0);
	free_prepared(&p, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_issuers_have_own_lanes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lane_in_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v3, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v3_orphan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v1_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migrate_v1_first_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stored_time_is_signed_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiry_still_judged_at_commit, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
