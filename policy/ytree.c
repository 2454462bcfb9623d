/* Strict YAML reader over libyaml's event API (see ytree.h). */
#include "ytree.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ota/limits.h"

struct ydoc {
	char *name;
	ynode *root;
	ynode **arena; /* every allocated node */
	size_t narena, carena;
};

typedef struct {
	char *name;
	ynode *node;
} anchor;

typedef struct {
	ydoc *d;
	ynode *stack[OTA_MAX_YAML_DEPTH + 1];
	size_t depth;
	anchor *anchors;
	size_t nanchors, canchors;
	uint64_t expanded, expanded_bytes;
	unsigned aliases;
	ota_error *err;
} builder;

static void where_mark(const ydoc *d, yaml_mark_t m, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s:%zu:%zu", d->name, m.line + 1, m.column + 1);
}

void yn_where(const ydoc *d, const ynode *n, char *buf, size_t cap)
{
	if (n == NULL)
		snprintf(buf, cap, "%s", d->name);
	else
		snprintf(buf, cap, "%s:%u:%u", d->name, n->line, n->col);
}

static ynode *node_new(builder *b, yn_type t, yaml_mark_t m)
{
	ydoc *d = b->d;
	if (d->narena == d->carena) {
		size_t nc = d->carena ? d->carena * 2 : 64;
		ynode **na = realloc(d->arena, nc * sizeof *na);
		if (na == NULL)
			return NULL;
		d->arena = na;
		d->carena = nc;
	}
	ynode *n = calloc(1, sizeof *n);
	if (n == NULL)
		return NULL;
	d->arena[d->narena++] = n;
	n->type = t;
	n->line = (uint32_t)(m.line + 1);
	n->col = (uint32_t)(m.column + 1);
	n->weight = 1;
	return n;
}

static bool push_item(ynode *p, ynode *c)
{
	if (p->n == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 8;
		ynode **ni = realloc(p->items, nc * sizeof *ni);
		if (ni == NULL)
			return false;
		p->items = ni;
		p->cap = nc;
	}
	p->items[p->n++] = c;
	return true;
}

/*
 * The first C0 control, DEL or C1 control (U+0080..U+009F in UTF-8) of s,
 * or the first invisible or bidirectional format character: U+061C, U+200B
 * to U+200F (zero-width, LRM, RLM), U+202A to U+202E (embeddings and
 * overrides), U+2060 to U+2064, U+2066 to U+2069 (isolates), U+FEFF. A name
 * holding one reads as another name, or reorders what follows it on a
 * terminal ("Trojan Source"). NULL when there is none; *cp (may be NULL)
 * the code point.
 */
static const char *control_char(const char *s, size_t n, unsigned *cp)
{
	for (size_t i = 0; i < n; i++) {
		const unsigned char *u = (const unsigned char *)s + i;
		unsigned c = u[0];
		bool bad = c < 0x20 || c == 0x7f;
		if (!bad && c == 0xc2 && i + 1 < n && u[1] >= 0x80 && u[1] <= 0x9f) {
			c = u[1];
			bad = true;
		} else if (!bad && c == 0xd8 && i + 1 < n && u[1] == 0x9c) {
			c = 0x061c;
			bad = true;
		} else if (!bad && (c == 0xe2 || c == 0xef) && i + 2 < n) {
			unsigned v = ((c & 0x0fu) << 12) | ((u[1] & 0x3fu) << 6) | (u[2] & 0x3fu);
			if ((u[1] & 0xc0) == 0x80 && (u[2] & 0xc0) == 0x80 &&
			    ((v >= 0x200b && v <= 0x200f) || (v >= 0x202a && v <= 0x202e) ||
			     (v >= 0x2060 && v <= 0x2064) || (v >= 0x2066 && v <= 0x2069) || v == 0xfeff)) {
				c = v;
				bad = true;
			}
		}
		if (bad) {
			if (cp != NULL)
				*cp = c;
			return s + i;
		}
	}
	return NULL;
}

bool yn_has_control(const ynode *n)
{
	return n != NULL && n->type == YN_SCALAR && control_char(n->str, n->len, NULL) != NULL;
}

static ota_err add_child(builder *b, ynode *c, yaml_mark_t m)
{
	char w[300];
	if (b->depth == 0) {
		if (b->d->root != NULL) {
			where_mark(b->d, m, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_MULTI_DOC, w, "more than one root node");
		}
		b->d->root = c;
		return OTA_OK;
	}
	ynode *p = b->stack[b->depth - 1];
	if (p->type == YN_MAP && p->n % 2 == 0) {
		/* c is a key */
		if (c->type != YN_SCALAR) {
			where_mark(b->d, m, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_KEY_TYPE, w,
			                     "mapping keys must be scalars");
		}
		if (c->plain && strcmp(c->str, "<<") == 0) {
			where_mark(b->d, m, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_MERGE_KEY, w,
			                     "merge key '<<' is not accepted");
		}
		/* keys name tasks, contexts, workflows and fields: no control or format characters */
		unsigned cp = 0;
		const char *cc = control_char(c->str, c->len, &cp);
		if (cc != NULL) {
			where_mark(b->d, m, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_CONTROL_CHAR, w,
			                     "mapping key holds control or format character U+%04X at byte %zu",
			                     cp, (size_t)(cc - c->str));
		}
	}
	if (!push_item(p, c))
		return ota_error_set(b->err, OTA_ERR_NOMEM, "yaml", "out of memory");
	return OTA_OK;
}

/* Counts w nodes and nb scalar bytes more in the expanded document: an
 * alias counts its anchor's whole subtree again, so that a few aliases of
 * aliases cannot expand a small document into a huge one (the nodes, or
 * the bytes each alias of a long scalar copies when the tree is turned into
 * JSON). */
static ota_err count(builder *b, uint64_t w, uint64_t nb, yaml_mark_t m)
{
	b->expanded += w;
	b->expanded_bytes += nb;
	if (b->expanded > OTA_MAX_YAML_NODES || b->expanded_bytes > OTA_MAX_YAML_EXPANDED_BYTES) {
		char wh[300];
		where_mark(b->d, m, wh, sizeof wh);
		if (b->expanded > OTA_MAX_YAML_NODES)
			return ota_error_set(b->err, OTA_ERR_YAML_TOO_LARGE, wh,
			                     "document expands to more than %u nodes",
			                     OTA_MAX_YAML_NODES);
		return ota_error_set(b->err, OTA_ERR_YAML_TOO_LARGE, wh,
		                     "document expands to more than %u bytes of scalars",
		                     OTA_MAX_YAML_EXPANDED_BYTES);
	}
	return OTA_OK;
}

static ota_err remember_anchor(builder *b, const yaml_char_t *a, ynode *n, yaml_mark_t m)
{
	if (a == NULL)
		return OTA_OK;
	if (b->nanchors >= OTA_MAX_YAML_ANCHORS) {
		char w[300];
		where_mark(b->d, m, w, sizeof w);
		return ota_error_set(b->err, OTA_ERR_YAML_ALIAS_LIMIT, w, "more than %u anchors",
		                     OTA_MAX_YAML_ANCHORS);
	}
	if (b->nanchors == b->canchors) {
		size_t nc = b->canchors ? b->canchors * 2 : 16;
		anchor *na = realloc(b->anchors, nc * sizeof *na);
		if (na == NULL)
			return ota_error_set(b->err, OTA_ERR_NOMEM, "yaml", "out of memory");
		b->anchors = na;
		b->canchors = nc;
	}
	char *s = strdup((const char *)a);
	if (s == NULL)
		return ota_error_set(b->err, OTA_ERR_NOMEM, "yaml", "out of memory");
	b->anchors[b->nanchors].name = s;
	b->anchors[b->nanchors].node = n;
	b->nanchors++;
	return OTA_OK;
}

static ynode *find_anchor(const builder *b, const char *name)
{
	/* latest definition wins (YAML allows redefinition) */
	for (size_t i = b->nanchors; i > 0; i--)
		if (strcmp(b->anchors[i - 1].name, name) == 0)
			return b->anchors[i - 1].node;
	return NULL;
}

uint64_t yn_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static bool key_eq(const ynode *a, const ynode *b)
{
	return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
}

static ota_err check_dup_keys(builder *b, const ynode *m)
{
	size_t nk = m->n / 2;
	const ynode *dup = NULL;
	if (nk <= 16) {
		for (size_t i = 1; i < nk && dup == NULL; i++)
			for (size_t j = 0; j < i; j++)
				if (key_eq(m->items[2 * i], m->items[2 * j])) {
					dup = m->items[2 * i];
					break;
				}
	} else {
		size_t cap = 32;
		while (cap < nk * 2)
			cap *= 2;
		const ynode **tab = calloc(cap, sizeof *tab);
		if (tab == NULL)
			return ota_error_set(b->err, OTA_ERR_NOMEM, "yaml", "out of memory");
		for (size_t i = 0; i < nk && dup == NULL; i++) {
			const ynode *k = m->items[2 * i];
			size_t h = (size_t)(yn_hash(k->str, k->len) & (cap - 1));
			while (tab[h] != NULL) {
				if (key_eq(tab[h], k)) {
					dup = k;
					break;
				}
				h = (h + 1) & (cap - 1);
			}
			if (dup == NULL)
				tab[h] = k;
		}
		free(tab);
	}
	if (dup != NULL) {
		char w[300];
		yn_where(b->d, dup, w, sizeof w);
		return ota_error_set(b->err, OTA_ERR_YAML_DUPLICATE_KEY, w, "duplicate key '%.80s'",
		                     dup->str);
	}
	return OTA_OK;
}

static ota_err on_event(builder *b, yaml_event_t *ev)
{
	char w[300];
	ota_err rc;
	switch (ev->type) {
	case YAML_STREAM_START_EVENT:
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_END_EVENT:
	case YAML_NO_EVENT:
		return OTA_OK;
	case YAML_DOCUMENT_START_EVENT:
		if (b->d->root != NULL) {
			where_mark(b->d, ev->start_mark, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_MULTI_DOC, w,
			                     "the stream holds more than one document");
		}
		return OTA_OK;
	case YAML_ALIAS_EVENT: {
		if (++b->aliases > OTA_MAX_YAML_ALIASES) {
			where_mark(b->d, ev->start_mark, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_ALIAS_LIMIT, w,
			                     "more than %u aliases", OTA_MAX_YAML_ALIASES);
		}
		ynode *t = find_anchor(b, (const char *)ev->data.alias.anchor);
		if (t == NULL) {
			where_mark(b->d, ev->start_mark, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_ANCHOR_UNKNOWN, w,
			                     "unknown anchor '%.80s'", (const char *)ev->data.alias.anchor);
		}
		/* an alias to a node still being built would be a cycle */
		for (size_t i = 0; i < b->depth; i++)
			if (b->stack[i] == t) {
				where_mark(b->d, ev->start_mark, w, sizeof w);
				return ota_error_set(b->err, OTA_ERR_YAML_ALIAS_LIMIT, w,
				                     "recursive alias");
			}
		/* the alias's copy nests as deep as its anchor's node: refused where
		 * the alias stands, as a node written out there would be */
		if (t->height > 0 && b->depth + t->height > OTA_MAX_YAML_DEPTH) {
			where_mark(b->d, ev->start_mark, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_TOO_DEEP, w,
			                     "alias '%.80s' nests deeper than %u here",
			                     (const char *)ev->data.alias.anchor, OTA_MAX_YAML_DEPTH);
		}
		rc = count(b, t->weight, t->bytes, ev->start_mark);
		if (rc != OTA_OK)
			return rc;
		if (b->depth > 0) {
			b->stack[b->depth - 1]->weight += t->weight;
			b->stack[b->depth - 1]->bytes += t->bytes;
		}
		return add_child(b, t, ev->start_mark);
	}
	case YAML_SCALAR_EVENT: {
		ynode *n = node_new(b, YN_SCALAR, ev->start_mark);
		if (n == NULL)
			return ota_error_set(b->err, OTA_ERR_NOMEM, "yaml", "out of memory");
		n->len = ev->data.scalar.length;
		n->str = malloc(n->len + 1);
		if (n->str == NULL)
			return ota_error_set(b->err, OTA_ERR_NOMEM, "yaml", "out of memory");
		memcpy(n->str, ev->data.scalar.value, n->len);
		n->str[n->len] = '\0';
		/* every consumer reads scalars as C strings: an embedded NUL would
		 * make two different scalars compare equal (or a key shadow another) */
		if (memchr(n->str, '\0', n->len) != NULL) {
			where_mark(b->d, ev->start_mark, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_CONTROL_CHAR, w,
			                     "scalar holds a NUL byte at byte %zu",
			                     (size_t)((const char *)memchr(n->str, '\0', n->len) - n->str));
		}
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		if (ev->data.scalar.tag != NULL &&
		    strcmp((const char *)ev->data.scalar.tag, YAML_STR_TAG) == 0)
			n->plain = false;
		n->bytes = n->len;
		rc = count(b, 1, n->len, ev->start_mark);
		if (rc == OTA_OK)
			rc = remember_anchor(b, ev->data.scalar.anchor, n, ev->start_mark);
		if (rc != OTA_OK)
			return rc;
		if (b->depth > 0) {
			b->stack[b->depth - 1]->weight += 1;
			b->stack[b->depth - 1]->bytes += n->len;
		}
		return add_child(b, n, ev->start_mark);
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
		if (b->depth >= OTA_MAX_YAML_DEPTH) {
			where_mark(b->d, ev->start_mark, w, sizeof w);
			return ota_error_set(b->err, OTA_ERR_YAML_TOO_DEEP, w,
			                     "nesting deeper than %u", OTA_MAX_YAML_DEPTH);
		}
		ynode *n = node_new(b, seq ? YN_SEQ : YN_MAP, ev->start_mark);
		if (n == NULL)
			return ota_error_set(b->err, OTA_ERR_NOMEM, "yaml", "out of memory");
		rc = count(b, 1, 0, ev->start_mark);
		if (rc == OTA_OK)
			rc = remember_anchor(b,
			                     seq ? ev->data.sequence_start.anchor
			                         : ev->data.mapping_start.anchor,
			                     n, ev->start_mark);
		if (rc == OTA_OK)
			rc = add_child(b, n, ev->start_mark);
		if (rc != OTA_OK)
			return rc;
		b->stack[b->depth++] = n;
		return OTA_OK;
	}
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT: {
		if (b->depth == 0)
			return ota_error_set(b->err, OTA_ERR_YAML_SYNTAX, b->d->name, "unbalanced end");
		ynode *n = b->stack[--b->depth];
		n->height = 1;
		for (size_t i = 0; i < n->n; i++)
			if (n->items[i]->height + 1 > n->height)
				n->height = n->items[i]->height + 1;
		if (n->type == YN_MAP) {
			rc = check_dup_keys(b, n);
			if (rc != OTA_OK)
				return rc;
		}
		if (b->depth > 0) {
			b->stack[b->depth - 1]->weight += n->weight;
			b->stack[b->depth - 1]->bytes += n->bytes;
		}
		return OTA_OK;
	}
	}
	return OTA_OK;
}

ota_err ydoc_parse(ota_bytes in, const char *name, ydoc **out, ota_error *err)
{
	*out = NULL;
	if (in.len > OTA_MAX_YAML_BYTES)
		return ota_error_set(err, OTA_ERR_YAML_TOO_LARGE, name,
		                     "document has %zu bytes, limit is %u", in.len,
		                     OTA_MAX_YAML_BYTES);
	ydoc *d = calloc(1, sizeof *d);
	if (d == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, name, "out of memory");
	d->name = strdup(name != NULL ? name : "ota.yaml");
	if (d->name == NULL) {
		free(d);
		return ota_error_set(err, OTA_ERR_NOMEM, "yaml", "out of memory");
	}
	builder b;
	memset(&b, 0, sizeof b);
	b.d = d;
	b.err = err;
	yaml_parser_t p;
	ota_err rc = OTA_OK;
	if (!yaml_parser_initialize(&p)) {
		ydoc_free(d);
		return ota_error_set(err, OTA_ERR_NOMEM, name, "out of memory");
	}
	yaml_parser_set_input_string(&p, in.ptr, in.len);
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev)) {
			char w[300];
			where_mark(d, p.problem_mark, w, sizeof w);
			rc = ota_error_set(err, OTA_ERR_YAML_SYNTAX, w, "%s%s%s",
			                   p.problem ? p.problem : "syntax error",
			                   p.context ? " " : "", p.context ? p.context : "");
			break;
		}
		bool end = ev.type == YAML_STREAM_END_EVENT;
		rc = on_event(&b, &ev);
		yaml_event_delete(&ev);
		if (rc != OTA_OK || end)
			break;
	}
	yaml_parser_delete(&p);
	for (size_t i = 0; i < b.nanchors; i++)
		free(b.anchors[i].name);
	free(b.anchors);
	if (rc != OTA_OK) {
		ydoc_free(d);
		return rc;
	}
	*out = d;
	return OTA_OK;
}

void ydoc_free(ydoc *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->narena; i++) {
		free(d->arena[i]->str);
		free(d->arena[i]->items);
		free(d->arena[i]);
	}
	free(d->arena);
	free(d->name);
	free(d);
}

ynode *ydoc_root(const ydoc *d)
{
	return d->root;
}

const char *ydoc_name(const ydoc *d)
{
	return d->name;
}

ynode *yn_get(const ynode *m, const char *key)
{
	if (m == NULL || m->type != YN_MAP)
		return NULL;
	size_t kl = strlen(key);
	for (size_t i = 0; i + 1 < m->n; i += 2)
		if (m->items[i]->len == kl && memcmp(m->items[i]->str, key, kl) == 0)
			return m->items[i + 1];
	return NULL;
}

bool yn_is_null(const ynode *n)
{
	if (n == NULL)
		return true;
	if (n->type != YN_SCALAR || !n->plain)
		return false;
	return n->len == 0 || strcmp(n->str, "~") == 0 || strcmp(n->str, "null") == 0 ||
	       strcmp(n->str, "Null") == 0 || strcmp(n->str, "NULL") == 0;
}

static bool is_int(const char *s, long long *out)
{
	const char *p = s;
	if (*p == '-' || *p == '+')
		p++;
	if (*p == '\0')
		return false;
	if (p[0] == '0' && p[1] != '\0')
		return false; /* octal-looking or padded: keep as string */
	for (const char *q = p; *q; q++)
		if (*q < '0' || *q > '9')
			return false;
	if (strlen(p) > 15)
		return false;
	*out = strtoll(s, NULL, 10);
	return true;
}

bool yn_is_string(const ynode *n)
{
	if (n == NULL || n->type != YN_SCALAR)
		return false;
	if (!n->plain)
		return true;
	long long v;
	if (yn_is_null(n) || is_int(n->str, &v))
		return false;
	return !(strcmp(n->str, "true") == 0 || strcmp(n->str, "True") == 0 ||
	         strcmp(n->str, "TRUE") == 0 || strcmp(n->str, "false") == 0 ||
	         strcmp(n->str, "False") == 0 || strcmp(n->str, "FALSE") == 0);
}

json_t *yn_to_json(const ynode *n)
{
	if (n == NULL)
		return json_null();
	switch (n->type) {
	case YN_SCALAR: {
		if (n->plain) {
			long long v;
			if (yn_is_null(n))
				return json_null();
			if (strcmp(n->str, "true") == 0 || strcmp(n->str, "True") == 0 ||
			    strcmp(n->str, "TRUE") == 0)
				return json_true();
			if (strcmp(n->str, "false") == 0 || strcmp(n->str, "False") == 0 ||
			    strcmp(n->str, "FALSE") == 0)
				return json_false();
			if (is_int(n->str, &v))
				return json_integer(v);
		}
		return json_stringn(n->str, n->len);
	}
	case YN_SEQ: {
		json_t *a = json_array();
		if (a == NULL)
			return NULL;
		for (size_t i = 0; i < n->n; i++) {
			json_t *c = yn_to_json(n->items[i]);
			if (c == NULL || json_array_append_new(a, c) != 0) {
				json_decref(a);
				return NULL;
			}
		}
		return a;
	}
	case YN_MAP: {
		json_t *o = json_object();
		if (o == NULL)
			return NULL;
		for (size_t i = 0; i + 1 < n->n; i += 2) {
			json_t *c = yn_to_json(n->items[i + 1]);
			if (c == NULL ||
			    json_object_setn_new(o, n->items[i]->str, n->items[i]->len, c) != 0) {
				json_decref(o);
				return NULL;
			}
		}
		return o;
	}
	}
	return NULL;
}
