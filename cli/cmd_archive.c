/*
 * ota archive build: an ota.archive/v1 from a receipt (runner-shaped, e.g. a
 * harness that drove an external provider through ota-attestd) plus its
 * acceptances (files or an attestd database), and the helpers `ota run` /
 * `ota up` use to write their archive (docs/archive.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli.h"
#include "ota/admission.h"
#include "ota/archive.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/trust.h"

void cli_archive_chain_free(cli_archive_chain *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->n; i++)
		free((void *)(uintptr_t)c->items[i].ptr);
	c->n = 0;
	ota_trust_root_free(c->latest);
	c->latest = NULL;
}

static ota_err chain_add(cli_archive_chain *c, const char *path, ota_error *e)
{
	if (c->n == CLI_ARCHIVE_MAX_CHAIN)
		return ota_error_set(e, OTA_ERR_TOO_LARGE, path, "too many trust-root snapshots");
	uint8_t *b = NULL;
	size_t n = 0;
	ota_err rc = ota_file_read(path, OTA_MAX_TRUST_ROOT_BYTES, &b, &n, e);
	if (rc != OTA_OK)
		return rc;
	c->items[c->n++] = ota_bytes_make(b, n);
	return OTA_OK;
}

ota_err cli_archive_chain_add(cli_archive_chain *c, const char *path, ota_error *e)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		/* a trust directory of `ota trust`: versions/N.root.json, N = 1.. */
		char p[4096];
		for (unsigned v = 1; v <= CLI_ARCHIVE_MAX_CHAIN; v++) {
			snprintf(p, sizeof p, "%s/versions/%u.root.json", path, v);
			if (access(p, F_OK) != 0)
				break;
			ota_err rc = chain_add(c, p, e);
			if (rc != OTA_OK)
				return rc;
		}
		if (c->n == 0) {
			snprintf(p, sizeof p, "%s/root.json", path);
			return chain_add(c, p, e);
		}
		return OTA_OK;
	}
	return chain_add(c, path, e);
}

ota_err cli_archive_chain_finish(cli_archive_chain *c, ota_error *e)
{
	if (c->n == 0)
		return OTA_OK;
	ota_trust_root_free(c->latest);
	c->latest = NULL;
	return ota_trust_root_parse(c->items[c->n - 1], &c->latest, e);
}

ota_err cli_archive_runner_principal(const cli_archive_chain *c, const ota_key *key, int64_t now,
                                     const char *lane, const char *provider_target, char *out,
                                     size_t cap, ota_error *e)
{
	uint8_t kid[32];
	out[0] = '\0';
	if (c->latest == NULL)
		return OTA_OK;
	ota_err rc = ota_key_kid(key, kid);
	const ota_trust_principal *who = NULL;
	ota_trust_scope_req scope = {NULL, lane, provider_target};
	if (rc == OTA_OK)
		rc = ota_trust_lookup(c->latest, ota_bytes_make(kid, sizeof kid),
		                      ota_key_default_alg(key), OTA_TRUST_ROLE_RUNNER, &scope, now, NULL,
		                      &who, e);
	if (rc == OTA_OK)
		snprintf(out, cap, "%s", ota_trust_principal_id(who));
	return rc;
}

ota_err cli_mkdirs(char *path)
{
	for (char *p = path + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int r = mkdir(path, 0755);
		*p = '/';
		if (r != 0 && errno != EEXIST)
			return OTA_ERR_IO;
	}
	return OTA_OK;
}

int cli_archive_write(const ota_archive_input *in, const char *path, const char *repo,
                      const char *txn, bool quiet)
{
	char shown[4096];
	char name[128];
	snprintf(name, sizeof name, "%s.json", txn != NULL ? txn : "archive");
	if (path != NULL)
		snprintf(shown, sizeof shown, "%s", path);
	else
		snprintf(shown, sizeof shown, "%s/.ota/archives/%s", repo != NULL ? repo : ".", name);
	ota_error e;
	ota_error_clear(&e);
	char *text = NULL;
	size_t n = 0;
	ota_err rc = ota_archive_build(in, &text, &n, &e);
	if (rc == OTA_OK && path == NULL) {
		/* the repository's own directory: beneath it, no symlink followed */
		rc = cli_repo_write(repo != NULL ? repo : ".", ".ota/archives", name,
		                    ota_bytes_make(text, n), 0644, shown, sizeof shown, &e);
	} else if (rc == OTA_OK) {
		char tmp[4096];
		snprintf(tmp, sizeof tmp, "%s", path);
		rc = cli_mkdirs(tmp);
		if (rc != OTA_OK)
			ota_error_set(&e, rc, path, "cannot create the archive directory");
		if (rc == OTA_OK)
			rc = ota_file_write_atomic(path, ota_bytes_make(text, n), 0644, &e);
	}
	free(text);
	if (rc != OTA_OK) {
		fprintf(stderr, "ota: archive not written: ");
		return cli_fail("ota", &e);
	}
	if (!quiet)
		fprintf(stderr, "ota: archive %s\n", shown);
	return CLI_OK;
}

#define MAX_ACC 4096

static int usage(void)
{
	return cli_usage("ota", "archive build --receipt R.json --contract ota.yaml "
	                        "(--task T | --workflow W) [--agent] [--sandbox-target T] "
	                        "[--org-policy F] [--overlay F]... --trust DIR|FILE [--trust FILE]... "
	                        "--key RUNNER.pem [--acceptance A.cose]... [--attestd-db DB] "
	                        "[--native-platform OS/ARCH[/VAR]] -o ARCHIVE");
}

/* The claims of a receipt attestation's COSE bytes (base64), unverified:
 * false when they cannot be read. */
static bool attestation_lane(const json_t *cose_b64, ota_attestation *claims)
{
	const char *b64 = json_string_value(cose_b64);
	uint8_t *cose = NULL;
	size_t n = 0;
	if (b64 == NULL || ota_base64_decode(b64, strlen(b64), &cose, &n) != OTA_OK)
		return false;
	ota_cose_sign1 m;
	bool ok = ota_cose_sign1_decode(ota_bytes_make(cose, n), NULL, &m, NULL) == OTA_OK &&
	          ota_attestation_parse(m.payload, claims, NULL) == OTA_OK;
	free(cose);
	return ok;
}

/*
 * The acceptances ota-attestd stored for the receipt's attestations (table
 * acceptances of nonce-store/store.c), read on a read-only connection:
 * building an archive never writes to the endpoint's store (no epoch bump,
 * no schema created; a missing path is refused, not created empty). An
 * attestation without a stored acceptance is reported and left out (a
 * runner-owned record has none; `ota-verify archive` refuses an issuer's
 * record without one: archive_acceptance_missing).
 */
static ota_err stored_acceptances(const char *db, const json_t *atts, ota_bytes *accs,
                                  size_t *naccs, ota_error *e)
{
	struct stat st;
	if (stat(db, &st) != 0)
		return ota_error_set(e, errno == ENOENT ? OTA_ERR_NOT_FOUND : OTA_ERR_IO, db,
		                     "attestd database: %s", strerror(errno));
	sqlite3 *h = NULL;
	sqlite3_stmt *q = NULL;
	ota_err rc = OTA_OK;
	/* the store finds an acceptance by its lane: the attestation's own txn
	 * and boundary claims (its signature is ota-verify's to judge) */
	ota_attestation *claims = calloc(1, sizeof *claims);
	if (claims == NULL)
		return ota_error_set(e, OTA_ERR_NOMEM, db, "attestation");
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
	    sqlite3_busy_timeout(h, 10000) != SQLITE_OK ||
	    sqlite3_prepare_v2(h,
	                       "SELECT acceptance FROM acceptances"
	                       " WHERE txn = ?2 AND boundary = ?3 AND record_id = ?1",
	                       -1, &q, NULL) != SQLITE_OK) {
		rc = ota_error_set(e, OTA_ERR_DB, db, "not an ota-attestd database: %s",
		                   h != NULL ? sqlite3_errmsg(h) : "cannot open");
		goto out;
	}
	for (size_t i = 0; rc == OTA_OK && i < json_array_size(atts); i++) {
		const char *id = json_string_value(json_object_get(json_array_get(atts, i), "identity"));
		if (id == NULL)
			continue; /* ota_archive_build names it */
		if (*naccs == MAX_ACC) {
			rc = ota_error_set(e, OTA_ERR_TOO_LARGE, db, "more than %d acceptances", MAX_ACC);
			break;
		}
		if (!attestation_lane(json_object_get(json_array_get(atts, i), "cose_sign1"), claims)) {
			fprintf(stderr, "ota: archive: attestations[%zu] %s: no txn and boundary claims"
			                " to find its acceptance by\n", i, id);
			continue;
		}
		sqlite3_bind_text(q, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, claims->txn, -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 3, claims->boundary, -1, SQLITE_STATIC);
		int r = sqlite3_step(q);
		if (r == SQLITE_ROW) {
			size_t n = (size_t)sqlite3_column_bytes(q, 0);
			uint8_t *b = malloc(n > 0 ? n : 1);
			if (b == NULL) {
				rc = ota_error_set(e, OTA_ERR_NOMEM, db, "acceptance");
			} else {
				if (n > 0)
					memcpy(b, sqlite3_column_blob(q, 0), n);
				accs[(*naccs)++] = ota_bytes_make(b, n);
			}
		} else if (r == SQLITE_DONE) {
			fprintf(stderr, "ota: archive: attestations[%zu] %s: no acceptance stored in %s\n",
			        i, id, db);
		} else {
			rc = ota_error_set(e, OTA_ERR_DB, db, "acceptance of %s: %s", id, sqlite3_errmsg(h));
		}
		sqlite3_reset(q);
		sqlite3_clear_bindings(q);
	}
out:
	free(claims);
	sqlite3_finalize(q);
	sqlite3_close(h);
	return rc;
}

static int build(int argc, char **argv)
{
	const char *receipt_path = NULL, *contract_path = NULL, *lane = NULL, *target = NULL;
	const char *key_path = NULL, *out = NULL, *db = NULL, *native = NULL;
	const char *org = NULL, *ovf[OTA_MAX_OVERLAYS];
	const char *accf[MAX_ACC];
	size_t nov = 0, nacc = 0;
	bool agent = false, workflow = false;
	cli_archive_chain chain;
	memset(&chain, 0, sizeof chain);
	ota_error e;
	ota_error_clear(&e);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--agent") == 0)
			agent = true;
		else if (strcmp(a, "--receipt") == 0 && more)
			receipt_path = argv[++i];
		else if (strcmp(a, "--contract") == 0 && more)
			contract_path = argv[++i];
		else if (strcmp(a, "--task") == 0 && more)
			lane = argv[++i], workflow = false;
		else if (strcmp(a, "--workflow") == 0 && more)
			lane = argv[++i], workflow = true;
		else if (strcmp(a, "--sandbox-target") == 0 && more)
			target = argv[++i];
		else if (strcmp(a, "--org-policy") == 0 && more)
			org = argv[++i];
		else if (strcmp(a, "--overlay") == 0 && more && nov < OTA_MAX_OVERLAYS)
			ovf[nov++] = argv[++i];
		else if (strcmp(a, "--trust") == 0 && more) {
			if (cli_archive_chain_add(&chain, argv[++i], &e) != OTA_OK) {
				cli_archive_chain_free(&chain);
				return cli_fail("ota", &e);
			}
		} else if (strcmp(a, "--key") == 0 && more)
			key_path = argv[++i];
		else if (strcmp(a, "--acceptance") == 0 && more && nacc < MAX_ACC)
			accf[nacc++] = argv[++i];
		else if (strcmp(a, "--attestd-db") == 0 && more)
			db = argv[++i];
		else if (strcmp(a, "--native-platform") == 0 && more)
			native = argv[++i];
		else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) && more)
			out = argv[++i];
		else {
			cli_archive_chain_free(&chain);
			return usage();
		}
	}
	if (receipt_path == NULL || contract_path == NULL || lane == NULL || key_path == NULL ||
	    out == NULL || chain.n == 0) {
		cli_archive_chain_free(&chain);
		return usage();
	}
	int ret = CLI_INTERNAL;
	uint8_t *rb = NULL, *cb = NULL;
	size_t rl = 0, cl = 0;
	json_t *receipt = NULL;
	ota_key *key = NULL;
	ota_archive_overlay_src ovs[OTA_MAX_OVERLAYS + 1];
	size_t novs = 0;
	ota_bytes accs[MAX_ACC];
	size_t naccs = 0;
	ota_archive_input in;
	memset(&in, 0, sizeof in);
	memset(ovs, 0, sizeof ovs);
	ota_err rc = ota_file_read(receipt_path, OTA_MAX_JSON_BYTES, &rb, &rl, &e);
	if (rc == OTA_OK)
		rc = ota_json_parse(ota_bytes_make(rb, rl), &receipt, &e);
	if (rc == OTA_OK)
		rc = ota_file_read(contract_path, OTA_MAX_YAML_BYTES, &cb, &cl, &e);
	if (rc == OTA_OK)
		rc = ota_key_load_file(key_path, &key, &e);
	if (rc == OTA_OK)
		rc = cli_archive_chain_finish(&chain, &e);
	for (size_t i = 0; rc == OTA_OK && i < nov + (org != NULL ? 1u : 0u); i++) {
		const char *f = org != NULL ? (i == 0 ? org : ovf[i - 1]) : ovf[i];
		uint8_t *b = NULL;
		size_t n = 0;
		rc = ota_file_read(f, OTA_MAX_YAML_BYTES, &b, &n, &e);
		if (rc == OTA_OK) {
			ovs[novs].bytes = ota_bytes_make(b, n);
			ovs[novs].name = f;
			ovs[novs].source = org != NULL && i == 0 ? OTA_OVERLAY_ORG_POLICY : OTA_OVERLAY_FILE;
			novs++;
		}
	}
	for (size_t i = 0; rc == OTA_OK && i < nacc; i++) {
		uint8_t *b = NULL;
		size_t n = 0;
		rc = ota_file_read(accf[i], OTA_MAX_COSE_BYTES, &b, &n, &e);
		if (rc == OTA_OK)
			accs[naccs++] = ota_bytes_make(b, n);
	}
	if (rc == OTA_OK && db != NULL)
		rc = stored_acceptances(db, json_object_get(receipt, "attestations"), accs, &naccs,
		                        &e);
	if (rc != OTA_OK) {
		ret = cli_fail("ota", &e);
		goto out;
	}
	in.contract = ota_bytes_make(cb, cl);
	in.contract_name = "ota.yaml";
	in.overlays = ovs;
	in.noverlays = novs;
	in.lane_kind = workflow ? OTA_LANE_WORKFLOW : OTA_LANE_TASK;
	in.lane = lane;
	in.agent = agent;
	in.sandbox_target = target;
	if (native != NULL) {
		if (ota_platform_parse(native, &in.native_platform, &e) != OTA_OK) {
			ret = cli_fail("ota", &e);
			goto out;
		}
	} else {
		ota_platform_host(&in.native_platform);
	}
	in.trust_chain = chain.items;
	in.ntrust = chain.n;
	in.receipt = receipt;
	in.acceptances = accs;
	in.nacceptances = naccs;
	in.runner_key = key;
	in.signed_at = (int64_t)time(NULL);
	ret = cli_archive_write(&in, out, NULL, NULL, false);
out:
	for (size_t i = 0; i < novs; i++)
		free((void *)(uintptr_t)ovs[i].bytes.ptr);
	for (size_t i = 0; i < naccs; i++)
		free((void *)(uintptr_t)accs[i].ptr);
	ota_key_free(key);
	json_decref(receipt);
	free(rb);
	free(cb);
	cli_archive_chain_free(&chain);
	return ret;
}

int cmd_archive(int argc, char **argv)
{
	if (cli_help_asked())
		return usage();
	if (argc >= 2 && strcmp(argv[1], "build") == 0)
		return build(argc - 1, argv + 1);
	return usage();
}
