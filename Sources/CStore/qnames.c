/*
 * qnames.c -- public names for queries (cs_name_map, cstore.h "Queries"): the copy a query
 * keeps of its caller's map, and the lookups the binder (query.c) makes through it. Nothing
 * here runs while a query runs: names are resolved when key paths are bound to a schema, which
 * is when the query is made and again only after the schema changes.
 *
 * Invariants:
 *  1. The entries are sorted by (table, col), so a table's entries are adjacent and its own
 *     entry (col CS_NONE) comes last among them. No two entries share (table, col); no two
 *     class entries, and no two property entries of one table, share a public name.
 *  2. Every string is the query's own copy: nothing points into the caller's map.
 *  3. An entry applies to a schema while its key names a live table (or a live, visible column)
 *     whose stored name is the one it had when the query was made (`stored`). The lookups skip
 *     entries that do not apply, so a removed table or column, or a reused key, never sends a
 *     public name somewhere else.
 *  4. A backlink alias (CS_NAME_BACKLINK) is kept under the table it is a property of (the link
 *     column's target): `table` is that target, `col` is CS_NAME_BACKLINK | the link column,
 *     `origin` the link column's table. It applies while the origin table and the link column
 *     keep their stored names (`origin_stored`, `stored`) and the column still links to `table`.
 *     Its public name shares the scope of the table's property names.
 */
#include "snapshot.h"
#include "qnames.h"



typedef struct qname {
    uint32_t table;    /* table key */
    uint32_t col;      /* column key, or CS_NONE for the table's own entry */
    char *public_name; /* the name the query text uses */
    char *stored;      /* the stored name the key had when the query was made (invariant 3) */
    uint32_t origin;   /* backlink alias: the link column's table; else CS_NONE (invariant 4) */
    char *origin_stored; /* backlink alias: the stored name `origin` had; else NULL */
} qname;

/* Whether an entry is a backlink alias (invariant 4). */
static bool is_alias(const qname *e) { return e->col != CS_NONE && (e->col & CS_NAME_BACKLINK); }

struct qnames {
    qname *v; /* entries, sorted by (table, col) (invariant 1) */
    size_t n; /* how many */
};

void qnames_free(qnames *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].public_name);
        free(m->v[i].stored);
        free(m->v[i].origin_stored);
    }
    free(m->v);
    free(m);
}

/* Orders entries by key: by table, then column, a table's own entry (CS_NONE) last. */
static int key_cmp(const void *x, const void *y)
{
    const qname *a = x, *b = y;
    if (a->table != b->table) return a->table < b->table ? -1 : 1;
    if (a->col != b->col) return a->col < b->col ? -1 : 1;
    if (a->origin != b->origin) return a->origin < b->origin ? -1 : 1;
    return 0;
}

/* Orders pointers to entries by the scope their public name must be unique in (the classes,
 * then the properties of each table) and then by that name. */
static int scope_cmp(const void *x, const void *y)
{
    const qname *a = *(const qname *const *)x, *b = *(const qname *const *)y;
    bool ca = a->col == CS_NONE, cb = b->col == CS_NONE;
    if (ca != cb) return ca ? -1 : 1;
    if (!ca && a->table != b->table) return a->table < b->table ? -1 : 1;
    return strcmp(a->public_name, b->public_name);
}

/* The stored name of a live table (col CS_NONE) or of a live, visible column; else NULL. */
static const char *stored_name(const schema *s, uint32_t table, uint32_t col)
{
    const table_def *td = schema_table(s, table);
    if (!td) return NULL;
    if (col == CS_NONE) return td->name;
    if (col >= td->ncols || !td->cols[col].live || (td->cols[col].flags & CS_COL_HIDDEN)) return NULL;
    return td->cols[col].name;
}

/* Invariants 3 and 4. */
static bool entry_applies(const qname *e, const schema *s)
{
    if (is_alias(e)) {
        uint32_t oc = e->col & ~(uint32_t)CS_NAME_BACKLINK;
        const char *ot = stored_name(s, e->origin, CS_NONE), *now = stored_name(s, e->origin, oc);
        const col_def *lc = schema_col(s, e->origin, oc);
        return ot && now && lc && stored_name(s, e->table, CS_NONE) && strcmp(ot, e->origin_stored) == 0 &&
               strcmp(now, e->stored) == 0 && lc->type == CS_TYPE_LINK && lc->target == e->table;
    }
    const char *now = stored_name(s, e->table, e->col);
    return now && strcmp(now, e->stored) == 0;
}

/* The entry for (table, col) if there is one and it applies to `s`. */
static const qname *entry_of(const qnames *m, const schema *s, uint32_t table, uint32_t col)
{
    if (!m) return NULL;
    qname k = {table, col, NULL, NULL, CS_NONE, NULL};
    const qname *e = bsearch(&k, m->v, m->n, sizeof *m->v, key_cmp);
    return e && entry_applies(e, s) ? e : NULL;
}

static char *dup_name(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

int qnames_copy(cs_txn *txn, const cs_name_map *map, qnames **out)
{
    *out = NULL;
    if (!map || map->count == 0) return CS_OK;
    if (!map->entries) return cs_fail(CS_MISUSE, 0, "name map: %zu entries but no entry array", map->count);
    const schema *s = txn->schema;
    const qname **scoped = NULL;
    int rc = CS_OK;
    qnames *m = calloc(1, sizeof *m);
    if (!m) return NOMEM();
    m->v = calloc(map->count, sizeof *m->v);
    if (!m->v) { rc = NOMEM(); goto fail; }
    for (size_t i = 0; i < map->count; i++) {
        const cs_name_map_entry *x = &map->entries[i];
        size_t len = x->public_name ? strnlen(x->public_name, NAME_BYTES_MAX + 1) : 0;
        if (len == 0 || len > NAME_BYTES_MAX) {
            rc = cs_fail(CS_MISUSE, 0, "name map entry %zu: a public name must have 1 to %d bytes", i, NAME_BYTES_MAX);
            goto fail;
        }
        const table_def *td = schema_table(s, x->table);
        if (!td) {
            rc = cs_fail(CS_MISUSE, 0, "name map entry %zu ('%.64s'): there is no table %u", i, x->public_name, x->table);
            goto fail;
        }
        if (x->col != CS_NONE && (x->col & CS_NAME_BACKLINK)) {
            /* a backlink alias: a property of the link column's target (invariant 4) */
            uint32_t oc = x->col & ~(uint32_t)CS_NAME_BACKLINK;
            if (oc >= td->ncols || !td->cols[oc].live || (td->cols[oc].flags & CS_COL_HIDDEN) ||
                td->cols[oc].type != CS_TYPE_LINK || !schema_table(s, td->cols[oc].target)) {
                rc = cs_fail(CS_MISUSE, 0, "name map entry %zu ('%.64s'): a backlink alias needs a link column, and "
                             "table '%s' has no link column %u", i, x->public_name, td->name, oc);
                goto fail;
            }
            qname *e = &m->v[m->n++];
            e->table = td->cols[oc].target;
            e->col = x->col;
            e->origin = x->table;
            e->public_name = dup_name(x->public_name, len);
            e->stored = dup_name(td->cols[oc].name, strlen(td->cols[oc].name));
            e->origin_stored = dup_name(td->name, strlen(td->name));
            if (!e->public_name || !e->stored || !e->origin_stored) { rc = NOMEM(); goto fail; }
            continue;
        }
        if (x->col != CS_NONE && (x->col >= td->ncols || !td->cols[x->col].live)) {
            rc = cs_fail(CS_MISUSE, 0, "name map entry %zu ('%.64s'): table '%s' has no column %u", i, x->public_name,
                         td->name, x->col);
            goto fail;
        }
        if (x->col != CS_NONE && (td->cols[x->col].flags & CS_COL_HIDDEN)) {
            rc = cs_fail(CS_MISUSE, 0, "name map entry %zu ('%.64s'): column %u of '%s' is a backlink column", i,
                         x->public_name, x->col, td->name);
            goto fail;
        }
        const char *st = stored_name(s, x->table, x->col);
        qname *e = &m->v[m->n++];
        e->table = x->table;
        e->col = x->col;
        e->origin = CS_NONE;
        e->public_name = dup_name(x->public_name, len);
        e->stored = dup_name(st, strlen(st));
        if (!e->public_name || !e->stored) { rc = NOMEM(); goto fail; }
    }
    qsort(m->v, m->n, sizeof *m->v, key_cmp);
    for (size_t i = 1; i < m->n; i++) {
        const qname *a = &m->v[i - 1], *b = &m->v[i];
        if (key_cmp(a, b) != 0) continue;
        if (a->col == CS_NONE)
            rc = cs_fail(CS_MISUSE, 0, "name map: two entries ('%.64s', '%.64s') for the class '%s'", a->public_name,
                         b->public_name, a->stored);
        else if (is_alias(a))
            rc = cs_fail(CS_MISUSE, 0, "name map: two backlink aliases ('%.64s', '%.64s') for the link '%s.%s'",
                         a->public_name, b->public_name, a->origin_stored, a->stored);
        else
            rc = cs_fail(CS_MISUSE, 0, "name map: two entries ('%.64s', '%.64s') for the property '%s.%s'", a->public_name,
                         b->public_name, schema_table(s, a->table)->name, a->stored);
        goto fail;
    }
    scoped = malloc(m->n * sizeof *scoped);
    if (!scoped) { rc = NOMEM(); goto fail; }
    for (size_t i = 0; i < m->n; i++) scoped[i] = &m->v[i];
    qsort(scoped, m->n, sizeof *scoped, scope_cmp);
    for (size_t i = 1; i < m->n; i++) {
        const qname *a = scoped[i - 1], *b = scoped[i];
        if (scope_cmp(&a, &b) != 0) continue;
        if (a->col == CS_NONE)
            rc = cs_fail(CS_MISUSE, 0, "name map: '%.64s' is the public name of two classes ('%s' and '%s')", a->public_name,
                         a->stored, b->stored);
        else
            rc = cs_fail(CS_MISUSE, 0, "name map: '%.64s' is the public name of two properties of '%s' ('%s%s%s' and '%s%s%s')",
                         a->public_name, schema_table(s, a->table)->name, is_alias(a) ? "backlinks of " : "", is_alias(a) ? a->origin_stored : "",
                         is_alias(a) ? "." : "", is_alias(b) ? "backlinks of " : "", is_alias(b) ? b->origin_stored : "",
                         is_alias(b) ? "." : "");
        goto fail;
    }
    free(scoped);
    *out = m;
    return CS_OK;
fail:
    free(scoped);
    qnames_free(m);
    return rc;
}

int qnames_table_find(const qnames *m, cs_txn *txn, const char *name, uint32_t *table)
{
    const schema *s = txn->schema;
    if (m)
        for (size_t i = 0; i < m->n; i++) {
            const qname *e = &m->v[i];
            if (e->col == CS_NONE && strcmp(e->public_name, name) == 0 && entry_applies(e, s)) {
                *table = e->table;
                return CS_OK;
            }
        }
    uint32_t t;
    TRY(cs_table_find(txn, name, &t));
    const qname *e = entry_of(m, s, t, CS_NONE);
    if (e) return cs_fail(CS_NOTFOUND, 0, "no class named '%s' (its public name is '%s')", name, e->public_name);
    *table = t;
    return CS_OK;
}

int qnames_column_find(const qnames *m, cs_txn *txn, uint32_t table, const char *name, uint32_t *col)
{
    const schema *s = txn->schema;
    if (m) {
        /* the table's entries are adjacent (invariant 1): find the first, then scan them */
        size_t lo = 0, hi = m->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (m->v[mid].table < table) lo = mid + 1;
            else hi = mid;
        }
        for (size_t i = lo; i < m->n && m->v[i].table == table; i++) {
            const qname *e = &m->v[i];
            if (e->col != CS_NONE && !is_alias(e) && strcmp(e->public_name, name) == 0 && entry_applies(e, s)) {
                *col = e->col;
                return CS_OK;
            }
        }
    }
    uint32_t c;
    TRY(cs_column_find(txn, table, name, &c));
    const table_def *td = schema_table(s, table);
    if (td->cols[c].flags & CS_COL_HIDDEN) return cs_fail(CS_NOTFOUND, 0, "no property '%s' on '%s'", name, td->name);
    const qname *e = entry_of(m, s, table, c);
    if (e)
        return cs_fail(CS_NOTFOUND, 0, "no property '%s' on '%s' (its public name is '%s')", name, td->name,
                       e->public_name);
    *col = c;
    return CS_OK;
}

int qnames_backlink_find(const qnames *m, cs_txn *txn, uint32_t table, const char *name, uint32_t *origin_table,
                         uint32_t *origin_col)
{
    if (!m) return CS_NOTFOUND;
    for (size_t i = 0; i < m->n; i++) {
        const qname *e = &m->v[i];
        if (e->table == table && is_alias(e) && strcmp(e->public_name, name) == 0 && entry_applies(e, txn->schema)) {
            *origin_table = e->origin;
            *origin_col = e->col & ~(uint32_t)CS_NAME_BACKLINK;
            return CS_OK;
        }
    }
    return CS_NOTFOUND;
}

const char *qnames_table_name(const qnames *m, cs_txn *txn, uint32_t table)
{
    const qname *e = entry_of(m, txn->schema, table, CS_NONE);
    if (e) return e->public_name;
    const char *st = stored_name(txn->schema, table, CS_NONE);
    return st ? st : "?";
}

const char *qnames_column_name(const qnames *m, cs_txn *txn, uint32_t table, uint32_t col)
{
    const qname *e = entry_of(m, txn->schema, table, col);
    if (e) return e->public_name;
    const col_def *c = txn_col_live(txn, table, col);
    return c ? c->name : "?";
}
