/*
 * ota-verify archive ARCHIVE --trust PINNED [--at TIME] [--max-age SECONDS]
 *                    [--require-status S] [--ledger DB] [--json]
 * Exit 0 only when everything reconciles; 1 with every failed check named;
 * 2 on usage or unreadable input; 3 on internal errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ota/archive.h"
#include "ota/trust.h"

static int usage(void)
{
	return cli_usage("ota-verify", "archive ARCHIVE --trust PINNED [--at TIME] [--max-age SECONDS] "
	                               "[--require-status STATUS] [--ledger DB] [--json]");
}

int verify_archive(int argc, char **argv)
{
	const char *path = NULL, *pinned = NULL, *at = NULL, *status = NULL, *ledger = NULL;
	const char *max_age = NULL;
	bool json = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--json") == 0)
			json = true;
		else if ((strcmp(a, "--trust") == 0 || strcmp(a, "--pinned") == 0) && more)
			pinned = argv[++i];
		else if (strcmp(a, "--at") == 0 && more)
			at = argv[++i];
		else if (strcmp(a, "--max-age") == 0 && more)
			max_age = argv[++i];
		else if (strcmp(a, "--require-status") == 0 && more)
			status = argv[++i];
		else if (strcmp(a, "--ledger") == 0 && more)
			ledger = argv[++i];
		else if (a[0] != '-' && path == NULL)
			path = a;
		else
			return usage();
	}
	if (path == NULL || pinned == NULL)
		return usage();
	ota_archive_verify_opts o;
	memset(&o, 0, sizeof o);
	o.require_status = status;
	o.ledger = ledger;
	if (max_age != NULL) {
		char *end = NULL;
		long long v = strtoll(max_age, &end, 10);
		if (end == max_age || *end != '\0' || v <= 0 || v > 100LL * 366 * 86400)
			return usage();
		o.max_age = (int64_t)v;
	}
	if (at != NULL) {
		if (ota_trust_time_parse(at, &o.at) != OTA_OK)
			return usage();
		o.have_at = true;
	}
	ota_error e;
	ota_error_clear(&e);
	uint8_t *ab = NULL, *pb = NULL;
	size_t al = 0, pl = 0;
	ota_err rc = ota_file_read(pinned, OTA_MAX_TRUST_ROOT_BYTES, &pb, &pl, &e);
	bool archive_too_large = false;
	if (rc == OTA_OK) {
		rc = ota_file_read(path, OTA_MAX_ARCHIVE_BYTES, &ab, &al, &e);
		if (rc == OTA_ERR_TOO_LARGE) {
			/* the archive's answer is "no", not a usage error */
			archive_too_large = true;
			ota_error_clear(&e);
			rc = ota_error_set(&e, OTA_ERR_ARCHIVE_TOO_LARGE, path, "more than %u bytes",
			                   OTA_MAX_ARCHIVE_BYTES);
		}
	}
	if (rc != OTA_OK) {
		free(pb);
		if (json) {
			json_t *j = cli_error_json(&e);
			cli_print_json(j);
			json_decref(j);
		}
		int ret = cli_fail("ota-verify", &e);
		return archive_too_large ? CLI_REFUSED : ret;
	}
	o.pinned = ota_bytes_make(pb, pl);
	ota_archive_report *rep = NULL;
	rc = ota_archive_verify(ota_bytes_make(ab, al), &o, &rep, &e);
	free(ab);
	free(pb);
	if (rep == NULL) {
		ota_error_set(&e, OTA_ERR_NOMEM, "archive", "out of memory");
		return cli_fail("ota-verify", &e);
	}
	if (json) {
		json_t *j = ota_archive_report_json(rep);
		if (j != NULL && rc != OTA_OK)
			json_object_set_new(j, "code", json_string(ota_err_name(rc)));
		cli_print_json(j);
		json_decref(j);
	} else if (rc == OTA_OK) {
		printf("ok: archive reconciles: status %s, %zu signatures verified\n",
		       ota_archive_report_status(rep), ota_archive_report_signatures(rep));
	} else {
		for (size_t i = 0; i < ota_archive_report_failure_count(rep); i++) {
			const char *where = NULL, *what = NULL;
			ota_err c = ota_archive_report_failure(rep, i, &where, &what);
			if (c == OTA_OK)
				break;
			fprintf(stderr, "ota-verify: %s: %s: %s\n", ota_err_name(c),
			        where != NULL ? where : "", what != NULL ? what : "");
		}
	}
	ota_archive_report_free(rep);
	if (rc == OTA_OK)
		return CLI_OK;
	return rc == OTA_ERR_USAGE ? CLI_USAGE : rc == OTA_ERR_NOMEM || rc == OTA_ERR_INTERNAL || rc == OTA_ERR_DB ? CLI_INTERNAL : CLI_REFUSED;
}
