/*
 * cluster.h -- tables as cluster trees (cluster.c, docs/FORMAT.md §6.1 and §6.2): the table node
 * and its slots, finding, inserting and erasing rows by object key, and the writable path to a
 * row's leaf.
 */
#ifndef CSTORE_CLUSTER_H
#define CSTORE_CLUSTER_H

#include "leaf.h"

/* ---- the layout of cluster nodes (FORMAT.md §6.2, format.h CL_*) --------------------------- */
/* Slot 0 of a leaf holds its keys, of an inner node its children's first keys: both are the
 * node's key list. The rest are a leaf's column sub-nodes or an inner node's children. */

/** The ref of a cluster node's key list (a leaf's keys, an inner node's first keys). */
static inline ref_t cluster_keys_ref(node_hdr *h) { return node_refs(h)[CL_KEYS]; }
static inline ref_t *cluster_keys_slot(node_hdr *h) { return &node_refs(h)[CL_KEYS]; }
/** Column slots a leaf has (columns added since it was written have none: their defaults). */
static inline uint32_t cluster_leaf_cols(const node_hdr *leaf) { return leaf->count > CL_COL0 ? leaf->count - CL_COL0 : 0; }
/** The ref of column col's sub-node in a leaf; 0 when the leaf does not materialise it. */
static inline ref_t cluster_leaf_col_ref(node_hdr *leaf, uint32_t col)
{
    return CL_COL0 + (uint64_t)col < leaf->count ? node_refs(leaf)[CL_COL0 + col] : 0;
}
/** The slot of column col in a leaf (col < cluster_leaf_cols(leaf)). */
static inline ref_t *cluster_leaf_col_slot(node_hdr *leaf, uint32_t col) { return &node_refs(leaf)[CL_COL0 + col]; }
/** Children of an inner node. */
static inline uint32_t cluster_inner_children(const node_hdr *inner) { return inner->count > CL_CHILD0 ? inner->count - CL_CHILD0 : 0; }
/** The ref of child i of an inner node, and its slot (i < cluster_inner_children). */
static inline ref_t cluster_inner_child(node_hdr *inner, uint64_t i) { return node_refs(inner)[CL_CHILD0 + i]; }
static inline ref_t *cluster_inner_child_slot(node_hdr *inner, uint64_t i) { return &node_refs(inner)[CL_CHILD0 + i]; }

int cluster_find(cs_txn *t, ref_t root, int64_t key, node_hdr **leaf, uint32_t *row);
/** The largest key of the tree at root (*found false for an empty tree). */
int cluster_last_key(cs_txn *t, ref_t root, int64_t *key, bool *found);
int cluster_insert(cs_txn *t, uint32_t table, int64_t key);
/* cluster_insert whose new row holds values: byc[col], when col < nbyc and it is not NULL, is
 * column col's value (checked by the caller), put straight into the row (no default written and
 * then overwritten); the other columns hold their defaults. */
int cluster_insert_row(cs_txn *t, uint32_t table, int64_t key, const cs_value *const *byc, uint32_t nbyc);
int cluster_erase(cs_txn *t, uint32_t table, int64_t key);
/** Returns a writable leaf slot and row for `key`, copying the path (WRITE). */
int cluster_write_path(cs_txn *t, uint32_t table, int64_t key, ref_t **leaf_slot, uint32_t *row);
int table_root(cs_txn *t, uint32_t table, ref_t *root);
/** table_root, and whether the table is pk-keyed (TBLK_PK, FORMAT.md §6.1); pk_keyed may be NULL. */
int table_root_keyed(cs_txn *t, uint32_t table, ref_t *root, bool *pk_keyed);
/** A table's keying flags (TBLK_*, 0 without the keying slots) and its retired-key tree (0: none). */
int table_keying(cs_txn *t, uint32_t table, int64_t *flags, ref_t *retired);
/** Gives the writable table node the keying slots (TBL_KEYING = 0, TBL_RETIRED = 0) when it
 *  lacks them; `retired` points at its TBL_RETIRED slot (the flags slot is the one before it).
 *  The pointer is valid until the next allocation. */
int table_keying_slots(cs_txn *t, uint32_t table, ref_t **retired);
int table_node_slot(cs_txn *t, uint32_t table, ref_t **slot);
int table_get_meta(cs_txn *t, uint32_t table, int which, int64_t *out);
int table_set_meta(cs_txn *t, uint32_t table, int which, int64_t v);
/** First key >= `from` in the table, with its leaf and row. CS_NOTFOUND past the end. */
int cluster_seek(cs_txn *t, ref_t root, int64_t from, node_hdr **leaf, uint32_t *row, int64_t *key);
/** Frees column col's data in every leaf of the table (a column removed, or a slot reused). */
int cluster_drop_col(cs_txn *t, uint32_t table, uint32_t col);
/** Materialises column `col` of the writable leaf at *leaf_slot: an empty sub-node, short of the
 *  leaf's rows (cluster.c invariant 2). */
int cluster_materialise(cs_txn *t, uint32_t table, ref_t *leaf_slot, uint32_t col);

/** The value column col (definition c) holds at `row` of a leaf, as stored (a Mixed link is not
 *  checked): the column's default when the leaf does not materialise the column. */
int cluster_leaf_get(cs_txn *t, node_hdr *leaf, uint32_t row, const col_def *c, uint32_t col, cs_value *out);

/** cluster_leaf_get for the objects keys[0], keys[1], ... that are consecutive rows of one leaf
 *  (at least one, at most max; their count in *got): a pass in key order reads a column a leaf at
 *  a time. keys[0] is looked for in the row after *row of *leaf (NULL: none yet), else found
 *  from root (CS_NOTFOUND when no object has it); *leaf and *row are left at the last row read.
 *  Read transactions only (CS_MISUSE in a write: its sub-nodes may be short of the rows). */
int cluster_leaf_get_run(cs_txn *t, ref_t root, const int64_t *keys, size_t max, const col_def *c, uint32_t col,
                         node_hdr **leaf, uint32_t *row, cs_value *out, size_t *got);

/** The raw ref element (LK_REFS / LK_BACK, spec s) column col holds at `row` of a leaf: 0 when the
 *  leaf does not materialise the column or the row is past a short sub-node's end. */
int cluster_leaf_get_ref(cs_txn *t, node_hdr *leaf, uint32_t row, const leaf_spec *s, uint32_t col, uint64_t *out);
/** The identity of the nested collection Mixed column col holds at `row` of a leaf
 *  (leaf_get_identity): 0 when it holds none. */
int cluster_leaf_get_identity(cs_txn *t, node_hdr *leaf, uint32_t row, const leaf_spec *s, uint32_t col,
                              uint32_t *out);
/** Pads every column sub-node this write left short of its leaf's rows with defaults, so that a
 *  commit writes only full sub-nodes (cluster.c invariant 2). Called by cs_txn_commit. */
int cluster_fill_short(cs_txn *t);
/** Re-packs every integer node this write changed in the table's cluster trees (the key lists and
 *  the Int, Bool and Link columns' sub-nodes) in its smallest encoding (node_pack, FORMAT.md §3).
 *  Called by cs_txn_commit after cluster_fill_short; the nodes are not written again before the
 *  commit. */
int cluster_pack(cs_txn *t);

/** Calls fn(ctx, leaf) for every leaf of the cluster tree at root in key order (none for an empty
 *  tree), checking each node on the way; stops at the first code other than CS_OK. */
int cluster_each_leaf(cs_txn *t, ref_t root, int (*fn)(void *ctx, node_hdr *leaf), void *ctx);

/* ---- iterating a table's rows in key order (over cs_iter's private fields) ----------------- */

/** Starts at the table's first row (the caller checked that the table is live). */
void cluster_iter_init(cs_iter *it, cs_txn *t, uint32_t table);
/** The row after it->next_key, found from the root: cluster_iter_next's slow path. */
int cluster_iter_seek(cs_iter *it, int64_t *key, node_hdr **leaf, uint32_t *row);
/** The next row's key, leaf and row; CS_NOTFOUND past the last. The leaf of the previous row is
 *  reused while the transaction's epoch is unchanged (its positions still hold). */
static inline int cluster_iter_next(cs_iter *it, int64_t *key, node_hdr **leaf, uint32_t *row)
{
    cs_txn *t = it->txn;
    if (it->done) return CS_NOTFOUND;
    node_hdr *l = (node_hdr *)it->leaf;
    if (l && it->epoch == t->epoch) {
        node_hdr *keys = (node_hdr *)txn_ptr(t, cluster_keys_ref(l));
        if (it->row < keys->count) {
            *key = node_get_int(keys, it->row);
            *leaf = l;
            *row = it->row;
            it->next_key = *key + 1;
            it->row++;
            return CS_OK;
        }
    }
    return cluster_iter_seek(it, key, leaf, row);
}

#endif
