/*
 * ota validate | tasks | workflows | policy show, and the dry-run admission
 * of `ota run TASK --agent --dry-run` / `ota up --workflow W --agent --dry-run`.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ota/json.h"
#include "ota/limits.h"
#include "ota/policy.h"

#define MAX_OVERLAY_ARGS 64
#define MAX_DESC_ARGS 16

typedef struct {
	const char *file;
	bool json, agent, dry_run, no_org;
	const char *workflow, *target, *org_policy, *lane;
	const char *native; /* --native-platform (policy show), else this host */
	const char *overlays[MAX_OVERLAY_ARGS];
	size_t noverlays;
	const char *descs[MAX_DESC_ARGS];
	size_t ndescs;
} opts;

static const char *usage_text(const char *cmd)
{
	if (strcmp(cmd, "validate") == 0)
		return "ota validate [-f FILE] [--overlay FILE]... [--org-policy FILE | --no-org-policy] "
		       "[--json]";
	if (strcmp(cmd, "tasks") == 0)
		return "ota tasks [-f FILE] [--json]";
	if (strcmp(cmd, "workflows") == 0)
		return "ota workflows [-f FILE] [--json]";
	if (strcmp(cmd, "policy") == 0)
		return "ota policy show [TASK] [--workflow W] [-f FILE] [--overlay FILE]... [--org-policy FILE | --no-org-policy] [--native-platform OS/ARCH[/VARIANT]] [--json]";
	if (strcmp(cmd, "run") == 0)
		return "ota run TASK --dry-run [--agent] [--sandbox-target T] [--overlay FILE]... [--descriptor FILE]... [-f FILE] [--json]";
	return "ota up --workflow W --dry-run [--agent] [--sandbox-target T] [--overlay FILE]... [--descriptor FILE]... [-f FILE] [--json]";
}

/*
 * A usage error: the usage line on stderr and, with --json anywhere on the
 * command line, the policy-error document on stdout (code usage, where the
 * offending argument or the command), as every other failure prints one.
 */
static int usage_fail(int argc, char **argv, const char *cmd, const char *where, const char *msg)
{
	bool json = false;
	const char *file = "ota.yaml";
	for (int i = 1; i < argc; i++) {
		json = json || strcmp(argv[i], "--json") == 0;
		if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--file") == 0) && i + 1 < argc)
			file = argv[i + 1];
	}
	if (json) {
		json_t *j = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s}", "ok", 0, "code", "usage",
		                      "where", where != NULL ? where : cmd, "message",
		                      msg != NULL ? msg : usage_text(cmd), "path", file, "command", cmd);
		if (j != NULL)
			cli_print_json(j);
		json_decref(j);
	}
	if (msg != NULL)
		fprintf(stderr, "ota: %s: %s\n", where != NULL ? where : cmd, msg);
	return cli_usage("ota", usage_text(cmd));
}

/* Which options a command takes (an option of another command is a usage error). */
enum {
	OPT_LANE = 1 << 0,     /* a positional TASK */
	OPT_WORKFLOW = 1 << 1, /* --workflow */
	OPT_OVERLAYS = 1 << 2, /* --overlay, --org-policy, --no-org-policy */
	OPT_ADMIT = 1 << 3,    /* --agent, --dry-run, --sandbox-target, --descriptor, runner options */
	OPT_NATIVE = 1 << 4,   /* --native-platform */
};

static unsigned allowed_for(const char *cmd)
{
	if (strcmp(cmd, "validate") == 0)
		return OPT_OVERLAYS;
	if (strcmp(cmd, "tasks") == 0 || strcmp(cmd, "workflows") == 0)
		return 0;
	if (strcmp(cmd, "policy") == 0)
		return OPT_LANE | OPT_WORKFLOW | OPT_OVERLAYS | OPT_NATIVE;
	return OPT_LANE | OPT_WORKFLOW | OPT_OVERLAYS | OPT_ADMIT; /* run, up */
}

/*
 * Options of the real `run`/`up` (the oci_local runner) that do not change
 * the admission decision: a dry run accepts and ignores them, so the same
 * command line can be tried with --dry-run first.
 */
static bool runner_value_option(const char *a)
{
	static const char *const opts_[] = {"--runtime", "--rootfs", "--image-store", "--lease-db",
	                                    "--receipt", "--key", "--nonce-db", "--issuer",
	                                    "--trust-root", "--archive", "--trust", "--runtime-root",
	                                    "--state-dir", "--timeout", "--runtime-timeout",
	                                    "--pids-limit", "--memory-limit", NULL};
	for (size_t i = 0; opts_[i] != NULL; i++)
		if (strcmp(a, opts_[i]) == 0)
			return true;
	return false;
}

/* returns -1 on success, else an exit code */
static int parse_opts(int argc, char **argv, int start, opts *o, const char *cmd)
{
	if (cli_help_asked())
		return cli_usage("ota", usage_text(cmd));
	unsigned ok = allowed_for(cmd);
	memset(o, 0, sizeof *o);
	o->file = "ota.yaml";
	for (int i = start; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		unsigned need = 0;
		if (strcmp(a, "--json") == 0)
			o->json = true;
		else if ((strcmp(a, "-f") == 0 || strcmp(a, "--file") == 0) && more)
			o->file = argv[++i];
		else if (strcmp(a, "--agent") == 0)
			need = OPT_ADMIT, o->agent = true;
		else if (strcmp(a, "--dry-run") == 0)
			need = OPT_ADMIT, o->dry_run = true;
		else if (strcmp(a, "--no-org-policy") == 0)
			need = OPT_OVERLAYS, o->no_org = true;
		else if (strcmp(a, "--workflow") == 0 && more)
			need = OPT_WORKFLOW, o->workflow = argv[++i];
		else if (strcmp(a, "--native-platform") == 0 && more) {
			need = OPT_NATIVE;
			if ((ok & need) != 0 && o->native != NULL)
				return usage_fail(argc, argv, cmd, a, "an option given twice");
			o->native = argv[++i];
		} else if (strcmp(a, "--sandbox-target") == 0 && more)
			need = OPT_ADMIT, o->target = argv[++i];
		else if (strcmp(a, "--org-policy") == 0 && more)
			need = OPT_OVERLAYS, o->org_policy = argv[++i];
		else if (strcmp(a, "--overlay") == 0 && more) {
			need = OPT_OVERLAYS;
			if ((ok & need) != 0 && o->noverlays == MAX_OVERLAY_ARGS)
				return usage_fail(argc, argv, cmd, a, "too many --overlay arguments");
			if ((ok & need) != 0)
				o->overlays[o->noverlays++] = argv[i + 1];
			i++;
		} else if (strcmp(a, "--descriptor") == 0 && more) {
			need = OPT_ADMIT;
			if ((ok & need) != 0 && o->ndescs == MAX_DESC_ARGS)
				return usage_fail(argc, argv, cmd, a, "too many --descriptor arguments");
			if ((ok & need) != 0)
				o->descs[o->ndescs++] = argv[i + 1];
			i++;
		} else if (runner_value_option(a) && more) {
			need = OPT_ADMIT;
			i++;
		} else if (strcmp(a, "--no-archive") == 0) {
			need = OPT_ADMIT;
		} else if (a[0] != '-' && o->lane == NULL) {
			need = OPT_LANE;
			o->lane = a;
		} else
			return usage_fail(argc, argv, cmd, a,
			                  a[0] == '-' ? "unknown option or missing value"
			                              : "unexpected argument");
		if ((need & ok) != need)
			return usage_fail(argc, argv, cmd, a,
			                  need == OPT_LANE ? "unexpected argument"
			                                   : "not an option of this command");
	}
	/* the same refusal as the real run (cmd_run.c): one meaning for both */
	if (o->org_policy != NULL && o->no_org)
		return usage_fail(argc, argv, cmd, "--org-policy",
		                  "--org-policy and --no-org-policy contradict each other");
	return -1;
}

/* failure output: JSON object on stdout with --json, the error line on stderr always */
static int fail(const opts *o, const char *command, const ota_error *e, int code_override)
{
	if (o->json) {
		json_t *j = cli_error_json(e);
		json_object_set_new(j, "path", json_string(o->file));
		json_object_set_new(j, "command", json_string(command));
		cli_print_json(j);
		json_decref(j);
	}
	int rc = cli_fail("ota", e);
	return code_override >= 0 ? code_override : rc;
}

static ota_err load_contract(const opts *o, ota_contract **c, ota_error *e)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	ota_err rc = cli_contract_read(o->file, &buf, &n, e);
	if (rc != OTA_OK)
		return rc;
	rc = ota_contract_load(ota_bytes_make(buf, n), o->file, c, e);
	free(buf);
	return rc;
}

static ota_err load_overlay(const char *path, ota_overlay_source src, ota_overlay **out,
                            ota_error *e)
{
	uint8_t *buf = NULL;
	size_t n = 0;
	ota_err rc = ota_file_read(path, OTA_MAX_YAML_BYTES, &buf, &n, e);
	if (rc != OTA_OK)
		return rc;
	rc = ota_overlay_load(ota_bytes_make(buf, n), path, src, out, e);
	free(buf);
	return rc;
}

/* org policy (explicit, or .ota/org-policy.yaml beside the contract) + overlay files */
static ota_err load_overlays(const opts *o, ota_overlay **ovs, size_t *n, ota_error *e)
{
	*n = 0;
	ota_err rc;
	ota_overlay *ov = NULL;
	if (o->org_policy != NULL) {
		rc = load_overlay(o->org_policy, OTA_OVERLAY_ORG_POLICY, &ov, e);
		if (rc != OTA_OK)
			return rc;
	} else if (!o->no_org) {
		/* the default one beneath the contract's directory, as `ota run`
		 * reads it (no symlink followed, a FIFO refused) */
		char tmp[4096], def[4200];
		snprintf(tmp, sizeof tmp, "%s", o->file);
		uint8_t *buf = NULL;
		size_t bl = 0;
		rc = cli_org_policy_read(dirname(tmp), &buf, &bl, def, sizeof def, e);
		if (rc == OTA_OK && buf != NULL)
			rc = ota_overlay_load(ota_bytes_make(buf, bl), def, OTA_OVERLAY_ORG_POLICY, &ov, e);
		free(buf);
		if (rc != OTA_OK)
			return rc;
	}
	if (ov != NULL)
		ovs[(*n)++] = ov;
	for (size_t i = 0; i < o->noverlays; i++) {
		rc = load_overlay(o->overlays[i], OTA_OVERLAY_FILE, &ovs[*n], e);
		if (rc != OTA_OK)
			return rc;
		(*n)++;
	}
	return OTA_OK;
}

static void free_overlays(ota_overlay **ovs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ota_overlay_free(ovs[i]);
}

static ota_policy_options popts(void)
{
	ota_policy_options po;
	memset(&po, 0, sizeof po);
	ota_platform_host(&po.native_platform);
	return po;
}

/* ---- validate ---- */

int cmd_validate(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv, 1, &o, "validate");
	if (u >= 0)
		return u;
	ota_error e;
	ota_error_clear(&e);
	ota_contract *c = NULL;
	ota_overlay *ovs[MAX_OVERLAY_ARGS + 1];
	size_t nov = 0;
	ota_err rc = load_contract(&o, &c, &e);
	if (rc == OTA_OK)
		rc = load_overlays(&o, ovs, &nov, &e);
	ota_policy_options po = popts();
	/* every lane must compile: closures, cycles, phase reuse, scope conflicts */
	for (size_t i = 0; rc == OTA_OK && i < ota_contract_task_count(c); i++) {
		ota_policy *p = NULL;
		rc = ota_policy_compile(c, OTA_LANE_TASK, ota_contract_task_name(c, i), &po,
		                        (const ota_overlay *const *)ovs, nov, &p, &e);
		ota_policy_free(p);
	}
	for (size_t i = 0; rc == OTA_OK && i < ota_contract_workflow_count(c); i++) {
		ota_policy *p = NULL;
		rc = ota_policy_compile(c, OTA_LANE_WORKFLOW, ota_contract_workflow_name(c, i), &po,
		                        (const ota_overlay *const *)ovs, nov, &p, &e);
		ota_policy_free(p);
	}
	int ret;
	if (rc != OTA_OK) {
		ret = fail(&o, "validate", &e, -1);
	} else {
		if (o.json) {
			json_t *j = json_pack("{s:b, s:s, s:s, s:s, s:s, s:I, s:I}", "ok", 1, "path", o.file,
			                      "project", ota_contract_project(c), "contract_snapshot_identity",
			                      ota_contract_snapshot_identity(c), "contract_identity",
			                      ota_contract_identity(c), "tasks",
			                      (json_int_t)ota_contract_task_count(c), "workflows",
			                      (json_int_t)ota_contract_workflow_count(c));
			json_t *oa = json_array();
			for (size_t i = 0; i < nov; i++)
				json_array_append_new(oa, json_string(ota_overlay_identity(ovs[i])));
			json_object_set_new(j, "restriction_overlay_identities", oa);
			cli_print_json(j);
			json_decref(j);
		} else {
			printf("%s: valid (%zu tasks, %zu workflows) %s\n", o.file,
			       ota_contract_task_count(c), ota_contract_workflow_count(c),
			       ota_contract_identity(c));
		}
		ret = CLI_OK;
	}
	free_overlays(ovs, nov);
	ota_contract_free(c);
	return ret;
}

/* ---- tasks / workflows ---- */

static int list_lanes(int argc, char **argv, ota_lane_kind kind)
{
	const char *cmd = kind == OTA_LANE_TASK ? "tasks" : "workflows";
	opts o;
	int u = parse_opts(argc, argv, 1, &o, cmd);
	if (u >= 0)
		return u;
	ota_error e;
	ota_error_clear(&e);
	ota_contract *c = NULL;
	ota_err rc = load_contract(&o, &c, &e);
	if (rc != OTA_OK)
		return fail(&o, cmd, &e, -1);
	ota_policy_options po = popts();
	json_t *arr = json_array();
	size_t n = kind == OTA_LANE_TASK ? ota_contract_task_count(c) : ota_contract_workflow_count(c);
	int ret = CLI_OK;
	for (size_t i = 0; i < n; i++) {
		const char *name = kind == OTA_LANE_TASK ? ota_contract_task_name(c, i)
		                                         : ota_contract_workflow_name(c, i);
		json_t *item = kind == OTA_LANE_TASK ? ota_contract_task_json(c, name)
		                                     : ota_contract_workflow_json(c, name);
		ota_policy *p = NULL;
		ota_error pe;
		ota_error_clear(&pe);
		if (ota_policy_compile(c, kind, name, &po, NULL, 0, &p, &pe) == OTA_OK) {
			json_object_set(item, "canonical_policy", (json_t *)(uintptr_t)ota_policy_canonical_json(p));
			/* upstream's closure-wide agent posture */
			json_t *unsafe = json_array();
			size_t k;
			json_t *sg;
			json_array_foreach(json_object_get(ota_policy_canonical_json(p), "segments"), k, sg)
				if (!json_is_true(json_object_get(sg, "safe_for_agent")))
					json_array_append(unsafe, json_object_get(sg, "task"));
			json_object_set_new(item, "effective_safe_for_agent",
			                    json_boolean(json_array_size(unsafe) == 0));
			json_object_set_new(item, "unsafe_closure_tasks", unsafe);
			json_object_set_new(item, "authoritative_runtime_controls",
			                    json_boolean(ota_policy_has_authoritative_controls(p)));
		} else {
			json_object_set_new(item, "canonical_policy", json_null());
			json_object_set_new(item, "policy_error", cli_error_json(&pe));
			ret = CLI_REFUSED;
		}
		ota_policy_free(p);
		json_array_append_new(arr, item);
	}
	if (o.json) {
		json_t *j = json_pack("{s:b, s:s, s:s, s:s, s:o}", "ok", ret == CLI_OK, "path", o.file,
		                      "contract_snapshot_identity", ota_contract_snapshot_identity(c),
		                      "contract_identity", ota_contract_identity(c), cmd, arr);
		if (kind == OTA_LANE_WORKFLOW)
			json_object_set_new(j, "default", ota_contract_default_workflow(c)
			                                      ? json_string(ota_contract_default_workflow(c))
			                                      : json_null());
		cli_print_json(j);
		json_decref(j);
	} else {
		size_t i;
		json_t *it;
		json_array_foreach(arr, i, it) {
			const json_t *cp = json_object_get(it, "canonical_policy");
			printf("%-32s %s\n", json_string_value(json_object_get(it, "name")),
			       json_is_object(cp) ? json_string_value(json_object_get(cp, "identity"))
			                          : "(policy error)");
		}
		json_decref(arr);
	}
	ota_contract_free(c);
	return ret;
}

int cmd_tasks(int argc, char **argv)
{
	return list_lanes(argc, argv, OTA_LANE_TASK);
}

int cmd_workflows(int argc, char **argv)
{
	return list_lanes(argc, argv, OTA_LANE_WORKFLOW);
}

/* ---- policy show ---- */

int cmd_policy(int argc, char **argv)
{
	if (cli_help_asked())
		return cli_usage("ota", usage_text("policy"));
	if (argc < 2 || strcmp(argv[1], "show") != 0)
		return usage_fail(argc, argv, "policy", argc < 2 ? "policy" : argv[1],
		                  "the only policy command is show");
	opts o;
	int u = parse_opts(argc, argv, 2, &o, "policy");
	if (u >= 0)
		return u;
	if (o.lane == NULL && o.workflow == NULL)
		return usage_fail(argc, argv, "policy", "policy show", "a TASK or --workflow W is required");
	ota_error e;
	ota_error_clear(&e);
	ota_contract *c = NULL;
	ota_overlay *ovs[MAX_OVERLAY_ARGS + 1];
	size_t nov = 0;
	ota_policy *p = NULL;
	ota_policy_options po = popts();
	/* another machine's native platform: the effective identity a run
	 * there has (native lanes, containers without a declared platform),
	 * for a gate's --require-effective computed elsewhere */
	if (o.native != NULL && ota_platform_parse(o.native, &po.native_platform, &e) != OTA_OK)
		return fail(&o, "policy show", &e, CLI_USAGE);
	ota_err rc = load_contract(&o, &c, &e);
	if (rc == OTA_OK)
		rc = load_overlays(&o, ovs, &nov, &e);
	if (rc == OTA_OK)
		rc = ota_policy_compile(c, o.workflow ? OTA_LANE_WORKFLOW : OTA_LANE_TASK,
		                        o.workflow ? o.workflow : o.lane, &po,
		                        (const ota_overlay *const *)ovs, nov, &p, &e);
	int ret;
	if (rc != OTA_OK) {
		ret = fail(&o, "policy show", &e, -1);
	} else {
		json_t *j = json_pack("{s:b, s:s, s:s, s:s, s:O, s:s, s:O, s:s}", "ok", 1, "path", o.file,
		                      "contract_snapshot_identity", ota_contract_snapshot_identity(c),
		                      "canonical_policy_identity", ota_policy_canonical_identity(p),
		                      "canonical_policy", ota_policy_canonical_json(p),
		                      "effective_policy_identity", ota_policy_effective_identity(p),
		                      "effective_policy", ota_policy_effective_json(p), "lane",
		                      o.workflow ? "workflow" : "task");
		if (o.workflow != NULL && o.lane != NULL) {
			/* TASK as the workflow selects it: its segment ("task:TASK") in that lane */
			json_t *sel = NULL;
			for (size_t i = 0; i < ota_policy_segment_count(p); i++)
				if (strncmp(ota_policy_segment_id(p, i), "task:", 5) == 0 &&
				    strcmp(ota_policy_segment_id(p, i) + 5, o.lane) == 0) {
					const json_t *cs = json_object_get(ota_policy_canonical_json(p), "segments");
					const json_t *es = json_object_get(ota_policy_effective_json(p), "segments");
					sel = json_pack("{s:O, s:O}", "canonical", json_array_get(cs, i),
					                "effective", json_array_get(es, i));
				}
			if (sel == NULL) {
				json_decref(j);
				ota_error_set(&e, OTA_ERR_POLICY_UNKNOWN_LANE, "task",
				              "task '%.100s' is not in the closure of workflow '%.100s'", o.lane,
				              o.workflow);
				ret = fail(&o, "policy show", &e, -1);
				goto out;
			}
			json_object_set_new(j, "selected_segment", sel);
		}
		if (o.json) {
			cli_print_json(j);
		} else {
			printf("canonical %s\neffective %s\n", ota_policy_canonical_identity(p),
			       ota_policy_effective_identity(p));
			for (size_t i = 0; i < ota_policy_segment_count(p); i++)
				printf("  %-30s %s\n", ota_policy_segment_id(p, i),
				       ota_policy_segment_effective_identity(p, i));
		}
		json_decref(j);
		ret = CLI_OK;
	}
out:
	ota_policy_free(p);
	free_overlays(ovs, nov);
	ota_contract_free(c);
	return ret;
}

/* ---- dry-run admission (shared by run and up) ---- */

static int dry_run(int argc, char **argv, bool workflow)
{
	const char *cmd = workflow ? "up" : "run";
	opts o;
	int u = parse_opts(argc, argv, 1, &o, cmd);
	if (u >= 0)
		return u;
	if (workflow ? o.workflow == NULL : o.lane == NULL)
		return usage_fail(argc, argv, cmd, cmd,
		                  workflow ? "--workflow W is required" : "a TASK is required");
	if (!o.dry_run) {
		fprintf(stderr, "ota: unsupported: real %s execution is provided by the oci_local runner; "
		                "this build admits only with --dry-run\n", cmd);
		return CLI_USAGE;
	}
	ota_error e;
	ota_error_clear(&e);
	ota_contract *c = NULL;
	ota_overlay *ovs[MAX_OVERLAY_ARGS + 1];
	size_t nov = 0;
	ota_policy *p = NULL;
	json_t *adm = NULL;
	bool admitted = false;
	ota_policy_options po = popts();
	ota_capability_descriptor descs[MAX_DESC_ARGS];
	size_t nd = 0;
	ota_err rc = load_contract(&o, &c, &e);
	if (rc == OTA_OK)
		rc = load_overlays(&o, ovs, &nov, &e);
	if (rc == OTA_OK && o.ndescs == 0) {
		const char *txt = ota_policy_builtin_descriptor("oci_local");
		rc = ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)),
		                                     &po.native_platform, &descs[nd], &e);
		if (rc == OTA_OK)
			nd++;
	}
	for (size_t i = 0; rc == OTA_OK && i < o.ndescs; i++) {
		uint8_t *buf = NULL;
		size_t n = 0;
		rc = ota_file_read(o.descs[i], OTA_MAX_DESCRIPTOR_BYTES, &buf, &n, &e);
		if (rc == OTA_OK)
			rc = ota_capability_descriptor_parse(ota_bytes_make(buf, n), &po.native_platform,
			                                     &descs[nd], &e);
		if (rc == OTA_OK)
			nd++;
		free(buf);
	}
	if (rc == OTA_OK)
		rc = ota_policy_compile(c, workflow ? OTA_LANE_WORKFLOW : OTA_LANE_TASK,
		                        workflow ? o.workflow : o.lane, &po,
		                        (const ota_overlay *const *)ovs, nov, &p, &e);
	ota_admission_request req = {o.agent, o.target, descs, nd};
	if (rc == OTA_OK)
		rc = ota_policy_admit(p, &req, &adm, &admitted, &e);
	int ret;
	if (rc != OTA_OK) {
		char command[32];
		snprintf(command, sizeof command, "%s --dry-run", cmd);
		ret = fail(&o, command, &e, -1);
	} else {
		char command[32];
		snprintf(command, sizeof command, "%s --dry-run", cmd);
		json_t *j = json_pack("{s:b, s:s, s:s, s:s, s:b, s:b, s:s, s:s, s:O}", "ok", admitted,
		                      "command", command, "path", o.file, workflow ? "workflow" : "task",
		                      workflow ? o.workflow : o.lane, "dry_run", 1, "execution_started", 0,
		                      "contract_snapshot_identity", ota_contract_snapshot_identity(c),
		                      "contract_identity", ota_contract_identity(c), "sandbox_admission",
		                      adm);
		if (o.json) {
			cli_print_json(j);
		} else {
			const char *msg = json_string_value(json_object_get(adm, "message"));
			const char *tgt = json_string_value(json_object_get(adm, "provider_target"));
			const char *res = json_string_value(json_object_get(adm, "resolution"));
			if (msg != NULL && msg[0] != '\0')
				printf("%s: %s\n", json_string_value(json_object_get(adm, "decision")), msg);
			else /* an explicit --sandbox-target carries no message */
				printf("%s: %s (%s)\n", json_string_value(json_object_get(adm, "decision")),
				       tgt != NULL ? tgt : "no provider target", res != NULL ? res : "-");
			size_t i;
			json_t *r;
			json_array_foreach(json_object_get(adm, "refusals"), i, r)
				printf("  refused %s %s (required %s, capability %s): %s\n",
				       json_is_string(json_object_get(r, "segment_id"))
				           ? json_string_value(json_object_get(r, "segment_id")) : "-",
				       json_string_value(json_object_get(r, "control")),
				       json_string_value(json_object_get(r, "required")),
				       json_string_value(json_object_get(r, "capability")),
				       json_string_value(json_object_get(r, "reason")));
		}
		if (!admitted)
			fprintf(stderr, "ota: %s: %s\n",
			        json_string_value(json_object_get(adm, "kind")) ? json_string_value(json_object_get(adm, "kind")) : "refused",
			        json_string_value(json_object_get(adm, "message")));
		json_decref(j);
		ret = admitted ? CLI_OK : CLI_REFUSED;
	}
	json_decref(adm);
	ota_policy_free(p);
	free_overlays(ovs, nov);
	ota_contract_free(c);
	return ret;
}

/* For the runner: the same dry-run admission under its own `run`/`up`. */
int cmd_policy_dry_run(int argc, char **argv, bool workflow);
int cmd_policy_dry_run(int argc, char **argv, bool workflow)
{
	return dry_run(argc, argv, workflow);
}
