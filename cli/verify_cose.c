/*
 * ota-verify cose --key KEY [--external-aad HEX] [--payload FILE]
 *                 [--allow-untagged] [--json] MSG
 *
 * MSG is a file holding the binary COSE_Sign1 ("-" reads standard input).
 * KEY is a PEM public key (SPKI), a PEM private key, a JWK, or a JWK Set
 * ({"keys": [...]}); with a JWK Set the message's kid must select exactly
 * one member (by its "kid" string or by our SHA-256-of-SPKI kid).
 * Exit: 0 valid, 1 invalid, 2 usage or unreadable input, 3 internal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "ota/cose.h"
#include "ota/json.h"
#include "ota/limits.h"

#define PROG "ota-verify cose"
#define USAGE                                                                              \
	"ota-verify cose --key KEY [--external-aad HEX] [--payload FILE] [--allow-untagged] " \
	"[--json] MSG"
#define MAX_SET_KEYS 64

typedef struct {
	ota_key *keys[MAX_SET_KEYS];
	char *kids[MAX_SET_KEYS]; /* the JWK "kid" strings (may be NULL) */
	size_t n;
} jwk_set;

static void set_free(jwk_set *s)
{
	for (size_t i = 0; i < s->n; i++) {
		ota_key_free(s->keys[i]);
		free(s->kids[i]);
	}
	s->n = 0;
}

static ota_err set_lookup(void *ctx, ota_bytes kid, ota_alg alg, const ota_key **out,
                          ota_error *err)
{
	const jwk_set *s = ctx;
	size_t hits = 0;
	*out = NULL;
	for (size_t i = 0; i < s->n; i++) {
		uint8_t ours[32];
		bool match = false;
		if (s->kids[i] != NULL)
			match = ota_ct_equal(kid, ota_bytes_make(s->kids[i], strlen(s->kids[i])));
		if (!match && ota_key_kid(s->keys[i], ours) == OTA_OK)
			match = ota_ct_equal(kid, ota_bytes_make(ours, 32));
		if (match) {
			*out = s->keys[i];
			hits++;
		}
	}
	if (hits > 1) {
		*out = NULL;
		return ota_error_set(err, OTA_ERR_COSE_KID_AMBIGUOUS, "kid",
		                     "kid selects %zu keys of the set", hits);
	}
	if (hits == 0)
		return ota_error_set(err, OTA_ERR_COSE_KID_UNKNOWN, "kid", "kid selects no key of the set");
	if (ota_key_check_alg(*out, alg) != OTA_OK) {
		*out = NULL;
		return ota_error_set(err, OTA_ERR_ALG_KEY_MISMATCH, "alg",
		                     "the key the kid selects does not fit alg %s", ota_alg_name(alg));
	}
	return OTA_OK;
}

/* Loads KEY: a JWK Set fills *set, anything else *key. */
static ota_err load_keys(const char *path, ota_key **key, jwk_set *set, ota_error *err)
{
	uint8_t *text = NULL;
	size_t len = 0;
	*key = NULL;
	ota_err rc = ota_file_read(path, OTA_MAX_KEY_FILE_BYTES, &text, &len, err);
	if (rc != OTA_OK)
		return rc;
	json_t *doc = NULL;
	size_t i = 0;
	while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
		i++;
	if (i < len && text[i] == '{' && ota_json_parse(ota_bytes_make(text, len), &doc, NULL) == OTA_OK &&
	    json_is_array(json_object_get(doc, "keys"))) {
		json_t *arr = json_object_get(doc, "keys");
		size_t k;
		json_t *m;
		json_array_foreach(arr, k, m) {
			if (set->n >= MAX_SET_KEYS) {
				rc = ota_error_set(err, OTA_ERR_TOO_LARGE, path, "more than %d keys",
				                   MAX_SET_KEYS);
				break;
			}
			char *one = json_dumps(m, JSON_COMPACT);
			if (one == NULL) {
				rc = ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
				break;
			}
			rc = ota_key_load_jwk(ota_bytes_make(one, strlen(one)), &set->keys[set->n], err);
			free(one);
			if (rc != OTA_OK)
				break;
			const char *kid = json_string_value(json_object_get(m, "kid"));
			set->kids[set->n] = kid != NULL ? strdup(kid) : NULL;
			set->n++;
		}
		if (rc == OTA_OK && set->n == 0)
			rc = ota_error_set(err, OTA_ERR_KEY_FORMAT, path, "empty JWK Set");
	} else {
		rc = ota_key_load_file(path, key, err);
	}
	json_decref(doc);
	ota_wipe(text, len);
	free(text);
	return rc;
}

/*
 * A usage error: the message on standard error and, with --json, the one
 * document {"ok": false, "valid": false, "code": "usage", "where", "message"}.
 */
static int usage(bool json, const char *what, const char *arg)
{
	ota_error e;
	ota_error_clear(&e);
	ota_error_set(&e, OTA_ERR_USAGE, "cose", "%s%s%.200s", what, arg != NULL ? ": " : "",
	              arg != NULL ? arg : "");
	if (json) {
		json_t *o = json_pack("{s:b, s:b, s:s, s:s, s:s}", "ok", 0, "valid", 0, "code",
		                      ota_err_name(e.code), "where", e.where, "message", e.what);
		cli_print_json(o); /* NULL prints {"code":"out_of_memory"} */
		json_decref(o);
	}
	(void)cli_usage(PROG, USAGE);
	return cli_fail(PROG, &e);
}

static ota_err read_input(const char *path, uint8_t **out, size_t *len, ota_error *err)
{
	if (strcmp(path, "-") == 0)
		return ota_fd_read(STDIN_FILENO, "stdin", OTA_MAX_COSE_BYTES, out, len, err);
	return ota_file_read(path, OTA_MAX_COSE_BYTES, out, len, err);
}

int verify_cose(int argc, char **argv)
{
	const char *key_path = NULL, *aad_hex = NULL, *payload_path = NULL, *msg_path = NULL;
	bool json = false, allow_untagged = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: %s\n", USAGE);
			return CLI_OK;
		}
		json = json || strcmp(argv[i], "--json") == 0;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **opt = NULL;
		bool stdin_ok = false; /* "-" is a legitimate value (standard input) */
		if (strcmp(a, "--json") == 0)
			continue;
		if (strcmp(a, "--allow-untagged") == 0) {
			allow_untagged = true;
			continue;
		}
		if (strcmp(a, "--key") == 0) {
			opt = &key_path;
		} else if (strcmp(a, "--external-aad") == 0) {
			opt = &aad_hex;
		} else if (strcmp(a, "--payload") == 0) {
			opt = &payload_path;
			stdin_ok = true;
		} else if (a[0] == '-' && a[1] != '\0') {
			return usage(json, "unknown option", a);
		} else if (msg_path == NULL) {
			msg_path = a;
			continue;
		} else {
			return usage(json, "more than one MSG", a);
		}
		/* a key path or hex never starts with '-'; a payload only as "-" */
		if (i + 1 >= argc ||
		    (argv[i + 1][0] == '-' && !(stdin_ok && argv[i + 1][1] == '\0')))
			return usage(json, "an option without its value", a);
		if (*opt != NULL)
			return usage(json, "an option given twice", a);
		*opt = argv[++i];
	}
	if (key_path == NULL || msg_path == NULL)
		return usage(json, key_path == NULL ? "no --key KEY" : "no MSG", NULL);

	ota_error err;
	ota_error_clear(&err);
	ota_key *key = NULL;
	jwk_set set;
	memset(&set, 0, sizeof set);
	uint8_t *msg = NULL, *payload = NULL, *aad = NULL;
	size_t ml = 0, pl = 0, al = 0;
	ota_cose_verify_opts vo = {0};
	vo.allow_untagged = allow_untagged;
	ota_cose_sign1 out;
	memset(&out, 0, sizeof out);
	ota_err rc = OTA_OK;

	if (aad_hex != NULL) {
		size_t hl = strlen(aad_hex);
		aad = malloc(hl / 2 + 1);
		if (aad == NULL) {
			rc = ota_error_set(&err, OTA_ERR_NOMEM, "external-aad", NULL);
		} else {
			rc = ota_hex_decode(aad_hex, hl, (ota_buf){aad, hl / 2 + 1}, &al);
			if (rc != OTA_OK)
				rc = ota_error_set(&err, rc, "--external-aad", "not an even-length hex string");
			vo.external_aad = ota_bytes_make(aad, al);
		}
	}
	if (rc == OTA_OK)
		rc = read_input(msg_path, &msg, &ml, &err);
	if (rc == OTA_OK && payload_path != NULL) {
		rc = read_input(payload_path, &payload, &pl, &err);
		vo.have_detached_payload = true;
		vo.detached_payload = ota_bytes_make(payload, pl);
	}
	int code;
	bool input_error = rc != OTA_OK;
	if (rc == OTA_OK) {
		rc = load_keys(key_path, &key, &set, &err);
		/* a key that is a FIFO or device is an input problem (2), as one
		 * that cannot be read: the same in every ota-verify subcommand */
		input_error = rc == OTA_ERR_IO || rc == OTA_ERR_KEY_FORMAT || rc == OTA_ERR_TOO_LARGE ||
		              rc == OTA_ERR_KEY_UNSUPPORTED || rc == OTA_ERR_NOT_REGULAR ||
		              rc == OTA_ERR_KEY_PERMISSIONS;
	}
	if (rc == OTA_OK) {
		if (set.n > 0)
			rc = ota_cose_sign1_verify_with(ota_bytes_make(msg, ml), set_lookup, &set, &vo, &out,
			                                &err);
		else
			rc = ota_cose_sign1_verify(ota_bytes_make(msg, ml), key, &vo, &out, &err);
	}
	if (rc == OTA_OK)
		code = CLI_OK;
	else if (input_error || rc == OTA_ERR_USAGE)
		code = CLI_USAGE;
	else if (rc == OTA_ERR_NOMEM || rc == OTA_ERR_INTERNAL || rc == OTA_ERR_CRYPTO)
		code = CLI_INTERNAL;
	else
		code = CLI_REFUSED; /* the message (or the key it needs) says no */

	if (rc != OTA_OK && err.code == OTA_OK)
		err.code = rc;
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "ok", json_boolean(rc == OTA_OK));
		json_object_set_new(o, "valid", json_boolean(rc == OTA_OK));
		json_object_set_new(o, "code", json_string(ota_err_name(rc)));
		if (rc != OTA_OK) {
			json_object_set_new(o, "where", json_string(err.where));
			json_object_set_new(o, "message",
			                    json_string(err.what[0] != '\0' ? err.what : ota_err_message(rc)));
			/* what the message claims, when it decodes (never its payload) */
			ota_cose_sign1 claimed;
			if (msg != NULL &&
			    ota_cose_sign1_decode(ota_bytes_make(msg, ml), &vo, &claimed, NULL) == OTA_OK) {
				json_object_set_new(o, "alg", json_string(ota_alg_name(claimed.alg)));
				char *hex = malloc(2 * claimed.kid.len + 1);
				if (hex != NULL) {
					ota_hex_encode(claimed.kid, hex);
					json_object_set_new(o, "kid", claimed.kid.len > 0 ? json_string(hex)
					                                                  : json_null());
					free(hex);
				}
			}
		}
		if (msg != NULL) {
			char id[OTA_ID_LEN + 1];
			if (ota_sha256_id(ota_bytes_make(msg, ml), id) == OTA_OK)
				json_object_set_new(o, "identity", json_string(id));
		}
		if (rc == OTA_OK) {
			json_object_set_new(o, "alg", json_string(ota_alg_name(out.alg)));
			char *hex = malloc(2 * out.kid.len + 1);
			if (hex != NULL) {
				ota_hex_encode(out.kid, hex);
				json_object_set_new(o, "kid", out.kid.len > 0 ? json_string(hex) : json_null());
				free(hex);
			}
			json_object_set_new(o, "kid_protected", json_boolean(out.kid_protected));
			char *b64 = NULL;
			if (ota_base64_encode(out.payload, &b64) == OTA_OK) {
				json_object_set_new(o, "payload", json_string(b64));
				free(b64);
			}
			json_object_set_new(o, "payload_bytes", json_integer((json_int_t)out.payload.len));
			json_object_set_new(o, "detached", json_boolean(out.detached));
			json_object_set_new(o, "tagged", json_boolean(out.tagged));
		}
		cli_print_json(o);
		json_decref(o);
	} else if (rc == OTA_OK) {
		char kid[2 * 64 + 1] = "";
		if (out.kid.len <= 64)
			ota_hex_encode(out.kid, kid);
		printf("valid: alg=%s kid=%s payload=%zu bytes%s\n", ota_alg_name(out.alg),
		       out.kid.len > 0 ? kid : "-", out.payload.len, out.detached ? " (detached)" : "");
	}
	if (rc != OTA_OK)
		(void)cli_fail("ota-verify", &err);
	ota_key_free(key);
	set_free(&set);
	free(msg);
	free(payload);
	free(aad);
	return code;
}
