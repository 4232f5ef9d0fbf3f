/*
 * file.c -- the database file: opening and creating it, the header and its two top-ref slots,
 * the shared mapping, and the writes and syncs a commit makes through them (docs/FORMAT.md §1
 * and §2). The commit itself, with the free list it writes, is commit.c's.
 *
 * Invariants:
 *  1. A process has one cs_dbfile per file (found by device and inode), so its POSIX record
 *     locks and its mapping are shared by every handle on the file. (A forked child may hold an
 *     inherited one beside its own, which it can only close: lock_inherited.)
 *  2. The header write puts the new top into the slot the current version does not use and flips
 *     the selector in the same write; each slot carries a checksum, so a torn header write leaves
 *     the old slot selected or valid (commit.c durability rule 3).
 *  3. A failed sync marks the file broken: the page cache may hold data the disk does not, so no
 *     further commit is attempted through this process until the file is reopened.
 *  4. A mapping is never unmapped while the file is open: a larger one is added and the older
 *     ones stay valid, so pointers other threads hold never dangle.
 *  5. A file is created only under the lock file's set-up lock: an opener that finds the file
 *     unborn (see unborn()) takes the lock, waiting for a creator in progress, and looks again;
 *     if it is still unborn its creator died half-way (the kernel dropped the lock), and the
 *     opener creates it afresh.
 */
#include "node.h"
#include "freelist.h"
#include "schema.h"
#include "lock.h"
#include "file.h"
#include "log.h"
#include "io.h"
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the default I/O layer -------------------------------------------------------------- */

static int d_open(void *c, const char *p, int fl, mode_t m) { (void)c; return open(p, fl | O_CLOEXEC, m); }
static int d_close(void *c, int fd) { (void)c; return close(fd); }
static ssize_t d_pread(void *c, int fd, void *b, size_t n, off_t o) { (void)c; return pread(fd, b, n, o); }
static ssize_t d_pwrite(void *c, int fd, const void *b, size_t n, off_t o) { (void)c; return pwrite(fd, b, n, o); }
static int d_fdatasync(void *c, int fd) { (void)c; return fdatasync(fd); }
static int d_ftruncate(void *c, int fd, off_t s) { (void)c; return ftruncate(fd, s); }
static int d_fstat(void *c, int fd, struct stat *st) { (void)c; return fstat(fd, st); }

static const cs_io default_io = {d_open, d_close, d_pread, d_pwrite, d_fdatasync, d_ftruncate, d_fstat, NULL,
                                 NULL, NULL, NULL, io_default_allocate, io_default_write_mapped, NULL};

const cs_io *cs_io_default(void) { return &default_io; }

uint32_t cs_format_version(void) { return FORMAT_WRITE; }
const char *cs_library_version(void) { return "0.1.0"; }

/* ---- header ----------------------------------------------------------------------------- */

typedef struct hdr_slot {
    uint64_t top;      /* top ref */
    uint64_t version;  /* version number */
    uint64_t size;     /* logical file size */
    uint64_t flags;    /* HS_ONE_SYNC: committed with one sync; run_* describe its bytes */
    uint64_t run_pos;  /* one-sync commits: where the commit's nodes start */
    uint64_t run_len;  /* ... how many bytes they take */
    uint64_t run_hash; /* ... run_hash() of those bytes */
    uint64_t check;    /* hash of the fields above and the slot number */
} hdr_slot;

enum { HS_ONE_SYNC = 1 };

typedef struct file_hdr {
    char magic[8];       /* HDR_MAGIC */
    uint16_t read_fmt;   /* format version needed to read */
    uint16_t write_fmt;  /* format version needed to write */
    uint8_t selector;    /* slot in use: 0 or 1 */
    uint8_t reserved[3]; /* zero */
    hdr_slot slot[2];    /* the two top-ref slots */
    uint64_t id;         /* the journal id (FORMAT.md §2; 0: none yet) */
    uint64_t id_check;   /* file_id_check(id) */
    uint8_t tail[32];    /* zero */
} file_hdr;

_Static_assert(sizeof(file_hdr) == HDR_USED, "header layout");

static uint64_t slot_check(const hdr_slot *s, int which)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)which;
    const uint64_t w[7] = {s->top, s->version, s->size, s->flags, s->run_pos, s->run_len, s->run_hash};
    for (int i = 0; i < 7; i++) {
        h ^= w[i];
        h *= 0x100000001b3ull;
        h ^= h >> 31;
    }
    return h | 1; /* never 0, so a zeroed slot never checks */
}

uint64_t file_id_check(uint64_t id)
{
    uint64_t h = (id ^ 0x6a6f75726e616c21ull) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return h | 1;
}

/* A 64-bit hash of a commit's bytes (n is a multiple of 8). */
uint64_t file_run_hash(const uint8_t *p, uint64_t n)
{
    run_hash h = run_hash_start(n);
    run_hash_words(&h, p, n);
    return run_hash_end(&h);
}

int file_write_failed(cs_dbfile *f, int e)
{
    if (e == ENOSPC || e == EDQUOT || e == EFBIG) return cs_fail(CS_FULL, e, "disk full while writing %s", f->path);
    return cs_fail(CS_IOERR, e, "write to %s failed: %s", f->path, strerror(e));
}

int file_pwrite(cs_dbfile *f, const void *buf, uint64_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = f->io->pwrite(f->io->ctx, f->fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return file_write_failed(f, errno);
        }
        if (w == 0) return cs_fail(CS_IOERR, EIO, "write to %s made no progress", f->path);
        p += w;
        n -= (uint64_t)w;
        off += (uint64_t)w;
    }
    return CS_OK;
}

int file_sync(cs_dbfile *f)
{
    if (f->durability != CS_DURABILITY_FULL) return CS_OK;
    if (f->io->fdatasync(f->io->ctx, f->fd) != 0) {
        int e = errno;
        f->broken = true;
        return cs_fail(CS_IOERR, e, "sync of %s failed (%s); reopen the file to write again",
                       f->path, strerror(e));
    }
    return CS_OK;
}

/* Why slot s cannot be used, or NULL when it can: its check matches, what it names lies inside
 * the file and, for a one-sync commit, every byte that commit wrote reached the file (else the
 * commit was torn or damaged and the other slot holds the newest intact version). */
static const char *slot_problem(cs_dbfile *f, uint64_t phys, const file_hdr *h, int s)
{
    const hdr_slot *x = &h->slot[s];
    if (x->check != slot_check(x, s)) return "its check does not match (the slot is damaged)";
    if (x->size > phys || x->size < HDR_SIZE || x->top < HDR_SIZE || x->top >= x->size || (x->top & 7))
        return "it names bytes past the end of the file (the file was truncated)";
    if (!(x->flags & HS_ONE_SYNC)) return NULL;
    /* run_pos names the commit's run list: (position, length) pairs, in the order hashed */
    if (x->run_len > ONE_SYNC_MAX || (x->run_len & 7) || x->run_pos < HDR_SIZE || (x->run_pos & 7) ||
        x->run_pos + NODE_HDR > phys)
        return "its commit's run list is missing (the file was truncated or the slot is damaged)";
    node_hdr rh;
    if (f->io->pread(f->io->ctx, f->fd, &rh, NODE_HDR, (off_t)x->run_pos) != (ssize_t)NODE_HDR)
        return "its commit's run list cannot be read";
    if (rh.flags != 0 || rh.width != 64 || (rh.count & 1) || (uint64_t)rh.count * 8 > ONE_SYNC_MAX ||
        x->run_pos + NODE_HDR + (uint64_t)rh.count * 8 > phys)
        return "its commit's run list is damaged or cut off";
    uint64_t *pairs = malloc((uint64_t)rh.count * 8 + 8);
    uint8_t *b = malloc(x->run_len + 8);
    bool ok = pairs && b &&
              f->io->pread(f->io->ctx, f->fd, pairs, (uint64_t)rh.count * 8, (off_t)(x->run_pos + NODE_HDR)) ==
                  (ssize_t)((uint64_t)rh.count * 8);
    const char *why = ok ? NULL : "its commit's run list cannot be read";
    uint64_t at = 0;
    for (uint32_t i = 0; ok && i < rh.count; i += 2) {
        uint64_t p = pairs[i], n = pairs[i + 1];
        if (n == 0) continue;
        if (n > x->run_len - at || p < HDR_SIZE || p > phys || n > phys - p) {
            why = "its commit's bytes lie past the end of the file (the file was truncated)";
            ok = false;
        } else if (f->io->pread(f->io->ctx, f->fd, b + at, n, (off_t)p) != (ssize_t)n) {
            why = "its commit's bytes cannot be read";
            ok = false;
        } else {
            at += n;
        }
    }
    if (ok && (at != x->run_len || file_run_hash(b, x->run_len) != x->run_hash))
        why = "its commit's bytes do not match the hash the slot keeps (a torn or damaged commit)";
    free(pairs);
    free(b);
    return why;
}

/* Reads the header and picks the slot to open (FORMAT.md §2). When the slot the selector names
 * is rejected and the other one used, or the selector names an older slot than a valid other
 * one, `note` (if not NULL) says so (FORMAT.md §2, What damage leads to). */
static int read_header(cs_dbfile *f, uint64_t phys, file_hdr *h, int *sel, rejected_slot *note)
{
    if (note) memset(note, 0, sizeof *note);
    if (phys < sizeof *h) return cs_fail(CS_CORRUPT, 0, "%s is not a database (too short)", f->path);
    ssize_t n = f->io->pread(f->io->ctx, f->fd, h, sizeof *h, 0);
    if (n != (ssize_t)sizeof *h) return cs_fail(CS_IOERR, errno, "cannot read the header of %s", f->path);
    if (memcmp(h->magic, HDR_MAGIC, 8) != 0) return cs_fail(CS_CORRUPT, 0, "%s is not a database", f->path);
    if (h->read_fmt > FORMAT_READ)
        return cs_fail(CS_VERSION, 0, "%s needs format version %u; this library reads up to %u",
                       f->path, h->read_fmt, FORMAT_READ);
    int s = h->selector & 1;
    const char *why = h->selector > 1 ? "the selector byte is damaged" : slot_problem(f, phys, h, s);
    if (why) {
        const char *other = slot_problem(f, phys, h, s ^ 1);
        if (other)
            return CORRUPT("%s: neither header slot is valid (slot %d: %s; slot %d: %s)", f->path, s, why,
                           s ^ 1, other);
        if (note) {
            note->rejected = true;
            note->slot = s;
            note->version = h->slot[s].version;
            snprintf(note->why, sizeof note->why, "%s", why);
        }
        s ^= 1;
    } else if (h->slot[s ^ 1].version > h->slot[s].version && !slot_problem(f, phys, h, s ^ 1) && note) {
        /* a valid newer slot that the selector does not name: the selector is damaged; the
         * selected version is intact and is opened, but not silently */
        note->rejected = true;
        note->slot = s ^ 1;
        note->version = h->slot[s ^ 1].version;
        snprintf(note->why, sizeof note->why, "the selector names slot %d (version %llu) instead (the selector is damaged)",
                 s, (unsigned long long)h->slot[s].version);
    }
    *sel = s;
    return CS_OK;
}

int file_writer_acquire(cs_dbfile *f)
{
    bool recover;
    TRY(lock_writer_acquire(f, &recover));
    if (!recover) return CS_OK;
    uint64_t v, top, lg;
    int sel;
    int rc = file_read_latest(f, &v, &top, &lg, &sel, NULL);
    if (rc != CS_OK) {
        lock_writer_release(f);
        return rc;
    }
    lock_writer_recovered(f, v, top, lg, sel);
    /* the dead writer's record lies at the shared end, unpublished, and its in-place writes
     * are in the page cache: a checkpoint makes them durable before the next record
     * overwrites it (journal.c invariant 3) */
    journal_shared *js = lock_journal(f);
    if (js && (js->flags & JS_RECORDS) && (rc = journal_checkpoint(f)) != CS_OK) {
        lock_writer_release(f);
        return rc;
    }
    return CS_OK;
}

/* Reads the header and picks its slot as read_header does, for a process that holds no pin and
 * no lock that keeps writers out (FORMAT.md, Opening a file): other processes may commit while
 * it reads. Two commits in the meantime can reuse the space of both slots' commits, and the
 * file may grow past the size stat gave, so a slot that fails its checks may only be stale.
 * The verdict is kept only when the size and the header bytes are the same after the checks as
 * before them; otherwise it reads again. `phys` gets the size the verdict was made with. */
static int read_header_settled(cs_dbfile *f, uint64_t *phys, file_hdr *h, int *sel, rejected_slot *note)
{
    for (int tries = 0;; tries++) {
        struct stat st;
        if (f->io->fstat(f->io->ctx, f->fd, &st) != 0) return cs_fail(CS_IOERR, errno, "cannot stat %s", f->path);
        *phys = (uint64_t)st.st_size;
        int rc = read_header(f, *phys, h, sel, note);
        if (rc == CS_OK && !(note && note->rejected)) return CS_OK;
        if (rc != CS_OK && rc != CS_CORRUPT) return rc;
        /* a clean verdict needs no second look; a rejection does */
        file_hdr again;
        struct stat st2;
        if (f->io->fstat(f->io->ctx, f->fd, &st2) != 0) return cs_fail(CS_IOERR, errno, "cannot stat %s", f->path);
        ssize_t n = f->io->pread(f->io->ctx, f->fd, &again, sizeof again, 0);
        bool same = (uint64_t)st2.st_size == *phys &&
                    (*phys < sizeof again || (n == (ssize_t)sizeof again && memcmp(&again, h, sizeof again) == 0));
        if (same || tries == OPEN_HEADER_TRIES) return rc;
        if (tries >= 8) {
            struct timespec ts = {0, 1000000}; /* 1 ms: let the writer finish its commit */
            nanosleep(&ts, NULL);
        }
    }
}

int file_read_latest(cs_dbfile *f, uint64_t *version, uint64_t *top, uint64_t *logical, int *sel,
                     rejected_slot *note)
{
    uint64_t phys;
    file_hdr h;
    TRY(read_header_settled(f, &phys, &h, sel, note));
    *version = h.slot[*sel].version;
    *top = h.slot[*sel].top;
    *logical = h.slot[*sel].size;
    return CS_OK;
}

void file_fresh_header(void *out, uint64_t top, uint64_t version, uint64_t size, uint16_t fmt)
{
    file_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, HDR_MAGIC, 8);
    h.read_fmt = fmt;
    h.write_fmt = fmt;
    h.slot[0].top = top;
    h.slot[0].version = version;
    h.slot[0].size = size;
    h.slot[0].check = slot_check(&h.slot[0], 0);
    h.selector = 0;
    memcpy(out, &h, sizeof h);
}

/* `fmt` is the format version both slots' versions need (FORMAT.md §2): the header says it
 * for read and write alike. */
int file_build_header(cs_dbfile *f, int sel, uint64_t top, uint64_t version, uint64_t size, bool fresh,
                      const run_info *run, uint16_t fmt, void *out)
{
    /* invariant 2: the slot written is never the one the current version is read from */
    cs_assert(sel == 0 || sel == 1);
    cs_assert(fresh || sel != f->selector);
    file_hdr h;
    memset(&h, 0, sizeof h);
    if (!fresh) {
        /* the other slot must be written back exactly as it is on disk: use the image of the
         * last header this process wrote or read, if it is still the newest */
        if (f->hdr_version == f->version) {
            memcpy(&h, f->hdr_img, sizeof h);
        } else {
            ssize_t n = f->io->pread(f->io->ctx, f->fd, &h, sizeof h, 0);
            if (n != (ssize_t)sizeof h) return cs_fail(CS_IOERR, errno, "cannot read the header of %s", f->path);
        }
    }
    memcpy(h.magic, HDR_MAGIC, 8);
    h.read_fmt = fmt;
    h.write_fmt = fmt;
    h.slot[sel].top = top;
    h.slot[sel].version = version;
    h.slot[sel].size = size;
    h.slot[sel].flags = run && run->len ? HS_ONE_SYNC : 0;
    h.slot[sel].run_pos = run ? run->pos : 0;
    h.slot[sel].run_len = run ? run->len : 0;
    h.slot[sel].run_hash = run ? run->hash : 0;
    h.slot[sel].check = slot_check(&h.slot[sel], sel);
    h.selector = (uint8_t)sel;
    /* the journal id of the file stays in every header written (FORMAT.md §13) */
    journal_shared *js = lock_journal(f);
    uint64_t id = js ? __atomic_load_n(&js->id, __ATOMIC_RELAXED) : 0;
    if (id) {
        h.id = id;
        h.id_check = file_id_check(id);
    }
    memcpy(out, &h, sizeof h);
    return CS_OK;
}

uint64_t file_header_newest_version(cs_dbfile *f)
{
    file_hdr h;
    if (f->io->pread(f->io->ctx, f->fd, &h, sizeof h, 0) != (ssize_t)sizeof h) return 0;
    if (memcmp(h.magic, HDR_MAGIC, 8) != 0) return 0;
    uint64_t v = 0;
    for (int s = 0; s < 2; s++)
        if (h.slot[s].check == slot_check(&h.slot[s], s) && h.slot[s].version > v) v = h.slot[s].version;
    return v;
}

bool file_header_run(const void *img, uint64_t *version, uint64_t *len, uint64_t *hash)
{
    file_hdr h;
    memcpy(&h, img, sizeof h);
    if (memcmp(h.magic, HDR_MAGIC, 8) != 0 || h.selector > 1) return false;
    const hdr_slot *s = &h.slot[h.selector];
    if (s->check != slot_check(s, h.selector) || !(s->flags & HS_ONE_SYNC)) return false;
    *version = s->version;
    *len = s->run_len;
    *hash = s->run_hash;
    return true;
}

int file_put_header(cs_dbfile *f, const void *img, uint64_t version)
{
    f->hdr_version = 0;
    TRY(file_write_at(f, img, HDR_USED, 0));
    memcpy(f->hdr_img, img, HDR_USED);
    f->hdr_version = version;
    return CS_OK;
}

int file_write_header(cs_dbfile *f, int sel, uint64_t top, uint64_t version, uint64_t size, bool fresh,
                      const run_info *run, uint16_t fmt)
{
    file_hdr h;
    TRY(file_build_header(f, sel, top, version, size, fresh, run, fmt, &h));
    return file_put_header(f, &h, version);
}

/* ---- mapping ---------------------------------------------------------------------------- */

int file_map_for(cs_dbfile *f, uint64_t size)
{
    if (f->map && f->map->len >= size) return CS_OK;
    uint64_t len = size * 4;
    if (len < (1ull << 30)) len = 1ull << 30;
    len = (len + (64ull << 20) - 1) & ~((64ull << 20) - 1);
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, f->fd, 0);
    if (p == MAP_FAILED) {
        /* try exactly what is needed before giving up */
        len = (size + 4095) & ~4095ull;
        p = mmap(NULL, len, PROT_READ, MAP_SHARED, f->fd, 0);
        if (p == MAP_FAILED)
            return cs_fail(CS_NOMEM, errno, "cannot map %s (%llu bytes): address space exhausted",
                           f->path, (unsigned long long)len);
    }
    mapping *m = malloc(sizeof *m);
    if (!m) {
        munmap(p, len);
        return NOMEM();
    }
    m->base = p;
    m->len = len;
    m->prev = f->map;
    f->map = m;
    return CS_OK;
}

/* ---- opening ---------------------------------------------------------------------------- */

static pthread_mutex_t files_mu = PTHREAD_MUTEX_INITIALIZER;
static cs_dbfile *files;

/* ---- fork (docs/ARCHITECTURE.md, Processes, Fork) ------------------------------------------ */

void file_fork_prepare(void)
{
    /* no open or close in progress at the fork (an open may hold the join lock on a descriptor
     * of its own, which the child would keep), and every file's mu free in the child */
    pthread_mutex_lock(&files_mu);
    for (cs_dbfile *f = files; f; f = f->next) pthread_mutex_lock(&f->mu);
}

void file_fork_parent(void)
{
    for (cs_dbfile *f = files; f; f = f->next) pthread_mutex_unlock(&f->mu);
    pthread_mutex_unlock(&files_mu);
}

void file_fork_child(void)
{
    /* (single-threaded here; system calls only) */
    for (cs_dbfile *f = files; f; f = f->next) {
        pthread_mutex_unlock(&f->mu);
        lock_fork_drop(f);
        /* Reads through an inherited transaction find zeros (damaged nodes: CS_CORRUPT), never
         * the parent's file: once the parent drops its pin, a commit may reuse those pages and
         * online shrinking cut the file under the child's mapping (SIGBUS at the next read).
         * The writable mapping goes (nothing commits through an inherited handle). */
        for (mapping *m = f->map; m; m = m->prev)
            mmap(m->base, m->len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        if (f->wmap) munmap(f->wmap, f->wmap_len);
        f->wmap = NULL;
        f->wmap_len = 0;
        f->wmap_ok = 0;
        f->wmap_armed = false;
    }
    pthread_mutex_unlock(&files_mu);
}

static int create_fresh(cs_dbfile *f)
{
    /* one node: the top, with every slot empty but size and version */
    uint8_t buf[NODE_HDR + TOP_SLOTS * 8];
    memset(buf, 0, sizeof buf);
    node_hdr *h = (node_hdr *)buf;
    h->flags = NF_REFS;
    h->width = 64;
    h->count = TOP_SLOTS;
    uint64_t size = HDR_SIZE + sizeof buf;
    uint64_t *e = node_refs(h);
    e[TOP_SIZE] = tag_int((int64_t)size);
    e[TOP_VERSION] = tag_int(1);
    e[TOP_SCHEMA_VERSION] = tag_int(0);
    h->check = node_checksum(h);
    if (f->io->ftruncate(f->io->ctx, f->fd, (off_t)HDR_SIZE) != 0)
        return cs_fail(errno == ENOSPC ? CS_FULL : CS_IOERR, errno, "cannot size %s", f->path);
    TRY(file_pwrite(f, buf, sizeof buf, HDR_SIZE));
    TRY(file_sync(f));
    TRY(file_write_header(f, 0, HDR_SIZE, 1, size, true, NULL, FORMAT_BASE));
    TRY(file_sync(f));
    return CS_OK;
}

/* True for a file no process has finished creating: empty, or only what create_fresh writes
 * before the header (the header area still zero, at most the first node after it). Anything
 * else, however short, is somebody's data and is never overwritten. */
static bool unborn(cs_dbfile *f, uint64_t phys)
{
    if (phys == 0) return true;
    if (phys > HDR_SIZE + NODE_HDR + TOP_SLOTS * 8) return false;
    uint8_t h[HDR_USED];
    uint64_t n = phys < sizeof h ? phys : sizeof h;
    if (f->io->pread(f->io->ctx, f->fd, h, n, 0) != (ssize_t)n) return false;
    for (uint64_t i = 0; i < n; i++)
        if (h[i]) return false;
    return true;
}

/* Frees the shared state; true when no other process had the file open. */
static bool dbfile_free(cs_dbfile *f)
{
    bool alone = lock_close(f);
    journal_log_note(f); /* a failed checkpoint at the last close, say (journal.c) */
    file_wmap_free(f);
    mapping *m = f->map;
    while (m) {
        mapping *p = m->prev;
        munmap(m->base, m->len);
        free(m);
        m = p;
    }
    for (int k = 0; k < SLAB_REGIONS; k++)
        if (f->slab.region[k]) munmap(f->slab.region[k], (uint64_t)1 << (20 + k));
    journal_close(f);
    if (f->fd >= 0) f->io->close(f->io->ctx, f->fd);
    schema_release(f->schema_cache);
    pthread_mutex_destroy(&f->mu);
    free(f->pins);
    fl_clear(&f->fl);
    free(f->path);
    free(f);
    return alone;
}

/* open_file's answer when the file at the path was replaced while it joined (never returned
 * to callers: cs_db_open opens again). */
#define RETRY_OPEN (-1)

static int open_file(const char *path, const cs_options *o, cs_dbfile **out)
{
    const cs_io *io = o->io ? o->io : &default_io;
    bool ro = (o->flags & CS_OPEN_READONLY) != 0;
    int fl = (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC; /* (an I/O layer's open passes it on; the default adds it) */
    if (!ro && (o->flags & CS_OPEN_CREATE)) fl |= O_CREAT;
    int fd = io->open(io->ctx, path, fl, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT) return cs_fail(CS_NOTFOUND, e, "no database at %s", path);
        if (e == EACCES || e == EPERM || e == EROFS)
            return cs_fail(e == EROFS ? CS_READONLY : CS_PERM, e, "cannot open %s: %s", path, strerror(e));
        return cs_fail(CS_IOERR, e, "cannot open %s: %s", path, strerror(e));
    }
    struct stat st;
    if (io->fstat(io->ctx, fd, &st) != 0) {
        int e = errno;
        io->close(io->ctx, fd);
        return cs_fail(CS_IOERR, e, "cannot stat %s", path);
    }
    if (!S_ISREG(st.st_mode)) {
        /* No bytes to judge: an I/O error, not a damaged database (a read-only open of a
         * directory gets here; a read-write one fails in open() with EISDIR). */
        io->close(io->ctx, fd);
        return cs_fail(CS_IOERR, S_ISDIR(st.st_mode) ? EISDIR : 0, "%s is not a regular file", path);
    }
    pthread_mutex_lock(&files_mu);
    for (cs_dbfile *f = files; f; f = f->next) {
        /* (a file the process this one was forked from opened is not this process's: a handle
         * opened here gets its own, docs/ARCHITECTURE.md, Processes, Fork) */
        if (f->dev == st.st_dev && f->ino == st.st_ino && !lock_inherited(f)) {
            if (f->compacting) {
                pthread_mutex_unlock(&files_mu);
                io->close(io->ctx, fd);
                return cs_fail(CS_BUSY, 0, "%s is being compacted in this process", path);
            }
            if (!ro && f->readonly) {
                pthread_mutex_unlock(&files_mu);
                io->close(io->ctx, fd);
                return cs_fail(CS_BUSY, 0, "%s is open read-only in this process", path);
            }
            f->refs++;
            pthread_mutex_unlock(&files_mu);
            io->close(io->ctx, fd);
            *out = f;
            return CS_OK;
        }
    }
    int rc = CS_OK;
    cs_dbfile *f = calloc(1, sizeof *f);
    if (!f) { rc = NOMEM(); goto fail_fd; }
    lock_fork_mark(f);
    f->refs = 1;
    f->lfd = -1;
    f->jfd = -1;
    f->jdfd = -1;
    f->slot = -1;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->fd = fd;
    f->io = io;
    f->readonly = ro;
    f->durability = o->durability;
    f->max_versions = o->max_active_versions;
    f->path = strdup(path);
    pthread_mutex_init(&f->mu, NULL);
    uint64_t phys = (uint64_t)st.st_size;
    if (unborn(f, phys)) {
        /* creation is serialised by the lock file's set-up lock (invariant 5) */
        int cfd;
        if ((rc = lock_creation_begin(path, !ro, &cfd)) != CS_OK) goto fail_f;
        if (io->fstat(io->ctx, fd, &st) != 0) rc = cs_fail(CS_IOERR, errno, "cannot stat %s", path);
        else if (!unborn(f, (uint64_t)st.st_size)) rc = CS_OK; /* another process created it */
        else if (ro) rc = cs_fail(CS_CORRUPT, 0, "%s is empty (no process has finished creating it)", path);
        else if (st.st_size && io->ftruncate(io->ctx, fd, 0) != 0) rc = cs_fail(CS_IOERR, errno, "cannot reset %s", path);
        else rc = create_fresh(f);
        if (rc == CS_OK && io->fstat(io->ctx, fd, &st) != 0) rc = cs_fail(CS_IOERR, errno, "cannot stat %s", path);
        lock_creation_end(cfd);
        if (rc != CS_OK) goto fail_f;
        phys = (uint64_t)st.st_size;
    }
    /* a power cut may have left commits in the journal: replayed before the header is read,
     * when no other process has the file open (FORMAT.md §13, Recovery) */
    if ((rc = journal_recover_open(f, ro)) != CS_OK) goto fail_f;
    file_hdr h;
    int sel;
    if ((rc = read_header_settled(f, &phys, &h, &sel, &f->rejected)) != CS_OK) goto fail_f;
    if (!ro && h.write_fmt > FORMAT_WRITE) {
        rc = cs_fail(CS_VERSION, 0, "%s needs format version %u to write; this library writes %u",
                     path, h.write_fmt, FORMAT_WRITE);
        goto fail_f;
    }
    f->rejected.opened = h.slot[sel].version;
    f->selector = sel;
    f->top = h.slot[sel].top;
    f->version = h.slot[sel].version;
    f->logical = h.slot[sel].size;
    f->phys_size = phys;
    if ((rc = file_map_for(f, phys > f->logical ? phys : f->logical)) != CS_OK) goto fail_f;
    if ((rc = lock_open(f, ro, f->version, f->top, f->logical, f->selector)) != CS_OK) goto fail_f;
    /* Compaction (compact.c) renames a new file over the path while new processes wait to join:
     * one that opened the old file before the rename finds the path naming another file now and
     * opens again (RETRY_OPEN), so nobody writes to a file no path names. */
    struct stat now;
    if (stat(path, &now) == 0 && (now.st_dev != st.st_dev || now.st_ino != st.st_ino)) {
        rc = RETRY_OPEN;
        goto fail_f;
    }
    lock_read_latest(f);
    if ((rc = file_map_for(f, f->logical)) != CS_OK) goto fail_f;
    f->next = files;
    files = f;
    pthread_mutex_unlock(&files_mu);
    *out = f;
    return CS_OK;
fail_f: {
    /* what the open found in the journal (commits recovered, say) is logged all the same, once
     * files_mu is released (cstore.h, "Logging") */
    char note[sizeof f->journal_note];
    int level = 0;
    bool noted = journal_take_note(f, note, sizeof note, &level);
    f->fd = -1;
    dbfile_free(f);
    pthread_mutex_unlock(&files_mu);
    io->close(io->ctx, fd);
    if (noted) log_printf(level, LOG_CAT_STORAGE, "%s", note);
    return rc;
}
fail_fd:
    pthread_mutex_unlock(&files_mu);
    io->close(io->ctx, fd);
    return rc;
}

int cs_db_open(const char *path, const cs_options *opts, cs_db **out)
{
    cs_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    if (!path || !out) return cs_fail(CS_MISUSE, 0, "cs_db_open: path and out are required");
    /* An open goes on past failures of its own (a header read again after a read that found it
     * damaged, a fallback taken): a successful one leaves the thread's last failure as it was
     * (error.h), not the text of a step it recovered from. */
    cs_err_saved saved;
    cs_err_save(&saved);
    lock_fork_init(); /* (before open_file takes files_mu, which the fork's prepare handler takes) */
    cs_dbfile *f;
    int rc;
    for (int tries = 0; (rc = open_file(path, &o, &f)) == RETRY_OPEN; tries++)
        if (tries == 100) return cs_fail(CS_BUSY, 0, "%s keeps being replaced while it is opened", path);
    TRY(rc);
    cs_err_restore(&saved);
    cs_db *db = calloc(1, sizeof *db);
    if (!db) return NOMEM();
    db->f = f;
    db->path = strdup(path);
    db->readonly = f->readonly || (o.flags & CS_OPEN_READONLY);
    db->shrink = (o.flags & CS_OPEN_SHRINK) != 0;
    *out = db;
    log_printf(CS_LOG_INFO, LOG_CAT_STORAGE, "Open file: %s (%s)", path, db->readonly ? "read-only" : "read-write");
    journal_log_note(f); /* what the open found in the journal, outside the core's locks */
    return CS_OK;
}

int cs_db_close(cs_db *db)
{
    if (!db) return CS_OK;
    if (db->txns) return cs_fail(CS_MISUSE, 0, "cs_db_close: %d transactions still open", db->txns);
    if (db->spare) {
        /* the spare transaction struct keeps its last schema (txn.c, cs_txn_end) */
        schema_release(db->spare->schema);
        free(db->spare);
        db->spare = NULL;
    }
    cs_dbfile *f = db->f;
    pthread_mutex_lock(&files_mu);
    bool last = --f->refs == 0;
    if (last) {
        cs_dbfile **pp = &files;
        while (*pp != f) pp = &(*pp)->next;
        *pp = f->next;
    }
    pthread_mutex_unlock(&files_mu);
    if (last) {
        char *path = f->durability == CS_DURABILITY_MEMORY ? strdup(f->path) : NULL;
        bool alone = dbfile_free(f);
        if (path && alone) unlink(path);
        free(path);
    }
    free(db->path);
    free(db);
    return CS_OK;
}

int file_claim(cs_dbfile *f)
{
    pthread_mutex_lock(&files_mu);
    int refs = f->refs;
    if (refs == 1) f->compacting = true;
    pthread_mutex_unlock(&files_mu);
    if (refs != 1)
        return cs_fail(CS_BUSY, 0, "%s is open through %d other handle%s in this process", f->path, refs - 1,
                       refs == 2 ? "" : "s");
    return CS_OK;
}

uint64_t cs_db_version(cs_db *db)
{
    pthread_mutex_lock(&db->f->mu);
    lock_read_latest(db->f);
    uint64_t v = db->f->version;
    pthread_mutex_unlock(&db->f->mu);
    return v;
}

const char *cs_db_path(cs_db *db) { return db->path; }

uint64_t cs_db_recovered_commits(cs_db *db) { return db->f->recovered; }

bool cs_db_opened_alone(cs_db *db) { return db->f->opened_alone; }

bool cs_db_rejected_commit(cs_db *db, uint64_t *version, uint64_t *opened, char *why, size_t cap)
{
    cs_dbfile *f = db->f;
    if (!f->rejected.rejected && f->journal_lost) {
        if (version) *version = f->journal_lost + 1;
        if (opened) *opened = f->journal_lost;
        if (why && cap)
            snprintf(why, cap, "the header says the newest commits may be in the journal (format %u), but %s.journal "
                               "is missing: commits after version %llu made durable only in it are lost",
                     (unsigned)f->journal_lost_fmt, f->path, (unsigned long long)f->journal_lost);
        return true;
    }
    if (!f->rejected.rejected) return false;
    if (version) *version = f->rejected.version;
    if (opened) *opened = f->rejected.opened;
    if (why && cap) snprintf(why, cap, "header slot %d (version %llu) was not used: %s", f->rejected.slot,
                             (unsigned long long)f->rejected.version, f->rejected.why);
    return true;
}
