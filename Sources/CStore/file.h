/*
 * file.h -- the database file (file.c, docs/FORMAT.md §1 and §2): the header, the mapping and
 * the writes of a commit; the commit and the free list (commit.c, docs/FORMAT.md §7).
 */
#ifndef CSTORE_FILE_H
#define CSTORE_FILE_H

#include "internal.h"

/* ---- file.c ------------------------------------------------------------------------------- */

/** The newest durable version the header names (the slot rule of FORMAT.md §2). */
int file_read_latest(cs_dbfile *f, uint64_t *version, uint64_t *top, uint64_t *logical, int *sel,
                     rejected_slot *note);
/** Makes sure the mapping covers `size` bytes (a larger mapping is added, never moved). */
int file_map_for(cs_dbfile *f, uint64_t size);
/** Takes the writer lock; when the last writer died mid-commit, publishes the header's version
 *  first (lock.c invariant 3). */
int file_writer_acquire(cs_dbfile *f);

/** Marks the file as owned by its one handle (cs_dbfile.compacting): CS_BUSY when this process
 *  has it open through other handles; later opens in this process are refused until it closes. */
int file_claim(cs_dbfile *f);

/* ---- what a commit (commit.c) writes through ---------------------------------------------- */

/** The one run of a one-sync commit (len 0: a two-sync commit). */
typedef struct run_info {
    uint64_t pos, len, hash; /* where the commit's run list is, the bytes written, their hash */
} run_info;

/** Writes n bytes at off, all of them (CS_FULL on a full disk, CS_IOERR otherwise). */
int file_pwrite(cs_dbfile *f, const void *buf, uint64_t n, uint64_t off);
/** fdatasync in FULL durability (invariant 3 of file.c on failure). */
int file_sync(cs_dbfile *f);
/** The 64-bit hash a one-sync commit's header slot keeps of its bytes (n a multiple of 8). */
uint64_t file_run_hash(const uint8_t *p, uint64_t n);
/** Writes the header with slot `sel` naming (top, version, size) and selected; `fmt` is the format
 *  version both slots need (FORMAT.md §2). `fresh`: a new file (the other slot is zero). */
int file_write_header(cs_dbfile *f, int sel, uint64_t top, uint64_t version, uint64_t size, bool fresh,
                      const run_info *run, uint16_t fmt);

/** The HDR_USED bytes of a header whose slot 0, selected, names (top, version, size), written
 *  with two syncs (no run to check); slot 1 is zero. `fmt` as for file_write_header. */
void file_fresh_header(void *out, uint64_t top, uint64_t version, uint64_t size, uint16_t fmt);

/* ---- commit.c ----------------------------------------------------------------------------- */

/** Writes the write transaction's changes as the next version (durability rules of commit.c):
 *  the free list, the placement of every dirty node, the writes, syncs and the header. What the
 *  version contains (schema blob, change history) the transaction layer has staged before. */
int file_commit(cs_txn *t);
/** The oldest version a live reader (of any process) may read, `latest` when none is older;
 *  the caller holds f->mu. */
uint64_t file_oldest_live(cs_dbfile *f, uint64_t latest);

#endif
