/*
 * leaf.c -- leaves: the values of one column inside a cluster, or the elements of a
 * collection tree (docs/FORMAT.md §6). One encoding per storage kind:
 *
 *   LK_INT, LK_LINK        packed-int node (NF_NULLS when nullable; links store key + 1)
 *   LK_FLOAT .. LK_DEC     NF_BYTES node of 4, 8, 12, 12, 16, 16 bytes per element
 *   LK_STR                 NF_REFS [ends, data, bigs]: ends = packed end offsets into data
 *                          (NF_NULLS when nullable), data = byte blob, bigs = 0 or an NF_REFS
 *                          node with, per element, 0 or the ref of its own blob (values over
 *                          BIG_VALUE bytes)
 *   LK_MIXED               NF_REFS [types, ints, strs, nested]: types = packed cs_type,
 *                          ints = 64-bit payload, strs = an LK_STR leaf for the bytes of
 *                          strings, binaries, ids, decimals, timestamp nanoseconds and link
 *                          tables, nested = NF_REFS per element: 0 or a nested collection
 *   LK_REFS                NF_REFS: per element 0 or the root of a List/Set/Map tree
 *   LK_BACK                NF_REFS: per element 0, a tagged origin key, or the ref of a
 *                          packed-int node of origin keys
 *
 * Invariants:
 *  1. Every node of a leaf has the same count (the leaf's element count), except data/bigs.
 *  2. ends is non-decreasing and its last value equals data's length.
 *  3. Moving elements between leaves moves ownership of their blobs and trees; erasing frees.
 */
#include "node.h"
#include <time.h>
#include <unistd.h>
#include "leaf.h"

#define BIG_VALUE 4096u

leaf_spec leaf_spec_of(cs_type type, bool nullable, uint32_t target)
{
    leaf_spec s;
    s.type = type;
    s.nullable = nullable;
    s.target = target;
    switch (type) {
    case CS_TYPE_INT: case CS_TYPE_BOOL: s.kind = LK_INT; break;
    case CS_TYPE_LINK: s.kind = LK_LINK; break;
    case CS_TYPE_FLOAT: s.kind = LK_FLOAT; break;
    case CS_TYPE_DOUBLE: s.kind = LK_DOUBLE; break;
    case CS_TYPE_TIMESTAMP: s.kind = LK_TS; break;
    case CS_TYPE_OBJECTID: s.kind = LK_OID; break;
    case CS_TYPE_UUID: s.kind = LK_UUID; break;
    case CS_TYPE_DECIMAL: s.kind = LK_DEC; break;
    case CS_TYPE_STRING: case CS_TYPE_BINARY: s.kind = LK_STR; break;
    case CS_TYPE_MIXED: s.kind = LK_MIXED; break;
    case CS_TYPE_BACKLINK: s.kind = LK_BACK; break;
    default: s.kind = LK_REFS; break;
    }
    return s;
}

void leaf_default(const leaf_spec *s, cs_value *v)
{
    memset(v, 0, sizeof *v);
    if (s->nullable || s->kind == LK_LINK || s->kind == LK_MIXED) {
        v->type = CS_TYPE_NULL;
        return;
    }
    v->type = s->type;
    if (s->type == CS_TYPE_STRING || s->type == CS_TYPE_BINARY) v->v.bytes.ptr = "";
    if (s->type == CS_TYPE_DECIMAL) v->v.dec.w[1] = 0x3040000000000000ull; /* +0E0 */
}

leaf_spec leaf_spec_col(const col_def *c)
{
    if (c->coll != CS_COLL_NONE) {
        leaf_spec s = leaf_spec_of(CS_TYPE_LIST, false, c->target);
        s.kind = LK_REFS;
        return s;
    }
    return leaf_spec_of((cs_type)c->type, (c->flags & CS_COL_NULLABLE) != 0, c->target);
}

static uint8_t byte_width(leaf_kind k)
{
    switch (k) {
    case LK_FLOAT: return 4;
    case LK_DOUBLE: return 8;
    case LK_TS: return 12;
    case LK_OID: return 12;
    case LK_UUID: return 16;
    case LK_DEC: return 16;
    default: return 0;
    }
}

int value_check(const leaf_spec *s, const cs_value *v)
{
    if (v->type == CS_TYPE_NULL) {
        if (s->nullable || s->kind == LK_MIXED || (s->kind == LK_LINK && s->nullable)) return CS_OK;
        return cs_fail(CS_TYPE, 0, "null is not allowed here (the property is not optional)");
    }
    if (s->kind == LK_MIXED) {
        if (v->type == CS_TYPE_MIXED || v->type == CS_TYPE_BACKLINK || v->type > CS_TYPE_DICT)
            return cs_fail(CS_TYPE, 0, "not a storable value type (%d)", (int)v->type);
        if (v->type == CS_TYPE_LIST || v->type == CS_TYPE_DICT)
            return cs_fail(CS_TYPE, 0, "nested collections are created with *_set_collection");
    } else if (v->type != s->type) {
        return cs_fail(CS_TYPE, 0, "value of type %d given for a property of type %d",
                       (int)v->type, (int)s->type);
    }
    if ((v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY) && v->v.bytes.len > CS_MAX_BLOB)
        return cs_fail(CS_FULL, 0, "value of %zu bytes is over the 16 MiB limit", v->v.bytes.len);
    if (v->type == CS_TYPE_LINK && s->kind == LK_LINK && v->v.link.table != s->target)
        return cs_fail(CS_TYPE, 0, "link to table %u given for a link to table %u",
                       v->v.link.table, s->target);
    if (v->type == CS_TYPE_LINK && v->v.link.key < 0)
        return cs_fail(CS_MISUSE, 0, "negative object key");
    return CS_OK;
}

/* ---- string leaves ---------------------------------------------------------------------- */

typedef struct str_leaf {
    node_hdr *top;  /* the [ends, data, bigs] node */
    node_hdr *ends; /* end offsets */
    node_hdr *data; /* bytes */
    node_hdr *bigs; /* NULL when absent */
} str_leaf;

static int str_open(cs_txn *t, ref_t r, str_leaf *o)
{
    TRY(node_at(t, r, &o->top));
    if (!(o->top->flags & NF_REFS) || o->top->count != 3) return CORRUPT("bad string leaf at %llu", (unsigned long long)r);
    uint64_t *e = node_refs(o->top);
    TRY(node_at(t, e[0], &o->ends));
    TRY(node_at(t, e[1], &o->data));
    o->bigs = NULL;
    if (e[2]) {
        TRY(node_at(t, e[2], &o->bigs));
        if (!(o->bigs->flags & NF_REFS) || o->bigs->count != o->ends->count)
            return CORRUPT("bad string leaf big-value list");
    }
    if ((o->ends->flags & (NF_BYTES | NF_REFS)) || !(o->data->flags & NF_BYTES) || o->data->width != 1)
        return CORRUPT("bad string leaf parts");
    return CS_OK;
}

static int str_make(cs_txn *t, bool nullable, uint64_t n, ref_t *out)
{
    ref_t top, ends, data;
    TRY(node_new(t, NF_REFS, 64, 3, &top));
    TRY(node_new(t, nullable ? NF_NULLS : 0, 0, n, &ends));
    if (nullable) {
        node_hdr *h = (node_hdr *)txn_ptr(t, ends);
        for (uint64_t i = 0; i < n; i++) node_set_null(h, i, true);
    }
    TRY(node_new(t, NF_BYTES, 1, 0, &data));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, top));
    e[0] = ends;
    e[1] = data;
    e[2] = 0;
    *out = top;
    return CS_OK;
}

/* str_open through the read cache: a pass reading one string column row by row opens each
 * leaf once. In a read transaction a ref names the same immutable node for an epoch, so the
 * parts checked for `r` stay valid while the ref and epoch match (none is cached while
 * writing: txn_read_cache is NULL then). */
static int str_open_cached(cs_txn *t, ref_t r, str_leaf *o)
{
    txn_rcache *cc = txn_read_cache(t);
    if (cc && r && cc->sl_ref == r && cc->sl_epoch == t->epoch) {
        o->top = cc->sl_part[0];
        o->ends = cc->sl_part[1];
        o->data = cc->sl_part[2];
        o->bigs = cc->sl_part[3];
        return CS_OK;
    }
    TRY(str_open(t, r, o));
    if (cc) {
        cc->sl_ref = r;
        cc->sl_epoch = t->epoch;
        cc->sl_part[0] = o->top;
        cc->sl_part[1] = o->ends;
        cc->sl_part[2] = o->data;
        cc->sl_part[3] = o->bigs;
    }
    return CS_OK;
}

static int str_get(cs_txn *t, ref_t r, uint64_t i, cs_type type, cs_value *out, uint64_t *bigref)
{
    str_leaf L;
    TRY(str_open_cached(t, r, &L));
    if (i >= L.ends->count) return CORRUPT("string leaf index %llu past %u", (unsigned long long)i, L.ends->count);
    if (bigref) *bigref = 0;
    if (node_is_null(L.ends, i)) {
        out->type = CS_TYPE_NULL;
        return CS_OK;
    }
    out->type = type;
    if (L.bigs && node_refs(L.bigs)[i]) {
        ref_t b = node_refs(L.bigs)[i];
        node_hdr *bh;
        TRY(node_at(t, b, &bh));
        if (!(bh->flags & NF_BYTES) || bh->width != 1) return CORRUPT("bad big value at %llu", (unsigned long long)b);
        out->v.bytes.ptr = node_values(bh);
        out->v.bytes.len = bh->count;
        if (bigref) *bigref = b;
        return CS_OK;
    }
    int64_t s = i ? node_get_int(L.ends, i - 1) : 0;
    int64_t e = node_get_int(L.ends, i);
    if (s < 0 || e < s || (uint64_t)e > L.data->count) return CORRUPT("bad string offsets in leaf");
    out->v.bytes.ptr = node_values(L.data) + s;
    out->v.bytes.len = (size_t)(e - s);
    return CS_OK;
}

/* Writable parts of a string leaf: slots inside the (writable) top node. */
static int str_writable(cs_txn *t, ref_t *slot, uint64_t **e)
{
    TRY(node_cow(t, slot));
    *e = node_refs((node_hdr *)txn_ptr(t, *slot));
    return CS_OK;
}

/* Replaces element i's content by `p`/`n` (big blob `bigref` if non-zero), null if !present. */
static int str_put(cs_txn *t, ref_t *slot, uint64_t i, bool present, const void *p, uint64_t n,
                   ref_t bigref, bool free_old)
{
    uint64_t *e;
    TRY(str_writable(t, slot, &e));
    node_hdr *ends;
    TRY(node_at(t, e[0], &ends));
    uint64_t count = ends->count;
    int64_t s = i ? node_get_int(ends, i - 1) : 0;
    int64_t old_end = node_get_int(ends, i);
    /* drop the old big value */
    if (e[2]) {
        node_hdr *bh;
        TRY(node_at(t, e[2], &bh));
        uint64_t ob = node_refs(bh)[i];
        if (ob) {
            if (free_old) node_free_tree(t, ob);
            TRY(node_cow(t, &e[2]));
            node_refs((node_hdr *)txn_ptr(t, e[2]))[i] = 0;
        }
    }
    bool big = present && (bigref != 0 || n > BIG_VALUE);
    uint64_t inl = (present && !big) ? n : 0;
    int64_t delta = (int64_t)inl - (old_end - s);
    if (delta != 0 || inl) TRY(blob_splice(t, &e[1], (uint64_t)s, (uint64_t)(old_end - s), p, inl));
    if (delta != 0) {
        node_hdr *dh = (node_hdr *)txn_ptr(t, e[1]);
        int64_t last = (int64_t)dh->count;
        TRY(node_reserve(t, &e[0], count, width_for(last)));
        ends = (node_hdr *)txn_ptr(t, e[0]);
        packed_add(node_values(ends), ends->width, i, count, delta);
    } else {
        TRY(node_cow(t, &e[0]));
    }
    ends = (node_hdr *)txn_ptr(t, e[0]);
    if (ends->flags & NF_NULLS) node_set_null(ends, i, !present);
    if (big) {
        ref_t b = bigref;
        if (!b) TRY(node_new_blob(t, p, n, &b));
        if (!e[2]) TRY(node_new(t, NF_REFS, 64, count, &e[2]));
        TRY(node_cow(t, &e[2]));
        node_refs((node_hdr *)txn_ptr(t, e[2]))[i] = b;
    }
    return CS_OK;
}

static int str_insert_empty(cs_txn *t, ref_t *slot, uint64_t i)
{
    uint64_t *e;
    TRY(str_writable(t, slot, &e));
    node_hdr *ends;
    TRY(node_at(t, e[0], &ends));
    int64_t s = i ? node_get_int(ends, i - 1) : 0;
    TRY(node_insert_int(t, &e[0], i, s));
    if (e[2]) TRY(node_insert_int(t, &e[2], i, 0));
    return CS_OK;
}

static int str_erase(cs_txn *t, ref_t *slot, uint64_t i, bool free_big)
{
    TRY(str_put(t, slot, i, true, NULL, 0, 0, free_big));
    uint64_t *e;
    TRY(str_writable(t, slot, &e));
    TRY(node_erase(t, &e[0], i));
    if (e[2]) TRY(node_erase(t, &e[2], i));
    return CS_OK;
}

/* ---- mixed leaves ----------------------------------------------------------------------- */

enum { MX_TYPES = 0, MX_INTS = 1, MX_STRS = 2, MX_NESTED = 3 };

static int mixed_make(cs_txn *t, uint64_t n, ref_t *out)
{
    ref_t top, a, b, c, d;
    TRY(node_new(t, NF_REFS, 64, 4, &top));
    TRY(node_new(t, 0, 0, n, &a));
    TRY(node_new(t, 0, 0, n, &b));
    TRY(str_make(t, false, n, &c));
    TRY(node_new(t, NF_REFS, 64, n, &d));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, top));
    e[0] = a; e[1] = b; e[2] = c; e[3] = d;
    *out = top;
    return CS_OK;
}

static int mixed_open(cs_txn *t, ref_t r, node_hdr **parts, uint64_t *str_ref)
{
    node_hdr *top;
    TRY(node_at(t, r, &top));
    if (!(top->flags & NF_REFS) || top->count != 4) return CORRUPT("bad mixed leaf at %llu", (unsigned long long)r);
    uint64_t *e = node_refs(top);
    TRY(node_at(t, e[0], &parts[0]));
    TRY(node_at(t, e[1], &parts[1]));
    TRY(node_at(t, e[3], &parts[3]));
    *str_ref = e[2];
    if ((parts[0]->flags & (NF_BYTES | NF_REFS)) || (parts[1]->flags & (NF_BYTES | NF_REFS)) ||
        !(parts[3]->flags & NF_REFS) || parts[1]->count != parts[0]->count ||
        parts[3]->count != parts[0]->count)
        return CORRUPT("bad mixed leaf parts");
    return CS_OK;
}

static int mixed_get(cs_txn *t, ref_t r, uint64_t i, cs_value *out)
{
    node_hdr *p[4];
    uint64_t sr;
    TRY(mixed_open(t, r, p, &sr));
    if (i >= p[0]->count) return CORRUPT("mixed leaf index past its end");
    int64_t ty = node_get_int(p[0], i);
    int64_t iv = node_get_int(p[1], i);
    cs_value sv;
    memset(out, 0, sizeof *out);
    out->type = (cs_type)ty;
    switch (ty) {
    case CS_TYPE_NULL: return CS_OK;
    case CS_TYPE_INT: out->v.i = iv; return CS_OK;
    case CS_TYPE_BOOL: out->v.b = iv != 0; return CS_OK;
    case CS_TYPE_FLOAT: { uint32_t b = (uint32_t)iv; memcpy(&out->v.f, &b, 4); return CS_OK; }
    case CS_TYPE_DOUBLE: memcpy(&out->v.d, &iv, 8); return CS_OK;
    case CS_TYPE_LIST: case CS_TYPE_DICT: return CS_OK;
    default: break;
    }
    TRY(str_get(t, sr, i, CS_TYPE_BINARY, &sv, NULL));
    size_t n = sv.type == CS_TYPE_NULL ? 0 : sv.v.bytes.len;
    switch (ty) {
    case CS_TYPE_STRING: case CS_TYPE_BINARY:
        if (sv.type == CS_TYPE_NULL) break; /* writers always store the bytes */
        out->v.bytes = sv.v.bytes;
        return CS_OK;
    case CS_TYPE_TIMESTAMP:
        if (n != 4) break;
        out->v.ts.sec = iv;
        memcpy(&out->v.ts.nsec, sv.v.bytes.ptr, 4);
        return CS_OK;
    case CS_TYPE_OBJECTID: if (n != 12) break; memcpy(out->v.oid, sv.v.bytes.ptr, 12); return CS_OK;
    case CS_TYPE_UUID: if (n != 16) break; memcpy(out->v.uuid, sv.v.bytes.ptr, 16); return CS_OK;
    case CS_TYPE_DECIMAL: if (n != 16) break; memcpy(&out->v.dec, sv.v.bytes.ptr, 16); return CS_OK;
    case CS_TYPE_LINK:
        if (n != 4) break;
        out->v.link.key = iv;
        memcpy(&out->v.link.table, sv.v.bytes.ptr, 4);
        return CS_OK;
    default: break;
    }
    return CORRUPT("bad mixed value (type %lld, %zu bytes)", (long long)ty, n);
}

/* A new nested collection's identity: never 0, drawn from a sequence seeded per process (the
 * time, the process id and an address), so that a collection made again at the same place is
 * told from the one it replaced (docs/ARCHITECTURE.md, "Collections nested in AnyRealmValue"). */
static uint32_t nested_identity_new(void)
{
    static uint64_t seed, counter;
    uint64_t s = __atomic_load_n(&seed, __ATOMIC_RELAXED);
    if (!s) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t fresh = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^
                         ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&seed;
        fresh |= 1;
        uint64_t none = 0;
        if (!__atomic_compare_exchange_n(&seed, &none, fresh, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            fresh = none;
        s = fresh;
    }
    /* splitmix64 of the seed plus a counter, and the process id (a forked child, which inherits
     * both, draws other numbers than its parent) */
    uint64_t z = (s ^ ((uint64_t)getpid() << 20)) + __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    uint32_t id = (uint32_t)(z ^ (z >> 32));
    return id ? id : 1;
}

static int mixed_put(cs_txn *t, ref_t *slot, uint64_t i, const cs_value *v, bool free_old)
{
    TRY(node_cow(t, slot));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
    node_hdr *nest;
    TRY(node_at(t, e[MX_NESTED], &nest));
    uint64_t old = node_refs(nest)[i];
    if (old) {
        if (free_old) node_free_tree(t, old);
        TRY(node_cow(t, &e[MX_NESTED]));
        node_refs((node_hdr *)txn_ptr(t, e[MX_NESTED]))[i] = 0;
    }
    int64_t iv = 0;
    uint8_t buf[16];
    const void *bp = NULL;
    uint64_t bn = 0;
    switch (v->type) {
    case CS_TYPE_INT: iv = v->v.i; break;
    case CS_TYPE_BOOL: iv = v->v.b; break;
    case CS_TYPE_FLOAT: { uint32_t b; memcpy(&b, &v->v.f, 4); iv = b; break; }
    case CS_TYPE_DOUBLE: memcpy(&iv, &v->v.d, 8); break;
    case CS_TYPE_STRING: case CS_TYPE_BINARY: bp = v->v.bytes.ptr; bn = v->v.bytes.len; break;
    case CS_TYPE_TIMESTAMP: iv = v->v.ts.sec; memcpy(buf, &v->v.ts.nsec, 4); bp = buf; bn = 4; break;
    case CS_TYPE_OBJECTID: memcpy(buf, v->v.oid, 12); bp = buf; bn = 12; break;
    case CS_TYPE_UUID: memcpy(buf, v->v.uuid, 16); bp = buf; bn = 16; break;
    case CS_TYPE_DECIMAL: memcpy(buf, &v->v.dec, 16); bp = buf; bn = 16; break;
    case CS_TYPE_LINK: iv = v->v.link.key; memcpy(buf, &v->v.link.table, 4); bp = buf; bn = 4; break;
    case CS_TYPE_LIST: case CS_TYPE_DICT: iv = nested_identity_new(); break;
    default: break;
    }
    TRY(node_set_int(t, &e[MX_TYPES], i, v->type));
    TRY(node_set_int(t, &e[MX_INTS], i, iv));
    TRY(str_put(t, &e[MX_STRS], i, true, bp ? bp : "", bn, 0, true));
    return CS_OK;
}

/* ---- generic leaf operations ------------------------------------------------------------ */

int leaf_make(cs_txn *t, const leaf_spec *s, uint64_t n, ref_t *out)
{
    uint8_t nf = s->nullable ? NF_NULLS : 0;
    switch (s->kind) {
    case LK_INT: TRY(node_new(t, nf, 0, n, out)); break;
    case LK_LINK: return node_new(t, 0, 0, n, out);
    case LK_STR: return str_make(t, s->nullable, n, out);
    case LK_MIXED: return mixed_make(t, n, out);
    case LK_REFS: case LK_BACK: return node_new(t, NF_REFS, 64, n, out);
    default: TRY(node_new(t, NF_BYTES | nf, byte_width(s->kind), n, out)); break;
    }
    if (nf) {
        node_hdr *h = (node_hdr *)txn_ptr(t, *out);
        for (uint64_t i = 0; i < n; i++) node_set_null(h, i, true);
    }
    return CS_OK;
}

int leaf_count(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t *out)
{
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (s->kind == LK_STR || s->kind == LK_MIXED) {
        if (!(h->flags & NF_REFS) || h->count < 1) return CORRUPT("bad leaf at %llu", (unsigned long long)r);
        node_hdr *x;
        TRY(node_at(t, node_refs(h)[0], &x));
        *out = x->count;
        return CS_OK;
    }
    *out = h->count;
    return CS_OK;
}

static int fixed_node(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, node_hdr **h)
{
    TRY(node_at(t, r, h));
    if (i >= (*h)->count) return CORRUPT("leaf index %llu past %u", (unsigned long long)i, (*h)->count);
    bool bytes = ((*h)->flags & NF_BYTES) != 0;
    if (s->kind == LK_INT || s->kind == LK_LINK) {
        if (bytes || ((*h)->flags & NF_REFS)) return CORRUPT("leaf of the wrong kind");
    } else if (s->kind == LK_REFS || s->kind == LK_BACK) {
        if (!((*h)->flags & NF_REFS)) return CORRUPT("leaf of the wrong kind");
    } else if (!bytes || (*h)->width != byte_width(s->kind)) {
        return CORRUPT("leaf of the wrong kind");
    }
    return CS_OK;
}

int leaf_get_run(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t from, uint64_t n, cs_value *out)
{
    if (s->kind != LK_STR) {
        for (uint64_t j = 0; j < n; j++) TRY(leaf_get(t, s, r, from + j, &out[j]));
        return CS_OK;
    }
    if (!n) return CS_OK;
    str_leaf L;
    TRY(str_open_cached(t, r, &L));
    if (from >= L.ends->count || n > L.ends->count - from)
        return CORRUPT("string leaf rows %llu..%llu past %u", (unsigned long long)from,
                       (unsigned long long)(from + n), L.ends->count);
    /* each row's start is the previous row's end, as str_get reads them */
    int64_t start = from ? node_get_int(L.ends, from - 1) : 0;
    for (uint64_t j = 0; j < n; j++) {
        uint64_t i = from + j;
        int64_t end = node_get_int(L.ends, i);
        cs_value *v = &out[j];
        if (node_is_null(L.ends, i)) {
            v->type = CS_TYPE_NULL;
        } else if (L.bigs && node_refs(L.bigs)[i]) {
            TRY(str_get(t, r, i, s->type, v, NULL));
        } else {
            if (start < 0 || end < start || (uint64_t)end > L.data->count) return CORRUPT("bad string offsets in leaf");
            v->type = s->type;
            v->v.bytes.ptr = node_values(L.data) + start;
            v->v.bytes.len = (size_t)(end - start);
        }
        start = end;
    }
    return CS_OK;
}

int leaf_get(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, cs_value *out)
{
    if (s->kind == LK_STR) return str_get(t, r, i, s->type, out, NULL);
    if (s->kind == LK_MIXED) return mixed_get(t, r, i, out);
    node_hdr *h;
    TRY(fixed_node(t, s, r, i, &h));
    if (node_is_null(h, i)) {
        out->type = CS_TYPE_NULL;
        return CS_OK;
    }
    out->type = s->type;
    const uint8_t *p;
    switch (s->kind) {
    case LK_INT:
        if (s->type == CS_TYPE_BOOL) out->v.b = node_get_int(h, i) != 0;
        else out->v.i = node_get_int(h, i);
        return CS_OK;
    case LK_LINK: {
        int64_t k = node_get_int(h, i);
        if (k == 0) { out->type = CS_TYPE_NULL; return CS_OK; }
        out->v.link.table = s->target;
        out->v.link.key = k - 1;
        return CS_OK;
    }
    case LK_REFS: case LK_BACK:
        out->type = CS_TYPE_INT;
        out->v.i = (int64_t)node_refs(h)[i];
        return CS_OK;
    default: break;
    }
    p = node_values(h) + i * h->width;
    switch (s->kind) {
    case LK_FLOAT: memcpy(&out->v.f, p, 4); break;
    case LK_DOUBLE: memcpy(&out->v.d, p, 8); break;
    case LK_TS: memcpy(&out->v.ts.sec, p, 8); memcpy(&out->v.ts.nsec, p + 8, 4); break;
    case LK_OID: memcpy(out->v.oid, p, 12); break;
    case LK_UUID: memcpy(out->v.uuid, p, 16); break;
    case LK_DEC: memcpy(&out->v.dec, p, 16); break;
    default: break;
    }
    return CS_OK;
}

static void fixed_encode(const leaf_spec *s, const cs_value *v, uint8_t *p)
{
    switch (s->kind) {
    case LK_FLOAT: memcpy(p, &v->v.f, 4); break;
    case LK_DOUBLE: memcpy(p, &v->v.d, 8); break;
    case LK_TS: memcpy(p, &v->v.ts.sec, 8); memcpy(p + 8, &v->v.ts.nsec, 4); break;
    case LK_OID: memcpy(p, v->v.oid, 12); break;
    case LK_UUID: memcpy(p, v->v.uuid, 16); break;
    case LK_DEC: memcpy(p, &v->v.dec, 16); break;
    default: break;
    }
}

static int64_t int_of(const leaf_spec *s, const cs_value *v)
{
    if (v->type == CS_TYPE_NULL) return 0;
    if (s->kind == LK_LINK) return v->v.link.key + 1;
    if (v->type == CS_TYPE_BOOL) return v->v.b ? 1 : 0;
    return v->v.i;
}

int leaf_set(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v)
{
    bool null = v->type == CS_TYPE_NULL;
    switch (s->kind) {
    case LK_STR:
        return str_put(t, slot, i, !null, null ? NULL : v->v.bytes.ptr, null ? 0 : v->v.bytes.len, 0, true);
    case LK_MIXED: return mixed_put(t, slot, i, v, true);
    case LK_INT: case LK_LINK: {
        TRY(node_set_int(t, slot, i, int_of(s, v)));
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        if (h->flags & NF_NULLS) node_set_null(h, i, null);
        return CS_OK;
    }
    case LK_REFS: case LK_BACK: return cs_fail(CS_MISUSE, 0, "not a value leaf");
    default: {
        TRY(node_cow(t, slot));
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        if (null) memset(node_values(h) + i * h->width, 0, h->width);
        else fixed_encode(s, v, node_values(h) + i * h->width);
        if (h->flags & NF_NULLS) node_set_null(h, i, null);
        return CS_OK;
    }
    }
}

int leaf_insert(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v)
{
    bool null = v->type == CS_TYPE_NULL;
    switch (s->kind) {
    case LK_STR:
        TRY(str_insert_empty(t, slot, i));
        return str_put(t, slot, i, !null, null ? NULL : v->v.bytes.ptr, null ? 0 : v->v.bytes.len, 0, true);
    case LK_MIXED: {
        TRY(node_cow(t, slot));
        uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
        TRY(node_insert_int(t, &e[MX_TYPES], i, 0));
        TRY(node_insert_int(t, &e[MX_INTS], i, 0));
        TRY(str_insert_empty(t, &e[MX_STRS], i));
        TRY(node_insert_int(t, &e[MX_NESTED], i, 0));
        return mixed_put(t, slot, i, v, true);
    }
    case LK_INT: case LK_LINK: {
        TRY(node_insert_int(t, slot, i, int_of(s, v)));
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        if (h->flags & NF_NULLS) node_set_null(h, i, null);
        return CS_OK;
    }
    case LK_REFS: case LK_BACK: return node_insert_int(t, slot, i, 0);
    default: {
        uint8_t buf[16] = {0};
        if (!null) fixed_encode(s, v, buf);
        TRY(node_insert_bytes(t, slot, i, buf));
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        if (h->flags & NF_NULLS) node_set_null(h, i, null);
        return CS_OK;
    }
    }
}

int leaf_pad(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t n)
{
    uint64_t have;
    TRY(leaf_count(t, s, *slot, &have));
    if (have >= n) return CS_OK;
    cs_value dv;
    leaf_default(s, &dv);
    if (s->kind == LK_INT || s->kind == LK_LINK || s->kind == LK_REFS || s->kind == LK_BACK)
        TRY(node_reserve(t, slot, n, 0));
    for (uint64_t i = have; i < n; i++) TRY(leaf_insert(t, s, slot, i, &dv));
    return CS_OK;
}

int leaf_put(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v)
{
    uint64_t have;
    TRY(leaf_count(t, s, *slot, &have));
    if (i < have) return leaf_set(t, s, slot, i, v);
    TRY(leaf_pad(t, s, slot, i));
    return leaf_insert(t, s, slot, i, v);
}

int leaf_erase(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i)
{
    switch (s->kind) {
    case LK_STR: return str_erase(t, slot, i, true);
    case LK_MIXED: {
        cs_value nul = cs_null();
        TRY(mixed_put(t, slot, i, &nul, true));
        uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
        TRY(node_erase(t, &e[MX_TYPES], i));
        TRY(node_erase(t, &e[MX_INTS], i));
        TRY(str_erase(t, &e[MX_STRS], i, true));
        TRY(node_erase(t, &e[MX_NESTED], i));
        return CS_OK;
    }
    case LK_REFS: case LK_BACK: {
        node_hdr *h;
        TRY(node_at(t, *slot, &h));
        uint64_t r = node_refs(h)[i];
        if (r && !tagged(r)) node_free_tree(t, r);
        return node_erase(t, slot, i);
    }
    default: return node_erase(t, slot, i);
    }
}

int leaf_get_ref(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, uint64_t *out)
{
    node_hdr *h;
    if (s->kind == LK_MIXED) {
        node_hdr *p[4];
        uint64_t sr;
        TRY(mixed_open(t, r, p, &sr));
        if (i >= p[3]->count) return CORRUPT("mixed leaf index past its end");
        *out = node_refs(p[3])[i];
        return CS_OK;
    }
    TRY(fixed_node(t, s, r, i, &h));
    *out = node_refs(h)[i];
    return CS_OK;
}

int leaf_get_identity(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, uint32_t *out)
{
    *out = 0;
    if (s->kind != LK_MIXED) return CS_OK;
    node_hdr *p[4];
    uint64_t sr;
    TRY(mixed_open(t, r, p, &sr));
    if (i >= p[0]->count || i >= p[1]->count) return CORRUPT("mixed leaf index past its end");
    int64_t ty = node_get_int(p[0], i);
    if (ty == CS_TYPE_LIST || ty == CS_TYPE_DICT) *out = (uint32_t)node_get_int(p[1], i);
    return CS_OK;
}

int leaf_set_identity(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, uint32_t identity)
{
    if (s->kind != LK_MIXED) return CS_OK;
    TRY(node_cow(t, slot));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
    return node_set_int(t, &e[MX_INTS], i, identity);
}

int leaf_set_ref(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, uint64_t v)
{
    if (s->kind == LK_MIXED) {
        TRY(node_cow(t, slot));
        uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
        TRY(node_cow(t, &e[MX_NESTED]));
        node_refs((node_hdr *)txn_ptr(t, e[MX_NESTED]))[i] = v;
        return CS_OK;
    }
    TRY(node_cow(t, slot));
    node_refs((node_hdr *)txn_ptr(t, *slot))[i] = v;
    return CS_OK;
}

/* Moves [from, n) of string leaf *src to the end of *dst, keeping big blobs. */
static int str_move(cs_txn *t, ref_t *src, uint64_t from, ref_t *dst)
{
    str_leaf L;
    TRY(str_open(t, *src, &L));
    uint64_t n = L.ends->count;
    for (uint64_t i = from; i < n; i++) {
        cs_value v;
        uint64_t big;
        TRY(str_get(t, *src, i, CS_TYPE_BINARY, &v, &big));
        uint64_t dn;
        str_leaf D;
        TRY(str_open(t, *dst, &D));
        dn = D.ends->count;
        TRY(str_insert_empty(t, dst, dn));
        if (v.type == CS_TYPE_NULL) {
            TRY(str_put(t, dst, dn, false, NULL, 0, 0, false));
        } else if (big) {
            TRY(str_put(t, dst, dn, true, NULL, v.v.bytes.len, big, false));
        } else {
            TRY(str_put(t, dst, dn, true, v.v.bytes.ptr, v.v.bytes.len, 0, false));
        }
        TRY(str_open(t, *src, &L)); /* the source may have moved? (never: only dst writes) */
    }
    /* truncate the source without freeing moved blobs */
    uint64_t *e;
    TRY(str_writable(t, src, &e));
    node_hdr *ends;
    TRY(node_at(t, e[0], &ends));
    int64_t cut = from ? node_get_int(ends, from - 1) : 0;
    node_hdr *data;
    TRY(node_at(t, e[1], &data));
    TRY(blob_splice(t, &e[1], (uint64_t)cut, data->count - (uint64_t)cut, NULL, 0));
    TRY(node_truncate(t, &e[0], from));
    if (e[2]) TRY(node_truncate(t, &e[2], from));
    return CS_OK;
}

int leaf_move(cs_txn *t, const leaf_spec *s, ref_t *src, uint64_t from, ref_t *dst)
{
    if (s->kind == LK_STR) return str_move(t, src, from, dst);
    if (s->kind == LK_MIXED) {
        TRY(node_cow(t, src));
        TRY(node_cow(t, dst));
        uint64_t *se = node_refs((node_hdr *)txn_ptr(t, *src));
        uint64_t *de = node_refs((node_hdr *)txn_ptr(t, *dst));
        leaf_spec is = leaf_spec_of(CS_TYPE_INT, false, 0);
        leaf_spec rs = leaf_spec_of(CS_TYPE_BACKLINK, false, 0);
        TRY(leaf_move(t, &is, &se[MX_TYPES], from, &de[MX_TYPES]));
        TRY(leaf_move(t, &is, &se[MX_INTS], from, &de[MX_INTS]));
        TRY(str_move(t, &se[MX_STRS], from, &de[MX_STRS]));
        TRY(leaf_move(t, &rs, &se[MX_NESTED], from, &de[MX_NESTED]));
        return CS_OK;
    }
    node_hdr *h;
    TRY(node_at(t, *src, &h));
    uint64_t n = h->count;
    node_hdr *d;
    TRY(node_at(t, *dst, &d));
    uint64_t dn = d->count;
    if (h->flags & NF_BYTES) {
        TRY(node_reserve(t, dst, dn + (n - from), 0));
        for (uint64_t i = from; i < n; i++) {
            h = (node_hdr *)txn_ptr(t, *src);
            TRY(node_insert_bytes(t, dst, dn + (i - from), node_values(h) + i * h->width));
            if (node_is_null(h, i)) node_set_null((node_hdr *)txn_ptr(t, *dst), dn + (i - from), true);
        }
    } else if (!(h->flags & NF_REFS) && n > from) {
        /* packed Ints: one append of the whole tail (one reserve, one width), then the nulls */
        uint64_t k = n - from;
        int64_t small[CLUSTER_MAX];
        int64_t *v = k <= CLUSTER_MAX ? small : malloc(k * sizeof *v);
        if (!v) return NOMEM();
        for (uint64_t i = 0; i < k; i++) v[i] = node_get_int(h, from + i);
        int rc = node_append_ints(t, dst, v, k);
        if (v != small) free(v);
        TRY(rc);
        h = (node_hdr *)txn_ptr(t, *src);
        if (h->flags & NF_NULLS)
            for (uint64_t i = 0; i < k; i++)
                if (node_is_null(h, from + i)) node_set_null((node_hdr *)txn_ptr(t, *dst), dn + i, true);
    } else {
        uint8_t w = 0;
        for (uint64_t i = from; i < n; i++) {
            uint8_t x = (h->flags & NF_REFS) ? 64 : width_for(node_get_int(h, i));
            if (x > w) w = x;
        }
        TRY(node_reserve(t, dst, dn + (n - from), w));
        for (uint64_t i = from; i < n; i++) {
            h = (node_hdr *)txn_ptr(t, *src);
            bool nul = node_is_null(h, i);
            TRY(node_insert_int(t, dst, dn + (i - from), node_get_int(h, i)));
            if (nul) node_set_null((node_hdr *)txn_ptr(t, *dst), dn + (i - from), true);
        }
    }
    return node_truncate(t, src, from);
}
