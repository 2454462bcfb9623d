/*
 * fuzz_oci_image: the OCI image layout JSON that oci_local reads from its
 * image store (provider-oci/image.c: index.json, then the manifest and the
 * config blobs, content-addressed), through ota_oci_image_resolve and
 * ota_oci_image_list. Images come from outside (skopeo copies them in), so
 * every byte of these documents is untrusted.
 *
 * Input: index, manifest and config text separated by NUL bytes. Before they
 * are written into a scratch store, "@M@" in the index becomes the
 * manifest's digest, "@C@" in the manifest the config's digest and "@A@" in
 * the config the host's architecture, so that mutations reach every check.
 * The rootfs cache already holds the manifest's unpacked marker: nothing is
 * ever unpacked (no umoci), the parsing is what runs.
 *
 * Invariants: a refusal names itself and leaves *rootfs_out NULL; a platform
 * mismatch keeps its evidence (ok false); a success is the host's platform,
 * its evidence says ok and names exactly the manifest digest the index
 * gives for the image; the listing never fails on a readable index.
 */
#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "ota/json.h"
#include "ota/oci.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fz:1"

static char g_dir[64], g_store[128], g_cache[128];
static char g_os[16], g_arch[16], g_var[16];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void cleanup(void)
{
	if (g_dir[0] != '\0')
		nftw(g_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(g_dir, sizeof g_dir, "/tmp/ota-fuzz-image-XXXXXX");
	FZ_CHECK(mkdtemp(g_dir) != NULL);
	atexit(cleanup);
	snprintf(g_store, sizeof g_store, "%s/store", g_dir);
	snprintf(g_cache, sizeof g_cache, "%s/cache", g_dir);
	char p[256];
	FZ_CHECK(mkdir(g_store, 0700) == 0 && mkdir(g_cache, 0700) == 0);
	snprintf(p, sizeof p, "%s/blobs", g_store);
	FZ_CHECK(mkdir(p, 0700) == 0);
	snprintf(p, sizeof p, "%s/blobs/sha256", g_store);
	FZ_CHECK(mkdir(p, 0700) == 0);
	ota_oci_host_platform(g_os, g_arch, g_var);
	return 0;
}

/* text with every `from` replaced by `to` (new) */
static char *replace(const uint8_t *p, size_t n, const char *from, const char *to, size_t *out_len)
{
	size_t fl = strlen(from), tl = strlen(to), count = 0;
	for (size_t i = 0; i + fl <= n; i++)
		if (memcmp(p + i, from, fl) == 0) {
			count++;
			i += fl - 1;
		}
	char *o = malloc(n + count * tl + 1);
	FZ_CHECK(o != NULL);
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		if (i + fl <= n && memcmp(p + i, from, fl) == 0) {
			memcpy(o + w, to, tl);
			w += tl;
			i += fl;
		} else {
			o[w++] = (char)p[i++];
		}
	}
	o[w] = '\0';
	*out_len = w;
	return o;
}

/* writes a blob under its digest; *digest receives "sha256:<hex>" */
static void put_blob(const char *text, size_t n, char digest[OTA_ID_LEN + 1], char *path,
                     size_t cap)
{
	FZ_CHECK(ota_sha256_id(ota_bytes_make(text, n), digest) == OTA_OK);
	snprintf(path, cap, "%s/blobs/sha256/%s", g_store, digest + 7);
	fz_write_file(path, text, n);
}

/* the digest the index gives for NAME (the last entry wins, as in image.c) */
static const char *index_digest(json_t *index)
{
	const char *dg = NULL;
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(index, "manifests"), i, d)
	{
		const char *ref = json_string_value(json_object_get(
			json_object_get(d, "annotations"), "org.opencontainers.image.ref.name"));
		if (ref != NULL && strcmp(ref, NAME) == 0)
			dg = json_string_value(json_object_get(d, "digest"));
	}
	return dg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 256 * 1024)
		return 0;
	const uint8_t *part[3] = {data, data + size, data + size};
	size_t len[3] = {size, 0, 0};
	for (int i = 0; i < 2; i++) {
		const uint8_t *z = memchr(part[i], 0, len[i]);
		if (z == NULL)
			break;
		part[i + 1] = z + 1;
		len[i + 1] = (size_t)(part[i] + len[i] - (z + 1));
		len[i] = (size_t)(z - part[i]);
	}
	size_t cl, ml, il;
	char cdig[OTA_ID_LEN + 1], mdig[OTA_ID_LEN + 1], cpath[256], mpath[256], p[256];
	char *config = replace(part[2], len[2], "@A@", g_arch, &cl);
	put_blob(config, cl, cdig, cpath, sizeof cpath);
	char *manifest = replace(part[1], len[1], "@C@", cdig, &ml);
	put_blob(manifest, ml, mdig, mpath, sizeof mpath);
	char *index = replace(part[0], len[0], "@M@", mdig, &il);
	snprintf(p, sizeof p, "%s/index.json", g_store);
	fz_write_file(p, index, il);
	/* the manifest counts as unpacked already */
	char done[256], mdir[256];
	snprintf(mdir, sizeof mdir, "%s/%s", g_cache, mdig + 7);
	snprintf(done, sizeof done, "%s/.ota-complete", mdir);
	FZ_CHECK(mkdir(mdir, 0700) == 0 || errno == EEXIST);
	fz_write_file(done, "", 0);

	char *rootfs = (char *)(uintptr_t)1;
	json_t *ev = NULL;
	ota_error e;
	ota_error_clear(&e);
	ota_err rc = ota_oci_image_resolve(g_store, NAME, NULL, g_cache, &rootfs, &ev, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(rootfs == NULL);
		if (rc == OTA_ERR_OCI_PLATFORM_MISMATCH) {
			/* a refusal on the platform keeps its evidence */
			FZ_CHECK(ev != NULL);
			FZ_CHECK(json_is_false(json_object_get(ev, "ok")));
		}
	} else {
		char want[300];
		snprintf(want, sizeof want, "%s/rootfs", mdir);
		FZ_CHECK(rootfs != NULL && strcmp(rootfs, want) == 0);
		FZ_CHECK(ev != NULL && json_is_true(json_object_get(ev, "ok")));
		const json_t *ip = json_object_get(ev, "image_platform");
		FZ_CHECK(strcmp(json_string_value(json_object_get(ip, "os")), g_os) == 0);
		FZ_CHECK(strcmp(json_string_value(json_object_get(ip, "architecture")), g_arch) == 0);
		/* the manifest is exactly the one the index names */
		json_t *ix = NULL;
		FZ_CHECK(ota_json_parse(ota_bytes_make(index, il), &ix, NULL) == OTA_OK);
		const char *dg = index_digest(ix);
		FZ_CHECK(dg != NULL && strcmp(dg, json_string_value(json_object_get(ev, "manifest"))) == 0);
		json_decref(ix);
		free(rootfs);
	}
	json_decref(ev);

	json_t *list = NULL;
	ota_error_clear(&e);
	rc = ota_oci_image_list(g_store, &list, &e);
	if (rc != OTA_OK)
		fz_refusal(rc, &e);
	else
		FZ_CHECK(json_is_array(list));
	json_decref(list);

	remove(done);
	remove(mdir);
	remove(cpath);
	remove(mpath);
	free(config);
	free(manifest);
	free(index);
	return 0;
}
