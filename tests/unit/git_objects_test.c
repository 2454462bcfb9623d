/*
 * The git object reader behind a gitlink's check (runner/gitobj.c):
 * ota_git_commit_tree against `git rev-parse C^{tree}` for every commit of
 * a repository whose commits git stored loose, packed whole, as offset
 * deltas and as reference deltas, in SHA-1 and SHA-256 repositories; a
 * pack or index that lies (another pack under the index, flipped bytes) is
 * refused and never answers another tree; ids that name no commit; an
 * object store with alternates; and ota_git_delta_apply's edges.
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#include "ota/limits.h"
#include "ota/runner.h"

#include <zlib.h>

static char *tmp;
static bool have_git;

#define GIT TEST_GIT

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

static void from_hex(const char *h, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/*
 * A repository tmp/NAME (init options extra) with 30 commits whose long
 * messages differ in one line, so that an aggressive repack stores most of
 * them as deltas.
 */
static void make_repo(char *dir, size_t cap, const char *name, const char *extra)
{
	snprintf(dir, cap, "%s/%s", tmp, name);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q %s . && "
	                                "for i in $(seq 1 30); do mkdir -p d$((i %% 3)); echo $i > d$((i %% 3))/f$i; "
	                                GIT " add -A && { for k in $(seq 1 60); do echo \"line $k of a message "
	                                "long enough that a delta pays\"; done; echo \"commit $i of %s\"; } | "
	                                GIT " commit -q -F -; done",
	                                dir, dir, extra, name),
	                 0);
}

/* every commit of dir: ours == git's; returns the number checked */
static size_t check_all(const char *dir, size_t oid_len)
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd, "cd %s && " GIT " rev-list --all", dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char gitdir[4200];
	snprintf(gitdir, sizeof gitdir, "%s/.git", dir);
	int gfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(gfd >= 0);
	char line[128];
	size_t n = 0;
	while (fgets(line, sizeof line, p) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		assert_int_equal(strlen(line), 2 * oid_len);
		uint8_t oid[32], tree[32];
		from_hex(line, oid, oid_len);
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_git_commit_tree(gfd, oid, oid_len, NULL, tree, &e);
		if (rc != OTA_OK)
			fail_msg("%s: %s %s %s", line, ota_err_name(rc), e.where, e.what);
		char want[128], w[8192], got[65];
		snprintf(w, sizeof w, "cd %s && " GIT " rev-parse %s^{tree}", dir, line);
		FILE *q = popen(w, "r");
		assert_non_null(q);
		assert_non_null(fgets(want, sizeof want, q));
		pclose(q);
		want[strcspn(want, "\n")] = '\0';
		to_hex(tree, oid_len, got);
		assert_string_equal(got, want);
		n++;
	}
	pclose(p);
	close(gfd);
	return n;
}

/* commits stored as deltas in dir's packs (git verify-pack) */
static int delta_commits(const char *dir)
{
	char cmd[8192];
	snprintf(cmd, sizeof cmd,
	         "cd %s && for i in .git/objects/pack/*.idx; do " GIT " verify-pack -v $i; done | "
	         "awk '$2 == \"commit\" && NF >= 7' | wc -l",
	         dir);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int n = -1;
	assert_int_equal(fscanf(p, "%d", &n), 1);
	pclose(p);
	return n;
}

static void no_loose(const char *dir)
{
	assert_int_equal(test_sh_status("cd %s && test -z \"$(find .git/objects -path '*/objects/?" "?/*')\"", dir), 0);
}

static void test_loose_packed_deltas(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	const struct {
		const char *name, *init;
		size_t oid_len;
	} kinds[] = {{"sha1", "", 20}, {"sha256", "--object-format=sha256", 32}};
	for (size_t k = 0; k < 2; k++) {
		char d[4096];
		make_repo(d, sizeof d, kinds[k].name, kinds[k].init);
		/* loose */
		assert_int_equal(check_all(d, kinds[k].oid_len), 30);
		/* packed with offset deltas, loose objects gone */
		assert_int_equal(test_sh_status("cd %s && " GIT " repack -q -a -d -f --depth=50 --window=250 && "
		                                GIT " prune-packed", d),
		                 0);
		no_loose(d);
		assert_true(delta_commits(d) > 0);
		assert_int_equal(check_all(d, kinds[k].oid_len), 30);
		/* reference deltas */
		assert_int_equal(test_sh_status("cd %s && " GIT " -c repack.useDeltaBaseOffset=false repack -q -a -d -f "
		                                "--depth=50 --window=250 && " GIT " prune-packed", d),
		                 0);
		no_loose(d);
		assert_true(delta_commits(d) > 0);
		assert_int_equal(check_all(d, kinds[k].oid_len), 30);
		/* undeltified */
		assert_int_equal(test_sh_status("cd %s && " GIT " repack -q -a -d -f --depth=0 && " GIT " prune-packed", d), 0);
		assert_int_equal(delta_commits(d), 0);
		assert_int_equal(check_all(d, kinds[k].oid_len), 30);
	}
}

/* the tree of dir's commit WHAT as the store of repository store answers */
static ota_err tree_in(const char *dir, const char *what, const char *store, size_t oid_len,
                       uint8_t tree[32], ota_error *e)
{
	char cmd[8192], hex[128];
	snprintf(cmd, sizeof cmd, "cd %s && " GIT " rev-parse %s", dir, what);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(hex, sizeof hex, p));
	pclose(p);
	uint8_t oid[32];
	from_hex(hex, oid, oid_len);
	char gitdir[4200];
	snprintf(gitdir, sizeof gitdir, "%s/.git", store);
	int gfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(gfd >= 0);
	ota_error_clear(e);
	ota_err rc = ota_git_commit_tree(gfd, oid, oid_len, NULL, tree, e);
	close(gfd);
	return rc;
}

static ota_err tree_of(const char *dir, const char *what, size_t oid_len, uint8_t tree[32],
                       ota_error *e)
{
	return tree_in(dir, what, dir, oid_len, tree, e);
}

static void test_refusals(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096], o[4096];
	make_repo(d, sizeof d, "liar", "");
	make_repo(o, sizeof o, "other", "");
	uint8_t tree[32], good[32];
	ota_error e;
	/* ids that name no commit */
	assert_int_equal(tree_of(d, "HEAD^{tree}", 20, tree, &e), OTA_ERR_UNSUPPORTED);
	assert_int_equal(tree_in(o, "HEAD", d, 20, tree, &e), OTA_ERR_NOT_FOUND);
	assert_int_equal(test_sh_status("cd %s && " GIT " repack -q -a -d -f --depth=50 --window=250 && " GIT
	                                " prune-packed && cd %s && " GIT " repack -q -a -d -f --depth=50 --window=250",
	                                d, o),
	                 0);
	assert_int_equal(tree_of(d, "HEAD", 20, good, &e), OTA_OK);
	assert_int_equal(tree_of(d, "HEAD~7", 20, tree, &e), OTA_OK);
	/* flipped bytes anywhere in the pack: refused or the right answer,
	 * never another tree (ids and trees read by git before) */
	uint8_t ids[10][20], want[10][20];
	for (int c = 0; c < 10; c++) {
		char cmd[8192], hex[128];
		snprintf(cmd, sizeof cmd, "cd %s && " GIT " rev-parse HEAD~%d HEAD~%d^{tree}", d, 3 * c, 3 * c);
		FILE *p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(hex, sizeof hex, p));
		from_hex(hex, ids[c], 20);
		assert_non_null(fgets(hex, sizeof hex, p));
		from_hex(hex, want[c], 20);
		pclose(p);
	}
	char pack[4200], gitdir[4200];
	snprintf(pack, sizeof pack, "%s/.git/objects/pack", d);
	snprintf(gitdir, sizeof gitdir, "%s/.git", d);
	int pid = (int)getpid();
	assert_int_equal(test_sh_status("cd %s && cp pack-*.pack /tmp/ota-git-objects-pack.keep.%d", pack, pid), 0);
	int refused = 0, answered = 0;
	for (int at = 12; at < 6000; at += 61) {
		assert_int_equal(test_sh_status("cd %s && f=$(ls pack-*.pack) && chmod u+w $f && "
		                                "cp /tmp/ota-git-objects-pack.keep.%d $f && "
		                                "printf '\\377' | dd of=$f bs=1 seek=%d conv=notrunc status=none",
		                                pack, pid, at),
		                 0);
		int gfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(gfd >= 0);
		for (int c = 0; c < 10; c++) {
			uint8_t t[32];
			ota_error_clear(&e);
			if (ota_git_commit_tree(gfd, ids[c], 20, NULL, t, &e) != OTA_OK) {
				refused++;
				continue;
			}
			answered++;
			assert_memory_equal(t, want[c], 20);
		}
		close(gfd);
	}
	assert_true(answered > 0);
	assert_true(refused > 0);
	/* another repository's pack under this index: refused */
	assert_int_equal(test_sh_status("cd %s && f=$(ls pack-*.pack) && cp %s/.git/objects/pack/pack-*.pack $f", pack, o), 0);
	int gfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(gfd >= 0);
	for (int c = 0; c < 10; c++)
		assert_int_not_equal(ota_git_commit_tree(gfd, ids[c], 20, NULL, tree, &e), OTA_OK);
	assert_int_equal(test_sh_status("cd %s && cp /tmp/ota-git-objects-pack.keep.%d pack-*.pack && "
	                                "rm -f /tmp/ota-git-objects-pack.*.%d",
	                                pack, pid, pid),
	                 0);
	assert_int_equal(ota_git_commit_tree(gfd, ids[0], 20, NULL, tree, &e), OTA_OK);
	assert_memory_equal(tree, good, 20);
	close(gfd);
	/* a store that borrows through alternates does not answer for them */
	char a[4096];
	snprintf(a, sizeof a, "%s/borrower", tmp);
	assert_int_equal(test_sh_status("cd %s && " GIT " clone -q --shared %s %s", tmp, d, a), 0);
	assert_int_equal(tree_of(a, "HEAD", 20, tree, &e), OTA_ERR_UNSUPPORTED);
	assert_non_null(strstr(e.what, "alternates"));
}

/*
 * What git reads, this reader reads: an index whose pack is gone is passed
 * over, a corrupt loose copy of a packed object does not hide the packed
 * one (packs first), and a pack entry deflated with a flush after every
 * byte (a valid stream far longer than zlib's default bound) is inflated.
 * And a budget of inflated bytes shared by a caller's lookups.
 */
static void test_git_reads_it(void **state)
{
	(void)state;
	if (!have_git)
		skip();
	char d[4096];
	make_repo(d, sizeof d, "gitreads", "");
	assert_int_equal(test_sh_status("cd %s && " GIT " repack -q -a -d && " GIT " prune-packed && "
	                                "cd .git/objects/pack && cp pack-*.idx pack-0000000000000000000000000000000000000000.idx",
	                                d),
	                 0);
	uint8_t tree[32], want[32];
	ota_error e;
	assert_int_equal(tree_of(d, "HEAD", 20, want, &e), OTA_OK);
	/* an empty loose file for the packed HEAD commit */
	char hex[128], cmd[8192];
	snprintf(cmd, sizeof cmd, "cd %s && " GIT " rev-parse HEAD", d);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(hex, sizeof hex, p));
	pclose(p);
	assert_int_equal(test_sh_status("cd %s/.git/objects && mkdir -p %.2s && : > %.2s/%.38s", d, hex, hex,
	                                hex + 2),
	                 0);
	assert_int_equal(tree_of(d, "HEAD", 20, tree, &e), OTA_OK);
	assert_memory_equal(tree, want, 20);

	/* a budget: spent by the lookups that share it, then too_large */
	char gitdir[4200];
	snprintf(gitdir, sizeof gitdir, "%s/.git", d);
	int gfd = open(gitdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(gfd >= 0);
	uint8_t oid[20];
	from_hex(hex, oid, 20);
	uint64_t budget = 4096;
	assert_int_equal(ota_git_commit_tree(gfd, oid, 20, &budget, tree, &e), OTA_OK);
	assert_true(budget < 4096);
	budget = 10;
	assert_int_equal(ota_git_commit_tree(gfd, oid, 20, &budget, tree, &e), OTA_ERR_TOO_LARGE);
	/* an id in no pack: every index is tried, the one without a pack too */
	uint8_t none[20];
	memset(none, 0x11, sizeof none);
	assert_int_equal(ota_git_commit_tree(gfd, none, 20, NULL, tree, &e), OTA_ERR_NOT_FOUND);
	close(gfd);

	/* a commit deflated with a sync flush after every byte, in a pack
	 * indexed by git */
	const char *body = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
	                   "author a <a@a> 1700000000 +0000\ncommitter a <a@a> 1700000000 +0000\n\nflushed\n";
	size_t bl = strlen(body);
	uint8_t pk[8192];
	size_t n = 0;
	memcpy(pk, "PACK\0\0\0\2\0\0\0\1", 12);
	n = 12;
	pk[n++] = (uint8_t)(0x80 | (1 << 4) | (bl & 15));
	size_t rest = bl >> 4;
	while (rest >= 0x80) {
		pk[n++] = (uint8_t)(0x80 | (rest & 0x7f));
		rest >>= 7;
	}
	pk[n++] = (uint8_t)rest;
	z_stream z;
	memset(&z, 0, sizeof z);
	assert_int_equal(deflateInit(&z, 6), Z_OK);
	z.next_out = pk + n;
	z.avail_out = (uInt)(sizeof pk - n - 32);
	for (size_t i = 0; i < bl; i++) {
		z.next_in = (Bytef *)(uintptr_t)(body + i);
		z.avail_in = 1;
		assert_int_equal(deflate(&z, Z_SYNC_FLUSH), Z_OK);
	}
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t zlen = z.total_out;
	deflateEnd(&z);
	assert_true(zlen > compressBound((uLong)bl) + 64);
	n += zlen;
	unsigned ml = 0;
	assert_int_equal(EVP_Digest(pk, n, pk + n, &ml, EVP_sha1(), NULL), 1);
	n += ml;
	char b[4096];
	snprintf(b, sizeof b, "%s/flushed", tmp);
	assert_int_equal(test_sh_status("mkdir -p %s && cd %s && " GIT " init -q --bare . && mkdir -p objects/pack", b, b), 0);
	char pp[4300];
	snprintf(pp, sizeof pp, "%s/objects/pack/pack-f.pack", b);
	FILE *f = fopen(pp, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(pk, 1, n, f), n);
	fclose(f);
	assert_int_equal(test_sh_status("cd %s/objects/pack && " GIT " index-pack pack-f.pack >/dev/null", b), 0);
	/* its id: git's hash of the commit */
	char hdr[64];
	int hl = snprintf(hdr, sizeof hdr, "commit %zu", bl);
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	assert_non_null(x);
	assert_int_equal(EVP_DigestInit_ex(x, EVP_sha1(), NULL), 1);
	assert_int_equal(EVP_DigestUpdate(x, hdr, (size_t)hl + 1), 1);
	assert_int_equal(EVP_DigestUpdate(x, body, bl), 1);
	assert_int_equal(EVP_DigestFinal_ex(x, oid, &ml), 1);
	EVP_MD_CTX_free(x);
	int bfd = open(b, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(bfd >= 0);
	ota_error_clear(&e);
	ota_err rc = ota_git_commit_tree(bfd, oid, 20, NULL, tree, &e);
	if (rc != OTA_OK)
		fail_msg("%s: %s", ota_err_name(rc), e.what);
	from_hex("4b825dc642cb6eb9a060e54bf8d69288fbee4904", want, 20);
	assert_memory_equal(tree, want, 20);
	close(bfd);
}

static void test_delta_edges(void **state)
{
	(void)state;
	const uint8_t base[] = "hello, world";
	uint8_t *out = NULL;
	size_t n = 0;
	ota_error e;
	/* copy "world" (offset 7, 5 bytes), insert "!" */
	const uint8_t ok[] = {12, 6, 0x91, 7, 5, 1, '!'};
	assert_int_equal(ota_git_delta_apply(base, 12, ok, sizeof ok, &out, &n, &e), OTA_OK);
	assert_int_equal(n, 6);
	assert_memory_equal(out, "world!", 6);
	free(out);
	const struct {
		uint8_t d[16];
		size_t n;
		ota_err want;
	} bad[] = {
		{{11, 5, 0x91, 0, 5}, 5, OTA_ERR_UNSUPPORTED},          /* another base size */
		{{12, 5, 0x91, 10, 5}, 5, OTA_ERR_UNSUPPORTED},         /* copy past the base */
		{{12, 5, 0x91, 0, 6}, 5, OTA_ERR_UNSUPPORTED},          /* past the result */
		{{12, 5, 0x91, 0}, 4, OTA_ERR_UNSUPPORTED},             /* cut short */
		{{12, 5, 0}, 3, OTA_ERR_UNSUPPORTED},                   /* reserved 0 */
		{{12, 5, 3, 'a', 'b'}, 5, OTA_ERR_UNSUPPORTED},         /* insert cut short */
		{{12, 6, 0x91, 0, 5}, 5, OTA_ERR_UNSUPPORTED},          /* result short of its size */
		{{12, 0x80, 0x80, 0x80, 0x01}, 5, OTA_ERR_TOO_LARGE},   /* 2 MiB result */
		{{12}, 1, OTA_ERR_UNSUPPORTED},                         /* header cut short */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		out = (uint8_t *)"x";
		ota_error_clear(&e);
		ota_err rc = ota_git_delta_apply(base, 12, bad[i].d, bad[i].n, &out, &n, &e);
		if (rc != bad[i].want)
			fail_msg("case %zu: %s (%s)", i, ota_err_name(rc), e.what);
		assert_null(out);
	}
	/* a commit's tree line */
	uint8_t t[32];
	const char *c = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor x\n";
	assert_int_equal(ota_git_commit_parse_tree((const uint8_t *)c, strlen(c), 20, t, &e), OTA_OK);
	assert_int_equal(t[0], 0x4b);
	assert_int_equal(ota_git_commit_parse_tree((const uint8_t *)c, strlen(c), 32, t, &e),
	                 OTA_ERR_UNSUPPORTED);
	const char *u = "tree 4B825DC642CB6EB9A060E54BF8D69288FBEE4904\n";
	assert_int_equal(ota_git_commit_parse_tree((const uint8_t *)u, strlen(u), 20, t, &e),
	                 OTA_ERR_UNSUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loose_packed_deltas),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_git_reads_it),
		cmocka_unit_test(test_delta_edges),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
