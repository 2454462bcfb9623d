/*
 * ota image import | list | resolve: the local OCI image layout store that
 * oci_local resolves `container.image` from (skopeo copies, umoci unpacks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ota/json.h"
#include "ota/oci.h"

static const char *image_usage =
	"ota image import SOURCE --name NAME [--store DIR] [--json]\n"
	"       ota image list [--store DIR] [--json]\n"
	"       ota image resolve NAME [--platform OS/ARCH[/VARIANT]] [--store DIR] [--cache DIR] [--json]\n"
	"  SOURCE: docker-archive:PATH | oci-archive:PATH | oci:DIR[:REF]";

static const char *default_store(void)
{
	const char *s = getenv("OTA_IMAGE_STORE");
	return s != NULL && s[0] != '\0' ? s : OTA_OCI_DEFAULT_IMAGE_STORE;
}

static int fail_json(bool json, const ota_error *e)
{
	if (json) {
		json_t *j = cli_error_json(e);
		cli_print_json(j);
		json_decref(j);
		return cli_error_exit(e);
	}
	return cli_fail("ota", e);
}

int cmd_image(int argc, char **argv)
{
	if (cli_help_asked())
		return cli_usage("ota", image_usage);
	if (argc < 2)
		return cli_usage("ota", image_usage);
	const char *sub = argv[1];
	const char *store = default_store(), *name = NULL, *pos = NULL, *platform = NULL;
	const char *cache = NULL;
	bool json = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;
		if (strcmp(a, "--json") == 0)
			json = true;
		else if (strcmp(a, "--store") == 0 && more)
			store = argv[++i];
		else if (strcmp(a, "--name") == 0 && more)
			name = argv[++i];
		else if (strcmp(a, "--platform") == 0 && more)
			platform = argv[++i];
		else if (strcmp(a, "--cache") == 0 && more)
			cache = argv[++i];
		else if (a[0] != '-' && pos == NULL)
			pos = a;
		else
			return cli_usage("ota", image_usage);
	}
	ota_error e;
	ota_error_clear(&e);
	if (strcmp(sub, "import") == 0) {
		if (pos == NULL || name == NULL)
			return cli_usage("ota", image_usage);
		if (ota_oci_image_import(store, pos, name, &e) != OTA_OK)
			return fail_json(json, &e);
		json_t *list = NULL;
		if (ota_oci_image_list(store, &list, &e) != OTA_OK)
			return fail_json(json, &e);
		const char *digest = NULL;
		size_t i;
		json_t *v;
		json_array_foreach(list, i, v) if (strcmp(json_string_value(json_object_get(v, "name")),
		                                          name) == 0) digest =
			json_string_value(json_object_get(v, "digest"));
		if (json) {
			json_t *j = json_pack("{s:b, s:s, s:s, s:s, s:s?}", "ok", 1, "store", store,
			                      "name", name, "source", pos, "digest", digest);
			cli_print_json(j);
			json_decref(j);
		} else {
			printf("imported %s as %s (%s)\n", pos, name, digest != NULL ? digest : "?");
		}
		json_decref(list);
		return CLI_OK;
	}
	if (strcmp(sub, "list") == 0) {
		json_t *list = NULL;
		if (ota_oci_image_list(store, &list, &e) != OTA_OK)
			return fail_json(json, &e);
		if (json) {
			cli_print_json(list);
		} else {
			size_t i;
			json_t *v;
			json_array_foreach(list, i, v)
				printf("%s\t%s\n", json_string_value(json_object_get(v, "name")),
				       json_string_value(json_object_get(v, "digest")));
		}
		json_decref(list);
		return CLI_OK;
	}
	if (strcmp(sub, "resolve") == 0) {
		if (pos == NULL)
			return cli_usage("ota", image_usage);
		char os[16], arch[16], var[16];
		ota_oci_platform decl = {NULL, NULL, NULL};
		if (platform != NULL) {
			if (ota_oci_platform_parse(platform, os, arch, var, &e) != OTA_OK)
				return fail_json(json, &e);
			decl.os = os;
			decl.architecture = arch;
			decl.variant = var;
		}
		char *rootfs = NULL;
		json_t *ev = NULL;
		ota_err rc = ota_oci_image_resolve(store, pos, &decl, cache, &rootfs, &ev, &e);
		if (json) {
			json_t *j = json_pack("{s:b, s:s?, s:O?}", "ok", rc == OTA_OK, "rootfs", rootfs,
			                      "platform_check", ev);
			if (rc != OTA_OK)
				json_object_set_new(j, "error", cli_error_json(&e));
			cli_print_json(j);
			json_decref(j);
		} else if (rc == OTA_OK) {
			printf("%s\n", rootfs);
		}
		json_decref(ev);
		free(rootfs);
		if (rc != OTA_OK)
			return json ? cli_error_exit(&e) : cli_fail("ota", &e);
		return CLI_OK;
	}
	return cli_usage("ota", image_usage);
}
