/*
 * bench_attestd: accepted ES256 attestations per second through
 * ota-attestd's HTTP endpoint (POST /v1/attestations, application/cose) over
 * loopback, against twice the raw single-core OpenSSL ECDSA P-256
 * verification rate (the 2-core limit: this machine has 2 cores;
 * EVP_PKEY_verify of a SHA-256 digest with a kept context, one thread, as
 * `openssl speed ecdsap256` measures it). Each round also reports the
 * ratio against a per-message verification (EVP_DigestVerifyInit +
 * EVP_DigestVerify of a 200-byte message, a fresh context each time), the
 * baseline used until 2026-11-30: 6-14 % slower than the primitive in the
 * same rounds, it made every ratio read that much higher (raw_verify_rate).
 *
 * BENCH_ATTESTD_BATCH=K (2..128) sends the same attestations K per request
 * instead (application/cbor-seq, the batch route), over 3072/K keep-alive
 * connections unless BENCH_ATTESTD_CONNS says otherwise; each answer must
 * be a 200 accepting all K. The JSON figure is then
 * attestd_accepted_es256_batch with "batch": K; the work per attestation
 * is the same, the HTTP exchanges and group-commit wake-ups are 1/K.
 *
 * Method: ROUNDS rounds (default 5), each the raw verification rate
 * (RAW_SECONDS, 0.4 s) and right after it the endpoint phase
 * (ROUND_SECONDS, default 1.5 s), so that each round's baseline and rate
 * are measured at nearly the same moment: the noise of this shared host
 * moves the CPU cost of the same work by 25 % within minutes, and a
 * baseline measured once before a single phase made one run's ratio say
 * little (0.62-0.87 in six runs). Each round yields a rate, a baseline
 * (2x raw), a ratio and its own CPU split and group commits; the JSON line
 * gives the medians over the rounds (every per-round figure, each its own
 * median: the parts need not add up to the whole) and the lowest and
 * highest ratio.
 *
 * Each round has an endpoint of its own (its own store file, same trust
 * root and verifier key), all started and given their challenges before
 * the first clock: the challenges a store handle issued are answered from
 * its peek cache, which holds at most 2^17 of them (NONCE_PEEK_CACHE_ENTRIES
 * in nonce-store/nonce_internal.h, 8 shards of 2^14) and drops none before
 * they expire (docs/nonce-store.md, "The peek cache"). Five rounds use
 * about 160,000 attestations: one endpoint issuing them all would answer
 * the later rounds' peeks from sqlite, a different workload (tried: one
 * endpoint, 300,000 challenges, rounds alternating between the first
 * 120,000 and the last 150,000: event loops 46-66 us per attestation
 * against 58-84, more in each of 4 pairs).
 * Each round thus runs what the single 3 s phase did before: a fresh
 * endpoint whose challenges are all in its cache.
 *
 *   bench_attestd [ROUNDS [ROUND_SECONDS]]    defaults: 5 rounds, 1.5 s
 *
 * Lanes: every attestation is the first record of its own lane (txn
 * "txn-bench", boundary "boundary-N" in the order they are sent), so the
 * store's heads and lane index grow at one end. With
 * BENCH_ATTESTD_LANES=hashed the boundaries are named by a hash of N
 * instead, as many concurrent transactions would write them: each record
 * then lands on random pages of both (docs/nonce-store.md, "Group
 * commit"), the store's worst case.
 *
 * What one accepted attestation costs here, all of it on the same 2 cores
 * and in this process's CPU time:
 *   - the endpoint as ota-attestd runs it (ota_attestd_start, default
 *     threads: one MHD epoll loop per core, synchronous=FULL): HTTP/1.1
 *     parsing, strict COSE decode, trust lookup, the ES256 verification,
 *     claims, the challenge peek, identities, then the group-commit thread:
 *     the batch's acceptances (one ES256 signature per batch over a Merkle
 *     tree, docs/attestation.md), consume + head advance + stored
 *     acceptance in one durable sqlite transaction per batch, and only then
 *     the 201 JSON answer;
 *   - the clients: LOAD_THREADS threads driving CONNS keep-alive TCP
 *     connections with epoll, one request in flight each, real HTTP/1.1
 *     POSTs (head and body written with one send); each answer is read
 *     whole (recv until its head and Content-Length bytes of body are in,
 *     no read past it) and counted only if it is a 201 carrying
 *     "result":"accepted" and an acceptance.
 * Not timed: the challenges are issued by the endpoints (POST
 * /v1/challenges through libcurl, as providers ask for them, so they are in
 * the endpoint's own store handle and its peek cache) and the attestations
 * signed before the first clock starts, each request (head and
 * COSE body) is rendered then, as a load generator such as wrk renders its
 * request once, and each round's connections are opened (by its own client
 * threads) before its clock. A round gets ROUND_SECONDS x ATT_PER_SECOND
 * attestations (50,000/s: the rate two whole cores would give at 40 us per
 * attestation, with margin; today 20-25k/s are measured); if they run out
 * before ROUND_SECONDS the round ends early, and its rate is over the
 * round's real duration (the clock runs until the last answer is in, as
 * after the deadline).
 *
 * After the rounds, once: GET /healthz through the same clients
 * (floor_http_us_per_request: HTTP alone, no signature, no store) and the
 * endpoint's own ES256 verification of one of these attestations
 * (own_verify_us: COSE decode, hash, and the key's table of multiples,
 * common/ec_fast.c, as the endpoint's warmed key uses it);
 * floor_ratio_one_per_request is raw_verify_us / (floor_http_us_per_request
 * + own_verify_us), the ratio one attestation per request could reach if
 * nothing else cost anything (raw_verify_us from the median raw rate).
 *
 * Prints one JSON object (DESIGN.md section 9); on stderr one line per
 * round: its rate, baseline and ratio, the CPU time per accepted
 * attestation (endpoint + clients, getrusage), split by thread (the MHD
 * event loops, the group-commit thread "ota-commit", the store's WAL
 * checkpointer "ota-checkpoint", the clients; from /proc/self/task, 10 ms
 * ticks), its group commits, where the machine's CPU went during the phase
 * (/proc/stat: this process, other processes, irq+softirq+steal, idle,
 * I/O wait; idle while this process had work means its threads were all
 * waiting, on a group commit's fsync for instance) and the raw rate of two
 * verifying threads at once (0.4 s more; about 2.0 x one thread on the
 * quiet machine, less under other load, which the single-thread baseline
 * hardly sees). Other load on the machine lowers the rate (the CPU is
 * shared) but not the CPU per attestation, which stderr also turns into
 * the rate two whole cores would give.
 *   BENCH_ATTESTD_CONNS=N: N keep-alive connections instead of 512.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <pthread.h>
#include <dirent.h>
#include <sys/resource.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/admission.h"
#include "ota/attestd.h"
#include "ota/cose.h"
#include "ota/key.h"
#include "ota/nonce.h"
#include "ota/trust.h"

#include "bench_util.h"

#define ROUNDS 5           /* default */
#define ROUND_SECONDS 1.5  /* default: each round's endpoint phase */
#define MAX_ROUNDS 15
#define RAW_SECONDS 0.4    /* each round's raw verification rate */
#define LOAD_THREADS 2   /* client threads */
#define CONNS 512        /* keep-alive connections, one request in flight each (default) */
static int conns = CONNS; /* BENCH_ATTESTD_CONNS overrides it */
#define ATT_PER_SECOND 50000 /* attestations per second of a round */
/* The most challenges one endpoint issues: below its peek cache's 2^17
 * entries (8 shards of 16,384; 120,000 spread by random nonces leave every
 * shard room), so that every peek of a round is answered from memory. */
#define MAX_ATT_PER_ENDPOINT 120000
#define MAX_ROUND_SECONDS ((double)MAX_ATT_PER_ENDPOINT / ATT_PER_SECOND)

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * OpenSSL's raw ECDSA P-256 verifications per second on this thread, over
 * seconds of wall time, two ways:
 *   RAW_PRIMITIVE: EVP_PKEY_verify of a SHA-256 digest with one
 *   EVP_PKEY_CTX kept across calls, the way `openssl speed ecdsap256`
 *   measures it: the primitive alone. The baseline of the target.
 *   RAW_PER_MESSAGE: EVP_DigestVerifyInit + EVP_DigestVerify of the
 *   200-byte message with a fresh EVP_MD_CTX each time, as a verifier that
 *   keeps nothing between messages calls OpenSSL; its set-up per call makes
 *   it 6-14 % slower, so a ratio against it reads higher (the figure
 *   quoted before this baseline was split).
 */
enum { RAW_PRIMITIVE, RAW_PER_MESSAGE };

static double raw_verify_rate(double seconds, int how)
{
	EVP_PKEY *k = EVP_EC_gen("P-256"); /* EVP_EC_gen: thread-safe, own key per thread */
	if (k == NULL)
		return 0;
	unsigned char msg[200], sig[80], dg[32];
	unsigned int dl = 0;
	memset(msg, 7, sizeof msg);
	size_t sl = sizeof sig;
	EVP_MD_CTX *m = EVP_MD_CTX_new();
	EVP_DigestSignInit(m, NULL, EVP_sha256(), NULL, k);
	EVP_DigestSign(m, sig, &sl, msg, sizeof msg);
	EVP_MD_CTX_free(m);
	EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new(k, NULL);
	if (pc == NULL || EVP_PKEY_verify_init(pc) != 1 ||
	    EVP_Digest(msg, sizeof msg, dg, &dl, EVP_sha256(), NULL) != 1 || dl != sizeof dg)
		abort();
	long n = 0;
	double t0 = now_s();
	while (now_s() - t0 < seconds) {
		for (int i = 0; i < 100; i++) {
			if (how == RAW_PRIMITIVE) {
				if (EVP_PKEY_verify(pc, sig, sl, dg, sizeof dg) != 1)
					abort();
				continue;
			}
			m = EVP_MD_CTX_new();
			EVP_DigestVerifyInit(m, NULL, EVP_sha256(), NULL, k);
			if (EVP_DigestVerify(m, sig, sl, msg, sizeof msg) != 1)
				abort();
			EVP_MD_CTX_free(m);
		}
		n += 100;
	}
	double r = (double)n / (now_s() - t0);
	EVP_PKEY_CTX_free(pc);
	EVP_PKEY_free(k);
	return r;
}

/* The same loop on two threads at once: what the two cores verify
 * together right now (other load on the machine, or two vCPUs that share
 * a physical core, make it less than twice one thread's rate). */
typedef struct raw_job {
	double seconds, rate;
	pthread_barrier_t *go;
} raw_job;

static void *raw_thread(void *arg)
{
	raw_job *j = arg;
	pthread_barrier_wait(j->go);
	j->rate = raw_verify_rate(j->seconds, RAW_PRIMITIVE);
	return NULL;
}

static double raw_verify_rate_2(double seconds)
{
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, 2);
	raw_job j[2] = {{seconds, 0, &go}, {seconds, 0, &go}};
	pthread_t t;
	if (pthread_create(&t, NULL, raw_thread, &j[1]) != 0)
		abort();
	raw_thread(&j[0]);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&go);
	return j[0].rate + j[1].rate;
}

/* CPU seconds (user + system) of this process's live threads, by name: [0]
 * the MHD event loops ("MHD-worker"), [1] the group commit ("ota-commit"),
 * [2] the load threads ("bench-client"; run_phase takes their own account,
 * they have exited when it reads), [3] the rest, [4] the store's WAL
 * checkpointer ("ota-checkpoint"). */
enum { T_LOOPS, T_COMMIT, T_CLIENTS, T_OTHER, T_CKPT, T_N };

static void thread_cpu(double out[T_N])
{
	for (int i = 0; i < T_N; i++)
		out[i] = 0;
	DIR *dir = opendir("/proc/self/task");
	if (dir == NULL)
		return;
	double tick = (double)sysconf(_SC_CLK_TCK);
	struct dirent *de;
	while ((de = readdir(dir)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char path[300], buf[1024];
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		if (open == NULL || close == NULL)
			continue;
		*close = '\0';
		const char *comm = open + 1;
		/* after the name: state (3), then fields 4..; utime is 14, stime 15 */
		unsigned long long ut = 0, st = 0;
		if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		           &st) != 2)
			continue;
		int k = strncmp(comm, "MHD-", 4) == 0            ? T_LOOPS
		        : strcmp(comm, "ota-commit") == 0          ? T_COMMIT
		        : strcmp(comm, "bench-client") == 0        ? T_CLIENTS
		        : strcmp(comm, "ota-checkpoint") == 0      ? T_CKPT
		                                                   : T_OTHER;
		out[k] += (double)(ut + st) / tick;
	}
	closedir(dir);
}

/* One attestation: its COSE bytes, then (once the endpoint's port is
 * known, before the clock) its whole request, the POST head and the COSE
 * body in one buffer. */
typedef struct att {
	uint8_t nonce[32]; /* the challenge the endpoint issued for it */
	uint8_t *msg;
	size_t msg_len;
	char *req;
	size_t len;
} att;

typedef struct shared {
	uint16_t port;
	att *atts;
	int n;
	int conns_per_thread;
	atomic_int next;
	atomic_long ok, bad;
	atomic_llong client_cpu_ns; /* the load threads' CPU while the clock runs */
	bool health; /* the floor phase: GET /healthz instead of attestations */
	int batch;   /* attestations per request (1: application/cose, else a
	                batch: application/cbor-seq, its answer a 200 listing them) */
	double deadline;
	pthread_barrier_t ready, go; /* connected; clock started */
} shared;

/* One keep-alive connection of a load thread: one request in flight. */
typedef struct conn {
	int fd;
	const char *out;    /* the request being sent (an att's, or the GET) */
	size_t out_len, out_off;
	char *in;           /* the answer being read (8 KiB per attestation of a request) */
	size_t in_cap;
	size_t in_len;
	size_t head;        /* the answer's head length once its end is in, else 0 */
	size_t body;        /* its Content-Length */
} conn;

static int dial(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

static const char get_healthz[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

/* Points k at the next request (a real HTTP/1.1 POST, or the GET of the
 * floor); false when the run is over. */
static bool next_request(shared *s, conn *k)
{
	if (now_s() > s->deadline)
		return false;
	if (s->health) {
		k->out = get_healthz;
		k->out_len = sizeof get_healthz - 1;
	} else {
		int i = atomic_fetch_add(&s->next, 1);
		if (i >= s->n)
			return false;
		k->out = s->atts[i].req;
		k->out_len = s->atts[i].len;
	}
	k->out_off = 0;
	k->in_len = 0;
	k->head = 0;
	k->body = 0;
	return true;
}

/* Sends what is left of k's request; -1 on error, 1 when all is sent. */
static int pump_out(conn *k)
{
	while (k->out_off < k->out_len) {
		ssize_t w = send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN ? 0 : -1;
		k->out_off += (size_t)w;
	}
	return 1;
}

/* The value of the head's Content-Length field (head: from the status
 * line to the blank line); -1 when it has none, or two, or a malformed one. */
static long long content_length(const char *h, size_t n)
{
	static const char name[] = "content-length:";
	long long v = -1;
	for (const char *p = memchr(h, '\n', n); p != NULL && (size_t)(p + 1 - h) < n;
	     p = memchr(p + 1, '\n', n - (size_t)(p + 1 - h))) {
		const char *f = p + 1;
		if ((size_t)(h + n - f) < sizeof name - 1 || strncasecmp(f, name, sizeof name - 1) != 0)
			continue;
		if (v >= 0)
			return -1;
		f += sizeof name - 1;
		while (*f == ' ' || *f == '\t')
			f++;
		if (*f < '0' || *f > '9')
			return -1;
		char *end = NULL;
		v = strtoll(f, &end, 10);
		while (*end == ' ' || *end == '\t')
			end++;
		if (*end != '\r' || v < 0)
			return -1;
	}
	return v;
}

/*
 * Reads k's answer; 0 while incomplete, 1 for a 201 whose body is an
 * acceptance answer ("result":"accepted" and an "acceptance") or, for a
 * batch of K, K for a 200 whose every item was accepted; -1 for anything
 * else. Reads only until the head and its Content-Length bytes of
 * body are in (no extra recv to see EAGAIN: one request is in flight, so
 * any byte beyond the answer comes with it, or is read as the next
 * answer's start and fails that one).
 */
static int pump_in(const shared *s, conn *k)
{
	for (;;) {
		if (k->in_len >= k->in_cap - 1)
			return -1;
		ssize_t r = recv(k->fd, k->in + k->in_len, k->in_cap - 1 - k->in_len, 0);
		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN ? 0 : -1;
		size_t from = k->in_len >= 3 ? k->in_len - 3 : 0; /* a CRLFCRLF split across reads */
		k->in_len += (size_t)r;
		k->in[k->in_len] = '\0';
		if (k->head == 0) {
			const char *eoh = strstr(k->in + from, "\r\n\r\n");
			if (eoh == NULL)
				continue;
			k->head = (size_t)(eoh + 4 - k->in);
			long long cl = content_length(k->in, k->head - 2);
			if (cl < 0)
				return -1;
			k->body = (size_t)cl;
		}
		if (k->in_len < k->head + k->body)
			continue;
		break;
	}
	if (k->in_len != k->head + k->body)
		return -1; /* one request in flight: nothing may follow */
	const char *body = k->in + k->head;
	if (s->health)
		return strncmp(k->in, "HTTP/1.1 200 ", 13) == 0 &&
		               memmem(body, k->body, "\"ok\":true", 9) != NULL
		           ? 1
		           : -1;
	if (s->batch > 1) {
		/* every item accepted: {"accepted":K,"ok":true,"refused":0,...
		 * (finish_batch writes these counts first) */
		char want[64];
		int w = snprintf(want, sizeof want, "{\"accepted\":%d,\"ok\":true,\"refused\":0,",
		                 s->batch);
		return strncmp(k->in, "HTTP/1.1 200 ", 13) == 0 && k->body > (size_t)w &&
		               memcmp(body, want, (size_t)w) == 0
		           ? s->batch
		           : -1;
	}
	static const char accepted[] = "\"result\":\"accepted\"", acceptance[] = "\"acceptance\":\"";
	bool good = strncmp(k->in, "HTTP/1.1 201 ", 13) == 0 &&
	            memmem(body, k->body, accepted, sizeof accepted - 1) != NULL &&
	            memmem(body, k->body, acceptance, sizeof acceptance - 1) != NULL;
	return good ? 1 : -1;
}

static void watch(int ep, conn *k, bool out)
{
	struct epoll_event ev = {.events = EPOLLIN | (out ? EPOLLOUT : 0u), .data.ptr = k};
	epoll_ctl(ep, EPOLL_CTL_MOD, k->fd, &ev);
}

/* A load thread: conns_per_thread keep-alive connections driven by epoll,
 * each with one request in flight, until the attestations or the time run
 * out. */
static void *client(void *p)
{
	shared *s = p;
	pthread_setname_np(pthread_self(), "bench-client");
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int n = s->conns_per_thread, live = 0;
	conn *ks = calloc((size_t)n, sizeof *ks);
	if (ep < 0 || ks == NULL)
		abort();
	for (int i = 0; i < n; i++) {
		conn *k = &ks[i];
		k->in_cap = 8192 * (size_t)(s->batch > 1 ? s->batch : 1);
		if ((k->in = malloc(k->in_cap)) == NULL)
			abort();
		k->fd = dial(s->port);
		if (k->fd < 0) {
			atomic_fetch_add(&s->bad, 1);
			continue;
		}
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = k};
		epoll_ctl(ep, EPOLL_CTL_ADD, k->fd, &ev);
		live++;
	}
	pthread_barrier_wait(&s->ready);
	pthread_barrier_wait(&s->go);
	struct timespec c0, c1;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (int i = 0; i < n; i++) {
		conn *k = &ks[i];
		if (k->fd < 0)
			continue;
		int rc = next_request(s, k) ? pump_out(k) : -1;
		if (rc == 0)
			watch(ep, k, true);
		if (rc < 0) {
			close(k->fd);
			k->fd = -1;
			live--;
		}
	}
	struct epoll_event evs[64];
	while (live > 0) {
		int m = epoll_wait(ep, evs, 64, 1000);
		for (int j = 0; j < m; j++) {
			conn *k = evs[j].data.ptr;
			int rc;
			if (k->out_off < k->out_len) { /* rare: a partial send */
				if ((rc = pump_out(k)) < 0)
					goto drop;
				if (rc == 0)
					continue;
				watch(ep, k, false);
			}
			if ((rc = pump_in(s, k)) == 0)
				continue;
			if (rc > 0)
				atomic_fetch_add(&s->ok, rc);
			else
				atomic_fetch_add(&s->bad, 1);
			if (rc < 0 || !next_request(s, k))
				goto drop;
			if ((rc = pump_out(k)) < 0) {
				atomic_fetch_add(&s->bad, 1);
				goto drop;
			}
			if (rc == 0)
				watch(ep, k, true);
			continue;
		drop:
			epoll_ctl(ep, EPOLL_CTL_DEL, k->fd, NULL);
			close(k->fd);
			k->fd = -1;
			live--;
		}
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	atomic_fetch_add(&s->client_cpu_ns, (long long)(c1.tv_sec - c0.tv_sec) * 1000000000LL +
	                                        (c1.tv_nsec - c0.tv_nsec));
	for (int i = 0; i < n; i++)
		free(ks[i].in);
	free(ks);
	close(ep);
	return NULL;
}

/* The endpoint's group-commit counters (GET /metrics): false when they
 * cannot be read. */
static bool commit_counts(const char *url, long long *batches, long long *ops)
{
	char *metrics = NULL;
	size_t ml = 0;
	long hs = 0;
	ota_error e;
	ota_error_clear(&e);
	bool ok = false;
	if (ota_attest_client_get(url, "/metrics", &metrics, &ml, &hs, &e) == OTA_OK) {
		const char *mb = strstr(metrics, "\nota_attestd_commit_batches_total ");
		const char *mo = strstr(metrics, "\nota_attestd_commit_ops_total ");
		if (mb != NULL && mo != NULL) {
			*batches = atoll(mb + 34);
			*ops = atoll(mo + 30);
			ok = true;
		}
	}
	free(metrics);
	return ok;
}

/* The machine's CPU time so far by kind (/proc/stat, first line, in
 * seconds): where the 2 cores went during a phase besides this process. */
enum { M_BUSY, M_IDLE, M_IOWAIT, M_IRQ, M_STEAL, M_N };
static void machine_cpu(double v[M_N])
{
	unsigned long long f[10] = {0};
	FILE *fp = fopen("/proc/stat", "r");
	int got = fp != NULL ? fscanf(fp, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0],
	                               &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9])
	                     : 0;
	if (fp != NULL)
		fclose(fp);
	double hz = (double)sysconf(_SC_CLK_TCK);
	if (got < 8 || hz <= 0) {
		memset(v, 0, M_N * sizeof *v);
		return;
	}
	/* user nice system idle iowait irq softirq steal (guest is in user) */
	v[M_BUSY] = (double)(f[0] + f[1] + f[2]) / hz;
	v[M_IDLE] = (double)f[3] / hz;
	v[M_IOWAIT] = (double)f[4] / hz;
	v[M_IRQ] = (double)(f[5] + f[6]) / hz;
	v[M_STEAL] = (double)f[7] / hz;
}

/* Runs LOAD_THREADS clients against s for seconds (connections opened
 * before the clock starts); the process CPU time (endpoint and clients) and
 * the wall time of the run. */
static void run_phase(shared *s, double seconds, double *cpu, double *dt, double split[T_N],
                      double mach[M_N])
{
	s->deadline = now_s() + 3600;
	pthread_barrier_init(&s->ready, NULL, LOAD_THREADS + 1);
	pthread_barrier_init(&s->go, NULL, LOAD_THREADS + 1);
	pthread_t th[LOAD_THREADS];
	for (int i = 0; i < LOAD_THREADS; i++)
		pthread_create(&th[i], NULL, client, s);
	pthread_barrier_wait(&s->ready); /* every connection open */
	struct timespec settle = {0, 200 * 1000 * 1000};
	nanosleep(&settle, NULL); /* and accepted by the endpoint */
	struct rusage ru0, ru1;
	double th0[T_N], th1[T_N], m0[M_N], m1[M_N];
	thread_cpu(th0);
	machine_cpu(m0);
	getrusage(RUSAGE_SELF, &ru0);
	double t0 = now_s();
	s->deadline = t0 + seconds;
	pthread_barrier_wait(&s->go);
	for (int i = 0; i < LOAD_THREADS; i++)
		pthread_join(th[i], NULL);
	*dt = now_s() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	machine_cpu(m1);
	thread_cpu(th1);
	for (int i = 0; i < M_N; i++)
		mach[i] = m1[i] - m0[i];
	for (int i = 0; i < T_N; i++)
		split[i] = th1[i] - th0[i];
	/* the load threads have exited by now: their own account */
	split[T_CLIENTS] = (double)atomic_load(&s->client_cpu_ns) / 1e9;
	*cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
	       (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
	       (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
	       (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
	pthread_barrier_destroy(&s->ready);
	pthread_barrier_destroy(&s->go);
}

/* Challenges for n attestations, asked of one endpoint by ISSUE_THREADS
 * libcurl clients (before the clock). */
#define ISSUE_THREADS 16
typedef struct issuing {
	const char *url;
	const ota_nonce_binding *b;
	att *atts;
	int n;
	atomic_int next;
	atomic_int failed;
} issuing;

/* the 32-byte nonce of a challenge answer (base64url, no padding) */
static bool answer_nonce(const char *text, uint8_t out[32])
{
	json_t *j = json_loads(text, 0, NULL);
	const char *n = json_string_value(json_object_get(j, "nonce"));
	uint8_t *raw = NULL;
	size_t rl = 0;
	bool ok = n != NULL && ota_base64_decode(n, strlen(n), &raw, &rl) == OTA_OK && rl == 32;
	if (ok)
		memcpy(out, raw, 32);
	free(raw);
	json_decref(j);
	return ok;
}

static void *issue_main(void *arg)
{
	issuing *c = arg;
	for (int k; (k = atomic_fetch_add(&c->next, 1)) < c->n;) {
		char *out = NULL;
		ota_error e;
		ota_error_clear(&e);
		bool ok = ota_attest_client_challenge(c->url, c->b, 32, 600, &out, &e) == OTA_OK &&
		          answer_nonce(out, c->atts[k].nonce);
		free(out);
		if (!ok) {
			atomic_fetch_add(&c->failed, 1);
			return NULL;
		}
	}
	return NULL;
}

/* a's request: POST /v1/attestations with its COSE bytes as the body, head
 * and body in one buffer (sent with one send); the COSE copy is freed. */
static void render_post(att *a, uint16_t port)
{
	char head[160];
	int h = snprintf(head, sizeof head,
	                 "POST /v1/attestations HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
	                 "Content-Type: application/cose\r\nContent-Length: %zu\r\n\r\n",
	                 (unsigned)port, a->msg_len);
	a->req = malloc((size_t)h + a->msg_len);
	if (a->req == NULL)
		abort();
	memcpy(a->req, head, (size_t)h);
	memcpy(a->req + h, a->msg, a->msg_len);
	a->len = (size_t)h + a->msg_len;
	free(a->msg);
	a->msg = NULL;
}

/* The requests of n attestations in batches of k (n a multiple of k): each
 * POST /v1/attestations with k COSE messages one after the other
 * (application/cbor-seq) as its body, rendered into out[0..n/k); the
 * attestations keep their COSE bytes. */
static void render_batches(const att *a, int n, int k, uint16_t port, att *out)
{
	for (int j = 0; j < n / k; j++) {
		size_t body = 0;
		for (int i = 0; i < k; i++)
			body += a[j * k + i].msg_len;
		char head[160];
		int h = snprintf(head, sizeof head,
		                 "POST /v1/attestations HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n"
		                 "Content-Type: application/cbor-seq\r\nContent-Length: %zu\r\n\r\n",
		                 (unsigned)port, body);
		char *req = malloc((size_t)h + body);
		if (req == NULL)
			abort();
		memcpy(req, head, (size_t)h);
		size_t off = (size_t)h;
		for (int i = 0; i < k; i++) {
			memcpy(req + off, a[j * k + i].msg, a[j * k + i].msg_len);
			off += a[j * k + i].msg_len;
		}
		out[j].req = req;
		out[j].len = off;
	}
}

static int die(const char *what, const ota_error *e)
{
	fprintf(stderr, "bench_attestd: %s: %s %s\n", what, e != NULL ? ota_err_name(e->code) : "",
	        e != NULL ? e->what : "");
	return 3;
}

/* One round's endpoint, started and given its challenges before the first
 * clock (the header says why each round has its own). */
typedef struct endpoint {
	ota_attestd *srv;
	uint16_t port;
	char url[64];
	char db_path[512];
	att *atts; /* its slice of the attestations */
	int n;
} endpoint;

/* What each round measured: its rate, baseline (2x raw), ratio, CPU per
 * accepted attestation (all, and by thread) and operations per group
 * commit. */
enum {
	R_RATE, R_BASE, R_RATIO, R_CPU, R_LOOPS, R_COMMIT, R_CLIENTS, R_OTHER, R_CKPT, R_OPC,
	R_M_OURS, R_M_OTHERS, R_M_IRQ, R_M_IDLE, R_M_IOWAIT, R_RAW2, R_RATIO2, R_RAWMSG,
	R_RATIO_MSG, R_N
};

int main(int argc, char **argv)
{
	long rounds = ROUNDS;
	double secs = ROUND_SECONDS;
	char *end = NULL;
	if (argc > 1) {
		rounds = strtol(argv[1], &end, 10);
		if (end == argv[1] || *end != '\0')
			rounds = 0;
	}
	if (argc > 2) {
		secs = strtod(argv[2], &end);
		if (end == argv[2] || *end != '\0')
			secs = 0;
	}
	if (argc > 3 || rounds < 1 || rounds > MAX_ROUNDS ||
	    !(secs >= 0.1 && secs <= MAX_ROUND_SECONDS)) {
		fprintf(stderr, "usage: bench_attestd [ROUNDS [ROUND_SECONDS]] (1..%d rounds of 0.1..%.1f s; "
		                "defaults %d, %.1f)\n",
		        MAX_ROUNDS, MAX_ROUND_SECONDS, ROUNDS, ROUND_SECONDS);
		return 2;
	}
	const char *lanes = getenv("BENCH_ATTESTD_LANES");
	if (lanes == NULL || lanes[0] == '\0')
		lanes = "ordered";
	if (strcmp(lanes, "ordered") != 0 && strcmp(lanes, "hashed") != 0) {
		fprintf(stderr, "bench_attestd: BENCH_ATTESTD_LANES is ordered (default) or hashed\n");
		return 2;
	}
	const bool hashed_lanes = strcmp(lanes, "hashed") == 0;
	const char *cs = getenv("BENCH_ATTESTD_CONNS");
	if (cs != NULL && cs[0] != '\0') {
		long c = strtol(cs, &end, 10);
		if (*end != '\0' || c < LOAD_THREADS || c > 8192 || c % LOAD_THREADS != 0) {
			fprintf(stderr, "bench_attestd: BENCH_ATTESTD_CONNS is %d..8192, a multiple of %d\n",
			        LOAD_THREADS, LOAD_THREADS);
			return 2;
		}
		conns = (int)c;
	}
	int batch = 1;
	const char *bs = getenv("BENCH_ATTESTD_BATCH");
	if (bs != NULL && bs[0] != '\0') {
		long v = strtol(bs, &end, 10);
		if (*end != '\0' || v < 1 || v > (long)OTA_MAX_ATTESTATION_BATCH) {
			fprintf(stderr, "bench_attestd: BENCH_ATTESTD_BATCH is 1..%u\n",
			        OTA_MAX_ATTESTATION_BATCH);
			return 2;
		}
		batch = (int)v;
	}
	/* batches: 3,072 attestations in flight by default (the endpoint holds
	 * at most OTA_MAX_BATCH_ITEMS_IN_FLIGHT items of batches at once; with
	 * 2,048 a group commit's fsync left the cores idle 10 % of the time) */
	if (batch > 1 && (cs == NULL || cs[0] == '\0')) {
		conns = 3072 / batch / LOAD_THREADS * LOAD_THREADS;
		if (conns < LOAD_THREADS)
			conns = LOAD_THREADS;
	}
	/* whole batches per round */
	const int per_round = ((int)(secs * ATT_PER_SECOND + 0.5) + batch - 1) / batch * batch;
	const int n_att = per_round * (int)rounds;

	char tmpl[] = "/var/tmp/ota-bench-attestd-XXXXXX";
	char *dir = mkdtemp(tmpl);
	if (dir == NULL)
		return 3;

	ota_key *rootk = NULL, *issuer = NULL, *verifier = NULL;
	if (ota_key_generate(OTA_ALG_ES256, &rootk) != OTA_OK ||
	    ota_key_generate(OTA_ALG_ES256, &issuer) != OTA_OK ||
	    ota_key_generate(OTA_ALG_ES256, &verifier) != OTA_OK)
		return die("keys", NULL);
	int64_t now = (int64_t)time(NULL);
	ota_error e;
	ota_error_clear(&e);
	ota_trust_draft *d = NULL;
	ota_trust_root *root = NULL;
	const ota_key *rk[1] = {rootk};
	const char *t1[1] = {"oci_remote"}, *t2[1] = {"*"};
	if (ota_trust_draft_new("bench.test", rk, 1, 1, now - 60, now + 86400, &d, &e) != OTA_OK ||
	    ota_trust_draft_add_principal(d, "issuer:bench", OTA_TRUST_ROLE_ISSUER, NULL, 0, NULL, 0, t1, 1,
	                                  &e) != OTA_OK ||
	    ota_trust_draft_add_key(d, "issuer:bench", issuer, OTA_ALG_NONE, now - 60, 0, &e) != OTA_OK ||
	    ota_trust_draft_add_principal(d, "verifier:bench", OTA_TRUST_ROLE_VERIFIER, NULL, 0, NULL, 0,
	                                  t2, 1, &e) != OTA_OK ||
	    ota_trust_draft_add_key(d, "verifier:bench", verifier, OTA_ALG_NONE, now - 60, 0, &e) != OTA_OK ||
	    ota_trust_draft_finish(d, &root, &e) != OTA_OK ||
	    ota_trust_root_sign(root, rootk, NULL, &e) != OTA_OK)
		return die("trust root", &e);
	ota_trust_draft_free(d);
	char root_path[512], key_path[512];
	snprintf(root_path, sizeof root_path, "%s/root.json", dir);
	snprintf(key_path, sizeof key_path, "%s/verifier.pem", dir);
	char *json = NULL, *pem = NULL;
	size_t jl = 0, pl = 0;
	if (ota_trust_root_serialize(root, &json, &jl, &e) != OTA_OK ||
	    ota_file_write_atomic(root_path, ota_bytes_make(json, jl), 0600, &e) != OTA_OK ||
	    ota_key_private_pem(verifier, &pem, &pl) != OTA_OK ||
	    ota_file_write_atomic(key_path, ota_bytes_make(pem, pl), 0600, &e) != OTA_OK)
		return die("files", &e);
	free(json);
	ota_wipe(pem, pl);
	free(pem);

	/* one endpoint per round, each with its own store file: its challenges
	 * issued by it (POST /v1/challenges, its group committer and its store
	 * handle, as providers get them), and the attestations answering them
	 * signed, all before the first clock: the timed part is admission only */
	att *atts = calloc((size_t)n_att, sizeof *atts);
	endpoint *ep = calloc((size_t)rounds, sizeof *ep);
	if (atts == NULL || ep == NULL)
		return 3;
	const ota_nonce_binding b = {"txn-bench", "issuer:bench", "oci_remote"};
	for (long r = 0; r < rounds; r++) {
		endpoint *p = &ep[r];
		snprintf(p->db_path, sizeof p->db_path, "%s/attestd-%ld.db", dir, r);
		ota_attestd_opts o;
		ota_attestd_opts_init(&o);
		o.port = 0;
		o.db_path = p->db_path;
		o.trust_root_path = root_path;
		o.verifier_key_path = key_path;
		o.threads = 0; /* one event loop per core */
		o.max_batch = 1024;
		o.max_connections = (unsigned)conns + 16;
		o.max_connections_per_address = (unsigned)conns + 16;
		o.challenge_ttl = 600; /* the most a client asks for: the rounds' challenges live 600 s */
		if (ota_attestd_start(&o, &p->srv, &e) != OTA_OK)
			return die("start", &e);
		p->port = ota_attestd_port(p->srv);
		snprintf(p->url, sizeof p->url, "http://127.0.0.1:%u", (unsigned)p->port);
		p->atts = atts + (size_t)r * (size_t)per_round;
		p->n = per_round;
		issuing is = {.url = p->url, .b = &b, .atts = p->atts, .n = p->n};
		pthread_t ith[ISSUE_THREADS];
		for (int i = 0; i < ISSUE_THREADS; i++)
			if (pthread_create(&ith[i], NULL, issue_main, &is) != 0)
				return die("issue thread", NULL);
		for (int i = 0; i < ISSUE_THREADS; i++)
			pthread_join(ith[i], NULL);
		if (atomic_load(&is.failed) != 0)
			return die("issue through the endpoint", NULL);
	}
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	now = (int64_t)time(NULL);
	for (int k = 0; k < n_att; k++) {
		ota_attestation a;
		memset(&a, 0, sizeof a);
		snprintf(a.iss, sizeof a.iss, "issuer:bench");
		a.iat = now;
		a.exp = now + 600;
		memcpy(a.nonce, atts[k].nonce, sizeof atts[k].nonce);
		a.nonce_len = sizeof atts[k].nonce;
		snprintf(a.kind, sizeof a.kind, "initial_application");
		snprintf(a.txn, sizeof a.txn, "txn-bench");
		snprintf(a.trust_root, sizeof a.trust_root, "%s", ota_trust_root_identity(root));
		snprintf(a.provider, sizeof a.provider, "oci_remote");
		if (hashed_lanes)
			snprintf(a.boundary, sizeof a.boundary, "boundary-%08x",
			         (unsigned)((uint32_t)k * 2654435761u)); /* a bijection of k */
		else
			snprintf(a.boundary, sizeof a.boundary, "boundary-%d", k);
		uint8_t *p = NULL;
		size_t plen = 0;
		if (ota_attestation_encode(&a, &p, &plen) != OTA_OK ||
		    ota_cose_sign1_sign(issuer, ota_bytes_make(p, plen), &so, &atts[k].msg,
		                        &atts[k].msg_len, &e) != OTA_OK)
			return die("sign", &e);
		free(p);
	}
	att *breqs = NULL; /* with batches: the rounds' requests */
	if (batch == 1) {
		for (long r = 0; r < rounds; r++)
			for (int i = 0; i < ep[r].n; i++)
				render_post(&ep[r].atts[i], ep[r].port);
	} else {
		if ((breqs = calloc((size_t)n_att / (size_t)batch, sizeof *breqs)) == NULL)
			return 3;
		for (long r = 0; r < rounds; r++)
			render_batches(ep[r].atts, ep[r].n, batch, ep[r].port,
			               breqs + (size_t)r * (size_t)(per_round / batch));
	}

	/* The rounds: each the raw verification rate, then its endpoint's
	 * phase right after it; an endpoint is stopped after its round (the
	 * last one serves the floor phase below). */
	double m[R_N][MAX_ROUNDS], raw[MAX_ROUNDS];
	long accepted = 0, failed = 0;
	double dt_all = 0;
	/* the issue wrote every endpoint's store: its dirty pages are written
	 * back now, not by the kernel's flusher during the first round (which
	 * cost it 20-25 % more CPU per attestation than the others) */
	sync();
	for (long r = 0; r < rounds; r++) {
		endpoint *p = &ep[r];
		raw[r] = raw_verify_rate(RAW_SECONDS, RAW_PRIMITIVE);
		m[R_RAWMSG][r] = raw_verify_rate(RAW_SECONDS, RAW_PER_MESSAGE);
		m[R_RAW2][r] = raw_verify_rate_2(RAW_SECONDS);
		long long batches0 = 0, ops0 = 0, batches1 = 0, ops1 = 0;
		if (!commit_counts(p->url, &batches0, &ops0)) /* the challenges' issue */
			return die("metrics", NULL);
		shared s;
		memset(&s, 0, sizeof s);
		s.port = p->port;
		s.batch = batch;
		if (batch == 1) {
			s.atts = p->atts;
			s.n = p->n;
		} else {
			s.atts = breqs + (size_t)r * (size_t)(per_round / batch);
			s.n = p->n / batch;
		}
		s.conns_per_thread = conns / LOAD_THREADS;
		double cpu = 0, dt = 0, split[T_N], mach[M_N];
		run_phase(&s, secs, &cpu, &dt, split, mach);
		if (!commit_counts(p->url, &batches1, &ops1))
			return die("metrics", NULL);
		long ok = atomic_load(&s.ok), bad = atomic_load(&s.bad);
		accepted += ok;
		failed += bad;
		dt_all += dt;
#define per_att(x) (ok > 0 ? (x) * 1e6 / (double)ok : 0.0)
		m[R_RATE][r] = (double)ok / dt;
		m[R_BASE][r] = 2 * raw[r];
		m[R_RATIO][r] = raw[r] > 0 ? m[R_RATE][r] / m[R_BASE][r] : 0.0;
		m[R_RATIO2][r] = m[R_RAW2][r] > 0 ? m[R_RATE][r] / m[R_RAW2][r] : 0.0;
		m[R_RATIO_MSG][r] = m[R_RAWMSG][r] > 0 ? m[R_RATE][r] / (2 * m[R_RAWMSG][r]) : 0.0;
		m[R_CPU][r] = per_att(cpu);
		m[R_LOOPS][r] = per_att(split[T_LOOPS]);
		m[R_COMMIT][r] = per_att(split[T_COMMIT]);
		m[R_CLIENTS][r] = per_att(split[T_CLIENTS]);
		m[R_OTHER][r] = per_att(split[T_OTHER]);
		m[R_CKPT][r] = per_att(split[T_CKPT]);
#undef per_att
		long long batches = batches1 - batches0, ops = ops1 - ops0; /* this round's */
		m[R_OPC][r] = batches > 0 ? (double)ops / (double)batches : 0.0;
		/* where the machine's CPU time went during the phase, in % of it */
		double all = mach[M_BUSY] + mach[M_IDLE] + mach[M_IOWAIT] + mach[M_IRQ] + mach[M_STEAL];
#define share(x) (all > 0 ? 100.0 * (x) / all : 0.0)
		m[R_M_OURS][r] = share(cpu);
		m[R_M_OTHERS][r] = share(mach[M_BUSY] > cpu ? mach[M_BUSY] - cpu : 0.0);
		m[R_M_IRQ][r] = share(mach[M_IRQ] + mach[M_STEAL]);
		m[R_M_IDLE][r] = share(mach[M_IDLE]);
		m[R_M_IOWAIT][r] = share(mach[M_IOWAIT]);
#undef share
		fprintf(stderr, "bench_attestd: round %ld/%ld: %.0f/s (%ld accepted, %ld failed in %.2f s), "
		                "baseline %.0f/s, ratio %.2f; per attestation %.1f us of CPU (event loops "
		                "%.1f, group commit %.1f, checkpoints %.1f, clients %.1f, other %.1f); %lld "
		                "group commits for "
		                "%lld operations; the machine's CPU: this process %.0f %%, other processes "
		                "%.0f %%, irq+softirq+steal %.0f %%, idle %.0f %%, I/O wait %.0f %%; raw "
		                "verification on two threads at once %.0f/s (%.2f x one thread; ratio "
		                "against it %.2f); per-message verification (EVP_DigestVerifyInit + "
		                "EVP_DigestVerify) %.0f/s on one thread (ratio against twice it %.2f)\n",
		        r + 1, rounds, m[R_RATE][r], ok, bad, dt, m[R_BASE][r], m[R_RATIO][r], m[R_CPU][r],
		        m[R_LOOPS][r], m[R_COMMIT][r], m[R_CKPT][r], m[R_CLIENTS][r], m[R_OTHER][r],
		        batches, ops,
		        m[R_M_OURS][r], m[R_M_OTHERS][r], m[R_M_IRQ][r], m[R_M_IDLE][r], m[R_M_IOWAIT][r],
		        m[R_RAW2][r], raw[r] > 0 ? m[R_RAW2][r] / raw[r] : 0.0, m[R_RATIO2][r],
		        m[R_RAWMSG][r], m[R_RATIO_MSG][r]);
		if (r + 1 < rounds) {
			ota_attestd_stop(p->srv);
			p->srv = NULL;
		}
	}
	/* The floor, once: the same clients and connections asking the last
	 * round's endpoint GET /healthz (no body, no verification, no store).
	 * Its CPU per answer plus one verification bounds what one attestation
	 * per request can cost. */
	shared h;
	memset(&h, 0, sizeof h);
	h.port = ep[rounds - 1].port;
	h.health = true;
	h.conns_per_thread = conns / LOAD_THREADS;
	double hcpu = 0, hdt = 0, hsplit[T_N], hmach[M_N];
	run_phase(&h, 1.5, &hcpu, &hdt, hsplit, hmach);
	ota_attestd_stop(ep[rounds - 1].srv);
	ep[rounds - 1].srv = NULL;

	double ratio_min = m[R_RATIO][0], ratio_max = m[R_RATIO][0];
	for (long r = 1; r < rounds; r++) {
		if (m[R_RATIO][r] < ratio_min)
			ratio_min = m[R_RATIO][r];
		if (m[R_RATIO][r] > ratio_max)
			ratio_max = m[R_RATIO][r];
	}
	double med[R_N];
	for (int k = 0; k < R_N; k++)
		med[k] = bench_median(m[k], (size_t)rounds);
	double verify = bench_median(raw, (size_t)rounds);
	double http_us = atomic_load(&h.ok) > 0 ? hcpu * 1e6 / (double)atomic_load(&h.ok) : 0.0;
	double verify_us = verify > 0 ? 1e6 / verify : 0.0;
	/* The endpoint's own ES256 verification of one of these attestations
	 * (COSE decode, hash, and the key's table of multiples once the key has
	 * verified 512 signatures, as the endpoint's has): thread CPU time. */
	double own_us = 0.0;
	{
		/* the COSE bytes are the tail of the rendered request */
		const att *first = &atts[0];
		ota_bytes cose0 = first->msg != NULL
		                      ? ota_bytes_make(first->msg, first->msg_len)
		                      : ota_bytes_make(first->req + first->len - first->msg_len,
		                                       first->msg_len);
		int warm = 0;
		for (int i = 0; i < 600; i++)
			warm += ota_cose_sign1_verify(cose0, issuer, NULL, NULL, NULL) == OTA_OK;
		if (warm != 600)
			return die("own verification", NULL);
		struct timespec a0, a1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a0);
		int ok = 0;
		for (int i = 0; i < 3000; i++)
			ok += ota_cose_sign1_verify(cose0, issuer, NULL, NULL, NULL) == OTA_OK;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a1);
		if (ok != 3000)
			return die("own verification", NULL);
		own_us = ((double)(a1.tv_sec - a0.tv_sec) * 1e9 + (double)(a1.tv_nsec - a0.tv_nsec)) /
		         3000.0 / 1e3;
	}
	if (med[R_CPU] > 0 && verify > 0) {
		double per = med[R_CPU] / 1e6;
		fprintf(stderr, "bench_attestd: with 2 whole cores at %.0f us each (median of the rounds): "
		                "%.0f/s (ratio %.2f)\n",
		        per * 1e6, 2.0 / per, 2.0 / per / (2 * verify));
		fprintf(stderr, "bench_attestd: floor: GET /healthz costs %.1f us of CPU per answer "
		                "(%ld answers, %ld failed); with the endpoint's own %.1f us ES256 "
		                "verification (raw OpenSSL: %.1f us) that bounds one attestation per "
		                "request at ratio %.2f\n",
		        http_us, (long)atomic_load(&h.ok), (long)atomic_load(&h.bad), own_us, verify_us,
		        verify_us / (http_us + own_us));
	}
	fprintf(stderr, "bench_attestd: %ld accepted, %ld failed in %.2f s over %ld rounds with %d "
	                "keep-alive connections on %d client threads; raw ECDSA P-256 verify %.0f/s on "
	                "one core (median, EVP_PKEY_verify of a digest as openssl speed); ratio %.2f "
	                "median, %.2f-%.2f\n",
	        accepted, failed, dt_all, rounds, conns, LOAD_THREADS, verify, med[R_RATIO], ratio_min,
	        ratio_max);
	printf("{\"bench\": \"attestd_accepted_es256%s\", \"batch\": %d, \"value\": %.0f, \"unit\": \"ops/s\", "
	       "\"baseline\": \"2x_openssl_ecdsa_p256_verify_1core\", \"baseline_value\": %.0f, "
	       "\"ratio\": %.2f, \"cpu_us_per_attestation\": %.1f, \"floor_http_us_per_request\": "
	       "%.1f, \"raw_verify_us\": %.1f, \"own_verify_us\": %.1f, "
	       "\"floor_ratio_one_per_request\": %.2f, "
	       "\"cpu_us_event_loops\": %.1f, \"cpu_us_group_commit\": %.1f, "
	       "\"cpu_us_checkpoints\": %.1f, "
	       "\"cpu_us_clients\": %.1f, \"ops_per_group_commit\": %.0f, "
	       "\"ratio_min\": %.2f, \"ratio_max\": %.2f, \"rounds\": %ld, \"lanes\": \"%s\", "
	       "\"connections\": %d, \"machine_pct_this_process\": %.0f, "
	       "\"machine_pct_other_processes\": %.0f, \"machine_pct_irq\": %.0f, "
	       "\"machine_pct_idle\": %.0f, \"machine_pct_iowait\": %.0f, "
	       "\"raw_verify_2_threads_per_s\": %.0f, \"ratio_vs_2_threads\": %.2f, "
	       "\"raw_verify_per_message_per_s\": %.0f, \"ratio_vs_per_message\": %.2f}\n",
	       batch > 1 ? "_batch" : "", batch, med[R_RATE], med[R_BASE], med[R_RATIO], med[R_CPU], http_us, verify_us, own_us,
	       http_us + own_us > 0 ? verify_us / (http_us + own_us) : 0.0, med[R_LOOPS],
	       med[R_COMMIT], med[R_CKPT], med[R_CLIENTS], med[R_OPC], ratio_min, ratio_max, rounds,
	       lanes, conns,
	       med[R_M_OURS], med[R_M_OTHERS], med[R_M_IRQ], med[R_M_IDLE], med[R_M_IOWAIT],
	       med[R_RAW2], med[R_RATIO2], med[R_RAWMSG], med[R_RATIO_MSG]);
	for (int i = 0; i < n_att; i++) {
		free(atts[i].msg);
		free(atts[i].req);
	}
	free(atts);
	if (breqs != NULL)
		for (int j = 0; j < n_att / batch; j++)
			free(breqs[j].req);
	free(breqs);
	free(ep);
	ota_trust_root_free(root);
	ota_key_free(rootk);
	ota_key_free(issuer);
	ota_key_free(verifier);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
	if (system(cmd) != 0)
		return 3;
	return failed == 0 && atomic_load(&h.bad) == 0 ? 0 : 1;
}
