/*
 * ota run TASK / ota up --workflow W: real execution under oci_local.
 * --dry-run is the policy group's admission (same decision, nothing runs).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ota/archive.h"
#include "ota/json.h"
#include "ota/limits.h"
#include "ota/oci.h"
#include "ota/policy.h"
#include "ota/runner.h"
#include "ota/trust.h"

/* The policy group's dry-run admission (cli/cmd_policy.c). */
int cmd_policy_dry_run(int argc, char **argv, bool workflow);

#define MAX_OVERLAYS 64

/* Set by SIGINT/SIGTERM; the run finalizes its container and lease. */
static volatile sig_atomic_t g_cancel;

static void on_signal(int sig)
{
	(void)sig;
	g_cancel = 1;
}

typedef struct run_opts {
	const char *file, *lane, *workflow, *target, *org_policy, *runtime, *rootfs, *store;
	const char *lease_db, *receipt, *runtime_root, *state_dir;
	const char *key, *nonce_db, *issuer, *trust_root;
	const char *overlays[MAX_OVERLAYS];
	size_t noverlays;
	const char *archive;             /* --archive PATH (default .ota/archives/TXN.json) */
	const char *trust[8];            /* --trust DIR|FILE: the chain embedded in the archive */
	size_t ntrust;
	bool no_archive;
	bool agent, json, dry_run, no_org;
	bool descriptor; /* --descriptor given: a --dry-run option only */
	long timeout;
	int runtime_timeout; /* --runtime-timeout S: every runtime command's deadline; 0 the defaults */
	int64_t pids_limit;   /* --pids-limit N: 0 the default, -1 none (given as 0) */
	int64_t memory_limit; /* --memory-limit BYTES[K|M|G]: 0 none */
	cli_fwd *fwd;         /* the task's output, forwarded off the enforcement loop */
} run_opts;

static int usage_of(bool workflow);

/*
 * A usage error (exit 2): with --json anywhere on the command line, the
 * policy-error document on stdout (code usage, where the command, message
 * msg or the usage line), as the dry run prints one; msg (when given) and
 * the usage line on stderr always.
 */
static int run_usage(int argc, char **argv, bool workflow, const char *msg)
{
	bool json = false;
	const char *file = "ota.yaml";
	for (int i = 1; i < argc; i++) {
		json = json || strcmp(argv[i], "--json") == 0;
		if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--file") == 0) && i + 1 < argc)
			file = argv[i + 1];
	}
	const char *cmd = workflow ? "up" : "run";
	if (json) {
		json_t *j = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:b, s:b}", "ok", 0, "code",
		                      "usage", "where", cmd, "message",
		                      msg != NULL ? msg : "invalid arguments", "path", file, "command",
		                      cmd, "dry_run", 0, "execution_started", 0);
		if (j != NULL)
			cli_print_json(j);
		json_decref(j);
	}
	if (msg != NULL) {
		fprintf(stderr, "ota: usage: %s\n", msg);
		return CLI_USAGE;
	}
	return usage_of(workflow);
}

static int usage_of(bool workflow)
{
	return cli_usage("ota", workflow
	                                ? "ota up --workflow W --agent [--sandbox-target oci_local] "
	                                  "[--runtime runc|crun] [--rootfs DIR] [--image-store DIR] "
	                                  "[--runtime-root DIR] [--state-dir DIR] [--lease-db PATH] [--timeout S] [--runtime-timeout S] "
	                                  "[--pids-limit N] [--memory-limit BYTES] "
	                                  "[--key PEM [--nonce-db PATH] [--issuer ID] [--trust-root ID] [--trust DIR|FILE]...] [--org-policy FILE | --no-org-policy] [--overlay FILE]... [--receipt FILE] [--archive PATH | --no-archive] [-f FILE] "
	                                  "[--json] [--dry-run]"
	                                : "ota run TASK --agent [--sandbox-target oci_local] "
	                                  "[--runtime runc|crun] [--rootfs DIR] [--image-store DIR] "
	                                  "[--runtime-root DIR] [--state-dir DIR] [--lease-db PATH] [--timeout S] [--runtime-timeout S] "
	                                  "[--pids-limit N] [--memory-limit BYTES] "
	                                  "[--key PEM [--nonce-db PATH] [--issuer ID] [--trust-root ID] [--trust DIR|FILE]...] [--org-policy FILE | --no-org-policy] [--overlay FILE]... [--receipt FILE] [--archive PATH | --no-archive] [-f FILE] "
	                                  "[--json] [--dry-run]");
}

/* Called from the enforcement loop: never blocks (cli/output_fwd.c). */
static void on_output(void *ctx, int fd, const uint8_t *p, size_t n)
{
	const run_opts *o = ctx;
	cli_fwd_write(o->fwd, (fd == 2 || o->json) ? 2 : 1, p, n);
}

/*
 * A lane that ends before the runner starts (contract, overlay, policy,
 * key or trust-chain refusal): with --json the same object as the dry run's
 * failure (policy-error.schema.json) on stdout, naming command, path and
 * lane, nothing started; the error line on stderr always.
 */
static int run_fail(const run_opts *o, bool workflow, const ota_error *e)
{
	if (o->json) {
		json_t *j = cli_error_json(e);
		if (j != NULL) {
			json_object_set_new(j, "command", json_string(workflow ? "up" : "run"));
			json_object_set_new(j, "path", json_string(o->file));
			const char *lane = workflow ? o->workflow : o->lane;
			if (lane != NULL)
				json_object_set_new(j, workflow ? "workflow" : "task", json_string(lane));
			json_object_set_new(j, "dry_run", json_false());
			json_object_set_new(j, "execution_started", json_false());
			cli_print_json(j);
			json_decref(j);
		}
	}
	return cli_fail("ota", e);
}

/* The refusal of a lane's admission, as the dry run prints it (command, path,
 * lane, dry_run false, the admission), on stdout with --json. */
static void print_refusal(const run_opts *o, bool workflow, const ota_contract *c,
                          const json_t *adm)
{
	if (!o->json)
		return;
	json_t *j = json_pack("{s:b, s:s, s:s, s:s?, s:b, s:b, s:s, s:s, s:O}", "ok", 0, "command",
	                      workflow ? "up" : "run", "path", o->file,
	                      workflow ? "workflow" : "task", workflow ? o->workflow : o->lane,
	                      "dry_run", 0, "execution_started", 0, "contract_snapshot_identity",
	                      ota_contract_snapshot_identity(c), "contract_identity",
	                      ota_contract_identity(c), "sandbox_admission", adm);
	if (j != NULL)
		cli_print_json(j);
	json_decref(j);
}

/* A container id as a file name: [A-Za-z0-9_-], then [A-Za-z0-9._-]. */
static bool safe_name(const char *s)
{
	if (s == NULL || s[0] == '\0' || s[0] == '.' || strlen(s) > 100)
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

/*
 * A dead runner's lease this run finalized: its cleanup record (signed with
 * --key) as an ota.cleanup_report/v1 of its own, written atomically to
 * REPO/.ota/cleanup/CONTAINER.json beneath the repository, no symlink
 * followed (it belongs to another transaction, not to this run's receipt).
 */
static void on_orphan(void *ctx, const json_t *rec, ota_err signing)
{
	const char *repo = ctx != NULL ? ctx : ".";
	const char *id = json_string_value(json_object_get(rec, "container_id"));
	char name[128], shown[4096];
	snprintf(name, sizeof name, "%s.json", safe_name(id) ? id : "unknown");
	snprintf(shown, sizeof shown, "%s/.ota/cleanup/%s", repo, name);
	bool done = json_is_true(json_object_get(rec, "confirmed")) &&
	            json_is_true(json_object_get(rec, "lease_closed"));
	json_t *rep = json_pack("{s:s, s:[O], s:i, s:b}", "kind", "ota.cleanup_report/v1",
	                        "finalized", rec, "skipped_live", 0, "ok", signing == OTA_OK && done);
	if (rep != NULL && signing != OTA_OK)
		json_object_set_new(rep, "error", json_pack("{s:s}", "code", ota_err_name(signing)));
	char *text = rep != NULL ? ota_json_dumps(rep, true) : NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = text == NULL ? ota_error_set(&e, OTA_ERR_NOMEM, shown, NULL)
	                          : cli_repo_write(repo, ".ota/cleanup", name,
	                                           ota_bytes_make(text, strlen(text)), 0644, shown,
	                                           sizeof shown, &e);
	if (rc == OTA_OK)
		fprintf(stderr, "ota: %s a dead runner's lease %s; cleanup evidence %s\n",
		        done ? "finalized" : "could NOT confirm the cleanup of",
		        id != NULL ? id : "?", shown);
	else
		fprintf(stderr, "ota: cleanup evidence %s not written: %s: %s: %s\n", shown,
		        ota_err_name(rc), e.where, e.what);
	free(text);
	json_decref(rep);
}

/* Takes ownership of buf (freed, or kept in *keep for the archive). */
static ota_err load_overlay_bytes(uint8_t *buf, size_t n, const char *name,
                                  ota_overlay_source src, ota_overlay **out,
                                  ota_archive_overlay_src *keep, ota_error *e)
{
	ota_err rc = ota_overlay_load(ota_bytes_make(buf, n), name, src, out, e);
	if (rc == OTA_OK && keep != NULL) {
		/* the exact bytes go into the archive */
		keep->bytes = ota_bytes_make(buf, n);
		keep->name = name;
		keep->source = src;
		return rc;
	}
	free(buf);
	return rc;
}

static ota_err load_overlay(const char *path, ota_overlay_source src, ota_overlay **out,
                            ota_archive_overlay_src *keep, ota_error *e)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	ota_err rc = ota_file_read(path, OTA_MAX_YAML_BYTES, &buf, &n, e);
	if (rc != OTA_OK)
		return rc;
	return load_overlay_bytes(buf, n, path, src, out, keep, e);
}

static int run_lane(int argc, char **argv, bool workflow)
{
	if (cli_help_asked())
		return usage_of(workflow);
	run_opts o;
	memset(&o, 0, sizeof o);
	o.file = "ota.yaml";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--dry-run") == 0)
			o.dry_run = true;
		else if (strcmp(a, "--agent") == 0)
			o.agent = true;
		else if (strcmp(a, "--json") == 0)
			o.json = true;
		else if (strcmp(a, "--no-org-policy") == 0)
			o.no_org = true;
		else if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && more)
			o.file = argv[++i];
		else if (strcmp(a, "--workflow") == 0 && more)
			o.workflow = argv[++i];
		else if (strcmp(a, "--sandbox-target") == 0 && more)
			o.target = argv[++i];
		else if (strcmp(a, "--org-policy") == 0 && more)
			o.org_policy = argv[++i];
		else if (strcmp(a, "--runtime") == 0 && more)
			o.runtime = argv[++i];
		else if (strcmp(a, "--rootfs") == 0 && more)
			o.rootfs = argv[++i];
		else if (strcmp(a, "--image-store") == 0 && more)
			o.store = argv[++i];
		else if (strcmp(a, "--lease-db") == 0 && more)
			o.lease_db = argv[++i];
		else if (strcmp(a, "--receipt") == 0 && more)
			o.receipt = argv[++i];
		else if (strcmp(a, "--key") == 0 && more)
			o.key = argv[++i];
		else if (strcmp(a, "--nonce-db") == 0 && more)
			o.nonce_db = argv[++i];
		else if (strcmp(a, "--issuer") == 0 && more)
			o.issuer = argv[++i];
		else if (strcmp(a, "--trust-root") == 0 && more)
			o.trust_root = argv[++i];
		else if (strcmp(a, "--archive") == 0 && more)
			o.archive = argv[++i];
		else if (strcmp(a, "--no-archive") == 0)
			o.no_archive = true;
		else if (strcmp(a, "--trust") == 0 && more && o.ntrust < 8)
			o.trust[o.ntrust++] = argv[++i];
		else if (strcmp(a, "--runtime-root") == 0 && more)
			o.runtime_root = argv[++i];
		else if (strcmp(a, "--state-dir") == 0 && more)
			o.state_dir = argv[++i];
		else if (strcmp(a, "--timeout") == 0 && more) {
			char *end = NULL;
			o.timeout = strtol(argv[++i], &end, 10);
			if (end == NULL || *end != '\0' || o.timeout < 0)
				return run_usage(argc, argv, workflow, NULL);
		} else if (strcmp(a, "--runtime-timeout") == 0 && more) {
			char *end = NULL;
			errno = 0;
			long v = strtol(argv[++i], &end, 10);
			if (end == argv[i] || *end != '\0' || errno != 0 || v < 1 ||
			    v > OTA_OCI_RT_TIMEOUT_MAX)
				return run_usage(argc, argv, workflow,
				                 "--runtime-timeout takes 1 to 3600 seconds");
			o.runtime_timeout = (int)v;
		} else if (strcmp(a, "--pids-limit") == 0 && more) {
			char *end = NULL;
			errno = 0;
			long long v = strtoll(argv[++i], &end, 10);
			if (end == argv[i] || *end != '\0' || errno != 0 ||
			    (v != 0 && (v < OTA_OCI_PIDS_LIMIT_MIN || v > OTA_OCI_PIDS_LIMIT_MAX)))
				return run_usage(argc, argv, workflow,
				                 "--pids-limit takes 16 to 4194304 processes, or 0 for none");
			o.pids_limit = v == 0 ? -1 : (int64_t)v;
		} else if (strcmp(a, "--memory-limit") == 0 && more) {
			char *end = NULL;
			errno = 0;
			const char *sv = argv[++i];
			unsigned long long v = sv[0] >= '0' && sv[0] <= '9' ? strtoull(sv, &end, 10) : 0;
			unsigned long long mul = 1;
			if (end != NULL && end != sv && (*end == 'K' || *end == 'M' || *end == 'G') &&
			    end[1] == '\0') {
				mul = *end == 'K' ? 1ULL << 10 : *end == 'M' ? 1ULL << 20 : 1ULL << 30;
				end++;
			}
			if (end == NULL || end == sv || *end != '\0' || errno != 0 ||
			    v > (unsigned long long)OTA_OCI_MEMORY_LIMIT_MAX / mul ||
			    v * mul < (unsigned long long)OTA_OCI_MEMORY_LIMIT_MIN || (v * mul) % 4096 != 0)
				return run_usage(argc, argv, workflow,
				                 "--memory-limit takes a multiple of 4096 bytes from 4M to "
				                 "1024G (suffix K, M or G)");
			o.memory_limit = (int64_t)(v * mul);
		} else if (strcmp(a, "--overlay") == 0 && more) {
			if (o.noverlays == MAX_OVERLAYS)
				return run_usage(argc, argv, workflow, NULL);
			o.overlays[o.noverlays++] = argv[++i];
		} else if (strcmp(a, "--descriptor") == 0 && more) {
			i++; /* dry-run only: a real run is refused below */
			o.descriptor = true;
		} else if (a[0] != '-' && o.lane == NULL && !workflow)
			o.lane = a;
		else
			return run_usage(argc, argv, workflow, NULL);
	}
	/* one meaning for dry and real runs: naming an org policy and ignoring it is a contradiction */
	if (o.org_policy != NULL && o.no_org) {
		return run_usage(argc, argv, workflow,
		                 "--org-policy and --no-org-policy contradict each other");
	}
	if (o.dry_run)
		return cmd_policy_dry_run(argc, argv, workflow);
	if (o.descriptor) {
		/* a real run executes only inside the built-in oci_local; a descriptor
		 * file would be read by nobody */
		return run_usage(argc, argv, workflow,
		                 "--descriptor is a --dry-run option; a real run admits against the "
		                 "built-in oci_local descriptor");
	}
	if (workflow ? o.workflow == NULL : o.lane == NULL)
		return run_usage(argc, argv, workflow, NULL);
	if ((o.nonce_db != NULL || o.issuer != NULL || o.trust_root != NULL) && o.key == NULL) {
		/* they shape the signed records; without --key nothing is signed and
		 * they would be read by nobody (ota cleanup refuses the same) */
		return run_usage(argc, argv, workflow,
		                 "--nonce-db, --issuer and --trust-root take effect only with --key");
	}
	if (!o.agent && o.target == NULL) {
		return run_usage(argc, argv, workflow,
		                 "real execution here happens only inside an enforced sandbox: pass "
		                 "--agent or --sandbox-target oci_local");
	}
	/* any other --sandbox-target is refused by the admission below, as the
	 * dry run refuses it (sandbox_target_unknown): one decision for both */
	ota_oci_runtime_kind kind = OTA_OCI_RUNC;
	const char *rt_env = o.runtime != NULL ? o.runtime : getenv("OTA_OCI_RUNTIME");
	if (rt_env != NULL && strcmp(rt_env, "crun") == 0)
		kind = OTA_OCI_CRUN;
	else if (rt_env != NULL && strcmp(rt_env, "runc") != 0)
		return run_usage(argc, argv, workflow, NULL);

	ota_error e;
	ota_error_clear(&e);
	ota_contract *c = NULL;
	ota_overlay *ovs[MAX_OVERLAYS + 1];
	size_t nov = 0;
	ota_policy *p = NULL;
	json_t *adm = NULL, *receipt = NULL;
	bool admitted = false;
	int ret = CLI_INTERNAL;
	ota_key *key = NULL; /* the runner key also signs the archive's receipt */
	char repo[PATH_MAX];
	{
		char tmp[PATH_MAX];
		snprintf(tmp, sizeof tmp, "%s", o.file);
		if (realpath(dirname(tmp), repo) == NULL) {
			ota_error_set(&e, OTA_ERR_IO, o.file, "cannot resolve the contract directory");
			return run_fail(&o, workflow, &e);
		}
	}
	uint8_t *yaml = NULL; /* kept for the archive */
	size_t ylen = 0;
	ota_archive_overlay_src ov_src[MAX_OVERLAYS + 1];
	memset(ov_src, 0, sizeof ov_src);
	cli_archive_chain chain;
	memset(&chain, 0, sizeof chain);
	ota_err rc = cli_contract_read(o.file, &yaml, &ylen, &e);
	if (rc == OTA_OK)
		rc = ota_contract_load(ota_bytes_make(yaml, ylen), o.file, &c, &e);
	/* the default org policy, REPO/.ota/org-policy.yaml, is read beneath the
	 * repository (no symlink followed, a FIFO refused, never blocking);
	 * --org-policy FILE is the operator's path */
	char org_def[PATH_MAX + 32]; /* named in ov_src until the archive is written */
	if (rc == OTA_OK && !o.no_org) {
		ota_overlay *ov = NULL;
		bool have = false;
		if (o.org_policy != NULL) {
			rc = load_overlay(o.org_policy, OTA_OVERLAY_ORG_POLICY, &ov, &ov_src[nov], &e);
			have = true;
		} else {
			uint8_t *b = NULL;
			size_t bl = 0;
			rc = cli_org_policy_read(repo, &b, &bl, org_def, sizeof org_def, &e);
			if (rc == OTA_OK && b != NULL) {
				rc = load_overlay_bytes(b, bl, org_def, OTA_OVERLAY_ORG_POLICY, &ov,
				                        &ov_src[nov], &e);
				have = true;
			}
		}
		if (have) {
			if (rc == OTA_OK && ov != NULL)
				ovs[nov++] = ov;
			else
				free((void *)(uintptr_t)ov_src[nov].bytes.ptr);
		}
	}
	/* what this run writes under REPO/.ota (its archive, orphans' cleanup
	 * records) must be reachable without a symlink: refused before anything
	 * is prepared (the writes themselves resolve beneath the repository
	 * again, for what a task changes meanwhile) */
	if (rc == OTA_OK) {
		const char *subs[3] = {".ota", ".ota/cleanup", ".ota/archives"};
		size_t nsubs = !o.no_archive && o.archive == NULL ? 3 : 2;
		rc = cli_repo_state_check(repo, subs, nsubs, &e);
	}
	for (size_t i = 0; rc == OTA_OK && i < o.noverlays; i++) {
		ota_overlay *ov = NULL;
		rc = load_overlay(o.overlays[i], OTA_OVERLAY_FILE, &ov, &ov_src[nov], &e);
		if (rc == OTA_OK)
			ovs[nov++] = ov;
	}
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	ota_platform_host(&po.native_platform);
	ota_capability_descriptor desc;
	if (rc == OTA_OK) {
		const char *txt = ota_policy_builtin_descriptor("oci_local");
		rc = txt != NULL ? ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)),
		                                                   &po.native_platform, &desc, &e)
		                 : ota_error_set(&e, OTA_ERR_INTERNAL, "oci_local", "no descriptor");
	}
	if (rc == OTA_OK)
		rc = ota_policy_compile(c, workflow ? OTA_LANE_WORKFLOW : OTA_LANE_TASK,
		                        workflow ? o.workflow : o.lane, &po,
		                        (const ota_overlay *const *)ovs, nov, &p, &e);
	ota_admission_request req = {o.agent, o.target, &desc, 1};
	if (rc == OTA_OK)
		rc = ota_policy_admit(p, &req, &adm, &admitted, &e);
	if (rc != OTA_OK) {
		ret = run_fail(&o, workflow, &e);
		goto out;
	}
	if (!admitted) {
		print_refusal(&o, workflow, c, adm);
		fprintf(stderr, "ota: refused: %s\n",
		        json_string_value(json_object_get(adm, "message")) != NULL
		                ? json_string_value(json_object_get(adm, "message"))
		                : "sandbox admission refused");
		ret = CLI_REFUSED;
		goto out;
	}
	if (!json_is_string(json_object_get(adm, "provider_target")) ||
	    strcmp(json_string_value(json_object_get(adm, "provider_target")), "oci_local") != 0) {
		/* e.g. not_required: plain agent admission, no sandbox evaluation; this
		 * build executes lanes only inside an oci_local boundary */
		print_refusal(&o, workflow, c, adm);
		fprintf(stderr, "ota: refused: admission decision %s: this runner executes a lane only "
		                "when it is admitted to oci_local (pass --sandbox-target oci_local to "
		                "evaluate it)\n",
		        json_string_value(json_object_get(adm, "decision")) != NULL
		                ? json_string_value(json_object_get(adm, "decision"))
		                : "unknown");
		ret = CLI_REFUSED;
		goto out;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* a reader of our output that goes away (`| head`) is EPIPE to the
	 * forwarder, not the end of the runner with the container running */
	struct sigaction ign;
	memset(&ign, 0, sizeof ign);
	ign.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &ign, NULL);
	fflush(stdout);
	fflush(stderr);
	if ((o.fwd = cli_fwd_start()) == NULL) {
		ota_error_set(&e, OTA_ERR_NOMEM, "output", "cannot start the output forwarder");
		ret = run_fail(&o, workflow, &e);
		goto out;
	}
	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.repo = repo;
	ro.on_orphan = on_orphan;
	ro.on_orphan_ctx = (void *)(uintptr_t)repo;
	ro.rootfs = o.rootfs;
	ro.image_store = o.store != NULL ? o.store : getenv("OTA_IMAGE_STORE");
	ro.timeout_seconds = o.timeout;
	ro.oci.runtime.kind = kind;
	ro.oci.runtime.root = o.runtime_root;
	ro.oci.runtime_timeout_seconds = o.runtime_timeout;
	ro.oci.pids_limit = o.pids_limit;
	ro.oci.memory_limit_bytes = o.memory_limit;
	ro.oci.state_dir = o.state_dir;
	const char *db = o.lease_db != NULL ? o.lease_db : getenv("OTA_LEASE_DB");
	ro.oci.lease_db = db;
	char txn[64];
	{
		uint8_t rnd[12];
		FILE *ur = fopen("/dev/urandom", "re");
		size_t got = ur != NULL ? fread(rnd, 1, sizeof rnd, ur) : 0;
		if (ur != NULL)
			fclose(ur);
		char hex[25];
		ota_hex_encode(ota_bytes_make(rnd, got == sizeof rnd ? sizeof rnd : 0), hex);
		snprintf(txn, sizeof txn, "txn-%s", hex);
	}
	ro.oci.txn = txn;
	ro.oci.cancel = &g_cancel;
	ro.oci.on_output = on_output;
	ro.oci.output_ctx = &o;
	ota_nonce_store *nonces = NULL;
	/* the signing key and nonce database: refused inside the boundary */
	const char *private_paths[2] = {NULL, NULL};
	if (o.key != NULL) {
		rc = ota_key_load_file(o.key, &key, &e);
		ota_nonce_opts nopts;
		ota_nonce_opts_init(&nopts);
		const char *ndb = o.nonce_db != NULL ? o.nonce_db : getenv("OTA_NONCE_DB");
		if (rc == OTA_OK)
			rc = ota_nonce_store_open(ndb != NULL ? ndb : "/var/lib/ota/nonces.db", &nopts,
			                          &nonces, &e);
		if (rc != OTA_OK) {
			ret = run_fail(&o, workflow, &e);
			goto out;
		}
		private_paths[0] = o.key;
		private_paths[1] = ndb != NULL ? ndb : "/var/lib/ota/nonces.db";
		ro.oci.private_paths = private_paths;
		ro.oci.n_private_paths = 2;
		ro.runner_key = key;
		ro.nonces = nonces;
		ro.issuer = o.issuer;
		ro.trust_root = o.trust_root;
	}
	/* --trust: the chain the archive embeds; the runner binds its latest
	 * identity and signs as the runner principal that holds --key */
	char runner_id[OTA_MAX_ISSUER_BYTES + 1] = "";
	for (size_t i = 0; rc == OTA_OK && i < o.ntrust; i++)
		rc = cli_archive_chain_add(&chain, o.trust[i], &e);
	if (rc == OTA_OK)
		rc = cli_archive_chain_finish(&chain, &e);
	if (rc == OTA_OK && key != NULL)
		/* scoped as ota-verify archive judges the receipt: this lane,
		 * and oci_local, the one target this build's runner runs on */
		rc = cli_archive_runner_principal(&chain, key, ota_clock_now(NULL),
		                                  workflow ? o.workflow : o.lane, "oci_local",
		                                  runner_id, sizeof runner_id, &e);
	if (rc != OTA_OK) {
		ret = run_fail(&o, workflow, &e);
		ota_nonce_store_close(nonces);
		goto out;
	}
	if (chain.latest != NULL && ro.trust_root == NULL)
		ro.trust_root = ota_trust_root_identity(chain.latest);
	if (runner_id[0] != '\0' && ro.issuer == NULL)
		ro.issuer = runner_id;
	char version[128];
	/* under the --version deadline, and ended by SIGINT/SIGTERM */
	ota_oci_runtime_version_cancel(&ro.oci.runtime, &g_cancel, version, sizeof version);
	ro.oci.runtime.version = version;
	int status = 0;
	bool evidence_lost = false; /* the archive or the asked-for receipt not written */
	ota_error rev_err, wt_err;
	ota_error_clear(&rev_err); /* a run refused before reading them leaves them so */
	ota_error_clear(&wt_err);
	ro.revision_error = &rev_err;
	ro.worktree_error = &wt_err;
	rc = ota_runner_run(p, adm, &ro, &receipt, &status, &e);
	ota_nonce_store_close(nonces);
	/* the task's output first (what a stalled reader did not take within
	 * 10 s is dropped), then the runner's own lines */
	uint64_t dropped = cli_fwd_finish(o.fwd, 10);
	o.fwd = NULL;
	if (dropped > 0)
		fprintf(stderr,
		        "ota: note: %llu bytes of the task's output were not forwarded (the reader "
		        "did not keep up, or went away)\n",
		        (unsigned long long)dropped);
	/* a merge gate requiring the revision or the work tree will refuse
	 * this run's archive: say why now (no .git at all is not news) */
	if (receipt != NULL && rev_err.code != OTA_OK && rev_err.code != OTA_ERR_NOT_FOUND)
		fprintf(stderr, "ota: note: the revision is not recorded: %s: %s: %s\n",
		        ota_err_name(rev_err.code), rev_err.where, rev_err.what);
	if (receipt != NULL && wt_err.code != OTA_OK)
		fprintf(stderr, "ota: note: the work tree is not recorded: %s: %s: %s\n",
		        ota_err_name(wt_err.code), wt_err.where, wt_err.what);
	if (receipt != NULL) {
		json_object_set(receipt, "sandbox_admission", adm);
		if (!o.no_archive) {
			/* the archive: contract bytes, overlays, selection, chain, signed receipt */
			ota_archive_input ai;
			memset(&ai, 0, sizeof ai);
			ai.contract = ota_bytes_make(yaml, ylen);
			ai.contract_name = "ota.yaml";
			ai.overlays = ov_src;
			ai.noverlays = nov;
			ai.lane_kind = workflow ? OTA_LANE_WORKFLOW : OTA_LANE_TASK;
			ai.lane = workflow ? o.workflow : o.lane;
			ai.agent = o.agent;
			ai.sandbox_target = o.target;
			ai.native_platform = po.native_platform;
			ai.trust_chain = chain.items;
			ai.ntrust = chain.n;
			ai.receipt = receipt;
			ai.runner_key = key;
			ai.signed_at = ota_clock_now(NULL);
			if (cli_archive_write(&ai, o.archive, repo, txn, o.json) != CLI_OK)
				evidence_lost = true;
		}
		if (o.receipt != NULL) {
			char *s = ota_json_dumps(receipt, true);
			ota_error we;
			ota_error_clear(&we);
			if (s == NULL || ota_file_write_atomic(o.receipt, ota_bytes_make(s, strlen(s)), 0644,
			                                       &we) != OTA_OK) {
				fprintf(stderr, "ota: cannot write receipt %s\n", o.receipt);
				evidence_lost = true;
			}
			free(s);
		}
		if (o.json)
			cli_print_json(receipt);
	}
	const char *st = json_string_value(
		json_object_get(json_object_get(receipt, "sandbox_policy"), "status"));
	if (!o.json)
		fprintf(stderr, "ota: sandbox %s\n", st != NULL ? st : "unknown");
	if (rc != OTA_OK) {
		if (receipt == NULL) /* no receipt to print: the error, as above */
			(void)run_fail(&o, workflow, &e);
		else if (!o.json)
			(void)cli_fail("ota", &e);
		ret = rc == OTA_ERR_OCI_INTERRUPTED ? 130 : cli_exit_for(rc);
	} else {
		ret = status;
	}
	/*
	 * A run whose evidence was not written must not look like a success:
	 * a task that exited 0 without its archive (or the receipt it was asked
	 * to write) exits 3, an environment error; a failing task keeps its own
	 * status.
	 */
	if (evidence_lost && ret == CLI_OK) {
		fprintf(stderr, "ota: %s: the task succeeded but its evidence was not written\n",
		        ota_err_name(OTA_ERR_ARCHIVE_NOT_WRITTEN));
		ret = CLI_INTERNAL;
	}
out:
	(void)cli_fwd_finish(o.fwd, 0); /* a run that ended before the task */
	ota_key_free(key);
	json_decref(receipt);
	json_decref(adm);
	ota_policy_free(p);
	free(yaml);
	for (size_t i = 0; i < nov; i++)
		free((void *)(uintptr_t)ov_src[i].bytes.ptr);
	cli_archive_chain_free(&chain);
	for (size_t i = 0; i < nov; i++)
		ota_overlay_free(ovs[i]);
	ota_contract_free(c);
	return ret;
}

int cmd_run(int argc, char **argv)
{
	return run_lane(argc, argv, false);
}

int cmd_up(int argc, char **argv)
{
	return run_lane(argc, argv, true);
}
