/*
 * obj.c -- objects: creating, reading, writing and deleting rows; links and their backlinks;
 * embedded objects; iteration (docs/FORMAT.md §6.3 for backlinks).
 *
 * Invariants:
 *  1. For every link (single, list, set, map value) from (O, k, C) to (T, x) there is exactly one
 *     entry k in x's backlink column for (O, C); a list holding x twice has two.
 *  2. An embedded object has exactly one incoming link; when that link goes away the object is
 *     deleted (recursively).
 *  3. An accessor's cached leaf/row is used only while obj->epoch == txn->epoch.
 */
#include "node.h"
#include "leaf.h"
#include "cluster.h"
#include "schema.h"
#include "snapshot.h"
#include "changes.h"
#include "index.h"
#include "obj.h"
#include "coll.h"
#include "keying.h"
#include "index_key.h"

/* ---- accessors -------------------------------------------------------------------------- */

static int obj_leaf(cs_obj *o, node_hdr **leaf, uint32_t *row)
{
    cs_txn *t = o->txn;
    if (o->leaf && o->epoch == t->epoch) {
        *leaf = (node_hdr *)o->leaf;
        *row = o->row;
        return CS_OK;
    }
    table_def *td = txn_table_live(t, o->table);
    if (!td) return cs_fail(CS_NOTFOUND, 0, "the object's table no longer exists");
    /* an object just found by its primary key alone (keying.c), in a read or a write: that
     * descent was this one */
    txn_rcache *lc = txn_lookup_cache(t);
    if (lc->lk_leaf && lc->lk_epoch == t->epoch && lc->lk_key == o->key && lc->lk_table == o->table) {
        *leaf = (node_hdr *)lc->lk_leaf;
        *row = lc->lk_row;
        o->leaf = *leaf;
        o->row = *row;
        o->epoch = t->epoch;
        return CS_OK;
    }
    ref_t root;
    TRY(table_root(t, o->table, &root));
    int rc = cluster_find(t, root, o->key, leaf, row);
    if (rc == CS_NOTFOUND)
        return cs_fail(CS_NOTFOUND, 0, "object %lld of '%s' has been deleted", (long long)o->key, td->name);
    TRY(rc);
    o->leaf = *leaf;
    o->row = *row;
    o->epoch = t->epoch;
    return CS_OK;
}

static int obj_col(cs_obj *o, uint32_t col, col_def **c)
{
    return txn_col(o->txn, o->table, col, NULL, c);
}

int cs_obj_open(cs_txn *txn, uint32_t table, int64_t key, cs_obj *out)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    memset(out, 0, sizeof *out);
    out->txn = txn;
    out->table = table;
    out->key = key;
    node_hdr *leaf;
    uint32_t row;
    int rc = obj_leaf(out, &leaf, &row);
    if (rc == CS_NOTFOUND) return cs_fail(CS_NOTFOUND, 0, "no object with key %lld in '%s'", (long long)key, td->name);
    return rc;
}

/* The row after `hint_row` of `leaf` if it holds object `key` (a pass in key order), else -1. */
static int64_t next_row_of(cs_txn *txn, node_hdr *leaf, uint32_t hint_row, int64_t key)
{
    node_hdr *keys;
    if (leaf->count < 1) return -1;
    /* a pass in key order stays in one leaf for many objects: its keys node is checked once
     * (the read cache holds for the epoch, as cs_obj_get_int's column nodes do) */
    txn_rcache *cc = txn_read_cache(txn);
    if (cc && cc->pk_leaf == leaf && cc->pk_epoch == txn->epoch) {
        keys = cc->pk_keys;
    } else {
        if (node_at(txn, cluster_keys_ref(leaf), &keys) != CS_OK) return -1;
        if (cc) {
            cc->pk_leaf = leaf;
            cc->pk_epoch = txn->epoch;
            cc->pk_keys = keys;
        }
    }
    uint32_t row = hint_row + 1;
    if (row >= keys->count || node_get_int(keys, row) != key) return -1;
    return row;
}

void cs_obj_prepare(cs_txn *txn, uint32_t table, int64_t key, const cs_obj *hint, cs_obj *out)
{
    memset(out, 0, sizeof *out);
    out->txn = txn;
    out->table = table;
    out->key = key;
    if (!hint || hint->txn != txn || hint->table != table || !hint->leaf || hint->epoch != txn->epoch) return;
    int64_t row = next_row_of(txn, (node_hdr *)hint->leaf, hint->row, key);
    if (row < 0) return;
    out->leaf = hint->leaf;
    out->row = (uint32_t)row;
    out->epoch = txn->epoch;
}

void cs_obj_advance(cs_obj *obj, int64_t key)
{
    cs_txn *txn = obj->txn;
    node_hdr *leaf = (node_hdr *)obj->leaf;
    int64_t row = txn && leaf && obj->epoch == txn->epoch ? next_row_of(txn, leaf, obj->row, key) : -1;
    obj->key = key;
    if (row < 0) {
        obj->leaf = NULL;
        obj->row = 0;
        obj->epoch = 0;
        return;
    }
    obj->row = (uint32_t)row;
}

int cs_obj_check_exists(cs_obj *obj, bool *exists)
{
    if (!obj || !exists) return cs_fail(CS_MISUSE, 0, "cs_obj_check_exists: obj and exists are required");
    *exists = false;
    if (!obj->txn) return CS_OK; /* a zeroed accessor names no object */
    node_hdr *leaf;
    uint32_t row;
    int rc = obj_leaf(obj, &leaf, &row);
    if (rc == CS_NOTFOUND) return CS_OK;
    TRY(rc);
    *exists = true;
    return CS_OK;
}

bool cs_obj_exists(cs_obj *obj)
{
    bool exists = false;
    return obj && cs_obj_check_exists(obj, &exists) == CS_OK && exists;
}

int obj_exists_key(cs_txn *t, uint32_t table, int64_t key, bool *out)
{
    ref_t root;
    TRY(table_root(t, table, &root));
    node_hdr *leaf;
    uint32_t row;
    int rc = cluster_find(t, root, key, &leaf, &row);
    if (rc == CS_NOTFOUND) { *out = false; return CS_OK; }
    TRY(rc);
    *out = true;
    return CS_OK;
}

/* Inserts a row with the key `own` (a primary key as object key, keying.c) or, when own < 0,
 * the table's next counter key. */
static int col_slot_fast(cs_obj *o, uint32_t col, ref_t **slot, uint32_t *row);

/* Creates the row of a new object: key `own`, or the next counter key when own < 0. The nv columns
 * vcols[i] (checked by the caller) hold vvals[i], put into the row as it is inserted, the others
 * their defaults; each indexed column's entry goes in once, with the row's value. CS_EXISTS when
 * key `own` is live: nothing is changed then but writable copies of the path's nodes. */
static int create_row_steps(cs_txn *t, uint32_t table, int64_t own, size_t nv, const uint32_t *vcols,
                            const cs_value *vvals, cs_obj *out, bool *changed);

/* Marks a write that a call left half changed: its commit refuses it and rolls it back
 * (cs_txn_commit). The first failure's code is the one the commit returns. */
static void txn_spoil(cs_txn *t, int rc)
{
    if (!t->spoiled) t->spoiled = rc;
}

static int create_row(cs_txn *t, uint32_t table, int64_t own, size_t nv, const uint32_t *vcols, const cs_value *vvals,
                      cs_obj *out)
{
    /* A failure after the first change (out of memory or file space in the cluster insert, the
     * history or an index) leaves the write's nodes half changed: the key in the tree, columns
     * shifted in part, no count. Nothing undoes that here; the write is marked so that its
     * commit refuses it and rolls it back (cs_txn_commit). */
    bool changed = false;
    int rc = create_row_steps(t, table, own, nv, vcols, vvals, out, &changed);
    if (rc != CS_OK && changed) txn_spoil(t, rc);
    return rc;
}

/* create_row's work; *changed is set once it has changed the write's nodes. */
static int create_row_steps(cs_txn *t, uint32_t table, int64_t own, size_t nv, const uint32_t *vcols,
                            const cs_value *vvals, cs_obj *out, bool *changed)
{
    ref_t *ts;
    TRY(table_node_slot(t, table, &ts));
    uint64_t *m = node_refs((node_hdr *)txn_ptr(t, *ts));
    if (!tagged(m[TBL_NEXTKEY]) || !tagged(m[TBL_COUNT])) return CORRUPT("table %u meta slots are not numbers", table);
    int64_t next = untag(m[TBL_NEXTKEY]), count = untag(m[TBL_COUNT]);
    if (own < 0 && ((node_hdr *)txn_ptr(t, *ts))->count > TBL_KEYING && tagged(m[TBL_KEYING]) &&
        (untag(m[TBL_KEYING]) & TBLK_NOIDX)) {
        /* a counter key ends "every key is its primary key": the index comes back first
         * (keying.c invariant 5) */
        TRY(keying_index_back(t, table, true)); /* all or nothing (keying.c): no mark */
        TRY(table_node_slot(t, table, &ts));
        m = node_refs((node_hdr *)txn_ptr(t, *ts));
    }
    int64_t key = own >= 0 ? own : next;
    if (own < 0 && key >= KEY_END - 1) return cs_fail(CS_RANGE, 0, "table %u has used every object key", table);
    /* the values by column, for the cluster insert */
    const cs_value *stack[64], **byc = NULL;
    uint32_t nbyc = 0;
    if (nv) {
        table_def *td;
        TRY(txn_table(t, table, &td));
        nbyc = td->ncols;
        if (nbyc <= 64) {
            byc = stack;
            memset(byc, 0, nbyc * sizeof *byc);
        } else if (!(byc = calloc(nbyc, sizeof *byc))) {
            return NOMEM();
        }
        for (size_t i = 0; i < nv; i++) {
            if (vcols[i] >= nbyc) {
                if (byc != stack) free(byc);
                return cs_fail(CS_NOTFOUND, 0, "no column %u", vcols[i]);
            }
            byc[vcols[i]] = &vvals[i];
        }
    }
    int irc = cluster_insert_row(t, table, key, byc, nbyc);
    if (byc != stack) free(byc);
    *changed = irc != CS_EXISTS; /* CS_EXISTS: refused before it changed anything */
    TRY(irc);
    TRY(own >= 0 ? change_create_own(t, table, key, count == 0) : change_create(t, table, key));
    TRY(index_row_values(t, table, key, true, nv, vcols, vvals, 1));
    TRY(table_node_slot(t, table, &ts));
    m = node_refs((node_hdr *)txn_ptr(t, *ts));
    if (own < 0) m[TBL_NEXTKEY] = tag_int(key + 1);
    m[TBL_COUNT] = tag_int(count + 1);
    memset(out, 0, sizeof *out);
    out->txn = t;
    out->table = table;
    out->key = key;
    node_hdr *leaf;
    uint32_t row;
    TRY(cluster_find(t, m[TBL_ROOT], key, &leaf, &row));
    out->leaf = leaf;
    out->row = row;
    out->epoch = t->epoch;
    return CS_OK;
}

int obj_create_row(cs_txn *t, uint32_t table, cs_obj *out)
{
    return create_row(t, table, -1, 0, NULL, NULL, out);
}

int cs_obj_create(cs_txn *txn, uint32_t table, cs_obj *out)
{
    TRY(txn_need_write(txn));
    table_def *td;
    TRY(txn_table(txn, table, &td));
    if (td->flags & CS_TABLE_EMBEDDED)
        return cs_fail(CS_MISUSE, 0, "embedded objects of '%s' are created through their owner", td->name);
    if (td->primary != CS_NONE)
        return cs_fail(CS_MISUSE, 0, "'%s' has a primary key: create its objects with cs_obj_create_primary", td->name);
    return obj_create_row(txn, table, out);
}

/* Creates an object whose columns cols[0..nv) hold vals[0..nv) (checked by the caller; *pk, one of
 * them, is the primary key when the table has one, else pk is NULL): the row with its values and
 * its index entries with them (create_row). The change history records the create only: the
 * values of an object created in this write are no changes of their own. */
static int create_with(cs_txn *txn, uint32_t table, table_def *td, size_t nv, const uint32_t *cols, const cs_value *vals,
                       const cs_value *pk, cs_obj *out)
{
    int64_t own = -1, key = 0;
    bool by_key = false, own_pk = false;
    if (pk) {
        uint32_t pc = td->primary;
        /* every object's key its primary key (keying.c invariant 4): the cluster insert of key p
         * is the uniqueness check, and a primary key that gets a counter key is unique */
        if (td->cols[pc].type == CS_TYPE_INT) TRY(keying_keys_are_pks(txn, table, &by_key));
        if (!by_key) {
            int64_t other;
            int rc = cs_index_find(txn, table, pc, pk, &other);
            if (rc == CS_OK)
                return cs_fail(CS_CONSTRAINT, 0, "an object of '%s' with that primary key exists already (key %lld)", td->name, (long long)other);
            if (rc != CS_NOTFOUND) return rc;
        }
        TRY(keying_choose(txn, table, pk, &key, &own_pk));
        if (own_pk) own = key;
    }
    int rc = create_row(txn, table, own, nv, cols, vals, out);
    if (rc == CS_EXISTS && by_key && own_pk)
        return cs_fail(CS_CONSTRAINT, 0, "an object of '%s' with that primary key exists already (key %lld)", td->name, (long long)key);
    return rc;
}

int cs_obj_create_primary(cs_txn *txn, uint32_t table, const cs_value *pk, cs_obj *out)
{
    TRY(txn_need_write(txn));
    table_def *td;
    TRY(txn_table(txn, table, &td));
    if (td->primary == CS_NONE) return cs_fail(CS_MISUSE, 0, "'%s' has no primary key", td->name);
    uint32_t pc = td->primary;
    leaf_spec s = leaf_spec_col(&td->cols[pc]);
    TRY(value_check(&s, pk));
    TRY(create_with(txn, table, td, 1, &pc, pk, pk, out));
    return change_set(txn, table, out->key, pc);
}

/* Column cols[i] of a create's list of named columns: one that holds a value (no collection or
 * backlink), named once (cs_obj_create_values, cs_obj_create_many). */
static int named_col(cs_txn *t, uint32_t table, const uint32_t *cols, size_t i, col_def **out)
{
    col_def *c;
    TRY(txn_col(t, table, cols[i], NULL, &c));
    if (c->coll != CS_COLL_NONE || c->type == CS_TYPE_BACKLINK)
        return cs_fail(CS_TYPE, 0, "'%s' is a collection; use cs_coll_open", c->name);
    for (size_t j = 0; j < i; j++)
        if (cols[j] == cols[i]) return cs_fail(CS_MISUSE, 0, "column '%s' is named twice", c->name);
    *out = c;
    return CS_OK;
}

int cs_obj_create_values(cs_txn *txn, uint32_t table, size_t ncols, const uint32_t *cols, const cs_value *values,
                         cs_obj *out)
{
    TRY(txn_need_write(txn));
    if (!out) return cs_fail(CS_MISUSE, 0, "cs_obj_create_values: no accessor to fill");
    if (ncols && (!cols || !values)) return cs_fail(CS_MISUSE, 0, "cs_obj_create_values: no columns or values");
    table_def *td;
    TRY(txn_table(txn, table, &td));
    if (td->flags & CS_TABLE_EMBEDDED)
        return cs_fail(CS_MISUSE, 0, "embedded objects of '%s' are created through their owner", td->name);
    const cs_value *pk = NULL;
    for (size_t i = 0; i < ncols; i++) {
        col_def *c;
        TRY(named_col(txn, table, cols, i, &c));
        if (c->type == CS_TYPE_LINK || c->type == CS_TYPE_MIXED)
            return cs_fail(CS_TYPE, 0, "'%s' can hold links: set it with cs_obj_set", c->name);
        leaf_spec s = leaf_spec_col(c);
        TRY(value_check(&s, &values[i]));
        if (cols[i] == td->primary) pk = &values[i];
    }
    if (td->primary != CS_NONE && !pk)
        return cs_fail(CS_MISUSE, 0, "'%s' has a primary key: name its column among the values", td->name);
    return create_with(txn, table, td, ncols, cols, values, pk, out);
}

/* ---- creating many objects at once -------------------------------------------------------- */

/* One column of a cs_obj_create_many call: its definition and where its values are. */
typedef struct many_col {
    uint32_t col;         /* column key */
    col_def *cd;          /* definition (re-read after schema-changing calls: none here) */
    leaf_spec s;          /* leaf spec */
    const cs_value *vals; /* n values, or NULL */
    const int64_t *ints;  /* n Ints, or NULL */
} many_col;

static cs_value many_value(const many_col *m, size_t r)
{
    return m->vals ? m->vals[r] : cs_int(m->ints[r]);
}

/* Appends values [r0, r0 + k) of one column to the end of the writable leaf at *ls, whose rows
 * before `row0` may be missing from the column (cluster.c invariant 2). */
static int many_append_col(cs_txn *t, uint32_t table, ref_t *ls, uint64_t row0, const many_col *m, size_t r0, size_t k)
{
    col_def *cd;
    TRY(txn_col(t, table, m->col, NULL, &cd));
    TRY(cluster_materialise(t, table, ls, m->col));
    ref_t *slot = cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *ls), m->col);
    TRY(leaf_pad(t, &m->s, slot, row0));
    if (m->ints && m->s.kind == LK_INT) return node_append_ints(t, slot, m->ints + r0, k);
    for (size_t r = r0; r < r0 + k; r++) {
        cs_value v = many_value(m, r);
        TRY(leaf_insert(t, &m->s, slot, row0 + (r - r0), &v));
    }
    return CS_OK;
}

/* Row r's values of the named columns, as cs_values (vals[c] for column mc[c].col). */
static void many_row(const many_col *mc, size_t ncols, size_t r, cs_value *vals)
{
    for (size_t c = 0; c < ncols; c++) vals[c] = many_value(&mc[c], r);
}

/* Inserts the index entries of new rows [r0, r0 + k) with keys keys[r0..]: each indexed column's
 * entry keys the row's value when the column is named, else its default (no default entry is
 * inserted and then replaced). */
static int many_index(cs_txn *t, uint32_t table, const many_col *mc, size_t ncols, const uint32_t *cols,
                      const int64_t *keys, size_t r0, size_t k, cs_value *row)
{
    for (size_t r = r0; r < r0 + k; r++) {
        many_row(mc, ncols, r, row);
        TRY(index_row_values(t, table, keys[r - r0], true, ncols, cols, row, 1));
    }
    return CS_OK;
}

/* Orders rows by their primary key's index encoding (the duplicate check within a batch). */
typedef struct pk_enc {
    uint8_t *p; /* index_encode of the row's primary key */
    size_t n;   /* its length */
    size_t row; /* the row */
} pk_enc;

static int pk_enc_cmp(const void *a, const void *b)
{
    const pk_enc *x = a, *y = b;
    size_t m = x->n < y->n ? x->n : y->n;
    int r = m ? memcmp(x->p, y->p, m) : 0;
    return r ? r : (x->n > y->n) - (x->n < y->n);
}

static int key_row_cmp(const void *a, const void *b)
{
    const int64_t *x = a, *y = b; /* (key, row) pairs */
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* The keys of n new objects of a table with a primary key (column mc[pm].col), checked before
 * anything is created: CS_CONSTRAINT when two rows share a primary key or a row's primary key
 * is an existing object's, as n cs_obj_create_primary calls in row order would report at the
 * first one. keys[r] is row r's key: its primary key in a pk-keyed table when that key was
 * never used, else the next counter key in row order (keying.c). *ncounter is how many rows
 * took counter keys. */
static int many_pk_keys(cs_txn *t, uint32_t table, const table_def *td, const many_col *pmc, size_t n,
                        int64_t *keys, int64_t *ncounter)
{
    pk_enc *e = calloc(n ? n : 1, sizeof *e);
    if (!e) return NOMEM();
    int rc = CS_OK;
    for (size_t r = 0; r < n && rc == CS_OK; r++) {
        cs_value v = many_value(pmc, r);
        e[r].row = r;
        rc = index_encode(&v, false, &e[r].p, &e[r].n);
    }
    if (rc == CS_OK) qsort(e, n, sizeof *e, pk_enc_cmp);
    for (size_t i = 1; i < n && rc == CS_OK; i++)
        if (pk_enc_cmp(&e[i - 1], &e[i]) == 0)
            rc = cs_fail(CS_CONSTRAINT, 0, "rows %zu and %zu of '%s' have the same primary key",
                         e[i - 1].row < e[i].row ? e[i - 1].row : e[i].row, e[i - 1].row < e[i].row ? e[i].row : e[i - 1].row, td->name);
    for (size_t r = 0; r < n; r++) free(e[r].p);
    free(e);
    TRY(rc);
    bool by_key = false;
    if (pmc->cd->type == CS_TYPE_INT) TRY(keying_keys_are_pks(t, table, &by_key));
    int64_t next;
    TRY(table_get_meta(t, table, TBL_NEXTKEY, &next));
    *ncounter = 0;
    for (size_t r = 0; r < n; r++) {
        cs_value v = many_value(pmc, r);
        bool own;
        int64_t key;
        TRY(keying_choose(t, table, &v, &key, &own));
        if (by_key) {
            /* every object's key is its primary key (keying.c invariant 4) */
            bool live = false;
            if (own) TRY(obj_exists_key(t, table, key, &live));
            if (live)
                return cs_fail(CS_CONSTRAINT, 0, "an object of '%s' with that primary key exists already (key %lld)", td->name, (long long)key);
        } else {
            int64_t other;
            int frc = cs_index_find(t, table, td->primary, &v, &other);
            if (frc == CS_OK)
                return cs_fail(CS_CONSTRAINT, 0, "an object of '%s' with that primary key exists already (key %lld)", td->name, (long long)other);
            if (frc != CS_NOTFOUND) return frc;
        }
        if (!own) {
            if (next >= KEY_END - 1) return cs_fail(CS_RANGE, 0, "table %u has used every object key", table);
            key = next++;
            (*ncounter)++;
        }
        keys[r] = key;
    }
    return CS_OK;
}

/* Starts a leaf's worth of new rows whose keys are keys[0], keys[stride], ... (n of them, in key
 * order, all past the leaf's): the first through cluster_insert (which splits a full leaf), then
 * as many more as the leaf has room for appended to its key list. Returns in *ls and *row0 where
 * the rows start and in *k how many the leaf took. Columns not named stay short of the new rows:
 * their defaults (cluster.c invariant 2). */
static int many_leaf_keys(cs_txn *t, uint32_t table, const int64_t *keys, size_t stride, size_t n, ref_t **ls,
                          uint32_t *row0, size_t *k)
{
    TRY(cluster_insert(t, table, keys[0]));
    TRY(cluster_write_path(t, table, keys[0], ls, row0));
    *k = n;
    if (*k > (size_t)(CLUSTER_MAX - *row0)) *k = (size_t)(CLUSTER_MAX - *row0);
    int64_t more[CLUSTER_MAX];
    for (size_t j = 1; j < *k; j++) more[j - 1] = keys[j * stride];
    TRY(node_append_ints(t, cluster_keys_slot((node_hdr *)txn_ptr(t, **ls)), more, *k - 1));
    t->short_cols = true;
    return CS_OK;
}

/* many_by_key's appends: rows order[2 * i + 1] for i in [from, n), whose keys order[2 * i] are
 * increasing and past every key of the table, a leaf at a time as the counter-key path appends
 * them: the first key of a leaf through cluster_insert, the others appended to its keys, then
 * each column's values for those rows (gathered into key order a leaf at a time). */
static int many_append_sorted(cs_txn *t, uint32_t table, const many_col *mc, size_t ncols, const uint32_t *cols,
                              size_t n, const int64_t *order, size_t from, int64_t counter0, bool was_empty,
                              bool indexed, cs_value *rowv)
{
    int64_t *ibuf = malloc((ncols ? ncols : 1) * CLUSTER_MAX * sizeof *ibuf);
    cs_value *vbuf = malloc((ncols ? ncols : 1) * CLUSTER_MAX * sizeof *vbuf);
    if (!ibuf || !vbuf) {
        free(ibuf);
        free(vbuf);
        return NOMEM();
    }
    int rc = CS_OK;
    size_t i = from;
    while (i < n && rc == CS_OK) {
        ref_t *ls;
        uint32_t row0;
        size_t k;
        if ((rc = many_leaf_keys(t, table, &order[2 * i], 2, n - i, &ls, &row0, &k)) != CS_OK) break;
        for (size_t c = 0; c < ncols && rc == CS_OK; c++) {
            /* this leaf's values of column c in key order, as a column of k rows */
            many_col g = mc[c];
            if (g.ints) {
                for (size_t j = 0; j < k; j++) ibuf[c * CLUSTER_MAX + j] = g.ints[order[2 * (i + j) + 1]];
                g.ints = &ibuf[c * CLUSTER_MAX];
            } else {
                for (size_t j = 0; j < k; j++) vbuf[c * CLUSTER_MAX + j] = g.vals[order[2 * (i + j) + 1]];
                g.vals = &vbuf[c * CLUSTER_MAX];
            }
            rc = many_append_col(t, table, ls, row0, &g, 0, k);
        }
        for (size_t j = 0; j < k && rc == CS_OK; j++) {
            int64_t kj = order[2 * (i + j)];
            if (kj < counter0) rc = change_create_own(t, table, kj, was_empty && i == from && j == 0);
            else rc = change_create(t, table, kj);
            if (rc == CS_OK && indexed)
                rc = many_index(t, table, mc, ncols, cols, &kj, (size_t)order[2 * (i + j) + 1], 1, rowv);
        }
        t->epoch++;
        i += k;
    }
    free(ibuf);
    free(vbuf);
    return rc;
}

/* Creates rows with the given keys (none live), in key order, each with its values: one cluster
 * insert per row (an append when the keys come after the table's), the named columns put
 * straight into the new row (no default written and then overwritten), the index entries with
 * their values, and the change history's created keys. */
static int many_by_key(cs_txn *t, uint32_t table, const many_col *mc, size_t ncols, const uint32_t *cols, size_t n,
                       const int64_t *keys, int64_t counter0, bool was_empty, bool indexed, cs_value *rowv)
{
    int64_t *order = malloc((n ? n : 1) * 2 * sizeof *order);
    if (!order) return NOMEM();
    for (size_t r = 0; r < n; r++) {
        order[2 * r] = keys[r];
        order[2 * r + 1] = (int64_t)r;
    }
    qsort(order, n, 2 * sizeof *order, key_row_cmp);
    /* rows past the table's last key are appended a leaf at a time (many_append_sorted) */
    ref_t root;
    int64_t last = 0;
    bool any = false;
    int rc = table_root(t, table, &root);
    if (rc == CS_OK) rc = cluster_last_key(t, root, &last, &any);
    size_t tail = 0; /* the first row, in key order, past the last key */
    while (rc == CS_OK && any && tail < n && order[2 * tail] <= last) tail++;
    for (size_t i = 0; i < tail && rc == CS_OK; i++) {
        int64_t key = order[2 * i];
        size_t r = (size_t)order[2 * i + 1];
        ref_t *ls;
        uint32_t row;
        if ((rc = cluster_insert(t, table, key)) != CS_OK) break;
        if ((rc = cluster_write_path(t, table, key, &ls, &row)) != CS_OK) break;
        for (size_t c = 0; c < ncols && rc == CS_OK; c++) {
            if ((rc = cluster_materialise(t, table, ls, mc[c].col)) != CS_OK) break;
            ref_t *slot = cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *ls), mc[c].col);
            cs_value v = many_value(&mc[c], r);
            rc = leaf_put(t, &mc[c].s, slot, row, &v);
        }
        if (rc != CS_OK) break;
        t->short_cols = true; /* columns not named are short of the new row (cluster.c invariant 2) */
        t->epoch++;
        /* a key below the counter's start is a primary key as object key */
        if (key < counter0) rc = change_create_own(t, table, key, was_empty && i == 0);
        else rc = change_create(t, table, key);
        if (rc == CS_OK && indexed) rc = many_index(t, table, mc, ncols, cols, &key, r, 1, rowv);
    }
    if (rc == CS_OK && tail < n)
        rc = many_append_sorted(t, table, mc, ncols, cols, n, order, tail, counter0, was_empty && tail == 0, indexed, rowv);
    free(order);
    return rc;
}

size_t cs_max_blob(void)
{
    return CS_MAX_BLOB;
}

/* Whether the links of column m can go into the new rows directly (the leaf-at-a-time and key
 * order paths, then many_backlinks): each non-null one names an object that exists now, of a
 * table that is not embedded. Otherwise (a link to a row of this batch, to a missing object, to
 * an embedded object) *per_row is set: cs_obj_set, row after row, then gives the sequence of
 * single creations' result or error. */
static int many_links_batchable(cs_txn *t, const many_col *m, size_t n, bool *per_row)
{
    table_def *tt;
    TRY(txn_table(t, m->cd->target, &tt));
    if (tt->flags & CS_TABLE_EMBEDDED) {
        *per_row = true;
        return CS_OK;
    }
    for (size_t r = 0; r < n; r++) {
        const cs_value *v = &m->vals[r];
        if (v->type == CS_TYPE_NULL) continue;
        bool ok;
        TRY(obj_exists_key(t, m->cd->target, v->v.link.key, &ok));
        if (!ok) {
            *per_row = true;
            return CS_OK;
        }
    }
    return CS_OK;
}

/* The backlinks of the links the new rows (keys[r], row r) hold in the named link columns, row
 * after row as single creations add them. */
static int many_backlinks(cs_txn *t, uint32_t table, const many_col *mc, size_t ncols, size_t n, const int64_t *keys)
{
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < ncols; c++) {
            if (mc[c].cd->type != CS_TYPE_LINK) continue;
            cs_value v = many_value(&mc[c], r);
            if (v.type != CS_TYPE_NULL) TRY(backlink_add(t, mc[c].cd->target, v.v.link.key, table, mc[c].col, keys[r]));
        }
    t->epoch++;
    return CS_OK;
}

static int create_many(cs_txn *t, uint32_t table, size_t n, size_t ncols, const uint32_t *cols,
                       const cs_value *values, const int64_t *const *ints, int64_t *first_key, int64_t *keys_out)
{
    TRY(txn_need_write(t));
    table_def *td;
    TRY(txn_table(t, table, &td));
    if (td->flags & CS_TABLE_EMBEDDED)
        return cs_fail(CS_MISUSE, 0, "embedded objects of '%s' are created through their owner", td->name);
    if (ncols && !cols) return cs_fail(CS_MISUSE, 0, "cs_obj_create_many: no column list");
    if (n && ncols && !values && !ints) return cs_fail(CS_MISUSE, 0, "cs_obj_create_many: no values");
    many_col *mc = ncols ? calloc(ncols, sizeof *mc) : NULL;
    cs_value *row = calloc(ncols ? ncols : 1, sizeof *row);
    int64_t *keys = calloc(n ? n : 1, sizeof *keys);
    if ((ncols && !mc) || !row || !keys) {
        free(mc);
        free(row);
        free(keys);
        return NOMEM();
    }
    int rc = CS_OK;
    bool per_row = false; /* Mixed values, and links cs_obj_set would refuse: object by object */
    bool links = false;   /* link columns named: their backlinks go in after the rows */
    bool indexed = false; /* every new row needs its index entries */
    bool pk_unindexed = false; /* the primary key keeps no index (keying.c invariant 5) */
    if (td->primary != CS_NONE) rc = keying_pk_unindexed(t, table, &pk_unindexed);
    for (uint32_t c = 0; c < td->ncols; c++)
        if (td->cols[c].live && (td->cols[c].flags & (CS_COL_INDEXED | CS_COL_PRIMARY)) && td->cols[c].coll == CS_COLL_NONE &&
            !(pk_unindexed && c == td->primary))
            indexed = true;
    const many_col *pmc = NULL;
    for (size_t c = 0; c < ncols && rc == CS_OK; c++) {
        many_col *m = &mc[c];
        m->col = cols[c];
        if ((rc = named_col(t, table, cols, c, &m->cd)) != CS_OK) break;
        if (cols[c] == td->primary) pmc = m;
        m->s = leaf_spec_col(m->cd);
        if (ints) {
            m->ints = ints[c];
            if (m->cd->type != CS_TYPE_INT) rc = cs_fail(CS_TYPE, 0, "'%s' is not an Int column", m->cd->name);
            if (n && !m->ints) rc = cs_fail(CS_MISUSE, 0, "cs_obj_create_many_int: no values for '%s'", m->cd->name);
            continue;
        }
        m->vals = values + c * n;
        leaf_spec cs = m->s;
        if (m->cd->type == CS_TYPE_LINK) cs.nullable = true;
        if (m->cd->type == CS_TYPE_MIXED) per_row = true; /* links inside Mixed values: through cs_obj_set */
        for (size_t r = 0; r < n && rc == CS_OK; r++) rc = value_check(&cs, &m->vals[r]);
        if (rc == CS_OK && m->cd->type == CS_TYPE_LINK) {
            links = true;
            if (!per_row) rc = many_links_batchable(t, m, n, &per_row);
        }
    }
    if (rc == CS_OK && td->primary != CS_NONE && !pmc)
        rc = cs_fail(CS_MISUSE, 0, "'%s' has a primary key: name its column among the values", td->name);
    int64_t first = 0, count = 0, ncounter = (int64_t)n;
    if (rc == CS_OK) rc = table_get_meta(t, table, TBL_NEXTKEY, &first);
    if (rc == CS_OK) rc = table_get_meta(t, table, TBL_COUNT, &count);
    if (rc == CS_OK) {
        if (pmc) rc = many_pk_keys(t, table, td, pmc, n, keys, &ncounter);
        else
            for (size_t r = 0; r < n; r++) keys[r] = first + (int64_t)r;
    }
    /* a counter key ends "every key is its primary key": the index comes back first (keying.c
     * invariant 5) */
    if (rc == CS_OK && pmc && ncounter > 0 && pk_unindexed) {
        rc = keying_index_back(t, table, true);
        indexed = true;
    }
    if (rc == CS_OK && first_key) *first_key = n ? keys[0] : first;
    if (rc == CS_OK && keys_out && n) memcpy(keys_out, keys, n * sizeof *keys);
    /* a batched path that fails part-way may leave rows in place (keys in the tree, columns or
     * index entries in part, no count): its write is marked at the end so that its commit
     * refuses it and rolls it back, as create_row's is. (The checks above change nothing; object
     * by object, each create marks its own write, and a row whose cs_obj_set fails stays a
     * whole object.) */
    bool began = false;
    if (rc != CS_OK || per_row) {
        for (size_t r = 0; r < n && rc == CS_OK; r++) {
            cs_obj o;
            if (pmc) {
                cs_value pv = many_value(pmc, r);
                rc = cs_obj_create_primary(t, table, &pv, &o);
            } else {
                rc = obj_create_row(t, table, &o);
            }
            for (size_t c = 0; c < ncols && rc == CS_OK; c++) {
                if (&mc[c] == pmc) continue;
                cs_value v = many_value(&mc[c], r);
                rc = cs_obj_set(&o, mc[c].col, &v);
            }
        }
        goto done;
    }
    began = n > 0;
    if (pmc) {
        /* keys in any order: one row at a time, in key order */
        rc = many_by_key(t, table, mc, ncols, cols, n, keys, first, count == 0, indexed, row);
    } else {
        /* a leaf at a time: the first key through cluster_insert (which splits a full leaf), the
         * rest of the leaf's keys and then each column's values appended directly */
        size_t r = 0;
        while (r < n && rc == CS_OK) {
            int64_t key = first + (int64_t)r;
            ref_t *ls;
            uint32_t row0;
            size_t k;
            if ((rc = many_leaf_keys(t, table, keys + r, 1, n - r, &ls, &row0, &k)) != CS_OK) break;
            for (size_t c = 0; c < ncols && rc == CS_OK; c++) rc = many_append_col(t, table, ls, row0, &mc[c], r, k);
            if (rc == CS_OK) rc = change_create(t, table, key); /* the first key; the rest below */
            for (size_t i = 1; i < k && rc == CS_OK; i++) rc = change_create(t, table, key + (int64_t)i);
            /* the index entries of an indexed column, named or not, go in with their values */
            if (rc == CS_OK && indexed) rc = many_index(t, table, mc, ncols, cols, keys + r, r, k, row);
            t->epoch++;
            r += k;
        }
    }
    if (rc == CS_OK && links) rc = many_backlinks(t, table, mc, ncols, n, keys);
    if (rc == CS_OK) {
        ref_t *ts;
        rc = table_node_slot(t, table, &ts);
        if (rc == CS_OK) {
            uint64_t *m = node_refs((node_hdr *)txn_ptr(t, *ts));
            if (!tagged(m[TBL_NEXTKEY]) || !tagged(m[TBL_COUNT])) rc = CORRUPT("table %u meta slots are not numbers", table);
            else {
                m[TBL_NEXTKEY] = tag_int(first + ncounter);
                m[TBL_COUNT] = tag_int(untag(m[TBL_COUNT]) + (int64_t)n);
            }
        }
    }
done:
    if (rc != CS_OK && began) txn_spoil(t, rc);
    free(mc);
    free(row);
    free(keys);
    return rc;
}

int cs_obj_create_many(cs_txn *txn, uint32_t table, size_t n, size_t ncols, const uint32_t *cols,
                       const cs_value *values, int64_t *first_key)
{
    return create_many(txn, table, n, ncols, cols, values, NULL, first_key, NULL);
}

int cs_obj_create_many_keys(cs_txn *txn, uint32_t table, size_t n, size_t ncols, const uint32_t *cols,
                            const cs_value *values, int64_t *keys)
{
    return create_many(txn, table, n, ncols, cols, values, NULL, NULL, keys);
}

int cs_obj_create_many_int(cs_txn *txn, uint32_t table, size_t n, size_t ncols, const uint32_t *cols,
                           const int64_t *const *ints, int64_t *first_key)
{
    if (ncols && !ints) return cs_fail(CS_MISUSE, 0, "cs_obj_create_many_int: no values");
    return create_many(txn, table, n, ncols, cols, NULL, ints, first_key, NULL);
}

int cs_table_count(cs_txn *txn, uint32_t table, uint64_t *out)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    int64_t n;
    TRY(table_get_meta(txn, table, TBL_COUNT, &n));
    *out = (uint64_t)n;
    return CS_OK;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* The column sub-node of the object's leaf (0 when not materialised). */
static int col_node(cs_obj *o, uint32_t col, node_hdr **leaf, uint32_t *row, ref_t *r)
{
    TRY(obj_leaf(o, leaf, row));
    *r = cluster_leaf_col_ref(*leaf, col);
    if (*r && tagged(*r)) return CORRUPT("column slot holds a number");
    return CS_OK;
}

/* obj_get_stored, giving the column's definition too. */
static int get_stored(cs_obj *obj, uint32_t col, cs_value *out, col_def **cdp)
{
    col_def *c;
    TRY(obj_col(obj, col, &c));
    if (c->coll != CS_COLL_NONE || c->type == CS_TYPE_BACKLINK)
        return cs_fail(CS_TYPE, 0, "'%s' is a collection; use cs_coll_open", c->name);
    node_hdr *leaf;
    uint32_t row;
    TRY(obj_leaf(obj, &leaf, &row));
    *cdp = c;
    return cluster_leaf_get(obj->txn, leaf, row, c, col, out);
}

/* cs_obj_get without the check that a Mixed link's target still exists: the value as stored
 * (what a Mixed index holds for the object). */
int obj_get_stored(cs_obj *obj, uint32_t col, cs_value *out)
{
    col_def *c;
    return get_stored(obj, col, out, &c);
}

int cs_obj_get(cs_obj *obj, uint32_t col, cs_value *out)
{
    cs_txn *t = obj->txn;
    /* A pass reading one String or Binary column object by object: while the object sits in
     * the cluster leaf of the previous such read, in the same epoch (schema and nodes cannot
     * change within one epoch of a read transaction), the column was checked then (live, of
     * that type, not a collection) and its string leaf is the one found then, so the value
     * comes straight from that leaf (whose parts str_get's own cache holds checked). */
    txn_rcache *cc = t ? txn_read_cache(t) : NULL;
    if (cc && obj->leaf && obj->leaf == cc->sc_leaf && obj->epoch == t->epoch && cc->sc_epoch == t->epoch &&
        col == cc->sc_col && obj->table == cc->sc_table) {
        leaf_spec s = {LK_STR, (cs_type)cc->sc_type, cc->sc_nullable, 0};
        return leaf_get(t, &s, cc->sc_ref, obj->row, out);
    }
    col_def *c;
    TRY(get_stored(obj, col, out, &c));
    if (cc && (c->type == CS_TYPE_STRING || c->type == CS_TYPE_BINARY) && obj->leaf && obj->epoch == t->epoch) {
        ref_t r = cluster_leaf_col_ref((node_hdr *)obj->leaf, col);
        if (r && !tagged(r)) {
            cc->sc_leaf = obj->leaf;
            cc->sc_epoch = t->epoch;
            cc->sc_table = obj->table;
            cc->sc_col = col;
            cc->sc_ref = r;
            cc->sc_type = c->type;
            cc->sc_nullable = (c->flags & CS_COL_NULLABLE) != 0;
        }
        return CS_OK;
    }
    col_def *cd = out->type == CS_TYPE_LINK ? txn_col_live(obj->txn, obj->table, col) : NULL;
    if (cd && cd->type == CS_TYPE_MIXED) {
        /* Mixed links are not tracked by backlinks: a link to a deleted object reads as null */
        bool ok = false;
        if (txn_table_live(obj->txn, out->v.link.table))
            TRY(obj_exists_key(obj->txn, out->v.link.table, out->v.link.key, &ok));
        if (!ok) out->type = CS_TYPE_NULL;
    }
    return CS_OK;
}

int cs_obj_get_int(cs_obj *obj, uint32_t col, int64_t *out)
{
    cs_txn *t = obj->txn;
    /* The hot path of a pass over objects: the object sits in the leaf whose checked column
     * nodes the transaction caches. Only this function fills that cache, after checking that
     * the column is a live Int or Bool column, and the cache is dropped when the epoch moves
     * (schema and nodes cannot change within one epoch of a read transaction). */
    txn_rcache *cc = txn_read_cache(t);
    if (cc && obj->leaf && obj->leaf == cc->cc_leaf && obj->epoch == t->epoch && cc->cc_epoch == t->epoch &&
        col < CC_COLS && (cc->cc_mask >> col & 1)) {
        node_hdr *h = cc->cc_col[col];
        if (obj->row < h->count) {
            *out = node_is_null(h, obj->row) ? 0 : node_get_int(h, obj->row);
            return CS_OK;
        }
    }
    {
        col_def *cd = txn_col_live(t, obj->table, col);
        if (cd && cd->coll == CS_COLL_NONE && (cd->type == CS_TYPE_INT || cd->type == CS_TYPE_BOOL)) {
            node_hdr *leaf;
            uint32_t row;
            ref_t r;
            TRY(col_node(obj, col, &leaf, &row, &r));
            if (!r) { *out = 0; return CS_OK; }
            node_hdr *h;
            /* the column nodes of the last leaf read are checked once, not on every read */
            if (cc && cc->cc_leaf == leaf && cc->cc_epoch == t->epoch && col < CC_COLS && (cc->cc_mask >> col & 1) &&
                cc->cc_ref[col] == r) {
                h = cc->cc_col[col];
            } else {
                /* in a read transaction, the nodes cluster_find checked are not checked again */
                txn_checked *ck = txn_checked_set(t);
                TRY(node_at_seen(t, ck, r, &h));
                node_hdr *keys;
                TRY(node_at_seen(t, ck, cluster_keys_ref(leaf), &keys));
                if (h->count > keys->count || (!t->writing && h->count != keys->count) || (h->flags & (NF_BYTES | NF_REFS)))
                    return CORRUPT("int column node is malformed");
                if (cc && col < CC_COLS) {
                    if (cc->cc_leaf != leaf || cc->cc_epoch != t->epoch) {
                        cc->cc_mask = 0;
                        cc->cc_leaf = leaf;
                        cc->cc_epoch = t->epoch;
                    }
                    cc->cc_mask |= 1u << col;
                    cc->cc_col[col] = h;
                    cc->cc_ref[col] = r;
                }
            }
            /* past a short sub-node's end (a write, cluster.c invariant 2): the default */
            *out = row < h->count && !node_is_null(h, row) ? node_get_int(h, row) : 0;
            return CS_OK;
        }
    }
    cs_value v;
    TRY(cs_obj_get(obj, col, &v));
    if (v.type == CS_TYPE_NULL) { *out = 0; return CS_OK; }
    if (v.type != CS_TYPE_INT) return cs_fail(CS_TYPE, 0, "not an integer property");
    *out = v.v.i;
    return CS_OK;
}

int cs_obj_is_null(cs_obj *obj, uint32_t col, bool *out)
{
    cs_value v;
    TRY(cs_obj_get(obj, col, &v));
    *out = v.type == CS_TYPE_NULL;
    return CS_OK;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* A writable slot for the object's column sub-node (materialised, possibly short of the row:
 * cluster.c invariant 2), and the row. */
static int col_slot_short(cs_obj *o, uint32_t col, ref_t **slot, uint32_t *row)
{
    cs_txn *t = o->txn;
    ref_t *ls;
    TRY(cluster_write_path(t, o->table, o->key, &ls, row));
    TRY(cluster_materialise(t, o->table, ls, col));
    node_hdr *leaf = (node_hdr *)txn_ptr(t, *ls);
    o->leaf = leaf;
    o->row = *row;
    o->epoch = t->epoch;
    *slot = cluster_leaf_col_slot(leaf, col);
    return CS_OK;
}

/* A writable slot for the object's column sub-node, holding the row's element. */
int obj_col_slot(cs_obj *o, uint32_t col, ref_t **slot, uint32_t *row)
{
    TRY(col_slot_short(o, col, slot, row));
    col_def *cd;
    TRY(txn_col(o->txn, o->table, col, NULL, &cd));
    leaf_spec s = leaf_spec_col(cd);
    return leaf_pad(o->txn, &s, *slot, (uint64_t)*row + 1);
}

static bool leaf_is_slab(cs_txn *t, const void *leaf)
{
    const uint8_t *p = leaf;
    return p < t->map || p >= t->map + t->limit;
}

/* Fast path: the cached leaf is already writable and the column materialised. The sub-node may
 * be short of the row: the caller writes with leaf_put. */
static int col_slot_fast(cs_obj *o, uint32_t col, ref_t **slot, uint32_t *row)
{
    cs_txn *t = o->txn;
    if (o->leaf && o->epoch == t->epoch && leaf_is_slab(t, o->leaf)) {
        node_hdr *leaf = (node_hdr *)o->leaf;
        if (cluster_leaf_col_ref(leaf, col)) {
            *slot = cluster_leaf_col_slot(leaf, col);
            *row = o->row;
            return CS_OK;
        }
    }
    return col_slot_short(o, col, slot, row);
}

int obj_backlink_col(cs_txn *t, uint32_t target_table, uint32_t origin_table, uint32_t origin_col, uint32_t *out)
{
    table_def *tt;
    TRY(txn_table(t, target_table, &tt));
    for (uint32_t i = 0; i < tt->ncols; i++) {
        col_def *d = &tt->cols[i];
        if (d->live && d->type == CS_TYPE_BACKLINK && d->target == origin_table && d->origin_col == origin_col) {
            *out = i;
            return CS_OK;
        }
    }
    return CORRUPT("no backlink column for %u.%u in table %u", origin_table, origin_col, target_table);
}

int backlink_add(cs_txn *t, uint32_t target_table, int64_t target, uint32_t origin_table, uint32_t origin_col, int64_t origin)
{
    uint32_t bc;
    TRY(obj_backlink_col(t, target_table, origin_table, origin_col, &bc));
    cs_obj o = {t, target_table, 0, target, 0, NULL};
    ref_t *slot;
    uint32_t row;
    TRY(obj_col_slot(&o, bc, &slot, &row));
    TRY(node_cow(t, slot));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
    uint64_t cur = e[row];
    if (cur == 0) {
        e[row] = tag_int(origin);
        return CS_OK;
    }
    if (tagged(cur)) {
        ref_t list;
        TRY(node_new(t, 0, 0, 0, &list));
        TRY(node_insert_int(t, &list, 0, untag(cur)));
        TRY(node_insert_int(t, &list, 1, origin));
        node_refs((node_hdr *)txn_ptr(t, *slot))[row] = list;
        return CS_OK;
    }
    ref_t list = cur;
    node_hdr *lh;
    TRY(node_at(t, list, &lh));
    TRY(node_insert_int(t, &list, lh->count, origin));
    node_refs((node_hdr *)txn_ptr(t, *slot))[row] = list;
    return CS_OK;
}

int backlink_remove(cs_txn *t, uint32_t target_table, int64_t target, uint32_t origin_table, uint32_t origin_col, int64_t origin)
{
    uint32_t bc;
    TRY(obj_backlink_col(t, target_table, origin_table, origin_col, &bc));
    cs_obj o = {t, target_table, 0, target, 0, NULL};
    ref_t *slot;
    uint32_t row;
    int rc = obj_col_slot(&o, bc, &slot, &row);
    if (rc == CS_NOTFOUND) return CS_OK; /* the target is gone already */
    TRY(rc);
    TRY(node_cow(t, slot));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
    uint64_t cur = e[row];
    if (cur == 0) return CORRUPT("backlink of %lld missing", (long long)origin);
    if (tagged(cur)) {
        if (untag(cur) != origin) return CORRUPT("backlink of %lld missing", (long long)origin);
        e[row] = 0;
        return CS_OK;
    }
    ref_t list = cur;
    node_hdr *lh;
    TRY(node_at(t, list, &lh));
    for (uint32_t i = 0; i < lh->count; i++) {
        if (node_get_int(lh, i) != origin) continue;
        /* The last entry takes the removed one's place (docs/FORMAT.md, backlink column), as
         * RealmSwift's core orders its backlinks. */
        uint32_t last = lh->count - 1;
        if (i != last) TRY(node_set_int(t, &list, i, node_get_int(lh, last)));
        TRY(node_truncate(t, &list, last));
        lh = (node_hdr *)txn_ptr(t, list);
        uint64_t nv = list;
        if (lh->count == 1) {
            nv = tag_int(node_get_int(lh, 0));
            node_free(t, list);
        } else if (lh->count == 0) {
            nv = 0;
            node_free(t, list);
        }
        node_refs((node_hdr *)txn_ptr(t, *slot))[row] = nv;
        return CS_OK;
    }
    return CORRUPT("backlink of %lld missing", (long long)origin);
}

int link_dropped(cs_txn *t, uint32_t target_table, int64_t target)
{
    table_def *tt;
    TRY(txn_table(t, target_table, &tt));
    if (!(tt->flags & CS_TABLE_EMBEDDED)) return CS_OK;
    int rc = obj_delete_key(t, target_table, target);
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

/* Writes a raw value into a column (no link bookkeeping). */
int obj_col_put(cs_obj *o, uint32_t col, const col_def *c, const cs_value *v)
{
    bool indexed = (c->flags & (CS_COL_INDEXED | CS_COL_PRIMARY)) && c->coll == CS_COLL_NONE &&
                   index_type_ok((cs_type)c->type);
    cs_value old;
    void *oldbuf = NULL;
    if (indexed) {
        /* the old value as stored, copied: the write below may move the bytes it points at */
        TRY(obj_get_stored(o, col, &old));
        if (old.type == CS_TYPE_STRING || old.type == CS_TYPE_BINARY) {
            oldbuf = malloc(old.v.bytes.len + 1);
            if (!oldbuf) return NOMEM();
            memcpy(oldbuf, old.v.bytes.ptr, old.v.bytes.len);
            old.v.bytes.ptr = oldbuf;
        }
    }
    ref_t *slot;
    uint32_t row;
    int rc = col_slot_fast(o, col, &slot, &row);
    leaf_spec s = leaf_spec_col(c);
    if (rc == CS_OK) rc = leaf_put(o->txn, &s, slot, row, v);
    if (rc == CS_OK && indexed) rc = index_update(o->txn, o->table, col, o->key, &old, v);
    free(oldbuf);
    TRY(rc);
    return change_set(o->txn, o->table, o->key, col);
}

static int set_link(cs_obj *o, uint32_t col, col_def *c, const cs_value *v, bool allow_embedded)
{
    cs_txn *t = o->txn;
    table_def *tt;
    TRY(txn_table(t, c->target, &tt));
    if (v->type != CS_TYPE_NULL) {
        if (v->v.link.table != c->target) return cs_fail(CS_TYPE, 0, "link to the wrong table");
        if ((tt->flags & CS_TABLE_EMBEDDED) && !allow_embedded)
            return cs_fail(CS_MISUSE, 0, "embedded objects of '%s' are created with cs_obj_create_embedded", tt->name);
        bool ok;
        TRY(obj_exists_key(t, c->target, v->v.link.key, &ok));
        if (!ok) return cs_fail(CS_NOTFOUND, 0, "no object with key %lld in '%s'", (long long)v->v.link.key, tt->name);
    }
    cs_value old;
    TRY(cs_obj_get(o, col, &old));
    if (old.type == v->type && (old.type == CS_TYPE_NULL || old.v.link.key == v->v.link.key)) return CS_OK;
    TRY(obj_col_put(o, col, c, v));
    uint32_t target = c->target;
    if (old.type != CS_TYPE_NULL) TRY(backlink_remove(t, target, old.v.link.key, o->table, col, o->key));
    if (v->type != CS_TYPE_NULL) TRY(backlink_add(t, target, v->v.link.key, o->table, col, o->key));
    if (old.type != CS_TYPE_NULL) TRY(link_dropped(t, target, old.v.link.key));
    return CS_OK;
}

int cs_obj_set(cs_obj *obj, uint32_t col, const cs_value *value)
{
    cs_txn *t = obj->txn;
    TRY(txn_need_write(t));
    col_def *c;
    TRY(obj_col(obj, col, &c));
    if (c->coll != CS_COLL_NONE || c->type == CS_TYPE_BACKLINK)
        return cs_fail(CS_TYPE, 0, "'%s' is a collection; use cs_coll_open", c->name);
    leaf_spec s = leaf_spec_col(c);
    if (c->type == CS_TYPE_LINK) s.nullable = true;
    TRY(value_check(&s, value));
    if (c->flags & CS_COL_PRIMARY) {
        cs_value cur;
        TRY(cs_obj_get(obj, col, &cur));
        if (cs_value_compare(&cur, value) != 0)
            return cs_fail(CS_MISUSE, 0, "the primary key of an existing object cannot be changed");
        return CS_OK;
    }
    if (c->type == CS_TYPE_LINK) return set_link(obj, col, c, value, false);
    if (c->type == CS_TYPE_MIXED && value->type == CS_TYPE_LINK) {
        bool ok = false;
        table_def *lt = txn_table_live(t, value->v.link.table);
        if (lt) {
            if (lt->flags & CS_TABLE_EMBEDDED)
                return cs_fail(CS_MISUSE, 0, "a Mixed value cannot link to an embedded object");
            TRY(obj_exists_key(t, value->v.link.table, value->v.link.key, &ok));
        }
        if (!ok) return cs_fail(CS_NOTFOUND, 0, "the linked object does not exist");
    }
    return obj_col_put(obj, col, c, value);
}

int cs_obj_set_int(cs_obj *obj, uint32_t col, int64_t value)
{
    cs_txn *t = obj->txn;
    if (t->writing) {
        col_def *cd = txn_col_live(t, obj->table, col);
        if (cd && cd->coll == CS_COLL_NONE && cd->type == CS_TYPE_INT && !(cd->flags & (CS_COL_INDEXED | CS_COL_PRIMARY))) {
            ref_t *slot;
            uint32_t row;
            TRY(col_slot_fast(obj, col, &slot, &row));
            node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
            if (row < h->count) {
                TRY(node_set_int(t, slot, row, value));
            } else {
                /* a new row: one append (cluster.c invariant 2); defaults first if rows before
                 * it were left unset */
                if (row > h->count) {
                    leaf_spec s = leaf_spec_col(cd);
                    TRY(leaf_pad(t, &s, slot, row));
                }
                TRY(node_insert_int(t, slot, row, value));
            }
            h = (node_hdr *)txn_ptr(t, *slot);
            if (h->flags & NF_NULLS) node_set_null(h, row, false);
            return change_set(t, obj->table, obj->key, col);
        }
    }
    cs_value v = cs_int(value);
    return cs_obj_set(obj, col, &v);
}

int cs_obj_create_embedded(cs_obj *obj, uint32_t col, cs_obj *out)
{
    cs_txn *t = obj->txn;
    TRY(txn_need_write(t));
    col_def *c;
    TRY(obj_col(obj, col, &c));
    if (c->type != CS_TYPE_LINK || c->coll != CS_COLL_NONE)
        return cs_fail(CS_TYPE, 0, "'%s' is not a single link", c->name);
    table_def *tt;
    TRY(txn_table(t, c->target, &tt));
    if (!(tt->flags & CS_TABLE_EMBEDDED)) return cs_fail(CS_MISUSE, 0, "'%s' is not an embedded type", tt->name);
    uint32_t target = c->target;
    TRY(obj_create_row(t, target, out));
    /* the new object exists: a failure linking it (the old embedded object dropped, the
     * backlinks) leaves the write half changed, and its commit refuses it (create_row) */
    cs_value v = cs_link(target, out->key);
    int rc = obj_col(obj, col, &c);
    if (rc == CS_OK) rc = set_link(obj, col, c, &v, true);
    if (rc != CS_OK) {
        txn_spoil(t, rc);
        return rc;
    }
    out->epoch = 0;
    return CS_OK;
}

/* ---- backlinks -------------------------------------------------------------------------- */

int obj_backlinks(cs_obj *o, uint32_t bc, node_hdr **list, uint64_t *single, size_t *n)
{
    cs_txn *t = o->txn;
    node_hdr *leaf;
    uint32_t row;
    ref_t r;
    TRY(col_node(o, bc, &leaf, &row, &r));
    *list = NULL;
    *n = 0;
    if (!r) return CS_OK;
    leaf_spec s = leaf_spec_of(CS_TYPE_BACKLINK, false, 0);
    uint64_t v;
    TRY(cluster_leaf_get_ref(t, leaf, row, &s, bc, &v));
    if (!v) return CS_OK;
    if (tagged(v)) {
        *single = v;
        *n = 1;
        return CS_OK;
    }
    TRY(node_at(t, v, list));
    if ((*list)->flags & (NF_REFS | NF_BYTES | NF_NULLS)) return CORRUPT("backlink list is malformed");
    *n = (*list)->count;
    return CS_OK;
}

int64_t obj_backlink_at(node_hdr *list, uint64_t single, size_t i) { return list ? node_get_int(list, i) : untag(single); }

static int backlinks_of(cs_obj *o, uint32_t origin_table, uint32_t origin_col, node_hdr **list, uint64_t *single, size_t *n)
{
    cs_txn *t = o->txn;
    col_def *oc;
    TRY(txn_col(t, origin_table, origin_col, NULL, &oc));
    if (oc->type != CS_TYPE_LINK || oc->target != o->table)
        return cs_fail(CS_TYPE, 0, "'%s' does not link to this object's type", oc->name);
    uint32_t bc;
    TRY(obj_backlink_col(t, o->table, origin_table, origin_col, &bc));
    return obj_backlinks(o, bc, list, single, n);
}

int cs_obj_backlink_count(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, size_t *out)
{
    node_hdr *list;
    uint64_t single;
    return backlinks_of(obj, origin_table, origin_col, &list, &single, out);
}

int cs_obj_backlink_get(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, size_t i, int64_t *key)
{
    node_hdr *list;
    uint64_t single = 0;
    size_t n;
    TRY(backlinks_of(obj, origin_table, origin_col, &list, &single, &n));
    if (i >= n) return cs_fail(CS_RANGE, 0, "backlink index %zu out of range (%zu)", i, n);
    *key = obj_backlink_at(list, single, i);
    return CS_OK;
}

/* ---- damage for the tests of verification (cstore.h, Test hooks) ------------------------ */

/* The write is damaged on purpose: in CSTORE_INTERNAL_CHECKS builds the version it commits is
 * not held against the core (check_commit skips a write whose base failed; this one counts as
 * such). */
static void test_damaged(cs_txn *t)
{
#ifdef CSTORE_INTERNAL_CHECKS
    t->base_verified = false;
#else
    (void)t;
#endif
}

int cs_test_backlink_put(cs_txn *txn, uint32_t target_table, int64_t target, uint32_t origin_table,
                         uint32_t origin_col, int64_t origin, bool add)
{
    TRY(txn_need_write(txn));
    col_def *c;
    TRY(txn_col(txn, origin_table, origin_col, NULL, &c));
    if (c->type != CS_TYPE_LINK || c->target != target_table)
        return cs_fail(CS_TYPE, 0, "'%s' does not link to table %u", c->name, target_table);
    test_damaged(txn);
    if (add) return backlink_add(txn, target_table, target, origin_table, origin_col, origin);
    return backlink_remove(txn, target_table, target, origin_table, origin_col, origin);
}

int cs_test_link_put(cs_obj *obj, uint32_t col, const cs_value *value)
{
    TRY(txn_need_write(obj->txn));
    col_def *c;
    TRY(obj_col(obj, col, &c));
    if (c->type != CS_TYPE_LINK || c->coll != CS_COLL_NONE)
        return cs_fail(CS_TYPE, 0, "'%s' is not a single link", c->name);
    if (value->type != CS_TYPE_NULL && (value->type != CS_TYPE_LINK || value->v.link.table != c->target))
        return cs_fail(CS_TYPE, 0, "not a link to the target of '%s'", c->name);
    test_damaged(obj->txn);
    return obj_col_put(obj, col, c, value);
}

/* ---- deletion --------------------------------------------------------------------------- */

/* Copies the origin keys of one backlink column of (table, key). */
static int backlink_keys(cs_txn *t, uint32_t table, int64_t key, uint32_t bc, int64_t **out, size_t *n)
{
    cs_obj o = {t, table, 0, key, 0, NULL};
    col_def *c;
    TRY(txn_col(t, table, bc, NULL, &c));
    node_hdr *list = NULL;
    uint64_t single = 0;
    *out = NULL;
    TRY(backlinks_of(&o, c->target, c->origin_col, &list, &single, n));
    if (!*n) return CS_OK;
    *out = malloc(*n * sizeof **out);
    if (!*out) return NOMEM();
    for (size_t i = 0; i < *n; i++) (*out)[i] = obj_backlink_at(list, single, i);
    return CS_OK;
}

int obj_delete_key(cs_txn *t, uint32_t table, int64_t key)
{
    table_def *td;
    TRY(txn_table(t, table, &td));
    bool exists;
    TRY(obj_exists_key(t, table, key, &exists));
    if (!exists) return cs_fail(CS_NOTFOUND, 0, "no object with key %lld", (long long)key);
    uint32_t ncols = td->ncols;
    /* 1. links pointing here are removed or nulled */
    for (uint32_t c = 0; c < ncols; c++) {
        col_def *d = txn_col_live(t, table, c);
        if (!d || d->type != CS_TYPE_BACKLINK) continue;
        uint32_t ot = d->target, oc = d->origin_col;
        int64_t *keys;
        size_t n;
        TRY(backlink_keys(t, table, key, c, &keys, &n));
        int rc = CS_OK;
        for (size_t i = 0; i < n && rc == CS_OK; i++) {
            if (i && keys[i] == keys[i - 1]) continue;
            rc = coll_unlink_all(t, ot, keys[i], oc, key);
        }
        free(keys);
        TRY(rc);
    }
    /* 2. links from here: drop their backlinks; embedded targets die with us */
    for (uint32_t c = 0; c < ncols; c++) {
        col_def *d = txn_col_live(t, table, c);
        if (!d || d->type != CS_TYPE_LINK) continue;
        TRY(coll_drop_links(t, table, key, c));
    }
    /* 3. the row, its primary key first recorded for the change history (FORMAT.md §8.3) */
    if (td->primary != CS_NONE) {
        cs_obj o;
        cs_value pk;
        TRY(cs_obj_open(t, table, key, &o));
        TRY(obj_get_stored(&o, td->primary, &pk));
        TRY(change_deleted_pk(t, table, key, &pk));
    }
    int64_t count;
    TRY(table_get_meta(t, table, TBL_COUNT, &count));
    TRY(index_row(t, table, key, false));
    TRY(cluster_erase(t, table, key));
    TRY(change_delete(t, table, key));
    TRY(table_set_meta(t, table, TBL_COUNT, count - 1));
    return keying_retire(t, table, key); /* a pk key is never given out again (keying.c) */
}

int cs_obj_delete(cs_obj *obj)
{
    TRY(txn_need_write(obj->txn));
    TRY(obj_delete_key(obj->txn, obj->table, obj->key));
    obj->leaf = NULL;
    obj->epoch = 0;
    return CS_OK;
}

int cs_table_clear(cs_txn *txn, uint32_t table)
{
    TRY(txn_need_write(txn));
    table_def *td;
    TRY(txn_table(txn, table, &td));
    for (;;) {
        ref_t root;
        TRY(table_root(txn, table, &root));
        node_hdr *leaf;
        uint32_t row;
        int64_t key;
        int rc = cluster_seek(txn, root, INT64_MIN, &leaf, &row, &key);
        if (rc == CS_NOTFOUND) break;
        TRY(rc);
        rc = obj_delete_key(txn, table, key);
        if (rc != CS_OK && rc != CS_NOTFOUND) return rc;
    }
    return CS_OK;
}

/* ---- iteration -------------------------------------------------------------------------- */

int cs_iter_init(cs_iter *it, cs_txn *txn, uint32_t table)
{
    table_def *td;
    TRY(txn_table(txn, table, &td));
    cluster_iter_init(it, txn, table);
    return CS_OK;
}

int cs_iter_next(cs_iter *it, cs_obj *obj)
{
    int64_t key;
    node_hdr *leaf;
    uint32_t row;
    TRY(cluster_iter_next(it, &key, &leaf, &row));
    obj->txn = it->txn;
    obj->table = it->table;
    obj->key = key;
    obj->row = row;
    obj->leaf = leaf;
    obj->epoch = it->txn->epoch;
    return CS_OK;
}
