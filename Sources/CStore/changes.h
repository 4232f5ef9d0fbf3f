/*
 * changes.h -- the change history (changes.c, docs/FORMAT.md §8): the records a write makes and
 * their encoding into the version's history at commit.
 */
#ifndef CSTORE_CHANGES_H
#define CSTORE_CHANGES_H

#include "internal.h"

int change_create(cs_txn *t, uint32_t table, int64_t key);
/* change_create for an object whose key is its primary key (keying.c): such keys need not lie
 * above the table's other keys, so the write remembers each one, unless the table held no object
 * when this one was created (`was_empty`, here or at an earlier create of this write): then
 * every object it holds from now on in this write was created by it, and nothing is kept per key. */
int change_create_own(cs_txn *t, uint32_t table, int64_t key, bool was_empty);
int change_delete(cs_txn *t, uint32_t table, int64_t key);
/* Records the primary key `pk` of object `key` of `table`, which this write is deleting
 * (FORMAT.md §8.3); types other than Int, String, ObjectId, UUID and null are not recorded. */
int change_deleted_pk(cs_txn *t, uint32_t table, int64_t key, const cs_value *pk);
/* The full size (header and padding) of the deleted-keys blob version `version` has, 0 when it
 * has none (feed.c counts it in what a slot holds back). */
int changes_deleted_pk_bytes(cs_txn *t, uint64_t version, uint64_t *out);
int change_set(cs_txn *t, uint32_t table, int64_t key, uint32_t col);
int change_coll(cs_txn *t, const cs_coll *c, cs_change_kind kind, int64_t a, int64_t b);
int change_schema(cs_txn *t);
int history_append(cs_txn *t, uint64_t newver, uint64_t oldest);
/* Reads one unsigned LEB128 number at *p (FORMAT.md §8), advancing *p; false when it runs past
 * `end` or is longer than 64 bits. Shared with the feed slot table (feed.c). */
bool changes_get_uv(const uint8_t **p, const uint8_t *end, uint64_t *out);

#endif
