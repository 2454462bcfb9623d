/*
 * bench_worktree: what hashing the work tree costs `ota run`
 * (ota_runner_worktree_id, runner/worktree.c, once per run at admission),
 * against the floor measured in the same run on the same files: readdir,
 * fstatat, open, read and SHA-1 of each file's "blob SIZE\0" + content, in
 * readdir order, no sort and no tree objects. Files are in the page cache
 * (each round reads them all first), so both measure CPU, not the disk.
 *
 *  1. worktree_source_tree: N files (default 40,000) of 200 B to 8 KiB in
 *     directories of 100 (a source checkout), ms, median of ROUNDS.
 *     Also git's own `git add -A && git write-tree` on the same files
 *     (fresh index each round, so it hashes every file; it also writes
 *     compressed loose objects, which ours does not), as a peer.
 *  2. worktree_large_files: 4 files of 64 MiB: the hashing itself.
 *
 *   bench_worktree [N [ROUNDS]]   default 40000 5
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "ota/runner.h"

#include "bench_util.h"

static void die(const char *what)
{
	fprintf(stderr, "bench_worktree: %s\n", what);
	exit(1);
}

static unsigned long long g_bytes;
static unsigned char g_buf[256 * 1024];

/* the floor: every file read and hashed as a blob, nothing else */
static void floor_dir(int dfd, EVP_MD_CTX *md)
{
	DIR *d = fdopendir(dup(dfd));
	if (d == NULL)
		die("opendir");
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			die("fstatat");
		if (S_ISDIR(st.st_mode)) {
			int s = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (s < 0)
				die("openat dir");
			floor_dir(s, md);
			close(s);
			continue;
		}
		int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			die("openat");
		char head[48];
		int hl = snprintf(head, sizeof head, "blob %lld", (long long)st.st_size);
		unsigned char out[EVP_MAX_MD_SIZE];
		if (EVP_DigestInit_ex(md, EVP_sha1(), NULL) != 1 ||
		    EVP_DigestUpdate(md, head, (size_t)hl + 1) != 1)
			die("digest");
		ssize_t r;
		while ((r = read(fd, g_buf, sizeof g_buf)) > 0) {
			EVP_DigestUpdate(md, g_buf, (size_t)r);
			g_bytes += (unsigned long long)r;
		}
		EVP_DigestFinal_ex(md, out, NULL);
		close(fd);
	}
	closedir(d);
}

static double floor_walk(const char *dir)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (md == NULL || fd < 0)
		die("floor setup");
	double t0 = bench_mono_s();
	floor_dir(fd, md);
	double t = bench_mono_s() - t0;
	close(fd);
	EVP_MD_CTX_free(md);
	return t;
}

static double ours(const char *dir, char id[OTA_RUNNER_REVISION_MAX + 1])
{
	ota_error e;
	ota_error_clear(&e);
	double t0 = bench_mono_s();
	if (ota_runner_worktree_id(dir, 40, NULL, id, &e) != OTA_OK) {
		fprintf(stderr, "bench_worktree: %s: %s\n", e.where, e.what);
		exit(1);
	}
	return bench_mono_s() - t0;
}

static double git_write_tree(const char *dir, char *out, size_t cap)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
	         "cd %s && rm -rf .git && env -u GIT_DIR HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 "
	         "git -c safe.directory='*' init -q . && env -u GIT_DIR HOME=/nonexistent "
	         "GIT_CONFIG_NOSYSTEM=1 sh -c 'git -c safe.directory=\"*\" add -A && "
	         "git -c safe.directory=\"*\" write-tree'",
	         dir);
	double t0 = bench_mono_s();
	FILE *p = popen(cmd, "r");
	if (p == NULL || fgets(out, (int)cap, p) == NULL)
		die("git");
	double t = bench_mono_s() - t0;
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
	char rm[1100];
	snprintf(rm, sizeof rm, "rm -rf %s/.git", dir);
	if (system(rm) != 0)
		die("rm .git");
	return t;
}

static void write_file(const char *path, size_t n, unsigned seed)
{
	FILE *f = fopen(path, "w");
	if (f == NULL)
		die("fopen");
	for (size_t i = 0; i < n; i++)
		fputc("abcdefghijklmnopqrstuvwxyz\n (){};"[(seed * 2654435761u + i * 40503u) % 34], f);
	fclose(f);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 40000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	if (n < 100 || n > 400000 || rounds < 1 || rounds > 20) {
		fprintf(stderr, "usage: bench_worktree [N [ROUNDS]] (100..400000 files, 1..20 rounds)\n");
		return 2;
	}
	char dir[] = "/tmp/ota-bench-worktree-XXXXXX";
	if (mkdtemp(dir) == NULL)
		die("mkdtemp");
	char src[128], big[128], p[256];
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(big, sizeof big, "%s/big", dir);
	if (mkdir(src, 0755) != 0 || mkdir(big, 0755) != 0)
		die("mkdir");
	unsigned long long total = 0;
	for (long i = 0; i < n; i++) {
		if (i % 100 == 0) {
			snprintf(p, sizeof p, "%s/d%05ld", src, i / 100);
			if (mkdir(p, 0755) != 0)
				die("mkdir d");
		}
		size_t sz = 200 + (size_t)((unsigned long)i * 2654435761u % 8000u);
		snprintf(p, sizeof p, "%s/d%05ld/f%ld.c", src, i / 100, i);
		write_file(p, sz, (unsigned)i);
		total += sz;
	}
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "head -c %d /dev/urandom > %s/blob%d", 64 << 20, big, i);
		if (system(p) != 0)
			die("big file");
	}
	double t_ours[20], t_floor[20], t_git[20], b_ours[20], b_floor[20];
	char id[OTA_RUNNER_REVISION_MAX + 1], gid[128];
	for (int r = 0; r < rounds; r++) {
		g_bytes = 0;
		(void)floor_walk(src); /* into the page cache */
		t_floor[r] = floor_walk(src);
		t_ours[r] = ours(src, id);
		t_git[r] = git_write_tree(src, gid, sizeof gid);
		if (strcmp(id, gid) != 0) {
			fprintf(stderr, "bench_worktree: ours %s, git write-tree %s\n", id, gid);
			return 1;
		}
		(void)floor_walk(big);
		b_floor[r] = floor_walk(big);
		b_ours[r] = ours(big, id);
	}
	double mo = bench_median(t_ours, (size_t)rounds), mf = bench_median(t_floor, (size_t)rounds);
	double mg = bench_median(t_git, (size_t)rounds);
	double bo = bench_median(b_ours, (size_t)rounds), bf = bench_median(b_floor, (size_t)rounds);
	fprintf(stderr,
	        "bench_worktree: %ld files (%.1f MB) in %ld directories: ours %.1f ms, floor %.1f ms, "
	        "git add -A && git write-tree %.1f ms (same id); 4 x 64 MiB: ours %.1f ms "
	        "(%.2f GB/s), floor %.1f ms\n",
	        n, (double)total / 1e6, (n + 99) / 100, mo * 1e3, mf * 1e3, mg * 1e3, bo * 1e3,
	        256.0 * 1048576 / bo / 1e9, bf * 1e3);
	printf("{\"bench\": \"worktree_source_tree\", \"value\": %.1f, \"unit\": \"ms\", "
	       "\"baseline\": \"read_and_sha1_every_file\", \"baseline_value\": %.1f, \"ratio\": %.2f, "
	       "\"files\": %ld, \"bytes\": %llu, \"git_add_write_tree_ms\": %.1f, "
	       "\"ratio_vs_git\": %.2f}\n",
	       mo * 1e3, mf * 1e3, mo / mf, n, total, mg * 1e3, mo / mg);
	printf("{\"bench\": \"worktree_large_files\", \"value\": %.1f, \"unit\": \"ms\", "
	       "\"baseline\": \"read_and_sha1_every_file\", \"baseline_value\": %.1f, \"ratio\": %.2f, "
	       "\"bytes\": %d, \"gb_per_s\": %.2f}\n",
	       bo * 1e3, bf * 1e3, bo / bf, 4 * (64 << 20), 256.0 * 1048576 / bo / 1e9);
	snprintf(p, sizeof p, "rm -rf %s", dir);
	if (system(p) != 0)
		die("rm");
	return 0;
}
