/*
 * query.c -- running queries (cstore.h, cs_query_*): making one (text, arguments, name map) and
 * its entry points, count, the ordered matching keys (SORT / DISTINCT / LIMIT) and aggregates.
 * run_filter finds the candidates of the filter: every element of a collection, a whole table,
 * an index seed (query_plan.c), the leaf loops (query_leaf.c), or a scan that evaluates the
 * predicate per object (query_eval.c); queries are bound to the schema by query_bind.c.
 *
 * Semantics (docs/ARCHITECTURE.md, Queries and Values and their order): a key path through a
 * to-many relationship or a collection of values yields many values and a comparison holds if
 * it holds for ANY of them (ALL and NONE change that); null compares equal only to null and is
 * ordered before every value; numbers of different types compare by value; strings compare by
 * UTF-8 bytes, [c] folds case and [d] strips diacritics for U+0000..U+017F.
 */
#include "snapshot.h"
#include "index.h"
#include "query_int.h"


/* ---- carrying out a plan (query_plan_choose picks it) ------------------------------------- */

/* A collection or the backlinks of one object: every element, in order, tested. */
static int run_elements(cs_query *q, keyset *out)
{
    cs_txn *t = q->txn;
    size_t n;
    if (q->root == QR_BACKLINKS) TRY(cs_obj_backlink_count(&q->owner, q->table, q->origin_col, &n));
    else TRY(cs_coll_size(&q->coll, &n));
    q->plan.candidates = n;
    for (size_t i = 0; i < n; i++) {
        cs_value v;
        int64_t key;
        if (q->root == QR_BACKLINKS) {
            TRY(cs_obj_backlink_get(&q->owner, q->table, q->origin_col, i, &key));
            v = cs_link(q->table, key);
        } else if (q->coll.kind == CS_COLL_MAP) {
            cs_value k;
            TRY(cs_map_get_at(&q->coll, i, &k, &v));
        } else {
            TRY(cs_list_get(&q->coll, i, &v));
        }
        bool r;
        if (q->root == QR_VALUES) {
            TRY(query_eval(t, NULL, q->parsed->pred, NULL, &v, &r));
            if (r) TRY(query_keys_push(out, (int64_t)i));
            continue;
        }
        if (v.type != CS_TYPE_LINK) continue; /* a null map value */
        cs_obj o;
        int rc = cs_obj_open(t, v.v.link.table, v.v.link.key, &o);
        if (rc == CS_NOTFOUND) continue;
        TRY(rc);
        TRY(query_eval(t, NULL, q->parsed->pred, &o, NULL, &r));
        if (r) TRY(query_keys_push(out, v.v.link.key));
    }
    return CS_OK;
}

/* Every object of the table in key order; `test`: each is tested with the predicate (a scan),
 * else every one matches (TRUEPREDICATE). */
static int run_table(cs_query *q, bool test, keyset *out)
{
    cs_txn *t = q->txn;
    cs_iter it;
    cs_obj o;
    TRY(cs_iter_init(&it, t, q->table));
    int rc;
    while ((rc = cs_iter_next(&it, &o)) == CS_OK) {
        bool r = true;
        q->plan.candidates++;
        if (test) TRY(query_eval(t, NULL, q->parsed->pred, &o, NULL, &r));
        if (r) TRY(query_keys_push(out, o.key));
    }
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

/* The candidates in the plan's index ranges, re-checked with the predicate when it says so.
 * When the ranges hold exactly the matches, the candidates are the answer: an index entry names
 * a live object (ARCHITECTURE.md, "Indexes"), so no object is opened; a damaged entry is found
 * by verify, and by whoever opens the key. */
static int run_index(cs_query *q, const qplan *p, keyset *out)
{
    cs_txn *t = q->txn;
    int64_t *cand;
    size_t nc;
    int rc = index_collect(t, q->table, p->seed.col, p->seed.r, p->seed.n, &cand, &nc);
    q->plan.candidates = rc == CS_OK ? nc : 0;
    TRY(rc);
    for (size_t i = 0; i < nc && rc == CS_OK; i++) {
        bool r = true;
        if (p->recheck) {
            cs_obj o;
            rc = cs_obj_open(t, q->table, cand[i], &o);
            if (rc == CS_OK) rc = query_eval(t, NULL, q->parsed->pred, &o, NULL, &r);
        }
        if (rc == CS_OK && r) rc = query_keys_push(out, cand[i]);
    }
    free(cand);
    return rc;
}

/* The leaf loops over the plan's Int conditions; a count of one condition is fused. */
static int run_leaves(cs_query *q, const qplan *p, keyset *out)
{
    cs_txn *t = q->txn;
    TRY(cs_table_count(t, q->table, &q->plan.candidates));
    if (!out->collect && p->nf == 1) {
        uint64_t n = 0;
        TRY(query_fast_walk(t, p->root, p->fc, p->nf, query_fast_count_visit, &n));
        out->count += n;
        return CS_OK;
    }
    return query_fast_walk(t, p->root, p->fc, p->nf, query_fast_visit, out);
}

/* The matches of the query's filter (no SORT, DISTINCT or LIMIT yet): binds the query to the
 * transaction's schema, chooses a plan, records it for cs_query_last_plan and carries it out. */
static int run_filter(cs_query *q, keyset *out)
{
    q->plan = (cs_query_plan){CS_PLAN_SCAN, CS_NONE, 0, 0, 0};
    TRY(query_rebind(q));
    qplan p;
    TRY(query_plan_choose(q, QPLAN_MATCHES, &p));
    q->plan.kind = p.kind;
    if (p.kind == CS_PLAN_INDEX) {
        q->plan.col = p.seed.col;
        q->plan.ranges = (uint32_t)p.seed.n;
    }
    int rc;
    switch (p.kind) {
    case CS_PLAN_ALL: rc = run_table(q, false, out); break;
    case CS_PLAN_INDEX: rc = run_index(q, &p, out); break;
    case CS_PLAN_LEAVES: rc = run_leaves(q, &p, out); break;
    default: rc = q->root != QR_TABLE ? run_elements(q, out) : run_table(q, true, out); break;
    }
    query_plan_release(&p);
    return rc;
}

static int query_make(cs_txn *txn, uint32_t table, qroot root, const char *text, size_t len, const cs_value *args,
                      size_t nargs, const cs_name_map *names, const cs_coll *coll, const cs_obj *owner,
                      uint32_t origin_col, cs_type self_type, cs_query **out);

int cs_query_new(cs_txn *txn, uint32_t table, const char *text, size_t len, const cs_value *args, size_t nargs, cs_query **out)
{
    return cs_query_new_named(txn, table, text, len, args, nargs, NULL, out);
}

int cs_query_new_named(cs_txn *txn, uint32_t table, const char *text, size_t len, const cs_value *args, size_t nargs,
                       const cs_name_map *names, cs_query **out)
{
    *out = NULL;
    table_def *td;
    TRY(txn_table(txn, table, &td));
    return query_make(txn, table, QR_TABLE, text, len, args, nargs, names, NULL, NULL, CS_NONE, CS_TYPE_NULL, out);
}

int cs_query_new_coll(cs_coll *coll, const char *text, size_t len, const cs_value *args, size_t nargs, cs_query **out)
{
    return cs_query_new_coll_named(coll, text, len, args, nargs, NULL, out);
}

int cs_query_new_coll_named(cs_coll *coll, const char *text, size_t len, const cs_value *args, size_t nargs,
                            const cs_name_map *names, cs_query **out)
{
    *out = NULL;
    size_t n;
    TRY(cs_coll_size(coll, &n)); /* checks the owner still exists */
    bool objects = coll->elem_type == CS_TYPE_LINK && coll->depth == 0;
    return query_make(coll->obj.txn, objects ? coll->target : CS_NONE, objects ? QR_OBJECTS : QR_VALUES, text, len, args,
                      nargs, names, coll, NULL, CS_NONE, (cs_type)coll->elem_type, out);
}

int cs_query_new_backlinks(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, const char *text, size_t len,
                           const cs_value *args, size_t nargs, cs_query **out)
{
    return cs_query_new_backlinks_named(obj, origin_table, origin_col, text, len, args, nargs, NULL, out);
}

int cs_query_new_backlinks_named(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, const char *text, size_t len,
                                 const cs_value *args, size_t nargs, const cs_name_map *names, cs_query **out)
{
    *out = NULL;
    size_t n;
    TRY(cs_obj_backlink_count(obj, origin_table, origin_col, &n));
    return query_make(obj->txn, origin_table, QR_BACKLINKS, text, len, args, nargs, names, NULL, obj, origin_col,
                      CS_TYPE_NULL, out);
}

/* Makes the query: copies the text and the name map, parses, and binds to the schema. */
static int query_make(cs_txn *txn, uint32_t table, qroot root, const char *text, size_t len, const cs_value *args,
                      size_t nargs, const cs_name_map *names, const cs_coll *coll, const cs_obj *owner,
                      uint32_t origin_col, cs_type self_type, cs_query **out)
{
    cs_query *q = calloc(1, sizeof *q);
    if (!q) return NOMEM();
    q->txn = txn;
    q->table = table;
    q->root = root;
    if (coll) q->coll = *coll;
    if (owner) q->owner = *owner;
    q->origin_col = origin_col;
    q->self_type = self_type;
    q->text = malloc(len + 1);
    if (!q->text) { free(q); return NOMEM(); }
    if (len) memcpy(q->text, text, len);
    q->text[len] = 0;
    q->len = len;
    int rc = qnames_copy(txn, names, &q->names);
    if (rc == CS_OK) rc = qparse(q->text, len, args, nargs, &q->parsed);
    if (rc == CS_OK) rc = query_rebind(q);
    if (rc != CS_OK) {
        cs_query_free(q);
        return rc;
    }
    *out = q;
    return CS_OK;
}

/* Lists the constants of the predicate that came from arguments, in tree order, into q->argnodes
 * (once per query: the tree's shape never changes). A list argument cannot be replaced. */
static int find_args(cs_query *q, qnode *n, size_t *cap, int depth)
{
    if (!n || depth > QUERY_CHAIN_MAX) return CS_OK;
    if (n->kind == QN_CONST && n->arg >= 0) {
        if (q->nargnodes == *cap) {
            size_t nc = *cap ? *cap * 2 : 4;
            qnode **v = realloc(q->argnodes, nc * sizeof *v);
            if (!v) return NOMEM();
            q->argnodes = v;
            *cap = nc;
        }
        q->argnodes[q->nargnodes++] = n;
        return CS_OK;
    }
    if (n->kind == QN_LIST)
        for (size_t i = 0; i < n->nitems; i++)
            if (n->items[i]->arg >= 0) return cs_fail(CS_MISUSE, 0, "list arguments cannot be replaced; make a new query");
    TRY(find_args(q, n->a, cap, depth + 1));
    TRY(find_args(q, n->b, cap, depth + 1));
    TRY(find_args(q, n->c, cap, depth + 1));
    TRY(find_args(q, n->pred, cap, depth + 1));
    for (size_t i = 0; i < n->nitems; i++) TRY(find_args(q, n->items[i], cap, depth + 1));
    return CS_OK;
}

/* Replaces the values of the constants that came from arguments (scalar arguments only). */
int cs_query_set_args(cs_query *q, const cs_value *args, size_t nargs)
{
    if (!q->args_found) {
        size_t cap = 0;
        q->nargnodes = 0;
        TRY(find_args(q, q->parsed->pred, &cap, 0));
        q->args_found = true;
    }
    bool changed = false;
    for (size_t i = 0; i < q->nargnodes; i++) {
        qnode *n = q->argnodes[i];
        if ((size_t)n->arg >= nargs) return cs_fail(CS_QUERY, 0, "missing argument %d (%zu given)", n->arg, nargs);
        const cs_value *a = &args[n->arg];
        if (a->type == CS_TYPE_LIST) return cs_fail(CS_MISUSE, 0, "list arguments cannot be replaced; make a new query");
        if (a->type != n->value.type) changed = true;
        free(n->owned);
        n->owned = NULL;
        n->value = *a;
        if (a->type == CS_TYPE_STRING || a->type == CS_TYPE_BINARY) {
            n->owned = malloc(a->v.bytes.len ? a->v.bytes.len : 1);
            if (!n->owned) return NOMEM();
            if (a->v.bytes.len) memcpy(n->owned, a->v.bytes.ptr, a->v.bytes.len);
            n->value.v.bytes.ptr = n->owned;
        }
    }
    if (changed) {
        /* new types need a new type check */
        q->bound_to = NULL;
        TRY(query_rebind(q));
    }
    return CS_OK;
}

void cs_query_free(cs_query *q)
{
    if (!q) return;
    if (q->parsed) {
        query_unbind(q->parsed->pred);
        for (size_t i = 0; i < q->parsed->nsort; i++) query_unbind(q->parsed->sort[i].path);
        for (size_t i = 0; i < q->parsed->ndistinct; i++) query_unbind(q->parsed->distinct[i]);
    }
    qparsed_free(q->parsed);
    qnames_free(q->names);
    free(q->argnodes);
    free(q->text);
    free(q);
}

int query_keys_push(keyset *k, int64_t key)
{
    if (!k->collect) { k->count++; return CS_OK; }
    if (k->n == k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 64;
        int64_t *p = realloc(k->keys, nc * sizeof *p);
        if (!p) return NOMEM();
        k->keys = p;
        k->cap = nc;
    }
    k->keys[k->n++] = key;
    k->count++;
    return CS_OK;
}

typedef struct sort_item {
    int64_t key;     /* object */
    size_t at;       /* original position (stability) */
    cs_value *vals;  /* one value per sort key */
    void **bufs;     /* copies of string bytes */
} sort_item;

/* Orders two items by `nk` keys (their vals[0..nk)), then by their position (stability). */
static int item_cmp(const sort_item *a, const sort_item *b, const qsort_key *keys, size_t nk)
{
    for (size_t i = 0; i < nk; i++) {
        int c = cs_value_compare(&a->vals[i], &b->vals[i]);
        if (c) return !keys || keys[i].ascending ? c : -c;
    }
    return a->at < b->at ? -1 : a->at > b->at;
}

/* Sorts items by `nk` keys (ascending when `keys` is NULL), stably: a merge sort through `tmp`
 * (n items), so no comparator state is shared between threads. */
static void items_sort(sort_item *v, sort_item *tmp, size_t n, const qsort_key *keys, size_t nk)
{
    if (n < 2) return;
    size_t h = n / 2;
    items_sort(v, tmp, h, keys, nk);
    items_sort(v + h, tmp, n - h, keys, nk);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) tmp[o++] = item_cmp(&v[j], &v[i], keys, nk) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[o++] = v[i++];
    while (j < n) tmp[o++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static int single_value(cs_txn *t, qnode *path, cs_obj *o, const cs_value *self, cs_value *v, void **buf)
{
    vals x = {0};
    /* query_operand_values, so that a path ending in @type yields the type's name */
    int rc = query_operand_values(t, NULL, path, o, self, &x);
    *v = cs_null();
    *buf = NULL;
    if (rc == CS_OK && x.n) {
        *v = x.v[0];
        if (v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY) {
            *buf = malloc(v->v.bytes.len + 1);
            if (!*buf) rc = NOMEM();
            else {
                memcpy(*buf, v->v.bytes.ptr, v->v.bytes.len);
                v->v.bytes.ptr = *buf;
            }
        }
    }
    free(x.v);
    return rc;
}

/* The object (or, for a collection of values, the element) a result key names. */
static int open_item(cs_query *q, int64_t key, cs_obj *o, cs_value *self)
{
    *self = cs_null();
    memset(o, 0, sizeof *o);
    if (q->root == QR_VALUES) {
        if (q->coll.kind == CS_COLL_MAP) {
            cs_value k;
            return cs_map_get_at(&q->coll, (size_t)key, &k, self);
        }
        return cs_list_get(&q->coll, (size_t)key, self);
    }
    return cs_obj_open(q->txn, q->table, key, o);
}

int cs_query_count(cs_query *q, uint64_t *out)
{
    if (q->parsed->ndistinct || q->parsed->limit >= 0) {
        int64_t *keys;
        size_t n;
        TRY(cs_query_keys(q, &keys, &n));
        free(keys);
        *out = n;
        return CS_OK;
    }
    keyset k = {NULL, 0, 0, 0, false};
    TRY(run_filter(q, &k));
    *out = k.count;
    return CS_OK;
}

/* Sorts keys (ascending) by a non-nullable Int column, stably: the values are read in one pass
 * over the table in key order, then a radix sort on 16-bit digits orders (value, key) pairs. */
static int sort_int_keys(cs_txn *t, uint32_t table, uint32_t col, int64_t *keys, size_t n, bool ascending)
{
    uint64_t *v = malloc(n * sizeof *v), *v2 = malloc(n * sizeof *v2);
    int64_t *k2 = malloc(n * sizeof *k2);
    size_t *cnt = malloc(65537 * sizeof *cnt);
    int rc = (!v || !v2 || !k2 || !cnt) ? NOMEM() : CS_OK;
    if (rc == CS_OK) {
        cs_iter it;
        cs_obj o;
        size_t j = 0;
        rc = cs_iter_init(&it, t, table);
        while (rc == CS_OK && j < n && (rc = cs_iter_next(&it, &o)) == CS_OK) {
            if (o.key != keys[j]) continue;
            int64_t x;
            rc = cs_obj_get_int(&o, col, &x);
            /* flip the sign bit so unsigned order is signed order; complement for descending */
            uint64_t u = (uint64_t)x ^ (1ull << 63);
            v[j++] = ascending ? u : ~u;
        }
        if (rc == CS_NOTFOUND) rc = j == n ? CS_OK : CORRUPT("query keys not found in the table");
    }
    for (int pass = 0; rc == CS_OK && pass < 4; pass++) {
        int sh = pass * 16;
        memset(cnt, 0, 65537 * sizeof *cnt);
        for (size_t i = 0; i < n; i++) cnt[((v[i] >> sh) & 0xffff) + 1]++;
        if (cnt[((v[0] >> sh) & 0xffff) + 1] == n) continue; /* every value shares this digit */
        for (size_t d = 1; d <= 65536; d++) cnt[d] += cnt[d - 1];
        for (size_t i = 0; i < n; i++) {
            size_t at = cnt[(v[i] >> sh) & 0xffff]++;
            v2[at] = v[i];
            k2[at] = keys[i];
        }
        memcpy(v, v2, n * sizeof *v);
        memcpy(keys, k2, n * sizeof *keys);
    }
    free(v);
    free(v2);
    free(k2);
    free(cnt);
    return rc;
}

/* Applies the SORT and DISTINCT clauses in the order written (qparsed.order) to `keys`; *n
 * shrinks with each DISTINCT. */
static int order_keys(cs_query *q, int64_t *keys, size_t *n)
{
    const qparsed *p = q->parsed;
    cs_txn *t = q->txn;
    size_t nk = 0, cnt = *n;
    for (size_t s = 0; s < p->norder; s++) nk = p->order[s].n > nk ? p->order[s].n : nk;
    int rc = CS_OK;
    sort_item *items = calloc(cnt, sizeof *items), *tmp = malloc(cnt * sizeof *tmp);
    bool *keep = malloc(cnt);
    if (!items || !tmp || !keep) { rc = NOMEM(); goto done; }
    for (size_t i = 0; i < cnt; i++) {
        items[i].key = keys[i];
        items[i].vals = calloc(nk, sizeof(cs_value));
        items[i].bufs = calloc(nk, sizeof(void *));
        if (!items[i].vals || !items[i].bufs) { rc = NOMEM(); goto done; }
    }
    for (size_t s = 0; s < p->norder; s++) {
        const qorder *st = &p->order[s];
        /* the step's values for each item, in the current order */
        for (size_t i = 0; i < cnt && rc == CS_OK; i++) {
            cs_obj o;
            cs_value self;
            items[i].at = i;
            rc = open_item(q, items[i].key, &o, &self);
            for (size_t x = 0; rc == CS_OK && x < st->n; x++) {
                qnode *path = st->distinct ? p->distinct[st->first + x] : p->sort[st->first + x].path;
                free(items[i].bufs[x]);
                items[i].bufs[x] = NULL;
                rc = single_value(t, path, q->root == QR_VALUES ? NULL : &o, &self, &items[i].vals[x], &items[i].bufs[x]);
            }
        }
        if (rc != CS_OK) goto done;
        if (!st->distinct) {
            items_sort(items, tmp, cnt, p->sort + st->first, st->n);
            continue;
        }
        /* DISTINCT: sort a copy by the values, mark the first (in the current order) of each run */
        memcpy(tmp, items, cnt * sizeof *tmp);
        sort_item *scratch = malloc(cnt * sizeof *scratch);
        if (!scratch) { rc = NOMEM(); goto done; }
        items_sort(tmp, scratch, cnt, NULL, st->n);
        free(scratch);
        memset(keep, 0, cnt);
        for (size_t i = 0; i < cnt; i++) {
            bool first = i == 0;
            for (size_t x = 0; !first && x < st->n; x++)
                if (cs_value_compare(&tmp[i].vals[x], &tmp[i - 1].vals[x]) != 0) first = true;
            if (first) keep[tmp[i].at] = true;
        }
        size_t w = 0;
        for (size_t i = 0; i < cnt; i++) {
            if (keep[i]) { items[w++] = items[i]; continue; }
            for (size_t x = 0; x < nk; x++) free(items[i].bufs[x]);
            free(items[i].vals);
            free(items[i].bufs);
        }
        cnt = w;
    }
    for (size_t i = 0; i < cnt; i++) keys[i] = items[i].key;
    *n = cnt;
done:
    for (size_t i = 0; items && i < cnt; i++) {
        if (items[i].bufs) for (size_t x = 0; x < nk; x++) free(items[i].bufs[x]);
        free(items[i].vals);
        free(items[i].bufs);
    }
    free(items);
    free(tmp);
    free(keep);
    return rc;
}

int cs_query_keys(cs_query *q, int64_t **keys, size_t *count)
{
    *keys = NULL;
    *count = 0;
    keyset k = {NULL, 0, 0, 0, true};
    int rc = run_filter(q, &k);
    if (rc != CS_OK) { free(k.keys); return rc; }
    const qparsed *p = q->parsed;
    cs_txn *t = q->txn;
    if (p->nsort == 1 && !p->ndistinct && k.n > 1 && q->root == QR_TABLE) {
        bpath *b = p->sort[0].path->owned;
        col_def *c = b && b->n == 1 && b->steps[0].kind == BS_COL ? query_bound_col(q, q->table, b->steps[0].col) : NULL;
        if (c && c->type == CS_TYPE_INT && !(c->flags & CS_COL_NULLABLE)) {
            rc = sort_int_keys(t, q->table, b->steps[0].col, k.keys, k.n, p->sort[0].ascending);
            if (rc != CS_OK) { free(k.keys); return rc; }
            if (p->limit >= 0 && (uint64_t)p->limit < k.n) k.n = (size_t)p->limit;
            *keys = k.keys;
            *count = k.n;
            return CS_OK;
        }
    }
    if (p->norder && k.n) {
        bool done = false;
        rc = query_sort_one_column(q, k.keys, k.n, &done);
        if (rc == CS_OK && !done) rc = order_keys(q, k.keys, &k.n);
    }
    if (rc != CS_OK) { free(k.keys); return rc; }
    if (p->limit >= 0 && (uint64_t)p->limit < k.n) k.n = (size_t)p->limit;
    *keys = k.keys;
    *count = k.n;
    return CS_OK;
}

/* The aggregate over the matches, one value each: column `col` of each matching object, or the
 * matching elements themselves for a query over values (col CS_NONE). */
static int aggregate_matches(cs_query *q, uint32_t col, cs_aggregate op, cs_value *out)
{
    int64_t *keys;
    size_t n;
    TRY(cs_query_keys(q, &keys, &n));
    vals v = {0};
    int rc = CS_OK;
    for (size_t i = 0; i < n && rc == CS_OK; i++) {
        cs_obj o;
        cs_value x;
        rc = open_item(q, keys[i], &o, &x);
        if (rc == CS_OK && col != CS_NONE) rc = cs_obj_get(&o, col, &x);
        if (rc == CS_OK) rc = query_vals_push(&v, &x);
    }
    free(keys);
    bstep st = {0};
    st.kind = op == CS_AGG_SUM ? BS_SUM : op == CS_AGG_AVG ? BS_AVG : op == CS_AGG_MIN ? BS_MIN : BS_MAX;
    if (rc == CS_OK) rc = query_agg_values(q->txn, &st, &v, out);
    free(v.v);
    return rc;
}

int cs_query_aggregate(cs_query *q, uint32_t col, cs_aggregate op, cs_value *out)
{
    if (q->root == QR_VALUES) {
        /* the elements themselves (col is ignored) */
        if (op == CS_AGG_COUNT) {
            uint64_t n;
            TRY(cs_query_count(q, &n));
            *out = cs_int((int64_t)n);
            return CS_OK;
        }
        cs_type ty = q->self_type;
        if ((op == CS_AGG_SUM || op == CS_AGG_AVG) && !numeric(ty) && ty != CS_TYPE_MIXED)
            return cs_fail(CS_TYPE, 0, "cannot sum or average values of type %s", query_type_name(ty));
        if (!numeric(ty) && ty != CS_TYPE_TIMESTAMP && ty != CS_TYPE_MIXED)
            return cs_fail(CS_TYPE, 0, "cannot take the min or max of values of type %s", query_type_name(ty));
        return aggregate_matches(q, CS_NONE, op, out);
    }
    {
        /* a plain Int column over a table, with no SORT/DISTINCT/LIMIT: leaf by leaf */
        col_def *c0;
        TRY(txn_col(q->txn, q->table, col, NULL, &c0));
        TRY(query_rebind(q));
        qplan p;
        p.kind = CS_PLAN_NONE;
        if (q->root == QR_TABLE && c0->coll == CS_COLL_NONE && c0->type == CS_TYPE_INT && !(c0->flags & CS_COL_NULLABLE) &&
            op != CS_AGG_COUNT && !q->parsed->ndistinct && q->parsed->limit < 0)
            TRY(query_plan_choose(q, QPLAN_INT_AGGREGATE, &p));
        if (p.kind == CS_PLAN_LEAVES) {
            aggctx a = {1 + col, q->txn, op, p.fc, p.nf, 0, 0, 0, false};
            q->plan = (cs_query_plan){CS_PLAN_LEAVES, CS_NONE, 0, 0, 0};
            TRY(cs_table_count(q->txn, q->table, &q->plan.candidates));
            TRY(query_agg_walk(q->txn, p.root, &a));
            if (op == CS_AGG_SUM && a.overflow) return cs_fail(CS_OVERFLOW, 0, "the sum of '%s' overflows 64 bits",
                                                             qnames_column_name(q->names, q->txn, q->table, col));
            if (op == CS_AGG_SUM) *out = cs_int((int64_t)a.sum);
            else if (op == CS_AGG_AVG) *out = a.n ? cs_double((double)((long double)a.sum / (long double)a.n)) : cs_null();
            else *out = a.n ? cs_int(a.best) : cs_null();
            return CS_OK;
        }
    }
    col_def *c;
    TRY(txn_col(q->txn, q->table, col, NULL, &c));
    if (c->coll != CS_COLL_NONE) return cs_fail(CS_TYPE, 0, "cannot aggregate the collection property '%s'",
                                                      qnames_column_name(q->names, q->txn, q->table, col));
    cs_type ty = (cs_type)c->type;
    if (op == CS_AGG_COUNT) {
        uint64_t n;
        TRY(cs_query_count(q, &n));
        *out = cs_int((int64_t)n);
        return CS_OK;
    }
    bool orderable = numeric(ty) || ty == CS_TYPE_TIMESTAMP || ty == CS_TYPE_MIXED;
    if ((op == CS_AGG_SUM || op == CS_AGG_AVG) && !numeric(ty) && ty != CS_TYPE_MIXED)
        return cs_fail(CS_TYPE, 0, "cannot sum or average '%s' of type %s",
                       qnames_column_name(q->names, q->txn, q->table, col), query_type_name(ty));
    if (!orderable) return cs_fail(CS_TYPE, 0, "cannot take the min or max of '%s' of type %s",
                                  qnames_column_name(q->names, q->txn, q->table, col), query_type_name(ty));
    int rc = aggregate_matches(q, col, op, out);
    if (rc == CS_OK && op == CS_AGG_SUM && ty == CS_TYPE_FLOAT) *out = cs_float((float)out->v.d);
    return rc;
}

int cs_query_match_source(cs_query *q, const cs_query_source *src, int64_t handle, bool *out)
{
    *out = false;
    if (q->root != QR_TABLE || !src || !src->get || !src->coll_size || !src->coll_get)
        return cs_fail(CS_MISUSE, 0, "cs_query_match_source needs a table query and every source function");
    TRY(query_rebind(q));
    cs_obj o;
    memset(&o, 0, sizeof o);
    o.txn = q->txn;
    o.table = q->table;
    o.key = handle;
    return query_eval(q->txn, src, q->parsed->pred, &o, NULL, out);
}

int cs_query_new_values(cs_txn *txn, cs_type elem_type, const char *text, size_t len, const cs_value *args,
                        size_t nargs, const cs_name_map *names, cs_query **out)
{
    *out = NULL;
    return query_make(txn, CS_NONE, QR_VALUES, text, len, args, nargs, names, NULL, NULL, CS_NONE, elem_type, out);
}

int cs_query_match_value(cs_query *q, const cs_value *value, bool *out)
{
    *out = false;
    if (q->root != QR_VALUES || q->coll.obj.txn || !value)
        return cs_fail(CS_MISUSE, 0, "cs_query_match_value needs a query made with cs_query_new_values and a value");
    TRY(query_rebind(q));
    return query_eval(q->txn, NULL, q->parsed->pred, NULL, value, out);
}

int cs_query_last_plan(const cs_query *q, cs_query_plan *out)
{
    if (!q || !out) return cs_fail(CS_MISUSE, 0, "cs_query_last_plan: query and out are required");
    *out = q->plan;
    return CS_OK;
}

int cs_query_check(const char *text, size_t len, size_t nargs)
{
    cs_value *args = calloc(nargs ? nargs : 1, sizeof *args);
    if (!args) return NOMEM();
    qparsed *p;
    int rc = qparse(text, len, args, nargs, &p);
    free(args);
    if (rc == CS_OK) qparsed_free(p);
    return rc;
}
