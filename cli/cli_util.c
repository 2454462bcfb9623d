#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "ota/json.h"
#include "ota/limits.h"

int cli_exit_for(ota_err e)
{
	switch (e) {
	case OTA_OK:
		return CLI_OK;
	case OTA_ERR_USAGE:
	case OTA_ERR_IO:
	case OTA_ERR_NOT_FOUND:
	case OTA_ERR_KEY_FORMAT:
	case OTA_ERR_BAD_HEX:
	case OTA_ERR_TOO_LARGE:
	case OTA_ERR_ARCHIVE_LEDGER_MISSING:
	case OTA_ERR_TRUST_STATE_MISSING:
	case OTA_ERR_KEY_PERMISSIONS: /* the operator's file to fix: chmod, chown */
	case OTA_ERR_FILE_UNSAFE:
		return CLI_USAGE;
	case OTA_ERR_NOMEM:
	case OTA_ERR_INTERNAL:
	case OTA_ERR_CRYPTO:
	case OTA_ERR_DB:
		return CLI_INTERNAL;
	default:
		return CLI_REFUSED;
	}
}

int cli_verify_exit_for(ota_err e)
{
	return e == OTA_ERR_NOT_REGULAR ? CLI_USAGE : cli_exit_for(e);
}

static int g_named_argc;
static char **g_named_argv;

void cli_set_named(int argc, char **argv)
{
	g_named_argc = argc;
	g_named_argv = argv;
}

int cli_error_exit(const ota_error *e)
{
	if (e->code == OTA_ERR_NOT_REGULAR && e->where[0] != '\0')
		for (int i = 1; i < g_named_argc; i++)
			if (g_named_argv[i] != NULL && strcmp(g_named_argv[i], e->where) == 0)
				return CLI_USAGE;
	return cli_exit_for(e->code);
}

int cli_fail(const char *prog, const ota_error *e)
{
	fprintf(stderr, "%s: %s", prog, ota_err_name(e->code));
	if (e->where[0] != '\0')
		fprintf(stderr, ": %s", e->where);
	fprintf(stderr, ": %s\n", e->what[0] != '\0' ? e->what : ota_err_message(e->code));
	return cli_error_exit(e);
}

bool cli_help_asked(void)
{
	if (g_named_argc < 2)
		return false;
	const char *last = g_named_argv[g_named_argc - 1];
	return strcmp(last, "--help") == 0 || strcmp(last, "-h") == 0;
}

int cli_usage(const char *prog, const char *msg)
{
	if (cli_help_asked()) {
		printf("usage: %s\n", msg);
		return CLI_OK;
	}
	fprintf(stderr, "%s: usage: %s\n", prog, msg);
	return CLI_USAGE;
}

void cli_print_json(const json_t *v)
{
	char *s = ota_json_dumps(v, true);
	if (s == NULL) {
		fputs("{\"code\":\"out_of_memory\"}\n", stdout);
		return;
	}
	fputs(s, stdout);
	fputc('\n', stdout);
	free(s);
}

json_t *cli_error_json(const ota_error *e)
{
	json_t *j = json_pack("{s:b, s:s, s:s, s:s}", "ok", 0, "code", ota_err_name(e->code),
	                      "where", e->where, "message",
	                      e->what[0] != '\0' ? e->what : ota_err_message(e->code));
	/* a refusal about one control names it, as refusals[].control does */
	if (j != NULL && e->control[0] != '\0')
		json_object_set_new(j, "control", json_string(e->control));
	return j;
}

/* ---- the repository's own files (REPO/.ota/...) ---- */

static ota_err repo_open(const char *repo, int *fd, ota_error *e)
{
	/* the repository itself is the operator's choice (the contract's
	 * directory); everything below it is resolved beneath this descriptor */
	*fd = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*fd < 0)
		return ota_error_set(e, OTA_ERR_IO, repo, "cannot open the repository: %s",
		                     strerror(errno));
	return OTA_OK;
}

ota_err cli_contract_read(const char *file, uint8_t **buf, size_t *n, ota_error *e)
{
	*buf = NULL;
	*n = 0;
	char tmp[PATH_MAX], base[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s", file) >= (int)sizeof tmp ||
	    snprintf(base, sizeof base, "%s", file) >= (int)sizeof base)
		return ota_error_set(e, OTA_ERR_USAGE, file, "path too long");
	const char *name = basename(base);
	if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
	    strcmp(name, "/") == 0)
		return ota_error_set(e, OTA_ERR_USAGE, file, "names no file");
	int dfd = -1;
	ota_err rc = repo_open(dirname(tmp), &dfd, e);
	if (rc != OTA_OK)
		return rc;
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
	int fd = -1;
	for (int tries = 0; tries < 8; tries++) {
		fd = (int)syscall(SYS_openat2, dfd, name, &how, sizeof how);
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	int saved = errno;
	close(dfd);
	if (fd < 0) {
		if (saved == EXDEV || saved == ELOOP)
			return ota_error_set(e, OTA_ERR_PATH_SYMLINK, file,
			                     "is a symlink that leaves the contract's directory (the "
			                     "repository): not followed");
		return ota_error_set(e, OTA_ERR_IO, file, "cannot open: %s", strerror(saved));
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		saved = errno;
		close(fd);
		return ota_error_set(e, OTA_ERR_IO, file, "cannot stat: %s", strerror(saved));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return ota_error_set(e, OTA_ERR_NOT_REGULAR, file, "not a regular file; not read");
	}
	rc = ota_fd_read(fd, file, OTA_MAX_YAML_BYTES, buf, n, e);
	close(fd);
	return rc;
}

ota_err cli_repo_dir(const char *repo, const char *sub, bool create, int *out_fd, ota_error *e)
{
	*out_fd = -1;
	int fd = -1;
	ota_err rc = repo_open(repo, &fd, e);
	if (rc != OTA_OK)
		return rc;
	rc = ota_dir_open_beneath(fd, repo, sub, create ? OTA_BENEATH_CREATE : 0, out_fd, e);
	close(fd);
	return rc;
}

ota_err cli_repo_state_check(const char *repo, const char *const *subs, size_t n, ota_error *e)
{
	for (size_t i = 0; i < n; i++) {
		int fd = -1;
		ota_error le;
		ota_error_clear(&le);
		ota_err rc = cli_repo_dir(repo, subs[i], false, &fd, &le);
		if (fd >= 0)
			close(fd);
		if (rc == OTA_ERR_NOT_FOUND)
			continue; /* created (beneath, without symlinks) when first written */
		if (rc != OTA_OK) {
			if (e != NULL && e->code == OTA_OK)
				*e = le;
			return rc;
		}
	}
	return OTA_OK;
}

ota_err cli_repo_write(const char *repo, const char *sub, const char *name, ota_bytes data,
                       unsigned mode, char *shown, size_t cap, ota_error *e)
{
	snprintf(shown, cap, "%s/%s/%s", repo, sub, name);
	int dfd = -1;
	ota_err rc = cli_repo_dir(repo, sub, true, &dfd, e);
	if (rc != OTA_OK)
		return rc;
	rc = ota_file_write_atomic_at(dfd, name, data, mode, shown, e);
	close(dfd);
	return rc;
}

ota_err cli_org_policy_read(const char *dir, uint8_t **buf, size_t *n, char *shown, size_t cap,
                            ota_error *e)
{
	*buf = NULL;
	*n = 0;
	snprintf(shown, cap, "%s/" CLI_ORG_POLICY, dir);
	int fd = -1;
	ota_err rc = repo_open(dir, &fd, e);
	if (rc != OTA_OK)
		return rc;
	ota_error le;
	ota_error_clear(&le);
	rc = ota_file_read_beneath(fd, dir, CLI_ORG_POLICY, OTA_MAX_YAML_BYTES, buf, n, &le);
	close(fd);
	if (rc == OTA_ERR_NOT_FOUND)
		return OTA_OK; /* no org policy in this repository */
	if (rc != OTA_OK && e != NULL && e->code == OTA_OK)
		*e = le;
	return rc;
}
