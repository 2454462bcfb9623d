/*
 * nonce-store/walbuf.c - a sqlite VFS over the default one that gathers the
 * writes of a transaction's WAL frames into one pwrite.
 *
 * sqlite writes each WAL frame with two pwrite calls (its 24-byte header,
 * then the page), so a group commit of a few hundred pages cost a few
 * hundred system calls, each looking up and dirtying the page-cache pages
 * it straddles. Here the frames a transaction appends to the WAL are kept
 * in memory and written in one call, at the latest when sqlite syncs the
 * WAL, before it publishes the commit in the wal-index:
 *
 *   - a write that does not append to what is gathered, a read, a sync, a
 *     truncate, a size query, a file control, a lock call and the close of
 *     the WAL first write what is gathered (so sqlite never reads stale
 *     bytes, and a write error is the error of the call that wrote);
 *   - a commit frame (a frame header whose "database size after commit"
 *     is not 0) is written out as soon as its page has been appended,
 *     before sqlite's sync or any reader could rely on it;
 *   - the store opens its writer through this VFS only in
 *     synchronous=FULL, where sqlite syncs the WAL before every COMMIT
 *     returns (docs/nonce-store.md, durability), so nothing committed
 *     depends on the commit-frame rule alone.
 *
 * Files other than WAL files are the default VFS's own, unchanged.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "nonce_internal.h"

/* Gathered at most, then written on: one write of the default VFS moves
 * at most 0x1ffff bytes (it masks the length; the rest of a longer write
 * would fail as "disk full"), so 124 KiB, 31 pages of 4 KiB. */
#define WALBUF_CAP (124u * 1024u)
#define WAL_FRAME_HDR 24

typedef struct walbuf_file {
	sqlite3_file base;   /* pMethods: walbuf_io */
	sqlite3_file *real;  /* the default VFS's file, right after this struct */
	unsigned char *buf;  /* sqlite3_malloc'd, WALBUF_CAP bytes */
	sqlite3_int64 off;   /* file offset of buf[0] */
	size_t len;
	sqlite3_int64 commit_page; /* offset of the page that completes a commit frame, or -1 */
} walbuf_file;

static sqlite3_vfs walbuf_vfs;
static sqlite3_vfs *real_vfs;
static pthread_once_t walbuf_once = PTHREAD_ONCE_INIT;
static int walbuf_rc = SQLITE_ERROR;

static int wb_flush(walbuf_file *f)
{
	if (f->len == 0)
		return SQLITE_OK;
	int rc = f->real->pMethods->xWrite(f->real, f->buf, (int)f->len, f->off);
	f->len = 0;
	f->commit_page = -1;
	return rc;
}

static int wb_close(sqlite3_file *p)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	int rc2 = f->real->pMethods->xClose(f->real);
	sqlite3_free(f->buf);
	f->buf = NULL;
	return rc != SQLITE_OK ? rc : rc2;
}

static int wb_read(sqlite3_file *p, void *out, int n, sqlite3_int64 off)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	if (rc != SQLITE_OK)
		return rc;
	return f->real->pMethods->xRead(f->real, out, n, off);
}

static uint32_t be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static int wb_write(sqlite3_file *p, const void *data, int n, sqlite3_int64 off)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc;
	if (n <= 0)
		return f->real->pMethods->xWrite(f->real, data, n, off);
	if (f->len > 0 && off != f->off + (sqlite3_int64)f->len &&
	    (rc = wb_flush(f)) != SQLITE_OK)
		return rc;
	if (f->len + (size_t)n > WALBUF_CAP && (rc = wb_flush(f)) != SQLITE_OK)
		return rc;
	if (f->buf == NULL) {
		f->buf = sqlite3_malloc((int)WALBUF_CAP);
		f->len = 0;
	}
	if (f->buf == NULL || (size_t)n > WALBUF_CAP) /* not gathered: written now */
		return f->real->pMethods->xWrite(f->real, data, n, off);
	if (f->len == 0)
		f->off = off;
	memcpy(f->buf + f->len, data, (size_t)n);
	f->len += (size_t)n;
	if (n == WAL_FRAME_HDR && off >= 32) {
		/* a frame header: its page follows; a commit frame is written
		 * out once that page is here */
		f->commit_page = be32((const unsigned char *)data + 4) != 0 ? off + WAL_FRAME_HDR : -1;
	} else if (f->commit_page >= 0 && off == f->commit_page) {
		return wb_flush(f);
	}
	return SQLITE_OK;
}

static int wb_truncate(sqlite3_file *p, sqlite3_int64 size)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	return rc != SQLITE_OK ? rc : f->real->pMethods->xTruncate(f->real, size);
}

static int wb_sync(sqlite3_file *p, int flags)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	return rc != SQLITE_OK ? rc : f->real->pMethods->xSync(f->real, flags);
}

static int wb_file_size(sqlite3_file *p, sqlite3_int64 *size)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	return rc != SQLITE_OK ? rc : f->real->pMethods->xFileSize(f->real, size);
}

static int wb_lock(sqlite3_file *p, int lock)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	return rc != SQLITE_OK ? rc : f->real->pMethods->xLock(f->real, lock);
}

static int wb_unlock(sqlite3_file *p, int lock)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	return rc != SQLITE_OK ? rc : f->real->pMethods->xUnlock(f->real, lock);
}

static int wb_check_reserved(sqlite3_file *p, int *out)
{
	walbuf_file *f = (walbuf_file *)p;
	return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int wb_file_control(sqlite3_file *p, int op, void *arg)
{
	walbuf_file *f = (walbuf_file *)p;
	int rc = wb_flush(f);
	return rc != SQLITE_OK ? rc : f->real->pMethods->xFileControl(f->real, op, arg);
}

static int wb_sector_size(sqlite3_file *p)
{
	walbuf_file *f = (walbuf_file *)p;
	return f->real->pMethods->xSectorSize(f->real);
}

static int wb_device_characteristics(sqlite3_file *p)
{
	walbuf_file *f = (walbuf_file *)p;
	return f->real->pMethods->xDeviceCharacteristics(f->real);
}

/* A WAL file has no shared memory or mapping of its own (the database
 * file has); these exist because iVersion 3 has them. */
static int wb_shm_map(sqlite3_file *p, int pg, int pgsz, int extend, void volatile **out)
{
	walbuf_file *f = (walbuf_file *)p;
	return f->real->pMethods->xShmMap(f->real, pg, pgsz, extend, out);
}

static int wb_shm_lock(sqlite3_file *p, int ofs, int n, int flags)
{
	walbuf_file *f = (walbuf_file *)p;
	return f->real->pMethods->xShmLock(f->real, ofs, n, flags);
}

static void wb_shm_barrier(sqlite3_file *p)
{
	walbuf_file *f = (walbuf_file *)p;
	f->real->pMethods->xShmBarrier(f->real);
}

static int wb_shm_unmap(sqlite3_file *p, int del)
{
	walbuf_file *f = (walbuf_file *)p;
	return f->real->pMethods->xShmUnmap(f->real, del);
}

static int wb_fetch(sqlite3_file *p, sqlite3_int64 off, int n, void **out)
{
	walbuf_file *f = (walbuf_file *)p;
	*out = NULL;
	int rc = wb_flush(f);
	return rc != SQLITE_OK ? rc : f->real->pMethods->xFetch(f->real, off, n, out);
}

static int wb_unfetch(sqlite3_file *p, sqlite3_int64 off, void *ptr)
{
	walbuf_file *f = (walbuf_file *)p;
	return f->real->pMethods->xUnfetch(f->real, off, ptr);
}

static sqlite3_io_methods walbuf_io = {
	.iVersion = 3,
	.xClose = wb_close,
	.xRead = wb_read,
	.xWrite = wb_write,
	.xTruncate = wb_truncate,
	.xSync = wb_sync,
	.xFileSize = wb_file_size,
	.xLock = wb_lock,
	.xUnlock = wb_unlock,
	.xCheckReservedLock = wb_check_reserved,
	.xFileControl = wb_file_control,
	.xSectorSize = wb_sector_size,
	.xDeviceCharacteristics = wb_device_characteristics,
	.xShmMap = wb_shm_map,
	.xShmLock = wb_shm_lock,
	.xShmBarrier = wb_shm_barrier,
	.xShmUnmap = wb_shm_unmap,
	.xFetch = wb_fetch,
	.xUnfetch = wb_unfetch,
};

static int wb_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *p, int flags,
                   int *out_flags)
{
	(void)vfs;
	if (!(flags & SQLITE_OPEN_WAL)) /* the default VFS's file, in place */
		return real_vfs->xOpen(real_vfs, name, p, flags, out_flags);
	walbuf_file *f = (walbuf_file *)p;
	memset(f, 0, sizeof *f);
	f->real = (sqlite3_file *)(f + 1);
	f->commit_page = -1;
	int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
	if (rc != SQLITE_OK || f->real->pMethods == NULL) {
		if (f->real->pMethods != NULL) /* a failed open may still need its close */
			f->real->pMethods->xClose(f->real);
		return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
	}
	if (f->real->pMethods->iVersion < 3) { /* not a default VFS we know */
		f->real->pMethods->xClose(f->real);
		return SQLITE_CANTOPEN;
	}
	f->base.pMethods = &walbuf_io;
	return SQLITE_OK;
}

/* the rest is the default VFS's */
static int wb_delete(sqlite3_vfs *v, const char *n, int sync)
{
	(void)v;
	return real_vfs->xDelete(real_vfs, n, sync);
}
static int wb_access(sqlite3_vfs *v, const char *n, int flags, int *out)
{
	(void)v;
	return real_vfs->xAccess(real_vfs, n, flags, out);
}
static int wb_full_pathname(sqlite3_vfs *v, const char *n, int cap, char *out)
{
	(void)v;
	return real_vfs->xFullPathname(real_vfs, n, cap, out);
}
static void *wb_dlopen(sqlite3_vfs *v, const char *n)
{
	(void)v;
	return real_vfs->xDlOpen(real_vfs, n);
}
static void wb_dlerror(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	real_vfs->xDlError(real_vfs, n, out);
}
static void (*wb_dlsym(sqlite3_vfs *v, void *h, const char *s))(void)
{
	(void)v;
	return real_vfs->xDlSym(real_vfs, h, s);
}
static void wb_dlclose(sqlite3_vfs *v, void *h)
{
	(void)v;
	real_vfs->xDlClose(real_vfs, h);
}
static int wb_randomness(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xRandomness(real_vfs, n, out);
}
static int wb_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return real_vfs->xSleep(real_vfs, us);
}
static int wb_current_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return real_vfs->xCurrentTime(real_vfs, out);
}
static int wb_get_last_error(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xGetLastError != NULL ? real_vfs->xGetLastError(real_vfs, n, out) : 0;
}
static int wb_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static void walbuf_init(void)
{
	real_vfs = sqlite3_vfs_find(NULL);
	if (real_vfs == NULL || real_vfs->iVersion < 2 || real_vfs->xCurrentTimeInt64 == NULL)
		return;
	walbuf_vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(walbuf_file) + real_vfs->szOsFile,
		.mxPathname = real_vfs->mxPathname,
		.zName = NONCE_WALBUF_VFS,
		.xOpen = wb_open,
		.xDelete = wb_delete,
		.xAccess = wb_access,
		.xFullPathname = wb_full_pathname,
		.xDlOpen = wb_dlopen,
		.xDlError = wb_dlerror,
		.xDlSym = wb_dlsym,
		.xDlClose = wb_dlclose,
		.xRandomness = wb_randomness,
		.xSleep = wb_sleep,
		.xCurrentTime = wb_current_time,
		.xGetLastError = wb_get_last_error,
		.xCurrentTimeInt64 = wb_current_time_int64,
	};
	walbuf_rc = sqlite3_vfs_register(&walbuf_vfs, 0);
}

int nonce_walbuf_register(void)
{
	pthread_once(&walbuf_once, walbuf_init);
	return walbuf_rc;
}
