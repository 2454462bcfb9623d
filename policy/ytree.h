/*
 * policy/ytree.h - private: a strict YAML reader over libyaml's event API.
 *
 * The tree is a DAG when the document uses aliases (an alias shares the
 * anchored node); every node lives in the document's arena and is freed
 * with it. Limits (ota/limits.h): bytes, depth, aliases, expanded nodes.
 * Refused: duplicate keys, non-scalar keys, merge keys ("<<"), more than one
 * document, unknown anchors, a NUL byte in any scalar and a control
 * character (C0, DEL, C1) in any mapping key (yaml_control_character).
 */
#ifndef OTA_POLICY_YTREE_H
#define OTA_POLICY_YTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ota/common.h"

typedef enum { YN_SCALAR, YN_SEQ, YN_MAP } yn_type;

typedef struct ynode {
	yn_type type;
	uint32_t line, col; /* 1-based */
	char *str;          /* scalar value, NUL-terminated */
	size_t len;
	bool plain;         /* unquoted scalar (typed by the YAML 1.1 core rules) */
	struct ynode **items; /* seq: n items; map: keys at 2i, values at 2i+1 */
	size_t n, cap;
	uint64_t weight;    /* nodes in the expanded subtree */
	uint64_t bytes;     /* scalar bytes in the expanded subtree (keys included) */
	unsigned height;    /* nesting levels of the expanded subtree (a scalar 0) */
} ynode;

typedef struct ydoc ydoc;

/* FNV-1a of n bytes (the policy module's name and path hashes). */
uint64_t yn_hash(const char *s, size_t n);

/*
 * Parses in (at most OTA_MAX_YAML_BYTES) into *out (new; ydoc_free).
 * name is used in error positions ("ota.yaml:3:5"). An empty document gives
 * a root of NULL.
 */
ota_err ydoc_parse(ota_bytes in, const char *name, ydoc **out, ota_error *err);
void ydoc_free(ydoc *d);
ynode *ydoc_root(const ydoc *d);
const char *ydoc_name(const ydoc *d);

/* Map lookup by key; NULL when absent (m may be NULL or a non-map). */
ynode *yn_get(const ynode *m, const char *key);
bool yn_is_null(const ynode *n);
/* Formats "name:line:col" of n into buf. */
void yn_where(const ydoc *d, const ynode *n, char *buf, size_t cap);

/*
 * true when n is a scalar that yn_to_json keeps a JSON string: quoted, or
 * plain and not null, a boolean or an integer (`run: 42` is not a string).
 */
bool yn_is_string(const ynode *n);
/* true when scalar n holds a C0 control character, DEL or a C1 control. */
bool yn_has_control(const ynode *n);

/* YAML node to JSON value (typed scalars); NULL on OOM. */
struct json_t;
struct json_t *yn_to_json(const ynode *n);

#endif
