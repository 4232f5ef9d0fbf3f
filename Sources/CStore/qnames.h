/*
 * qnames.h -- a query's public names (cs_name_map in cstore.h): qnames.c checks and copies the
 * caller's map when a query is made; the query engine (query.c) looks class and property names
 * up through it when it binds key paths to the schema, and names tables and columns by it in
 * messages. A NULL map means stored names only. Private to the core.
 */
#ifndef CSTORE_QNAMES_H
#define CSTORE_QNAMES_H

#include "internal.h"

typedef struct qnames qnames;

/** Checks `map` against the schema `txn` reads and copies it; *out is NULL for a NULL or empty
 *  map. CS_MISUSE with a message naming the entry when it is not usable (see cstore.h). */
int qnames_copy(cs_txn *txn, const cs_name_map *map, qnames **out);
void qnames_free(qnames *m);

/** The table a class name of the query text stands for: a public name, else a stored name that
 *  has no other public name. CS_NOTFOUND otherwise. */
int qnames_table_find(const qnames *m, cs_txn *txn, const char *name, uint32_t *table);
/** The column of `table` a property name stands for, by the same rule; hidden backlink columns
 *  are never found. CS_NOTFOUND otherwise. */
int qnames_column_find(const qnames *m, cs_txn *txn, uint32_t table, const char *name, uint32_t *col);

/** The link column a backlink alias (CS_NAME_BACKLINK) of `table` named `name` stands for:
 *  `@links.<origin_table>.<origin_col>`. CS_NOTFOUND (without a message) when there is none. */
int qnames_backlink_find(const qnames *m, cs_txn *txn, uint32_t table, const char *name, uint32_t *origin_table,
                         uint32_t *origin_col);

/** The name messages give a live table or column: its public name, else its stored name. */
const char *qnames_table_name(const qnames *m, cs_txn *txn, uint32_t table);
const char *qnames_column_name(const qnames *m, cs_txn *txn, uint32_t table, uint32_t col);

#endif
