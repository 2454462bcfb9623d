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

/* Copies s into out for a message: at most 96 bytes, every byte outside
 * printable ASCII as '?' (a lease row is not trusted to be text). */
static const char *shown(const char *s, char out[100])
{
	if (s == NULL) {
		snprintf(out, 100, "(none)");
		return out;
	}
	size_t n = 0;
	for (; s[n] != '\0' && n < 96; n++)
		out[n] = s[n] >= 0x20 && s[n] < 0x7f ? s[n] : '?';
	if (s[n] != '\0') {
		out[n - 3] = out[n - 2] = out[n - 1] = '.';
	}
	out[n] = '\0';
	return out;
}

static ota_err untrusted_err(ota_error *err, const char *id, const char *field, const char *stored,
                             const char *want)
{
	char a[100], b[100], c[100];
	if (want != NULL)
		return ota_error_set(err, OTA_ERR_OCI_LEASE_UNTRUSTED, field,
		                     "lease %s: %s \"%s\" is not the configured \"%s\"", shown(id, a),
		                     field, shown(stored, b), shown(want, c));
	return ota_error_set(err, OTA_ERR_OCI_LEASE_UNTRUSTED, field,
	                     "lease %s: %s \"%s\" is not one this runner makes", shown(id, a), field,
	                     shown(stored, b));
}

/*
 * Whether a lease row is one this configuration would have written, before
 * anything of it is used: the container id has the exact form ota_oci_run
 * makes; the runtime is runc or crun; the bundle is exactly
 * STATE/bundles/ID of the configured state directory; the runtime binary
 * and root are exactly those this configuration gives that runtime (for
 * the runtime of o, its binary and root; for the other one, its
 * defaults: what `ota run --runtime KIND` would use). *rt is the
 * configured runtime to drive (never the row's). Errors:
 * oci_lease_untrusted (where = the field), or oci_rt_init's
 * (oci_runtime_missing: nothing to compare with, nothing is run). The
 * cgroups column, when not NULL (a lease of before it has none), must be
 * strict JSON of at most 64 KiB that oci_cgroup_dirs_valid accepts for
 * the id; *cgroups gets it parsed (new), NULL for a NULL column.
 */
static ota_err lease_check(const ota_oci_run_opts *o, const json_t *row, oci_rt *rt,
                           json_t **cgroups, ota_error *err)
{
	*cgroups = NULL;
	const char *id = json_string_value(json_object_get(row, "id"));
	const char *runtime = json_string_value(json_object_get(row, "runtime"));
	const char *bin = json_string_value(json_object_get(row, "runtime_bin"));
	const char *root = json_string_value(json_object_get(row, "runtime_root"));
	const char *bundle = json_string_value(json_object_get(row, "bundle"));
	if (!oci_container_id_valid(id))
		return untrusted_err(err, id, "id", id, NULL);
	ota_oci_runtime_kind kind;
	if (runtime != NULL && strcmp(runtime, "runc") == 0)
		kind = OTA_OCI_RUNC;
	else if (runtime != NULL && strcmp(runtime, "crun") == 0)
		kind = OTA_OCI_CRUN;
	else
		return untrusted_err(err, id, "runtime", runtime, NULL);
	char want[1100];
	if (!oci_bundle_path(oci_state_dir(o), id, want, sizeof want) || bundle == NULL ||
	    strcmp(bundle, want) != 0)
		return untrusted_err(err, id, "bundle", bundle, want);
	ota_oci_runtime_opts ro = {kind, NULL, NULL, NULL};
	if (kind == o->runtime.kind) {
		ro.binary = o->runtime.binary;
		ro.root = o->runtime.root;
	}
	ota_err rc = oci_rt_init(rt, &ro, err);
	if (rc != OTA_OK)
		return rc;
	rt->timeout_seconds = o->runtime_timeout_seconds;
	if (bin == NULL || strcmp(bin, rt->bin) != 0)
		return untrusted_err(err, id, "runtime_bin", bin, rt->bin);
	if (root == NULL || strcmp(root, rt->root) != 0)
		return untrusted_err(err, id, "runtime_root", root, rt->root);
	const json_t *cg = json_object_get(row, "cgroups");
	if (cg != NULL && !json_is_null(cg)) {
		const char *text = json_string_value(cg);
		json_t *dirs = NULL;
		const char *why = "not text";
		if (text == NULL ||
		    !oci_cgroup_column_check(ota_bytes_make(text, json_string_length(cg)), id, &dirs,
		                             &why)) {
			char a[100];
			return ota_error_set(err, OTA_ERR_OCI_LEASE_UNTRUSTED, "cgroups",
			                     "lease %s: cgroups is not a list of this container's cgroup"
			                     " directories: %s",
			                     shown(id, a), why);
		}
		*cgroups = dirs;
	}
	return OTA_OK;
}

ota_err oci_cleanup_db(const ota_oci_run_opts *o, oci_lease_db *db, json_t *finalized,
                       json_t *untrusted, size_t *skipped, ota_error *err)
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
		oci_rt rt;
		ota_error e;
		ota_error_clear(&e);
		json_t *cleanup = NULL, *cgroups = NULL;
		ota_err frc = lease_check(o, row, &rt, &cgroups, &e);
		if (frc == OTA_ERR_OCI_LEASE_UNTRUSTED) {
			/* nothing of it is run, removed or closed */
			if (untrusted != NULL)
				json_array_append_new(
					untrusted,
					json_pack("{s:s?, s:s?, s:s?, s:s, s:s, s:s, s:b}", "container_id", id,
					          "txn", json_string_value(json_object_get(row, "txn")),
					          "runtime", runtime, "error", ota_err_name(e.code), "where",
					          e.where, "message", e.what, "lease_closed", 0));
			if (rc == OTA_OK)
				rc = ota_error_set(err, e.code, e.where, "%s", e.what);
			continue;
		}
		bool bundle_removed = false;
		if (frc == OTA_OK) {
			frc = oci_finalize_container(
				&rt, id, (long)json_integer_value(json_object_get(row, "container_pid")),
				NULL, cgroups, &cleanup, &e);
			bundle_removed = oci_bundle_remove(oci_state_dir(o), id);
		}
		json_decref(cgroups);
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
		json_t *rec = json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:o*, s:b, s:s?, s:I, s:b}",
		                        "kind", "ota.application/v1", "phase", "cleanup",
		                        "container_id", id, "txn",
		                        json_string_value(json_object_get(row, "txn")), "runtime",
		                        runtime, "phase_at_loss", phase, "cleanup", cleanup,
		                        "confirmed", frc == OTA_OK, "state", terminal, "finalized_at",
		                        (json_int_t)now, "bundle_removed", bundle_removed);
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
	json_t *untrusted = json_array();
	size_t skipped = 0;
	rc = fin != NULL && untrusted != NULL
	             ? oci_cleanup_db(opts, db, fin, untrusted, &skipped, err)
	             : ota_error_set(err, OTA_ERR_NOMEM, "cleanup", NULL);
	oci_lease_close(db);
	if (report != NULL && fin != NULL && untrusted != NULL)
		*report = json_pack("{s:s, s:o, s:o, s:I}", "kind", "ota.cleanup_report/v1",
		                    "finalized", fin, "untrusted", untrusted, "skipped_live",
		                    (json_int_t)skipped);
	else {
		json_decref(fin);
		json_decref(untrusted);
	}
	return rc;
}
