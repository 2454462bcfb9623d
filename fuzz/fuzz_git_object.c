/*
 * fuzz_git_object: the git object reader that checks a submodule's files
 * against its commit (runner/gitobj.c): a task may have written the
 * submodule's object store, so its packs, indexes and deltas are untrusted
 * bytes.
 *
 * Input: a mode byte, then
 *   mode 0  a delta: a 2-byte little-endian base length, the base, then the
 *           delta (ota_git_delta_apply);
 *   mode 1  a commit object's bytes (ota_git_commit_parse_tree, SHA-1 and
 *           SHA-256 ids);
 *   mode 2  a pack pair: a byte choosing the id length (even: 20, odd:
 *           32), the id, a 4-byte little-endian index length, the index
 *           (.idx), then the pack (.pack), read through memfds
 *           (ota_git_pack_commit_tree: fan-out, offsets, entry headers,
 *           zlib, offset and reference deltas, the id check).
 *
 * Invariants: every refusal names itself and leaves no output; a delta's
 * result is exactly as long as its header says and at most
 * OTA_MAX_GIT_OBJECT_BYTES; a parsed commit's tree is the hex it starts
 * with; a pack answer is only given for an object hashing to the id (the
 * seeds hold real packs, so answers are reached).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "ota/limits.h"
#include "ota/runner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int memfd_with(const uint8_t *b, size_t n)
{
	int fd = memfd_create("ota-fuzz-git", MFD_CLOEXEC);
	FZ_CHECK(fd >= 0);
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(fd, b + done, n - done);
		FZ_CHECK(w > 0);
		done += (size_t)w;
	}
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4u * 1024u * 1024u)
		return 0;
	uint8_t mode = data[0] % 3;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	ota_error e;
	ota_error_clear(&e);
	if (mode == 0) {
		if (n < 2)
			return 0;
		size_t bl = (size_t)p[0] | (size_t)p[1] << 8;
		p += 2;
		n -= 2;
		if (bl > n)
			bl = n;
		uint8_t *out = (uint8_t *)"junk";
		size_t on = 7;
		ota_err rc = ota_git_delta_apply(p, bl, p + bl, n - bl, &out, &on, &e);
		if (rc != OTA_OK) {
			fz_refusal(rc, &e);
			FZ_CHECK(out == NULL && on == 0);
			return 0;
		}
		FZ_CHECK(on <= OTA_MAX_GIT_OBJECT_BYTES);
		FZ_CHECK(out != NULL);
		/* the result's size is the delta's second header number */
		size_t i = 0;
		for (int k = 0; k < 2; k++) {
			uint64_t v = 0;
			unsigned s = 0;
			uint8_t c;
			do {
				c = p[bl + i++];
				v |= (uint64_t)(c & 0x7f) << s;
				s += 7;
			} while (c & 0x80);
			FZ_CHECK(k == 0 ? v == bl : v == on);
		}
		free(out);
		return 0;
	}
	if (mode == 1) {
		for (size_t L = 20; L <= 32; L += 12) {
			uint8_t tree[32];
			ota_error_clear(&e);
			ota_err rc = ota_git_commit_parse_tree(p, n, L, tree, &e);
			if (rc != OTA_OK) {
				fz_refusal(rc, &e);
				continue;
			}
			FZ_CHECK(n > 5 + 2 * L && memcmp(p, "tree ", 5) == 0 && p[5 + 2 * L] == '\n');
			static const char hx[] = "0123456789abcdef";
			for (size_t k = 0; k < L; k++)
				FZ_CHECK(p[5 + 2 * k] == hx[tree[k] >> 4] && p[6 + 2 * k] == hx[tree[k] & 15]);
		}
		return 0;
	}
	if (n < 1)
		return 0;
	size_t L = p[0] % 2 ? 32 : 20;
	p++;
	n--;
	if (n < L + 4)
		return 0;
	const uint8_t *oid = p;
	p += L;
	n -= L;
	size_t il = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
	p += 4;
	n -= 4;
	if (il > n)
		il = n;
	int ifd = memfd_with(p, il), pfd = memfd_with(p + il, n - il);
	uint8_t tree[32];
	ota_err rc = ota_git_pack_commit_tree(ifd, pfd, oid, L, tree, &e);
	if (rc != OTA_OK)
		fz_refusal(rc, &e);
	close(ifd);
	close(pfd);
	return 0;
}
