/*
 * Images: a local OCI image layout store filled by skopeo and unpacked by
 * umoci (never hand-written layer handling). The image config's platform
 * must equal the declared one and the host's; the check is evidence.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oci_internal.h"
#include "ota/json.h"
#include "ota/limits.h"

void ota_oci_host_platform(char os[16], char arch[16], char variant[16])
{
	struct utsname u;
	snprintf(os, 16, "linux");
	variant[0] = '\0';
	if (uname(&u) != 0) {
		snprintf(arch, 16, "unknown");
		return;
	}
	const char *m = u.machine;
	if (strcmp(m, "x86_64") == 0)
		snprintf(arch, 16, "amd64");
	else if (strcmp(m, "aarch64") == 0) {
		snprintf(arch, 16, "arm64");
		snprintf(variant, 16, "v8");
	} else if (strncmp(m, "armv7", 5) == 0) {
		snprintf(arch, 16, "arm");
		snprintf(variant, 16, "v7");
	} else if (strcmp(m, "i686") == 0 || strcmp(m, "i386") == 0)
		snprintf(arch, 16, "386");
	else
		snprintf(arch, 16, "%.15s", m);
}

ota_err ota_oci_platform_parse(const char *s, char os[16], char arch[16], char variant[16],
                               ota_error *err)
{
	os[0] = arch[0] = variant[0] = '\0';
	if (s == NULL)
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "platform", "missing");
	const char *a = strchr(s, '/');
	if (a == NULL || a == s || (size_t)(a - s) >= 16)
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "platform",
		                     "'%.60s' is not os/arch", s);
	const char *v = strchr(a + 1, '/');
	size_t al = v != NULL ? (size_t)(v - a - 1) : strlen(a + 1);
	if (al == 0 || al >= 16 || (v != NULL && (strlen(v + 1) == 0 || strlen(v + 1) >= 16 ||
	                                          strchr(v + 1, '/') != NULL)))
		return ota_error_set(err, OTA_ERR_OCI_PLAN_INVALID, "platform",
		                     "'%.60s' is not os/arch[/variant]", s);
	snprintf(os, 16, "%.*s", (int)(a - s), s);
	snprintf(arch, 16, "%.*s", (int)al, a + 1);
	if (v != NULL)
		snprintf(variant, 16, "%s", v + 1);
	return OTA_OK;
}

/* Runs argv (argv[0] looked up in PATH); stderr captured. */
static ota_err run_tool(const char *const *argv, char *er, size_t cap, int *status,
                        ota_error *err)
{
	int p[2];
	er[0] = '\0';
	if (pipe2(p, O_CLOEXEC) != 0)
		return ota_error_set(err, OTA_ERR_IO, "pipe", "%s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return ota_error_set(err, OTA_ERR_IO, "fork", "%s", strerror(errno));
	}
	if (pid == 0) {
		int dn = open("/dev/null", O_RDWR);
		if (dn < 0 || dup2(dn, 0) < 0 || dup2(dn, 1) < 0 || dup2(p[1], 2) < 0)
			_exit(127);
		syscall(SYS_close_range, 3U, ~0U, 0U);
		char *const *av;
		memcpy(&av, &argv, sizeof av); /* execvp takes char *const[] */
		execvp(argv[0], av);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	for (;;) {
		char tmp[1024];
		ssize_t r = read(p[0], tmp, sizeof tmp);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t take = (size_t)r;
		if (n + 1 < cap) {
			if (take > cap - 1 - n)
				take = cap - 1 - n;
			memcpy(er + n, tmp, take);
			n += take;
			er[n] = '\0';
		}
	}
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return ota_error_set(err, OTA_ERR_IO, "waitpid", "%s", strerror(errno));
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return OTA_OK;
}

ota_err ota_oci_image_import(const char *store, const char *src, const char *name,
                             ota_error *err)
{
	if (store == NULL || src == NULL || name == NULL || name[0] == '\0')
		return ota_error_set(err, OTA_ERR_USAGE, "image import", "store, source and name needed");
	if (strncmp(src, "docker-archive:", 15) != 0 && strncmp(src, "oci-archive:", 12) != 0 &&
	    strncmp(src, "oci:", 4) != 0)
		return ota_error_set(err, OTA_ERR_USAGE, src,
		                     "source must be docker-archive:, oci-archive: or oci:");
	for (const char *p = name; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      *p == '.' || *p == '_' || *p == '-' || *p == ':' || *p == '/'))
			return ota_error_set(err, OTA_ERR_USAGE, name, "image name has invalid characters");
	mkdir(store, 0755);
	char dst[2048];
	int n = snprintf(dst, sizeof dst, "oci:%s:%s", store, name);
	if (n < 0 || (size_t)n >= sizeof dst)
		return ota_error_set(err, OTA_ERR_USAGE, store, "path too long");
	const char *argv[] = {"skopeo", "--insecure-policy", "copy", "--quiet", src, dst, NULL};
	char er[2048];
	int st = 0;
	ota_err rc = run_tool(argv, er, sizeof er, &st, err);
	if (rc != OTA_OK)
		return rc;
	if (st != 0)
		return ota_error_set(err, OTA_ERR_OCI_IMAGE_TOOL, src, "skopeo copy exit %d: %.400s", st,
		                     er);
	return OTA_OK;
}

static ota_err read_json(const char *path, json_t **out, ota_error *err)
{
	uint8_t *b = NULL;
	size_t n = 0;
	ota_err rc = ota_file_read(path, OTA_OCI_MAX_IMAGE_JSON_BYTES, &b, &n, err);
	if (rc != OTA_OK)
		return rc;
	rc = ota_json_parse(ota_bytes_make(b, n), out, err);
	free(b);
	return rc;
}

/* label names the blob in errors when its digest is missing ("config.digest") */
static ota_err read_blob(const char *store, const char *digest, const char *label, json_t **out,
                         ota_error *err)
{
	if (digest == NULL || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71 ||
	    strspn(digest + 7, "0123456789abcdef") != 64)
		return ota_error_set(err, OTA_ERR_OCI_IMAGE_NOT_FOUND,
		                     digest != NULL && digest[0] != '\0' ? digest : label,
		                     "digest is not sha256");
	char p[2048];
	snprintf(p, sizeof p, "%s/blobs/sha256/%s", store, digest + 7);
	/* content addressing: the blob must hash to its digest */
	uint8_t *b = NULL;
	size_t n = 0;
	ota_err rc = ota_file_read(p, OTA_OCI_MAX_IMAGE_JSON_BYTES, &b, &n, err);
	if (rc != OTA_OK)
		return rc;
	char id[OTA_ID_LEN + 1];
	rc = ota_sha256_id(ota_bytes_make(b, n), id);
	if (rc == OTA_OK && strcmp(id, digest) != 0)
		rc = ota_error_set(err, OTA_ERR_ID_MISMATCH, digest, "blob content does not match digest");
	if (rc == OTA_OK)
		rc = ota_json_parse(ota_bytes_make(b, n), out, err);
	free(b);
	return rc;
}

/*
 * src (UTF-8; NULL: "") into dst, cut at a character boundary when too long:
 * a cut inside a character would make the evidence JSON fail to build, and
 * a platform mismatch would then lose its evidence.
 */
static void copy_utf8(char *dst, size_t cap, const char *src)
{
	size_t n = src != NULL ? strlen(src) : 0;
	if (n >= cap) {
		n = cap - 1;
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	if (n > 0)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

static bool variant_eq(const char *arch, const char *a, const char *b)
{
	if (strcmp(a, b) == 0)
		return true;
	/* arm64: "" and "v8" name the same platform */
	if (strcmp(arch, "arm64") == 0 && ((a[0] == '\0' && strcmp(b, "v8") == 0) ||
	                                   (b[0] == '\0' && strcmp(a, "v8") == 0)))
		return true;
	return false;
}

ota_err ota_oci_image_resolve(const char *store, const char *name,
                              const ota_oci_platform *declared, const char *cache_dir,
                              char **rootfs_out, json_t **evidence_out, ota_error *err)
{
	*rootfs_out = NULL;
	if (evidence_out != NULL)
		*evidence_out = NULL;
	char p[2048];
	snprintf(p, sizeof p, "%s/index.json", store);
	json_t *index = NULL, *manifest = NULL, *config = NULL;
	ota_error ie; /* the cause goes into the message: one code returned and recorded */
	ota_error_clear(&ie);
	ota_err rc = read_json(p, &index, &ie);
	if (rc != OTA_OK)
		return ota_error_set(err, OTA_ERR_OCI_IMAGE_NOT_FOUND, store,
		                     "no OCI layout index (%s: %.160s)", ota_err_name(rc), ie.what);
	const char *mdigest = NULL;
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(index, "manifests"), i, d)
	{
		const char *ref = json_string_value(json_object_get(
			json_object_get(d, "annotations"), "org.opencontainers.image.ref.name"));
		if (ref != NULL && strcmp(ref, name) == 0)
			mdigest = json_string_value(json_object_get(d, "digest"));
	}
	if (mdigest == NULL) {
		json_decref(index);
		return ota_error_set(err, OTA_ERR_OCI_IMAGE_NOT_FOUND, name, "not in store %s", store);
	}
	char hos[16], harch[16], hvar[16];
	ota_oci_host_platform(hos, harch, hvar);
	const char *dos = declared != NULL && declared->os != NULL ? declared->os : hos;
	const char *darch = declared != NULL && declared->architecture != NULL
	                            ? declared->architecture
	                            : harch;
	const char *dvar = declared != NULL && declared->os != NULL
	                           ? (declared->variant != NULL ? declared->variant : "")
	                           : hvar;
	char mdig[72];
	if (strlen(mdigest) >= sizeof mdig) {
		/* never truncated into the valid digest it starts with */
		json_decref(index);
		return ota_error_set(err, OTA_ERR_OCI_IMAGE_NOT_FOUND, "manifests[].digest",
		                     "digest is not sha256");
	}
	snprintf(mdig, sizeof mdig, "%s", mdigest);
	json_decref(index);
	rc = read_blob(store, mdig, "manifests[].digest", &manifest, err);
	if (rc != OTA_OK)
		return rc;
	const char *cdigest = json_string_value(json_object_get(json_object_get(manifest, "config"),
	                                                        "digest"));
	rc = read_blob(store, cdigest, "config.digest", &config, err);
	json_decref(manifest);
	if (rc != OTA_OK)
		return rc;
	/* Image volumes: a runtime would mount fresh writable storage there,
	 * outside the plan. Refused with their control name. */
	json_t *vols = json_object_get(json_object_get(config, "config"), "Volumes");
	if (json_object_size(vols) > 0) {
		const char *first = json_object_iter_key(json_object_iter(vols));
		ota_err vrc = ota_error_set(err, OTA_ERR_OCI_POLICY_UNSUPPORTED, "image.volumes",
		                            "%s declares volume %s; oci_local mounts no image volumes",
		                            name, first != NULL ? first : "?");
		json_decref(config);
		return vrc;
	}
	char ios[32], iarch[32], ivar[32];
	copy_utf8(ios, sizeof ios, json_string_value(json_object_get(config, "os")));
	copy_utf8(iarch, sizeof iarch, json_string_value(json_object_get(config, "architecture")));
	copy_utf8(ivar, sizeof ivar, json_string_value(json_object_get(config, "variant")));
	json_decref(config);
	config = NULL;
	bool ok = strcmp(ios, dos) == 0 && strcmp(iarch, darch) == 0 &&
	          variant_eq(darch, ivar, dvar) && strcmp(dos, hos) == 0 &&
	          strcmp(darch, harch) == 0 && variant_eq(harch, dvar, hvar);
	json_t *ev = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, "
	                       "s:{s:s, s:s, s:s}, s:b}",
	                       "kind", "ota.platform_check/v1", "image", name, "manifest", mdig,
	                       "declared", "os", dos, "architecture", darch, "variant", dvar,
	                       "image_platform", "os", ios, "architecture", iarch, "variant", ivar,
	                       "host", "os", hos, "architecture", harch, "variant", hvar, "ok", ok);
	json_decref(config);
	if (!ok) {
		if (evidence_out != NULL)
			*evidence_out = ev;
		else
			json_decref(ev);
		return ota_error_set(err, OTA_ERR_OCI_PLATFORM_MISMATCH, name,
		                     "image %s/%s%s%s, declared %s/%s%s%s, host %s/%s%s%s", ios, iarch,
		                     ivar[0] ? "/" : "", ivar, dos, darch, dvar[0] ? "/" : "", dvar, hos,
		                     harch, hvar[0] ? "/" : "", hvar);
	}
	/* Unpack once per manifest digest. */
	const char *cache = cache_dir != NULL ? cache_dir : "/var/cache/ota/rootfs";
	{
		char tmp[1024];
		snprintf(tmp, sizeof tmp, "%s", cache);
		for (char *q = tmp + 1; *q != '\0'; q++)
			if (*q == '/') {
				*q = '\0';
				mkdir(tmp, 0755);
				*q = '/';
			}
		mkdir(tmp, 0755);
	}
	char dir[1200], done[1300], rootfs[1300];
	snprintf(dir, sizeof dir, "%s/%s", cache, mdig + 7);
	snprintf(done, sizeof done, "%s/.ota-complete", dir);
	snprintf(rootfs, sizeof rootfs, "%s/rootfs", dir);
	struct stat st;
	if (stat(done, &st) != 0) {
		char tmpdir[1300], img[2300];
		snprintf(tmpdir, sizeof tmpdir, "%s.tmp-%ld", dir, (long)getpid());
		snprintf(img, sizeof img, "%s:%s", store, name);
		const char *argv[] = {"umoci", "unpack", "--image", img, tmpdir, NULL};
		char er[2048];
		int status = 0;
		rc = run_tool(argv, er, sizeof er, &status, err);
		if (rc == OTA_OK && status != 0)
			rc = ota_error_set(err, OTA_ERR_OCI_IMAGE_TOOL, name, "umoci unpack exit %d: %.400s",
			                   status, er);
		if (rc == OTA_OK) {
			/* mount points the runtime would otherwise create in the rootfs */
			static const char *const dirs[] = {"workspace", "proc", "sys", "dev", "tmp"};
			for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
				char q[1400];
				snprintf(q, sizeof q, "%s/rootfs/%s", tmpdir, dirs[k]);
				mkdir(q, 0755);
			}
			char marker[1400];
			snprintf(marker, sizeof marker, "%s/.ota-complete", tmpdir);
			int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
			if (fd >= 0)
				close(fd);
			if (rename(tmpdir, dir) != 0 && stat(done, &st) != 0)
				rc = ota_error_set(err, OTA_ERR_IO, dir, "rename: %s", strerror(errno));
		}
		if (rc != OTA_OK) {
			json_decref(ev);
			return rc;
		}
	}
	*rootfs_out = strdup(rootfs);
	if (*rootfs_out == NULL) {
		json_decref(ev);
		return OTA_ERR_NOMEM;
	}
	if (evidence_out != NULL)
		*evidence_out = ev;
	else
		json_decref(ev);
	return OTA_OK;
}

ota_err ota_oci_image_list(const char *store, json_t **out, ota_error *err)
{
	*out = NULL;
	char p[2048];
	snprintf(p, sizeof p, "%s/index.json", store);
	json_t *index = NULL;
	ota_error ie;
	ota_error_clear(&ie);
	ota_err rc = read_json(p, &index, &ie);
	if (rc != OTA_OK)
		return ota_error_set(err, OTA_ERR_OCI_IMAGE_NOT_FOUND, store,
		                     "no OCI layout index (%s: %.160s)", ota_err_name(rc), ie.what);
	json_t *arr = json_array();
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(index, "manifests"), i, d)
	{
		const char *ref = json_string_value(json_object_get(
			json_object_get(d, "annotations"), "org.opencontainers.image.ref.name"));
		const char *dg = json_string_value(json_object_get(d, "digest"));
		if (ref != NULL && dg != NULL)
			json_array_append_new(arr, json_pack("{s:s, s:s}", "name", ref, "digest", dg));
	}
	json_decref(index);
	if (arr == NULL)
		return OTA_ERR_NOMEM;
	*out = arr;
	return OTA_OK;
}
