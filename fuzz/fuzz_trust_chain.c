/*
 * fuzz_trust_chain: rotation chains of several trust-root snapshots
 * (ota_trust_chain_verify_from, ota_trust_chain_verify; trust/rotate.c), as
 * `ota-verify trust --pinned P CHAIN...` and every verifier walk them: from
 * a fixed pinned snapshot (vectors/trust/chains/ok_chain_with_rotation/
 * 1.json, acme.example version 1, threshold 2 of 3) through the snapshots
 * of the input.
 *
 * Input: one option byte, then snapshots, each a 4-byte big-endian length
 * and that many bytes (a length beyond the end takes the rest); at most
 * OTA_MAX_TRUST_CHAIN + 2 of them, so that trust_chain_too_long is
 * reachable. Option bits: 0-1 the verifier's time (1800000000, 2000000000
 * (after the fixtures expire), 1700000000, 1700000015), 2 with a verifier
 * state (a fresh file in a private temporary directory), 3 max_chain 2.
 * Seeds: fuzz/seeds/make_trust_chain_seeds.py from vectors/trust/chains.
 *
 * Invariants: verify_from the parsed pinned snapshot and verify from its
 * bytes agree (code and latest identity); a refusal names itself and
 * leaves latest NULL; a success returns a snapshot of the pinned domain,
 * of a version not below the pinned one, unexpired at the time, whose
 * identity is the last snapshot's of the input; with a state, the fresh
 * state changes no outcome, records the latest version and identity, and a
 * second walk with that state has the same outcome.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "ota/limits.h"
#include "ota/trust.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *g_pinned;
static size_t g_pinned_len;
static char g_dir[64], g_state[128], g_lock[160];

static void cleanup(void)
{
	unlink(g_state);
	unlink(g_lock);
	rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *src = getenv("OTA_SOURCE_DIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/vectors/trust/chains/ok_chain_with_rotation/1.json",
	         src != NULL ? src : OTA_SOURCE_DIR);
	ota_error e;
	ota_error_clear(&e);
	if (ota_file_read(path, OTA_MAX_TRUST_ROOT_BYTES, &g_pinned, &g_pinned_len, &e) != OTA_OK) {
		fprintf(stderr, "fuzz_trust_chain: %s: %s (set OTA_SOURCE_DIR)\n", path, e.what);
		abort();
	}
	snprintf(g_dir, sizeof g_dir, "/tmp/ota-fuzz-trust-chain-XXXXXX");
	FZ_CHECK(mkdtemp(g_dir) != NULL);
	snprintf(g_state, sizeof g_state, "%s/state.json", g_dir);
	snprintf(g_lock, sizeof g_lock, "%s.lock", g_state);
	atexit(cleanup);
	return 0;
}

#define MAX_N (OTA_MAX_TRUST_CHAIN + 2u)

static ota_bytes g_chain[MAX_N];

/* verify_from a freshly parsed pinned snapshot; checks the refusal shape */
static ota_err walk_from(size_t n, const ota_trust_verify_opts *o, ota_trust_root **latest)
{
	ota_trust_root *pinned = NULL;
	FZ_CHECK(ota_trust_root_parse(ota_bytes_make(g_pinned, g_pinned_len), &pinned, NULL) ==
	         OTA_OK);
	ota_error e;
	ota_error_clear(&e);
	*latest = (ota_trust_root *)(uintptr_t)1;
	ota_err rc = ota_trust_chain_verify_from(pinned, g_chain, n, o, latest, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(*latest == NULL);
	} else {
		FZ_CHECK(*latest != NULL);
	}
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4u * 1024u * 1024u)
		return 0;
	static const int64_t times[4] = {1800000000, 2000000000, 1700000000, 1700000015};
	uint8_t opt = data[0];
	ota_trust_verify_opts o = {.at = times[opt & 3], .max_chain = (opt & 8) ? 2 : 0};
	size_t n = 0;
	const uint8_t *p = data + 1, *end = data + size;
	while (p < end && n < MAX_N) {
		size_t len = 0, avail = (size_t)(end - p);
		for (size_t i = 0; i < 4; i++)
			len = len << 8 | (i < avail ? p[i] : 0);
		p += avail < 4 ? avail : 4;
		avail = (size_t)(end - p);
		if (len > avail)
			len = avail;
		g_chain[n++] = ota_bytes_make(p, len);
		p += len;
	}

	ota_trust_root *latest = NULL;
	ota_err rc = walk_from(n, &o, &latest);

	/* the same walk from the pinned bytes */
	ota_trust_root *latest2 = (ota_trust_root *)(uintptr_t)1;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc2 = ota_trust_chain_verify(ota_bytes_make(g_pinned, g_pinned_len), g_chain, n, &o,
	                                     &latest2, &e);
	FZ_CHECK(rc2 == rc);
	if (rc2 != OTA_OK) {
		fz_refusal(rc2, &e);
		FZ_CHECK(latest2 == NULL);
	} else {
		FZ_CHECK(strcmp(ota_trust_root_identity(latest2), ota_trust_root_identity(latest)) == 0);
		ota_trust_root_free(latest2);
	}

	if (rc == OTA_OK) {
		FZ_CHECK(strcmp(ota_trust_root_domain(latest), "acme.example") == 0);
		FZ_CHECK(ota_trust_root_version(latest) >= 1);
		FZ_CHECK(o.at < ota_trust_root_expires(latest));
		if (n > 0) {
			ota_trust_root *last = NULL;
			FZ_CHECK(ota_trust_root_parse(g_chain[n - 1], &last, NULL) == OTA_OK);
			FZ_CHECK(strcmp(ota_trust_root_identity(last), ota_trust_root_identity(latest)) ==
			         0);
			ota_trust_root_free(last);
		}
	}

	if (opt & 4) {
		unlink(g_state);
		ota_trust_state *st = NULL;
		FZ_CHECK(ota_trust_state_open(g_state, &st, NULL) == OTA_OK);
		ota_trust_verify_opts os = o;
		os.state = st;
		ota_trust_root *l3 = NULL;
		FZ_CHECK(walk_from(n, &os, &l3) == rc);
		int64_t ver = 0;
		char id[OTA_ID_LEN + 1];
		if (rc == OTA_OK) {
			FZ_CHECK(ota_trust_state_get(st, "acme.example", &ver, id) == OTA_OK);
			FZ_CHECK(ver == ota_trust_root_version(l3));
			FZ_CHECK(strcmp(id, ota_trust_root_identity(l3)) == 0);
			ota_trust_root_free(l3);
			/* again with the state that recorded it */
			FZ_CHECK(walk_from(n, &os, &l3) == OTA_OK);
			ota_trust_root_free(l3);
		} else {
			FZ_CHECK(ota_trust_state_get(st, "acme.example", &ver, id) == OTA_ERR_NOT_FOUND);
		}
		ota_trust_state_close(st);
	}
	ota_trust_root_free(latest);
	return 0;
}
