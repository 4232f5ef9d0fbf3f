/*
 * snapshot.h -- what a transaction reads (snapshot.c): its top node's slots (docs/FORMAT.md §4)
 * and its schema's tables and columns. Every file above the nodes reaches them through here.
 */
#ifndef CSTORE_SNAPSHOT_H
#define CSTORE_SNAPSHOT_H

#include "node.h"
#include "schema.h"

/** CS_READONLY unless the transaction is writing. */
int txn_need_write(cs_txn *t);
/** The value of top slot `which` (a ref, or a tagged number for the numeric slots; 0 if absent). */
int txn_top_get(cs_txn *t, int which, uint64_t *out);
/** A writable top slot (WRITE only): the top node is copied into the transaction first. */
int txn_top_slot(cs_txn *t, int which, ref_t **slot);

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

#endif
