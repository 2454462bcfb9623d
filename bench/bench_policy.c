/*
 * bench_policy: compile time of a contract with 1,000 tasks and 10,000
 * boundary paths, and 4x and 16x that size. "compile" = load + validate
 * (ota_contract_load, which also compiles every workflow lane) + compiling
 * the canonical and effective policy of the lane that covers every task.
 * Baseline, measured in the same run: libyaml's raw event parse of the same
 * bytes. Also prints the growth ratio 16x/1x against linear (16).
 *
 * Adversarial shapes, each at 1x, 4x and 16x, load + compile of one lane,
 * growth against linear (a ratio near 1 is linear; the shapes that were
 * quadratic or cubic before showed 16 to 256 here):
 *   policy_shape_paths_N: one boundary of N writable and N protected paths
 *     (N = 2,500 at 1x): the path-list checks (hash sets of ancestors);
 *   policy_shape_extends_N: a chain of N contexts (1,000 at 1x), N/2 tasks
 *     each naming one of them: extends lookups and the cycle check;
 *   policy_shape_workflows_N: N workflows (1,000 at 1x) over N tasks:
 *     workflow lookups at load (every workflow lane is compiled).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#include "ota/policy.h"

typedef struct {
	char *p;
	size_t n, cap;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sbuf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k >= 0 && (size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		b->cap = b->cap * 2 + 4096;
		b->p = realloc(b->p, b->cap);
		if (b->p == NULL)
			exit(3);
	}
}

static sbuf contract(unsigned ntasks)
{
	sbuf b = {malloc(4096), 0, 4096};
	put(&b, "version: 1\nproject: {name: bench}\nexecution:\n  preferred: container\n"
	        "  lifecycle: ephemeral\n  backends: {container: {image: debian:bookworm-slim, "
	        "platform: linux/amd64}}\ntasks:\n");
	for (unsigned i = 0; i < ntasks; i++) {
		put(&b, "  t%u:\n    command: {exe: make, args: [t%u]}\n    safe_for_agent: true\n", i, i);
		if (i % 10 != 0)
			put(&b, "    depends_on: [t%u]\n", i - 1);
		put(&b, "    runtime_boundary:\n      filesystem:\n        repo_root_mode: read_only\n"
		        "        writable_paths: [");
		for (unsigned k = 0; k < 5; k++)
			put(&b, "%sw/%u/%u", k ? ", " : "", i, k);
		put(&b, "]\n        protected_paths: [");
		for (unsigned k = 0; k < 5; k++)
			put(&b, "%sp/%u/%u", k ? ", " : "", i, k);
		put(&b, "]\n      network: {default: deny}\n");
	}
	put(&b, "  all:\n    safe_for_agent: true\n    aggregate:\n      tasks:\n");
	for (unsigned i = 0; i < ntasks; i++)
		put(&b, "        - t%u\n", i);
	put(&b, "workflows:\n  default: all\n  all: {run: {task: all}}\n");
	return b;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double raw_parse(const sbuf *b)
{
	double t0 = now_ms();
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		exit(3);
	yaml_parser_set_input_string(&p, (const unsigned char *)b->p, b->n);
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev))
			exit(3);
		int end = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
		if (end)
			break;
	}
	yaml_parser_delete(&p);
	return now_ms() - t0;
}

static sbuf shape_paths(unsigned n)
{
	sbuf b = {malloc(4096), 0, 4096};
	put(&b, "version: 1\nproject: {name: bench}\ntasks:\n  t:\n    run: make\n"
	        "    runtime_boundary:\n      filesystem:\n        repo_root_mode: read_only\n"
	        "        writable_paths: [");
	for (unsigned i = 0; i < n; i++)
		put(&b, "%sw/%u/x", i ? ", " : "", i);
	put(&b, "]\n        protected_paths: [");
	for (unsigned i = 0; i < n; i++)
		put(&b, "%sp/%u", i ? ", " : "", i);
	put(&b, "]\n");
	return b;
}

static sbuf shape_extends(unsigned n)
{
	sbuf b = {malloc(4096), 0, 4096};
	put(&b, "version: 1\nproject: {name: bench}\nexecution:\n  contexts:\n");
	for (unsigned i = 0; i + 1 < n; i++)
		put(&b, "    c%u: {extends: c%u}\n", i, i + 1);
	put(&b, "    c%u: {backend: container, lifecycle: ephemeral, container: {image: i, "
	        "platform: linux/amd64}}\ntasks:\n", n - 1);
	for (unsigned i = 0; i < n / 2; i++)
		put(&b, "  t%u: {run: make, context: c%u}\n", i, i);
	return b;
}

static sbuf shape_workflows(unsigned n)
{
	sbuf b = {malloc(4096), 0, 4096};
	put(&b, "version: 1\nproject: {name: bench}\ntasks:\n");
	for (unsigned i = 0; i < n; i++)
		put(&b, "  t%u: {run: make}\n", i);
	put(&b, "workflows:\n  default: w%u\n", n - 1);
	for (unsigned i = 0; i < n; i++)
		put(&b, "  w%u: {run: {task: t%u}}\n", i, i);
	return b;
}

/* load + compile of lane (its segment count in *nseg, may be NULL), in ms */
static double load_compile(const sbuf *b, const char *lane, size_t *nseg)
{
	ota_policy_options o;
	memset(&o, 0, sizeof o);
	ota_platform_host(&o.native_platform);
	double t0 = now_ms();
	ota_contract *c = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_policy *p = NULL;
	if (ota_contract_load(ota_bytes_make(b->p, b->n), "bench.yaml", &c, &e) != OTA_OK ||
	    ota_policy_compile(c, OTA_LANE_TASK, lane, &o, NULL, 0, &p, &e) != OTA_OK) {
		fprintf(stderr, "bench_policy: %s %s %s\n", ota_err_name(e.code), e.where, e.what);
		exit(3);
	}
	double t = now_ms() - t0;
	if (nseg != NULL)
		*nseg = ota_policy_segment_count(p);
	ota_policy_free(p);
	ota_contract_free(c);
	return t;
}

static void shape(const char *name, sbuf (*gen)(unsigned), unsigned base, const char *lane)
{
	const unsigned mult[3] = {1, 4, 16};
	double ms[3];
	for (int i = 0; i < 3; i++) {
		sbuf b = gen(base * mult[i]);
		double best = 1e18;
		for (int r = 0; r < 3; r++) {
			double t = load_compile(&b, lane, NULL);
			if (t < best)
				best = t;
		}
		ms[i] = best;
		printf("{\"bench\": \"policy_shape_%s_%u\", \"value\": %.2f, \"unit\": \"ms\", "
		       "\"baseline\": \"linear_from_%u\", \"baseline_value\": %.2f, \"ratio\": %.2f, "
		       "\"bytes\": %zu}\n",
		       name, base * mult[i], best, base, ms[0] * mult[i], best / (ms[0] * mult[i]), b.n);
		free(b.p);
	}
}

int main(void)
{
	const unsigned mult[3] = {1, 4, 16};
	double compile_ms[3], parse_ms[3];
	for (int i = 0; i < 3; i++) {
		unsigned n = 1000 * mult[i];
		sbuf b = contract(n);
		double best = 1e18, base = 1e18;
		size_t nseg = 0;
		int reps = mult[i] >= 16 ? 2 : 5;
		for (int r = 0; r < reps; r++) {
			double t = load_compile(&b, "all", &nseg);
			double u = raw_parse(&b);
			if (t < best)
				best = t;
			if (u < base)
				base = u;
		}
		if (nseg != n + 1) {
			fprintf(stderr, "bench_policy: expected %u segments, got %zu\n", n + 1, nseg);
			return 3;
		}
		compile_ms[i] = best;
		parse_ms[i] = base;
		printf("{\"bench\": \"policy_compile_%u_tasks_%u_paths\", \"value\": %.2f, \"unit\": \"ms\", "
		       "\"baseline\": \"libyaml_event_parse_same_document\", \"baseline_value\": %.2f, "
		       "\"ratio\": %.2f}\n",
		       n, n * 10, best, base, best / base);
		free(b.p);
	}
	for (int i = 1; i < 3; i++)
		printf("{\"bench\": \"policy_compile_growth_%ux\", \"value\": %.2f, \"unit\": \"ratio\", "
		       "\"baseline\": \"linear_growth\", \"baseline_value\": %u, \"ratio\": %.2f}\n",
		       mult[i], compile_ms[i] / compile_ms[0], mult[i],
		       compile_ms[i] / compile_ms[0] / (double)mult[i]);
	/* the same growth against the raw parse's own growth on this machine (cache effects) */
	printf("{\"bench\": \"policy_compile_growth_16x_vs_parse_growth\", \"value\": %.2f, \"unit\": \"ratio\", "
	       "\"baseline\": \"libyaml_event_parse_growth_16x\", \"baseline_value\": %.2f, \"ratio\": %.2f}\n",
	       compile_ms[2] / compile_ms[0], parse_ms[2] / parse_ms[0],
	       (compile_ms[2] / compile_ms[0]) / (parse_ms[2] / parse_ms[0]));
	shape("paths", shape_paths, 2500, "t");
	shape("extends", shape_extends, 1000, "t0");
	shape("workflows", shape_workflows, 1000, "t0");
	return 0;
}
