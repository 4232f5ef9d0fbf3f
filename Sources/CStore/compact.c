/*
 * compact.c -- compacted copies and in-place compaction (docs/FORMAT.md §11, docs/ARCHITECTURE.md
 * Compaction, copies and backups).
 *
 * A compacted file holds exactly the nodes one version reaches, written back to back from the
 * end of the header, with no free space and empty free lists. It is made in two passes over a
 * READ transaction: the plan walks the version and gives every reachable node its new position
 * in reading order (the top; the schema; per table its node, the cluster's inner nodes, its
 * leaves, their key arrays, then column by column every leaf's sub-node with everything under
 * it, in key order; the indexes; the change history), then the copy writes the nodes in that
 * order with their child refs translated and their checksums recomputed.
 *
 * Invariants:
 *  1. Every node is planned once (a ref met again is not walked again), so a damaged version
 *     with a cycle or a shared node cannot make the walk loop; the copy's verification, which
 *     cs_db_compact runs before the rename, reports it.
 *  2. In-place compaction replaces the file only by rename(2) of a copy that was synced and
 *     verified, and syncs the directory afterwards: at every point the path names the old file
 *     or the new one, whole.
 *  3. In-place compaction runs only while no other process and no other handle of this process
 *     has the file open (lock.c lock_take_alone, cs_dbfile.compacting); processes that open it
 *     meanwhile wait and then open the new file (file.c re-checks the path after joining).
 */
#include "compact.h"
#include "node.h"
#include "snapshot.h"
#include "index.h"
#include "lock.h"
#include "journal.h"
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the optional I/O calls --------------------------------------------------------------- */

int compact_io_rename(const cs_io *io, const char *from, const char *to)
{
    if (io && io->rename) return io->rename(io->ctx, from, to);
    return rename(from, to);
}

int compact_io_unlink(const cs_io *io, const char *path)
{
    if (io && io->unlink) return io->unlink(io->ctx, path);
    return unlink(path);
}

int compact_io_sync_dir(const cs_io *io, const char *path)
{
    if (io && io->sync_dir) return io->sync_dir(io->ctx, path);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int r = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return r;
}

/* The directory of `path` ("." for a bare name), malloc'd. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* ---- the plan: old ref -> new position ---------------------------------------------------- */

typedef struct plan {
    cs_txn *t;
    uint64_t *keys, *vals; /* open addressing on old refs (0 = empty slot) */
    uint64_t cap, used;    /* slots, entries */
    ref_t *order;          /* old refs in the order they are written */
    uint64_t norder, cap_order;
    uint64_t next;         /* the next free position in the new file */
    uint64_t *tables;      /* cs_txn_space: bytes per table key (NULL when not counting) */
    uint32_t ntables;
    cs_space_info *space;  /* cs_txn_space: bytes per part (NULL when not counting) */
    bool keyed_tables;     /* a table node has the keying slots (format 5, FORMAT.md §6.1) */
    bool unindexed_pks;    /* a table keeps no index of its primary key (format 6, FORMAT.md §6.1) */
} plan;

#define MAX_DEPTH 256

static uint64_t hash_ref(uint64_t r) { return (r >> 3) * 0x9e3779b97f4a7c15ull; }

static uint64_t plan_get(const plan *p, ref_t r)
{
    if (!p->cap) return 0;
    for (uint64_t i = hash_ref(r) & (p->cap - 1);; i = (i + 1) & (p->cap - 1)) {
        if (p->keys[i] == r) return p->vals[i];
        if (!p->keys[i]) return 0;
    }
}

static void plan_insert(uint64_t *keys, uint64_t *vals, uint64_t cap, ref_t r, uint64_t v)
{
    uint64_t i = hash_ref(r) & (cap - 1);
    while (keys[i]) i = (i + 1) & (cap - 1);
    keys[i] = r;
    vals[i] = v;
}

/* Gives node r (checked, of `size` bytes) the next position; false if it has one already. */
static int plan_assign(plan *p, ref_t r, uint64_t size, bool *fresh)
{
    *fresh = false;
    if (plan_get(p, r)) return CS_OK;
    if ((p->used + 1) * 2 > p->cap) {
        uint64_t nc = p->cap ? p->cap * 2 : 4096;
        uint64_t *k = calloc(nc, sizeof *k), *v = calloc(nc, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return NOMEM();
        }
        for (uint64_t i = 0; i < p->cap; i++)
            if (p->keys[i]) plan_insert(k, v, nc, p->keys[i], p->vals[i]);
        free(p->keys);
        free(p->vals);
        p->keys = k;
        p->vals = v;
        p->cap = nc;
    }
    if (p->norder == p->cap_order) {
        uint64_t nc = p->cap_order ? p->cap_order * 2 : 4096;
        ref_t *o = realloc(p->order, nc * sizeof *o);
        if (!o) return NOMEM();
        p->order = o;
        p->cap_order = nc;
    }
    plan_insert(p->keys, p->vals, p->cap, r, p->next);
    p->used++;
    p->order[p->norder++] = r;
    p->next += size;
    *fresh = true;
    return CS_OK;
}

/* A checked node of the version (never a slab ref: the transaction only reads). */
static int plan_node(plan *p, ref_t r, node_hdr **h)
{
    if (IS_SLAB(r)) return CORRUPT("ref %llu is not a file position", (unsigned long long)r);
    return node_at_file(p->t, r, h);
}

/* Plans r and everything under it, depth first, each node before its children. */
static int plan_tree(plan *p, ref_t r, int depth)
{
    if (!r || tagged(r)) return CS_OK;
    if (depth > MAX_DEPTH) return CORRUPT("nodes nested deeper than %d under ref %llu", MAX_DEPTH, (unsigned long long)r);
    node_hdr *h;
    TRY(plan_node(p, r, &h));
    bool fresh;
    TRY(plan_assign(p, r, node_size_of(h->flags, h->width, h->count), &fresh));
    if (!fresh || !(h->flags & NF_REFS)) return CS_OK;
    const uint64_t *e = node_refs(h);
    for (uint32_t i = 0; i < h->count; i++) TRY(plan_tree(p, e[i], depth + 1));
    return CS_OK;
}

typedef struct leaves {
    ref_t *v;
    uint64_t n, cap;
} leaves;

/* Plans a cluster tree's inner nodes (with their first-key arrays) and collects its leaves in
 * key order. */
static int plan_inner(plan *p, ref_t r, leaves *out, int depth)
{
    if (!r) return CS_OK;
    if (tagged(r) || depth > MAX_DEPTH) return CORRUPT("bad cluster tree ref %llu", (unsigned long long)r);
    node_hdr *h;
    TRY(plan_node(p, r, &h));
    if (!(h->flags & NF_REFS) || h->count < 1) return CORRUPT("cluster node %llu is not a ref node", (unsigned long long)r);
    if (!(h->flags & NF_INNER)) {
        if (out->n == out->cap) {
            uint64_t nc = out->cap ? out->cap * 2 : 256;
            ref_t *v = realloc(out->v, nc * sizeof *v);
            if (!v) return NOMEM();
            out->v = v;
            out->cap = nc;
        }
        out->v[out->n++] = r;
        return CS_OK;
    }
    bool fresh;
    TRY(plan_assign(p, r, node_size_of(h->flags, h->width, h->count), &fresh));
    if (!fresh) return CS_OK;
    const uint64_t *e = node_refs(h);
    TRY(plan_tree(p, e[CL_FIRST], depth + 1));
    for (uint32_t i = CL_CHILD0; i < h->count; i++) TRY(plan_inner(p, e[i], out, depth + 1));
    return CS_OK;
}

/* The cluster tree of a table: inner nodes, leaves, key arrays, then each column's sub-nodes
 * leaf after leaf, so a scan of one column reads one contiguous stretch. */
static int plan_cluster(plan *p, ref_t root)
{
    leaves L = {NULL, 0, 0};
    int rc = plan_inner(p, root, &L, 0);
    uint32_t ncols = 0;
    for (uint64_t i = 0; rc == CS_OK && i < L.n; i++) {
        node_hdr *h;
        if ((rc = plan_node(p, L.v[i], &h)) != CS_OK) break;
        bool fresh;
        rc = plan_assign(p, L.v[i], node_size_of(h->flags, h->width, h->count), &fresh);
        if (h->count - 1 > ncols) ncols = h->count - 1;
    }
    for (uint64_t i = 0; rc == CS_OK && i < L.n; i++) {
        node_hdr *h;
        if ((rc = plan_node(p, L.v[i], &h)) == CS_OK) rc = plan_tree(p, node_refs(h)[CL_KEYS], 1);
    }
    for (uint32_t c = 0; rc == CS_OK && c < ncols; c++) {
        for (uint64_t i = 0; rc == CS_OK && i < L.n; i++) {
            node_hdr *h;
            if ((rc = plan_node(p, L.v[i], &h)) != CS_OK) break;
            if (CL_COL0 + c < h->count) rc = plan_tree(p, node_refs(h)[CL_COL0 + c], 1);
        }
    }
    free(L.v);
    return rc;
}

static int plan_version(plan *p)
{
    cs_txn *t = p->t;
    node_hdr *top;
    TRY(plan_node(p, t->top, &top));
    if (!(top->flags & NF_REFS) || top->count < TOP_SLOTS) return CORRUPT("top node %llu malformed", (unsigned long long)t->top);
    bool fresh;
    TRY(plan_assign(p, t->top, node_size_of(top->flags, top->width, top->count), &fresh));
    const uint64_t *e = node_refs(top);
    uint64_t mark = p->next; /* what the plan had assigned before the part being counted */
    cs_space_info sp;
    memset(&sp, 0, sizeof sp);
    sp.header_bytes = HDR_SIZE;
    sp.top_bytes = p->next - HDR_SIZE;
    TRY(plan_tree(p, e[TOP_SCHEMA], 1));
    sp.schema_bytes = p->next - mark;
    ref_t tables = e[TOP_TABLES];
    if (tables) {
        node_hdr *tl;
        if (tagged(tables)) return CORRUPT("table list slot holds a number");
        TRY(plan_node(p, tables, &tl));
        if (!(tl->flags & NF_REFS)) return CORRUPT("table list %llu is not a ref node", (unsigned long long)tables);
        mark = p->next;
        TRY(plan_assign(p, tables, node_size_of(tl->flags, tl->width, tl->count), &fresh));
        sp.top_bytes += p->next - mark;
        for (uint32_t i = 0; i < tl->count; i++) {
            ref_t tn = node_refs(tl)[i];
            if (!tn) continue;
            node_hdr *th;
            if (tagged(tn)) return CORRUPT("table %u's slot holds a number", i);
            TRY(plan_node(p, tn, &th));
            if (!(th->flags & NF_REFS) || th->count < TBL_SLOTS) return CORRUPT("table node %llu malformed", (unsigned long long)tn);
            if (th->count > TBL_SLOTS) p->keyed_tables = true;
            if (th->count > TBL_KEYING && tagged(node_refs(th)[TBL_KEYING]) && (untag(node_refs(th)[TBL_KEYING]) & TBLK_NOIDX))
                p->unindexed_pks = true;
            mark = p->next;
            TRY(plan_assign(p, tn, node_size_of(th->flags, th->width, th->count), &fresh));
            if (!fresh) continue;
            const uint64_t *te = node_refs(th);
            TRY(plan_cluster(p, te[TBL_ROOT]));
            TRY(plan_tree(p, te[TBL_INDEXES], 1));
            for (uint32_t k = TBL_SLOTS; k < th->count; k++) TRY(plan_tree(p, te[k], 1));
            sp.table_bytes += p->next - mark;
            if (p->tables && i < p->ntables) p->tables[i] = p->next - mark;
        }
    }
    mark = p->next;
    TRY(plan_tree(p, e[TOP_HISTORY], 1));
    sp.history_bytes = p->next - mark;
    mark = p->next;
    /* slots a later format may add are copied too; the free lists and the run list are not */
    for (uint32_t k = TOP_SLOTS; k < top->count; k++) TRY(plan_tree(p, e[k], 1));
    sp.other_bytes = p->next - mark;
    sp.compacted_size = p->next;
    if (p->space) *p->space = sp;
    return CS_OK;
}

int cs_txn_space(cs_txn *t, uint64_t *tables, uint32_t ntables, cs_space_info *out)
{
    if (!t || !out || (ntables && !tables)) return cs_fail(CS_MISUSE, 0, "cs_txn_space: bad arguments");
    if (t->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_space: counts a read transaction's version");
    if (tables) memset(tables, 0, ntables * sizeof *tables);
    plan p;
    memset(&p, 0, sizeof p);
    p.t = t;
    p.next = HDR_SIZE;
    p.tables = tables;
    p.ntables = ntables;
    p.space = out;
    int rc = plan_version(&p);
    free(p.keys);
    free(p.vals);
    free(p.order);
    return rc;
}

/* ---- the copy ----------------------------------------------------------------------------- */

#define OUT_CHUNK (4u << 20)

typedef struct outbuf {
    uint8_t *b;
    uint64_t cap, n, at; /* buffer, its size, bytes in it, file offset of its first byte */
    compact_sink sink;
    void *ctx;
} outbuf;

static int out_flush(outbuf *o)
{
    if (o->n) TRY(o->sink(o->ctx, o->b, o->n, o->at));
    o->at += o->n;
    o->n = 0;
    return CS_OK;
}

static int out_room(outbuf *o, uint64_t need)
{
    if (o->n + need <= o->cap) return CS_OK;
    TRY(out_flush(o));
    if (need <= o->cap) return CS_OK;
    uint8_t *b = realloc(o->b, need);
    if (!b) return NOMEM();
    o->b = b;
    o->cap = need;
    return CS_OK;
}

int compact_stream(cs_txn *t, compact_sink sink, void *ctx, cs_progress progress, void *pctx, uint64_t *size)
{
    if (t->writing) return cs_fail(CS_MISUSE, 0, "a compacted copy is made from a read transaction");
    plan p;
    memset(&p, 0, sizeof p);
    p.t = t;
    p.next = HDR_SIZE;
    outbuf o = {NULL, 0, 0, 0, sink, ctx};
    int rc = plan_version(&p);
    if (rc != CS_OK) goto done;
    uint64_t logical = p.next;
    if (!(o.b = malloc(OUT_CHUNK))) { rc = NOMEM(); goto done; }
    o.cap = OUT_CHUNK;

    /* the header: slot 0 names the copied version, selected; the format it needs */
    uint16_t fmt = index_schema_needs_v2(t->schema) ? 2 : FORMAT_BASE;
    for (uint64_t i = 0; i < p.norder && fmt < FORMAT_FOR; i++) {
        node_hdr *h;
        if ((rc = plan_node(&p, p.order[i], &h)) != CS_OK) goto done;
        if (h->flags & NF_BASE) fmt = FORMAT_FOR; /* a frame-of-reference node (FORMAT.md §3) */
    }
    if (p.keyed_tables) fmt = FORMAT_PK_KEYS; /* a table node with the keying slots (FORMAT.md §6.1) */
    if (p.unindexed_pks) fmt = FORMAT_PK_NOIDX; /* a primary key without its index (FORMAT.md §6.1) */
    memset(o.b, 0, HDR_SIZE);
    file_fresh_header(o.b, plan_get(&p, t->top), t->version, logical, fmt);
    o.n = HDR_SIZE;
    uint64_t reported = 0;

    for (uint64_t i = 0; i < p.norder && rc == CS_OK; i++) {
        ref_t r = p.order[i];
        node_hdr *h;
        if ((rc = plan_node(&p, r, &h)) != CS_OK) break;
        uint64_t sz = node_size_of(h->flags, h->width, h->count);
        if ((rc = out_room(&o, sz)) != CS_OK) break;
        cs_assert3(o.at + o.n, ==, plan_get(&p, r));
        node_hdr *c = (node_hdr *)(o.b + o.n);
        memcpy(c, h, sz);
        if (c->flags & NF_REFS) {
            uint64_t *e = node_refs(c);
            for (uint32_t k = 0; k < c->count; k++) {
                if (!e[k] || tagged(e[k])) continue;
                if (r == t->top && (k == TOP_FREE_POS || k == TOP_FREE_LEN || k == TOP_FREE_VER || k == TOP_COMMIT_RUNS)) {
                    e[k] = 0;
                    continue;
                }
                uint64_t n = plan_get(&p, e[k]);
                if (!n) { rc = CORRUPT("node %llu names %llu, which the walk did not reach", (unsigned long long)r, (unsigned long long)e[k]); break; }
                e[k] = n;
            }
            if (r == t->top) e[TOP_SIZE] = tag_int((int64_t)logical);
        }
        c->check = node_checksum(c);
        o.n += sz;
        /* a chunk left for the sink: report it (out_room flushed it when the buffer filled) */
        if (progress && o.at != reported) {
            reported = o.at;
            progress(pctx, reported, logical);
        }
    }
    if (rc == CS_OK) rc = out_flush(&o);
    if (rc == CS_OK && progress) progress(pctx, logical, logical);
    if (rc == CS_OK) *size = logical;
done:
    free(o.b);
    free(p.keys);
    free(p.vals);
    free(p.order);
    return rc;
}

/* ---- copies to a file --------------------------------------------------------------------- */

static int sink_file(void *ctx, const void *buf, uint64_t n, uint64_t off)
{
    cs_dbfile *f = ctx;
    TRY(file_pwrite(f, buf, n, off));
    /* a copy that will be synced starts its writeback now, so the final sync waits for less
     * (a hint: nothing is durable before that sync) */
    if (f->durability == CS_DURABILITY_FULL) (void)sync_file_range(f->fd, (off_t)off, (off_t)n, SYNC_FILE_RANGE_WRITE);
    return CS_OK;
}

/* Writes the compacted copy of t's version to a new file at `path` through `io` (syncs it when
 * `sync`); on failure removes what it wrote. */
static int write_file(cs_txn *t, const cs_io *io, const char *path, bool sync, cs_progress progress, void *pctx,
                      uint64_t *size)
{
    int fd = io->open(io->ctx, path, O_RDWR | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST) return cs_fail(CS_EXISTS, e, "%s exists already", path);
        if (e == EACCES || e == EPERM || e == EROFS) return cs_fail(CS_PERM, e, "cannot create %s: %s", path, strerror(e));
        if (e == ENOSPC || e == EDQUOT) return cs_fail(CS_FULL, e, "cannot create %s: %s", path, strerror(e));
        return cs_fail(CS_IOERR, e, "cannot create %s: %s", path, strerror(e));
    }
    cs_dbfile sf; /* file_pwrite's view of the new file: its descriptor, io and name */
    memset(&sf, 0, sizeof sf);
    sf.fd = fd;
    sf.io = io;
    sf.path = (char *)path;
    sf.durability = sync ? CS_DURABILITY_FULL : CS_DURABILITY_NOSYNC;
    int rc = compact_stream(t, sink_file, &sf, progress, pctx, size);
    if (rc == CS_OK && sync && io->fdatasync(io->ctx, fd) != 0)
        rc = cs_fail(CS_IOERR, errno, "sync of %s failed: %s", path, strerror(errno));
    if (io->close(io->ctx, fd) != 0 && rc == CS_OK)
        rc = cs_fail(CS_IOERR, errno, "close of %s failed: %s", path, strerror(errno));
    if (rc != CS_OK) compact_io_unlink(io, path);
    return rc;
}

int compact_sync_dir_of(const cs_io *io, const char *path)
{
    char *dir = dir_of(path);
    if (!dir) return NOMEM();
    int rc = CS_OK;
    if (compact_io_sync_dir(io, dir) != 0)
        rc = cs_fail(CS_IOERR, errno, "sync of the directory %s failed: %s", dir, strerror(errno));
    free(dir);
    return rc;
}

int cs_txn_write_copy(cs_txn *t, const char *path, cs_progress progress, void *ctx)
{
    if (!t || !path) return cs_fail(CS_MISUSE, 0, "cs_txn_write_copy: bad arguments");
    if (t->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_write_copy: a write transaction cannot be copied (commit first)");
    const cs_io *io = t->f->io;
    bool sync = t->f->durability == CS_DURABILITY_FULL;
    uint64_t size;
    TRY(write_file(t, io, path, sync, progress, ctx, &size));
    return sync ? compact_sync_dir_of(io, path) : CS_OK;
}

/* Removes the lock file of `path` that verifying it left (never through io: the lock file is
 * not part of the data). */
static void unlink_lock(const char *path)
{
    size_t n = strlen(path);
    char *lp = malloc(n + 6);
    if (!lp) return;
    memcpy(lp, path, n);
    memcpy(lp + n, ".lock", 6);
    unlink(lp);
    free(lp);
}

/* Removes `path` and its lock file if they exist (a copy a crash left behind). */
static int remove_stale(const cs_io *io, const char *path)
{
    unlink_lock(path);
    if (compact_io_unlink(io, path) != 0 && errno != ENOENT)
        return cs_fail(CS_IOERR, errno, "cannot remove %s: %s", path, strerror(errno));
    return CS_OK;
}

int cs_db_compact(const char *path, const cs_options *opts, cs_progress progress, void *pctx, cs_compact_info *out)
{
    if (!path) return cs_fail(CS_MISUSE, 0, "cs_db_compact: path is required");
    cs_options o;
    memset(&o, 0, sizeof o);
    if (opts) o = *opts;
    o.flags = 0;
    const cs_io *io = o.io ? o.io : cs_io_default();
    cs_compact_info info;
    memset(&info, 0, sizeof info);
    cs_db *db;
    TRY(cs_db_open(path, &o, &db));
    cs_dbfile *f = db->f;
    char *tmp = NULL;
    cs_txn *t = NULL;
    int rc = file_claim(f);
    if (rc == CS_OK) rc = lock_take_alone(f);
    /* the journal is emptied before the file is replaced: its records would belong to a file
     * no path names (FORMAT.md §13, Checkpoints) */
    if (rc == CS_OK && !f->readonly) rc = journal_checkpoint_records(f);
    if (rc != CS_OK) goto done;
    struct stat st;
    if (io->fstat(io->ctx, f->fd, &st) != 0) { rc = cs_fail(CS_IOERR, errno, "cannot stat %s", path); goto done; }
    info.size_before = (uint64_t)st.st_size;
    size_t n = strlen(path);
    if (!(tmp = malloc(n + 9))) { rc = NOMEM(); goto done; }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".compact", 9);
    if ((rc = remove_stale(io, tmp)) != CS_OK) goto done;
    if ((rc = cs_txn_begin(db, CS_TXN_READ, &t)) != CS_OK) goto done;
    info.version = t->version;
    bool sync = f->durability == CS_DURABILITY_FULL;
    rc = write_file(t, io, tmp, sync, progress, pctx, &info.size_after);
    cs_txn_end(t);
    if (rc != CS_OK) goto done;
    /* invariant 2: only a copy that verifies replaces the file */
    if ((rc = cs_file_verify(tmp)) != CS_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", cs_errmsg());
        remove_stale(io, tmp);
        rc = cs_fail(rc, 0, "the compacted copy did not verify, %s is unchanged: %s", path, msg);
        goto done;
    }
    unlink_lock(tmp);
    if (compact_io_rename(io, tmp, path) != 0) {
        rc = cs_fail(CS_IOERR, errno, "cannot rename %s over %s: %s", tmp, path, strerror(errno));
        remove_stale(io, tmp);
        goto done;
    }
    if (sync) rc = compact_sync_dir_of(io, path);
done:
    if (rc != CS_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", cs_errmsg());
        int e = cs_errno();
        cs_db_close(db);
        rc = cs_fail(rc, e, "%s", msg);
    } else {
        cs_db_close(db);
    }
    free(tmp);
    if (rc == CS_OK && out) *out = info;
    return rc;
}
