/*
 * notify_nested.c -- change sets of collections nested in Mixed values, computed by comparing
 * the collection's content in two versions (docs/ARCHITECTURE.md, Change notifications,
 * "Collections nested in AnyRealmValue"): the change history names only the owning property.
 *
 * Invariants:
 *  1. Both accessors read through transactions that stay open (and do not move) while a diff
 *     runs, so the values read from them (string bytes) stay valid.
 *  2. Two elements are equal when they have the same type and the same stored representation
 *     (numbers bit for bit, strings and binaries byte for byte), or when both are nested
 *     collections of the same kind with equal elements (maps: equal keys too), recursively.
 */
#include "notify.h"

/* ---- equality and hashes ------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Same type and representation (scalars only). */
static bool repr_equal(const cs_value *a, const cs_value *b)
{
    if (a->type != b->type) return false;
    switch (a->type) {
    case CS_TYPE_NULL: return true;
    case CS_TYPE_INT: return a->v.i == b->v.i;
    case CS_TYPE_BOOL: return a->v.b == b->v.b;
    case CS_TYPE_FLOAT: return memcmp(&a->v.f, &b->v.f, sizeof a->v.f) == 0;
    case CS_TYPE_DOUBLE: return memcmp(&a->v.d, &b->v.d, sizeof a->v.d) == 0;
    case CS_TYPE_STRING:
    case CS_TYPE_BINARY:
        return a->v.bytes.len == b->v.bytes.len &&
               (a->v.bytes.len == 0 || memcmp(a->v.bytes.ptr, b->v.bytes.ptr, a->v.bytes.len) == 0);
    case CS_TYPE_TIMESTAMP: return a->v.ts.sec == b->v.ts.sec && a->v.ts.nsec == b->v.ts.nsec;
    case CS_TYPE_OBJECTID: return memcmp(a->v.oid, b->v.oid, sizeof a->v.oid) == 0;
    case CS_TYPE_UUID: return memcmp(a->v.uuid, b->v.uuid, sizeof a->v.uuid) == 0;
    case CS_TYPE_DECIMAL: return a->v.dec.w[0] == b->v.dec.w[0] && a->v.dec.w[1] == b->v.dec.w[1];
    case CS_TYPE_LINK: return a->v.link.table == b->v.link.table && a->v.link.key == b->v.link.key;
    default: return false;
    }
}

static uint64_t repr_hash(const cs_value *v)
{
    uint64_t h = fnv(14695981039346656037ull, &v->type, sizeof v->type);
    switch (v->type) {
    case CS_TYPE_INT: return fnv(h, &v->v.i, sizeof v->v.i);
    case CS_TYPE_BOOL: { uint8_t b = v->v.b; return fnv(h, &b, 1); }
    case CS_TYPE_FLOAT: return fnv(h, &v->v.f, sizeof v->v.f);
    case CS_TYPE_DOUBLE: return fnv(h, &v->v.d, sizeof v->v.d);
    case CS_TYPE_STRING:
    case CS_TYPE_BINARY: return v->v.bytes.len ? fnv(h, v->v.bytes.ptr, v->v.bytes.len) : h;
    case CS_TYPE_TIMESTAMP: h = fnv(h, &v->v.ts.sec, sizeof v->v.ts.sec); return fnv(h, &v->v.ts.nsec, sizeof v->v.ts.nsec);
    case CS_TYPE_OBJECTID: return fnv(h, v->v.oid, sizeof v->v.oid);
    case CS_TYPE_UUID: return fnv(h, v->v.uuid, sizeof v->v.uuid);
    case CS_TYPE_DECIMAL: return fnv(h, v->v.dec.w, sizeof v->v.dec.w);
    case CS_TYPE_LINK: h = fnv(h, &v->v.link.table, sizeof v->v.link.table); return fnv(h, &v->v.link.key, sizeof v->v.link.key);
    default: return h;
    }
}

static bool is_nested(const cs_value *v) { return v->type == CS_TYPE_LIST || v->type == CS_TYPE_DICT; }

static int coll_hash(cs_coll *c, uint64_t *out);
static int coll_equal(cs_coll *a, cs_coll *b, bool *eq);

/* The hash of element `v` at position i (list) or key (map) of `c`. */
static int elem_hash(cs_coll *c, const cs_value *v, size_t i, const cs_value *key, uint64_t *out)
{
    *out = repr_hash(v);
    if (!is_nested(v)) return CS_OK;
    cs_coll n;
    TRY(cs_coll_open_nested(c, key ? -1 : (int64_t)i, key ? key->v.bytes.ptr : NULL, key ? key->v.bytes.len : 0, &n));
    uint64_t h;
    TRY(coll_hash(&n, &h));
    *out = fnv(*out, &h, sizeof h);
    return CS_OK;
}

static int coll_hash(cs_coll *c, uint64_t *out)
{
    size_t n;
    TRY(cs_coll_size(c, &n));
    uint64_t h = fnv(14695981039346656037ull, &n, sizeof n);
    bool map = cs_coll_kind_of(c) == CS_COLL_MAP;
    h = fnv(h, &map, sizeof map);
    for (size_t i = 0; i < n; i++) {
        cs_value k, v;
        uint64_t eh;
        if (map) {
            TRY(cs_map_get_at(c, i, &k, &v));
            h = fnv(h, k.v.bytes.ptr, k.v.bytes.len);
        } else {
            TRY(cs_list_get(c, i, &v));
        }
        TRY(elem_hash(c, &v, i, map ? &k : NULL, &eh));
        h = fnv(h, &eh, sizeof eh);
    }
    *out = h;
    return CS_OK;
}

/* Whether element va (position ia or key ka of a) equals element vb (of b). */
static int elem_equal(cs_coll *a, const cs_value *va, size_t ia, const cs_value *ka, cs_coll *b, const cs_value *vb,
                      size_t ib, const cs_value *kb, bool *eq)
{
    if (!is_nested(va) || !is_nested(vb)) {
        *eq = repr_equal(va, vb);
        return CS_OK;
    }
    if (va->type != vb->type) {
        *eq = false;
        return CS_OK;
    }
    cs_coll na, nb;
    TRY(cs_coll_open_nested(a, ka ? -1 : (int64_t)ia, ka ? ka->v.bytes.ptr : NULL, ka ? ka->v.bytes.len : 0, &na));
    TRY(cs_coll_open_nested(b, kb ? -1 : (int64_t)ib, kb ? kb->v.bytes.ptr : NULL, kb ? kb->v.bytes.len : 0, &nb));
    return coll_equal(&na, &nb, eq);
}

static bool key_equal(const cs_value *a, const cs_value *b)
{
    return a->v.bytes.len == b->v.bytes.len &&
           (a->v.bytes.len == 0 || memcmp(a->v.bytes.ptr, b->v.bytes.ptr, a->v.bytes.len) == 0);
}

static int coll_equal(cs_coll *a, cs_coll *b, bool *eq)
{
    size_t na, nb;
    TRY(cs_coll_size(a, &na));
    TRY(cs_coll_size(b, &nb));
    bool map = cs_coll_kind_of(a) == CS_COLL_MAP;
    *eq = na == nb && map == (cs_coll_kind_of(b) == CS_COLL_MAP);
    for (size_t i = 0; i < na && *eq; i++) {
        cs_value ka, va, kb, vb;
        if (map) {
            TRY(cs_map_get_at(a, i, &ka, &va));
            TRY(cs_map_get_at(b, i, &kb, &vb));
            if (!key_equal(&ka, &kb)) {
                *eq = false;
                break;
            }
        } else {
            TRY(cs_list_get(a, i, &va));
            TRY(cs_list_get(b, i, &vb));
        }
        TRY(elem_equal(a, &va, i, map ? &ka : NULL, b, &vb, i, map ? &kb : NULL, eq));
    }
    return CS_OK;
}

/* ---- one side's elements ------------------------------------------------------------------ */

typedef struct side {
    cs_coll *c;
    bool map;
    size_t n;
    cs_value *v;   /* values */
    cs_value *k;   /* map keys */
    uint64_t *h;   /* element hashes */
} side;

static void side_free(side *s)
{
    free(s->v);
    free(s->k);
    free(s->h);
}

static int side_load(side *s, cs_coll *c)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    s->map = cs_coll_kind_of(c) == CS_COLL_MAP;
    TRY(cs_coll_size(c, &s->n));
    size_t m = s->n ? s->n : 1;
    s->v = malloc(m * sizeof *s->v);
    s->k = s->map ? malloc(m * sizeof *s->k) : NULL;
    s->h = malloc(m * sizeof *s->h);
    if (!s->v || !s->h || (s->map && !s->k)) return NOMEM();
    for (size_t i = 0; i < s->n; i++) {
        if (s->map) TRY(cs_map_get_at(c, i, &s->k[i], &s->v[i]));
        else TRY(cs_list_get(c, i, &s->v[i]));
        TRY(elem_hash(c, &s->v[i], i, s->map ? &s->k[i] : NULL, &s->h[i]));
    }
    return CS_OK;
}

static int same(side *a, size_t i, side *b, size_t j, bool *eq)
{
    if (a->h[i] != b->h[j]) {
        *eq = false;
        return CS_OK;
    }
    return elem_equal(a->c, &a->v[i], i, a->map ? &a->k[i] : NULL, b->c, &b->v[j], j, b->map ? &b->k[j] : NULL, eq);
}

/* ---- lists -------------------------------------------------------------------------------- */

/* Largest middle part (old length + 1) * (new length + 1) compared by a longest-common-
 * subsequence table; a larger one is compared position by position. */
#define NESTED_LCS_CELLS (1u << 20)

/* A gap between kept runs: old [ob, oe) and new [nb, ne) were not matched. The first ones pair
 * up as modifications (old position), the rest of the longer side are deletions or insertions. */
static int gap(rdiff *d, size_t ob, size_t oe, size_t nb, size_t ne)
{
    size_t pair = oe - ob < ne - nb ? oe - ob : ne - nb;
    for (size_t i = 0; i < pair; i++) TRY(idxvec_push(&d->mod, ob + i));
    for (size_t i = ob + pair; i < oe; i++) TRY(idxvec_push(&d->del, i));
    for (size_t j = nb + pair; j < ne; j++) TRY(idxvec_push(&d->ins, j));
    return CS_OK;
}

static int list_diff(side *a, side *b, rdiff *d)
{
    size_t m = a->n, n = b->n, p = 0, s = 0;
    bool eq = true;
    while (p < m && p < n) {
        TRY(same(a, p, b, p, &eq));
        if (!eq) break;
        p++;
    }
    while (s < m - p && s < n - p) {
        TRY(same(a, m - 1 - s, b, n - 1 - s, &eq));
        if (!eq) break;
        s++;
    }
    size_t ma = m - p - s, mb = n - p - s;
    if (ma == 0 || mb == 0 || (uint64_t)(ma + 1) * (mb + 1) > NESTED_LCS_CELLS) {
        /* nothing to match, or too large to match: position by position */
        size_t pair = ma < mb ? ma : mb;
        for (size_t i = 0; i < pair; i++) {
            TRY(same(a, p + i, b, p + i, &eq));
            if (!eq) TRY(idxvec_push(&d->mod, p + i));
        }
        return gap(d, p + pair, p + ma, p + pair, p + mb);
    }
    /* L[i][j]: longest common subsequence of old middle [i..) and new middle [j..) */
    size_t w = mb + 1;
    uint32_t *L = calloc((ma + 1) * w, sizeof *L);
    uint8_t *E = malloc(ma * mb);
    if (!L || !E) { free(L); free(E); return NOMEM(); }
    int rc = CS_OK;
    for (size_t i = ma; i-- > 0 && rc == CS_OK;)
        for (size_t j = mb; j-- > 0 && rc == CS_OK;) {
            rc = same(a, p + i, b, p + j, &eq);
            E[i * mb + j] = eq;
            uint32_t x = L[(i + 1) * w + j], y = L[i * w + j + 1];
            L[i * w + j] = eq ? L[(i + 1) * w + j + 1] + 1 : (x >= y ? x : y);
        }
    size_t i = 0, j = 0, oi = 0, oj = 0;
    while (rc == CS_OK && i < ma && j < mb) {
        if (E[i * mb + j] && L[i * w + j] == L[(i + 1) * w + j + 1] + 1) {
            rc = gap(d, p + oi, p + i, p + oj, p + j);
            oi = ++i;
            oj = ++j;
        } else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) {
            i++;
        } else {
            j++;
        }
    }
    if (rc == CS_OK) rc = gap(d, p + oi, p + ma, p + oj, p + mb);
    free(L);
    free(E);
    return rc;
}

/* ---- maps --------------------------------------------------------------------------------- */

static int key_order(const cs_value *a, const cs_value *b)
{
    size_t n = a->v.bytes.len < b->v.bytes.len ? a->v.bytes.len : b->v.bytes.len;
    int r = n ? memcmp(a->v.bytes.ptr, b->v.bytes.ptr, n) : 0;
    if (r) return r;
    return a->v.bytes.len < b->v.bytes.len ? -1 : a->v.bytes.len > b->v.bytes.len;
}

static int map_diff(side *a, side *b, rdiff *d)
{
    size_t i = 0, j = 0;
    while (i < a->n || j < b->n) {
        int c = i >= a->n ? 1 : j >= b->n ? -1 : key_order(&a->k[i], &b->k[j]);
        if (c < 0) {
            TRY(idxvec_push(&d->del, i++));
        } else if (c > 0) {
            TRY(idxvec_push(&d->ins, j++));
        } else {
            bool eq;
            TRY(same(a, i, b, j, &eq));
            if (!eq) TRY(idxvec_push(&d->mod, i));
            i++;
            j++;
        }
    }
    return CS_OK;
}

int nested_elem_changed(cs_coll *old, size_t i, cs_coll *now, size_t j, bool *changed)
{
    bool map = cs_coll_kind_of(old) == CS_COLL_MAP;
    cs_value ka, va, kb, vb;
    if (map) {
        TRY(cs_map_get_at(old, i, &ka, &va));
        TRY(cs_map_get_at(now, j, &kb, &vb));
    } else {
        TRY(cs_list_get(old, i, &va));
        TRY(cs_list_get(now, j, &vb));
    }
    *changed = false;
    if (!is_nested(&va) && !is_nested(&vb)) return CS_OK;
    bool eq;
    TRY(elem_equal(old, &va, i, map ? &ka : NULL, now, &vb, j, map ? &kb : NULL, &eq));
    *changed = !eq;
    return CS_OK;
}

int nested_diff(cs_coll *old, cs_coll *now, rdiff *out)
{
    rdiff_reset(out);
    side a, b;
    int rc = side_load(&a, old);
    if (rc == CS_OK) rc = side_load(&b, now);
    else memset(&b, 0, sizeof b);
    if (rc == CS_OK) rc = a.map ? map_diff(&a, &b, out) : list_diff(&a, &b, out);
    side_free(&a);
    side_free(&b);
    return rc;
}
