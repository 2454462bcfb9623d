/*
 * ota cose sign   --key KEY --payload FILE [--alg ALG] [--kid-from-key]
 *                 [--detached] [--untagged] [--external-aad HEX] [--out FILE]
 * ota cose keygen --alg ALG --out PRIVATE.pem [--pub PUBLIC.pem] [--json]
 * ota cose kid    --key KEY
 *
 * sign writes the binary COSE_Sign1 to --out (atomically, 0644) or to
 * standard output. keygen writes the private key as PKCS#8 PEM with mode
 * 0600 (refusing to overwrite) and never prints it; it prints the kid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "ota/cose.h"
#include "ota/limits.h"

#define SIGN_USAGE                                                                          \
	"ota cose sign --key KEY --payload FILE [--alg ALG] [--kid-from-key] [--detached] "   \
	"[--untagged] [--external-aad HEX] [--out FILE]"
#define KEYGEN_USAGE "ota cose keygen --alg ES256|ES384|ES512|EdDSA --out PRIVATE.pem [--pub PUBLIC.pem] [--json]"
#define KID_USAGE "ota cose kid --key KEY"

static int fail(const ota_error *e)
{
	return cli_fail("ota cose", e);
}

static int cose_sign(int argc, char **argv)
{
	const char *key_path = NULL, *payload_path = NULL, *alg_name = NULL, *aad_hex = NULL,
	           *out_path = NULL;
	ota_cose_sign_opts so = {0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--key") == 0 && i + 1 < argc)
			key_path = argv[++i];
		else if (strcmp(a, "--payload") == 0 && i + 1 < argc)
			payload_path = argv[++i];
		else if (strcmp(a, "--alg") == 0 && i + 1 < argc)
			alg_name = argv[++i];
		else if (strcmp(a, "--external-aad") == 0 && i + 1 < argc)
			aad_hex = argv[++i];
		else if (strcmp(a, "--out") == 0 && i + 1 < argc)
			out_path = argv[++i];
		else if (strcmp(a, "--kid-from-key") == 0)
			so.include_kid = true;
		else if (strcmp(a, "--detached") == 0)
			so.detached = true;
		else if (strcmp(a, "--untagged") == 0)
			so.untagged = true;
		else
			return cli_usage("ota cose sign", SIGN_USAGE);
	}
	if (key_path == NULL || payload_path == NULL)
		return cli_usage("ota cose sign", SIGN_USAGE);
	ota_error err;
	ota_error_clear(&err);
	if (alg_name != NULL && ota_alg_from_name(alg_name, &so.alg) != OTA_OK) {
		ota_error_set(&err, OTA_ERR_ALG_UNKNOWN, "--alg", "unknown alg %s", alg_name);
		(void)fail(&err);
		return CLI_USAGE;
	}
	uint8_t *aad = NULL, *payload = NULL, *msg = NULL;
	size_t al = 0, pl = 0, ml = 0;
	ota_key *key = NULL;
	int code = CLI_OK;
	ota_err rc = OTA_OK;
	if (aad_hex != NULL) {
		size_t hl = strlen(aad_hex);
		aad = malloc(hl / 2 + 1);
		if (aad == NULL || ota_hex_decode(aad_hex, hl, (ota_buf){aad, hl / 2 + 1}, &al) != OTA_OK) {
			ota_error_set(&err, OTA_ERR_BAD_HEX, "--external-aad", "not an even-length hex string");
			code = CLI_USAGE;
			goto out;
		}
		so.external_aad = ota_bytes_make(aad, al);
	}
	rc = strcmp(payload_path, "-") == 0
	             ? ota_fd_read(STDIN_FILENO, "stdin", OTA_MAX_COSE_BYTES - 1024, &payload, &pl,
	                           &err)
	             : ota_file_read(payload_path, OTA_MAX_COSE_BYTES - 1024, &payload, &pl, &err);
	if (rc == OTA_OK)
		rc = ota_key_load_file(key_path, &key, &err);
	if (rc != OTA_OK) {
		code = CLI_USAGE;
		goto out;
	}
	rc = ota_cose_sign1_sign(key, ota_bytes_make(payload, pl), &so, &msg, &ml, &err);
	if (rc != OTA_OK) {
		code = cli_exit_for(rc);
		if (rc == OTA_ERR_KEY_PRIVATE_REQUIRED || rc == OTA_ERR_ALG_KEY_MISMATCH ||
		    rc == OTA_ERR_UNSUPPORTED)
			code = CLI_USAGE;
		goto out;
	}
	if (out_path != NULL && strcmp(out_path, "-") != 0) {
		rc = ota_file_write_atomic(out_path, ota_bytes_make(msg, ml), 0644, &err);
		if (rc != OTA_OK) {
			code = CLI_INTERNAL;
			goto out;
		}
	} else if (fwrite(msg, 1, ml, stdout) != ml || fflush(stdout) != 0) {
		ota_error_set(&err, OTA_ERR_IO, "stdout", "cannot write the message");
		code = CLI_INTERNAL;
	}
out:
	if (code != CLI_OK) {
		if (err.code == OTA_OK)
			err.code = rc;
		(void)fail(&err);
	}
	ota_key_free(key);
	free(aad);
	free(payload);
	free(msg);
	return code;
}

static void print_kid(const ota_key *k, const char *label)
{
	uint8_t kid[32];
	char hex[65];
	if (ota_key_kid(k, kid) == OTA_OK) {
		ota_hex_encode(ota_bytes_make(kid, 32), hex);
		printf("%s%s\n", label, hex);
	}
}

static int cose_keygen(int argc, char **argv)
{
	const char *alg_name = NULL, *out_path = NULL, *pub_path = NULL;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--alg") == 0 && i + 1 < argc)
			alg_name = argv[++i];
		else if (strcmp(a, "--out") == 0 && i + 1 < argc)
			out_path = argv[++i];
		else if (strcmp(a, "--pub") == 0 && i + 1 < argc)
			pub_path = argv[++i];
		else if (strcmp(a, "--json") == 0)
			json = true;
		else
			return cli_usage("ota cose keygen", KEYGEN_USAGE);
	}
	if (alg_name == NULL || out_path == NULL || strcmp(out_path, "-") == 0)
		return cli_usage("ota cose keygen", KEYGEN_USAGE);
	ota_error err;
	ota_error_clear(&err);
	ota_alg alg;
	if (ota_alg_from_name(alg_name, &alg) != OTA_OK || alg == OTA_ALG_PS256 ||
	    alg == OTA_ALG_PS384 || alg == OTA_ALG_PS512) {
		ota_error_set(&err, OTA_ERR_ALG_UNKNOWN, "--alg",
		              "keygen supports ES256, ES384, ES512 and EdDSA, not %s", alg_name);
		(void)fail(&err);
		return CLI_USAGE;
	}
	struct stat st;
	if (lstat(out_path, &st) == 0 || (pub_path != NULL && lstat(pub_path, &st) == 0)) {
		ota_error_set(&err, OTA_ERR_EXISTS, lstat(out_path, &st) == 0 ? out_path : pub_path,
		              "refusing to overwrite an existing file");
		(void)fail(&err);
		return CLI_USAGE;
	}
	ota_key *k = NULL;
	ota_err rc = ota_key_generate(alg, &k);
	if (rc != OTA_OK) {
		ota_error_set(&err, rc, "keygen", "key generation failed");
		(void)fail(&err);
		return CLI_INTERNAL;
	}
	char *priv = NULL, *pub = NULL;
	size_t priv_len = 0;
	int code = CLI_OK;
	rc = ota_key_private_pem(k, &priv, &priv_len);
	if (rc == OTA_OK)
		rc = ota_file_write_new(out_path, ota_bytes_make(priv, priv_len), 0600, &err);
	if (rc == OTA_OK && pub_path != NULL) {
		rc = ota_key_public_pem(k, &pub);
		if (rc == OTA_OK)
			rc = ota_file_write_new(pub_path, ota_bytes_make(pub, strlen(pub)), 0644, &err);
	}
	if (rc != OTA_OK) {
		if (err.code == OTA_OK)
			ota_error_set(&err, rc, out_path, "cannot write the key");
		(void)fail(&err);
		code = CLI_INTERNAL;
	} else if (json) {
		uint8_t kid[32];
		char hex[65] = "";
		if (ota_key_kid(k, kid) == OTA_OK)
			ota_hex_encode(ota_bytes_make(kid, 32), hex);
		json_t *o = json_pack("{s:s, s:s, s:s, s:s?}", "alg", ota_alg_name(alg), "kid", hex,
		                      "private", out_path, "public", pub_path);
		cli_print_json(o);
		json_decref(o);
	} else {
		print_kid(k, "kid: ");
	}
	if (priv != NULL) {
		ota_wipe(priv, priv_len);
		free(priv);
	}
	free(pub);
	ota_key_free(k);
	return code;
}

static int cose_kid(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "--key") != 0)
		return cli_usage("ota cose kid", KID_USAGE);
	ota_error err;
	ota_error_clear(&err);
	ota_key *k = NULL;
	if (ota_key_load_file(argv[2], &k, &err) != OTA_OK) {
		(void)fail(&err);
		return CLI_USAGE;
	}
	print_kid(k, "");
	ota_key_free(k);
	return CLI_OK;
}

int cmd_cose(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "sign") == 0)
		return cose_sign(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "keygen") == 0)
		return cose_keygen(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "kid") == 0)
		return cose_kid(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf("usage:\n  %s\n  %s\n  %s\n", SIGN_USAGE, KEYGEN_USAGE, KID_USAGE);
		return CLI_OK;
	}
	fprintf(stderr, "usage:\n  %s\n  %s\n  %s\n", SIGN_USAGE, KEYGEN_USAGE, KID_USAGE);
	return CLI_USAGE;
}
