/*
 * ota-verify archive ARCHIVE --trust PINNED [--at TIME] [--max-age SECONDS]
 *                    [--require-status S] [--require-revision SHA]
 *                    [--require-worktree TREE] [--require-success] [--repo REPO]
 *                    [--current DIR]
 *                    [--require-lane LANE] [--require-overlay ID]...
 *                    [--require-effective ID] [--ledger DB [--ledger-init]] [--json]
 * Exit 0 only when everything reconciles; 1 with every failed check named;
 * 2 on usage or an input that cannot be used (unreadable, not a regular
 * file, a ledger that is not there); 3 on internal errors.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdint.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "heap_hint.h"
#include "ota/archive.h"
#include "ota/trust.h"

#define USAGE                                                                                   \
	"archive ARCHIVE --trust PINNED [--at TIME] [--max-age SECONDS] [--require-status STATUS] " \
	"[--require-revision SHA] [--require-worktree TREE] [--require-lane LANE] "                 \
	"[--require-overlay ID]... [--require-success] [--repo REPO] [--current DIR] "              \
	"[--require-effective ID] [--ledger DB [--ledger-init]] [--json]"

static void free_current(ota_bytes *cur, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((void *)(uintptr_t)cur[i].ptr);
}

/*
 * --current DIR: the trust domain's chain as published (`ota trust` writes
 * DIR = TRUST/versions, one N.root.json per version): the snapshots after
 * the pinned one's version, in order, up to the first number missing.
 * A directory that holds none of them is a usage error (exit 2): a gate
 * that names its current chain must not silently judge without it.
 */
static ota_err read_current(const char *dir, ota_bytes pinned, ota_bytes *cur, size_t *n,
                            ota_error *e)
{
	ota_trust_root *p = NULL;
	ota_err rc = ota_trust_root_parse_unloaded(pinned, NULL, &p, e);
	if (rc != OTA_OK)
		return rc == OTA_ERR_NOMEM ? rc : OTA_ERR_USAGE;
	int64_t v = ota_trust_root_version(p);
	ota_trust_root_free(p);
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return ota_error_set(e, OTA_ERR_IO, dir, "--current takes a directory of N.root.json");
	*n = 0;
	for (;;) {
		char path[PATH_MAX];
		int k = snprintf(path, sizeof path, "%s/%lld.root.json", dir, (long long)(v + 1));
		if (k < 0 || (size_t)k >= sizeof path)
			return ota_error_set(e, OTA_ERR_IO, dir, "path too long");
		if (stat(path, &st) != 0 && errno == ENOENT)
			break;
		if (*n == OTA_MAX_TRUST_CHAIN)
			return ota_error_set(e, OTA_ERR_TRUST_CHAIN_TOO_LONG, dir,
			                     "more than %u snapshots after the pinned one",
			                     OTA_MAX_TRUST_CHAIN);
		uint8_t *b = NULL;
		size_t bl = 0;
		if ((rc = ota_file_read(path, OTA_MAX_TRUST_ROOT_BYTES, &b, &bl, e)) != OTA_OK)
			return rc;
		cur[(*n)++] = ota_bytes_make(b, bl);
		v++;
	}
	if (*n == 0) {
		/* the pinned snapshot is itself the newest one there */
		char path[PATH_MAX];
		int k = snprintf(path, sizeof path, "%s/%lld.root.json", dir, (long long)v);
		if (k < 0 || (size_t)k >= sizeof path || stat(path, &st) != 0)
			return ota_error_set(e, OTA_ERR_IO, dir,
			                     "no %lld.root.json or later: not the chain of the pinned "
			                     "snapshot's domain",
			                     (long long)v);
	}
	return OTA_OK;
}

/* a git object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits */
static bool git_id(const char *v)
{
	size_t n = strlen(v);
	bool hex = n == 40 || n == 64;
	for (size_t i = 0; hex && i < n; i++)
		hex = (v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'f');
	return hex;
}

/*
 * A refusal before any check ran (usage, an unreadable input): the message on
 * standard error and, with --json, the one document of the report's shape,
 * {"ok": false, "status": null, "code", "where", "message", "failures": [...]}.
 */
static int early_fail(bool json, const ota_error *e, int ret)
{
	if (json) {
		json_t *j = cli_error_json(e);
		json_t *f = cli_error_json(e);
		if (j != NULL && f != NULL) {
			json_object_del(f, "ok");
			json_object_set_new(j, "status", json_null());
			json_object_set_new(j, "failures", json_pack("[O]", f));
		}
		cli_print_json(j);
		json_decref(f);
		json_decref(j);
	}
	if (e->code == OTA_ERR_USAGE)
		cli_usage("ota-verify", USAGE);
	cli_fail("ota-verify", e);
	return ret;
}

static int usage(bool json, const char *what, const char *arg)
{
	ota_error e;
	ota_error_clear(&e);
	ota_error_set(&e, OTA_ERR_USAGE, "archive", "%s%s%.200s", what, arg != NULL ? ": " : "",
	              arg != NULL ? arg : "");
	return early_fail(json, &e, CLI_USAGE);
}

int verify_archive(int argc, char **argv)
{
#ifdef M_MXFAST
	/*
	 * No fastbins: a large archive is hundreds of thousands of small jansson
	 * values made and freed, and with fastbins glibc consolidates them on
	 * every large allocation (malloc_consolidate was 7-10 % of verifying
	 * 9,999 attestations); the small sizes stay cached per thread (tcache).
	 * About 10 % less CPU time, the same peak RSS.
	 */
	(void)mallopt(M_MXFAST, 0);
#endif
	const char *path = NULL, *pinned = NULL, *at = NULL, *status = NULL, *ledger = NULL;
	const char *max_age = NULL, *revision = NULL, *worktree = NULL, *lane = NULL;
	const char *effective = NULL, *repo = NULL, *current = NULL;
	const char *overlays[OTA_MAX_OVERLAYS];
	size_t noverlays = 0;
	bool json = false, ledger_init = false, success = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: ota-verify %s\n", USAGE);
			return CLI_OK;
		}
		json = json || strcmp(argv[i], "--json") == 0;
	}
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **opt = NULL;
		if (strcmp(a, "--json") == 0)
			continue;
		if (strcmp(a, "--ledger-init") == 0 || strcmp(a, "--require-success") == 0) {
			bool *flag = a[2] == 'l' ? &ledger_init : &success;
			if (*flag)
				return usage(json, "an option given twice", a);
			*flag = true;
			continue;
		}
		/* the options taking one value, each at most once */
		const struct {
			const char *name;
			const char **val;
		} one[] = {{"--trust", &pinned},         {"--pinned", &pinned},
		           {"--at", &at},                {"--max-age", &max_age},
		           {"--require-status", &status}, {"--ledger", &ledger},
		           {"--require-revision", &revision}, {"--require-worktree", &worktree},
		           {"--require-lane", &lane},    {"--require-effective", &effective},
		           {"--repo", &repo},            {"--current", &current}};
		for (size_t k = 0; opt == NULL && k < sizeof one / sizeof one[0]; k++)
			if (strcmp(a, one[k].name) == 0)
				opt = one[k].val;
		if (opt == NULL && strcmp(a, "--require-overlay") == 0) {
			/* repeatable: every overlay named must have been applied */
			if (i + 1 >= argc || argv[i + 1][0] == '-')
				return usage(json, "an option without its value", a);
			if (noverlays == OTA_MAX_OVERLAYS)
				return usage(json, "more than 64 --require-overlay", a);
			/* the values are judged by ota_archive_verify (usage) */
			overlays[noverlays++] = argv[++i];
			continue;
		}
		if (opt == NULL && a[0] != '-' && path == NULL) {
			path = a;
			continue;
		}
		if (opt == NULL)
			return usage(json, a[0] == '-' ? "unknown option" : "more than one archive", a);
		/* a gate's own options are never overridden by a later copy */
		if (i + 1 >= argc || argv[i + 1][0] == '-')
			return usage(json, "an option without its value", a);
		if (*opt != NULL)
			return usage(json, "an option given twice", a);
		*opt = argv[++i];
	}
	if (path == NULL || pinned == NULL)
		return usage(json, path == NULL ? "no ARCHIVE" : "no --trust PINNED", NULL);
	if (ledger_init && ledger == NULL)
		return usage(json, "--ledger-init without --ledger DB", NULL);
	if (ledger != NULL && ledger[0] == '\0')
		return usage(json, "--ledger takes a file name, not an empty string", NULL);
	ota_archive_verify_opts o;
	memset(&o, 0, sizeof o);
	o.require_status = status;
	o.require_lane = lane;
	o.repo = repo;
	o.require_success = success;
	o.require_effective = effective;
	o.require_overlays = overlays;
	o.n_require_overlays = noverlays;
	o.ledger = ledger;
	o.ledger_init = ledger_init;
	if (revision != NULL && !git_id(revision))
		return usage(json, "--require-revision takes a commit id, 40 or 64 lowercase hex",
		             revision);
	if (worktree != NULL && !git_id(worktree))
		return usage(json, "--require-worktree takes a git tree id, 40 or 64 lowercase hex",
		             worktree);
	o.require_revision = revision;
	o.require_worktree = worktree;
	if (max_age != NULL) {
		char *end = NULL;
		/* digits only: strtoll would take leading blanks and a sign */
		long long v = max_age[0] >= '0' && max_age[0] <= '9' ? strtoll(max_age, &end, 10) : 0;
		if (end == max_age || end == NULL || *end != '\0' || v <= 0 || v > 100LL * 366 * 86400)
			return usage(json, "--max-age takes seconds, 1 to 100 years", max_age);
		o.max_age = (int64_t)v;
	}
	if (at != NULL) {
		if (ota_trust_time_parse(at, &o.at) != OTA_OK)
			return usage(json, "--at takes integer seconds or RFC 3339", at);
		o.have_at = true;
	}
	ota_error e;
	ota_error_clear(&e);
	/* the ledger before any input is read: a mistyped --ledger is exit 2 at
	 * once, not after the archive was verified (and never a new ledger) */
	ota_err rc = ledger != NULL ? ota_archive_ledger_prepare(ledger, ledger_init, &e) : OTA_OK;
	if (rc != OTA_OK)
		return early_fail(json, &e, cli_verify_exit_for(rc));
	uint8_t *ab = NULL, *pb = NULL;
	size_t al = 0, pl = 0;
	rc = ota_file_read(pinned, OTA_MAX_TRUST_ROOT_BYTES, &pb, &pl, &e);
	/* an empty pinned root is the gate's input gone missing (a failed copy,
	 * a truncated file), as a file that is not there: exit 2, not the
	 * archive's refusal */
	if (rc == OTA_OK && pl == 0)
		rc = ota_error_set(&e, OTA_ERR_IO, pinned,
		                   "the pinned trust root is empty (0 bytes): nothing to read");
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
		/* a file that cannot be read (missing, a directory, a FIFO or device,
		 * too large a pinned root) is exit 2, out of memory 3 */
		return early_fail(json, &e,
		                  archive_too_large           ? CLI_REFUSED
		                  : rc == OTA_ERR_NOMEM       ? CLI_INTERNAL
		                                              : CLI_USAGE);
	}
	o.pinned = ota_bytes_make(pb, pl);
	ota_bytes cur[OTA_MAX_TRUST_CHAIN];
	size_t ncur = 0;
	if (current != NULL &&
	    (rc = read_current(current, o.pinned, cur, &ncur, &e)) != OTA_OK) {
		free(pb);
		free(ab);
		free_current(cur, ncur);
		return early_fail(json, &e, rc == OTA_ERR_NOMEM ? CLI_INTERNAL : CLI_USAGE);
	}
	o.current = cur;
	o.n_current = ncur;
	ota_archive_report *rep = NULL;
	(void)cli_heap_hint(al);
	/* the text is freed as soon as it is parsed (peak memory) */
	rc = ota_archive_verify_take(&ab, al, &o, &rep, &e);
	free(pb);
	free_current(cur, ncur);
	if (rep == NULL) {
		ota_error_clear(&e);
		ota_error_set(&e, OTA_ERR_NOMEM, "archive", "out of memory");
		return early_fail(json, &e, CLI_INTERNAL);
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
	/* a ledger removed or emptied after it was checked is an input
	 * problem as before the verification; any other failure is the
	 * archive's, or internal */
	switch (rc) {
	case OTA_ERR_USAGE:
	case OTA_ERR_ARCHIVE_LEDGER_MISSING:
	case OTA_ERR_NOT_REGULAR:
	case OTA_ERR_IO:
	case OTA_ERR_FILE_UNSAFE:
		return CLI_USAGE;
	case OTA_ERR_NOMEM:
	case OTA_ERR_INTERNAL:
	case OTA_ERR_DB:
		return CLI_INTERNAL;
	default:
		return CLI_REFUSED;
	}
}
