/*
 * cluster.h -- tables as cluster trees (cluster.c, docs/FORMAT.md §6.1 and §6.2): the table node
 * and its slots, finding, inserting and erasing rows by object key, and the writable path to a
 * row's leaf.
 */
#ifndef CSTORE_CLUSTER_H
#define CSTORE_CLUSTER_H

#include "leaf.h"

int cluster_find(cs_txn *t, ref_t root, int64_t key, node_hdr **leaf, uint32_t *row);
int cluster_insert(cs_txn *t, uint32_t table, int64_t key);
int cluster_erase(cs_txn *t, uint32_t table, int64_t key);
/** Returns a writable leaf slot and row for `key`, copying the path (WRITE). */
int cluster_write_path(cs_txn *t, uint32_t table, int64_t key, ref_t **leaf_slot, uint32_t *row);
int table_root(cs_txn *t, uint32_t table, ref_t *root);
int table_node_slot(cs_txn *t, uint32_t table, ref_t **slot);
int table_get_meta(cs_txn *t, uint32_t table, int which, int64_t *out);
int table_set_meta(cs_txn *t, uint32_t table, int which, int64_t v);
/** First key >= `from` in the table, with its leaf and row. CS_NOTFOUND past the end. */
int cluster_seek(cs_txn *t, ref_t root, int64_t from, node_hdr **leaf, uint32_t *row, int64_t *key);
/** Materialises column `col` of the writable leaf at *leaf_slot (a sub-node of defaults). */
int cluster_materialise(cs_txn *t, uint32_t table, ref_t *leaf_slot, uint32_t col);

#endif
