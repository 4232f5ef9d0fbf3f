/*
 * check.c -- verification of a whole version (`swiftstore verify`, tests) and the statistics of
 * one (cs_db_stats_get, `swiftstore info`). It never trusts the file: every problem is
 * CS_CORRUPT with what and where. It runs over the public API and every layer's reads, so it
 * sits at the top of the core.
 *
 * What it checks:
 *  1. Every node reachable from the top is inside the file, has a valid header and checksum.
 *  2. No two reachable nodes overlap; no reachable node overlaps a free extent; every byte
 *     between the header and the logical end is either in a reachable node or free.
 *  3. The schema parses; every table's cluster tree has increasing keys, correct first keys,
 *     column sub-nodes of the right kind and length, and the object count it claims.
 *  4. For every link column (a single link, or a List, Set or Map of links) the (origin, target)
 *     pairs its links name are exactly those the backlinks of its target table name for it,
 *     each pair as many times on both sides (obj.c invariant 1), compared by a fingerprint of
 *     the pairs (see "links" below: memory O(1) in the number of links, a difference missed only
 *     with negligible probability). So no link names a key its target table does not hold, and
 *     no backlink names an origin object that does not link there. On a difference the message
 *     names an object at fault where a bounded second look finds one, else the column.
 *  5. Every backlink column serves a link column into its table, one column each; every object
 *     of an embedded table has exactly one owner: one backlink over all the link columns into
 *     its table (obj.c invariant 2). That the owners lead out of the embedded tables (no cycle
 *     of embedded objects owning each other) is not checked.
 * Links inside Mixed values (and collections nested in them) have no backlinks and may name a
 * deleted object (read as null): they are not checked.
 */
#include "node.h"
#include "leaf.h"
#include "cluster.h"
#include "snapshot.h"
#include "index.h"
#include "check.h"
#include "keying.h"
#include "file.h"
#include "freelist.h"
#include "obj.h"

#include <errno.h>
#include <sys/stat.h>

typedef struct span {
    uint64_t pos; /* node position */
    uint64_t len; /* node size */
} span;

typedef struct vstate {
    cs_txn *t;        /* read transaction */
    span *spans;      /* reachable nodes */
    uint64_t n, cap;  /* used, allocated */
    uint64_t nodes;   /* count */
} vstate;

static int add_span(vstate *v, uint64_t pos, uint64_t len)
{
    if (v->n == v->cap) {
        uint64_t nc = v->cap ? v->cap * 2 : 4096;
        span *s = realloc(v->spans, nc * sizeof *s);
        if (!s) return NOMEM();
        v->spans = s;
        v->cap = nc;
    }
    v->spans[v->n].pos = pos;
    v->spans[v->n].len = len;
    v->n++;
    return CS_OK;
}

static int walk(vstate *v, ref_t r, int depth)
{
    if (depth > NODE_NESTING_MAX) return CORRUPT("node nesting deeper than %d at %llu (a cycle?)", NODE_NESTING_MAX, (unsigned long long)r);
    if (v->nodes++ > 1000000000ull) return CORRUPT("too many nodes");
    node_hdr *h;
    TRY(node_at(v->t, r, &h));
    if (node_checksum(h) != h->check) return CORRUPT("checksum mismatch in node at %llu", (unsigned long long)r);
    TRY(add_span(v, r, node_size_of(h->flags, h->width, h->count)));
    if (h->flags & NF_REFS) {
        const uint64_t *e = node_refs(h);
        for (uint32_t i = 0; i < h->count; i++)
            if (e[i] && !tagged(e[i])) TRY(walk(v, e[i], depth + 1));
    }
    return CS_OK;
}

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* ---- structure -------------------------------------------------------------------------- */

typedef struct cstats {
    uint64_t rows;       /* objects counted */
    int64_t last_key;    /* previous key seen */
    bool any;            /* a key was seen */
} cstats;

static int check_leaf_col(cs_txn *t, const col_def *c, ref_t r, uint64_t rows, uint32_t table, uint32_t col)
{
    leaf_spec s = leaf_spec_col(c);
    uint64_t n;
    TRY(leaf_count(t, &s, r, &n));
    /* a write transaction may hold sub-nodes short of their leaf's rows (cluster.c invariant 2);
     * committed ones are full */
    if (n > rows || (n != rows && !t->writing))
        return CORRUPT("table %u column %u has %llu values for %llu rows", table, col, (unsigned long long)n, (unsigned long long)rows);
    for (uint64_t i = 0; i < n; i++) {
        if (s.kind == LK_REFS || s.kind == LK_BACK) {
            uint64_t x;
            TRY(leaf_get_ref(t, &s, r, i, &x));
            continue;
        }
        cs_value v;
        TRY(leaf_get(t, &s, r, i, &v));
    }
    return CS_OK;
}

static int check_cluster(cs_txn *t, uint32_t table, ref_t r, cstats *st, int depth, int64_t lower)
{
    if (depth > TREE_DEPTH_MAX) return CORRUPT("cluster tree of table %u deeper than %d", table, TREE_DEPTH_MAX);
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (!(h->flags & NF_REFS) || h->count < 1) return CORRUPT("cluster node at %llu malformed", (unsigned long long)r);
    node_hdr *k;
    TRY(node_at(t, cluster_keys_ref(h), &k));
    if (k->flags & (NF_REFS | NF_BYTES | NF_NULLS)) return CORRUPT("cluster keys at %llu malformed", (unsigned long long)r);
    if (h->flags & NF_INNER) {
        if (k->count + 1 != h->count || k->count == 0) return CORRUPT("inner cluster node at %llu has %u keys for %u children", (unsigned long long)r, k->count, h->count - 1);
        for (uint32_t i = 0; i < k->count; i++) {
            int64_t fk = node_get_int(k, i);
            if (fk < lower) return CORRUPT("cluster first keys out of order at %llu", (unsigned long long)r);
            uint64_t before = st->rows;
            bool had = st->any;
            int64_t prev = st->last_key;
            TRY(check_cluster(t, table, cluster_inner_child(h, i), st, depth + 1, fk));
            if (st->rows == before) return CORRUPT("empty cluster leaf under %llu", (unsigned long long)r);
            (void)had;
            (void)prev;
        }
        return CS_OK;
    }
    if (k->count == 0) return CORRUPT("empty cluster leaf at %llu", (unsigned long long)r);
    if (node_get_int(k, 0) != lower && depth > 0) return CORRUPT("first key of leaf at %llu does not match its parent", (unsigned long long)r);
    for (uint32_t i = 0; i < k->count; i++) {
        int64_t key = node_get_int(k, i);
        if (st->any && key <= st->last_key) return CORRUPT("object keys out of order in leaf at %llu", (unsigned long long)r);
        if (key < 0) return CORRUPT("negative object key in leaf at %llu", (unsigned long long)r);
        st->last_key = key;
        st->any = true;
    }
    st->rows += k->count;
    for (uint32_t col = 0; col < cluster_leaf_cols(h); col++) {
        ref_t cr = cluster_leaf_col_ref(h, col);
        if (!cr) continue;
        if (tagged(cr)) return CORRUPT("column slot holds a number in leaf at %llu", (unsigned long long)r);
        col_def *cd = txn_col_live(t, table, col);
        if (!cd) return CORRUPT("leaf at %llu holds data for a removed column %u", (unsigned long long)r, col);
        TRY(check_leaf_col(t, cd, cr, k->count, table, col));
    }
    return CS_OK;
}

/* ---- links ------------------------------------------------------------------------------ */

/*
 * A link column's links and the backlinks naming it in its target table are compared as
 * multisets of (origin key, target key) pairs, in memory that does not grow with them: each side
 * is summed into a fingerprint and the two must be equal. The fingerprint is the number of pairs
 * and two sums mod 2^64 of two different 64-bit mixes of a pair (splitmix64's finaliser applied
 * twice; the pair is combined differently before each), so neither the order of the pairs nor how they
 * are grouped matters and a pair held twice (a list holding one target twice) counts twice. Equal
 * multisets always agree. Different ones agree only when the mixes of the pairs they differ by
 * cancel in both sums at once: for damage that was not crafted against these mixes, a chance of
 * about 2^-64 or less, so a mismatch can pass unnoticed only with negligible probability. A link
 * to a key its target table does not hold is such a mismatch (no backlink can name that key).
 * A mismatch is then looked into pair by pair (hunt_link) to name the object at fault.
 */
typedef struct pairsum {
    uint64_t n; /* pairs */
    uint64_t a; /* sum of the first mix */
    uint64_t b; /* sum of the second mix */
} pairsum;

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void pairs_add(pairsum *s, int64_t origin, int64_t target)
{
    uint64_t o = (uint64_t)origin, k = (uint64_t)target;
    s->n++;
    s->a += mix64(mix64(o + 0x9e3779b97f4a7c15ull) ^ k);
    s->b += mix64(mix64(k ^ 0xd1b54a32d192ed03ull) + o * 0xaef17502108ef2d9ull);
}

/* Called with each (origin key, target key) pair of a link or backlink; non-OK stops the walk. */
typedef int (*pair_fn)(void *ctx, int64_t origin, int64_t target);

/* Every link held in column `col` of `table`: a single link, the elements of a List or Set, the
 * values of a Map (cs_list_get reads a map's values by position; a null value, as a deleted
 * target leaves in a map, is no link). */
static int each_link(cs_txn *t, uint32_t table, uint32_t col, pair_fn fn, void *ctx)
{
    col_def *c;
    TRY(txn_col(t, table, col, NULL, &c));
    bool single = c->coll == CS_COLL_NONE;
    cs_iter it;
    cs_obj o;
    TRY(cs_iter_init(&it, t, table));
    int rc;
    while ((rc = cs_iter_next(&it, &o)) == CS_OK) {
        if (single) {
            cs_value v;
            TRY(cs_obj_get(&o, col, &v));
            if (v.type == CS_TYPE_LINK) TRY(fn(ctx, o.key, v.v.link.key));
            continue;
        }
        cs_coll cl;
        TRY(cs_coll_open(&o, col, &cl));
        size_t n;
        TRY(cs_coll_size(&cl, &n));
        for (size_t i = 0; i < n; i++) {
            cs_value v;
            int e = cs_list_get(&cl, i, &v);
            if (e == CS_RANGE)
                return CORRUPT("'%s.%s' of object %lld holds fewer elements than its size %zu", txn_table_live(t, table)->name,
                               c->name, (long long)o.key, n);
            TRY(e);
            if (v.type == CS_TYPE_LINK) TRY(fn(ctx, o.key, v.v.link.key));
        }
    }
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

/* Every backlink in column `bc` of `table`: the origin key it names and its object's key. */
static int each_backlink(cs_txn *t, uint32_t table, uint32_t bc, pair_fn fn, void *ctx)
{
    cs_iter it;
    cs_obj o;
    TRY(cs_iter_init(&it, t, table));
    int rc;
    while ((rc = cs_iter_next(&it, &o)) == CS_OK) {
        node_hdr *list;
        uint64_t one = 0;
        size_t n;
        TRY(obj_backlinks(&o, bc, &list, &one, &n));
        for (size_t i = 0; i < n; i++) TRY(fn(ctx, obj_backlink_at(list, one, i), o.key));
    }
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

static int sum_pair(void *ctx, int64_t origin, int64_t target)
{
    pairs_add(ctx, origin, target);
    return CS_OK;
}

/* The pair by pair search after a mismatch: the link column (table, col), its target table and
 * backlink column, and how many more elements (collection elements and backlinks) the search
 * may read before it gives up naming an object: a target holding millions of backlinks would
 * otherwise make it quadratic. */
typedef struct hunt {
    cs_txn *t;
    uint32_t table, col;   /* the link column */
    uint32_t target, bc;   /* its target table and backlink column there */
    const char *tname, *cname, *target_name;
    uint64_t budget;       /* elements left to read */
    bool exhausted;        /* the budget ran out: stop looking */
} hunt;

#define HUNT_BUDGET (1ull << 24) /* elements the pair-by-pair comparison reads: seconds at most (the
                                    * existence steps before it read each link and backlink once) */

static bool hunt_spend(hunt *h, uint64_t n)
{
    if (h->exhausted || n > h->budget) {
        h->exhausted = true;
        return false;
    }
    h->budget -= n;
    return true;
}

static int link_target_exists(void *ctx, int64_t origin, int64_t target)
{
    hunt *h = ctx;
    bool ok;
    TRY(obj_exists_key(h->t, h->target, target, &ok));
    if (!ok)
        return CORRUPT("'%s.%s' of object %lld links to object %lld, which '%s' does not hold", h->tname, h->cname,
                       (long long)origin, (long long)target, h->target_name);
    return CS_OK;
}

static int backlink_origin_exists(void *ctx, int64_t origin, int64_t target)
{
    hunt *h = ctx;
    bool ok;
    TRY(obj_exists_key(h->t, h->table, origin, &ok));
    if (!ok)
        return CORRUPT("object %lld of '%s' has a backlink for '%s.%s' from object %lld, which '%s' does not hold",
                       (long long)target, h->target_name, h->tname, h->cname, (long long)origin, h->tname);
    return CS_OK;
}

/* How many links of object `origin` in the column name `target`, and how many backlinks of
 * `target` name `origin`; *read false when the budget ran out first. */
static int pair_counts(hunt *h, int64_t origin, int64_t target, uint64_t *links, uint64_t *backs, bool *read)
{
    *links = *backs = 0;
    *read = false;
    cs_obj o;
    TRY(cs_obj_open(h->t, h->table, origin, &o));
    col_def *c;
    TRY(txn_col(h->t, h->table, h->col, NULL, &c));
    if (c->coll == CS_COLL_NONE) {
        cs_value v;
        TRY(cs_obj_get(&o, h->col, &v));
        *links = v.type == CS_TYPE_LINK && v.v.link.key == target;
    } else {
        cs_coll cl;
        TRY(cs_coll_open(&o, h->col, &cl));
        size_t n;
        TRY(cs_coll_size(&cl, &n));
        if (!hunt_spend(h, n)) return CS_OK;
        for (size_t i = 0; i < n; i++) {
            cs_value v;
            TRY(cs_list_get(&cl, i, &v));
            if (v.type == CS_TYPE_LINK && v.v.link.key == target) (*links)++;
        }
    }
    cs_obj k;
    TRY(cs_obj_open(h->t, h->target, target, &k));
    node_hdr *list;
    uint64_t one = 0;
    size_t n;
    TRY(obj_backlinks(&k, h->bc, &list, &one, &n));
    if (!hunt_spend(h, n)) return CS_OK;
    for (size_t i = 0; i < n; i++)
        if (obj_backlink_at(list, one, i) == origin) (*backs)++;
    *read = true;
    return CS_OK;
}

/* Whether the links and backlinks of one pair agree, reported from the side it was met on. */
static int pair_matches(hunt *h, int64_t origin, int64_t target, bool from_link)
{
    if (h->exhausted) return CS_OK;
    uint64_t links, backs;
    bool read;
    TRY(pair_counts(h, origin, target, &links, &backs, &read));
    if (!read || links == backs) return CS_OK;
    if (from_link)
        return CORRUPT("'%s.%s' of object %lld holds %llu link%s to object %lld of '%s', which has %llu backlink%s from it",
                       h->tname, h->cname, (long long)origin, (unsigned long long)links, links == 1 ? "" : "s",
                       (long long)target, h->target_name, (unsigned long long)backs, backs == 1 ? "" : "s");
    return CORRUPT("object %lld of '%s' has %llu backlink%s for '%s.%s' from object %lld, which holds %llu link%s to it",
                   (long long)target, h->target_name, (unsigned long long)backs, backs == 1 ? "" : "s", h->tname,
                   h->cname, (long long)origin, (unsigned long long)links, links == 1 ? "" : "s");
}

static int link_pair_matches(void *ctx, int64_t origin, int64_t target) { return pair_matches(ctx, origin, target, true); }

static int backlink_pair_matches(void *ctx, int64_t origin, int64_t target) { return pair_matches(ctx, origin, target, false); }

/* Looks for the first pair that is wrong after the fingerprints of link column (table, col)
 * disagreed: a link to a missing object, a backlink from a missing one, then a pair held a
 * different number of times by the links and by the backlinks. Each step reads every link or
 * backlink once (the first two look one key up each); the last two stop naming objects once
 * their budget is spent. Returns CS_CORRUPT naming the pair, or CS_OK when none was named. */
static int hunt_link(hunt *h)
{
    TRY(each_link(h->t, h->table, h->col, link_target_exists, h));
    TRY(each_backlink(h->t, h->target, h->bc, backlink_origin_exists, h));
    TRY(each_link(h->t, h->table, h->col, link_pair_matches, h));
    if (!h->exhausted) TRY(each_backlink(h->t, h->target, h->bc, backlink_pair_matches, h));
    return CS_OK;
}

/* The links of column `col` of `table` are exactly the pairs its target's backlinks name. */
static int check_links(cs_txn *t, uint32_t table, uint32_t col)
{
    table_def *td = txn_table_live(t, table);
    col_def *d = &td->cols[col];
    uint32_t target = d->target, bc;
    TRY(obj_backlink_col(t, target, table, col, &bc));
    pairsum links = {0, 0, 0}, backs = {0, 0, 0};
    TRY(each_link(t, table, col, sum_pair, &links));
    TRY(each_backlink(t, target, bc, sum_pair, &backs));
    if (links.n == backs.n && links.a == backs.a && links.b == backs.b) return CS_OK;
    table_def *tt = txn_table_live(t, target);
    hunt h = {t, table, col, target, bc, td->name, d->name, tt->name, HUNT_BUDGET, false};
    TRY(hunt_link(&h));
    return CORRUPT("'%s.%s' holds %llu links and '%s' %llu backlinks for them, but they do not name the same pairs of objects",
                   td->name, d->name, (unsigned long long)links.n, tt->name, (unsigned long long)backs.n);
}

/* (origin table, origin column) of a backlink column, for sorting. */
static int cmp_origin(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every live backlink column of `table` serves a link column into this table, and no two serve
 * the same one: the schema's parse checks only that its origin is a live link column, and a
 * stray or second backlink column would hold backlinks no link matches (check_links compares
 * a link column with one backlink column) and could stand in as an embedded object's owner. */
static int check_backlink_cols(cs_txn *t, uint32_t table)
{
    table_def *td = txn_table_live(t, table);
    uint64_t *origins = NULL;
    uint32_t n = 0;
    int rc = CS_OK;
    for (uint32_t c = 0; c < td->ncols; c++) {
        col_def *d = &td->cols[c];
        if (!d->live || d->type != CS_TYPE_BACKLINK) continue;
        table_def *od = txn_table_live(t, d->target);
        if (!od || d->origin_col >= od->ncols || od->cols[d->origin_col].target != table) {
            rc = CORRUPT("backlink column %u of '%s' names a link column that does not link to '%s'", c, td->name, td->name);
            break;
        }
        if (!origins && !(origins = malloc((size_t)td->ncols * sizeof *origins))) {
            rc = NOMEM();
            break;
        }
        origins[n++] = (uint64_t)d->target << 32 | d->origin_col;
    }
    if (rc == CS_OK && n > 1) {
        qsort(origins, n, sizeof *origins, cmp_origin);
        for (uint32_t k = 1; k < n; k++)
            if (origins[k] == origins[k - 1]) {
                table_def *od = txn_table_live(t, (uint32_t)(origins[k] >> 32));
                rc = CORRUPT("'%s' has two backlink columns for '%s.%s'", td->name, od->name,
                             od->cols[(uint32_t)origins[k]].name);
                break;
            }
    }
    free(origins);
    return rc;
}

/* Every object of an embedded table has exactly one owner: one backlink over all the link
 * columns into its table (each served by exactly one backlink column, check_backlink_cols).
 * Whether the owners lead out of the embedded tables (no cycle of embedded objects owning each
 * other) is not checked. */
static int check_owners(cs_txn *t, uint32_t table)
{
    table_def *td = txn_table_live(t, table);
    uint32_t *bcs = malloc(((size_t)td->ncols + 1) * sizeof *bcs), nb = 0;
    if (!bcs) return NOMEM();
    for (uint32_t c = 0; c < td->ncols; c++)
        if (td->cols[c].live && td->cols[c].type == CS_TYPE_BACKLINK) bcs[nb++] = c;
    cs_iter it;
    cs_obj o;
    int rc = cs_iter_init(&it, t, table);
    while (rc == CS_OK && (rc = cs_iter_next(&it, &o)) == CS_OK) {
        uint64_t owners = 0;
        for (uint32_t k = 0; k < nb && rc == CS_OK; k++) {
            node_hdr *list;
            uint64_t one = 0;
            size_t n = 0;
            rc = obj_backlinks(&o, bcs[k], &list, &one, &n);
            owners += n;
        }
        if (rc == CS_OK && owners != 1)
            rc = CORRUPT("embedded object %lld of '%s' has %llu owners (it must have exactly one)", (long long)o.key,
                         td->name, (unsigned long long)owners);
    }
    free(bcs);
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

static int check_tables(cs_txn *t)
{
    schema *s = t->schema;
    for (uint32_t i = 0; i < s->ntables; i++) {
        table_def *td = txn_table_live(t, i);
        if (!td) continue;
        ref_t root;
        TRY(table_root(t, i, &root));
        int64_t count, next;
        TRY(table_get_meta(t, i, TBL_COUNT, &count));
        TRY(table_get_meta(t, i, TBL_NEXTKEY, &next));
        cstats st = {0, 0, false};
        if (root) TRY(check_cluster(t, i, root, &st, 0, INT64_MIN));
        if ((int64_t)st.rows != count)
            return CORRUPT("table '%s' claims %lld objects but holds %llu", td->name, (long long)count, (unsigned long long)st.rows);
        if (st.any && st.last_key >= next)
            return CORRUPT("table '%s' holds key %lld at or past its next key %lld", td->name, (long long)st.last_key, (long long)next);
        TRY(keying_verify(t, i));
    }
    for (uint32_t i = 0; i < s->ntables; i++) {
        table_def *td = txn_table_live(t, i);
        if (!td) continue;
        for (uint32_t c = 0; c < td->ncols; c++) {
            col_def *d = &td->cols[c];
            if (d->live && d->coll == CS_COLL_NONE && (d->flags & (CS_COL_INDEXED | CS_COL_PRIMARY)) &&
                index_type_ok((cs_type)d->type)) {
                TRY(index_verify(t, i, c));
            } else if (d->live) {
                /* every change that takes a column's index away drops its tree (turning the
                 * index off, a primary-key change, a failed one undone): a tree left on a column
                 * that keeps none is space no free list holds, and index maintenance skips it */
                ref_t iroot;
                TRY(index_root(t, i, c, &iroot));
                if (iroot)
                    return CORRUPT("column '%s.%s' keeps no index but has an index tree (turning its index on, "
                                   "then off again, drops it)",
                                   td->name, d->name);
            }
            if (d->live && d->type == CS_TYPE_LINK) TRY(check_links(t, i, c));
        }
    }
    /* after every link column matched its backlinks and every backlink column was found to
     * serve one: the backlinks counted here are the links into each embedded table */
    for (uint32_t i = 0; i < s->ntables; i++) {
        table_def *td = txn_table_live(t, i);
        if (td) TRY(check_backlink_cols(t, i));
    }
    for (uint32_t i = 0; i < s->ntables; i++) {
        table_def *td = txn_table_live(t, i);
        if (td && (td->flags & CS_TABLE_EMBEDDED)) TRY(check_owners(t, i));
    }
    return CS_OK;
}

static int verify_txn(cs_txn *t)
{
    vstate v = {t, NULL, 0, 0, 0};
    int rc = walk(&v, t->top, 0);
    if (rc) goto out;
    qsort(v.spans, v.n, sizeof(span), cmp_span);
    for (uint64_t i = 1; i < v.n; i++)
        if (v.spans[i].pos < v.spans[i - 1].pos + v.spans[i - 1].len) {
            rc = CORRUPT("nodes at %llu and %llu overlap", (unsigned long long)v.spans[i - 1].pos, (unsigned long long)v.spans[i].pos);
            goto out;
        }
    /* free extents must not overlap nodes; used + free must cover the file */
    uint64_t r[3];
    for (int i = 0; i < 3; i++)
        if ((rc = txn_top_get(t, TOP_FREE_POS + i, &r[i])) != CS_OK) goto out;
    span *fr = NULL;
    uint64_t nf = 0;
    {
        extent *ext;
        if ((rc = freelist_read(t, r, t->limit, &ext, &nf)) != CS_OK) goto out;
        fr = malloc((nf + 1) * sizeof *fr);
        if (!fr) { free(ext); rc = NOMEM(); goto out; }
        for (uint64_t i = 0; i < nf; i++) {
            fr[i].pos = ext[i].pos;
            fr[i].len = ext[i].len;
        }
        free(ext);
    }
    /* merge-walk both sorted lists */
    uint64_t at = HDR_SIZE, i = 0, j = 0;
    while (i < v.n || j < nf) {
        span s;
        bool node = j >= nf || (i < v.n && v.spans[i].pos < fr[j].pos);
        s = node ? v.spans[i++] : fr[j++];
        if (s.pos < at) {
            rc = CORRUPT("%s at %llu overlaps the space before it", node ? "node" : "free extent", (unsigned long long)s.pos);
            break;
        }
        if (s.pos > at) {
            rc = CORRUPT("%llu bytes at %llu are neither in use nor free", (unsigned long long)(s.pos - at), (unsigned long long)at);
            break;
        }
        at = s.pos + s.len;
    }
    if (rc == CS_OK && at != t->limit)
        rc = CORRUPT("space from %llu to the logical end %llu is neither in use nor free", (unsigned long long)at, (unsigned long long)t->limit);
    free(fr);
    if (rc == CS_OK) rc = check_tables(t);
out:
    free(v.spans);
    return rc;
}

#ifdef CSTORE_INTERNAL_CHECKS
/* ---- internal checks --------------------------------------------------------------------- */

bool check_version(cs_txn *t)
{
    cs_dbfile *f = t->f;
    if (__atomic_load_n(&f->verified_version, __ATOMIC_ACQUIRE) == t->version) return true;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", cs_errmsg());
    int e = cs_errno();
    int rc = verify_txn(t);
    if (rc == CS_OK) __atomic_store_n(&f->verified_version, t->version, __ATOMIC_RELEASE);
    cs_fail(CS_OK, e, "%s", msg);
    return rc == CS_OK;
}

void check_commit(cs_txn *t, bool base_ok)
{
    if (!base_ok) return; /* the file was damaged before this write: not the commit's doing */
    char before[512];
    snprintf(before, sizeof before, "%s", cs_errmsg());
    int e = cs_errno();
    int rc = verify_txn(t);
    if (rc != CS_OK)
        cs_assert_fail("the version a commit made verifies", __FILE__, __LINE__, "version %llu of %s: %s",
                       (unsigned long long)t->version, t->f->path, cs_errmsg());
    __atomic_store_n(&t->f->verified_version, t->version, __ATOMIC_RELEASE);
    cs_fail(CS_OK, e, "%s", before);
}
#endif

int cs_db_verify(cs_db *db)
{
    cs_txn *t;
    TRY(cs_txn_begin(db, CS_TXN_READ, &t));
    char msg[512];
    int rc = verify_txn(t);
    snprintf(msg, sizeof msg, "%s", cs_errmsg());
    int e = cs_errno();
    cs_txn_end(t);
    if (rc) return cs_fail(rc, e, "%s", msg);
    return CS_OK;
}

int cs_file_verify(const char *path) { return cs_file_verify_recovered(path, NULL); }

int cs_file_verify_recovered(const char *path, uint64_t *recovered)
{
    if (recovered) *recovered = 0;
    cs_options o;
    memset(&o, 0, sizeof o);
    o.flags = CS_OPEN_READONLY;
    cs_db *db;
    TRY(cs_db_open(path, &o, &db));
    if (recovered) *recovered = cs_db_recovered_commits(db);
    int rc = cs_db_verify(db);
    char msg[512];
    snprintf(msg, sizeof msg, "%s", cs_errmsg());
    int e = cs_errno();
    uint64_t v, opened;
    char why[256];
    bool rejected = cs_db_rejected_commit(db, &v, &opened, why, sizeof why);
    cs_db_close(db);
    if (rc) return cs_fail(rc, e, "%s", msg);
    /* an intact older version is still a damaged file: its newest commit is gone */
    if (rejected)
        return cs_fail(CS_CORRUPT, 0, "%s: the newest commit was rejected, %s; the file opens at version %llu",
                       path, why, (unsigned long long)opened);
    return CS_OK;
}

/* ---- statistics ------------------------------------------------------------------------- */

int cs_db_stats_get(cs_db *db, cs_db_stats *out)
{
    memset(out, 0, sizeof *out);
    cs_txn *t;
    TRY(cs_txn_begin(db, CS_TXN_READ, &t));
    cs_dbfile *f = db->f;
    /* the versions the header states (FORMAT.md §2) */
    uint16_t fmts[2] = {0, 0};
    if (f->io->pread(f->io->ctx, f->fd, fmts, sizeof fmts, 8) != (ssize_t)sizeof fmts) {
        cs_txn_end(t);
        return cs_fail(CS_IOERR, errno, "cannot read the header of %s", f->path);
    }
    out->read_format = fmts[0];
    out->write_format = fmts[1];
    out->version = t->version;
    uint64_t rv = 0;
    out->rejected = cs_db_rejected_commit(db, &rv, NULL, out->rejected_reason, sizeof out->rejected_reason);
    out->rejected_version = rv;
    struct stat st;
    out->file_size = f->io->fstat(f->io->ctx, f->fd, &st) == 0 ? (uint64_t)st.st_size : f->phys_size;
    out->logical_size = t->limit;
    int rc = CS_OK;
    uint64_t r[3];
    for (int i = 0; i < 3 && rc == CS_OK; i++) rc = txn_top_get(t, TOP_FREE_POS + i, &r[i]);
    if (rc == CS_OK) {
        extent *ext;
        uint64_t n;
        rc = freelist_read(t, r, t->limit, &ext, &n);
        if (rc == CS_OK) {
            for (uint64_t i = 0; i < n; i++) out->free_bytes += ext[i].len;
            out->free_extents = n;
            free(ext);
        }
    }
    out->used_bytes = out->logical_size > HDR_SIZE + out->free_bytes ? out->logical_size - HDR_SIZE - out->free_bytes : 0;
    for (uint32_t i = 0; i < t->schema->ntables; i++)
        if (txn_table_live(t, i)) out->table_count++;
    pthread_mutex_lock(&f->mu);
    for (uint32_t i = 0; i < f->npins; i++) {
        uint32_t c = f->pins[i].count;
        if (c && f->pins[i].version == t->version) c--; /* our own read */
        if (c) out->pinned++;
    }
    pthread_mutex_unlock(&f->mu);
    cs_txn_end(t);
    return rc;
}
