/*
 * coll.h -- collections (coll.c): what deleting an object (obj.c) needs of the collections that
 * hold links to it or from it.
 */
#ifndef CSTORE_COLL_H
#define CSTORE_COLL_H

#include "internal.h"

/** Removes every link from (table, key, col) to `target` without touching target's backlinks. */
int coll_unlink_all(cs_txn *t, uint32_t table, int64_t key, uint32_t col, int64_t target);
/** Drops the backlinks of every link held in (table, key, col); embedded targets are deleted. */
int coll_drop_links(cs_txn *t, uint32_t table, int64_t key, uint32_t col);

#endif
