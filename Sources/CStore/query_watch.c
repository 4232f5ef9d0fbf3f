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

/* Whether step `s` reads a column: a property, a collection or map, a backlink, or the
 * property an aggregate over objects reads (over values an aggregate names none). */
static bool step_reads_column(const bstep *s)
{
    switch (s->kind) {
    case BS_COL:
    case BS_COLL:
    case BS_MAPKEY:
    case BS_BACKLINKS:
    case BS_MIN:
    case BS_MAX:
    case BS_SUM:
    case BS_AVG:
        return s->col != CS_NONE;
    default:
        return false;
    }
}

static bool step_is_aggregate(const bstep *s)
{
    return s->kind == BS_MIN || s->kind == BS_MAX || s->kind == BS_SUM || s->kind == BS_AVG;
}

/* One walk over every key path of a query's filter, SORT and DISTINCT, for the two answers
 * below: `path` is called for each key path; at a SUBQUERY node `subquery` says whether to walk
 * its own path and predicate; `too_deep` is told of a tree deeper than the walk goes; `done`
 * ends the walk early once the answer cannot change. */
typedef struct paths_walk {
    cs_query *q;
    int (*path)(struct paths_walk *w, const bpath *b);
    bool (*subquery)(struct paths_walk *w);
    void (*too_deep)(struct paths_walk *w);
    bool (*done)(const struct paths_walk *w);
} paths_walk;

static int walk_node(paths_walk *w, const qnode *n, int depth)
{
    if (!n || w->done(w)) return CS_OK;
    if (depth > 200) {
        w->too_deep(w);
        return CS_OK;
    }
    if (n->kind == QN_KEYPATH) return w->path(w, n->owned);
    if (n->kind == QN_SUBQUERY) {
        if (!w->subquery(w)) return CS_OK;
        TRY(walk_node(w, n->path, depth + 1));
        return walk_node(w, n->pred, depth + 1);
    }
    TRY(walk_node(w, n->a, depth + 1));
    TRY(walk_node(w, n->b, depth + 1));
    TRY(walk_node(w, n->c, depth + 1));
    for (size_t i = 0; i < n->nitems; i++) TRY(walk_node(w, n->items[i], depth + 1));
    return CS_OK;
}

/* Binds the query and walks its filter, SORT and DISTINCT. */
static int walk_query(paths_walk *w)
{
    TRY(query_rebind(w->q));
    const qparsed *p = w->q->parsed;
    TRY(walk_node(w, p->pred, 0));
    for (size_t i = 0; i < p->nsort; i++) TRY(walk_node(w, p->sort[i].path, 0));
    for (size_t i = 0; i < p->ndistinct; i++) TRY(walk_node(w, p->distinct[i], 0));
    return CS_OK;
}

typedef struct deps_walk {
    paths_walk w; /* first: the walk's callbacks get this struct */
    query_deps *d;
} deps_walk;

static int deps_of_path(paths_walk *w, const bpath *b)
{
    query_deps *d = ((deps_walk *)w)->d;
    if (!b) return CS_OK;
    for (size_t i = 0; i < b->n; i++) {
        const bstep *s = &b->steps[i];
        if (!step_reads_column(s)) continue;
        TRY(dep_add(d, s->table, s->col));
        if (s->kind == BS_BACKLINKS || step_is_aggregate(s) || s->table != w->q->table || s->type == CS_TYPE_LINK)
            d->root_only = false;
    }
    return CS_OK;
}

static bool deps_subquery(paths_walk *w)
{
    ((deps_walk *)w)->d->root_only = false;
    return true;
}

static void deps_too_deep(paths_walk *w) { (void)w; }
static bool deps_done(const paths_walk *w) { (void)w; return false; }

int query_deps_get(cs_query *q, query_deps *out)
{
    out->n = 0;
    out->root_only = true;
    deps_walk dw = {{q, deps_of_path, deps_subquery, deps_too_deep, deps_done}, out};
    TRY(walk_query(&dw.w));
    const qparsed *p = q->parsed;
    out->key_ordered = q->root == QR_TABLE && !p->nsort && !p->ndistinct && p->limit < 0;
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

typedef struct keypaths_walk {
    paths_walk w; /* first: the walk's callbacks get this struct */
    query_keypaths *k;
} keypaths_walk;

/* Path `b` as a key path from the query's table: each step's column, a backlink step as the
 * backlink column of the table it leaves; steps without a column (@count, @allKeys) add none. */
static int keypath_of(paths_walk *w, const bpath *b)
{
    query_keypaths *k = ((keypaths_walk *)w)->k;
    if (!b) return CS_OK;
    cs_keypath p = {{0}, 0};
    uint32_t table = w->q->table;
    for (size_t i = 0; i < b->n; i++) {
        const bstep *s = &b->steps[i];
        if (!step_reads_column(s)) continue;
        uint32_t col = s->col;
        if (s->kind == BS_BACKLINKS && !backlink_column(w->q->txn, table, s->table, s->col, &col)) {
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

/* A SUBQUERY's inner paths start from the collection's elements, not the query's table: the
 * query may then see any change of its elements. */
static bool keypaths_subquery(paths_walk *w)
{
    ((keypaths_walk *)w)->k->whole = true;
    return false;
}

static void keypaths_too_deep(paths_walk *w) { ((keypaths_walk *)w)->k->whole = true; }
static bool keypaths_done(const paths_walk *w) { return ((const keypaths_walk *)w)->k->whole; }

int query_keypaths_get(cs_query *q, query_keypaths *out)
{
    out->n = 0;
    out->whole = false;
    keypaths_walk kw = {{q, keypath_of, keypaths_subquery, keypaths_too_deep, keypaths_done}, out};
    return walk_query(&kw.w);
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
