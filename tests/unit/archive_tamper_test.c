/*
 * The generated tamper suite of ota.archive/v1 (root, runc): two real runs of
 * a two-segment workflow under oci_local (an org-policy overlay, trust roots
 * of two domains), then, in memory, for every member of the archive and of
 * the signed receipt: flip, drop, swap with the same member of the other
 * archive, reorder. Receipt mutations are re-signed with the runner key (an
 * attacker holding it still cannot make an edited receipt reconcile). Every
 * mutation must be rejected; counts are printed per kind. Plus named cases:
 * edited status, dropped / reordered / unbound transitions, a replaced
 * boundary, an attestation from another archive, a swapped trust-root
 * snapshot, an acceptance from an untrusted verifier, a ledger replay.
 * A third run, whose runtime refuses to create the second container, breaks
 * before that segment's initial record after the first segment ran: the
 * segment reconciles as not_started, the lane as enforcement_lost (execution
 * started), and the generated suite runs over it too. A fourth, refused before anything,
 * must reconcile as refused, and the generated suite runs over it as well.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ota/acceptance.h"
#include "ota/admission.h"
#include "ota/archive.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/key.h"

#include "archive_mutate.h"

static const char *cli(void)
{
	const char *c = getenv("OTA_CLI");
	return c != NULL ? c : OTA_BINARY_DIR "/cli/ota";
}

static bool make_trust(const char *dir, const char *domain)
{
	const char *o = cli();
	return test_sh_status("'%s' trust init --domain %s --dir %s --root-keys 1 --threshold 1 >/dev/null && "
			      "'%s' trust add-principal --dir %s --id ci-runner --role runner --repo '*' "
			      "--lane '*' --provider-target oci_local --sign %s/keys/root-1.pem >/dev/null && "
			      "'%s' trust add-key --dir %s --principal ci-runner --generate %s/keys/runner.pem "
			      "--sign %s/keys/root-1.pem >/dev/null",
			      o, domain, dir, o, dir, dir, o, dir, dir, dir) == 0;
}

static int setup(void **state)
{
	(void)state;
	if (geteuid() != 0 || test_sh_status("command -v runc >/dev/null") != 0) {
		fprintf(stderr, "SKIP: needs root and runc\n");
		return 0;
	}
	memset(&fx, 0, sizeof fx);
	fx.dir = test_tmpdir();
	char os[16] = "linux", arch[16] = "amd64";
	FILE *u = popen("uname -m", "r");
	if (u != NULL) {
		char m[32] = "";
		if (fgets(m, sizeof m, u) != NULL && strncmp(m, "aarch64", 7) == 0)
			snprintf(arch, sizeof arch, "arm64");
		pclose(u);
	}
	const char *d = fx.dir;
	if (test_sh_status("OTA_CACHE=%s/cache bash %s/scripts/make-test-rootfs.sh busybox-image %s/img bb:1 "
			   ">/dev/null 2>&1",
			   d, OTA_SOURCE_DIR, d) != 0)
		return -1;
	char w[4096];
	snprintf(w, sizeof w, "%s/w", d);
	if (test_sh_status("mkdir -p %s/reports %s/.ota && cat > %s/ota.yaml <<'EOF'\n"
			   "version: 1\nproject:\n  name: tamper\nexecution:\n  supported: [container]\n"
			   "  default_context: box\n  lifecycle: ephemeral\n  backends:\n    container:\n"
			   "      image: bb:1\n      platform: %s/%s\n      engines: [docker]\n"
			   "  contexts:\n    box:\n      backend: container\n      lifecycle: ephemeral\n"
			   "tasks:\n  build:\n    context: box\n    run: \"echo built > reports/build.txt\"\n"
			   "    runtime_boundary:\n      filesystem: {repo_root_mode: read_only, writable_paths: "
			   "[reports], protected_paths: [ota.yaml]}\n      network: {default: deny}\n"
			   "    safe_for_agent: true\n  check:\n    context: box\n"
			   "    run: \"test -s reports/build.txt && echo checked > reports/check.txt\"\n"
			   "    runtime_boundary:\n      filesystem: {repo_root_mode: read_only, writable_paths: "
			   "[reports], protected_paths: [ota.yaml]}\n      network: {default: deny}\n"
			   "    safe_for_agent: true\nworkflows:\n  default: ci\n  ci:\n    setup: {task: build}\n"
			   "    run: {task: check}\nagent:\n  safe_tasks: [build, check]\nEOF\n"
			   "cat > %s/.ota/org-policy.yaml <<'EOF'\npolicies:\n  sandbox:\n"
			   "    network: {default: deny}\nEOF\n",
			   w, w, w, os, arch, w) != 0)
		return -1;
	/* a git repository: the runs record its commit in the receipt */
	if (test_sh_status("cd %s && export HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=t "
			   "GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t && unset GIT_DIR && "
			   "git -c init.defaultBranch=main init -q . && git add ota.yaml .ota/org-policy.yaml && "
			   "git -c safe.directory='*' commit -qm tamper",
			   w) != 0)
		return -1;
	char ta[2048], tb[2048];
	snprintf(ta, sizeof ta, "%s/ta", d);
	snprintf(tb, sizeof tb, "%s/tb", d);
	if (!make_trust(ta, "a.test") || !make_trust(tb, "b.test"))
		return -1;
	for (int i = 0; i < 2; i++) {
		const char *t = i == 0 ? ta : tb;
		if (test_sh_status("cd %s && '%s' up --workflow ci --agent --runtime-root /run/ota/tamper-%d "
				   "--lease-db %s/leases.db --state-dir %s/state --image-store %s/img "
				   "--key %s/keys/runner.pem --nonce-db %s/nonces.db --trust %s "
				   "--archive %s/%c.json >/dev/null 2>%s/err-%d",
				   w, cli(), (int)getpid(), d, d, d, t, d, t, d, i == 0 ? 'a' : 'b', d, i) != 0) {
			test_sh_status("cat %s/err-%d >&2", d, i);
			return -1;
		}
	}
	/* A third run whose runtime refuses to start the second segment's
	 * container: the lane breaks before that segment's initial record. */
	{
		char rp[4096] = "", fb[4096];
		FILE *q = popen("command -v runc", "r");
		if (q == NULL || fgets(rp, sizeof rp, q) == NULL) {
			if (q != NULL)
				pclose(q);
			return -1;
		}
		pclose(q);
		rp[strcspn(rp, "\n")] = '\0';
		snprintf(fb, sizeof fb, "%s/bin", d);
		if (test_sh_status("mkdir -p %s", fb) != 0)
			return -1;
		snprintf(fb, sizeof fb, "%s/bin/runc", d);
		FILE *f = fopen(fb, "w");
		if (f == NULL)
			return -1;
		fprintf(f,
		        "#!/bin/sh\n"
		        "for x in \"$@\"; do\n"
		        "  [ \"$x\" = run ] || continue\n"
		        "  n=$(cat %s/runs 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s/runs\n"
		        "  if [ $n -ge 2 ]; then echo 'fake runc: no second container' >&2; exit 1; fi\n"
		        "done\n"
		        "exec '%s' \"$@\"\n",
		        d, d, rp);
		fclose(f);
		if (chmod(fb, 0755) != 0)
			return -1;
	}
	if (test_sh_status("cd %s && PATH=%s/bin:$PATH '%s' up --workflow ci --agent "
			   "--runtime-root /run/ota/tamper-%d --lease-db %s/leases.db --state-dir %s/state "
			   "--image-store %s/img --key %s/keys/runner.pem --nonce-db %s/nonces.db --trust %s "
			   "--archive %s/broken.json >/dev/null 2>%s/err-broken; test -s %s/broken.json",
			   w, d, cli(), (int)getpid(), d, d, d, ta, d, ta, d, d, d) != 0) {
		test_sh_status("cat %s/err-broken %s/bin/runc >&2", d, d);
		return -1;
	}
	/* A fourth run refused before anything: the image store is empty. */
	if (test_sh_status("mkdir -p %s/noimg && cd %s && '%s' up --workflow ci --agent "
			   "--runtime-root /run/ota/tamper-%d --lease-db %s/leases.db --state-dir %s/state "
			   "--image-store %s/noimg --key %s/keys/runner.pem --nonce-db %s/nonces.db --trust %s "
			   "--archive %s/refused.json >/dev/null 2>%s/err-refused; test -s %s/refused.json",
			   d, w, cli(), (int)getpid(), d, d, d, ta, d, ta, d, d, d) != 0) {
		test_sh_status("cat %s/err-refused >&2", d);
		return -1;
	}
	char p[4096];
	snprintf(p, sizeof p, "%s/broken.json", d);
	fx.broken = load_json(p);
	snprintf(p, sizeof p, "%s/refused.json", d);
	fx.refused = load_json(p);
	snprintf(p, sizeof p, "%s/a.json", d);
	fx.a = load_json(p);
	snprintf(p, sizeof p, "%s/b.json", d);
	fx.b = load_json(p);
	fx.ra = receipt_of(fx.a);
	fx.rb = receipt_of(fx.b);
	snprintf(p, sizeof p, "%s/versions/1.root.json", ta);
	if (ota_file_read(p, OTA_MAX_TRUST_ROOT_BYTES, &fx.pin_a, &fx.pin_a_len, NULL) != OTA_OK)
		return -1;
	snprintf(p, sizeof p, "%s/versions/1.root.json", tb);
	if (ota_file_read(p, OTA_MAX_TRUST_ROOT_BYTES, &fx.pin_b, &fx.pin_b_len, NULL) != OTA_OK)
		return -1;
	snprintf(p, sizeof p, "%s/keys/runner.pem", ta);
	if (ota_key_load_file(p, &fx.runner_a, NULL) != OTA_OK)
		return -1;
	if (fx.a == NULL || fx.b == NULL || fx.ra == NULL || fx.rb == NULL || fx.broken == NULL ||
	    fx.refused == NULL)
		return -1;
	/* every verification below requires the revision the runs recorded */
	const char *rev = json_string_value(json_object_get(fx.ra, "revision"));
	if (rev == NULL || strlen(rev) != 40) {
		fprintf(stderr, "the receipt records no revision of the git repository\n");
		return -1;
	}
	snprintf(fx.revision, sizeof fx.revision, "%s", rev);
	/* and the work tree it hashed */
	const char *wt = json_string_value(json_object_get(fx.ra, "worktree"));
	if (wt == NULL || strlen(wt) != 40) {
		fprintf(stderr, "the receipt records no worktree of the git repository\n");
		return -1;
	}
	snprintf(fx.worktree, sizeof fx.worktree, "%s", wt);
	const json_t *docs[] = {fx.a, fx.b, fx.broken, fx.refused};
	for (size_t i = 0; i < 4; i++) {
		json_t *r = receipt_of(docs[i]);
		fixture_run(r);
		json_decref(r);
	}
	if (fx.nruns != 4) {
		fprintf(stderr, "a fixture run recorded no worktree\n");
		return -1;
	}
	have_fixture = true;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (fx.dir != NULL) {
		test_sh_status("runc --root /run/ota/tamper-%d list -q 2>/dev/null | xargs -r -n1 runc --root "
			       "/run/ota/tamper-%d delete -f 2>/dev/null; rm -rf /run/ota/tamper-%d",
			       (int)getpid(), (int)getpid(), (int)getpid());
		test_rmtree(fx.dir);
		free(fx.dir);
	}
	json_decref(fx.a);
	json_decref(fx.b);
	json_decref(fx.broken);
	json_decref(fx.refused);
	json_decref(fx.ra);
	json_decref(fx.rb);
	free(fx.pin_a);
	free(fx.pin_b);
	ota_key_free(fx.runner_a);
	return 0;
}

/* ---- verification of a candidate ---- */

static void test_baseline(void **state)
{
	(void)state;
	if (!have_fixture)
		skip();
	assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, NULL, NULL), OTA_OK);
	assert_ota(verify_doc(fx.b, fx.pin_b, fx.pin_b_len, NULL, NULL), OTA_OK);
	/* the other domain's pinned root does not verify this archive */
	assert_int_not_equal(verify_doc(fx.a, fx.pin_b, fx.pin_b_len, NULL, NULL), OTA_OK);
	/* the runner's runtime_controls name both segments of the workflow,
	 * not the first one's controls for the lane */
	controls_name_every_segment(fx.ra, 2);
	controls_name_every_segment(fx.rb, 2);
	/* the overlay is really there */
	assert_int_equal(json_array_size(json_object_get(fx.a, "overlays")), 1);
	assert_int_equal(json_array_size(json_object_get(
				 json_object_get(fx.ra, "sandbox_policy"), "restriction_overlay_identities")),
	                 1);
}

static void test_named(void **state)
{
	(void)state;
	if (!have_fixture)
		skip();
	ota_err first = OTA_OK, rc;
	/* edited status, at lane and segment level, to every other value */
	static const char *const st[] = {"enforcement_lost", "not_started", "refused",
	                                 "enforcement_unknown_after_interruption"};
	for (size_t i = 0; i < 4; i++) {
		const char *k1[] = {"sandbox_policy", "status"};
		rc = receipt_edit(k1, 2, json_string(st[i]), &first);
		expect_refused("edited lane status", rc, first);
		const char *k2[] = {"sandbox_policy", "segments", "1", "status"};
		rc = receipt_edit(k2, 4, json_string(st[i]), &first);
		expect_refused("edited segment status", rc, first);
	}
	/* the revision and the worktree: edited without re-signing breaks the
	 * signature; edited, nulled or dropped and re-signed, each is not the
	 * one the gate requires */
	static const struct {
		const char *member;
		ota_err mismatch;
	} ids_req[] = {{"revision", OTA_ERR_ARCHIVE_REVISION_MISMATCH},
	               {"worktree", OTA_ERR_ARCHIVE_WORKTREE_MISMATCH}};
	for (size_t m = 0; m < 2; m++) {
		const char *name = ids_req[m].member, *val = m == 0 ? fx.revision : fx.worktree;
		char what[64];
		rc = id_edited_unsigned(fx.a, name, val, &first);
		snprintf(what, sizeof what, "%s edited, not re-signed", name);
		expect_refused(what, rc, first);
		assert_int_equal(first, OTA_ERR_SIG_INVALID);
		const char *k[] = {name};
		char other[sizeof fx.revision];
		snprintf(other, sizeof other, "%s", val);
		other[0] = flip_char(other[0]);
		rc = receipt_edit(k, 1, json_string(other), &first);
		snprintf(what, sizeof what, "%s edited (re-signed)", name);
		expect_refused(what, rc, first);
		assert_int_equal(first, ids_req[m].mismatch);
		rc = receipt_edit(k, 1, json_null(), &first);
		snprintf(what, sizeof what, "%s null (re-signed)", name);
		expect_refused(what, rc, first);
		assert_int_equal(first, m == 0 ? OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL
		                               : OTA_ERR_ARCHIVE_WORKTREE_MISMATCH);
		json_t *r = json_deep_copy(fx.ra), *doc = json_deep_copy(fx.a);
		json_object_del(r, name);
		resign(doc, r);
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		snprintf(what, sizeof what, "%s dropped (re-signed)", name);
		expect_refused(what, rc, first);
		assert_int_equal(first, m == 0 ? OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL
		                               : OTA_ERR_ARCHIVE_WORKTREE_MISMATCH);
		json_decref(r);
		json_decref(doc);
	}
	{
		/* a worktree that is not of the revision's kind (SHA-256 length) */
		const char *k[] = {"worktree"};
		char longer[128];
		snprintf(longer, sizeof longer, "%s%.24s", fx.worktree, fx.worktree);
		rc = receipt_edit(k, 1, json_string(longer), &first);
		expect_refused("worktree longer than the revision (re-signed)", rc, first);
		assert_int_equal(first, OTA_ERR_ARCHIVE_RECEIPT_NONCANONICAL);
	}
	/* every identity of the receipt replaced with the other archive's */
	static const char *const ids[] = {"capability_identity", "effective_identity",
	                                  "canonical_identity", "provider_adapter_identity"};
	for (size_t i = 0; i < 4; i++) {
		const char *k[] = {"sandbox_policy", ids[i]};
		rc = receipt_edit(k, 2, json_string("sha256:0000000000000000000000000000000000000000000000000000000000000000"), &first);
		expect_refused(ids[i], rc, first);
	}
	{
		const char *k[] = {"sandbox_policy", "restriction_overlay_identities"};
		rc = receipt_edit(k, 2, json_array(), &first);
		expect_refused("overlay identities dropped", rc, first);
	}
	static const char *const segids[] = {"rendered_policy_identity", "applied_policy_identity",
	                                     "initial_application_identity",
	                                     "terminal_application_identity", "boundary_identity",
	                                     "boundary_lease_identity"};
	for (size_t i = 0; i < 6; i++) {
		const char *k[] = {"sandbox_policy", "segments", "0", segids[i]};
		json_t *other = json_object_get(json_array_get(json_object_get(json_object_get(fx.rb,
		                         "sandbox_policy"), "segments"), 0), segids[i]);
		json_t *mine = json_object_get(json_array_get(json_object_get(json_object_get(fx.ra,
		                        "sandbox_policy"), "segments"), 0), segids[i]);
		/* identical across runs (the same rendered config): flip one character */
		json_t *v = json_equal(mine, other) ? json_string("sha256:1111111111111111111111111111111111111111111111111111111111111111")
		                                    : json_deep_copy(other);
		rc = receipt_edit(k, 4, v, &first);
		expect_refused(segids[i], rc, first);
	}
	{
		const char *k[] = {"sandbox_policy", "transition_identities"};
		rc = receipt_edit(k, 2, json_array(), &first);
		expect_refused("transition identities emptied", rc, first);
		json_t *o = json_object_get(json_object_get(fx.rb, "sandbox_policy"), "transition_identities");
		rc = receipt_edit(k, 2, json_deep_copy(o), &first);
		expect_refused("transition from another run", rc, first);
	}
	/* a missing transition, consistently re-signed */
	{
		json_t *doc = json_deep_copy(fx.a);
		json_t *atts = json_object_get(doc, "attestations");
		size_t ti = 0;
		for (size_t i = 0; i < json_array_size(atts); i++) {
			const char *b64 = json_string_value(json_object_get(json_array_get(atts, i), "cose_sign1"));
			uint8_t *m = NULL;
			size_t ml = 0;
			assert_ota(ota_base64_decode(b64, strlen(b64), &m, &ml), OTA_OK);
			ota_cose_sign1 d;
			ota_attestation c;
			assert_ota(ota_cose_sign1_decode(ota_bytes_make(m, ml), NULL, &d, NULL), OTA_OK);
			assert_ota(ota_attestation_parse(d.payload, &c, NULL), OTA_OK);
			if (strcmp(c.kind, "transition") == 0)
				ti = i;
			free(m);
		}
		assert_true(ti > 0);
		json_array_remove(atts, ti);
		resign_consistent(doc);
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		expect_refused("transition dropped (consistent receipt)", rc, first);
		json_decref(doc);
		/* reordered: initial and terminal of the first segment swapped */
		doc = json_deep_copy(fx.a);
		atts = json_object_get(doc, "attestations");
		json_t *x = json_incref(json_array_get(atts, 1));
		json_array_set(atts, 1, json_array_get(atts, 2));
		json_array_set_new(atts, 2, x);
		resign_consistent(doc);
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		expect_refused("attestations reordered (consistent receipt)", rc, first);
		json_decref(doc);
		/* an attestation and its challenge from another archive */
		doc = json_deep_copy(fx.a);
		atts = json_object_get(doc, "attestations");
		json_array_set(atts, 1, json_array_get(json_object_get(fx.b, "attestations"), 1));
		json_array_append(json_object_get(doc, "challenges"),
		                  json_array_get(json_object_get(fx.b, "challenges"), 1));
		resign_consistent(doc);
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		expect_refused("attestation from another archive", rc, first);
		json_decref(doc);
		/* the transition record unbound: evidence of the other run */
		doc = json_deep_copy(fx.a);
		json_object_set(doc, "trust_chain", json_object_get(fx.b, "trust_chain"));
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		expect_refused("swapped trust-root snapshot chain", rc, first);
		json_decref(doc);
	}
	/* an acceptance from an untrusted verifier */
	{
		json_t *doc = json_deep_copy(fx.a);
		const char *b64 = json_string_value(json_object_get(
			json_array_get(json_object_get(doc, "attestations"), 0), "cose_sign1"));
		uint8_t *m = NULL;
		size_t ml = 0;
		assert_ota(ota_base64_decode(b64, strlen(b64), &m, &ml), OTA_OK);
		ota_cose_sign1 d;
		ota_admission adm;
		memset(&adm, 0, sizeof adm);
		assert_ota(ota_cose_sign1_decode(ota_bytes_make(m, ml), NULL, &d, NULL), OTA_OK);
		assert_ota(ota_attestation_parse(d.payload, &adm.claims, NULL), OTA_OK);
		assert_ota(ota_sha256_id(ota_bytes_make(m, ml), adm.record_id), OTA_OK);
		snprintf(adm.challenge_id, sizeof adm.challenge_id, "%s",
		         json_string_value(json_object_get(json_array_get(json_object_get(doc, "attestations"), 0), "challenge")));
		memcpy(adm.trust_root_id, adm.claims.trust_root, OTA_ID_LEN);
		adm.trust_root_id[OTA_ID_LEN] = '\0';
		snprintf(adm.issuer_principal, sizeof adm.issuer_principal, "%s", adm.claims.iss);
		adm.judged_at = json_integer_value(json_object_get(json_array_get(json_object_get(doc, "challenges"), 0), "consumed_at"));
		ota_key *rogue = NULL;
		assert_ota(ota_key_generate(OTA_ALG_ES256, &rogue), OTA_OK);
		ota_acceptance_signer sg = {rogue, "rogue-verifier"};
		uint8_t *acc = NULL;
		size_t al = 0;
		assert_ota(ota_acceptance_build(&sg, &adm, &acc, &al, NULL), OTA_OK);
		char id[OTA_ID_LEN + 1], *ab = NULL;
		assert_ota(ota_sha256_id(ota_bytes_make(acc, al), id), OTA_OK);
		assert_ota(ota_base64_encode(ota_bytes_make(acc, al), &ab), OTA_OK);
		json_array_append_new(json_object_get(doc, "acceptances"),
		                      json_pack("{s:s, s:s}", "identity", id, "cose_sign1", ab));
		resign_consistent(doc);
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		expect_refused("acceptance from an untrusted verifier", rc, first);
		assert_int_equal(first, OTA_ERR_TRUST_KEY_UNKNOWN);
		free(ab);
		free(acc);
		free(m);
		ota_key_free(rogue);
		json_decref(doc);
	}
	/* the ledger: the same archive twice is fine, a replayed challenge is not */
	{
		char ledger[4096];
		snprintf(ledger, sizeof ledger, "%s/ledger.db", fx.dir);
		assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, ledger, NULL), OTA_OK);
		assert_ota(verify_doc(fx.a, fx.pin_a, fx.pin_a_len, ledger, NULL), OTA_OK);
		/* another archive (re-signed receipt, same challenges) replays them */
		json_t *doc = json_deep_copy(fx.a);
		json_t *r = json_deep_copy(fx.ra);
		json_object_set_new(r, "exit_status", json_integer(0));
		json_object_set_new(r, "txn", json_string(json_string_value(json_object_get(fx.ra, "txn"))));
		/* same content, new signature: a distinct archive identity (ECDSA is randomized) */
		resign(doc, r);
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, NULL, &first);
		assert_ota(rc, OTA_OK);
		rc = verify_doc(doc, fx.pin_a, fx.pin_a_len, ledger, &first);
		expect_refused("challenges replayed across archives (ledger)", rc, first);
		assert_int_equal(first, OTA_ERR_ARCHIVE_LEDGER_REPLAY);
		json_decref(r);
		json_decref(doc);
	}
}

/*
 * A run broken before its second segment's initial record: that segment
 * reconciles as not_started (what the signed terminal record says, never
 * better), the lane, whose first segment ran, as enforcement_lost (it said
 * not_started with execution_started true before), and every generated
 * mutation of it, and of its receipt, is still rejected.
 */
static void verifies_as(json_t *doc, const char *status)
{
	char *text = json_dumps(doc, JSON_COMPACT);
	assert_non_null(text);
	ota_archive_verify_opts o;
	memset(&o, 0, sizeof o);
	o.pinned = ota_bytes_make(fx.pin_a, fx.pin_a_len);
	o.require_revision = fx.revision; /* the same repository, the same commit */
	o.require_worktree = required_worktree(doc); /* and the files it saw */
	ota_archive_report *r = NULL;
	ota_err rc = ota_archive_verify(ota_bytes_make(text, strlen(text)), &o, &r, NULL);
	for (size_t i = 0; i < ota_archive_report_failure_count(r); i++) {
		const char *where = NULL, *what = NULL;
		ota_err c = ota_archive_report_failure(r, i, &where, &what);
		fprintf(stderr, "broken run: %s at %s: %s\n", ota_err_name(c), where, what);
	}
	assert_ota(rc, OTA_OK);
	assert_string_equal(ota_archive_report_status(r), status);
	ota_archive_report_free(r);
	free(text);
}

/* The generated suite over doc and its receipt rb, as the fixture's a. */
static void generated_over(json_t *doc, json_t *rb, const char *label, size_t min)
{
	json_t *sa = fx.a, *sr = fx.ra;
	fx.a = doc;
	fx.ra = rb;
	for (int pass = 0; pass < 2; pass++) {
		char what[64];
		snprintf(what, sizeof what, "%s %s", label, pass == 1 ? "receipt" : "archive");
		generated_suite(pass == 1, what, min, false);
	}
	fx.a = sa;
	fx.ra = sr;
}

static void test_broken_run(void **state)
{
	(void)state;
	if (!have_fixture)
		skip();
	verifies_as(fx.broken, "enforcement_lost");
	json_t *rb = receipt_of(fx.broken);
	assert_non_null(rb);
	/* the runner wrote what the verifier derives */
	assert_true(json_is_true(json_object_get(rb, "execution_started")));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(rb, "sandbox_policy"), "status")),
		"enforcement_lost");
	const json_t *segs = json_object_get(json_object_get(rb, "sandbox_policy"), "segments");
	assert_int_equal(json_array_size(segs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(segs, 0), "status")),
	                    "enforced_through_completion");
	assert_string_equal(json_string_value(json_object_get(json_array_get(segs, 1), "status")),
	                    "not_started");
	assert_null(json_object_get(json_array_get(segs, 1), "initial_attestation_identity"));
	generated_over(fx.broken, rb, "broken-run", 100);
	json_t *sa = fx.a, *sr = fx.ra;
	fx.a = fx.broken;
	fx.ra = rb;
	/* named: the broken segment claims enforcement, or the lane claims it */
	static const char *const seg_status[] = {"sandbox_policy", "segments", "1", "status"};
	static const char *const lane_status[] = {"sandbox_policy", "status"};
	ota_err first = OTA_OK;
	ota_err rc = receipt_edit(seg_status, 4, json_string("enforced_through_completion"), &first);
	expect_refused("broken segment upgraded to enforced", rc, first);
	rc = receipt_edit(lane_status, 2, json_string("enforced_through_completion"), &first);
	expect_refused("broken lane upgraded to enforced", rc, first);
	/* the lane's old status: not_started after a start */
	rc = receipt_edit(lane_status, 2, json_string("not_started"), &first);
	expect_refused("started lane claims not_started", rc, first);
	assert_int_equal(first, OTA_ERR_ARCHIVE_STATUS_MISMATCH);
	rc = receipt_edit(lane_status, 2, json_string("refused"), &first);
	expect_refused("started lane claims refused", rc, first);
	fx.a = sa;
	fx.ra = sr;
	json_decref(rb);
}

/*
 * A lane refused before anything was prepared (its image is missing): the
 * capability and the lane's signed refusal (a terminal record without
 * segment or container) reconcile as refused, and every generated mutation
 * of the archive and of its receipt is rejected.
 */
static void test_refused_lane(void **state)
{
	(void)state;
	if (!have_fixture)
		skip();
	verifies_as(fx.refused, "refused");
	json_t *rr = receipt_of(fx.refused);
	assert_non_null(rr);
	assert_int_equal(json_array_size(json_object_get(fx.refused, "attestations")), 2);
	assert_int_equal(json_array_size(json_object_get(json_object_get(rr, "sandbox_policy"),
	                                                 "segments")),
	                 0);
	assert_non_null(json_string_value(json_object_get(json_object_get(rr, "error"), "code")));
	generated_over(fx.refused, rr, "refused-lane", 100);
	json_t *sa = fx.a, *sr = fx.ra;
	fx.a = fx.refused;
	fx.ra = rr;
	static const char *const lane_status[] = {"sandbox_policy", "status"};
	static const char *const started[] = {"execution_started"};
	static const char *const code[] = {"error", "code"};
	ota_err first = OTA_OK;
	ota_err rc = receipt_edit(lane_status, 2, json_string("not_started"), &first);
	expect_refused("refused lane claims not_started", rc, first);
	rc = receipt_edit(started, 1, json_true(), &first);
	expect_refused("refused lane claims a start", rc, first);
	rc = receipt_edit(code, 2, json_string("oci_policy_unsupported"), &first);
	expect_refused("refused lane names another error", rc, first);
	fx.a = sa;
	fx.ra = sr;
	json_decref(rr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_baseline),
		cmocka_unit_test(test_generated_archive),
		cmocka_unit_test(test_generated_receipt),
		cmocka_unit_test(test_named),
		cmocka_unit_test(test_broken_run),
		cmocka_unit_test(test_refused_lane),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
