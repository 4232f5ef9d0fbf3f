/*
 * commit.c -- where and how a commit's bytes reach the disk (docs/FORMAT.md §2, Commit protocol;
 * §7.2, Placement). What the new version contains the transaction layer decides (txn.c:
 * txn_stage, txn_plan); this file takes it in stages, each reading only what the one before
 * decided (file.h lists them):
 *   file_commit_space  the free list of the new version (freelist.c's tree, changed in place):
 *                      frees in, backdating, merging, online shrinking (§7.3);
 *   file_commit_write  place_commit: the plan (the nodes, the rewritten free-list nodes, the run
 *                      list, the top) and where each item goes; serialise: one buffer;
 *                      write_durable: file growth, the runs, the syncs and the header;
 *                      shrink_truncate; publish: the new version becomes the newest.
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
 *  5. A journaled commit (FULL, at most ONE_SYNC_MAX bytes) is durable once its journal record
 *     is synced; its in-place writes are made durable by a checkpoint (journal.c), which comes
 *     before any commit that writes in place without a record.
 */
#include "node.h"
#include "schema.h"
#include "snapshot.h"
#include "index.h"
#include "lock.h"
#include "file.h"
#include "io.h"
#include "freelist.h"
#include "journal.h"

#include <errno.h>
#include <stddef.h>

/* ---- free lists ------------------------------------------------------------------------- */

/* Loads the free list of the transaction's version into f->fl (cached per version). */
static int free_list_load(cs_txn *t)
{
    cs_dbfile *f = t->f;
    if (f->free_version == t->version) return CS_OK;
    uint64_t r[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) TRY(txn_top_get(t, TOP_FREE_POS + i, &r[i]));
    fl_clear(&f->fl);
    TRY(fl_load(t, r, t->limit, &f->fl));
    f->free_version = t->version;
    return CS_OK;
}

uint64_t file_oldest_live(cs_dbfile *f, uint64_t latest)
{
    uint64_t o = lock_oldest_pin(f, latest);
    for (uint32_t i = 0; i < f->npins; i++)
        if (f->pins[i].count && f->pins[i].version < o) o = f->pins[i].version;
    return o;
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
    TRY(freelist_read(t, r, out->end, &out->ext, &out->n));
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

typedef struct bdctx {
    cs_txn *t;
    pinrange *pr;   /* the pinned ranges of every process */
    size_t np;      /* how many */
    vfree cache[4]; /* free lists of pinned versions read so far */
    int ncache;     /* how many */
    int rc;         /* the first error */
} bdctx;

/* Whether extent e (freed at F) can be backdated: no pinned version reached it. */
static bool backdate_one(void *ctx, const extent *e)
{
    bdctx *c = ctx;
    if (c->rc != CS_OK) return false;
    uint64_t F = e->ver, V = 0, top = 0;
    bool any = false;
    for (size_t k = 0; k < c->np; k++) {
        if (c->pr[k].lo > F - 1) continue;
        uint64_t v = c->pr[k].hi < F - 1 ? c->pr[k].hi : F - 1;
        if (!any || v > V) { V = v; any = true; }
    }
    if (!any) return true;
    for (size_t k = 0; k < c->np && !top; k++) {
        if (c->pr[k].lo == V) top = c->pr[k].lo_top;
        else if (c->pr[k].hi == V) top = c->pr[k].hi_top;
    }
    if (!top) return false; /* V lies inside a pinned range: its free space is not known */
    vfree *vf = NULL;
    for (int k = 0; k < c->ncache; k++)
        if (c->cache[k].version == V) vf = &c->cache[k];
    if (!vf) {
        if (c->ncache == 4) return false;
        vf = &c->cache[c->ncache];
        if ((c->rc = load_free_of(c->t, top, vf)) != CS_OK) return false;
        vf->version = V;
        c->ncache++;
    }
    return covered(vf, e->pos, e->len);
}

/*
 * Space freed at version F was reachable only from versions [C, F-1], C the version that wrote
 * it. The oldest-reader rule reuses it once no reader is older than F; backdating also reuses it
 * while older versions are pinned, when the newest possibly-live version V below F (processes
 * publish the range of versions they pin) did not reach it: it lies in V's free space, so C > V
 * and no live version can see it.
 */
static int backdate(cs_txn *t, cs_dbfile *f, uint64_t newver, uint64_t oldest)
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
    bdctx c = {t, pr, np, {{0}}, 0, CS_OK};
    fl_backdate_scan(&f->fl, oldest, newver, backdate_one, &c);
    for (int k = 0; k < c.ncache; k++) free(c.cache[k].ext);
    free(pr);
    return c.rc != CS_OK ? c.rc : f->fl.err;
}


/* ---- online shrinking (docs/FORMAT.md §7.3) --------------------------------------------- */

/* A shrinking commit (docs/FORMAT.md §7.3) looks at the nodes of the last SHRINK_MOVE live
 * bytes (and of at most SHRINK_GAP live bytes between two holes) and moves those that fit into
 * holes below them, rewriting their parents. It moves only while at least 1/SHRINK_FREE_DIV of the
 * logical size is free, at most a sixteenth of that is pinned by readers and SHRINK_ROOM bytes are
 * reusable below the window; after a commit that could move nothing, or had to grow the file,
 * the next SHRINK_PAUSE commits move nothing. A commit that cut the tail, and the one after it,
 * truncate the file when that makes it SHRINK_CUT_MIN bytes shorter or more. */
#define SHRINK_MOVE (128u << 10)
#define SHRINK_FREE_DIV 8
#define SHRINK_DEPTH 64
#define SHRINK_PAUSE 8
#define SHRINK_HOLES 256
#define SHRINK_GAP (16u << 10)
#define SHRINK_ROOM (64u << 10)
#define SHRINK_CUT_MIN (64u << 10)

/* The step the file grows by when a commit needs more room (grow_to). */
static uint64_t grow_step(uint64_t size)
{
    uint64_t step = size / 8;
    if (step < (1ull << 20)) step = 1ull << 20;
    if (step > (256ull << 20)) step = 256ull << 20;
    return step;
}

/* Where the nodes a shrinking commit moves would go: each into the smallest reusable extent
 * below l->below that still holds it after those taken before (as placement will fill them),
 * at most SHRINK_HOLES extents. A node that would find none stays where it is: moved past
 * the end it would only come back into the tail. */
typedef struct shrink_fit {
    uint64_t pos[SHRINK_HOLES]; /* the extents taken */
    uint64_t left[SHRINK_HOLES]; /* what is left of each */
    int n;                       /* how many */
} shrink_fit;

static bool shrink_fits(freelist *l, shrink_fit *sf, uint64_t size, uint64_t oldest)
{
    uint64_t len;
    extent *x = fl_best_fit(l, size, oldest, sf->pos, sf->left, sf->n, false, &len);
    if (!x) return false;
    for (int k = 0; k < sf->n; k++)
        if (sf->pos[k] == x->pos) {
            sf->left[k] -= size;
            return true;
        }
    if (sf->n == SHRINK_HOLES) return false;
    sf->pos[sf->n] = x->pos;
    sf->left[sf->n++] = len - size;
    return true;
}

/* Moves the nodes that start at or past w (the version's own nodes; the free list's are
 * rewritten by fl_dirty_from) by copy-on-write, each that shrink_fits: it is copied into the
 * slab, its file copy freed, and every node on the path from the top to it becomes a copy too,
 * as for any change. Stops once `want` bytes have been looked at. The top is writable already. */
static int shrink_move(cs_txn *t, uint64_t w, uint64_t want, uint64_t tlo, uint64_t thi, uint64_t oldest,
                       uint64_t *moved, bool *unfit)
{
    freelist *l = &t->f->fl;
    shrink_fit *sf = malloc(sizeof *sf);
    if (!sf) return NOMEM();
    sf->n = 0;
    struct { ref_t r; uint32_t i; } st[SHRINK_DEPTH];
    int d = 0, rc = CS_OK;
    uint64_t seen = 0;
    st[0].r = t->top;
    st[0].i = 0;
    uint64_t tseen = 0;
    while (d >= 0 && (seen < want || tseen < thi - tlo)) {
        node_hdr *h;
        if ((rc = node_at(t, st[d].r, &h)) != CS_OK) break;
        if (!(h->flags & NF_REFS) || st[d].i >= h->count) {
            if (--d >= 0) st[d].i++;
            continue;
        }
        uint32_t i = st[d].i;
        /* the free list and the run list are rewritten by every commit */
        if (d == 0 && (i == TOP_FREE_POS || i == TOP_FREE_LEN || i == TOP_FREE_VER || i == TOP_COMMIT_RUNS)) {
            st[d].i++;
            continue;
        }
        ref_t c = node_refs(h)[i];
        if (!c || tagged(c)) {
            st[d].i++;
            continue;
        }
        if (!IS_SLAB(c) && (c >= w || (c >= tlo && c < thi))) {
            node_hdr *ch;
            if ((rc = node_at(t, c, &ch)) != CS_OK) break;
            uint64_t sz = node_size_of(ch->flags, ch->width, ch->count);
            if (c >= w) seen += sz;
            else tseen += sz;
            if (shrink_fits(l, sf, sz, oldest)) {
                /* copy the path (st[1..d]) first, then the node */
                for (int k = 1; k <= d && rc == CS_OK; k++) {
                    ref_t *slot = &node_refs((node_hdr *)txn_ptr(t, st[k - 1].r))[st[k - 1].i];
                    rc = node_cow(t, slot);
                    st[k].r = *slot;
                }
                ref_t *slot = &node_refs((node_hdr *)txn_ptr(t, st[d].r))[i];
                if (rc != CS_OK || (rc = node_cow(t, slot)) != CS_OK) break;
                *moved += sz;
                c = *slot;
            } else if (c >= w) {
                *unfit = true;
            }
        }
        if (d + 1 == SHRINK_DEPTH) {
            st[d].i++;
            continue;
        }
        d++;
        st[d].r = c;
        st[d].i = 0;
    }
    free(sf);
    return rc;
}

/*
 * The shrinking part of a commit (docs/FORMAT.md §7.3), after the free list holds what this
 * commit frees so far: drops the reusable extents that end the file (the new logical end is
 * returned in *end, *cut says whether it moved), then, while the file is at least
 * 1/SHRINK_FREE_DIV free, moves the live nodes of the last SHRINK_MOVE live bytes by
 * copy-on-write and keeps placement below them (l->below), so the next commits find the tail
 * free and cut it.
 */
static int shrink(cs_txn *t, cs_dbfile *f, uint64_t oldest, uint64_t *end, bool *cut)
{
    freelist *l = &f->fl;
    *end = fl_cut_tail(l, f->logical, oldest);
    if (l->err) return l->err;
    *cut = *end < f->logical;
    if (l->bytes < *end / SHRINK_FREE_DIV) return CS_OK;
    uint64_t live, fr;
    uint64_t w = fl_tail_window(l, *end, SHRINK_MOVE, &live, &fr);
    uint64_t unre = fl_unreusable_bytes(l, oldest);
    /* while readers pin free space, moving would mostly grow the file: what they pin is neither
     * a hole to move into nor a tail to cut, and the old copies of what moves are pinned too */
    if (unre > l->bytes / 16) return CS_OK;
    uint64_t room = l->bytes > unre + fr ? l->bytes - unre - fr : 0; /* reusable below w, about */
    if (!live || room < SHRINK_ROOM) return CS_OK;
    if (f->shrink_pause) {
        f->shrink_pause--;
        return CS_OK;
    }
    uint64_t nfreed = t->nfreed, moved = 0;
    l->below = w; /* from here on: shrink_fits, and placement */
    /* after a commit that found a node of the window too large for every hole, free space in
     * pieces comes together: the live bytes between the two reusable extents that would then
     * make the largest one are moved too, and nothing is placed into those two */
    uint64_t tlo = 0, thi = 0;
    if (f->shrink_unfit && fl_hole_pair(l, w, oldest, SHRINK_GAP, &tlo, &thi)) {
        extent *a = fl_extent_at(l, tlo - 8), *b = fl_extent_at(l, thi);
        l->avoid_lo = a->pos;
        l->avoid_hi = b->pos + 1;
    }
    bool unfit = false;
    TRY(shrink_move(t, w, live, tlo, thi, oldest, &moved, &unfit));
    f->shrink_unfit = unfit;
    /* nothing could move: the holes are too small for the window's nodes; look again later */
    if (!moved) f->shrink_pause = SHRINK_PAUSE;
    for (uint64_t i = nfreed; i < t->nfreed; i++) fl_insert(l, t->freed[i].pos, t->freed[i].len, l->newver);
    fl_dirty_from(l, w);
    return l->err;
}

/* ---- file_commit_space: the free list of the new version --------------------------------- */

int file_commit_space(cs_txn *t, commit_space *sp)
{
    cs_dbfile *f = t->f;
    freelist *l = &f->fl;
    uint64_t newver = t->version + 1;
    pthread_mutex_lock(&f->mu);
    sp->oldest = file_oldest_live(f, t->version);
    pthread_mutex_unlock(&f->mu);
    sp->end = f->logical;
    sp->cut = false;
    TRY(free_list_load(t));
    /* the free list is changed in place from here on: until the commit lands the cache
     * describes no version (file_commit_end: a failed commit reads it again) */
    f->free_version = 0;
    l->newver = newver;
    l->newbytes = 0;
    l->events = 0;
    l->err = CS_OK;
    /* the old root (or version-1/2 arrays) die with this version */
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

    /* what this commit frees goes in with the new version (not reusable yet); each insertion
     * dirties only the chunk it lands in (and frees that chunk's old node) */
    for (uint64_t i = 0; i < t->nfreed; i++) fl_insert(l, t->freed[i].pos, t->freed[i].len, newver);
    TRY(l->err);
    if (sp->oldest < t->version) TRY(backdate(t, f, newver, sp->oldest));
    fl_merge_reusable(l, sp->oldest, true);
    TRY(l->err);
    /* online shrinking (§7.3): cut the free tail, move the nodes of the last live bytes */
    if (t->db->shrink) TRY(shrink(t, f, sp->oldest, &sp->end, &sp->cut));
    return fl_reshape(l);
}

void file_commit_end(cs_dbfile *f, int rc)
{
    if (rc != CS_OK) f->free_version = 0;
    f->fl.below = f->fl.avoid_lo = f->fl.avoid_hi = 0;
}

/* ---- file_commit_write, the plan: what it writes, in plan order ------------------------- */

/* Element i of a width-64 packed node (what packed_set does at 64 bits, without its width switch). */
static inline void put64(uint8_t *p, uint64_t i, int64_t v) { memcpy(p + i * 8, &v, 8); }

enum { CI_NODE, CI_CHUNK, CI_ROOT, CI_PAGE, CI_RUNS };

typedef struct citem {
    ref_t slab;    /* the slab node (0 for the free-list nodes and the run list) */
    int kind;      /* CI_* */
    void *obj;     /* the fl_chunk or fl_page a CI_CHUNK or CI_PAGE item writes */
    uint64_t size; /* bytes */
    uint64_t pos;  /* file position */
    uint64_t off;  /* offset in the write buffer */
    bool cold;     /* commit_node.cold; placed apart in P3a */
    bool top;      /* the top node (the last item placed) */
    int hole;      /* the extent place_choose put it in: an index into alloc_cur, -1 past the end,
                      -2 none (place() then follows the previous item) */
} citem;

typedef struct cplan {
    citem *items;          /* in plan order, then (after placement) file order */
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
    p->items[p->n] = (citem){r, CI_NODE, NULL, size, 0, 0, false, false, -2};
    p->n++;
    p->total += size;
}

static void plan_add_kind(cplan *p, int kind, void *obj, uint64_t size)
{
    plan_add(p, 0, size);
    if (!p->oom) {
        p->items[p->n - 1].kind = kind;
        p->items[p->n - 1].obj = obj;
    }
}

/* The free-list nodes this commit writes (docs/FORMAT.md §7.1), children before parents: each
 * dirty page's dirty chunks, then the page; the root last. Only dirty pages are visited. */
static void plan_free_list(freelist *l, cplan *p)
{
    for (uint32_t pi = 0; pi < l->n; pi++) {
        fl_page *pg = l->p[pi];
        if (!pg->dirty) continue;
        for (uint32_t ci = 0; ci < pg->n; ci++) {
            fl_chunk *c = pg->c[ci];
            if (!c->dirty) continue;
            c->size = node_size_of(0, 64, 3 * (uint64_t)c->n);
            plan_add_kind(p, CI_CHUNK, c, c->size);
        }
        pg->size = node_size_of(NF_REFS, 64, 2 * (uint64_t)pg->n);
        plan_add_kind(p, CI_PAGE, pg, pg->size);
    }
    if (l->n) plan_add_kind(p, CI_ROOT, NULL, node_size_of(NF_REFS, 64, 2 * (uint64_t)l->n));
}

/*
 * Placement (docs/FORMAT.md §7.2). A commit's bytes are laid out in plan order (the nodes
 * post-order, the rewritten free-list chunks and pages, the root, the run list, the top), and
 * placement keeps them in as few contiguous runs as it can, because each run is a write and
 * scattered writes cost more to make durable than one:
 *  P1. If one reusable extent holds the whole commit (with PLACE_MARGIN to spare), the smallest
 *      such extent takes it: one run.
 *  P2. Else, while reusable free space is less than 1/PLACE_FREE_DIV of the logical size, the
 *      commit goes past the logical end: one run, the file grows by the commit.
 *  P3a. Else the cold nodes (collect()) each go into the smallest reusable extent that holds it,
 *      looked for first among the chunks the commit rewrites anyway; the others (the path above
 *      them, the free-list nodes, the run list and the top: the *hot* part) go, in plan order,
 *      into the first reusable extent that holds all of them at or after where the previous
 *      commit's hot part ended (next fit, wrapping round; the position is kept in memory per open
 *      file, f->place_cursor). A cold node no extent holds joins the hot part. When no extent
 *      holds the hot part, P3 decides instead. The hot part is rewritten by the next commits and
 *      so freed in one piece where it was written; the cold nodes fill holes of their own size
 *      (the old copies of nodes like them) and leave no small live islands among those pieces:
 *      so the hot parts of later commits find whole extents again, and a small commit is one
 *      run, one write per cold node and the header.
 *  P3. Else the nodes go, in plan order, into the extent the previous node went into while it
 *      has room. A node that does not fit there goes into the smallest extent already chosen
 *      that holds it; else a new extent is chosen: the smallest reusable one that holds this
 *      node and all after it (the rest of the commit is one more run), else the smallest
 *      reusable one that holds the node in a chunk this commit rewrites anyway, else in any
 *      chunk. Only a node no reusable extent holds goes past the end.
 * Choosing an extent rewrites its chunk (placement shortens it), which adds that chunk's node to
 * the commit, and freeing the chunk's old node may rewrite another chunk: the choice is repeated
 * on the grown plan until it makes no further chunk rewritten (at most PLACE_ROUNDS times), so
 * that every node is placed as the last choice planned it. Placement changes no chunk that is
 * not rewritten anyway.
 * Growth: the file grows in P2, while reusable space is under 1/PLACE_FREE_DIV of it, and in
 * P3 only by nodes that no reusable extent holds (and, if the rounds ran out, by the free-list
 * nodes the last round added). docs/FORMAT.md §7.2 states the resulting bound, which
 * FreeSpaceTests checks after many random one-row updates.
 */
#define PLACE_FREE_DIV 16
#define PLACE_MAX_HOLES 256
#define PLACE_ROUNDS 8
/* room left in P1 for what choosing the extent adds (its chunk and page rewritten, and the ones
 * their old nodes join). Its size also keeps P1 from putting cold nodes (P3a) into an extent
 * that only just holds the commit: measured, two chunks of 64 extents instead of FL_CHUNK_MAX
 * made settled one-row commits 5.5-9.5 writes instead of 4 (the cold nodes left in such extents
 * keep later hot parts out of them). */
#define PLACE_MARGIN (2 * (8 + 3 * 8 * FL_CHUNK_MAX) + 2 * (8 + 2 * 8 * FL_PAGE_MAX))
/* (P3a keeps no margin: what its choice adds to the hot part is seen by the next round) */

typedef struct alloc_cur {
    uint64_t holes[PLACE_MAX_HOLES];  /* the start of each extent the commit may fill (UINT64_MAX: used up) */
    uint64_t opened[PLACE_MAX_HOLES]; /* the first item the choice put into each */
    extent *x[PLACE_MAX_HOLES];       /* while placing: the extent each start names (placement only
                                         shortens extents, so the pointers stay valid) */
    fl_chunk *ch[PLACE_MAX_HOLES];    /* ... and the chunk that holds it */
    int nholes;    /* how many */
    int last;      /* the extent the previous item went into (-1: none, or past the end) */
    uint64_t end;  /* logical end of the file */
} alloc_cur;

/* Takes `size` bytes from the start of chosen extent h. */
static uint64_t take(cs_dbfile *f, alloc_cur *c, int h, uint64_t size, uint64_t oldest)
{
    extent *bx = c->x[h];
    fl_chunk *ch = c->ch[h];
    /* rule 1: only space no live reader can see, an extent freed in a version no newer than
     * the oldest one a live reader reads */
    cs_assert(bx->ver <= oldest);
    (void)oldest;
    uint64_t p = bx->pos;
    /* the chunk's aggregates stay exact unless this was its longest extent, or the one of
     * its newest version used up (fl_published); an extent used up is padding until then */
    if (bx->len == ch->maxlen) ch->shrunk = true;
    bx->pos += size;
    bx->len -= size;
    if (!bx->len) {
        uint32_t i = (uint32_t)(bx - ch->e);
        if (!ch->used_up || i < ch->first_used_up) ch->first_used_up = i;
        ch->used_up++;
        if (bx->ver == ch->maxver) ch->shrunk = true;
    }
    f->fl.bytes -= size;
    c->holes[h] = bx->len ? bx->pos : UINT64_MAX;
    c->last = h;
    return p;
}

/* Places item `item` of `size` bytes as place_choose planned it: where the choice put it (`hole`
 * >= 0: that extent, -1: past the end) while that extent has room; else (no choice for the item,
 * or the plan grew after the last choice) into the extent the previous item went into while it
 * has room, else into the smallest chosen extent (opened at or before this item) that holds it,
 * else past the end. */
static uint64_t place(cs_dbfile *f, alloc_cur *c, uint64_t item, int hole, uint64_t size, uint64_t oldest)
{
    if (hole >= 0 && c->holes[hole] != UINT64_MAX && c->x[hole]->len >= size) return take(f, c, hole, size, oldest);
    if (hole != -1) {
        if (c->last >= 0 && c->holes[c->last] != UINT64_MAX && c->x[c->last]->len >= size)
            return take(f, c, c->last, size, oldest);
        int best = -1;
        for (int h = 0; h < c->nholes; h++) {
            if (c->holes[h] == UINT64_MAX || c->opened[h] > item) continue;
            extent *x = c->x[h];
            if (x->len >= size && (best < 0 || x->len < c->x[best]->len)) best = h;
        }
        if (best >= 0) return take(f, c, best, size, oldest);
    }
    c->last = -1;
    uint64_t p = c->end;
    c->end += size;
    return p;
}

/* P3a (above): chooses an extent for each cold item and one for the hot part, recording them in
 * the items' `hole`. False, with nothing chosen, when no reusable extent holds the hot part. */
static bool place_split(cs_dbfile *f, alloc_cur *c, cplan *p, uint64_t oldest)
{
    freelist *l = &f->fl;
    uint64_t left[PLACE_MAX_HOLES]; /* what the choice leaves of each chosen extent */
    uint64_t hot = 0, len;
    for (uint64_t k = 0; k < p->n; k++) {
        citem *it = &p->items[k];
        it->hole = -2;
        extent *x = NULL;
        if (it->cold && c->nholes < PLACE_MAX_HOLES - 1) {
            x = fl_best_fit(l, it->size, oldest, c->holes, left, c->nholes, true, &len);
            if (!x) x = fl_best_fit(l, it->size, oldest, c->holes, left, c->nholes, false, &len);
        }
        if (!x) {
            hot += it->size;
            continue;
        }
        int h = -1;
        for (int g = 0; g < c->nholes && h < 0; g++)
            if (c->holes[g] == x->pos) h = g;
        if (h < 0) {
            h = c->nholes++;
            c->holes[h] = x->pos;
            c->opened[h] = k;
            left[h] = len;
        }
        left[h] -= it->size;
        it->hole = h;
    }
    extent *x = fl_next_fit(l, hot, oldest, f->place_cursor, c->holes, c->nholes, NULL);
    if (!x) {
        c->nholes = 0;
        for (uint64_t k = 0; k < p->n; k++) p->items[k].hole = -2;
        return false;
    }
    int hh = c->nholes++;
    c->holes[hh] = x->pos;
    c->opened[hh] = 0;
    for (uint64_t k = 0; k < p->n; k++)
        if (p->items[k].hole == -2) p->items[k].hole = hh;
    return true;
}

/* Chooses the extents for the commit planned in p (P1-P3 above). P1 and P3 are a simulation of
 * place() that opens a new extent whenever place() would find none among those chosen; P3a
 * records its choice per item. */
static void place_choose(cs_dbfile *f, alloc_cur *c, cplan *p, uint64_t oldest, uint64_t end)
{
    freelist *l = &f->fl;
    c->nholes = 0;
    c->last = -1;
    c->end = end;
    for (uint64_t k = 0; k < p->n; k++) p->items[k].hole = -2;
    extent *x = fl_best_fit(l, p->total + PLACE_MARGIN, oldest, NULL, NULL, 0, false, NULL);
    if (x) { /* P1 */
        c->opened[0] = 0;
        c->holes[c->nholes++] = x->pos;
        return;
    }
    /* P2; a shrinking commit (l->below set) never goes past the end while a hole holds its node */
    if (!l->below && l->bytes - fl_unreusable_bytes(l, oldest) < f->logical / PLACE_FREE_DIV) return;
    /* P3a; not for a shrinking commit, whose extents must lie below its window */
    if (!l->below && place_split(f, c, p, oldest)) return;
    /* P3: left[h] is what the simulation has left of chosen extent h */
    uint64_t left[PLACE_MAX_HOLES];
    int cur = -1;
    uint64_t rest = p->total; /* bytes of items k.. */
    for (uint64_t k = 0; k < p->n;) {
        uint64_t size = p->items[k].size, len;
        if (cur >= 0 && left[cur] >= size) {
            left[cur] -= size;
            rest -= size;
            k++;
            continue;
        }
        int h = -1;
        for (int g = 0; g < c->nholes; g++)
            if (left[g] >= size && (h < 0 || left[g] < left[h])) h = g;
        if (h >= 0) {
            cur = h;
            continue;
        }
        x = NULL;
        if (c->nholes < PLACE_MAX_HOLES) {
            x = fl_best_fit(l, rest, oldest, c->holes, left, c->nholes, false, &len);
            if (!x) x = fl_best_fit(l, size, oldest, c->holes, left, c->nholes, true, &len);
            if (!x) x = fl_best_fit(l, size, oldest, c->holes, left, c->nholes, false, &len);
        }
        if (!x) { /* past the end */
            cur = -1;
            rest -= size;
            k++;
            continue;
        }
        c->holes[c->nholes] = x->pos;
        c->opened[c->nholes] = k;
        left[c->nholes] = len;
        cur = c->nholes++;
    }
}

/* ---- file_commit_write, step 1: where each item goes ------------------------------------ */

/* Where placement put the parts the serialisation patches into the top. */
typedef struct layout {
    uint64_t end;      /* the new logical end */
    uint64_t root_pos; /* the free list's root (0: the list is empty) */
    uint64_t runs_pos; /* the run list */
    uint64_t runs_cap; /* its pairs' capacity: at most one run per item */
    uint64_t top_pos;  /* the new top */
} layout;

/* Items by file position (placement gives every item its own bytes, so no two are equal). */
static int item_by_pos(const void *a, const void *b)
{
    uint64_t x = ((const citem *)a)->pos, y = ((const citem *)b)->pos;
    return x < y ? -1 : x > y;
}

/* Plans the commit: the nodes of w without the top, then the free-list nodes, the run list and
 * the top (plan_free_list), and chooses the extents (place_choose) on the grown plan until the
 * choice rewrites no further chunk; then gives every item its file position and buffer offset,
 * shortening the chosen extents. */
static int place_commit(cs_dbfile *f, const commit_space *sp, const commit_what *w, cplan *plan, layout *lo)
{
    freelist *l = &f->fl;
    uint64_t oldest = sp->oldest;
    for (uint64_t i = 0; i + 1 < w->n; i++) {
        plan_add(plan, w->nodes[i].slab, w->nodes[i].size);
        if (!plan->oom) plan->items[plan->n - 1].cold = w->nodes[i].cold;
    }
    if (plan->oom) return NOMEM();
    const commit_node *topn = &w->nodes[w->n - 1];
    uint64_t nodes_n = plan->n, nodes_total = plan->total;
    alloc_cur cur; /* its arrays are written before they are read (place_choose, then below) */
    cur.nholes = 0;
    cur.last = -1;
    cur.end = sp->end;
    for (int round = 0;; round++) {
        plan->n = nodes_n;
        plan->total = nodes_total;
        plan_free_list(l, plan);
        lo->runs_cap = 2 * (plan->n + 2); /* at most one run per item */
        plan_add_kind(plan, CI_RUNS, NULL, node_size_of(0, 64, lo->runs_cap));
        plan_add(plan, topn->slab, topn->size);
        if (plan->oom) return NOMEM();
        if (round == PLACE_ROUNDS) break;
        place_choose(f, &cur, plan, oldest, sp->end);
        /* the extents chosen are rewritten with their chunks; once no further chunk is, the
         * plan is the one the choice was made for */
        int newly = 0;
        for (int h = 0; h < cur.nholes; h++) {
            uint32_t pi, ci;
            fl_locate(l, cur.holes[h], &pi, &ci);
            if (!l->p[pi]->c[ci]->dirty) newly++;
            fl_chunk_dirty(l, pi, ci);
        }
        TRY(l->err);
        if (!newly) break;
        fl_merge_reusable(l, oldest, false);
        TRY(fl_reshape(l));
    }
    /* a merge may have joined a chosen extent to the one before: fill from its start. From
     * here on the free list's shape is fixed (placement only shortens extents of the chunks
     * it rewrites), so each chosen extent and its chunk are looked up once */
    int k = 0, to[PLACE_MAX_HOLES];
    for (int h = 0; h < cur.nholes; h++) {
        fl_chunk *ch;
        extent *x = fl_extent_in(l, cur.holes[h], &ch);
        uint64_t pos = x->pos;
        to[h] = -1;
        for (int g = 0; g < k && to[h] < 0; g++)
            if (cur.holes[g] == pos) {
                to[h] = g;
                if (cur.opened[h] < cur.opened[g]) cur.opened[g] = cur.opened[h];
            }
        if (to[h] < 0) {
            cur.opened[k] = cur.opened[h];
            cur.x[k] = x;
            cur.ch[k] = ch;
            to[h] = k;
            cur.holes[k++] = pos;
        }
    }
    cur.nholes = k;
    for (uint64_t i = 0; i < plan->n; i++)
        if (plan->items[i].hole >= 0) plan->items[i].hole = to[plan->items[i].hole];

    /* placement (P1-P3 above) */
    lo->root_pos = lo->runs_pos = 0;
    bool sorted = true;
    for (uint64_t i = 0; i < plan->n; i++) {
        citem *it = &plan->items[i];
        it->pos = place(f, &cur, i, it->hole, it->size, oldest);
        if (i && it->pos < plan->items[i - 1].pos) sorted = false;
        if (it->kind == CI_CHUNK) ((fl_chunk *)it->obj)->ref = it->pos;
        else if (it->kind == CI_PAGE) ((fl_page *)it->obj)->ref = it->pos;
        else if (it->kind == CI_ROOT) lo->root_pos = it->pos;
        else if (it->kind == CI_RUNS) lo->runs_pos = it->pos;
    }
    lo->end = cur.end;
    lo->top_pos = plan->items[plan->n - 1].pos;
    plan->items[plan->n - 1].top = true;
    /* where P3a of the next commit starts looking: after this commit's top, its last item */
    f->place_cursor = lo->top_pos + plan->items[plan->n - 1].size;
    /* the buffer holds the items in file order, so items that placement put side by side are
     * one run, one write (plan order matters to placement only; the order of the runs is the
     * writer's choice, FORMAT.md §7.2) */
    if (!sorted && plan->n > 64) {
        qsort(plan->items, plan->n, sizeof *plan->items, item_by_pos);
    } else if (!sorted) { /* a small commit: an insertion sort, no call per comparison */
        for (uint64_t i = 1; i < plan->n; i++) {
            citem x = plan->items[i];
            uint64_t j = i;
            for (; j > 0 && plan->items[j - 1].pos > x.pos; j--) plan->items[j] = plan->items[j - 1];
            plan->items[j] = x;
        }
    }
    uint64_t off = 0;
    for (uint64_t i = 0; i < plan->n; i++) {
        plan->items[i].off = off;
        off += plan->items[i].size;
    }
    /* a shrinking commit that had to put nodes past the end found the holes below its window
     * too small for its own nodes: the next SHRINK_PAUSE commits move nothing */
    if (l->below && lo->end > sp->end) f->shrink_pause = SHRINK_PAUSE;
    cs_assert3(off, ==, plan->total);
    cs_assert3(lo->end, >=, sp->end);
    return CS_OK;
}

/* ---- step 2: the bytes ------------------------------------------------------------------ */

/* The run list (FORMAT.md §4, top slot 9): the commit's runs in buffer order, (position,
 * length) pairs, padded with zero pairs to `cap` words. */
/* Writes the run list: its (position, length) pairs, then zeros up to its capacity `cap`
 * (words: two per item of the plan, and runs join items, so the pairs always fit). */
static void put_runs(node_hdr *dst, const cplan *plan, uint64_t cap)
{
    dst->count = (uint32_t)cap;
    uint64_t k = 0;
    for (uint64_t a = 0; a < plan->n;) {
        uint64_t b = a + 1;
        while (b < plan->n && plan->items[b].pos == plan->items[b - 1].pos + plan->items[b - 1].size) b++;
        put64(node_values(dst), k++, (int64_t)plan->items[a].pos);
        put64(node_values(dst), k++, (int64_t)(plan->items[b - 1].pos + plan->items[b - 1].size - plan->items[a].pos));
        a = b;
    }
    cs_assert3(k, <=, cap); /* at most one run per item */
    memset(node_values(dst) + k * 8, 0, (cap - k) * 8); /* the padding */
}

/* A free-list chunk (FORMAT.md §7.1): (position, length, version) triples; the extents
 * placement used up are padding. */
static void put_chunk(node_hdr *dst, const fl_chunk *c)
{
    dst->count = (uint32_t)(3 * c->n);
    /* an extent is the three words in that order: copied whole, then the used-up ones zeroed */
    _Static_assert(sizeof(extent) == 24 && offsetof(extent, len) == 8 && offsetof(extent, ver) == 16,
                   "extent is (pos, len, ver)");
    memcpy(node_values(dst), c->e, (size_t)c->n * sizeof(extent));
    for (uint32_t e = c->used_up ? c->first_used_up : c->n; e < c->n; e++)
        if (!c->e[e].len) {
            put64(node_values(dst), 3 * e, 0);
            put64(node_values(dst), 3 * e + 2, 0);
        }
}

/* A free-list page or the root: (tagged lower bound, ref) per chunk of the page, per page of
 * the root. */
static void put_page(node_hdr *dst, const freelist *l, const fl_page *pg)
{
    dst->flags = NF_REFS;
    uint64_t *e = node_refs(dst);
    if (pg) {
        dst->count = (uint32_t)(2 * pg->n);
        for (uint32_t c = 0; c < pg->n; c++) {
            e[2 * c] = tag_int((int64_t)pg->c[c]->lo);
            e[2 * c + 1] = pg->c[c]->ref;
        }
    } else {
        dst->count = (uint32_t)(2 * l->n);
        for (uint32_t p = 0; p < l->n; p++) {
            e[2 * p] = tag_int((int64_t)l->p[p]->lo);
            e[2 * p + 1] = l->p[p]->ref;
        }
    }
}

#if CS_ASSERTS
/* cs_test_fail_commit_check (docs/CONTRIBUTING.md, "Injected allocation failures"): the next
 * size check of serialise on this thread reports a difference. */
static _Thread_local bool fail_check;
#endif

bool cs_test_fail_commit_check(void)
{
#if CS_ASSERTS
    fail_check = true;
    return true;
#else
    return false;
#endif
}

/* Whether the injected failure of the size check is due (and takes it). */
static bool serialise_fails(void)
{
#if CS_ASSERTS
    bool due = fail_check;
    fail_check = false;
    return due;
#else
    return false;
#endif
}

/* The slot's hash of a one-sync commit's bytes (file_run_hash of the whole buffer, FORMAT.md
 * §2) taken while serialise checksums the nodes: the two are chains of dependent multiplies
 * over the same bytes, and one loop that steps both lets the processor run them side by side
 * (docs/ARCHITECTURE.md, "The durable commit's hashes"). The hash cannot take a node with its
 * own checksum (the checksum is in the node's header, which the hash takes first), so it
 * follows behind: `at` is the part of the buffer it has taken, and each node's checksum takes
 * as many of the finished bytes before the node as it has payload words. */
typedef struct slot_hash {
    run_hash h;
    uint64_t at;
} slot_hash;

/* Sets dst's checksum and adds to the slot's hash up to as many words of the buffer's finished
 * bytes [sh->at, dst) as dst's checksum takes, in the same loop. */
static void seal_node_hashing(node_hdr *dst, const uint8_t *buf, slot_hash *sh)
{
    uint64_t n = node_check_words(dst), m = ((uint64_t)((const uint8_t *)dst - buf) - sh->at) / 8;
    const uint8_t *p = (const uint8_t *)dst + NODE_HDR, *q = buf + sh->at;
    node_check c = node_check_start(dst);
    run_hash h = sh->h;
    uint64_t k = n < m ? n : m, i = 0;
    for (; i < k; i++) {
        uint64_t w, v;
        memcpy(&w, p + i * 8, 8);
        memcpy(&v, q + i * 8, 8);
        node_check_word(&c, w);
        run_hash_word(&h, v);
    }
    for (uint64_t j = i; j < n; j++) {
        uint64_t w;
        memcpy(&w, p + j * 8, 8);
        node_check_word(&c, w);
    }
    sh->h = h;
    sh->at += k * 8;
    dst->check = node_check_end(&c);
}

/* Sets dst's checksum; with sh (a one-sync commit), with the slot's hash alongside. */
static inline void seal_node(node_hdr *dst, const uint8_t *buf, slot_hash *sh)
{
    if (sh) seal_node_hashing(dst, buf, sh);
    else dst->check = node_checksum(dst);
}

/* Serialises every item of the plan into one buffer of plan->total bytes, in file order: the
 * slab nodes with their refs to slab nodes replaced by file positions, the top with its
 * free-list, run-list, size and version slots set for the new version, and the free-list
 * nodes and the run list built from what placement left. *out is the caller's to free. With
 * `hash` (a one-sync commit), *hash is file_run_hash of the buffer, the slot's hash. */
static int serialise(cs_txn *t, const cplan *plan, const layout *lo, uint64_t newver, uint8_t **out,
                     uint64_t *hash)
{
    uint8_t *buf = malloc(plan->total ? plan->total : 8);
    if (!buf) return cs_fail(CS_NOMEM, ENOMEM, "out of memory for a commit of %llu bytes", (unsigned long long)plan->total);
    /* each slab node's file position, in its block's prefix, for the refs to it */
    for (uint64_t i = 0; i < plan->n; i++)
        if (plan->items[i].slab) memcpy(txn_ptr(t, plan->items[i].slab) - 8, &plan->items[i].pos, 8);
    slot_hash sh = {run_hash_start(plan->total), 0};
    slot_hash *shp = hash ? &sh : NULL;
    /* the items lie back to back in the buffer, in this order (place_commit): the bytes before
     * an item are finished when its turn comes */
    for (uint64_t i = 0; i < plan->n; i++) {
        const citem *it = &plan->items[i];
        node_hdr *dst = (node_hdr *)(buf + it->off);
        if (it->kind != CI_NODE) {
            /* the node's size follows from what it will hold, and must be the size placement
             * gave it before a byte of it is written: a larger one would overrun the items after
             * it in the buffer, or the buffer. A difference is the core's own error, checked in
             * every build: the commit fails with CS_INTERNAL, nothing written (file_commit_end
             * drops what placement took from the free list, as after any failure before the
             * write) */
            uint64_t count = it->kind == CI_RUNS    ? lo->runs_cap
                             : it->kind == CI_CHUNK ? 3 * (uint64_t)((const fl_chunk *)it->obj)->n
                             : it->kind == CI_PAGE  ? 2 * (uint64_t)((const fl_page *)it->obj)->n
                                                    : 2 * (uint64_t)t->f->fl.n;
            uint8_t flags = it->kind == CI_PAGE || it->kind == CI_ROOT ? NF_REFS : 0;
            if (node_size_of(flags, 64, count) != it->size || count > UINT32_MAX || serialise_fails()) {
                free(buf);
                return cs_fail(CS_INTERNAL, 0,
                               "the commit of version %llu to %s built a %s node of %llu elements where placement "
                               "gave %llu bytes (an error of the library; nothing was written)",
                               (unsigned long long)newver, t->f->path,
                               it->kind == CI_RUNS ? "run-list" : "free-list", (unsigned long long)count,
                               (unsigned long long)it->size);
            }
            /* each put_* writes every word of its node's payload */
            dst->flags = 0;
            dst->width = 64;
            if (it->kind == CI_RUNS) put_runs(dst, plan, lo->runs_cap);
            else if (it->kind == CI_CHUNK) put_chunk(dst, it->obj);
            else put_page(dst, &t->f->fl, it->kind == CI_PAGE ? it->obj : NULL);
            /* what the put_* wrote is what was checked above */
            cs_assert3(node_size_of(dst->flags, 64, dst->count), ==, it->size);
            seal_node(dst, buf, shp);
            continue;
        }
        memcpy(dst, txn_ptr(t, it->slab), it->size);
        if (dst->flags & NF_REFS) {
            uint64_t *e = node_refs(dst);
            for (uint32_t j = 0; j < dst->count; j++)
                if (e[j] && !tagged(e[j]) && IS_SLAB(e[j])) memcpy(&e[j], txn_ptr(t, e[j]) - 8, 8);
        }
        if (it->top) {
            uint64_t *e = node_refs(dst);
            e[TOP_FREE_POS] = lo->root_pos;
            e[TOP_FREE_LEN] = 0;
            e[TOP_FREE_VER] = 0;
            e[TOP_COMMIT_RUNS] = lo->runs_pos;
            e[TOP_SIZE] = tag_int((int64_t)lo->end);
            e[TOP_VERSION] = tag_int((int64_t)newver);
        }
        seal_node(dst, buf, shp);
    }
    if (hash) {
        /* what the checksums left: the last item's bytes at least */
        run_hash_words(&sh.h, buf + sh.at, plan->total - sh.at);
        *hash = run_hash_end(&sh.h);
        /* the same number file_run_hash gives, in builds with the core's checks */
        cs_assert(*hash == file_run_hash(buf, plan->total));
    }
    *out = buf;
    return CS_OK;
}

/* ---- step 3: the durable write ---------------------------------------------------------- */

/* Makes the file at least `end` bytes long, growing it by a step (grow_step) and allocating the
 * new bytes so a full disk fails here (io.h), before anything is written. */
static int grow_to(cs_dbfile *f, uint64_t end)
{
    if (end <= f->phys_size) return CS_OK;
    uint64_t ns = (end + grow_step(f->phys_size) + 4095) & ~4095ull;
    if (f->io->ftruncate(f->io->ctx, f->fd, (off_t)ns) != 0) {
        int e = errno;
        return (e == ENOSPC || e == EDQUOT || e == EFBIG) ? cs_fail(CS_FULL, e, "disk full growing %s", f->path)
                                                          : cs_fail(CS_IOERR, e, "cannot grow %s: %s", f->path, strerror(e));
    }
    int rc = io_allocate(f->io, f->path, f->fd, f->phys_size, ns - f->phys_size);
    if (rc != CS_OK) {
        f->io->ftruncate(f->io->ctx, f->fd, (off_t)f->phys_size);
        return rc;
    }
    file_wmap_resized(f, f->phys_size, ns);
    f->phys_size = ns;
    return file_map_for(f, ns);
}

/* What the durable write did, for cs_txn_last_commit_io. */
typedef struct io_count {
    uint64_t bytes;
    uint32_t writes, syncs;
} io_count;

/* Writes the buffer (one pwrite per run of items contiguous in the file and the buffer) and
 * makes it the newest version by the header (durability rules 2-5):
 *  - FULL, at most ONE_SYNC_MAX bytes (a journaled commit, docs/FORMAT.md §13): the runs are
 *    written in place, then one record of the runs and the header is appended to the journal,
 *    which alone is synced (the commit point), then the header is written in place; the
 *    database file is not synced (a checkpoint syncs it later). The header slot still carries
 *    the one-sync hash of the runs. A failed header write marks the file broken: the commit
 *    has landed (its record is durable), so it reports success and the journal is marked for the
 *    next checkpoint to write the records again (FORMAT.md §13, Commit step 4);
 *  - FULL, larger: a checkpoint first, then the nodes synced before the header and the header
 *    after (two syncs);
 *  - NOSYNC and MEMORY: a checkpoint first when the journal holds records, then everything in
 *    place, unsynced. */
/* The free-list nodes of a journaled commit that its record may hold as patches of the nodes
 * they replace (docs/FORMAT.md §13, Layout): those whose old node a record of the journal's
 * current generation `gen` wrote, as this process knows (fl_chunk.jgen, fl_page.jgen,
 * freelist.root_jgen: set when its commit published, lost when the list is read again). The old
 * nodes are still in the file as the previous version holds them (the commit writes only into
 * space that version does not reach); `map` and `limit` are the transaction's view of it.
 * *out is the caller's to free. */
static int patch_bases(cs_dbfile *f, const cplan *plan, const uint8_t *map, uint64_t limit, uint64_t gen,
                       journal_base **out, uint32_t *nout)
{
    *out = NULL;
    *nout = 0;
    uint32_t n = 0;
    for (uint64_t i = 0; i < plan->n; i++) n += plan->items[i].kind == CI_CHUNK || plan->items[i].kind == CI_PAGE ||
                                                 plan->items[i].kind == CI_ROOT;
    if (!n || !gen) return CS_OK;
    journal_base *b = malloc(n * sizeof *b);
    if (!b) return NOMEM();
    const freelist *l = &f->fl;
    n = 0;
    for (uint64_t i = 0; i < plan->n; i++) {
        const citem *it = &plan->items[i];
        uint64_t old = 0, oldlen = 0;
        uint32_t unit = 2;
        if (it->kind == CI_CHUNK) {
            const fl_chunk *c = it->obj;
            if (c->jgen == gen) old = c->oldref, oldlen = c->oldsize;
            unit = 3;
        } else if (it->kind == CI_PAGE) {
            const fl_page *p = it->obj;
            if (p->jgen == gen) old = p->oldref, oldlen = p->oldsize;
        } else if (it->kind == CI_ROOT && l->root_jgen == gen && l->root_ref >= HDR_SIZE &&
                   l->root_ref <= limit - NODE_HDR) {
            const node_hdr *h = (const node_hdr *)(map + l->root_ref);
            old = l->root_ref;
            oldlen = node_size_of(h->flags, h->width, h->count);
        }
        if (!old || old < HDR_SIZE || oldlen < NODE_HDR || old > limit || oldlen > limit - old) continue;
        b[n++] = (journal_base){it->pos, it->size, old, oldlen, map + old, unit};
    }
    *out = b;
    *nout = n;
    return CS_OK;
}

/* A commit of at most ONE_SYNC_MAX bytes in FULL durability is a one-sync commit (FORMAT.md §2):
 * its header slot keeps a hash of its bytes, which serialise computes. */
static bool is_one_sync(const cs_dbfile *f, const cplan *plan)
{
    return f->durability == CS_DURABILITY_FULL && plan->total <= ONE_SYNC_MAX;
}

/* `hash`: the slot's hash of the buffer (file_run_hash) for a one-sync commit. */
static int write_durable(cs_dbfile *f, const uint8_t *buf, const cplan *plan, const layout *lo, uint64_t newver,
                         int nsel, uint16_t fmt, const uint8_t *map, uint64_t limit, uint64_t hash, io_count *io,
                         uint64_t *jend)
{
    bool syncing = f->durability == CS_DURABILITY_FULL;
    bool one_sync = is_one_sync(f, plan);
    bool journaled = one_sync && f->lk;
    run_info run = {0, 0, 0};
    if (one_sync) {
        run.pos = lo->runs_pos;
        run.len = plan->total;
        run.hash = hash;
    }
    /* the runs: items contiguous in the file and the buffer, then the header */
    journal_run *runs = malloc((plan->n + 1) * sizeof *runs);
    if (!runs) return NOMEM();
    uint32_t nruns = 0;
    for (uint64_t i = 0; i < plan->n;) {
        uint64_t j = i + 1;
        while (j < plan->n && plan->items[j].pos == plan->items[j - 1].pos + plan->items[j - 1].size &&
               plan->items[j].off == plan->items[j - 1].off + plan->items[j - 1].size)
            j++;
        uint64_t len = plan->items[j - 1].off + plan->items[j - 1].size - plan->items[i].off;
        runs[nruns++] = (journal_run){plan->items[i].pos, len, buf + plan->items[i].off, NULL, 0};
        i = j;
    }
    uint8_t hdr[HDR_USED];
    uint64_t top_pos = lo->top_pos;
    runs[nruns] = (journal_run){0, HDR_USED, hdr, NULL, 0};
    /* the record's room is made for its runs' bytes: patches (below) only shorten it */
    uint64_t reclen = journal_record_size(runs, nruns + 1);
    /* a checkpoint, when the commit needs one, comes before any write of it (journal.c
     * invariant 2); the header is built after it (a first checkpoint sets the file's id) */
    int rc = journal_before_commit(f, &journaled, reclen, newver);
    if (journaled && fmt < FORMAT_JOURNAL) fmt = FORMAT_JOURNAL;
    if (rc == CS_OK) rc = grow_to(f, lo->end);
    journal_record rec = {0};
    uint8_t *patches = NULL;
    if (rc == CS_OK && journaled) {
        /* after journal_before_commit: a checkpoint it made starts a generation no base is of */
        journal_base *bases;
        uint32_t nbases;
        rc = patch_bases(f, plan, map, limit, journal_generation(f), &bases, &nbases);
        if (rc == CS_OK && nbases) rc = journal_patch(runs, nruns, bases, nbases, &patches);
        free(bases);
        if (rc == CS_OK) rc = journal_record_build(f, runs, nruns + 1, newver, &rec);
    }
    if (rc == CS_OK) rc = file_build_header(f, nsel, top_pos, newver, lo->end, false, one_sync ? &run : NULL, fmt, hdr);
    if (rc == CS_OK && journaled) journal_record_seal(&rec, &runs[nruns]);
    /* the runs go into free space first: a commit that fails before its record is durable has
     * written nothing any version reaches; they and the header are stored through the writable
     * mapping where the I/O layer and the file system allow it (mapwrite.c), else written with
     * pwrite, and reach the disk alike (docs/ARCHITECTURE.md, Writes through a mapping) */
    if (rc == CS_OK) file_wmap_prepare(f);
    for (uint32_t k = 0; rc == CS_OK && k < nruns; k++) {
        rc = file_write_at(f, runs[k].src, runs[k].len, runs[k].pos);
        io->bytes += runs[k].len;
        io->writes++;
    }
    if (rc == CS_OK && journaled) {
        io->bytes += rec.len;
        rc = journal_append(f, &rec, jend);
        io->writes++;
        io->syncs++;
    }
    journal_record_free(&rec);
    free(patches);
    free(runs);
    TRY(rc);
    /* two-sync commits make the nodes durable before the header names them; a one-sync commit
     * lets them race, and its header slot carries their hash so a torn commit is detected */
    if (!one_sync) {
        TRY(file_sync(f));
        if (syncing) io->syncs++;
    }
    /* the header of a commit without a record goes by pwrite: its error, if any, is the one
     * the commit reports (mapwrite.c, invariant 5) */
    if (!journaled) file_wmap_done(f);
    lock_committing(f);
    rc = file_put_header(f, hdr, newver);
    if (rc != CS_OK) {
        f->broken = true; /* the header may or may not have reached the disk */
        if (!journaled) return rc;
        /* past the commit point: the record is durable and a reopen replays it, so the commit
         * has happened and says so; this process stops writing (broken), and the next
         * checkpoint, in whichever process, writes the records again before it syncs the
         * database file (journal.c) */
        journal_header_lost(f);
        f->header_lost = rc;
        f->header_lost_errno = cs_errno() ? cs_errno() : EIO;
        return CS_OK;
    }
    io->bytes += HDR_USED;
    io->writes++;
    if (!journaled) {
        TRY(file_sync(f));
        if (syncing) io->syncs++;
    }
    return CS_OK;
}

/* Online shrinking (§7.3): once the header naming the new version is durable, the file is cut
 * past what both header slots' versions use. No live reader reaches past either logical end
 * (what lies past the new one was reusable), so no mapping touches the bytes cut. A commit that
 * cut the tail, or the one after it (the other slot's version is then the shorter one),
 * truncates when that saves SHRINK_CUT_MIN bytes; any other shrinking commit only when it saves
 * two growth steps, so a file that grew is never cut back at once. A failure leaves the file
 * longer, which is harmless: the commit has landed. */
static void shrink_truncate(cs_dbfile *f, const commit_space *sp, uint64_t new_end)
{
    uint64_t keep = new_end > f->logical ? new_end : f->logical;
    keep = (keep + 4095) & ~4095ull;
    if (new_end <= sp->end &&
        f->phys_size >= keep + ((sp->cut || f->shrink_cut) ? SHRINK_CUT_MIN : 2 * grow_step(keep)) &&
        f->io->ftruncate(f->io->ctx, f->fd, (off_t)keep) == 0) {
        file_wmap_resized(f, f->phys_size, keep);
        f->phys_size = keep;
    }
    f->shrink_cut = sp->cut;
}

/* ---- step 4: publishing ---------------------------------------------------------------- */

static void publish(cs_dbfile *f, int nsel, uint64_t newver, uint64_t top_pos, uint64_t root_pos, uint64_t end,
                    uint64_t jend)
{
    /* the generation whose record wrote this version's free-list nodes, for the next records'
     * patches (patch_bases): the record is durable and no checkpoint came after it */
    uint64_t jgen = jend ? journal_generation(f) : 0;
    /* journal.c invariant 3: the shared end moves past the record only now */
    journal_published(f, jend, newver);
    pthread_mutex_lock(&f->mu);
    f->selector = nsel;
    f->version = newver;
    f->top = top_pos;
    f->logical = end;
    f->fl.pub_gen = jgen;
    f->fl.root_ref = root_pos;
    f->fl.root_jgen = jgen;
    fl_published(&f->fl);
    f->free_version = newver;
    lock_publish(f);
    pthread_mutex_unlock(&f->mu);
}

int file_commit_write(cs_txn *t, const commit_space *sp, const commit_what *w)
{
    cs_dbfile *f = t->f;
    uint64_t newver = t->version + 1;
    cplan plan = {0};
    layout lo;
    uint8_t *buf = NULL;
    io_count io = {0, 0, 0};
    uint64_t jend = 0;
    int nsel = f->selector ^ 1;
    cs_assert(w->n > 0); /* the top at least */
    uint64_t hash = 0;
    int rc = place_commit(f, sp, w, &plan, &lo);
    if (rc == CS_OK) rc = serialise(t, &plan, &lo, newver, &buf, is_one_sync(f, &plan) ? &hash : NULL);
    if (rc == CS_OK)
        rc = write_durable(f, buf, &plan, &lo, newver, nsel, w->format, t->map, t->limit, hash, &io, &jend);
    file_wmap_done(f);
    if (rc == CS_OK) {
        if (t->db->shrink) shrink_truncate(f, sp, lo.end);
        else f->shrink_cut = false;
        publish(f, nsel, newver, lo.top_pos, lo.root_pos, lo.end, jend);
        t->last_commit_bytes = io.bytes;
        t->last_commit_writes = io.writes;
        t->last_commit_syncs = io.syncs;
    }
    free(buf);
    free(plan.items);
    return rc;
}
