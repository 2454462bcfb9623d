/*
 * ota trust - create, edit, sign, rotate and show trust-root snapshots.
 *
 * A trust directory DIR holds:
 *   DIR/root.json              the latest published snapshot
 *   DIR/versions/N.root.json   every published version (the chain)
 *   DIR/staged.json            version N+1 being prepared (until both
 *                              thresholds are met, then it is published)
 *   DIR/keys/NAME.pem           private keys created here (0600, dir 0700)
 * Private key material is never printed; only paths and kids are.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "ota/json.h"
#include "ota/key.h"
#include "ota/limits.h"
#include "ota/trust.h"

#define PROG "ota trust"
#define MAX_MULTI 64
#define DEFAULT_LIFETIME (365 * 86400)

/* ---- option parsing ---- */

typedef struct opts {
	const char *dir, *domain, *alg, *id, *role, *principal, *public_key, *generate, *kid,
		*key, *prev, *expires, *now, *valid_from, *valid_until, *revoked_at, *root_keys,
		*threshold, *file;
	const char *repos[MAX_MULTI], *lanes[MAX_MULTI], *targets[MAX_MULTI], *signs[MAX_MULTI],
		*add_root[MAX_MULTI], *remove_root[MAX_MULTI];
	size_t n_repos, n_lanes, n_targets, n_signs, n_add_root, n_remove_root;
	bool json, staged, sign_new;
} opts;

typedef struct optdef {
	const char *name;
	size_t single;   /* offsetof a const char * field, or 0 */
	size_t multi;    /* offsetof an array, or 0 */
	size_t count;    /* offsetof its counter */
	size_t flag;     /* offsetof a bool, or 0 */
} optdef;

#define S(f) {"--" #f, offsetof(opts, f), 0, 0, 0}
#define SN(n, f) {n, offsetof(opts, f), 0, 0, 0}
#define M(n, f, c) {n, 0, offsetof(opts, f), offsetof(opts, c), 0}
#define F(n, f) {n, 0, 0, 0, offsetof(opts, f)}

static const optdef optdefs[] = {
	S(dir), S(domain), S(alg), S(id), S(role), S(principal), SN("--public-key", public_key),
	S(generate), S(kid), S(key), S(prev), S(expires), S(now), SN("--valid-from", valid_from),
	SN("--valid-until", valid_until), SN("--revoked-at", revoked_at),
	SN("--root-keys", root_keys), S(threshold),
	M("--repo", repos, n_repos), M("--lane", lanes, n_lanes),
	M("--provider-target", targets, n_targets), M("--sign", signs, n_signs),
	M("--add-root-key", add_root, n_add_root), M("--remove-root-key", remove_root, n_remove_root),
	F("--json", json), F("--staged", staged), F("--sign-new", sign_new),
	{NULL, 0, 0, 0, 0},
};

/* Parses argv[2..]; allowed is a space-separated list of accepted flags. */
static int parse_opts(int argc, char **argv, const char *allowed, bool positional, opts *o)
{
	memset(o, 0, sizeof *o);
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] != '-') {
			if (!positional || o->file != NULL) {
				fprintf(stderr, "%s: usage: unexpected argument '%s'\n", PROG, a);
				return CLI_USAGE;
			}
			o->file = a;
			continue;
		}
		char name[64];
		const char *val = NULL;
		const char *eq = strchr(a, '=');
		size_t nl = eq != NULL ? (size_t)(eq - a) : strlen(a);
		if (nl >= sizeof name) {
			fprintf(stderr, "%s: usage: unknown option '%s'\n", PROG, a);
			return CLI_USAGE;
		}
		memcpy(name, a, nl);
		name[nl] = '\0';
		if (eq != NULL)
			val = eq + 1;
		/* the flag must be listed for this sub-command */
		size_t fl = strlen(name + 2);
		bool listed = false;
		for (const char *hit = strstr(allowed, name + 2); fl > 0 && hit != NULL && !listed;
		     hit = strstr(hit + 1, name + 2))
			listed = (hit == allowed || hit[-1] == ' ') && (hit[fl] == ' ' || hit[fl] == '\0');
		const optdef *d = NULL;
		for (const optdef *p = optdefs; p->name != NULL; p++)
			if (strcmp(p->name, name) == 0)
				d = p;
		if (d == NULL || !listed) {
			fprintf(stderr, "%s: usage: unknown option '%s' for '%s'\n", PROG, name, argv[1]);
			return CLI_USAGE;
		}
		if (d->flag != 0) {
			if (val != NULL) {
				fprintf(stderr, "%s: usage: %s takes no value\n", PROG, name);
				return CLI_USAGE;
			}
			*(bool *)((char *)o + d->flag) = true;
			continue;
		}
		if (val == NULL) {
			if (i + 1 >= argc) {
				fprintf(stderr, "%s: usage: %s needs a value\n", PROG, name);
				return CLI_USAGE;
			}
			val = argv[++i];
		}
		if (d->single != 0) {
			*(const char **)((char *)o + d->single) = val;
		} else {
			size_t *cnt = (size_t *)((char *)o + d->count);
			const char **arr = (const char **)((char *)o + d->multi);
			if (*cnt >= MAX_MULTI) {
				fprintf(stderr, "%s: usage: too many %s\n", PROG, name);
				return CLI_USAGE;
			}
			arr[(*cnt)++] = val;
		}
	}
	return CLI_OK;
}

/* ---- helpers ---- */

static int fail(const ota_error *e)
{
	return cli_fail(PROG, e);
}

static int usage_msg(const char *msg)
{
	return cli_usage(PROG, msg);
}

static ota_err parse_time_opt(const char *s, const char *name, int64_t dflt, int64_t *out,
                              ota_error *err)
{
	if (s == NULL) {
		*out = dflt;
		return OTA_OK;
	}
	if (ota_trust_time_parse(s, out) != OTA_OK)
		return ota_error_set(err, OTA_ERR_USAGE, name,
		                     "'%s' is not integer seconds or RFC 3339 (2026-01-01T00:00:00Z)", s);
	return OTA_OK;
}

static ota_err parse_uint(const char *s, const char *name, unsigned lo, unsigned hi,
                          unsigned *out, ota_error *err)
{
	char *end = NULL;
	errno = 0;
	unsigned long v = s != NULL ? strtoul(s, &end, 10) : 0;
	if (s == NULL || *s == '\0' || *end != '\0' || errno != 0 || v < lo || v > hi)
		return ota_error_set(err, OTA_ERR_USAGE, name, "must be an integer in %u..%u", lo, hi);
	*out = (unsigned)v;
	return OTA_OK;
}

static char *path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	if (p != NULL)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static ota_err ensure_dir(const char *path, ota_error *err)
{
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return ota_error_set(err, OTA_ERR_IO, path, "mkdir: %s", strerror(errno));
	return OTA_OK;
}

/*
 * DIR/keys holds root private keys: made 0700; an existing one must be a
 * directory (not a symlink to somewhere else) owned by the caller or root
 * that group and others cannot write (they could put their own key file
 * in place of one being written) nor list and read.
 */
static ota_err ensure_keys_dir(const char *path, ota_error *err)
{
	ota_err rc = ensure_dir(path, err);
	if (rc != OTA_OK)
		return rc;
	struct stat st;
	if (lstat(path, &st) != 0)
		return ota_error_set(err, OTA_ERR_IO, path, "stat: %s", strerror(errno));
	if (S_ISLNK(st.st_mode))
		return ota_error_set(err, OTA_ERR_PATH_SYMLINK, path,
		                     "the keys directory is a symlink: not followed");
	if (!S_ISDIR(st.st_mode))
		return ota_error_set(err, OTA_ERR_NOT_DIRECTORY, path, "exists and is not a directory");
	if ((st.st_mode & 077) != 0 || (st.st_uid != geteuid() && st.st_uid != 0))
		return ota_error_set(err, OTA_ERR_KEY_PERMISSIONS, path,
		                     "the keys directory has mode %04o and owner uid %lu: it must be "
		                     "0700 and owned by uid %lu or root (chmod 700)",
		                     (unsigned)(st.st_mode & 07777), (unsigned long)st.st_uid,
		                     (unsigned long)geteuid());
	return OTA_OK;
}

static ota_err load_root_file(const char *path, ota_trust_root **out, ota_error *err)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	*out = NULL;
	ota_err rc = ota_file_read(path, OTA_MAX_TRUST_ROOT_BYTES, &buf, &len, err);
	if (rc == OTA_ERR_TOO_LARGE)
		return ota_error_set(err, OTA_ERR_TRUST_TOO_LARGE, path, "snapshot exceeds %u bytes",
		                     OTA_MAX_TRUST_ROOT_BYTES);
	if (rc != OTA_OK)
		return rc;
	ota_error perr;
	ota_error_clear(&perr);
	rc = ota_trust_root_parse(ota_bytes_make(buf, len), out, &perr);
	free(buf);
	if (rc != OTA_OK) {
		char w[sizeof perr.where];
		memcpy(w, perr.where, sizeof w);
		snprintf(perr.where, sizeof perr.where, "%s: %.200s", path, w);
		if (err != NULL && err->code == OTA_OK)
			*err = perr;
	}
	return rc;
}

static ota_err write_root_file(const char *path, const ota_trust_root *r, ota_error *err)
{
	char *text = NULL;
	size_t len = 0;
	ota_err rc = ota_trust_root_serialize(r, &text, &len, err);
	if (rc != OTA_OK)
		return rc;
	rc = ota_file_write_atomic(path, ota_bytes_make(text, len), 0644, err);
	free(text);
	return rc;
}

/* Writes a new private key file (0600, whatever the umask); never replaces
 * anything, not even a file made between a check and the write: the key is
 * written whole under a temporary name and renamed into place with
 * RENAME_NOREPLACE (ota_file_write_new). */
static ota_err write_private_key(const char *path, const ota_key *k, ota_error *err)
{
	if (exists(path))
		return ota_error_set(err, OTA_ERR_EXISTS, path, "refusing to overwrite a key file");
	char *pem = NULL;
	size_t len = 0;
	ota_err rc = ota_key_private_pem(k, &pem, &len);
	if (rc != OTA_OK)
		return ota_error_set(err, rc, path, "cannot encode the private key");
	rc = ota_file_write_new(path, ota_bytes_make(pem, len), 0600, err);
	ota_wipe(pem, len);
	free(pem);
	return rc;
}

static void kid_hex(const ota_key *k, char out[65])
{
	uint8_t kid[32] = {0};
	if (ota_key_kid(k, kid) != OTA_OK)
		memset(kid, 0, sizeof kid);
	ota_hex_encode(ota_bytes_make(kid, 32), out);
}

static ota_err parse_kid(const char *s, uint8_t kid[32], ota_error *err)
{
	size_t n = 0;
	if (s == NULL || strlen(s) != 64 || ota_hex_decode(s, 64, (ota_buf){kid, 32}, &n) != OTA_OK)
		return ota_error_set(err, OTA_ERR_USAGE, "kid", "a kid is 64 hex digits");
	return OTA_OK;
}

/* Signs r with each key file in paths (prev: previous version, may be NULL). */
static ota_err sign_with(ota_trust_root *r, const ota_trust_root *prev, const char *const *paths,
                         size_t n, ota_error *err)
{
	for (size_t i = 0; i < n; i++) {
		ota_key *k = NULL;
		ota_err rc = ota_key_load_file(paths[i], &k, err);
		if (rc != OTA_OK)
			return rc;
		if (!ota_key_has_private(k)) {
			ota_key_free(k);
			return ota_error_set(err, OTA_ERR_KEY_PRIVATE_REQUIRED, paths[i],
			                     "signing needs a private key");
		}
		rc = ota_trust_root_sign(r, k, prev, err);
		ota_key_free(k);
		if (rc != OTA_OK)
			return rc;
	}
	return OTA_OK;
}

/* ---- the trust directory ---- */

typedef struct tdir {
	char *root_path, *staged_path, *versions_dir, *keys_dir;
	int lock_fd; /* flock on DIR/.lock: one editor or signer at a time */
	ota_trust_root *cur;    /* root.json */
	ota_trust_root *staged; /* staged.json or NULL */
} tdir;

static void tdir_free(tdir *t)
{
	if (t->lock_fd > 0)
		close(t->lock_fd);
	free(t->root_path);
	free(t->staged_path);
	free(t->versions_dir);
	free(t->keys_dir);
	ota_trust_root_free(t->cur);
	ota_trust_root_free(t->staged);
	memset(t, 0, sizeof *t);
}

static ota_err tdir_paths(tdir *t, const char *dir, ota_error *err)
{
	memset(t, 0, sizeof *t);
	t->root_path = path_join(dir, "root.json");
	t->staged_path = path_join(dir, "staged.json");
	t->versions_dir = path_join(dir, "versions");
	t->keys_dir = path_join(dir, "keys");
	if (t->root_path == NULL || t->staged_path == NULL || t->versions_dir == NULL ||
	    t->keys_dir == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, dir, NULL);
	return OTA_OK;
}

static ota_err tdir_open(tdir *t, const char *dir, ota_error *err)
{
	ota_err rc = tdir_paths(t, dir, err);
	if (rc != OTA_OK)
		return rc;
	char *lock = path_join(dir, ".lock");
	if (lock == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, dir, NULL);
	t->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(lock);
	if (t->lock_fd < 0) {
		t->lock_fd = 0;
		return ota_error_set(err, OTA_ERR_IO, dir, "cannot open DIR/.lock: %s", strerror(errno));
	}
	while (flock(t->lock_fd, LOCK_EX) != 0)
		if (errno != EINTR)
			return ota_error_set(err, OTA_ERR_IO, dir, "flock: %s", strerror(errno));
	if ((rc = load_root_file(t->root_path, &t->cur, err)) != OTA_OK)
		return rc;
	if (exists(t->staged_path)) {
		if ((rc = load_root_file(t->staged_path, &t->staged, err)) != OTA_OK)
			return rc;
		const char *prev = ota_trust_root_prev(t->staged);
		if (ota_trust_root_version(t->staged) != ota_trust_root_version(t->cur) + 1 ||
		    prev == NULL || strcmp(prev, ota_trust_root_identity(t->cur)) != 0)
			return ota_error_set(err, OTA_ERR_TRUST_PREV_MISMATCH, t->staged_path,
			                     "staged.json does not follow root.json; remove it");
	}
	return OTA_OK;
}

static char *version_path(const tdir *t, int64_t v)
{
	char name[64];
	snprintf(name, sizeof name, "%lld.root.json", (long long)v);
	return path_join(t->versions_dir, name);
}

/*
 * Publishes t->staged when it is accepted as root.json's successor, else
 * writes it to staged.json. Prints the outcome.
 */
static int stage_or_publish(tdir *t, ota_error *err)
{
	ota_error aerr;
	ota_error_clear(&aerr);
	ota_err rc = ota_trust_root_accept_next(t->cur, t->staged, NULL, &aerr);
	int64_t v = ota_trust_root_version(t->staged);
	if (rc == OTA_OK) {
		char *vp = version_path(t, v);
		if (vp == NULL)
			return fail(&(ota_error){.code = OTA_ERR_NOMEM});
		rc = ensure_dir(t->versions_dir, err);
		if (rc == OTA_OK)
			rc = write_root_file(vp, t->staged, err);
		if (rc == OTA_OK)
			rc = write_root_file(t->root_path, t->staged, err);
		free(vp);
		if (rc != OTA_OK)
			return fail(err);
		if (unlink(t->staged_path) != 0 && errno != ENOENT) {
			ota_error_set(err, OTA_ERR_IO, t->staged_path, "unlink: %s", strerror(errno));
			return fail(err);
		}
		printf("published %s version %lld\nidentity %s\n", ota_trust_root_domain(t->staged),
		       (long long)v, ota_trust_root_identity(t->staged));
		return CLI_OK;
	}
	if (rc != OTA_ERR_TRUST_THRESHOLD_OLD && rc != OTA_ERR_TRUST_THRESHOLD_NEW)
		return fail(&aerr);
	if ((rc = write_root_file(t->staged_path, t->staged, err)) != OTA_OK)
		return fail(err);
	unsigned old_n = 0, new_n = 0;
	if (ota_trust_root_count_signers(t->staged, t->cur, &old_n, err) != OTA_OK ||
	    ota_trust_root_count_signers(t->staged, t->staged, &new_n, err) != OTA_OK)
		return fail(err);
	printf("staged %s version %lld (%s)\n", ota_trust_root_domain(t->staged), (long long)v,
	       t->staged_path);
	printf("signatures: %u of %u from version %lld's root keys, %u of %u from its own\n", old_n,
	       ota_trust_root_threshold(t->cur), (long long)ota_trust_root_version(t->cur), new_n,
	       ota_trust_root_threshold(t->staged));
	printf("next: ota trust sign --dir DIR --key KEY (one holder at a time)\n");
	return CLI_OK;
}

/*
 * Opens DIR and returns a draft of the next version: the staged one (whose
 * signatures are dropped, as its content changes) or a fresh N+1.
 */
static ota_err begin_edit(tdir *t, const opts *o, int64_t *now, ota_trust_draft **d,
                          ota_error *err)
{
	*d = NULL;
	memset(t, 0, sizeof *t);
	if (o->dir == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "--dir", "--dir DIR is required");
	ota_err rc = tdir_open(t, o->dir, err);
	if (rc != OTA_OK)
		return rc;
	int64_t expires;
	if ((rc = parse_time_opt(o->now, "--now", ota_clock_now(NULL), now, err)) != OTA_OK ||
	    (rc = parse_time_opt(o->expires, "--expires", *now + DEFAULT_LIFETIME, &expires, err)) !=
	            OTA_OK)
		return rc;
	if (t->staged != NULL) {
		if (ota_trust_root_signature_count(t->staged) > 0)
			fprintf(stderr, "%s: note: the staged version changes; its %zu signature(s) are "
			                "dropped\n",
			        PROG, ota_trust_root_signature_count(t->staged));
		rc = ota_trust_draft_from(t->staged, d, err);
		if (rc == OTA_OK)
			rc = ota_trust_draft_set_times(*d, *now, expires, err);
		return rc;
	}
	return ota_trust_draft_next(t->cur, *now, expires, d, err);
}

/* Finishes the draft, signs with --sign keys (and extra), stages or publishes. */
static int end_edit(tdir *t, const opts *o, ota_trust_draft *d, const char *const *extra,
                    size_t n_extra, ota_error *err)
{
	ota_trust_root *r = NULL;
	ota_err rc = ota_trust_draft_finish(d, &r, err);
	ota_trust_draft_free(d);
	if (rc != OTA_OK)
		return fail(err);
	ota_trust_root_free(t->staged);
	t->staged = r;
	if ((rc = sign_with(r, t->cur, o->signs, o->n_signs, err)) != OTA_OK ||
	    (rc = sign_with(r, t->cur, extra, n_extra, err)) != OTA_OK)
		return fail(err);
	return stage_or_publish(t, err);
}

/* ---- sub-commands ---- */

static int trust_init(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv, "domain dir root-keys threshold alg expires now", false, &o);
	if (u != CLI_OK)
		return u;
	if (o.domain == NULL || o.dir == NULL)
		return usage_msg("init --domain D --dir DIR [--root-keys N] [--threshold T] [--alg A] "
		                 "[--expires TIME] [--now TIME]");
	ota_error err;
	ota_error_clear(&err);
	unsigned n = 1, thr = 0;
	ota_alg alg = OTA_ALG_ES256;
	int64_t now = 0, expires = 0;
	if ((o.root_keys != NULL &&
	     parse_uint(o.root_keys, "--root-keys", 1, OTA_MAX_TRUST_ROOT_KEYS, &n, &err) != OTA_OK) ||
	    (o.threshold != NULL && parse_uint(o.threshold, "--threshold", 1, n, &thr, &err) != OTA_OK))
		return fail(&err);
	if (thr == 0)
		thr = n / 2 + 1 > n ? n : n / 2 + 1;
	if (o.alg != NULL && (ota_alg_from_name(o.alg, &alg) != OTA_OK || alg == OTA_ALG_PS256 ||
	                      alg == OTA_ALG_PS384 || alg == OTA_ALG_PS512)) {
		ota_error_set(&err, OTA_ERR_USAGE, "--alg", "one of ES256, ES384, ES512, EdDSA");
		return fail(&err);
	}
	if (parse_time_opt(o.now, "--now", ota_clock_now(NULL), &now, &err) != OTA_OK ||
	    parse_time_opt(o.expires, "--expires", now + DEFAULT_LIFETIME, &expires, &err) != OTA_OK)
		return fail(&err);
	tdir t;
	int ret = CLI_INTERNAL;
	ota_key *keys[OTA_MAX_TRUST_ROOT_KEYS] = {0};
	ota_trust_draft *d = NULL;
	ota_trust_root *r = NULL;
	char *vp = NULL;
	if (tdir_paths(&t, o.dir, &err) != OTA_OK)
		goto out_fail;
	if (exists(t.root_path)) {
		ota_error_set(&err, OTA_ERR_EXISTS, t.root_path, "a trust domain already lives here");
		goto out_fail;
	}
	if (ensure_dir(o.dir, &err) != OTA_OK || ensure_keys_dir(t.keys_dir, &err) != OTA_OK ||
	    ensure_dir(t.versions_dir, &err) != OTA_OK)
		goto out_fail;
	for (unsigned i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof name, "root-%u.pem", i + 1);
		char *kp = path_join(t.keys_dir, name);
		if (kp != NULL && exists(kp)) {
			ota_error_set(&err, OTA_ERR_EXISTS, kp, "refusing to overwrite a key file");
			free(kp);
			goto out_fail;
		}
		free(kp);
	}
	for (unsigned i = 0; i < n; i++)
		if (ota_key_generate(alg, &keys[i]) != OTA_OK) {
			ota_error_set(&err, OTA_ERR_CRYPTO, "keygen", "cannot generate a key");
			goto out_fail;
		}
	if (ota_trust_draft_new(o.domain, (const ota_key *const *)keys, n, thr, now, expires, &d,
	                        &err) != OTA_OK ||
	    ota_trust_draft_finish(d, &r, &err) != OTA_OK)
		goto out_fail;
	for (unsigned i = 0; i < n; i++)
		if (ota_trust_root_sign(r, keys[i], NULL, &err) != OTA_OK)
			goto out_fail;
	if (ota_trust_root_verify_self(r, &err) != OTA_OK)
		goto out_fail;
	for (unsigned i = 0; i < n; i++) {
		char name[64], kh[65];
		snprintf(name, sizeof name, "root-%u.pem", i + 1);
		char *kp = path_join(t.keys_dir, name);
		if (kp == NULL || write_private_key(kp, keys[i], &err) != OTA_OK) {
			free(kp);
			goto out_fail;
		}
		kid_hex(keys[i], kh);
		printf("root key %u: %s kid %s\n", i + 1, kp, kh);
		free(kp);
	}
	vp = version_path(&t, 1);
	if (vp == NULL || write_root_file(vp, r, &err) != OTA_OK ||
	    write_root_file(t.root_path, r, &err) != OTA_OK)
		goto out_fail;
	printf("created %s version 1 (%u-of-%u root keys)\nidentity %s\n", o.domain, thr, n,
	       ota_trust_root_identity(r));
	ret = CLI_OK;
	goto out;
out_fail:
	ret = fail(&err);
out:
	free(vp);
	ota_trust_root_free(r);
	ota_trust_draft_free(d);
	for (unsigned i = 0; i < n && i < OTA_MAX_TRUST_ROOT_KEYS; i++)
		ota_key_free(keys[i]);
	tdir_free(&t);
	return ret;
}

static int trust_add_principal(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv,
	                   "dir id role repo lane provider-target sign expires now", false, &o);
	if (u != CLI_OK)
		return u;
	if (o.id == NULL || o.role == NULL)
		return usage_msg("add-principal --dir DIR --id ID --role issuer|runner|verifier "
		                 "[--repo P]... [--lane P]... [--provider-target P]... [--sign KEY]...");
	ota_error err;
	ota_error_clear(&err);
	ota_trust_role role;
	if (ota_trust_role_from_name(o.role, &role) != OTA_OK)
		return usage_msg("--role is issuer, runner or verifier");
	tdir t;
	int64_t now;
	ota_trust_draft *d = NULL;
	int ret;
	if (begin_edit(&t, &o, &now, &d, &err) != OTA_OK ||
	    ota_trust_draft_add_principal(d, o.id, role, o.repos, o.n_repos, o.lanes, o.n_lanes,
	                                  o.targets, o.n_targets, &err) != OTA_OK) {
		ota_trust_draft_free(d);
		ret = fail(&err);
	} else {
		ret = end_edit(&t, &o, d, NULL, 0, &err);
	}
	tdir_free(&t);
	return ret;
}

static int trust_add_key(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv,
	                   "dir principal public-key generate alg valid-from valid-until sign "
	                   "expires now",
	                   false, &o);
	if (u != CLI_OK)
		return u;
	if (o.principal == NULL || (o.public_key == NULL) == (o.generate == NULL))
		return usage_msg("add-key --dir DIR --principal ID (--public-key PUB.pem | --generate "
		                 "NEW.pem) [--alg A] [--valid-from T] [--valid-until T] [--sign KEY]...");
	ota_error err;
	ota_error_clear(&err);
	ota_alg alg = OTA_ALG_NONE;
	if (o.alg != NULL && ota_alg_from_name(o.alg, &alg) != OTA_OK)
		return usage_msg("--alg is ES256, ES384, ES512, EdDSA or PS256");
	tdir t;
	int64_t now, vf, vu;
	ota_trust_draft *d = NULL;
	ota_key *k = NULL;
	int ret;
	if (begin_edit(&t, &o, &now, &d, &err) != OTA_OK ||
	    parse_time_opt(o.valid_from, "--valid-from", now, &vf, &err) != OTA_OK ||
	    parse_time_opt(o.valid_until, "--valid-until", 0, &vu, &err) != OTA_OK)
		goto out_fail;
	if (o.generate != NULL) {
		if (exists(o.generate)) {
			ota_error_set(&err, OTA_ERR_EXISTS, o.generate, "refusing to overwrite a key file");
			goto out_fail;
		}
		if (ota_key_generate(alg == OTA_ALG_NONE ? OTA_ALG_ES256 : alg, &k) != OTA_OK) {
			ota_error_set(&err, OTA_ERR_USAGE, "--alg", "cannot generate a key for this alg");
			goto out_fail;
		}
	} else if (ota_key_load_file(o.public_key, &k, &err) != OTA_OK) {
		goto out_fail;
	}
	if (ota_trust_draft_add_key(d, o.principal, k, alg, vf, vu, &err) != OTA_OK)
		goto out_fail;
	if (o.generate != NULL && write_private_key(o.generate, k, &err) != OTA_OK)
		goto out_fail;
	char kh[65];
	kid_hex(k, kh);
	printf("key %s for %s%s%s\n", kh, o.principal, o.generate ? ", private key in " : "",
	       o.generate ? o.generate : "");
	ota_key_free(k);
	ret = end_edit(&t, &o, d, NULL, 0, &err);
	tdir_free(&t);
	return ret;
out_fail:
	ota_key_free(k);
	ota_trust_draft_free(d);
	tdir_free(&t);
	return fail(&err);
}

static int trust_revoke_key(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv, "dir kid revoked-at sign expires now", false, &o);
	if (u != CLI_OK)
		return u;
	if (o.kid == NULL)
		return usage_msg("revoke-key --dir DIR --kid HEX [--revoked-at T] [--sign KEY]...");
	ota_error err;
	ota_error_clear(&err);
	uint8_t kid[32];
	tdir t;
	int64_t now, at;
	ota_trust_draft *d = NULL;
	if (parse_kid(o.kid, kid, &err) != OTA_OK)
		return fail(&err);
	if (begin_edit(&t, &o, &now, &d, &err) != OTA_OK ||
	    parse_time_opt(o.revoked_at, "--revoked-at", now, &at, &err) != OTA_OK ||
	    ota_trust_draft_revoke_key(d, ota_bytes_make(kid, 32), at, &err) != OTA_OK) {
		ota_trust_draft_free(d);
		tdir_free(&t);
		return fail(&err);
	}
	char ts[32];
	ota_trust_time_format(at, ts);
	printf("key %s revoked at %s\n", o.kid, ts);
	int ret = end_edit(&t, &o, d, NULL, 0, &err);
	tdir_free(&t);
	return ret;
}

static int trust_rotate(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv,
	                   "dir root-keys alg add-root-key remove-root-key threshold sign sign-new "
	                   "expires now",
	                   false, &o);
	if (u != CLI_OK)
		return u;
	if (o.root_keys == NULL && o.n_add_root == 0 && o.n_remove_root == 0 && o.threshold == NULL)
		return usage_msg("rotate --dir DIR [--root-keys N [--alg A] [--sign-new]] "
		                 "[--add-root-key PUB.pem]... [--remove-root-key KID]... "
		                 "[--threshold T] [--sign KEY]...");
	ota_error err;
	ota_error_clear(&err);
	unsigned n = 0, thr = 0;
	ota_alg alg = OTA_ALG_ES256;
	if ((o.root_keys != NULL &&
	     parse_uint(o.root_keys, "--root-keys", 1, OTA_MAX_TRUST_ROOT_KEYS, &n, &err) != OTA_OK) ||
	    (o.threshold != NULL &&
	     parse_uint(o.threshold, "--threshold", 1, OTA_MAX_TRUST_ROOT_KEYS, &thr, &err) != OTA_OK))
		return fail(&err);
	if (o.alg != NULL && (ota_alg_from_name(o.alg, &alg) != OTA_OK || alg == OTA_ALG_PS256 ||
	                      alg == OTA_ALG_PS384 || alg == OTA_ALG_PS512))
		return usage_msg("--alg is ES256, ES384, ES512 or EdDSA");
	tdir t;
	int64_t now;
	ota_trust_draft *d = NULL;
	ota_key *gen[OTA_MAX_TRUST_ROOT_KEYS] = {0};
	char *gen_paths[OTA_MAX_TRUST_ROOT_KEYS] = {0};
	int ret = CLI_OK;
	if (begin_edit(&t, &o, &now, &d, &err) != OTA_OK)
		goto out_fail;
	int64_t v = ota_trust_root_version(t.cur) + 1;
	if (n > 0) {
		ota_trust_draft_clear_root_keys(d);
		for (unsigned i = 0; i < n; i++) {
			char name[64];
			snprintf(name, sizeof name, "root-v%lld-%u.pem", (long long)v, i + 1);
			gen_paths[i] = path_join(t.keys_dir, name);
			if (gen_paths[i] == NULL || exists(gen_paths[i])) {
				ota_error_set(&err, OTA_ERR_EXISTS, gen_paths[i] ? gen_paths[i] : name,
				              "refusing to overwrite a key file");
				goto out_fail;
			}
			if (ota_key_generate(alg, &gen[i]) != OTA_OK) {
				ota_error_set(&err, OTA_ERR_CRYPTO, "keygen", "cannot generate a key");
				goto out_fail;
			}
			if (ota_trust_draft_add_root_key(d, gen[i], &err) != OTA_OK)
				goto out_fail;
		}
	}
	for (size_t i = 0; i < o.n_remove_root; i++) {
		uint8_t kid[32];
		if (parse_kid(o.remove_root[i], kid, &err) != OTA_OK ||
		    ota_trust_draft_remove_root_key(d, ota_bytes_make(kid, 32), &err) != OTA_OK)
			goto out_fail;
	}
	for (size_t i = 0; i < o.n_add_root; i++) {
		ota_key *k = NULL;
		if (ota_key_load_file(o.add_root[i], &k, &err) != OTA_OK)
			goto out_fail;
		ota_err rc = ota_trust_draft_add_root_key(d, k, &err);
		ota_key_free(k);
		if (rc != OTA_OK)
			goto out_fail;
	}
	if (thr != 0 && ota_trust_draft_set_threshold(d, thr, &err) != OTA_OK)
		goto out_fail;
	if (ensure_keys_dir(t.keys_dir, &err) != OTA_OK)
		goto out_fail;
	/* validate the draft before any key file is written */
	{
		ota_trust_root *probe = NULL;
		if (ota_trust_draft_finish(d, &probe, &err) != OTA_OK)
			goto out_fail;
		ota_trust_root_free(probe);
	}
	for (unsigned i = 0; i < n; i++) {
		char kh[65];
		if (write_private_key(gen_paths[i], gen[i], &err) != OTA_OK)
			goto out_fail;
		kid_hex(gen[i], kh);
		printf("new root key %u: %s kid %s\n", i + 1, gen_paths[i], kh);
	}
	ret = end_edit(&t, &o, d, o.sign_new ? (const char *const *)gen_paths : NULL,
	               o.sign_new ? n : 0, &err);
	d = NULL;
	goto out;
out_fail:
	ret = fail(&err);
out:
	ota_trust_draft_free(d);
	for (unsigned i = 0; i < OTA_MAX_TRUST_ROOT_KEYS; i++) {
		ota_key_free(gen[i]);
		free(gen_paths[i]);
	}
	tdir_free(&t);
	return ret;
}

static int trust_sign(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv, "dir key prev", true, &o);
	if (u != CLI_OK)
		return u;
	if (o.key == NULL || (o.dir == NULL) == (o.file == NULL))
		return usage_msg("sign --key KEY (--dir DIR | [--prev PREV.json] FILE)");
	ota_error err;
	ota_error_clear(&err);
	int ret;
	const char *keys[1] = {o.key};
	if (o.file != NULL) {
		/* a snapshot file passed from holder to holder */
		ota_trust_root *r = NULL, *prev = NULL;
		if (load_root_file(o.file, &r, &err) != OTA_OK ||
		    (o.prev != NULL && load_root_file(o.prev, &prev, &err) != OTA_OK) ||
		    sign_with(r, prev, keys, 1, &err) != OTA_OK ||
		    write_root_file(o.file, r, &err) != OTA_OK) {
			ret = fail(&err);
		} else {
			unsigned self = 0;
			ret = ota_trust_root_count_signers(r, r, &self, &err) == OTA_OK ? CLI_OK
			                                                                 : fail(&err);
			if (ret == CLI_OK)
				printf("signed %s version %lld: %u of %u of its own root keys\n", o.file,
				       (long long)ota_trust_root_version(r), self,
				       ota_trust_root_threshold(r));
		}
		ota_trust_root_free(prev);
		ota_trust_root_free(r);
		return ret;
	}
	tdir t;
	if (tdir_open(&t, o.dir, &err) != OTA_OK) {
		tdir_free(&t);
		return fail(&err);
	}
	if (t.staged == NULL) {
		ota_error_set(&err, OTA_ERR_NOT_FOUND, t.staged_path,
		              "nothing staged: edit first (add-principal, add-key, revoke-key, rotate)");
		tdir_free(&t);
		return fail(&err);
	}
	if (sign_with(t.staged, t.cur, keys, 1, &err) != OTA_OK)
		ret = fail(&err);
	else
		ret = stage_or_publish(&t, &err);
	tdir_free(&t);
	return ret;
}

static void print_text(const ota_trust_root *r, int64_t now)
{
	json_t *s = ota_trust_root_summary(r, now);
	if (s == NULL)
		return;
	printf("trust domain %s\nversion      %lld\nidentity     %s\n",
	       json_string_value(json_object_get(s, "trust_domain")),
	       (long long)json_integer_value(json_object_get(s, "version")),
	       json_string_value(json_object_get(s, "identity")));
	const char *prev = json_string_value(json_object_get(s, "prev"));
	if (prev != NULL)
		printf("prev         %s\n", prev);
	printf("issued_at    %s\nexpires      %s%s\n",
	       json_string_value(json_object_get(s, "issued_at")),
	       json_string_value(json_object_get(s, "expires")),
	       json_is_true(json_object_get(s, "expired")) ? " (EXPIRED)" : "");
	json_t *root = json_object_get(s, "root");
	json_t *keys = json_object_get(root, "keys");
	printf("root         %lld of %zu keys, %lld signature(s)\n",
	       (long long)json_integer_value(json_object_get(root, "threshold")),
	       json_array_size(keys), (long long)json_integer_value(json_object_get(s, "signatures")));
	size_t i, j;
	json_t *k, *p;
	json_array_foreach(keys, i, k) {
		printf("  root key   %s %s\n", json_string_value(json_object_get(k, "kid")),
		       json_string_value(json_object_get(k, "alg")));
	}
	json_array_foreach(json_object_get(s, "principals"), i, p) {
		printf("principal    %s (%s)\n", json_string_value(json_object_get(p, "id")),
		       json_string_value(json_object_get(p, "role")));
		const char *dims[] = {"repos", "lanes", "provider_targets"};
		for (int d = 0; d < 3; d++) {
			printf("  %-17s", dims[d]);
			json_t *a = json_object_get(json_object_get(p, "scopes"), dims[d]);
			if (json_array_size(a) == 0)
				printf(" (none)");
			json_array_foreach(a, j, k) {
				printf(" %s", json_string_value(k));
			}
			printf("\n");
		}
		json_array_foreach(json_object_get(p, "keys"), j, k) {
			char vf[32], vu[32] = "-", ra[32] = "";
			ota_trust_time_format(json_integer_value(json_object_get(k, "valid_from")), vf);
			if (json_object_get(k, "valid_until") != NULL)
				ota_trust_time_format(json_integer_value(json_object_get(k, "valid_until")), vu);
			if (json_object_get(k, "revoked_at") != NULL)
				ota_trust_time_format(json_integer_value(json_object_get(k, "revoked_at")), ra);
			printf("  key %s %s %s..%s %s%s%s\n", json_string_value(json_object_get(k, "kid")),
			       json_string_value(json_object_get(k, "alg")), vf, vu,
			       json_string_value(json_object_get(k, "status")), ra[0] ? " revoked_at " : "",
			       ra);
		}
	}
	json_decref(s);
}

static int trust_show(int argc, char **argv)
{
	opts o;
	int u = parse_opts(argc, argv, "dir json staged now", true, &o);
	if (u != CLI_OK)
		return u;
	if ((o.dir == NULL) == (o.file == NULL))
		return usage_msg("show (--dir DIR [--staged] | FILE) [--json] [--now TIME]");
	ota_error err;
	ota_error_clear(&err);
	int64_t now;
	if (parse_time_opt(o.now, "--now", ota_clock_now(NULL), &now, &err) != OTA_OK)
		return fail(&err);
	tdir t;
	memset(&t, 0, sizeof t);
	ota_trust_root *r = NULL;
	if (o.file != NULL) {
		if (load_root_file(o.file, &r, &err) != OTA_OK)
			return fail(&err);
	} else {
		if (tdir_open(&t, o.dir, &err) != OTA_OK) {
			tdir_free(&t);
			return fail(&err);
		}
		if (o.staged && t.staged == NULL) {
			ota_error_set(&err, OTA_ERR_NOT_FOUND, t.staged_path, "nothing staged");
			tdir_free(&t);
			return fail(&err);
		}
	}
	const ota_trust_root *shown = r != NULL ? r : o.staged ? t.staged : t.cur;
	unsigned self = 0, old_n = 0;
	bool have_old = o.staged && t.cur != NULL;
	if (ota_trust_root_count_signers(shown, shown, &self, &err) != OTA_OK ||
	    (have_old && ota_trust_root_count_signers(shown, t.cur, &old_n, &err) != OTA_OK)) {
		ota_trust_root_free(r);
		tdir_free(&t);
		return fail(&err);
	}
	if (o.json) {
		json_t *s = ota_trust_root_summary(shown, now);
		if (s != NULL) {
			json_object_set_new(s, "valid_signatures", json_integer(self));
			if (have_old)
				json_object_set_new(s, "valid_signatures_of_previous", json_integer(old_n));
			if (t.staged != NULL && !o.staged)
				json_object_set_new(s, "staged_version",
				                    json_integer(ota_trust_root_version(t.staged)));
			cli_print_json(s);
			json_decref(s);
		}
	} else {
		print_text(shown, now);
		printf("signed by    %u of %u of its own root keys%s\n", self,
		       ota_trust_root_threshold(shown), self >= ota_trust_root_threshold(shown)
		                                                ? ""
		                                                : " (BELOW THRESHOLD)");
		if (have_old)
			printf("             %u of %u of version %lld's root keys\n", old_n,
			       ota_trust_root_threshold(t.cur), (long long)ota_trust_root_version(t.cur));
		if (t.staged != NULL && !o.staged)
			printf("staged       version %lld awaiting signatures (show --staged)\n",
			       (long long)ota_trust_root_version(t.staged));
	}
	ota_trust_root_free(r);
	tdir_free(&t);
	return CLI_OK;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: ota trust COMMAND [OPTIONS]\n\n"
	        "  init          --domain D --dir DIR [--root-keys N] [--threshold T] [--alg A]\n"
	        "                [--expires TIME] [--now TIME]\n"
	        "  add-principal --dir DIR --id ID --role issuer|runner|verifier [--repo P]...\n"
	        "                [--lane P]... [--provider-target P]... [--sign KEY]...\n"
	        "  add-key       --dir DIR --principal ID (--public-key PUB.pem | --generate NEW.pem)\n"
	        "                [--alg A] [--valid-from T] [--valid-until T] [--sign KEY]...\n"
	        "  revoke-key    --dir DIR --kid HEX [--revoked-at T] [--sign KEY]...\n"
	        "  rotate        --dir DIR [--root-keys N [--alg A] [--sign-new]]\n"
	        "                [--add-root-key PUB.pem]... [--remove-root-key KID]...\n"
	        "                [--threshold T] [--sign KEY]...\n"
	        "  sign          --key KEY (--dir DIR | [--prev PREV.json] FILE)\n"
	        "  show          (--dir DIR [--staged] | FILE) [--json] [--now TIME]\n\n"
	        "Editing commands also take --expires TIME and --now TIME. Edits go to\n"
	        "DIR/staged.json (version N+1) until it carries both thresholds, then it is\n"
	        "published as DIR/root.json and DIR/versions/N+1.root.json.\n");
}

int cmd_trust(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} subs[] = {
		{"init", trust_init},         {"add-principal", trust_add_principal},
		{"add-key", trust_add_key},   {"revoke-key", trust_revoke_key},
		{"rotate", trust_rotate},     {"sign", trust_sign},
		{"show", trust_show},
	};
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return CLI_OK;
		}
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
		if (strcmp(argv[1], subs[i].name) == 0)
			return subs[i].fn(argc, argv);
	fprintf(stderr, "%s: usage: unknown command '%s'\n", PROG, argv[1]);
	usage(stderr);
	return CLI_USAGE;
}
