/*
 * schema.h -- the schema (schema.c, docs/FORMAT.md §5): the reference-counted schema in memory
 * and its blob, and a transaction's view of it (txn_table, txn_col: the one way the other files
 * reach a table's or a column's definition).
 */
#ifndef CSTORE_SCHEMA_H
#define CSTORE_SCHEMA_H

#include "internal.h"

schema *schema_new(void);
void schema_release(schema *s);
schema *schema_clone(const schema *s);
int schema_parse(const uint8_t *p, uint64_t n, schema **out);
int schema_serialize(const schema *s, uint8_t **out, uint64_t *n);

int txn_table(cs_txn *t, uint32_t table, table_def **out);
int txn_col(cs_txn *t, uint32_t table, uint32_t col, table_def **tbl, col_def **out);
int txn_schema_writable(cs_txn *t);

#endif
