/*
 * ota/runner.h - the execution chokepoint for oci_local: an admitted
 * effective policy (policy/) is mapped segment by segment onto oci_local
 * plans (provider-oci/) and run in order, with a transition record between
 * segments (the previous container terminated and removed before the next
 * is applied), and a receipt whose status is derived from the evidence.
 *
 * Ownership: option pointers are borrowed; json_t results are new.
 */
#ifndef OTA_RUNNER_H
#define OTA_RUNNER_H

#include <jansson.h>

#include "ota/common.h"
#include "ota/key.h"
#include "ota/limits.h"
#include "ota/nonce.h"
#include "ota/oci.h"
#include "ota/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ota_runner_opts {
	const char *repo;         /* contract directory, mounted at /workspace */
	const char *image_store;  /* NULL: OTA_OCI_DEFAULT_IMAGE_STORE */
	const char *rootfs_cache; /* NULL: OTA_OCI_DEFAULT_ROOTFS_CACHE */
	const char *rootfs;       /* prepared rootfs (the rootfs: extension): replaces the image */
	int64_t timeout_seconds;  /* per segment; 0: none */
	ota_oci_run_opts oci;     /* runtime, lease db, state dir, cancel, output
	                           * (on_initial is the runner's own) */
	/*
	 * Signing (optional): the capability, initial application, transition
	 * and terminal application records are each signed as COSE_Sign1 by
	 * runner_key (kid in the protected header) over an attestation payload
	 * (ota/admission.h) whose eat_nonce is a fresh challenge issued by, and
	 * then consumed in, nonces; body is the record's identity. The initial
	 * record is signed before the task starts; a signing failure refuses the
	 * run. runner_key NULL: records stay unsigned.
	 */
	const ota_key *runner_key;
	ota_nonce_store *nonces;
	const char *issuer;     /* iss and challenge issuer; NULL: "runner:local" */
	const char *trust_root; /* trust-root identity bound into payloads; NULL: "none" */
	/*
	 * Orphans: leases of dead runners that a segment finalized before it
	 * took its own. Each cleanup record (with runner_key, signed as
	 * ota_runner_sign_cleanup signs it and carrying it as "attestation")
	 * is handed to on_orphan with the signing's outcome (OTA_OK also
	 * without a key); it is not part of this run's receipt (it belongs to
	 * another transaction). NULL: not reported.
	 */
	void (*on_orphan)(void *ctx, const json_t *finalized, ota_err signing);
	void *on_orphan_ctx;
	/*
	 * Why the receipt's "revision" or "worktree" is null (each may be
	 * NULL: not reported): set to the error of ota_runner_repo_revision or
	 * ota_runner_worktree_id, cleared when the member was recorded or not
	 * tried (no worktree without a revision).
	 */
	ota_error *revision_error;
	ota_error *worktree_error;
} ota_runner_opts;

/* One effective segment mapped onto an oci_local plan. */
typedef struct ota_runner_plan ota_runner_plan;

/*
 * Maps a segment onto a plan: execution, body and services come from the
 * canonical segment (ota.sandbox_policy_segment/v1), the runtime boundary
 * and target platform from the effective one (whose canonical_identity must
 * name the canonical segment; identity_mismatch otherwise), both borrowed: body run/script -> sh -lc BODY, command -> exe
 * args (cwd relative to /workspace); aggregate -> no process; filesystem
 * repo_root_mode / writable_paths / protected_paths; network default deny ->
 * a fresh loopback-only namespace; the image resolved in the store against
 * the segment's target platform (the platform check is kept as evidence).
 * Refuses (oci_policy_unsupported) what oci_local cannot apply exactly:
 * another backend than container, a lifecycle other than ephemeral, network
 * allow or no network control, no filesystem control, targeted egress,
 * isolated paths, inherited service networks, pre-boundary actions, other
 * body kinds. *out new.
 */
OTA_API OTA_NODISCARD ota_err ota_runner_plan_new(const json_t *canonical_segment,
                                                  const json_t *effective_segment,
                                                  const ota_runner_opts *o,
                                                  ota_runner_plan **out, ota_error *err);
OTA_API void ota_runner_plan_free(ota_runner_plan *p);
/* The plan (borrowed), or NULL when the segment starts no process (aggregate). */
OTA_API const ota_oci_plan *ota_runner_plan_oci(const ota_runner_plan *p);
/* The platform check record (borrowed), or NULL. */
OTA_API const json_t *ota_runner_plan_platform_check(const ota_runner_plan *p);

/* Hex digits of the longest commit id (SHA-256 repositories; SHA-1: 40). */
#define OTA_RUNNER_REVISION_MAX 64

/*
 * The commit id the repository's HEAD resolves to (runner/revision.c), read
 * without running git: REPO/.git/HEAD, the loose ref it names (symbolic refs
 * followed at most OTA_MAX_GIT_SYMREF_DEPTH times) or .git/packed-refs, each
 * opened beneath REPO/.git without following any symlink, each within its
 * cap (ota/limits.h). out: 40 or 64 lowercase hex digits and a NUL, "" on
 * failure. Errors: not_found (no REPO/.git; where ".git/HEAD" or a ref name:
 * no HEAD or an unborn branch), path_symlink (.git or a ref is a symlink),
 * not_a_directory (.git is a file: a linked worktree or submodule, whose
 * "gitdir:" points outside the repository), unsupported (malformed content,
 * a ref name git does not write, the reftable backend, too many symbolic
 * refs), too_large, not_regular_file, io_error, usage (repo NULL).
 */
OTA_API OTA_NODISCARD ota_err ota_runner_repo_revision(const char *repo,
                                                       char out[OTA_RUNNER_REVISION_MAX + 1],
                                                       ota_error *err);

/*
 * The two parsers of ota_runner_repo_revision, on bytes (the file access
 * stays in it; fuzz_git_revision fuzzes these and the whole resolver).
 *
 * ota_git_ref_parse: one HEAD or loose ref file (at most
 * OTA_MAX_GIT_REF_FILE_BYTES, else too_large): "OID" (40 or 64 lowercase
 * hex) or "ref: NAME" (a ref name git writes, under refs/), then at most one
 * "\n". Sets exactly one of oid (the commit id) and target (the ref named);
 * the other is "". unsupported otherwise (where: the caller's file name).
 *
 * ota_git_packed_refs_find: the object id of refname in a packed-refs file
 * (at most OTA_MAX_GIT_PACKED_REFS_BYTES): a "# ..." header on the first
 * line only, "OID NAME" entries, each optionally followed by one "^OID" peel
 * line, every line terminated, every object id of one length, refname listed
 * once. not_found when it is not listed, unsupported when anything is
 * malformed (even after the entry), too_large. oid is "" on failure.
 */
OTA_API OTA_NODISCARD ota_err ota_git_ref_parse(const uint8_t *b, size_t n, const char *where,
                                                char oid[OTA_RUNNER_REVISION_MAX + 1],
                                                char target[OTA_MAX_GIT_REFNAME_BYTES],
                                                ota_error *err);
OTA_API OTA_NODISCARD ota_err ota_git_packed_refs_find(const uint8_t *b, size_t n,
                                                       const char *refname,
                                                       char oid[OTA_RUNNER_REVISION_MAX + 1],
                                                       ota_error *err);

/*
 * The git tree object id of REPO's work tree (runner/worktree.c): what
 * `git add -A && git write-tree` would give if nothing were ignored,
 * computed without running git, hex_len (40: SHA-1, 64: SHA-256) digits
 * long: REPO/.git, .ota/archives and .ota/cleanup left out, regular files
 * (mode 100755 when the owner may execute them) and symlinks (not
 * followed) as blobs, empty directories left out, a directory holding .git
 * as a gitlink to the commit its HEAD resolves to (a submodule's .git file
 * only when it points into REPO/.git/modules), once the directory's files
 * are found to be that commit's tree (ota_git_commit_tree). Equal to `git rev-parse
 * REV^{tree}` exactly when the work tree holds commit REV's files and
 * nothing else. cancel (may be NULL): the caller's SIGINT/SIGTERM flag,
 * checked at every entry and every 256 KiB read (oci_interrupted once set).
 * out: the id and a NUL, "" on failure. Errors: unsupported
 * (a FIFO, socket or device; a file that changed while it was hashed; a
 * gitlink that does not resolve, or whose directory does not hold its
 * commit's files), too_large (OTA_MAX_WORKTREE_ENTRIES,
 * OTA_MAX_WORKTREE_BYTES, OTA_MAX_WORKTREE_DEPTH), not_found, io_error,
 * usage, out_of_memory; those of ota_runner_repo_revision for a gitlink.
 */
OTA_API OTA_NODISCARD ota_err ota_runner_worktree_id(const char *repo, size_t hex_len,
                                                     volatile sig_atomic_t *cancel,
                                                     char out[OTA_RUNNER_REVISION_MAX + 1],
                                                     ota_error *err);

/*
 * The parser of a submodule's .git file for ota_runner_worktree_id, on
 * bytes (fuzz_git_revision): "gitdir: " then exactly depth "../" (one per
 * component of the submodule's path), then ".git/modules/NAME" (NAME: one
 * or more components, none empty, "." or "..", no control byte), then at
 * most one "\n". rel: ".git/modules/NAME", relative to the repository.
 * unsupported otherwise, too_large over OTA_MAX_GIT_REF_FILE_BYTES.
 */
/*
 * The tree id (oid_len bytes into tree) of commit oid (oid_len: 20 for
 * SHA-1, 32 for SHA-256) in the object store of the git directory gitfd
 * (borrowed): an entry of a pack (index version 2; an index without its
 * pack passed over) or else a loose object, deltas resolved at most
 * OTA_MAX_GIT_DELTA_DEPTH deep, each object at most OTA_MAX_GIT_OBJECT_BYTES
 * inflated, OTA_MAX_GIT_PACKS indexes. budget (may be NULL: a budget of
 * OTA_MAX_GIT_INFLATE_BYTES for this call): the bytes its inflations may
 * still take, shared by a caller's lookups and lowered by each (too_large
 * once spent). The object found must hash to oid. Errors: not_found (not
 * in the store), unsupported
 * (malformed or lying store content, another index version, an object that
 * is not a commit, a store with alternates that does not hold it),
 * too_large, io_error, usage, out_of_memory.
 *
 * ota_git_pack_commit_tree: the same in one pack pair (idxfd, packfd) only
 * (fuzz_git_object). ota_git_delta_apply: a git delta applied to base (*out
 * new; its result at most OTA_MAX_GIT_OBJECT_BYTES). ota_git_commit_parse_tree:
 * the tree a commit object's bytes start with ("tree HEX\n").
 */
OTA_API OTA_NODISCARD ota_err ota_git_commit_tree(int gitfd, const uint8_t *oid, size_t oid_len,
                                                  uint64_t *budget, uint8_t tree[32],
                                                  ota_error *err);
OTA_API OTA_NODISCARD ota_err ota_git_pack_commit_tree(int idxfd, int packfd, const uint8_t *oid,
                                                       size_t oid_len, uint8_t tree[32],
                                                       ota_error *err);
OTA_API OTA_NODISCARD ota_err ota_git_delta_apply(const uint8_t *base, size_t base_len,
                                                  const uint8_t *delta, size_t delta_len,
                                                  uint8_t **out, size_t *out_len, ota_error *err);
OTA_API OTA_NODISCARD ota_err ota_git_commit_parse_tree(const uint8_t *b, size_t n,
                                                        size_t oid_len, uint8_t tree[32],
                                                        ota_error *err);

OTA_API OTA_NODISCARD ota_err ota_git_gitdir_parse(const uint8_t *b, size_t n, const char *where,
                                                   unsigned depth,
                                                   char rel[OTA_MAX_GIT_REFNAME_BYTES],
                                                   ota_error *err);

/*
 * Runs every segment of p in order under oci_local. admission is the
 * admitted sandbox_admission object of ota_policy_admit (borrowed; its
 * identities are bound into the receipt): anything but an oci_local
 * admission (decision admitted, provider_evaluation admitted for oci_local)
 * of p's effective policy is refused before anything is prepared, with no
 * receipt (sandbox_admission_refused, identity_mismatch), and so is a run
 * of a checkout another run holds (oci_checkout_busy: an exclusive flock on
 * the repository directory, held until this returns). Segments stop at the first one
 * that does not end enforced with exit status 0. *receipt_out (new, also on
 * failure once execution was attempted) is an ota.receipt/v1 object whose
 * sandbox_policy.status is derived from the segments' terminal evidence
 * (ota_archive_lane_status); a lane stopped by an error before its last
 * segment ran counts the segments it never reached as not_started
 * (enforcement_lost after a start, all_segments_ran false, the error in
 * "error"), never enforced_through_completion;
 * its "revision" is the commit id of REPO/.git's HEAD read before anything
 * is prepared (ota_runner_repo_revision), or null when none resolves; its
 * "worktree" the git tree id of the repository's files read right after it
 * (ota_runner_worktree_id, as long as the revision), or null when there is
 * no revision or the work tree cannot be described;
 * *exit_status is the first non-zero task exit status (or 0).
 * Returns OTA_OK when every segment ran enforced (whatever the exit status).
 */
OTA_API OTA_NODISCARD ota_err ota_runner_run(const ota_policy *p, const json_t *admission,
                                             const ota_runner_opts *o, json_t **receipt_out,
                                             int *exit_status, ota_error *err);

/*
 * Signs one record of an `ota cleanup` report (an ota.application/v1 of phase
 * cleanup, as ota_oci_cleanup returns it in "finalized") as a COSE_Sign1 of
 * kind cleanup with o->runner_key, against a fresh challenge from o->nonces
 * that is consumed before the record is acknowledged; txn and boundary are the
 * record's own txn and container_id. *att_out (new) has the shape of a
 * receipt's attestation entry (kind, identity, record_identity, boundary,
 * cose_sign1, challenge). Errors: usage (no key or nonce store), the nonce
 * store's and the signer's errors.
 */
OTA_API OTA_NODISCARD ota_err ota_runner_sign_cleanup(const ota_runner_opts *o,
                                                      const json_t *record, json_t **att_out,
                                                      ota_error *err);

#ifdef __cplusplus
}
#endif
#endif
