/*
 * mapwrite.c -- a commit's in-place writes through a writable shared mapping of the database
 * file instead of one pwrite per run (docs/ARCHITECTURE.md, Writes through a mapping).
 *
 * Invariants:
 *  1. A store through the mapping lands only in [0, f->wmap_ok): bytes inside the file, whose
 *     blocks this process allocated through io->allocate, so a full disk is an error of the
 *     allocation (the commit then writes with pwrite) and never a SIGBUS at the store.
 *     wmap_ok is established under the writer lock, after the write transaction read the
 *     file's size and the bytes its blocks take (txn.c, cs_txn_promote): a size other than the
 *     one this process last allocated for (another process grew or cut the file, the first
 *     commit of this process), blocks missing (a hole: a copy of the file with holes, a growth
 *     killed between its ftruncate and its allocation, at any size; a hole smaller than the
 *     file's metadata blocks does not show in the count, and only another program punches
 *     one), or a size that could not be read allocates the whole file again; this process's own growth (allocated by
 *     grow_to) and truncation carry wmap_ok along (file_wmap_resized).
 *  2. The mapping is stored through only between file_wmap_prepare and file_wmap_done, by the
 *     commit that armed it (under write_mu and the writer lock): it is a mapping of its own,
 *     apart from the read-only ones readers use (file.c invariant 4), made by the first commit
 *     of a process that commits, and replaced (unmapped) freely since nothing else points
 *     into it.
 *  3. Only where a store into an allocated, written block never needs a new block and the
 *     whole file can be allocated in one call: ext4 files with extents (fstatfs, then fallocate
 *     itself: without extents it fails with EOPNOTSUPP, where glibc's posix_fallocate would
 *     write a byte into every block). On copy-on-write file systems (btrfs, XFS with shared
 *     extents) and on tmpfs (whose allocation walks every page) commits keep pwrite, as with an
 *     I/O layer without write_mapped.
 *  4. The bytes reach the disk like a pwrite's: they are the same pages of the page cache, and
 *     fdatasync writes every dirty page of the file, those dirtied through a mapping included
 *     (Linux marks a shared file page dirty at its first store after writeback).
 *  5. Runs over MAPWRITE_MAX_RUN go by pwrite: a store into a page that is not in the page
 *     cache reads it from the disk first, which pwrite of whole pages does not; and the header
 *     of a commit without a journal record goes by pwrite (commit.c, write_durable), so that
 *     every commit makes a system call on a file that reports an I/O error (a record's append,
 *     a sync, or that write) before it reports success.
 */
#include "file.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/vfs.h>

/* ext2, ext3 and ext4 (linux/magic.h, EXT4_SUPER_MAGIC) */
#define EXT4_MAGIC 0xEF53
/* invariant 5: the longest run stored through the mapping (a one-row commit's are 0.5-14 KB) */
#define MAPWRITE_MAX_RUN (64u << 10)

/* Allocates [0, size) through the I/O layer, retrying on EINTR; 0 or -1. No error is
 * recorded: a failure only means pwrite for now. The default layer's allocation is fallocate
 * itself (invariant 3): on a file without extents it fails with EOPNOTSUPP, and the file is
 * written with pwrite for good. */
static int allocate_all(cs_dbfile *f, uint64_t size)
{
    bool own = !f->io->allocate || f->io->allocate == io_default_allocate;
    int r;
    do
        r = own ? fallocate(f->fd, 0, 0, (off_t)size) : f->io->allocate(f->io->ctx, f->fd, 0, (off_t)size);
    while (r != 0 && errno == EINTR);
    if (r != 0 && own && errno == EOPNOTSUPP) f->wmap_never = true;
    return r;
}

/* Maps at least `size` bytes writable (the file's size rounded up to 64 MiB, so it costs the
 * process's address space no more than the file), replacing a shorter mapping; false when it
 * cannot. Faults do not read around (MADV_RANDOM): a store reads only its own page when that
 * page is not in the page cache. */
static bool map_writable(cs_dbfile *f, uint64_t size)
{
    if (f->wmap && f->wmap_len >= size) return true;
    uint64_t len = (size + (64ull << 20) - 1) & ~((64ull << 20) - 1);
    if (len > SIZE_MAX) return false;
    void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
    if (p == MAP_FAILED) return false;
    (void)madvise(p, (size_t)len, MADV_RANDOM);
    file_wmap_free(f);
    f->wmap = p;
    f->wmap_len = len;
    return true;
}

void file_wmap_prepare(cs_dbfile *f)
{
    f->wmap_armed = false;
    if (f->wmap_never) return;
    if (!f->io->write_mapped || f->readonly) {
        f->wmap_never = true;
        return;
    }
    if (!f->wmap_size) {
        /* the size is not known (the first commit of this process on the file, say): is it a
         * file system it may map for? */
        struct statfs sf;
        if (fstatfs(f->fd, &sf) != 0 || sf.f_type != EXT4_MAGIC) {
            f->wmap_never = true;
            return;
        }
    }
    if (f->wmap_size != f->phys_size) {
        /* invariant 1: a size this process did not make; until it allocates, nothing is known */
        f->wmap_ok = 0;
        f->wmap_size = 0;
        if (allocate_all(f, f->phys_size) != 0) return; /* a full disk, say: pwrite, and again next time */
        f->wmap_size = f->phys_size;
        f->wmap_ok = f->phys_size;
    }
    if (!f->wmap_ok || !map_writable(f, f->wmap_ok)) return;
    f->wmap_armed = true;
}

void file_wmap_done(cs_dbfile *f) { f->wmap_armed = false; }

void file_wmap_resized(cs_dbfile *f, uint64_t old, uint64_t now)
{
    if (f->wmap_size != old || f->wmap_never) {
        f->wmap_size = 0; /* not known: the next commit allocates again */
        return;
    }
    f->wmap_size = now;
    if (now < f->wmap_ok) f->wmap_ok = now;
    else if (f->wmap_ok == old) f->wmap_ok = now; /* grown through io_allocate (commit.c, grow_to) */
}

void file_wmap_free(cs_dbfile *f)
{
    if (f->wmap) munmap(f->wmap, f->wmap_len);
    f->wmap = NULL;
    f->wmap_len = 0;
    f->wmap_armed = false;
}

int file_write_at(cs_dbfile *f, const void *buf, uint64_t n, uint64_t off)
{
    if (!f->wmap_armed || n > MAPWRITE_MAX_RUN || off > f->wmap_ok || n > f->wmap_ok - off || f->wmap_ok > f->wmap_len)
        return file_pwrite(f, buf, n, off);
    if (f->io->write_mapped(f->io->ctx, f->fd, f->wmap, buf, (size_t)n, (off_t)off) == 0) return CS_OK;
    return file_write_failed(f, errno);
}
