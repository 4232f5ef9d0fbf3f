/*
 * index_key.h -- the order-preserving keys of values (index_key.c, docs/FORMAT.md §6.5): what an
 * index entry starts with, for the index trees (index.c) and the query engine's index plans.
 */
#ifndef CSTORE_INDEX_KEY_H
#define CSTORE_INDEX_KEY_H

#include "internal.h"

/** Whether a column of this type can have an index. */
bool index_type_ok(cs_type type);
/** Writes v as 8 bytes big-endian at p (the object key that ends every index entry). */
void index_put_be64(uint8_t *p, uint64_t v);
/** The order-preserving key of a value (FORMAT.md §6.5); `mixed`: the key of a Mixed index.
 *  *out is malloc'd with 8 spare bytes at the end (for the object key). */
int index_encode(const cs_value *v, bool mixed, uint8_t **out, size_t *n);
/** Bytes index_key_into needs for v (the 8 spare bytes included). */
size_t index_key_cap(const cs_value *v);
/** Encodes v into p (index_key_cap(v) bytes); the key's length, 0 when v cannot be indexed. */
size_t index_key_into(const cs_value *v, bool mixed, uint8_t *p);
/** The INDEX_TAG_DOUBLE key of d (integers included), for bounds of Mixed numeric ranges. */
int index_double_key(double d, uint8_t **out, size_t *n);

/* A probe encoded on the stack when it fits (every type but long strings), else on the heap. */
typedef struct probe {
    uint8_t buf[64]; /* the encoding when it fits */
    uint8_t *p;      /* the encoding: buf or a malloc'd copy */
    size_t n;        /* its length (without the spare bytes) */
} probe;

int index_probe_make(const cs_value *v, bool mixed, probe *pr);
void index_probe_free(probe *pr);

#endif
