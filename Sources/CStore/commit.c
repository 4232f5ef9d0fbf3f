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

/* Appends one extent read from the file, checking it against the list so far. */
static int read_extent(extent **ext, uint64_t *n, uint64_t *cap, extent x, uint64_t limit, uint64_t *prev_end)
{
    if (x.len == 0) return CS_OK; /* padding */
    if (x.pos < HDR_SIZE || x.pos > limit || x.len > limit - x.pos || x.pos < *prev_end || (x.pos & 7) || (x.len & 7))
        return CORRUPT("free extent %llu+%llu is invalid", (unsigned long long)x.pos, (unsigned long long)x.len);
    *prev_end = x.pos + x.len;
    if (*n == *cap) {
        uint64_t nc = *cap ? *cap * 2 : 64;
        extent *e = realloc(*ext, nc * sizeof *e);
        if (!e) return NOMEM();
        *ext = e;
        *cap = nc;
    }
    (*ext)[(*n)++] = x;
    return CS_OK;
}

int freelist_read(cs_txn *t, const uint64_t r[3], uint64_t limit, extent **ext, uint64_t *n, fchunk **chunks,
                  uint64_t *nchunks)
{
    *ext = NULL;
    *n = 0;
    if (chunks) *chunks = NULL;
    if (nchunks) *nchunks = 0;
    uint64_t cap = 0, prev_end = 0;
    int rc = CS_OK;
    if (!r[0]) return (r[1] || r[2]) ? CORRUPT("free list slots inconsistent") : CS_OK;
    if (tagged(r[0]) || tagged(r[1]) || tagged(r[2])) return CORRUPT("free list slots inconsistent");
    if (r[1] || r[2]) {
        /* format versions 1 and 2: three parallel arrays */
        node_hdr *h[3];
        for (int i = 0; i < 3; i++) {
            if (!r[i]) return CORRUPT("free list slots inconsistent");
            TRY(node_at(t, r[i], &h[i]));
            if ((h[i]->flags & (NF_BYTES | NF_REFS | NF_NULLS)) || h[i]->count != h[0]->count)
                return CORRUPT("free list arrays disagree");
        }
        for (uint32_t i = 0; i < h[0]->count && rc == CS_OK; i++) {
            extent x = {(uint64_t)node_get_int(h[0], i), (uint64_t)node_get_int(h[1], i), (uint64_t)node_get_int(h[2], i)};
            rc = read_extent(ext, n, &cap, x, limit, &prev_end);
        }
        if (rc != CS_OK) { free(*ext); *ext = NULL; *n = 0; }
        return rc;
    }
    /* format version 3: a directory of chunks */
    node_hdr *d;
    TRY(node_at(t, r[0], &d));
    if (!(d->flags & NF_REFS) || (d->flags & NF_INNER) || (d->count & 1)) return CORRUPT("free list directory is malformed");
    const uint64_t *e = node_refs(d);
    uint64_t nch = d->count / 2;
    fchunk *ch = NULL;
    if (chunks && !(ch = malloc((nch + 1) * sizeof *ch))) return NOMEM();
    uint64_t prev_lo = 0;
    for (uint64_t c = 0; c < nch && rc == CS_OK; c++) {
        uint64_t lo = e[2 * c], ref = e[2 * c + 1];
        if (!tagged(lo) || untag(lo) < 0 || (uint64_t)untag(lo) < prev_lo || (c == 0 && untag(lo) != 0) || !ref || tagged(ref)) {
            rc = CORRUPT("free list directory entry %llu is malformed", (unsigned long long)c);
            break;
        }
        prev_lo = (uint64_t)untag(lo);
        uint64_t hi = c + 1 < nch && tagged(e[2 * c + 2]) ? (uint64_t)untag(e[2 * c + 2]) : UINT64_MAX;
        node_hdr *h;
        if ((rc = node_at(t, ref, &h)) != CS_OK) break;
        if ((h->flags & (NF_BYTES | NF_REFS | NF_NULLS | NF_INNER)) || h->width != 64 || h->count % 3) {
            rc = CORRUPT("free list chunk at %llu is malformed", (unsigned long long)ref);
            break;
        }
        for (uint32_t i = 0; i + 3 <= h->count && rc == CS_OK; i += 3) {
            extent x = {(uint64_t)node_get_int(h, i), (uint64_t)node_get_int(h, i + 1), (uint64_t)node_get_int(h, i + 2)};
            if (x.len && (x.pos < prev_lo || x.pos >= hi)) {
                rc = CORRUPT("free extent %llu lies outside its chunk at %llu", (unsigned long long)x.pos, (unsigned long long)ref);
                break;
            }
            rc = read_extent(ext, n, &cap, x, limit, &prev_end);
        }
        if (ch) {
            ch[c].lo = prev_lo;
            ch[c].ref = ref;
            ch[c].size = node_size_of(h->flags, h->width, h->count);
        }
    }
    if (rc != CS_OK) {
        free(ch);
        free(*ext);
        *ext = NULL;
        *n = 0;
        return rc;
    }
    if (chunks) *chunks = ch;
    if (nchunks) *nchunks = nch;
    return CS_OK;
}

/* Loads the free list of the transaction's version into f->free, its chunks into f->chunks
 * (cached per version). */
static int free_list_load(cs_txn *t)
{
    cs_dbfile *f = t->f;
    if (f->free_version == t->version) return CS_OK;
    uint64_t r[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) TRY(txn_top_get(t, TOP_FREE_POS + i, &r[i]));
    extent *ext;
    uint64_t n, nch;
    fchunk *ch;
    TRY(freelist_read(t, r, t->limit, &ext, &n, &ch, &nch));
    free(f->free);
    free(f->chunks);
    f->free = ext;
    f->nfree = n;
    f->cap_free = n;
    f->chunks = ch;
    f->nchunks = nch;
    f->cap_chunks = nch;
    for (int i = 0; i < 3; i++) f->free_legacy[i] = r[1] ? r[i] : 0;
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

/* Merges neighbouring extents freed in the same version and drops empty ones. Extents keep the
 * version they were freed in: whether one is reusable is decided per commit (reusable()), so an
 * extent that merely became reusable does not change its chunk. */
static void free_coalesce(cs_dbfile *f)
{
    uint64_t k = 0;
    while (k < f->nfree && f->free[k].len &&
           !(k && f->free[k - 1].pos + f->free[k - 1].len == f->free[k].pos && f->free[k - 1].ver == f->free[k].ver))
        k++;
    for (uint64_t i = k; i < f->nfree; i++) {
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

/* Rule 1: an extent is reusable when no live reader reads a version older than the one it was
 * freed in. */
static inline bool reusable(const extent *x, uint64_t oldest) { return x->ver <= oldest; }

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
    TRY(freelist_read(t, r, out->end, &out->ext, &out->n, NULL, NULL));
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
    vfree cache[4];
    int ncache = 0;
    int rc = CS_OK;
    for (uint64_t i = 0; i < f->nfree && rc == CS_OK; i++) {
        extent *e = &f->free[i];
        if (reusable(e, oldest) || e->ver >= newver) continue;
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

/* ---- the chunked free list (docs/FORMAT.md §7) -------------------------------------------- */

/*
 * A commit rewrites only the chunks whose extents it changed. Which ones is found by comparing,
 * chunk by chunk, the extents the version had (`old`) with the list the commit makes; rewriting a
 * chunk frees its old node, which changes the list again, so this repeats until no chunk is newly
 * changed (settle()). The chunking of the version read is the one in f->chunks; a version with a
 * version-1/2 free list (or none) counts as one chunk with no node, always rewritten.
 */
#define FREE_CHUNK_MAX 64  /* extents in one chunk node at most; a rewritten larger chunk is split */
#define FREE_CHUNK_FILL 32 /* extents per piece when one is split */
#define FREE_CHUNK_MIN 8   /* a rewritten chunk this small joins the rewritten chunk before it */

typedef struct cstate {
    fchunk *och;    /* the chunks of the version read (lo ascending; och[0].lo == 0) */
    uint64_t nch;   /* how many */
    bool *dirty;    /* per chunk: the commit rewrites it */
    bool *dropped;  /* per chunk: its old node is on the list as freed by this commit */
    const extent *old; /* the version's extents */
    uint64_t nold;  /* how many */
} cstate;

typedef struct lchunk {
    uint64_t start, count; /* its extents: f->free[start .. start + count) */
    ref_t ref;             /* the old node when kept, else 0 (written by this commit) */
    uint64_t size;         /* node bytes */
    uint64_t pos;          /* where a new one is written */
} lchunk;

/* Index of the first extent of `e` (n entries) at or after pos. */
static uint64_t first_at(const extent *e, uint64_t n, uint64_t pos)
{
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t m = (lo + hi) / 2;
        if (e[m].pos < pos) lo = m + 1;
        else hi = m;
    }
    return lo;
}

/* Marks every chunk whose extents differ from the version's, or that holds none any more. The
 * bounds of each chunk's extents are found by binary search and compared as bytes, so a clean
 * chunk costs a memcmp. */
static void mark_dirty(cs_dbfile *f, cstate *s)
{
    uint64_t i = 0, j = 0;
    for (uint64_t c = 0; c < s->nch; c++) {
        uint64_t i1 = s->nold, j1 = f->nfree;
        if (c + 1 < s->nch) {
            uint64_t hi = s->och[c + 1].lo;
            i1 = i + first_at(s->old + i, s->nold - i, hi);
            j1 = j + first_at(f->free + j, f->nfree - j, hi);
        }
        if (!s->dirty[c] &&
            (i1 - i != j1 - j || j1 == j || memcmp(s->old + i, f->free + j, (j1 - j) * sizeof(extent)) != 0))
            s->dirty[c] = true;
        i = i1;
        j = j1;
    }
}

/* Adds [pos, pos + len) freed in `ver` to the sorted list, merged with same-version neighbours. */
static int free_insert(cs_dbfile *f, uint64_t pos, uint64_t len, uint64_t ver)
{
    TRY(free_reserve(f, f->nfree + 1));
    uint64_t i = first_at(f->free, f->nfree, pos);
    if (i > 0 && f->free[i - 1].pos + f->free[i - 1].len == pos && f->free[i - 1].ver == ver) {
        f->free[i - 1].len += len;
        if (i < f->nfree && f->free[i].pos == pos + len && f->free[i].ver == ver) {
            f->free[i - 1].len += f->free[i].len;
            memmove(f->free + i, f->free + i + 1, (f->nfree - i - 1) * sizeof(extent));
            f->nfree--;
        }
        return CS_OK;
    }
    if (i < f->nfree && f->free[i].pos == pos + len && f->free[i].ver == ver) {
        f->free[i].pos = pos;
        f->free[i].len += len;
        return CS_OK;
    }
    memmove(f->free + i + 1, f->free + i, (f->nfree - i) * sizeof(extent));
    f->free[i] = (extent){pos, len, ver};
    f->nfree++;
    return CS_OK;
}

/* Marks changed chunks and frees the old node of each, until nothing more changes. */
static int settle(cs_dbfile *f, cstate *s, uint64_t newver)
{
    for (;;) {
        mark_dirty(f, s);
        bool more = false;
        for (uint64_t c = 0; c < s->nch; c++)
            if (s->dirty[c] && s->och[c].ref && !s->dropped[c]) {
                s->dropped[c] = true;
                TRY(free_insert(f, s->och[c].ref, s->och[c].size, newver));
                more = true;
            }
        if (!more) return CS_OK;
    }
}

/* The chunk (of the version read) whose range holds pos. */
static uint64_t chunk_of(const cstate *s, uint64_t pos)
{
    uint64_t lo = 0, hi = s->nch;
    while (hi - lo > 1) {
        uint64_t m = (lo + hi) / 2;
        if (s->och[m].lo <= pos) lo = m;
        else hi = m;
    }
    return lo;
}

/* Merges neighbouring extents that are both reusable (the merged one keeps the newer version,
 * so it is reusable exactly when both were), so that holes freed at different versions become
 * one; the chunks this changes are rewritten (settle()). */
static void merge_reusable(cs_dbfile *f, uint64_t oldest)
{
    uint64_t k = 1;
    while (k < f->nfree && !(f->free[k - 1].pos + f->free[k - 1].len == f->free[k].pos &&
                             reusable(&f->free[k - 1], oldest) && reusable(&f->free[k], oldest)))
        k++;
    if (k >= f->nfree) return; /* nothing to merge: the common case */
    for (uint64_t i = k; i < f->nfree; i++) {
        extent *p = k ? &f->free[k - 1] : NULL;
        if (p && p->pos + p->len == f->free[i].pos && reusable(p, oldest) && reusable(&f->free[i], oldest)) {
            p->len += f->free[i].len;
            if (f->free[i].ver > p->ver) p->ver = f->free[i].ver;
            continue;
        }
        f->free[k++] = f->free[i];
    }
    f->nfree = k;
}

/* The chunks this commit's version has: kept ones as they are, rewritten ones re-cut. */
static int layout(cs_dbfile *f, const cstate *s, lchunk **out, uint64_t *nout)
{
    lchunk *l = malloc((f->nfree / FREE_CHUNK_FILL + s->nch + 2) * sizeof *l);
    if (!l) return NOMEM();
    uint64_t n = 0, j = 0;
    for (uint64_t c = 0; c < s->nch; c++) {
        uint64_t j1 = c + 1 < s->nch ? j + first_at(f->free + j, f->nfree - j, s->och[c + 1].lo) : f->nfree;
        uint64_t k = j1 - j;
        if (!s->dirty[c]) {
            l[n++] = (lchunk){j, k, s->och[c].ref, s->och[c].size, 0};
        } else if (k) {
            if (n && !l[n - 1].ref && l[n - 1].start + l[n - 1].count == j &&
                (k < FREE_CHUNK_MIN || l[n - 1].count < FREE_CHUNK_MIN) && l[n - 1].count + k <= FREE_CHUNK_MAX) {
                l[n - 1].count += k; /* a small rewritten chunk joins the one before */
            } else {
                uint64_t pieces = k > FREE_CHUNK_MAX ? (k + FREE_CHUNK_FILL - 1) / FREE_CHUNK_FILL : 1;
                for (uint64_t p = 0; p < pieces; p++) {
                    uint64_t a = j + k * p / pieces, b = j + k * (p + 1) / pieces;
                    l[n++] = (lchunk){a, b - a, 0, 0, 0};
                }
            }
        }
        j = j1;
    }
    for (uint64_t i = 0; i < n; i++)
        if (!l[i].ref) l[i].size = node_size_of(0, 64, 3 * l[i].count);
    *out = l;
    *nout = n;
    return CS_OK;
}

/*
 * Placement (docs/FORMAT.md §7, Placement). A commit's bytes are laid out in write order (the
 * nodes post-order, the rewritten free-list chunks, the directory, the run list, the top), and
 * placement keeps them in as few contiguous runs as it can, because each run is a write and
 * scattered writes cost more to make durable than one:
 *  P1. If one reusable extent holds the whole commit, the smallest such extent takes it: one run.
 *  P2. Else, while reusable free space is less than 1/PLACE_FREE_DIV of the logical size, the
 *      commit goes past the logical end: one run, the file grows by the commit.
 *  P3. Else each node goes into the smallest reusable extent that holds it (at most
 *      PLACE_MAX_HOLES extents), and what fits in none of them goes past the end: several
 *      runs, but the holes a workload of small updates leaves are filled.
 * Bound: the file grows (P2) only while reusable space is under 1/PLACE_FREE_DIV of it, so with
 * no reader pinning an old version its logical size stays under
 * PLACE_FREE_DIV / (PLACE_FREE_DIV - 1) times (live bytes + what the last commit freed + one
 * commit), which FreeSpaceTests checks after many random one-row updates.
 * The extents a commit may use are chosen first (their chunks become rewritten ones), so that
 * placement changes no chunk that is not rewritten anyway.
 */
#define PLACE_FREE_DIV 4
#define PLACE_MAX_HOLES 16
/* room left for what choosing a hole adds (its chunk rewritten, and the chunk its old node joins) */
#define PLACE_MARGIN (2 * (8 + 3 * 8 * FREE_CHUNK_MAX))

typedef struct alloc_cur {
    uint64_t holes[PLACE_MAX_HOLES]; /* the start of each extent the commit may fill (UINT64_MAX: used up) */
    int nholes;    /* how many */
    uint64_t end;  /* logical end of the file */
} alloc_cur;

/* Index of the extent holding position pos (one must). */
static uint64_t extent_at(cs_dbfile *f, uint64_t pos)
{
    uint64_t i = first_at(f->free, f->nfree, pos + 1);
    cs_assert(i > 0);
    cs_assert3(f->free[i - 1].pos + f->free[i - 1].len, >, pos);
    return i - 1;
}

static uint64_t place(cs_dbfile *f, alloc_cur *c, uint64_t size, uint64_t oldest)
{
    /* P1: the one extent, in order; P3: the smallest chosen extent that holds the node */
    int best = -1;
    uint64_t bi = 0;
    for (int h = 0; h < c->nholes; h++) {
        if (c->holes[h] == UINT64_MAX) continue;
        uint64_t i = extent_at(f, c->holes[h]);
        if (f->free[i].len >= size && (best < 0 || f->free[i].len < f->free[bi].len)) {
            best = h;
            bi = i;
        }
    }
    if (best < 0) {
        uint64_t p = c->end;
        c->end += size;
        return p;
    }
    extent *x = &f->free[bi];
    cs_assert(reusable(x, oldest)); /* rule 1: only space no live reader can see */
    uint64_t p = x->pos;
    x->pos += size;
    x->len -= size;
    c->holes[best] = x->len ? x->pos : UINT64_MAX;
    return p;
}

/* Chooses the extents for the commit planned in p (P1-P3 above). */
static int place_choose(cs_dbfile *f, alloc_cur *c, const cplan *p, uint64_t oldest)
{
    c->nholes = 0;
    c->end = f->logical;
    uint64_t need = p->total + PLACE_MARGIN, sum = 0, best = UINT64_MAX;
    for (uint64_t i = 0; i < f->nfree; i++) {
        extent *x = &f->free[i];
        if (!reusable(x, oldest)) continue;
        sum += x->len;
        if (x->len >= need && (best == UINT64_MAX || x->len < f->free[best].len)) best = i;
    }
    if (best != UINT64_MAX) { /* P1 */
        c->holes[c->nholes++] = f->free[best].pos;
        return CS_OK;
    }
    if (sum < f->logical / PLACE_FREE_DIV) return CS_OK; /* P2 */
    /* P3: each node into the smallest reusable extent that holds it (a simulation on the
     * lengths), keeping the extents it used; the rest goes past the end */
    uint64_t *len = malloc((f->nfree + 1) * sizeof *len);
    if (!len) return NOMEM();
    for (uint64_t i = 0; i < f->nfree; i++) len[i] = reusable(&f->free[i], oldest) ? f->free[i].len : 0;
    for (uint64_t k = 0; k < p->n; k++) {
        uint64_t size = p->items[k].size, b = UINT64_MAX;
        for (uint64_t i = 0; i < f->nfree; i++)
            if (len[i] >= size && (b == UINT64_MAX || len[i] < len[b])) {
                b = i;
                if (len[i] == size) break;
            }
        if (b == UINT64_MAX) continue;
        bool have = false;
        for (int h = 0; h < c->nholes; h++) have |= c->holes[h] == f->free[b].pos;
        if (!have) {
            if (c->nholes == PLACE_MAX_HOLES) continue;
            c->holes[c->nholes++] = f->free[b].pos;
        }
        len[b] -= size;
    }
    free(len);
    return CS_OK;
}

int file_commit(cs_txn *t)
{
    cs_dbfile *f = t->f;
    uint64_t newver = t->version + 1;
    int rc = CS_OK;
    uint8_t *buf = NULL;
    cplan plan = {0};
    extent *old_copy = NULL;
    fchunk *och_copy = NULL, *new_chunks = NULL;
    cstate cs = {0};
    lchunk *lay = NULL;
    uint64_t nlay = 0;

    /* what the commit contains (schema blob, change history, nodes) the transaction layer has
     * staged (txn.c, txn_stage); from here on this file only decides where the bytes go */
    pthread_mutex_lock(&f->mu);
    uint64_t oldest = file_oldest_live(f, t->version);
    pthread_mutex_unlock(&f->mu);
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

    /* 3. the free list: the version's extents, plus what this commit frees (not reusable yet) */
    cs.nold = f->nfree;
    cs.old = old_copy = malloc((f->nfree + 1) * sizeof(extent));
    cs.nch = f->nchunks ? f->nchunks : 1;
    cs.och = och_copy = malloc(cs.nch * sizeof(fchunk));
    cs.dirty = calloc(cs.nch, sizeof(bool));
    cs.dropped = calloc(cs.nch, sizeof(bool));
    if (!old_copy || !och_copy || !cs.dirty || !cs.dropped) { rc = NOMEM(); goto done; }
    if (f->nfree) memcpy(old_copy, f->free, f->nfree * sizeof(extent));
    if (f->nchunks) memcpy(och_copy, f->chunks, f->nchunks * sizeof(fchunk));
    else { och_copy[0] = (fchunk){0, 0, 0}; cs.dirty[0] = true; }
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
    free_coalesce(f);
    if (oldest < t->version) {
        if ((rc = backdate(t, f, newver, oldest)) != CS_OK) goto done;
        free_coalesce(f);
    }
    merge_reusable(f, oldest);
    if ((rc = settle(f, &cs, newver)) != CS_OK) goto done;

    /* 4. plan: dirty nodes in post-order, the rewritten chunks, the directory and the run list
     * before the top; then choose where it goes, which may rewrite more chunks, and plan again */
    collect(t, t->top, &plan);
    if (plan.oom) { rc = NOMEM(); goto done; }
    citem topi = plan.items[plan.n - 1];
    plan.n--;
    plan.total -= topi.size;
    uint64_t nodes_n = plan.n, nodes_total = plan.total;
    alloc_cur cur = {.nholes = 0, .end = f->logical};
    uint64_t runs_cap = 0;
    for (int round = 0; round < 2; round++) {
        merge_reusable(f, oldest);
        free(lay);
        lay = NULL;
        if ((rc = layout(f, &cs, &lay, &nlay)) != CS_OK) goto done;
        plan.n = nodes_n;
        plan.total = nodes_total;
        for (uint64_t i = 0; i < nlay; i++)
            if (!lay[i].ref) {
                plan_add(&plan, 0, lay[i].size);
                if (!plan.oom) { plan.items[plan.n - 1].kind = 1; plan.items[plan.n - 1].pos = i; }
            }
        plan_add(&plan, 0, node_size_of(NF_REFS, 64, 2 * nlay));
        if (!plan.oom) plan.items[plan.n - 1].kind = 2;
        runs_cap = 2 * (plan.n + 2); /* at most one run per item */
        plan_add(&plan, 0, node_size_of(0, 64, runs_cap));
        if (!plan.oom) plan.items[plan.n - 1].kind = 4;
        plan_add(&plan, topi.slab, topi.size);
        if (plan.oom) { rc = NOMEM(); goto done; }
        if (round == 1) break;
        /* the extents chosen are rewritten with their chunks */
        if ((rc = place_choose(f, &cur, &plan, oldest)) != CS_OK) goto done;
        if (!cur.nholes) break;
        for (int h = 0; h < cur.nholes; h++) cs.dirty[chunk_of(&cs, cur.holes[h])] = true;
        if ((rc = settle(f, &cs, newver)) != CS_OK) goto done;
    }
    /* a merge may have joined a chosen extent to the one before: fill from its start */
    merge_reusable(f, oldest);
    {
        int k = 0;
        for (int h = 0; h < cur.nholes; h++) {
            uint64_t pos = f->free[extent_at(f, cur.holes[h])].pos;
            bool seen = false;
            for (int g = 0; g < k; g++) seen |= cur.holes[g] == pos;
            if (!seen) cur.holes[k++] = pos;
        }
        cur.nholes = k;
    }

    /* 5. placement (P1-P3 above) */
    uint64_t off = 0;
    for (uint64_t i = 0; i < plan.n; i++) {
        uint64_t chunk_index = plan.items[i].pos;
        plan.items[i].pos = place(f, &cur, plan.items[i].size, oldest);
        plan.items[i].off = off;
        off += plan.items[i].size;
        if (plan.items[i].kind == 1) lay[chunk_index].pos = plan.items[i].pos;
        if (plan.items[i].slab) {
            /* remember the file position in the slab block's prefix */
            uint8_t *b = txn_ptr(t, plan.items[i].slab) - 8;
            memcpy(b, &plan.items[i].pos, 8);
        }
    }
    uint64_t new_logical = cur.end;
    cs_assert3(off, ==, plan.total);
    cs_assert3(new_logical, >=, f->logical);
    /* the new chunks' bounds: each starts just past the last extent before it (the first at 0) */
    new_chunks = malloc((nlay + 1) * sizeof(fchunk));
    if (!new_chunks) { rc = NOMEM(); goto done; }
    {
        uint64_t last = 0;
        bool any = false;
        for (uint64_t i = 0; i < nlay; i++) {
            new_chunks[i].lo = i == 0 ? 0 : any ? last + 1 : 1;
            new_chunks[i].ref = lay[i].ref ? lay[i].ref : lay[i].pos;
            new_chunks[i].size = lay[i].size;
            for (uint64_t e = lay[i].start; e < lay[i].start + lay[i].count; e++)
                if (f->free[e].len) { last = f->free[e].pos; any = true; }
        }
    }

    /* 6. serialise */
    buf = malloc(plan.total ? plan.total : 8);
    if (!buf) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory for a commit of %llu bytes", (unsigned long long)plan.total); goto done; }
    uint64_t dir_pos = 0, runs_pos = 0;
    uint64_t li = 0;
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
        if (it->kind == 1) {
            /* a rewritten chunk: (position, length, version) triples; consumed extents are padding */
            while (lay[li].ref) li++;
            lchunk *lc = &lay[li++];
            memset(dst, 0, it->size);
            dst->width = 64;
            dst->count = (uint32_t)(3 * lc->count);
            for (uint64_t e = 0; e < lc->count; e++) {
                const extent *x = &f->free[lc->start + e];
                packed_set(node_values(dst), 64, 3 * e, (int64_t)(x->len ? x->pos : 0));
                packed_set(node_values(dst), 64, 3 * e + 1, (int64_t)x->len);
                packed_set(node_values(dst), 64, 3 * e + 2, (int64_t)(x->len ? x->ver : 0));
            }
            dst->check = node_checksum(dst);
            continue;
        }
        if (it->kind == 2) {
            /* the directory: (tagged lower bound, chunk ref) per chunk */
            dir_pos = it->pos;
            memset(dst, 0, it->size);
            dst->flags = NF_REFS;
            dst->width = 64;
            dst->count = (uint32_t)(2 * nlay);
            uint64_t *e = node_refs(dst);
            for (uint64_t c = 0; c < nlay; c++) {
                e[2 * c] = tag_int((int64_t)new_chunks[c].lo);
                e[2 * c + 1] = new_chunks[c].ref;
            }
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
            e[TOP_FREE_POS] = dir_pos;
            e[TOP_FREE_LEN] = 0;
            e[TOP_FREE_VER] = 0;
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
    uint64_t written = 0;
    uint32_t writes = 0, syncs = 0;
    run_info run = {0, 0, 0};
    bool one_sync = f->durability == CS_DURABILITY_FULL && plan.total <= ONE_SYNC_MAX;
    bool syncing = f->durability == CS_DURABILITY_FULL;
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
        writes++;
        i = j;
    }
    /* two-sync commits make the nodes durable before the header names them; a one-sync commit
     * lets them race, and its header slot carries their hash so a torn commit is detected */
    if (!one_sync && (rc = file_sync(f)) != CS_OK) goto done;
    if (!one_sync && syncing) syncs++;
    uint64_t top_pos = plan.items[plan.n - 1].pos;
    int nsel = f->selector ^ 1;
    /* the header covers the version this commit keeps in the other slot and the new one */
    uint16_t fmt = index_schema_needs_v2(t->schema) ? 2 : FORMAT_BASE;
    if (t->base_format > fmt) fmt = t->base_format;
    if (fmt < FORMAT_CHUNKED_FREE) fmt = FORMAT_CHUNKED_FREE; /* the free list is chunked */
    lock_committing(f);
    if ((rc = file_write_header(f, nsel, top_pos, newver, new_logical, false, one_sync ? &run : NULL, fmt)) != CS_OK) {
        f->broken = true; /* the header may or may not have reached the disk */
        goto done;
    }
    if ((rc = file_sync(f)) != CS_OK) goto done;
    written += HDR_USED;
    writes++;
    if (syncing) syncs++;

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
    free(f->chunks);
    f->chunks = new_chunks;
    new_chunks = NULL;
    f->nchunks = f->cap_chunks = nlay;
    memset(f->free_legacy, 0, sizeof f->free_legacy);
    f->free_version = newver;
    lock_publish(f);
    pthread_mutex_unlock(&f->mu);
    t->last_commit_bytes = written;
    t->last_commit_writes = writes;
    t->last_commit_syncs = syncs;
done:
    /* one exit: on failure the cached free list no longer describes any version */
    if (rc != CS_OK) f->free_version = 0;
    free(buf);
    free(plan.items);
    free(old_copy);
    free(och_copy);
    free(new_chunks);
    free(cs.dirty);
    free(cs.dropped);
    free(lay);
    return rc;
}
