/*
 * The runner: effective segments -> oci_local plans -> ordered runs with
 * transitions -> a receipt whose status is derived from the evidence.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ota/admission.h"
#include "ota/archive.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/limits.h"
#include "ota/runner.h"

struct ota_runner_plan {
	ota_oci_plan plan;
	bool has_process;
	const char **argv;
	const char **writable;
	const char **prot;
	char *rootfs;
	char *cwd;
	char *segment_id;
	json_t *platform_check;
	char os[32], arch[32], variant[32];
};

static const char *const base_env[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/root",
	"TERM=dumb",
	"OTA_WORKSPACE=/workspace",
};

void ota_runner_plan_free(ota_runner_plan *p)
{
	if (p == NULL)
		return;
	free(p->argv);
	free(p->writable);
	free(p->prot);
	free(p->rootfs);
	free(p->cwd);
	free(p->segment_id);
	json_decref(p->platform_check);
	free(p);
}

const ota_oci_plan *ota_runner_plan_oci(const ota_runner_plan *p)
{
	return p != NULL && p->has_process ? &p->plan : NULL;
}

const json_t *ota_runner_plan_platform_check(const ota_runner_plan *p)
{
	return p != NULL ? p->platform_check : NULL;
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);
	if (b != NULL)
		v = json_object_get(v, b);
	return json_string_value(v);
}

static ota_err unsupported(ota_error *err, const char *seg, const char *control, const char *what)
{
	return ota_error_set(err, OTA_ERR_OCI_POLICY_UNSUPPORTED, control, "%s: %s", seg, what);
}

static bool nonempty_array(const json_t *o, const char *k)
{
	return json_array_size(json_object_get(o, k)) > 0;
}

/* Borrowed strings of a JSON array into a new NULL-terminated vector. */
static ota_err str_vector(const json_t *arr, const char ***out, size_t *n, ota_error *err)
{
	*out = NULL;
	*n = 0;
	size_t len = json_array_size(arr);
	if (len > OTA_OCI_MAX_PATHS)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "paths", "too many entries");
	const char **v = calloc(len + 1, sizeof *v);
	if (v == NULL)
		return OTA_ERR_NOMEM;
	for (size_t i = 0; i < len; i++) {
		v[i] = json_string_value(json_array_get(arr, i));
		if (v[i] == NULL) {
			free(v);
			return ota_error_set(err, OTA_ERR_JSON_TYPE, "paths", "entry %zu is not a string", i);
		}
	}
	*out = v;
	*n = len;
	return OTA_OK;
}

/*
 * Lexically normalised absolute path: "//" and "." components dropped;
 * false for a relative path, a ".." component or one too long.
 */
static bool abs_normalize(const char *in, char *out, size_t cap)
{
	if (in == NULL || in[0] != '/' || cap < 2)
		return false;
	size_t o = 0;
	for (const char *q = in; *q != '\0';) {
		while (*q == '/')
			q++;
		size_t n = strcspn(q, "/");
		if (n == 0)
			break;
		if (n == 2 && q[0] == '.' && q[1] == '.')
			return false;
		if (!(n == 1 && q[0] == '.')) {
			if (o + 1 + n + 1 > cap)
				return false;
			out[o++] = '/';
			memcpy(out + o, q, n);
			o += n;
		}
		q += n;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return true;
}

/* "rel" when path lies strictly below base (both normalised), else NULL. */
static const char *below(const char *path, const char *base)
{
	size_t n = strlen(base);
	if (n <= 1 || strncmp(path, base, n) != 0 || path[n] != '/' || path[n + 1] == '\0')
		return NULL;
	return path + n + 1;
}

/*
 * The contract's container.rootfs is repository content, not the
 * operator's choice: it must name an unpacked image, NAME/rootfs directly
 * inside the image store or the rootfs cache this runner uses (the
 * toolkit's own trees), reached from there without a symlink (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, component by component). Anything else (a host
 * directory such as /root, a path through a symlink, the store itself) is
 * oci_rootfs_unmanaged before anything is prepared: runc would create its
 * mount points in that directory and the task would read it. --rootfs DIR
 * (the operator's choice) takes any directory. *out new: the resolved
 * path below the store's or cache's real path.
 */
static ota_err contract_rootfs(const char *declared, const ota_runner_opts *o, char **out,
                               ota_error *err)
{
	*out = NULL;
	const char *bases[2] = {o->image_store != NULL ? o->image_store : OTA_OCI_DEFAULT_IMAGE_STORE,
	                        o->rootfs_cache != NULL ? o->rootfs_cache
	                                                : OTA_OCI_DEFAULT_ROOTFS_CACHE};
	char decl[PATH_MAX];
	if (!abs_normalize(declared, decl, sizeof decl))
		return ota_error_set(err, OTA_ERR_OCI_ROOTFS_UNMANAGED, declared,
		                     "container.rootfs is not an absolute path without '..'; pass "
		                     "--rootfs DIR to choose a root filesystem outside the image store");
	for (size_t i = 0; i < 2; i++) {
		char given[PATH_MAX], real[PATH_MAX];
		if (!abs_normalize(bases[i], given, sizeof given) || realpath(bases[i], real) == NULL)
			continue;
		const char *rel = below(decl, given);
		if (rel == NULL)
			rel = below(decl, real);
		if (rel == NULL || strcmp(real, "/") == 0)
			continue;
		/* NAME (a prepared root filesystem) or NAME/rootfs (as ota
		 * image resolve unpacks one): not the store's own layout
		 * (blobs/, blobs/sha256), where the runtime would make its mount
		 * points and the task read every image, and not a directory
		 * inside another image's root filesystem, which every later
		 * container of that image would see changed */
		const char *slash = strchr(rel, '/');
		size_t nl = slash != NULL ? (size_t)(slash - rel) : strlen(rel);
		if (rel[0] == '.' || (slash != NULL && strcmp(slash + 1, "rootfs") != 0) ||
		    (nl == 5 && strncmp(rel, "blobs", 5) == 0) ||
		    (nl == 10 && strncmp(rel, "index.json", 10) == 0) ||
		    (nl == 10 && strncmp(rel, "oci-layout", 10) == 0))
			return ota_error_set(err, OTA_ERR_OCI_ROOTFS_UNMANAGED, declared,
			                     "container.rootfs inside %s is NAME or NAME/rootfs (an "
			                     "unpacked image), not %s",
			                     bases[i], rel);
		/* the rootfs cache is the host's, shared by every runner: only a
		 * complete entry's rootfs (DIGEST/rootfs beside .ota-complete, as
		 * ota image resolve leaves it), never the entry's bundle
		 * directory nor an unpack still in progress */
		if (i == 1) {
			bool hex = nl == 64 && slash != NULL;
			for (size_t k = 0; hex && k < 64; k++)
				hex = (rel[k] >= '0' && rel[k] <= '9') || (rel[k] >= 'a' && rel[k] <= 'f');
			char done[PATH_MAX];
			struct stat dst;
			int dn = snprintf(done, sizeof done, "%s/%.64s/.ota-complete", real, rel);
			if (!hex || dn < 0 || (size_t)dn >= sizeof done || lstat(done, &dst) != 0 ||
			    !S_ISREG(dst.st_mode))
				return ota_error_set(err, OTA_ERR_OCI_ROOTFS_UNMANAGED, declared,
				                     "container.rootfs inside the rootfs cache %s is a "
				                     "complete entry's DIGEST/rootfs, not %s",
				                     bases[i], rel);
		}
		int bfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (bfd < 0)
			continue;
		int dfd = -1;
		ota_error le;
		ota_error_clear(&le);
		ota_err rc = ota_dir_open_beneath(bfd, real, rel, 0, &dfd, &le);
		close(bfd);
		if (dfd >= 0)
			close(dfd);
		if (rc == OTA_ERR_NOT_FOUND)
			return ota_error_set(err, OTA_ERR_OCI_PATH_MISSING, declared,
			                     "container.rootfs: %s does not exist", le.where);
		if (rc != OTA_OK)
			return ota_error_set(err, OTA_ERR_OCI_ROOTFS_UNMANAGED, declared,
			                     "container.rootfs inside %s is not reached without a "
			                     "symlink: %s: %s (%s)",
			                     bases[i], le.where, le.what, ota_err_name(rc));
		size_t n = strlen(real) + strlen(rel) + 2;
		*out = malloc(n);
		if (*out == NULL)
			return OTA_ERR_NOMEM;
		snprintf(*out, n, "%s/%s", real, rel);
		return OTA_OK;
	}
	return ota_error_set(err, OTA_ERR_OCI_ROOTFS_UNMANAGED, declared,
	                     "container.rootfs is not inside the image store %s or the rootfs "
	                     "cache %s; a contract cannot name a host directory as the root "
	                     "filesystem (pass --rootfs DIR to choose it)",
	                     bases[0], bases[1]);
}

ota_err ota_runner_plan_new(const json_t *seg, const json_t *eseg, const ota_runner_opts *o,
                            ota_runner_plan **out, ota_error *err)
{
	*out = NULL;
	const char *cid = str_at(seg, "identity", NULL);
	const char *ecid = str_at(eseg, "canonical_identity", NULL);
	if (cid == NULL || ecid == NULL || strcmp(cid, ecid) != 0)
		return ota_error_set(err, OTA_ERR_ID_MISMATCH, "segment",
		                     "effective segment is not bound to the canonical segment");
	ota_runner_plan *p = calloc(1, sizeof *p);
	if (p == NULL)
		return OTA_ERR_NOMEM;
	ota_err rc = OTA_OK;
	const char *id = str_at(eseg, "id", NULL);
	p->segment_id = strdup(id != NULL ? id : "segment");
	if (p->segment_id == NULL) {
		rc = OTA_ERR_NOMEM;
		goto out_fail;
	}
	const json_t *exec = json_object_get(seg, "execution");
	const char *backend = str_at(exec, "backend", NULL);
	const char *lifecycle = str_at(exec, "lifecycle", NULL);
	const char *kind = str_at(exec, "kind", NULL);
	if (backend == NULL || strcmp(backend, "container") != 0) {
		rc = unsupported(err, p->segment_id, "execution.backend",
		                 "oci_local runs container lanes only; run native lanes natively");
		goto out_fail;
	}
	if (lifecycle != NULL && strcmp(lifecycle, "ephemeral") != 0) {
		rc = unsupported(err, p->segment_id, "execution.lifecycle",
		                 "oci_local applies ephemeral lifecycles only");
		goto out_fail;
	}
	if (nonempty_array(seg, "pre_boundary_actions") ||
	    nonempty_array(seg, "inherited_service_networks") || nonempty_array(seg, "isolated_paths")) {
		rc = unsupported(err, p->segment_id, "execution.services",
		                 "services, isolated paths and pre-boundary actions are not supported");
		goto out_fail;
	}
	const json_t *body = json_object_get(seg, "body");
	if (kind != NULL && strcmp(kind, "aggregate") == 0) {
		p->has_process = false;
		*out = p;
		return OTA_OK;
	}
	p->has_process = true;
	/* task body */
	if (kind != NULL && (strcmp(kind, "run") == 0 || strcmp(kind, "script") == 0) &&
	    json_is_string(body)) {
		p->argv = calloc(4, sizeof *p->argv);
		if (p->argv == NULL) {
			rc = OTA_ERR_NOMEM;
			goto out_fail;
		}
		p->argv[0] = "sh";
		p->argv[1] = "-lc";
		p->argv[2] = json_string_value(body);
		p->plan.argc = 3;
	} else if (kind != NULL && strcmp(kind, "command") == 0 && json_is_object(body) &&
	           json_is_string(json_object_get(body, "exe"))) {
		const json_t *args = json_object_get(body, "args");
		size_t na = json_array_size(args);
		if (na > 4096) {
			rc = ota_error_set(err, OTA_ERR_TOO_LARGE, "body.args", "too many arguments");
			goto out_fail;
		}
		p->argv = calloc(na + 2, sizeof *p->argv);
		if (p->argv == NULL) {
			rc = OTA_ERR_NOMEM;
			goto out_fail;
		}
		p->argv[0] = json_string_value(json_object_get(body, "exe"));
		for (size_t i = 0; i < na; i++) {
			p->argv[i + 1] = json_string_value(json_array_get(args, i));
			if (p->argv[i + 1] == NULL) {
				rc = ota_error_set(err, OTA_ERR_JSON_TYPE, "body.args", "argument %zu", i);
				goto out_fail;
			}
		}
		p->plan.argc = na + 1;
		const char *cwd = str_at(body, "cwd", NULL);
		if (cwd != NULL) {
			if (cwd[0] == '/' || strstr(cwd, "..") != NULL) {
				rc = ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "body.cwd",
				                   "cwd must be repo-relative");
				goto out_fail;
			}
			size_t l = strlen(cwd) + 12;
			p->cwd = malloc(l);
			if (p->cwd == NULL) {
				rc = OTA_ERR_NOMEM;
				goto out_fail;
			}
			snprintf(p->cwd, l, "/workspace/%s", cwd);
		}
	} else {
		rc = unsupported(err, p->segment_id, "execution.kind",
		                 "oci_local runs run, script, command and aggregate bodies only");
		goto out_fail;
	}
	p->plan.argv = p->argv;
	/* boundary */
	const json_t *rb = json_object_get(eseg, "runtime_boundary");
	const json_t *fs = json_object_get(rb, "filesystem");
	const json_t *net = json_object_get(rb, "network");
	const char *mode = str_at(fs, "repo_root_mode", NULL);
	if (mode == NULL) {
		rc = unsupported(err, p->segment_id, "filesystem.repo_root_mode",
		                 "no filesystem control: oci_local would narrow an unbounded lane");
		goto out_fail;
	}
	if (strcmp(mode, "read_only") != 0 && strcmp(mode, "writable") != 0) {
		rc = unsupported(err, p->segment_id, "filesystem.repo_root_mode", "unknown mode");
		goto out_fail;
	}
	p->plan.repo_writable = strcmp(mode, "writable") == 0;
	rc = str_vector(json_object_get(fs, "writable_paths"), &p->writable, &p->plan.n_writable, err);
	if (rc == OTA_OK)
		rc = str_vector(json_object_get(fs, "protected_paths"), &p->prot, &p->plan.n_protected,
		                err);
	if (rc != OTA_OK)
		goto out_fail;
	p->plan.writable = p->writable;
	p->plan.protected_paths = p->prot;
	const char *ndef = str_at(net, "default", NULL);
	if (ndef == NULL || strcmp(ndef, "deny") != 0) {
		rc = unsupported(err, p->segment_id, "network.default",
		                 "oci_local enforces network default deny only (a fresh loopback-only "
		                 "namespace); it cannot grant host networking");
		goto out_fail;
	}
	if (nonempty_array(net, "outbound_targets")) {
		rc = unsupported(err, p->segment_id, "network.target_allowlist",
		                 "targeted egress needs a cooperating proxy; stock OCI cannot enforce it");
		goto out_fail;
	}
	p->plan.network = OTA_OCI_NET_LOOPBACK_ONLY;
	/* platform and root filesystem */
	const json_t *tp = json_object_get(eseg, "target_platform");
	snprintf(p->os, sizeof p->os, "%s", str_at(tp, "os", NULL) ? str_at(tp, "os", NULL) : "");
	snprintf(p->arch, sizeof p->arch, "%s",
	         str_at(tp, "architecture", NULL) ? str_at(tp, "architecture", NULL) : "");
	snprintf(p->variant, sizeof p->variant, "%s",
	         str_at(tp, "variant", NULL) ? str_at(tp, "variant", NULL) : "");
	if (p->os[0] == '\0' || p->arch[0] == '\0') {
		rc = unsupported(err, p->segment_id, "execution.target_platform",
		                 "oci_local needs a declared container.platform");
		goto out_fail;
	}
	p->plan.platform.os = p->os;
	p->plan.platform.architecture = p->arch;
	p->plan.platform.variant = p->variant;
	char hos[16], harch[16], hvar[16];
	ota_oci_host_platform(hos, harch, hvar);
	/* --rootfs wins (the operator's choice, any directory); otherwise the
	 * contract's container.rootfs (our extension), absolute or relative to
	 * the contract's directory, which must lie inside the image store or
	 * the rootfs cache (contract_rootfs); otherwise container.image. */
	char declared_rootfs[OTA_MAX_PATH_BYTES * 2];
	char *managed_rootfs = NULL;
	const char *rootfs = o->rootfs;
	const char *crootfs = str_at(exec, "rootfs", NULL);
	if (rootfs == NULL && crootfs != NULL) {
		int n = crootfs[0] == '/' ? snprintf(declared_rootfs, sizeof declared_rootfs, "%s", crootfs)
		                          : snprintf(declared_rootfs, sizeof declared_rootfs, "%s/%s",
		                                     o->repo != NULL ? o->repo : ".", crootfs);
		if (n < 0 || (size_t)n >= sizeof declared_rootfs) {
			rc = ota_error_set(err, OTA_ERR_TOO_LARGE, p->segment_id, "container.rootfs path too long");
			goto out_fail;
		}
		rc = contract_rootfs(declared_rootfs, o, &managed_rootfs, err);
		if (rc != OTA_OK)
			goto out_fail;
		rootfs = managed_rootfs;
	}
	if (rootfs != NULL) {
		bool ok = strcmp(p->os, hos) == 0 && strcmp(p->arch, harch) == 0;
		p->platform_check = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:b}",
		                              "kind", "ota.platform_check/v1", "rootfs", rootfs,
		                              "rootfs_source",
		                              managed_rootfs != NULL ? "contract" : "command_line",
		                              "declared", "os", p->os, "architecture", p->arch,
		                              "variant", p->variant, "host", "os", hos, "architecture",
		                              harch, "variant", hvar, "ok", ok);
		if (!ok) {
			free(managed_rootfs);
			rc = ota_error_set(err, OTA_ERR_OCI_PLATFORM_MISMATCH, p->segment_id,
			                   "declared %s/%s, host %s/%s (no emulation)", p->os, p->arch,
			                   hos, harch);
			goto out_fail;
		}
		p->rootfs = managed_rootfs != NULL ? managed_rootfs : strdup(rootfs);
		managed_rootfs = NULL;
		if (p->rootfs == NULL) {
			rc = OTA_ERR_NOMEM;
			goto out_fail;
		}
	} else {
		const char *image = str_at(exec, "image", NULL);
		if (image == NULL) {
			rc = unsupported(err, p->segment_id, "execution.image",
			                 "no container.image and no rootfs");
			goto out_fail;
		}
		rc = ota_oci_image_resolve(o->image_store != NULL ? o->image_store
		                                                  : OTA_OCI_DEFAULT_IMAGE_STORE,
		                           image, &p->plan.platform, o->rootfs_cache, &p->rootfs,
		                           &p->platform_check, err);
		if (rc != OTA_OK)
			goto out_fail;
	}
	p->plan.rootfs = p->rootfs;
	p->plan.repo = o->repo;
	p->plan.segment_id = p->segment_id;
	p->plan.cwd = p->cwd;
	p->plan.env = base_env;
	p->plan.n_env = sizeof base_env / sizeof base_env[0];
	p->plan.timeout_seconds = o->timeout_seconds;
	*out = p;
	return OTA_OK;
out_fail:
	ota_runner_plan_free(p);
	return rc;
}


/* ---- signing of application records ---- */

/*
 * Durable nonce-store work of one segment, off the critical path
 * (docs/oci-local.md, "Signing"): a batch (one transaction, one fsync) run
 * on a thread; the thread is always joined before its result is used, and
 * nothing it did is acknowledged (appended to the receipt) before its
 * commit returned OTA_OK with every operation OTA_OK.
 */
typedef struct nonce_job {
	ota_nonce_store *ns;
	ota_nonce_binding b;
	ota_nonce_op ops[2];
	size_t n;
	int64_t now;
	ota_err rc;
	ota_error e;
	pthread_t th;
	bool running, done;
} nonce_job;

static void *nonce_job_main(void *arg)
{
	nonce_job *j = arg;
	ota_error_clear(&j->e);
	j->rc = ota_nonce_store_commit_batch(j->ns, j->ops, j->n, j->now, &j->e);
	for (size_t i = 0; j->rc == OTA_OK && i < j->n; i++)
		if (j->ops[i].result != OTA_OK)
			j->rc = ota_error_set(&j->e, j->ops[i].result, "nonces",
			                      "a challenge %s failed: %s",
			                      j->ops[i].kind == OTA_NONCE_OP_ISSUE ? "issue" : "consumption",
			                      ota_err_name(j->ops[i].result));
	return NULL;
}

/* Starts j (ops[0..n) filled by the caller) on a thread with every signal
 * blocked (the caller's handlers keep receiving them); runs it in place
 * when no thread can be created. */
static void nonce_job_start(nonce_job *j)
{
	j->done = false;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	j->running = pthread_create(&j->th, NULL, nonce_job_main, j) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!j->running)
		nonce_job_main(j);
	j->done = true;
}

/* Joins j (idempotent); its result, with the error into err (may be NULL). */
static ota_err nonce_job_join(nonce_job *j, ota_error *err)
{
	if (!j->done)
		return ota_error_set(err, OTA_ERR_USAGE, "nonces", "no challenge batch was started");
	if (j->running) {
		pthread_join(j->th, NULL);
		j->running = false;
	}
	if (j->rc != OTA_OK && err != NULL)
		*err = j->e;
	return j->rc;
}

/* A record signed but not yet acknowledged: its challenge's consumption
 * may still be on its way to disk. */
typedef struct signed_rec {
	const char *kind;
	char rid[OTA_ID_LEN + 1];
	char boundary[OTA_ATT_TEXT_MAX + 1];
	char prior[OTA_ATT_TEXT_MAX + 1];
	bool has_prior;
	uint8_t *msg;
	size_t ml;
	ota_challenge ch;
	char id[OTA_ID_LEN + 1];
} signed_rec;

typedef struct signer {
	const ota_runner_opts *o;
	json_t *atts;                   /* array of signed records */
	char lane_prior[OTA_ID_LEN + 1]; /* last lane-level attestation (capability, transition) */
	char seg_prior[OTA_ID_LEN + 1];  /* the current segment's initial attestation */
	char adapter[OTA_ID_LEN + 1];
	const char *segment, *canon, *eff;
	char os[32], arch[32], variant[32];
	nonce_job *pre;       /* the segment's two challenges, issued in one commit */
	nonce_job cons;       /* the initial challenge's consumption */
	bool cons_started;
	signed_rec init_rec;  /* the initial record, until cons has committed */
	/* the terminal record, signed and its challenge consumed on a thread
	 * while the provider commits the lease's terminal state (on_terminal) */
	struct {
		char rid[OTA_ID_LEN + 1];
		char boundary[OTA_ATT_TEXT_MAX + 1];
		char prior[OTA_ID_LEN + 1];
		ota_challenge ch;
		int64_t now;
		signed_rec rec;
		ota_challenge used;
		ota_err rc;
		ota_error e;
		pthread_t th;
		bool running, started;
	} term;
} signer;

static int64_t runner_now(const ota_runner_opts *o)
{
	return o->oci.clock.now != NULL ? ota_clock_now(&o->oci.clock) : ota_clock_now(NULL);
}

static void signer_binding(const signer *s, ota_nonce_binding *b)
{
	b->txn = s->o->oci.txn != NULL ? s->o->oci.txn : "txn";
	b->issuer = s->o->issuer != NULL ? s->o->issuer : "runner:local";
	b->scope = "oci_local";
}

/* Signs record (COSE_Sign1 over the attestation payload) against the
 * challenge ch into *out (out->msg new). Nothing is consumed here. */
static ota_err sign_only(signer *s, const char *kind, const json_t *record, const char *rid,
                         const char *boundary, const char *prior, const ota_challenge *ch,
                         int64_t now, signed_rec *out, ota_error *err)
{
	const ota_runner_opts *o = s->o;
	memset(out, 0, sizeof *out);
	out->kind = kind;
	out->ch = *ch;
	ota_err rc = OTA_OK;
	if (record != NULL)
		rc = ota_json_identity(record, out->rid, err);
	else
		snprintf(out->rid, sizeof out->rid, "%s", rid);
	if (rc != OTA_OK)
		return rc;
	ota_nonce_binding b;
	signer_binding(s, &b);
	ota_attestation a;
	memset(&a, 0, sizeof a);
	snprintf(a.iss, sizeof a.iss, "%s", b.issuer);
	a.iat = now;
	a.exp = now + OTA_NONCE_DEFAULT_TTL;
	memcpy(a.nonce, ch->nonce, ch->nonce_len);
	a.nonce_len = ch->nonce_len;
	snprintf(a.kind, sizeof a.kind, "%s", kind);
	snprintf(a.txn, sizeof a.txn, "%s", b.txn);
	snprintf(a.trust_root, sizeof a.trust_root, "%s",
	         o->trust_root != NULL ? o->trust_root : "none");
	snprintf(a.provider, sizeof a.provider, "oci_local");
	snprintf(a.adapter, sizeof a.adapter, "%s", s->adapter);
	snprintf(a.platform_os, sizeof a.platform_os, "%s", s->os);
	snprintf(a.platform_arch, sizeof a.platform_arch, "%s", s->arch);
	snprintf(a.platform_variant, sizeof a.platform_variant, "%s", s->variant);
	if (s->segment != NULL)
		snprintf(a.segment, sizeof a.segment, "%s", s->segment);
	if (s->canon != NULL)
		snprintf(a.policy_canonical, sizeof a.policy_canonical, "%s", s->canon);
	if (s->eff != NULL)
		snprintf(a.policy_effective, sizeof a.policy_effective, "%s", s->eff);
	snprintf(a.boundary, sizeof a.boundary, "%s", boundary);
	if (prior != NULL && prior[0] != '\0') {
		snprintf(a.prior, sizeof a.prior, "%s", prior);
		a.has_prior = true;
	}
	snprintf(out->boundary, sizeof out->boundary, "%s", a.boundary);
	snprintf(out->prior, sizeof out->prior, "%s", a.prior);
	out->has_prior = a.has_prior;
	/* body: the record's identity as a CBOR text string (71 bytes) */
	uint8_t body[2 + OTA_ID_LEN];
	body[0] = 0x78;
	body[1] = (uint8_t)OTA_ID_LEN;
	memcpy(body + 2, out->rid, OTA_ID_LEN);
	a.body = ota_bytes_make(body, sizeof body);
	uint8_t *payload = NULL;
	size_t pl = 0;
	rc = ota_attestation_encode(&a, &payload, &pl);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, kind, "cannot encode the attestation payload");
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	rc = ota_cose_sign1_sign(o->runner_key, ota_bytes_make(payload, pl), &so, &out->msg, &out->ml,
	                         err);
	free(payload);
	if (rc == OTA_OK)
		rc = ota_sha256_id(ota_bytes_make(out->msg, out->ml), out->id);
	if (rc != OTA_OK) {
		free(out->msg);
		out->msg = NULL;
	}
	return rc;
}

/* Acknowledges r, whose challenge's consumption has committed (used):
 * appends the signed record. Frees r->msg in every case. */
static ota_err record_append(signer *s, signed_rec *r, const ota_challenge *used)
{
	char *cose_b64 = NULL, *nonce_b64 = NULL;
	ota_err rc = ota_base64_encode(ota_bytes_make(r->msg, r->ml), &cose_b64);
	if (rc == OTA_OK)
		rc = ota_base64_encode(ota_bytes_make(r->ch.nonce, r->ch.nonce_len), &nonce_b64);
	free(r->msg);
	r->msg = NULL;
	if (rc == OTA_OK) {
		json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?, s:{s:s, s:I, s:I, s:I, s:I}}",
		                        "kind", r->kind, "identity", r->id, "record_identity", r->rid,
		                        "boundary", r->boundary, "cose_sign1", cose_b64, "prior",
		                        r->has_prior ? r->prior : NULL, "challenge", "nonce", nonce_b64,
		                        "epoch", (json_int_t)r->ch.epoch, "issued_at",
		                        (json_int_t)r->ch.issued_at, "expires_at",
		                        (json_int_t)r->ch.expires_at, "consumed_at",
		                        (json_int_t)used->consumed_at);
		if (rec == NULL || json_array_append_new(s->atts, rec) != 0)
			rc = OTA_ERR_NOMEM;
	}
	free(cose_b64);
	free(nonce_b64);
	return rc;
}

/* Signs record and acknowledges it once its challenge is durably consumed.
 * given: a challenge issued ahead (NULL: one is issued here). */
static ota_err sign_record_with(signer *s, const char *kind, const json_t *record,
                                const char *boundary, const char *prior, const ota_challenge *given,
                                char out_id[OTA_ID_LEN + 1], ota_error *err)
{
	out_id[0] = '\0';
	const ota_runner_opts *o = s->o;
	if (o->runner_key == NULL)
		return OTA_OK;
	if (o->nonces == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "nonces", "a runner key needs a nonce store");
	ota_nonce_binding b;
	signer_binding(s, &b);
	int64_t now = runner_now(o);
	ota_challenge ch;
	ota_err rc = OTA_OK;
	if (given != NULL)
		ch = *given;
	else
		rc = ota_nonce_store_issue(o->nonces, &b, 0, 0, now, &ch, err);
	if (rc != OTA_OK)
		return rc;
	signed_rec r;
	rc = sign_only(s, kind, record, NULL, boundary, prior, &ch, now, &r, err);
	if (rc != OTA_OK)
		return rc;
	/* the runner is issuer and acceptor: the challenge is used once */
	ota_challenge used;
	rc = ota_nonce_store_consume(o->nonces, ota_bytes_make(ch.nonce, ch.nonce_len), &b, now,
	                             &used, err);
	if (rc == OTA_OK)
		rc = record_append(s, &r, &used);
	free(r.msg);
	if (rc == OTA_OK)
		memcpy(out_id, r.id, sizeof r.id);
	return rc;
}

static ota_err sign_record(signer *s, const char *kind, const json_t *record, const char *boundary,
                           const char *prior, char out_id[OTA_ID_LEN + 1], ota_error *err)
{
	return sign_record_with(s, kind, record, boundary, prior, NULL, out_id, err);
}

/* The segment's initial and terminal challenges, issued in one commit on a
 * thread while the provider admits, leases and creates. */
static void presign_start(signer *s, nonce_job *j)
{
	memset(j, 0, sizeof *j);
	s->pre = NULL;
	if (s->o->runner_key == NULL || s->o->nonces == NULL)
		return;
	j->ns = s->o->nonces;
	signer_binding(s, &j->b);
	j->n = 2;
	for (size_t i = 0; i < 2; i++) {
		j->ops[i].kind = OTA_NONCE_OP_ISSUE;
		j->ops[i].binding = &j->b;
	}
	j->now = runner_now(s->o);
	nonce_job_start(j);
	s->pre = j;
}

/*
 * The initial record, before the go: its challenge (issued ahead, joined
 * here: a failed issue refuses the go as before) and its ES256 signature.
 * Its consumption commits on a thread while the task runs; the record is
 * acknowledged (appended, seg_prior set) only after that commit, in
 * segment_signed_finish, and a failed consumption is the segment's error.
 */
static ota_err on_initial(void *ctx, const json_t *initial, const json_t *applied, ota_error *err)
{
	(void)applied;
	signer *s = ctx;
	s->seg_prior[0] = '\0';
	const char *lease = json_string_value(json_object_get(initial, "lease"));
	if (lease == NULL)
		lease = "unknown";
	if (s->o->runner_key == NULL)
		return OTA_OK;
	if (s->pre == NULL)
		return sign_record(s, "initial_application", initial, lease, NULL, s->seg_prior, err);
	ota_err rc = nonce_job_join(s->pre, err);
	if (rc != OTA_OK)
		return rc;
	int64_t now = runner_now(s->o);
	rc = sign_only(s, "initial_application", initial, NULL, lease, NULL,
	               &s->pre->ops[0].challenge, now, &s->init_rec, err);
	if (rc != OTA_OK)
		return rc;
	nonce_job *j = &s->cons;
	memset(j, 0, sizeof *j);
	j->ns = s->o->nonces;
	signer_binding(s, &j->b);
	j->n = 1;
	j->ops[0].kind = OTA_NONCE_OP_CONSUME;
	j->ops[0].nonce = ota_bytes_make(s->init_rec.ch.nonce, s->init_rec.ch.nonce_len);
	j->ops[0].expect = &j->b;
	j->now = now;
	nonce_job_start(j);
	s->cons_started = true;
	return OTA_OK;
}

/* The terminal challenge issued ahead, when it still lives long enough. */
static const ota_challenge *presigned_terminal(const signer *s)
{
	const nonce_job *j = s->pre;
	if (j == NULL || !j->done || j->running || j->rc != OTA_OK ||
	    j->ops[1].result != OTA_OK)
		return NULL;
	if (j->ops[1].challenge.expires_at <= runner_now(s->o) + 60)
		return NULL; /* a long task: a fresh one */
	return &j->ops[1].challenge;
}

static void *term_main(void *arg)
{
	signer *s = arg;
	ota_error_clear(&s->term.e);
	s->term.rc = sign_only(s, "terminal_application", NULL, s->term.rid, s->term.boundary,
	                       s->term.prior[0] != '\0' ? s->term.prior : NULL, &s->term.ch,
	                       s->term.now, &s->term.rec, &s->term.e);
	ota_nonce_binding b;
	signer_binding(s, &b);
	if (s->term.rc == OTA_OK)
		s->term.rc = ota_nonce_store_consume(s->o->nonces,
		                                     ota_bytes_make(s->term.ch.nonce, s->term.ch.nonce_len),
		                                     &b, s->term.now, &s->term.used, &s->term.e);
	return NULL;
}

/*
 * The provider's terminal record is final (the lease's terminal commit
 * comes next): its identity is taken here, on the caller's thread (the
 * record is not touched by the thread), and the signature and the durable
 * consumption of the challenge issued ahead run on a thread, joined after
 * ota_oci_run returns; the record is acknowledged only then.
 */
static void on_terminal(void *ctx, const json_t *terminal)
{
	signer *s = ctx;
	if (s->o->runner_key == NULL || s->o->nonces == NULL || s->pre == NULL)
		return;
	(void)nonce_job_join(s->pre, NULL);
	const ota_challenge *ch = presigned_terminal(s);
	const char *cid = json_string_value(json_object_get(terminal, "container_id"));
	if (ch == NULL || cid == NULL ||
	    ota_json_identity(terminal, s->term.rid, NULL) != OTA_OK)
		return; /* signed after the run, as before */
	s->term.prior[0] = '\0';
	/* the prior is the initial attestation, once its consumption committed */
	if (s->cons_started && nonce_job_join(&s->cons, NULL) == OTA_OK)
		snprintf(s->term.prior, sizeof s->term.prior, "%s", s->init_rec.id);
	snprintf(s->term.boundary, sizeof s->term.boundary, "%s", cid);
	s->term.ch = *ch;
	s->term.now = runner_now(s->o);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	s->term.running = pthread_create(&s->term.th, NULL, term_main, s) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->term.running)
		term_main(s);
	s->term.started = true;
}

/* After ota_oci_run: joins the segment's threads; acknowledges the initial
 * record once its consumption committed (its error otherwise), then the
 * terminal record signed in on_terminal (tid: its identity, "" if none). */
static ota_err segment_signed_finish(signer *s, char tid[OTA_ID_LEN + 1], ota_error *err)
{
	ota_err rc = OTA_OK;
	tid[0] = '\0';
	if (s->pre != NULL)
		(void)nonce_job_join(s->pre, NULL);
	if (s->cons_started) {
		s->cons_started = false;
		rc = nonce_job_join(&s->cons, err);
		if (rc == OTA_OK)
			rc = record_append(s, &s->init_rec, &s->cons.ops[0].challenge);
		if (rc == OTA_OK)
			memcpy(s->seg_prior, s->init_rec.id, sizeof s->init_rec.id);
		free(s->init_rec.msg);
		s->init_rec.msg = NULL;
	}
	if (s->term.started) {
		s->term.started = false;
		if (s->term.running) {
			pthread_join(s->term.th, NULL);
			s->term.running = false;
		}
		ota_err trc = s->term.rc;
		if (trc == OTA_OK)
			trc = record_append(s, &s->term.rec, &s->term.used);
		else if (err != NULL && rc == OTA_OK)
			*err = s->term.e;
		free(s->term.rec.msg);
		s->term.rec.msg = NULL;
		if (trc == OTA_OK)
			memcpy(tid, s->term.rec.id, sizeof s->term.rec.id);
		if (rc == OTA_OK)
			rc = trc;
	}
	return rc;
}

/* Dead runners' leases this segment finalized: signed (with a key) and reported. */
static void report_orphans(const ota_runner_opts *o, json_t *fin)
{
	size_t i;
	json_t *rec;
	json_array_foreach(fin, i, rec)
	{
		ota_err src = OTA_OK;
		if (o->runner_key != NULL) {
			json_t *att = NULL;
			ota_error e;
			ota_error_clear(&e);
			src = ota_runner_sign_cleanup(o, rec, &att, &e);
			if (src == OTA_OK)
				json_object_set_new(rec, "attestation", att);
		}
		if (o->on_orphan != NULL)
			o->on_orphan(o->on_orphan_ctx, rec, src);
	}
}

/* ---- the lane ---- */

static ota_oci_terminal worst(ota_oci_terminal a, ota_oci_terminal b)
{
	/* refused > lost > unknown > not_started > enforced */
	static const int rank[] = {0, 3, 2, 1, 4};
	return rank[a] >= rank[b] ? a : b;
}

static json_t *id_of(const json_t *v)
{
	char id[OTA_ID_LEN + 1];
	if (v == NULL || ota_json_identity(v, id, NULL) != OTA_OK)
		return json_null();
	return json_string(id);
}

/*
 * The runner executes only what ota_policy_admit admitted for oci_local on
 * this very policy, so a dry run and a real run share one decision; the
 * plan checks below only map that decision onto the runtime (and refuse
 * again, as defence in depth, should the two ever disagree).
 */
static ota_err check_admission(const ota_policy *p, const json_t *adm, ota_error *err)
{
	const char *decision = str_at(adm, "decision", NULL);
	const json_t *pe = json_object_get(adm, "provider_evaluation");
	const char *target = str_at(pe, "provider_target", NULL);
	const char *eff = str_at(adm, "effective_policy_identity", NULL);
	if (decision == NULL || strcmp(decision, "admitted") != 0 ||
	    !json_is_true(json_object_get(pe, "admitted")) || target == NULL ||
	    strcmp(target, "oci_local") != 0)
		return ota_error_set(err, OTA_ERR_POLICY_REFUSED, "sandbox_admission",
		                     "the lane is not admitted to oci_local (decision %s)",
		                     decision != NULL ? decision : "missing");
	if (eff == NULL || strcmp(eff, ota_policy_effective_identity(p)) != 0)
		return ota_error_set(err, OTA_ERR_ID_MISMATCH, "sandbox_admission",
		                     "the admission evaluated another effective policy");
	return OTA_OK;
}

static ota_err runner_run_locked(const ota_policy *p, const json_t *admission,
                                 const ota_runner_opts *o, json_t **receipt_out,
                                 int *exit_status, ota_error *err);

ota_err ota_runner_run(const ota_policy *p, const json_t *admission, const ota_runner_opts *o,
                       json_t **receipt_out, int *exit_status, ota_error *err)
{
	*receipt_out = NULL;
	*exit_status = 0;
	ota_err arc = check_admission(p, admission, err);
	if (arc != OTA_OK)
		return arc;
	/* One run per checkout at a time: an exclusive lock on the repository
	 * directory itself (nothing is written into the work tree), held until
	 * this function returns; the descriptor is close-on-exec, so no runtime
	 * process keeps it. A second run would see this one's outputs in the
	 * carve-outs, and the work tree either records would not be the one its
	 * tasks read. Taken before anything is prepared or swept. */
	int lock_fd = open(o->repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd < 0)
		return ota_error_set(err, OTA_ERR_IO, o->repo, "cannot open the repository: %s",
		                     strerror(errno));
	if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
		int en = errno;
		close(lock_fd);
		if (en == EWOULDBLOCK)
			return ota_error_set(err, OTA_ERR_OCI_CHECKOUT_BUSY, o->repo,
			                     "another ota run or ota up holds this checkout");
		return ota_error_set(err, OTA_ERR_IO, o->repo, "cannot lock the repository: %s",
		                     strerror(en));
	}
	ota_err rrc = runner_run_locked(p, admission, o, receipt_out, exit_status, err);
	close(lock_fd);
	return rrc;
}

static ota_err runner_run_locked(const ota_policy *p, const json_t *admission,
                                 const ota_runner_opts *o, json_t **receipt_out,
                                 int *exit_status, ota_error *err)
{
	/* Dead runners' containers first: one may still be writing into this
	 * checkout's carve-outs, so they are finalized before the work tree
	 * is hashed (each segment's own sweep before its lease then finds
	 * none left). Best effort: what cannot be finalized now is met again
	 * by that sweep, and reported by `ota cleanup`. */
	{
		json_t *rep = NULL;
		ota_error ce;
		ota_error_clear(&ce);
		ota_err crc = ota_oci_cleanup(&o->oci, &rep, &ce);
		(void)crc;
		report_orphans(o, json_object_get(rep, "finalized"));
		json_decref(rep);
	}
	/* The revision checked out when the run was admitted, read before the
	 * task could touch .git (it is under the read-only root unless a
	 * carve-out names it); null when none resolves, never a guess. */
	char revision[OTA_RUNNER_REVISION_MAX + 1], worktree[OTA_RUNNER_REVISION_MAX + 1] = "";
	{
		ota_error re, we;
		ota_error_clear(&re);
		ota_error_clear(&we);
		if (ota_runner_repo_revision(o->repo, revision, &re) != OTA_OK)
			revision[0] = '\0';
		/* and the files it ran on, as the git tree of the revision's
		 * kind (runner/worktree.c): a gate compares it with REV^{tree} */
		if (revision[0] != '\0' &&
		    ota_runner_worktree_id(o->repo, strlen(revision), o->oci.cancel, worktree, &we) != OTA_OK)
			worktree[0] = '\0';
		if (o->revision_error != NULL)
			*o->revision_error = re;
		if (o->worktree_error != NULL)
			*o->worktree_error = we;
	}
	const json_t *eff = ota_policy_effective_json(p);
	const json_t *can = ota_policy_canonical_json(p);
	const json_t *esegs = json_object_get(eff, "segments");
	const json_t *csegs = json_object_get(can, "segments");
	size_t n = json_array_size(esegs);
	json_t *segments = json_array(), *evidence = json_array(), *transitions = json_array();
	if (segments == NULL || evidence == NULL || transitions == NULL) {
		json_decref(segments);
		json_decref(evidence);
		json_decref(transitions);
		return OTA_ERR_NOMEM;
	}
	ota_err rc = OTA_OK;
	ota_error e;
	ota_error_clear(&e);
	bool any_started = false, all_ran = true;
	ota_oci_terminal overall = OTA_OCI_ENFORCED_THROUGH_COMPLETION;
	json_t *prev_terminal = NULL; /* borrowed from evidence */
	/* Every plan first: a segment that cannot be applied refuses the lane
	 * before anything is prepared. */
	ota_runner_plan **plans = calloc(n + 1, sizeof *plans);
	if (plans == NULL)
		rc = OTA_ERR_NOMEM;
	for (size_t i = 0; rc == OTA_OK && i < n; i++)
		rc = ota_runner_plan_new(json_array_get(csegs, i), json_array_get(esegs, i), o,
		                         &plans[i], &e);
	if (rc != OTA_OK) {
		overall = OTA_OCI_REFUSED;
		all_ran = false;
	}
	/* The signer: capability first, on the lane's boundary. */
	signer sg;
	memset(&sg, 0, sizeof sg);
	sg.o = o;
	sg.atts = json_array();
	char lane_boundary[OTA_MAX_TXN_BYTES + 8];
	snprintf(lane_boundary, sizeof lane_boundary, "lane:%s", o->oci.txn != NULL ? o->oci.txn : "");
	{
		const json_t *tp = json_object_get(eff, "target_platform");
		snprintf(sg.os, sizeof sg.os, "%s", str_at(tp, "os", NULL) ? str_at(tp, "os", NULL) : "");
		snprintf(sg.arch, sizeof sg.arch, "%s",
		         str_at(tp, "architecture", NULL) ? str_at(tp, "architecture", NULL) : "");
		snprintf(sg.variant, sizeof sg.variant, "%s",
		         str_at(tp, "variant", NULL) ? str_at(tp, "variant", NULL) : "");
		json_t *desc = ota_oci_capability_descriptor(o->oci.runtime.kind);
		if (desc == NULL || ota_json_identity(desc, sg.adapter, NULL) != OTA_OK)
			sg.adapter[0] = '\0';
		sg.canon = ota_policy_canonical_identity(p);
		sg.eff = ota_policy_effective_identity(p);
		/* The capability is signed even when a plan refused the lane: the
		 * refusal is then signed on the lane's boundary right after it. */
		bool plan_refused = rc != OTA_OK;
		if (desc != NULL) {
			json_array_append(evidence, desc);
			ota_error ce;
			ota_error_clear(&ce);
			ota_err crc =
				sign_record(&sg, "capability", desc, lane_boundary, NULL, sg.lane_prior, &ce);
			if (crc != OTA_OK) {
				if (rc == OTA_OK) {
					rc = crc;
					e = ce;
				}
				overall = OTA_OCI_REFUSED;
				all_ran = false;
				plan_refused = false;
			}
		}
		json_decref(desc);
		if (plan_refused && sg.lane_prior[0] != '\0') {
			/* what refused the lane, before anything was prepared: a terminal
			 * record of the lane (no segment, no container) */
			json_t *ref = json_pack(
				"{s:s, s:s, s:s, s:s?, s:s, s:b, s:b, s:I, s:b, s:{s:s, s:s, s:s}, s:I}", "kind",
				"ota.application/v1", "phase", "terminal", "provider", "oci_local", "txn",
				o->oci.txn, "state", "refused", "started", 0, "interrupted", 0, "exit_status",
				(json_int_t)-1, "timed_out", 0, "error", "code", ota_err_name(e.code), "where",
				e.where, "message", e.what, "at", (json_int_t)runner_now(o));
			char rid[OTA_ID_LEN + 1];
			ota_error re;
			ota_error_clear(&re);
			ota_err rrc = ref != NULL ? sign_record(&sg, "terminal_application", ref,
			                                        lane_boundary, sg.lane_prior, rid, &re)
			                          : OTA_ERR_NOMEM;
			if (rrc == OTA_OK) {
				json_array_append(evidence, ref);
				if (rid[0] != '\0')
					memcpy(sg.lane_prior, rid, sizeof rid);
			}
			json_decref(ref);
		}
	}
	for (size_t i = 0; rc == OTA_OK && i < n; i++) {
		const json_t *es = json_array_get(esegs, i);
		const json_t *cs = json_array_get(csegs, i);
		const char *sid = str_at(es, "id", NULL);
		json_t *srec = json_pack("{s:s?, s:s?, s:s?}", "id", sid, "canonical_policy_identity",
		                         str_at(cs, "identity", NULL), "effective_policy_identity",
		                         str_at(es, "identity", NULL));
		if (plans[i]->platform_check != NULL) {
			json_array_append(evidence, plans[i]->platform_check);
			json_object_set_new(srec, "platform_check_identity",
			                    id_of(plans[i]->platform_check));
		}
		const ota_oci_plan *op = ota_runner_plan_oci(plans[i]);
		if (op == NULL) {
			json_object_set_new(srec, "status", json_string("no_process"));
			json_array_append_new(segments, srec);
			continue;
		}
		if (prev_terminal != NULL) {
			/* attested transition: the previous boundary was removed (its
			 * terminal record confirms it) before this one is applied */
			json_t *cl = json_object_get(prev_terminal, "cleanup");
			json_t *tr = json_pack("{s:s, s:s, s:s, s:s?, s:o, s:s?, s:b, s:I}", "kind",
			                       "ota.application/v1", "phase", "transition", "provider",
			                       "oci_local", "txn", o->oci.txn, "from", id_of(prev_terminal),
			                       "to_segment", sid, "previous_removed",
			                       json_is_true(json_object_get(cl, "confirmed")), "at",
			                       (json_int_t)(o->oci.clock.now != NULL
			                                            ? ota_clock_now(&o->oci.clock)
			                                            : ota_clock_now(NULL)));
			sg.segment = sid;
			char tid[OTA_ID_LEN + 1];
			ota_err trc = sign_record(&sg, "transition", tr, lane_boundary, sg.lane_prior, tid, &e);
			if (trc != OTA_OK) {
				/* not listed: the receipt names only transitions that
				 * were signed (or, without a key, made) */
				json_decref(tr);
				rc = trc;
				json_decref(srec);
				break;
			}
			json_array_append(evidence, tr);
			json_array_append_new(transitions, id_of(tr));
			json_decref(tr);
			if (tid[0] != '\0')
				memcpy(sg.lane_prior, tid, sizeof tid);
		}
		sg.segment = sid;
		sg.canon = str_at(cs, "identity", NULL);
		sg.eff = str_at(es, "identity", NULL);
		sg.seg_prior[0] = '\0';
		ota_oci_run_opts oo = o->oci;
		oo.on_initial = on_initial;
		oo.on_initial_ctx = &sg;
		ota_oci_result r;
		ota_error se;
		ota_error_clear(&se);
		oo.on_terminal = on_terminal;
		oo.on_terminal_ctx = &sg;
		nonce_job pre;
		presign_start(&sg, &pre);
		sg.cons_started = false;
		sg.term.started = false;
		ota_err src = ota_oci_run(op, &oo, &r, &se);
		char term_id[OTA_ID_LEN + 1];
		bool term_signed;
		{
			term_signed = sg.term.started;
			ota_error fe;
			ota_error_clear(&fe);
			ota_err frc = segment_signed_finish(&sg, term_id, &fe);
			if (frc != OTA_OK && src == OTA_OK) {
				src = frc;
				se = fe;
			}
		}
		if (sg.seg_prior[0] != '\0')
			json_object_set_new(srec, "initial_attestation_identity",
			                    json_string(sg.seg_prior));
		if (term_signed) {
			if (term_id[0] != '\0')
				json_object_set_new(srec, "terminal_attestation_identity",
				                    json_string(term_id));
		} else if (r.terminal_record != NULL && o->runner_key != NULL) {
			char tid[OTA_ID_LEN + 1];
			ota_error te;
			ota_error_clear(&te);
			ota_err trc = sign_record_with(&sg, "terminal_application", r.terminal_record,
			                               r.container_id, sg.seg_prior,
			                               presigned_terminal(&sg), tid, &te);
			if (trc == OTA_OK)
				json_object_set_new(srec, "terminal_attestation_identity", json_string(tid));
			else if (src == OTA_OK) {
				src = trc;
				se = te;
			}
		}
		sg.pre = NULL; /* pre lives in this iteration only */
		report_orphans(o, r.finalized_orphans);
		any_started = any_started || r.started;
		/* a signing runner whose terminal application could not be signed
		 * holds no proof of how the segment ended: unknown, as ota-verify
		 * archive derives it (archive_terminal_missing), never the
		 * provider's enforced_through_completion */
		ota_oci_terminal seg_t = r.terminal;
		if (o->runner_key != NULL && seg_t == OTA_OCI_ENFORCED_THROUGH_COMPLETION &&
		    json_object_get(srec, "terminal_attestation_identity") == NULL)
			seg_t = OTA_OCI_ENFORCEMENT_UNKNOWN_AFTER_INTERRUPTION;
		overall = worst(overall, seg_t);
		json_object_set_new(srec, "status", json_string(ota_oci_terminal_name(seg_t)));
		json_object_set_new(srec, "container_id", json_string(r.container_id));
		json_object_set_new(srec, "exit_status", json_integer(r.exit_status));
		json_object_set_new(srec, "timed_out", json_boolean(r.timed_out));
		json_object_set_new(srec, "rendered_policy_identity", id_of(r.rendered));
		json_object_set_new(srec, "applied_policy_identity", id_of(r.applied));
		json_object_set_new(srec, "initial_application_identity", id_of(r.initial));
		json_object_set_new(srec, "terminal_application_identity", id_of(r.terminal_record));
		json_object_set_new(srec, "boundary_lease_identity",
		                    json_string(r.container_id[0] ? r.container_id : ""));
		json_object_set_new(srec, "boundary_identity",
		                    json_sprintf("container:%s:%s", o->oci.runtime.kind == OTA_OCI_CRUN ? "crun" : "runc",
		                                 r.container_id));
		if (src != OTA_OK)
			json_object_set_new(srec, "error", json_string(ota_err_name(src)));
		json_array_append_new(segments, srec);
		if (r.rendered != NULL)
			json_array_append(evidence, r.rendered);
		if (r.applied != NULL)
			json_array_append(evidence, r.applied);
		if (r.initial != NULL)
			json_array_append(evidence, r.initial);
		if (r.terminal_record != NULL) {
			json_array_append(evidence, r.terminal_record);
			prev_terminal = r.terminal_record;
		}
		bool ok = src == OTA_OK && seg_t == OTA_OCI_ENFORCED_THROUGH_COMPLETION;
		if (src == OTA_OK && r.exit_status != 0 && *exit_status == 0)
			*exit_status = r.exit_status;
		ota_oci_result_clear(&r);
		if (src != OTA_OK) {
			rc = src;
			e = se;
		}
		if (!ok || *exit_status != 0) {
			all_ran = all_ran && i + 1 == n;
			break;
		}
	}
	for (size_t i = 0; plans != NULL && i < n; i++)
		ota_runner_plan_free(plans[i]);
	free(plans);
	/* A lane stopped by an error before its last segment ran (a
	 * transition, an initial or terminal record that could not be signed,
	 * a lease that could not be finalized, any failure of a segment that
	 * is not the last) did not run through: the segments it never reached
	 * count as not started, so the lane is enforcement_lost once execution
	 * started (not_started before), never enforced_through_completion, and
	 * not every segment ran. */
	if (rc != OTA_OK && json_array_size(segments) < n) {
		overall = worst(overall, OTA_OCI_NOT_STARTED);
		all_ran = false;
	}
	/* Derived status: only when every process segment ended
	 * enforced_through_completion with initial and terminal evidence; a
	 * lane whose execution started and did not end so is
	 * enforcement_lost (or unknown), never not_started or refused (the
	 * rule ota-verify archive re-derives). */
	const char *status = ota_archive_lane_status(ota_oci_terminal_name(overall), any_started);
	/* every process segment's controls, not the first segment's for all */
	json_t *rt_controls =
		ota_archive_runtime_controls(p, strcmp(status, "enforced_through_completion") == 0);
	const json_t *pe = json_object_get(admission, "provider_evaluation");
	json_t *adapter = ota_oci_capability_descriptor(o->oci.runtime.kind);
	json_t *sp = json_pack(
		"{s:s?, s:O?, s:s?, s:O?, s:s, s:o, s:s?, s:s, s:o, s:o, s:o, s:o, s:{s:s, s:n, s:s}}",
		"canonical_identity", ota_policy_canonical_identity(p), "restriction_overlay_identities",
		json_object_get(eff, "restriction_overlay_identities"), "effective_identity",
		ota_policy_effective_identity(p), "target_platform",
		json_object_get(eff, "target_platform"), "provider_target", "oci_local",
		"provider_adapter_identity", id_of(adapter), "capability_identity",
		str_at(pe, "capability_identity", NULL), "status", status, "segments", segments,
		"transition_identities", transitions, "runtime_controls", rt_controls,
		"application_obligations",
		json_deep_copy(json_object_get(admission, "application_obligations") != NULL
		                       ? json_object_get(admission, "application_obligations")
		                       : json_array()),
		"attestation", "issuer_identity", o->issuer != NULL ? o->issuer : "runner:local",
		"challenge_identity", "verification",
		o->runner_key != NULL ? "runner_owned_cose_sign1" : "runner_owned_unsigned");
	json_decref(adapter);
	json_t *receipt = json_pack("{s:s, s:s?, s:b, s:b, s:I, s:o, s:o, s:o}", "kind",
	                            "ota.receipt/v1", "txn", o->oci.txn, "execution_started",
	                            any_started, "all_segments_ran", all_ran, "exit_status",
	                            (json_int_t)*exit_status, "sandbox_policy", sp, "evidence",
	                            evidence, "attestations", sg.atts);
	if (receipt == NULL ||
	    json_object_set_new(receipt, "revision",
	                        revision[0] != '\0' ? json_string(revision) : json_null()) != 0 ||
	    json_object_set_new(receipt, "worktree",
	                        worktree[0] != '\0' ? json_string(worktree) : json_null()) != 0) {
		json_decref(receipt);
		return OTA_ERR_NOMEM;
	}
	if (rc != OTA_OK)
		json_object_set_new(receipt, "error",
		                    json_pack("{s:s, s:s, s:s}", "code", ota_err_name(e.code), "where",
		                              e.where, "message", e.what));
	*receipt_out = receipt;
	if (rc != OTA_OK && err != NULL && err->code == OTA_OK)
		*err = e;
	return rc;
}

ota_err ota_runner_sign_cleanup(const ota_runner_opts *o, const json_t *record, json_t **att_out,
                                ota_error *err)
{
	*att_out = NULL;
	if (o == NULL || o->runner_key == NULL || o->nonces == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "cleanup",
		                     "signing a cleanup record needs a runner key and a nonce store");
	const char *txn = json_string_value(json_object_get(record, "txn"));
	const char *boundary = json_string_value(json_object_get(record, "container_id"));
	if (boundary == NULL)
		return ota_error_set(err, OTA_ERR_JSON_TYPE, "cleanup", "record has no container_id");
	ota_runner_opts ro = *o;
	ro.oci.txn = txn != NULL ? txn : "txn";
	signer s;
	memset(&s, 0, sizeof s);
	s.o = &ro;
	s.atts = json_array();
	if (s.atts == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, "cleanup", NULL);
	char host_os[16], host_arch[16], host_variant[16];
	ota_oci_host_platform(host_os, host_arch, host_variant);
	snprintf(s.os, sizeof s.os, "%s", host_os);
	snprintf(s.arch, sizeof s.arch, "%s", host_arch);
	snprintf(s.variant, sizeof s.variant, "%s", host_variant);
	const char *rt = json_string_value(json_object_get(record, "runtime"));
	json_t *desc = ota_oci_capability_descriptor(rt != NULL && strcmp(rt, "crun") == 0 ? OTA_OCI_CRUN
	                                                                                   : OTA_OCI_RUNC);
	if (desc == NULL || ota_json_identity(desc, s.adapter, NULL) != OTA_OK)
		s.adapter[0] = '\0';
	json_decref(desc);
	char id[OTA_ID_LEN + 1];
	ota_err rc = sign_record(&s, "cleanup", record, boundary, NULL, id, err);
	if (rc == OTA_OK) {
		*att_out = json_incref(json_array_get(s.atts, 0));
		if (*att_out == NULL)
			rc = ota_error_set(err, OTA_ERR_INTERNAL, "cleanup", "no signed record");
	}
	json_decref(s.atts);
	return rc;
}
