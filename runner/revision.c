/*
 * The repository revision a run was admitted at: the commit id REPO/.git's
 * HEAD resolves to, read by parsing .git/HEAD, the loose ref it names and
 * packed-refs ourselves, never by running git. The repository (and its
 * .git/config: core.fsmonitor, hooks, includes) is the task author's to
 * write, and `git rev-parse` reads that config, honours GIT_* variables and
 * follows a `gitdir:` file anywhere; here every file is opened beneath a
 * descriptor of REPO/.git with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 * (ota_file_read_beneath), each with a size cap, and nothing is executed.
 *
 * What is resolved: HEAD holding a commit id (detached), or "ref: refs/..."
 * naming a loose ref (itself possibly symbolic, at most
 * OTA_MAX_GIT_SYMREF_DEPTH hops) or an entry of packed-refs. What is not,
 * and leaves the revision unrecorded: no .git (not_found), a .git that is a
 * symlink or a file (a linked worktree's or submodule's "gitdir:" pointer,
 * which leads outside the repository), an unborn branch (not_found), the
 * reftable backend and anything malformed (unsupported), a file over its cap
 * (too_large).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "git_internal.h"
#include "ota/limits.h"
#include "ota/runner.h"

/* Length of the lowercase hex object id at s (40 or 64), 0 when none. */
static size_t oid_len(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
		i++;
	return i == 40 || i == 64 ? i : 0;
}

/*
 * A ref name git itself would write (git check-ref-format, strictly): under
 * refs/, components non-empty, not starting with '.' nor ending in ".lock",
 * no "..", "@{", control characters, space, ~ ^ : ? * [ \ or DEL.
 */
static bool refname_ok(const char *r, size_t n)
{
	if (n < 6 || n >= OTA_MAX_GIT_REFNAME_BYTES || strncmp(r, "refs/", 5) != 0 ||
	    r[n - 1] == '/' || r[n - 1] == '.')
		return false;
	size_t start = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || r[i] == '/') {
			size_t len = i - start;
			if (len == 0 || r[start] == '.' ||
			    (len >= 5 && memcmp(r + i - 5, ".lock", 5) == 0))
				return false;
			start = i + 1;
			continue;
		}
		unsigned char c = (unsigned char)r[i];
		if (c <= 0x20 || c == 0x7f || strchr("~^:?*[\\", c) != NULL)
			return false;
		if (c == '.' && i + 1 < n && r[i + 1] == '.')
			return false;
		if (c == '@' && i + 1 < n && r[i + 1] == '{')
			return false;
	}
	return true;
}

/* One line of HEAD or a loose ref: "OID" or "ref: NAME", then at most "\n". */
ota_err ota_git_ref_parse(const uint8_t *b, size_t n, const char *where,
                          char oid[OTA_RUNNER_REVISION_MAX + 1],
                          char target[OTA_MAX_GIT_REFNAME_BYTES], ota_error *err)
{
	oid[0] = target[0] = '\0';
	if (n > OTA_MAX_GIT_REF_FILE_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, where, "over %u bytes",
		                     OTA_MAX_GIT_REF_FILE_BYTES);
	if (n > 0 && b[n - 1] == '\n')
		n--;
	const char *s = (const char *)b;
	if (memchr(s, '\0', n) != NULL || memchr(s, '\n', n) != NULL)
		return ota_error_set(err, OTA_ERR_UNSUPPORTED, where, "not one line");
	if (n >= 5 && memcmp(s, "ref: ", 5) == 0) {
		if (!refname_ok(s + 5, n - 5))
			return ota_error_set(err, OTA_ERR_UNSUPPORTED, where,
			                     "names no ref git writes (reftable repositories "
			                     "point HEAD at refs/heads/.invalid)");
		memcpy(target, s + 5, n - 5);
		target[n - 5] = '\0';
		return OTA_OK;
	}
	size_t l = oid_len(s, n);
	if (l == 0 || l != n)
		return ota_error_set(err, OTA_ERR_UNSUPPORTED, where,
		                     "neither a commit id (40 or 64 lowercase hex) nor \"ref: refs/...\"");
	memcpy(oid, s, l);
	oid[l] = '\0';
	return OTA_OK;
}

/*
 * refname in packed-refs: "# pack-refs with: ..." on the first line only,
 * "OID NAME" lines and "^OID" peel lines after an entry, every object id of
 * one length (one hash algorithm); anything else is unsupported. not_found
 * when it is not listed.
 */
ota_err ota_git_packed_refs_find(const uint8_t *b, size_t n, const char *refname,
                                 char oid[OTA_RUNNER_REVISION_MAX + 1], ota_error *err)
{
	oid[0] = '\0';
	if (n > OTA_MAX_GIT_PACKED_REFS_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, ".git/packed-refs", "over %u bytes",
		                     OTA_MAX_GIT_PACKED_REFS_BYTES);
	const char *s = (const char *)b, *end = s + n;
	size_t rl = strlen(refname), hexlen = 0;
	bool found = false, prev_entry = false;
	ota_err rc = OTA_OK;
	for (size_t line = 0; s < end; line++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL) {
			rc = ota_error_set(err, OTA_ERR_UNSUPPORTED, ".git/packed-refs",
			                   "the last line is not terminated");
			break;
		}
		size_t len = (size_t)(nl - s);
		size_t l = oid_len(s, len);
		size_t pl = len >= 1 && s[0] == '^' ? oid_len(s + 1, len - 1) : 0;
		if (line == 0 && len >= 1 && s[0] == '#') {
			prev_entry = false;
		} else if (pl != 0 && pl == len - 1 && prev_entry && pl == hexlen) {
			prev_entry = false;
		} else if (l != 0 && (hexlen == 0 || l == hexlen) && len > l + 1 && s[l] == ' ' &&
		           refname_ok(s + l + 1, len - l - 1)) {
			hexlen = l;
			if (len - l - 1 == rl && memcmp(s + l + 1, refname, rl) == 0) {
				if (found) {
					rc = ota_error_set(err, OTA_ERR_UNSUPPORTED, ".git/packed-refs",
					                   "%s is listed twice", refname);
					break;
				}
				memcpy(oid, s, l);
				oid[l] = '\0';
				found = true;
			}
			prev_entry = true;
		} else {
			rc = ota_error_set(err, OTA_ERR_UNSUPPORTED, ".git/packed-refs",
			                   "line %zu is not \"OID REF\", \"^OID\" (object ids of one "
			                   "length) or a header",
			                   line + 1);
			break;
		}
		s = nl + 1;
	}
	if (rc == OTA_OK && !found)
		rc = ota_error_set(err, OTA_ERR_NOT_FOUND, refname,
		                   "the ref does not exist (an unborn branch)");
	if (rc != OTA_OK)
		oid[0] = '\0';
	return rc;
}

/* refname in .git/packed-refs; not_found when there is none. */
static ota_err packed_lookup(int gitfd, const char *refname, char *oid, ota_error *err)
{
	uint8_t *b = NULL;
	size_t n = 0;
	oid[0] = '\0';
	ota_err rc = ota_file_read_beneath(gitfd, ".git", "packed-refs", OTA_MAX_GIT_PACKED_REFS_BYTES,
	                                   &b, &n, err);
	if (rc == OTA_ERR_NOT_FOUND)
		return ota_error_set(err, OTA_ERR_NOT_FOUND, refname,
		                     "the ref does not exist (an unborn branch)");
	if (rc != OTA_OK)
		return rc;
	rc = ota_git_packed_refs_find(b, n, refname, oid, err);
	free(b);
	return rc;
}

static ota_err resolve(int gitfd, char out[OTA_RUNNER_REVISION_MAX + 1], ota_error *err)
{
	char oid[OTA_RUNNER_REVISION_MAX + 1], target[OTA_MAX_GIT_REFNAME_BYTES];
	char where[OTA_MAX_GIT_REFNAME_BYTES + 8] = ".git/HEAD";
	const char *rel = "HEAD";
	for (unsigned hop = 0; hop <= OTA_MAX_GIT_SYMREF_DEPTH; hop++) {
		uint8_t *b = NULL;
		size_t n = 0;
		ota_err rc = ota_file_read_beneath(gitfd, ".git", rel, OTA_MAX_GIT_REF_FILE_BYTES, &b,
		                                   &n, err);
		if (rc == OTA_ERR_NOT_FOUND && hop > 0) {
			/* not loose: packed (a packed ref is never symbolic) */
			ota_error_clear(err);
			return packed_lookup(gitfd, target, out, err);
		}
		if (rc != OTA_OK)
			return rc;
		rc = ota_git_ref_parse(b, n, where, oid, target, err);
		free(b);
		if (rc != OTA_OK)
			return rc;
		if (oid[0] != '\0') {
			memcpy(out, oid, strlen(oid) + 1);
			return OTA_OK;
		}
		snprintf(where, sizeof where, ".git/%s", target);
		rel = target;
	}
	return ota_error_set(err, OTA_ERR_UNSUPPORTED, where, "more than %u symbolic refs in a row",
	                     OTA_MAX_GIT_SYMREF_DEPTH);
}

ota_err ota_git_resolve_head(int gitfd, char out[OTA_RUNNER_REVISION_MAX + 1], ota_error *err)
{
	out[0] = '\0';
	ota_err rc = resolve(gitfd, out, err);
	if (rc != OTA_OK)
		out[0] = '\0';
	return rc;
}

/*
 * "gitdir: " + "../" x depth + ".git/modules/NAME" + at most one "\n": the
 * pointer `git submodule` writes into a submodule's .git file, leading back
 * to the outer repository's .git/modules. NAME: components of printable
 * bytes other than "/", none "." or "..".
 */
ota_err ota_git_gitdir_parse(const uint8_t *b, size_t n, const char *where, unsigned depth,
                             char rel[OTA_MAX_GIT_REFNAME_BYTES], ota_error *err)
{
	static const char pre[] = "gitdir: ", mods[] = ".git/modules/";
	rel[0] = '\0';
	if (n > OTA_MAX_GIT_REF_FILE_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, where, "more than %u bytes",
		                     OTA_MAX_GIT_REF_FILE_BYTES);
	if (n > 0 && b[n - 1] == '\n')
		n--;
	if (n < sizeof pre - 1 || memcmp(b, pre, sizeof pre - 1) != 0)
		return ota_error_set(err, OTA_ERR_UNSUPPORTED, where, "not a \"gitdir: \" pointer");
	size_t i = sizeof pre - 1;
	for (unsigned k = 0; k < depth; k++, i += 3)
		if (n - i < 3 || memcmp(b + i, "../", 3) != 0)
			return ota_error_set(err, OTA_ERR_UNSUPPORTED, where,
			                     "the gitdir pointer does not lead back to the repository's "
			                     ".git/modules (%u \"../\" expected)",
			                     depth);
	if (n - i <= sizeof mods - 1 || memcmp(b + i, mods, sizeof mods - 1) != 0)
		return ota_error_set(err, OTA_ERR_UNSUPPORTED, where,
		                     "the gitdir pointer does not lead into .git/modules");
	if (n - i >= OTA_MAX_GIT_REFNAME_BYTES)
		return ota_error_set(err, OTA_ERR_TOO_LARGE, where, "gitdir pointer too long");
	/* the components after .git/modules/ */
	size_t s = i + sizeof mods - 1, comp = s;
	for (size_t j = s; j <= n; j++) {
		if (j < n && b[j] != '/') {
			if (b[j] < 0x20 || b[j] == 0x7f)
				return ota_error_set(err, OTA_ERR_UNSUPPORTED, where,
				                     "control byte in the gitdir pointer");
			continue;
		}
		size_t cl = j - comp;
		if (cl == 0 || (cl == 1 && b[comp] == '.') ||
		    (cl == 2 && b[comp] == '.' && b[comp + 1] == '.'))
			return ota_error_set(err, OTA_ERR_UNSUPPORTED, where,
			                     "empty, \".\" or \"..\" component in the gitdir pointer");
		comp = j + 1;
	}
	memcpy(rel, b + i, n - i);
	rel[n - i] = '\0';
	return OTA_OK;
}

ota_err ota_runner_repo_revision(const char *repo, char out[OTA_RUNNER_REVISION_MAX + 1],
                                 ota_error *err)
{
	out[0] = '\0';
	if (repo == NULL)
		return ota_error_set(err, OTA_ERR_USAGE, "repo", "no repository");
	int rfd = open(repo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return ota_error_set(err, errno == ENOENT ? OTA_ERR_NOT_FOUND : OTA_ERR_IO, repo,
		                     "cannot open the repository: %s", strerror(errno));
	int gitfd = -1;
	ota_err rc = ota_dir_open_beneath(rfd, repo, ".git", 0, &gitfd, err);
	close(rfd);
	if (rc != OTA_OK)
		return rc;
	rc = ota_git_resolve_head(gitfd, out, err);
	close(gitfd);
	return rc;
}
