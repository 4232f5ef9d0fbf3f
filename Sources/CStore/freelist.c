/*
 * freelist.c -- the free list in memory and on disk (docs/FORMAT.md §7.1): a two-level tree of
 * chunks of extents, read from a version's top slots, changed in place by the commit being built
 * (commit.c), which rewrites only the chunks and pages it changed.
 *
 * Cost: finding the chunk of a position is two binary searches; an insertion or a merge changes
 * one chunk of at most a few dozen extents and the aggregates of its page; a commit walks only
 * the pages it made dirty. Nothing here passes over the whole list, except reading it from the
 * file (when another process committed since) and flattening it for verification.
 */
#include "node.h"
#include "file.h"
#include "freelist.h"

/* ---- building blocks -------------------------------------------------------------------- */

static fl_chunk *chunk_new(uint64_t lo)
{
    fl_chunk *c = calloc(1, sizeof *c);
    if (c) c->lo = lo;
    return c;
}

static fl_page *page_new(uint64_t lo)
{
    fl_page *p = calloc(1, sizeof *p);
    if (p) p->lo = lo;
    return p;
}

static void chunk_free(fl_chunk *c)
{
    if (!c) return;
    free(c->e);
    free(c->big);
    free(c);
}

static void page_free(fl_page *p)
{
    if (!p) return;
    for (uint32_t i = 0; i < p->n; i++) chunk_free(p->c[i]);
    free(p->c);
    free(p);
}

static int chunk_reserve(fl_chunk *c, uint32_t n)
{
    if (n <= c->cap) return CS_OK;
    uint32_t nc = c->cap ? c->cap : 16;
    while (nc < n) nc *= 2;
    extent *e = realloc(c->e, nc * sizeof *e);
    if (!e) return NOMEM();
    c->e = e;
    c->cap = nc;
    return CS_OK;
}

static int page_reserve(fl_page *p, uint32_t n)
{
    if (n <= p->cap) return CS_OK;
    uint32_t nc = p->cap ? p->cap : 16;
    while (nc < n) nc *= 2;
    fl_chunk **c = realloc(p->c, nc * sizeof *c);
    if (!c) return NOMEM();
    p->c = c;
    p->cap = nc;
    return CS_OK;
}

static int list_reserve(freelist *l, uint32_t n)
{
    if (n <= l->cap) return CS_OK;
    uint32_t nc = l->cap ? l->cap : 16;
    while (nc < n) nc *= 2;
    fl_page **p = realloc(l->p, nc * sizeof *p);
    if (!p) return NOMEM();
    l->p = p;
    l->cap = nc;
    return CS_OK;
}

static void chunk_aggregate(fl_chunk *c)
{
    c->maxlen = c->maxver = 0;
    for (uint32_t i = 0; i < c->n; i++) {
        if (c->e[i].len > c->maxlen) c->maxlen = c->e[i].len;
        if (c->e[i].len && c->e[i].ver > c->maxver) c->maxver = c->e[i].ver;
    }
}

static void page_aggregate(fl_page *p)
{
    p->maxlen = p->maxver = 0;
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->c[i]->maxlen > p->maxlen) p->maxlen = p->c[i]->maxlen;
        if (p->c[i]->maxver > p->maxver) p->maxver = p->c[i]->maxver;
    }
}

void fl_clear(freelist *l)
{
    for (uint32_t i = 0; i < l->n; i++) page_free(l->p[i]);
    free(l->p);
    free(l->dl);
    memset(l, 0, sizeof *l);
}

/* Index of the last entry whose lo is <= pos (entries sorted by lo, the first at 0). */
#define LAST_AT_OR_BELOW(arr, n, pos, out)                                                                             \
    do {                                                                                                               \
        uint32_t lo_ = 0, hi_ = (n);                                                                                   \
        while (hi_ - lo_ > 1) {                                                                                        \
            uint32_t m_ = (lo_ + hi_) / 2;                                                                             \
            if ((arr)[m_]->lo <= (pos)) lo_ = m_;                                                                      \
            else hi_ = m_;                                                                                             \
        }                                                                                                              \
        (out) = lo_;                                                                                                   \
    } while (0)

/* Index of the first extent of c at or after pos. */
static uint32_t chunk_first_at(const fl_chunk *c, uint64_t pos)
{
    uint32_t lo = 0, hi = c->n;
    while (lo < hi) {
        uint32_t m = (lo + hi) / 2;
        if (c->e[m].pos < pos) lo = m + 1;
        else hi = m;
    }
    return lo;
}

void fl_locate(const freelist *l, uint64_t pos, uint32_t *pi, uint32_t *ci)
{
    uint32_t a, b;
    LAST_AT_OR_BELOW(l->p, l->n, pos, a);
    const fl_page *p = l->p[a];
    LAST_AT_OR_BELOW(p->c, p->n, pos, b);
    *pi = a;
    *ci = b;
}

extent *fl_extent_at(const freelist *l, uint64_t pos) { return fl_extent_in(l, pos, NULL); }

extent *fl_extent_in(const freelist *l, uint64_t pos, fl_chunk **chunk)
{
    uint32_t pi, ci;
    fl_locate(l, pos, &pi, &ci);
    fl_chunk *c = l->p[pi]->c[ci];
    if (chunk) *chunk = c;
    uint32_t i = chunk_first_at(c, pos + 1);
    cs_assert(i > 0);
    extent *x = &c->e[i - 1];
    cs_assert3(x->pos + x->len, >, pos);
    return x;
}

/* ---- changes during a commit ------------------------------------------------------------ */

static void page_dirty(freelist *l, uint32_t pi)
{
    fl_page *p = l->p[pi];
    if (p->dirty) return;
    p->dirty = true;
    l->events++;
    p->oldref = p->ref;
    p->oldsize = p->size;
    if (p->ref) fl_insert(l, p->ref, p->size, l->newver);
}

void fl_chunk_dirty(freelist *l, uint32_t pi, uint32_t ci)
{
    fl_chunk *c = l->p[pi]->c[ci];
    if (c->dirty) return;
    c->dirty = true;
    l->events++;
    c->oldref = c->ref;
    c->oldsize = c->size;
    page_dirty(l, pi);
    if (c->ref) fl_insert(l, c->ref, c->size, l->newver);
}

/* Appends an extent to the (empty) list: one page with one chunk at 0. */
static int list_start(freelist *l)
{
    fl_page *p = page_new(0);
    fl_chunk *c = chunk_new(0);
    if (!p || !c || page_reserve(p, 4) != CS_OK || list_reserve(l, 4) != CS_OK) {
        chunk_free(c);
        page_free(p);
        return NOMEM();
    }
    c->dirty = p->dirty = true;
    p->c[p->n++] = c;
    l->p[l->n++] = p;
    l->events++;
    return CS_OK;
}

void fl_insert(freelist *l, uint64_t pos, uint64_t len, uint64_t ver)
{
    if (l->err || !len) return;
    if (!l->n && (l->err = list_start(l)) != CS_OK) return;
    uint32_t pi, ci;
    fl_locate(l, pos, &pi, &ci);
    fl_chunk_dirty(l, pi, ci); /* may insert the chunk's and page's old nodes first */
    if (l->err) return;
    fl_chunk *c = l->p[pi]->c[ci];
    fl_page *p = l->p[pi];
    uint32_t i = chunk_first_at(c, pos);
    extent *m = NULL;
    if (i > 0 && c->e[i - 1].len && c->e[i - 1].pos + c->e[i - 1].len == pos && c->e[i - 1].ver == ver) {
        m = &c->e[i - 1];
        m->len += len;
        if (i < c->n && c->e[i].len && c->e[i].pos == pos + len && c->e[i].ver == ver) {
            m->len += c->e[i].len;
            memmove(c->e + i, c->e + i + 1, (c->n - i - 1) * sizeof(extent));
            c->n--;
        }
    } else if (i < c->n && c->e[i].len && c->e[i].pos == pos + len && c->e[i].ver == ver) {
        m = &c->e[i];
        m->pos = pos;
        m->len += len;
    } else {
        if ((l->err = chunk_reserve(c, c->n + 1)) != CS_OK) return;
        memmove(c->e + i + 1, c->e + i, (c->n - i) * sizeof(extent));
        c->e[i] = (extent){pos, len, ver};
        c->n++;
        m = &c->e[i];
    }
    c->big_ok = false; /* an extent added or lengthened: the index is rebuilt when needed */
    l->bytes += len;
    if (ver == l->newver) l->newbytes += len;
    /* touching a neighbour of another version: merged once both are reusable */
    uint32_t mi = (uint32_t)(m - c->e);
    if ((mi > 0 && c->e[mi - 1].len && c->e[mi - 1].pos + c->e[mi - 1].len == m->pos) ||
        (mi + 1 < c->n && c->e[mi + 1].len && m->pos + m->len == c->e[mi + 1].pos)) {
        /* the pairs' second extents start at m->pos or after (and no pair's start moves) */
        if (!c->pending || m->pos < c->pend_pos) c->pend_pos = m->pos;
        c->pending = p->pending = true;
    }
    if (m->len > c->maxlen) c->maxlen = m->len;
    if (ver > c->maxver) c->maxver = ver;
    if (c->maxlen > p->maxlen) p->maxlen = c->maxlen;
    if (c->maxver > p->maxver) p->maxver = c->maxver;
}

/* Merges touching reusable extents of chunk c; returns whether any merged, and leaves
 * c->pending telling whether touching extents remain. */
static bool chunk_merge(fl_chunk *c, uint64_t oldest)
{
    bool merged = false, touching = false;
    uint64_t first = 0; /* the second extent of the first pair left touching */
    /* no pair ends before pend_pos (fl_chunk.pend_pos): the pairs from the extent before the
     * first one at or after it */
    uint32_t i = c->pending ? chunk_first_at(c, c->pend_pos) : c->n;
    if (i == 0) i = 1;
#if CS_ASSERTS
    for (uint32_t j = 1; j < i && j < c->n; j++)
        cs_assert(!(c->e[j].len && c->e[j - 1].len && c->e[j - 1].pos + c->e[j - 1].len == c->e[j].pos));
#endif
    /* up to the first merge every extent stays where it is: only looked at */
    for (; i < c->n; i++) {
        const extent *x = &c->e[i], *q = &c->e[i - 1];
        if (x->len && q->len && q->pos + q->len == x->pos) {
            if (q->ver <= oldest && x->ver <= oldest) break;
            if (!touching) first = x->pos;
            touching = true;
        }
    }
    if (i >= c->n) {
        c->pending = touching;
        c->pend_pos = first;
        return false;
    }
    uint32_t k = i;
    c->big_ok = false; /* extents lengthened and moved */
    for (; i < c->n; i++) {
        extent *x = &c->e[i];
        if (k && x->len) {
            extent *q = &c->e[k - 1];
            if (q->len && q->pos + q->len == x->pos) {
                if (q->ver <= oldest && x->ver <= oldest) {
                    q->len += x->len;
                    if (x->ver > q->ver) q->ver = x->ver;
                    if (q->len > c->maxlen) c->maxlen = q->len;
                    merged = true;
                    continue;
                }
                if (!touching) first = x->pos;
                touching = true;
            }
        }
        c->e[k++] = *x;
    }
    c->n = k;
    c->pending = touching;
    c->pend_pos = first;
    return merged;
}

void fl_merge_reusable(freelist *l, uint64_t oldest, bool clean_too)
{
    /* dirty chunks are rewritten anyway; with clean_too a clean pending one is made dirty when
     * a merge happens in it, so free space comes together once it may be reused */
    for (uint32_t pi = 0; pi < l->n && !l->err; pi++) {
        fl_page *p = l->p[pi];
        if (!p->dirty && !(clean_too && p->pending)) continue;
        bool pending = false;
        for (uint32_t ci = 0; ci < p->n && !l->err; ci++) {
            fl_chunk *c = p->c[ci];
            /* only a pending chunk has touching extents (every change that can make two touch
             * sets it: fl_insert, joining chunks in reshape, reading), so only it can merge */
            if (c->pending && (c->dirty || clean_too) && c->n >= 2) {
                if (chunk_merge(c, oldest) && !c->dirty) fl_chunk_dirty(l, pi, ci);
                if (c->maxlen > p->maxlen) p->maxlen = c->maxlen;
            }
            pending |= c->pending;
        }
        p->pending = pending;
    }
}

/*
 * The shape of the next version: every dirty chunk left with no extent is dropped, one of more
 * than FL_CHUNK_MAX extents is cut into pieces of about FL_CHUNK_FILL, and one of fewer than
 * FL_CHUNK_MIN joins the dirty chunk before it in its page; pages the same way with chunks.
 * Repeats while fixing the first bounds made more pages dirty.
 */
static int reshape_page(fl_page *p)
{
    /* chunks dropped or joined are freed only once the new shape is complete */
    uint32_t cap = p->n * 2 + 4;
    fl_chunk **out = malloc(cap * sizeof *out), **gone = malloc((p->n + 1) * sizeof *gone);
    if (!out || !gone) { free(out); free(gone); return NOMEM(); }
    uint32_t n = 0, ngone = 0;
    int rc = CS_OK;
    for (uint32_t ci = 0; ci < p->n && rc == CS_OK; ci++) {
        fl_chunk *c = p->c[ci];
        if (!c->dirty) { out[n++] = c; continue; }
        if (!c->n) { gone[ngone++] = c; continue; }
        fl_chunk *prev = n ? out[n - 1] : NULL;
        if (prev && prev->dirty && (c->n < FL_CHUNK_MIN || prev->n < FL_CHUNK_MIN) && prev->n + c->n <= FL_CHUNK_MAX) {
            if ((rc = chunk_reserve(prev, prev->n + c->n)) != CS_OK) break;
            memcpy(prev->e + prev->n, c->e, c->n * sizeof(extent));
            /* its last and c's first extent may touch (c's own pairs start after) */
            if (!prev->pending) prev->pend_pos = c->e[0].pos;
            prev->pending = true;
            prev->n += c->n;
            prev->big_ok = false;
            c->n = 0;
            if (c->maxlen > prev->maxlen) prev->maxlen = c->maxlen;
            if (c->maxver > prev->maxver) prev->maxver = c->maxver;
            prev->shrunk |= c->shrunk;
            gone[ngone++] = c;
            continue;
        }
        if (c->n <= FL_CHUNK_MAX) { out[n++] = c; continue; }
        uint32_t pieces = (c->n + FL_CHUNK_FILL - 1) / FL_CHUNK_FILL, total = c->n;
        if (n + pieces > cap) {
            cap = n + pieces + p->n;
            fl_chunk **o = realloc(out, cap * sizeof *o);
            if (!o) { rc = NOMEM(); break; }
            out = o;
        }
        uint32_t made = 1;
        for (; made < pieces; made++) {
            uint32_t a = (uint32_t)((uint64_t)total * made / pieces), b = (uint32_t)((uint64_t)total * (made + 1) / pieces);
            fl_chunk *q = chunk_new(c->e[a].pos);
            if (!q || chunk_reserve(q, b - a) != CS_OK) { chunk_free(q); rc = NOMEM(); break; }
            memcpy(q->e, c->e + a, (b - a) * sizeof(extent));
            q->n = b - a;
            q->dirty = true;
            q->pending = c->pending;
            q->pend_pos = c->pend_pos;
            chunk_aggregate(q);
            out[n + made] = q;
        }
        if (rc != CS_OK) {
            for (uint32_t k = 1; k < made; k++) chunk_free(out[n + k]);
            break;
        }
        c->n = (uint32_t)((uint64_t)total / pieces);
        c->big_ok = false;
        chunk_aggregate(c);
        out[n] = c;
        n += pieces;
    }
    if (rc != CS_OK) {
        /* the list is left as it was (the commit fails and the cache is read again) */
        free(out);
        free(gone);
        return rc;
    }
    for (uint32_t i = 0; i < ngone; i++) chunk_free(gone[i]);
    free(gone);
    free(p->c);
    p->c = out;
    p->n = n;
    p->cap = cap;
    if (n) p->lo = p->c[0]->lo;
    page_aggregate(p);
    p->pending = false;
    for (uint32_t i = 0; i < n; i++) p->pending |= out[i]->pending;
    return CS_OK;
}

/* Lists the dirty chunks in file order (freelist.dl); without memory, none is listed and the
 * queries look through the pages. */
static void dirty_list(freelist *l)
{
    l->dl_ok = false;
    l->ndl = 0;
    for (uint32_t pi = 0; pi < l->n; pi++) {
        fl_page *p = l->p[pi];
        if (!p->dirty) continue;
        for (uint32_t ci = 0; ci < p->n; ci++) {
            if (!p->c[ci]->dirty) continue;
            if (l->ndl == l->dlcap) {
                uint32_t nc = l->dlcap ? l->dlcap * 2 : 16;
                fl_chunk **d = realloc(l->dl, (size_t)nc * sizeof *d);
                if (!d) return;
                l->dl = d;
                l->dlcap = nc;
            }
            l->dl[l->ndl++] = p->c[ci];
        }
    }
    l->dl_events = l->events;
    l->dl_ok = true;
}

int fl_reshape(freelist *l)
{
    for (;;) {
        uint64_t before = l->events;
        uint32_t cap = l->n * 2 + 4, n = 0;
        fl_page **out = malloc(cap * sizeof *out);
        if (!out) return NOMEM();
        int rc = CS_OK;
        for (uint32_t pi = 0; pi < l->n; pi++) {
            fl_page *p = l->p[pi];
            if (!p->dirty || rc != CS_OK) { out[n++] = p; continue; }
            if ((rc = reshape_page(p)) != CS_OK) { out[n++] = p; continue; }
            if (!p->n) { page_free(p); continue; }
            fl_page *prev = n ? out[n - 1] : NULL;
            if (prev && prev->dirty && (p->n < FL_PAGE_MIN || prev->n < FL_PAGE_MIN) && prev->n + p->n <= FL_PAGE_MAX) {
                if ((rc = page_reserve(prev, prev->n + p->n)) != CS_OK) { out[n++] = p; continue; }
                memcpy(prev->c + prev->n, p->c, p->n * sizeof *p->c);
                prev->n += p->n;
                prev->pending |= p->pending;
                p->n = 0;
                page_free(p);
                page_aggregate(prev);
                continue;
            }
            if (p->n <= FL_PAGE_MAX) { out[n++] = p; continue; }
            /* cut into pieces of about FL_PAGE_FILL chunks */
            uint32_t pieces = (p->n + FL_PAGE_FILL - 1) / FL_PAGE_FILL, total = p->n;
            if (n + pieces + (l->n - pi) > cap) {
                uint32_t nc = n + pieces + (l->n - pi) + 4;
                fl_page **o = realloc(out, nc * sizeof *o);
                if (!o) { rc = NOMEM(); out[n++] = p; continue; }
                out = o;
                cap = nc;
            }
            /* the pieces after the first go straight into out[n + 1 ..] */
            uint32_t made = 1;
            for (; made < pieces; made++) {
                uint32_t a = (uint32_t)((uint64_t)total * made / pieces), b = (uint32_t)((uint64_t)total * (made + 1) / pieces);
                fl_page *q = page_new(p->c[a]->lo);
                if (!q || page_reserve(q, b - a) != CS_OK) { page_free(q); rc = NOMEM(); break; }
                memcpy(q->c, p->c + a, (b - a) * sizeof *p->c);
                q->n = b - a;
                q->dirty = true;
                q->pending = p->pending;
                page_aggregate(q);
                out[n + made] = q;
            }
            if (rc != CS_OK) {
                for (uint32_t k = 1; k < made; k++) { out[n + k]->n = 0; page_free(out[n + k]); } /* the chunks stay with p */
                out[n++] = p;
                continue;
            }
            p->n = (uint32_t)((uint64_t)total / pieces);
            page_aggregate(p);
            out[n] = p;
            n += pieces;
        }
        free(l->p);
        l->p = out;
        l->n = n;
        l->cap = cap;
        if (rc != CS_OK) return rc;
        /* the first page and its first chunk start at 0 */
        if (n && (l->p[0]->lo != 0 || l->p[0]->c[0]->lo != 0)) {
            l->p[0]->lo = l->p[0]->c[0]->lo = 0;
            page_dirty(l, 0);
        }
        if (l->err) return l->err;
        if (l->events == before) {
            dirty_list(l);
            return CS_OK;
        }
    }
}

/* ---- choosing space ---------------------------------------------------------------------- */

/* The plain sum over the extents of every chunk that may hold one freed after oldest. */
static uint64_t unreusable_scan(const freelist *l, uint64_t oldest)
{
    uint64_t sum = 0;
    for (uint32_t pi = 0; pi < l->n; pi++) {
        const fl_page *p = l->p[pi];
        if (p->maxver <= oldest) continue;
        for (uint32_t ci = 0; ci < p->n; ci++) {
            const fl_chunk *c = p->c[ci];
            if (c->maxver <= oldest) continue;
            for (uint32_t i = 0; i < c->n; i++)
                if (c->e[i].ver > oldest) sum += c->e[i].len;
        }
    }
    return sum;
}

uint64_t fl_unreusable_bytes(const freelist *l, uint64_t oldest)
{
    /* no reader older than the version the commit starts from: only what this commit freed is
     * not reusable (extents of its version are never merged with older ones, used or
     * backdated), and fl_insert has counted it */
    if (l->newver && oldest + 1 == l->newver) {
        cs_assert3(l->newbytes, ==, unreusable_scan(l, oldest));
        return l->newbytes;
    }
    return unreusable_scan(l, oldest);
}

/* Rebuilds chunk c's index of its extents of at least FL_BIG bytes (fl_chunk.big); false when
 * out of memory (the query then looks at every extent). */
static bool chunk_index(fl_chunk *c)
{
    if (c->bigcap < c->n) {
        uint32_t nc = c->n;
        uint32_t *b = realloc(c->big, (size_t)nc * sizeof *b);
        if (!b) return false;
        c->big = b;
        c->bigcap = nc;
    }
    uint32_t k = 0;
    const extent *e = c->e;
    for (uint32_t i = 0, n = c->n; i < n; i++) {
        c->big[k] = i; /* written for every extent, kept only for the long ones: no branch */
        k += e[i].len >= FL_BIG;
    }
    c->nbig = k;
    c->big_n = c->n;
    c->big_ok = true;
    return true;
}

/* The state of one best-fit query (fl_best_fit). */
typedef struct fit_query {
    uint64_t size, oldest, below, avoid_lo, avoid_hi;
    bool avoid;
    const uint64_t *taken_pos;
    int ntaken;
    extent *best;
    uint64_t bl, span; /* best's length; x->len - size < span holds exactly when size <= x->len < bl */
} fit_query;

/* Extent x holds q->size and is shorter than the best so far: takes it unless it is past
 * q->below (returns -1: no later extent of the chunk qualifies either), not reusable, avoided
 * or taken. Returns 1 when it fits exactly (nothing can beat it). */
static int fit_consider(fit_query *q, extent *x)
{
    if (x->pos >= q->below) return -1;
    if (x->ver > q->oldest || (q->avoid && x->pos >= q->avoid_lo && x->pos < q->avoid_hi)) return 0;
    for (int k = 0; k < q->ntaken; k++)
        if (q->taken_pos[k] == x->pos) return 0;
    q->best = x;
    q->bl = x->len;
    q->span = q->bl - q->size;
    return q->bl == q->size;
}

/* The query over the extents of chunk c its index lists (fl_chunk.big): fit_consider's result
 * for the last candidate that ended it (0: none did). */
static inline int fit_listed(fit_query *q, const fl_chunk *c)
{
    extent *e = c->e;
    const uint32_t *b = c->big;
    for (uint32_t j = 0, n = c->nbig; j < n; j++) {
        extent *x = &e[b[j]];
        if (__builtin_expect(x->len - q->size >= q->span, 1)) continue;
        int r = fit_consider(q, x);
        if (r) return r;
    }
    return 0;
}

/* The query over the extents of one chunk, in position order: 1 when an exact fit was found. */
static int fit_chunk(fit_query *q, fl_chunk *c)
{
    extent *e = c->e;
    const uint64_t size = q->size;
    if (size >= FL_BIG && ((c->big_ok && c->big_n == c->n) || chunk_index(c))) {
        /* the index: only the extents of at least FL_BIG bytes can hold size */
#if CS_ASSERTS
        /* it must answer what the scan of every extent of this chunk answers */
        fit_query plain = *q;
        int pr = 0;
        for (uint32_t i = 0; i < c->n && !pr; i++)
            if (e[i].len - size < plain.span) pr = fit_consider(&plain, &e[i]);
        int r = fit_listed(q, c);
        cs_assert(plain.best == q->best);
        cs_assert3(pr, ==, r);
        return r > 0;
#else
        return fit_listed(q, c) > 0;
#endif
    }
    /* every extent (one comparison each: a candidate holds size and is shorter than the best) */
    for (uint32_t i = 0, n = c->n; i < n; i++) {
        if (__builtin_expect(e[i].len - size >= q->span, 1)) continue;
        int r = fit_consider(q, &e[i]);
        if (r) return r > 0;
    }
    return 0;
}

#if CS_ASSERTS
/* fl_best_fit's answer as a plain scan of every extent: what the index must agree with. */
static extent *best_fit_scan(const freelist *l, uint64_t size, uint64_t oldest, const uint64_t *taken_pos,
                             const uint64_t *taken_len, int ntaken, bool dirty_only, uint64_t *len_out)
{
    extent *best = NULL;
    uint64_t bl = 0;
    for (int k = 0; k < ntaken; k++) {
        if (taken_pos[k] == UINT64_MAX || taken_len[k] < size || (best && taken_len[k] >= bl)) continue;
        extent *x = fl_extent_at(l, taken_pos[k]);
        if (x->pos != taken_pos[k] || x->ver > oldest) continue;
        best = x;
        bl = taken_len[k];
    }
    const uint64_t below = l->below ? l->below : UINT64_MAX;
    for (uint32_t pi = 0; pi < l->n; pi++)
        for (uint32_t ci = 0; ci < l->p[pi]->n; ci++) {
            const fl_chunk *c = l->p[pi]->c[ci];
            if (dirty_only && !c->dirty) continue;
            for (uint32_t i = 0; i < c->n; i++) {
                extent *x = &c->e[i];
                if (x->len < size || x->pos >= below || x->ver > oldest || (best && x->len >= bl)) continue;
                if (l->avoid_hi > l->avoid_lo && x->pos >= l->avoid_lo && x->pos < l->avoid_hi) continue;
                bool taken = false;
                for (int k = 0; k < ntaken && !taken; k++) taken = taken_pos[k] == x->pos;
                if (taken) continue;
                best = x;
                bl = x->len;
            }
        }
    *len_out = bl;
    return best;
}
#endif

extent *fl_best_fit(freelist *l, uint64_t size, uint64_t oldest, const uint64_t *taken_pos,
                    const uint64_t *taken_len, int ntaken, bool dirty_only, uint64_t *len_out)
{
    /* the taken extents first, with what is left of them; the scan skips them (it looks them up
     * only when one would beat the best so far, which is rare) */
    fit_query q = {size, oldest, l->below ? l->below : UINT64_MAX, l->avoid_lo, l->avoid_hi,
                   l->avoid_hi > l->avoid_lo, taken_pos, ntaken, NULL, 0, 0};
    for (int k = 0; k < ntaken; k++) {
        if (taken_pos[k] == UINT64_MAX || taken_len[k] < size || (q.best && taken_len[k] >= q.bl)) continue;
        extent *x = fl_extent_at(l, taken_pos[k]);
        if (x->pos != taken_pos[k] || x->ver > oldest) continue;
        q.best = x;
        q.bl = taken_len[k];
    }
    if (!(q.best && q.bl == size)) {
        /* the scan: an extent qualifies when it holds size bytes and is shorter than the best so
         * far (used-up extents have length 0 and never hold a commit's node, size > 0); none
         * lies at or past `below` (none when no bound) */
        q.span = (q.best ? q.bl : UINT64_MAX) - size;
        if (dirty_only && l->dl_ok && l->dl_events == l->events) {
            /* the dirty chunks as the last reshaping listed them (none made dirty since) */
            for (uint32_t k = 0; k < l->ndl; k++) {
                fl_chunk *c = l->dl[k];
                if (c->lo >= q.below) break;
                if (c->maxlen < size) continue;
                if (fit_chunk(&q, c)) goto found;
            }
            goto found;
        }
        for (uint32_t pi = 0; pi < l->n; pi++) {
            const fl_page *p = l->p[pi];
            if (p->lo >= q.below) break; /* a shrinking commit: nothing at or past l->below */
            if (p->maxlen < size || (dirty_only && !p->dirty)) continue;
            for (uint32_t ci = 0; ci < p->n; ci++) {
                fl_chunk *c = p->c[ci];
                if (c->lo >= q.below) break;
                if (c->maxlen < size || (dirty_only && !c->dirty)) continue;
                if (fit_chunk(&q, c)) goto found;
            }
        }
    }
found:
#if CS_ASSERTS
    /* each chunk's index is checked against that chunk's extents (fit_chunk); the whole answer,
     * the chunks visited included, against a scan of every extent now and then (it costs a pass
     * over the whole list) */
    if (l->checks++ % 64 == 0) {
        uint64_t sl;
        extent *sx = best_fit_scan(l, size, oldest, taken_pos, taken_len, ntaken, dirty_only, &sl);
        cs_assert(sx == q.best);
        cs_assert3(sl, ==, q.bl);
    }
#endif
    if (len_out) *len_out = q.bl;
    return q.best;
}

extent *fl_next_fit(const freelist *l, uint64_t size, uint64_t oldest, uint64_t from, const uint64_t *taken_pos,
                    int ntaken, uint64_t *len_out)
{
    if (!l->n) return NULL;
    uint32_t p0, c0;
    fl_locate(l, from, &p0, &c0);
    /* pass 0 from `from` to the end of the list, pass 1 from its start up to `from` */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t pi = pass ? 0 : p0; pi < l->n; pi++) {
            const fl_page *p = l->p[pi];
            if (pass && p->lo > from) return NULL;
            if (p->maxlen < size) continue;
            for (uint32_t ci = (!pass && pi == p0) ? c0 : 0; ci < p->n; ci++) {
                const fl_chunk *c = p->c[ci];
                if (c->maxlen < size) continue;
                uint32_t i = (!pass && pi == p0 && ci == c0) ? chunk_first_at(c, from) : 0;
                for (; i < c->n; i++) {
                    extent *x = &c->e[i];
                    if (x->len < size || x->ver > oldest) continue;
                    if (pass && x->pos >= from) return NULL;
                    bool taken = false;
                    for (int k = 0; k < ntaken && !taken; k++) taken = taken_pos[k] == x->pos;
                    if (taken) continue;
                    if (len_out) *len_out = x->len;
                    return x;
                }
            }
        }
    }
    return NULL;
}

void fl_backdate_scan(freelist *l, uint64_t oldest, uint64_t newver, bool (*decide)(void *ctx, const extent *x),
                      void *ctx)
{
    for (uint32_t pi = 0; pi < l->n; pi++) {
        fl_page *p = l->p[pi];
        if (p->maxver <= oldest) continue;
        for (uint32_t ci = 0; ci < p->n; ci++) {
            fl_chunk *c = p->c[ci];
            if (c->maxver <= oldest) continue;
            bool changed = false;
            for (uint32_t i = 0; i < c->n; i++) {
                extent *x = &c->e[i];
                if (!x->len || x->ver <= oldest || x->ver >= newver) continue;
                if (decide(ctx, x)) {
                    x->ver = 0;
                    changed = true;
                }
            }
            if (changed) {
                c->shrunk = true;
                fl_chunk_dirty(l, pi, ci); /* may insert into c: done with it */
            }
        }
    }
}

/* ---- online shrinking (docs/FORMAT.md §7.3) ---------------------------------------------- */

/* The last extent of the list (NULL when there is none); *pi, *ci, *ei say where it is. */
static extent *last_extent(const freelist *l, uint32_t *pi, uint32_t *ci, uint32_t *ei)
{
    for (uint32_t p = l->n; p-- > 0;)
        for (uint32_t c = l->p[p]->n; c-- > 0;) {
            fl_chunk *ch = l->p[p]->c[c];
            for (uint32_t i = ch->n; i-- > 0;)
                if (ch->e[i].len) {
                    *pi = p;
                    *ci = c;
                    *ei = i;
                    return &ch->e[i];
                }
        }
    return NULL;
}

uint64_t fl_cut_tail(freelist *l, uint64_t end, uint64_t oldest)
{
    uint32_t pi, ci, ei;
    extent *x;
    while (!l->err && (x = last_extent(l, &pi, &ci, &ei)) && x->pos + x->len == end && x->ver <= oldest) {
        uint64_t pos = x->pos;
        /* rewriting the chunk frees its old node (in l->newver, so never reusable here): it may
         * land in this chunk and move the extent */
        fl_chunk_dirty(l, pi, ci);
        if (l->err || !(x = last_extent(l, &pi, &ci, &ei)) || x->pos != pos || x->pos + x->len != end) break;
        fl_chunk *c = l->p[pi]->c[ci];
        c->shrunk = true;
        c->big_ok = false;
        l->bytes -= x->len;
        memmove(c->e + ei, c->e + ei + 1, (c->n - ei - 1) * sizeof(extent));
        c->n--;
        end = pos;
    }
    return end;
}

uint64_t fl_tail_window(const freelist *l, uint64_t end, uint64_t budget, uint64_t *live_out, uint64_t *free_out)
{
    uint64_t w = end, live = 0, fr = 0;
    for (uint32_t p = l->n; p-- > 0;)
        for (uint32_t c = l->p[p]->n; c-- > 0;) {
            const fl_chunk *ch = l->p[p]->c[c];
            for (uint32_t i = ch->n; i-- > 0;) {
                const extent *x = &ch->e[i];
                if (!x->len || x->pos >= w) continue;
                uint64_t gap = w - (x->pos + x->len); /* live bytes between the extent and w */
                if (live + gap > budget) {
                    w -= budget - live;
                    live = budget;
                    goto done;
                }
                live += gap;
                fr += x->len;
                w = x->pos;
            }
        }
    /* the live bytes from the header on */
    if (w > HDR_SIZE) {
        uint64_t gap = w - HDR_SIZE;
        if (live + gap > budget) gap = budget - live;
        w -= gap;
        live += gap;
    }
done:
    *live_out = live;
    *free_out = fr;
    return w;
}

uint64_t fl_hole_pair(const freelist *l, uint64_t below, uint64_t oldest, uint64_t maxgap, uint64_t *lo,
                      uint64_t *hi)
{
    const extent *prev = NULL;
    uint64_t best = 0, largest = 0;
    for (uint32_t p = 0; p < l->n; p++)
        for (uint32_t c = 0; c < l->p[p]->n; c++) {
            const fl_chunk *ch = l->p[p]->c[c];
            for (uint32_t i = 0; i < ch->n; i++) {
                const extent *x = &ch->e[i];
                if (!x->len) continue;
                if (x->pos + x->len > below) goto done;
                if (x->ver > oldest) {
                    prev = NULL;
                    continue;
                }
                if (x->len > largest) largest = x->len;
                if (prev) {
                    uint64_t gap = x->pos - (prev->pos + prev->len);
                    uint64_t gain = prev->len + gap + x->len;
                    if (gap && gap <= maxgap && gain > best) {
                        best = gain;
                        *lo = prev->pos + prev->len;
                        *hi = x->pos;
                    }
                }
                prev = x;
            }
        }
done:
    return best > largest ? best : 0;
}

void fl_dirty_from(freelist *l, uint64_t w)
{
    for (uint32_t pi = 0; pi < l->n; pi++) {
        fl_page *p = l->p[pi];
        if (p->ref >= w && p->n) fl_chunk_dirty(l, pi, 0); /* rewrites the page with it */
        for (uint32_t ci = 0; ci < p->n; ci++)
            if (p->c[ci]->ref >= w) fl_chunk_dirty(l, pi, ci);
        if (l->err) return;
    }
}

/* ---- after the commit --------------------------------------------------------------------- */

void fl_published(freelist *l)
{
    for (uint32_t pi = 0; pi < l->n; pi++) {
        fl_page *p = l->p[pi];
        if (!p->dirty) continue;
        for (uint32_t ci = 0; ci < p->n; ci++) {
            fl_chunk *c = p->c[ci];
            if (!c->dirty) continue;
            c->dirty = false;
            c->jgen = l->pub_gen;
            c->oldref = c->oldsize = 0;
            /* a chunk the commit only freed into, merged or reshaped, or whose extents placement
             * only shortened below its largest, has exact aggregates (fl_insert, chunk_merge,
             * reshaping and placement's take keep them) */
            if (c->used_up) {
                /* drops the extents placement used up; those before the first stay where they are */
                uint32_t k = c->first_used_up;
                cs_assert3(k, <, c->n);
                cs_assert3(c->e[k].len, ==, 0);
                for (uint32_t i = k; i < c->n; i++)
                    if (c->e[i].len) c->e[k++] = c->e[i];
                cs_assert3(c->n - k, ==, c->used_up);
                c->n = k;
                c->used_up = 0;
                c->big_ok = false;
            }
            if (c->shrunk) {
                c->shrunk = false;
                chunk_aggregate(c);
            }
#if CS_ASSERTS
            /* what the flags promise: no used-up extent left, aggregates exact */
            uint64_t ml = 0, mv = 0;
            for (uint32_t i = 0; i < c->n; i++) {
                cs_assert(c->e[i].len);
                if (c->e[i].len > ml) ml = c->e[i].len;
                if (c->e[i].ver > mv) mv = c->e[i].ver;
            }
            cs_assert3(ml, ==, c->maxlen);
            cs_assert3(mv, ==, c->maxver);
#endif
        }
        p->dirty = false;
        p->jgen = l->pub_gen;
        p->oldref = p->oldsize = 0;
        page_aggregate(p);
    }
    l->newver = 0;
    l->dl_ok = false; /* no chunk is dirty now */
}

/* ---- reading ------------------------------------------------------------------------------ */

/* Appends one extent read from the file to chunk c, checking it against the list so far. */
static int read_extent(fl_chunk *c, extent x, uint64_t limit, uint64_t *prev_end, uint64_t *bytes)
{
    if (x.len == 0) return CS_OK; /* padding */
    if (x.pos < HDR_SIZE || x.pos > limit || x.len > limit - x.pos || x.pos < *prev_end || (x.pos & 7) || (x.len & 7))
        return CORRUPT("free extent %llu+%llu is invalid", (unsigned long long)x.pos, (unsigned long long)x.len);
    *prev_end = x.pos + x.len;
    *bytes += x.len;
    TRY(chunk_reserve(c, c->n + 1));
    c->e[c->n++] = x;
    return CS_OK;
}

/* A directory node (the root or a page): REFS, 2 * n words of (tagged lo, ref). */
static int read_dir(cs_txn *t, uint64_t ref, const char *what, node_hdr **out)
{
    TRY(node_at(t, ref, out));
    node_hdr *d = *out;
    if (!(d->flags & NF_REFS) || (d->flags & NF_INNER) || (d->count & 1) || d->count == 0)
        return CORRUPT("free list %s at %llu is malformed", what, (unsigned long long)ref);
    const uint64_t *e = node_refs(d);
    for (uint32_t i = 0; i < d->count; i += 2)
        if (!tagged(e[i]) || untag(e[i]) < 0 || !e[i + 1] || tagged(e[i + 1]))
            return CORRUPT("free list %s at %llu has a malformed entry", what, (unsigned long long)ref);
    return CS_OK;
}

static int load_legacy(cs_txn *t, const uint64_t r[3], uint64_t limit, freelist *l)
{
    node_hdr *h[3];
    for (int i = 0; i < 3; i++) {
        if (!r[i]) return CORRUPT("free list slots inconsistent");
        TRY(node_at(t, r[i], &h[i]));
        if ((h[i]->flags & (NF_BYTES | NF_REFS | NF_NULLS)) || h[i]->count != h[0]->count)
            return CORRUPT("free list arrays disagree");
    }
    /* one chunk, cut into pieces by the first commit's reshape (pages and chunks dirty: written new) */
    TRY(list_start(l));
    fl_chunk *c = l->p[0]->c[0];
    uint64_t prev_end = 0;
    for (uint32_t i = 0; i < h[0]->count; i++) {
        extent x = {(uint64_t)node_get_int(h[0], i), (uint64_t)node_get_int(h[1], i), (uint64_t)node_get_int(h[2], i)};
        TRY(read_extent(c, x, limit, &prev_end, &l->bytes));
    }
    chunk_aggregate(c);
    page_aggregate(l->p[0]);
    c->pending = l->p[0]->pending = true; /* dirty anyway: merged by the first commit */
    c->pend_pos = 0;
    return CS_OK;
}

static int load_tree(cs_txn *t, uint64_t root, uint64_t limit, freelist *l)
{
    node_hdr *rd;
    TRY(read_dir(t, root, "root", &rd));
    uint32_t np = rd->count / 2;
    TRY(list_reserve(l, np));
    uint64_t prev_end = 0, prev_lo = 0;
    bool first = true;
    for (uint32_t pi = 0; pi < np; pi++) {
        uint64_t plo = (uint64_t)untag(node_refs(rd)[2 * pi]), pref = node_refs(rd)[2 * pi + 1];
        node_hdr *pd;
        TRY(read_dir(t, pref, "page", &pd));
        /* reading the page may have moved the root's mapping: re-read through the ref */
        TRY(node_at(t, root, &rd));
        fl_page *p = page_new(plo);
        if (!p) return NOMEM();
        l->p[l->n++] = p;
        p->ref = pref;
        p->size = node_size_of(pd->flags, pd->width, pd->count);
        uint32_t nc = pd->count / 2;
        TRY(page_reserve(p, nc));
        for (uint32_t ci = 0; ci < nc; ci++) {
            TRY(node_at(t, pref, &pd));
            uint64_t lo = (uint64_t)untag(node_refs(pd)[2 * ci]), cref = node_refs(pd)[2 * ci + 1];
            if (lo < prev_lo || (first && lo != 0) || (ci == 0 && lo != plo))
                return CORRUPT("free list page at %llu: chunk bound %llu out of order", (unsigned long long)pref,
                               (unsigned long long)lo);
            first = false;
            prev_lo = lo;
            /* the next chunk's bound, in this page or the next */
            uint64_t hi = UINT64_MAX;
            if (ci + 1 < nc) hi = (uint64_t)untag(node_refs(pd)[2 * ci + 2]);
            else if (pi + 1 < np) {
                TRY(node_at(t, root, &rd));
                hi = (uint64_t)untag(node_refs(rd)[2 * pi + 2]);
            }
            node_hdr *h;
            TRY(node_at(t, cref, &h));
            if ((h->flags & (NF_BYTES | NF_REFS | NF_NULLS | NF_INNER)) || h->width != 64 || h->count % 3)
                return CORRUPT("free list chunk at %llu is malformed", (unsigned long long)cref);
            fl_chunk *c = chunk_new(lo);
            if (!c) return NOMEM();
            p->c[p->n++] = c;
            c->ref = cref;
            c->size = node_size_of(h->flags, h->width, h->count);
            TRY(chunk_reserve(c, h->count / 3 + 1));
            for (uint32_t i = 0; i + 3 <= h->count; i += 3) {
                extent x = {(uint64_t)node_get_int(h, i), (uint64_t)node_get_int(h, i + 1), (uint64_t)node_get_int(h, i + 2)};
                if (x.len && (x.pos < lo || x.pos >= hi))
                    return CORRUPT("free extent %llu lies outside its chunk at %llu", (unsigned long long)x.pos,
                                   (unsigned long long)cref);
                TRY(read_extent(c, x, limit, &prev_end, &l->bytes));
            }
            chunk_aggregate(c);
            for (uint32_t i = 1; i < c->n; i++) c->pending |= c->e[i - 1].pos + c->e[i - 1].len == c->e[i].pos;
            c->pend_pos = 0; /* merging looks from the first extent */
            p->pending |= c->pending;
        }
        page_aggregate(p);
    }
    return CS_OK;
}

int fl_load(cs_txn *t, const uint64_t r[3], uint64_t limit, freelist *out)
{
    memset(out, 0, sizeof *out);
    int rc = CS_OK;
    if (!r[0]) return (r[1] || r[2]) ? CORRUPT("free list slots inconsistent") : CS_OK;
    if (tagged(r[0]) || tagged(r[1]) || tagged(r[2])) return CORRUPT("free list slots inconsistent");
    if (r[1] || r[2]) rc = load_legacy(t, r, limit, out);
    else rc = load_tree(t, r[0], limit, out);
    if (rc != CS_OK) fl_clear(out);
    return rc;
}

int freelist_read(cs_txn *t, const uint64_t r[3], uint64_t limit, extent **ext, uint64_t *n)
{
    *ext = NULL;
    *n = 0;
    freelist l;
    TRY(fl_load(t, r, limit, &l));
    uint64_t total = 0;
    for (uint32_t pi = 0; pi < l.n; pi++)
        for (uint32_t ci = 0; ci < l.p[pi]->n; ci++) total += l.p[pi]->c[ci]->n;
    extent *e = malloc((total + 1) * sizeof *e);
    if (!e) {
        fl_clear(&l);
        return NOMEM();
    }
    uint64_t k = 0;
    for (uint32_t pi = 0; pi < l.n; pi++)
        for (uint32_t ci = 0; ci < l.p[pi]->n; ci++) {
            fl_chunk *c = l.p[pi]->c[ci];
            if (!c->n) continue; /* a chunk of padding only may have no array */
            memcpy(e + k, c->e, c->n * sizeof *e);
            k += c->n;
        }
    fl_clear(&l);
    *ext = e;
    *n = k;
    return CS_OK;
}
