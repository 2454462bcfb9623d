/*
 * Durable verifier state: the highest accepted version per trust domain.
 * File: {"kind": "ota.trust_state/v1", "domains": {"<domain>":
 * {"version": N, "identity": "sha256:..."}}}, written atomically (temporary
 * file, fsync, rename, directory fsync) under an exclusive flock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust_internal.h"

struct ota_trust_state {
	char *path;
	int lock_fd;
	json_t *domains; /* own reference */
};

void ota_trust_state_close(ota_trust_state *s)
{
	if (s == NULL)
		return;
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* releases the flock */
	json_decref(s->domains);
	free(s->path);
	free(s);
}

static ota_err corrupt(ota_error *err, const char *path, const char *what)
{
	return ota_error_set(err, OTA_ERR_TRUST_STATE_CORRUPT, path, "%s", what);
}

static ota_err load(ota_trust_state *s, ota_error *err)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	struct stat st;
	if (stat(s->path, &st) != 0) {
		if (errno == ENOENT) {
			s->domains = json_object();
			return s->domains != NULL ? OTA_OK : ota_error_set(err, OTA_ERR_NOMEM, s->path, NULL);
		}
		return ota_error_set(err, OTA_ERR_IO, s->path, "cannot stat: %s", strerror(errno));
	}
	/* the state is the floor that refuses a rolled-back trust root: one
	 * another user owns or group or others may write could be lowered */
	if (st.st_uid != geteuid())
		return ota_error_set(err, OTA_ERR_FILE_UNSAFE, s->path,
		                     "the trust state is owned by uid %lu, not by uid %lu running this "
		                     "(chown it)",
		                     (unsigned long)st.st_uid, (unsigned long)geteuid());
	if ((st.st_mode & 022) != 0)
		return ota_error_set(err, OTA_ERR_FILE_UNSAFE, s->path,
		                     "the trust state has mode %04o: group or others can write it and "
		                     "lower the versions it pins (chmod 600)",
		                     (unsigned)(st.st_mode & 07777));
	ota_err rc = ota_file_read(s->path, OTA_MAX_TRUST_STATE_BYTES, &buf, &len, err);
	if (rc != OTA_OK)
		return rc;
	json_t *doc = NULL;
	ota_error jerr;
	ota_error_clear(&jerr);
	rc = ota_json_parse(ota_bytes_make(buf, len), &doc, &jerr);
	free(buf);
	if (rc != OTA_OK)
		return corrupt(err, s->path, jerr.what);
	const json_t *kind = json_object_get(doc, "kind");
	json_t *domains = json_object_get(doc, "domains");
	if (!json_is_object(doc) || json_object_size(doc) != 2 || !json_is_string(kind) ||
	    strcmp(json_string_value(kind), OTA_TRUST_STATE_KIND) != 0 || !json_is_object(domains) ||
	    json_object_size(domains) > OTA_MAX_TRUST_DOMAINS) {
		json_decref(doc);
		return corrupt(err, s->path, "not an " OTA_TRUST_STATE_KIND " document");
	}
	const char *d;
	json_t *e;
	json_object_foreach(domains, d, e) {
		const json_t *v = json_object_get(e, "version");
		const json_t *id = json_object_get(e, "identity");
		if (!json_is_object(e) || json_object_size(e) != 2 || !json_is_integer(v) ||
		    json_integer_value(v) < 1 || json_integer_value(v) > OTA_MAX_TRUST_VERSION ||
		    !json_is_string(id) || !ota_id_is_valid(json_string_value(id))) {
			json_decref(doc);
			return corrupt(err, s->path, "a domain entry is not {version, identity}");
		}
	}
	s->domains = json_incref(domains);
	json_decref(doc);
	return OTA_OK;
}

ota_err ota_trust_state_open(const char *path, ota_trust_state **out, ota_error *err)
{
	*out = NULL;
	ota_trust_state *s = calloc(1, sizeof *s);
	size_t n = strlen(path);
	char *lock = malloc(n + 6);
	if (s == NULL || lock == NULL) {
		free(s);
		free(lock);
		return ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
	}
	s->lock_fd = -1;
	s->path = strdup(path);
	snprintf(lock, n + 6, "%s.lock", path);
	ota_err rc = OTA_OK;
	if (s->path == NULL) {
		rc = ota_error_set(err, OTA_ERR_NOMEM, path, NULL);
		goto fail;
	}
	s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lock_fd < 0) {
		rc = ota_error_set(err, OTA_ERR_IO, lock, "cannot open lock: %s", strerror(errno));
		goto fail;
	}
	while (flock(s->lock_fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			rc = ota_error_set(err, OTA_ERR_IO, lock, "flock: %s", strerror(errno));
			goto fail;
		}
	}
	if ((rc = load(s, err)) != OTA_OK)
		goto fail;
	free(lock);
	*out = s;
	return OTA_OK;
fail:
	free(lock);
	ota_trust_state_close(s);
	return rc;
}

ota_err ota_trust_state_get(const ota_trust_state *s, const char *domain, int64_t *version,
                            char identity[OTA_ID_LEN + 1])
{
	const json_t *e = json_object_get(s->domains, domain);
	if (e == NULL)
		return OTA_ERR_NOT_FOUND;
	*version = (int64_t)json_integer_value(json_object_get(e, "version"));
	if (identity != NULL)
		memcpy(identity, json_string_value(json_object_get(e, "identity")), OTA_ID_LEN + 1);
	return OTA_OK;
}

ota_err ota_trust_state_record(ota_trust_state *s, const char *domain, int64_t version,
                               const char *identity, ota_error *err)
{
	int64_t have = 0;
	char hid[OTA_ID_LEN + 1];
	if (!ota_id_is_valid(identity) || version < 1 || version > OTA_MAX_TRUST_VERSION)
		return ota_error_set(err, OTA_ERR_USAGE, "state", "bad version or identity");
	if (ota_trust_state_get(s, domain, &have, hid) == OTA_OK) {
		if (version < have)
			return ota_error_set(err, OTA_ERR_TRUST_ROLLBACK, "state",
			                     "version %lld is lower than version %lld accepted before",
			                     (long long)version, (long long)have);
		if (version == have) {
			if (strcmp(hid, identity) != 0)
				return ota_error_set(err, OTA_ERR_TRUST_EQUIVOCATION, "state",
				                     "version %lld is %s, but %s was accepted before",
				                     (long long)version, identity, hid);
			return OTA_OK;
		}
	} else if (json_object_size(s->domains) >= OTA_MAX_TRUST_DOMAINS) {
		return ota_error_set(err, OTA_ERR_TOO_LARGE, "state", "more than %u trust domains",
		                     OTA_MAX_TRUST_DOMAINS);
	}
	json_t *copy = json_deep_copy(s->domains);
	json_t *e = json_pack("{s:I, s:s}", "version", (json_int_t)version, "identity", identity);
	if (copy == NULL || e == NULL || json_object_set_new(copy, domain, e) != 0) {
		if (copy == NULL)
			json_decref(e);
		json_decref(copy);
		return ota_error_set(err, OTA_ERR_NOMEM, "state", NULL);
	}
	json_t *doc = json_pack("{s:s, s:O}", "kind", OTA_TRUST_STATE_KIND, "domains", copy);
	char *text = NULL;
	size_t len = 0;
	ota_err rc = doc != NULL ? ota_jcs_serialize(doc, &text, &len, err)
	                         : ota_error_set(err, OTA_ERR_NOMEM, "state", NULL);
	json_decref(doc);
	if (rc == OTA_OK)
		rc = ota_file_write_atomic(s->path, ota_bytes_make(text, len), 0600, err);
	free(text);
	if (rc != OTA_OK) {
		json_decref(copy);
		return rc;
	}
	json_decref(s->domains);
	s->domains = copy;
	return OTA_OK;
}
