/*
 * file.c -- the database file: opening and creating it, the header and its two top-ref slots,
 * the shared mapping, the free lists and the commit protocol (docs/FORMAT.md §2 and §7).
 *
 * Durability rules (FULL mode), numbered as the tests refer to them:
 *  1. A commit never writes over a byte reachable from the newest committed version, nor from
 *     any version a live reader pins: it writes only into free space whose version tag is not
 *     newer than the oldest live version, or past the logical end of the file.
 *  2. All nodes of a commit are written and synced before the header changes.
 *  3. The header write puts the new top into the slot the current version does not use and flips
 *     the selector in the same 128-byte write; the unused slot is never the one being read. Each
 *     slot carries a checksum, so a torn header write leaves the old slot selected or valid.
 *  4. A failed sync marks the file broken: the page cache may hold data the disk does not, so no
 *     further commit is attempted through this process until the file is reopened.
 */
#include "node.h"
#include "schema.h"
#include "txn.h"
#include "changes.h"
#include "index.h"
#include "lock.h"
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the default I/O layer -------------------------------------------------------------- */

static int d_open(void *c, const char *p, int fl, mode_t m) { (void)c; return open(p, fl | O_CLOEXEC, m); }
static int d_close(void *c, int fd) { (void)c; return close(fd); }
static ssize_t d_pread(void *c, int fd, void *b, size_t n, off_t o) { (void)c; return pread(fd, b, n, o); }
static ssize_t d_pwrite(void *c, int fd, const void *b, size_t n, off_t o) { (void)c; return pwrite(fd, b, n, o); }
static int d_fdatasync(void *c, int fd) { (void)c; return fdatasync(fd); }
static int d_ftruncate(void *c, int fd, off_t s) { (void)c; return ftruncate(fd, s); }
static int d_fstat(void *c, int fd, struct stat *st) { (void)c; return fstat(fd, st); }

static const cs_io default_io = {d_open, d_close, d_pread, d_pwrite, d_fdatasync, d_ftruncate, d_fstat, NULL};

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
    uint8_t tail[48];    /* zero */
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

/* A 64-bit hash of a commit's bytes (n is a multiple of 8). */
static uint64_t run_hash(const uint8_t *p, uint64_t n)
{
    uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0x632be59bd9b4e019ull;
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        a = (a ^ w) * 0xff51afd7ed558ccdull;
        b = (b + w) ^ (a >> 29);
    }
    a ^= b * 0xc4ceb9fe1a85ec53ull;
    return a ^ (a >> 32);
}

static int full_pwrite(cs_dbfile *f, const void *buf, uint64_t n, uint64_t off)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = f->io->pwrite(f->io->ctx, f->fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            if (e == ENOSPC || e == EDQUOT || e == EFBIG)
                return cs_fail(CS_FULL, e, "disk full while writing %s", f->path);
            return cs_fail(CS_IOERR, e, "write to %s failed: %s", f->path, strerror(e));
        }
        if (w == 0) return cs_fail(CS_IOERR, EIO, "write to %s made no progress", f->path);
        p += w;
        n -= (uint64_t)w;
        off += (uint64_t)w;
    }
    return CS_OK;
}

static int file_sync(cs_dbfile *f)
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

/* A slot is valid when its check matches and, for a one-sync commit, when every byte that
 * commit wrote reached the file (else the commit was torn and the other slot holds the
 * newest durable version). */
static bool slot_valid(cs_dbfile *f, uint64_t phys, const file_hdr *h, int s)
{
    const hdr_slot *x = &h->slot[s];
    if (x->check != slot_check(x, s)) return false;
    if (!(x->flags & HS_ONE_SYNC)) return true;
    /* run_pos names the commit's run list: (position, length) pairs, in the order hashed */
    if (x->run_len > ONE_SYNC_MAX || (x->run_len & 7) || x->run_pos < HDR_SIZE || (x->run_pos & 7) ||
        x->run_pos + NODE_HDR > phys)
        return false;
    node_hdr rh;
    if (f->io->pread(f->io->ctx, f->fd, &rh, NODE_HDR, (off_t)x->run_pos) != (ssize_t)NODE_HDR) return false;
    if (rh.flags != 0 || rh.width != 64 || (rh.count & 1) || (uint64_t)rh.count * 8 > ONE_SYNC_MAX ||
        x->run_pos + NODE_HDR + (uint64_t)rh.count * 8 > phys)
        return false;
    uint64_t *pairs = malloc((uint64_t)rh.count * 8 + 8);
    uint8_t *b = malloc(x->run_len + 8);
    bool ok = pairs && b &&
              f->io->pread(f->io->ctx, f->fd, pairs, (uint64_t)rh.count * 8, (off_t)(x->run_pos + NODE_HDR)) ==
                  (ssize_t)((uint64_t)rh.count * 8);
    uint64_t at = 0;
    for (uint32_t i = 0; ok && i < rh.count; i += 2) {
        uint64_t p = pairs[i], n = pairs[i + 1];
        if (n == 0) continue;
        if (n > x->run_len - at || p < HDR_SIZE || p > phys || n > phys - p ||
            f->io->pread(f->io->ctx, f->fd, b + at, n, (off_t)p) != (ssize_t)n)
            ok = false;
        else
            at += n;
    }
    ok = ok && at == x->run_len && run_hash(b, x->run_len) == x->run_hash;
    free(pairs);
    free(b);
    return ok;
}

static int read_header(cs_dbfile *f, uint64_t phys, file_hdr *h, int *sel)
{
    if (phys < sizeof *h) return cs_fail(CS_CORRUPT, 0, "%s is not a database (too short)", f->path);
    ssize_t n = f->io->pread(f->io->ctx, f->fd, h, sizeof *h, 0);
    if (n != (ssize_t)sizeof *h) return cs_fail(CS_IOERR, errno, "cannot read the header of %s", f->path);
    if (memcmp(h->magic, HDR_MAGIC, 8) != 0) return cs_fail(CS_CORRUPT, 0, "%s is not a database", f->path);
    if (h->read_fmt > FORMAT_READ)
        return cs_fail(CS_VERSION, 0, "%s needs format version %u; this library reads up to %u",
                       f->path, h->read_fmt, FORMAT_READ);
    int s = h->selector & 1;
    if (h->selector > 1 || !slot_valid(f, phys, h, s)) s ^= 1;
    if (!slot_valid(f, phys, h, s))
        return CORRUPT("%s: neither header slot is valid", f->path);
    hdr_slot *x = &h->slot[s];
    if (x->size > phys || x->size < HDR_SIZE || x->top < HDR_SIZE || x->top >= x->size || (x->top & 7))
        return CORRUPT("%s: header points outside the file (top %llu, size %llu, file %llu)", f->path,
                       (unsigned long long)x->top, (unsigned long long)x->size, (unsigned long long)phys);
    *sel = s;
    return CS_OK;
}

int file_read_latest(cs_dbfile *f, uint64_t *version, uint64_t *top, uint64_t *logical, int *sel)
{
    struct stat st;
    if (f->io->fstat(f->io->ctx, f->fd, &st) != 0) return cs_fail(CS_IOERR, errno, "cannot stat %s", f->path);
    file_hdr h;
    TRY(read_header(f, (uint64_t)st.st_size, &h, sel));
    *version = h.slot[*sel].version;
    *top = h.slot[*sel].top;
    *logical = h.slot[*sel].size;
    return CS_OK;
}

typedef struct run_info {
    uint64_t pos, len, hash; /* the one run of a one-sync commit (len 0: two-sync commit) */
} run_info;

/* `fmt` is the format version both slots' versions need (FORMAT.md §2): the header says it
 * for read and write alike. */
static int write_header(cs_dbfile *f, int sel, uint64_t top, uint64_t version, uint64_t size, bool fresh,
                        const run_info *run, uint16_t fmt)
{
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
    f->hdr_version = 0;
    TRY(full_pwrite(f, &h, sizeof h, 0));
    memcpy(f->hdr_img, &h, sizeof h);
    f->hdr_version = version;
    return CS_OK;
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
        return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
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
    TRY(full_pwrite(f, buf, sizeof buf, HDR_SIZE));
    TRY(file_sync(f));
    TRY(write_header(f, 0, HDR_SIZE, 1, size, true, NULL, FORMAT_BASE));
    TRY(file_sync(f));
    return CS_OK;
}

/* Frees the shared state; true when no other process had the file open. */
static bool dbfile_free(cs_dbfile *f)
{
    bool alone = lock_close(f);
    mapping *m = f->map;
    while (m) {
        mapping *p = m->prev;
        munmap(m->base, m->len);
        free(m);
        m = p;
    }
    for (int k = 0; k < SLAB_REGIONS; k++)
        if (f->slab.region[k]) munmap(f->slab.region[k], (uint64_t)1 << (20 + k));
    if (f->fd >= 0) f->io->close(f->io->ctx, f->fd);
    schema_release(f->schema_cache);
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->write_mu);
    free(f->pins);
    free(f->free);
    free(f->path);
    free(f);
    return alone;
}

static int open_file(const char *path, const cs_options *o, cs_dbfile **out)
{
    const cs_io *io = o->io ? o->io : &default_io;
    bool ro = (o->flags & CS_OPEN_READONLY) != 0;
    int fl = ro ? O_RDONLY : O_RDWR;
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
        io->close(io->ctx, fd);
        return cs_fail(CS_CORRUPT, 0, "%s is not a regular file", path);
    }
    pthread_mutex_lock(&files_mu);
    for (cs_dbfile *f = files; f; f = f->next) {
        if (f->dev == st.st_dev && f->ino == st.st_ino) {
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
    if (!f) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory"); goto fail_fd; }
    f->refs = 1;
    f->lfd = -1;
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
    pthread_mutex_init(&f->write_mu, NULL);
    uint64_t phys = (uint64_t)st.st_size;
    if (phys == 0) {
        if (ro) { rc = cs_fail(CS_CORRUPT, 0, "%s is empty", path); goto fail_f; }
        if ((rc = create_fresh(f)) != CS_OK) goto fail_f;
        if (io->fstat(io->ctx, fd, &st) != 0) { rc = cs_fail(CS_IOERR, errno, "cannot stat %s", path); goto fail_f; }
        phys = (uint64_t)st.st_size;
    }
    file_hdr h;
    int sel;
    if ((rc = read_header(f, phys, &h, &sel)) != CS_OK) goto fail_f;
    if (!ro && h.write_fmt > FORMAT_WRITE) {
        rc = cs_fail(CS_VERSION, 0, "%s needs format version %u to write; this library writes %u",
                     path, h.write_fmt, FORMAT_WRITE);
        goto fail_f;
    }
    f->selector = sel;
    f->top = h.slot[sel].top;
    f->version = h.slot[sel].version;
    f->logical = h.slot[sel].size;
    f->phys_size = phys;
    if ((rc = file_map_for(f, phys > f->logical ? phys : f->logical)) != CS_OK) goto fail_f;
    if ((rc = lock_open(f, ro, f->version, f->top, f->logical, f->selector)) != CS_OK) goto fail_f;
    lock_read_latest(f);
    if ((rc = file_map_for(f, f->logical)) != CS_OK) goto fail_f;
    f->next = files;
    files = f;
    pthread_mutex_unlock(&files_mu);
    *out = f;
    return CS_OK;
fail_f:
    f->fd = -1;
    dbfile_free(f);
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
    cs_dbfile *f;
    TRY(open_file(path, &o, &f));
    cs_db *db = calloc(1, sizeof *db);
    if (!db) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    db->f = f;
    db->path = strdup(path);
    db->readonly = f->readonly || (o.flags & CS_OPEN_READONLY);
    *out = db;
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

uint64_t cs_db_version(cs_db *db)
{
    pthread_mutex_lock(&db->f->mu);
    lock_read_latest(db->f);
    uint64_t v = db->f->version;
    pthread_mutex_unlock(&db->f->mu);
    return v;
}

const char *cs_db_path(cs_db *db) { return db->path; }

/* ---- free lists ------------------------------------------------------------------------- */

static int cmp_extent(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int free_reserve(cs_dbfile *f, uint64_t n)
{
    if (n <= f->cap_free) return CS_OK;
    uint64_t nc = f->cap_free ? f->cap_free : 64;
    while (nc < n) nc *= 2;
    extent *e = realloc(f->free, nc * sizeof *e);
    if (!e) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    f->free = e;
    f->cap_free = nc;
    return CS_OK;
}

/* Loads the free list of the transaction's version into f->free (cached per version). */
int free_list_load(cs_txn *t)
{
    cs_dbfile *f = t->f;
    if (f->free_version == t->version) return CS_OK;
    uint64_t r[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) TRY(txn_top_get(t, TOP_FREE_POS + i, &r[i]));
    node_hdr *h[3] = {NULL, NULL, NULL};
    uint64_t n = 0;
    if (r[0]) {
        for (int i = 0; i < 3; i++) {
            if (!r[i] || tagged(r[i])) return CORRUPT("free list slots inconsistent");
            TRY(node_at(t, r[i], &h[i]));
            if ((h[i]->flags & (NF_BYTES | NF_REFS | NF_NULLS)) || h[i]->count != h[0]->count)
                return CORRUPT("free list arrays disagree");
        }
        n = h[0]->count;
    }
    TRY(free_reserve(f, n + 1));
    uint64_t k = 0, prev_end = 0;
    for (uint64_t i = 0; i < n; i++) {
        extent x = {(uint64_t)node_get_int(h[0], i), (uint64_t)node_get_int(h[1], i),
                    (uint64_t)node_get_int(h[2], i)};
        if (x.len == 0) continue;
        if (x.pos < HDR_SIZE || x.pos + x.len > t->limit || x.pos < prev_end || (x.pos & 7) || (x.len & 7))
            return CORRUPT("free list entry %llu (%llu+%llu) is invalid", (unsigned long long)i,
                           (unsigned long long)x.pos, (unsigned long long)x.len);
        prev_end = x.pos + x.len;
        f->free[k++] = x;
    }
    f->nfree = k;
    f->free_version = t->version;
    return CS_OK;
}

static uint64_t oldest_live(cs_dbfile *f, uint64_t latest)
{
    uint64_t o = lock_oldest_pin(f, latest);
    for (uint32_t i = 0; i < f->npins; i++)
        if (f->pins[i].count && f->pins[i].version < o) o = f->pins[i].version;
    return o;
}

/* Marks extents no live reader can see as reusable (version 0) and merges neighbours. */
static void free_coalesce(cs_dbfile *f, uint64_t oldest)
{
    for (uint64_t i = 0; i < f->nfree; i++)
        if (f->free[i].ver <= oldest) f->free[i].ver = 0;
    uint64_t k = 0;
    for (uint64_t i = 0; i < f->nfree; i++) {
        if (f->free[i].len == 0) continue;
        if (k && f->free[k - 1].pos + f->free[k - 1].len == f->free[i].pos &&
            f->free[k - 1].ver == f->free[i].ver) {
            f->free[k - 1].len += f->free[i].len;
        } else {
            f->free[k++] = f->free[i];
        }
    }
    f->nfree = k;
}

/* ---- backdating ------------------------------------------------------------------------- */

typedef struct vfree {
    uint64_t version;  /* a pinned version */
    extent *ext;       /* its free list, sorted by position */
    uint64_t n;        /* entries */
    uint64_t end;      /* its logical size: everything past it was unused then */
} vfree;

static int load_free_of(cs_txn *t, uint64_t top, vfree *out)
{
    out->ext = NULL;
    out->n = 0;
    node_hdr *h;
    TRY(node_at(t, top, &h));
    if (!(h->flags & NF_REFS) || h->count <= TOP_SIZE) return CORRUPT("top node at %llu is malformed", (unsigned long long)top);
    uint64_t sz = node_refs(h)[TOP_SIZE];
    if (!tagged(sz)) return CORRUPT("top node at %llu has no size", (unsigned long long)top);
    out->end = (uint64_t)untag(sz);
    uint64_t r[3] = {node_refs(h)[TOP_FREE_POS], node_refs(h)[TOP_FREE_LEN], node_refs(h)[TOP_FREE_VER]};
    if (!r[0]) return CS_OK;
    node_hdr *a[3];
    for (int i = 0; i < 3; i++) TRY(node_at(t, r[i], &a[i]));
    if (a[1]->count != a[0]->count) return CORRUPT("free list arrays disagree");
    out->ext = malloc((a[0]->count + 1) * sizeof(extent));
    if (!out->ext) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    for (uint32_t i = 0; i < a[0]->count; i++) {
        extent x = {(uint64_t)node_get_int(a[0], i), (uint64_t)node_get_int(a[1], i), 0};
        if (x.len) out->ext[out->n++] = x;
    }
    return CS_OK;
}

/* True if [pos, pos+len) lies in the free space of a version (its extents are sorted). */
static bool covered(const vfree *v, uint64_t pos, uint64_t len)
{
    uint64_t lo = 0, hi = v->n;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (v->ext[mid].pos + v->ext[mid].len <= pos) lo = mid + 1;
        else hi = mid;
    }
    uint64_t at = pos, end = pos + len;
    for (uint64_t i = lo; i < v->n && at < end && at < v->end; i++) {
        if (v->ext[i].pos > at) return false;
        uint64_t e = v->ext[i].pos + v->ext[i].len;
        if (e > at) at = e;
    }
    return at >= end || at >= v->end;
}

/*
 * Space freed at version F was reachable only from versions [C, F-1], C the version that wrote
 * it. The oldest-reader rule reuses it once no reader is older than F; backdating also reuses it
 * while older versions are pinned, when the newest possibly-live version V below F (processes
 * publish the range of versions they pin) did not reach it: it lies in V's free space, so C > V
 * and no live version can see it.
 */
static int backdate(cs_txn *t, cs_dbfile *f, uint64_t newver)
{
    pinrange *pr = NULL;
    size_t np = 0;
    TRY(lock_collect_pins(f, &pr, &np));
    /* this process's own pins, exactly */
    pthread_mutex_lock(&f->mu);
    pinrange *all = realloc(pr, (np + f->npins + 1) * sizeof *all);
    if (all) {
        pr = all;
        for (uint32_t i = 0; i < f->npins; i++)
            if (f->pins[i].count) {
                pinrange x = {f->pins[i].version, f->pins[i].top, f->pins[i].version, f->pins[i].top};
                pr[np++] = x;
            }
    }
    pthread_mutex_unlock(&f->mu);
    if (!all) {
        free(pr);
        return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    }
    vfree cache[4];
    int ncache = 0;
    int rc = CS_OK;
    for (uint64_t i = 0; i < f->nfree && rc == CS_OK; i++) {
        extent *e = &f->free[i];
        if (e->ver == 0 || e->ver >= newver) continue;
        uint64_t F = e->ver, V = 0, top = 0;
        bool any = false;
        for (size_t k = 0; k < np; k++) {
            if (pr[k].lo > F - 1) continue;
            uint64_t v = pr[k].hi < F - 1 ? pr[k].hi : F - 1;
            if (!any || v > V) { V = v; any = true; }
        }
        if (!any) { e->ver = 0; continue; }
        for (size_t k = 0; k < np && !top; k++) {
            if (pr[k].lo == V) top = pr[k].lo_top;
            else if (pr[k].hi == V) top = pr[k].hi_top;
        }
        if (!top) continue; /* V lies inside a pinned range: its free space is not known */
        vfree *vf = NULL;
        for (int c = 0; c < ncache; c++)
            if (cache[c].version == V) vf = &cache[c];
        if (!vf) {
            if (ncache == 4) continue;
            vf = &cache[ncache];
            rc = load_free_of(t, top, vf);
            if (rc != CS_OK) break;
            vf->version = V;
            ncache++;
        }
        if (covered(vf, e->pos, e->len)) e->ver = 0;
    }
    for (int c = 0; c < ncache; c++) free(cache[c].ext);
    free(pr);
    return rc;
}

/* ---- commit ----------------------------------------------------------------------------- */

typedef struct citem {
    ref_t slab;    /* the slab node (0 for the free-list arrays and the run list) */
    int kind;      /* 0 slab node, 1..3 free-list arrays, 4 the run list */
    uint64_t size; /* bytes */
    uint64_t pos;  /* file position */
    uint64_t off;  /* offset in the write buffer */
} citem;

typedef struct cplan {
    citem *items;          /* in write order */
    uint64_t n, cap;       /* used, allocated */
    uint64_t total;        /* bytes */
    bool oom;              /* an allocation failed */
} cplan;

static void plan_add(cplan *p, ref_t r, uint64_t size)
{
    if (p->n == p->cap) {
        uint64_t nc = p->cap ? p->cap * 2 : 1024;
        citem *x = realloc(p->items, nc * sizeof *x);
        if (!x) { p->oom = true; return; }
        p->items = x;
        p->cap = nc;
    }
    p->items[p->n].slab = r;
    p->items[p->n].kind = 0;
    p->items[p->n].size = size;
    p->items[p->n].pos = 0;
    p->items[p->n].off = 0;
    p->n++;
    p->total += size;
}

/* Post-order list of the slab nodes below r (r itself last). */
static void collect(cs_txn *t, ref_t r, cplan *p)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, r);
    if (h->flags & NF_REFS) {
        uint64_t *e = node_refs(h);
        for (uint32_t i = 0; i < h->count; i++)
            if (e[i] && !tagged(e[i]) && IS_SLAB(e[i])) collect(t, e[i], p);
    }
    plan_add(p, r, node_size_of(h->flags, h->width, h->count));
}

/* Allocation cursor over the free list and the end of the file. */
typedef struct alloc_cur {
    uint64_t ext;  /* index of the extent being filled, or UINT64_MAX for the file end */
    uint64_t end;  /* logical end of the file */
} alloc_cur;

static uint64_t place(cs_dbfile *f, alloc_cur *c, uint64_t size, uint64_t *scan)
{
    if (c->ext != UINT64_MAX) {
        extent *x = &f->free[c->ext];
        if (x->len >= size) {
            uint64_t p = x->pos;
            x->pos += size;
            x->len -= size;
            return p;
        }
    }
    for (; *scan < f->nfree; (*scan)++) {
        extent *x = &f->free[*scan];
        if (x->ver == 0 && x->len >= size) {
            c->ext = *scan;
            (*scan)++;
            uint64_t p = x->pos;
            x->pos += size;
            x->len -= size;
            return p;
        }
    }
    c->ext = UINT64_MAX;
    uint64_t p = c->end;
    c->end += size;
    return p;
}

/* Places one node into the smallest reusable extent that holds it, else at the end. */
static uint64_t place_best(cs_dbfile *f, alloc_cur *c, uint64_t size)
{
    uint64_t best = UINT64_MAX;
    for (uint64_t i = 0; i < f->nfree; i++) {
        extent *x = &f->free[i];
        if (x->ver == 0 && x->len >= size && (best == UINT64_MAX || x->len < f->free[best].len)) {
            best = i;
            if (x->len == size) break;
        }
    }
    if (best == UINT64_MAX) {
        uint64_t p = c->end;
        c->end += size;
        return p;
    }
    extent *x = &f->free[best];
    uint64_t p = x->pos;
    x->pos += size;
    x->len -= size;
    return p;
}

int file_commit(cs_txn *t)
{
    cs_dbfile *f = t->f;
    uint64_t newver = t->version + 1;
    int rc = CS_OK;
    uint8_t *buf = NULL;
    cplan plan = {0};

    /* 1. the schema blob */
    if (t->schema_dirty) {
        uint8_t *sb;
        uint64_t sn;
        TRY(schema_serialize(t->schema, &sb, &sn));
        ref_t blob;
        rc = node_new_blob(t, sb, sn, &blob);
        free(sb);
        if (rc) return rc;
        ref_t *s;
        TRY(txn_top_slot(t, TOP_SCHEMA, &s));
        if (*s) node_free(t, *s);
        *s = blob;
    }
    /* 2. this commit's change records; the history keeps what live readers need */
    pthread_mutex_lock(&f->mu);
    uint64_t oldest = oldest_live(f, t->version);
    pthread_mutex_unlock(&f->mu);
    TRY(history_append(t, newver, oldest));
    /* the old free-list arrays die with this version */
    TRY(free_list_load(t));
    ref_t *fs;
    for (int i = 0; i < 3; i++) {
        TRY(txn_top_slot(t, TOP_FREE_POS + i, &fs));
        if (*fs) node_free(t, *fs);
        *fs = 0;
    }
    ref_t *top_slot;
    TRY(txn_top_slot(t, TOP_VERSION, &top_slot)); /* makes the top writable */
    /* so does the previous commit's run list */
    ref_t *runs_slot;
    TRY(txn_top_slot(t, TOP_COMMIT_RUNS, &runs_slot));
    if (*runs_slot) node_free(t, *runs_slot);
    *runs_slot = 0;

    /* 3. the free list: reusable extents, plus what this commit frees (not reusable yet) */
    TRY(free_reserve(f, 2 * (f->nfree + t->nfreed) + 1));
    /* the cached list is sorted: sort only what this commit freed, then merge the two from the
     * back into the spare half of the array */
    f->free_version = 0; /* the cache no longer matches any version until the commit lands */
    {
        extent *add = f->free + f->nfree + t->nfreed; /* scratch beyond the merge area */
        for (uint64_t i = 0; i < t->nfreed; i++) {
            add[i].pos = t->freed[i].pos;
            add[i].len = t->freed[i].len;
            add[i].ver = newver;
        }
        qsort(add, t->nfreed, sizeof(extent), cmp_extent);
        uint64_t i = f->nfree, j = t->nfreed, k = f->nfree + t->nfreed;
        while (j > 0) {
            if (i > 0 && f->free[i - 1].pos > add[j - 1].pos) f->free[--k] = f->free[--i];
            else f->free[--k] = add[--j];
        }
        f->nfree += t->nfreed;
    }
    free_coalesce(f, oldest);
    if (oldest < t->version) {
        TRY(backdate(t, f, newver));
        free_coalesce(f, oldest);
    }
    uint64_t cap = f->nfree; /* allocation only shrinks or removes extents */
    uint64_t fl_size = node_size_of(0, 64, cap);

    /* 4. plan: dirty nodes in post-order, the free-list arrays and the run list before the top */
    collect(t, t->top, &plan);
    if (plan.oom) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory"); goto fail; }
    citem topi = plan.items[plan.n - 1];
    plan.n--;
    plan.total -= topi.size;
    for (int i = 0; i < 3; i++) {
        plan_add(&plan, 0, fl_size);
        if (!plan.oom) plan.items[plan.n - 1].kind = 1 + i;
    }
    uint64_t runs_cap = 2 * (plan.n + 2); /* at most one run per item */
    plan_add(&plan, 0, node_size_of(0, 64, runs_cap));
    if (!plan.oom) plan.items[plan.n - 1].kind = 4;
    plan_add(&plan, topi.slab, topi.size);
    if (plan.oom) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory"); goto fail; }

    /* 5. placement: the first extent that holds everything if there is one (one run); else a
     * small commit puts each node into the smallest hole it fits (keeping the free list short),
     * and a large one fills extents first fit in order; then the end of the file */
    alloc_cur cur = {UINT64_MAX, f->logical};
    uint64_t scan = 0;
    for (uint64_t i = 0; i < f->nfree; i++)
        if (f->free[i].ver == 0 && f->free[i].len >= plan.total) {
            cur.ext = i;
            break;
        }
    bool each = cur.ext == UINT64_MAX && plan.total <= ONE_SYNC_MAX;
    if (cur.ext != UINT64_MAX) scan = f->nfree;
    uint64_t off = 0;
    for (uint64_t i = 0; i < plan.n; i++) {
        plan.items[i].pos = each ? place_best(f, &cur, plan.items[i].size) : place(f, &cur, plan.items[i].size, &scan);
        plan.items[i].off = off;
        off += plan.items[i].size;
        if (plan.items[i].slab) {
            /* remember the file position in the slab block's prefix */
            uint8_t *b = txn_ptr(t, plan.items[i].slab) - 8;
            memcpy(b, &plan.items[i].pos, 8);
        }
    }
    uint64_t new_logical = cur.end;

    /* 6. serialise */
    buf = malloc(plan.total ? plan.total : 8);
    if (!buf) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory for a commit of %llu bytes", (unsigned long long)plan.total); goto fail; }
    uint64_t fl_pos[3] = {0, 0, 0}, runs_pos = 0;
    int fl_i = 0;
    for (uint64_t i = 0; i < plan.n; i++) {
        citem *it = &plan.items[i];
        node_hdr *dst = (node_hdr *)(buf + it->off);
        if (it->kind == 4) {
            /* the runs of this commit, in buffer order: (position, length) pairs */
            runs_pos = it->pos;
            memset(dst, 0, it->size);
            dst->width = 64;
            dst->count = (uint32_t)runs_cap;
            uint64_t k = 0;
            for (uint64_t a = 0; a < plan.n;) {
                uint64_t b = a + 1;
                while (b < plan.n && plan.items[b].pos == plan.items[b - 1].pos + plan.items[b - 1].size) b++;
                packed_set(node_values(dst), 64, k++, (int64_t)plan.items[a].pos);
                packed_set(node_values(dst), 64, k++, (int64_t)(plan.items[b - 1].pos + plan.items[b - 1].size - plan.items[a].pos));
                a = b;
            }
            dst->check = node_checksum(dst);
            continue;
        }
        if (!it->slab) {
            fl_pos[fl_i] = it->pos;
            uint64_t k = 0;
            memset(dst, 0, it->size);
            dst->flags = 0;
            dst->width = 64;
            dst->count = (uint32_t)cap;
            for (uint64_t j = 0; j < f->nfree; j++) {
                if (f->free[j].len == 0) continue;
                uint64_t v = fl_i == 0 ? f->free[j].pos : fl_i == 1 ? f->free[j].len : f->free[j].ver;
                packed_set(node_values(dst), 64, k++, (int64_t)v);
            }
            fl_i++;
            dst->check = node_checksum(dst);
            continue;
        }
        memcpy(dst, txn_ptr(t, it->slab), it->size);
        if (dst->flags & NF_REFS) {
            uint64_t *e = node_refs(dst);
            for (uint32_t j = 0; j < dst->count; j++)
                if (e[j] && !tagged(e[j]) && IS_SLAB(e[j])) memcpy(&e[j], txn_ptr(t, e[j]) - 8, 8);
        }
        if (i == plan.n - 1) {
            uint64_t *e = node_refs(dst);
            e[TOP_FREE_POS] = fl_pos[0];
            e[TOP_FREE_LEN] = fl_pos[1];
            e[TOP_FREE_VER] = fl_pos[2];
            e[TOP_COMMIT_RUNS] = runs_pos;
            e[TOP_SIZE] = tag_int((int64_t)new_logical);
            e[TOP_VERSION] = tag_int((int64_t)newver);
        }
        dst->check = node_checksum(dst);
    }

    /* 7. grow the file, write the runs, sync */
    if (new_logical > f->phys_size) {
        uint64_t step = f->phys_size / 8;
        if (step < (1ull << 20)) step = 1ull << 20;
        if (step > (256ull << 20)) step = 256ull << 20;
        uint64_t ns = (new_logical + step + 4095) & ~4095ull;
        if (f->io->ftruncate(f->io->ctx, f->fd, (off_t)ns) != 0) {
            int e = errno;
            rc = (e == ENOSPC || e == EDQUOT || e == EFBIG) ? cs_fail(CS_FULL, e, "disk full growing %s", f->path)
                                                            : cs_fail(CS_IOERR, e, "cannot grow %s: %s", f->path, strerror(e));
            goto fail;
        }
        f->phys_size = ns;
        if ((rc = file_map_for(f, ns)) != CS_OK) goto fail;
    }
    uint64_t written = 0, nruns = 0;
    for (uint64_t i = 1; i < plan.n; i++)
        if (plan.items[i].pos != plan.items[i - 1].pos + plan.items[i - 1].size) nruns++;
    nruns++;
    run_info run = {0, 0, 0};
    bool one_sync = f->durability == CS_DURABILITY_FULL && plan.total <= ONE_SYNC_MAX;
    (void)nruns;
    if (one_sync) {
        run.pos = runs_pos;
        run.len = plan.total;
        run.hash = run_hash(buf, plan.total);
    }
    for (uint64_t i = 0; i < plan.n;) {
        uint64_t j = i + 1;
        while (j < plan.n && plan.items[j].pos == plan.items[j - 1].pos + plan.items[j - 1].size &&
               plan.items[j].off == plan.items[j - 1].off + plan.items[j - 1].size)
            j++;
        uint64_t len = plan.items[j - 1].off + plan.items[j - 1].size - plan.items[i].off;
        if ((rc = full_pwrite(f, buf + plan.items[i].off, len, plan.items[i].pos)) != CS_OK) goto fail;
        written += len;
        i = j;
    }
    /* two-sync commits make the nodes durable before the header names them; a one-sync commit
     * lets them race, and its header slot carries their hash so a torn commit is detected */
    if (!one_sync && (rc = file_sync(f)) != CS_OK) goto fail;
    uint64_t top_pos = plan.items[plan.n - 1].pos;
    int nsel = f->selector ^ 1;
    /* the header covers the version this commit keeps in the other slot and the new one */
    uint16_t fmt = index_schema_needs_v2(t->schema) ? 2 : FORMAT_BASE;
    if (t->base_format > fmt) fmt = t->base_format;
    lock_committing(f);
    if ((rc = write_header(f, nsel, top_pos, newver, new_logical, false, one_sync ? &run : NULL, fmt)) != CS_OK) {
        f->broken = true; /* the header may or may not have reached the disk */
        goto fail;
    }
    if ((rc = file_sync(f)) != CS_OK) goto fail;
    written += sizeof(file_hdr);

    /* 8. publish */
    pthread_mutex_lock(&f->mu);
    f->selector = nsel;
    f->version = newver;
    f->top = top_pos;
    f->logical = new_logical;
    uint64_t k = 0;
    for (uint64_t i = 0; i < f->nfree; i++)
        if (f->free[i].len) f->free[k++] = f->free[i];
    f->nfree = k;
    f->free_version = newver;
    lock_publish(f);
    pthread_mutex_unlock(&f->mu);
    t->last_commit_bytes = written;
    free(buf);
    free(plan.items);
    return rc;
fail:
    f->free_version = 0;
    free(buf);
    free(plan.items);
    return rc;
}

/* ---- statistics ------------------------------------------------------------------------- */

int cs_db_stats_get(cs_db *db, cs_db_stats *out)
{
    memset(out, 0, sizeof *out);
    cs_txn *t;
    TRY(cs_txn_begin(db, CS_TXN_READ, &t));
    cs_dbfile *f = db->f;
    /* the versions the header states (FORMAT.md §2) */
    uint16_t fmts[2] = {0, 0};
    if (f->io->pread(f->io->ctx, f->fd, fmts, sizeof fmts, 8) != (ssize_t)sizeof fmts) {
        cs_txn_end(t);
        return cs_fail(CS_IOERR, errno, "cannot read the header of %s", f->path);
    }
    out->read_format = fmts[0];
    out->write_format = fmts[1];
    out->version = t->version;
    struct stat st;
    out->file_size = f->io->fstat(f->io->ctx, f->fd, &st) == 0 ? (uint64_t)st.st_size : f->phys_size;
    out->logical_size = t->limit;
    int rc = CS_OK;
    uint64_t r[3];
    for (int i = 0; i < 3 && rc == CS_OK; i++) rc = txn_top_get(t, TOP_FREE_POS + i, &r[i]);
    if (rc == CS_OK && r[0]) {
        node_hdr *hp, *hl;
        rc = node_at(t, r[0], &hp);
        if (rc == CS_OK) rc = node_at(t, r[1], &hl);
        if (rc == CS_OK) {
            for (uint32_t i = 0; i < hl->count && i < hp->count; i++) {
                int64_t len = node_get_int(hl, i);
                if (len > 0) {
                    out->free_bytes += (uint64_t)len;
                    out->free_extents++;
                }
            }
        }
    }
    out->used_bytes = out->logical_size > HDR_SIZE + out->free_bytes ? out->logical_size - HDR_SIZE - out->free_bytes : 0;
    for (uint32_t i = 0; i < t->schema->ntables; i++)
        if (txn_table_live(t, i)) out->table_count++;
    pthread_mutex_lock(&f->mu);
    for (uint32_t i = 0; i < f->npins; i++) {
        uint32_t c = f->pins[i].count;
        if (c && f->pins[i].version == t->version) c--; /* our own read */
        if (c) out->pinned++;
    }
    pthread_mutex_unlock(&f->mu);
    cs_txn_end(t);
    return rc;
}
