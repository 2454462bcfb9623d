/*
 * provider-oci: fingerprints of protected paths (oci_fingerprint). The
 * walk sorts each directory with qsort now (an insertion sort made 120,000
 * files take a minute and 1,000,000 over an hour); the digest must not
 * change: it is compared with the reference below, the previous code
 * verbatim (path-based, insertion sort), on trees whose names arrive in
 * scrambled order. It also stops at the cancel flag, and it resolves the
 * protected path beneath the repository's descriptor: a parent a task
 * replaced by a symlink reads as changed (the reference said unchanged).
 * No timing assertion: bench/bench_fingerprint.c measures the cost.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "test_util.h"
#include "ota/limits.h"
#include "provider-oci/oci_internal.h"

/* ---- the reference: provider-oci/inspect.c before the change ---- */

static void ref_add(EVP_MD_CTX *md, const char *rel, const struct stat *st)
{
	char line[512];
	int n = snprintf(line, sizeof line, "%s\n%o %lu %lu %lld %lld.%ld %lld.%ld %u %u\n", rel,
	                 (unsigned)st->st_mode, (unsigned long)st->st_ino,
	                 (unsigned long)st->st_nlink, (long long)st->st_size,
	                 (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
	                 (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, (unsigned)st->st_uid,
	                 (unsigned)st->st_gid);
	if (n > 0)
		EVP_DigestUpdate(md, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void ref_content(EVP_MD_CTX *md, int fd)
{
	uint8_t b[16384];
	size_t total = 0;
	ssize_t r;
	while ((r = read(fd, b, sizeof b)) > 0 && total < OTA_OCI_MAX_HASH_BYTES) {
		EVP_DigestUpdate(md, b, (size_t)r);
		total += (size_t)r;
	}
}

static void ref_tree(EVP_MD_CTX *md, int dfd, const char *rel, unsigned depth, size_t *budget)
{
	DIR *d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return;
	}
	/* Sorted order: collect names first. */
	char **names = NULL;
	size_t nn = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (nn == cap) {
			cap = cap ? cap * 2 : 16;
			char **nv = realloc(names, cap * sizeof *nv);
			if (nv == NULL)
				break;
			names = nv;
		}
		names[nn] = strdup(de->d_name);
		if (names[nn] != NULL)
			nn++;
	}
	for (size_t i = 1; i < nn; i++)
		for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char *t = names[j];
			names[j] = names[j - 1];
			names[j - 1] = t;
		}
	for (size_t i = 0; i < nn; i++) {
		if (*budget == 0)
			break;
		(*budget)--;
		char sub[OTA_MAX_PATH_BYTES];
		snprintf(sub, sizeof sub, "%s/%s", rel, names[i]);
		struct stat st;
		if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		ref_add(md, sub, &st);
		if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd(d), names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd >= 0) {
				ref_content(md, fd);
				close(fd);
			}
		} else if (S_ISDIR(st.st_mode) && depth < 64) {
			int fd = openat(dirfd(d), names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0)
				ref_tree(md, fd, sub, depth + 1, budget);
		}
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	closedir(d);
}

static ota_err ref_fingerprint(const char *host_path, char out[65], ota_error *err)
{
	out[0] = '\0';
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(md);
		return OTA_ERR_CRYPTO;
	}
	struct stat st;
	if (lstat(host_path, &st) != 0) {
		EVP_DigestUpdate(md, "absent", 6);
	} else {
		ref_add(md, ".", &st);
		if (S_ISREG(st.st_mode)) {
			int fd = open(host_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd >= 0) {
				ref_content(md, fd);
				close(fd);
			}
		} else if (S_ISDIR(st.st_mode)) {
			int fd = open(host_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			size_t budget = OTA_OCI_MAX_SCAN_ENTRIES;
			if (fd >= 0)
				ref_tree(md, fd, ".", 0, &budget);
		}
	}
	uint8_t h[32];
	unsigned hl = 0;
	if (EVP_DigestFinal_ex(md, h, &hl) != 1 || hl != 32) {
		EVP_MD_CTX_free(md);
		return ota_error_set(err, OTA_ERR_CRYPTO, host_path, "digest failed");
	}
	EVP_MD_CTX_free(md);
	ota_hex_encode(ota_bytes_make(h, 32), out);
	return OTA_OK;
}

/* ---- the tests ---- */

typedef test_repo_world world;

static int setup(void **state)
{
	world *w = calloc(1, sizeof *w);
	assert_non_null(w);
	test_repo_world_make(w, O_PATH);
	*state = w;
	return 0;
}

static int teardown(void **state)
{
	test_repo_world_free(*state);
	free(*state);
	return 0;
}

static void touch(const char *dir, const char *name, const char *content)
{
	char p[2048];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	size_t n = strlen(content);
	assert_int_equal(write(fd, content, n), (ssize_t)n);
	close(fd);
}

static void mkdirf(const char *dir, const char *name)
{
	char p[2048];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	assert_int_equal(mkdir(p, 0755), 0);
}

/* Both fingerprints of repo/rel; asserts they agree and returns it. */
static void both(const world *w, const char *rel, char out[65])
{
	char host[1024], ref[65];
	snprintf(host, sizeof host, "%s/%s", w->repo, rel);
	assert_ota(ref_fingerprint(host, ref, NULL), OTA_OK);
	assert_ota(oci_fingerprint(w->repo_fd, rel, NULL, out, NULL), OTA_OK);
	assert_string_equal(out, ref);
}

/* Names created in a scrambled order (so readdir does not hand them over
 * sorted): prefixes of each other, case, digits, punctuation, bytes above
 * 0x7f (strcmp compares them as unsigned char), nested directories, a
 * symlink, a FIFO and an empty directory; then a few thousand files. */
static void test_same_digest_as_before(void **state)
{
	world *w = *state;
	char d[1024];
	snprintf(d, sizeof d, "%s/prot", w->repo);
	assert_int_equal(mkdir(d, 0755), 0);
	static const char *const names[] = {"b", "a", "A", "ab", "a.b", "a-b", "a_b", "Z", "z",
	                                    "10", "9", "09", "\xc3\xa9t\xc3\xa9", "\xff", "~",
	                                    ".hidden", "-dash", " space", "a b", "aa"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		touch(d, names[i], names[i]);
	mkdirf(d, "sub");
	mkdirf(d, "sub/deeper");
	mkdirf(d, "empty");
	char sub[1200];
	snprintf(sub, sizeof sub, "%s/sub", d);
	touch(sub, "y", "1");
	touch(sub, "x", "22");
	snprintf(sub, sizeof sub, "%s/sub/deeper", d);
	touch(sub, "config", "[core]\n");
	char p[1200];
	snprintf(p, sizeof p, "%s/link", d);
	assert_int_equal(symlink("a", p), 0);
	snprintf(p, sizeof p, "%s/fifo", d);
	assert_int_equal(mkfifo(p, 0644), 0);
	char fp1[65];
	both(w, "prot", fp1);
	/* 5,000 files in one directory, created in a scrambled order */
	mkdirf(d, "many");
	snprintf(sub, sizeof sub, "%s/many", d);
	const unsigned n = 5000;
	for (unsigned i = 0; i < n; i++) {
		char nm[32];
		snprintf(nm, sizeof nm, "f%07u", (i * 7919u) % n);
		touch(sub, nm, "");
	}
	char fp2[65];
	both(w, "prot", fp2);
	assert_string_not_equal(fp1, fp2);
	/* a protected file, a nested protected path, a missing one */
	both(w, "prot/a", fp1);
	both(w, "prot/sub/deeper/config", fp1);
	both(w, "prot/sub/deeper", fp1);
	both(w, "missing", fp1);
	both(w, "prot/missing", fp1);
	/* stable while nothing changes */
	char again[65];
	assert_ota(oci_fingerprint(w->repo_fd, "prot", NULL, again, NULL), OTA_OK);
	assert_string_equal(again, fp2);
}

/* The audit's t11: protected out/w/.git under a writable out; the task
 * renames out/w away and links out/w to it. The host path still leads to
 * the same content (the reference fingerprint is unchanged), the path
 * beneath the repository does not: changed. */
static void test_parent_swapped_for_symlink(void **state)
{
	world *w = *state;
	mkdirf(w->repo, "out");
	mkdirf(w->repo, "out/w");
	mkdirf(w->repo, "out/w/.git");
	char g[1024];
	snprintf(g, sizeof g, "%s/out/w/.git", w->repo);
	touch(g, "config", "orig\n");
	char before[65];
	both(w, "out/w/.git", before);
	char from[1024], to[1024];
	snprintf(from, sizeof from, "%s/out/w", w->repo);
	snprintf(to, sizeof to, "%s/out/w2", w->repo);
	assert_int_equal(rename(from, to), 0);
	assert_int_equal(symlink("w2", from), 0);
	char host[1024], ref[65], after[65];
	snprintf(host, sizeof host, "%s/out/w/.git", w->repo);
	assert_ota(ref_fingerprint(host, ref, NULL), OTA_OK);
	assert_string_equal(ref, before); /* the old, path-based view: "unchanged" */
	assert_ota(oci_fingerprint(w->repo_fd, "out/w/.git", NULL, after, NULL), OTA_OK);
	assert_string_not_equal(after, before);
	/* a symlink at the protected path itself, and an absolute one */
	assert_int_equal(unlink(from), 0);
	assert_int_equal(symlink(to, from), 0);
	assert_ota(oci_fingerprint(w->repo_fd, "out/w/.git", NULL, after, NULL), OTA_OK);
	assert_string_not_equal(after, before);
	/* a regular file where the parent directory was */
	assert_int_equal(unlink(from), 0);
	touch(w->repo, "out/w", "");
	assert_ota(oci_fingerprint(w->repo_fd, "out/w/.git", NULL, after, NULL), OTA_OK);
	assert_string_not_equal(after, before);
	/* and back: the same directory at the same path, unchanged */
	snprintf(host, sizeof host, "%s/out/w", w->repo);
	assert_int_equal(unlink(host), 0);
	assert_int_equal(rename(to, from), 0);
	assert_ota(oci_fingerprint(w->repo_fd, "out/w/.git", NULL, after, NULL), OTA_OK);
	assert_string_equal(after, before);
}

/* The run's cancel flag stops the walk: oci_interrupted, no digest. */
static void test_cancel(void **state)
{
	world *w = *state;
	mkdirf(w->repo, "big");
	char d[1024];
	snprintf(d, sizeof d, "%s/big", w->repo);
	for (unsigned i = 0; i < 100; i++) {
		char nm[32];
		snprintf(nm, sizeof nm, "f%u", i);
		touch(d, nm, "x");
	}
	touch(w->repo, "file", "content");
	volatile sig_atomic_t cancel = 0;
	char out[65];
	assert_ota(oci_fingerprint(w->repo_fd, "big", &cancel, out, NULL), OTA_OK);
	assert_int_equal(strlen(out), 64);
	cancel = 1;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_fingerprint(w->repo_fd, "big", &cancel, out, &e), OTA_ERR_OCI_INTERRUPTED);
	assert_string_equal(out, "");
	assert_string_equal(e.where, "big");
	assert_ota(oci_fingerprint(w->repo_fd, "file", &cancel, out, NULL), OTA_ERR_OCI_INTERRUPTED);
	/* a missing path has nothing to walk */
	assert_ota(oci_fingerprint(w->repo_fd, "missing", &cancel, out, NULL), OTA_OK);
}

/* A protected tree the walk cannot cover whole is refused (oci_scan_limit),
 * never digested over the part it reached: a change below the depth cap
 * went unseen. 63 levels of directories below the protected one are
 * fingerprinted; one more is refused. */
static void test_too_deep_refused(void **state)
{
	world *w = *state;
	char rel[4096] = "deep";
	mkdirf(w->repo, rel);
	for (int i = 1; i < 64; i++) {
		strcat(rel, "/d");
		mkdirf(w->repo, rel);
	}
	char out[65], before[65];
	ota_error e;
	ota_error_clear(&e);
	assert_ota(oci_fingerprint(w->repo_fd, "deep", NULL, before, &e), OTA_OK);
	strcat(rel, "/d");
	mkdirf(w->repo, rel);
	ota_error_clear(&e);
	assert_ota(oci_fingerprint(w->repo_fd, "deep", NULL, out, &e), OTA_ERR_OCI_SCAN_LIMIT);
	assert_string_equal(out, "");
	assert_string_equal(e.where, "deep");
	assert_non_null(strstr(e.what, "deeper than 64 levels"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_digest_as_before, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parent_swapped_for_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_deep_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
