/*
 * ota-verify trust --pinned FIRST.json CHAIN.json... [--at TIME]
 *                  [--state FILE [--state-init]] [--json]
 * Verifies the chain from the pinned snapshot (TUF rotation rules plus the
 * prev link) and prints the trusted latest. Exit 0 trusted, 1 refused,
 * 2 usage or an input that cannot be used (unreadable, not a regular file,
 * a --state that is not there without --state-init), 3 internal error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "cli.h"
#include "ota/limits.h"
#include "ota/trust.h"

#define PROG "ota-verify trust"
#define USAGE \
	"--pinned FIRST.json [CHAIN.json...] [--at TIME] [--state FILE [--state-init]] [--json]"

/*
 * Every outcome but success: the message on standard error and, with --json,
 * the one document {"ok": false, "code", "where", "message"}.
 */
static int report(bool json, const ota_error *e)
{
	if (json) {
		json_t *o = cli_error_json(e);
		cli_print_json(o); /* NULL prints {"code":"out_of_memory"} */
		json_decref(o);
	}
	if (e->code == OTA_ERR_USAGE)
		(void)cli_usage(PROG, USAGE);
	(void)cli_fail(PROG, e);
	return cli_verify_exit_for(e->code);
}

static int usage(bool json, const char *what, const char *arg)
{
	ota_error e;
	ota_error_clear(&e);
	ota_error_set(&e, OTA_ERR_USAGE, "trust", "%s%s%.200s", what, arg != NULL ? ": " : "",
	              arg != NULL ? arg : "");
	return report(json, &e);
}

static int out_of_memory(bool json)
{
	ota_error e;
	ota_error_clear(&e);
	ota_error_set(&e, OTA_ERR_NOMEM, "trust", "out of memory");
	return report(json, &e);
}

/* Reads one snapshot file; an oversized one is a refusal, not an input error. */
static ota_err read_snapshot(const char *path, uint8_t **buf, size_t *len, ota_error *err)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size > OTA_MAX_TRUST_ROOT_BYTES)
		return ota_error_set(err, OTA_ERR_TRUST_TOO_LARGE, path,
		                     "%lld bytes, limit is %u (not parsed)", (long long)st.st_size,
		                     OTA_MAX_TRUST_ROOT_BYTES);
	ota_err rc = ota_file_read(path, OTA_MAX_TRUST_ROOT_BYTES, buf, len, err);
	if (rc == OTA_ERR_TOO_LARGE) {
		err->code = OTA_ERR_TRUST_TOO_LARGE;
		return OTA_ERR_TRUST_TOO_LARGE;
	}
	return rc;
}

int verify_trust(int argc, char **argv)
{
	const char *pinned = NULL, *at_s = NULL, *state_path = NULL;
	bool json = false, state_init = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: ota-verify trust %s\n", USAGE);
			return CLI_OK;
		}
		json = json || strcmp(argv[i], "--json") == 0;
	}
	const char **files = calloc((size_t)argc + 1, sizeof *files);
	size_t n = 0;
	if (files == NULL)
		return out_of_memory(json);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **opt = NULL;
		if (strcmp(a, "--json") == 0)
			continue;
		if (strcmp(a, "--state-init") == 0) {
			if (state_init) {
				free(files);
				return usage(json, "an option given twice", a);
			}
			state_init = true;
			continue;
		}
		if (strcmp(a, "--pinned") == 0)
			opt = &pinned;
		else if (strcmp(a, "--at") == 0)
			opt = &at_s;
		else if (strcmp(a, "--state") == 0)
			opt = &state_path;
		else if (a[0] == '-' && a[1] != '\0') {
			free(files);
			return usage(json, "unknown option", a);
		} else {
			files[n++] = a;
			continue;
		}
		/* a path or a time never starts with '-' here (no stdin, no
		 * negative times): a missing value is not taken from the next option */
		if (i + 1 >= argc || argv[i + 1][0] == '-') {
			free(files);
			return usage(json, "an option without its value", a);
		}
		if (*opt != NULL) {
			free(files);
			return usage(json, "an option given twice", a);
		}
		*opt = argv[++i];
	}
	if (pinned == NULL) {
		free(files);
		return usage(json, "no --pinned FIRST.json", NULL);
	}
	if (state_init && state_path == NULL) {
		free(files);
		return usage(json, "--state-init without --state FILE", NULL);
	}
	ota_error err;
	ota_error_clear(&err);
	int64_t at = ota_clock_now(NULL);
	if (at_s != NULL && ota_trust_time_parse(at_s, &at) != OTA_OK) {
		free(files);
		return usage(json, "--at takes integer seconds or RFC 3339 (2026-01-01T00:00:00Z)", at_s);
	}
	int ret = CLI_INTERNAL;
	uint8_t *pbuf = NULL;
	size_t plen = 0;
	uint8_t **bufs = calloc(n + 1, sizeof *bufs);
	ota_bytes *spans = calloc(n + 1, sizeof *spans);
	ota_trust_state *st = NULL;
	ota_trust_root *latest = NULL;
	if (bufs == NULL || spans == NULL) {
		ret = out_of_memory(json);
		goto out;
	}
	/* the chain length is refused before any file is read or parsed */
	if (n > OTA_MAX_TRUST_CHAIN) {
		ota_error_set(&err, OTA_ERR_TRUST_CHAIN_TOO_LONG, "chain",
		              "%zu snapshots after the pinned one, limit is %u", n,
		              OTA_MAX_TRUST_CHAIN);
		ret = report(json, &err);
		goto out;
	}
	/* the pinned snapshot is the gate's own input: one over the cap is
	 * too_large (exit 2), as --trust in ota-verify archive; a snapshot of
	 * the chain over it is the chain's refusal (trust_snapshot_too_large) */
	if (ota_file_read(pinned, OTA_MAX_TRUST_ROOT_BYTES, &pbuf, &plen, &err) != OTA_OK) {
		ret = report(json, &err);
		goto out;
	}
	/* an empty pinned snapshot is the gate's input gone missing (a failed
	 * copy, a truncated file), as one that is not there: exit 2 */
	if (plen == 0) {
		ota_error_set(&err, OTA_ERR_IO, pinned,
		              "the pinned snapshot is empty (0 bytes): nothing to read");
		ret = report(json, &err);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		size_t l = 0;
		if (read_snapshot(files[i], &bufs[i], &l, &err) != OTA_OK) {
			ret = report(json, &err);
			goto out;
		}
		spans[i] = ota_bytes_make(bufs[i], l);
	}
	/* a --state that is not there is refused, not started afresh: a
	 * mistyped path would forget every version accepted before (rollback
	 * protection gone) unless --state-init asks for a new one */
	if (state_path != NULL) {
		struct stat sst;
		bool there = state_path[0] != '\0' && stat(state_path, &sst) == 0;
		if (!there && (state_path[0] == '\0' || (errno == ENOENT && !state_init)))
			ota_error_set(&err, OTA_ERR_TRUST_STATE_MISSING, state_path,
			              "no state file there (or a symlink to nothing): a mistyped path would"
			              " forget every version accepted before; --state-init starts a new one");
		/* a directory, FIFO or device: refused before its lock file is made */
		else if (there && S_ISDIR(sst.st_mode))
			ota_error_set(&err, OTA_ERR_IO, state_path, "the state is a directory; not read");
		else if (there && !S_ISREG(sst.st_mode))
			ota_error_set(&err, OTA_ERR_NOT_REGULAR, state_path,
			              "the state is not a regular file (a FIFO, socket or device); not read");
		if (err.code != OTA_OK) {
			ret = report(json, &err);
			goto out;
		}
	}
	if (state_path != NULL && ota_trust_state_open(state_path, &st, &err) != OTA_OK) {
		ret = report(json, &err);
		goto out;
	}
	/* every error about a snapshot names its file ("FILE: line 1, column
	 * 0"), never only its place in the chain */
	ota_trust_verify_opts o = {.at = at, .state = st, .pinned_name = pinned,
	                           .chain_names = (const char *const *)files};
	if (ota_trust_chain_verify(ota_bytes_make(pbuf, plen), spans, n, &o, &latest, &err) !=
	    OTA_OK) {
		ret = report(json, &err);
		goto out;
	}
	if (json) {
		json_t *s = ota_trust_root_summary(latest, at);
		json_t *out = s != NULL ? json_pack("{s:b, s:o}", "ok", 1, "trusted", s) : NULL;
		if (out == NULL) {
			ret = out_of_memory(json);
			goto out;
		}
		cli_print_json(out);
		json_decref(out);
	} else {
		char t[32];
		ota_trust_time_format(ota_trust_root_expires(latest), t);
		printf("trusted %s version %lld\nidentity %s\nexpires %s\n",
		       ota_trust_root_domain(latest), (long long)ota_trust_root_version(latest),
		       ota_trust_root_identity(latest), t);
	}
	ret = CLI_OK;
out:
	ota_trust_root_free(latest);
	ota_trust_state_close(st);
	for (size_t i = 0; bufs != NULL && i < n; i++)
		free(bufs[i]);
	free(bufs);
	free(spans);
	free(pbuf);
	free(files);
	return ret;
}
