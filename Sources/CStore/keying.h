/*
 * keying.h -- Int primary keys as object keys (keying.c, docs/FORMAT.md §6.1, docs/ARCHITECTURE.md,
 * Primary keys as object keys).
 */
#ifndef CSTORE_KEYING_H
#define CSTORE_KEYING_H

#include "internal.h"

/** The key a new object with primary key `pk` gets: `pk` itself when the table is pk-keyed, the
 *  value is an Int in [0, KEY_PK_END) and that key was never used (not retired); else the
 *  table's next counter key. `own` says which (true: the key is the pk). */
int keying_choose(cs_txn *t, uint32_t table, const cs_value *pk, int64_t *key, bool *own);
/** Whether every object of `table` has its key as its Int primary key: the table is pk-keyed and
 *  its counter never gave out a key (TBL_NEXTKEY still KEY_PK_END). Then an object with primary
 *  key p exists exactly when key p is live, so a new object's primary key is checked for
 *  uniqueness by the cluster insert of its key (CS_EXISTS), without the index (invariant 4). */
int keying_keys_are_pks(cs_txn *t, uint32_t table, bool *all);
/** Records that `key` of a pk-keyed table is deleted, when it is a pk key (below KEY_PK_END):
 *  it is never given out again. A no-op for other tables and keys. */
int keying_retire(cs_txn *t, uint32_t table, int64_t key);
/** The object with Int primary key `pk` found by its key alone: CS_OK with `*key`, `*leaf` and
 *  `*row` when the table is pk-keyed and holds key `pk`; CS_NOTFOUND when the caller must ask
 *  the index (not pk-keyed, pk outside [0, KEY_PK_END), or no object with that key). */
int keying_find(cs_txn *t, uint32_t table, int64_t pk, node_hdr **leaf, uint32_t *row);
/** The primary key of `table` changed to `col` (CS_NONE: none): a table that never held an
 *  object and gets an Int primary key becomes pk-keyed; a pk-keyed one stays so only while
 *  every object with a key below KEY_PK_END has that key as its value of `col` (else its
 *  keying is dropped for good: it behaves as a table that never had it). */
int keying_primary_changed(cs_txn *t, uint32_t table, uint32_t col);
/** keying_primary_changed in two steps, so that a caller can decide before it changes anything:
 *  the plan reads only (it fails, if at all, with the table untouched); applying it changes the
 *  keying slots (only running out of memory for a writable copy can fail it). The plan assumes
 *  the flag TBLK_NOIDX of the primary key before is cleared before it is applied. */
enum {
    KP_KEEP,      /* nothing changes */
    KP_NEW,       /* a table that never held an object becomes pk-keyed, without the index */
    KP_UNINDEXED, /* a pk-keyed table whose keys are the new key's values: its index goes */
    KP_DROP,      /* an object's key is not its value: the keying is dropped for good */
};
int keying_primary_plan(cs_txn *t, uint32_t table, uint32_t col, int *plan);
int keying_primary_apply(cs_txn *t, uint32_t table, uint32_t col, int plan);
/** Whether `table` keeps no index of its primary key (TBLK_NOIDX, invariant 5): every object's
 *  key is its Int primary key, so the cluster keys answer what the index would (index.c). */
int keying_pk_unindexed(cs_txn *t, uint32_t table, bool *unindexed);
/** Ends TBLK_NOIDX before something breaks invariant 5 (a counter key given out, the primary
 *  key changed or its column removed): the flag is cleared and, when `build`, the primary key's
 *  index is built from the objects. A no-op for a table without the flag. */
int keying_index_back(cs_txn *t, uint32_t table, bool build);
/** verify: the table's keying slots (flags known, retired keys strictly increasing, below
 *  KEY_PK_END and not live, the counter at or past KEY_PK_END, every object with a key below
 *  KEY_PK_END having that key as its Int primary key; with TBLK_NOIDX, an Int primary key, the
 *  counter at KEY_PK_END and no index tree for it). */
int keying_verify(cs_txn *t, uint32_t table);

#endif
