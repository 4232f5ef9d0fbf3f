/*
 * bptree.h -- positional B+ trees (bptree.c, docs/FORMAT.md §6.4): the elements of a List, Set
 * or Map by position, over the leaves of leaf.h.
 */
#ifndef CSTORE_BPTREE_H
#define CSTORE_BPTREE_H

#include "leaf.h"

int bpt_size(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t *out);
int bpt_get(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, cs_value *out);
int bpt_get_ref(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, uint64_t *out);
int bpt_set(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, const cs_value *v);
int bpt_set_ref(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, uint64_t v);
/** leaf_get_identity / leaf_set_identity of element i of the tree. */
int bpt_get_identity(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, uint32_t *out);
int bpt_set_identity(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, uint32_t identity);
int bpt_insert(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, const cs_value *v);
int bpt_erase(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i);

/** The writable leaf holding element i of the tree at *root and i's position in it. */
int bpt_leaf_slot(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, ref_t **leaf, uint64_t *local);

#endif
