/*
 * ota/archive.h - ota.archive/v1: one JSON document that carries everything
 * needed to re-verify a run offline (DESIGN.md section 7; docs/archive.md,
 * docs/schemas/archive.schema.json).
 *
 * The writer (attest/, target ota_attest) turns a runner receipt (ota/runner.h)
 * plus the contract bytes, overlays, selection and trust-root chain into an
 * archive whose receipt is signed by the runner (COSE_Sign1, payload =
 * JCS(receipt)). The verifier (verify/, target ota_verify; never attest/)
 * re-derives the policy from the embedded contract with policy/, verifies
 * every signature with keys of the trust-root chain judged at acceptance
 * time, checks challenges, reconciles every identity and derives the status
 * itself.
 *
 * Ownership: inputs are borrowed; outputs marked new are the caller's.
 */
#ifndef OTA_ARCHIVE_H
#define OTA_ARCHIVE_H

#include <jansson.h>

#include "ota/common.h"
#include "ota/key.h"
#include "ota/limits.h"
#include "ota/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OTA_ARCHIVE_KIND "ota.archive/v1"

/* One restriction overlay as embedded: the policy file's exact bytes. */
typedef struct ota_archive_overlay_src {
	ota_bytes bytes;
	const char *name;          /* label for errors ("org-policy.yaml") */
	ota_overlay_source source; /* org policy or overlay file */
} ota_archive_overlay_src;

/* What the writer needs (all borrowed). */
typedef struct ota_archive_input {
	ota_bytes contract;                 /* ota.yaml bytes exactly as run */
	const char *contract_name;          /* label only (not embedded) */
	const ota_archive_overlay_src *overlays;
	size_t noverlays;
	ota_lane_kind lane_kind;            /* task or workflow */
	const char *lane;                   /* task or workflow name */
	bool agent;                         /* --agent */
	const char *sandbox_target;         /* --sandbox-target or NULL */
	ota_platform native_platform;       /* what native lanes targeted */
	const ota_bytes *trust_chain;       /* snapshots, ascending versions (may be 0) */
	size_t ntrust;
	/*
	 * The runner's receipt (ota.receipt/v1). Its "attestations" (each with
	 * cose_sign1 and challenge) and "evidence" move to the archive's
	 * top level; the signed receipt keeps their identities in order.
	 */
	const json_t *receipt;
	/* Acceptances (COSE_Sign1 bytes) of external attestations, any order. */
	const ota_bytes *acceptances;
	size_t nacceptances;
	const ota_key *runner_key;          /* signs the receipt; NULL: unsigned */
	int64_t signed_at;                  /* the runner's time of signing */
} ota_archive_input;

/*
 * Builds the archive. *out new (free()), NUL-terminated JSON text; *out_len
 * excludes the NUL. Errors: usage (missing input), archive_malformed (a
 * receipt without the runner's members), io and crypto errors of signing.
 */
OTA_API OTA_NODISCARD ota_err ota_archive_build(const ota_archive_input *in, char **out,
                                                size_t *out_len, ota_error *err);

/* ---- parsing (strict; verify/) ---- */

typedef struct ota_archive ota_archive;

/*
 * Parses an archive strictly: at most OTA_MAX_ARCHIVE_BYTES (checked before
 * parsing), one JSON document without duplicate members, depth at most
 * OTA_MAX_JSON_DEPTH, kind ota.archive/v1, every member known and typed,
 * base64 members canonical (standard alphabet, padded), identities shaped
 * "sha256:<64 hex>", integers within +-(2^53-1), counts capped. *out new
 * (ota_archive_free). Errors: archive_too_large, archive_malformed,
 * archive_kind, archive_base64, too_deep.
 */
OTA_API OTA_NODISCARD ota_err ota_archive_parse(ota_bytes in, ota_archive **out, ota_error *err);
OTA_API void ota_archive_free(ota_archive *a);
/* Counts of the parsed archive. */
OTA_API size_t ota_archive_attestation_count(const ota_archive *a);
OTA_API size_t ota_archive_acceptance_count(const ota_archive *a);
OTA_API size_t ota_archive_evidence_count(const ota_archive *a);
/* The parsed document (borrowed). */
OTA_API const json_t *ota_archive_json(const ota_archive *a);

/* ---- verification (verify/) ---- */

typedef struct ota_archive_verify_opts {
	ota_bytes pinned;           /* the pinned trust-root snapshot (required) */
	/*
	 * The trust domain's chain as the verifier knows it now: the
	 * snapshots after the pinned one, in version order (n_current of them,
	 * none: not used). It must continue the pinned snapshot under the
	 * rotation rules, and agree with the archive's embedded chain at every
	 * version both hold (trust_equivocation). When it is newer than the
	 * archive's, every key the archive uses (the receipt's runner, each
	 * attestation's signer, each acceptance's verifier) is judged in its
	 * latest snapshot as well, at the same time and for the same role: a
	 * key revoked since is trust_key_revoked there, so an archive signed
	 * with a stolen key and bound to the chain before its revocation is
	 * refused, while one signed before the revocation still verifies.
	 */
	const ota_bytes *current;
	size_t n_current;
	bool have_at;               /* judge the latest snapshot's expiry at `at` */
	int64_t at;                 /* else at the receipt's signed_at */
	const char *require_status; /* NULL: none; else one of the five statuses (else usage) */
	/*
	 * sqlite file recording used challenges (NULL: none). It must exist
	 * (ota_archive_ledger_prepare, checked before anything is verified):
	 * a missing one is archive_ledger_missing unless ledger_init, which
	 * makes a new ledger only where no file is. Written only when everything
	 * else reconciles, and the verification passes only when that COMMIT
	 * succeeded; a file that is not a ledger of schema version 1 is
	 * database_error and left as it was.
	 */
	const char *ledger;
	bool ledger_init;
	size_t max_failures;        /* 0: 64 */
	/*
	 * > 0: the receipt's signed_at must lie within max_age seconds before
	 * the verifier's time (`at` when have_at, else the system clock) and
	 * at most 300 s after it (archive_stale). Runner-owned records are
	 * judged at times the runner itself recorded, so a stolen runner key,
	 * revoked since, could sign a backdated archive; a merge gate that
	 * only takes fresh archives closes that window.
	 */
	int64_t max_age;
	/*
	 * NULL: none. Else a commit id (40 or 64 lowercase hex; else usage) the
	 * receipt's "revision" must equal: one that records another, none (null)
	 * or predates the member is archive_revision_mismatch.
	 */
	const char *require_revision;
	/*
	 * NULL: none. Else a git tree id (40 or 64 lowercase hex; else usage)
	 * the receipt's "worktree" must equal (`git rev-parse REV^{tree}`: the
	 * run saw exactly commit REV's files): one that records another, none
	 * (null) or predates the member is archive_worktree_mismatch.
	 */
	const char *require_worktree;
	/*
	 * NULL: the repository dimension of principals' scopes is not judged
	 * (the archive names no repository). Else the repository the gate
	 * stands for ("acme/widgets", 1..OTA_MAX_NAME_BYTES printable bytes,
	 * else usage): the runner that signed the receipt and every issuer of
	 * an attestation must be scoped for it (trust_scope_mismatch), as they
	 * always are for the archive's lane and provider target.
	 */
	const char *repo;
	/*
	 * true: the run must have succeeded, its derived exit status 0 and
	 * every segment of the lane run (archive_task_failed): a status of
	 * enforced_through_completion says the boundary held, not that the
	 * task passed.
	 */
	bool require_success;
	/*
	 * What a merge gate requires of the run itself, each NULL (0): none.
	 * require_lane: the selection's lane, "NAME" (a task or a workflow) or
	 * "task:NAME" / "workflow:NAME" (that kind only); 1..OTA_MAX_NAME_BYTES
	 * bytes, else usage. Another lane is archive_lane_not_required.
	 * require_overlays: n_require_overlays (at most OTA_MAX_OVERLAYS)
	 * restriction-overlay identities (sha256:<64 hex>, else usage), each of
	 * which must be among the overlays re-derived from the embedded bytes
	 * (an org policy the run left out: archive_overlay_not_applied).
	 * require_effective: the identity the re-derived effective policy must
	 * have (`ota policy show TASK --json`, effective_identity: the contract,
	 * the lane, the overlays and the target platform at once), else
	 * archive_effective_not_required.
	 */
	const char *require_lane;
	const char *const *require_overlays;
	size_t n_require_overlays;
	const char *require_effective;
} ota_archive_verify_opts;

/*
 * The ledger at path, before anything is verified. OK when path (symlinks
 * followed: the path is the operator's) is a regular file of at least one
 * byte. Otherwise: archive_ledger_missing for no file there (also a
 * directory on the path that does not exist, or a symlink to nothing) and
 * for a zero-byte file (no ledger ever is: a `touch`ed or truncated path);
 * not_regular_file for a directory, FIFO, socket or device; io_error when
 * it cannot be looked at. With init, a path where no file is (and no
 * symlink) gets a new, empty ledger of schema version 1: made under a
 * temporary name beside it, complete and synced, then linked in place
 * only if the name is still free (link(2); renameat2 RENAME_NOREPLACE
 * where links are not supported), so processes initialising one path at
 * once all end up on the one ledger that won, never on a partial file;
 * an existing file is taken as it is (and checked as above). Errors of
 * the creation: io_error (no such directory, no permission),
 * database_error.
 */
OTA_API OTA_NODISCARD ota_err ota_archive_ledger_prepare(const char *path, bool init,
                                                         ota_error *err);

/*
 * The lane status (receipt.sandbox_policy.status) from the worst status of
 * the lane's segments (refused > enforcement_lost >
 * enforcement_unknown_after_interruption > not_started >
 * enforced_through_completion; NULL: no segment) and whether execution
 * started: the one rule the runner writes and ota-verify archive derives.
 * Once execution started the lane is enforced_through_completion (every
 * segment was), enforcement_unknown_after_interruption, or else
 * enforcement_lost: a later segment that was refused or never started after
 * an earlier one ran ends the lane enforcement_lost, never not_started or
 * refused. Before a start: refused, or not_started (also for no segment).
 * Never NULL; a static string.
 */
OTA_API const char *ota_archive_lane_status(const char *worst, bool execution_started);

/*
 * The receipt's sandbox_policy.runtime_controls for policy p, over every
 * process segment (aggregate segments run nothing and are left out): for
 * each control (filesystem.repo_root, filesystem.writable_paths,
 * filesystem.protected_paths, network.default, in that order) one entry per
 * distinct required value, in the order the segments first require it,
 * {id, required, application, segments: [segment ids]}; application
 * "enforced" when enforced, else "not_proved". A lane whose segments have
 * different boundaries thus lists each boundary with the segments it
 * holds for, never the first segment's for all. The one rule the runner
 * writes and ota-verify archive derives. NULL only without memory.
 */
OTA_API json_t *ota_archive_runtime_controls(const ota_policy *p, bool enforced);

/* The verdict: every failed check by its error name, the derived status. */
typedef struct ota_archive_report ota_archive_report;

/*
 * Verifies an archive. Returns OTA_OK only when everything reconciles;
 * otherwise the first failure's code (every failure is in the report).
 * *report (new, may be NULL on allocation failure) is filled in both cases.
 */
OTA_API OTA_NODISCARD ota_err ota_archive_verify(ota_bytes archive,
                                                 const ota_archive_verify_opts *o,
                                                 ota_archive_report **report, ota_error *err);
/*
 * ota_archive_verify of *archive (len bytes, malloc'd), which the call takes:
 * freed as soon as it is parsed (so the text is not held beside its parsed
 * form while everything is checked: ota-verify archive), or on any earlier
 * return; *archive is NULL on return. The same checks and answers.
 */
OTA_API OTA_NODISCARD ota_err ota_archive_verify_take(uint8_t **archive, size_t len,
                                                      const ota_archive_verify_opts *o,
                                                      ota_archive_report **report,
                                                      ota_error *err);
OTA_API void ota_archive_report_free(ota_archive_report *r);
/* Number of failed checks. */
OTA_API size_t ota_archive_report_failure_count(const ota_archive_report *r);
/* Code of the i-th failure (OTA_OK when out of range). */
OTA_API ota_err ota_archive_report_failure(const ota_archive_report *r, size_t i,
                                           const char **where, const char **what);
/* The status derived from the evidence ("" when not derivable). Borrowed. */
OTA_API const char *ota_archive_report_status(const ota_archive_report *r);
/* Number of COSE signatures verified (receipt, attestations, acceptances). */
OTA_API size_t ota_archive_report_signatures(const ota_archive_report *r);
/*
 * {"ok", "status", "failures": [{"code", "where", "message"}], "checks":
 * {...counts...}, "identities": {...}} as a new JSON object; "status" is the
 * derived status when ok, null when refused.
 */
OTA_API json_t *ota_archive_report_json(const ota_archive_report *r);

#ifdef __cplusplus
}
#endif
#endif
