/*
 * include/ota/sqlite.h - what each of the toolkit's sqlite databases (the
 * nonce store, the lease database, the archive ledger) does alike.
 */
#ifndef OTA_SQLITE_H
#define OTA_SQLITE_H

typedef struct sqlite3 sqlite3;

/*
 * Puts db in WAL mode ("PRAGMA journal_mode=WAL") and checks that it is.
 * Turning a new database file to WAL takes a lock that sqlite does not wait
 * for (its busy handler is not called) while another connection is turning
 * it too: two processes opening a fresh file at once failed 1 time in 75
 * with "database is locked". SQLITE_BUSY is therefore retried every 10 ms,
 * for at most 10 s. Returns SQLITE_OK, the last error, or SQLITE_ERROR when
 * the file stays in another mode (an in-memory database, say).
 */
int ota_sqlite_wal(sqlite3 *db);

#endif
