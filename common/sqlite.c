/*
 * common/sqlite.c - ota_sqlite_wal (include/ota/sqlite.h).
 */
#include "ota/sqlite.h"

#include <sqlite3.h>
#include <string.h>

int ota_sqlite_wal(sqlite3 *db)
{
	int rc = SQLITE_BUSY;
	for (int i = 0; i < 1000; i++) {
		sqlite3_stmt *st = NULL;
		rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
		if (rc == SQLITE_OK) {
			rc = sqlite3_step(st);
			if (rc == SQLITE_ROW) {
				const unsigned char *m = sqlite3_column_text(st, 0);
				rc = m != NULL && strcmp((const char *)m, "wal") == 0 ? SQLITE_OK
				                                                       : SQLITE_ERROR;
			}
		}
		sqlite3_finalize(st);
		if ((rc & 0xff) != SQLITE_BUSY)
			return rc;
		sqlite3_sleep(10);
	}
	return rc;
}
