/* Finalization of orphaned leases (runner killed, e.g. by SIGKILL). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci_internal.h"
#include "ota/json.h"

static bool runner_alive(const json_t *row)
{
	json_int_t pid = json_integer_value(json_object_get(row, "runner_pid"));
	const char *start = json_string_value(json_object_get(row, "runner_start"));
	if (pid <= 0 || start == NULL)
		return false;
	unsigned long long now_start = oci_proc_start_time((long)pid);
	if (now_start == 0)
		return false;
	char buf[32];
	snprintf(buf, sizeof buf, "%llu", now_start);
	return strcmp(buf, start) == 0;
}

ota_err oci_cleanup_db(const ota_oci_run_opts *o, oci_lease_db *db, json_t *finalized,
                       size_t *skipped, ota_error *err)
{
	*skipped = 0;
	json_t *rows = NULL;
	ota_err rc = oci_lease_rows(db, true, &rows, err);
	if (rc != OTA_OK)
		return rc;
	size_t i;
	json_t *row;
	json_array_foreach(rows, i, row)
	{
		if (runner_alive(row)) {
			(*skipped)++;
			continue;
		}
		const char *id = json_string_value(json_object_get(row, "id"));
		const char *phase = json_string_value(json_object_get(row, "phase"));
		const char *runtime = json_string_value(json_object_get(row, "runtime"));
		ota_oci_runtime_opts ro = {
			runtime != NULL && strcmp(runtime, "crun") == 0 ? OTA_OCI_CRUN : OTA_OCI_RUNC,
			json_string_value(json_object_get(row, "runtime_bin")),
			json_string_value(json_object_get(row, "runtime_root")),
			NULL,
		};
		oci_rt rt;
		ota_error e;
		ota_error_clear(&e);
		json_t *cleanup = NULL;
		ota_err frc = oci_rt_init(&rt, &ro, &e);
		if (frc == OTA_OK)
			frc = oci_finalize_container(
				&rt, id, (long)json_integer_value(json_object_get(row, "container_pid")),
				NULL, &cleanup, &e);
		oci_bundle_remove(json_string_value(json_object_get(row, "bundle")));
		bool started = phase != NULL &&
		               (strcmp(phase, "started") == 0 || strcmp(phase, "finished") == 0);
		const char *terminal = started ? "enforcement_unknown_after_interruption"
		                               : "not_started";
		char *cj = cleanup != NULL ? ota_json_dumps(cleanup, false) : NULL;
		ota_error le;
		ota_error_clear(&le);
		int64_t now = o->clock.now != NULL ? ota_clock_now(&o->clock) : ota_clock_now(NULL);
		/* only a confirmed removal ends the lease: an unconfirmed one stays
		 * open, reported again by every cleanup until it is confirmed */
		ota_err lrc = frc != OTA_OK ? OTA_ERR_OCI_CLEANUP_UNCONFIRMED
		                            : oci_lease_finalize(db, id, terminal, cj,
		                                                 "finalized_after_runner_loss", now, &le);
		free(cj);
		json_t *rec = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:o*, s:b, s:s?, s:I}", "kind",
		                        "ota.application/v1", "phase", "cleanup", "container_id", id,
		                        "txn", json_string_value(json_object_get(row, "txn")),
		                        "runtime", runtime,
		                        "phase_at_loss", phase, "cleanup", cleanup, "confirmed",
		                        frc == OTA_OK, "state", terminal, "finalized_at",
		                        (json_int_t)now);
		if (rec != NULL && frc != OTA_OK)
			json_object_set_new(rec, "error", json_string(ota_err_name(e.code)));
		if (rec != NULL)
			json_object_set_new(rec, "lease_closed", json_boolean(lrc == OTA_OK));
		json_array_append_new(finalized, rec);
		if (lrc != OTA_OK && frc == OTA_OK && rc == OTA_OK)
			rc = ota_error_set(err, lrc, le.where, "%s", le.what);
		if (frc != OTA_OK && rc == OTA_OK)
			rc = ota_error_set(err, frc, e.where, "%s", e.what);
	}
	json_decref(rows);
	return rc;
}

ota_err ota_oci_cleanup(const ota_oci_run_opts *opts, json_t **report, ota_error *err)
{
	if (report != NULL)
		*report = NULL;
	oci_lease_db *db = NULL;
	ota_err rc = oci_lease_open(opts->lease_db != NULL ? opts->lease_db : "/var/lib/ota/leases.db",
	                            &db, err);
	if (rc != OTA_OK)
		return rc;
	json_t *fin = json_array();
	size_t skipped = 0;
	rc = oci_cleanup_db(opts, db, fin, &skipped, err);
	oci_lease_close(db);
	if (report != NULL)
		*report = json_pack("{s:s, s:o, s:I}", "kind", "ota.cleanup_report/v1", "finalized",
		                    fin, "skipped_live", (json_int_t)skipped);
	else
		json_decref(fin);
	return rc;
}
