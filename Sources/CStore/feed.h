/*
 * feed.h -- feed slots (feed.c, docs/FORMAT.md §8.1): named consumers of the change history
 * whose unacknowledged entries the history keeps.
 */
#ifndef CSTORE_FEED_H
#define CSTORE_FEED_H

#include "internal.h"

/** Called by history_append for every commit before it trims: adds the new entry's bytes
 *  (`entry_bytes`) to what each slot holds back, invalidates a slot past its limit, and lowers
 *  *oldest (entries at or below it are dropped) to the lowest valid slot's position. */
int feed_on_commit(cs_txn *t, uint64_t newver, uint64_t entry_bytes, uint64_t *oldest);

#endif
