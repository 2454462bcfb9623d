/*
 * ota/policy.h - upstream Ota's ota.yaml (version 1) to the canonical,
 * provider-neutral SandboxPolicy (an ordered segment graph), restriction
 * overlays and their meet, capability descriptors and the one fail-closed
 * admission function shared by dry-run and real runs.
 *
 * Identities (DESIGN.md section 3) are "sha256:" + hex(SHA-256(JCS(obj)))
 * over objects with "kind": "ota.<name>/v1". No provider name enters a
 * canonical or effective policy; the target platform is inside both.
 *
 * Ownership: handles are new (caller frees with the matching _free, which
 * accepts NULL); returned const char * are borrowed from their handle;
 * returned json_t * are new references (json_decref) unless said borrowed.
 */
#ifndef OTA_POLICY_H
#define OTA_POLICY_H

#include <jansson.h>

#include "ota/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ota_contract ota_contract;
typedef struct ota_overlay ota_overlay;
typedef struct ota_policy ota_policy;

/* ---- platform ---- */

/* A platform as OCI names it; variant may be "" (none). */
typedef struct ota_platform {
	char os[32];
	char architecture[32];
	char variant[32];
} ota_platform;

/*
 * Parses "os/architecture[/variant]" (architecture normalised: x86_64 ->
 * amd64, aarch64 -> arm64). policy_platform_invalid otherwise.
 */
OTA_API OTA_NODISCARD ota_err ota_platform_parse(const char *s, ota_platform *out, ota_error *err);
/* The platform this process runs on (uname), for native lanes. */
OTA_API void ota_platform_host(ota_platform *out);

/* ---- contract ---- */

/*
 * Loads and validates an ota.yaml. name labels errors ("ota.yaml" ->
 * "ota.yaml:12:7"). Refuses: YAML syntax, duplicate keys, alias bombs,
 * too deep / too large documents, unknown keys (contract_unknown_key),
 * wrong types and values, dangling references, malformed runtime boundaries
 * (absolute paths, '..', protected/writable overlaps, contradictory
 * destination constraints), cycles, a task reused across workflow phases and
 * incompatible workflow/task boundary values. *out new; NULL on failure.
 */
OTA_API OTA_NODISCARD ota_err ota_contract_load(ota_bytes yaml, const char *name,
                                                ota_contract **out, ota_error *err);
OTA_API void ota_contract_free(ota_contract *c);

/* Identity of the raw bytes (contract snapshot) and of the normalised
 * contract (ota.contract/v1: independent of formatting, order, comments). */
OTA_API const char *ota_contract_snapshot_identity(const ota_contract *c);
OTA_API const char *ota_contract_identity(const ota_contract *c);
/* The normalised contract as JSON (borrowed). */
OTA_API const json_t *ota_contract_json(const ota_contract *c);
OTA_API const char *ota_contract_project(const ota_contract *c);
OTA_API size_t ota_contract_task_count(const ota_contract *c);
/* i-th task name in document order (borrowed). */
OTA_API const char *ota_contract_task_name(const ota_contract *c, size_t i);
OTA_API size_t ota_contract_workflow_count(const ota_contract *c);
OTA_API const char *ota_contract_workflow_name(const ota_contract *c, size_t i);
/* workflows.default, or NULL. */
OTA_API const char *ota_contract_default_workflow(const ota_contract *c);
/* Summary JSON of one task (kind, depends_on, safe_for_agent, ...). NULL if unknown. */
OTA_API json_t *ota_contract_task_json(const ota_contract *c, const char *task);
OTA_API json_t *ota_contract_workflow_json(const ota_contract *c, const char *workflow);

/* ---- restriction overlays ---- */

typedef enum { OTA_OVERLAY_ORG_POLICY = 0, OTA_OVERLAY_FILE = 1 } ota_overlay_source;

/*
 * Loads a restriction overlay from an org policy (.ota/org-policy.yaml) or an
 * overlay file: the block policies.sandbox {filesystem, network}, same field
 * names as runtime_boundary, all optional, unknown keys refused. For an org
 * policy without policies.sandbox, *out is NULL and OTA_OK is returned (no
 * restriction); for an overlay file, policy_overlay_missing. The overlay's
 * identity binds the authority snapshot identity (of the whole normalised
 * policy file) and the restriction.
 */
OTA_API OTA_NODISCARD ota_err ota_overlay_load(ota_bytes yaml, const char *name,
                                               ota_overlay_source source, ota_overlay **out,
                                               ota_error *err);
OTA_API void ota_overlay_free(ota_overlay *o);
OTA_API const char *ota_overlay_identity(const ota_overlay *o);
OTA_API const char *ota_overlay_authority_identity(const ota_overlay *o);
/* The identified overlay object (borrowed). */
OTA_API const json_t *ota_overlay_json(const ota_overlay *o);

/* ---- canonical and effective policy ---- */

typedef enum { OTA_LANE_TASK = 0, OTA_LANE_WORKFLOW = 1 } ota_lane_kind;

typedef struct ota_policy_options {
	/* The platform native lanes target (normally ota_platform_host). */
	ota_platform native_platform;
} ota_policy_options;

/*
 * Resolves the selected closure of a task (depends_on, aggregate members,
 * hooks) or of a workflow (prepare, setup, run, attach in order) and
 * compiles the canonical SandboxPolicy: ordered segments, typed edges,
 * per-segment identities, the target platform. Then derives the effective
 * policy as the per-segment meet with the overlays (any order; sorted by
 * identity; may be none). *out new.
 * Errors: policy_unknown_lane, policy_cycle, policy_task_in_two_phases,
 * policy_scope_conflict, policy_overlay_widens, policy_meet_incomparable,
 * too_deep (closure nesting over OTA_MAX_CLOSURE_DEPTH).
 * The policy borrows c (c must outlive *out); overlays may be freed
 * right after this call.
 */
OTA_API OTA_NODISCARD ota_err ota_policy_compile(const ota_contract *c, ota_lane_kind kind,
                                                 const char *name, const ota_policy_options *o,
                                                 const ota_overlay *const *overlays,
                                                 size_t noverlays, ota_policy **out,
                                                 ota_error *err);
OTA_API void ota_policy_free(ota_policy *p);

OTA_API const char *ota_policy_canonical_identity(const ota_policy *p);
OTA_API const char *ota_policy_effective_identity(const ota_policy *p);
/* Borrowed JSON: canonical (ota.sandbox_policy/v1), effective
 * (ota.effective_sandbox_policy/v1). */
OTA_API const json_t *ota_policy_canonical_json(const ota_policy *p);
OTA_API const json_t *ota_policy_effective_json(const ota_policy *p);
OTA_API size_t ota_policy_segment_count(const ota_policy *p);
/* Borrowed: id ("task:<name>"), canonical and effective segment identity. */
OTA_API const char *ota_policy_segment_id(const ota_policy *p, size_t i);
OTA_API const char *ota_policy_segment_canonical_identity(const ota_policy *p, size_t i);
OTA_API const char *ota_policy_segment_effective_identity(const ota_policy *p, size_t i);
/* true when any segment carries an authoritative runtime-owned control. */
OTA_API bool ota_policy_has_authoritative_controls(const ota_policy *p);

/* ---- capability descriptors (plain data that providers fill) ---- */

typedef enum {
	OTA_CAP_UNSUPPORTED = 0,
	OTA_CAP_ADVISORY = 1,
	OTA_CAP_ENFORCED = 2
} ota_cap_state;

/* Runtime controls a provider may enforce; names are the JSON keys. */
typedef enum {
	OTA_CTL_FS_READ_ONLY_ROOT = 0,   /* "filesystem.repo_root.read_only" */
	OTA_CTL_FS_WRITABLE_PATHS,       /* "filesystem.writable_paths" */
	OTA_CTL_FS_PROTECTED_PATHS,      /* "filesystem.protected_paths" */
	OTA_CTL_FS_PROTECTED_UNDER_WRITABLE, /* "filesystem.protected_paths_under_writable" */
	OTA_CTL_FS_ISOLATED_PATHS,       /* "filesystem.managed_isolated_paths" */
	OTA_CTL_NET_EXTERNAL_DENY,       /* "network.external_connectivity.deny" */
	OTA_CTL_NET_TARGET_ALLOWLIST,    /* "network.target_allowlist" */
	OTA_CTL_NET_DESTINATION,         /* "network.destination_constraints" */
	OTA_CTL_NET_SERVICE_NETWORKS,    /* "network.inherited_service_network" */
	OTA_CTL_SECRET_BINDING,          /* "secret.binding" */
	OTA_CTL_PROCESS_ISOLATION,       /* "process.isolation" */
	OTA_CTL_LIFECYCLE_CLEANUP,       /* "lifecycle.cleanup" */
	/*
	 * "network.external_connectivity.allow": the boundary can grant broad
	 * external connectivity, which a lane with network default allow (or
	 * without any network control) asks for. Added after the first
	 * descriptors: in descriptor JSON (and so in its identity) only when not
	 * unsupported, so a descriptor that does not declare it keeps its identity
	 * and refuses such lanes (fail closed).
	 */
	OTA_CTL_NET_EXTERNAL_ALLOW,
	OTA_CTL_COUNT
} ota_control;

OTA_API const char *ota_control_name(ota_control c);

#define OTA_CAP_MAX_PLATFORMS 8

typedef struct ota_capability_descriptor {
	char target[64];          /* "oci_local" */
	char adapter_version[64]; /* "ota-oci-local-v1" */
	ota_platform platforms[OTA_CAP_MAX_PLATFORMS];
	size_t nplatforms;
	ota_cap_state controls[OTA_CTL_COUNT];
	/* execution truth the target can honour without changing it */
	bool backend_native, backend_container, backend_remote;
	bool lifecycle_ephemeral, lifecycle_persistent;
	bool kind_run, kind_script, kind_command, kind_aggregate, kind_typed; /* typed: prepare/action/launch/compose */
	bool requires_declared_platform;
	bool requires_read_only_root;
	bool pre_boundary_actions;
	/* after_failure and after_always hooks: the target's runner selects a
	 * segment by the outcome of the one it hooks (runs it after a failure,
	 * skips an after_failure hook after success). false (the default, and
	 * oci_local's): such a lane is refused (execution.hook_condition). */
	bool failure_hooks;
} ota_capability_descriptor;

/*
 * Parses a descriptor JSON (see docs/policy.md). A "target_platforms" of
 * "host" is replaced by *host. policy_descriptor_invalid on any unknown
 * control, state or field.
 */
OTA_API OTA_NODISCARD ota_err ota_capability_descriptor_parse(ota_bytes json,
                                                              const ota_platform *host,
                                                              ota_capability_descriptor *out,
                                                              ota_error *err);
/* Identified JSON (ota.capability_descriptor/v1); new. */
OTA_API json_t *ota_capability_descriptor_json(const ota_capability_descriptor *d);
OTA_API OTA_NODISCARD ota_err ota_capability_descriptor_identity(
	const ota_capability_descriptor *d, char out[OTA_ID_LEN + 1], ota_error *err);

/*
 * The descriptors shipped as data with the toolkit (policy/descriptors/),
 * by target name ("oci_local"); NUL-terminated JSON, static; NULL if none.
 */
OTA_API const char *ota_policy_builtin_descriptor(const char *target);

/* ---- admission ---- */

typedef struct ota_admission_request {
	bool agent;                   /* --agent */
	const char *requested_target; /* --sandbox-target, or NULL */
	const ota_capability_descriptor *descriptors;
	size_t ndescriptors;
} ota_admission_request;

/*
 * The one admission function (dry-run and real runs). Order: agent
 * admission (every closure task declared safe_for_agent) before any sandbox
 * evaluation; then target resolution (explicit, or in agent mode with
 * authoritative runtime controls exactly one compatible enforcing target)
 * and fail-closed evaluation of every segment's effective policy against
 * the descriptor. *out (new) is upstream's sandbox_admission object plus
 * our identities; *admitted tells the answer. Returns OTA_OK whenever a
 * decision was made (admitted or refused); other codes are failures.
 */
OTA_API OTA_NODISCARD ota_err ota_policy_admit(const ota_policy *p, const ota_admission_request *r,
                                               json_t **out, bool *admitted, ota_error *err);

#ifdef __cplusplus
}
#endif
#endif
