/*
 * A commit's tree id from a git object store, without running git: what
 * ota_runner_worktree_id needs to check a submodule's files against the
 * commit its gitlink records.
 *
 * The store is untrusted bytes (a task may have written it): a loose
 * object (objects/XX/REST, zlib) or an entry of a pack (objects/pack/
 * pack-*.idx version 2 and its .pack, version 2 or 3), an offset or
 * reference delta resolved against its base at most OTA_MAX_GIT_DELTA_DEPTH
 * deep, every object and delta at most OTA_MAX_GIT_OBJECT_BYTES inflated,
 * and all the lookups of one caller (a work-tree walk) at most a budget of
 * inflated bytes together (OTA_MAX_GIT_INFLATE_BYTES by default): a hostile
 * store costs a bounded amount of time and memory however many submodules
 * point at it. Packs are looked in before loose objects, as git does; an
 * index whose pack is missing is passed over, as git does.
 * The commit found is hashed ("commit LEN\0" and its bytes, SHA-1 or
 * SHA-256 by the id's length) and must be the id asked for: a pack or index
 * that lies about what it holds is refused, never believed. Every file is
 * opened beneath the git directory without following a symlink. Anything
 * this reader does not know (an index version, an object store with
 * alternates that does not hold the object, a malformed entry) is an error:
 * the work tree is then not recorded, never approximated.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "ota/limits.h"
#include "ota/runner.h"

enum { OBJ_COMMIT = 1, OBJ_TREE = 2, OBJ_BLOB = 3, OBJ_TAG = 4, OBJ_OFS_DELTA = 6,
       OBJ_REF_DELTA = 7 };

typedef struct gctx {
	int gitfd;          /* the git directory, or -1: only the one pack below */
	int idxfd, packfd;  /* the pack being read (gitfd mode: set per pack) */
	size_t oid_len;     /* 20 or 32 */
	unsigned depth;     /* deltas followed so far */
	uint64_t *budget;   /* inflated bytes still allowed */
	ota_error *err;
	/* gitfd mode: objects/pack and its index names, listed once */
	bool listed;
	int pdir;           /* -1: no objects/pack */
	char (*idx)[NAME_MAX + 1];
	size_t nidx;
} gctx;

static ota_err spend(gctx *g, size_t n)
{
	if (n > *g->budget)
		return ota_error_set(g->err, OTA_ERR_TOO_LARGE, "git objects",
		                     "the lookups would inflate more than their budget of %u bytes",
		                     OTA_MAX_GIT_INFLATE_BYTES);
	*g->budget -= n;
	return OTA_OK;
}

static ota_err bad(gctx *g, const char *what)
{
	return ota_error_set(g->err, OTA_ERR_UNSUPPORTED, "git objects", "%s", what);
}

/* ---- zlib ---- */

/*
 * Inflates the zlib stream at offset off of fd (at most end) into exactly
 * want bytes (*out new): the stream is read in chunks until it ends, so any
 * valid deflate stream is read, however poorly it compresses; it must end at
 * exactly want bytes.
 */
static ota_err inflate_at(gctx *g, int fd, uint64_t off, uint64_t end, size_t want, uint8_t **out)
{
	*out = NULL;
	if (want > OTA_MAX_GIT_OBJECT_BYTES)
		return ota_error_set(g->err, OTA_ERR_TOO_LARGE, "git objects",
		                     "an object of %zu bytes (at most %u)", want,
		                     OTA_MAX_GIT_OBJECT_BYTES);
	ota_err rc = spend(g, want);
	if (rc != OTA_OK)
		return rc;
	uint8_t *buf = malloc(want + 1);
	uint8_t *in = malloc(64 * 1024);
	z_stream z;
	memset(&z, 0, sizeof z);
	if (buf == NULL || in == NULL || inflateInit(&z) != Z_OK) {
		free(buf);
		free(in);
		return ota_error_set(g->err, OTA_ERR_NOMEM, "git objects", NULL);
	}
	/* one byte more than wanted: a stream longer than its header says */
	z.next_out = buf;
	z.avail_out = (uInt)want + 1;
	int zr = Z_OK;
	while (zr == Z_OK) {
		if (z.avail_in == 0) {
			size_t k = end - off < 64 * 1024 ? (size_t)(end - off) : 64 * 1024;
			if (k == 0)
				break; /* the pack ends first */
			ssize_t r = pread(fd, in, k, (off_t)off);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			off += (uint64_t)r;
			z.next_in = in;
			z.avail_in = (uInt)r;
		}
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr == Z_OK && z.avail_out == 0)
			break; /* longer than its header says */
	}
	size_t got = want + 1 - z.avail_out;
	inflateEnd(&z);
	free(in);
	if (zr != Z_STREAM_END || got != want) {
		free(buf);
		return bad(g, zr == Z_STREAM_END || zr == Z_OK || zr == Z_BUF_ERROR
		                  ? "a compressed object is not as long as its header says"
		                  : "a compressed object is corrupt");
	}
	*out = buf;
	return OTA_OK;
}

/* ---- the parsers (fuzzed) ---- */

static bool hex_to(const uint8_t *h, size_t n, uint8_t *out)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v = 0;
		for (int k = 0; k < 2; k++) {
			uint8_t c = h[2 * i + (size_t)k];
			v <<= 4;
			if (c >= '0' && c <= '9')
				v |= (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v |= (unsigned)(c - 'a' + 10);
			else
				return false;
		}
		out[i] = (uint8_t)v;
	}
	return true;
}

ota_err ota_git_commit_parse_tree(const uint8_t *b, size_t n, size_t oid_len, uint8_t tree[32],
                                  ota_error *err)
{
	if (oid_len != 20 && oid_len != 32)
		return ota_error_set(err, OTA_ERR_USAGE, "git objects", "object ids are 20 or 32 bytes");
	size_t hl = 2 * oid_len;
	if (n < 5 + hl + 1 || memcmp(b, "tree ", 5) != 0 || b[5 + hl] != '\n' ||
	    !hex_to(b + 5, oid_len, tree))
		return ota_error_set(err, OTA_ERR_UNSUPPORTED, "git objects",
		                     "a commit that does not start with its tree");
	return OTA_OK;
}

ota_err ota_git_delta_apply(const uint8_t *base, size_t base_len, const uint8_t *d, size_t n,
                            uint8_t **out, size_t *out_len, ota_error *err)
{
	*out = NULL;
	*out_len = 0;
	size_t i = 0;
	uint64_t sz[2] = {0, 0};
	for (int k = 0; k < 2; k++) {
		unsigned shift = 0;
		uint8_t c;
		do {
			if (i >= n || shift > 56)
				return ota_error_set(err, OTA_ERR_UNSUPPORTED, "git objects",
				                     "a delta's header is cut short");
			c = d[i++];
			sz[k] |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
		} while (c & 0x80);
	}
	if (sz[0] != base_len)
		return ota_error_set(err, OTA_ERR_UNSUPPORTED, "git objects",
		                     "a delta for another base (its size differs)");
	if (sz[1] > OTA_MAX_GIT_OBJECT_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "git objects",
		                     "a delta's result of %llu bytes (at most %u)",
		                     (unsigned long long)sz[1], OTA_MAX_GIT_OBJECT_BYTES);
	size_t want = (size_t)sz[1];
	uint8_t *o = malloc(want + 1);
	if (o == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "git objects", NULL);
	size_t at = 0;
	while (i < n) {
		uint8_t c = d[i++];
		if (c & 0x80) {
			uint64_t off = 0, len = 0;
			for (int k = 0; k < 4; k++)
				if (c & (1u << k)) {
					if (i >= n)
						goto cut;
					off |= (uint64_t)d[i++] << (8 * k);
				}
			for (int k = 0; k < 3; k++)
				if (c & (0x10u << k)) {
					if (i >= n)
						goto cut;
					len |= (uint64_t)d[i++] << (8 * k);
				}
			if (len == 0)
				len = 0x10000;
			if (off > base_len || len > base_len - off || len > want - at)
				goto range;
			memcpy(o + at, base + off, (size_t)len);
			at += (size_t)len;
		} else if (c != 0) {
			if (c > n - i || c > want - at)
				goto range;
			memcpy(o + at, d + i, c);
			at += c;
			i += c;
		} else {
			free(o);
			return ota_error_set(err, OTA_ERR_UNSUPPORTED, "git objects",
			                     "a delta holds the reserved instruction 0");
		}
	}
	if (at != want)
		goto range;
	*out = o;
	*out_len = want;
	return OTA_OK;
cut:
	free(o);
	return ota_error_set(err, OTA_ERR_UNSUPPORTED, "git objects", "a delta is cut short");
range:
	free(o);
	return ota_error_set(err, OTA_ERR_UNSUPPORTED, "git objects",
	                     "a delta copies outside its base or its result");
}

/* "TYPE LEN\0" then LEN bytes: the content (borrowed from b) and its type */
static ota_err loose_header(gctx *g, const uint8_t *b, size_t n, int *type, size_t *hdr)
{
	static const struct {
		const char *name;
		int type;
	} names[] = {{"commit ", OBJ_COMMIT}, {"tree ", OBJ_TREE}, {"blob ", OBJ_BLOB}, {"tag ", OBJ_TAG}};
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		size_t l = strlen(names[k].name);
		if (n < l || memcmp(b, names[k].name, l) != 0)
			continue;
		size_t i = l, len = 0;
		if (i >= n || b[i] < '0' || b[i] > '9' || (b[i] == '0' && i + 1 < n && b[i + 1] != '\0'))
			break;
		for (; i < n && b[i] >= '0' && b[i] <= '9'; i++) {
			if (len > (OTA_MAX_GIT_OBJECT_BYTES - 9u) / 10u)
				return bad(g, "a loose object's length is too large");
			len = len * 10 + (size_t)(b[i] - '0');
		}
		if (i >= n || b[i] != '\0' || n - i - 1 != len)
			break;
		*type = names[k].type;
		*hdr = i + 1;
		return OTA_OK;
	}
	return bad(g, "a loose object's header is malformed");
}

/* ---- hashing ---- */

static ota_err check_id(gctx *g, int type, const uint8_t *content, size_t n, const uint8_t *oid)
{
	static const char *const tname[] = {"", "commit", "tree", "blob", "tag"};
	if (type < OBJ_COMMIT || type > OBJ_TAG)
		return bad(g, "an object of an unknown type");
	char hdr[64];
	int hl = snprintf(hdr, sizeof hdr, "%s %zu", tname[type], n);
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned mdl = 0;
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	bool ok = x != NULL &&
	          EVP_DigestInit_ex(x, g->oid_len == 20 ? EVP_sha1() : EVP_sha256(), NULL) == 1 &&
	          EVP_DigestUpdate(x, hdr, (size_t)hl + 1) == 1 && EVP_DigestUpdate(x, content, n) == 1 &&
	          EVP_DigestFinal_ex(x, md, &mdl) == 1;
	EVP_MD_CTX_free(x);
	if (!ok)
		return ota_error_set(g->err, OTA_ERR_INTERNAL, "git objects", "digest");
	if (mdl != g->oid_len || memcmp(md, oid, g->oid_len) != 0)
		return bad(g, "an object's bytes do not hash to the id it is stored under");
	return OTA_OK;
}

/* ---- packs ---- */

static ota_err pread_all(gctx *g, int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ota_error_set(g->err, OTA_ERR_IO, "git objects", "read: %s", strerror(errno));
		if (r == 0)
			return bad(g, "a pack or index is cut short");
		got += (size_t)r;
	}
	return OTA_OK;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static ota_err fd_size(gctx *g, int fd, uint64_t *size)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return ota_error_set(g->err, OTA_ERR_IO, "git objects", "stat: %s", strerror(errno));
	*size = (uint64_t)st.st_size;
	return OTA_OK;
}

/*
 * The pack offset of oid in the version-2 index g->idxfd; *found false when
 * this index does not list it.
 */
static ota_err idx_find(gctx *g, const uint8_t *oid, bool *found, uint64_t *off)
{
	*found = false;
	uint64_t size = 0;
	ota_err rc = fd_size(g, g->idxfd, &size);
	if (rc != OTA_OK)
		return rc;
	uint8_t head[8 + 1024];
	if (size < sizeof head)
		return bad(g, "a pack index is cut short");
	rc = pread_all(g, g->idxfd, head, sizeof head, 0);
	if (rc != OTA_OK)
		return rc;
	if (memcmp(head, "\377tOc", 4) != 0 || be32(head + 4) != 2)
		return bad(g, "a pack index that is not of version 2");
	uint64_t n = be32(head + 8 + 4 * 255);
	uint64_t L = g->oid_len;
	uint64_t names = 8 + 1024, offs = names + n * (L + 4), large = offs + n * 4;
	if (n > (size / (L + 8)) || large + 2 * L > size)
		return bad(g, "a pack index shorter than its entry count");
	uint64_t lo = oid[0] == 0 ? 0 : be32(head + 8 + 4 * ((size_t)oid[0] - 1));
	uint64_t hi = be32(head + 8 + 4 * (size_t)oid[0]);
	if (lo > hi || hi > n)
		return bad(g, "a pack index's fan-out is not ascending");
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		uint8_t name[32];
		rc = pread_all(g, g->idxfd, name, L, names + mid * L);
		if (rc != OTA_OK)
			return rc;
		int c = memcmp(name, oid, L);
		if (c == 0) {
			uint8_t o4[4];
			rc = pread_all(g, g->idxfd, o4, 4, offs + mid * 4);
			if (rc != OTA_OK)
				return rc;
			uint32_t v = be32(o4);
			if (v & 0x80000000u) {
				uint64_t k = v & 0x7fffffffu;
				if (large + (k + 1) * 8 + 2 * L > size)
					return bad(g, "a pack index's large offset is missing");
				uint8_t o8[8];
				rc = pread_all(g, g->idxfd, o8, 8, large + k * 8);
				if (rc != OTA_OK)
					return rc;
				*off = (uint64_t)be32(o8) << 32 | be32(o8 + 4);
			} else {
				*off = v;
			}
			*found = true;
			return OTA_OK;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return OTA_OK;
}

static ota_err find_object(gctx *g, const uint8_t *oid, int *type, uint8_t **out, size_t *n);

/*
 * The object at offset off of pack g->packfd, deltas resolved: *type one of
 * commit, tree, blob, tag; *out new.
 */
static ota_err pack_read(gctx *g, uint64_t off, int *type, uint8_t **out, size_t *n)
{
	*out = NULL;
	uint64_t size = 0;
	ota_err rc = fd_size(g, g->packfd, &size);
	if (rc != OTA_OK)
		return rc;
	uint8_t ph[12];
	if (size < 12 + g->oid_len)
		return bad(g, "a pack is cut short");
	rc = pread_all(g, g->packfd, ph, sizeof ph, 0);
	if (rc != OTA_OK)
		return rc;
	if (memcmp(ph, "PACK", 4) != 0 || (be32(ph + 4) != 2 && be32(ph + 4) != 3))
		return bad(g, "a pack that is not of version 2 or 3");
	if (off < 12 || off >= size - g->oid_len)
		return bad(g, "a pack offset outside the pack");
	/* the entry's header (at most 10 + 32 bytes) and its compressed data */
	uint64_t avail = size - g->oid_len - off;
	size_t head_n = avail < 64 ? (size_t)avail : 64;
	uint8_t h[64];
	rc = pread_all(g, g->packfd, h, head_n, off);
	if (rc != OTA_OK)
		return rc;
	size_t i = 0;
	uint8_t c = h[i++];
	int t = (c >> 4) & 7;
	uint64_t len = c & 15;
	unsigned shift = 4;
	while (c & 0x80) {
		if (i >= head_n || shift > 56)
			return bad(g, "a pack entry's header is malformed");
		c = h[i++];
		len |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	}
	if (len > OTA_MAX_GIT_OBJECT_BYTES)
		return ota_error_set(g->err, OTA_ERR_TOO_LARGE, "git objects",
		                     "a packed object of %llu bytes (at most %u)", (unsigned long long)len,
		                     OTA_MAX_GIT_OBJECT_BYTES);
	uint64_t base_off = 0;
	uint8_t base_id[32];
	if (t == OBJ_OFS_DELTA) {
		if (i >= head_n)
			return bad(g, "a pack entry's header is malformed");
		c = h[i++];
		uint64_t d = c & 127;
		while (c & 0x80) {
			if (i >= head_n || d > (UINT64_MAX >> 8))
				return bad(g, "a pack entry's base offset is malformed");
			c = h[i++];
			d = ((d + 1) << 7) | (c & 127);
		}
		if (d == 0 || d > off - 12)
			return bad(g, "a delta's base is not before it in the pack");
		base_off = off - d;
	} else if (t == OBJ_REF_DELTA) {
		if (i + g->oid_len > head_n)
			return bad(g, "a pack entry's base id is cut short");
		memcpy(base_id, h + i, g->oid_len);
		i += g->oid_len;
	} else if (t < OBJ_COMMIT || t > OBJ_TAG) {
		return bad(g, "a pack entry of an unknown type");
	}
	/* the compressed bytes, never past the pack's trailer */
	uint8_t *data = NULL;
	rc = inflate_at(g, g->packfd, off + i, size - g->oid_len, (size_t)len, &data);
	if (rc != OTA_OK)
		return rc;
	if (t >= OBJ_COMMIT && t <= OBJ_TAG) {
		*type = t;
		*out = data;
		*n = (size_t)len;
		return OTA_OK;
	}
	/* a delta: its base first */
	if (++g->depth > OTA_MAX_GIT_DELTA_DEPTH) {
		free(data);
		return ota_error_set(g->err, OTA_ERR_TOO_LARGE, "git objects",
		                     "deltas nested more than %u deep", OTA_MAX_GIT_DELTA_DEPTH);
	}
	uint8_t *base = NULL;
	size_t bn = 0;
	int bt = 0;
	if (t == OBJ_OFS_DELTA) {
		rc = pack_read(g, base_off, &bt, &base, &bn);
	} else {
		/* the base may be in this pack or anywhere in the store */
		int idxfd = g->idxfd, packfd = g->packfd;
		rc = find_object(g, base_id, &bt, &base, &bn);
		g->idxfd = idxfd;
		g->packfd = packfd;
	}
	g->depth--;
	if (rc == OTA_OK)
		rc = ota_git_delta_apply(base, bn, data, (size_t)len, out, n, g->err);
	free(base);
	free(data);
	if (rc == OTA_OK)
		*type = bt;
	return rc;
}

/* oid in the pack pair (g->idxfd, g->packfd); *found false when not listed */
static ota_err pack_find(gctx *g, const uint8_t *oid, bool *found, int *type, uint8_t **out,
                         size_t *n)
{
	uint64_t off = 0;
	ota_err rc = idx_find(g, oid, found, &off);
	if (rc != OTA_OK || !*found)
		return rc;
	return pack_read(g, off, type, out, n);
}

/* objects/pack's index names, once per lookup context */
static ota_err list_packs(gctx *g)
{
	if (g->listed)
		return OTA_OK;
	g->listed = true;
	ota_error le;
	ota_error_clear(&le);
	ota_err rc = ota_dir_open_beneath(g->gitfd, ".git", "objects/pack", 0, &g->pdir, &le);
	if (rc == OTA_ERR_NOT_FOUND) {
		g->pdir = -1;
		return OTA_OK;
	}
	if (rc != OTA_OK) {
		if (g->err != NULL)
			*g->err = le;
		return rc;
	}
	int dfd = fcntl(g->pdir, F_DUPFD_CLOEXEC, 0);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return ota_error_set(g->err, OTA_ERR_IO, "objects/pack", "opendir: %s", strerror(errno));
	}
	size_t cap = 0;
	rc = OTA_OK;
	for (struct dirent *de; rc == OTA_OK && (de = readdir(d)) != NULL;) {
		size_t l = strlen(de->d_name);
		if (l < 10 || strncmp(de->d_name, "pack-", 5) != 0 || strcmp(de->d_name + l - 4, ".idx") != 0)
			continue;
		if (g->nidx >= OTA_MAX_GIT_PACKS) {
			rc = ota_error_set(g->err, OTA_ERR_TOO_LARGE, "objects/pack", "more than %u packs",
			                   OTA_MAX_GIT_PACKS);
			break;
		}
		if (g->nidx == cap) {
			size_t nc = cap ? cap * 2 : 8;
			char(*ni)[NAME_MAX + 1] = realloc(g->idx, nc * sizeof *ni);
			if (ni == NULL) {
				rc = ota_error_set(g->err, OTA_ERR_NOMEM, "objects/pack", NULL);
				break;
			}
			g->idx = ni;
			cap = nc;
		}
		snprintf(g->idx[g->nidx++], NAME_MAX + 1, "%s", de->d_name);
	}
	closedir(d);
	return rc;
}

/* oid in the packs of g->gitfd; *found false when none lists it */
static ota_err packs_find(gctx *g, const uint8_t *oid, bool *found, int *type, uint8_t **out,
                          size_t *n)
{
	*found = false;
	ota_err rc = list_packs(g);
	for (size_t k = 0; rc == OTA_OK && !*found && k < g->nidx; k++) {
		const char *name = g->idx[k];
		char pack[NAME_MAX + 1];
		snprintf(pack, sizeof pack, "%.*s.pack", (int)(strlen(name) - 4), name);
		int ifd = openat(g->pdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		int pfd = ifd >= 0 ? openat(g->pdir, pack, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
		                   : -1;
		int en = errno;
		struct stat si, sp;
		if (ifd < 0 || pfd < 0) {
			/* an index without its pack (a pack being written or
			 * removed) is passed over, as git does; anything else is
			 * an error, named with its cause */
			if (en != ENOENT)
				rc = ota_error_set(g->err, en == ELOOP ? OTA_ERR_PATH_SYMLINK : OTA_ERR_IO,
				                   "objects/pack", "%.80s: %s", ifd < 0 ? name : pack,
				                   strerror(en));
		} else if (fstat(ifd, &si) != 0 || fstat(pfd, &sp) != 0 || !S_ISREG(si.st_mode) ||
		           !S_ISREG(sp.st_mode)) {
			rc = ota_error_set(g->err, OTA_ERR_NOT_REGULAR, "objects/pack",
			                   "%.80s or its pack is not a regular file", name);
		} else {
			int oi = g->idxfd, op = g->packfd;
			g->idxfd = ifd;
			g->packfd = pfd;
			rc = pack_find(g, oid, found, type, out, n);
			g->idxfd = oi;
			g->packfd = op;
		}
		if (ifd >= 0)
			close(ifd);
		if (pfd >= 0)
			close(pfd);
	}
	return rc;
}

/* oid as a loose object of g->gitfd; *found false when there is none */
static ota_err loose_find(gctx *g, const uint8_t *oid, bool *found, int *type, uint8_t **out,
                          size_t *n)
{
	*found = false;
	char hex[65], rel[80];
	ota_hex_encode(ota_bytes_make(oid, g->oid_len), hex);
	snprintf(rel, sizeof rel, "objects/%.2s/%s", hex, hex + 2);
	uint8_t *z = NULL;
	size_t zn = 0;
	ota_error le;
	ota_error_clear(&le);
	/* compressed, a loose object is at most a little larger than itself */
	ota_err rc = ota_file_read_beneath(g->gitfd, ".git", rel,
	                                   compressBound(OTA_MAX_GIT_OBJECT_BYTES) + 64, &z, &zn, &le);
	if (rc == OTA_ERR_NOT_FOUND)
		return OTA_OK;
	if (rc != OTA_OK) {
		if (g->err != NULL)
			*g->err = le;
		return rc;
	}
	*found = true;
	/* the header's length is not known before inflating: inflate up to
	 * the cap, then check the header */
	const size_t cap = OTA_MAX_GIT_OBJECT_BYTES + 64;
	z_stream s;
	memset(&s, 0, sizeof s);
	uint8_t *buf = malloc(cap);
	if (buf == NULL || inflateInit(&s) != Z_OK) {
		free(buf);
		free(z);
		return ota_error_set(g->err, OTA_ERR_NOMEM, "git objects", NULL);
	}
	s.next_in = z;
	s.avail_in = (uInt)zn;
	s.next_out = buf;
	s.avail_out = (uInt)cap;
	int zr = inflate(&s, Z_FINISH);
	size_t got = cap - s.avail_out;
	bool whole = zr == Z_STREAM_END && s.avail_in == 0;
	bool full = s.avail_out == 0;
	inflateEnd(&s);
	free(z);
	size_t hdr = 0;
	rc = whole  ? spend(g, got)
	     : full ? ota_error_set(g->err, OTA_ERR_TOO_LARGE, rel, "a loose object over %u bytes",
	                            OTA_MAX_GIT_OBJECT_BYTES)
	            : bad(g, "a loose object is corrupt");
	if (rc == OTA_OK)
		rc = loose_header(g, buf, got, type, &hdr);
	if (rc == OTA_OK) {
		*n = got - hdr;
		memmove(buf, buf + hdr, *n);
		*out = buf;
	} else {
		free(buf);
	}
	return rc;
}

/* an object of the store: in a pack, else loose (git's order); its id checked */
static ota_err find_object(gctx *g, const uint8_t *oid, int *type, uint8_t **out, size_t *n)
{
	*out = NULL;
	bool found = false;
	ota_err rc;
	if (g->gitfd < 0) {
		rc = pack_find(g, oid, &found, type, out, n);
		if (rc == OTA_OK && !found)
			rc = ota_error_set(g->err, OTA_ERR_NOT_FOUND, "git objects", "not in the pack");
	} else {
		rc = packs_find(g, oid, &found, type, out, n);
		if (rc == OTA_OK && !found)
			rc = loose_find(g, oid, &found, type, out, n);
		if (rc == OTA_OK && !found) {
			/* objects/info/alternates would name another store: not followed */
			char hex[65];
			ota_hex_encode(ota_bytes_make(oid, g->oid_len), hex);
			struct stat st;
			bool alt = fstatat(g->gitfd, "objects/info/alternates", &st, AT_SYMLINK_NOFOLLOW) == 0;
			rc = ota_error_set(g->err, alt ? OTA_ERR_UNSUPPORTED : OTA_ERR_NOT_FOUND,
			                   "git objects", "object %s is not in the store%s", hex,
			                   alt ? " (it has alternates, which are not followed)" : "");
		}
	}
	if (rc == OTA_OK)
		rc = check_id(g, *type, *out, *n, oid);
	if (rc != OTA_OK) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

static void gctx_free(gctx *g)
{
	if (g->pdir >= 0)
		close(g->pdir);
	free(g->idx);
}

static ota_err commit_tree(gctx *g, const uint8_t *oid, uint8_t tree[32])
{
	int type = 0;
	uint8_t *b = NULL;
	size_t n = 0;
	ota_err rc = find_object(g, oid, &type, &b, &n);
	if (rc == OTA_OK && type != OBJ_COMMIT)
		rc = bad(g, "the id names an object that is not a commit");
	if (rc == OTA_OK)
		rc = ota_git_commit_parse_tree(b, n, g->oid_len, tree, g->err);
	free(b);
	return rc;
}

ota_err ota_git_commit_tree(int gitfd, const uint8_t *oid, size_t oid_len, uint64_t *budget,
                            uint8_t tree[32], ota_error *err)
{
	if (gitfd < 0 || oid == NULL || (oid_len != 20 && oid_len != 32))
		return ota_error_set(err, OTA_ERR_USAGE, "git objects", "a git directory and an id");
	uint64_t own = OTA_MAX_GIT_INFLATE_BYTES;
	gctx g = {gitfd, -1, -1, oid_len, 0, budget != NULL ? budget : &own, err, false, -1, NULL, 0};
	ota_err rc = commit_tree(&g, oid, tree);
	gctx_free(&g);
	return rc;
}

ota_err ota_git_pack_commit_tree(int idxfd, int packfd, const uint8_t *oid, size_t oid_len,
                                 uint8_t tree[32], ota_error *err)
{
	if (idxfd < 0 || packfd < 0 || oid == NULL || (oid_len != 20 && oid_len != 32))
		return ota_error_set(err, OTA_ERR_USAGE, "git objects", "an index, a pack and an id");
	uint64_t own = OTA_MAX_GIT_INFLATE_BYTES;
	gctx g = {-1, idxfd, packfd, oid_len, 0, &own, err, true, -1, NULL, 0};
	ota_err rc = commit_tree(&g, oid, tree);
	gctx_free(&g);
	return rc;
}
