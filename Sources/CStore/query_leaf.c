/*
 * query_leaf.c -- the leaf loops: conditions `IntColumn op constant` (and AND chains of them)
 * and Int aggregates run over a cluster leaf's packed column arrays (docs/FORMAT.md §6.2) in
 * width-specialised loops the compiler vectorises, deciding whole leaves from their packed
 * width where it can (docs/ARCHITECTURE.md, Queries).
 *
 * Invariants:
 *  1. A leaf claims at most CLUSTER_ROWS_READ_MAX rows; more is CS_CORRUPT before any per-row
 *     array is touched.
 *  2. A column node read by a loop is a packed node without nulls (plain, or frame of reference:
 *     FORMAT.md §3) with exactly one value per row; a missing column node means every row holds
 *     the default 0.
 *  3. A frame-of-reference node is compared on its elements against k - base and summed as its
 *     elements plus base times the rows counted: the loops are the plain ones.
 */
#include "cluster.h"
#include "schema.h"
#include "query_int.h"

bool query_collect_fast(cs_query *q, qnode *n, fastcond *out, size_t *nf)
{
    if (n->kind == QN_AND) return query_collect_fast(q, n->a, out, nf) && query_collect_fast(q, n->b, out, nf);
    if (n->kind != QN_CMP || n->flags || n->quant != QQ_NONE || n->op > QOP_GE || *nf >= FAST_MAX) return false;
    qnode *kp = n->a, *kc = n->b;
    qop op = n->op;
    if (kp->kind != QN_KEYPATH) {
        qnode *x = kp; kp = kc; kc = x;
        switch (op) { case QOP_LT: op = QOP_GT; break; case QOP_LE: op = QOP_GE; break; case QOP_GT: op = QOP_LT; break; case QOP_GE: op = QOP_LE; break; default: break; }
    }
    if (kp->kind != QN_KEYPATH || kc->kind != QN_CONST || kc->value.type != CS_TYPE_INT) return false;
    bpath *b = kp->owned;
    if (!b || b->n != 1 || b->steps[0].kind != BS_COL || b->steps[0].type != CS_TYPE_INT) return false;
    col_def *c = query_bound_col(q, q->table, b->steps[0].col);
    if (!c || (c->flags & CS_COL_NULLABLE)) return false;
    cs_assert3(*nf, <, FAST_MAX);
    out[*nf].col = b->steps[0].col;
    out[*nf].op = op;
    out[*nf].k = kc->value.v.i;
    (*nf)++;
    return true;
}

/* Whether `v OP k` holds for every value a packed node can hold (1), for none (0), or depends on
 * the value (-1): a leaf is then decided by its width (and base) alone. */
static int width_decides(node_hdr *h, qop op, int64_t k)
{
    if (h->width == 64) return -1;
    int64_t lo, hi;
    node_value_range(h, &lo, &hi);
    switch (op) {
    case QOP_EQ: return (k < lo || k > hi) ? 0 : (lo == hi) ? 1 : -1;
    case QOP_NE: return (k < lo || k > hi) ? 1 : (lo == hi) ? 0 : -1;
    case QOP_LT: return hi < k ? 1 : lo >= k ? 0 : -1;
    case QOP_LE: return hi <= k ? 1 : lo > k ? 0 : -1;
    case QOP_GT: return lo > k ? 1 : hi <= k ? 0 : -1;
    default: return lo >= k ? 1 : hi < k ? 0 : -1;
    }
}

/* Runs ACC(i, a[i] OP k) over the `rows` values of the array p of T, one loop per operator,
 * so that each loop is a plain comparison the compiler vectorises. The comparison is made in T:
 * a leaf reaches these loops only when width_decides left it open, which means k lies within
 * the range T holds, so narrowing k loses nothing (and SSE2 has 8/16/32-bit lane compares but
 * no 64-bit one, so comparing in int64_t would leave the loop scalar). */
#define CMP_LOOPS(T, ACC)                                                                       \
    do {                                                                                        \
        const T *a = (const T *)(const void *)p;                                                \
        const T kt = (T)k;                                                                      \
        switch (op) {                                                                           \
        case QOP_EQ: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] == kt); break;             \
        case QOP_NE: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] != kt); break;             \
        case QOP_LT: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] < kt); break;              \
        case QOP_LE: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] <= kt); break;             \
        case QOP_GT: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] > kt); break;              \
        default: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] >= kt); break;                 \
        }                                                                                       \
    } while (0)

#define MASK_ACC(i, r) (hit[i] &= (r))

#define COUNT_ACC(i, r) (n += (uint32_t)(r))

/* Marks in `hit` (one byte per row) the rows of a leaf column matching col OP k. */
static void fast_leaf(node_hdr *h, uint64_t rows, qop op, int64_t k, uint8_t *hit)
{
    int decided = width_decides(h, op, k);
    if (decided == 0) memset(hit, 0, rows);
    if (decided >= 0) return;
    const uint8_t *p = node_values(h);
    k = (int64_t)((uint64_t)k - (uint64_t)node_base(h)); /* invariant 3; k is in the node's range */
    switch (h->width) {
    case 8: CMP_LOOPS(int8_t, MASK_ACC); break;
    case 16: CMP_LOOPS(int16_t, MASK_ACC); break;
    case 32: CMP_LOOPS(int32_t, MASK_ACC); break;
    case 64: CMP_LOOPS(int64_t, MASK_ACC); break;
    default:
        for (uint64_t i = 0; i < rows; i++) {
            int64_t v = packed_get(p, h->width, i);
            bool r = op == QOP_EQ ? v == k : op == QOP_NE ? v != k : op == QOP_LT ? v < k : op == QOP_LE ? v <= k : op == QOP_GT ? v > k : v >= k;
            hit[i] &= r;
        }
    }
}

/* Counts the rows of a leaf column matching col OP k: the one-condition count, fused (no mask
 * is written and then summed). */
static uint64_t fast_leaf_count(node_hdr *h, uint64_t rows, qop op, int64_t k)
{
    int decided = width_decides(h, op, k);
    if (decided >= 0) return decided ? rows : 0;
    const uint8_t *p = node_values(h);
    int64_t k0 = k;
    k = (int64_t)((uint64_t)k - (uint64_t)node_base(h)); /* invariant 3 */
    uint32_t n = 0; /* a leaf holds at most CLUSTER_ROWS_READ_MAX rows */
    switch (h->width) {
    case 8: CMP_LOOPS(int8_t, COUNT_ACC); break;
    case 16: CMP_LOOPS(int16_t, COUNT_ACC); break;
    case 32: CMP_LOOPS(int32_t, COUNT_ACC); break;
    case 64: CMP_LOOPS(int64_t, COUNT_ACC); break;
    default: {
        uint8_t hit[CLUSTER_ROWS_READ_MAX];
        memset(hit, 1, rows);
        fast_leaf(h, rows, op, k0, hit);
        for (uint64_t i = 0; i < rows; i++) n += hit[i];
    }
    }
    return n;
}

#undef CMP_LOOPS

#undef MASK_ACC

#undef COUNT_ACC

/* The key node of a cluster leaf and its row count. */
static int leaf_rows(cs_txn *t, node_hdr *h, node_hdr **keys, uint64_t *rows)
{
    TRY(node_at(t, cluster_keys_ref(h), keys));
    *rows = (*keys)->count;
    if (*rows > CLUSTER_ROWS_READ_MAX) return CORRUPT("cluster leaf holds %llu rows", (unsigned long long)*rows);
    return CS_OK;
}

/* The node of Int column `col` in a cluster leaf of `rows` rows, or NULL when the leaf does not
 * materialise the column (every row then holds the default, 0). In a write transaction the node
 * may be shorter than the leaf (cluster.c invariant 2): rows past its count hold 0. */
static int leaf_int_col(cs_txn *t, node_hdr *h, uint32_t col, uint64_t rows, node_hdr **ch)
{
    ref_t cr = cluster_leaf_col_ref(h, col);
    *ch = NULL;
    if (!cr) return CS_OK;
    TRY(node_at(t, cr, ch));
    if (((*ch)->flags & (NF_BYTES | NF_REFS | NF_NULLS)) || (*ch)->count > rows || (!t->writing && (*ch)->count != rows))
        return CORRUPT("int column node is malformed");
    return CS_OK;
}

/* Whether the default value 0 satisfies `OP k`. */
static bool fast_default_holds(const fastcond *fc)
{
    bool r0 = false;
    cs_value z = cs_int(0), kv = cs_int(fc->k);
    query_cmp_values(fc->op, 0, &z, &kv, &r0);
    return r0;
}

/* Marks in `hit` the rows of a cluster leaf that satisfy every condition of `fc`. */
static int leaf_hits(cs_txn *t, node_hdr *h, const fastcond *fc, size_t nf, node_hdr **keys, uint64_t *rows_out,
                     uint8_t *hit)
{
    uint64_t rows;
    TRY(leaf_rows(t, h, keys, &rows));
    memset(hit, 1, rows);
    for (size_t i = 0; i < nf; i++) {
        node_hdr *ch;
        TRY(leaf_int_col(t, h, fc[i].col, rows, &ch));
        uint64_t have = ch ? ch->count : 0;
        if (have < rows && !fast_default_holds(&fc[i])) memset(hit + have, 0, rows - have);
        if (have) fast_leaf(ch, have, fc[i].op, fc[i].k, hit);
    }
    *rows_out = rows;
    return CS_OK;
}

/* The visit of a count over one condition: fast_walk counts each leaf without a mask and
 * adds to the uint64_t at ctx (this function is only its marker). */
int query_fast_count_visit(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows)
{
    uint64_t *n = ctx;
    for (uint64_t i = 0; i < rows; i++) *n += hit[i];
    return CS_OK;
}

/* What query_fast_walk hands each leaf. */
typedef struct fast_walk_ctx {
    cs_txn *t;          /* transaction */
    const fastcond *fc; /* conditions */
    size_t nf;          /* how many */
    leaf_visit fn;      /* what to do with a leaf's matches */
    void *ctx;          /* its context */
} fast_walk_ctx;

static int fast_walk_leaf(void *vctx, node_hdr *h)
{
    fast_walk_ctx *w = vctx;
    node_hdr *keys;
    uint64_t rows;
    if (w->nf == 1 && w->fn == query_fast_count_visit) {
        node_hdr *ch;
        TRY(leaf_rows(w->t, h, &keys, &rows));
        TRY(leaf_int_col(w->t, h, w->fc[0].col, rows, &ch));
        uint64_t have = ch ? ch->count : 0;
        *(uint64_t *)w->ctx += (have ? fast_leaf_count(ch, have, w->fc[0].op, w->fc[0].k) : 0) +
                               (fast_default_holds(&w->fc[0]) ? rows - have : 0);
        return CS_OK;
    }
    uint8_t hit[CLUSTER_ROWS_READ_MAX];
    TRY(leaf_hits(w->t, h, w->fc, w->nf, &keys, &rows, hit));
    return w->fn(w->ctx, keys, hit, rows);
}

int query_fast_walk(cs_txn *t, ref_t root, const fastcond *fc, size_t nf, leaf_visit fn, void *ctx)
{
    fast_walk_ctx w = {t, fc, nf, fn, ctx};
    return cluster_each_leaf(t, root, fast_walk_leaf, &w);
}

int query_fast_visit(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows)
{
    keyset *k = ctx;
    if (!k->collect) {
        uint64_t c = 0;
        for (uint64_t i = 0; i < rows; i++) c += hit[i];
        k->count += c;
        return CS_OK;
    }
    for (uint64_t i = 0; i < rows; i++)
        if (hit[i]) TRY(query_keys_push(k, node_get_int(keys, i)));
    return CS_OK;
}

/* One leaf of an Int aggregate: the rows the conditions keep, summed or compared in the
 * column's own width. */
static int agg_leaf(void *vctx, node_hdr *h)
{
    aggctx *a = vctx;
    cs_txn *t = a->t;
    const fastcond *fc = a->fc;
    size_t nf = a->nf;
    node_hdr *keys;
    uint64_t rows;
    uint8_t hit[CLUSTER_ROWS_READ_MAX];
    TRY(leaf_hits(t, h, fc, nf, &keys, &rows, hit));
    node_hdr *vh;
    TRY(leaf_int_col(t, h, a->col - 1, rows, &vh));
    const uint8_t *p = vh ? node_values(vh) : NULL;
    uint8_t w = vh ? vh->width : 0;
    int64_t base = vh ? node_base(vh) : 0; /* invariant 3 */
    uint64_t have = vh ? vh->count : 0; /* rows past it hold 0 (a short node in a write) */
    if (a->op == CS_AGG_SUM || a->op == CS_AGG_AVG) {
        /* leaf sums fit easily in 128 bits; add them to the 64-bit total with overflow checks */
        __int128 s = 0;
        uint64_t cnt = 0;
#define SUMLOOP(T) do { const T *x = (const T *)(const void *)p; for (uint64_t i = 0; i < have; i++) { s += hit[i] ? (__int128)x[i] : 0; cnt += hit[i]; } } while (0)
        if (!vh) { /* no values: every row holds 0 */ }
        else if (w == 8) SUMLOOP(int8_t);
        else if (w == 16) SUMLOOP(int16_t);
        else if (w == 32) SUMLOOP(int32_t);
        else if (w == 64) SUMLOOP(int64_t);
        else for (uint64_t i = 0; i < have; i++) if (hit[i]) { s += packed_get(p, w, i); cnt++; }
#undef SUMLOOP
        s += (__int128)base * cnt;
        for (uint64_t i = have; i < rows; i++) cnt += hit[i];
        a->sum += s;
        if (a->sum > INT64_MAX || a->sum < INT64_MIN) a->overflow = true;
        a->n += cnt;
        return CS_OK;
    }
    for (uint64_t i = 0; i < rows; i++) {
        if (!hit[i]) continue;
        int64_t v = i < have ? (int64_t)((uint64_t)base + (uint64_t)packed_get(p, w, i)) : 0;
        if (!a->n || (a->op == CS_AGG_MIN ? v < a->best : v > a->best)) a->best = v;
        a->n++;
    }
    return CS_OK;
}

int query_agg_walk(cs_txn *t, ref_t root, aggctx *a)
{
    return cluster_each_leaf(t, root, agg_leaf, a);
}
