/*
 * libFuzzer target: strict JSON parse (ota_json_parse) then RFC 8785
 * serialisation (ota_jcs_serialize). Asserts that canonical output is a
 * fixed point, serialize(parse(serialize(x))) == serialize(x), that failures
 * clear the outputs and carry a known error name, and that the identity is
 * sha256 over exactly those bytes, and that ota_json_identity_and gives
 * an object's identity and its members' as computed apart.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ota/json.h"
#include "ota/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
	if (!ok)
		abort();
}

/* A refusal must carry a name other than "ok" and the same code in err. */
static void check_refusal(ota_err rc, const ota_error *err)
{
	ota_err back;
	check(rc != OTA_OK);
	check(err->code == rc);
	check(ota_err_from_name(ota_err_name(rc), &back) && back == rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ota_error err;
	json_t *v = NULL;
	ota_error_clear(&err);
	ota_err rc = ota_json_parse(ota_bytes_make(data, size), &v, &err);
	if (rc != OTA_OK) {
		check(v == NULL);
		check_refusal(rc, &err);
		return 0;
	}
	check(v != NULL);

	char *s1 = (char *)1;
	size_t n1 = 1;
	ota_error_clear(&err);
	rc = ota_jcs_serialize(v, &s1, &n1, &err);
	if (rc != OTA_OK) {
		/* only content the canonical form refuses (reals, unsafe integers, depth) */
		check(s1 == NULL && n1 == 0);
		check_refusal(rc, &err);
		check(rc == OTA_ERR_JSON_FLOAT || rc == OTA_ERR_JSON_NUMBER_RANGE ||
		      rc == OTA_ERR_TOO_DEEP);
		json_decref(v);
		return 0;
	}
	check(s1 != NULL && strlen(s1) == n1);

	/* canonical bytes parse back and serialise to themselves */
	json_t *w = NULL;
	rc = ota_json_parse(ota_bytes_make(s1, n1), &w, &err);
	check(rc == OTA_OK && w != NULL);
	char *s2 = NULL;
	size_t n2 = 0;
	rc = ota_jcs_serialize(w, &s2, &n2, &err);
	check(rc == OTA_OK);
	check(n1 == n2 && memcmp(s1, s2, n1) == 0);
	check(json_equal(v, w));

	/* identity = sha256 over those bytes */
	char id1[OTA_ID_LEN + 1], id2[OTA_ID_LEN + 1];
	check(ota_jcs_identity(v, id1, NULL) == OTA_OK);
	check(ota_sha256_id(ota_bytes_make(s1, n1), id2) == OTA_OK);
	check(strcmp(id1, id2) == 0 && ota_id_is_valid(id1));

	/* ota_json_identity_and: as an identified object (a shallow copy with
	 * a kind), the record's identity and each top member's (the first 8),
	 * from one serialization, are the two computed apart */
	if (json_is_object(v)) {
		json_t *rec = json_copy(v);
		check(rec != NULL && json_object_set_new(rec, "kind", json_string("ota.fuzz/v1")) == 0);
		char rid[OTA_ID_LEN + 1], mid[OTA_ID_LEN + 1], want[OTA_ID_LEN + 1];
		check(ota_json_identity(rec, want, NULL) == OTA_OK);
		const char *k;
		json_t *m;
		int seen = 0;
		json_object_foreach(rec, k, m) {
			if (seen++ == 8)
				break;
			char mwant[OTA_ID_LEN + 1];
			check(ota_json_identity_and(rec, rid, k, mid, NULL) == OTA_OK);
			check(ota_jcs_identity(m, mwant, NULL) == OTA_OK);
			check(strcmp(rid, want) == 0 && strcmp(mid, mwant) == 0);
		}
		json_decref(rec);
	}

	free(s2);
	json_decref(w);
	free(s1);
	json_decref(v);
	return 0;
}
