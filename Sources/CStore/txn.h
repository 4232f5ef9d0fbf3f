/*
 * txn.h -- transactions (txn.c): the state a function needs to write, and the slots of the top
 * node (docs/FORMAT.md §4) a transaction reads or, writing, changes.
 */
#ifndef CSTORE_TXN_H
#define CSTORE_TXN_H

#include "internal.h"

int txn_need_write(cs_txn *t);
int txn_top_slot(cs_txn *t, int which, ref_t **slot);
int txn_top_get(cs_txn *t, int which, uint64_t *out);

#endif
