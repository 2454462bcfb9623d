/*
 * Inputs the libFuzzer targets (fuzz/) found, kept as regressions (as
 * libcbor's bad_inputs_test.c): each names the target and what was wrong.
 */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ota/attestd.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/oci.h"
#include "ota/policy.h"

static const ota_platform amd64 = {"linux", "amd64", ""};

static ota_err descriptor(const char *json, ota_capability_descriptor *d, ota_error *e)
{
	ota_error_clear(e);
	return ota_capability_descriptor_parse(ota_bytes_make(json, strlen(json)), &amd64, d, e);
}

#define DESC_HEAD "{\"target\":\"x\",\"adapter_version\":\"v\","
#define DESC_REST                                                                  \
	"\"controls\":{},\"execution\":{\"backends\":[],\"lifecycles\":[],\"kinds\":[]" \
	"}}"

/* fuzz_descriptor: a bad target platform returned policy_descriptor_invalid
 * but recorded the platform parser's policy_platform_invalid (the first
 * error wins), so the code returned and the code recorded disagreed */
static void test_descriptor_platform_code(void **state)
{
	(void)state;
	ota_capability_descriptor d;
	ota_error e;
	const char *j = DESC_HEAD "\"target_platforms\":[\"linuxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/x"
	                          "86_64\"]," DESC_REST;
	assert_ota(descriptor(j, &d, &e), OTA_ERR_POLICY_DESCRIPTOR);
	assert_int_equal(e.code, OTA_ERR_POLICY_DESCRIPTOR);
	assert_string_equal(e.where, "target_platforms");
	const char *k = DESC_HEAD "\"target_platforms\":[\"Linux/amd64\"]," DESC_REST;
	assert_ota(descriptor(k, &d, &e), OTA_ERR_POLICY_DESCRIPTOR);
	assert_int_equal(e.code, OTA_ERR_POLICY_DESCRIPTOR);
}

/* fuzz_descriptor: unknown members of "execution" were ignored, so a
 * misspelt requirement (requires_read_only_roots) was dropped silently;
 * and a member named "" gave an empty where */
static void test_descriptor_unknown_members(void **state)
{
	(void)state;
	ota_capability_descriptor d;
	ota_error e;
	const char *j = DESC_HEAD "\"target_platforms\":[],\"controls\":{},\"execution\":{"
	                          "\"backends\":[],\"lifecycles\":[],\"kinds\":[],"
	                          "\"requires_read_only_roots\":true}}";
	assert_ota(descriptor(j, &d, &e), OTA_ERR_POLICY_DESCRIPTOR);
	assert_string_equal(e.where, "requires_read_only_roots");
	const char *ok = DESC_HEAD "\"target_platforms\":[],\"controls\":{},\"execution\":{"
	                           "\"backends\":[],\"lifecycles\":[],\"kinds\":[],"
	                           "\"requires_read_only_root\":true}}";
	assert_ota(descriptor(ok, &d, &e), OTA_OK);
	assert_true(d.requires_read_only_root);
	assert_ota(descriptor("{\"\": {\"bacnZes\": [], \",'dnis\": []}}", &d, &e),
	           OTA_ERR_POLICY_DESCRIPTOR);
	assert_string_equal(e.where, "descriptor");
	const char *c = DESC_HEAD "\"target_platforms\":[],\"controls\":{\"\":\"enforced\"},"
	                          "\"execution\":{\"backends\":[],\"lifecycles\":[],\"kinds\":[]}}";
	assert_ota(descriptor(c, &d, &e), OTA_ERR_POLICY_DESCRIPTOR);
	assert_string_equal(e.where, "controls");
}

/* fuzz_platform: "aarch64" became "arm64\0" with the alias' last byte
 * ('4') left behind the NUL; admission compares platforms with memcmp, so
 * linux/aarch64 and linux/arm64 (and an arm64 host's own platform) were
 * two platforms. A failed parse also left a half-filled platform. */
static void test_platform_alias_bytes(void **state)
{
	(void)state;
	ota_platform a, b;
	assert_ota(ota_platform_parse("linux/aarch64", &a, NULL), OTA_OK);
	assert_ota(ota_platform_parse("linux/arm64", &b, NULL), OTA_OK);
	assert_memory_equal(&a, &b, sizeof a);
	assert_ota(ota_platform_parse("linux/x86_64", &a, NULL), OTA_OK);
	assert_ota(ota_platform_parse("linux/amd64", &b, NULL), OTA_OK);
	assert_memory_equal(&a, &b, sizeof a);
	ota_platform zero;
	memset(&zero, 0, sizeof zero);
	memset(&a, 0x5a, sizeof a);
	assert_ota(ota_platform_parse("linux/AMD64", &a, NULL), OTA_ERR_POLICY_PLATFORM);
	assert_memory_equal(&a, &zero, sizeof a);

	/* end to end: a lane declaring linux/aarch64 against a descriptor of
	 * linux/arm64 is the same platform, not "cannot run here" */
	const char *y = "version: 1\n"
	                "project: {name: p}\n"
	                "execution:\n"
	                "  preferred: container\n"
	                "  lifecycle: ephemeral\n"
	                "  backends:\n"
	                "    container: {image: img, platform: linux/aarch64}\n"
	                "tasks:\n"
	                "  t:\n"
	                "    run: \"true\"\n"
	                "    safe_for_agent: true\n"
	                "    runtime_boundary:\n"
	                "      filesystem: {repo_root_mode: read_only}\n"
	                "      network: {default: deny}\n";
	ota_contract *c = test_contract_load(y, "aarch64.yaml");
	ota_policy *p = test_policy_compile(c, OTA_LANE_TASK, "t", NULL, 0);
	ota_capability_descriptor d = test_policy_oci_descriptor();
	assert_ota(ota_platform_parse("linux/arm64", &d.platforms[0], NULL), OTA_OK);
	d.nplatforms = 1;
	ota_admission_request r = {true, NULL, &d, 1};
	json_t *out = NULL;
	bool ok = false;
	assert_ota(ota_policy_admit(p, &r, &out, &ok, NULL), OTA_OK);
	assert_false(test_policy_has_refusal(out, "execution.target_platform"));
	assert_true(ok);
	json_decref(out);
	ota_policy_free(p);
	ota_contract_free(c);
}

/* fuzz_platform: ota_oci_platform_parse used the input itself as where,
 * so "" gave an empty where */
static void test_oci_platform_where(void **state)
{
	(void)state;
	char os[16], arch[16], var[16];
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_platform_parse("", os, arch, var, &e), OTA_ERR_OCI_PLAN_INVALID);
	assert_string_equal(e.where, "platform");
	ota_error_clear(&e);
	assert_ota(ota_oci_platform_parse("linux/amd64/", os, arch, var, &e),
	           OTA_ERR_OCI_PLAN_INVALID);
	assert_string_equal(e.where, "platform");
	assert_string_equal(os, "");
}

/* fuzz_oci_image: an index.json that is not JSON returned
 * oci_image_not_found but recorded json_syntax (the first error wins) */
static void test_image_index_code(void **state)
{
	(void)state;
	char *dir = test_tmpdir();
	char p[1024];
	snprintf(p, sizeof p, "%s/index.json", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fclose(f); /* empty: not JSON */
	char *rootfs = NULL;
	json_t *ev = NULL, *list = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_image_resolve(dir, "fz:1", NULL, dir, &rootfs, &ev, &e),
	           OTA_ERR_OCI_IMAGE_NOT_FOUND);
	assert_int_equal(e.code, OTA_ERR_OCI_IMAGE_NOT_FOUND);
	assert_non_null(strstr(e.what, "json_syntax"));
	assert_null(rootfs);
	ota_error_clear(&e);
	assert_ota(ota_oci_image_list(dir, &list, &e), OTA_ERR_OCI_IMAGE_NOT_FOUND);
	assert_int_equal(e.code, OTA_ERR_OCI_IMAGE_NOT_FOUND);
	assert_null(list);
	test_rmtree(dir);
	free(dir);
}

/* an OCI layout store in a fresh directory: index naming `name` with the
 * manifest digest plus `suffix`, a manifest, and config (new dir) */
static char *image_store(const char *suffix, const char *config)
{
	char *dir = test_tmpdir();
	char p[1024], cdig[OTA_ID_LEN + 1], mdig[OTA_ID_LEN + 1], man[512], idx[512];
	snprintf(p, sizeof p, "%s/blobs", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof p, "%s/blobs/sha256", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	const char *text[2] = {config, man};
	char *dig[2] = {cdig, mdig};
	for (int i = 0; i < 2; i++) {
		if (i == 1)
			snprintf(man, sizeof man,
			         "{\"schemaVersion\":2,\"config\":{\"digest\":\"%s\",\"size\":1},"
			         "\"layers\":[]}",
			         cdig);
		assert_ota(ota_sha256_id(ota_bytes_make(text[i], strlen(text[i])), dig[i]), OTA_OK);
		snprintf(p, sizeof p, "%s/blobs/sha256/%s", dir, dig[i] + 7);
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fputs(text[i], f);
		fclose(f);
	}
	snprintf(idx, sizeof idx,
	         "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"%s%s\",\"size\":1,"
	         "\"annotations\":{\"org.opencontainers.image.ref.name\":\"fz:1\"}}]}",
	         mdig, suffix);
	snprintf(p, sizeof p, "%s/index.json", dir);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(idx, f);
	fclose(f);
	return dir;
}

/* fuzz_oci_image: a manifest digest longer than a digest was cut to its
 * first 71 characters, which then passed as the valid digest they are */
static void test_image_digest_not_truncated(void **state)
{
	(void)state;
	char *dir = image_store("0", "{\"os\":\"windows\",\"architecture\":\"amd64\"}");
	char *rootfs = NULL;
	json_t *ev = NULL;
	ota_error e;
	ota_error_clear(&e);
	/* was oci_platform_mismatch: the truncated digest's manifest was read */
	assert_ota(ota_oci_image_resolve(dir, "fz:1", NULL, dir, &rootfs, &ev, &e),
	           OTA_ERR_OCI_IMAGE_NOT_FOUND);
	assert_string_equal(e.where, "manifests[].digest");
	assert_null(rootfs);
	assert_null(ev);
	test_rmtree(dir);
	free(dir);
}

/* fuzz_oci_image: an image platform field over 31 bytes was cut inside a
 * UTF-8 character; the evidence JSON then failed to build and a platform
 * mismatch came back without its evidence */
static void test_image_mismatch_keeps_evidence(void **state)
{
	(void)state;
	char *dir = image_store("", "{\"os\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\u00e9\","
	                            "\"architecture\":\"amd64\"}");
	char *rootfs = NULL;
	json_t *ev = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_oci_image_resolve(dir, "fz:1", NULL, dir, &rootfs, &ev, &e),
	           OTA_ERR_OCI_PLATFORM_MISMATCH);
	assert_non_null(ev);
	assert_true(json_is_false(json_object_get(ev, "ok")));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(ev, "image_platform"), "os")),
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	json_decref(ev);
	test_rmtree(dir);
	free(dir);
}

/* fuzz_key: a SEC1 (or PKCS#8) private key whose embedded public key is not
 * its private key's loaded: its kid named the embedded public key, and
 * what it signed never verified under that kid (the JWK loader already
 * checked d against x and y). This is
 * fuzz/seeds/fuzz_key/p256-traditional.FIXTURE.pem with one base64
 * character of the private scalar changed (regress-sec1-pair-mismatch). */
static void test_key_pair_mismatch(void **state)
{
	(void)state;
	static const char good[] =
		"-----BEGIN EC PRIVATE KEY-----\n"
		"MHcCAQEEIHW9upOGdu1wMEAJQSV0iascLzbtTxJkCfl2K/QIpDfKoAoGCCqGSM49\n"
		"AwEHoUQDQgAEuP9UzJ/OoyI0OHs+YKz8evQuzyvl9j1Lrbv1ldaGYTRuNPgBLozi\n"
		"I+CFv6NobvdBsArZlbte0LxDYJ/JUzBEbA==\n"
		"-----END EC PRIVATE KEY-----\n";
	char bad[sizeof good];
	memcpy(bad, good, sizeof good);
	char *at = strstr(bad, "IHW9");
	assert_non_null(at);
	at[3] = '4'; /* IHW9 -> IHW4: another private scalar, the same public key */
	ota_key *k = NULL;
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_key_load_pem(ota_bytes_make(good, strlen(good)), &k, &e), OTA_OK);
	ota_key_free(k);
	k = NULL;
	ota_error_clear(&e);
	assert_ota(ota_key_load_pem(ota_bytes_make(bad, strlen(bad)), &k, &e), OTA_ERR_KEY_FORMAT);
	assert_null(k);
	assert_non_null(strstr(e.what, "not its private key's"));
}

/* fuzz_attest_answer: an error answer without "where" was the error it
 * named with an empty where (fz_refusal wants every refusal to name one);
 * the fuzzer's input, minimized to its body, is the seed
 * fuzz/seeds/fuzz_attest_answer/refused_without_where. */
static void test_attest_answer_where(void **state)
{
	(void)state;
	static const char body[] = "{\"ok\": false, \"code\": \"nonce_replayed\", \"wher%\": "
	                           "\"eat_nonce\", \"message\": \"consumed at 1796009645\"}";
	ota_error e;
	ota_error_clear(&e);
	assert_ota(ota_attest_client_answer(body, sizeof body - 1, 403, OTA_ATTEST_ANSWER_ACCEPTANCE,
	                                    &e),
	           OTA_ERR_NONCE_REPLAYED);
	assert_string_equal(e.where, "answer");
	assert_string_equal(e.what, "consumed at 1796009645");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_descriptor_platform_code),
		cmocka_unit_test(test_descriptor_unknown_members),
		cmocka_unit_test(test_platform_alias_bytes),
		cmocka_unit_test(test_oci_platform_where),
		cmocka_unit_test(test_image_index_code),
		cmocka_unit_test(test_image_digest_not_truncated),
		cmocka_unit_test(test_image_mismatch_keeps_evidence),
		cmocka_unit_test(test_key_pair_mismatch),
		cmocka_unit_test(test_attest_answer_where),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
