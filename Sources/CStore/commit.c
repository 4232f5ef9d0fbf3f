/*
 * commit.c -- the commit (docs/FORMAT.md §2, Commit protocol) and the free list it maintains
 * (docs/FORMAT.md §7): a write transaction's dirty nodes are placed into free space no live
 * reader can see, written, synced, and made current by the header write (file.c).
 *
 * Durability rules (FULL mode), numbered as the tests refer to them:
 *  1. A commit never writes over a byte reachable from the newest committed version, nor from
 *     any version a live reader pins: it writes only into free space whose version tag is not
 *     newer than the oldest live version, or past the logical end of the file.
 *  2. All nodes of a commit are written and synced before the header changes (a one-sync
 *     commit writes them with the header and lets the header's hash of them detect a tear).
 *  3. The header write puts the new top into the slot the current version does not use and flips
 *     the selector in the same write; the unused slot is never the one being read.
 *  4. A failed sync marks the file broken (file.c invariant 3).
 */
#include "node.h"
#include "schema.h"
#include "snapshot.h"
#include "changes.h"
#include "index.h"
#include "lock.h"
#include "file.h"
#include "io.h"

#include <errno.h>

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
    if (!e) return NOMEM();
    f->free = e;
    f->cap_free = nc;
    return CS_OK;
}

/* Loads the free list of the transaction's version into f->free (cached per version). */
static int free_list_load(cs_txn *t)
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
    if (!out->ext) return NOMEM();
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
        return NOMEM();
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
        cs_assert3(x->ver, ==, 0); /* rule 1: only space no live reader can see */
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
    cs_assert3(x->ver, ==, 0); /* rule 1 */
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
        if ((rc = schema_serialize(t->schema, &sb, &sn)) != CS_OK) goto done;
        ref_t blob;
        rc = node_new_blob(t, sb, sn, &blob);
        free(sb);
        if (rc != CS_OK) goto done;
        ref_t *s;
        if ((rc = txn_top_slot(t, TOP_SCHEMA, &s)) != CS_OK) goto done;
        if (*s) node_free(t, *s);
        *s = blob;
    }
    /* 2. this commit's change records; the history keeps what live readers need */
    pthread_mutex_lock(&f->mu);
    uint64_t oldest = oldest_live(f, t->version);
    pthread_mutex_unlock(&f->mu);
    if ((rc = history_append(t, newver, oldest)) != CS_OK) goto done;
    /* the old free-list arrays die with this version */
    if ((rc = free_list_load(t)) != CS_OK) goto done;
    ref_t *fs;
    for (int i = 0; i < 3; i++) {
        if ((rc = txn_top_slot(t, TOP_FREE_POS + i, &fs)) != CS_OK) goto done;
        if (*fs) node_free(t, *fs);
        *fs = 0;
    }
    ref_t *top_slot;
    if ((rc = txn_top_slot(t, TOP_VERSION, &top_slot)) != CS_OK) goto done; /* makes the top writable */
    /* so does the previous commit's run list */
    ref_t *runs_slot;
    if ((rc = txn_top_slot(t, TOP_COMMIT_RUNS, &runs_slot)) != CS_OK) goto done;
    if (*runs_slot) node_free(t, *runs_slot);
    *runs_slot = 0;

    /* 3. the free list: reusable extents, plus what this commit frees (not reusable yet) */
    if ((rc = free_reserve(f, 2 * (f->nfree + t->nfreed) + 1)) != CS_OK) goto done;
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
        if ((rc = backdate(t, f, newver)) != CS_OK) goto done;
        free_coalesce(f, oldest);
    }
    uint64_t cap = f->nfree; /* allocation only shrinks or removes extents */
    uint64_t fl_size = node_size_of(0, 64, cap);

    /* 4. plan: dirty nodes in post-order, the free-list arrays and the run list before the top */
    collect(t, t->top, &plan);
    if (plan.oom) { rc = NOMEM(); goto done; }
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
    if (plan.oom) { rc = NOMEM(); goto done; }

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
    cs_assert3(off, ==, plan.total);
    cs_assert3(new_logical, >=, f->logical);

    /* 6. serialise */
    buf = malloc(plan.total ? plan.total : 8);
    if (!buf) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory for a commit of %llu bytes", (unsigned long long)plan.total); goto done; }
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
            cs_assert3(k, <=, runs_cap); /* at most one run per item */
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
            goto done;
        }
        /* the new end is allocated now, so a full disk fails here (io.h) */
        if ((rc = io_allocate(f->io, f->path, f->fd, f->phys_size, ns - f->phys_size)) != CS_OK) {
            f->io->ftruncate(f->io->ctx, f->fd, (off_t)f->phys_size);
            goto done;
        }
        f->phys_size = ns;
        if ((rc = file_map_for(f, ns)) != CS_OK) goto done;
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
        run.hash = file_run_hash(buf, plan.total);
    }
    for (uint64_t i = 0; i < plan.n;) {
        uint64_t j = i + 1;
        while (j < plan.n && plan.items[j].pos == plan.items[j - 1].pos + plan.items[j - 1].size &&
               plan.items[j].off == plan.items[j - 1].off + plan.items[j - 1].size)
            j++;
        uint64_t len = plan.items[j - 1].off + plan.items[j - 1].size - plan.items[i].off;
        if ((rc = file_pwrite(f, buf + plan.items[i].off, len, plan.items[i].pos)) != CS_OK) goto done;
        written += len;
        i = j;
    }
    /* two-sync commits make the nodes durable before the header names them; a one-sync commit
     * lets them race, and its header slot carries their hash so a torn commit is detected */
    if (!one_sync && (rc = file_sync(f)) != CS_OK) goto done;
    uint64_t top_pos = plan.items[plan.n - 1].pos;
    int nsel = f->selector ^ 1;
    /* the header covers the version this commit keeps in the other slot and the new one */
    uint16_t fmt = index_schema_needs_v2(t->schema) ? 2 : FORMAT_BASE;
    if (t->base_format > fmt) fmt = t->base_format;
    lock_committing(f);
    if ((rc = file_write_header(f, nsel, top_pos, newver, new_logical, false, one_sync ? &run : NULL, fmt)) != CS_OK) {
        f->broken = true; /* the header may or may not have reached the disk */
        goto done;
    }
    if ((rc = file_sync(f)) != CS_OK) goto done;
    written += HDR_USED;

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
done:
    /* one exit: on failure the cached free list no longer describes any version */
    if (rc != CS_OK) f->free_version = 0;
    free(buf);
    free(plan.items);
    return rc;
}
