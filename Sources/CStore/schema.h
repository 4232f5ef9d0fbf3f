/*
 * schema.h -- the schema in memory and its blob (schema_blob.c, docs/FORMAT.md §5), and the
 * one way to reach a table's or a column's definition in it (schema_table, schema_col; for a
 * transaction, snapshot.h's txn_table and txn_col).
 */
#ifndef CSTORE_SCHEMA_H
#define CSTORE_SCHEMA_H

#include "internal.h"

schema *schema_new(void);
void schema_release(schema *s);
schema *schema_clone(const schema *s);
/** Frees what a table definition owns (its names and columns), leaving the struct to reuse. */
void schema_table_free(table_def *t);
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

#endif
