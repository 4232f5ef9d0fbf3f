/*
 * leaf.h -- leaves (leaf.c, docs/FORMAT.md §6.3): one encoding per storage kind for a column's
 * values in a cluster leaf or a collection's elements, and the check of a value against a
 * column's type.
 */
#ifndef CSTORE_LEAF_H
#define CSTORE_LEAF_H

#include "node.h"

typedef enum leaf_kind {
    LK_INT = 1,    /* packed ints: INT, BOOL */
    LK_LINK = 2,   /* packed ints, key + 1, 0 = null */
    LK_FLOAT = 3,  /* 4 bytes */
    LK_DOUBLE = 4, /* 8 bytes */
    LK_TS = 5,     /* 12 bytes: i64 seconds, i32 nanoseconds */
    LK_OID = 6,    /* 12 bytes */
    LK_UUID = 7,   /* 16 bytes */
    LK_DEC = 8,    /* 16 bytes */
    LK_STR = 9,    /* string leaf: STRING, BINARY */
    LK_MIXED = 10, /* mixed leaf */
    LK_REFS = 11,  /* a ref (or 0) per element: collections in a cell */
    LK_BACK = 12,  /* backlinks per element */
} leaf_kind;

typedef struct leaf_spec {
    leaf_kind kind; /* storage */
    cs_type type;   /* element type */
    bool nullable;  /* nulls allowed */
    uint32_t target; /* link target table */
} leaf_spec;

leaf_spec leaf_spec_of(cs_type type, bool nullable, uint32_t target);
leaf_spec leaf_spec_col(const col_def *c);
/** The value of an element no one set (FORMAT.md §6.3, Defaults): null for nullable columns, links
 *  and Mixed, else 0, false, empty or +0E0. */
void leaf_default(const leaf_spec *s, cs_value *v);
int leaf_make(cs_txn *t, const leaf_spec *s, uint64_t n, ref_t *out);
int leaf_count(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t *out);
int leaf_get(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, cs_value *out);
/** leaf_get of rows from .. from + n - 1 into out[0..n): for a string or binary leaf its parts
 *  are opened once and each row's offsets read in turn (a pass reading a column leaf by leaf). */
int leaf_get_run(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t from, uint64_t n, cs_value *out);
int leaf_set(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v);
int leaf_insert(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v);
/** Appends defaults until the leaf has `n` elements (nothing when it has as many already). */
int leaf_pad(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t n);
/** Sets element i; a leaf shorter than i + 1 first gets defaults up to i, then v is appended
 *  (one append, no default written and overwritten, when i is the leaf's count). */
int leaf_put(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v);
/** Erases element i, freeing what it owns (blobs, nested collections). */
int leaf_erase(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i);
/** Moves elements [from, end) of *src to the end of *dst (ownership moves along). */
int leaf_move(cs_txn *t, const leaf_spec *s, ref_t *src, uint64_t from, ref_t *dst);
/** Raw ref element of an LK_REFS / LK_BACK leaf, or the nested ref of a Mixed element. */
int leaf_get_ref(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, uint64_t *out);
int leaf_set_ref(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, uint64_t v);
/** The identity of the nested list or dictionary Mixed element i holds (docs/FORMAT.md §6.3,
 *  Mixed leaf): a number drawn when the collection was made, 0 for any other element, another
 *  leaf kind, or a collection written before identities were kept. */
int leaf_get_identity(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, uint32_t *out);
/** Sets the identity of the nested collection Mixed element i holds (a collection moved within
 *  its list keeps its identity); nothing for another leaf kind. */
int leaf_set_identity(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, uint32_t identity);
/** Checks a value against a leaf spec (type, nulls, size). */
int value_check(const leaf_spec *s, const cs_value *v);

#endif
