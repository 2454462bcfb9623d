/*
 * bench_fingerprint: the cost of fingerprinting a protected path (twice per
 * run: before create and at the terminal inspection), baseline from the
 * same run.
 *
 *  1. fingerprint_one_dir_N: oci_fingerprint of a protected directory
 *     holding N empty files (default 100,000) created in a scrambled order,
 *     ms (best of ROUNDS). Baseline: the same walk's floor, measured on the
 *     same directory: readdir, fstatat, open and read of each file and
 *     SHA-256 of the same stat lines and contents, in readdir order (no
 *     sort, no per-name copy). ratio = ours / floor.
 *     (Before the walk used qsort, an insertion sort made 120,000 files
 *     take about 66 s on the audit's machine: quadratic in a directory's
 *     size.)
 *
 *   bench_fingerprint [N [ROUNDS]]   default 100000 3
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

#include "provider-oci/oci_internal.h"

#include "bench_util.h"

static void die(const char *what)
{
	fprintf(stderr, "bench_fingerprint: %s\n", what);
	exit(1);
}

static double floor_walk(const char *dir)
{
	double t0 = bench_mono_s();
	DIR *d = opendir(dir);
	if (d == NULL)
		die("opendir");
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		die("digest");
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		char line[512];
		int n = snprintf(line, sizeof line, "./%s\n%o %lu %lu %lld %lld.%ld %lld.%ld %u %u\n",
		                 de->d_name, (unsigned)st.st_mode, (unsigned long)st.st_ino,
		                 (unsigned long)st.st_nlink, (long long)st.st_size,
		                 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
		                 (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec,
		                 (unsigned)st.st_uid, (unsigned)st.st_gid);
		if (n > 0)
			EVP_DigestUpdate(md, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd >= 0) {
				uint8_t b[16384];
				ssize_t r;
				while ((r = read(fd, b, sizeof b)) > 0)
					EVP_DigestUpdate(md, b, (size_t)r);
				close(fd);
			}
		}
	}
	uint8_t h[32];
	unsigned hl = 0;
	EVP_DigestFinal_ex(md, h, &hl);
	EVP_MD_CTX_free(md);
	closedir(d);
	return (bench_mono_s() - t0) * 1000.0;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100000u;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	if (n == 0 || rounds <= 0)
		die("usage: bench_fingerprint [N [ROUNDS]]");
	char tmpl[] = "/tmp/ota-bench-fp-XXXXXX";
	char *tmp = mkdtemp(tmpl);
	if (tmp == NULL)
		die("mkdtemp");
	char dir[512];
	snprintf(dir, sizeof dir, "%s/prot", tmp);
	if (mkdir(dir, 0755) != 0)
		die("mkdir");
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		die("open");
	for (unsigned i = 0; i < n; i++) {
		char nm[32];
		snprintf(nm, sizeof nm, "f%07u", (unsigned)(((unsigned long long)i * 7919u) % n));
		int fd = openat(dfd, nm, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die("create");
		close(fd);
	}
	close(dfd);
	int repo = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (repo < 0)
		die("open");
	double best = 0, base = 0;
	for (int r = 0; r < rounds; r++) {
		char out[65];
		double t0 = bench_mono_s();
		if (oci_fingerprint(repo, "prot", NULL, out, NULL) != OTA_OK)
			die("oci_fingerprint");
		double ms = (bench_mono_s() - t0) * 1000.0;
		double b = floor_walk(dir);
		if (r == 0 || ms < best)
			best = ms;
		if (r == 0 || b < base)
			base = b;
	}
	close(repo);
	char name[64];
	snprintf(name, sizeof name, "fingerprint_one_dir_%u", n);
	printf("{\"bench\": \"%s\", \"value\": %.3f, \"unit\": \"ms\", \"baseline\": "
	       "\"readdir_stat_read_sha256_unsorted\", \"baseline_value\": %.3f, \"ratio\": %.3f}\n",
	       name, best, base, base > 0 ? best / base : 0.0);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmp);
	if (system(cmd) != 0)
		die("cleanup");
	return 0;
}
