/*
 * index.c -- ordered indexes (docs/FORMAT.md §6.5): per indexed column a B+ tree of entries
 * `encode(value) || big-endian object key`, compared as bytes, so one tree serves equality,
 * ranges, prefixes and sorted iteration. Primary keys are indexes whose values are unique.
 *
 *   leaf:  a string leaf (leaf.c) of sorted entries, at most IDX_MAX
 *   inner: NF_REFS|NF_INNER [seps, child0, child1, ...]; seps is a string leaf whose element i
 *          is the smallest entry under child i
 *
 * The keys are index_key.c's (the value encoding the query engine shares). A Mixed index serves
 * equality exactly, and order only through candidate ranges per tag that the query engine
 * re-checks (query_plan.c). The query engine reads ranges of entries through index_collect.
 *
 * Invariants:
 *  1. Entries are strictly increasing; the object key suffix makes equal values distinct.
 *  2. Every object of the table has exactly one entry in each of its indexes.
 *  3. In a unique index no two entries share the value part.
 *  4. A Mixed index keys the value as stored (cluster_leaf_get, what obj_get_stored reads), never
 *     the null a dangling link reads as.
 *  5. Except the primary key of a table that keeps no index of it (TBLK_NOIDX, keying.c invariant
 *     5): its tree is absent and the table's cluster keys, which are exactly its primary keys,
 *     answer in its place (pk_* below): lookups, uniqueness, the query engine's ranges.
 */
#include "node.h"
#include "leaf.h"
#include "cluster.h"
#include "schema.h"
#include "snapshot.h"
#include "index.h"
#include "keying.h"

#include <math.h>

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int r = n ? memcmp(a, b, n) : 0;
    if (r) return r;
    return (an > bn) - (an < bn);
}

/* ---- tree access ------------------------------------------------------------------------ */

static leaf_spec entry_spec(void) { return leaf_spec_of(CS_TYPE_BINARY, false, 0); }

/* A string leaf opened once for many reads (entries are never big values in practice; when
 * one is, reads go through leaf_get). */
typedef struct sview {
    node_hdr *ends; /* end offsets */
    node_hdr *data; /* bytes */
    bool bigs;      /* some value lives in its own blob */
    ref_t ref;      /* the leaf */
    uint64_t n;     /* entries */
} sview;

static int sview_open(cs_txn *t, ref_t r, sview *v)
{
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (!(h->flags & NF_REFS) || h->count != 3 || (h->flags & NF_INNER)) return CORRUPT("index leaf is malformed");
    uint64_t *e = node_refs(h);
    TRY(node_at(t, e[0], &v->ends));
    TRY(node_at(t, e[1], &v->data));
    if ((v->ends->flags & (NF_BYTES | NF_REFS | NF_NULLS)) || !(v->data->flags & NF_BYTES) || v->data->width != 1)
        return CORRUPT("index leaf parts are malformed");
    v->bigs = e[2] != 0;
    v->ref = r;
    v->n = v->ends->count;
    return CS_OK;
}

static int sview_get(cs_txn *t, const sview *v, uint64_t i, const uint8_t **p, size_t *n)
{
    if (i >= v->n) return CORRUPT("index leaf index past its end");
    if (v->bigs) {
        leaf_spec s = leaf_spec_of(CS_TYPE_BINARY, false, 0);
        cs_value x;
        TRY(leaf_get(t, &s, v->ref, i, &x));
        if (x.type != CS_TYPE_BINARY || x.v.bytes.len < 8) return CORRUPT("index entry is malformed");
        *p = x.v.bytes.ptr;
        *n = x.v.bytes.len;
        return CS_OK;
    }
    int64_t a = i ? node_get_int(v->ends, i - 1) : 0, b = node_get_int(v->ends, i);
    if (a < 0 || b < a + 8 || (uint64_t)b > v->data->count) return CORRUPT("index entry is malformed");
    *p = node_values(v->data) + a;
    *n = (size_t)(b - a);
    return CS_OK;
}

static int entry_at(cs_txn *t, ref_t leaf, uint64_t i, const uint8_t **p, size_t *n)
{
    sview v;
    TRY(sview_open(t, leaf, &v));
    return sview_get(t, &v, i, p, n);
}

/* Entry length of every non-null entry of an index on a column of `type`, when the value
 * encoding has a fixed length (0 for strings and any type whose encodings differ in length).
 * A null entry is NULL_ENTRY bytes: the tag and the key. */
#define NULL_ENTRY 9u
static size_t fixed_entry_len(cs_type type)
{
    switch (type) {
    case CS_TYPE_BOOL: return 1 + 1 + 8;
    case CS_TYPE_INT: return 1 + 8 + 8;
    case CS_TYPE_TIMESTAMP: return 1 + 12 + 8;
    case CS_TYPE_OBJECTID: return 1 + 12 + 8;
    case CS_TYPE_UUID: return 1 + 16 + 8;
    default: return 0;
    }
}

static inline uint64_t be64_at(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}

/* cmp_bytes, with the head every encoding but strings' starts with (a tag byte and 8 bytes)
 * compared as numbers. */
static inline int cmp_entry(const uint8_t *e, size_t en, const uint8_t *p, size_t n)
{
    if (en >= 9 && n >= 9) {
        if (e[0] != p[0]) return e[0] < p[0] ? -1 : 1;
        uint64_t x = be64_at(e + 1), y = be64_at(p + 1);
        if (x != y) return x < y ? -1 : 1;
        return cmp_bytes(e + 9, en - 9, p + 9, n - 9);
    }
    return cmp_bytes(e, en, p, n);
}

/* An index leaf or separator list opened for searching. */
typedef struct ileaf {
    sview v;             /* the string leaf */
    const uint8_t *base; /* with a stride: entry i is the `stride` bytes at base + i * stride */
    size_t stride;       /* the length of every entry, or 0: entries are found through `ends` */
} ileaf;

/* Opens the string leaf at r. `flen` is fixed_entry_len() of the indexed column (0: unknown).
 * Every entry of such an index is NULL_ENTRY or flen bytes long (flen > NULL_ENTRY), and the
 * data holds the entries back to back (FORMAT.md §6.3: the last end offset is the data's
 * length), so when the data is exactly n × flen (or n × NULL_ENTRY) bytes every entry has that
 * length and entry i is found by position, with no read of `ends` at all. The data node holds
 * those n × stride bytes, so a damaged leaf can yield a wrong entry, never a read outside it. */
static int ileaf_open(cs_txn *t, ref_t r, size_t flen, ileaf *l)
{
    TRY(sview_open(t, r, &l->v));
    l->stride = 0;
    l->base = NULL;
    if (flen && l->v.n && !l->v.bigs) {
        uint64_t len = l->v.data->count;
        if (len == flen * l->v.n) l->stride = flen;
        else if (len == NULL_ENTRY * l->v.n) l->stride = NULL_ENTRY;
        if (l->stride) l->base = node_values(l->v.data);
    }
    return CS_OK;
}

static inline int ileaf_get(cs_txn *t, const ileaf *l, uint64_t i, const uint8_t **p, size_t *n)
{
    if (!l->stride) return sview_get(t, &l->v, i, p, n);
    if (i >= l->v.n) return CORRUPT("index leaf index past its end");
    *p = l->base + i * l->stride;
    *n = l->stride;
    return CS_OK;
}

/* What a descent knows about the node it enters: the parent's separator before it (no entry
 * below it is smaller) and after it (every entry below it is smaller), NULL when unknown. Only
 * a hint: searches are correct whatever these hold. */
typedef struct hint {
    const uint8_t *lo; /* an entry of at least 9 bytes, or NULL */
    const uint8_t *hi; /* likewise */
} hint;

/* First position among `cnt` entries of `stride` bytes at `base` whose entry is >= (p, n).
 * Index values are often dense or evenly spread, so the first probe is interpolated between
 * the heads of the parent's separators around the node (`h`) or, lacking them, of the node's
 * first and last entries; from there the search gallops outwards and then bisects, so it never
 * takes more than about twice the probes of a plain binary search. */
static uint64_t fixed_lower(const uint8_t *base, uint64_t cnt, size_t stride, const uint8_t *p, size_t n,
                            const hint *h)
{
#define LESS(i) (cmp_entry(base + (i) * stride, stride, p, n) < 0)
    uint64_t lo = 0, hi = cnt; /* entries before lo are < p; entries from hi on are >= p */
    if (cnt > 4 && n >= 9 && stride >= 9) {
        const uint8_t *f, *l;
        uint64_t span;
        if (h && h->lo && h->hi) {
            f = h->lo;
            l = h->hi;
            span = cnt; /* the entries lie in [lo, hi) */
        } else {
            f = base;
            l = base + (cnt - 1) * stride;
            span = cnt - 1;
        }
        if (f[0] == p[0] && l[0] == p[0]) {
            uint64_t a = be64_at(f + 1), b = be64_at(l + 1), x = be64_at(p + 1);
            uint64_t g;
            if (x <= a || b <= a) g = 0;
            else if (x >= b) g = cnt;
            else g = interpolate(x - a, b - a, span);
            if (g > cnt) g = cnt;
            if (g < cnt && LESS(g)) {
                lo = g + 1;
                for (uint64_t s = 1; lo + s - 1 < hi; s *= 2) {
                    uint64_t j = lo + s - 1;
                    if (LESS(j)) lo = j + 1;
                    else { hi = j; break; }
                }
            } else {
                hi = g;
                for (uint64_t s = 1; s <= hi - lo; s *= 2) {
                    uint64_t j = hi - s;
                    if (LESS(j)) { lo = j + 1; break; }
                    hi = j;
                }
            }
        }
    }
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (LESS(mid)) lo = mid + 1;
        else hi = mid;
    }
#undef LESS
    return lo;
}

/* First position in an opened leaf whose entry is >= (p, n); `h` may be NULL. */
static int ileaf_lower(cs_txn *t, const ileaf *l, const uint8_t *p, size_t n, const hint *h, uint64_t *pos)
{
    if (l->stride) {
        *pos = fixed_lower(l->base, l->v.n, l->stride, p, n, h);
        return CS_OK;
    }
    uint64_t lo = 0, hi = l->v.n;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        const uint8_t *e;
        size_t en;
        TRY(sview_get(t, &l->v, mid, &e, &en));
        if (cmp_bytes(e, en, p, n) < 0) lo = mid + 1;
        else hi = mid;
    }
    *pos = lo;
    return CS_OK;
}

/* First position in a sorted string leaf whose entry is >= (p, n). */
static int leaf_lower(cs_txn *t, ref_t leaf, const uint8_t *p, size_t n, uint64_t *pos)
{
    ileaf l;
    TRY(ileaf_open(t, leaf, 0, &l));
    return ileaf_lower(t, &l, p, n, NULL, pos);
}

/* Child of an inner node for an entry: the last child whose first entry <= it (0 if none).
 * `flen` as for ileaf_open; `in` (may be NULL) is what is known about this node, `out` (may
 * be NULL) receives the same for the child. */
static int inner_child(cs_txn *t, node_hdr *h, const uint8_t *p, size_t n, size_t flen, const hint *in,
                       uint64_t *child, hint *out)
{
    if (!(h->flags & NF_REFS) || h->count < 2) return CORRUPT("index inner node is malformed");
    ileaf seps;
    TRY(ileaf_open(t, node_refs(h)[0], flen, &seps));
    uint64_t cnt = seps.v.n;
    if (cnt + 1 != h->count) return CORRUPT("index separators disagree with children");
    uint64_t pos;
    TRY(ileaf_lower(t, &seps, p, n, in, &pos));
    uint64_t c = pos ? pos - 1 : 0;
    if (pos < cnt) {
        const uint8_t *e;
        size_t en;
        TRY(ileaf_get(t, &seps, pos, &e, &en));
        if (cmp_bytes(e, en, p, n) == 0) c = pos;
    }
    *child = c;
    if (out) {
        const uint8_t *e = NULL;
        size_t en = 0;
        out->lo = out->hi = NULL;
        if (seps.stride) {
            TRY(ileaf_get(t, &seps, c, &e, &en));
            if (en >= 9) out->lo = e;
            if (c + 1 < cnt) {
                TRY(ileaf_get(t, &seps, c + 1, &e, &en));
                if (en >= 9) out->hi = e;
            } else if (in) {
                out->hi = in->hi; /* the last child ends where this node does */
            }
        }
    }
    return CS_OK;
}

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct isplit {
    bool happened; /* a right sibling was made */
    ref_t ref;     /* its ref */
} isplit;

static int first_entry(cs_txn *t, ref_t r, const uint8_t **p, size_t *n)
{
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (h->flags & NF_INNER) return entry_at(t, node_refs(h)[0], 0, p, n);
    return entry_at(t, r, 0, p, n);
}

static int ins_rec(cs_txn *t, ref_t *slot, const uint8_t *p, size_t n, isplit *sp, int depth)
{
    if (depth >= TREE_DEPTH_MAX) return CORRUPT("index deeper than %d", TREE_DEPTH_MAX);
    sp->happened = false;
    TRY(node_cow(t, slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    leaf_spec s = entry_spec();
    cs_value v = cs_binary(p, n);
    if (!(h->flags & NF_INNER)) {
        uint64_t pos, cnt;
        TRY(leaf_lower(t, *slot, p, n, &pos));
        TRY(leaf_count(t, &s, *slot, &cnt));
        if (pos < cnt) {
            const uint8_t *e;
            size_t en;
            TRY(entry_at(t, *slot, pos, &e, &en));
            if (cmp_bytes(e, en, p, n) == 0) return CORRUPT("index entry exists twice");
        }
        TRY(leaf_insert(t, &s, slot, pos, &v));
        if (cnt + 1 > IDX_MAX) {
            ref_t nl;
            TRY(leaf_make(t, &s, 0, &nl));
            TRY(leaf_move(t, &s, slot, pos == cnt ? cnt : (cnt + 1) / 2, &nl));
            sp->happened = true;
            sp->ref = nl;
        }
        return CS_OK;
    }
    uint64_t c;
    TRY(inner_child(t, h, p, n, 0, NULL, &c, NULL));
    isplit csp;
    TRY(ins_rec(t, &node_refs(h)[1 + c], p, n, &csp, depth + 1));
    h = (node_hdr *)txn_ptr(t, *slot);
    uint64_t *e = node_refs(h);
    if (c == 0) {
        /* a new smallest entry becomes the first separator */
        const uint8_t *fp;
        size_t fn;
        TRY(first_entry(t, e[1], &fp, &fn));
        const uint8_t *sp0;
        size_t sn0;
        TRY(entry_at(t, e[0], 0, &sp0, &sn0));
        if (cmp_bytes(fp, fn, sp0, sn0) != 0) {
            uint8_t *copy = malloc(fn);
            if (!copy) return NOMEM();
            memcpy(copy, fp, fn);
            cs_value fv = cs_binary(copy, fn);
            int rc = leaf_set(t, &s, &e[0], 0, &fv);
            free(copy);
            TRY(rc);
        }
    }
    if (!csp.happened) return CS_OK;
    const uint8_t *np;
    size_t nn;
    TRY(first_entry(t, csp.ref, &np, &nn));
    uint8_t *copy = malloc(nn);
    if (!copy) return NOMEM();
    memcpy(copy, np, nn);
    cs_value sv = cs_binary(copy, nn);
    h = (node_hdr *)txn_ptr(t, *slot);
    int rc = leaf_insert(t, &s, &node_refs(h)[0], c + 1, &sv);
    free(copy);
    TRY(rc);
    TRY(node_insert_int(t, slot, 2 + c, (int64_t)csp.ref));
    h = (node_hdr *)txn_ptr(t, *slot);
    if (h->count - 1 > IDX_MAX) {
        uint64_t nc = h->count - 1, from = nc / 2;
        ref_t ni, seps;
        TRY(node_new(t, NF_REFS | NF_INNER, 64, 1, &ni));
        TRY(leaf_make(t, &s, 0, &seps));
        node_refs((node_hdr *)txn_ptr(t, ni))[0] = seps;
        h = (node_hdr *)txn_ptr(t, *slot);
        TRY(leaf_move(t, &s, &node_refs(h)[0], from, &node_refs((node_hdr *)txn_ptr(t, ni))[0]));
        for (uint64_t k = from; k < nc; k++) {
            h = (node_hdr *)txn_ptr(t, *slot);
            uint64_t child = node_refs(h)[1 + k];
            TRY(node_insert_int(t, &ni, ((node_hdr *)txn_ptr(t, ni))->count, (int64_t)child));
        }
        TRY(node_truncate(t, slot, 1 + from));
        sp->happened = true;
        sp->ref = ni;
    }
    return CS_OK;
}

static int index_insert_entry(cs_txn *t, ref_t *root, const uint8_t *p, size_t n)
{
    leaf_spec s = entry_spec();
    if (!*root) TRY(leaf_make(t, &s, 0, root));
    isplit sp;
    TRY(ins_rec(t, root, p, n, &sp, 0));
    if (sp.happened) {
        ref_t nr, seps;
        TRY(node_new(t, NF_REFS | NF_INNER, 64, 3, &nr));
        TRY(leaf_make(t, &s, 0, &seps));
        const uint8_t *fp;
        size_t fn;
        for (int i = 0; i < 2; i++) {
            TRY(first_entry(t, i == 0 ? *root : sp.ref, &fp, &fn));
            uint8_t *copy = malloc(fn);
            if (!copy) return NOMEM();
            memcpy(copy, fp, fn);
            cs_value fv = cs_binary(copy, fn);
            int rc = leaf_insert(t, &s, &seps, (uint64_t)i, &fv);
            free(copy);
            TRY(rc);
        }
        uint64_t *e = node_refs((node_hdr *)txn_ptr(t, nr));
        e[0] = seps;
        e[1] = *root;
        e[2] = sp.ref;
        *root = nr;
    }
    return CS_OK;
}

static int del_rec(cs_txn *t, ref_t *slot, const uint8_t *p, size_t n, bool *empty, int depth)
{
    if (depth >= TREE_DEPTH_MAX) return CORRUPT("index deeper than %d", TREE_DEPTH_MAX);
    *empty = false;
    TRY(node_cow(t, slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    leaf_spec s = entry_spec();
    if (!(h->flags & NF_INNER)) {
        uint64_t pos, cnt;
        TRY(leaf_lower(t, *slot, p, n, &pos));
        TRY(leaf_count(t, &s, *slot, &cnt));
        const uint8_t *e;
        size_t en;
        if (pos >= cnt) return CORRUPT("index entry missing");
        TRY(entry_at(t, *slot, pos, &e, &en));
        if (cmp_bytes(e, en, p, n) != 0) return CORRUPT("index entry missing");
        TRY(leaf_erase(t, &s, slot, pos));
        *empty = cnt == 1;
        return CS_OK;
    }
    uint64_t c;
    TRY(inner_child(t, h, p, n, 0, NULL, &c, NULL));
    bool cempty;
    TRY(del_rec(t, &node_refs(h)[1 + c], p, n, &cempty, depth + 1));
    h = (node_hdr *)txn_ptr(t, *slot);
    uint64_t *e = node_refs(h);
    if (cempty) {
        node_free_tree(t, e[1 + c]);
        TRY(leaf_erase(t, &s, &e[0], c));
        TRY(node_erase(t, slot, 1 + c));
        h = (node_hdr *)txn_ptr(t, *slot);
        if (h->count == 1) *empty = true;
        return CS_OK;
    }
    const uint8_t *fp;
    size_t fn;
    TRY(first_entry(t, e[1 + c], &fp, &fn));
    uint8_t *copy = malloc(fn);
    if (!copy) return NOMEM();
    memcpy(copy, fp, fn);
    cs_value fv = cs_binary(copy, fn);
    int rc = leaf_set(t, &s, &e[0], c, &fv);
    free(copy);
    return rc;
}

static int index_erase_entry(cs_txn *t, ref_t *root, const uint8_t *p, size_t n)
{
    if (!*root) return CORRUPT("index entry missing (empty index)");
    bool empty;
    TRY(del_rec(t, root, p, n, &empty, 0));
    if (empty) {
        node_free_tree(t, *root);
        *root = 0;
        return CS_OK;
    }
    tree_collapse_root(t, root);
    return CS_OK;
}

/* ---- searching -------------------------------------------------------------------------- */

/* Visits every entry in [lo, hi) (by bytes; NULL = open) in order. */
typedef int (*index_visit)(void *ctx, const uint8_t *entry, size_t n, int64_t key);

/* `flen` is fixed_entry_len() of the indexed column (0: unknown), as for ileaf_open. */
static int scan_rec(cs_txn *t, ref_t r, const uint8_t *lo, size_t lon, const uint8_t *hi, size_t hin,
                    size_t flen, index_visit fn, void *ctx, bool *stop, int depth)
{
    if (depth >= TREE_DEPTH_MAX) return CORRUPT("index deeper than %d", TREE_DEPTH_MAX);
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (h->flags & NF_INNER) {
        uint64_t c = 0;
        if (lo) TRY(inner_child(t, h, lo, lon, flen, NULL, &c, NULL));
        ileaf seps;
        memset(&seps, 0, sizeof seps);
        if (hi) TRY(ileaf_open(t, node_refs(h)[0], flen, &seps));
        for (; c + 1 < h->count && !*stop; c++) {
            if (hi) {
                const uint8_t *sp;
                size_t sn;
                TRY(ileaf_get(t, &seps, c, &sp, &sn));
                if (cmp_bytes(sp, sn, hi, hin) >= 0) { *stop = true; break; }
            }
            TRY(scan_rec(t, node_refs(h)[1 + c], lo, lon, hi, hin, flen, fn, ctx, stop, depth + 1));
        }
        return CS_OK;
    }
    ileaf l;
    TRY(ileaf_open(t, r, flen, &l));
    uint64_t pos = 0;
    if (lo) TRY(ileaf_lower(t, &l, lo, lon, NULL, &pos));
    for (; pos < l.v.n; pos++) {
        const uint8_t *e;
        size_t en;
        TRY(ileaf_get(t, &l, pos, &e, &en));
        if (hi && cmp_bytes(e, en, hi, hin) >= 0) { *stop = true; return CS_OK; }
        int rc = fn(ctx, e, en, (int64_t)be64_at(e + en - 8));
        if (rc == 1) { *stop = true; return CS_OK; }
        TRY(rc);
    }
    return CS_OK;
}

typedef struct first_ctx {
    const uint8_t *prefix; /* the value part looked for */
    size_t plen;           /* its length */
    bool found;            /* an entry with exactly this value part exists */
    bool whole;            /* match the whole entry (value||key) instead of the value part */
    int64_t key;           /* its object key */
} first_ctx;

static int first_visit(void *vctx, const uint8_t *e, size_t en, int64_t key)
{
    first_ctx *c = vctx;
    if (c->whole ? (en == c->plen && memcmp(e, c->prefix, en) == 0)
                 : (en == c->plen + 8 && memcmp(e, c->prefix, c->plen) == 0)) {
        c->found = true;
        c->key = key;
    }
    return 1; /* only the first entry >= the prefix matters */
}

/* Finds the first entry >= prefix and reports whether its value part equals the prefix: one
 * descent, then at most one step to the next leaf. */
static int seek(cs_txn *t, ref_t root, const uint8_t *p, size_t n, size_t flen, bool *found, int64_t *key)
{
    *found = false;
    if (!root) return CS_OK;
    ref_t path[TREE_DEPTH_MAX];
    uint64_t at[TREE_DEPTH_MAX];
    int depth = 0;
    ref_t r = root;
    hint hn = {NULL, NULL};
    for (;;) {
        if (depth >= TREE_DEPTH_MAX) return CORRUPT("index deeper than %d", TREE_DEPTH_MAX);
        node_hdr *h;
        TRY(node_at(t, r, &h));
        if (!(h->flags & NF_INNER)) break;
        uint64_t c;
        hint below;
        TRY(inner_child(t, h, p, n, flen, &hn, &c, &below));
        hn = below;
        path[depth] = r;
        at[depth] = c;
        depth++;
        r = node_refs(h)[1 + c];
    }
    ileaf l;
    TRY(ileaf_open(t, r, flen, &l));
    uint64_t pos;
    TRY(ileaf_lower(t, &l, p, n, &hn, &pos));
    while (pos >= l.v.n) {
        /* every entry of this leaf is smaller: the answer is the first entry of the next leaf */
        while (depth > 0) {
            node_hdr *h;
            TRY(node_at(t, path[depth - 1], &h));
            if (at[depth - 1] + 2 < h->count) break;
            depth--;
        }
        if (depth == 0) return CS_OK;
        node_hdr *h;
        TRY(node_at(t, path[depth - 1], &h));
        at[depth - 1]++;
        r = node_refs(h)[1 + at[depth - 1]];
        for (;;) {
            node_hdr *x;
            TRY(node_at(t, r, &x));
            if (!(x->flags & NF_INNER)) break;
            if (depth >= TREE_DEPTH_MAX) return CORRUPT("index deeper than %d", TREE_DEPTH_MAX);
            path[depth] = r;
            at[depth] = 0;
            depth++;
            r = node_refs(x)[1];
        }
        TRY(ileaf_open(t, r, flen, &l));
        pos = 0;
    }
    const uint8_t *e;
    size_t en;
    TRY(ileaf_get(t, &l, pos, &e, &en));
    if (en == n + 8 && memcmp(e, p, n) == 0) {
        *found = true;
        *key = (int64_t)be64_at(e + n);
    }
    return CS_OK;
}

/* True if the whole entry (value||key) is in the index. */
static int contains(cs_txn *t, ref_t root, const uint8_t *p, size_t n, size_t flen, bool *found)
{
    first_ctx c = {p, n, false, true, 0};
    bool stop = false;
    if (root) TRY(scan_rec(t, root, p, n, NULL, 0, flen, first_visit, &c, &stop, 0));
    *found = c.found;
    return CS_OK;
}

/* ---- the table's indexes ---------------------------------------------------------------- */

/* Whether column col is the primary key of a table that keeps no index of it (invariant 5). */
static int pk_unindexed(cs_txn *t, uint32_t table, uint32_t col, bool *out)
{
    *out = false;
    table_def *td;
    TRY(txn_table(t, table, &td));
    if (td->primary != col || col == CS_NONE || td->cols[col].type != CS_TYPE_INT) return CS_OK;
    return keying_pk_unindexed(t, table, out);
}

static int pk_find(cs_txn *t, uint32_t table, const cs_value *value, int64_t *key);

static int index_root_find(cs_txn *t, uint32_t table, uint32_t col, ref_t *root);

/* Read-only root of column col's index (0 when empty or absent). */
int index_root(cs_txn *t, uint32_t table, uint32_t col, ref_t *root)
{
    /* a read transaction's snapshot changes only with its epoch: the last root found holds */
    txn_rcache *rc = txn_read_cache(t);
    if (rc && rc->ri_epoch == t->epoch && rc->ri_table == table && rc->ri_col == col) {
        *root = rc->ri_root;
        return CS_OK;
    }
    TRY(index_root_find(t, table, col, root));
    if (rc) {
        rc->ri_epoch = t->epoch;
        rc->ri_table = table;
        rc->ri_col = col;
        rc->ri_root = *root;
    }
    return CS_OK;
}

/* index_root without the cache. */
static int index_root_find(cs_txn *t, uint32_t table, uint32_t col, ref_t *root)
{
    *root = 0;
    ref_t tr;
    int64_t dummy;
    (void)dummy;
    uint64_t tables;
    TRY(txn_top_get(t, TOP_TABLES, &tables));
    if (!tables) return CS_OK;
    node_hdr *th;
    TRY(node_at(t, tables, &th));
    if (!(th->flags & NF_REFS) || table >= th->count || !node_refs(th)[table]) return CS_OK;
    tr = node_refs(th)[table];
    node_hdr *tn;
    TRY(node_at(t, tr, &tn));
    if (!(tn->flags & NF_REFS) || tn->count < TBL_SLOTS) return CORRUPT("table node is malformed");
    uint64_t ir = node_refs(tn)[TBL_INDEXES];
    if (!ir) return CS_OK;
    node_hdr *ih;
    TRY(node_at(t, ir, &ih));
    if (!(ih->flags & NF_REFS)) return CORRUPT("index list is malformed");
    *root = col < ih->count ? node_refs(ih)[col] : 0;
    if (*root && tagged(*root)) return CORRUPT("index slot holds a number");
    return CS_OK;
}

/* Writable slot of column col's index root. */
static int index_slot(cs_txn *t, uint32_t table, uint32_t col, ref_t **out)
{
    ref_t *ts;
    TRY(table_node_slot(t, table, &ts));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *ts));
    ref_t *is = &e[TBL_INDEXES];
    if (!*is) TRY(node_new(t, NF_REFS, 64, 0, is));
    TRY(node_cow(t, is));
    node_hdr *ih = (node_hdr *)txn_ptr(t, *is);
    if (col >= ih->count) {
        uint64_t n = ih->count;
        TRY(node_reserve(t, is, col + 1, 64));
        ih = (node_hdr *)txn_ptr(t, *is);
        for (uint64_t i = n; i <= col; i++) node_refs(ih)[i] = 0;
        ih->count = col + 1;
    }
    *out = &node_refs(ih)[col];
    return CS_OK;
}

static bool is_indexed(const col_def *c)
{
    return c->live && c->coll == CS_COLL_NONE && (c->flags & (CS_COL_INDEXED | CS_COL_PRIMARY)) &&
           index_type_ok((cs_type)c->type);
}

static int entry_for(const cs_value *v, bool mixed, int64_t key, uint8_t **p, size_t *n)
{
    TRY(index_encode(v, mixed, p, n));
    index_put_be64(*p + *n, (uint64_t)key);
    *n += 8;
    return CS_OK;
}

/* The value an index keys a row by: the stored value (a Mixed link whose target was deleted
 * keeps its link key; the query engine re-checks such candidates). Invariant 4. */
static int indexed_value(cs_txn *t, node_hdr *leaf, uint32_t row, const col_def *c, uint32_t col, cs_value *v)
{
    return cluster_leaf_get(t, leaf, row, c, col, v);
}

static int value_entry_op(cs_txn *t, uint32_t table, uint32_t col, bool mixed, const cs_value *v, int64_t key,
                          bool insert)
{
    uint8_t *p;
    size_t n;
    TRY(entry_for(v, mixed, key, &p, &n));
    ref_t *root;
    int rc = index_slot(t, table, col, &root);
    if (rc == CS_OK) rc = insert ? index_insert_entry(t, root, p, n) : index_erase_entry(t, root, p, n);
    free(p);
    return rc;
}

/* Called when a value of an indexed column changes (old NULL: the object is new). */
int index_update(cs_txn *t, uint32_t table, uint32_t col, int64_t key, const cs_value *old, const cs_value *nv)
{
    table_def *td;
    TRY(txn_table(t, table, &td));
    if (col >= td->ncols || !is_indexed(&td->cols[col])) return CS_OK;
    bool unindexed;
    TRY(pk_unindexed(t, table, col, &unindexed));
    if (unindexed) return CS_OK;
    bool mixed = td->cols[col].type == CS_TYPE_MIXED;
    if (old) {
        uint8_t *a, *b;
        size_t an, bn;
        TRY(entry_for(old, mixed, key, &a, &an));
        int rc = entry_for(nv, mixed, key, &b, &bn);
        if (rc) { free(a); return rc; }
        bool same = an == bn && memcmp(a, b, an) == 0;
        free(a);
        free(b);
        if (same) return CS_OK;
        TRY(value_entry_op(t, table, col, mixed, old, key, false));
    }
    return value_entry_op(t, table, col, mixed, nv, key, true);
}

/* Called for every indexed column when an object is created (defaults, but `vcol`'s entry keys
 * *vval when vval is not NULL: a new object's primary key goes in once, not as a default
 * that is then replaced) or deleted. */
int index_row_with(cs_txn *t, uint32_t table, int64_t key, bool insert, uint32_t vcol, const cs_value *vval)
{
    return index_row_values(t, table, key, insert, vval ? 1 : 0, &vcol, vval, 0);
}

int index_row_values(cs_txn *t, uint32_t table, int64_t key, bool insert, size_t nv, const uint32_t *vcols,
                     const cs_value *vals, size_t stride)
{
    table_def *td;
    TRY(txn_table(t, table, &td));
    uint32_t skip = CS_NONE; /* the primary key when its index is not kept (invariant 5) */
    /* only an Int primary key can go without its index: other tables read no keying flags */
    if (td->primary != CS_NONE && td->cols[td->primary].type == CS_TYPE_INT && is_indexed(&td->cols[td->primary])) {
        bool unindexed;
        TRY(keying_pk_unindexed(t, table, &unindexed));
        if (unindexed) skip = td->primary;
    }
    for (uint32_t c = 0; c < td->ncols; c++) {
        if (!is_indexed(&td->cols[c]) || c == skip) continue;
        bool mixed = td->cols[c].type == CS_TYPE_MIXED;
        cs_value v;
        size_t given = nv;
        for (size_t i = 0; insert && i < nv; i++)
            if (vcols[i] == c) given = i;
        if (given < nv) {
            v = vals[given * stride];
        } else if (insert) {
            memset(&v, 0, sizeof v);
            if ((td->cols[c].flags & CS_COL_NULLABLE) || mixed) v.type = CS_TYPE_NULL;
            else {
                v.type = (cs_type)td->cols[c].type;
                if (v.type == CS_TYPE_STRING) v.v.bytes.ptr = "";
            }
        } else {
            ref_t root;
            node_hdr *leaf;
            uint32_t row;
            TRY(table_root(t, table, &root));
            int rc = cluster_find(t, root, key, &leaf, &row);
            if (rc == CS_NOTFOUND) rc = cs_fail(CS_NOTFOUND, 0, "no object with key %lld in '%s'", (long long)key, td->name);
            TRY(rc);
            TRY(indexed_value(t, leaf, row, &td->cols[c], c, &v));
        }
        /* encoded first: the index write may move the leaf the value's bytes point into */
        uint8_t *p;
        size_t n;
        TRY(entry_for(&v, mixed, key, &p, &n));
        ref_t *root;
        int rc = index_slot(t, table, c, &root);
        if (rc == CS_OK) rc = insert ? index_insert_entry(t, root, p, n) : index_erase_entry(t, root, p, n);
        free(p);
        TRY(rc);
        TRY(txn_table(t, table, &td));
    }
    return CS_OK;
}

int index_row(cs_txn *t, uint32_t table, int64_t key, bool insert)
{
    return index_row_with(t, table, key, insert, CS_NONE, NULL);
}

int index_slot_writable(cs_txn *t, uint32_t table, uint32_t col)
{
    ref_t *root;
    return index_slot(t, table, col, &root);
}

/* Drops column col's index (frees the tree). */
int index_drop(cs_txn *t, uint32_t table, uint32_t col)
{
    ref_t *root;
    TRY(index_slot(t, table, col, &root));
    node_free_tree(t, *root);
    *root = 0;
    return CS_OK;
}

/* Builds column col's index from the table's objects; unique: CS_CONSTRAINT on a duplicate. */
int index_build(cs_txn *t, uint32_t table, uint32_t col, bool unique)
{
    TRY(index_drop(t, table, col));
    col_def *cd;
    TRY(txn_col(t, table, col, NULL, &cd));
    bool mixed = cd->type == CS_TYPE_MIXED;
    cs_iter it;
    cluster_iter_init(&it, t, table);
    int64_t key;
    node_hdr *leaf;
    uint32_t row;
    int rc;
    while ((rc = cluster_iter_next(&it, &key, &leaf, &row)) == CS_OK) {
        cs_value v;
        TRY(indexed_value(t, leaf, row, cd, col, &v));
        uint8_t *p;
        size_t n;
        TRY(index_encode(&v, mixed, &p, &n));
        if (unique) {
            ref_t r;
            int64_t other;
            bool found;
            int rc2 = index_root(t, table, col, &r);
            if (rc2 == CS_OK) rc2 = seek(t, r, p, n, 0, &found, &other);
            if (rc2 != CS_OK) { free(p); return rc2; }
            if (found) {
                free(p);
                return cs_fail(CS_CONSTRAINT, 0, "objects %lld and %lld have the same primary key", (long long)other, (long long)key);
            }
        }
        index_put_be64(p + n, (uint64_t)key);
        ref_t *root;
        rc = index_slot(t, table, col, &root);
        if (rc == CS_OK) rc = index_insert_entry(t, root, p, n + 8);
        free(p);
        TRY(rc);
    }
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

/* index_check_unique: the previous entry's value part; a second entry with the same one is a
 * duplicate (entries are value || be64(key), in byte order, so equal values are adjacent). */
typedef struct unique_ctx {
    uint8_t *prev;
    size_t prevn, cap;
    bool have, dup;
    int64_t a, b; /* the keys of the first duplicate found */
} unique_ctx;

static int unique_visit(void *vctx, const uint8_t *e, size_t en, int64_t key)
{
    unique_ctx *u = vctx;
    size_t vn = en - 8; /* ileaf entries always carry their 8-byte key */
    if (u->have && u->prevn == vn && memcmp(u->prev, e, vn) == 0) {
        u->dup = true;
        u->b = key;
        return 1; /* stop */
    }
    if (vn > u->cap) {
        uint8_t *p = realloc(u->prev, vn);
        if (!p) return NOMEM();
        u->prev = p;
        u->cap = vn;
    }
    memcpy(u->prev, e, vn);
    u->prevn = vn;
    u->a = key;
    u->have = true;
    return CS_OK;
}

int index_check_unique(cs_txn *t, uint32_t table, uint32_t col)
{
    ref_t root;
    TRY(index_root(t, table, col, &root));
    if (!root) return CS_OK;
    unique_ctx u;
    memset(&u, 0, sizeof u);
    bool stop = false;
    int rc = scan_rec(t, root, NULL, 0, NULL, 0, 0, unique_visit, &u, &stop, 0);
    free(u.prev);
    TRY(rc);
    if (u.dup) return cs_fail(CS_CONSTRAINT, 0, "objects %lld and %lld have the same primary key", (long long)u.a, (long long)u.b);
    return CS_OK;
}

/* Whether a schema needs format version 2: some column has a Mixed index (FORMAT.md §6.5). */
bool index_schema_needs_v2(const schema *s)
{
    if (!s) return false;
    for (uint32_t i = 0; i < s->ntables; i++) {
        const table_def *td = schema_table(s, i);
        if (!td) continue;
        for (uint32_t c = 0; c < td->ncols; c++)
            if (is_indexed(&td->cols[c]) && td->cols[c].type == CS_TYPE_MIXED) return true;
    }
    return false;
}

/* ---- public lookups --------------------------------------------------------------------- */

static int indexed_col(cs_txn *t, uint32_t table, uint32_t col, col_def **c)
{
    TRY(txn_col(t, table, col, NULL, c));
    if (!is_indexed(*c)) return cs_fail(CS_MISUSE, 0, "property '%s' has no index", (*c)->name);
    return CS_OK;
}

int cs_index_find(cs_txn *txn, uint32_t table, uint32_t col, const cs_value *value, int64_t *key)
{
    col_def *c;
    TRY(indexed_col(txn, table, col, &c));
    bool mixed = c->type == CS_TYPE_MIXED;
    if (!mixed && value->type != CS_TYPE_NULL && value->type != (cs_type)c->type)
        return cs_fail(CS_TYPE, 0, "a value of type %d cannot match property '%s'", (int)value->type, c->name);
    bool unindexed;
    TRY(pk_unindexed(txn, table, col, &unindexed));
    if (unindexed) return pk_find(txn, table, value, key);
    ref_t root;
    TRY(index_root(txn, table, col, &root));
    probe pr;
    TRY(index_probe_make(value, mixed, &pr));
    bool found;
    int rc = seek(txn, root, pr.p, pr.n, fixed_entry_len((cs_type)c->type), &found, key);
    index_probe_free(&pr);
    TRY(rc);
    return found ? CS_OK : CS_NOTFOUND;
}

int cs_table_find_primary(cs_txn *txn, uint32_t table, const cs_value *value, int64_t *key)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    if (td->primary == CS_NONE) return cs_fail(CS_MISUSE, 0, "'%s' has no primary key", td->name);
    if (value && value->type == CS_TYPE_INT && td->cols[td->primary].type == CS_TYPE_INT) {
        /* a pk-keyed table: the object with primary key p is the one with key p, when there
         * is one (keying.c); else the index knows */
        node_hdr *leaf;
        uint32_t row;
        int krc = keying_find(txn, table, value->v.i, &leaf, &row);
        if (krc == CS_OK) {
            *key = value->v.i;
            return CS_OK;
        }
        if (krc != CS_NOTFOUND) return krc;
        /* without the index every object is at its key: not there, not anywhere (invariant 5) */
        bool unindexed;
        TRY(keying_pk_unindexed(txn, table, &unindexed));
        if (unindexed) return cs_fail(CS_NOTFOUND, 0, "no '%s' with that primary key", td->name);
    }
    int rc = cs_index_find(txn, table, td->primary, value, key);
    if (rc == CS_NOTFOUND) return cs_fail(CS_NOTFOUND, 0, "no '%s' with that primary key", td->name);
    return rc;
}

typedef struct collect_ctx {
    int64_t *keys;    /* results */
    size_t n, cap;    /* used, allocated */
    const uint8_t *prefix; /* entries must start with it (equality); NULL for ranges */
    size_t plen;      /* its length */
} collect_ctx;

static int collect_key(void *vctx, const uint8_t *e, size_t en, int64_t key)
{
    collect_ctx *c = vctx;
    if (c->prefix && (en != c->plen + 8 || !e || memcmp(e, c->prefix, c->plen) != 0)) return 1; /* stop */
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        int64_t *k = realloc(c->keys, nc * sizeof *k);
        if (!k) return NOMEM();
        c->keys = k;
        c->cap = nc;
    }
    c->keys[c->n++] = key;
    return CS_OK;
}

/* ---- a primary key without its index (invariant 5): the cluster keys answer -------------- */

/* The smallest p in [0, KEY_PK_END] whose entry (encode(p) || be64(p)) is >= the bound b (bn
 * bytes); KEY_PK_END when none is. Entries grow with p, so one binary search. */
static int64_t pk_bound(const uint8_t *b, size_t bn)
{
    int64_t lo = 0, hi = KEY_PK_END;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        uint8_t e[32];
        cs_value v = cs_int(mid);
        size_t n = index_key_into(&v, false, e);
        index_put_be64(e + n, (uint64_t)mid);
        if (cmp_bytes(e, n + 8, b, bn) >= 0) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* Adds to ctx the key of every object whose entry would lie in [lo, hi) (NULL: unbounded), in
 * key order: the table's keys in [pk_bound(lo), pk_bound(hi)). */
static int pk_collect(cs_txn *t, uint32_t table, const uint8_t *lo, size_t lon, const uint8_t *hi, size_t hin,
                      collect_ctx *ctx)
{
    int64_t from = lo ? pk_bound(lo, lon) : 0, to = hi ? pk_bound(hi, hin) : KEY_PK_END;
    if (from >= to) return CS_OK;
    cs_iter it;
    cluster_iter_init(&it, t, table);
    it.next_key = from;
    int64_t key;
    node_hdr *leaf;
    uint32_t row;
    int rc;
    while ((rc = cluster_iter_next(&it, &key, &leaf, &row)) == CS_OK && key < to) {
        rc = collect_key(ctx, NULL, 0, key);
        if (rc != CS_OK) return rc;
    }
    return rc == CS_NOTFOUND || rc == CS_OK ? CS_OK : rc;
}

/* cs_index_find of an Int primary key without its index: the object with key p, if live. */
static int pk_find(cs_txn *t, uint32_t table, const cs_value *value, int64_t *key)
{
    if (value->type != CS_TYPE_INT || value->v.i < 0 || value->v.i >= KEY_PK_END) return CS_NOTFOUND;
    ref_t root;
    TRY(table_root(t, table, &root));
    node_hdr *leaf;
    uint32_t row;
    TRY(cluster_find(t, root, value->v.i, &leaf, &row));
    *key = value->v.i;
    return CS_OK;
}

int cs_index_find_all(cs_txn *txn, uint32_t table, uint32_t col, const cs_value *value, int64_t **keys, size_t *count)
{
    col_def *c;
    TRY(indexed_col(txn, table, col, &c));
    *keys = NULL;
    *count = 0;
    bool unindexed;
    TRY(pk_unindexed(txn, table, col, &unindexed));
    if (unindexed) {
        int64_t k;
        int rc = pk_find(txn, table, value, &k);
        if (rc == CS_NOTFOUND) return CS_OK;
        TRY(rc);
        if (!(*keys = malloc(sizeof **keys))) return NOMEM();
        (*keys)[0] = k;
        *count = 1;
        return CS_OK;
    }
    ref_t root;
    TRY(index_root(txn, table, col, &root));
    if (!root) return CS_OK;
    probe pr;
    TRY(index_probe_make(value, c->type == CS_TYPE_MIXED, &pr));
    collect_ctx ctx = {NULL, 0, 0, pr.p, pr.n};
    bool stop = false;
    int rc = scan_rec(txn, root, pr.p, pr.n, NULL, 0, fixed_entry_len((cs_type)c->type), collect_key, &ctx, &stop, 0);
    index_probe_free(&pr);
    if (rc != CS_OK) { free(ctx.keys); return rc; }
    *keys = ctx.keys;
    *count = ctx.n;
    return CS_OK;
}

int cs_index_range(cs_txn *txn, uint32_t table, uint32_t col, const cs_value *lo, const cs_value *hi, int64_t **keys, size_t *count)
{
    col_def *c;
    TRY(indexed_col(txn, table, col, &c));
    *keys = NULL;
    *count = 0;
    if (c->type == CS_TYPE_MIXED)
        return cs_fail(CS_MISUSE, 0, "the index of the Mixed property '%s' answers equality only", c->name);
    bool unindexed;
    TRY(pk_unindexed(txn, table, col, &unindexed));
    ref_t root = 0;
    if (!unindexed) TRY(index_root(txn, table, col, &root));
    if (!root && !unindexed) return CS_OK;
    /* numbers of another type bound an Int index by numeric value (cs_value_compare) */
    cs_value lo2, hi2;
    if (c->type == CS_TYPE_INT) {
        for (int side = 0; side < 2; side++) {
            const cs_value *b = side ? hi : lo;
            if (!b || (b->type != CS_TYPE_DOUBLE && b->type != CS_TYPE_FLOAT)) continue;
            double d = b->type == CS_TYPE_DOUBLE ? b->v.d : (double)b->v.f;
            cs_value *o = side ? &hi2 : &lo2;
            if (d != d) {
                /* NaN sorts before every number */
                if (side) return CS_OK; /* nothing is <= NaN but NaN itself */
                lo = NULL;
                continue;
            }
            double r = side ? floor(d) : ceil(d);
            if (r >= 9223372036854775807.0) {
                if (!side) return CS_OK;
                hi = NULL;
                continue;
            }
            if (r < -9223372036854775807.0) {
                if (side) return CS_OK;
                lo = NULL;
                continue;
            }
            *o = cs_int((int64_t)r);
            if (side) hi = &hi2; else lo = &lo2;
        }
    }
    uint8_t *lp = NULL, *hp = NULL;
    size_t ln = 0, hn = 0;
    int rc = CS_OK;
    if (lo) rc = index_encode(lo, false, &lp, &ln);
    if (rc == CS_OK && hi) {
        rc = index_encode(hi, false, &hp, &hn);
        /* inclusive upper bound: everything whose value part is <= hi sorts before hi||FF.. */
        if (rc == CS_OK) {
            memset(hp + hn, 0xff, 8);
            hn += 8;
        }
    }
    collect_ctx ctx = {NULL, 0, 0, NULL, 0};
    bool stop = false;
    if (rc == CS_OK && unindexed) rc = pk_collect(txn, table, lp, ln, hp, hn, &ctx);
    else if (rc == CS_OK) rc = scan_rec(txn, root, lp, ln, hp, hn, fixed_entry_len((cs_type)c->type), collect_key, &ctx, &stop, 0);
    free(lp);
    free(hp);
    if (rc != CS_OK) { free(ctx.keys); return rc; }
    *keys = ctx.keys;
    *count = ctx.n;
    return CS_OK;
}

void cs_keys_free(int64_t *keys) { free(keys); }

/* Checks that an index holds exactly one entry per object with its current value. */
int index_verify(cs_txn *t, uint32_t table, uint32_t col)
{
    bool unindexed;
    TRY(pk_unindexed(t, table, col, &unindexed));
    if (unindexed) return CS_OK; /* keying_verify checks invariant 5 */
    ref_t root;
    TRY(index_root(t, table, col, &root));
    col_def *cd;
    TRY(txn_col(t, table, col, NULL, &cd));
    bool mixed = cd->type == CS_TYPE_MIXED;
    cs_iter it;
    cluster_iter_init(&it, t, table);
    int64_t key;
    node_hdr *leaf;
    uint32_t row;
    uint64_t objects = 0;
    int rc;
    while ((rc = cluster_iter_next(&it, &key, &leaf, &row)) == CS_OK) {
        objects++;
        cs_value v;
        TRY(indexed_value(t, leaf, row, cd, col, &v));
        uint8_t *p;
        size_t n;
        TRY(index_encode(&v, mixed, &p, &n));
        index_put_be64(p + n, (uint64_t)key);
        bool found = false;
        rc = contains(t, root, p, n + 8, 0, &found); /* through `ends`: checks every entry's length */
        free(p);
        TRY(rc);
        if (!found) return CORRUPT("index of table %u column %u misses object %lld", table, col, (long long)key);
    }
    if (rc != CS_NOTFOUND) return rc;
    collect_ctx ctx = {NULL, 0, 0, NULL, 0};
    bool stop = false;
    if (root) TRY(scan_rec(t, root, NULL, 0, NULL, 0, 0, collect_key, &ctx, &stop, 0));
    free(ctx.keys);
    if (ctx.n != objects)
        return CORRUPT("index of table %u column %u has %zu entries for %llu objects", table, col, ctx.n, (unsigned long long)objects);
    return CS_OK;
}

/* ---- range scans for the query engine ---------------------------------------------------- */

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Every object with an entry in one of the ranges [lo, hi) (whole entries compared as bytes;
 * lo NULL: from the first entry, hi NULL: to the last), once each, in key order. */
int index_collect(cs_txn *t, uint32_t table, uint32_t col, const irange *r, size_t nr, int64_t **keys, size_t *count)
{
    *keys = NULL;
    *count = 0;
    col_def *c;
    TRY(txn_col(t, table, col, NULL, &c));
    size_t flen = fixed_entry_len((cs_type)c->type);
    bool unindexed;
    TRY(pk_unindexed(t, table, col, &unindexed));
    ref_t root = 0;
    if (!unindexed) TRY(index_root(t, table, col, &root));
    if (!root && !unindexed) return CS_OK;
    collect_ctx ctx = {NULL, 0, 0, NULL, 0};
    int rc = CS_OK;
    for (size_t i = 0; i < nr && rc == CS_OK; i++) {
        bool stop = false;
        if (unindexed) rc = pk_collect(t, table, r[i].lo, r[i].lon, r[i].hi, r[i].hin, &ctx);
        else rc = scan_rec(t, root, r[i].lo, r[i].lon, r[i].hi, r[i].hin, flen, collect_key, &ctx, &stop, 0);
    }
    if (rc != CS_OK) { free(ctx.keys); return rc; }
    if (ctx.n > 1) {
        qsort(ctx.keys, ctx.n, sizeof *ctx.keys, cmp_key);
        size_t w = 1;
        for (size_t i = 1; i < ctx.n; i++)
            if (ctx.keys[i] != ctx.keys[w - 1]) ctx.keys[w++] = ctx.keys[i];
        ctx.n = w;
    }
    *keys = ctx.keys;
    *count = ctx.n;
    return CS_OK;
}
