/*
 * schema.c -- changing and inspecting the schema (cstore.h: cs_table_*, cs_column_*): tables
 * and columns added, renamed, removed, indexed, and the schema version. A write transaction
 * that changes the schema works on a private clone (schema_blob.c) and writes a new blob at
 * commit (docs/FORMAT.md §5).
 *
 * Invariants:
 *  1. Table and column keys are slot numbers; a removed table or column leaves a free slot,
 *     which a later add may reuse (its data was freed when it was removed).
 *  2. Every link column (single or collection) has exactly one hidden backlink column in its
 *     target table whose target/origin_col point back at it.
 */
#include "node.h"
#include "cluster.h"
#include "schema.h"
#include "snapshot.h"
#include "keying.h"
#include "changes.h"
#include "index.h"
#include "obj.h"

/* ---- access ----------------------------------------------------------------------------- */

static int txn_schema_writable(cs_txn *t)
{
    TRY(txn_need_write(t));
    TRY(change_schema(t));
    if (t->schema_dirty) return CS_OK;
    schema *c = schema_clone(t->schema);
    if (!c) return NOMEM();
    schema_release(t->schema);
    t->schema = c;
    t->schema_dirty = true;
    t->epoch++;
    return CS_OK;
}

uint32_t cs_table_slots(cs_txn *txn) { return txn->schema->ntables; }

int cs_table_info_get(cs_txn *txn, uint32_t table, cs_table_info *out)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    int64_t count;
    TRY(table_get_meta(txn, table, TBL_COUNT, &count));
    out->name = td->name;
    out->flags = td->flags;
    out->col_slots = td->ncols;
    out->primary = td->primary;
    out->count = (uint64_t)count;
    return CS_OK;
}

int cs_table_find(cs_txn *txn, const char *name, uint32_t *table)
{
    schema *s = txn->schema;
    for (uint32_t i = 0; i < s->ntables; i++)
        if (s->tables[i].live && strcmp(s->tables[i].name, name) == 0) {
            *table = i;
            return CS_OK;
        }
    return cs_fail(CS_NOTFOUND, 0, "no table named '%s'", name);
}

static int name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > NAME_BYTES_MAX) return cs_fail(CS_MISUSE, 0, "names must have 1 to %d bytes", NAME_BYTES_MAX);
    return CS_OK;
}

int cs_table_add(cs_txn *txn, const char *name, uint32_t flags, uint32_t *table)
{
    TRY(name_ok(name));
    uint32_t existing;
    if (cs_table_find(txn, name, &existing) == CS_OK)
        return cs_fail(CS_EXISTS, 0, "a table named '%s' exists already", name);
    TRY(txn_schema_writable(txn));
    schema *s = txn->schema;
    uint32_t slot = s->ntables;
    for (uint32_t i = 0; i < s->ntables; i++)
        if (!s->tables[i].live) { slot = i; break; }
    if (slot == s->ntables) {
        table_def *nt = realloc(s->tables, (s->ntables + 1) * sizeof *nt);
        if (!nt) return NOMEM();
        s->tables = nt;
        memset(&s->tables[slot], 0, sizeof *nt);
        s->ntables++;
    } else {
        schema_table_free(&s->tables[slot]);
        memset(&s->tables[slot], 0, sizeof(table_def));
    }
    table_def *t = &s->tables[slot];
    t->name = strdup(name);
    t->cols = calloc(1, sizeof(col_def));
    if (!t->name || !t->cols) return NOMEM();
    t->flags = flags & CS_TABLE_EMBEDDED;
    t->primary = CS_NONE;
    t->live = 1;
    /* a fresh table node: empty leaf */
    ref_t *tslot;
    TRY(table_node_slot(txn, slot, &tslot));
    *table = slot;
    return CS_OK;
}

int cs_table_rename(cs_txn *txn, uint32_t table, const char *name)
{
    TRY(name_ok(name));
    table_def *td;
    TRY(txn_table(txn, table, &td));
    uint32_t other;
    if (cs_table_find(txn, name, &other) == CS_OK && other != table)
        return cs_fail(CS_EXISTS, 0, "a table named '%s' exists already", name);
    TRY(txn_schema_writable(txn));
    td = &txn->schema->tables[table];
    char *n = strdup(name);
    if (!n) return NOMEM();
    free(td->name);
    td->name = n;
    return CS_OK;
}

int cs_column_info_get(cs_txn *txn, uint32_t table, uint32_t col, cs_column_info *out)
{
    col_def *c;
    TRY(txn_col(txn, table, col, NULL, &c));
    out->name = c->name;
    out->type = (cs_type)c->type;
    out->coll = (cs_coll_kind)c->coll;
    out->flags = c->flags;
    out->target = c->target;
    out->origin_col = c->origin_col;
    return CS_OK;
}

int cs_column_find(cs_txn *txn, uint32_t table, const char *name, uint32_t *col)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    for (uint32_t i = 0; i < td->ncols; i++)
        if (td->cols[i].live && strcmp(td->cols[i].name, name) == 0) {
            *col = i;
            return CS_OK;
        }
    return cs_fail(CS_NOTFOUND, 0, "no property '%s' on '%s'", name, td->name);
}

static int col_slot(table_def *td, uint32_t *out)
{
    for (uint32_t i = 0; i < td->ncols; i++)
        if (!td->cols[i].live) { *out = i; return CS_OK; }
    col_def *nc = realloc(td->cols, (td->ncols + 1) * sizeof *nc);
    if (!nc) return NOMEM();
    td->cols = nc;
    memset(&td->cols[td->ncols], 0, sizeof *nc);
    *out = td->ncols++;
    return CS_OK;
}

int cs_column_add(cs_txn *txn, uint32_t table, const char *name, cs_type type, cs_coll_kind coll,
                  uint32_t flags, uint32_t target, uint32_t *col)
{
    TRY(name_ok(name));
    if (type < CS_TYPE_INT || type > CS_TYPE_MIXED || coll > CS_COLL_MAP)
        return cs_fail(CS_MISUSE, 0, "bad column type %d / collection kind %d", (int)type, (int)coll);
    table_def *td;
    TRY(txn_table(txn, table, &td));
    uint32_t existing;
    if (cs_column_find(txn, table, name, &existing) == CS_OK)
        return cs_fail(CS_EXISTS, 0, "'%s' already has a property named '%s'", td->name, name);
    if (type == CS_TYPE_LINK) {
        table_def *tt;
        TRY(txn_table(txn, target, &tt));
        if ((tt->flags & CS_TABLE_EMBEDDED) && coll == CS_COLL_SET)
            return cs_fail(CS_MISUSE, 0, "a set cannot hold embedded objects");
        if ((flags & CS_COL_NULLABLE) && (coll == CS_COLL_LIST || coll == CS_COLL_SET))
            return cs_fail(CS_MISUSE, 0, "lists and sets of objects cannot hold null");
    } else {
        target = CS_NONE;
    }
    if (type == CS_TYPE_MIXED && coll == CS_COLL_NONE) flags |= CS_COL_NULLABLE;
    if ((flags & CS_COL_INDEXED) && (coll != CS_COLL_NONE || !index_type_ok(type)))
        return cs_fail(CS_TYPE, 0, "properties of this type cannot be indexed");
    TRY(txn_schema_writable(txn));
    td = &txn->schema->tables[table];
    uint32_t c;
    TRY(col_slot(td, &c));
    col_def *d = &td->cols[c];
    d->name = strdup(name);
    if (!d->name) return NOMEM();
    d->type = (uint8_t)type;
    d->coll = (uint8_t)coll;
    d->flags = flags & (CS_COL_NULLABLE | CS_COL_INDEXED);
    d->target = target;
    d->origin_col = CS_NONE;
    d->live = 1;
    TRY(cluster_drop_col(txn, table, c)); /* a reused slot starts empty */
    TRY(index_drop(txn, table, c));
    if (flags & CS_COL_INDEXED) TRY(index_build(txn, table, c, false));
    if (type == CS_TYPE_LINK) {
        table_def *tt = &txn->schema->tables[target];
        uint32_t b;
        TRY(col_slot(tt, &b));
        char buf[64];
        snprintf(buf, sizeof buf, "@links.%u.%u", table, c);
        col_def *bd = &tt->cols[b];
        bd->name = strdup(buf);
        if (!bd->name) return NOMEM();
        bd->type = CS_TYPE_BACKLINK;
        bd->coll = CS_COLL_NONE;
        bd->flags = CS_COL_HIDDEN;
        bd->target = table;
        bd->origin_col = c;
        bd->live = 1;
        TRY(cluster_drop_col(txn, target, b));
    }
    *col = c;
    return CS_OK;
}

int cs_column_rename(cs_txn *txn, uint32_t table, uint32_t col, const char *name)
{
    TRY(name_ok(name));
    col_def *c;
    TRY(txn_col(txn, table, col, NULL, &c));
    uint32_t other;
    if (cs_column_find(txn, table, name, &other) == CS_OK && other != col)
        return cs_fail(CS_EXISTS, 0, "a property named '%s' exists already", name);
    if (c->flags & CS_COL_HIDDEN) return cs_fail(CS_MISUSE, 0, "backlink columns cannot be renamed");
    TRY(txn_schema_writable(txn));
    c = &txn->schema->tables[table].cols[col];
    char *n = strdup(name);
    if (!n) return NOMEM();
    free(c->name);
    c->name = n;
    return CS_OK;
}

static int backlink_col_of(schema *s, uint32_t table, uint32_t col, uint32_t *bt, uint32_t *bc)
{
    col_def *d = &s->tables[table].cols[col];
    table_def *tt = &s->tables[d->target];
    for (uint32_t i = 0; i < tt->ncols; i++)
        if (tt->cols[i].live && tt->cols[i].type == CS_TYPE_BACKLINK && tt->cols[i].target == table &&
            tt->cols[i].origin_col == col) {
            *bt = d->target;
            *bc = i;
            return CS_OK;
        }
    return CORRUPT("link column %u.%u has no backlink column", table, col);
}

static void col_clear_def(col_def *d)
{
    free(d->name);
    memset(d, 0, sizeof *d);
    d->origin_col = CS_NONE;
    d->target = CS_NONE;
}

int cs_column_remove(cs_txn *txn, uint32_t table, uint32_t col)
{
    col_def *c;
    TRY(txn_col(txn, table, col, NULL, &c));
    if (c->flags & CS_COL_HIDDEN) return cs_fail(CS_MISUSE, 0, "backlink columns are removed with their link column");
    TRY(txn_schema_writable(txn));
    schema *s = txn->schema;
    c = &s->tables[table].cols[col];
    if (c->type == CS_TYPE_LINK) {
        uint32_t bt = 0, bc = 0;
        TRY(backlink_col_of(s, table, col, &bt, &bc));
        /* embedded targets lose their owner: delete them */
        if (s->tables[bt].flags & CS_TABLE_EMBEDDED) {
            TRY(cluster_drop_col(txn, table, col));
            /* every embedded object reached only through this column is now orphaned */
            cs_iter it;
            cs_obj o;
            TRY(cs_iter_init(&it, txn, bt));
            int64_t *dead = NULL;
            size_t nd = 0, cap = 0;
            int rc;
            while ((rc = cs_iter_next(&it, &o)) == CS_OK) {
                size_t n = 0;
                TRY(cs_obj_backlink_count(&o, table, col, &n));
                if (n) {
                    if (nd == cap) {
                        cap = cap ? cap * 2 : 64;
                        int64_t *x = realloc(dead, cap * sizeof *x);
                        if (!x) { free(dead); return NOMEM(); }
                        dead = x;
                    }
                    dead[nd++] = o.key;
                }
            }
            TRY(cluster_drop_col(txn, bt, bc));
            for (size_t i = 0; i < nd; i++) {
                rc = obj_delete_key(txn, bt, dead[i]);
                if (rc != CS_OK && rc != CS_NOTFOUND) { free(dead); return rc; }
            }
            free(dead);
        } else {
            TRY(cluster_drop_col(txn, bt, bc));
            TRY(cluster_drop_col(txn, table, col));
        }
        col_clear_def(&s->tables[bt].cols[bc]);
    } else {
        TRY(cluster_drop_col(txn, table, col));
    }
    /* a removed primary key takes the table out of invariant 5 (keying.c): no index to build */
    if (txn->schema->tables[table].primary == col) TRY(keying_index_back(txn, table, false));
    TRY(index_drop(txn, table, col));
    s = txn->schema;
    c = &s->tables[table].cols[col];
    col_clear_def(c);
    if (s->tables[table].primary == col) s->tables[table].primary = CS_NONE;
    txn->epoch++;
    return CS_OK;
}

int cs_table_set_primary_key(cs_txn *txn, uint32_t table, uint32_t col)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    if (col != CS_NONE) {
        col_def *c;
        TRY(txn_col(txn, table, col, NULL, &c));
        if (c->coll != CS_COLL_NONE ||
            (c->type != CS_TYPE_INT && c->type != CS_TYPE_STRING && c->type != CS_TYPE_OBJECTID &&
             c->type != CS_TYPE_UUID))
            return cs_fail(CS_TYPE, 0, "property '%s' cannot be a primary key", c->name);
        if (td->flags & CS_TABLE_EMBEDDED) return cs_fail(CS_MISUSE, 0, "embedded objects have no primary key");
    }
    TRY(txn_schema_writable(txn));
    td = &txn->schema->tables[table];
    uint32_t old = td->primary;
    if (old == col) return CS_OK;
    /* A failure leaves the table as it was (keying.c invariant 5): what can fail comes first
     * (the keying plan reads; the two index builds undo themselves), what changes the schema and
     * the keying slots after. A column whose values are the table's keys is unique without a
     * check and will keep no index: building one only to drop it costs a pass over the objects. */
    int plan = KP_KEEP;
    if (col != CS_NONE) TRY(keying_primary_plan(txn, table, col, &plan));
    /* every node the steps below write in place is made a writable copy first (the table node
     * with its keying slots, the list of indexes with both columns' slots): from here on only
     * the two index builds allocate, so running out of memory anywhere else cannot leave the
     * table half changed (an index dropped, the keying flag cleared or the primary key moved
     * without the rest) */
    ref_t *slot;
    TRY(plan == KP_KEEP ? table_node_slot(txn, table, &slot) : table_keying_slots(txn, table, &slot));
    if (old != CS_NONE) TRY(index_slot_writable(txn, table, old));
    if (col != CS_NONE) TRY(index_slot_writable(txn, table, col));
    bool keyed = plan == KP_NEW || plan == KP_UNINDEXED;
    td = &txn->schema->tables[table];
    bool built = false;
    if (col != CS_NONE && !keyed) {
        if (td->cols[col].flags & CS_COL_INDEXED) {
            /* the column's own index holds the entries a unique one would: checked, kept */
            TRY(index_check_unique(txn, table, col));
        } else {
            /* build the unique index first: on a duplicate, or a build that fails part way,
             * nothing changes (the old primary key stays, still without its index when it had
             * none) */
            int rc = index_build(txn, table, col, true);
            if (rc != CS_OK) {
                index_drop(txn, table, col);
                return rc;
            }
            built = true;
        }
        td = &txn->schema->tables[table];
    }
    /* the old primary key's index comes back (keying.c invariant 5) when the column stays
     * indexed on its own; else it would be dropped just below. A rebuild that fails leaves the
     * old key without its index, as it was, and the new column's unique index goes again */
    if (old != CS_NONE) {
        bool own = (td->cols[old].flags & CS_COL_INDEXED) != 0, unindexed = false;
        int rc = keying_pk_unindexed(txn, table, &unindexed);
        /* an old key without an index of its own, in a table that keeps none, loses its (empty)
         * index first: a failure there (out of memory for a writable copy) leaves the flag as
         * it was, and clearing it then can no longer fail. A key whose index the table keeps
         * loses it only once the keying is read (below) */
        if (rc == CS_OK && !own && unindexed) rc = index_drop(txn, table, old);
        if (rc == CS_OK) rc = keying_index_back(txn, table, own);
        if (rc != CS_OK) {
            if (built) index_drop(txn, table, col);
            return rc;
        }
        if (!own && !unindexed) TRY(index_drop(txn, table, old));
        td = &txn->schema->tables[table];
        td->cols[old].flags &= ~(uint32_t)CS_COL_PRIMARY;
    }
    td = &txn->schema->tables[table];
    td->primary = col;
    if (col != CS_NONE) td->cols[col].flags |= CS_COL_PRIMARY;
    return keying_primary_apply(txn, table, col, plan);
}

int cs_column_set_indexed(cs_txn *txn, uint32_t table, uint32_t col, bool indexed)
{
    col_def *c;
    TRY(txn_col(txn, table, col, NULL, &c));
    if (indexed && (c->coll != CS_COLL_NONE || !index_type_ok((cs_type)c->type)))
        return cs_fail(CS_TYPE, 0, "property '%s' cannot be indexed", c->name);
    if (indexed == ((c->flags & CS_COL_INDEXED) != 0)) return CS_OK;
    TRY(txn_schema_writable(txn));
    c = &txn->schema->tables[table].cols[col];
    if (indexed) {
        c->flags |= CS_COL_INDEXED;
        if (!(c->flags & CS_COL_PRIMARY)) TRY(index_build(txn, table, col, false));
    } else {
        c->flags &= ~(uint32_t)CS_COL_INDEXED;
        if (!(c->flags & CS_COL_PRIMARY)) TRY(index_drop(txn, table, col));
    }
    return CS_OK;
}

int cs_table_remove(cs_txn *txn, uint32_t table)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    schema *s = txn->schema;
    for (uint32_t i = 0; i < s->ntables; i++) {
        if (!s->tables[i].live || i == table) continue;
        for (uint32_t c = 0; c < s->tables[i].ncols; c++) {
            col_def *d = &s->tables[i].cols[c];
            if (d->live && d->type == CS_TYPE_LINK && d->target == table)
                return cs_fail(CS_CONSTRAINT, 0, "table '%s' is the target of '%s.%s'", td->name,
                               s->tables[i].name, d->name);
        }
    }
    TRY(txn_schema_writable(txn));
    s = txn->schema;
    td = &s->tables[table];
    /* remove own link columns (and their backlinks; embedded targets are deleted) */
    for (uint32_t c = 0; c < td->ncols; c++) {
        if (td->cols[c].live && td->cols[c].type == CS_TYPE_LINK && td->cols[c].target != table) {
            TRY(cs_column_remove(txn, table, c));
            td = &txn->schema->tables[table];
        }
    }
    /* free the whole table node */
    ref_t *tables;
    TRY(txn_top_slot(txn, TOP_TABLES, &tables));
    TRY(node_cow(txn, tables));
    node_hdr *th = (node_hdr *)txn_ptr(txn, *tables);
    if (table < th->count) {
        node_free_tree(txn, node_refs(th)[table]);
        node_refs(th)[table] = 0;
    }
    schema_table_free(td);
    memset(td, 0, sizeof *td);
    td->primary = CS_NONE;
    txn->epoch++;
    return CS_OK;
}

uint64_t cs_schema_version(cs_txn *txn)
{
    uint64_t v = 0;
    if (txn_top_get(txn, TOP_SCHEMA_VERSION, &v) != CS_OK) return 0;
    return tagged(v) ? (uint64_t)untag(v) : 0;
}

int cs_schema_version_set(cs_txn *txn, uint64_t version)
{
    TRY(txn_need_write(txn));
    if (version > (UINT64_MAX >> 2)) return cs_fail(CS_MISUSE, 0, "schema version too large");
    ref_t *s;
    TRY(txn_top_slot(txn, TOP_SCHEMA_VERSION, &s));
    *s = tag_int((int64_t)version);
    return CS_OK;
}
