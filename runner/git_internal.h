/* runner/git_internal.h - what revision.c lends worktree.c. */
#ifndef OTA_RUNNER_GIT_INTERNAL_H
#define OTA_RUNNER_GIT_INTERNAL_H

#include "ota/runner.h"

/* The commit id the HEAD of the git directory gitfd (borrowed) resolves to,
 * as ota_runner_repo_revision resolves REPO/.git's. */
ota_err ota_git_resolve_head(int gitfd, char out[OTA_RUNNER_REVISION_MAX + 1], ota_error *err);

#endif
