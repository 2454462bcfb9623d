/*
 * fuzz_receipt: the signed receipt payload of an archive, as the verifier
 * reads it (verify/archive_verify.c: canonical ota.receipt/v1, its shape,
 * then every reconciliation against the contract, the trust chain and the
 * evidence). A fuzzed payload is signed here with the runner key of one of
 * the committed archives (vectors/archive/{a,b,c,d}.json and their FIXTURE
 * keys, read at start-up from OTA_SOURCE_DIR), put in place of that
 * archive's receipt, and the whole archive is verified offline against its
 * pinned root: the receipt's signature holds, so every check after it runs
 * on the fuzzed JSON. (fuzz_archive mutates the archive itself; there the
 * receipt's signature nearly never holds.)
 *
 * The first input byte: bits 0-1 pick the archive, bit 2 set: the rest is
 * parsed and signed in its RFC 8785 form (else signed as is, which the
 * verifier must refuse unless canonical).
 *
 * Invariants: a report always, OTA_OK exactly when it has no failure, and
 * the archive's own receipt payload verifies as the committed archive does.
 * And the verifier cannot be fooled: a receipt that passes says what the
 * committed one says, apart from the runner's own claims that no evidence
 * binds (UNBOUND: when it signed, the revision it read and the work tree it
 * hashed), so an edit
 * the checks miss is a crash.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ota/archive.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/key.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef OTA_SOURCE_DIR
#define OTA_SOURCE_DIR "."
#endif

typedef struct {
	json_t *archive; /* parsed, receipt replaced per input */
	uint8_t *pin;
	size_t pin_len;
	ota_key *runner;
	uint8_t *payload; /* the committed receipt's payload */
	size_t payload_len;
	ota_err committed; /* the committed archive's verdict */
} world;

static world g_w[4];

/* The receipt members that are the runner's word alone: when it signed
 * (judged only against --at and --max-age), the commit it read and the
 * work tree it hashed (judged only against --require-revision and
 * --require-worktree). */
static const char *const UNBOUND[] = {"signed_at", "revision", "worktree"};

/* True when the receipt payloads a and b say the same apart from UNBOUND. */
static bool same_bound(ota_bytes a, ota_bytes b)
{
	json_t *ja = NULL, *jb = NULL;
	bool same = false;
	if (ota_json_parse(a, &ja, NULL) == OTA_OK && ota_json_parse(b, &jb, NULL) == OTA_OK &&
	    json_is_object(ja) && json_is_object(jb)) {
		for (size_t i = 0; i < sizeof UNBOUND / sizeof UNBOUND[0]; i++) {
			json_object_del(ja, UNBOUND[i]);
			json_object_del(jb, UNBOUND[i]);
		}
		same = json_equal(ja, jb);
	}
	json_decref(ja);
	json_decref(jb);
	return same;
}

static uint8_t *read_vec(const char *name, size_t *len)
{
	const char *src = getenv("OTA_SOURCE_DIR");
	char p[1024];
	snprintf(p, sizeof p, "%s/vectors/archive/%s", src != NULL ? src : OTA_SOURCE_DIR, name);
	uint8_t *b = NULL;
	if (ota_file_read(p, OTA_MAX_ARCHIVE_BYTES, &b, len, NULL) != OTA_OK) {
		fprintf(stderr, "fuzz_receipt: cannot read %s (set OTA_SOURCE_DIR)\n", p);
		abort();
	}
	return b;
}

static ota_err verify(const world *w, const json_t *doc, ota_archive_report **r)
{
	char *text = json_dumps(doc, JSON_COMPACT);
	FZ_CHECK(text != NULL);
	ota_archive_verify_opts o;
	memset(&o, 0, sizeof o);
	o.pinned = ota_bytes_make(w->pin, w->pin_len);
	*r = NULL;
	ota_err rc = ota_archive_verify(ota_bytes_make(text, strlen(text)), &o, r, NULL);
	free(text);
	FZ_CHECK(*r != NULL);
	FZ_CHECK((rc == OTA_OK) == (ota_archive_report_failure_count(*r) == 0));
	return rc;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	static const char *const names[4] = {"a", "b", "c", "d"};
	for (size_t i = 0; i < 4; i++) {
		world *w = &g_w[i];
		char n[64];
		size_t len = 0;
		snprintf(n, sizeof n, "%s.json", names[i]);
		uint8_t *b = read_vec(n, &len);
		w->archive = json_loadb((const char *)b, len, JSON_REJECT_DUPLICATES, NULL);
		free(b);
		FZ_CHECK(w->archive != NULL);
		snprintf(n, sizeof n, "%s.json.root.json", names[i]);
		w->pin = read_vec(n, &w->pin_len);
		snprintf(n, sizeof n, "%s.json.runner.FIXTURE.pem", names[i]);
		b = read_vec(n, &len);
		FZ_CHECK(ota_key_load_pem(ota_bytes_make(b, len), &w->runner, NULL) == OTA_OK);
		free(b);
		/* the committed receipt's payload */
		const char *b64 = json_string_value(
			json_object_get(json_object_get(w->archive, "receipt"), "cose_sign1"));
		uint8_t *m = NULL;
		size_t ml = 0;
		ota_cose_sign1 d;
		FZ_CHECK(b64 != NULL && ota_base64_decode(b64, strlen(b64), &m, &ml) == OTA_OK);
		FZ_CHECK(ota_cose_sign1_decode(ota_bytes_make(m, ml), NULL, &d, NULL) == OTA_OK);
		w->payload = malloc(d.payload.len);
		FZ_CHECK(w->payload != NULL);
		memcpy(w->payload, d.payload.ptr, d.payload.len);
		w->payload_len = d.payload.len;
		free(m);
		ota_archive_report *r = NULL;
		w->committed = verify(w, w->archive, &r);
		ota_archive_report_free(r);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1024 * 1024)
		return 0;
	world *w = &g_w[data[0] & 3];
	ota_bytes payload = ota_bytes_make(data + 1, size - 1);
	char *canon = NULL;
	if (data[0] & 4) {
		json_t *j = NULL;
		size_t cl = 0;
		if (ota_json_parse(payload, &j, NULL) != OTA_OK)
			return 0;
		ota_err rc = ota_jcs_serialize(j, &canon, &cl, NULL);
		json_decref(j);
		if (rc != OTA_OK)
			return 0;
		payload = ota_bytes_make(canon, cl);
	}
	ota_cose_sign_opts so;
	memset(&so, 0, sizeof so);
	so.include_kid = true;
	uint8_t *m = NULL;
	size_t ml = 0;
	char id[OTA_ID_LEN + 1], *b64 = NULL;
	FZ_CHECK(ota_cose_sign1_sign(w->runner, payload, &so, &m, &ml, NULL) == OTA_OK);
	FZ_CHECK(ota_sha256_id(ota_bytes_make(m, ml), id) == OTA_OK);
	FZ_CHECK(ota_base64_encode(ota_bytes_make(m, ml), &b64) == OTA_OK);
	json_t *doc = json_copy(w->archive); /* shallow: only "receipt" is replaced */
	FZ_CHECK(doc != NULL);
	json_object_set_new(doc, "receipt",
	                    json_pack("{s:s, s:s}", "identity", id, "cose_sign1", b64));
	ota_archive_report *r = NULL;
	ota_err rc = verify(w, doc, &r);
	json_t *rj = ota_archive_report_json(r);
	FZ_CHECK(json_is_object(rj));
	json_decref(rj);
	for (size_t i = 0; i < ota_archive_report_failure_count(r); i++) {
		const char *where = NULL, *what = NULL;
		ota_err f = ota_archive_report_failure(r, i, &where, &what);
		ota_err back;
		FZ_CHECK(f != OTA_OK && ota_err_from_name(ota_err_name(f), &back) && back == f);
		FZ_CHECK(where != NULL && what != NULL);
	}
	if (payload.len == w->payload_len && memcmp(payload.ptr, w->payload, payload.len) == 0)
		FZ_CHECK(rc == w->committed);
	if (rc == OTA_OK) /* a passing receipt is the committed one */
		FZ_CHECK(same_bound(payload, ota_bytes_make(w->payload, w->payload_len)));
	ota_archive_report_free(r);
	json_decref(doc);
	free(b64);
	free(m);
	free(canon);
	return 0;
}
