/*
 * query_watch.c -- the query engine's answers to the notifier (docs/ARCHITECTURE.md, Change
 * notifications): which columns a query reads, so that a commit writing none of them leaves
 * its results as they were; the same as key paths from its table, so that a watch over a
 * collection the query filters knows which changes of its elements' properties, linked objects
 * and backlinks the query may see; and whether a single object matches, so that an unsorted
 * result is updated from the written objects alone instead of running the query again.
 */
#include "query_int.h"
#include "query_watch.h"

static int dep_add(query_deps *d, uint32_t table, uint32_t col)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->d[i].table == table && d->d[i].col == col) return CS_OK;
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 8;
        query_dep *x = realloc(d->d, nc * sizeof *x);
        if (!x) return NOMEM();
        d->d = x;
        d->cap = nc;
    }
    d->d[d->n++] = (query_dep){table, col};
    return CS_OK;
}

static int deps_of_path(cs_query *q, const bpath *b, query_deps *d)
{
    if (!b) return CS_OK;
    for (size_t i = 0; i < b->n; i++) {
        const bstep *s = &b->steps[i];
        switch (s->kind) {
        case BS_COL:
        case BS_COLL:
        case BS_MAPKEY:
        case BS_BACKLINKS:
        case BS_MIN:
        case BS_MAX:
        case BS_SUM:
        case BS_AVG:
            /* (an aggregate over objects names the property it reads; over values, none) */
            if (s->col == CS_NONE) break;
            TRY(dep_add(d, s->table, s->col));
            if (s->kind == BS_BACKLINKS || s->kind == BS_MIN || s->kind == BS_MAX || s->kind == BS_SUM ||
                s->kind == BS_AVG || s->table != q->table || s->type == CS_TYPE_LINK)
                d->root_only = false;
            break;
        default:
            break;
        }
    }
    return CS_OK;
}

static int deps_of(cs_query *q, const qnode *n, query_deps *d, int depth)
{
    if (!n || depth > 200) return CS_OK;
    if (n->kind == QN_KEYPATH) return deps_of_path(q, n->owned, d);
    if (n->kind == QN_SUBQUERY) {
        d->root_only = false;
        TRY(deps_of(q, n->path, d, depth + 1));
        return deps_of(q, n->pred, d, depth + 1);
    }
    TRY(deps_of(q, n->a, d, depth + 1));
    TRY(deps_of(q, n->b, d, depth + 1));
    TRY(deps_of(q, n->c, d, depth + 1));
    for (size_t i = 0; i < n->nitems; i++) TRY(deps_of(q, n->items[i], d, depth + 1));
    return CS_OK;
}

int query_deps_get(cs_query *q, query_deps *out)
{
    out->n = 0;
    out->root_only = true;
    TRY(query_rebind(q));
    const qparsed *p = q->parsed;
    out->key_ordered = q->root == QR_TABLE && !p->nsort && !p->ndistinct && p->limit < 0;
    TRY(deps_of(q, p->pred, out, 0));
    for (size_t i = 0; i < p->nsort; i++) TRY(deps_of(q, p->sort[i].path, out, 0));
    for (size_t i = 0; i < p->ndistinct; i++) TRY(deps_of(q, p->distinct[i], out, 0));
    if (q->root != QR_TABLE) out->root_only = false;
    return CS_OK;
}

/* The hidden backlink column of `table` that mirrors link column `origin_col` of `origin`. */
static bool backlink_column(cs_txn *t, uint32_t table, uint32_t origin, uint32_t origin_col, uint32_t *out)
{
    table_def *td = txn_table_live(t, table);
    for (uint32_t i = 0; td && i < td->ncols; i++) {
        const col_def *d = &td->cols[i];
        if (d->live && d->type == CS_TYPE_BACKLINK && d->target == origin && d->origin_col == origin_col) {
            *out = i;
            return true;
        }
    }
    return false;
}

static int keypath_add(query_keypaths *k, const cs_keypath *p)
{
    for (size_t i = 0; i < k->n; i++)
        if (k->p[i].n == p->n && !memcmp(k->p[i].cols, p->cols, p->n * sizeof *p->cols)) return CS_OK;
    if (k->n == k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 8;
        cs_keypath *x = realloc(k->p, nc * sizeof *x);
        if (!x) return NOMEM();
        k->p = x;
        k->cap = nc;
    }
    k->p[k->n++] = *p;
    return CS_OK;
}

/* Path `b` as a key path from the query's table: each step's column, a backlink step as the
 * backlink column of the table it leaves; steps without a column (@count, @allKeys) add none. */
static int keypath_of(cs_query *q, const bpath *b, query_keypaths *k)
{
    if (!b) return CS_OK;
    cs_keypath p = {{0}, 0};
    uint32_t table = q->table;
    for (size_t i = 0; i < b->n; i++) {
        const bstep *s = &b->steps[i];
        if (s->col == CS_NONE || s->kind == BS_SELF) continue;
        if (s->kind != BS_COL && s->kind != BS_COLL && s->kind != BS_MAPKEY && s->kind != BS_BACKLINKS &&
            s->kind != BS_MIN && s->kind != BS_MAX && s->kind != BS_SUM && s->kind != BS_AVG)
            continue;
        uint32_t col = s->col;
        if (s->kind == BS_BACKLINKS && !backlink_column(q->txn, table, s->table, s->col, &col)) {
            k->whole = true;
            return CS_OK;
        }
        if (p.n == CS_KEYPATH_MAX) {
            k->whole = true;
            return CS_OK;
        }
        p.cols[p.n++] = col;
        if (s->kind == BS_BACKLINKS) table = s->table;
        else if (s->type == CS_TYPE_LINK) table = s->target;
    }
    return p.n ? keypath_add(k, &p) : CS_OK;
}

static int keypaths_of(cs_query *q, const qnode *n, query_keypaths *k, int depth)
{
    if (!n || k->whole) return CS_OK;
    if (depth > 200) {
        k->whole = true;
        return CS_OK;
    }
    if (n->kind == QN_KEYPATH) return keypath_of(q, n->owned, k);
    if (n->kind == QN_SUBQUERY) {
        /* the inner predicate's paths start from the collection's elements */
        k->whole = true;
        return CS_OK;
    }
    TRY(keypaths_of(q, n->a, k, depth + 1));
    TRY(keypaths_of(q, n->b, k, depth + 1));
    TRY(keypaths_of(q, n->c, k, depth + 1));
    for (size_t i = 0; i < n->nitems; i++) TRY(keypaths_of(q, n->items[i], k, depth + 1));
    return CS_OK;
}

int query_keypaths_get(cs_query *q, query_keypaths *out)
{
    out->n = 0;
    out->whole = false;
    TRY(query_rebind(q));
    const qparsed *p = q->parsed;
    TRY(keypaths_of(q, p->pred, out, 0));
    for (size_t i = 0; i < p->nsort; i++) TRY(keypaths_of(q, p->sort[i].path, out, 0));
    for (size_t i = 0; i < p->ndistinct; i++) TRY(keypaths_of(q, p->distinct[i], out, 0));
    return CS_OK;
}

void query_keypaths_free(query_keypaths *k)
{
    free(k->p);
    k->p = NULL;
    k->n = k->cap = 0;
}

void query_deps_free(query_deps *d)
{
    free(d->d);
    d->d = NULL;
    d->n = d->cap = 0;
}

int query_match_one(cs_query *q, int64_t key, bool *match)
{
    *match = false;
    TRY(query_rebind(q));
    cs_obj o;
    int rc = cs_obj_open(q->txn, q->table, key, &o);
    if (rc == CS_NOTFOUND) return CS_OK;
    TRY(rc);
    return query_eval(q->txn, NULL, q->parsed->pred, &o, NULL, match);
}

uint32_t query_table(const cs_query *q) { return q->table; }

void query_set_txn(cs_query *q, cs_txn *t, bool schema_changed)
{
    q->txn = t;
    if (schema_changed) q->bound_to = NULL;
}
