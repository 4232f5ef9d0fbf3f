/*
 * query_plan.c -- index seeds: for a condition of the top-level AND chain on an indexed column,
 * the ranges of index entries (docs/FORMAT.md §6.5) whose objects hold every match of that
 * condition, and whether they hold exactly its matches; query_find_seed picks the best such
 * condition (docs/ARCHITECTURE.md, Queries: equality, then IN, then a range or prefix, then
 * [c]).
 *
 * Invariants:
 *  1. A seedplan's ranges hold every object the condition matches (a superset when !exact);
 *     the caller re-checks candidates unless the plan is exact and the condition is the whole
 *     predicate.
 *  2. A seedplan owns the bytes of its ranges; query_plan_free releases them, on every path.
 */
#include "cluster.h"
#include "schema.h"
#include "index.h"
#include "query_int.h"

#include <math.h>

void query_plan_free(seedplan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->r[i].lo);
        free(p->r[i].hi);
    }
    free(p->r);
    p->r = NULL;
    p->n = p->cap = 0;
}

/* Adds [lo, hi) to the plan, taking the buffers (also on failure). */
static int plan_add(seedplan *p, uint8_t *lo, size_t lon, uint8_t *hi, size_t hin)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 4;
        irange *r = realloc(p->r, nc * sizeof *r);
        if (!r) { free(lo); free(hi); return NOMEM(); }
        p->r = r;
        p->cap = nc;
    }
    p->r[p->n++] = (irange){lo, lon, hi, hin};
    return CS_OK;
}

static uint8_t *bytes_dup(const uint8_t *p, size_t n, size_t spare)
{
    uint8_t *r = malloc(n + spare + 1);
    if (r && n) memcpy(r, p, n);
    return r;
}

/* A one-byte bound: the tag of a type's keys (every key of that type sorts after it). */
static int tag_bound(uint8_t tag, uint8_t **out)
{
    *out = malloc(1);
    if (!*out) return NOMEM();
    (*out)[0] = tag;
    return CS_OK;
}

/* The key of v and the same key followed by eight FF bytes: every entry with this value part
 * lies in [key, key||FF..FF) (object keys are below 2^63). */
static int value_bounds(const cs_value *v, bool mixed, uint8_t **k, size_t *kn, uint8_t **after, size_t *an)
{
    TRY(index_encode(v, mixed, k, kn));
    *after = bytes_dup(*k, *kn, 8);
    if (!*after) { free(*k); return NOMEM(); }
    memset(*after + *kn, 0xff, 8);
    *an = *kn + 8;
    return CS_OK;
}

static int plan_point(seedplan *p, const cs_value *v, bool mixed)
{
    uint8_t *k = NULL, *after = NULL;
    size_t kn = 0, an = 0;
    TRY(value_bounds(v, mixed, &k, &kn, &after, &an));
    return plan_add(p, k, kn, after, an);
}

/* Every string entry whose bytes start with `prefix` (n bytes): one range. */
static int plan_prefix(seedplan *p, const uint8_t *prefix, size_t n)
{
    cs_value v = cs_string((const char *)prefix, n);
    uint8_t *k;
    size_t kn;
    TRY(index_encode(&v, false, &k, &kn));
    kn -= 2; /* drop the 00 00 end mark: escaped(prefix) starts every longer string's key */
    uint8_t *hi = bytes_dup(k, kn, 0);
    if (!hi) { free(k); return NOMEM(); }
    /* the smallest byte string above every one starting with k: drop trailing FFs, add one */
    size_t hn = kn;
    while (hn > 1 && hi[hn - 1] == 0xff) hn--;
    hi[hn - 1]++;
    return plan_add(p, k, kn, hi, hn);
}

#define CASE_RANGES_MAX 256

#define CASE_CHARS_MAX 64

/* One leading code point of a [c] pattern: the spellings of its case variants. */
typedef struct case_alt {
    spelling valid[8]; /* valid UTF-8 spellings */
    size_t nv;         /* how many */
    spelling odd[16];  /* spellings only invalid UTF-8 has */
    size_t no;         /* how many */
} case_alt;

/* Adds a prefix range for every choice of valid spellings of alts[pos..upto) after buf[0..bl),
 * followed by `last` when it is not NULL. */
static int emit_case_prefixes(seedplan *p, const case_alt *alts, size_t pos, size_t upto, uint8_t *buf, size_t bl,
                              const spelling *last)
{
    if (pos == upto) {
        if (last) {
            memcpy(buf + bl, last->b, last->n);
            bl += last->n;
        }
        return plan_prefix(p, buf, bl);
    }
    for (size_t i = 0; i < alts[pos].nv; i++) {
        memcpy(buf + bl, alts[pos].valid[i].b, alts[pos].valid[i].n);
        TRY(emit_case_prefixes(p, alts, pos + 1, upto, buf, bl + alts[pos].valid[i].n, last));
    }
    return CS_OK;
}

/* Ranges holding every string whose [c]-folded form starts with the folded form of s, for the
 * scan's folding (fold_case over utf8_next's code points, U+0000..U+017F): the valid spellings of
 * the case variants of as many leading code points as keep the ranges few, and for each of
 * those positions the odd query_spellings (invalid UTF-8 the decoder also reads as that code point)
 * as shorter prefixes. A superset: the caller checks every candidate. */
static int plan_case_prefix(seedplan *p, const uint8_t *s, size_t n)
{
    case_alt *alts = malloc(CASE_CHARS_MAX * sizeof *alts);
    uint8_t *buf = malloc(3 * CASE_CHARS_MAX + 3);
    if (!alts || !buf) { free(alts); free(buf); return NOMEM(); }
    size_t na = 0, total = 1;
    for (size_t i = 0; i < n && na < CASE_CHARS_MAX;) {
        uint32_t c = query_utf8_next(s, n, &i);
        uint32_t cls[8];
        size_t nc = query_fold_class(c, cls);
        case_alt *a = &alts[na];
        a->nv = a->no = 0;
        for (size_t k = 0; k < nc; k++) query_spellings(cls[k], a->valid, &a->nv, a->odd, &a->no);
        /* the odd spellings at this position cost `total` ranges each, the valid ones multiply */
        if (total * (a->nv + a->no) > CASE_RANGES_MAX) break;
        total *= a->nv;
        na++;
    }
    int rc = CS_OK;
    for (size_t j = 0; j < na && rc == CS_OK; j++)
        for (size_t k = 0; k < alts[j].no && rc == CS_OK; k++) rc = emit_case_prefixes(p, alts, 0, j, buf, 0, &alts[j].odd[k]);
    if (rc == CS_OK) rc = emit_case_prefixes(p, alts, 0, na, buf, 0, NULL);
    free(alts);
    free(buf);
    return rc;
}

/* The indexed column a key path names directly (one step, no @type), or CS_NONE. */
static uint32_t indexed_path_col(cs_query *q, qnode *kp)
{
    if (kp->kind != QN_KEYPATH) return CS_NONE;
    bpath *b = kp->owned;
    if (!b || b->n != 1 || b->steps[0].kind != BS_COL || b->type_of) return CS_NONE;
    col_def *c = query_bound_col(q, q->table, b->steps[0].col);
    if (!c || !(c->flags & (CS_COL_INDEXED | CS_COL_PRIMARY)) || c->coll != CS_COLL_NONE || !index_type_ok((cs_type)c->type))
        return CS_NONE;
    return b->steps[0].col;
}

/* Adds the range of every link key of a Mixed index: a link to a deleted object reads as null,
 * so each link is a candidate for `== nil`. */
static int plan_all_links(seedplan *sp)
{
    uint8_t *lo = NULL, *hi = NULL;
    int rc = tag_bound(INDEX_TAG_LINK, &lo);
    if (rc == CS_OK) rc = tag_bound(INDEX_TAG_LINK + 1, &hi);
    if (rc == CS_OK) return plan_add(sp, lo, 1, hi, 1);
    free(lo);
    free(hi);
    return rc;
}

/* Adds the range of the entries whose value part is `op` the key k (kn bytes, taken also on
 * failure), within k's type tag: the other side of the range is the first or last key of that
 * tag, so nulls and other types stay out. */
static int plan_order(seedplan *sp, qop op, uint8_t *k, size_t kn)
{
    uint8_t *after = bytes_dup(k, kn, 8), *lo = NULL, *hi = NULL;
    size_t an = kn + 8, lon = 1, hin = 1;
    if (!after) { free(k); return NOMEM(); }
    memset(after + kn, 0xff, 8);
    uint8_t tag = k[0];
    switch (op) {
    case QOP_LT: hi = k; hin = kn; free(after); break;
    case QOP_LE: hi = after; hin = an; free(k); break;
    case QOP_GT: lo = after; lon = an; free(k); break;
    default: lo = k; lon = kn; free(after); break;
    }
    int rc = CS_OK;
    if (!lo) rc = tag_bound(tag, &lo);
    else rc = tag_bound((uint8_t)(tag + 1), &hi);
    if (rc != CS_OK) { free(lo); free(hi); return rc; }
    return plan_add(sp, lo, lon, hi, hin);
}

/* Adds [key(lo), key(hi)||FF..FF): the entries whose value part lies between the two keys (lon
 * and hin bytes, both taken). */
static int plan_between(seedplan *sp, uint8_t *lo, size_t lon, uint8_t *hi, size_t hin)
{
    uint8_t *h = bytes_dup(hi, hin, 8);
    free(hi);
    if (!h) { free(lo); return NOMEM(); }
    memset(h + hin, 0xff, 8);
    return plan_add(sp, lo, lon, h, hin + 8);
}

/* A Mixed index keys a string and a binary with the same escaped bytes under two tags, and the
 * scan orders (and prefix-matches) strings and binaries against each other by those bytes: the
 * Mixed key of v, a string or binary, with its tag replaced by `tag`. */
static int bytes_key(const cs_value *v, uint8_t tag, uint8_t **k, size_t *kn)
{
    TRY(index_encode(v, true, k, kn));
    (*k)[0] = tag;
    return CS_OK;
}

/* A numeric constant as a double, widened by two representable doubles towards `dir` (the
 * conversion of a large Int or of a Decimal128 may round); false for NaN. */
static bool num_bound(const cs_value *v, double dir, double *out)
{
    double d = v->type == CS_TYPE_INT ? (double)v->v.i : v->type == CS_TYPE_FLOAT ? (double)v->v.f
             : v->type == CS_TYPE_DOUBLE ? v->v.d : cs_decimal_to_double(&v->v.dec);
    if (isnan(d)) return false;
    for (int i = 0; i < 2; i++) d = nextafter(d, dir);
    *out = d;
    return true;
}

/* Adds every key of one type tag. */
static int plan_tag(seedplan *sp, uint8_t tag)
{
    uint8_t *a = NULL, *b = NULL;
    int rc = tag_bound(tag, &a);
    if (rc == CS_OK) rc = tag_bound((uint8_t)(tag + 1), &b);
    if (rc == CS_OK) return plan_add(sp, a, 1, b, 1);
    free(a);
    free(b);
    return rc;
}

/* The candidates of a Mixed numeric range [lo, hi] (doubles already widened outwards, +-inf
 * for an open side): the Int keys from floor(lo) to floor(hi), the Double keys from lo to hi and
 * every Decimal key (their cohort-free parts are not in numeric order), and every NaN key: a
 * Float or Double NaN matches no ordering, but cmp_values leaves a Decimal128 NaN to
 * cs_value_compare, which orders it below every number, so it can match. The candidates are a
 * superset, re-checked by the scan's predicate. */
static int plan_numbers(seedplan *sp, double lo, double hi)
{
    const double two63 = 9223372036854775808.0;
    uint8_t *a = NULL, *b = NULL, *x, *y;
    size_t an = 1, bn = 1, xn, yn;
    if (lo < two63 && hi >= -two63) {
        cs_value l = cs_int(lo <= -two63 ? INT64_MIN : (int64_t)floor(lo));
        cs_value h = cs_int(hi >= two63 ? INT64_MAX : (int64_t)floor(hi));
        TRY(index_encode(&l, true, &a, &an));
        int rc = index_encode(&h, true, &b, &bn);
        if (rc != CS_OK) { free(a); return rc; }
        TRY(plan_between(sp, a, an, b, bn));
    }
    TRY(index_double_key(lo, &x, &xn));
    int rc = index_double_key(hi, &y, &yn);
    if (rc != CS_OK) { free(x); return rc; }
    TRY(plan_between(sp, x, xn, y, yn));
    TRY(plan_tag(sp, INDEX_TAG_DECIMAL));
    return plan_tag(sp, INDEX_TAG_NAN);
}

/* Whether a Mixed index can seed an ordering or BETWEEN against constants of type t: numbers
 * (not NaN, checked later), strings and binaries, and the types the index keys in value order.
 * Null (matches no ordering) and nested collections are left to the scan; the binder refuses
 * to order bools and links. */
static bool mixed_orderable(cs_type t)
{
    return numeric(t) || t == CS_TYPE_STRING || t == CS_TYPE_BINARY || t == CS_TYPE_TIMESTAMP || t == CS_TYPE_OBJECTID ||
           t == CS_TYPE_UUID;
}

/* A Mixed index's candidates for `column op v` (op one of <, <=, >, >=, BEGINSWITH) or, with w,
 * for `column BETWEEN {v, w}`; *ok false when the index cannot answer it. Never exact. */
static int plan_mixed_range(seedplan *sp, qop op, const cs_value *v, const cs_value *w, bool *ok)
{
    *ok = false;
    bool str = v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY;
    if (!mixed_orderable(v->type)) return CS_OK;
    if (w && !(numeric(v->type) && numeric(w->type)) &&
        !(str && (w->type == CS_TYPE_STRING || w->type == CS_TYPE_BINARY)) && w->type != v->type)
        return CS_OK;
    if (op == QOP_BEGINSWITH && !str) return CS_OK;
    if (numeric(v->type)) {
        double lo = -INFINITY, hi = INFINITY;
        if (w) {
            if (!num_bound(v, -INFINITY, &lo) || !num_bound(w, INFINITY, &hi)) return CS_OK;
        } else if (op == QOP_GT || op == QOP_GE) {
            if (!num_bound(v, -INFINITY, &lo)) return CS_OK;
        } else if (!num_bound(v, INFINITY, &hi)) {
            return CS_OK;
        }
        TRY(plan_numbers(sp, lo, hi));
        *ok = true;
        return CS_OK;
    }
    uint8_t tags[2] = {0, INDEX_TAG_BINARY};
    size_t ntags = 1;
    if (str) { tags[0] = INDEX_TAG_STRING; ntags = 2; }
    for (size_t i = 0; i < ntags; i++) {
        uint8_t *k, *h;
        size_t kn, hn;
        if (op == QOP_BEGINSWITH) {
            /* the typed prefix range, moved under this tag */
            seedplan one;
            memset(&one, 0, sizeof one);
            TRY(plan_prefix(&one, v->v.bytes.ptr, v->v.bytes.len));
            one.r[0].lo[0] = tags[i];
            one.r[0].hi[0] = (uint8_t)(one.r[0].hi[0] - INDEX_TAG_STRING + tags[i]);
            int rc = plan_add(sp, one.r[0].lo, one.r[0].lon, one.r[0].hi, one.r[0].hin);
            free(one.r);
            TRY(rc);
            continue;
        }
        if (str) TRY(bytes_key(v, tags[i], &k, &kn));
        else TRY(index_encode(v, true, &k, &kn));
        if (w) {
            int rc = str ? bytes_key(w, tags[i], &h, &hn) : index_encode(w, true, &h, &hn);
            if (rc != CS_OK) { free(k); return rc; }
            TRY(plan_between(sp, k, kn, h, hn));
        } else {
            TRY(plan_order(sp, op, k, kn));
        }
    }
    *ok = true;
    return CS_OK;
}

/* The plan for one conjunct, if the index of the column it tests can answer it (*ok). */
static int seed_of(cs_query *q, qnode *n, seedplan *sp, bool *ok)
{
    *ok = false;
    memset(sp, 0, sizeof *sp);
    if (n->quant != QQ_NONE) return CS_OK;
    qnode *kp = n->a;
    qop op = n->op;
    if (n->kind == QN_CMP && kp->kind != QN_KEYPATH) {
        kp = n->b;
        switch (op) {
        case QOP_LT: op = QOP_GT; break;
        case QOP_LE: op = QOP_GE; break;
        case QOP_GT: op = QOP_LT; break;
        case QOP_GE: op = QOP_LE; break;
        case QOP_EQ: break;
        default: return CS_OK; /* 'abc' BEGINSWITH name tests the constant */
        }
    }
    uint32_t col = indexed_path_col(q, kp);
    if (col == CS_NONE) return CS_OK;
    col_def *c = query_bound_col(q, q->table, col);
    cs_type ct = (cs_type)c->type;
    bool mixed = ct == CS_TYPE_MIXED;
    sp->col = col;
    sp->exact = true;
    int rc = CS_OK;
    if (n->kind == QN_IN) {
        if (n->flags || n->b->kind != QN_LIST) return CS_OK;
        for (size_t i = 0; i < n->b->nitems; i++) {
            const cs_value *v = &n->b->items[i]->value;
            if (n->b->items[i]->kind != QN_CONST || v->type == CS_TYPE_LIST) return CS_OK;
            if (!mixed && v->type != ct && v->type != CS_TYPE_NULL) return CS_OK;
        }
        for (size_t i = 0; i < n->b->nitems && rc == CS_OK; i++) {
            const cs_value *v = &n->b->items[i]->value;
            rc = plan_point(sp, v, mixed);
            if (mixed && (v->type == CS_TYPE_NULL || v->type == CS_TYPE_LINK)) sp->exact = false;
        }
        if (rc == CS_OK && mixed && !sp->exact) rc = plan_all_links(sp);
        sp->rank = 1;
        goto done;
    }
    if (n->kind == QN_BETWEEN && mixed) {
        bool any;
        if (n->b->kind != QN_CONST || n->c->kind != QN_CONST) return CS_OK;
        rc = plan_mixed_range(sp, QOP_GE, &n->b->value, &n->c->value, &any);
        if (rc == CS_OK && !any) { query_plan_free(sp); return CS_OK; }
        sp->exact = false;
        sp->rank = 2;
        goto done;
    }
    if (n->kind == QN_BETWEEN) {
        if (n->b->kind != QN_CONST || n->c->kind != QN_CONST || n->b->value.type != ct || n->c->value.type != ct)
            return CS_OK;
        uint8_t *lo, *hi, *x, *y;
        size_t lon, hin, xn, yn;
        TRY(value_bounds(&n->b->value, false, &lo, &lon, &x, &xn));
        free(x);
        rc = value_bounds(&n->c->value, false, &y, &yn, &hi, &hin);
        if (rc != CS_OK) { free(lo); return rc; }
        free(y);
        rc = plan_add(sp, lo, lon, hi, hin);
        sp->rank = 2;
        goto done;
    }
    if (n->kind != QN_CMP) return CS_OK;
    qnode *kc = kp == n->a ? n->b : n->a;
    if (kc->kind != QN_CONST || kc->value.type == CS_TYPE_LIST) return CS_OK;
    const cs_value *v = &kc->value;
    if (mixed && op != QOP_EQ) {
        bool any;
        if (n->flags || (op != QOP_BEGINSWITH && (op < QOP_LT || op > QOP_GE))) return CS_OK;
        rc = plan_mixed_range(sp, op, v, NULL, &any);
        if (rc == CS_OK && !any) { query_plan_free(sp); return CS_OK; }
        sp->exact = false;
        sp->rank = 2;
        goto done;
    }
    if (mixed) {
        if (n->flags) return CS_OK;
        rc = plan_point(sp, v, true);
        if (rc == CS_OK && (v->type == CS_TYPE_NULL || v->type == CS_TYPE_LINK)) {
            sp->exact = false;
            if (v->type == CS_TYPE_NULL) rc = plan_all_links(sp);
        }
        sp->rank = 0;
        goto done;
    }
    if (op == QOP_EQ && n->flags == 0) {
        if (v->type != ct && v->type != CS_TYPE_NULL) return CS_OK;
        rc = plan_point(sp, v, false);
        sp->rank = 0;
        goto done;
    }
    if (ct != v->type) return CS_OK;
    if (ct == CS_TYPE_STRING && (op == QOP_EQ || op == QOP_BEGINSWITH) && n->flags == QF_CASE) {
        rc = plan_case_prefix(sp, v->v.bytes.ptr, v->v.bytes.len);
        sp->exact = false;
        sp->rank = 3;
        goto done;
    }
    if (n->flags) return CS_OK;
    if (ct == CS_TYPE_STRING && op == QOP_BEGINSWITH) {
        rc = plan_prefix(sp, v->v.bytes.ptr, v->v.bytes.len);
        sp->rank = 2;
        goto done;
    }
    if (op < QOP_LT || op > QOP_GE) return CS_OK;
    {
        /* one side is the value, the other the first or last key of the column's type */
        uint8_t *k;
        size_t kn;
        TRY(index_encode(v, false, &k, &kn));
        rc = plan_order(sp, op, k, kn);
        sp->rank = 2;
    }
done:
    if (rc != CS_OK) { query_plan_free(sp); return rc; }
    *ok = true;
    return CS_OK;
}

/* The best conjunct of the top-level AND chain to seed from (lowest rank, exact first). */
int query_find_seed(cs_query *q, qnode *n, seedplan *best, qnode **which, int depth)
{
    if (depth > QUERY_CHAIN_MAX) return CS_OK;
    if (n->kind == QN_AND) {
        TRY(query_find_seed(q, n->a, best, which, depth + 1));
        return query_find_seed(q, n->b, best, which, depth + 1);
    }
    if (n->kind != QN_CMP && n->kind != QN_BETWEEN && n->kind != QN_IN) return CS_OK;
    seedplan sp;
    bool ok;
    TRY(seed_of(q, n, &sp, &ok));
    if (!ok) return CS_OK;
    if (!*which || sp.rank < best->rank || (sp.rank == best->rank && sp.exact && !best->exact)) {
        query_plan_free(best);
        *best = sp;
        *which = n;
    } else {
        query_plan_free(&sp);
    }
    return CS_OK;
}

/* ---- choosing ----------------------------------------------------------------------------- */

int query_plan_choose(cs_query *q, qplan_use use, qplan *p)
{
    memset(p, 0, sizeof *p);
    p->kind = CS_PLAN_SCAN;
    if (q->root != QR_TABLE) return CS_OK; /* a collection: every element, tested */
    qnode *pred = q->parsed->pred;
    if (use == QPLAN_INT_AGGREGATE) {
        if (pred->kind != QN_TRUE && !query_collect_fast(q, pred, p->fc, &p->nf)) {
            p->kind = CS_PLAN_NONE;
            return CS_OK;
        }
        p->kind = CS_PLAN_LEAVES;
        return table_root(q->txn, q->table, &p->root);
    }
    TRY(table_root(q->txn, q->table, &p->root));
    if (pred->kind == QN_TRUE) {
        p->kind = CS_PLAN_ALL;
        return CS_OK;
    }
    /* a condition an index answers, in the top-level AND chain, seeds the candidates */
    qnode *seed = NULL;
    int rc = query_find_seed(q, pred, &p->seed, &seed, 0);
    if (rc != CS_OK) {
        /* a later conjunct failed after an earlier one planned its ranges */
        query_plan_free(&p->seed);
        return rc;
    }
    if (seed) {
        p->kind = CS_PLAN_INDEX;
        p->recheck = !p->seed.exact || seed != pred;
        return CS_OK;
    }
    p->nf = 0;
    if (query_collect_fast(q, pred, p->fc, &p->nf)) p->kind = CS_PLAN_LEAVES;
    return CS_OK;
}

void query_plan_release(qplan *p) { query_plan_free(&p->seed); }
