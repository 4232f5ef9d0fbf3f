/*
 * file.h -- the database file (file.c, docs/FORMAT.md §1, §2 and §7): the header, the mapping,
 * the free list and the commit.
 */
#ifndef CSTORE_FILE_H
#define CSTORE_FILE_H

#include "internal.h"

int file_commit(cs_txn *t);
int file_read_latest(cs_dbfile *f, uint64_t *version, uint64_t *top, uint64_t *logical, int *sel);

int file_map_for(cs_dbfile *f, uint64_t size);
int free_list_load(cs_txn *t);

#endif
