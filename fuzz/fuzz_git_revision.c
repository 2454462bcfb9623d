/*
 * fuzz_git_revision: the repository revision the runner records
 * (runner/revision.c): the task author's .git/HEAD, loose refs and
 * packed-refs, untrusted bytes. Both the pure parsers (ota_git_ref_parse,
 * ota_git_packed_refs_find) on bytes and the whole resolver
 * (ota_runner_repo_revision, beneath-fd file access, symbolic-ref hops) on a
 * .git built from the input in a private temporary directory (one per
 * process, emptied every iteration).
 *
 * Input: parts separated by the line "=====\n":
 *   part 0      .git/HEAD
 *   part 1      .git/packed-refs (absent when there is no part 1)
 *   part 2...   loose refs, each "NAME\n" then the file's content; NAME is
 *               written only when it is a plain path under refs/ (letters,
 *               digits, . _ - and /, no empty or dot-leading component)
 *
 * Part 0 is also read as a submodule's .git file (ota_git_gitdir_parse,
 * runner/worktree.c) at depths 0 to 3.
 *
 * Invariants: every refusal names itself and leaves the revision ""; a
 * revision is 40 or 64 lowercase hex; a HEAD holding a commit id resolves to
 * it, a malformed HEAD is the parser's refusal; a HEAD naming a ref with no
 * loose file resolves exactly as packed-refs answers for that ref.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "ota/limits.h"
#include "ota/runner.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_repo[64], g_git[96];

/* removes everything beneath the directory fd dfd (no symlink followed) */
static void empty_dir(int dfd)
{
	DIR *d = fdopendir(dup(dfd));
	FZ_CHECK(d != NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dfd, e->d_name, 0) == 0)
			continue;
		int sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		FZ_CHECK(sub >= 0);
		empty_dir(sub);
		close(sub);
		FZ_CHECK(unlinkat(dfd, e->d_name, AT_REMOVEDIR) == 0);
	}
	closedir(d);
}

static void clean(void)
{
	int fd = open(g_git, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		empty_dir(fd);
		close(fd);
	}
}

static void cleanup_all(void)
{
	clean();
	rmdir(g_git);
	rmdir(g_repo);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(g_repo, sizeof g_repo, "/tmp/ota-fuzz-git-XXXXXX");
	FZ_CHECK(mkdtemp(g_repo) != NULL);
	snprintf(g_git, sizeof g_git, "%s/.git", g_repo);
	FZ_CHECK(mkdir(g_git, 0700) == 0);
	atexit(cleanup_all);
	return 0;
}

/* NAME a plain relative path under refs/ this harness may create */
static bool plain_ref_path(const char *s, size_t n)
{
	if (n < 6 || n > 200 || memcmp(s, "refs/", 5) != 0 || s[n - 1] == '/')
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '/') {
			if (i == start || s[start] == '.')
				return false;
			start = i + 1;
			continue;
		}
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* writes .git/NAME (parents made); false when NAME is refused or collides */
static bool write_ref(const char *name, const uint8_t *p, size_t n)
{
	char path[320];
	int pl = snprintf(path, sizeof path, "%s/%s", g_git, name);
	if (pl < 0 || (size_t)pl >= sizeof path) /* names are at most 200 bytes */
		return false;
	for (char *q = path + strlen(g_git) + 1; (q = strchr(q, '/')) != NULL; q++) {
		*q = '\0';
		int r = mkdir(path, 0700);
		*q = '/';
		if (r != 0 && errno != EEXIST)
			return false;
	}
	struct stat st;
	if (lstat(path, &st) == 0 || errno != ENOENT)
		return false; /* written twice, a directory of another ref, a ref on a parent */
	fz_write_file(path, p, n);
	return true;
}

static bool is_oid(const char *s)
{
	size_t n = strlen(s);
	if (n != 40 && n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static const uint8_t SEP[] = "\n=====\n";
#define SEPLEN (sizeof SEP - 1)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 64 * 1024)
		return 0;
	const uint8_t *part[16];
	size_t plen[16], np = 0;
	const uint8_t *s = data, *end = data + size;
	while (np < 16) {
		const uint8_t *m = NULL;
		for (const uint8_t *q = s; q + SEPLEN <= end; q++)
			if (memcmp(q, SEP, SEPLEN) == 0) {
				m = q;
				break;
			}
		part[np] = s;
		if (m == NULL || np == 15) {
			plen[np++] = (size_t)(end - s);
			break;
		}
		plen[np++] = (size_t)(m - s);
		s = m + SEPLEN;
	}

	/* ---- the pure parsers on bytes ---- */
	char oid[OTA_RUNNER_REVISION_MAX + 1], target[OTA_MAX_GIT_REFNAME_BYTES];
	ota_error e;
	ota_error_clear(&e);
	ota_err head_rc = ota_git_ref_parse(part[0], plen[0], ".git/HEAD", oid, target, &e);
	if (head_rc == OTA_OK) {
		FZ_CHECK((oid[0] == '\0') != (target[0] == '\0'));
		FZ_CHECK(oid[0] == '\0' || is_oid(oid));
		FZ_CHECK(target[0] == '\0' || strncmp(target, "refs/", 5) == 0);
	} else {
		fz_refusal(head_rc, &e);
		FZ_CHECK(oid[0] == '\0' && target[0] == '\0');
	}
	/* a gitdir pointer: what it accepts stays inside .git/modules */
	for (unsigned depth = 0; depth < 4; depth++) {
		char rel[OTA_MAX_GIT_REFNAME_BYTES];
		ota_error_clear(&e);
		ota_err rc = ota_git_gitdir_parse(part[0], plen[0], "sub/.git", depth, rel, &e);
		if (rc != OTA_OK) {
			fz_refusal(rc, &e);
			FZ_CHECK(rel[0] == '\0');
			continue;
		}
		size_t rl = strlen(rel);
		FZ_CHECK(strncmp(rel, ".git/modules/", 13) == 0 && rl > 13);
		FZ_CHECK(strstr(rel, "/../") == NULL && strstr(rel, "/./") == NULL &&
		         strstr(rel, "//") == NULL && rel[rl - 1] != '/' &&
		         strcmp(rel + rl - 3, "/..") != 0 && strcmp(rel + rl - 2, "/.") != 0);
		for (size_t i = 0; i < rl; i++)
			FZ_CHECK((unsigned char)rel[i] >= 0x20 && rel[i] != 0x7f);
		/* the input was "gitdir: " + depth x "../" + rel [+ "\n"] */
		size_t n = plen[0] - (plen[0] > 0 && part[0][plen[0] - 1] == '\n');
		FZ_CHECK(n == 8 + 3 * depth + rl && memcmp(part[0] + n - rl, rel, rl) == 0);
	}
	char head_oid[sizeof oid], head_target[sizeof target];
	memcpy(head_oid, oid, sizeof oid);
	memcpy(head_target, target, sizeof target);
	ota_err packed_rc = OTA_ERR_NOT_FOUND;
	char packed_oid[sizeof oid] = "";
	if (np > 1) {
		static const char *const names[] = {"refs/heads/main", "refs/tags/v1"};
		for (size_t i = 0; i < 2; i++) {
			ota_error_clear(&e);
			ota_err rc = ota_git_packed_refs_find(part[1], plen[1], names[i], oid, &e);
			if (rc == OTA_OK)
				FZ_CHECK(is_oid(oid));
			else {
				fz_refusal(rc, &e);
				FZ_CHECK(oid[0] == '\0');
			}
		}
		if (head_target[0] != '\0') {
			ota_error_clear(&e);
			packed_rc = ota_git_packed_refs_find(part[1], plen[1], head_target, packed_oid, &e);
			if (packed_rc == OTA_OK)
				FZ_CHECK(is_oid(packed_oid));
			else
				fz_refusal(packed_rc, &e);
		}
	}
	for (size_t i = 2; i < np; i++) {
		const uint8_t *nl = memchr(part[i], '\n', plen[i]);
		size_t off = nl != NULL ? (size_t)(nl - part[i]) + 1 : plen[i];
		ota_error_clear(&e);
		ota_err rc = ota_git_ref_parse(part[i] + off, plen[i] - off, "ref", oid, target, &e);
		if (rc != OTA_OK)
			fz_refusal(rc, &e);
	}

	/* ---- the resolver on a .git made of the parts ---- */
	clean();
	char path[160];
	snprintf(path, sizeof path, "%s/HEAD", g_git);
	fz_write_file(path, part[0], plen[0]);
	if (np > 1) {
		snprintf(path, sizeof path, "%s/packed-refs", g_git);
		fz_write_file(path, part[1], plen[1]);
	}
	bool head_target_loose = false;
	for (size_t i = 2; i < np; i++) {
		const uint8_t *nl = memchr(part[i], '\n', plen[i]);
		if (nl == NULL)
			continue;
		size_t nlen = (size_t)(nl - part[i]);
		char name[256];
		if (!plain_ref_path((const char *)part[i], nlen))
			continue;
		memcpy(name, part[i], nlen);
		name[nlen] = '\0';
		if (write_ref(name, nl + 1, plen[i] - nlen - 1) && strcmp(name, head_target) == 0)
			head_target_loose = true;
	}
	/* a directory on HEAD's target path (refs/heads/x/ for refs/heads/x/y
	 * written) is not loose either: the resolver reads it and is refused
	 * (not_regular_file), never looks at packed-refs */
	struct stat st;
	char tpath[OTA_MAX_GIT_REFNAME_BYTES + 128];
	bool target_is_dir = false;
	if (head_target[0] != '\0') {
		snprintf(tpath, sizeof tpath, "%s/%s", g_git, head_target);
		/* or a file on one of its parents (ENOTDIR, refused as io_error) */
		target_is_dir = lstat(tpath, &st) == 0 ? S_ISDIR(st.st_mode) : errno == ENOTDIR;
		/* or a component no file can have (ENAMETOOLONG, io_error) */
		for (const char *c = head_target, *sl; *c != '\0'; c = *sl ? sl + 1 : sl) {
			sl = strchrnul(c, '/');
			if (sl - c > NAME_MAX)
				target_is_dir = true;
		}
	}
	char rev[OTA_RUNNER_REVISION_MAX + 1] = "x";
	ota_error_clear(&e);
	ota_err rc = ota_runner_repo_revision(g_repo, rev, &e);
	if (rc == OTA_OK) {
		FZ_CHECK(is_oid(rev));
	} else {
		fz_refusal(rc, &e);
		FZ_CHECK(rev[0] == '\0');
	}
	if (head_rc != OTA_OK) {
		FZ_CHECK(rc == head_rc);
	} else if (head_oid[0] != '\0') {
		FZ_CHECK(rc == OTA_OK && strcmp(rev, head_oid) == 0);
	} else if (!head_target_loose && !target_is_dir) {
		/* not loose: packed-refs answers (not_found without the file) */
		FZ_CHECK(rc == packed_rc);
		if (rc == OTA_OK)
			FZ_CHECK(strcmp(rev, packed_oid) == 0);
	}
	return 0;
}
