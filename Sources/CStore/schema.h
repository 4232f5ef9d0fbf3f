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

/* ---- reaching a table's or a column's definition ---------------------------------------- */

/** The definition of live table `table` of schema s, or NULL (a free or unknown slot). */
static inline table_def *schema_table(const schema *s, uint32_t table)
{
    return table < s->ntables && s->tables[table].live ? &s->tables[table] : NULL;
}
/** The definition of live column `col` of live table `table`, or NULL. */
static inline col_def *schema_col(const schema *s, uint32_t table, uint32_t col)
{
    table_def *td = schema_table(s, table);
    return td && col < td->ncols && td->cols[col].live ? &td->cols[col] : NULL;
}
/** Live table `table` of the schema the transaction reads, or NULL; records no error. */
static inline table_def *txn_table_live(const cs_txn *t, uint32_t table) { return schema_table(t->schema, table); }
/** Live column `col` of table `table` of the schema the transaction reads, or NULL. */
static inline col_def *txn_col_live(const cs_txn *t, uint32_t table, uint32_t col)
{
    return schema_col(t->schema, table, col);
}
/** Live table `table` of the transaction's schema; CS_NOTFOUND with a message otherwise. */
int txn_table(cs_txn *t, uint32_t table, table_def **out);
/** Live column `col` of live table `table` (and the table, if tbl); CS_NOTFOUND otherwise. */
int txn_col(cs_txn *t, uint32_t table, uint32_t col, table_def **tbl, col_def **out);
int txn_schema_writable(cs_txn *t);

#endif
