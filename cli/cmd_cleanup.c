/*
 * ota cleanup: finalizes the oci_local leases whose runner is gone (e.g.
 * after SIGKILL): kills and deletes their containers, confirms the runtime
 * forgot them and records the terminal state durably. Only leases this
 * configuration would have written are acted upon (container id form,
 * STATE/bundles/ID, the runtime binary and root that `ota run` with the
 * same --runtime/--runtime-root/--state-dir uses); any other row is
 * reported (oci_lease_untrusted), left open, and the exit is non-zero.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/nonce.h"
#include "ota/oci.h"
#include "ota/runner.h"

static const char *cleanup_usage =
	"ota cleanup [--lease-db PATH] [--state-dir DIR] [--runtime runc|crun] [--runtime-root DIR]\n"
	"            [--runtime-timeout S] [--list] [--all] [--json]\n"
	"            [--key PEM [--nonce-db PATH] [--issuer ID] [--trust-root ID] [--evidence FILE]]";

/* A lease row's text for the terminal: printable ASCII, others as '?'. */
static const char *printable(const char *s, char *out, size_t cap)
{
	size_t n = 0;
	for (; s != NULL && s[n] != '\0' && n + 1 < cap; n++)
		out[n] = s[n] >= 0x20 && s[n] < 0x7f ? s[n] : '?';
	out[n] = '\0';
	return s != NULL ? out : "(none)";
}

/*
 * With a runner key, each finalized lease's cleanup record is signed as a
 * COSE_Sign1 of kind cleanup against a single-use challenge (the same way
 * `ota run` signs its records) and attached as "attestation"; --evidence
 * writes the whole report atomically.
 */
/* The report of a cleanup that acted on nothing (refused before, or failed
 * to start): the schema's shape, ok false; the caller adds "error". */
static json_t *empty_report(void)
{
	return json_pack("{s:s, s:[], s:[], s:I, s:b}", "kind", "ota.cleanup_report/v1", "finalized",
	                 "untrusted", "skipped_live", (json_int_t)0, "ok", 0);
}

/* Signs every finalized record of rep with key, against challenges of nonces. */
static ota_err sign_report(json_t *rep, const ota_key *key, ota_nonce_store *nonces,
                           const char *issuer, const char *trust_root, ota_error *e)
{
	ota_runner_opts ro;
	memset(&ro, 0, sizeof ro);
	ro.runner_key = key;
	ro.nonces = nonces;
	ro.issuer = issuer;
	ro.trust_root = trust_root;
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(rep, "finalized"), i, r)
	{
		json_t *att = NULL;
		ota_err rc = ota_runner_sign_cleanup(&ro, r, &att, e);
		if (rc != OTA_OK)
			return rc;
		json_object_set_new(r, "attestation", att);
	}
	return OTA_OK;
}

int cmd_cleanup(int argc, char **argv)
{
	if (cli_help_asked())
		return cli_usage("ota", cleanup_usage);
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	const char *env_db = getenv("OTA_LEASE_DB");
	o.lease_db = env_db != NULL && env_db[0] != '\0' ? env_db : OTA_OCI_DEFAULT_LEASE_DB;
	bool json = false, list = false, all = false;
	const char *runtime = NULL;
	const char *key = NULL, *nonce_db = NULL, *issuer = NULL, *trust_root = NULL, *evidence = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--json") == 0)
			json = true;
		else if (strcmp(a, "--list") == 0)
			list = true;
		else if (strcmp(a, "--all") == 0)
			all = true;
		else if (strcmp(a, "--lease-db") == 0 && more)
			o.lease_db = argv[++i];
		else if (strcmp(a, "--state-dir") == 0 && more)
			o.state_dir = argv[++i];
		else if (strcmp(a, "--runtime") == 0 && more)
			runtime = argv[++i];
		else if (strcmp(a, "--runtime-root") == 0 && more)
			o.runtime.root = argv[++i];
		else if (strcmp(a, "--runtime-timeout") == 0 && more) {
			/* every runtime command's deadline (default: per command) */
			char *end = NULL;
			errno = 0;
			long v = strtol(argv[++i], &end, 10);
			if (end == argv[i] || *end != '\0' || errno != 0 || v < 1 ||
			    v > OTA_OCI_RT_TIMEOUT_MAX) {
				fprintf(stderr, "ota: --runtime-timeout takes 1 to 3600 seconds\n");
				return cli_usage("ota", cleanup_usage);
			}
			o.runtime_timeout_seconds = (int)v;
		}
		else if (strcmp(a, "--key") == 0 && more)
			key = argv[++i];
		else if (strcmp(a, "--nonce-db") == 0 && more)
			nonce_db = argv[++i];
		else if (strcmp(a, "--issuer") == 0 && more)
			issuer = argv[++i];
		else if (strcmp(a, "--trust-root") == 0 && more)
			trust_root = argv[++i];
		else if (strcmp(a, "--evidence") == 0 && more)
			evidence = argv[++i];
		else
			return cli_usage("ota", cleanup_usage);
	}
	/* the runtime `ota run` would use with the same options */
	if (runtime == NULL)
		runtime = getenv("OTA_OCI_RUNTIME");
	if (runtime != NULL && strcmp(runtime, "crun") == 0)
		o.runtime.kind = OTA_OCI_CRUN;
	else if (runtime != NULL && strcmp(runtime, "runc") != 0)
		return cli_usage("ota", cleanup_usage);
	ota_error e;
	ota_error_clear(&e);
	if (list) {
		json_t *rows = NULL;
		if (ota_oci_lease_list(o.lease_db, !all, &rows, &e) != OTA_OK)
			return cli_fail("ota", &e);
		if (json) {
			cli_print_json(rows);
		} else {
			size_t i;
			json_t *r;
			json_array_foreach(rows, i, r)
			{
				const char *t = json_string_value(json_object_get(r, "terminal"));
				char a[128], b[32], c[32], d[64];
				printf("%s\t%s\t%s\t%s\n",
				       printable(json_string_value(json_object_get(r, "id")), a, sizeof a),
				       printable(json_string_value(json_object_get(r, "runtime")), b, sizeof b),
				       printable(json_string_value(json_object_get(r, "phase")), c, sizeof c),
				       t != NULL ? printable(t, d, sizeof d) : "open");
			}
		}
		json_decref(rows);
		return CLI_OK;
	}
	if ((nonce_db != NULL || issuer != NULL || trust_root != NULL || evidence != NULL) && key == NULL)
		return cli_usage("ota", cleanup_usage);
	if (nonce_db == NULL) {
		const char *env_ndb = getenv("OTA_NONCE_DB");
		nonce_db = env_ndb != NULL && env_ndb[0] != '\0' ? env_ndb : "/var/lib/ota/nonces.db";
	}
	/* the signing key and the nonce store before anything is acted upon: an
	 * unusable key must not leave leases finalized with no signed record */
	ota_key *skey = NULL;
	ota_nonce_store *nonces = NULL;
	if (key != NULL) {
		ota_nonce_opts nopts;
		ota_nonce_opts_init(&nopts);
		ota_err prc = ota_key_load_file(key, &skey, &e);
		if (prc == OTA_OK)
			prc = ota_nonce_store_open(nonce_db, &nopts, &nonces, &e);
		if (prc != OTA_OK) {
			ota_key_free(skey);
			if (json) {
				json_t *j = empty_report();
				json_object_set_new(j, "error", cli_error_json(&e));
				cli_print_json(j);
				json_decref(j);
				return cli_error_exit(&e);
			}
			return cli_fail("ota", &e);
		}
	}
	json_t *rep = NULL;
	ota_err rc = ota_oci_cleanup(&o, &rep, &e);
	/*
	 * The leases are finalized whatever happens next; signing is evidence of
	 * it. Every finalized record is signed even when another row was refused
	 * (oci_lease_untrusted) or left unconfirmed: a planted row must not
	 * suppress the evidence of the removals that did happen. The exit status
	 * and "ok" still say the cleanup as a whole did not succeed.
	 */
	bool signed_ok = true;
	if (rep != NULL && key != NULL) {
		ota_error se;
		ota_error_clear(&se);
		if (sign_report(rep, skey, nonces, issuer, trust_root, &se) != OTA_OK) {
			signed_ok = false;
			if (rc == OTA_OK) {
				rc = se.code;
				e = se;
			} else if (json) {
				json_object_set_new(rep, "sign_error", cli_error_json(&se));
			} else {
				(void)cli_fail("ota", &se);
			}
		}
	}
	if (signed_ok && rep != NULL && evidence != NULL) {
		/* ok: every lease finalized, confirmed and (with --key) signed */
		json_object_set_new(rep, "ok", json_boolean(rc == OTA_OK));
		ota_error we;
		ota_error_clear(&we);
		char *text = ota_json_dumps(rep, true);
		ota_err wrc = text == NULL ? ota_error_set(&we, OTA_ERR_NOMEM, evidence, NULL)
		                           : ota_file_write_atomic(evidence,
		                                                   ota_bytes_make(text, strlen(text)),
		                                                   0644, &we);
		free(text);
		if (wrc != OTA_OK && rc == OTA_OK) {
			rc = wrc;
			e = we;
		} else if (wrc != OTA_OK) {
			(void)cli_fail("ota", &we);
		}
	}
	if (json) {
		if (rep == NULL)
			rep = empty_report();
		json_object_set_new(rep, "ok", json_boolean(rc == OTA_OK));
		if (rc != OTA_OK)
			json_object_set_new(rep, "error", cli_error_json(&e));
		cli_print_json(rep);
	} else if (rep != NULL) {
		size_t i;
		json_t *r;
		json_array_foreach(json_object_get(rep, "finalized"), i, r)
			printf("%s\t%s\t%s\n", json_string_value(json_object_get(r, "container_id")),
			       json_string_value(json_object_get(r, "state")),
			       json_is_true(json_object_get(r, "confirmed")) ? "cleanup confirmed"
			                                                      : "cleanup NOT confirmed");
		json_array_foreach(json_object_get(rep, "untrusted"), i, r)
		{
			char a[128];
			printf("%s\tuntrusted\t%s: %s (left open)\n",
			       printable(json_string_value(json_object_get(r, "container_id")), a, sizeof a),
			       json_string_value(json_object_get(r, "error")),
			       json_string_value(json_object_get(r, "message")));
		}
		printf("finalized %zu, skipped %lld (runner alive), untrusted %zu (left open)\n",
		       json_array_size(json_object_get(rep, "finalized")),
		       (long long)json_integer_value(json_object_get(rep, "skipped_live")),
		       json_array_size(json_object_get(rep, "untrusted")));
	}
	json_decref(rep);
	ota_nonce_store_close(nonces);
	ota_key_free(skey);
	if (rc != OTA_OK)
		return json ? cli_error_exit(&e) : cli_fail("ota", &e);
	return CLI_OK;
}
