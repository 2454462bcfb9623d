/* policy/internal.h - private types of the policy module. */
#ifndef OTA_POLICY_INTERNAL_H
#define OTA_POLICY_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "ota/policy.h"
#include "ytree.h"

/* ---- string pool: every string the model allocates lives here ---- */
typedef struct {
	char **v;
	size_t n, cap;
} pool;
char *pool_strdup(pool *p, const char *s);
char *pool_strndup(pool *p, const char *s, size_t n);
void *pool_alloc(pool *p, size_t n); /* zeroed */
void pool_free(pool *p);

/* growable array of borrowed strings */
typedef struct {
	const char **v;
	size_t n, cap;
} strv;
bool strv_push(strv *s, const char *x);
bool strv_has(const strv *s, const char *x);
void strv_free(strv *s);
void strv_sort_unique(strv *s);

/* ---- runtime_boundary / policies.sandbox ---- */
enum { RM_UNSET = 0, RM_READ_ONLY = 1, RM_WRITABLE = 2 };
enum { ND_UNSET = 0, ND_DENY = 1, ND_ALLOW = 2 };

typedef struct {
	const char *kind, *value, *shape;
	bool has_constraint;
	const char *c_kind, *c_posture, *c_enforcement, *pin_ref, *pin_freshness;
	strv c_values;
} otarget;

typedef struct {
	bool has_fs;
	int root;
	bool has_writable;
	strv writable;
	bool has_protected;
	strv protected_;
	bool has_net;
	int def;
	bool has_targets;
	otarget *targets;
	size_t ntargets, ctargets;
} boundary;

void boundary_free(boundary *b);
/* deep copy (strings are shared: they live in pools that outlive b) */
bool boundary_copy(boundary *dst, const boundary *src);
/* copies every string of b into pl (so b outlives the sources it was met with) */
bool boundary_intern(boundary *b, pool *pl);
/* parse a runtime_boundary-shaped map (node may be NULL: empty boundary) */
ota_err boundary_parse(const ydoc *d, const ynode *node, pool *pl, boundary *out, ota_error *err);
/* JSON of the boundary in the contract shape, canonical (sorted, explicit) */
json_t *boundary_to_json(const boundary *b);
/*
 * Applies restriction r (an overlay or a workflow runtime_boundary) to the
 * base boundary cur, in place: each family and field r states narrows cur,
 * an omitted one is neutral; a read_only root keeps only cur's declared
 * carve-outs. strict: refuses a restriction that states a wider value
 * (policy_overlay_widens). Refuses incomparable destination constraints
 * (policy_meet_incomparable) and an advisory_only constraint on an
 * authoritative destination of cur (policy_overlay_demotes). who names the
 * restriction in errors.
 */
ota_err boundary_meet(boundary *cur, const boundary *r, bool strict, const char *who,
                     ota_error *err);
/*
 * The lattice meet (greatest lower bound) of two boundaries that are each
 * the base restricted by one overlay: writable reach intersected, protection
 * united, the narrower root mode and network default, destination sets
 * intersected (one eliminated set is denial). Commutative, associative and
 * idempotent up to boundary_normalize; check boundary_comparable on every
 * pair first, so that no error depends on the order of the fold.
 */
ota_err boundary_glb(boundary *cur, const boundary *o, const char *who, ota_error *err);
/* policy_meet_incomparable / policy_overlay_demotes when a and b state one
 * destination in ways that cannot be conjoined. */
ota_err boundary_comparable(const boundary *a, const boundary *b, const char *who, ota_error *err);
/* canonical form: minimal sorted writable reach outside protection, sorted
 * protection and destinations, a read-only root with an explicit list. */
void boundary_normalize(boundary *b);
/* normalise a repo-relative path into the pool; errors name where */
ota_err path_normalize(const char *in, pool *pl, const char **out, const char *where, ota_error *err);
/* true when a == b or a lies inside b */
bool path_within(const char *a, const char *b);
/*
 * A set of paths for path_within against many: covers(a) looks up a and
 * each of its ancestors (a's prefixes ending before a '/'), so checking n
 * paths against m costs their lengths, not n * m path_within calls.
 * pathset_build false: out of memory (the callers then fall back to the
 * pairwise loop, with the same result).
 */
typedef struct {
	const char **slot;
	size_t cap;
} pathset;
bool pathset_build(pathset *s, const strv *v);
void pathset_free(pathset *s);
/* some b in s with path_within(a, b); proper: and b != a */
bool pathset_covers(const pathset *s, const char *a, bool proper);
/* the first i (in order) with some j such that path_within(a->v[i], b->v[j]),
 * and that first j; false when there is none */
bool paths_first_within(const strv *a, const strv *b, size_t *i_out, size_t *j_out);
/* classify whether b holds an authoritative runtime control */
bool boundary_authoritative(const boundary *b);

/* ---- contract model ---- */
typedef struct {
	const char *name;
	const ynode *node;
	const char *body_kind; /* run script command aggregate prepare action launch compose variants */
	const ynode *body;
	strv depends_on, after_success, after_failure, after_always, members, requires_services;
	bool safe_for_agent;
	const char *context;
	const char *mode; /* execution.default_mode (native|container|remote), or NULL */
	const char *mode_lifecycle; /* from execution.modes branch */
	bool has_rb;
	boundary rb;
	bool has_requirements, has_when_checks, has_prepare;
	const char *interaction;
	const ynode *effects;
	size_t index;
} otask;

typedef struct ocontext_s {
	const char *name;
	const ynode *node;
	const char *extends, *backend, *lifecycle, *image, *platform, *rootfs;
	strv compose, isolated;
	bool has_requirements;
	const struct ocontext_s *parent; /* the context extends names (set at load) */
} ocontext;

enum { PH_PREPARE = 0, PH_SETUP, PH_RUN, PH_ATTACH, PH_COUNT };

typedef struct {
	const char *name;
	const ynode *node;
	bool has_rb;
	boundary rb;
	const char *phase_task[PH_COUNT];
	bool phase_direct[PH_COUNT]; /* a phase given as a direct action, not a task */
	strv services;
	const char *intent;
} oworkflow;

struct ota_contract {
	ydoc *doc;
	pool pl;
	json_t *json;
	char snapshot_id[OTA_ID_LEN + 1];
	char contract_id[OTA_ID_LEN + 1];
	const char *project;
	const char *preferred, *lifecycle, *default_context, *image, *platform, *rootfs;
	strv supported;
	ocontext *contexts;
	size_t ncontexts;
	bool has_rb;
	boundary rb;
	otask *tasks;
	size_t ntasks;
	size_t *task_index; /* open-addressing hashes of task, context and workflow names */
	size_t task_index_cap;
	size_t *context_index;
	size_t context_index_cap;
	size_t *workflow_index;
	size_t workflow_index_cap;
	oworkflow *workflows;
	size_t nworkflows;
	const char *default_workflow;
	strv agent_safe_tasks, agent_writable, agent_protected;
	const char *agent_posture;
};

const otask *contract_task(const ota_contract *c, const char *name);
const ocontext *contract_context(const ota_contract *c, const char *name);
const oworkflow *contract_workflow(const ota_contract *c, const char *name);

/* compiles a lane for validation only (no JSON, no identities) */
ota_err policy_check_lane(const ota_contract *c, ota_lane_kind kind, const char *name,
                          ota_error *err);

/*
 * Field helpers shared with overlay parsing. y_str and y_strv read names,
 * identifiers and paths: a scalar that YAML types as a number, boolean or
 * null is contract_type, a control character yaml_control_character.
 * y_strv_text is y_strv for free text (command args): control characters
 * such as newlines are kept.
 */
ota_err y_expect(const ydoc *d, const ynode *n, yn_type t, const char *what, ota_error *err);
ota_err y_keys(const ydoc *d, const ynode *m, const char *const *allowed, const char *const *later,
               const char *what, ota_error *err);
ota_err y_str(const ydoc *d, const ynode *m, const char *key, bool required, const char **out,
              ota_error *err);
ota_err y_enum(const ydoc *d, const ynode *m, const char *key, const char *const *vals,
               const char **out, ota_error *err);
ota_err y_strv(const ydoc *d, const ynode *m, const char *key, strv *out, ota_error *err);
ota_err y_strv_text(const ydoc *d, const ynode *m, const char *key, strv *out, ota_error *err);
ota_err y_bool(const ydoc *d, const ynode *m, const char *key, bool *out, ota_error *err);

/* ---- compiled policy (shared by compile.c and admit.c) ---- */
typedef struct {
	const otask *t;
	const char *phase;
	const char *backend, *context, *lifecycle, *image, *rootfs, *interaction, *kind;
	ota_platform plat;
	const char *plat_source;
	int owner_phase;
	strv pre, nets, iso;
	boundary canon, eff;
	json_t *cjson, *ejson;
	char cid[OTA_ID_LEN + 1], eid[OTA_ID_LEN + 1];
} seg;

typedef struct {
	size_t src, dst;
	const char *cond;
	char id[OTA_ID_LEN + 1];
	json_t *json;
} edge;

/*
 * Edges ota_policy_admit visited looking for a segment's hooks (on_failure,
 * always), this thread: each hook edge once per evaluation of a descriptor,
 * never every edge for every segment (tests/unit/policy_test.c counts).
 */
extern _Thread_local size_t policy_hook_steps;

struct ota_policy {
	const ota_contract *c;
	ota_lane_kind kind;
	const char *name;
	seg *segs;
	size_t nsegs, csegs;
	edge *edges;
	size_t nedges, cedges;
	strv lane_pre;
	json_t *canon, *eff;
	char canon_id[OTA_ID_LEN + 1], eff_id[OTA_ID_LEN + 1];
	bool authoritative;
	pool pl;
};

#endif
