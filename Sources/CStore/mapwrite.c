/*
 * mapwrite.c -- a commit's in-place writes through a writable shared mapping of the database
 * file instead of one pwrite per run (docs/ARCHITECTURE.md, Writes through a mapping).
 *
 * Invariants:
 *  1. A store through the mapping lands only in [0, f->wmap_ok): bytes inside the file, whose
 *     blocks this process allocated through io->allocate, so a full disk is an error of the
 *     allocation (the commit then writes with pwrite) and never a SIGBUS at the store.
 *     wmap_ok is established under the writer lock, after the write transaction read the
 *     file's size (txn.c, cs_txn_promote): a size other than the one this process last
 *     allocated for (another process grew or cut the file, a copy of the file has holes, the
 *     first commit of this process) allocates the whole file again; this process's own growth
 *     (allocated by grow_to) and truncation carry it along (file_wmap_resized).
 *  2. The mapping is stored through only between file_wmap_prepare and file_wmap_done, by the
 *     commit that armed it (under write_mu and the writer lock): it is a mapping of its own,
 *     apart from the read-only ones readers use (file.c invariant 4), made by the first commit
 *     of a process that commits, and replaced (unmapped) freely since nothing else points
 *     into it.
 *  3. Only where a store into an allocated, written block never needs a new block: ext4
 *     (checked once per file with fstatfs). On copy-on-write file systems (btrfs, XFS with
 *     shared extents) and on tmpfs (whose allocation walks every page, see the architecture
 *     document) commits keep pwrite, as with an I/O layer without write_mapped.
 *  4. The bytes reach the disk like a pwrite's: they are the same pages of the page cache, and
 *     fdatasync writes every dirty page of the file, those dirtied through a mapping included
 *     (Linux marks a shared file page dirty at its first store after writeback).
 */
#include "file.h"
#include "io.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/vfs.h>

/* ext2, ext3 and ext4 (linux/magic.h, EXT4_SUPER_MAGIC) */
#define EXT4_MAGIC 0xEF53

/* Allocates [0, size) through the I/O layer, retrying on EINTR; 0 or -1. No error is
 * recorded: a failure only means pwrite for now. */
static int allocate_all(cs_dbfile *f, uint64_t size)
{
    int r;
    do
        r = f->io->allocate ? f->io->allocate(f->io->ctx, f->fd, 0, (off_t)size)
                            : io_default_allocate(NULL, f->fd, 0, (off_t)size);
    while (r != 0 && errno == EINTR);
    return r;
}

/* Maps at least `size` bytes writable, replacing a shorter mapping; false when it cannot. */
static bool map_writable(cs_dbfile *f, uint64_t size)
{
    if (f->wmap && f->wmap_len >= size) return true;
    uint64_t len = size * 4;
    if (len < (1ull << 30)) len = 1ull << 30;
    len = (len + (64ull << 20) - 1) & ~((64ull << 20) - 1);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
    if (p == MAP_FAILED) {
        len = (size + 4095) & ~4095ull;
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
        if (p == MAP_FAILED) return false;
    }
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
        /* the first commit of this process on the file: is it a file system it may map for? */
        struct statfs sf;
        if (fstatfs(f->fd, &sf) != 0 || sf.f_type != EXT4_MAGIC) {
            f->wmap_never = true;
            return;
        }
    }
    if (f->wmap_size != f->phys_size) {
        /* invariant 1: a size this process did not make; until it allocates, nothing is known */
        f->wmap_ok = 0;
        f->wmap_size = f->phys_size;
        if (allocate_all(f, f->phys_size) != 0) return; /* a full disk, say: pwrite until it changes */
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
    if (!f->wmap_armed || off > f->wmap_ok || n > f->wmap_ok - off || f->wmap_ok > f->wmap_len)
        return file_pwrite(f, buf, n, off);
    if (f->io->write_mapped(f->io->ctx, f->fd, f->wmap, buf, (size_t)n, (off_t)off) == 0) return CS_OK;
    int e = errno;
    if (e == ENOSPC || e == EDQUOT || e == EFBIG) return cs_fail(CS_FULL, e, "disk full while writing %s", f->path);
    return cs_fail(CS_IOERR, e, "write to %s failed: %s", f->path, strerror(e));
}
