/*
 * io.h -- allocation through the replaceable I/O layer (cstore.h, cs_io), below the files
 * that map what they write (lock.c) and grow what they map (commit.c).
 *
 * Rule: every byte of a file that is mapped and then written through the mapping, and every
 * byte a commit grows the database file by, is allocated with io_allocate before use. A full
 * disk then fails the allocation with ENOSPC (CS_FULL, a thrown outOfDiskSpace in Swift)
 * instead of a SIGBUS at the first store into an unallocated page.
 */
#ifndef CSTORE_IO_H
#define CSTORE_IO_H

#include "internal.h"

/** The default cs_io.allocate: posix_fallocate, its error number put in errno. */
int io_default_allocate(void *ctx, int fd, off_t off, off_t len);
/** The default cs_io.write_mapped: memcpy into map + off (mapwrite.c; docs/ARCHITECTURE.md,
 *  Writes through a mapping). */
int io_default_write_mapped(void *ctx, int fd, void *map, const void *buf, size_t n, off_t off);
/** Allocates [off, off + len) of fd (a file of `path`) through io->allocate (the default when
 *  NULL), retrying on EINTR: CS_FULL on ENOSPC, EDQUOT or EFBIG, else CS_IOERR. */
int io_allocate(const cs_io *io, const char *path, int fd, uint64_t off, uint64_t len);

/** The size of fd's file in *size and, when `allocated` is not NULL, the bytes its blocks take
 *  in *allocated (st_blocks * 512: less than the size when the file has holes; 0 when not
 *  known): a size-only statx for the default I/O layer and for any layer whose fstat is the
 *  default one (lseek when statx is refused: the blocks are then not known, and the commit
 *  allocates the whole file again), io->fstat for a layer that replaces fstat. A write
 *  transaction asks for it each time it starts (another process may have grown or shrunk the file, or left a
 *  hole, mapwrite.c); fstat would also read the file's times, and on kernels with
 *  fine-grained timestamps that makes the next write store a fine-grained time, which costs the
 *  next commit's sync an extra wait (docs/benchmarks/README.md, "fstat in every write"). */
int io_file_size(const cs_io *io, int fd, uint64_t *size, uint64_t *allocated);

/** What lies at `path` through io->stat_path (fstatat when NULL): `flags` 0 follows a symbolic
 *  link, AT_SYMLINK_NOFOLLOW does not. 0, or -1 with errno. */
int io_stat_path(const cs_io *io, const char *path, struct stat *st, int flags);

#endif
