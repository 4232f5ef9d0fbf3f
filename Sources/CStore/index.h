/*
 * index.h -- ordered indexes (index.c, docs/FORMAT.md §6.5): the index trees kept in step with
 * every write, and the range reads the query engine seeds its candidates from. The keys are
 * index_key.h's.
 */
#ifndef CSTORE_INDEX_H
#define CSTORE_INDEX_H

#include "index_key.h"

/** True when a schema has a Mixed index, which needs format version 2. */
bool index_schema_needs_v2(const schema *s);
/** A range of whole index entries [lo, hi) compared as bytes (NULL: open on that side). */
typedef struct irange {
    uint8_t *lo; /* first entry included, or NULL */
    size_t lon;  /* its length */
    uint8_t *hi; /* first entry excluded, or NULL */
    size_t hin;  /* its length */
} irange;
/** The objects with an entry in any of the ranges, each once, in key order (free()). */
int index_collect(cs_txn *t, uint32_t table, uint32_t col, const irange *r, size_t nr, int64_t **keys, size_t *count);
int index_root(cs_txn *t, uint32_t table, uint32_t col, ref_t *root);
int index_update(cs_txn *t, uint32_t table, uint32_t col, int64_t key, const cs_value *old, const cs_value *nv);
int index_row(cs_txn *t, uint32_t table, int64_t key, bool insert);
/* index_row for a new object whose column vcol holds *vval (not the default) in its entry. */
int index_row_with(cs_txn *t, uint32_t table, int64_t key, bool insert, uint32_t vcol, const cs_value *vval);
/* index_row for a new object whose columns vcols[i] (i < nv) hold vals[i * stride]: each indexed
 * one's entry keys that value, every other indexed column's its default. */
int index_row_values(cs_txn *t, uint32_t table, int64_t key, bool insert, size_t nv, const uint32_t *vcols,
                     const cs_value *vals, size_t stride);
int index_drop(cs_txn *t, uint32_t table, uint32_t col);
/** Makes the nodes index_drop of column col writes writable copies with col's slot (the table
 *  node and its list of indexes), so that a later index_drop of col cannot fail for memory. */
int index_slot_writable(cs_txn *t, uint32_t table, uint32_t col);
int index_build(cs_txn *t, uint32_t table, uint32_t col, bool unique);
/** CS_CONSTRAINT when two entries of column `col`'s index have the same value: the uniqueness a
 *  primary key needs, checked on the index a column keeps of its own instead of building one. */
int index_check_unique(cs_txn *t, uint32_t table, uint32_t col);
int index_verify(cs_txn *t, uint32_t table, uint32_t col);

#endif
