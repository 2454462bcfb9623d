/*
 * The runner on oci_local (root, runc): a contract compiled and admitted by
 * policy/, mapped onto plans, run, and every application record signed:
 * each COSE_Sign1 verifies with the runner key, its payload parses strictly
 * as an attestation bound to the txn, boundary, segment and policy
 * identities, its body is the record's identity, and its challenge was
 * consumed (single use). Also: plans refuse what oci_local cannot apply.
 */
#include "test_util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/admission.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/runner.h"

static char *contract_text(const char *net_default)
{
	char os[16], arch[16], var[16];
	ota_oci_host_platform(os, arch, var);
	char *buf = malloc(4096);
	assert_non_null(buf);
	snprintf(buf, 4096,
	         "version: 1\n"
	         "project:\n  name: runner-test\n"
	         "execution:\n  supported: [container]\n  default_context: box\n"
	         "  lifecycle: ephemeral\n  backends:\n    container:\n      image: bb:1\n"
	         "      platform: %s/%s\n      engines: [docker]\n"
	         "  contexts:\n    box:\n      backend: container\n      lifecycle: ephemeral\n"
	         "tasks:\n  t:\n    context: box\n    run: \"echo ok > reports/ok\"\n"
	         "    runtime_boundary:\n      filesystem: {repo_root_mode: read_only, "
	         "writable_paths: [reports], protected_paths: [ota.yaml]}\n"
	         "      network: {default: %s}\n    safe_for_agent: true\n"
	         "agent:\n  safe_tasks: [t]\n",
	         os, arch, net_default);
	return buf;
}

static void test_signed_run(void **state)
{
	(void)state;
	if (geteuid() != 0 || system("command -v runc >/dev/null 2>&1") != 0)
		skip();
	char *tmp = test_tmpdir();
	char repo[512], store[512], cmd[2048], db[512], ndb[512], rtroot[256];
	snprintf(repo, sizeof repo, "%s/repo", tmp);
	snprintf(store, sizeof store, "%s/images", tmp);
	snprintf(db, sizeof db, "%s/leases.db", tmp);
	snprintf(ndb, sizeof ndb, "%s/nonces.db", tmp);
	snprintf(rtroot, sizeof rtroot, "/run/ota/test-runner-%ld", (long)getpid());
	char *script = test_src_path("scripts/make-test-rootfs.sh");
	snprintf(cmd, sizeof cmd,
	         "mkdir -p '%s/reports' && echo v > '%s/ota.yaml' && OTA_CACHE='%s/cache' bash '%s' "
	         "busybox-image '%s' bb:1 >/dev/null",
	         repo, repo, tmp, script, store);
	free(script);
	assert_int_equal(system(cmd), 0);
	char *yaml = contract_text("deny");
	json_t *adm = NULL;
	bool admitted = false;
	ota_policy *p = test_policy_admit_host(yaml, OTA_LANE_TASK, "t", &adm, &admitted);
	free(yaml);
	assert_true(admitted);
	ota_key *key = NULL;
	assert_ota(ota_key_generate(OTA_ALG_ES256, &key), OTA_OK);
	ota_nonce_opts no;
	ota_nonce_opts_init(&no);
	ota_nonce_store *ns = NULL;
	assert_ota(ota_nonce_store_open(ndb, &no, &ns, NULL), OTA_OK);
	char cache[600];
	snprintf(cache, sizeof cache, "%s/rootfs", tmp);

	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.repo = repo;
	ro.image_store = store;
	ro.rootfs_cache = cache;
	ro.oci.runtime.root = rtroot;
	ro.oci.lease_db = db;
	ro.oci.txn = "txn-runner-test";
	ro.runner_key = key;
	ro.nonces = ns;
	ro.issuer = "runner:test";
	ro.trust_root = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
	json_t *receipt = NULL;
	int status = -1;
	ota_error e;
	ota_error_clear(&e);
	/* a checkout another run holds is refused before anything is prepared
	 * (not even the lease database of the orphan sweep is opened) */
	int held = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX | LOCK_NB), 0);
	assert_ota(ota_runner_run(p, adm, &ro, &receipt, &status, &e), OTA_ERR_OCI_CHECKOUT_BUSY);
	assert_null(receipt);
	assert_string_equal(e.where, repo);
	assert_int_not_equal(access(db, F_OK), 0);
	close(held);
	ota_error_clear(&e);
	ota_err rc = ota_runner_run(p, adm, &ro, &receipt, &status, &e);
	if (rc != OTA_OK)
		fail_msg("run: %s: %s: %s", ota_err_name(rc), e.where, e.what);
	assert_int_equal(status, 0);
	json_t *sp = json_object_get(receipt, "sandbox_policy");
	assert_string_equal(json_string_value(json_object_get(sp, "status")),
	                    "enforced_through_completion");
	assert_string_equal(json_string_value(json_object_get(sp, "effective_identity")),
	                    ota_policy_effective_identity(p));

	/* every evidence record by identity, to check the payload bodies */
	json_t *ev = json_object_get(receipt, "evidence");
	json_t *atts = json_object_get(receipt, "attestations");
	assert_int_equal(json_array_size(atts), 3);
	static const char *const kinds[] = {"capability", "initial_application",
	                                    "terminal_application"};
	size_t i;
	json_t *a;
	json_array_foreach(atts, i, a)
	{
		const char *b64 = json_string_value(json_object_get(a, "cose_sign1"));
		uint8_t *msg = NULL;
		size_t ml = 0;
		assert_ota(ota_base64_decode(b64, strlen(b64), &msg, &ml), OTA_OK);
		ota_cose_sign1 m;
		assert_ota(ota_cose_sign1_verify(ota_bytes_make(msg, ml), key, NULL, &m, NULL), OTA_OK);
		assert_true(m.kid.len == 32 && m.kid_protected);
		ota_attestation at;
		ota_error pe;
		ota_error_clear(&pe);
		ota_err prc = ota_attestation_parse(m.payload, &at, &pe);
		if (prc != OTA_OK)
			fail_msg("payload %zu: %s: %s", i, ota_err_name(prc), pe.what);
		assert_string_equal(at.kind, kinds[i]);
		assert_string_equal(at.txn, "txn-runner-test");
		assert_string_equal(at.iss, "runner:test");
		assert_string_equal(at.provider, "oci_local");
		assert_string_equal(at.trust_root, ro.trust_root);
		assert_string_equal(at.boundary, json_string_value(json_object_get(a, "boundary")));
		assert_string_equal(at.policy_effective, i == 0 ? ota_policy_effective_identity(p)
		                                                : ota_policy_segment_effective_identity(p, 0));
		assert_true(at.exp > at.iat);
		/* body = the record's identity, and that record is in the evidence */
		const char *rid = json_string_value(json_object_get(a, "record_identity"));
		assert_int_equal(at.body.len, 2 + OTA_ID_LEN);
		assert_memory_equal(at.body.ptr + 2, rid, OTA_ID_LEN);
		bool found = false;
		size_t k;
		json_t *r;
		json_array_foreach(ev, k, r)
		{
			char id[OTA_ID_LEN + 1];
			if (ota_json_identity(r, id, NULL) == OTA_OK && strcmp(id, rid) == 0)
				found = true;
		}
		assert_true(found);
		/* prior chain: the terminal names the initial */
		if (i == 2) {
			assert_true(at.has_prior);
			assert_string_equal(at.prior, json_string_value(json_object_get(
							      json_array_get(atts, 1), "identity")));
		}
		/* the challenge was consumed: single use */
		ota_challenge ch;
		assert_ota(ota_nonce_store_peek(ns, ota_bytes_make(at.nonce, at.nonce_len),
		                                ota_clock_now(NULL), &ch, NULL),
		           OTA_ERR_NONCE_REPLAYED);
		assert_true(json_integer_value(json_object_get(json_object_get(a, "challenge"),
		                                               "consumed_at")) > 0);
		free(msg);
	}
	/* the segment's challenges (issued ahead, in one commit) were all used:
	 * none left live, each of the three consumed once */
	uint64_t live = 1, consumed = 0, accepted = 0;
	assert_ota(ota_nonce_store_counts(ns, &live, &consumed, &accepted, NULL), OTA_OK);
	assert_int_equal(live, 0);
	assert_int_equal(consumed, 3);
	json_decref(receipt);
	json_decref(adm);
	ota_policy_free(p);
	ota_nonce_store_close(ns);
	ota_key_free(key);
	rmdir(rtroot);
	test_rmtree(tmp);
	free(tmp);
}

static void test_plan_refusals(void **state)
{
	(void)state;
	/* network allow cannot be applied exactly: refused before anything runs */
	char *yaml = contract_text("allow");
	json_t *adm = NULL;
	bool admitted = false;
	ota_policy *p = test_policy_admit_host(yaml, OTA_LANE_TASK, "t", &adm, &admitted);
	free(yaml);
	const json_t *cs = json_array_get(json_object_get(ota_policy_canonical_json(p), "segments"), 0);
	const json_t *es = json_array_get(json_object_get(ota_policy_effective_json(p), "segments"), 0);
	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.repo = "/nonexistent";
	ro.rootfs = "/nonexistent";
	ota_runner_plan *plan = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_runner_plan_new(cs, es, &ro, &plan, &e), OTA_ERR_OCI_POLICY_UNSUPPORTED);
	assert_null(plan);
	assert_string_equal(e.where, "network.default");
	/* an effective segment bound to another canonical segment */
	json_t *es2 = json_deep_copy(es);
	json_object_set_new(es2, "canonical_identity", json_string("sha256:00"));
	assert_ota(ota_runner_plan_new(cs, es2, &ro, &plan, NULL), OTA_ERR_ID_MISMATCH);
	json_decref(es2);
	/* with network deny, a rootfs: the plan maps body and boundary */
	json_t *es3 = json_deep_copy(es);
	json_object_set_new(json_object_get(json_object_get(es3, "runtime_boundary"), "network"),
	                    "default", json_string("deny"));
	ro.rootfs = "/";
	assert_ota(ota_runner_plan_new(cs, es3, &ro, &plan, NULL), OTA_OK);
	const ota_oci_plan *op = ota_runner_plan_oci(plan);
	assert_non_null(op);
	assert_int_equal(op->argc, 3);
	assert_string_equal(op->argv[0], "sh");
	assert_string_equal(op->argv[2], "echo ok > reports/ok");
	assert_int_equal(op->n_writable, 1);
	assert_string_equal(op->writable[0], "reports");
	assert_int_equal(op->n_protected, 1);
	assert_false(op->repo_writable);
	assert_true(json_is_true(json_object_get(ota_runner_plan_platform_check(plan), "ok")));
	ota_runner_plan_free(plan);
	json_decref(es3);
	json_decref(adm);
	ota_policy_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_refusals),
		cmocka_unit_test(test_signed_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
