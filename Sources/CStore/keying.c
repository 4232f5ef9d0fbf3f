/*
 * keying.c -- Int primary keys as object keys (docs/FORMAT.md §6.1, docs/ARCHITECTURE.md, Primary
 * keys as object keys): in a pk-keyed table an object whose Int primary key p lies in
 * [0, KEY_PK_END) gets the object key p unless that key was used before, so a lookup by primary
 * key is one descent of the cluster tree instead of an index descent and a cluster descent.
 *
 * Invariants (of a table whose TBL_KEYING slot has TBLK_PK):
 *  1. An object whose key k is below KEY_PK_END has the Int primary key k (checked again whenever
 *     the primary key changes, keying_primary_changed; while the table has no primary key the
 *     invariant waits for the next one).
 *  2. Object keys are never reused: a key below KEY_PK_END whose object is deleted is in the
 *     retired tree (TBL_RETIRED, sorted, no duplicates) and never given out again; every other
 *     key comes from the counter (TBL_NEXTKEY), which starts at KEY_PK_END.
 *  3. So an object found at key p is the object with primary key p; an object with primary key p
 *     not found at key p may still exist under a counter key (p retired, or its object made while
 *     the table had no primary key): the index answers then.
 *  4. Only an object with a counter key breaks "p is live at key p or nowhere", and every counter
 *     key moves TBL_NEXTKEY past KEY_PK_END: while it is still KEY_PK_END, an object with primary
 *     key p exists exactly when key p is live (keying_keys_are_pks).
 *  5. TBLK_NOIDX (format 6) is set only with TBLK_PK, an Int primary key and TBL_NEXTKEY at
 *     KEY_PK_END: by invariant 4 the table's keys are exactly its primary keys, so the primary
 *     key's index is not kept (index.c answers its lookups and ranges from the cluster keys). It
 *     is cleared, and the index built, before a counter key is given out (keying_index_back), and
 *     whenever the primary key changes; it is set again when a primary key is set on a table
 *     whose keys are all its values.
 */
#include "node.h"
#include "leaf.h"
#include "bptree.h"
#include "cluster.h"
#include "schema.h"
#include "snapshot.h"
#include "obj.h"
#include "keying.h"
#include "index.h"

static leaf_spec retired_spec(void) { return leaf_spec_of(CS_TYPE_INT, false, CS_NONE); }

/* Position of the first retired key >= key, and whether it is key. */
static int retired_seek(cs_txn *t, ref_t root, int64_t key, uint64_t *pos, bool *found)
{
    *pos = 0;
    *found = false;
    if (!root) return CS_OK;
    leaf_spec s = retired_spec();
    uint64_t lo = 0, hi;
    TRY(bpt_size(t, &s, root, &hi));
    if (hi) {
        /* deletes in key order (cs_table_clear) retire ascending keys: past the last one is
         * one descent, not a search */
        cs_value last;
        TRY(bpt_get(t, &s, root, hi - 1, &last));
        if (last.type != CS_TYPE_INT) return CORRUPT("a retired key is not a number");
        if (last.v.i < key) {
            *pos = hi;
            return CS_OK;
        }
    }
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        cs_value v;
        TRY(bpt_get(t, &s, root, mid, &v));
        if (v.type != CS_TYPE_INT) return CORRUPT("a retired key is not a number");
        if (v.v.i < key) lo = mid + 1;
        else {
            hi = mid;
            if (v.v.i == key) *found = true;
        }
    }
    *pos = lo;
    return CS_OK;
}

int keying_choose(cs_txn *t, uint32_t table, const cs_value *pk, int64_t *key, bool *own)
{
    *own = false;
    int64_t flags;
    ref_t retired;
    TRY(table_keying(t, table, &flags, &retired));
    if ((flags & TBLK_PK) && pk->type == CS_TYPE_INT && pk->v.i >= 0 && pk->v.i < KEY_PK_END) {
        uint64_t pos;
        bool used;
        TRY(retired_seek(t, retired, pk->v.i, &pos, &used));
        if (!used) {
            *key = pk->v.i;
            *own = true;
            return CS_OK;
        }
    }
    return table_get_meta(t, table, TBL_NEXTKEY, key);
}

int keying_keys_are_pks(cs_txn *t, uint32_t table, bool *all)
{
    *all = false;
    int64_t flags, next;
    ref_t retired;
    TRY(table_keying(t, table, &flags, &retired));
    if (!(flags & TBLK_PK)) return CS_OK;
    TRY(table_get_meta(t, table, TBL_NEXTKEY, &next));
    *all = next == KEY_PK_END;
    return CS_OK;
}

int keying_retire(cs_txn *t, uint32_t table, int64_t key)
{
    if (key < 0 || key >= KEY_PK_END) return CS_OK;
    int64_t flags;
    ref_t root;
    TRY(table_keying(t, table, &flags, &root));
    if (!(flags & TBLK_PK)) return CS_OK;
    uint64_t pos;
    bool found;
    TRY(retired_seek(t, root, key, &pos, &found));
    if (found) return CORRUPT("key %lld is retired but was live", (long long)key);
    leaf_spec s = retired_spec();
    cs_value v = cs_int(key);
    ref_t *slot;
    TRY(table_keying_slots(t, table, &slot));
    root = *slot;
    TRY(bpt_insert(t, &s, &root, pos, &v));
    TRY(table_keying_slots(t, table, &slot));
    *slot = root;
    return CS_OK;
}

int keying_find(cs_txn *t, uint32_t table, int64_t pk, node_hdr **leaf, uint32_t *row)
{
    if (pk < 0 || pk >= KEY_PK_END) return CS_NOTFOUND;
    ref_t root;
    bool keyed;
    TRY(table_root_keyed(t, table, &root, &keyed));
    if (!keyed) return CS_NOTFOUND;
    TRY(cluster_find(t, root, pk, leaf, row));
    /* the caller usually opens the object next (cs_obj_open, or an upsert's write): its
     * descent is this one, in a read and in a write transaction */
    txn_rcache *rc = txn_lookup_cache(t);
    rc->lk_table = table;
    rc->lk_key = pk;
    rc->lk_leaf = *leaf;
    rc->lk_row = *row;
    rc->lk_epoch = t->epoch;
    return CS_OK;
}

/* Whether every object with a key below KEY_PK_END has that key as its value of column col. */
static int keys_are_pks(cs_txn *t, uint32_t table, uint32_t col, bool *ok)
{
    *ok = true;
    col_def *c;
    TRY(txn_col(t, table, col, NULL, &c));
    bool is_int = c->type == CS_TYPE_INT && c->coll == CS_COLL_NONE;
    cs_iter it;
    cs_obj o;
    TRY(cs_iter_init(&it, t, table));
    int rc;
    while ((rc = cs_iter_next(&it, &o)) == CS_OK) {
        if (o.key >= KEY_PK_END) break;
        if (!is_int) { *ok = false; break; }
        cs_value v;
        TRY(cs_obj_get(&o, col, &v));
        if (v.type != CS_TYPE_INT || v.v.i != o.key) { *ok = false; break; }
    }
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

int keying_primary_plan(cs_txn *t, uint32_t table, uint32_t col, int *plan)
{
    *plan = KP_KEEP;
    int64_t flags, next, count;
    ref_t retired;
    TRY(table_keying(t, table, &flags, &retired));
    if (col == CS_NONE) return CS_OK; /* invariant 1 waits for the next primary key */
    col_def *c;
    TRY(txn_col(t, table, col, NULL, &c));
    bool is_int = c->type == CS_TYPE_INT && c->coll == CS_COLL_NONE;
    TRY(table_get_meta(t, table, TBL_NEXTKEY, &next));
    if (!(flags & TBLK_PK)) {
        if (!is_int) return CS_OK;
        /* only a table that never held an object: any key below the counter may have been used */
        TRY(table_get_meta(t, table, TBL_COUNT, &count));
        if (next == 0 && count == 0) *plan = KP_NEW;
        return CS_OK;
    }
    bool ok;
    TRY(keys_are_pks(t, table, col, &ok));
    /* the keys are exactly the Int primary keys again: the index goes (invariant 5); the flag
     * of the primary key before, if any, is cleared before this is applied */
    if (ok) *plan = is_int && next == KEY_PK_END ? KP_UNINDEXED : KP_KEEP;
    else *plan = KP_DROP;
    return CS_OK;
}

int keying_primary_apply(cs_txn *t, uint32_t table, uint32_t col, int plan)
{
    if (plan == KP_KEEP) return CS_OK;
    int64_t flags;
    ref_t retired;
    TRY(table_keying(t, table, &flags, &retired));
    ref_t *slot;
    if (plan == KP_NEW || plan == KP_UNINDEXED) {
        /* every key is (or will be) its primary key: the index is not kept (invariant 5) */
        if (plan == KP_UNINDEXED && (flags & TBLK_NOIDX)) return CS_OK;
        TRY(index_drop(t, table, col));
        /* the counter first: the flag is never set with it below KEY_PK_END (invariant 5) */
        if (plan == KP_NEW) TRY(table_set_meta(t, table, TBL_NEXTKEY, KEY_PK_END));
        TRY(table_keying_slots(t, table, &slot));
        slot[TBL_KEYING - TBL_RETIRED] = tag_int(plan == KP_NEW ? TBLK_PK | TBLK_NOIDX : flags | TBLK_NOIDX);
        t->epoch++;
        return CS_OK;
    }
    /* KP_DROP: the keying is dropped, the table allocates from the counter alone from now on */
    TRY(table_keying_slots(t, table, &slot));
    ref_t r = *slot;
    *slot = 0;
    slot[TBL_KEYING - TBL_RETIRED] = tag_int(0);
    if (r) node_free_tree(t, r);
    t->epoch++;
    return CS_OK;
}

int keying_primary_changed(cs_txn *t, uint32_t table, uint32_t col)
{
    int plan;
    TRY(keying_primary_plan(t, table, col, &plan));
    return keying_primary_apply(t, table, col, plan);
}

int keying_pk_unindexed(cs_txn *t, uint32_t table, bool *unindexed)
{
    int64_t flags;
    ref_t retired;
    TRY(table_keying(t, table, &flags, &retired));
    *unindexed = (flags & TBLK_NOIDX) != 0;
    return CS_OK;
}

int keying_index_back(cs_txn *t, uint32_t table, bool build)
{
    int64_t flags;
    ref_t retired;
    TRY(table_keying(t, table, &flags, &retired));
    if (!(flags & TBLK_NOIDX)) return CS_OK;
    /* the table node made writable first, so that clearing the flag below cannot fail */
    ref_t *slot;
    TRY(table_keying_slots(t, table, &slot));
    table_def *td;
    TRY(txn_table(t, table, &td));
    if (build && td->primary != CS_NONE) {
        /* built while the flag still says there is none (index maintenance skips the column
         * until it is cleared): a build that fails part way (out of memory, a damaged leaf)
         * drops what it built, and the table is as it was, flag set and no index */
        uint32_t pk = td->primary;
        int rc = index_build(t, table, pk, true);
        if (rc != CS_OK) {
            index_drop(t, table, pk);
            return rc;
        }
        TRY(table_keying_slots(t, table, &slot));
    }
    slot[TBL_KEYING - TBL_RETIRED] = tag_int(flags & ~(int64_t)TBLK_NOIDX);
    t->epoch++;
    return CS_OK;
}

int keying_verify(cs_txn *t, uint32_t table)
{
    int64_t flags;
    ref_t retired;
    TRY(table_keying(t, table, &flags, &retired));
    table_def *td;
    TRY(txn_table(t, table, &td));
    if (!(flags & TBLK_PK)) {
        if (retired) return CORRUPT("table '%s' is not pk-keyed but has retired keys", td->name);
        if (flags & TBLK_NOIDX) return CORRUPT("table '%s' is not pk-keyed but keeps no primary-key index", td->name);
        return CS_OK;
    }
    int64_t next;
    TRY(table_get_meta(t, table, TBL_NEXTKEY, &next));
    if (next < KEY_PK_END || next > KEY_END)
        return CORRUPT("pk-keyed table '%s' has the next key %lld outside [2^61, 2^62]", td->name, (long long)next);
    if (flags & TBLK_NOIDX) {
        /* invariant 5 */
        if (td->primary == CS_NONE || td->cols[td->primary].type != CS_TYPE_INT)
            return CORRUPT("table '%s' keeps no primary-key index but has no Int primary key", td->name);
        if (next != KEY_PK_END)
            return CORRUPT("table '%s' keeps no primary-key index but gave out counter keys", td->name);
        ref_t iroot;
        TRY(index_root(t, table, td->primary, &iroot));
        if (iroot) return CORRUPT("table '%s' keeps no primary-key index but has an index tree for it", td->name);
    }
    if (retired) {
        leaf_spec s = retired_spec();
        uint64_t n;
        TRY(bpt_size(t, &s, retired, &n));
        int64_t prev = -1;
        for (uint64_t i = 0; i < n; i++) {
            cs_value v;
            TRY(bpt_get(t, &s, retired, i, &v));
            if (v.type != CS_TYPE_INT) return CORRUPT("table '%s' has a retired key that is not a number", td->name);
            if (v.v.i <= prev || v.v.i >= KEY_PK_END)
                return CORRUPT("table '%s' has retired keys out of order or range (%lld after %lld)", td->name, (long long)v.v.i, (long long)prev);
            bool live;
            TRY(obj_exists_key(t, table, v.v.i, &live));
            if (live) return CORRUPT("table '%s' has the live key %lld among its retired keys", td->name, (long long)v.v.i);
            prev = v.v.i;
        }
    }
    if (td->primary == CS_NONE) return CS_OK;
    bool ok;
    TRY(keys_are_pks(t, table, td->primary, &ok));
    if (!ok) return CORRUPT("pk-keyed table '%s' holds an object whose key is not its primary key", td->name);
    return CS_OK;
}
