/*
 * bench_archive: ota-verify archive time for archives of about 10, 100,
 * 1,000 and 10,000 attestations, against the raw verification of the same
 * signatures in the same run.
 *
 * Each archive is generated in memory the way the runner writes one: a
 * contract whose task chain (t1 <- t2 <- ... <- tS, depends_on) compiles to S
 * segments, admitted by policy/ for oci_local; per segment a platform check,
 * rendered and applied policy, initial and terminal application records, a
 * transition between segments; every record signed (ES256, kid) by a runner
 * principal of a trust root over a payload bound to a single-use challenge;
 * the receipt built in the runner's shape and written by ota_archive_build
 * (3S attestations: 9, 99, 999, 9,999). It is verified first (must pass).
 *
 * Figures (thread CPU time, median of ROUNDS interleaved rounds):
 *   archive_verify_N: ota_archive_verify of the whole archive, ms.
 *   baseline raw_cose_verify_N: ota_cose_sign1_verify of the same N + 1
 *   messages (attestations and receipt) with a fresh public copy of the
 *   runner key each round (as ota_archive_verify loads its keys from the
 *   trust root: both sides pay a P-256 key's table of multiples, built at
 *   its 512th verification, common/ec_fast.c), ms.
 *   ratio = ours / raw; "time beyond the signatures" = ratio - 1.
 *   floor_json_parse_ms: json_loadb + json_decref of the archive bytes alone
 *   (the project's JSON library reading the document, nothing checked);
 *   floor_json_parse_vs_signatures = that / raw: the part of "beyond the
 *   signatures" no verifier of this JSON format built on jansson can avoid.
 *   floor_sha256_ms: SHA-256 over every byte once.
 *   archive_verify_peak_rss_N: the peak RSS (ru_maxrss) of the real
 *   `ota-verify archive` (the one built beside this bench) verifying the
 *   archive written to a file, per archive byte; baseline
 *   json_loadb_peak_rss_N: the peak RSS of a process that reads the same
 *   file and parses it with jansson (json_loadb, then json_decref), nothing
 *   checked, per archive byte: the text and its DOM, the floor of a verifier
 *   holding the document. Median of min(ROUNDS, 3) runs each, fresh processes.
 *   archive_verify_process_N: the wall time of the same real `ota-verify
 *   archive` process (median of the same runs), against the raw signature
 *   time above; with its CPU time (user + system) and minor page faults (the
 *   heap hint of cli/heap_hint.c: huge pages for the parse).
 *   OTA_BENCH_VERIFY=PATH measures another ota-verify (an older build, to
 *   compare in one run).
 *   The process runs without glibc fastbins (mallopt M_MXFAST 0), as
 *   ota-verify archive does.
 *   The small archives are dominated by the process itself (about 7 MB of
 *   libraries and their data): peak_rss_kb gives the figures as measured.
 *
 *   bench_archive [ROUNDS] [--max N] [--external] [--write-seed PATH]   default 3 rounds
 *   (vectors only: --widen, --canary-failed, --canary-missing, --resources
 *   KIND, --verifier-target T: the verifier principal scoped to provider
 *   target T instead of every one)
 *   --external: the attestations are signed by an issuer principal and
 *   accepted by a verifier principal as ota-attestd answers them: batch-form
 *   acceptances, one signature per group commit of up to 64 (BATCH); the
 *   baseline adds one verification per batch signature (at the per-signature
 *   cost measured on the N + 1 messages).
 *   --write-seed PATH writes the smallest archive to PATH (larger ones to
 *   PATH.N), the pinned root to PATH.root.json and the runner key to
 *   PATH.runner.FIXTURE.pem (vectors/archive/generate.sh uses it).
 */
#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/archive.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/nonce.h"
#include "ota/policy.h"
#include "ota/trust.h"

#define T0 1800000000LL

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void die(const char *what, ota_err rc, const ota_error *e)
{
	fprintf(stderr, "bench_archive: %s: %s %s %s\n", what, ota_err_name(rc),
	        e != NULL ? e->where : "", e != NULL ? e->what : "");
	exit(1);
}

static json_t *idj(const json_t *v)
{
	char id[OTA_ID_LEN + 1];
	if (ota_json_identity(v, id, NULL) != OTA_OK)
		die("identity", OTA_ERR_INTERNAL, NULL);
	return json_string(id);
}

typedef struct gen {
	const ota_key *key;
	const ota_key *verifier; /* external: acceptances signed by verifier-1 */
	const char *iss;         /* "ci-runner", or the external issuer */
	ota_bytes *accs;
	size_t naccs;
	ota_admission *adms; /* external: what the endpoint admitted, in order */
	size_t nadms;
	const char *root_id;
	const char *txn;
	char adapter[OTA_ID_LEN + 1];
	const char *canon, *eff, *segment;
	json_t *atts;
	json_t *msgs; /* raw COSE bytes (as base64) for the baseline */
	int64_t t;
} gen;

/* Signs record as kind on boundary with prior; appends the runner's entry. */
static void sign_rec(gen *g, const char *kind, const json_t *record, const char *boundary,
                     const char *prior, char out[OTA_ID_LEN + 1])
{
	char rid[OTA_ID_LEN + 1];
	ota_err rc = ota_json_identity(record, rid, NULL);
	if (rc != OTA_OK)
		die("record identity", rc, NULL);
	ota_attestation a;
	memset(&a, 0, sizeof a);
	snprintf(a.iss, sizeof a.iss, "%s", g->iss);
	a.iat = g->t;
	a.exp = g->t + 300;
	a.nonce_len = 32;
	for (size_t i = 0; i < 32; i++)
		a.nonce[i] = (uint8_t)rand();
	snprintf(a.kind, sizeof a.kind, "%s", kind);
	snprintf(a.txn, sizeof a.txn, "%s", g->txn);
	snprintf(a.trust_root, sizeof a.trust_root, "%s", g->root_id);
	snprintf(a.provider, sizeof a.provider, "oci_local");
	snprintf(a.adapter, sizeof a.adapter, "%s", g->adapter);
	snprintf(a.platform_os, sizeof a.platform_os, "linux");
	snprintf(a.platform_arch, sizeof a.platform_arch, "amd64");
	if (g->segment != NULL)
		snprintf(a.segment, sizeof a.segment, "%s", g->segment);
	snprintf(a.policy_canonical, sizeof a.policy_canonical, "%s", g->canon);
	snprintf(a.policy_effective, sizeof a.policy_effective, "%s", g->eff);
	snprintf(a.boundary, sizeof a.boundary, "%s", boundary);
	if (prior != NULL && prior[0] != '\0') {
		snprintf(a.prior, sizeof a.prior, "%s", prior);
		a.has_prior = true;
	}
	uint8_t body[2 + OTA_ID_LEN];
	body[0] = 0x78;
	body[1] = OTA_ID_LEN;
	memcpy(body + 2, rid, OTA_ID_LEN);
	a.body = ota_bytes_make(body, sizeof body);
	uint8_t *pl = NULL, *msg = NULL;
	size_t pn = 0, mn = 0;
	if ((rc = ota_attestation_encode(&a, &pl, &pn)) != OTA_OK)
		die("encode", rc, NULL);
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	if ((rc = ota_cose_sign1_sign(g->key, ota_bytes_make(pl, pn), &so, &msg, &mn, NULL)) != OTA_OK)
		die("sign", rc, NULL);
	free(pl);
	if (ota_sha256_id(ota_bytes_make(msg, mn), out) != OTA_OK)
		die("id", OTA_ERR_INTERNAL, NULL);
	char *cb = NULL, *nb = NULL;
	if (ota_base64_encode(ota_bytes_make(msg, mn), &cb) != OTA_OK ||
	    ota_base64_encode(ota_bytes_make(a.nonce, a.nonce_len), &nb) != OTA_OK)
		die("base64", OTA_ERR_NOMEM, NULL);
	free(msg);
	if (g->verifier != NULL) {
		/* the endpoint's acceptance of this attestation (ota-attestd's record) */
		ota_admission ad;
		memset(&ad, 0, sizeof ad);
		ad.claims = a;
		memcpy(ad.record_id, out, OTA_ID_LEN + 1);
		ota_challenge ch;
		memset(&ch, 0, sizeof ch);
		memcpy(ch.nonce, a.nonce, a.nonce_len);
		ch.nonce_len = a.nonce_len;
		ch.epoch = 1;
		ch.issued_at = g->t;
		ch.expires_at = g->t + 300;
		snprintf(ch.txn, sizeof ch.txn, "%s", g->txn);
		snprintf(ch.issuer, sizeof ch.issuer, "%s", g->iss);
		snprintf(ch.scope, sizeof ch.scope, "oci_local");
		if (ota_challenge_identity(&ch, ad.challenge_id) != OTA_OK)
			die("challenge id", OTA_ERR_INTERNAL, NULL);
		snprintf(ad.trust_root_id, sizeof ad.trust_root_id, "%s", g->root_id);
		snprintf(ad.issuer_principal, sizeof ad.issuer_principal, "%s", g->iss);
		ad.judged_at = g->t;
		ad.claims.body = ota_bytes_make(NULL, 0); /* not bound by acceptances */
		g->adms[g->nadms++] = ad;
	}
	json_array_append_new(g->atts, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?, s:{s:s, s:s, s:s, s:I, s:I, s:I, s:I}}",
	                                         "kind", kind, "identity", out, "record_identity", rid,
	                                         "boundary", boundary, "cose_sign1", cb, "prior",
	                                         a.has_prior ? a.prior : NULL, "challenge", "nonce", nb,
	                                         "issuer", g->iss, "scope", "oci_local",
	                                         "epoch", (json_int_t)1, "issued_at", (json_int_t)g->t,
	                                         "expires_at", (json_int_t)(g->t + 300), "consumed_at",
	                                         (json_int_t)g->t));
	json_array_append_new(g->msgs, json_string(cb));
	free(cb);
	free(nb);
}

typedef struct built {
	char *archive;
	size_t len;
	json_t *msgs;
	size_t natt;
	size_t batches; /* external: acceptance signatures (one per batch) */
} built;

#define BATCH 64 /* admissions per group commit (external acceptances) */

/* --widen (vectors only): the provider renders and applies a writable repo
 * root although the effective policy says read_only: a consistent,
 * correctly signed archive that must be refused (archive_control_mismatch). */
static bool g_widen;
/* --canary-failed, --canary-missing (vectors only): the applied record says
 * ok, but its canary result of the read-only repository root says the write
 * succeeded (archive_canary_failed), or is not there (archive_canary_missing);
 * both consistent and correctly signed. */
static bool g_canary_failed, g_canary_missing;

/* --resources MODE (vectors only): the applied record's resources (the limits
 * read back from the container's cgroups) are not the rendered config's
 * linux.resources (archive_resources_mismatch): "different" claims pids 8192
 * where 4096 was rendered, "unrendered" claims a 64 MiB memory limit that was
 * not rendered, "omitted" renders one and claims none. Without it, runc's
 * default as oci_local renders and reads it back: pids 4096, no memory limit. */
static const char *g_resources;

/* The canary results as oci_local records them (provider-oci/run.c
 * gate_args, provider-oci/canary.c): one object per check, in the order
 * the runner asks for them, for a read-only root with one writable
 * directory carve-out, no protected path that exists, network deny. */
static json_t *canaries_of(const char *wdest)
{
	static const char *const sys[] = {"mount", "unshare_user", "unshare_mnt", "ptrace",
	                                  "io_uring_setup", "af_vsock", "raw_socket",
	                                  "packet_socket", "chmod_setid", "fchmodat2_setid",
	                                  "open_setid", "mknod_setid"};
	static const char *const net[] = {"tcp", "192.0.2.1:80", "tcp", "[2001:db8::1]:80",
	                                  "udp", "192.0.2.1:53", "udp", "[2001:db8::1]:53",
	                                  "tcp", "10.255.255.53:53", "udp", "10.255.255.53:53"};
	static const char *const absent[] = {"/var/run/docker.sock", "/run/docker.sock",
	                                     "/run/containerd/containerd.sock",
	                                     "/run/podman/podman.sock", "/run/runc", "/run/crun",
	                                     "/run/ota", "/var/run/crio/crio.sock",
	                                     "/run/ota/bench"};
	json_t *c = json_array();
	json_array_append_new(c, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:s}",
	                                   "cap_amb", "0000000000000000", "cap_bnd",
	                                   "0000000000000000", "cap_eff", "0000000000000000",
	                                   "cap_prm", "0000000000000000", "check", "status",
	                                   "no_new_privs", "1", "ok", 1, "seccomp", "2", "target",
	                                   "self"));
	json_array_append_new(c, json_pack("{s:s, s:s, s:b, s:s}", "check", "loopback", "errno", "",
	                                   "ok", 1, "target", "127.0.0.1"));
	for (size_t i = 0; i < sizeof sys / sizeof *sys; i++)
		json_array_append_new(c, json_pack("{s:s, s:s, s:b, s:s}", "check", "syscall", "errno",
		                                   "EPERM", "ok", 1, "target", sys[i]));
	if (!g_canary_missing)
		json_array_append_new(c, json_pack("{s:s, s:s, s:b, s:s}", "check", "deny", "errno",
		                                   g_canary_failed ? "" : "EROFS", "ok",
		                                   !g_canary_failed, "target", "/workspace"));
	json_array_append_new(c, json_pack("{s:s, s:s, s:b, s:s}", "check", "allow", "errno", "",
	                                   "ok", 1, "target", wdest));
	for (size_t i = 0; i < sizeof net / sizeof *net; i += 2)
		json_array_append_new(c, json_pack("{s:s, s:s, s:b, s:s}", "check", net[i], "errno",
		                                   "ENETUNREACH", "ok", 1, "target", net[i + 1]));
	for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
		json_array_append_new(c, json_pack("{s:s, s:s, s:b, s:s}", "check", "absent", "errno",
		                                   "ENOENT", "ok", 1, "target", absent[i]));
	return c;
}

/* A new key object holding k's public half (its own verification count). */
static ota_key *fresh_public(const ota_key *k)
{
	char *pem = NULL;
	ota_key *out = NULL;
	if (ota_key_public_pem(k, &pem) != OTA_OK ||
	    ota_key_load_pem(ota_bytes_make((const uint8_t *)pem, strlen(pem)), &out, NULL) != OTA_OK)
		die("fresh key", OTA_ERR_INTERNAL, NULL);
	free(pem);
	return out;
}

static built generate(size_t segs, const ota_key *runner, const ota_key *issuer,
                      const ota_key *verifier, const char *root_bytes, size_t root_len,
                      const char *root_id)
{
	size_t b_batches = 0;
	/* the contract: a depends_on chain of segs tasks */
	size_t cap = 512 + segs * 320;
	char *y = malloc(cap);
	size_t off = (size_t)snprintf(y, cap,
	                              "version: 1\nproject:\n  name: bench\nexecution:\n"
	                              "  supported: [container]\n  default_context: box\n"
	                              "  lifecycle: ephemeral\n  backends:\n    container:\n"
	                              "      image: bb:1\n      platform: linux/amd64\n"
	                              "      engines: [docker]\n  contexts:\n    box:\n"
	                              "      backend: container\n      lifecycle: ephemeral\ntasks:\n");
	for (size_t i = 1; i <= segs; i++) {
		off += (size_t)snprintf(y + off, cap - off,
		                        "  t%zu:\n    context: box\n    run: \"echo %zu\"\n%s"
		                        "    runtime_boundary:\n      filesystem: {repo_root_mode: "
		                        "read_only, writable_paths: [out%zu]}\n      network: {default: "
		                        "deny}\n    safe_for_agent: true\n",
		                        i, i, i > 1 ? "" : "", i);
		if (i > 1)
			off += (size_t)snprintf(y + off, cap - off, "    depends_on: [t%zu]\n", i - 1);
	}
	off += (size_t)snprintf(y + off, cap - off, "agent:\n  safe_tasks: [");
	for (size_t i = 1; i <= segs; i++)
		off += (size_t)snprintf(y + off, cap - off, "%st%zu", i > 1 ? ", " : "", i);
	off += (size_t)snprintf(y + off, cap - off, "]\n");
	ota_error e;
	ota_error_clear(&e);
	ota_contract *c = NULL;
	ota_err rc = ota_contract_load(ota_bytes_make(y, off), "ota.yaml", &c, &e);
	if (rc != OTA_OK)
		die("contract", rc, &e);
	char last[32];
	snprintf(last, sizeof last, "t%zu", segs);
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	snprintf(po.native_platform.os, sizeof po.native_platform.os, "linux");
	snprintf(po.native_platform.architecture, sizeof po.native_platform.architecture, "amd64");
	ota_policy *p = NULL;
	if ((rc = ota_policy_compile(c, OTA_LANE_TASK, last, &po, NULL, 0, &p, &e)) != OTA_OK)
		die("compile", rc, &e);
	const char *txt = ota_policy_builtin_descriptor("oci_local");
	ota_capability_descriptor d;
	if ((rc = ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)), &po.native_platform,
	                                          &d, &e)) != OTA_OK)
		die("descriptor", rc, &e);
	ota_admission_request req = {true, NULL, &d, 1};
	json_t *adm = NULL;
	bool admitted = false;
	if ((rc = ota_policy_admit(p, &req, &adm, &admitted, &e)) != OTA_OK || !admitted)
		die("admit", rc, &e);
	const json_t *eff = ota_policy_effective_json(p);
	size_t n = ota_policy_segment_count(p);
	gen g;
	memset(&g, 0, sizeof g);
	g.key = issuer != NULL ? issuer : runner;
	g.iss = issuer != NULL ? "provider-x" : "ci-runner";
	g.verifier = issuer != NULL ? verifier : NULL;
	g.accs = calloc(3 * segs + 1, sizeof *g.accs);
	g.adms = calloc(3 * segs + 1, sizeof *g.adms);
	g.root_id = root_id;
	g.txn = "txn-bench";
	g.t = T0;
	g.atts = json_array();
	g.msgs = json_array();
	g.canon = ota_policy_canonical_identity(p);
	g.eff = ota_policy_effective_identity(p);
	json_t *evidence = json_array(), *segments = json_array(), *transitions = json_array();
	json_t *cap_desc = json_pack("{s:s, s:s, s:s, s:s}", "kind", "ota.capability_descriptor/v1",
	                             "provider", "oci_local", "runtime", "runc", "adapter_version",
	                             "0.1.0");
	char capid[OTA_ID_LEN + 1], lane_prior[OTA_ID_LEN + 1];
	json_t *cid = idj(cap_desc);
	snprintf(g.adapter, sizeof g.adapter, "%s", json_string_value(cid));
	json_decref(cid);
	json_array_append(evidence, cap_desc);
	sign_rec(&g, "capability", cap_desc, "lane:txn-bench", NULL, capid);
	memcpy(lane_prior, capid, sizeof capid);
	json_t *pcheck = json_pack("{s:s, s:{s:s, s:s, s:s}, s:b}", "kind", "ota.platform_check/v1",
	                           "declared", "os", "linux", "architecture", "amd64", "variant", "",
	                           "ok", 1);
	json_t *prev_term = NULL;
	for (size_t i = 0; i < n; i++) {
		const char *sid = ota_policy_segment_id(p, i);
		char cont[64];
		snprintf(cont, sizeof cont, "ota-bench-%06zu", i);
		g.segment = sid;
		if (prev_term != NULL) {
			json_t *tr = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:b, s:I}", "kind",
			                       "ota.application/v1", "phase", "transition", "provider",
			                       "oci_local", "txn", g.txn, "from", idj(prev_term), "to_segment",
			                       sid, "previous_removed", 1, "at", (json_int_t)g.t);
			json_array_append(evidence, tr);
			json_array_append_new(transitions, idj(tr));
			char tid[OTA_ID_LEN + 1];
			g.canon = ota_policy_canonical_identity(p);
			g.eff = ota_policy_effective_identity(p);
			sign_rec(&g, "transition", tr, "lane:txn-bench", lane_prior, tid);
			memcpy(lane_prior, tid, sizeof tid);
			json_decref(tr);
			json_decref(prev_term);
		}
		g.canon = ota_policy_segment_canonical_identity(p, i);
		g.eff = ota_policy_segment_effective_identity(p, i);
		/* the controls as oci_local renders and inspects them */
		const char *wp = json_string_value(json_array_get(json_object_get(json_object_get(
			json_object_get(json_array_get(json_object_get(eff, "segments"), i),
			                "runtime_boundary"), "filesystem"), "writable_paths"), 0));
		char wdest[512];
		snprintf(wdest, sizeof wdest, "/workspace/%s", wp != NULL ? wp : "out");
		json_t *config = json_pack("{s:s, s:{s:[s]}, s:{s:b}, s:s, s:[{s:s, s:s, s:[s, s]}, "
		                           "{s:s, s:s, s:[s, s]}], s:{s:[{s:s}, {s:s}]}}",
		                           "ociVersion", "1.0.2", "process", "args", "sh", "root",
		                           "readonly", 1, "hostname", cont, "mounts", "destination",
		                           "/workspace", "type", "bind", "options",
		                           "rbind", g_widen ? "rw" : "rro", "destination", wdest,
		                           "type", "bind", "options", "bind", "rw",
		                           "linux", "namespaces", "type", "pid", "type", "network");
		bool mem_rendered = g_resources != NULL && strcmp(g_resources, "omitted") == 0;
		json_t *lres = json_pack("{s:{s:i}}", "pids", "limit", 4096);
		if (mem_rendered)
			json_object_set_new(lres, "memory", json_pack("{s:I}", "limit", (json_int_t)67108864));
		json_object_set_new(json_object_get(config, "linux"), "resources", lres);
		char pcg[160], mcg[160];
		snprintf(pcg, sizeof pcg, "/sys/fs/cgroup/pids/user.slice/%s", cont);
		snprintf(mcg, sizeof mcg, "/sys/fs/cgroup/memory/user.slice/%s", cont);
		json_int_t claim_pids = g_resources != NULL && strcmp(g_resources, "different") == 0
		                                ? 8192
		                                : 4096;
		bool mem_claimed = g_resources != NULL && strcmp(g_resources, "unrendered") == 0;
		json_t *ares = json_pack("{s:I, s:s, s:o, s:s}", "pids_limit", claim_pids, "pids_cgroup",
		                         pcg, "memory_limit_bytes",
		                         mem_claimed ? json_integer(67108864) : json_null(),
		                         "memory_cgroup", mcg);
		char cfgid[OTA_ID_LEN + 1];
		if (ota_jcs_identity(config, cfgid, NULL) != OTA_OK)
			die("config", OTA_ERR_INTERNAL, NULL);
		json_t *rend = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "kind", "ota.rendered_policy/v1",
		                         "provider", "oci_local", "runtime", "runc", "segment", sid,
		                         "config_identity", cfgid, "config", config);
		json_t *appl = json_pack("{s:s, s:s, s:s, s:b, s:{s:[{s:s, s:b}, {s:s, s:b}]}, s:{s:b}, "
		                         "s:o}",
		                         "kind", "ota.applied_policy/v1", "rendered_policy", cfgid,
		                         "container_id", cont, "ok", 1, "mounts", "mounts", "path",
		                         "/workspace", "ro", !g_widen, "path", wdest, "ro", 0, "network",
		                         "loopback_only", 1, "canaries", canaries_of(wdest));
		json_object_set_new(appl, "resources", ares);
		json_t *init = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:I}", "kind",
		                         "ota.application/v1", "phase", "initial", "provider", "oci_local",
		                         "txn", g.txn, "segment", sid, "lease", cont, "rendered_policy",
		                         idj(rend), "applied_policy", idj(appl), "at", (json_int_t)g.t);
		char iatt[OTA_ID_LEN + 1], tatt[OTA_ID_LEN + 1];
		sign_rec(&g, "initial_application", init, cont, NULL, iatt);
		json_t *term = json_pack(
			"{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:b, s:i, s:o, s:I, "
			"s:{s:s, s:b, s:[], s:b}, s:{s:b}}",
			"kind", "ota.application/v1", "phase", "terminal", "provider", "oci_local", "txn",
			g.txn, "segment", sid, "container_id", cont, "state", "enforced_through_completion",
			"started", 1, "timed_out", 0, "interrupted", 0, "exit_status", 0, "prior", idj(init),
			"at", (json_int_t)g.t, "terminal_inspection", "runtime_status", "stopped", "stopped",
			1, "protected", "protected_unchanged", 1, "cleanup", "confirmed", 1);
		sign_rec(&g, "terminal_application", term, cont, iatt, tatt);
		json_array_append(evidence, pcheck);
		json_array_append(evidence, rend);
		json_array_append(evidence, appl);
		json_array_append(evidence, init);
		json_array_append(evidence, term);
		char bid[128];
		snprintf(bid, sizeof bid, "container:runc:%s", cont);
		json_array_append_new(
			segments,
			json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:s, s:s, s:i, s:b, s:o, s:o, s:o, s:o, s:s, s:s}",
			          "id", sid, "canonical_policy_identity", g.canon, "effective_policy_identity",
			          g.eff, "platform_check_identity", idj(pcheck),
			          "initial_attestation_identity", iatt, "terminal_attestation_identity", tatt,
			          "status", "enforced_through_completion", "container_id", cont,
			          "exit_status", 0, "timed_out", 0, "rendered_policy_identity", idj(rend),
			          "applied_policy_identity", idj(appl), "initial_application_identity",
			          idj(init), "terminal_application_identity", idj(term),
			          "boundary_lease_identity", cont, "boundary_identity", bid));
		prev_term = term;
		json_decref(rend);
		json_decref(appl);
		json_decref(init);
	}
	json_decref(prev_term);
	json_decref(pcheck);
	/* as the runner writes them: every segment's controls */
	json_t *ctl = ota_archive_runtime_controls(p, true);
	json_t *sp = json_pack(
		"{s:s, s:O, s:s, s:O, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:O, s:{s:s, s:n, s:s}}",
		"canonical_identity", ota_policy_canonical_identity(p), "restriction_overlay_identities",
		json_object_get(eff, "restriction_overlay_identities"), "effective_identity",
		ota_policy_effective_identity(p), "target_platform", json_object_get(eff, "target_platform"),
		"provider_target", "oci_local", "provider_adapter_identity", g.adapter,
		"capability_identity",
		json_string_value(json_object_get(json_object_get(adm, "provider_evaluation"),
		                                  "capability_identity")),
		"status", "enforced_through_completion", "segments", segments, "transition_identities",
		transitions, "runtime_controls", ctl, "application_obligations",
		json_object_get(adm, "application_obligations"), "attestation", "issuer_identity",
		"ci-runner", "challenge_identity", "verification", "runner_owned_cose_sign1");
	json_t *receipt = json_pack("{s:s, s:s, s:b, s:b, s:i, s:o, s:o, s:o, s:O}", "kind",
	                            "ota.receipt/v1", "txn", g.txn, "execution_started", 1,
	                            "all_segments_ran", 1, "exit_status", 0, "sandbox_policy", sp,
	                            "evidence", evidence, "attestations", g.atts, "sandbox_admission",
	                            adm);
	if (sp == NULL || receipt == NULL)
		die("receipt", OTA_ERR_NOMEM, NULL);
	ota_bytes chain = ota_bytes_make(root_bytes, root_len);
	ota_archive_input in;
	memset(&in, 0, sizeof in);
	in.contract = ota_bytes_make(y, off);
	in.lane_kind = OTA_LANE_TASK;
	in.lane = last;
	in.agent = true;
	in.native_platform = po.native_platform;
	in.trust_chain = &chain;
	in.ntrust = 1;
	in.receipt = receipt;
	in.runner_key = runner;
	/* the endpoint's acceptances, as ota-attestd answers them: one signature
	 * per group commit of up to BATCH admissions (batch form) */
	for (size_t i = 0; i < g.nadms; i += BATCH) {
		size_t k = g.nadms - i < BATCH ? g.nadms - i : BATCH;
		const ota_admission *ptr[BATCH];
		uint8_t *outs[BATCH];
		size_t lens[BATCH];
		for (size_t j = 0; j < k; j++)
			ptr[j] = &g.adms[i + j];
		ota_acceptance_signer sg = {verifier, "verifier-1"};
		if ((rc = ota_acceptance_build_batch(&sg, ptr, k, outs, lens, NULL)) != OTA_OK)
			die("acceptances", rc, NULL);
		for (size_t j = 0; j < k; j++)
			g.accs[g.naccs++] = ota_bytes_make(outs[j], lens[j]);
		b_batches++;
	}
	free(g.adms);
	in.acceptances = g.accs;
	in.nacceptances = g.naccs;
	in.signed_at = g.t;
	built b;
	memset(&b, 0, sizeof b);
	b.batches = b_batches;
	if ((rc = ota_archive_build(&in, &b.archive, &b.len, &e)) != OTA_OK)
		die("archive build", rc, &e);
	b.msgs = g.msgs;
	b.natt = json_array_size(json_object_get(receipt, "attestations"));
	/* the receipt's signature is part of the baseline too */
	json_t *doc = json_loadb(b.archive, b.len, 0, NULL);
	json_array_append(b.msgs, json_object_get(json_object_get(doc, "receipt"), "cose_sign1"));
	json_decref(doc);
	json_decref(receipt);
	json_decref(adm);
	for (size_t i = 0; i < g.naccs; i++)
		free((void *)(uintptr_t)g.accs[i].ptr);
	free(g.accs);
	ota_policy_free(p);
	ota_contract_free(c);
	free(y);
	return b;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

extern char **environ;

/*
 * --rss-run EXE ARGS...: runs EXE (output discarded) and prints its
 * ru_maxrss (KB), its CPU time (user + system, ms), its wall time (ms) and
 * its minor page faults; exit 1 when it did not exit 0. A process's
 * ru_maxrss is at least the RSS of the memory it was forked from (Linux
 * carries the high-water mark across fork and exec), so the measured process
 * is forked from this small, freshly started one, never from the bench
 * holding its archives.
 */
static int rss_run(char **argv)
{
	struct timespec w0, w1;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int dn = open("/dev/null", O_WRONLY);
		if (dn >= 0) {
			dup2(dn, 1);
			dup2(dn, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &w1);
	double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	             (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	double wall = (double)(w1.tv_sec - w0.tv_sec) * 1e3 + (double)(w1.tv_nsec - w0.tv_nsec) / 1e6;
	printf("%ld %.3f %.3f %ld\n", ru.ru_maxrss, cpu, wall, ru.ru_minflt);
	return 0;
}

typedef struct child_run {
	long peak_kb; /* -1 when it failed */
	double cpu_ms, wall_ms;
	long minflt;
} child_run;

/* What argv run through --rss-run used; peak_kb -1 when it failed. */
static child_run child_peak_kb(char *const argv[])
{
	child_run r = {-1, 0, 0, 0};
	char *full[16];
	size_t n = 0;
	full[n++] = (char *)"/proc/self/exe";
	full[n++] = (char *)"--rss-run";
	for (size_t i = 0; argv[i] != NULL && n < 15; i++)
		full[n++] = argv[i];
	full[n] = NULL;
	int p[2];
	if (pipe(p) != 0)
		return r;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	pid_t pid;
	int rc = posix_spawn(&pid, full[0], &fa, NULL, full, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	char buf[128] = "";
	ssize_t got = rc == 0 ? read(p[0], buf, sizeof buf - 1) : -1;
	close(p[0]);
	int st = 0;
	if (rc != 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    got <= 0)
		return r;
	buf[got] = '\0';
	child_run t;
	if (sscanf(buf, "%ld %lf %lf %ld", &t.peak_kb, &t.cpu_ms, &t.wall_ms, &t.minflt) != 4 ||
	    t.peak_kb <= 0)
		return r;
	return t;
}

/* --rss-floor FILE: read the file and parse it with jansson, nothing else. */
static int rss_floor(const char *path)
{
	uint8_t *t = NULL;
	size_t n = 0;
	if (ota_file_read(path, OTA_MAX_ARCHIVE_BYTES, &t, &n, NULL) != OTA_OK)
		return 1;
	json_t *j = json_loadb((const char *)t, n, JSON_REJECT_DUPLICATES, NULL);
	free(t);
	json_decref(j);
	return j != NULL ? 0 : 1;
}

static int cmp_l(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return x < y ? -1 : x > y;
}

/* Writes len bytes to a new temporary file; its name in path (PATH_MAX). */
static bool write_tmp(char *path, size_t cap, const void *p, size_t len)
{
	snprintf(path, cap, "/tmp/ota-bench-archive-XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return false;
	bool ok = write(fd, p, len) == (ssize_t)len;
	close(fd);
	if (!ok)
		unlink(path);
	return ok;
}

/*
 * The figures of the real ota-verify process on one archive: its peak RSS
 * against the jansson floor, and its wall and CPU time against the raw
 * signature verifications measured in process (raw_ms), each the median of
 * runs fresh processes. Prints nothing when ota-verify cannot be run.
 */
static void rss_figure(const char *archive, size_t len, const char *root, size_t rlen,
                       size_t natt, int runs, double raw_ms)
{
	char ap[64], rp[64];
	if (!write_tmp(ap, sizeof ap, archive, len))
		return;
	if (!write_tmp(rp, sizeof rp, root, rlen)) {
		unlink(ap);
		return;
	}
	long ours[3], floor[3], flt[3];
	double wall[3], cpu[3];
	const char *exe = getenv("OTA_BENCH_VERIFY") != NULL ? getenv("OTA_BENCH_VERIFY")
	                                                     : OTA_VERIFY_EXE;
	char *va[] = {(char *)(uintptr_t)exe, (char *)"archive", ap, (char *)"--trust", rp, NULL};
	char *fa[] = {(char *)"/proc/self/exe", (char *)"--rss-floor", ap, NULL};
	int n = runs < 1 ? 1 : runs > 3 ? 3 : runs;
	bool ok = true;
	for (int i = 0; i < n && ok; i++) {
		child_run o = child_peak_kb(va), f = child_peak_kb(fa);
		ours[i] = o.peak_kb;
		wall[i] = o.wall_ms;
		cpu[i] = o.cpu_ms;
		flt[i] = o.minflt;
		floor[i] = f.peak_kb;
		ok = ours[i] > 0 && floor[i] > 0;
	}
	unlink(ap);
	unlink(rp);
	if (!ok) {
		fprintf(stderr, "bench_archive: %s did not verify the archive; no RSS figure\n", exe);
		return;
	}
	qsort(ours, (size_t)n, sizeof ours[0], cmp_l);
	qsort(floor, (size_t)n, sizeof floor[0], cmp_l);
	qsort(flt, (size_t)n, sizeof flt[0], cmp_l);
	qsort(wall, (size_t)n, sizeof wall[0], cmp_d);
	qsort(cpu, (size_t)n, sizeof cpu[0], cmp_d);
	double v = (double)ours[n / 2] * 1024.0 / (double)len,
	       bv = (double)floor[n / 2] * 1024.0 / (double)len;
	printf("{\"bench\": \"archive_verify_peak_rss_%zu_attestations\", \"value\": %.3f, "
	       "\"unit\": \"bytes/archive_byte\", \"baseline\": "
	       "\"json_loadb_peak_rss_%zu_attestations\", \"baseline_value\": %.3f, "
	       "\"ratio\": %.3f, \"peak_rss_kb\": %ld, \"baseline_peak_rss_kb\": %ld, "
	       "\"archive_bytes\": %zu}\n",
	       natt, v, natt, bv, bv > 0 ? v / bv : 0.0, ours[n / 2], floor[n / 2], len);
	printf("{\"bench\": \"archive_verify_process_%zu_attestations\", \"value\": %.3f, "
	       "\"unit\": \"ms\", \"baseline\": \"raw_cose_verify_in_process\", "
	       "\"baseline_value\": %.3f, \"ratio\": %.3f, \"cpu_ms\": %.3f, "
	       "\"minor_faults\": %ld}\n",
	       natt, wall[n / 2], raw_ms, raw_ms > 0 ? wall[n / 2] / raw_ms : 0.0, cpu[n / 2],
	       flt[n / 2]);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int rounds = 3;
	size_t max = 10000;
	bool external = false;
	const char *seed = NULL;
	/* --verifier-target (vectors only): verifier-1 is trusted for that
	 * provider target alone, not for every one */
	const char *vtarget[1] = {"*"};
	if (argc == 3 && strcmp(argv[1], "--rss-floor") == 0)
		return rss_floor(argv[2]);
	if (argc >= 3 && strcmp(argv[1], "--rss-run") == 0)
		return rss_run(argv + 2);
#ifdef M_MXFAST
	/* the allocator as ota-verify archive sets it (cli/verify_archive.c) */
	(void)mallopt(M_MXFAST, 0);
#endif
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--max") == 0 && i + 1 < argc)
			max = (size_t)strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--external") == 0)
			external = true;
		else if (strcmp(argv[i], "--widen") == 0)
			g_widen = true;
		else if (strcmp(argv[i], "--verifier-target") == 0 && i + 1 < argc)
			vtarget[0] = argv[++i];
		else if (strcmp(argv[i], "--canary-failed") == 0)
			g_canary_failed = true;
		else if (strcmp(argv[i], "--canary-missing") == 0)
			g_canary_missing = true;
		else if (strcmp(argv[i], "--resources") == 0 && i + 1 < argc &&
		         (strcmp(argv[i + 1], "different") == 0 ||
		          strcmp(argv[i + 1], "unrendered") == 0 || strcmp(argv[i + 1], "omitted") == 0))
			g_resources = argv[++i];
		else if (strcmp(argv[i], "--write-seed") == 0 && i + 1 < argc)
			seed = argv[++i];
		else
			rounds = atoi(argv[i]) > 0 ? atoi(argv[i]) : 3;
	}
	srand(7);
	/* trust root: one root key, principal ci-runner (runner) with the runner key */
	ota_key *rootk = NULL, *runner = NULL, *issuer = NULL, *verifier = NULL;
	ota_err rc;
	if ((rc = ota_key_generate(OTA_ALG_ES256, &rootk)) != OTA_OK ||
	    (rc = ota_key_generate(OTA_ALG_ES256, &runner)) != OTA_OK ||
	    (rc = ota_key_generate(OTA_ALG_ES256, &issuer)) != OTA_OK ||
	    (rc = ota_key_generate(OTA_ALG_ES256, &verifier)) != OTA_OK)
		die("keygen", rc, NULL);
	ota_trust_draft *d = NULL;
	ota_trust_root *root = NULL;
	const ota_key *rk[1] = {rootk};
	const char *star[1] = {"*"}, *oci[1] = {"oci_local"};
	if ((rc = ota_trust_draft_new("bench.test", rk, 1, 1, T0 - 1000, T0 + 100000000, &d, NULL)) !=
	            OTA_OK ||
	    (rc = ota_trust_draft_add_principal(d, "ci-runner", OTA_TRUST_ROLE_RUNNER, star, 1, star, 1,
	                                        oci, 1, NULL)) != OTA_OK ||
	    (rc = ota_trust_draft_add_key(d, "ci-runner", runner, OTA_ALG_NONE, T0 - 1000, 0, NULL)) !=
	            OTA_OK ||
	    (rc = ota_trust_draft_add_principal(d, "provider-x", OTA_TRUST_ROLE_ISSUER, star, 1, star,
	                                        1, oci, 1, NULL)) != OTA_OK ||
	    (rc = ota_trust_draft_add_key(d, "provider-x", issuer, OTA_ALG_NONE, T0 - 1000, 0, NULL)) !=
	            OTA_OK ||
	    (rc = ota_trust_draft_add_principal(d, "verifier-1", OTA_TRUST_ROLE_VERIFIER, star, 1, star,
	                                        1, vtarget, 1, NULL)) != OTA_OK ||
	    (rc = ota_trust_draft_add_key(d, "verifier-1", verifier, OTA_ALG_NONE, T0 - 1000, 0,
	                                  NULL)) != OTA_OK ||
	    (rc = ota_trust_draft_finish(d, &root, NULL)) != OTA_OK ||
	    (rc = ota_trust_root_sign(root, rootk, NULL, NULL)) != OTA_OK)
		die("trust root", rc, NULL);
	char *rtext = NULL;
	size_t rlen = 0;
	if ((rc = ota_trust_root_serialize(root, &rtext, &rlen, NULL)) != OTA_OK)
		die("serialize", rc, NULL);
	if (seed != NULL) {
		/* the pinned root and the runner key, for vectors/archive (FIXTURE) */
		char sp[4096];
		snprintf(sp, sizeof sp, "%s.root.json", seed);
		FILE *f = fopen(sp, "w");
		if (f != NULL) {
			fwrite(rtext, 1, rlen, f);
			fclose(f);
		}
		char *pem = NULL;
		size_t pl = 0;
		snprintf(sp, sizeof sp, "%s.runner.FIXTURE.pem", seed);
		if (ota_key_private_pem(runner, &pem, &pl) == OTA_OK && (f = fopen(sp, "w")) != NULL) {
			fputs("FIXTURE: test runner key generated by bench_archive; not a secret.\n", f);
			fwrite(pem, 1, pl, f);
			fclose(f);
		}
		free(pem);
	}
	static const size_t sizes[] = {3, 33, 333, 3333};
	for (size_t s = 0; s < 4; s++) {
		if (sizes[s] * 3 > max)
			break;
		built b = generate(sizes[s], runner, external ? issuer : NULL, verifier, rtext, rlen,
		                   ota_trust_root_identity(root));
		if (seed != NULL) {
			char sp[4096];
			snprintf(sp, sizeof sp, s == 0 ? "%s" : "%s.%zu", seed, b.natt);
			FILE *f = fopen(sp, "w");
			if (f != NULL) {
				fwrite(b.archive, 1, b.len, f);
				fclose(f);
			}
		}
		if (g_widen || g_canary_failed || g_canary_missing || g_resources != NULL ||
		    strcmp(vtarget[0], "*") != 0) {
			/* a forged vector: written, not timed */
			json_decref(b.msgs);
			free(b.archive);
			break;
		}
		/* decoded messages for the baseline */
		size_t nm = json_array_size(b.msgs);
		uint8_t **m = calloc(nm, sizeof *m);
		size_t *ml = calloc(nm, sizeof *ml);
		for (size_t i = 0; i < nm; i++) {
			const char *t = json_string_value(json_array_get(b.msgs, i));
			if (ota_base64_decode(t, strlen(t), &m[i], &ml[i]) != OTA_OK)
				die("base64", OTA_ERR_INTERNAL, NULL);
		}
		ota_archive_verify_opts o;
		memset(&o, 0, sizeof o);
		o.pinned = ota_bytes_make(rtext, rlen);
		double *ours = calloc((size_t)rounds, sizeof *ours), *raw = calloc((size_t)rounds, sizeof *raw);
		double *jfloor = calloc((size_t)rounds, sizeof *jfloor),
		       *hfloor = calloc((size_t)rounds, sizeof *hfloor);
		size_t checked = 0; /* signatures ota_archive_verify reports it verified */
		for (int r = 0; r < rounds; r++) {
			double t0 = cpu_ms();
			ota_archive_report *rep = NULL;
			ota_error e;
			ota_error_clear(&e);
			rc = ota_archive_verify(ota_bytes_make(b.archive, b.len), &o, &rep, &e);
			double t1 = cpu_ms();
			if (rc != OTA_OK)
				die("verify", rc, &e);
			checked = ota_archive_report_signatures(rep);
			ota_archive_report_free(rep);
			/* fresh public keys each round, as ota_archive_verify loads its
			 * own from the trust root: both sides pay the same per-key
			 * cost (a P-256 key's table of multiples at its 512th
			 * verification, common/ec_fast.c) */
			ota_key *rkey = fresh_public(runner);
			ota_key *ikey = issuer != NULL ? fresh_public(issuer) : NULL;
			t1 = cpu_ms();
			for (size_t i = 0; i < nm; i++)
				if ((rc = ota_cose_sign1_verify(ota_bytes_make(m[i], ml[i]),
				                                external && i + 1 < nm ? ikey : rkey, NULL, NULL,
				                                NULL)) != OTA_OK)
					die("raw verify", rc, NULL);
			double t2 = cpu_ms();
			ota_key_free(rkey);
			ota_key_free(ikey);
			ours[r] = t1 - t0;
			/* external: each batch's one acceptance signature counts as one
			 * more verification at the measured per-signature cost */
			raw[r] = (t2 - t1) * (double)(nm + b.batches) / (double)nm;
			/* floors: what merely reading the document costs with the
			 * project's JSON library (json_loadb + json_decref, nothing
			 * checked), and hashing every byte once (SHA-256) */
			double p0 = cpu_ms();
			json_t *j = json_loadb(b.archive, b.len, JSON_REJECT_DUPLICATES, NULL);
			if (j == NULL)
				die("json_loadb", OTA_ERR_INTERNAL, NULL);
			json_decref(j);
			double p1 = cpu_ms();
			char hid[OTA_ID_LEN + 1];
			if (ota_sha256_id(ota_bytes_make(b.archive, b.len), hid) != OTA_OK)
				die("sha256", OTA_ERR_INTERNAL, NULL);
			double p2 = cpu_ms();
			jfloor[r] = p1 - p0;
			hfloor[r] = p2 - p1;
		}
		qsort(ours, (size_t)rounds, sizeof *ours, cmp_d);
		qsort(raw, (size_t)rounds, sizeof *raw, cmp_d);
		qsort(jfloor, (size_t)rounds, sizeof *jfloor, cmp_d);
		qsort(hfloor, (size_t)rounds, sizeof *hfloor, cmp_d);
		char name[64], base[64];
		snprintf(name, sizeof name, "archive_verify_%zu_attestations", b.natt);
		snprintf(base, sizeof base, "raw_cose_verify_%zu_signatures", nm + b.batches);
		double v = ours[rounds / 2], bv = raw[rounds / 2];
		printf("{\"bench\": \"%s\", \"value\": %.3f, \"unit\": \"ms\", \"baseline\": \"%s\", "
		       "\"baseline_value\": %.3f, \"ratio\": %.3f, \"beyond_signatures\": %.3f, "
		       "\"archive_bytes\": %zu, \"signatures_verified\": %zu, "
		       "\"floor_json_parse_ms\": %.3f, \"floor_json_parse_vs_signatures\": %.3f, "
		       "\"floor_sha256_ms\": %.3f}\n",
		       name, v, base, bv, bv > 0 ? v / bv : 0.0, bv > 0 ? (v - bv) / bv : 0.0, b.len,
		       checked, jfloor[rounds / 2], bv > 0 ? jfloor[rounds / 2] / bv : 0.0,
		       hfloor[rounds / 2]);
		fflush(stdout);
		rss_figure((const char *)b.archive, b.len, rtext, rlen, b.natt, rounds, bv);
		for (size_t i = 0; i < nm; i++)
			free(m[i]);
		free(m);
		free(ml);
		free(ours);
		free(raw);
		free(jfloor);
		free(hfloor);
		json_decref(b.msgs);
		free(b.archive);
	}
	free(rtext);
	ota_trust_root_free(root);
	ota_trust_draft_free(d);
	ota_key_free(rootk);
	ota_key_free(runner);
	ota_key_free(issuer);
	ota_key_free(verifier);
	return 0;
}
