/*
 * Race test of the nonce store: 2, 4 and 8 processes (fork), each with its
 * own sqlite connection, consume the same challenges in different orders,
 * one at a time and in batches; 100,000 attempts in total. Every challenge
 * must be accepted exactly once: zero double accepts, zero losses, and every
 * other attempt refused as nonce_replayed.
 */
#include "test_util.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ota/nonce.h"

typedef struct shared {
	atomic_int go;
	atomic_int ready;
	atomic_long replays;
	atomic_long other;
	atomic_long attempts;
	atomic_int wins[]; /* per challenge */
} shared;

static const ota_nonce_binding bind_r = {"txn-race", "issuer:race", "scope"};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static int child(const char *path, const ota_challenge *cs, int n, int idx, shared *sh)
{
	ota_nonce_store *s = NULL;
	if (ota_nonce_store_open(path, NULL, &s, NULL) != OTA_OK)
		return 10;
	int *order = malloc((size_t)n * sizeof *order);
	ota_nonce_op *ops = calloc(64, sizeof *ops);
	if (order == NULL || ops == NULL)
		return 11;
	uint32_t seed = 0x9e3779b9u * (uint32_t)(idx + 1);
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) { /* a different permutation per child */
		int j = (int)(rnd(&seed) % (uint32_t)(i + 1));
		int t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	atomic_fetch_add(&sh->ready, 1);
	while (atomic_load(&sh->go) == 0)
		usleep(100);
	int k = 0;
	while (k < n) {
		/* odd children mix in single consumes; batch sizes 1..64 */
		int b = (idx % 2 == 1 && rnd(&seed) % 4 == 0) ? 1 : 1 + (int)(rnd(&seed) % 64);
		if (b > n - k)
			b = n - k;
		memset(ops, 0, (size_t)b * sizeof *ops);
		for (int i = 0; i < b; i++) {
			ops[i].kind = OTA_NONCE_OP_CONSUME;
			ops[i].nonce = ota_bytes_make(cs[order[k + i]].nonce, cs[order[k + i]].nonce_len);
			ops[i].expect = &bind_r;
		}
		ota_err e = ota_nonce_store_commit_batch(s, ops, (size_t)b, 1001, NULL);
		if (e != OTA_OK)
			return 12; /* busy beyond the timeout or I/O: a failed test */
		for (int i = 0; i < b; i++) {
			if (ops[i].result == OTA_OK)
				atomic_fetch_add(&sh->wins[order[k + i]], 1);
			else if (ops[i].result == OTA_ERR_NONCE_REPLAYED)
				atomic_fetch_add(&sh->replays, 1);
			else
				atomic_fetch_add(&sh->other, 1);
		}
		atomic_fetch_add(&sh->attempts, b);
		k += b;
	}
	free(order);
	free(ops);
	ota_nonce_store_close(s);
	return 0;
}

static long race_round(int procs, int n)
{
	char *dir = test_tmpdir();
	char path[512];
	snprintf(path, sizeof path, "%s/race.db", dir);
	ota_nonce_store *s = NULL;
	assert_ota(ota_nonce_store_open(path, NULL, &s, NULL), OTA_OK);
	ota_challenge *cs = calloc((size_t)n, sizeof *cs);
	assert_non_null(cs);
	ota_nonce_op *ops = calloc(1000, sizeof *ops);
	assert_non_null(ops);
	for (int k = 0; k < n; k += 1000) {
		int b = n - k < 1000 ? n - k : 1000;
		memset(ops, 0, 1000 * sizeof *ops);
		for (int i = 0; i < b; i++) {
			ops[i].kind = OTA_NONCE_OP_ISSUE;
			ops[i].binding = &bind_r;
			ops[i].nonce_len = 16 + (size_t)((k + i) % 49); /* 16..64 bytes */
		}
		assert_ota(ota_nonce_store_commit_batch(s, ops, (size_t)b, 1000, NULL), OTA_OK);
		for (int i = 0; i < b; i++) {
			assert_ota(ops[i].result, OTA_OK);
			cs[k + i] = ops[i].challenge;
		}
	}
	free(ops);
	ota_nonce_store_close(s); /* no sqlite handle crosses fork() */

	size_t shsz = sizeof(shared) + (size_t)n * sizeof(atomic_int);
	shared *sh = mmap(NULL, shsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, shsz);
	pid_t pids[8];
	for (int p = 0; p < procs; p++) {
		pids[p] = fork();
		assert_true(pids[p] >= 0);
		if (pids[p] == 0)
			_exit(child(path, cs, n, p, sh));
	}
	while (atomic_load(&sh->ready) < procs)
		usleep(200);
	atomic_store(&sh->go, 1);
	for (int p = 0; p < procs; p++) {
		int st = 0;
		assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	int doubles = 0, lost = 0;
	for (int i = 0; i < n; i++) {
		int w = atomic_load(&sh->wins[i]);
		if (w > 1)
			doubles++;
		if (w == 0)
			lost++;
	}
	long attempts = atomic_load(&sh->attempts);
	printf("# race: %d processes, %d challenges, %ld attempts, %d double accepts, %d never accepted,"
	       " %ld replays refused\n",
	       procs, n, attempts, doubles, lost, (long)atomic_load(&sh->replays));
	assert_int_equal(doubles, 0);
	assert_int_equal(lost, 0);
	assert_int_equal(atomic_load(&sh->other), 0);
	assert_int_equal(atomic_load(&sh->replays), (long)n * (procs - 1));
	assert_int_equal(attempts, (long)n * procs);
	munmap(sh, shsz);
	free(cs);
	test_rmtree(dir);
	free(dir);
	return attempts;
}

static void test_race(void **state)
{
	(void)state;
	/* OTA_RACE_SCALE=10 runs 10^6 attempts (scripts/long-tests.sh, not in CI:
	 * about 30 s) */
	const char *sc = getenv("OTA_RACE_SCALE");
	int k = sc != NULL ? atoi(sc) : 1;
	if (k < 1 || k > 100)
		k = 1;
	long total = 0;
	total += race_round(2, 12500 * k);
	total += race_round(3, 5000 * k);
	total += race_round(4, 5000 * k);
	total += race_round(8, 5000 * k);
	printf("# race: %ld attempts in total\n", total);
	assert_true(total >= 100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_race),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
