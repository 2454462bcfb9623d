/*
 * ota cleanup: finalizes the oci_local leases whose runner is gone (e.g.
 * after SIGKILL): kills and deletes their containers, confirms the runtime
 * forgot them and records the terminal state durably.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ota/json.h"
#include "ota/oci.h"

static const char *cleanup_usage =
	"ota cleanup [--lease-db PATH] [--state-dir DIR] [--list] [--all] [--json]";

int cmd_cleanup(int argc, char **argv)
{
	ota_oci_run_opts o;
	memset(&o, 0, sizeof o);
	const char *env_db = getenv("OTA_LEASE_DB");
	o.lease_db = env_db != NULL && env_db[0] != '\0' ? env_db : OTA_OCI_DEFAULT_LEASE_DB;
	bool json = false, list = false, all = false;
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
		else
			return cli_usage("ota", cleanup_usage);
	}
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
				printf("%s\t%s\t%s\t%s\n", json_string_value(json_object_get(r, "id")),
				       json_string_value(json_object_get(r, "runtime")),
				       json_string_value(json_object_get(r, "phase")), t != NULL ? t : "open");
			}
		}
		json_decref(rows);
		return CLI_OK;
	}
	json_t *rep = NULL;
	ota_err rc = ota_oci_cleanup(&o, &rep, &e);
	if (json) {
		if (rep == NULL)
			rep = json_object();
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
		printf("finalized %zu, skipped %lld (runner alive)\n",
		       json_array_size(json_object_get(rep, "finalized")),
		       (long long)json_integer_value(json_object_get(rep, "skipped_live")));
	}
	json_decref(rep);
	if (rc != OTA_OK)
		return json ? cli_exit_for(rc) : cli_fail("ota", &e);
	return CLI_OK;
}
