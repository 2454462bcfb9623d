/* Pools, string vectors, YAML field helpers and repo-relative paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ota/limits.h"

static bool pool_keep(pool *p, char *s)
{
	if (p->n == p->cap) {
		size_t nc = p->cap ? p->cap * 2 : 32;
		char **nv = realloc(p->v, nc * sizeof *nv);
		if (nv == NULL)
			return false;
		p->v = nv;
		p->cap = nc;
	}
	p->v[p->n++] = s;
	return true;
}

char *pool_strndup(pool *p, const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	if (!pool_keep(p, d)) {
		free(d);
		return NULL;
	}
	return d;
}

char *pool_strdup(pool *p, const char *s)
{
	return pool_strndup(p, s, strlen(s));
}

void *pool_alloc(pool *p, size_t n)
{
	char *d = calloc(1, n ? n : 1);
	if (d == NULL)
		return NULL;
	if (!pool_keep(p, d)) {
		free(d);
		return NULL;
	}
	return d;
}

void pool_free(pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

bool strv_push(strv *s, const char *x)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 4;
		const char **nv = realloc(s->v, nc * sizeof *nv);
		if (nv == NULL)
			return false;
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->n++] = x;
	return true;
}

bool strv_has(const strv *s, const char *x)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], x) == 0)
			return true;
	return false;
}

void strv_free(strv *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void strv_sort_unique(strv *s)
{
	if (s->n < 2)
		return;
	qsort(s->v, s->n, sizeof *s->v, cmp_str);
	size_t o = 1;
	for (size_t i = 1; i < s->n; i++)
		if (strcmp(s->v[i], s->v[o - 1]) != 0)
			s->v[o++] = s->v[i];
	s->n = o;
}

/* ---- YAML field helpers ---- */

static const char *type_name(yn_type t)
{
	return t == YN_MAP ? "a mapping" : t == YN_SEQ ? "a sequence" : "a scalar";
}

ota_err y_expect(const ydoc *d, const ynode *n, yn_type t, const char *what, ota_error *err)
{
	if (n != NULL && n->type == t && !(t == YN_SCALAR && yn_is_null(n)))
		return OTA_OK;
	char w[300];
	yn_where(d, n, w, sizeof w);
	return ota_error_set(err, OTA_ERR_CONTRACT_TYPE, w, "%s must be %s", what, type_name(t));
}

static bool in_list(const char *const *l, const char *k, size_t kl)
{
	if (l == NULL)
		return false;
	for (; *l != NULL; l++)
		if (strlen(*l) == kl && memcmp(*l, k, kl) == 0)
			return true;
	return false;
}

ota_err y_keys(const ydoc *d, const ynode *m, const char *const *allowed, const char *const *later,
               const char *what, ota_error *err)
{
	for (size_t i = 0; i + 1 < m->n; i += 2) {
		const ynode *k = m->items[i];
		if (in_list(allowed, k->str, k->len))
			continue;
		char w[300];
		yn_where(d, k, w, sizeof w);
		if (in_list(later, k->str, k->len))
			return ota_error_set(err, OTA_ERR_CONTRACT_LATER_KEY, w,
			                     "%s: key '%.80s' is defined only by later upstream versions",
			                     what, k->str);
		return ota_error_set(err, OTA_ERR_CONTRACT_UNKNOWN_KEY, w, "%s: unknown key '%.80s'",
		                     what, k->str);
	}
	return OTA_OK;
}

ota_err y_str(const ydoc *d, const ynode *m, const char *key, bool required, const char **out,
              ota_error *err)
{
	*out = NULL;
	const ynode *v = yn_get(m, key);
	if (v == NULL || yn_is_null(v)) {
		if (!required)
			return OTA_OK;
		char w[300];
		yn_where(d, m, w, sizeof w);
		return ota_error_set(err, OTA_ERR_CONTRACT_MISSING, w, "'%s' is required", key);
	}
	if (!yn_is_string(v)) {
		char w[300];
		yn_where(d, v, w, sizeof w);
		return ota_error_set(err, OTA_ERR_CONTRACT_TYPE, w,
		                     "'%s' must be a string%s", key,
		                     v->type == YN_SCALAR ? " (quote it: it reads as a number or boolean)" : "");
	}
	if (yn_has_control(v)) {
		char w[300];
		yn_where(d, v, w, sizeof w);
		return ota_error_set(err, OTA_ERR_YAML_CONTROL_CHAR, w,
		                     "'%s' holds a control or invisible/bidirectional format character", key);
	}
	if (required && v->len == 0) {
		char w[300];
		yn_where(d, v, w, sizeof w);
		return ota_error_set(err, OTA_ERR_CONTRACT_VALUE, w, "'%s' must not be empty", key);
	}
	*out = v->str;
	return OTA_OK;
}

ota_err y_enum(const ydoc *d, const ynode *m, const char *key, const char *const *vals,
               const char **out, ota_error *err)
{
	ota_err rc = y_str(d, m, key, false, out, err);
	if (rc != OTA_OK || *out == NULL)
		return rc;
	for (const char *const *v = vals; *v != NULL; v++)
		if (strcmp(*v, *out) == 0) {
			*out = *v; /* static spelling */
			return OTA_OK;
		}
	char w[300];
	yn_where(d, yn_get(m, key), w, sizeof w);
	ota_err e = ota_error_set(err, OTA_ERR_CONTRACT_VALUE, w, "'%s' has value '%.60s' outside its allowed set",
	                          key, *out);
	*out = NULL;
	return e;
}

static ota_err strv_of(const ydoc *d, const ynode *m, const char *key, bool names, strv *out,
                       ota_error *err)
{
	const ynode *v = yn_get(m, key);
	if (v == NULL || yn_is_null(v))
		return OTA_OK;
	char w[300];
	if (v->type != YN_SEQ) {
		yn_where(d, v, w, sizeof w);
		return ota_error_set(err, OTA_ERR_CONTRACT_TYPE, w, "'%s' must be a list of strings", key);
	}
	for (size_t i = 0; i < v->n; i++) {
		const ynode *e = v->items[i];
		if (!yn_is_string(e)) {
			yn_where(d, e, w, sizeof w);
			return ota_error_set(err, OTA_ERR_CONTRACT_TYPE, w,
			                     "'%s' entries must be strings%s", key,
			                     e->type == YN_SCALAR && !yn_is_null(e)
			                             ? " (quote it: it reads as a number or boolean)"
			                             : "");
		}
		if (names && yn_has_control(e)) {
			yn_where(d, e, w, sizeof w);
			return ota_error_set(err, OTA_ERR_YAML_CONTROL_CHAR, w,
			                     "'%s' entry holds a control or invisible/bidirectional format character", key);
		}
		if (!strv_push(out, e->str))
			return ota_error_set(err, OTA_ERR_NOMEM, key, "out of memory");
	}
	return OTA_OK;
}

ota_err y_strv(const ydoc *d, const ynode *m, const char *key, strv *out, ota_error *err)
{
	return strv_of(d, m, key, true, out, err);
}

ota_err y_strv_text(const ydoc *d, const ynode *m, const char *key, strv *out, ota_error *err)
{
	return strv_of(d, m, key, false, out, err);
}

ota_err y_bool(const ydoc *d, const ynode *m, const char *key, bool *out, ota_error *err)
{
	const ynode *v = yn_get(m, key);
	if (v == NULL || yn_is_null(v))
		return OTA_OK;
	if (v->type == YN_SCALAR && v->plain) {
		if (strcmp(v->str, "true") == 0 || strcmp(v->str, "True") == 0) {
			*out = true;
			return OTA_OK;
		}
		if (strcmp(v->str, "false") == 0 || strcmp(v->str, "False") == 0) {
			*out = false;
			return OTA_OK;
		}
	}
	char w[300];
	yn_where(d, v, w, sizeof w);
	return ota_error_set(err, OTA_ERR_CONTRACT_TYPE, w, "'%s' must be true or false", key);
}

/* ---- paths ---- */

ota_err path_normalize(const char *in, pool *pl, const char **out, const char *where, ota_error *err)
{
	*out = NULL;
	size_t n = strlen(in);
	if (n == 0 || n > OTA_MAX_PATH_BYTES)
		return ota_error_set(err, OTA_ERR_POLICY_PATH_INVALID, where,
		                     "path is empty or longer than %u bytes", OTA_MAX_PATH_BYTES);
	if (in[0] == '/' || in[0] == '~' || in[0] == '\\' ||
	    (n >= 2 && in[1] == ':'))
		return ota_error_set(err, OTA_ERR_POLICY_PATH_ABSOLUTE, where,
		                     "path '%.80s' is absolute; boundary paths are repo-relative", in);
	char *buf = pool_alloc(pl, n + 1);
	if (buf == NULL)
		return ota_error_set(err, OTA_ERR_NOMEM, where, "out of memory");
	size_t o = 0;
	const char *p = in;
	while (*p) {
		const char *e = strchr(p, '/');
		size_t cl = e ? (size_t)(e - p) : strlen(p);
		if (memchr(p, '\\', cl) != NULL)
			return ota_error_set(err, OTA_ERR_POLICY_PATH_INVALID, where,
			                     "path '%.80s' contains a backslash", in);
		if (cl == 2 && p[0] == '.' && p[1] == '.')
			return ota_error_set(err, OTA_ERR_POLICY_PATH_ESCAPE, where,
			                     "path '%.80s' contains '..'", in);
		if (cl > 0 && !(cl == 1 && p[0] == '.')) {
			if (o > 0)
				buf[o++] = '/';
			memcpy(buf + o, p, cl);
			o += cl;
		}
		p += cl;
		if (*p == '/')
			p++;
	}
	buf[o] = '\0';
	if (o == 0)
		return ota_error_set(err, OTA_ERR_POLICY_PATH_INVALID, where,
		                     "path '%.80s' names the repository root itself", in);
	*out = buf;
	return OTA_OK;
}

bool path_within(const char *a, const char *b)
{
	size_t bl = strlen(b);
	return strncmp(a, b, bl) == 0 && (a[bl] == '\0' || a[bl] == '/');
}

static bool pathset_has(const pathset *s, const char *p, size_t n)
{
	size_t h = (size_t)(yn_hash(p, n) & (s->cap - 1));
	for (; s->slot[h] != NULL; h = (h + 1) & (s->cap - 1))
		if (strncmp(s->slot[h], p, n) == 0 && s->slot[h][n] == '\0')
			return true;
	return false;
}

bool pathset_build(pathset *s, const strv *v)
{
	size_t cap = 16;
	while (cap < v->n * 2 + 2)
		cap *= 2;
	s->slot = calloc(cap, sizeof *s->slot);
	s->cap = cap;
	if (s->slot == NULL)
		return false;
	for (size_t i = 0; i < v->n; i++) {
		size_t n = strlen(v->v[i]);
		if (pathset_has(s, v->v[i], n))
			continue;
		size_t h = (size_t)(yn_hash(v->v[i], n) & (cap - 1));
		while (s->slot[h] != NULL)
			h = (h + 1) & (cap - 1);
		s->slot[h] = v->v[i];
	}
	return true;
}

void pathset_free(pathset *s)
{
	free(s->slot);
	s->slot = NULL;
	s->cap = 0;
}

bool pathset_covers(const pathset *s, const char *a, bool proper)
{
	size_t n = strlen(a);
	for (size_t k = 0; k <= n; k++)
		if ((k == n ? !proper : a[k] == '/') && pathset_has(s, a, k))
			return true;
	return false;
}

bool paths_first_within(const strv *a, const strv *b, size_t *i_out, size_t *j_out)
{
	pathset s;
	bool fast = pathset_build(&s, b);
	for (size_t i = 0; i < a->n; i++) {
		if (fast && !pathset_covers(&s, a->v[i], false))
			continue;
		for (size_t j = 0; j < b->n; j++)
			if (path_within(a->v[i], b->v[j])) {
				*i_out = i;
				*j_out = j;
				pathset_free(&s);
				return true;
			}
	}
	pathset_free(&s);
	return false;
}
