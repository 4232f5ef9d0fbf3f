/*
 * compact.h -- compacted copies of a version (compact.c, docs/FORMAT.md §11, docs/ARCHITECTURE.md
 * Compaction, copies and backups): the reachable nodes of one snapshot streamed into a new file
 * laid out for reading, with empty free lists. Used by cs_txn_write_copy, cs_db_compact and the
 * backup writer.
 */
#ifndef CSTORE_COMPACT_H
#define CSTORE_COMPACT_H

#include "internal.h"

/** Where compact_stream sends the bytes of the new file, in order from offset 0 with no gaps. */
typedef int (*compact_sink)(void *ctx, const void *buf, uint64_t n, uint64_t off);

/**
 * Streams a compacted file holding exactly the version `t` reads (a READ transaction): the
 * header first (4096 bytes), then every node, each exactly once. `*size` receives the file's
 * length. The version number, the user's schema version and the change history carry over; the
 * format version is the one that version needs. `progress` (may be NULL) is called with the
 * bytes handed to the sink so far and the file's length, after each chunk and at the end.
 */
int compact_stream(cs_txn *t, compact_sink sink, void *ctx, cs_progress progress, void *pctx, uint64_t *size);

/** The system call behind each optional cs_io field compaction uses (the io's own when set). */
int compact_io_rename(const cs_io *io, const char *from, const char *to);
int compact_io_unlink(const cs_io *io, const char *path);
int compact_io_sync_dir(const cs_io *io, const char *path);
/** Syncs the directory holding `path` through io (CS_IOERR with the reason on failure). */
int compact_sync_dir_of(const cs_io *io, const char *path);

#endif
