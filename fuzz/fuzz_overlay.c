/*
 * fuzz_overlay: restriction overlays (ota_overlay_load) from an org policy
 * (.ota/org-policy.yaml) and from an overlay file, and their meet with a
 * fixed contract (docs/policy.md sections 4-5). The input is one policy
 * file, optionally followed by a NUL byte and a second one (else a fixed
 * second overlay is used).
 *
 * Invariants:
 *  - a refusal names itself and clears *out; both sources refuse alike,
 *    except that a file without policies.sandbox is no restriction for an
 *    org policy (OTA_OK, NULL) and policy_overlay_missing for an overlay file;
 *  - loading is deterministic, the source is bound into both identities;
 *  - the identities are independent of formatting: the same document
 *    re-emitted as YAML flow text loads to the same identities;
 *  - the meet is commutative and idempotent ([A,B] = [B,A], [A,A] = [A],
 *    same outcome, same effective identity) and monotone (a refused set stays
 *    refused with one more overlay); admission of a compiled lane decides
 *    without starting anything.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "../policy/ytree.h"
#include "ota/json.h"
#include "ota/policy.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char contract_yaml[] =
	"version: 1\n"
	"project: {name: fz}\n"
	"tasks:\n"
	"  open:\n"
	"    run: \"true\"\n"
	"    safe_for_agent: true\n"
	"  build:\n"
	"    run: make\n"
	"    safe_for_agent: true\n"
	"    runtime_boundary:\n"
	"      filesystem: {repo_root_mode: writable, writable_paths: [build, out/reports],\n"
	"                   protected_paths: [.github, ota.yaml]}\n"
	"      network: {default: deny}\n"
	"  verify:\n"
	"    command: {exe: python3, args: [-m, pytest]}\n"
	"    depends_on: [build]\n"
	"    safe_for_agent: true\n"
	"    runtime_boundary:\n"
	"      filesystem: {repo_root_mode: read_only, writable_paths: [reports],\n"
	"                   protected_paths: [.github/workflows]}\n"
	"      network:\n"
	"        default: allow\n"
	"        outbound_targets:\n"
	"          - {kind: host, value: staging.internal, destination_shape: single_purpose_host}\n"
	"          - kind: domain\n"
	"            value: api.stripe.com\n"
	"            destination_shape: multi_tenant_host\n"
	"            destination_constraint:\n"
	"              kind: tenant_scope\n"
	"              values: [acct_a, acct_b]\n"
	"              source_posture: repo_local_authoritative\n"
	"              enforcement: authoritative_app_enforced\n"
	"workflows:\n"
	"  default: ci\n"
	"  ci:\n"
	"    setup: {task: build}\n"
	"    run: {task: verify}\n";

static const char second_yaml[] = "policies:\n"
                                  "  sandbox:\n"
                                  "    filesystem: {writable_paths: [out, reports]}\n"
                                  "    network: {default: deny}\n";

static ota_contract *g_contract;
static ota_capability_descriptor g_desc;
static ota_policy_options g_opts;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	strcpy(g_opts.native_platform.os, "linux");
	strcpy(g_opts.native_platform.architecture, "amd64");
	const char *txt = ota_policy_builtin_descriptor("oci_local");
	FZ_CHECK(ota_contract_load(ota_bytes_make(contract_yaml, strlen(contract_yaml)), "fz.yaml",
	                           &g_contract, NULL) == OTA_OK);
	FZ_CHECK(txt != NULL &&
	         ota_capability_descriptor_parse(ota_bytes_make(txt, strlen(txt)),
	                                         &g_opts.native_platform, &g_desc, NULL) == OTA_OK);
	return 0;
}

/* loads one source; checks what every load must satisfy */
static ota_err load(ota_bytes in, ota_overlay_source src, ota_overlay **out)
{
	ota_error e;
	ota_error_clear(&e);
	*out = (ota_overlay *)(uintptr_t)1;
	ota_err rc = ota_overlay_load(in, "fz-policy.yaml", src, out, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(*out == NULL);
		return rc;
	}
	if (*out == NULL) {
		FZ_CHECK(src == OTA_OVERLAY_ORG_POLICY);
		return rc;
	}
	FZ_CHECK(ota_id_is_valid(ota_overlay_identity(*out)));
	FZ_CHECK(ota_id_is_valid(ota_overlay_authority_identity(*out)));
	const json_t *j = ota_overlay_json(*out);
	FZ_CHECK(json_is_object(j));
	char id[OTA_ID_LEN + 1];
	FZ_CHECK(ota_jcs_identity(j, id, NULL) == OTA_OK);
	FZ_CHECK(strcmp(id, ota_overlay_identity(*out)) == 0);
	return rc;
}

/* the same document as YAML flow text gives the same identities */
static void reformatted(ota_bytes in, ota_overlay_source src, const ota_overlay *o)
{
	ydoc *d = NULL;
	if (ydoc_parse(in, "fz", &d, NULL) != OTA_OK)
		abort(); /* ota_overlay_load parsed it */
	json_t *j = yn_to_json(ydoc_root(d));
	ydoc_free(d);
	FZ_CHECK(j != NULL);
	size_t n = 0;
	char *flow = fz_yaml_flow(j, &n);
	json_decref(j);
	FZ_CHECK(flow != NULL);
	if (n <= 1024u * 1024u) { /* alias expansions can be large: skip those */
		ota_overlay *back = NULL;
		ota_error e;
		ota_error_clear(&e);
		ota_err rc = ota_overlay_load(ota_bytes_make(flow, n), "fz-flow.yaml", src, &back, &e);
		if (rc != OTA_OK || back == NULL) {
			fprintf(stderr, "flow text refused (%s at %s: %s):\n%s\n", ota_err_name(rc),
			        e.where, e.what, flow);
			abort();
		}
		FZ_CHECK(strcmp(ota_overlay_identity(back), ota_overlay_identity(o)) == 0);
		FZ_CHECK(strcmp(ota_overlay_authority_identity(back),
		                ota_overlay_authority_identity(o)) == 0);
		ota_overlay_free(back);
	}
	free(flow);
}

typedef struct {
	ota_err rc;
	char id[OTA_ID_LEN + 1];
} outcome;

static outcome compile(ota_lane_kind kind, const char *lane, const ota_overlay *const *ovs,
                       size_t n)
{
	outcome r;
	ota_policy *p = NULL;
	ota_error e;
	ota_error_clear(&e);
	memset(&r, 0, sizeof r);
	r.rc = ota_policy_compile(g_contract, kind, lane, &g_opts, ovs, n, &p, &e);
	if (r.rc != OTA_OK) {
		fz_refusal(r.rc, &e);
		FZ_CHECK(p == NULL);
		return r;
	}
	snprintf(r.id, sizeof r.id, "%s", ota_policy_effective_identity(p));
	FZ_CHECK(ota_id_is_valid(r.id));
	ota_admission_request req = {true, NULL, &g_desc, 1};
	json_t *adm = NULL;
	bool ok = false;
	FZ_CHECK(ota_policy_admit(p, &req, &adm, &ok, NULL) == OTA_OK);
	FZ_CHECK(json_is_false(json_object_get(adm, "execution_started")));
	json_decref(adm);
	ota_policy_free(p);
	return r;
}

static void same(outcome a, outcome b)
{
	FZ_CHECK(a.rc == b.rc);
	FZ_CHECK(strcmp(a.id, b.id) == 0);
}

static void meet(const ota_overlay *a, const ota_overlay *b)
{
	size_t nt = ota_contract_task_count(g_contract);
	for (size_t i = 0; i <= nt; i++) {
		ota_lane_kind kind = i < nt ? OTA_LANE_TASK : OTA_LANE_WORKFLOW;
		const char *lane = i < nt ? ota_contract_task_name(g_contract, i) : "ci";
		const ota_overlay *one[1] = {a}, *aa[2] = {a, a}, *ab[2] = {a, b}, *ba[2] = {b, a};
		outcome r1 = compile(kind, lane, one, 1);
		same(r1, compile(kind, lane, aa, 2));
		if (b == NULL)
			continue;
		outcome rab = compile(kind, lane, ab, 2);
		same(rab, compile(kind, lane, ba, 2));
		if (r1.rc != OTA_OK && r1.rc != OTA_ERR_NOMEM)
			FZ_CHECK(rab.rc != OTA_OK);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *z = memchr(data, 0, size);
	ota_bytes a = ota_bytes_make(data, z != NULL ? (size_t)(z - data) : size);
	ota_bytes b = z != NULL ? ota_bytes_make(z + 1, size - a.len - 1)
	                        : ota_bytes_make(second_yaml, strlen(second_yaml));
	ota_overlay *org = NULL, *file = NULL, *again = NULL, *ob = NULL;
	ota_err ro = load(a, OTA_OVERLAY_ORG_POLICY, &org);
	ota_err rf = load(a, OTA_OVERLAY_FILE, &file);
	if (ro == OTA_OK && org == NULL)
		FZ_CHECK(rf == OTA_ERR_POLICY_OVERLAY_EMPTY);
	else
		FZ_CHECK(ro == rf);
	if (file == NULL)
		goto out;
	FZ_CHECK(strcmp(ota_overlay_identity(org), ota_overlay_identity(file)) != 0);
	FZ_CHECK(strcmp(ota_overlay_authority_identity(org), ota_overlay_authority_identity(file)) !=
	         0);
	FZ_CHECK(load(a, OTA_OVERLAY_FILE, &again) == OTA_OK);
	FZ_CHECK(strcmp(ota_overlay_identity(again), ota_overlay_identity(file)) == 0);
	reformatted(a, OTA_OVERLAY_FILE, file);
	reformatted(a, OTA_OVERLAY_ORG_POLICY, org);
	if (load(b, OTA_OVERLAY_FILE, &ob) != OTA_OK)
		ob = NULL;
	meet(file, ob);
	meet(org, file); /* the same restriction under two authorities */
out:
	ota_overlay_free(org);
	ota_overlay_free(file);
	ota_overlay_free(again);
	ota_overlay_free(ob);
	return 0;
}
