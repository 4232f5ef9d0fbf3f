/*
 * obj.h -- objects (obj.c): rows, links and their backlinks, embedded objects, as collections
 * (coll.c), indexes and schema changes need them.
 */
#ifndef CSTORE_OBJ_H
#define CSTORE_OBJ_H

#include "internal.h"

int obj_delete_key(cs_txn *t, uint32_t table, int64_t key);
/** Inserts a row with the table's next key (any table, embedded too) and points `out` at it. */
int obj_create_row(cs_txn *t, uint32_t table, cs_obj *out);
int backlink_add(cs_txn *t, uint32_t target_table, int64_t target, uint32_t origin_table,
                 uint32_t origin_col, int64_t origin);
int backlink_remove(cs_txn *t, uint32_t target_table, int64_t target, uint32_t origin_table,
                    uint32_t origin_col, int64_t origin);
/** Deletes `key` of an embedded table when a link to it goes away. */
int link_dropped(cs_txn *t, uint32_t target_table, int64_t target);
int obj_exists_key(cs_txn *t, uint32_t table, int64_t key, bool *out);
/** cs_obj_get without turning a Mixed link to a deleted object into null (the stored value). */
int obj_get_stored(cs_obj *obj, uint32_t col, cs_value *out);

/** The backlinks of `o` in its backlink column `bc`: *n of them, the i-th origin key
 *  obj_backlink_at(*list, *single, i) (docs/FORMAT.md, backlink column). */
int obj_backlinks(cs_obj *o, uint32_t bc, node_hdr **list, uint64_t *single, size_t *n);
/** The i-th origin key of backlinks obj_backlinks read. */
int64_t obj_backlink_at(node_hdr *list, uint64_t single, size_t i);
/** The backlink column of `target_table` that serves link column (origin_table, origin_col). */
int obj_backlink_col(cs_txn *t, uint32_t target_table, uint32_t origin_table, uint32_t origin_col, uint32_t *out);

/** A writable slot for the object's column sub-node (materialised), and the object's row. */
int obj_col_slot(cs_obj *o, uint32_t col, ref_t **slot, uint32_t *row);
/** Writes a value into a column as it is (indexes and change records kept, no link bookkeeping). */
int obj_col_put(cs_obj *o, uint32_t col, const col_def *c, const cs_value *v);

#endif
