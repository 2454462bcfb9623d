/*
 * fuzz_platform: the two "os/architecture[/variant]" parsers, over one
 * NUL-terminated string (the input up to its first NUL byte):
 * ota_platform_parse (policy/: container.platform of a contract, descriptor
 * target_platforms, --native-platform) and ota_oci_platform_parse
 * (provider-oci/: `ota image --platform`).
 *
 * Invariants: a refusal names itself and leaves the outputs empty; what
 * parses has two or three non-empty components within their buffers, no
 * '/', and (policy) only [a-z0-9_.-]; formatting it back and parsing again
 * gives the same platform (normalisation is idempotent); what the policy
 * parser accepts, the OCI parser accepts with the same os and variant.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ota/oci.h"
#include "ota/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool is_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

static void component(const char *c, size_t cap, bool policy_charset)
{
	size_t n = strnlen(c, cap);
	FZ_CHECK(n < cap);
	FZ_CHECK(strchr(c, '/') == NULL);
	for (size_t i = 0; policy_charset && i < n; i++)
		FZ_CHECK((c[i] >= 'a' && c[i] <= 'z') || (c[i] >= '0' && c[i] <= '9') || c[i] == '_' ||
		         c[i] == '-' || c[i] == '.');
}

static void format(char *buf, size_t cap, const char *os, const char *arch, const char *variant)
{
	if (variant[0] != '\0')
		snprintf(buf, cap, "%s/%s/%s", os, arch, variant);
	else
		snprintf(buf, cap, "%s/%s", os, arch);
}

static bool policy_parse(const char *s, ota_platform *p)
{
	ota_error e;
	ota_error_clear(&e);
	memset(p, 0xa5, sizeof *p);
	ota_err rc = ota_platform_parse(s, p, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(rc == OTA_ERR_POLICY_PLATFORM);
		FZ_CHECK(is_zero(p, sizeof *p));
		return false;
	}
	FZ_CHECK(p->os[0] != '\0' && p->architecture[0] != '\0');
	component(p->os, sizeof p->os, true);
	component(p->architecture, sizeof p->architecture, true);
	component(p->variant, sizeof p->variant, true);
	char buf[128];
	ota_platform q;
	format(buf, sizeof buf, p->os, p->architecture, p->variant);
	FZ_CHECK(ota_platform_parse(buf, &q, NULL) == OTA_OK);
	FZ_CHECK(memcmp(p, &q, sizeof q) == 0);
	return true;
}

static bool oci_parse(const char *s, char os[16], char arch[16], char variant[16])
{
	ota_error e;
	ota_error_clear(&e);
	memset(os, 0xa5, 16);
	memset(arch, 0xa5, 16);
	memset(variant, 0xa5, 16);
	ota_err rc = ota_oci_platform_parse(s, os, arch, variant, &e);
	if (rc != OTA_OK) {
		fz_refusal(rc, &e);
		FZ_CHECK(rc == OTA_ERR_OCI_PLAN_INVALID);
		FZ_CHECK(os[0] == '\0' && arch[0] == '\0' && variant[0] == '\0');
		return false;
	}
	FZ_CHECK(os[0] != '\0' && arch[0] != '\0');
	component(os, 16, false);
	component(arch, 16, false);
	component(variant, 16, false);
	char buf[64], os2[16], arch2[16], var2[16];
	format(buf, sizeof buf, os, arch, variant);
	FZ_CHECK(ota_oci_platform_parse(buf, os2, arch2, var2, NULL) == OTA_OK);
	FZ_CHECK(strcmp(os, os2) == 0 && strcmp(arch, arch2) == 0 && strcmp(variant, var2) == 0);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *s = malloc(size + 1);
	FZ_CHECK(s != NULL);
	memcpy(s, data, size);
	s[size] = '\0';
	ota_platform p;
	char os[16], arch[16], variant[16];
	bool pok = policy_parse(s, &p);
	bool ook = oci_parse(s, os, arch, variant);
	if (pok && strlen(p.os) < 16 && strlen(p.architecture) < 16 && strlen(p.variant) < 16 &&
	    strlen(s) == strlen(p.os) + strlen(p.architecture) + strlen(p.variant) + 1 +
	                         (p.variant[0] != '\0')) {
		/* no architecture alias was normalised: the OCI parser reads the same */
		FZ_CHECK(ook);
		FZ_CHECK(strcmp(os, p.os) == 0 && strcmp(variant, p.variant) == 0);
	}
	free(s);
	return 0;
}
