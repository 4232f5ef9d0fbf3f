/*
 * backup.c -- backups: a compacted copy of one version compressed as an LZ4 frame, behind a
 * header that says what it is (docs/FORMAT.md §12, docs/ARCHITECTURE.md Compaction, copies and
 * backups), and their restore.
 *
 * Invariants:
 *  1. A backup is written from a READ transaction, so writers go on; the bytes compressed are
 *     exactly the file cs_txn_write_copy would write.
 *  2. Restore decompresses into `<file>.restore`, checks the frame's block and content checksums,
 *     the size the header states, syncs and verifies the result, and only then renames it over
 *     the target: a damaged or truncated backup changes nothing at the target.
 *  3. Restoring over an existing database needs it to itself, as in-place compaction does
 *     (file_claim, lock_take_alone).
 *  4. Every read, write, sync, rename, unlink and directory sync of a restore goes through the
 *     caller's cs_io, so power-cut tests can stop it before any of them (as compact.c's).
 */
#include "compact.h"
#include "file.h"
#include "lock.h"
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BK_SKIP_MAGIC 0x184D2A5Bu /* an LZ4 skippable frame: lz4 tools step over it */
#define BK_MAGIC "CSBACKUP"
#define BK_LAYOUT 1u
#define BK_HDR 64u                /* payload of the skippable frame */
#define BK_LEAD (8u + BK_HDR)     /* skippable frame magic and size, then the payload */

typedef struct bk_header {
    char magic[8];     /* BK_MAGIC */
    uint32_t layout;   /* BK_LAYOUT */
    uint32_t format;   /* the database's format version (its header's read version) */
    uint64_t version;  /* the database version backed up */
    uint64_t size;     /* bytes of the database file the frame decompresses to */
    uint64_t created;  /* seconds since 1970 (UTC) when the backup was written */
    uint64_t reserved[2]; /* zero */
    uint64_t check;    /* hash of the 56 bytes above */
} bk_header;

_Static_assert(sizeof(bk_header) == BK_HDR, "backup header size");

static uint64_t bk_check(const bk_header *h)
{
    const uint8_t *p = (const uint8_t *)h;
    uint64_t x = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < offsetof(bk_header, check); i++) {
        x ^= p[i];
        x *= 0x100000001b3ull;
    }
    return x | 1;
}

static int write_all(const cs_io *io, int fd, const void *buf, uint64_t n, uint64_t off, const char *path)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = io->pwrite(io->ctx, fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            if (e == ENOSPC || e == EDQUOT) return cs_fail(CS_FULL, e, "disk full while writing %s", path);
            return cs_fail(CS_IOERR, e, "write to %s failed: %s", path, strerror(e));
        }
        p += w;
        n -= (uint64_t)w;
        off += (uint64_t)w;
    }
    return CS_OK;
}

static int create_excl(const cs_io *io, const char *path, int *fd)
{
    *fd = io->open(io->ctx, path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (*fd >= 0) return CS_OK;
    int e = errno;
    if (e == EEXIST) return cs_fail(CS_EXISTS, e, "%s exists already", path);
    if (e == EACCES || e == EPERM || e == EROFS) return cs_fail(CS_PERM, e, "cannot create %s: %s", path, strerror(e));
    if (e == ENOSPC || e == EDQUOT) return cs_fail(CS_FULL, e, "cannot create %s: %s", path, strerror(e));
    return cs_fail(CS_IOERR, e, "cannot create %s: %s", path, strerror(e));
}

static int sync_file(const cs_io *io, int fd, const char *path)
{
    if (io->fdatasync(io->ctx, fd) != 0) return cs_fail(CS_IOERR, errno, "sync of %s failed: %s", path, strerror(errno));
    return CS_OK;
}

/* Opens an existing backup for reading through io. */
static int open_backup(const cs_io *io, const char *in, int *fd)
{
    *fd = io->open(io->ctx, in, O_RDONLY | O_CLOEXEC, 0);
    if (*fd >= 0) return CS_OK;
    int e = errno;
    return cs_fail(e == ENOENT ? CS_NOTFOUND : e == EACCES ? CS_PERM : CS_IOERR, e, "cannot open %s: %s", in, strerror(e));
}

/* ---- writing ------------------------------------------------------------------------------ */

typedef struct bk_writer {
    LZ4F_cctx *cx;
    LZ4F_preferences_t prefs;
    uint8_t *dst;
    size_t cap;
    const cs_io *io;
    int fd;
    const char *path;
    uint64_t at;    /* bytes of the backup written so far */
    uint64_t raw;   /* bytes of the database compressed so far */
    uint32_t format; /* the database's format version, read from its header as it streams by */
} bk_writer;

static int bk_room(bk_writer *w, uint64_t n)
{
    size_t need = LZ4F_compressBound(n, &w->prefs);
    if (need <= w->cap) return CS_OK;
    uint8_t *d = realloc(w->dst, need);
    if (!d) return NOMEM();
    w->dst = d;
    w->cap = need;
    return CS_OK;
}

static int bk_sink(void *ctx, const void *buf, uint64_t n, uint64_t off)
{
    bk_writer *w = ctx;
    if (off == 0 && n >= 12) {
        uint16_t fmt;
        memcpy(&fmt, (const uint8_t *)buf + 8, 2);
        w->format = fmt;
    }
    TRY(bk_room(w, n));
    size_t r = LZ4F_compressUpdate(w->cx, w->dst, w->cap, buf, n, NULL);
    if (LZ4F_isError(r)) return cs_fail(CS_IOERR, 0, "LZ4 compression failed: %s", LZ4F_getErrorName(r));
    TRY(write_all(w->io, w->fd, w->dst, r, w->at, w->path));
    (void)sync_file_range(w->fd, (off_t)w->at, (off_t)r, SYNC_FILE_RANGE_WRITE); /* as compact.c's sink */
    w->at += r;
    w->raw += n;
    return CS_OK;
}

int cs_backup_write(cs_db *db, const char *out, cs_progress progress, void *ctx, cs_backup_info *info)
{
    if (!db || !out) return cs_fail(CS_MISUSE, 0, "cs_backup_write: bad arguments");
    bk_writer w;
    memset(&w, 0, sizeof w);
    w.io = cs_io_default();
    w.fd = -1;
    w.path = out;
    w.prefs.frameInfo.blockSizeID = LZ4F_max4MB;
    w.prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    w.prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    w.prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
    w.prefs.compressionLevel = 0; /* LZ4's default fast mode */
    cs_txn *t = NULL;
    int rc = cs_txn_begin(db, CS_TXN_READ, &t);
    if (rc != CS_OK) return rc;
    bool created = false;
    if ((rc = create_excl(w.io, out, &w.fd)) != CS_OK) goto done;
    created = true;
    if (LZ4F_isError(LZ4F_createCompressionContext(&w.cx, LZ4F_VERSION))) { rc = NOMEM(); goto done; }
    w.at = BK_LEAD;
    if ((rc = bk_room(&w, 1)) != CS_OK) goto done;
    if (w.cap < LZ4F_HEADER_SIZE_MAX) {
        uint8_t *d = realloc(w.dst, LZ4F_HEADER_SIZE_MAX);
        if (!d) { rc = NOMEM(); goto done; }
        w.dst = d;
        w.cap = LZ4F_HEADER_SIZE_MAX;
    }
    size_t r = LZ4F_compressBegin(w.cx, w.dst, w.cap, &w.prefs);
    if (LZ4F_isError(r)) { rc = cs_fail(CS_IOERR, 0, "LZ4 compression failed: %s", LZ4F_getErrorName(r)); goto done; }
    if ((rc = write_all(w.io, w.fd, w.dst, r, w.at, out)) != CS_OK) goto done;
    w.at += r;
    uint64_t size = 0;
    if ((rc = compact_stream(t, bk_sink, &w, progress, ctx, &size)) != CS_OK) goto done;
    if ((rc = bk_room(&w, 0)) != CS_OK) goto done;
    r = LZ4F_compressEnd(w.cx, w.dst, w.cap, NULL);
    if (LZ4F_isError(r)) { rc = cs_fail(CS_IOERR, 0, "LZ4 compression failed: %s", LZ4F_getErrorName(r)); goto done; }
    if ((rc = write_all(w.io, w.fd, w.dst, r, w.at, out)) != CS_OK) goto done;
    w.at += r;
    /* the lead: a skippable frame holding the header, written last (it states the size) */
    uint8_t lead[BK_LEAD];
    uint32_t m = BK_SKIP_MAGIC, len = BK_HDR;
    memcpy(lead, &m, 4);
    memcpy(lead + 4, &len, 4);
    bk_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, BK_MAGIC, 8);
    h.layout = BK_LAYOUT;
    h.format = w.format;
    h.version = cs_txn_version(t);
    h.size = size;
    h.created = (uint64_t)time(NULL);
    h.check = bk_check(&h);
    memcpy(lead + 8, &h, sizeof h);
    if ((rc = write_all(w.io, w.fd, lead, sizeof lead, 0, out)) != CS_OK) goto done;
    if ((rc = sync_file(w.io, w.fd, out)) != CS_OK || (rc = compact_sync_dir_of(w.io, out)) != CS_OK) goto done;
    if (info) {
        info->version = h.version;
        info->format = h.format;
        info->db_bytes = size;
        info->backup_bytes = w.at;
        info->created = h.created;
    }
done:
    if (t) cs_txn_end(t);
    if (w.cx) LZ4F_freeCompressionContext(w.cx);
    free(w.dst);
    if (w.fd >= 0) close(w.fd);
    if (rc != CS_OK && created) unlink(out);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

#define IN_CHUNK (1u << 20)
#define OUT_BUF (4u << 20)

/* Reads and checks the lead of the backup open on fd. */
static int read_lead(const cs_io *io, int fd, const char *in, bk_header *h)
{
    uint8_t lead[BK_LEAD];
    ssize_t n = io->pread(io->ctx, fd, lead, sizeof lead, 0);
    if (n < 0) return cs_fail(CS_IOERR, errno, "cannot read %s: %s", in, strerror(errno));
    uint32_t m, len;
    memcpy(&m, lead, 4);
    memcpy(&len, lead + 4, 4);
    if (n != (ssize_t)sizeof lead || m != BK_SKIP_MAGIC || len != BK_HDR)
        return cs_fail(CS_CORRUPT, 0, "%s is not a SwiftStore backup", in);
    memcpy(h, lead + 8, sizeof *h);
    if (memcmp(h->magic, BK_MAGIC, 8) != 0) return cs_fail(CS_CORRUPT, 0, "%s is not a SwiftStore backup", in);
    if (h->check != bk_check(h)) return cs_fail(CS_CORRUPT, 0, "%s: the backup's header is damaged", in);
    if (h->layout != BK_LAYOUT)
        return cs_fail(CS_VERSION, 0, "%s is a backup of layout %u; this library reads layout %u", in, h->layout, BK_LAYOUT);
    if (h->format > FORMAT_READ)
        return cs_fail(CS_VERSION, 0, "%s holds format version %u; this library reads up to %u", in, h->format, FORMAT_READ);
    return CS_OK;
}

/* Decompresses the frame after the lead into out_fd (or nowhere when out_fd < 0), checking
 * every checksum, that the frame ends exactly at the end of the file, and the size. */
static int decompress(const cs_io *io, int fd, const char *in, const bk_header *h, int out_fd, const char *out,
                      cs_progress progress, void *ctx)
{
    LZ4F_dctx *dx = NULL;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dx, LZ4F_VERSION))) return NOMEM();
    uint8_t *src = malloc(IN_CHUNK), *dst = malloc(OUT_BUF);
    int rc = CS_OK;
    uint64_t pos = BK_LEAD, total = 0;
    size_t hint = 1;
    bool ended = false;
    if (!src || !dst) { rc = NOMEM(); goto done; }
    for (;;) {
        ssize_t n = io->pread(io->ctx, fd, src, IN_CHUNK, (off_t)pos);
        if (n < 0) { rc = cs_fail(CS_IOERR, errno, "cannot read %s: %s", in, strerror(errno)); goto done; }
        if (n == 0) break;
        if (ended) { rc = cs_fail(CS_CORRUPT, 0, "%s: data after the end of the backup", in); goto done; }
        pos += (uint64_t)n;
        size_t used = 0;
        while (used < (size_t)n) {
            size_t sn = (size_t)n - used, dn = OUT_BUF;
            hint = LZ4F_decompress(dx, dst, &dn, src + used, &sn, NULL);
            if (LZ4F_isError(hint)) {
                rc = cs_fail(CS_CORRUPT, 0, "%s is damaged: %s", in, LZ4F_getErrorName(hint));
                goto done;
            }
            used += sn;
            if (dn) {
                if (total + dn > h->size) { rc = cs_fail(CS_CORRUPT, 0, "%s holds more than the %llu bytes its header states", in, (unsigned long long)h->size); goto done; }
                if (out_fd >= 0 && (rc = write_all(io, out_fd, dst, dn, total, out)) != CS_OK) goto done;
                total += dn;
                if (progress) progress(ctx, total, h->size);
            }
            if (hint == 0) { /* the frame ended, its content checksum matched */
                ended = true;
                if (used < (size_t)n) { rc = cs_fail(CS_CORRUPT, 0, "%s: data after the end of the backup", in); goto done; }
                break;
            }
            if (sn == 0 && dn == 0) break;
        }
    }
    if (!ended) { rc = cs_fail(CS_CORRUPT, 0, "%s is truncated", in); goto done; }
    if (total != h->size)
        rc = cs_fail(CS_CORRUPT, 0, "%s decompresses to %llu bytes, its header states %llu", in,
                     (unsigned long long)total, (unsigned long long)h->size);
done:
    LZ4F_freeDecompressionContext(dx);
    free(src);
    free(dst);
    return rc;
}

static void fill_info(cs_backup_info *info, const bk_header *h, const cs_io *io, int fd)
{
    if (!info) return;
    struct stat st;
    info->version = h->version;
    info->format = h->format;
    info->db_bytes = h->size;
    info->backup_bytes = io->fstat(io->ctx, fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    info->created = h->created;
}

int cs_backup_check(const char *in, cs_backup_info *info)
{
    if (!in) return cs_fail(CS_MISUSE, 0, "cs_backup_check: bad arguments");
    const cs_io *io = cs_io_default();
    int fd;
    TRY(open_backup(io, in, &fd));
    bk_header h;
    int rc = read_lead(io, fd, in, &h);
    if (rc == CS_OK) rc = decompress(io, fd, in, &h, -1, NULL, NULL, NULL);
    if (rc == CS_OK) fill_info(info, &h, io, fd);
    io->close(io->ctx, fd);
    return rc;
}

/* Removes the lock file `<path>.lock` (never through io: the lock file is not part of the data;
 * `buf` has room for the suffix after the path's n bytes). */
static void unlink_lock_of(char *buf, size_t n)
{
    memcpy(buf + n, ".lock", 6);
    unlink(buf);
    buf[n] = 0;
}

int cs_backup_restore(const char *in, const char *path, const cs_options *opts, uint32_t flags, cs_progress progress,
                      void *ctx, cs_backup_info *info)
{
    if (!in || !path) return cs_fail(CS_MISUSE, 0, "cs_backup_restore: bad arguments");
    cs_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    o.flags = 0;
    const cs_io *io = o.io ? o.io : cs_io_default();
    bool sync = o.durability == CS_DURABILITY_FULL;
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && !(flags & CS_RESTORE_FORCE))
        return cs_fail(CS_EXISTS, EEXIST, "%s exists already (restore over it only when forced)", path);
    int fd;
    TRY(open_backup(io, in, &fd));
    bk_header h;
    int rc = read_lead(io, fd, in, &h);
    size_t n = strlen(path);
    char *tmp = malloc(n + 14);
    int out = -1;
    cs_db *db = NULL;
    if (rc != CS_OK) goto done;
    if (!tmp) { rc = NOMEM(); goto done; }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".restore", 9);
    /* a leftover of a crash */
    if (compact_io_unlink(io, tmp) != 0 && errno != ENOENT) {
        rc = cs_fail(CS_IOERR, errno, "cannot remove %s: %s", tmp, strerror(errno));
        goto done;
    }
    unlink_lock_of(tmp, n + 8);
    if ((rc = create_excl(io, tmp, &out)) != CS_OK) goto done;
    rc = decompress(io, fd, in, &h, out, tmp, progress, ctx);
    if (rc == CS_OK && sync) rc = sync_file(io, out, tmp);
    if (io->close(io->ctx, out) != 0 && rc == CS_OK) rc = cs_fail(CS_IOERR, errno, "close of %s failed: %s", tmp, strerror(errno));
    out = -1;
    if (rc != CS_OK) goto fail_tmp;
    /* invariant 2: only a restored file that verifies replaces anything */
    if ((rc = cs_file_verify(tmp)) != CS_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", cs_errmsg());
        rc = cs_fail(CS_CORRUPT, 0, "the backup %s restored to a file that does not verify: %s", in, msg);
        goto fail_tmp;
    }
    unlink_lock_of(tmp, n + 8);
    if (exists) {
        /* invariant 3: nobody may have the database open while it is replaced */
        int orc = cs_db_open(path, &o, &db);
        if (orc == CS_OK) {
            if ((rc = file_claim(db->f)) == CS_OK) rc = lock_take_alone(db->f);
            /* the journal is emptied before the file is replaced (FORMAT.md §13) */
            if (rc == CS_OK) rc = journal_checkpoint_records(db->f);
            if (rc != CS_OK) goto fail_tmp;
        } else if (orc != CS_CORRUPT && orc != CS_NOTFOUND) {
            rc = orc; /* a file that is not a database is replaced; any other failure stops */
            goto fail_tmp;
        } else {
            /* no database to checkpoint: a journal beside it belongs to nothing the path will
             * name (and would be refused by the restored file's id) */
            char *jp = journal_path(path);
            if (jp) compact_io_unlink(io, jp);
            free(jp);
        }
    }
    if (compact_io_rename(io, tmp, path) != 0) {
        rc = cs_fail(CS_IOERR, errno, "cannot rename %s over %s: %s", tmp, path, strerror(errno));
        goto fail_tmp;
    }
    /* the restored bytes were synced before the rename; the directory makes the rename last */
    if (sync) rc = compact_sync_dir_of(io, path);
    if (rc == CS_OK) fill_info(info, &h, io, fd);
    goto done;
fail_tmp:
    if (tmp) {
        compact_io_unlink(io, tmp);
        unlink_lock_of(tmp, n + 8);
    }
done:
    if (db) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", cs_errmsg());
        int e = cs_errno();
        cs_db_close(db);
        if (rc != CS_OK) cs_fail(rc, e, "%s", msg);
    }
    if (out >= 0) io->close(io->ctx, out);
    free(tmp);
    io->close(io->ctx, fd);
    return rc;
}
