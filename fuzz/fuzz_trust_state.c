/*
 * fuzz_trust_state: the verifier's durable trust state file
 * ({"kind": "ota.trust_state/v1", "domains": {...}}, trust/state.c; the
 * highest accepted snapshot version per trust domain, docs/trust-root.md),
 * which ota-verify and ota-attestd read back on every start. The input is
 * written as that file, then opened.
 *
 * Invariants: a refusal names itself and leaves *out NULL; an opened state
 * answers every domain of the file with its version; recording a higher
 * version of one domain rewrites the file so that it opens again with that
 * version and every other domain unchanged; a lower version is
 * trust_rollback, another identity at the same version trust_equivocation.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "ota/json.h"
#include "ota/limits.h"
#include "ota/trust.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[64], g_path[128], g_lock[160];

static void cleanup(void)
{
	unlink(g_path);
	unlink(g_lock);
	rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(g_dir, sizeof g_dir, "/tmp/ota-fuzz-trust-state-XXXXXX");
	FZ_CHECK(mkdtemp(g_dir) != NULL);
	snprintf(g_path, sizeof g_path, "%s/state.json", g_dir);
	snprintf(g_lock, sizeof g_lock, "%s.lock", g_path);
	atexit(cleanup);
	return 0;
}

static ota_trust_state *open_state(ota_err *rc_out)
{
	ota_trust_state *s = (ota_trust_state *)(uintptr_t)1;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_trust_state_open(g_path, &s, &e);
	*rc_out = rc;
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(s == NULL);
		return NULL;
	}
	FZ_CHECK(s != NULL);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > OTA_MAX_TRUST_STATE_BYTES + 1)
		return 0;
	fz_write_file(g_path, data, size);
	ota_err rc;
	ota_trust_state *s = open_state(&rc);
	if (s == NULL)
		return 0;
	/* the file's domains, as a plain JSON reader sees them */
	json_t *doc = NULL;
	FZ_CHECK(ota_json_parse(ota_bytes_make(data, size), &doc, NULL) == OTA_OK);
	json_t *domains = json_object_get(doc, "domains");
	const char *d, *first = NULL;
	json_t *v;
	json_object_foreach(domains, d, v) {
		int64_t ver = 0;
		char id[OTA_ID_LEN + 1];
		FZ_CHECK(ota_trust_state_get(s, d, &ver, id) == OTA_OK);
		FZ_CHECK(ver == json_integer_value(json_object_get(v, "version")));
		FZ_CHECK(strcmp(id, json_string_value(json_object_get(v, "identity"))) == 0);
		if (first == NULL)
			first = d;
	}
	static const char other[] = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
	ota_error e;
	if (first != NULL) {
		int64_t ver = 0;
		char id[OTA_ID_LEN + 1];
		FZ_CHECK(ota_trust_state_get(s, first, &ver, id) == OTA_OK);
		if (ver > 1) {
			ota_error_clear(&e);
			FZ_CHECK(ota_trust_state_record(s, first, ver - 1, id, &e) ==
			         OTA_ERR_TRUST_ROLLBACK);
		}
		ota_error_clear(&e);
		if (strcmp(id, other) != 0)
			FZ_CHECK(ota_trust_state_record(s, first, ver, other, &e) ==
			         OTA_ERR_TRUST_EQUIVOCATION);
		if (ver < OTA_MAX_TRUST_VERSION) {
			ota_error_clear(&e);
			FZ_CHECK(ota_trust_state_record(s, first, ver + 1, other, &e) == OTA_OK);
			ota_trust_state_close(s);
			s = open_state(&rc);
			FZ_CHECK(s != NULL);
			json_object_foreach(domains, d, v) {
				int64_t now = 0;
				char nid[OTA_ID_LEN + 1];
				FZ_CHECK(ota_trust_state_get(s, d, &now, nid) == OTA_OK);
				if (strcmp(d, first) == 0)
					FZ_CHECK(now == ver + 1 && strcmp(nid, other) == 0);
				else
					FZ_CHECK(now == json_integer_value(json_object_get(v, "version")));
			}
		}
	}
	json_decref(doc);
	ota_trust_state_close(s);
	return 0;
}
