/*
 * Durable cleanup leases (sqlite, synchronous=FULL): one row per container,
 * written before the first mutation and finalized with a terminal state.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "oci_internal.h"
#include "ota/json.h"
#include "ota/limits.h"
#include "ota/sqlite.h"

struct oci_lease_db {
	sqlite3 *db;
	bool has_cgroups; /* the table has the cgroups column */
};

static ota_err db_err(oci_lease_db *d, ota_error *err, const char *where)
{
	return ota_error_set(err, OTA_ERR_OCI_LEASE, where, "sqlite: %s",
	                     d != NULL && d->db != NULL ? sqlite3_errmsg(d->db) : "open failed");
}

static ota_err exec_sql(oci_lease_db *d, const char *sql, ota_error *err)
{
	char *msg = NULL;
	if (sqlite3_exec(d->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		ota_err rc = ota_error_set(err, OTA_ERR_OCI_LEASE, "lease", "sqlite: %s",
		                           msg != NULL ? msg : "error");
		sqlite3_free(msg);
		return rc;
	}
	return OTA_OK;
}

/* The directories of path's parent, made 0700 where missing beneath
 * descriptors (oci_dir_walk: no symlink in the path followed); a path
 * without a directory part has nothing to make. */
static ota_err make_parents(const char *path, ota_error *err)
{
	char tmp[OTA_MAX_PATH_BYTES];
	int n = snprintf(tmp, sizeof tmp, "%s", path);
	if (n < 0 || (size_t)n >= sizeof tmp)
		return ota_error_set(err, OTA_ERR_USAGE, path, "lease database path too long");
	char *slash = strrchr(tmp, '/');
	if (slash == NULL)
		return OTA_OK;
	while (slash > tmp && slash[-1] == '/')
		slash--;
	if (slash == tmp)
		return OTA_OK; /* a file in / */
	*slash = '\0';
	int fd = -1;
	ota_err rc = oci_dir_walk(tmp, true, &fd, err);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* true when the table oci_lease has the column col */
static bool has_column(oci_lease_db *d, const char *col)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT %s FROM oci_lease LIMIT 0", col);
	sqlite3_stmt *st = NULL;
	bool ok = sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) == SQLITE_OK;
	sqlite3_finalize(st);
	return ok;
}

ota_err oci_lease_open(const char *path, oci_lease_db **out, ota_error *err)
{
	*out = NULL;
	oci_lease_db *d = calloc(1, sizeof *d);
	if (d == NULL)
		return OTA_ERR_NOMEM;
	ota_err prc = make_parents(path, err);
	if (prc != OTA_OK) {
		free(d);
		return prc;
	}
	/* the file made 0600 by us (its -wal and -shm take that mode); one
	 * another user owns or may write, or a symlink, is refused: a
	 * rewritten lease would send cleanup after another container */
	ota_err frc = ota_private_file_check(path, OTA_PRIVATE_CREATE, err);
	if (frc != OTA_OK) {
		free(d);
		return frc;
	}
	if (sqlite3_open_v2(path, &d->db,
	                    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
	                    NULL) != SQLITE_OK) {
		ota_err rc = db_err(d, err, path);
		sqlite3_close(d->db);
		free(d);
		return rc;
	}
	sqlite3_busy_timeout(d->db, 10000);
	/* Closing the last connection must not checkpoint the log into the
	 * database (two more fsyncs per run): the log is itself durable, every
	 * commit having been fsynced to it. ota_oci_run checkpoints it off the
	 * critical path (oci_lease_checkpoint, on its phase thread); sqlite's
	 * automatic checkpoint within a commit, once the log grows past 256
	 * pages, is the safety net for processes that never get there. */
	(void)sqlite3_db_config(d->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	/* WAL with synchronous=FULL: every commit is fsynced before it returns
	 * (one fsync of the log per transaction). */
	/* The log is kept short: closing does not checkpoint (above), and the
	 * next process that opens the database reads the whole log to rebuild
	 * its index. */
	ota_err rc = OTA_OK;
	if (ota_sqlite_wal(d->db) != SQLITE_OK)
		rc = ota_error_set(err, OTA_ERR_OCI_LEASE, "lease", "sqlite: journal_mode=WAL: %s",
		                   sqlite3_errmsg(d->db));
	if (rc == OTA_OK)
		rc = exec_sql(d, "PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=256;", err);
	if (rc == OTA_OK)
		rc = exec_sql(d,
		              "CREATE TABLE IF NOT EXISTS oci_lease ("
		              " id TEXT PRIMARY KEY, txn TEXT, runtime TEXT NOT NULL,"
		              " runtime_bin TEXT NOT NULL, runtime_root TEXT NOT NULL,"
		              " bundle TEXT NOT NULL, plan_identity TEXT,"
		              " runner_pid INTEGER NOT NULL, runner_start TEXT NOT NULL,"
		              " phase TEXT NOT NULL, container_pid INTEGER NOT NULL DEFAULT 0,"
		              " created_at INTEGER NOT NULL, finalized_at INTEGER,"
		              " terminal TEXT, cleanup TEXT, detail TEXT, cgroups TEXT)",
		              err);
	/* cgroups (the JSON array of the cgroup directories runc makes for the
	 * container) came later: a database of before gets the column, NULL in
	 * its rows (another process adding it at once makes ours fail: it is
	 * there either way, checked again). One that cannot be altered (opened
	 * by a reader without write access) is read without it. */
	if (rc == OTA_OK && !has_column(d, "cgroups")) {
		ota_error ae;
		ota_error_clear(&ae);
		(void)exec_sql(d, "ALTER TABLE oci_lease ADD COLUMN cgroups TEXT", &ae);
	}
	d->has_cgroups = rc == OTA_OK && has_column(d, "cgroups");
	if (rc != OTA_OK) {
		oci_lease_close(d);
		return rc;
	}
	*out = d;
	return OTA_OK;
}

void oci_lease_checkpoint(oci_lease_db *d)
{
	if (d != NULL)
		(void)sqlite3_wal_checkpoint_v2(d->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
}

void oci_lease_close(oci_lease_db *d)
{
	if (d == NULL)
		return;
	sqlite3_close(d->db);
	free(d);
}

unsigned long long oci_proc_start_time(long pid)
{
	return ota_oci_proc_start_time(pid); /* procfs.c */
}

ota_err oci_lease_begin(oci_lease_db *d, const char *id, const char *txn, const oci_rt *rt,
                        const char *bundle, const char *plan_id, const json_t *cgroups,
                        int64_t now, ota_error *err)
{
	sqlite3_stmt *st = NULL;
	char *cg = cgroups != NULL ? ota_json_dumps(cgroups, false) : NULL;
	if (cgroups != NULL && cg == NULL)
		return OTA_ERR_NOMEM;
	if (sqlite3_prepare_v2(d->db,
	                       d->has_cgroups
	                               ? "INSERT INTO oci_lease (id, txn, runtime, runtime_bin,"
	                                 " runtime_root, bundle, plan_identity, runner_pid,"
	                                 " runner_start, phase, created_at, cgroups)"
	                                 " VALUES (?,?,?,?,?,?,?,?,?,'leased',?,?)"
	                               : "INSERT INTO oci_lease (id, txn, runtime, runtime_bin,"
	                                 " runtime_root, bundle, plan_identity, runner_pid,"
	                                 " runner_start, phase, created_at)"
	                                 " VALUES (?,?,?,?,?,?,?,?,?,'leased',?)",
	                       -1, &st, NULL) != SQLITE_OK) {
		free(cg);
		return db_err(d, err, "lease_begin");
	}
	char start[32];
	snprintf(start, sizeof start, "%llu", oci_proc_start_time((long)getpid()));
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, txn, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, oci_rt_name(rt->kind), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, rt->bin, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 5, rt->root, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 6, bundle, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 7, plan_id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 8, (sqlite3_int64)getpid());
	sqlite3_bind_text(st, 9, start, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 10, now);
	if (d->has_cgroups)
		sqlite3_bind_text(st, 11, cg, -1, SQLITE_TRANSIENT);
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	free(cg);
	if (r != SQLITE_DONE)
		return db_err(d, err, "lease_begin");
	return OTA_OK;
}

ota_err oci_lease_phase(oci_lease_db *d, const char *id, const char *phase, long pid,
                        ota_error *err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(d->db,
	                       "UPDATE oci_lease SET phase = ?, container_pid = CASE WHEN ? > 0"
	                       " THEN ? ELSE container_pid END WHERE id = ? AND terminal IS NULL",
	                       -1, &st, NULL) != SQLITE_OK)
		return db_err(d, err, "lease_phase");
	sqlite3_bind_text(st, 1, phase, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, pid);
	sqlite3_bind_text(st, 4, id, -1, SQLITE_TRANSIENT);
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	return r == SQLITE_DONE ? OTA_OK : db_err(d, err, "lease_phase");
}

ota_err oci_lease_finalize(oci_lease_db *d, const char *id, const char *terminal,
                           const char *cleanup, const char *detail, int64_t now, ota_error *err)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(d->db,
	                       "UPDATE oci_lease SET phase = 'finalized', terminal = ?, cleanup = ?,"
	                       " detail = ?, finalized_at = ? WHERE id = ? AND terminal IS NULL",
	                       -1, &st, NULL) != SQLITE_OK)
		return db_err(d, err, "lease_finalize");
	sqlite3_bind_text(st, 1, terminal, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, cleanup, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, detail, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 4, now);
	sqlite3_bind_text(st, 5, id, -1, SQLITE_TRANSIENT);
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	return r == SQLITE_DONE ? OTA_OK : db_err(d, err, "lease_finalize");
}

ota_err oci_lease_rows(oci_lease_db *d, bool open_only, json_t **out, ota_error *err)
{
	*out = NULL;
	sqlite3_stmt *st = NULL;
	/* (NULL as cgroups when the table has no such column) */
	char sql[512];
	snprintf(sql, sizeof sql,
	         "SELECT id, txn, runtime, runtime_bin, runtime_root, bundle, plan_identity,"
	         " runner_pid, runner_start, phase, container_pid, created_at, finalized_at,"
	         " terminal, cleanup, detail, %s FROM oci_lease%s ORDER BY created_at, id",
	         d->has_cgroups ? "cgroups" : "NULL", open_only ? " WHERE terminal IS NULL" : "");
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_err(d, err, "lease_rows");
	json_t *arr = json_array();
	static const char *const cols[] = {"id", "txn", "runtime", "runtime_bin", "runtime_root",
	                                   "bundle", "plan_identity", "runner_pid", "runner_start",
	                                   "phase", "container_pid", "created_at", "finalized_at",
	                                   "terminal", "cleanup", "detail", "cgroups"};
	int r = SQLITE_DONE;
	while (arr != NULL && (r = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *o = json_object();
		for (int i = 0; o != NULL && i < 17; i++) {
			json_t *v;
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_INTEGER:
				v = json_integer((json_int_t)sqlite3_column_int64(st, i));
				break;
			case SQLITE_NULL:
				v = json_null();
				break;
			default:
				v = json_string((const char *)sqlite3_column_text(st, i));
			}
			json_object_set_new(o, cols[i], v);
		}
		json_array_append_new(arr, o);
	}
	/* a step that fails (a malformed page, I/O) is an error, never the
	 * end of the list: open leases must not vanish from cleanup */
	if (arr != NULL && r != SQLITE_DONE) {
		ota_err e = db_err(d, err, "lease_rows");
		sqlite3_finalize(st);
		json_decref(arr);
		return e;
	}
	sqlite3_finalize(st);
	if (arr == NULL)
		return OTA_ERR_NOMEM;
	*out = arr;
	return OTA_OK;
}

ota_err ota_oci_lease_list(const char *lease_db, bool open_only, json_t **out, ota_error *err)
{
	*out = NULL;
	oci_lease_db *d = NULL;
	ota_err rc = oci_lease_open(lease_db != NULL ? lease_db : "/var/lib/ota/leases.db", &d, err);
	if (rc != OTA_OK)
		return rc;
	rc = oci_lease_rows(d, open_only, out, err);
	oci_lease_close(d);
	return rc;
}
