/*
 * What the runner reads of the repository, without running git, compared
 * with git's own answers on real repositories.
 *
 * runner/revision.c: the commit id REPO/.git's HEAD resolves to, against
 * `git rev-parse HEAD` (a branch, detached, packed refs, SHA-256), and every
 * case that records no revision by its error name: no .git, a .git symlink
 * or file (a linked worktree), an unborn branch, a symlinked ref, malformed
 * HEAD, loose refs and packed-refs, the reftable placeholder, a
 * symbolic-ref loop, too large.
 *
 * runner/worktree.c: the work tree as one git tree id, equal to `git
 * rev-parse HEAD^{tree}` on a clean checkout (files, an executable,
 * symlinks, nested and empty directories, names that sort differently as
 * trees, a file larger than one read, the toolkit's own .ota/archives and
 * .ota/cleanup left out, a committed .ota file kept), and to `git add -A &&
 * git write-tree` once it is not (an edit, a mode change, an untracked
 * file), an embedded repository and a submodule as gitlinks, SHA-256; every
 * work tree it refuses to describe, by its error name; and the submodule
 * pointer's parser on bytes.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "ota/limits.h"
#include "ota/runner.h"

static char *tmp;

/* TEST_GIT, and submodules from local paths */
#define GIT TEST_GIT " -c protocol.file.allow=always -c advice.addEmbeddedRepo=false"

static bool have_git;

static int setup(void **state)
{
	(void)state;
	tmp = test_tmpdir();
	have_git = test_sh_status("command -v git >/dev/null") == 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_rmtree(tmp);
	free(tmp);
	return 0;
}

/* A fresh repository tmp/NAME with one commit (extra: git init options). */
static void repo(char *out, size_t cap, const char *name, const char *extra)
{
	snprintf(out, cap, "%s/%s", tmp, name);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q %s . && echo x > f && " GIT
					" add f && " GIT " commit -qm one",
					out, out, extra),
	                 0);
}

/* git's answer in dir: `git WHAT` (one line) */
static void git_line(const char *dir, const char *what, char *out, size_t cap)
{
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "cd %s && " GIT " %s", dir, what);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, (int)cap, p));
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
}

static void rev_parse(const char *dir, const char *what, char *out, size_t cap)
{
	char w[256];
	snprintf(w, sizeof w, "rev-parse %s", what);
	git_line(dir, w, out, cap);
}

static void expect(const char *dir, ota_err want, const char *want_rev)
{
	char rev[OTA_RUNNER_REVISION_MAX + 1] = "junk";
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_runner_repo_revision(dir, rev, &e);
	if (rc != want)
		fprintf(stderr, "%s: %s (%s: %s), want %s\n", dir, ota_err_name(rc), e.where, e.what,
		        ota_err_name(want));
	assert_int_equal(rc, want);
	if (want_rev != NULL)
		assert_string_equal(rev, want_rev);
	else
		assert_string_equal(rev, "");
}

static void write_file(const char *dir, const char *rel, const char *text)
{
	char p[8192];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_branch_detached_packed(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], head[128], first[128];
	repo(d, sizeof d, "r1", "");
	rev_parse(d, "HEAD", first, sizeof first);
	assert_int_equal(strlen(first), 40);
	expect(d, OTA_OK, first);
	/* a second commit on the branch (loose ref) */
	assert_int_equal(test_sh_status("cd %s && echo y > f && " GIT " commit -qam two", d), 0);
	rev_parse(d, "HEAD", head, sizeof head);
	assert_string_not_equal(head, first);
	expect(d, OTA_OK, head);
	/* packed: the loose ref is gone, packed-refs has it (with a tag and its peel) */
	assert_int_equal(test_sh_status("cd %s && " GIT " tag -a -m t v1 HEAD~1 && " GIT " pack-refs --all && "
					"test ! -e .git/refs/heads/main && grep -q '^\\^' .git/packed-refs",
					d),
	                 0);
	expect(d, OTA_OK, head);
	/* a loose ref wins over the packed one, as in git */
	assert_int_equal(test_sh_status("cd %s && " GIT " update-ref refs/heads/main %s", d, first), 0);
	expect(d, OTA_OK, first);
	/* detached */
	assert_int_equal(test_sh_status("cd %s && " GIT " checkout -q --detach %s", d, head), 0);
	expect(d, OTA_OK, head);
	/* a symbolic ref to a symbolic ref */
	assert_int_equal(test_sh_status("cd %s && " GIT " symbolic-ref refs/heads/alias refs/heads/main && "
					GIT " symbolic-ref HEAD refs/heads/alias", d),
	                 0);
	rev_parse(d, "HEAD", head, sizeof head);
	assert_string_equal(head, first);
	expect(d, OTA_OK, first);
}

static void test_sha256(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], head[128];
	snprintf(d, sizeof d, "%s/r256", tmp);
	if (test_sh_status("mkdir -p %s && cd %s && " GIT " init -q --object-format=sha256 . 2>/dev/null", d, d) !=
	    0)
		skip(); /* a git without SHA-256 repositories */
	assert_int_equal(test_sh_status("cd %s && echo x > f && " GIT " add f && " GIT " commit -qm one", d), 0);
	rev_parse(d, "HEAD", head, sizeof head);
	assert_int_equal(strlen(head), 64);
	expect(d, OTA_OK, head);
}

static void test_none(void **state)
{
	(void)state;
	char d[4096];
	/* no .git at all */
	test_mkdir_in(tmp, "plain", d, sizeof d);
	expect(d, OTA_ERR_NOT_FOUND, NULL);
	/* a missing repository */
	expect("/nonexistent/ota-repo", OTA_ERR_NOT_FOUND, NULL);
	if (!have_git)
		return;
	/* unborn branch: HEAD names refs/heads/main, which does not exist */
	snprintf(d, sizeof d, "%s/unborn", tmp);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q .", d, d), 0);
	expect(d, OTA_ERR_NOT_FOUND, NULL);
	/* .git a symlink to a real repository elsewhere: not followed */
	char r[4096], l[4096];
	repo(r, sizeof r, "target", "");
	test_mkdir_in(tmp, "linked", l, sizeof l);
	assert_int_equal(test_sh_status("ln -s %s/.git %s/.git", r, l), 0);
	expect(l, OTA_ERR_PATH_SYMLINK, NULL);
	/* a linked worktree: .git is a file ("gitdir: ...") */
	assert_int_equal(test_sh_status("cd %s && " GIT " worktree add -q %s/wt 2>/dev/null", r, tmp), 0);
	snprintf(l, sizeof l, "%s/wt", tmp);
	expect(l, OTA_ERR_NOT_DIRECTORY, NULL);
}

static void test_hostile(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], head[128];
	repo(d, sizeof d, "h", "");
	rev_parse(d, "HEAD", head, sizeof head);
	/* the branch ref a symlink to a file holding a commit id elsewhere */
	char other[4096];
	snprintf(other, sizeof other, "%s/other-ref", tmp);
	write_file(tmp, "other-ref", "0123456789012345678901234567890123456789\n");
	assert_int_equal(test_sh_status("rm %s/.git/refs/heads/main && ln -s %s %s/.git/refs/heads/main", d,
					other, d),
	                 0);
	expect(d, OTA_ERR_PATH_SYMLINK, NULL);
	/* a refs/heads a symlink */
	assert_int_equal(test_sh_status("rm -r %s/.git/refs/heads && ln -s %s %s/.git/refs/heads", d, tmp, d), 0);
	expect(d, OTA_ERR_PATH_SYMLINK, NULL);
	assert_int_equal(test_sh_status("rm %s/.git/refs/heads && mkdir %s/.git/refs/heads", d, d), 0);
	write_file(d, ".git/refs/heads/main", "");
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	/* no trailing newline is fine, uppercase, short, long, two lines are not */
	write_file(d, ".git/refs/heads/main", head);
	expect(d, OTA_OK, head);
	static const char *const bad[] = {
		"0123456789ABCDEF0123456789abcdef01234567\n", "0123456789abcdef\n",
		"0123456789abcdef0123456789abcdef012345678\n",
		"0123456789abcdef0123456789abcdef01234567\n\n",
		"0123456789abcdef0123456789abcdef01234567 x\n", "ref: refs/heads/../../x\n",
		"ref: HEAD\n", "ref: refs/heads/.invalid\n", "ref: refs/heads/a b\n",
		"ref: refs/heads/x.lock\n", "ref: refs/heads/x@{1}\n", "ref: refs//x\n"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		write_file(d, ".git/refs/heads/main", bad[i]);
		expect(d, OTA_ERR_UNSUPPORTED, NULL);
	}
	write_file(d, ".git/refs/heads/main", head);
	/* a NUL inside HEAD */
	{
		char p[8192];
		snprintf(p, sizeof p, "%s/.git/HEAD", d);
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fwrite("ref: refs/heads/main\0x\n", 1, 23, f);
		fclose(f);
		expect(d, OTA_ERR_UNSUPPORTED, NULL);
	}
	/* the reftable backend's placeholder HEAD */
	write_file(d, ".git/HEAD", "ref: refs/heads/.invalid\n");
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	/* a loop of symbolic refs */
	write_file(d, ".git/HEAD", "ref: refs/heads/a\n");
	write_file(d, ".git/refs/heads/a", "ref: refs/heads/b\n");
	write_file(d, ".git/refs/heads/b", "ref: refs/heads/a\n");
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	/* HEAD too large */
	assert_int_equal(test_sh_status("head -c 5000 /dev/zero | tr '\\0' a > %s/.git/HEAD", d), 0);
	expect(d, OTA_ERR_TOO_LARGE, NULL);
	/* HEAD a FIFO is never read */
	assert_int_equal(test_sh_status("rm %s/.git/HEAD && mkfifo %s/.git/HEAD", d, d), 0);
	expect(d, OTA_ERR_NOT_REGULAR, NULL);
	assert_int_equal(test_sh_status("rm %s/.git/HEAD", d), 0);
	write_file(d, ".git/HEAD", "ref: refs/heads/p\n");
	/* packed-refs: found, unterminated, malformed, listed twice */
	char pk[512];
	snprintf(pk, sizeof pk, "# pack-refs with: peeled fully-peeled sorted \n%s refs/heads/p\n",
	         head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_OK, head);
	snprintf(pk, sizeof pk, "%s refs/heads/p", head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	snprintf(pk, sizeof pk, "%s refs/heads/p\n%s refs/heads/p\n", head, head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	snprintf(pk, sizeof pk, "%s refs/heads/q\n# late header\n%s refs/heads/p\n", head, head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	snprintf(pk, sizeof pk, "^%s\n%s refs/heads/p\n", head, head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	snprintf(pk, sizeof pk, "%s refs/heads/q\n", head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_NOT_FOUND, NULL);
	/* a peel line without its object id (was taken as a peel line) */
	snprintf(pk, sizeof pk, "%s refs/tags/t\n^\n%s refs/heads/p\n", head, head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	/* object ids of two lengths: not one repository's (each was taken) */
	static const char s256[] =
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	snprintf(pk, sizeof pk, "%s refs/tags/t\n%s refs/heads/p\n", s256, head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	snprintf(pk, sizeof pk, "%s refs/tags/t\n^%s\n%s refs/heads/p\n", head, s256, head);
	write_file(d, ".git/packed-refs", pk);
	expect(d, OTA_ERR_UNSUPPORTED, NULL);
	/* packed-refs a symlink */
	assert_int_equal(test_sh_status("rm %s/.git/packed-refs && ln -s %s/other-ref %s/.git/packed-refs", d,
					tmp, d),
	                 0);
	expect(d, OTA_ERR_PATH_SYMLINK, NULL);
}

/* The two parsers on bytes (ota_git_ref_parse, ota_git_packed_refs_find):
 * no repository, no git needed. */
static void test_parsers_on_bytes(void **state)
{
	(void)state;
	static const char A[] = "0123456789abcdef0123456789abcdef01234567";
	char oid[OTA_RUNNER_REVISION_MAX + 1], target[OTA_MAX_GIT_REFNAME_BYTES];
	ota_error e;
	char b[8192];
	/* a ref file: an id, a ref, nothing else */
	snprintf(b, sizeof b, "%s\n", A);
	ota_error_clear(&e);
	assert_int_equal(ota_git_ref_parse((const uint8_t *)b, strlen(b), "HEAD", oid, target, &e),
	                 OTA_OK);
	assert_string_equal(oid, A);
	assert_string_equal(target, "");
	ota_error_clear(&e);
	assert_int_equal(ota_git_ref_parse((const uint8_t *)"ref: refs/heads/m", 17, "HEAD", oid,
	                                   target, &e),
	                 OTA_OK);
	assert_string_equal(oid, "");
	assert_string_equal(target, "refs/heads/m");
	ota_error_clear(&e);
	assert_int_equal(ota_git_ref_parse((const uint8_t *)"ref: refs/heads/m\n\n", 19, "HEAD",
	                                   oid, target, &e),
	                 OTA_ERR_UNSUPPORTED);
	assert_string_equal(e.where, "HEAD");
	assert_string_equal(oid, "");
	assert_string_equal(target, "");
	/* the cap holds on bytes too: one byte over is too_large */
	memset(b, 'a', sizeof b);
	ota_error_clear(&e);
	assert_int_equal(ota_git_ref_parse((const uint8_t *)b, OTA_MAX_GIT_REF_FILE_BYTES + 1, "HEAD",
	                                   oid, target, &e),
	                 OTA_ERR_TOO_LARGE);
	ota_error_clear(&e);
	assert_int_equal(ota_git_ref_parse((const uint8_t *)b, OTA_MAX_GIT_REF_FILE_BYTES, "HEAD",
	                                   oid, target, &e),
	                 OTA_ERR_UNSUPPORTED);
	ota_error_clear(&e);
	assert_int_equal(ota_git_packed_refs_find((const uint8_t *)b,
	                                          (size_t)OTA_MAX_GIT_PACKED_REFS_BYTES + 1,
	                                          "refs/heads/m", oid, &e),
	                 OTA_ERR_TOO_LARGE);
	/* packed-refs: found with a peel, not listed, malformed after the entry */
	snprintf(b, sizeof b, "# pack-refs with: peeled\n%s refs/heads/m\n^%s\n", A, A);
	ota_error_clear(&e);
	assert_int_equal(ota_git_packed_refs_find((const uint8_t *)b, strlen(b), "refs/heads/m",
	                                          oid, &e),
	                 OTA_OK);
	assert_string_equal(oid, A);
	ota_error_clear(&e);
	assert_int_equal(ota_git_packed_refs_find((const uint8_t *)b, strlen(b), "refs/heads/x",
	                                          oid, &e),
	                 OTA_ERR_NOT_FOUND);
	assert_string_equal(oid, "");
	snprintf(b, sizeof b, "%s refs/heads/m\n^\n", A);
	ota_error_clear(&e);
	assert_int_equal(ota_git_packed_refs_find((const uint8_t *)b, strlen(b), "refs/heads/m",
	                                          oid, &e),
	                 OTA_ERR_UNSUPPORTED);
	assert_string_equal(oid, "");
	snprintf(b, sizeof b, "%s refs/heads/m\n^%s\n^%s\n", A, A, A);
	ota_error_clear(&e);
	assert_int_equal(ota_git_packed_refs_find((const uint8_t *)b, strlen(b), "refs/heads/m",
	                                          oid, &e),
	                 OTA_ERR_UNSUPPORTED);
	ota_error_clear(&e);
	assert_int_equal(ota_git_packed_refs_find((const uint8_t *)"", 0, "refs/heads/m", oid, &e),
	                 OTA_ERR_NOT_FOUND);
}

/* ---- the work tree (runner/worktree.c) ---- */

/* ours, which must succeed */
static void ours(const char *dir, size_t hex_len, char out[OTA_RUNNER_REVISION_MAX + 1])
{
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_runner_worktree_id(dir, hex_len, NULL, out, &e);
	if (rc != OTA_OK)
		fail_msg("worktree %s: %s: %s: %s", dir, ota_err_name(rc), e.where, e.what);
	assert_int_equal(strlen(out), hex_len);
}

/* ours == `git add -A && git write-tree` (the index then holds the work tree) */
static void expect_write_tree(const char *dir, size_t hex_len, char out[OTA_RUNNER_REVISION_MAX + 1])
{
	char want[128];
	git_line(dir, "add -A && " GIT " write-tree", want, sizeof want);
	ours(dir, hex_len, out);
	assert_string_equal(out, want);
}

static void refused(const char *dir, ota_err want, const char *where_has)
{
	char out[OTA_RUNNER_REVISION_MAX + 1] = "junk";
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_runner_worktree_id(dir, 40, NULL, out, &e);
	if (rc != want)
		fail_msg("%s: %s, want %s (%s: %s)", dir, ota_err_name(rc), ota_err_name(want), e.where,
		         e.what);
	assert_string_equal(out, "");
	if (where_has != NULL && strstr(e.where, where_has) == NULL)
		fail_msg("where \"%s\" does not name %s", e.where, where_has);
}

/* A repository with every kind of entry git stores, committed. */
static void populate(const char *d)
{
	assert_int_equal(
		test_sh_status("cd %s && mkdir -p a a.b/c deep/x/y/z empty/inner .ota bin && "
			       "echo 1 > a/f && echo 2 > a.b/c/g && echo 3 > a-b && echo 4 > a0 && "
			       "echo 5 > deep/x/y/z/h && printf 'no newline' > 'sp ace' && "
			       "printf '\\000\\001\\377' > binary && : > emptyfile && "
			       "head -c 700000 /dev/urandom > big && "
			       "printf '#!/bin/sh\\n' > bin/tool && chmod 755 bin/tool && chmod 744 a0 && "
			       "ln -s a/f link && ln -s /nonexistent/x dangling && ln -s a linkdir && "
			       "echo 'org: x' > .ota/org-policy.yaml",
			       d),
		0);
}

static void test_worktree_clean(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], tree[128], id[OTA_RUNNER_REVISION_MAX + 1], again[OTA_RUNNER_REVISION_MAX + 1];
	snprintf(d, sizeof d, "%s/clean", tmp);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q .", d, d), 0);
	populate(d);
	assert_int_equal(test_sh_status("cd %s && " GIT " add -A && " GIT " commit -qm one", d), 0);
	git_line(d, "rev-parse HEAD^{tree}", tree, sizeof tree);
	ours(d, 40, id);
	assert_string_equal(id, tree);
	/* what the toolkit writes into the repository is not the work tree */
	assert_int_equal(test_sh_status("cd %s && mkdir -p .ota/archives .ota/cleanup && echo '{}' > "
					".ota/archives/txn.json && echo '{}' > .ota/cleanup/c.json",
					d),
	                 0);
	ours(d, 40, again);
	assert_string_equal(again, tree);
	/* an empty directory neither */
	assert_int_equal(test_sh_status("mkdir -p %s/more/empty", d), 0);
	ours(d, 40, again);
	assert_string_equal(again, tree);
	/* an empty repository is git's empty tree */
	char e[4096];
	snprintf(e, sizeof e, "%s/emptyrepo", tmp);
	assert_int_equal(test_sh_status("mkdir -p %s/.git/objects %s/x && cd %s && " GIT " init -q .", e, e, e), 0);
	ours(e, 40, again);
	assert_string_equal(again, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
}

static void test_worktree_dirty(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], tree[OTA_RUNNER_REVISION_MAX + 1], id[OTA_RUNNER_REVISION_MAX + 1],
	     prev[OTA_RUNNER_REVISION_MAX + 1];
	snprintf(d, sizeof d, "%s/dirty", tmp);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q .", d, d), 0);
	populate(d);
	assert_int_equal(test_sh_status("cd %s && " GIT " add -A && " GIT " commit -qm one", d), 0);
	git_line(d, "rev-parse HEAD^{tree}", tree, sizeof tree);
	const char *edits[] = {
		"echo edited >> a/f",             /* content */
		"chmod +x a-b",                   /* the executable bit */
		"echo new > untracked",           /* an untracked file */
		"echo built > .ota/output",       /* in .ota, but not the toolkit's */
		/* beside the toolkit's files, but not named or shaped as they are */
		"mkdir -p .ota/archives && echo x > .ota/archives/run.sh",
		"mkdir -p .ota/archives && echo x > .ota/archives/.hidden.json",
		"mkdir -p .ota/cleanup/d && echo '{}' > .ota/cleanup/d/c.json",
		"mkdir -p .ota/cleanup && ln -s ../../a-b .ota/cleanup/l.json",
		"rm link && ln -s a.b link",      /* a symlink's target */
		"rm a0",                          /* a deletion */
		"mkdir -p z/w && echo q > z/w/q", /* a new directory */
	};
	snprintf(prev, sizeof prev, "%s", tree);
	for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
		assert_int_equal(test_sh_status("cd %s && %s", d, edits[i]), 0);
		expect_write_tree(d, 40, id);
		if (strcmp(id, prev) == 0)
			fail_msg("\"%s\" left the id unchanged", edits[i]);
		snprintf(prev, sizeof prev, "%s", id);
	}
	/* a mode bit git does not store changes nothing */
	assert_int_equal(test_sh_status("cd %s && chmod 600 a.b/c/g", d), 0);
	ours(d, 40, id);
	assert_string_equal(id, prev);
}

/*
 * A gitlink stands for its commit only while the directory holds that
 * commit's files: a changed, added or removed file in a submodule or an
 * embedded repository makes the work tree unrecorded (git would record the
 * commit alone), whether the objects are loose or packed (with deltas).
 */
static void test_worktree_submodule_files(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], o[4096], tree[128], id[OTA_RUNNER_REVISION_MAX + 1];
	snprintf(o, sizeof o, "%s/sub-origin", tmp);
	snprintf(d, sizeof d, "%s/sub-outer", tmp);
	assert_int_equal(test_sh_status("mkdir -p %s/dir && cd %s && " GIT " init -q . && echo o > o && "
					"echo i > dir/i && " GIT " add o dir && " GIT " commit -qm o",
					o, o),
	                 0);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q . && echo x > x && " GIT
					" add x && " GIT " commit -qm one && " GIT
					" submodule -q add %s lib/dep && " GIT " commit -qm sub",
					d, d, o),
	                 0);
	git_line(d, "rev-parse HEAD^{tree}", tree, sizeof tree);
	ours(d, 40, id);
	assert_string_equal(id, tree);
	const char *const changes[][2] = {
		{"echo changed > lib/dep/o", "cd lib/dep && " GIT " checkout -q -- o"},
		{"echo new > lib/dep/new", "rm lib/dep/new"},
		{"rm lib/dep/dir/i", "cd lib/dep && " GIT " checkout -q -- dir/i"},
		{"chmod +x lib/dep/o", "chmod -x lib/dep/o"},
		{"ln -s o lib/dep/l", "rm lib/dep/l"},
	};
	for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
		assert_int_equal(test_sh_status("cd %s && %s", d, changes[i][0]), 0);
		refused(d, OTA_ERR_UNSUPPORTED, "lib/dep");
		assert_int_equal(test_sh_status("cd %s && %s", d, changes[i][1]), 0);
		ours(d, 40, id);
		assert_string_equal(id, tree);
	}
	/* packed, with offset deltas and then with reference deltas, loose
	 * objects gone: the same answers */
	const char *const repacks[] = {
		"repack -q -a -d -f --depth=50 --window=50 && " GIT " prune-packed",
		"-c repack.useDeltaBaseOffset=false repack -q -a -d -f && " GIT " prune-packed",
	};
	for (size_t i = 0; i < sizeof repacks / sizeof repacks[0]; i++) {
		assert_int_equal(test_sh_status("cd %s/lib/dep && " GIT " %s && "
						"test -z \"$(find $(" GIT " rev-parse --git-dir)/objects -path '*/objects/?" "?/*')\"",
						d, repacks[i]),
		                 0);
		ours(d, 40, id);
		assert_string_equal(id, tree);
		assert_int_equal(test_sh_status("cd %s && echo changed > lib/dep/o", d), 0);
		refused(d, OTA_ERR_UNSUPPORTED, "lib/dep");
		assert_int_equal(test_sh_status("cd %s/lib/dep && " GIT " checkout -q -- o", d), 0);
	}
	/* an embedded repository (a .git directory) likewise */
	assert_int_equal(test_sh_status("cd %s && mkdir emb && cd emb && " GIT " init -q . && echo e > e && " GIT
					" add e && " GIT " commit -qm e",
					d),
	                 0);
	expect_write_tree(d, 40, id);
	assert_int_equal(test_sh_status("cd %s && echo f > emb/e", d), 0);
	refused(d, OTA_ERR_UNSUPPORTED, "emb");
}

static void test_worktree_gitlinks(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], o[4096], tree[128], id[OTA_RUNNER_REVISION_MAX + 1];
	snprintf(o, sizeof o, "%s/other", tmp);
	snprintf(d, sizeof d, "%s/outer", tmp);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q . && echo o > o && " GIT
					" add o && " GIT " commit -qm o",
					o, o),
	                 0);
	/* a submodule (its .git a "gitdir: ../../.git/modules/lib/dep" file) */
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q . && echo x > x && " GIT
					" add x && " GIT " commit -qm one && " GIT
					" submodule -q add %s lib/dep && " GIT " commit -qm sub && "
					"grep -q '^gitdir: ../../.git/modules/lib/dep$' lib/dep/.git",
					d, d, o),
	                 0);
	git_line(d, "rev-parse HEAD^{tree}", tree, sizeof tree);
	ours(d, 40, id);
	assert_string_equal(id, tree);
	/* an embedded repository (a .git directory), added as a gitlink */
	assert_int_equal(test_sh_status("cd %s && mkdir emb && cd emb && " GIT " init -q . && echo e > e && " GIT
					" add e && " GIT " commit -qm e",
					d),
	                 0);
	expect_write_tree(d, 40, id);
	/* a new commit in it: the gitlink follows its HEAD */
	assert_int_equal(test_sh_status("cd %s/emb && echo f > e && " GIT " commit -qam f", d), 0);
	char before[OTA_RUNNER_REVISION_MAX + 1];
	snprintf(before, sizeof before, "%s", id);
	expect_write_tree(d, 40, id);
	assert_string_not_equal(id, before);
	/* a submodule pointer that leads anywhere else is refused */
	assert_int_equal(test_sh_status("cd %s && mkdir -p p1 && echo 'gitdir: ../../other/.git' > p1/.git", d), 0);
	refused(d, OTA_ERR_UNSUPPORTED, "p1/.git");
	assert_int_equal(test_sh_status("cd %s && echo 'gitdir: %s/.git' > p1/.git", d, o), 0);
	refused(d, OTA_ERR_UNSUPPORTED, "p1/.git");
	assert_int_equal(test_sh_status("cd %s && echo 'gitdir: ../.git/modules/nosuch' > p1/.git", d), 0);
	refused(d, OTA_ERR_NOT_FOUND, NULL);
	/* a .git symlink is not followed */
	assert_int_equal(test_sh_status("cd %s && rm p1/.git && ln -s ../.git p1/.git", d), 0);
	refused(d, OTA_ERR_UNSUPPORTED, "p1/.git");
}

static void test_worktree_sha256(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], tree[128], id[OTA_RUNNER_REVISION_MAX + 1];
	snprintf(d, sizeof d, "%s/r256", tmp);
	if (test_sh_status("mkdir -p %s && cd %s && " GIT " init -q --object-format=sha256 . 2>/dev/null", d, d) !=
	    0)
		skip(); /* a git without SHA-256 repositories */
	populate(d);
	assert_int_equal(test_sh_status("cd %s && " GIT " add -A && " GIT " commit -qm one", d), 0);
	git_line(d, "rev-parse HEAD^{tree}", tree, sizeof tree);
	assert_int_equal(strlen(tree), 64);
	ours(d, 64, id);
	assert_string_equal(id, tree);
	assert_int_equal(test_sh_status("cd %s && echo more >> big", d), 0);
	expect_write_tree(d, 64, id);
	assert_string_not_equal(id, tree);
}

static void test_worktree_refused(void **state)
{
	(void)state;
	char d[4096], id[OTA_RUNNER_REVISION_MAX + 1];
	test_mkdir_in(tmp, "odd", d, sizeof d);
	assert_int_equal(test_sh_status("cd %s && mkdir -p s && echo x > s/x && mkfifo s/fifo", d), 0);
	refused(d, OTA_ERR_UNSUPPORTED, "s/fifo");
	assert_int_equal(test_sh_status("rm %s/s/fifo", d), 0);
	/* without .git it still describes the files */
	ota_error e;
	ota_error_clear(&e);
	assert_int_equal(ota_runner_worktree_id(d, 40, NULL, id, &e), OTA_OK);
	/* the caller's signal flag stops the walk; unset, it changes nothing */
	volatile sig_atomic_t stop = 0;
	char again[OTA_RUNNER_REVISION_MAX + 1];
	assert_int_equal(ota_runner_worktree_id(d, 40, &stop, again, &e), OTA_OK);
	assert_string_equal(again, id);
	stop = 1;
	ota_error_clear(&e);
	assert_int_equal(ota_runner_worktree_id(d, 40, &stop, again, &e), OTA_ERR_OCI_INTERRUPTED);
	assert_string_equal(again, "");
	assert_string_equal(e.where, ".");
	assert_int_equal(ota_runner_worktree_id(d, 41, NULL, id, &e), OTA_ERR_USAGE);
	assert_string_equal(id, "");
	assert_int_equal(ota_runner_worktree_id(NULL, 40, NULL, id, &e), OTA_ERR_USAGE);
	char missing[4200];
	snprintf(missing, sizeof missing, "%s/nosuch", tmp);
	assert_int_equal(ota_runner_worktree_id(missing, 40, NULL, id, &e), OTA_ERR_NOT_FOUND);
	/* deeper than the cap */
	char deep[8192];
	int o = snprintf(deep, sizeof deep, "%s/deep", tmp);
	for (unsigned i = 0; i <= OTA_MAX_WORKTREE_DEPTH + 1 && o < 8000; i++)
		o += snprintf(deep + o, sizeof deep - (size_t)o, "/d");
	assert_int_equal(test_sh_status("mkdir -p %s && echo x > %s/f", deep, deep), 0);
	snprintf(deep, sizeof deep, "%s/deep", tmp);
	refused(deep, OTA_ERR_TOO_LARGE, NULL);
}

static void test_gitdir_parse(void **state)
{
	(void)state;
	char rel[OTA_MAX_GIT_REFNAME_BYTES];
	ota_error e;
	struct {
		const char *in;
		unsigned depth;
		ota_err want;
		const char *rel;
	} v[] = {
		{"gitdir: ../.git/modules/dep\n", 1, OTA_OK, ".git/modules/dep"},
		{"gitdir: ../../.git/modules/lib/dep", 2, OTA_OK, ".git/modules/lib/dep"},
		{"gitdir: ../../.git/modules/lib/dep\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/lib/dep\n", 2, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: /abs/.git/modules/dep\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/../../etc\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/./x\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/a//b\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/a/\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/x\n\n", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/modules/x\ty", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir: ../.git/objects/x", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"gitdir:../.git/modules/x", 1, OTA_ERR_UNSUPPORTED, NULL},
		{"", 1, OTA_ERR_UNSUPPORTED, NULL},
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		ota_error_clear(&e);
		ota_err rc = ota_git_gitdir_parse((const uint8_t *)v[i].in, strlen(v[i].in), "t/.git",
		                                  v[i].depth, rel, &e);
		if (rc != v[i].want)
			fail_msg("%zu \"%s\": %s, want %s", i, v[i].in, ota_err_name(rc),
			         ota_err_name(v[i].want));
		if (rc == OTA_OK)
			assert_string_equal(rel, v[i].rel);
		else
			assert_string_equal(rel, "");
	}
	/* a NUL inside */
	static const uint8_t nul[] = "gitdir: ../.git/modules/a\0b";
	assert_int_equal(ota_git_gitdir_parse(nul, sizeof nul - 1, "t", 1, rel, &e),
	                 OTA_ERR_UNSUPPORTED);
	/* over the cap, and a name as long as a pointer can be */
	size_t big = OTA_MAX_GIT_REF_FILE_BYTES + 1;
	uint8_t *b = malloc(big);
	assert_non_null(b);
	memcpy(b, "gitdir: ../.git/modules/", 24);
	memset(b + 24, 'a', big - 24);
	assert_int_equal(ota_git_gitdir_parse(b, big, "t", 1, rel, &e), OTA_ERR_TOO_LARGE);
	/* "gitdir: ../" is 11 bytes, the rest is rel */
	assert_int_equal(ota_git_gitdir_parse(b, 11 + OTA_MAX_GIT_REFNAME_BYTES, "t", 1, rel, &e),
	                 OTA_ERR_TOO_LARGE);
	assert_int_equal(ota_git_gitdir_parse(b, 11 + OTA_MAX_GIT_REFNAME_BYTES - 1, "t", 1, rel, &e),
	                 OTA_OK);
	assert_int_equal(strlen(rel), OTA_MAX_GIT_REFNAME_BYTES - 1);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_branch_detached_packed),
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_parsers_on_bytes),
		cmocka_unit_test(test_worktree_clean),
		cmocka_unit_test(test_worktree_dirty),
		cmocka_unit_test(test_worktree_gitlinks),
		cmocka_unit_test(test_worktree_submodule_files),
		cmocka_unit_test(test_worktree_sha256),
		cmocka_unit_test(test_worktree_refused),
		cmocka_unit_test(test_gitdir_parse),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
