/*
 * journal.c -- the commit journal `<file>.journal` (docs/FORMAT.md §13; docs/ARCHITECTURE.md,
 * Durability).
 *
 * A FULL commit of at most ONE_SYNC_MAX bytes appends one record to the journal (its runs, the
 * header write included, with their bytes), syncs the journal only, then writes the runs and
 * the header into the database file without syncing it. After a power cut the database file
 * holds the last checkpoint's bytes plus any subset of the later in-place writes; replaying
 * every valid record since the checkpoint, in order, rewrites every byte written since then
 * (last writer wins: replay builds that final image in memory and writes each byte once), and
 * every other byte the newest version reaches is the checkpoint's (copy-on-write never makes
 * freed space reachable again without rewriting it).
 *
 * Invariants:
 *  1. A record is valid only with the journal header's magic, generation and id, the version
 *     after the previous valid record's (the checkpoint's base + 1 for the first), a length
 *     inside the file and its check; replay stops at the first invalid one, so torn tails,
 *     zeros, records of an older generation and the leftovers of an overwritten record are
 *     never applied.
 *  2. A checkpoint syncs the database file before it writes the journal header that drops the
 *     records (a new generation), and happens before any write to the database file that the
 *     replay of an older record could clobber: a commit that is not journaled, a commit after
 *     unjournaled ones, compaction and restore (docs/FORMAT.md §13, Checkpoints).
 *  3. The shared end (lock file) moves past a record only when its commit publishes: a process
 *     killed mid-commit leaves a record that the next commit overwrites. A writer that finds
 *     a commit died after its header write (lock.c invariant 3) checkpoints before writing.
 *  4. Records are replayed only onto the database whose header carries the journal's id.
 *  5. A failed sync marks the file broken (file.c invariant 3).
 *  6. A FULL commit made without a record because the journal cannot be had (CS_PERM: an
 *     unwritable directory; CS_FULL: no room to create or grow it) happens only while no record
 *     is pending, so no replay can write over it, and it is flagged JS_UNJOURNALED like any
 *     commit without a record. A checkpoint claims the journal's space before it writes
 *     anything, and a growth that fails is cut back.
 */
#include "journal.h"
#include "file.h"
#include "lock.h"
#include "log.h"
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define JOURNAL_MAGIC "CSJRNL\r\n"
#define RECORD_MAGIC "CSJREC\r\n"
/* The journal header's layout (FORMAT.md §13, Layout): 2, whose records may hold patched runs,
 * is what this library writes; 1, records of bytes only (format version 7), is still replayed. */
#define JOURNAL_LAYOUT 2u
#define JOURNAL_LAYOUT_BYTES 1u
/* A run pair's length word with this bit: the run's data is patch operations (layout 2). */
#define JRUN_PATCH (1ull << 63)
/* A patch operation's word: (bytes << 1) | kind; a literal's bytes follow it, a copy's source
 * position follows it (one word). */
#define JOP_LIT 0u
#define JOP_COPY 1u
#define JREC_HDR 64u
/* A record's length is a multiple of this when that keeps it within JREC_MAX (FORMAT.md §13,
 * Layout: zeros after its data), so that records written back to back from 4096 each start and
 * end at a multiple of it: the sector size direct I/O needs (jwrite_record). */
#define JREC_ALIGN 512u
/* Records of at most this many bytes (a one-row commit's are about 4 KB) are built in a buffer
 * the file keeps (cs_dbfile.jrec_buf); longer ones in one of their own. */
#define JREC_KEEP (64u << 10)
/* The longest record replay accepts (FORMAT.md §13, Layout): a commit whose record would be
 * longer is made in place, never journaled (journal_before_commit), so that no acknowledged
 * commit is one replay stops at. */
#define JREC_MAX (JREC_HDR + 2 * (uint64_t)ONE_SYNC_MAX + HDR_USED + 8)
/* The runs of a record add up to at most this many bytes (FORMAT.md §13, Layout): a journaled
 * commit's, and its header. */
#define JREC_RAW_MAX ((uint64_t)ONE_SYNC_MAX + HDR_USED)
/* The journal's size is a multiple of this (FORMAT.md §13, Layout): the first checkpoint makes
 * it JOURNAL_GROW bytes, its header block and room for the records of the small commits most
 * sessions make, and a record that would end past its size grows it to the next multiple. */
#define JOURNAL_GROW (1ull << 20)
/* The most one growth for a record adds (jgrow): its zeros are written and synced inside a
 * commit. The growth ahead of need at a checkpoint (jgrow_ahead) is bound by JOURNAL_LIMIT
 * instead. */
#define JOURNAL_GROW_MAX (4ull << 20)
/* A growth's zeros go in pwrites of this many bytes (jgrow_to). The page cache takes a write's
 * length as the size of the folios it makes (Linux with large folios, ext4), and a 3.8 KB
 * record's pwrite and fdatasync into 1 MiB folios took 2-4 µs more than into 64 KiB ones
 * (docs/benchmarks/README.md, "Large folios and the commit's writes"). 64 KiB folios still hold
 * about 16 records each, so few records straddle two. */
#define JOURNAL_ZERO_PIECE (64ull << 10)

typedef struct jheader {
    char magic[8];    /* JOURNAL_MAGIC */
    uint32_t layout;  /* JOURNAL_LAYOUT */
    uint32_t zero;
    uint64_t gen;     /* generation: records carry it */
    uint64_t id;      /* the database's journal id */
    uint64_t base;    /* version the database file held durably when this header was written */
    uint64_t zero2[2];
    uint64_t check;   /* jcheck of the bytes before it */
} jheader;

typedef struct jrecord {
    char magic[8];    /* RECORD_MAGIC */
    uint64_t gen;     /* the journal header's generation */
    uint64_t version; /* the version the commit produces */
    uint64_t length;  /* bytes of the record, this header included, a multiple of 8 */
    uint32_t nruns;   /* (position, length) pairs after the header */
    uint32_t zero;
    uint64_t data;    /* bytes of the runs' data after the pairs */
    uint64_t zero2;
    uint64_t check;   /* record_check */
} jrecord;

_Static_assert(sizeof(jheader) == 64 && sizeof(jrecord) == JREC_HDR, "journal layout");

static uint64_t mix(uint64_t h, uint64_t w)
{
    h ^= w;
    h *= 0x100000001b3ull;
    return h ^ (h >> 31);
}

static uint64_t header_check(const jheader *h)
{
    uint64_t x = 0xcbf29ce484222325ull;
    const uint64_t w[5] = {h->layout, h->gen, h->id, h->base, 0x4a524e4cull};
    for (int i = 0; i < 5; i++) x = mix(x, w[i]);
    return x | 1;
}

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

#define CHECK_P1 0x9e3779b185ebca87ull
#define CHECK_P2 0xc2b2ae3d27d4eb4full

/* One round of a lane of record_check (xxHash64's round). */
static inline uint64_t lane_round(uint64_t v, uint64_t w) { return rotl(v + w * CHECK_P2, 31) * CHECK_P1; }

/* record_check's final mix of its two lanes and the record's length. */
static uint64_t check_end(uint64_t a, uint64_t b, uint64_t len)
{
    uint64_t h = rotl(a, 7) + rotl(b, 18) + len;
    h ^= h >> 33;
    h *= CHECK_P2;
    h ^= h >> 29;
    h *= 0x165667b19e3779f9ull;
    h ^= h >> 32;
    return h | 1;
}

/* The check of a record: a 64-bit hash of its bytes with the check word zero (len a multiple
 * of 8), seeded by the generation and the id. Two lanes of xxHash64's round (the rotation
 * carries every bit of a word into the low bits, so a flipped high bit cannot cancel out),
 * then its final mix. A commit computes the same check while it builds the record
 * (journal_record_build, journal_record_seal). */
static uint64_t record_check(const uint8_t *rec, uint64_t len, uint64_t gen, uint64_t id)
{
    uint64_t a = gen ^ CHECK_P1, b = id ^ CHECK_P2;
    uint64_t i = 0;
    for (; i + 16 <= len; i += 16) {
        uint64_t w0, w1;
        memcpy(&w0, rec + i, 8);
        memcpy(&w1, rec + i + 8, 8);
        a = lane_round(a, w0);
        b = lane_round(b, w1);
    }
    if (i + 8 <= len) {
        uint64_t w;
        memcpy(&w, rec + i, 8);
        a = lane_round(a, w);
    }
    return check_end(a, b, len);
}

char *journal_path(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + 9);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, ".journal", 9);
    }
    return p;
}

static journal_shared *shared(cs_dbfile *f) { return lock_journal(f); }

static int jfail_io(cs_dbfile *f, const char *what, int e)
{
    if (e == ENOSPC || e == EDQUOT || e == EFBIG)
        return cs_fail(CS_FULL, e, "disk full while %s the journal of %s", what, f->path);
    return cs_fail(CS_IOERR, e, "I/O error while %s the journal of %s: %s", what, f->path, strerror(e));
}

static int jwrite(cs_dbfile *f, const void *buf, uint64_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = f->io->pwrite(f->io->ctx, f->jfd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return jfail_io(f, "writing", errno);
        }
        if (w == 0) return jfail_io(f, "writing", EIO);
        p += w;
        n -= (uint64_t)w;
        off += (uint64_t)w;
    }
    return CS_OK;
}

static int jsync(cs_dbfile *f)
{
    if (f->io->fdatasync(f->io->ctx, f->jfd) != 0) {
        int e = errno;
        f->broken = true;
        return cs_fail(CS_IOERR, e, "sync of the journal of %s failed (%s); reopen the file to write again",
                       f->path, strerror(e));
    }
    return CS_OK;
}

/* A checkpoint's sync of the database file: whatever the durability, since the journal is
 * emptied after it. */
static int dbsync(cs_dbfile *f)
{
    if (f->io->fdatasync(f->io->ctx, f->fd) != 0) {
        int e = errno;
        f->broken = true;
        return cs_fail(CS_IOERR, e, "sync of %s failed (%s); reopen the file to write again", f->path, strerror(e));
    }
    return CS_OK;
}

/* CS_EXISTS for something at the journal's path that is not a regular file (a directory, a FIFO,
 * a socket, a device, or a symbolic link to one or to nothing): it is not a journal and never
 * becomes one, and nothing is read from, written into or created through it. */
static int not_regular(cs_dbfile *f, mode_t mode)
{
    const char *what = S_ISDIR(mode)    ? "a directory"
                       : S_ISFIFO(mode) ? "a FIFO"
                       : S_ISSOCK(mode) ? "a socket"
                       : S_ISCHR(mode)  ? "a character device"
                       : S_ISBLK(mode)  ? "a block device"
                       : S_ISLNK(mode)  ? "a symbolic link to a missing file, or a loop of links"
                                        : "not a file";
    return cs_fail(CS_EXISTS, EEXIST,
                   "%s.journal is not a regular file (%s); the commit journal needs that name: move it away "
                   "(it was left as it is)",
                   f->path, what);
}

/* Opens the journal (created with `create`). O_NONBLOCK: a FIFO at its path opens at once
 * (unopened, a reader would wait for a writer forever), and fstat then refuses whatever is not
 * a regular file (not_regular) before a byte of it is read. What lies at the path is looked at
 * through the I/O layer (io_stat_path). A missing journal is created with O_EXCL, which never
 * follows a symbolic link: a dangling one (to a file that does not exist) is refused, never
 * used to create a file wherever it points. */
static int jopen(cs_dbfile *f, bool create)
{
    if (f->jfd >= 0) return CS_OK;
    char *jp = journal_path(f->path);
    if (!jp) return NOMEM();
    /* a device is refused before it is opened (opening some has effects of its own); the fstat
     * below catches what replaces the file in between */
    struct stat st;
    int e = 0;
    if (io_stat_path(f->io, jp, &st, 0) == 0) {
        if (!S_ISREG(st.st_mode)) {
            free(jp);
            return not_regular(f, st.st_mode);
        }
    } else if ((e = errno) != ENOENT && e != ELOOP) { /* a loop: refused below, as a dangling link */
        free(jp);
        return cs_fail(e == EACCES || e == EPERM ? CS_PERM : CS_IOERR, e, "cannot look at the journal of %s: %s",
                       f->path, strerror(e));
    }
    int flags = (create ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, fd = -1;
    for (int tries = 0; tries < 4; tries++) {
        fd = f->io->open(f->io->ctx, jp, flags, 0644);
        e = errno;
        if (fd >= 0 || e != ENOENT || !create) break;
        fd = f->io->open(f->io->ctx, jp, flags | O_CREAT | O_EXCL, 0644);
        e = errno;
        if (fd >= 0 || e != EEXIST) break; /* EEXIST: made meanwhile, or a symbolic link */
    }
    if (fd < 0 && (e == ENOENT || e == EEXIST || e == ELOOP) &&
        io_stat_path(f->io, jp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
        free(jp);
        return not_regular(f, st.st_mode); /* its target is missing (the open followed it), or a loop */
    }
    if (fd < 0 && (e == EISDIR || e == ENXIO || e == ENODEV) && io_stat_path(f->io, jp, &st, 0) == 0 &&
        !S_ISREG(st.st_mode)) {
        free(jp);
        return not_regular(f, st.st_mode);
    }
    free(jp);
    if (fd < 0) {
        if (!create && e == ENOENT) return CS_NOTFOUND;
        if (e == ENOSPC || e == EDQUOT) return cs_fail(CS_FULL, e, "disk full while creating the journal of %s", f->path);
        return cs_fail(e == EACCES || e == EPERM || e == EROFS ? CS_PERM : CS_IOERR, e,
                       "cannot open the journal of %s: %s", f->path, strerror(e));
    }
    if (f->io->fstat(f->io->ctx, fd, &st) != 0) {
        e = errno;
        f->io->close(f->io->ctx, fd);
        return cs_fail(CS_IOERR, e, "cannot stat the journal of %s", f->path);
    }
    if (!S_ISREG(st.st_mode)) {
        f->io->close(f->io->ctx, fd);
        return not_regular(f, st.st_mode);
    }
    /* a regular file: O_NONBLOCK off again (a FUSE or network file system may honour it); a
     * replacement I/O layer's descriptors are its own, and its open decides */
    if (f->io == cs_io_default()) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    }
    f->jfd = fd;
    f->jsize = (uint64_t)st.st_size;
    return CS_OK;
}

void journal_close(cs_dbfile *f)
{
    if (f->jfd >= 0) f->io->close(f->io->ctx, f->jfd);
    f->jfd = -1;
    if (f->jdfd >= 0) close(f->jdfd);
    f->jdfd = -1;
    free(f->jrec_buf);
    f->jrec_buf = NULL;
}

/* Whether direct I/O on `fd` takes records as this library writes them (JREC_ALIGN): the file
 * system's direct-I/O alignments (statx STATX_DIOALIGN, Linux 6.1) must be known, the file
 * offset alignment must divide JREC_ALIGN and the memory alignment must be at most it. The two
 * fields are read from the kernel's struct statx at their fixed offsets (0x98, 0x9c), since
 * glibc before 2.37 does not name them; a kernel or file system that does not report them gets
 * no direct I/O. */
static bool dio_fits(int fd)
{
    uint32_t sx[64];
    memset(sx, 0, sizeof sx);
    if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH, 0x2000u /* STATX_DIOALIGN */, sx) != 0) return false;
    uint32_t mem = sx[0x98 / 4], off = sx[0x9c / 4];
    return (sx[0] & 0x2000u) && off && mem && JREC_ALIGN % off == 0 && mem <= JREC_ALIGN;
}

/* Test hooks (cstore.h, cs_test_set_journal_direct_fault, cs_test_journal_direct_writes): a
 * fault the calling thread's direct record writes meet, and the records the thread wrote by
 * direct I/O and through the page cache with the default I/O layer (jwrite_record). */
static _Thread_local int dio_fault;
static _Thread_local uint64_t dio_writes, dio_buffered;

void cs_test_set_journal_direct_fault(int mode) { dio_fault = mode; }

void cs_test_journal_direct_writes(uint64_t *direct, uint64_t *buffered)
{
    *direct = dio_writes;
    *buffered = dio_buffered;
}

bool cs_test_journal_takes_direct(const char *file)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = dio_fits(fd);
    close(fd);
    return ok;
}

/* The journal opened again with O_DIRECT (jwrite_record), else -2: through /proc/self/fd, which
 * names the very file jfd is (no path is looked up again), or, without /proc, by its path,
 * taken only when it is the same file as jfd (device and inode); and only when dio_fits.
 * O_NONBLOCK is off, as on jfd (jopen). */
static void jopen_direct(cs_dbfile *f)
{
    f->jdfd = -2;
    if (dio_fault == 1 || !dio_fits(f->jfd)) return;
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", f->jfd);
    int fd = open(self, O_RDWR | O_DIRECT | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 && errno == ENOENT) {
        char *jp = journal_path(f->path);
        if (!jp) return;
        fd = open(jp, O_RDWR | O_DIRECT | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        free(jp);
    }
    if (fd < 0) return;
    struct stat a, b;
    if (fstat(fd, &a) == 0 && fstat(f->jfd, &b) == 0 && S_ISREG(a.st_mode) && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0 && (fl & O_NONBLOCK)) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
        f->jdfd = fd;
    } else {
        close(fd);
    }
}

/* One direct write, or the fault a test armed (dio_fault): 2 EINVAL, 3 a write 512 bytes
 * short, 4 EIO, 5 EAGAIN. */
static ssize_t dio_pwrite(int fd, const uint8_t *rec, uint64_t len, uint64_t at)
{
    switch (dio_fault) {
    case 2: errno = EINVAL; return -1;
    case 3: return pwrite(fd, rec, len - JREC_ALIGN, (off_t)at);
    case 4: errno = EIO; return -1;
    case 5: errno = EAGAIN; return -1;
    default: return pwrite(fd, rec, len, (off_t)at);
    }
}

/* Writes a record (FORMAT.md §13, Layout) at `at`. With the default I/O layer, a record whose
 * offset, length and buffer are multiples of JREC_ALIGN goes by direct I/O (O_DIRECT, on a
 * second descriptor of the journal, jopen_direct) where the file system takes it (dio_fits):
 * the write goes to the device without the page cache's write-back (docs/ARCHITECTURE.md,
 * "Records by direct I/O"; measured in docs/benchmarks/README.md, "The journal's size ahead of
 * need, and records by direct I/O"). The sync is jsync's as before. A direct write refused as
 * direct I/O (EINVAL, EOPNOTSUPP, EAGAIN) sends this and every later record of the process's
 * use of the journal through the page cache; one that came back short is written again whole
 * through the page cache (the same bytes at the same place); another error fails the write as
 * jwrite's would. */
static int jwrite_record(cs_dbfile *f, const uint8_t *rec, uint64_t len, uint64_t at)
{
    if (f->io == cs_io_default() && f->jdfd != -2 && !((at | len | (uintptr_t)rec) & (JREC_ALIGN - 1))) {
        if (f->jdfd == -1) jopen_direct(f);
        while (f->jdfd >= 0) {
            ssize_t w = dio_pwrite(f->jdfd, rec, len, at);
            if (w == (ssize_t)len) {
                dio_writes++;
                return CS_OK;
            }
            if (w < 0 && errno == EINTR) continue;
            if (w < 0 && errno != EINVAL && errno != EOPNOTSUPP && errno != EAGAIN) return jfail_io(f, "writing", errno);
            if (w < 0) {
                close(f->jdfd);
                f->jdfd = -2;
            }
            break;
        }
    }
    if (f->io == cs_io_default()) dio_buffered++;
    return jwrite(f, rec, len, at);
}

/* The journal id in the database header (docs/FORMAT.md §2, bytes 144-159): 0 when absent or
 * its check fails. */
static uint64_t db_id(cs_dbfile *f)
{
    uint64_t w[2];
    if (f->io->pread(f->io->ctx, f->fd, w, 16, HDR_ID_OFF) != 16) return 0;
    return w[0] && w[1] == file_id_check(w[0]) ? w[0] : 0;
}

static uint64_t fresh_value(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    x ^= (uint64_t)getpid() << 32;
    x ^= (uintptr_t)&ts;
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x ? x : 1;
}

/* A read of the journal that failed, or came back short inside the journal's size: the journal
 * cannot be told apart from one without records, so whoever read it must not go on as if it
 * were empty (a replay left undone loses acknowledged commits). */
static int jfail_read(cs_dbfile *f, ssize_t got)
{
    int e = got < 0 ? errno : EIO;
    return cs_fail(CS_IOERR, e, "cannot read the journal of %s: %s", f->path,
                   got < 0 ? strerror(e) : "it ended early");
}

/* Reads the journal header into *h; *valid false when the journal is shorter than a header or
 * the header is not a valid one. CS_IOERR when it cannot be read. */
static int read_jheader(cs_dbfile *f, jheader *h, bool *valid)
{
    *valid = false;
    if (f->jsize < sizeof *h) return CS_OK;
    ssize_t got = f->io->pread(f->io->ctx, f->jfd, h, sizeof *h, 0);
    if (got != (ssize_t)sizeof *h) return jfail_read(f, got);
    *valid = memcmp(h->magic, JOURNAL_MAGIC, 8) == 0 &&
             (h->layout == JOURNAL_LAYOUT || h->layout == JOURNAL_LAYOUT_BYTES) && h->check == header_check(h);
    return CS_OK;
}

/* Grows the journal to `to` bytes (a multiple of JOURNAL_GROW past its size): its blocks are
 * allocated first (io_allocate), then written with zeros, JOURNAL_ZERO_PIECE bytes a pwrite
 * (an allocation alone leaves unwritten extents, whose first write costs a metadata update at
 * the sync of each record written into them); the caller syncs. The allocation is how a full
 * disk is seen: it refuses at once, before a byte is written, so a commit that falls back to an
 * in-place one for space
 * (journal_before_commit) writes nothing into the journal however often it tries, and the
 * first commit after space came back grows it again. A growth that fails (a file system may
 * allocate what it has, then refuse) is cut back, so the space goes back to the database
 * file's own commits. */
static int jgrow_to(cs_dbfile *f, uint64_t to)
{
    char *jp = journal_path(f->path);
    if (!jp) return NOMEM();
    int rc = io_allocate(f->io, jp, f->jfd, f->jsize, to - f->jsize);
    free(jp);
    /* an I/O layer that cannot allocate (cstore.h, cs_io.allocate): the zeros alone, as before */
    if (rc == CS_IOERR && (cs_errno() == EOPNOTSUPP || cs_errno() == ENOSYS)) rc = CS_OK;
    if (rc != CS_OK) {
        f->io->ftruncate(f->io->ctx, f->jfd, (off_t)f->jsize);
        return rc;
    }
    /* the zeros in pieces of JOURNAL_ZERO_PIECE: one pwrite per piece, so that the page cache
     * holds the journal in folios of that size rather than of the growth's (up to 4 MiB) */
    uint64_t piece = to - f->jsize < JOURNAL_ZERO_PIECE ? to - f->jsize : JOURNAL_ZERO_PIECE;
    uint8_t *zeros = calloc(1, piece);
    if (!zeros) {
        f->io->ftruncate(f->io->ctx, f->jfd, (off_t)f->jsize);
        return NOMEM();
    }
    for (uint64_t at = f->jsize; rc == CS_OK && at < to; at += piece)
        rc = jwrite(f, zeros, to - at < piece ? to - at : piece, at);
    free(zeros);
    if (rc == CS_OK) f->jsize = to;
    else f->io->ftruncate(f->io->ctx, f->jfd, (off_t)f->jsize);
    return rc;
}

/* Makes the journal at least `size` bytes long: to the next multiple of JOURNAL_GROW, or, once it
 * has its first JOURNAL_GROW, to twice its size when that is more, by at most JOURNAL_GROW_MAX
 * at once and to at most JOURNAL_LIMIT (the size past which records start again from the
 * front), so a journal that fills to its limit grows in five syncs rather than fifteen, none
 * writing more than 4 MiB of zeros inside one commit (docs/benchmarks/README.md, Patched
 * journal records). On a disk too full for that, only what `size` needs. */
static int jgrow(cs_dbfile *f, uint64_t size)
{
    if (size <= f->jsize) return CS_OK;
    struct stat st;
    if (f->io->fstat(f->io->ctx, f->jfd, &st) == 0 && (uint64_t)st.st_size > f->jsize) f->jsize = (uint64_t)st.st_size;
    if (size <= f->jsize) return CS_OK;
    uint64_t need = (size + JOURNAL_GROW - 1) & ~(JOURNAL_GROW - 1), to = need;
    if (f->jsize >= JOURNAL_GROW) {
        uint64_t twice = f->jsize * 2 < f->jsize + JOURNAL_GROW_MAX ? f->jsize * 2 : f->jsize + JOURNAL_GROW_MAX;
        if (twice > JOURNAL_LIMIT) twice = JOURNAL_LIMIT;
        twice = (twice + JOURNAL_GROW - 1) & ~(JOURNAL_GROW - 1);
        if (twice > to) to = twice;
    }
    int rc = jgrow_to(f, to);
    if (rc == CS_FULL && to > need) rc = jgrow_to(f, need);
    return rc;
}

/* The size a checkpoint before a journaled commit gives the journal ahead of need (FORMAT.md
 * §13, Layout): the database's logical size (FORMAT.md §1, the newest version's) rounded up to
 * JOURNAL_GROW, at most JOURNAL_LIMIT, so the records of a session on a database of 16 MiB or
 * more never grow it inside a commit, and a journal takes at most 1 MiB more than its
 * database (or the 1 MiB every journal has) before records need more (docs/benchmarks/README.md,
 * "The journal's size ahead of need, and records by direct I/O"). The logical size, not the file's: the file's preallocated
 * tail (commit.c, grow_to) holds no data a commit rewrites. */
static uint64_t jahead_size(const cs_dbfile *f)
{
    uint64_t want = f->logical < JOURNAL_LIMIT ? f->logical : JOURNAL_LIMIT;
    return (want + JOURNAL_GROW - 1) & ~(JOURNAL_GROW - 1);
}

/* Grows the journal to jahead_size, when it is shorter, at a checkpoint that a journaled commit
 * asked for: its zeros are synced with the checkpoint's journal header (reset), not alone. A
 * disk too full for it leaves the journal as it was (jgrow_to cut it back): the growth is
 * ahead of need, and the records grow the journal as before when they need it. */
static int jgrow_ahead(cs_dbfile *f)
{
    uint64_t want = jahead_size(f);
    if (want <= f->jsize) return CS_OK;
    struct stat st;
    if (f->io->fstat(f->io->ctx, f->jfd, &st) == 0 && (uint64_t)st.st_size > f->jsize) f->jsize = (uint64_t)st.st_size;
    if (want <= f->jsize) return CS_OK;
    /* best-effort: a failure (a full disk, an I/O error, no memory for the zeros) was cut back
     * by jgrow_to and fails nothing, unless it marked the file broken */
    int rc = jgrow_to(f, want);
    return rc == CS_OK || f->broken ? rc : CS_OK;
}

/* ---- replay ------------------------------------------------------------------------------ */

/* Replay (docs/FORMAT.md §13, Recovery; docs/ARCHITECTURE.md, The commit journal) builds the
 * final content of every byte the generation's records write, in memory, then writes each such
 * byte of the database file once: the last record that wrote it gives its bytes. Written one
 * record after another, an early record would put back, for a moment, bytes a later commit of
 * the generation reused (space freed and allocated again), and a reader of the newest version
 * (the checkpoint after a lost header write runs while other processes read) would see an old
 * node there. A patched run is rebuilt from the image (its copies read the bytes the records
 * before it wrote), never from the file, so what the disk holds does not matter and a replay
 * cut short by a crash is done again the same way.
 *
 * The image is kept in pages of IMG_PAGE bytes with a bit per byte written, found through a
 * hash table of the pages touched: its memory is proportional to what the records wrote (the
 * distinct pages), not to the highest offset. A generation of small commits cycles through few
 * pages (measured in docs/benchmarks/README.md, Replay of a generation), but nothing bounds the
 * distinct pages a generation touches (small nodes placed in holes all over a large fragmented
 * file), so the image holds at most IMG_MAX bytes of pages: a generation that would need more is
 * replayed record by record instead (`direct`), as before the image: each record's runs written
 * in turn, a patched run's copies read back from the file, and only the map of written bytes
 * kept (IMG_MAP_BYTES a page). That gives the same file; at open the replay is alone, and only
 * the checkpoint after a lost header write, with readers, loses the write-once property for
 * such a generation (docs/ARCHITECTURE.md, "Replay writes each byte once"). */
#define IMG_SHIFT 12
#define IMG_PAGE (1u << IMG_SHIFT)
#define IMG_MAX (64ull << 20)
typedef struct img_page {
    uint64_t index;                     /* position >> IMG_SHIFT */
    uint64_t written[IMG_PAGE / 64];    /* a bit per byte of data */
    uint8_t data[IMG_PAGE];             /* not allocated in a direct replay */
} img_page;
#define IMG_MAP_BYTES offsetof(img_page, data)

typedef struct replay_image {
    img_page **table; /* open addressing by index, cap a power of 2, at most half full */
    uint64_t cap, n;
    uint64_t bound;   /* no byte at or past it is written (walk: the file's size + the runs');
                       * `collect`: the first byte whose pages are collected */
    uint64_t spill;   /* direct: from this page index on, bytes are kept in memory, not written */
    uint64_t nspill;  /* pages holding such bytes */
    const struct replay_image *need; /* direct: the pages past spill a later copy reads (only
                                      * those keep their bytes and map; `collect` made it) */
    bool collect;     /* walk: collect_copies, the pages of copy sources from `bound` on */
    uint64_t fsize;   /* inplace: the file's size when the replay began */
    bool direct;      /* record by record into the file: pages hold the map only */
    bool full;        /* the image reached IMG_MAX (replay then goes direct) */
    bool inplace;     /* direct, the file's own bytes written back (replay, `live`) */
    bool have_hdr;    /* inplace: hdr holds the last record's header run */
    uint8_t hdr[HDR_USED];
} replay_image;

/* The calling thread's bound in place of IMG_MAX (cs_test_set_replay_image_max; 0: IMG_MAX). */
static _Thread_local uint64_t img_max;

void cs_test_set_replay_image_max(uint64_t bytes) { img_max = bytes; }

/* The pages and bytes of the last image this thread freed, for the tests. */
static _Thread_local uint64_t last_img_pages, last_img_bytes;

void cs_test_replay_image(uint64_t *pages, uint64_t *bytes)
{
    *pages = last_img_pages;
    *bytes = last_img_bytes;
}

static void img_free(replay_image *m)
{
    last_img_pages = m->n;
    last_img_bytes = m->n * (m->direct ? IMG_MAP_BYTES : sizeof(img_page)) + m->cap * sizeof *m->table +
                     m->nspill * (sizeof(img_page) - IMG_MAP_BYTES);
    for (uint64_t i = 0; i < m->cap; i++) free(m->table[i]);
    free(m->table);
    m->table = NULL;
    m->cap = m->n = m->nspill = 0;
}

static inline uint64_t img_slot(const replay_image *m, uint64_t index)
{
    return (index * 0x9e3779b97f4a7c15ull >> 17) & (m->cap - 1);
}

static img_page *img_find(const replay_image *m, uint64_t index)
{
    if (!m->cap) return NULL;
    for (uint64_t i = img_slot(m, index);; i = (i + 1) & (m->cap - 1)) {
        img_page *p = m->table[i];
        if (!p || p->index == index) return p;
    }
}

/* The page of `index` in *out, made (zeros, nothing written) when missing. */
static int img_get(cs_dbfile *f, replay_image *m, uint64_t index, img_page **out)
{
    img_page *p = img_find(m, index);
    if ((*out = p)) return CS_OK;
    bool data = !m->direct || index >= m->spill; /* direct_put asks only for needed ones there */
    if (!m->direct && (m->n + 1) * sizeof(img_page) > (img_max ? img_max : IMG_MAX)) {
        m->full = true; /* replay() starts again, direct */
        return cs_fail(CS_NOMEM, ENOMEM, "the replay image of %s is full", f->path);
    }
    /* the pages a collecting walk finds (each to hold its bytes in the direct replay after it):
     * as many as the image, whatever bound the tests set for it; a journal this library wrote
     * copies only free-list nodes (docs/FORMAT.md §13, Layout), a few pages */
    if (m->collect && (m->n + 1) * sizeof(img_page) > IMG_MAX)
        return cs_fail(CS_CORRUPT, 0,
                       "the journal %s.journal is damaged: its records copy bytes from more than %llu distinct "
                       "4 KiB pages from byte %llu on (the page of the file's size plus the length of every run of "
                       "its records), "
                       "where no commit writes (written by a faulty library, or forged); the replay stops before it "
                       "writes anything: move the journal away to open the file without it",
                       f->path, (unsigned long long)(IMG_MAX / sizeof(img_page)), (unsigned long long)m->bound);
    if (2 * (m->n + 1) > m->cap) {
        uint64_t nc = m->cap ? 2 * m->cap : 64;
        img_page **nt = calloc(nc, sizeof *nt);
        if (!nt) return NOMEM();
        replay_image grown = *m;
        grown.table = nt;
        grown.cap = nc;
        for (uint64_t i = 0; i < m->cap; i++) {
            if (!m->table[i]) continue;
            uint64_t j = img_slot(&grown, m->table[i]->index);
            while (nt[j]) j = (j + 1) & (nc - 1);
            nt[j] = m->table[i];
        }
        free(m->table);
        *m = grown;
    }
    if (!(p = calloc(1, data ? sizeof *p : IMG_MAP_BYTES))) return NOMEM();
    p->index = index;
    if (m->direct && data) m->nspill++;
    uint64_t j = img_slot(m, index);
    while (m->table[j]) j = (j + 1) & (m->cap - 1);
    m->table[j] = p;
    m->n++;
    *out = p;
    return CS_OK;
}

/* Sets (or, with `test`, checks) bits [at, at + n) of a page's map; the check says whether all
 * are set. */
static bool bits_range(uint64_t *w, uint64_t at, uint64_t n, bool test)
{
    while (n) {
        uint64_t b = at & 63, k = 64 - b < n ? 64 - b : n;
        uint64_t mask = (k == 64 ? ~0ull : ((1ull << k) - 1)) << b;
        if (test) {
            if ((w[at >> 6] & mask) != mask) return false;
        } else {
            w[at >> 6] |= mask;
        }
        at += k;
        n -= k;
    }
    return true;
}

/* Puts [pos, pos + n) into the image. */
static int img_put(cs_dbfile *f, replay_image *m, uint64_t pos, const uint8_t *src, uint64_t n)
{
    while (n) {
        uint64_t at = pos & (IMG_PAGE - 1), k = IMG_PAGE - at < n ? IMG_PAGE - at : n;
        img_page *p;
        TRY(img_get(f, m, pos >> IMG_SHIFT, &p));
        memcpy(p->data + at, src, k);
        bits_range(p->written, at, k, false);
        pos += k;
        src += k;
        n -= k;
    }
    return CS_OK;
}

/* Reads [pos, pos + n) from the image into out; false when a byte of it was not written. */
static bool img_read(const replay_image *m, uint64_t pos, uint8_t *out, uint64_t n)
{
    while (n) {
        uint64_t at = pos & (IMG_PAGE - 1), k = IMG_PAGE - at < n ? IMG_PAGE - at : n;
        const img_page *p = img_find(m, pos >> IMG_SHIFT);
        if (!p || !bits_range((uint64_t *)p->written, at, k, true)) return false;
        memcpy(out, p->data + at, k);
        pos += k;
        out += k;
        n -= k;
    }
    return true;
}

/* Marks [pos, pos + n) written (a direct replay's map). */
/* Whether a direct replay keeps page `index`: below the spill, its map (the bytes are in the
 * file); from there on, only a page a later copy reads (m->need), bytes and map. */
static bool img_keeps(const replay_image *m, uint64_t index)
{
    return index < m->spill || (m->need && img_find(m->need, index));
}

static int img_mark(cs_dbfile *f, replay_image *m, uint64_t pos, uint64_t n)
{
    while (n) {
        uint64_t at = pos & (IMG_PAGE - 1), k = IMG_PAGE - at < n ? IMG_PAGE - at : n;
        img_page *p;
        if (!img_keeps(m, pos >> IMG_SHIFT)) {
            pos += k;
            n -= k;
            continue;
        }
        TRY(img_get(f, m, pos >> IMG_SHIFT, &p));
        bits_range(p->written, at, k, false);
        pos += k;
        n -= k;
    }
    return CS_OK;
}

/* Whether every byte of [pos, pos + n) was marked written. */
static bool img_covered(const replay_image *m, uint64_t pos, uint64_t n)
{
    while (n) {
        uint64_t at = pos & (IMG_PAGE - 1), k = IMG_PAGE - at < n ? IMG_PAGE - at : n;
        const img_page *p = img_find(m, pos >> IMG_SHIFT);
        if (!p || !bits_range((uint64_t *)p->written, at, k, true)) return false;
        pos += k;
        n -= k;
    }
    return true;
}

/* The length of the patch operations of a run of `raw` bytes at p (at most `avail` bytes of
 * the record's data), or UINT64_MAX when they are malformed: every operation's length a nonzero
 * multiple of 8, a copy's source a multiple of 8 that does not wrap, the operations adding up to
 * the run exactly. */
static uint64_t patch_len(const uint8_t *p, uint64_t avail, uint64_t raw)
{
    uint64_t at = 0, out = 0;
    while (out < raw) {
        uint64_t w, src;
        if (avail - at < 8) return UINT64_MAX;
        memcpy(&w, p + at, 8);
        at += 8;
        uint64_t n = w >> 1;
        if (!n || (n & 7) || n > raw - out) return UINT64_MAX;
        if ((w & 1) == JOP_LIT) {
            if (avail - at < n) return UINT64_MAX;
            at += n;
        } else {
            if (avail - at < 8) return UINT64_MAX;
            memcpy(&src, p + at, 8);
            at += 8;
            if ((src & 7) || src > UINT64_MAX - n) return UINT64_MAX;
        }
        out += n;
    }
    return at;
}

/* The valid records from JOURNAL_HDR on, up to version `upto` at most; with `img`, each is put
 * into it (apply_record). Returns their number, or -error. `*bound` gets the replay's bound
 * (docs/FORMAT.md §13, Recovery): the database file's size plus the lengths of every run of the
 * records. No commit's version reaches past it: a commit's runs lie below its version's logical
 * size, which grows by at most the bytes it places past the end (commit.c, place), and the file
 * holds at least the logical size of the version of some moment since the checkpoint (the
 * checkpoint synced it; online shrinking cuts no byte either header slot names). The newest
 * record's runs must lie below it (CS_CORRUPT otherwise, a forged or damaged journal); an
 * earlier record's may not (a tail online shrinking cut after they were written), and the
 * replay writes none of those bytes (img_write, direct_put). */
static int apply_record(cs_dbfile *f, const uint8_t *rec, const jrecord *r, replay_image *img, uint8_t **scratch);
static int collect_copies(cs_dbfile *f, const uint8_t *rec, const jrecord *r, replay_image *need);

static int64_t walk(cs_dbfile *f, const jheader *h, replay_image *img, uint64_t upto, uint64_t *last_version,
                    uint64_t *end, uint64_t *bound)
{
    uint64_t off = JOURNAL_HDR, expect = h->base + 1;
    int64_t n = 0;
    uint8_t *buf = NULL, *scratch = NULL;
    size_t cap = 0;
    int rc = CS_OK;
    uint64_t size, reach = 0; /* reach: where the last record's runs end */
    *last_version = h->base;
    if (f->fd < 0) size = UINT64_MAX; /* journal_peek: no database file, no bound */
    else if (io_file_size(f->io, f->fd, &size, NULL) != 0)
        return -cs_fail(CS_IOERR, errno, "cannot stat %s to replay its journal: %s", f->path, strerror(errno));
    *bound = size > HDR_SIZE ? size : HDR_SIZE;
    for (;;) {
        jrecord r;
        if (off + JREC_HDR > f->jsize) break;
        ssize_t got = f->io->pread(f->io->ctx, f->jfd, &r, JREC_HDR, (off_t)off);
        if (got != (ssize_t)JREC_HDR) {
            rc = jfail_read(f, got);
            break;
        }
        if (memcmp(r.magic, RECORD_MAGIC, 8) != 0 || r.gen != h->gen || r.version != expect || r.version > upto) break;
        if (r.length < JREC_HDR || (r.length & 7) || r.length > f->jsize - off ||
            r.length > JREC_MAX ||
            (uint64_t)r.nruns * 16 > r.length - JREC_HDR || r.data > r.length - JREC_HDR - (uint64_t)r.nruns * 16)
            break;
        if (r.length > cap) {
            uint8_t *nb = realloc(buf, r.length);
            if (!nb) {
                rc = NOMEM();
                break;
            }
            buf = nb;
            cap = r.length;
        }
        got = f->io->pread(f->io->ctx, f->jfd, buf, r.length, (off_t)off);
        if (got != (ssize_t)r.length) {
            rc = jfail_read(f, got);
            break;
        }
        uint64_t check = r.check;
        memset(buf + 56, 0, 8);
        if (record_check(buf, r.length, h->gen, h->id) != check) break;
        /* the runs must add up to the data: a run of bytes by its length, a patched one (layout
         * 2 only) by its operations */
        const uint64_t *pairs = (const uint64_t *)(buf + JREC_HDR);
        const uint8_t *data = buf + JREC_HDR + (uint64_t)r.nruns * 16;
        uint64_t sum = 0, raw = 0, runs_end = 0;
        bool ok = true;
        for (uint32_t i = 0; i < r.nruns && ok; i++) {
            uint64_t len = pairs[2 * i + 1], used = len, rl = len & ~JRUN_PATCH;
            /* the runs' bytes are a commit's (at most ONE_SYNC_MAX) and its header: a patched
             * run, whose operations may describe more bytes than the record holds, no more */
            if (rl > JREC_RAW_MAX - raw || pairs[2 * i] > UINT64_MAX - rl) {
                ok = false;
                break;
            }
            raw += rl;
            if (pairs[2 * i] + rl > runs_end) runs_end = pairs[2 * i] + rl;
            if (len & JRUN_PATCH) {
                if (h->layout != JOURNAL_LAYOUT) ok = false;
                else used = patch_len(data + sum, r.data - sum, rl);
            }
            if (!ok || used > r.data - sum) ok = false;
            else sum += used;
        }
        if (!ok || sum != r.data) break;
        if (img && (rc = img->collect ? collect_copies(f, buf, &r, img) : apply_record(f, buf, &r, img, &scratch)) !=
                       CS_OK)
            break;
        *bound = *bound > UINT64_MAX - raw ? UINT64_MAX : *bound + raw;
        reach = runs_end;
        n++;
        *last_version = r.version;
        expect++;
        off += r.length;
    }
    free(buf);
    free(scratch);
    if (rc == CS_OK && reach > *bound)
        rc = cs_fail(CS_CORRUPT, 0,
                     "the journal %s.journal is damaged: the record of version %llu writes up to byte %llu, past byte "
                     "%llu (the file's size plus the length of every run of its records), where no commit writes "
                     "(written by a faulty library, or forged); the replay stops before it writes anything: move "
                     "the journal away to open the file without it",
                     f->path, (unsigned long long)*last_version, (unsigned long long)reach, (unsigned long long)*bound);
    if (rc != CS_OK) return -rc;
    *end = off;
    return n;
}

/* The calling thread's replay hook (cs_test_set_replay_hook). */
static _Thread_local void (*replay_hook)(void *);
static _Thread_local void *replay_hook_ctx;

void cs_test_set_replay_hook(void (*fn)(void *ctx), void *ctx)
{
    replay_hook = fn;
    replay_hook_ctx = ctx;
}

/* Adds bytes to a run hash (file_run_hash of the runs' bytes in order): whole words as they
 * come, a word split between two runs through `part`. */
typedef struct runs_hash {
    run_hash h;
    uint8_t part[8];
    uint64_t nparts;
} runs_hash;

static void runs_hash_add(runs_hash *x, const uint8_t *p, uint64_t n)
{
    while (n && x->nparts) {
        x->part[x->nparts++] = *p++;
        n--;
        if (x->nparts == 8) {
            uint64_t w;
            memcpy(&w, x->part, 8);
            run_hash_word(&x->h, w);
            x->nparts = 0;
        }
    }
    run_hash_words(&x->h, p, n & ~7ull);
    p += n & ~7ull;
    n &= 7;
    while (n--) x->part[x->nparts++] = *p++;
}

static int replay_write(cs_dbfile *f, const void *buf, uint64_t len, uint64_t pos);

/* A run of a replay record by record: its bytes below the bound go into the file, and those in
 * the pages from the one that holds the bound on that a later record's copy reads (m->need) are
 * kept in memory (img_put), where the copy finds them; an earlier record's bytes past the bound
 * are not written (walk), and the others are dropped. */
static int direct_put(cs_dbfile *f, replay_image *m, const uint8_t *bytes, uint64_t len, uint64_t pos)
{
    uint64_t cut = m->spill << IMG_SHIFT; /* m->spill = m->bound >> IMG_SHIFT: no overflow */
    if (pos < m->bound) TRY(replay_write(f, bytes, m->bound - pos < len ? m->bound - pos : len, pos));
    uint64_t at = pos < cut ? cut : pos, end = pos + len;
    while (at < end) {
        uint64_t k = IMG_PAGE - (at & (IMG_PAGE - 1)) < end - at ? IMG_PAGE - (at & (IMG_PAGE - 1)) : end - at;
        if (img_keeps(m, at >> IMG_SHIFT)) TRY(img_put(f, m, at, bytes + (at - pos), k));
        at += k;
    }
    return CS_OK;
}

/* One operation of a patched run whose record walk() checked (docs/FORMAT.md §13, Layout):
 * its length, and a copy's source position or a literal's bytes. */
typedef struct {
    uint64_t n;
    bool copy;
    uint64_t src;        /* a copy's position in the database file */
    const uint8_t *lit;  /* a literal's n bytes */
} patch_op;

/* Reads the operation at `data` into *op; returns where the next one starts. */
static inline const uint8_t *patch_next(const uint8_t *data, patch_op *op)
{
    uint64_t w;
    memcpy(&w, data, 8);
    data += 8;
    op->n = w >> 1;
    op->copy = (w & 1) == JOP_COPY;
    op->src = 0;
    op->lit = NULL;
    if (op->copy) {
        memcpy(&op->src, data, 8);
        return data + 8;
    }
    op->lit = data;
    return data + op->n;
}

/* A collecting walk (replay(), before a replay record by record): marks in `need` the pages at or
 * past need->bound that a record's copies read, so that the replay keeps their bytes in memory
 * (direct_put) and no others. The record's operations were checked (walk, patch_len). */
static int collect_copies(cs_dbfile *f, const uint8_t *rec, const jrecord *r, replay_image *need)
{
    const uint64_t *pairs = (const uint64_t *)(rec + JREC_HDR);
    const uint8_t *data = rec + JREC_HDR + (uint64_t)r->nruns * 16;
    patch_op op;
    for (uint32_t i = 0; i < r->nruns; i++) {
        uint64_t len = pairs[2 * i + 1];
        if (!(len & JRUN_PATCH)) {
            data += len;
            continue;
        }
        len &= ~JRUN_PATCH;
        for (uint64_t at = 0; at < len; at += op.n) {
            data = patch_next(data, &op);
            if (op.copy && op.src + op.n > need->bound) {
                uint64_t from = op.src > need->bound ? op.src : need->bound;
                TRY(img_mark(f, need, from, op.src + op.n - from));
            }
        }
    }
    return CS_OK;
}

/* Puts a record's runs into the image, in their order (the last writer winning, as within a
 * commit). A patched run is rebuilt first, its copies read from the image as the records
 * before this one left it (the record's own runs go in once all are rebuilt): a copy of bytes
 * no earlier record wrote is damage (CS_CORRUPT), since a writer patches only against nodes
 * its generation's records wrote. When the record's last run is a header (position 0,
 * HDR_USED bytes) whose selected slot describes a one-sync commit, the runs before it, as
 * rebuilt, must be its length and hash (docs/FORMAT.md §2, slot bytes 40-55): a record whose
 * patches rebuild other bytes than its commit wrote is refused (CS_CORRUPT) before anything of
 * the replay is written. `*scratch` is the caller's buffer for the rebuilt runs (at most
 * JREC_RAW_MAX bytes, walk's bound). */
static int apply_record(cs_dbfile *f, const uint8_t *rec, const jrecord *r, replay_image *img, uint8_t **scratch)
{
    const uint64_t *pairs = (const uint64_t *)(rec + JREC_HDR);
    const uint8_t *data = rec + JREC_HDR + (uint64_t)r->nruns * 16;
    uint64_t rebuilt = 0;
    for (uint32_t i = 0; i < r->nruns; i++)
        if (pairs[2 * i + 1] & JRUN_PATCH) rebuilt += pairs[2 * i + 1] & ~JRUN_PATCH;
    if (rebuilt) {
        uint8_t *nb = realloc(*scratch, rebuilt);
        if (!nb) return NOMEM();
        *scratch = nb;
    }
    /* each run's bytes: in the record, or rebuilt into *scratch */
    uint8_t *out = *scratch;
    bool hdr_zeroed = false; /* in place: the last run rebuilt from bytes past the file's end */
    for (uint32_t i = 0; i < r->nruns; i++) {
        uint64_t len = pairs[2 * i + 1];
        if (!(len & JRUN_PATCH)) {
            data += len;
            continue;
        }
        len &= ~JRUN_PATCH;
        patch_op op;
        for (uint64_t at = 0; at < len; at += op.n) {
            data = patch_next(data, &op);
            uint64_t n = op.n, src = op.src;
            if (!op.copy) {
                memcpy(out + at, op.lit, n);
            } else if (img->direct && img_covered(img, src, n)) {
                /* the bytes the records before this one wrote: in the file, or in memory
                 * from the first page that holds bytes past the bound on (direct_put) */
                uint64_t cut = img->spill > (UINT64_MAX >> IMG_SHIFT) ? UINT64_MAX : img->spill << IMG_SHIFT;
                uint64_t k = src >= cut ? 0 : cut - src < n ? cut - src : n;
                ssize_t got = k ? f->io->pread(f->io->ctx, f->fd, out + at, k, (off_t)src) : 0;
                if (img->inplace && got >= 0 && got < (ssize_t)k && src + (uint64_t)got >= img->fsize) {
                    /* in place, past the file's end (a tail online shrinking cut after the
                     * records wrote it): the rebuilt bytes are never written (img_write
                     * writes the file's own; the last record's header, which this library
                     * never patches, is refused below if it was rebuilt from these) */
                    memset(out + at + got, 0, k - (uint64_t)got);
                    got = (ssize_t)k;
                    if (i + 1 == r->nruns) hdr_zeroed = true;
                }
                if (got != (ssize_t)k) {
                    int e = got < 0 ? errno : EIO;
                    return cs_fail(CS_IOERR, e, "cannot read %s while replaying its journal: %s", f->path,
                                   got < 0 ? strerror(e) : "it ended early");
                }
                if (k < n && !img_read(img, src + k, out + at + k, n - k))
                    return cs_fail(CS_INTERNAL, 0, "the replay of %s lost bytes it kept", f->path);
            } else if (img->direct || !img_read(img, src, out + at, n))
                return cs_fail(CS_CORRUPT, 0,
                               "the journal %s.journal is damaged: the record of version %llu copies bytes at "
                               "%llu that no earlier record wrote (written by a faulty library, or "
                               "forged); the replay stops: move the journal away to open the file without it",
                               f->path, (unsigned long long)r->version, (unsigned long long)src);
        }
        out += len;
    }
    /* the runs as the commit wrote them, in order: checked against the header's hash, then put */
    uint64_t hpos = r->nruns ? pairs[2 * (r->nruns - 1)] : 1, hlen = r->nruns ? pairs[2 * (r->nruns - 1) + 1] : 0;
    for (int pass = 0; pass < 2; pass++) {
        runs_hash rh = {0};
        uint64_t total = 0;
        const uint8_t *hdr = NULL;
        data = rec + JREC_HDR + (uint64_t)r->nruns * 16;
        out = *scratch;
        if (pass == 0) {
            for (uint32_t i = 0; i + 1 < r->nruns; i++) total += pairs[2 * i + 1] & ~JRUN_PATCH;
            rh.h = run_hash_start(total);
        }
        for (uint32_t i = 0; i < r->nruns; i++) {
            uint64_t len = pairs[2 * i + 1], rl = len & ~JRUN_PATCH;
            const uint8_t *bytes;
            if (len & JRUN_PATCH) {
                bytes = out;
                out += rl;
                data += patch_len(data, UINT64_MAX, rl);
            } else {
                bytes = data;
                data += rl;
            }
            if (pass == 1) {
                if (img->inplace) {
                    if (i + 1 == r->nruns && pairs[2 * i] == 0 && rl == HDR_USED) {
                        if (hdr_zeroed)
                            return cs_fail(CS_CORRUPT, 0,
                                           "the journal %s.journal is damaged: the header of the record of version "
                                           "%llu copies bytes past the end of the file; the records are not written "
                                           "again",
                                           f->path, (unsigned long long)r->version);
                        memcpy(img->hdr, bytes, HDR_USED);
                        img->have_hdr = true;
                    }
                } else if (img->direct) {
                    TRY(direct_put(f, img, bytes, rl, pairs[2 * i]));
                } else {
                    TRY(img_put(f, img, pairs[2 * i], bytes, rl));
                }
            } else if (i + 1 < r->nruns) {
                runs_hash_add(&rh, bytes, rl);
            } else {
                hdr = bytes;
            }
        }
        uint64_t v, hl, hh;
        if (pass == 0 && !img->inplace && hdr && hpos == 0 && (hlen & ~JRUN_PATCH) == HDR_USED &&
            file_header_run(hdr, &v, &hl, &hh) &&
            (hl != total || run_hash_end(&rh.h) != hh))
            return cs_fail(CS_CORRUPT, 0,
                           "the journal %s.journal is damaged: the runs of the record of version %llu are not the "
                           "bytes its header describes (%llu bytes, hash %016llx; the record's %llu bytes hash to "
                           "%016llx); the replay stops before it writes anything: move the journal away to open the "
                           "file without it",
                           f->path, (unsigned long long)r->version, (unsigned long long)hl, (unsigned long long)hh,
                           (unsigned long long)total, (unsigned long long)run_hash_end(&rh.h));
    }
    /* a direct replay marks the record's runs once all are written: its copies read only what
     * earlier records wrote */
    for (uint32_t i = 0; img->direct && i < r->nruns; i++) TRY(img_mark(f, img, pairs[2 * i], pairs[2 * i + 1] & ~JRUN_PATCH));
    return CS_OK;
}

/* One write of a replay into the database file, then the test hook. */
static int replay_write(cs_dbfile *f, const void *buf, uint64_t len, uint64_t pos)
{
    int rc = file_pwrite(f, buf, len, pos);
    if (replay_hook) replay_hook(replay_hook_ctx);
    return rc;
}

static int page_order(const void *a, const void *b)
{
    uint64_t x = (*(img_page *const *)a)->index, y = (*(img_page *const *)b)->index;
    return x < y ? -1 : x > y;
}

/* The largest write replay makes at once: stretches of written bytes that follow each other
 * across pages are joined up to this many bytes. */
#define IMG_WRITE_MAX (256u << 10)

/* Writes a staged stretch; in place, the file's own bytes there, read first. */
static int stage_write(cs_dbfile *f, const replay_image *m, uint8_t *stage, uint64_t len, uint64_t pos)
{
    if (m->inplace) {
        ssize_t got = f->io->pread(f->io->ctx, f->fd, stage, len, (off_t)pos);
        if (got != (ssize_t)len) {
            int e = got < 0 ? errno : EIO;
            return cs_fail(CS_IOERR, e, "cannot read %s while writing its journal's records again: %s", f->path,
                           got < 0 ? strerror(e) : "it ended early");
        }
    }
    return replay_write(f, stage, len, pos);
}

/* Writes the image into the database file, each written byte once, in file order, the header's
 * bytes [0, HDR_USED) last: in the page cache, a header naming the newest version never comes
 * before the bytes it reaches (no sync orders them on disk: the journal, kept until the sync
 * after the replay, covers a cut at any point). In place (`inplace`), the bytes written back are
 * the file's own, and the header is the last record's. */
static int img_write(cs_dbfile *f, replay_image *m)
{
    if (!m->n) return CS_OK;
    img_page **pages = malloc(m->n * sizeof *pages);
    uint8_t *stage = malloc(IMG_WRITE_MAX);
    int rc = CS_OK;
    if (!pages || !stage) {
        free(pages);
        free(stage);
        return NOMEM();
    }
    uint64_t k = 0;
    for (uint64_t i = 0; i < m->cap; i++)
        if (m->table[i]) pages[k++] = m->table[i];
    qsort(pages, m->n, sizeof *pages, page_order);
    /* nothing at or past the bound (walk); in place, nothing past the file's end either (a tail
     * online shrinking cut after earlier records wrote it, which no live version reaches) */
    uint64_t bound = m->bound, size;
    if (m->inplace && io_file_size(f->io, f->fd, &size, NULL) == 0 && size < bound) bound = size;
    uint64_t spos = 0, slen = 0; /* the stretch staged */
    for (uint64_t i = 0; i < m->n && rc == CS_OK; i++) {
        const img_page *p = pages[i];
        uint64_t base = p->index << IMG_SHIFT;
        /* the pages are in file order */
        uint64_t lim = base >= bound ? 0 : bound - base < IMG_PAGE ? bound - base : IMG_PAGE;
        for (uint64_t at = p->index ? 0 : HDR_USED; at < lim && rc == CS_OK;) {
            /* the next stretch of written bytes in this page (a word of the map at a time where
             * it is all clear or all set) */
            if (!(p->written[at >> 6] >> (at & 63) & 1)) {
                at = !(at & 63) && !p->written[at >> 6] ? at + 64 : at + 1;
                continue;
            }
            uint64_t e = at + 1;
            while (e < IMG_PAGE && (p->written[e >> 6] >> (e & 63) & 1))
                e = !(e & 63) && p->written[e >> 6] == ~0ull ? e + 64 : e + 1;
            if (e > lim) e = lim;
            if (slen && (spos + slen != base + at || slen + (e - at) > IMG_WRITE_MAX)) {
                rc = stage_write(f, m, stage, slen, spos);
                slen = 0;
            }
            if (!slen) spos = base + at;
            if (!m->inplace) memcpy(stage + slen, p->data + at, e - at);
            slen += e - at;
            at = e;
        }
    }
    if (rc == CS_OK && slen) rc = stage_write(f, m, stage, slen, spos);
    /* the header's bytes last */
    if (m->inplace) {
        if (rc == CS_OK && m->have_hdr) rc = replay_write(f, m->hdr, HDR_USED, 0);
        free(pages);
        free(stage);
        return rc;
    }
    const img_page *p0 = m->n && pages[0]->index == 0 ? pages[0] : NULL;
    for (uint64_t at = 0; p0 && at < HDR_USED && rc == CS_OK;) {
        if (!(p0->written[at >> 6] >> (at & 63) & 1)) {
            at++;
            continue;
        }
        uint64_t e = at + 1;
        while (e < HDR_USED && (p0->written[e >> 6] >> (e & 63) & 1)) e++;
        rc = replay_write(f, p0->data + at, e - at, at);
        at = e;
    }
    free(pages);
    free(stage);
    return rc;
}

/* Replays the valid records of the journal whose header is h, up to version `upto`: builds
 * their image, then writes it (img_write). Returns the number of records, or -error (nothing
 * written when the records cannot all be rebuilt and checked). */
static int64_t replay(cs_dbfile *f, const jheader *h, uint64_t upto, bool live, uint64_t *last_version,
                      uint64_t *end)
{
    replay_image img = {0}, need = {0};
    img.spill = UINT64_MAX;
    int64_t n = walk(f, h, &img, upto, last_version, end, &img.bound);
    if (n == -CS_NOMEM && img.full) {
        /* more pages than the image holds (IMG_MAX), nothing written yet. Alone (at open):
         * record by record, the bytes past the bound kept in memory (direct_put), which needs
         * the bound first (a walk that checks the records, writing nothing). With readers
         * (`live`: the checkpoint after a lost header write, whose records' bytes are all in
         * the page cache already, only the header's write having failed): the map of the bytes
         * they wrote, then each such byte written back once with the value the file holds, in
         * file order, and the last record's header */
        img_free(&img);
        n = walk(f, h, NULL, upto, last_version, end, &img.bound);
        if (n < 0) return n;
        uint64_t bound;
        if (!live) {
            /* the pages past the bound that later copies read: the only ones whose bytes the
             * replay keeps (direct_put); a journal that copies from too many is refused here,
             * before anything is written */
            need.direct = need.collect = true;
            need.spill = UINT64_MAX;
            need.bound = img.bound & ~(uint64_t)(IMG_PAGE - 1);
            n = walk(f, h, &need, upto, last_version, end, &bound);
            if (n < 0) {
                img_free(&need);
                return n;
            }
            img.need = &need;
        }
        img.direct = true;
        img.inplace = live;
        img.spill = live ? UINT64_MAX : img.bound >> IMG_SHIFT;
        if (live && io_file_size(f->io, f->fd, &img.fsize, NULL) != 0) img.fsize = UINT64_MAX; /* no zeros */
        n = walk(f, h, &img, upto, last_version, end, &bound);
        if (n > 0 && live) {
            int rc = img_write(f, &img);
            if (rc != CS_OK) n = -rc;
        }
    } else if (n > 0) {
        int rc = img_write(f, &img);
        if (rc != CS_OK) n = -rc;
    }
    img_free(&need); /* before img's, whose figures cs_test_replay_image reports */
    img_free(&img);
    return n;
}

/* CS_EXISTS for a file in the journal's place that is not one (neither the magic, valid or
 * not, nor the zeros of a journal whose first header was never written): it belongs to someone
 * else, and nothing may be written into it. */
static int is_journal(cs_dbfile *f)
{
    if (f->jsize == 0) return CS_OK;
    uint8_t first[8] = {0};
    static const uint8_t zero[8];
    ssize_t got = f->io->pread(f->io->ctx, f->jfd, first, sizeof first, 0);
    if (got < 0) return jfail_io(f, "reading", errno);
    if (memcmp(first, JOURNAL_MAGIC, 8) != 0 && memcmp(first, zero, 8) != 0)
        return cs_fail(CS_EXISTS, EEXIST,
                       "%s.journal exists and is not a journal; the commit journal needs that name: "
                       "move the file away (it was left as it is)",
                       f->path);
    return CS_OK;
}

/* Writes a journal header of a new generation naming `base`, then syncs the journal. */
static int reset(cs_dbfile *f, uint64_t oldgen, uint64_t id, uint64_t base, uint64_t *gen)
{
    jheader h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, JOURNAL_MAGIC, 8);
    h.layout = JOURNAL_LAYOUT;
    h.gen = oldgen + 1;
    if (h.gen < 2) h.gen = fresh_value() >> 16; /* no valid header: a generation unlike old ones */
    h.id = id;
    h.base = base;
    h.check = header_check(&h);
    TRY(is_journal(f));
    TRY(jgrow(f, JOURNAL_GROW));
    TRY(jwrite(f, &h, sizeof h, 0));
    TRY(jsync(f));
    *gen = h.gen;
    return CS_OK;
}

/* Leaves a message for journal_log_note: the journal's messages arise under the writer's lock,
 * the join lock or the process's list of open files, and the log function is called outside
 * the core's locks (cstore.h, "Logging"). */
__attribute__((format(printf, 3, 4))) static void note(cs_dbfile *f, int level, const char *fmt, ...)
{
    char text[sizeof f->journal_note];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&f->mu);
    memcpy(f->journal_note, text, sizeof text);
    f->journal_note_level = level;
    __atomic_store_n(&f->journal_noted, true, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&f->mu);
}

bool journal_take_note(cs_dbfile *f, char *text, size_t cap, int *level)
{
    /* one load on every commit: a note is rare */
    if (!__atomic_load_n(&f->journal_noted, __ATOMIC_ACQUIRE) || !cap) return false;
    pthread_mutex_lock(&f->mu);
    bool noted = f->journal_noted;
    *level = f->journal_note_level;
    snprintf(text, cap, "%s", f->journal_note);
    __atomic_store_n(&f->journal_noted, false, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&f->mu);
    return noted;
}

void journal_log_note(cs_dbfile *f)
{
    char text[sizeof f->journal_note];
    int level;
    if (journal_take_note(f, text, sizeof text, &level)) log_printf(level, LOG_CAT_STORAGE, "%s", text);
}

/* Whether the file starts with a database header (its magic, FORMAT.md §2) whose format
 * versions say FORMAT_JOURNAL: the open reads the journal before it has checked the header,
 * and a file that is not a database is never written into. */
static bool header_says_journal(cs_dbfile *f)
{
    uint8_t b[12];
    uint16_t fmt[2];
    if (f->io->pread(f->io->ctx, f->fd, b, sizeof b, 0) != (ssize_t)sizeof b || memcmp(b, HDR_MAGIC, 8) != 0)
        return false;
    memcpy(fmt, b + 8, 4);
    return format_journaled(fmt[0]) && format_journaled(fmt[1]);
}

/* Marks the header's format versions FORMAT_RESTING (bytes 8-11). */
static int rest(cs_dbfile *f)
{
    uint16_t fmt[2] = {FORMAT_RESTING, FORMAT_RESTING};
    TRY(file_pwrite(f, fmt, 4, 8));
    if (f->hdr_version) memcpy(f->hdr_img + 8, fmt, 4);
    return CS_OK;
}

/* A header whose format versions say FORMAT_JOURNAL beside a journal that holds no record (a
 * replay or a checkpoint with no record after it, or a header only) is marked FORMAT_RESTING
 * again, as the checkpoint at the last close marks it (docs/FORMAT.md §13, Recovery): nothing
 * is left for a library without the journal to miss. The caller is alone (the join lock held)
 * and f->fd may write the file; the journal is open. Not synced: a power cut that loses the
 * write leaves the header at 7, which is only stricter. rest() alone is the write, for an open
 * that has read the journal already. */
static int rest_if_empty(cs_dbfile *f)
{
    if (!header_says_journal(f)) return CS_OK;
    jheader h;
    uint64_t last, end;
    bool valid;
    TRY(read_jheader(f, &h, &valid));
    if (valid) {
        uint64_t bound;
        int64_t n = walk(f, &h, NULL, UINT64_MAX, &last, &end, &bound);
        if (n != 0) return n < 0 ? (int)-n : CS_OK;
    }
    return rest(f);
}

int journal_recover_open(cs_dbfile *f, bool readonly)
{
    int lfd = -1, wfd = -1, rofd = -1;
    bool alone = true;
    /* an open that goes on past a failure of its own (a header it could not mark resting, a
     * lock it could not take for that) leaves the thread's last failure as it was (error.h) */
    cs_err_saved saved;
    cs_err_save(&saved);
    TRY(lock_join_alone(f->path, !readonly, &lfd, &alone));
    f->opened_alone = alone;
    int rc = CS_OK;
    if (!alone) goto done;
    rc = jopen(f, false);
    if (rc == CS_NOTFOUND) {
        rc = CS_OK;
        /* the header says the newest commits may be in the journal, and there is none (moved
         * away, or the file copied without it): commits made durable only there are lost */
        uint16_t fmt[2];
        if (f->io->pread(f->io->ctx, f->fd, fmt, 4, 8) == 4 && format_journaled(fmt[0])) {
            f->journal_lost = file_header_newest_version(f);
            f->journal_lost_fmt = fmt[0];
            if (f->journal_lost)
                note(f, CS_LOG_WARN,
                     "%s says its newest commits may be in its journal, but %s.journal is missing: "
                     "commits after version %llu may be lost",
                     f->path, f->path, (unsigned long long)f->journal_lost);
        }
        goto done;
    }
    if (rc != CS_OK) goto done;
    jheader h;
    uint64_t last = 0, end, bound;
    bool valid;
    /* a journal that cannot be read fails the open: taken for one without records, the open
     * would go on without the replay, and the first checkpoint would drop the records; so does
     * one whose newest record writes past the bound (walk), before anything is written */
    if ((rc = read_jheader(f, &h, &valid)) != CS_OK) goto done;
    int64_t n = valid ? walk(f, &h, NULL, UINT64_MAX, &last, &end, &bound) : 0;
    if (n < 0) {
        rc = (int)-n;
        goto done;
    }
    if (n == 0) {
        /* no record: a header left at FORMAT_JOURNAL rests again (rest), by a
         * read-only opener too when it can hold the join lock and write the file (as for a
         * replay, below); one that cannot leaves it as it is */
        if (!header_says_journal(f)) goto done;
        if (readonly) {
            if (lfd < 0) {
                bool still = false;
                if (lock_join_alone(f->path, true, &lfd, &still) != CS_OK) {
                    lfd = -1;
                    goto done;
                }
                if (!still) {
                    f->opened_alone = false;
                    goto done;
                }
            }
            wfd = f->io->open(f->io->ctx, f->path, O_RDWR | O_CLOEXEC, 0);
            if (wfd < 0) goto done;
            rofd = f->fd;
            f->fd = wfd;
        }
        /* the rest only lets older libraries in: when its write fails (a full copy-on-write
         * file system, say) the open goes on, the header staying as it was */
        if (rest(f) != CS_OK)
            note(f, CS_LOG_WARN, "The open of %s could not mark it format version 6 again (%s)", f->path, cs_errmsg());
        goto done;
    }
    uint64_t id = db_id(f);
    if (id != h.id) {
        rc = cs_fail(CS_CORRUPT, 0,
                     "the journal %s.journal holds %lld commits of another database (its id %016llx, the file's %016llx); "
                     "move it away to open the file",
                     f->path, (long long)n, (unsigned long long)h.id, (unsigned long long)id);
        goto done;
    }
    /* the records start at h.base: the file must hold a version from base to the last record
     * (an older copy put back, or commits made by a library that ignored the journal, would be
     * torn by the replay) */
    uint64_t dv = file_header_newest_version(f);
    if (dv < h.base || dv > last) {
        rc = cs_fail(CS_CORRUPT, 0,
                     "the journal %s.journal holds commits %llu to %llu, but the file holds version %llu "
                     "(an older or newer copy of the file?); move the journal away to open the file",
                     f->path, (unsigned long long)h.base + 1, (unsigned long long)last, (unsigned long long)dv);
        goto done;
    }
    if (readonly) {
        /* a read-only opener recovers as a read-write one would (as SQLite does for a hot
         * journal) when it can hold the join lock and write the file and the journal: replay
         * restores acknowledged commits, it changes nothing a user wrote */
        if (lfd < 0) {
            bool still = false;
            if (lock_join_alone(f->path, true, &lfd, &still) != CS_OK) lfd = -1;
            else if (!still) {
                f->opened_alone = false; /* another process joined: it decides */
                goto done;
            }
        }
        if (lfd >= 0) wfd = f->io->open(f->io->ctx, f->path, O_RDWR | O_CLOEXEC, 0);
        journal_close(f);
        if (wfd < 0 || jopen(f, true) != CS_OK) {
            rc = cs_fail(CS_READONLY, 0,
                         "%s has %lld commits in its journal to recover after a crash, and this process cannot "
                         "write the file, its journal or its lock file; run `swiftstore recover %s` as a user "
                         "who may write them (or open it once read-write as that user)",
                         f->path, (long long)n, f->path);
            goto done;
        }
        rofd = f->fd;
        f->fd = wfd;
    } else {
        /* the journal was opened read-only above: reopen it for the reset */
        journal_close(f);
        if ((rc = jopen(f, true)) != CS_OK) goto done;
    }
    int64_t m = replay(f, &h, UINT64_MAX, false, &last, &end);
    if (m != n) {
        rc = m < 0 ? (int)-m : cs_fail(CS_IOERR, EIO, "the journal of %s changed while it was replayed", f->path);
        goto done;
    }
    if (readonly) {
        /* the journal is empty after this and a read-only opener commits nothing: the file
         * rests at FORMAT_RESTING as after a clean close (FORMAT.md §2) */
        uint16_t fmt[2];
        if (f->io->pread(f->io->ctx, f->fd, fmt, 4, 8) == 4 && format_journaled(fmt[0]) && format_journaled(fmt[1])) {
            fmt[0] = fmt[1] = FORMAT_RESTING;
            if ((rc = file_pwrite(f, fmt, 4, 8)) != CS_OK) goto done;
        }
    }
    if ((rc = dbsync(f)) != CS_OK) goto done;
    uint64_t gen;
    if ((rc = reset(f, h.gen, h.id, last, &gen)) != CS_OK) goto done;
    f->recovered = (uint64_t)n;
    note(f, CS_LOG_INFO, "Recovered %lld commits from the journal of %s (version %llu)%s", (long long)n, f->path,
         (unsigned long long)last, readonly ? " by a read-only open" : "");
done:
    if (rofd >= 0) {
        f->fd = rofd;
        f->broken = false; /* a failed sync above concerned the descriptor closed here */
    }
    if (wfd >= 0) f->io->close(f->io->ctx, wfd);
    journal_close(f);
    lock_creation_end(lfd);
    if (rc == CS_OK) cs_err_restore(&saved);
    return rc;
}

/* ---- checkpoints and commits ------------------------------------------------------------ */

/* `closing`: the last close; a header marked FORMAT_JOURNAL is marked FORMAT_RESTING again (the
 * journal is empty after it), so older libraries open a cleanly closed file. `ahead`: a
 * journaled commit follows, and the journal is grown ahead of need (jgrow_ahead). */
static int checkpoint(cs_dbfile *f, bool closing, bool ahead)
{
    journal_shared *s = shared(f);
    if (!s) return CS_OK;
    TRY(jopen(f, true));
    /* the journal's space first, before anything is written: a disk too full for it fails the
     * checkpoint here, with the database file untouched (journal_before_commit falls back) */
    TRY(is_journal(f));
    TRY(jgrow(f, JOURNAL_GROW));
    if (ahead) TRY(jgrow_ahead(f));
    if (s->flags & JS_HEADER_LOST) {
        /* a commit's header write failed after its record was synced (commit.c write_durable):
         * the published records, written again, put the newest version's header in place (the
         * other bytes they hold are already there, the last writer winning as in a replay) */
        jheader h;
        uint64_t last = 0, end;
        bool valid;
        TRY(read_jheader(f, &h, &valid));
        int64_t n = valid && h.gen == s->gen ? replay(f, &h, s->last, true, &last, &end) : 0;
        if (n < 0) return (int)-n;
        if (last != s->last)
            return cs_fail(CS_IOERR, EIO, "the journal of %s no longer holds the commit whose header write failed",
                           f->path);
        f->hdr_version = 0; /* the header on disk is the record's */
    }
    if (closing) {
        uint16_t fmt[2];
        if (f->io->pread(f->io->ctx, f->fd, fmt, 4, 8) == 4 && format_journaled(fmt[0]) && format_journaled(fmt[1])) {
            fmt[0] = fmt[1] = FORMAT_RESTING;
            TRY(file_pwrite(f, fmt, 4, 8));
            if (f->hdr_version) memcpy(f->hdr_img + 8, fmt, 4);
        }
    }
    if (!closing && !f->readonly) {
        /* records may follow this checkpoint: the durable header must already say FORMAT_JOURNAL
         * (a version-6 library must refuse the file while they are pending, FORMAT.md §2) */
        uint16_t fmt[2];
        if (f->io->pread(f->io->ctx, f->fd, fmt, 4, 8) == 4 && (fmt[0] < FORMAT_JOURNAL || fmt[1] < FORMAT_JOURNAL)) {
            fmt[0] = fmt[1] = FORMAT_JOURNAL;
            TRY(file_pwrite(f, fmt, 4, 8));
            if (f->hdr_version) memcpy(f->hdr_img + 8, fmt, 4);
        }
    }
    uint64_t id = s->id;
    if (!id) {
        /* the first checkpoint of a session: the file's id, or a new one written into its
         * header (made durable by the sync below, before the journal names it) */
        id = db_id(f);
        if (!id) {
            id = fresh_value();
            uint64_t w[2] = {id, file_id_check(id)};
            TRY(file_pwrite(f, w, 16, HDR_ID_OFF));
            if (f->hdr_version) memcpy(f->hdr_img + HDR_ID_OFF, w, 16);
        }
    }
    TRY(dbsync(f));
    uint64_t oldgen = s->gen;
    if (!oldgen) {
        jheader h;
        bool valid;
        TRY(read_jheader(f, &h, &valid));
        if (valid) oldgen = h.gen;
    }
    uint64_t base = lock_latest_version(f), gen;
    TRY(reset(f, oldgen, id, base, &gen));
    s->id = id;
    s->gen = gen;
    s->base = base;
    s->end = JOURNAL_HDR;
    s->flags = 0;
    s->last = base;
    return CS_OK;
}

int journal_checkpoint(cs_dbfile *f) { return checkpoint(f, false, false); }

void journal_header_lost(cs_dbfile *f)
{
    journal_shared *s = shared(f);
    if (s) s->flags |= JS_HEADER_LOST;
}

int journal_checkpoint_records(cs_dbfile *f)
{
    journal_shared *s = shared(f);
    return s && (s->flags & JS_RECORDS) ? checkpoint(f, false, false) : CS_OK;
}

/* A durable commit the journal cannot take (its space or its file could not be had on a full
 * disk, `full`, or its file cannot be created or opened for writing) while no record is
 * pending: made the way it was before the journal, in place with one sync (FORMAT.md §13,
 * Commit step 1); said once in the log until a journaled commit succeeds. */
static int without_journal(cs_dbfile *f, bool *journaled, bool full)
{
    *journaled = false;
    if (!f->journal_full) {
        f->journal_full = true;
        if (full)
            note(f, CS_LOG_WARN,
                 "The disk is too full for the journal of %s (%s): durable commits are made without the "
                 "journal, in place with one sync each, until it has room",
                 f->path, cs_errmsg());
        else
            note(f, CS_LOG_WARN,
                 "The journal of %s cannot be had (%s): durable commits are made without the journal, "
                 "in place with one sync each",
                 f->path, cs_errmsg());
    }
    return CS_OK;
}

static int before_commit(cs_dbfile *f, bool *journaled, uint64_t reclen, uint64_t version)
{
    journal_shared *s = shared(f);
    if (!s) return CS_OK;
    /* a record replay would refuse is never written; the record of a commit of at most
     * ONE_SYNC_MAX bytes never is one (FORMAT.md §13, Layout: its run list takes 16 bytes per
     * run), so this only guards the bound */
    if (*journaled && reclen > JREC_MAX) *journaled = false;
    if (*journaled) {
        /* a journal this process cannot open (an unwritable directory, a full disk): while no
         * record is pending the commit is made the way it was before the journal, in place with
         * one sync */
        if (f->jfd < 0 && !(s->flags & JS_RECORDS)) {
            int rc = jopen(f, true);
            if (rc == CS_PERM) return without_journal(f, journaled, false);
            if (rc == CS_FULL) return without_journal(f, journaled, true);
            TRY(rc);
        }
        /* the record must follow the last one (or the checkpoint's base) in the version sequence
         * (invariant 1): a version made without a record in between needs a checkpoint */
        if (!s->gen || (s->flags & (JS_UNJOURNALED | JS_HEADER_LOST)) || s->last + 1 != version ||
            s->end + reclen > JOURNAL_LIMIT) {
            /* with no record pending, the record's room first: a disk too full for it makes the
             * commit in place at once, without a checkpoint's two syncs that would buy nothing
             * (the zeros are past every record: they need no checkpoint before them) */
            if (!(s->flags & JS_RECORDS) && f->jfd >= 0 && JOURNAL_HDR + reclen > f->jsize) {
                int rc = is_journal(f);
                if (rc == CS_OK) rc = jgrow(f, JOURNAL_HDR + reclen);
                if (rc == CS_FULL && !f->broken) return without_journal(f, journaled, true);
                TRY(rc);
            }
            int rc = checkpoint(f, false, true);
            /* a checkpoint that failed for space before it wrote anything, with no record
             * pending: nothing a replay could apply is left, so the commit may go in place */
            if (rc == CS_FULL && !(s->flags & JS_RECORDS) && !f->broken) return without_journal(f, journaled, true);
            TRY(rc);
        }
        TRY(jopen(f, true));
        /* room for the record, made (and synced) before anything of the commit is written */
        if (s->end + reclen > f->jsize) {
            int rc = jgrow(f, s->end + reclen);
            if (rc == CS_OK) rc = jsync(f);
            if (rc == CS_FULL && !f->broken) {
                /* the pending records are made durable in the database file first (a
                 * checkpoint needs no growth); the record may then fit from the start, else no
                 * record is left to replay over the commit made in place */
                if (!(s->flags & JS_RECORDS)) return without_journal(f, journaled, true);
                TRY(journal_checkpoint(f));
                if (s->end + reclen > f->jsize) return without_journal(f, journaled, true);
                rc = CS_OK;
            }
            TRY(rc);
        }
        return CS_OK;
    }
    /* a commit in place: no older record may be replayed over it */
    if (s->flags & JS_RECORDS) TRY(journal_checkpoint(f));
    return CS_OK;
}

int journal_before_commit(cs_dbfile *f, bool *journaled, uint64_t reclen, uint64_t version)
{
    /* a commit that goes without the journal succeeds after a failure of its own (opening or
     * growing the journal): that failure is no call's, and the thread's record is cleared
     * (cs_err_save would cost every commit a copy) */
    uint64_t failures = cs_err_count();
    int rc = before_commit(f, journaled, reclen, version);
    if (rc == CS_OK && cs_err_count() != failures) cs_err_clear();
    return rc;
}

uint64_t journal_record_size(const journal_run *runs, uint32_t n)
{
    uint64_t len = JREC_HDR + (uint64_t)n * 16;
    for (uint32_t i = 0; i < n; i++) len += runs[i].enc ? runs[i].enclen : runs[i].len;
    /* zeros to a multiple of JREC_ALIGN (FORMAT.md §13, Layout), so that every record starts
     * and ends there and can be written by direct I/O (jwrite_record); to a multiple of 8 only
     * when that would pass JREC_MAX */
    uint64_t aligned = (len + JREC_ALIGN - 1) & ~(uint64_t)(JREC_ALIGN - 1);
    return aligned <= JREC_MAX ? aligned : (len + 7) & ~7ull;
}

uint64_t journal_generation(cs_dbfile *f)
{
    journal_shared *s = shared(f);
    return s ? s->gen : 0;
}

/* ---- patches (FORMAT.md §13, Layout) -------------------------------------------------------- */

/* A run's patch while it is built: the operations so far in out[0..at), and the operation not
 * yet written (a literal of run bytes [lit, lit + litn), or a copy of cpn bytes from cps). */
typedef struct patcher {
    uint8_t *out;
    uint64_t at, cap;
    const uint8_t *src; /* the run's bytes */
    uint64_t lit, litn, cps, cpn;
    bool oom;
} patcher;

static void pt_put(patcher *p, const void *b, uint64_t n)
{
    if (p->at + n > p->cap) {
        uint64_t nc = p->cap ? 2 * p->cap : 4096;
        while (nc < p->at + n) nc *= 2;
        uint8_t *x = realloc(p->out, nc);
        if (!x) {
            p->oom = true;
            return;
        }
        p->out = x;
        p->cap = nc;
    }
    memcpy(p->out + p->at, b, n);
    p->at += n;
}

static void pt_flush(patcher *p)
{
    if (p->litn) {
        uint64_t w = (p->litn << 1) | JOP_LIT;
        pt_put(p, &w, 8);
        pt_put(p, p->src + p->lit, p->litn);
        p->litn = 0;
    }
    if (p->cpn) {
        uint64_t w[2] = {(p->cpn << 1) | JOP_COPY, p->cps};
        pt_put(p, w, 16);
        p->cpn = 0;
    }
}

/* The run's bytes [off, off + n) go as they are. */
static void pt_literal(patcher *p, uint64_t off, uint64_t n)
{
    if (!n) return;
    if (p->cpn) pt_flush(p);
    if (p->litn && p->lit + p->litn == off) {
        p->litn += n;
        return;
    }
    pt_flush(p);
    p->lit = off;
    p->litn = n;
}

/* The next n bytes of the run are the file's bytes at src (written by an earlier record). */
static void pt_copy(patcher *p, uint64_t src, uint64_t n)
{
    if (p->litn) pt_flush(p);
    if (p->cpn && p->cps + p->cpn == src) {
        p->cpn += n;
        return;
    }
    pt_flush(p);
    p->cps = src;
    p->cpn = n;
}

/* How far ahead among the old node's elements a new element is looked for: an extent or entry
 * inserted, removed or changed shifts the rest by one, a few such changes by a few. */
#define PATCH_WINDOW 8

/* Whether the elements of `words` 8-byte words at a and b are equal: 3 (a chunk's extent) or
 * 2 (a directory's entry), each compared with a fixed size the compiler inlines. */
static inline bool elem_eq(const uint8_t *a, const uint8_t *b, uint32_t words)
{
    return words == 3 ? memcmp(a, b, 24) == 0 : memcmp(a, b, 16) == 0;
}

/* The new node b->pos .. + b->len, at run offset off, as copies of the elements it shares with
 * the old one and literals for the rest: its 8-byte header (whose check and count change) is a
 * literal; from elements i (new) and j (old) on, the longest stretch of equal elements is one
 * copy (its first element compared alone, then 16 at a time, then one by one); at a difference, new element i is
 * looked for among the old ones after j (at most PATCH_WINDOW on: an extent or entry inserted,
 * removed or changed shifts the rest by one, a few such changes by a few), and is a literal
 * when none has its bytes. */
static void pt_node(patcher *p, const journal_base *b, uint64_t off)
{
    uint32_t u = b->unit;
    uint64_t esz = 8ull * u, n_new = (b->len - 8) / esz, n_old = b->oldlen >= 8 ? (b->oldlen - 8) / esz : 0;
    const uint8_t *nw = p->src + off + 8, *ol = b->old + 8;
    pt_literal(p, off, 8);
    uint64_t i = 0, j = 0;
    while (i < n_new) {
        uint64_t m = 0, lim = j < n_old ? (n_new - i < n_old - j ? n_new - i : n_old - j) : 0;
        /* the first element alone first: at a difference most stretches are short */
        if (lim && elem_eq(nw + i * esz, ol + j * esz, u)) {
            m = 1;
            while (m + 16 <= lim && memcmp(nw + (i + m) * esz, ol + (j + m) * esz, 16 * esz) == 0) m += 16;
            while (m < lim && elem_eq(nw + (i + m) * esz, ol + (j + m) * esz, u)) m++;
        }
        if (m) {
            pt_copy(p, b->oldpos + 8 + j * esz, m * esz);
            i += m;
            j += m;
            continue;
        }
        uint64_t k = j + 1, klim = j + PATCH_WINDOW < n_old ? j + PATCH_WINDOW : n_old;
        while (k < klim && !elem_eq(nw + i * esz, ol + k * esz, u)) k++;
        if (k < klim) {
            j = k; /* old elements j .. k - 1 are gone: copy from k */
            continue;
        }
        pt_literal(p, off + 8 + i * esz, esz);
        i++;
    }
    pt_literal(p, off + 8 + n_new * esz, b->len - 8 - n_new * esz);
}

int journal_patch(journal_run *runs, uint32_t n, const journal_base *b, uint32_t nb, uint8_t **store)
{
    *store = NULL;
    patcher p = {0};
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < nb; i++) {
        journal_run *r = &runs[i];
        while (k < nb && b[k].pos < r->pos) k++;
        if (k == nb || b[k].pos >= r->pos + r->len) continue;
        uint64_t start = p.at, off = 0;
        p.src = r->src;
        for (; k < nb && b[k].pos + b[k].len <= r->pos + r->len; k++) {
            cs_assert3(b[k].pos, >=, r->pos + off);
            pt_literal(&p, off, b[k].pos - r->pos - off);
            pt_node(&p, &b[k], b[k].pos - r->pos);
            off = b[k].pos - r->pos + b[k].len;
        }
        pt_literal(&p, off, r->len - off);
        pt_flush(&p);
        if (p.oom) break;
        if (p.at - start >= r->len) {
            p.at = start; /* no shorter than its bytes: the run goes as it is */
            continue;
        }
        r->enclen = p.at - start;
        r->enc = (const uint8_t *)(uintptr_t)start; /* an offset until p.out stops moving */
    }
    if (p.oom) {
        free(p.out);
        for (uint32_t i = 0; i < n; i++) runs[i].enc = NULL;
        return NOMEM();
    }
    for (uint32_t i = 0; i < n; i++)
        if (runs[i].enclen) runs[i].enc = p.out + (uintptr_t)runs[i].enc;
    *store = p.out;
    return CS_OK;
}

/* record_check a word at a time (journal_record_build, journal_record_seal): the words
 * alternate between the two lanes, the first into a, as record_check's pairs and its odd last
 * word do. */
static inline void check_word(journal_record *jr, uint64_t w)
{
    if (jr->words++ & 1) jr->b = lane_round(jr->b, w);
    else jr->a = lane_round(jr->a, w);
}

/* Copies a run of n bytes (a multiple of 8) into the record at jr->at and adds its words to the
 * record's check: one pass over the bytes for the copy and the check's two lanes. */
static void take_run(journal_record *jr, const uint8_t *src, uint64_t n)
{
    cs_assert((n & 7) == 0);
    uint8_t *dst = jr->rec + jr->at;
    uint64_t i = 0, w0, w1;
    if ((jr->words & 1) && n >= 8) { /* lane b is next: one word, then whole pairs */
        memcpy(&w0, src, 8);
        memcpy(dst, &w0, 8);
        check_word(jr, w0);
        i = 8;
    }
    uint64_t a = jr->a, b = jr->b, pairs = 0;
    for (; i + 16 <= n; i += 16, pairs++) {
        memcpy(&w0, src + i, 8);
        memcpy(&w1, src + i + 8, 8);
        memcpy(dst + i, &w0, 8);
        memcpy(dst + i + 8, &w1, 8);
        a = lane_round(a, w0);
        b = lane_round(b, w1);
    }
    jr->a = a;
    jr->b = b;
    jr->words += 2 * pairs;
    if (i < n) {
        memcpy(&w0, src + i, 8);
        memcpy(dst + i, &w0, 8);
        check_word(jr, w0);
    }
    jr->at += n;
}

int journal_record_build(cs_dbfile *f, const journal_run *runs, uint32_t n, uint64_t version, journal_record *jr)
{
    journal_shared *s = shared(f);
    uint64_t len = journal_record_size(runs, n);
    memset(jr, 0, sizeof *jr);
    if (len <= JREC_KEEP) {
        /* the buffer kept for the file's records: no allocation per commit (commits of one
         * file are made one at a time, under its writer lock) */
        if (!f->jrec_buf) {
            void *mem = NULL;
            if (posix_memalign(&mem, JREC_ALIGN, JREC_KEEP) != 0) return NOMEM();
            f->jrec_buf = mem;
        }
        jr->rec = f->jrec_buf;
    } else {
        void *mem = NULL;
        if (posix_memalign(&mem, JREC_ALIGN, len) != 0) return NOMEM();
        jr->rec = mem;
        jr->own = true;
    }
    jr->len = len;
    jrecord *r = (jrecord *)jr->rec;
    memset(r, 0, sizeof *r);
    memcpy(r->magic, RECORD_MAGIC, 8);
    r->gen = s->gen;
    r->version = version;
    r->length = len;
    r->nruns = n;
    uint64_t *pairs = (uint64_t *)(jr->rec + JREC_HDR);
    for (uint32_t i = 0; i < n; i++) {
        pairs[2 * i] = runs[i].pos;
        pairs[2 * i + 1] = runs[i].len | (runs[i].enc ? JRUN_PATCH : 0);
        r->data += runs[i].enc ? runs[i].enclen : runs[i].len;
    }
    /* the record header (its check word still zero) and the pairs, then the runs but the last */
    jr->a = s->gen ^ CHECK_P1;
    jr->b = s->id ^ CHECK_P2;
    jr->at = JREC_HDR + (uint64_t)n * 16;
    for (uint64_t k = 0; k < jr->at; k += 8) {
        uint64_t w;
        memcpy(&w, jr->rec + k, 8);
        check_word(jr, w);
    }
    /* the record's check is of what the record holds: a run's bytes or its patch (the slot's hash
     * of the runs' bytes came with their checksums, commit.c) */
    for (uint32_t i = 0; i + 1 < n; i++) {
        if (runs[i].enc) take_run(jr, runs[i].enc, runs[i].enclen);
        else take_run(jr, runs[i].src, runs[i].len);
    }
    return CS_OK;
}

void journal_record_seal(journal_record *jr, const journal_run *last)
{
    _Static_assert(HDR_USED % 8 == 0, "the header run is whole words");
    take_run(jr, last->src, last->len);
    cs_assert3(jr->at, <=, jr->len);
    cs_assert((jr->at & 7) == 0); /* every run a multiple of 8 bytes */
    /* the padding to JREC_ALIGN (journal_record_size): zeros, hashed like the rest */
    memset(jr->rec + jr->at, 0, jr->len - jr->at);
    for (; jr->at < jr->len; jr->at += 8) check_word(jr, 0);
    ((jrecord *)jr->rec)->check = check_end(jr->a, jr->b, jr->len);
}

void journal_record_free(journal_record *jr)
{
    if (jr->own) free(jr->rec);
    jr->rec = NULL;
    jr->own = false;
}

int journal_append(cs_dbfile *f, journal_record *jr, uint64_t *end)
{
    journal_shared *s = shared(f);
    uint64_t len = jr->len, at = s->end;
    int rc = CS_OK;
    if (at + len > f->jsize) {
        /* more room: zeros written and synced before the record (a rare extra sync) */
        rc = jgrow(f, at + len);
        if (rc == CS_OK) rc = jsync(f);
    }
    if (rc == CS_OK) {
        s->flags |= JS_RECORDS;
        rc = jwrite_record(f, jr->rec, len, at);
    }
    if (rc == CS_OK) rc = jsync(f);
    journal_record_free(jr);
    *end = at + len;
    return rc;
}

void journal_published(cs_dbfile *f, uint64_t end, uint64_t version)
{
    journal_shared *s = shared(f);
    if (!s) return;
    if (end) {
        __atomic_store_n(&s->end, end, __ATOMIC_RELEASE);
        s->last = version;
        f->journal_full = false; /* a journaled commit landed: a full disk is said again */
    } else {
        s->flags |= JS_UNJOURNALED;
    }
}

static void last_close(cs_dbfile *f)
{
    journal_shared *s = shared(f);
    if (!s || f->fd < 0) return;
    if (f->durability == CS_DURABILITY_MEMORY && !f->readonly) {
        /* only a journal goes: whatever else is at its path (a directory, a FIFO, a symbolic
         * link, a file that is not a journal) stays */
        char *jp = journal_path(f->path);
        struct stat st;
        if (jp && io_stat_path(f->io, jp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            (f->jfd >= 0 || jopen(f, false) == CS_OK) &&
            is_journal(f) == CS_OK)
            unlink(jp);
        journal_close(f);
        free(jp);
        return;
    }
    /* a read-only process that closes last checkpoints too (its descriptor can be synced), so
     * records of writers that closed before it do not make the next read-only open refuse the
     * file; when it may write the file it also gives back the resting format version, else the
     * header's version bytes stay as they are */
    if (!(s->flags & JS_RECORDS)) {
        /* no record since the last checkpoint: a header left at FORMAT_JOURNAL (by a replay at
         * the open, or a checkpoint no record followed) rests again when the journal is empty;
         * a missing journal leaves it, as the sign of a loss the open reported */
        if (f->broken || !header_says_journal(f) || (f->jfd < 0 && jopen(f, false) != CS_OK)) return;
        int wfd = f->readonly ? f->io->open(f->io->ctx, f->path, O_RDWR | O_CLOEXEC, 0) : -1;
        if (f->readonly && wfd < 0) return;
        int rofd = f->fd;
        if (wfd >= 0) f->fd = wfd;
        int rc = rest_if_empty(f);
        f->fd = rofd;
        if (wfd >= 0) f->io->close(f->io->ctx, wfd);
        if (rc != CS_OK)
            note(f, CS_LOG_WARN, "The last close of %s could not mark it format version 6 again (%s)", f->path,
                 cs_errmsg());
        return;
    }
    if (f->broken) {
        /* no checkpoint after a failed write in this process: the records stay for the replay */
        note(f, CS_LOG_WARN,
             "The last close of %s made no checkpoint (a write failed earlier in this process): its journal "
             "keeps the commits since the last checkpoint, and the next open replays them",
             f->path);
        return;
    }
    int rc;
    if (!f->readonly) {
        rc = checkpoint(f, true, false);
    } else {
        int wfd = f->io->open(f->io->ctx, f->path, O_RDWR | O_CLOEXEC, 0);
        if (wfd < 0) {
            rc = checkpoint(f, false, false);
        } else {
            int rofd = f->fd;
            f->fd = wfd;
            rc = checkpoint(f, true, false);
            f->fd = rofd;
            f->io->close(f->io->ctx, wfd);
        }
    }
    /* a close returns nothing anyone sees: the log is the only place to say it (dbfile_free
     * logs it once the join lock is released). The records stay in the journal (a checkpoint
     * empties it last), and the next open replays them */
    if (rc != CS_OK)
        note(f, CS_LOG_WARN,
             "The checkpoint at the last close of %s failed (%s): its journal keeps the commits since the "
             "last checkpoint, and the next open replays them",
             f->path, cs_errmsg());
}

void journal_last_close(cs_dbfile *f)
{
    /* a close returns nothing of what fails here (it is logged, journal_log_note): the thread's
     * last failure stays the one it was (error.h) */
    cs_err_saved saved;
    cs_err_save(&saved);
    last_close(f);
    cs_err_restore(&saved);
}

/* ---- for the tool -------------------------------------------------------------------------- */

int journal_peek(const char *path, uint64_t *records, uint64_t *gen, uint64_t *bytes)
{
    *records = *gen = *bytes = 0;
    cs_dbfile f;
    memset(&f, 0, sizeof f);
    f.path = (char *)path;
    f.io = cs_io_default();
    f.jfd = -1;
    f.jdfd = -1;
    f.fd = -1;
    TRY(jopen(&f, false));
    jheader h;
    bool valid;
    int rc = read_jheader(&f, &h, &valid);
    if (rc == CS_OK && valid) {
        uint64_t last, end, bound;
        int64_t n = walk(&f, &h, NULL, UINT64_MAX, &last, &end, &bound);
        if (n < 0) rc = (int)-n;
        if (n > 0) {
            *records = (uint64_t)n;
            *bytes = end - JOURNAL_HDR;
        }
        *gen = h.gen;
    }
    journal_close(&f);
    return rc;
}

int cs_file_journal_info(const char *path, uint64_t *records, uint64_t *bytes)
{
    uint64_t gen;
    return journal_peek(path, records, &gen, bytes);
}
