/*
 * node.c -- nodes: the header, bit-packed integers, byte elements, null bitmaps, the write
 * transaction's heap slab, and copy-on-write (docs/FORMAT.md §3).
 *
 * Invariants:
 *  1. A node in the file is never written through the map: node_cow() copies it into the slab
 *     and records the file copy as freed in this transaction.
 *  2. A slab block is [u64 capacity][node...]; the node may grow in place up to its capacity.
 *  3. Packed widths are 0, 1, 2, 4 (unsigned) and 8, 16, 32, 64 (signed). A value that needs a
 *     wider width widens the whole node; inside a transaction nodes never narrow. node_pack
 *     narrows a dirty cluster node, or packs it as frame of reference, right before the commit.
 *  4. A frame-of-reference node (NF_BASE, FORMAT.md §3) is written in place only by
 *     node_set_int, and only with a value its frame holds (base plus an element of its width):
 *     a file node is then copied as it is, framed. Every other call that writes a node
 *     (node_cow, node_reserve, node_insert_int, node_set_int with a value outside the frame,
 *     ...) first decodes it into a plain slab copy. So no writer below but node_set_int sees
 *     NF_BASE, and node_pack keeps a framed slab node as it is.
 */
#include "node.h"

#include <errno.h>
#include <sys/mman.h>

/* ---- checksum --------------------------------------------------------------------------- */

uint16_t node_checksum(const node_hdr *h)
{
    uint64_t n = node_check_words(h);
    const uint8_t *p = (const uint8_t *)h + NODE_HDR;
    node_check c = node_check_start(h);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, p + i * 8, 8);
        node_check_word(&c, w);
    }
    return node_check_end(&c);
}

/* ---- slab ------------------------------------------------------------------------------- */

#define S0_SHIFT 20

static inline uint64_t region_base(int k) { return (((uint64_t)1 << k) - 1) << S0_SHIFT; }
static inline uint64_t region_size(int k) { return (uint64_t)1 << (S0_SHIFT + k); }

static int size_class(uint64_t n)
{
    if (n <= 32) return 5;
    return 64 - __builtin_clzll(n - 1);
}

/* Returns the slab offset of a node (block + 8) with capacity >= need bytes. */
static int slab_alloc(slab *s, uint64_t need, uint64_t *off_out)
{
    int c = size_class(need + 8);
    if (c >= SLAB_CLASSES) return cs_fail(CS_NOMEM, 0, "node too large");
    uint64_t bsize = (uint64_t)1 << c;
    if (s->freelist[c]) {
        uint64_t off = s->freelist[c] - 1;
        uint8_t *b = slab_ptr(s, off);
        memcpy(&s->freelist[c], b + 8, 8);
        uint64_t cap = bsize - 8;
        memcpy(b, &cap, 8);
        *off_out = off + 8;
        s->in_use += bsize;
        return CS_OK;
    }
    for (;;) {
        int k = s->cur;
        if (k >= SLAB_REGIONS) return cs_fail(CS_NOMEM, 0, "write transaction too large");
        if (!s->region[k]) {
            void *m = mmap(NULL, region_size(k), PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
            if (m == MAP_FAILED) return cs_fail(CS_NOMEM, errno, "out of memory for a write");
            s->region[k] = m;
        }
        uint64_t at = (s->bump + bsize - 1) & ~(bsize < 4096 ? bsize - 1 : 4095);
        if (at + bsize <= region_size(k)) {
            s->bump = at + bsize;
            uint8_t *b = s->region[k] + at;
            uint64_t cap = bsize - 8;
            memcpy(b, &cap, 8);
            *off_out = region_base(k) + at + 8;
            s->in_use += bsize;
            return CS_OK;
        }
        s->cur++;
        s->bump = 0;
    }
}

static void slab_release(slab *s, uint64_t node_off)
{
    uint64_t off = node_off - 8;
    uint8_t *b = slab_ptr(s, off);
    uint64_t cap;
    memcpy(&cap, b, 8);
    int c = size_class(cap + 8);
    memcpy(b + 8, &s->freelist[c], 8);
    s->freelist[c] = off + 1;
    s->in_use -= (uint64_t)1 << c;
}

static uint64_t slab_capacity(slab *s, uint64_t node_off)
{
    uint64_t cap;
    memcpy(&cap, (uint8_t *)slab_ptr(s, node_off - 8), 8);
    return cap;
}

/* ---- packed integers -------------------------------------------------------------------- */

void packed_set(uint8_t *p, uint8_t width, uint64_t i, int64_t v)
{
    switch (width) {
    case 0: return;
    case 1: p[i >> 3] = (uint8_t)((p[i >> 3] & ~(1u << (i & 7))) | ((v & 1) << (i & 7))); return;
    case 2: {
        unsigned sh = (unsigned)(i & 3) * 2;
        p[i >> 2] = (uint8_t)((p[i >> 2] & ~(3u << sh)) | ((v & 3) << sh));
        return;
    }
    case 4: {
        unsigned sh = (unsigned)(i & 1) * 4;
        p[i >> 1] = (uint8_t)((p[i >> 1] & ~(15u << sh)) | ((v & 15) << sh));
        return;
    }
    case 8: p[i] = (uint8_t)(int8_t)v; return;
    case 16: { int16_t x = (int16_t)v; memcpy(p + i * 2, &x, 2); return; }
    case 32: { int32_t x = (int32_t)v; memcpy(p + i * 4, &x, 4); return; }
    default: memcpy(p + i * 8, &v, 8); return;
    }
}

/* Adds delta to elements [from, to) of a packed array (the caller made the width sufficient). */
void packed_add(uint8_t *p, uint8_t width, uint64_t from, uint64_t to, int64_t delta)
{
    switch (width) {
    case 16: { for (uint64_t i = from; i < to; i++) { int16_t v; memcpy(&v, p + i * 2, 2); v = (int16_t)(v + delta); memcpy(p + i * 2, &v, 2); } return; }
    case 32: { for (uint64_t i = from; i < to; i++) { int32_t v; memcpy(&v, p + i * 4, 4); v = (int32_t)(v + delta); memcpy(p + i * 4, &v, 4); } return; }
    case 64: { for (uint64_t i = from; i < to; i++) { int64_t v; memcpy(&v, p + i * 8, 8); v += delta; memcpy(p + i * 8, &v, 8); } return; }
    default: for (uint64_t i = from; i < to; i++) packed_set(p, width, i, packed_get(p, width, i) + delta); return;
    }
}

/* Elements [from, from + n) of a packed array plus `add` into out[0..n): one loop per width. The
 * sum is made in uint64_t (a checked framed node never wraps, FORMAT.md §3). */
void packed_get_many(const uint8_t *p, uint8_t width, uint64_t from, uint64_t n, int64_t add, int64_t *out)
{
    uint64_t a = (uint64_t)add;
#define GET_LOOP(W) for (uint64_t i = 0; i < n; i++) out[i] = (int64_t)(a + (uint64_t)packed_get(p, W, from + i))
    switch (width) {
    case 0: GET_LOOP(0); return;
    case 1: GET_LOOP(1); return;
    case 2: GET_LOOP(2); return;
    case 4: GET_LOOP(4); return;
    case 8: GET_LOOP(8); return;
    case 16: GET_LOOP(16); return;
    case 32: GET_LOOP(32); return;
    default: GET_LOOP(64); return;
    }
#undef GET_LOOP
}

/* Stores v[k] - sub as element from + k of a packed array whose bits there are zero (the
 * caller cleared them and made the width sufficient): one loop per width. */
void packed_put_many(uint8_t *p, uint8_t width, uint64_t from, uint64_t n, const int64_t *v, int64_t sub)
{
    uint64_t s = (uint64_t)sub;
    switch (width) {
    case 0: return;
    case 1:
        for (uint64_t k = 0; k < n; k++) {
            uint64_t i = from + k;
            p[i >> 3] |= (uint8_t)((((uint64_t)v[k] - s) & 1) << (i & 7));
        }
        return;
    case 2:
        for (uint64_t k = 0; k < n; k++) {
            uint64_t i = from + k;
            p[i >> 2] |= (uint8_t)((((uint64_t)v[k] - s) & 3) << ((i & 3) * 2));
        }
        return;
    case 4:
        for (uint64_t k = 0; k < n; k++) {
            uint64_t i = from + k;
            p[i >> 1] |= (uint8_t)((((uint64_t)v[k] - s) & 15) << ((i & 1) * 4));
        }
        return;
#define PUT_LOOP(T)                                                                                \
    for (uint64_t k = 0; k < n; k++) {                                                             \
        T x = (T)((uint64_t)v[k] - s);                                                             \
        memcpy(p + (from + k) * sizeof x, &x, sizeof x);                                           \
    }                                                                                              \
    return
    case 8: PUT_LOOP(uint8_t);
    case 16: PUT_LOOP(uint16_t);
    case 32: PUT_LOOP(uint32_t);
    default: PUT_LOOP(uint64_t);
#undef PUT_LOOP
    }
}

void packed_range(uint8_t width, int64_t *lo, int64_t *hi)
{
    if (width < 8) {
        *lo = 0;
        *hi = width ? ((int64_t)1 << width) - 1 : 0;
    } else if (width < 64) {
        *lo = -((int64_t)1 << (width - 1));
        *hi = ((int64_t)1 << (width - 1)) - 1;
    } else {
        *lo = INT64_MIN;
        *hi = INT64_MAX;
    }
}

uint8_t width_for(int64_t v)
{
    if (v == 0) return 0;
    if (v > 0 && v <= 1) return 1;
    if (v > 0 && v <= 3) return 2;
    if (v > 0 && v <= 15) return 4;
    if (v >= INT8_MIN && v <= INT8_MAX) return 8;
    if (v >= INT16_MIN && v <= INT16_MAX) return 16;
    if (v >= INT32_MIN && v <= INT32_MAX) return 32;
    return 64;
}

/* ---- node access ------------------------------------------------------------------------ */

static bool width_ok(uint8_t flags, uint8_t width)
{
    if (flags & NF_BYTES) return width >= 1 && !(flags & NF_BASE);
    if (flags & NF_REFS) return width == 64 && !(flags & NF_BASE);
    if ((flags & NF_BASE) && width > 32) return false;
    switch (width) {
    case 0: case 1: case 2: case 4: case 8: case 16: case 32: case 64: return true;
    default: return false;
    }
}

int node_at_file(const cs_txn *t, ref_t r, node_hdr **out)
{
    /* the damage reports name the file (cs_errpath) for the Swift layer's fatal error */
    const char *path = t->f->path;
    /* (r > limit - NODE_HDR, not r + NODE_HDR > limit: a damaged ref near 2^64 wraps the sum) */
    if ((r & 7) || r < HDR_SIZE || t->limit < NODE_HDR || r > t->limit - NODE_HDR)
        return cs_corrupt_in(path, CORRUPT("ref %llu out of bounds (file end %llu)", (unsigned long long)r,
                                           (unsigned long long)t->limit));
    node_hdr *h = (node_hdr *)(t->map + r);
    if ((h->flags & ~NF_KNOWN) || !width_ok(h->flags, h->width))
        return cs_corrupt_in(path, CORRUPT("bad node header at %llu", (unsigned long long)r));
    uint64_t sz = node_size_of(h->flags, h->width, h->count);
    if (sz > t->limit - r)
        return cs_corrupt_in(path, CORRUPT("node at %llu runs past the file end", (unsigned long long)r));
    /* no real node has more elements than the file has bits (width-0 nodes take no payload,
     * so the size check alone would let a damaged count send loops into the billions) */
    if ((uint64_t)h->count > t->limit * 8)
        return cs_corrupt_in(path, CORRUPT("node at %llu claims %u elements", (unsigned long long)r, h->count));
    if (h->flags & NF_BASE) {
        /* every value base + element must lie in int64 (FORMAT.md §3) */
        int64_t lo, hi, b = node_base(h), x;
        packed_range(h->width, &lo, &hi);
        if (__builtin_add_overflow(b, lo, &x) || __builtin_add_overflow(b, hi, &x))
            return cs_corrupt_in(path, CORRUPT("node at %llu has a base out of range", (unsigned long long)r));
    }
    *out = h;
    return CS_OK;
}

/* ---- writable nodes --------------------------------------------------------------------- */

#if CS_ASSERTS
/* The injected failure of cs_test_fail_node_allocation (docs/CONTRIBUTING.md, "Injected
 * allocation failures"): node allocations left on this thread before the one that fails. */
static _Thread_local uint32_t fail_countdown;
static _Thread_local bool fail_fired;
#endif

bool cs_test_fail_node_allocation(uint32_t n)
{
#if CS_ASSERTS
    fail_countdown = n;
    fail_fired = false;
    return true;
#else
    (void)n;
    return false;
#endif
}

bool cs_test_node_allocation_failed(void)
{
#if CS_ASSERTS
    return fail_fired;
#else
    return false;
#endif
}

static int alloc_node(cs_txn *t, uint64_t bytes, ref_t *out)
{
    cs_assert(t->writing); /* internal.h invariant 1, txn.c invariant 2: only a writer has a slab */
#if CS_ASSERTS
    if (fail_countdown && --fail_countdown == 0) {
        fail_fired = true;
        return NOMEM();
    }
#endif
    uint64_t off;
    TRY(slab_alloc(&t->f->slab, bytes, &off));
    *out = SLAB_BASE + off;
    return CS_OK;
}

int node_new(cs_txn *t, uint8_t flags, uint8_t width, uint64_t count, ref_t *out)
{
    uint64_t sz = node_size_of(flags, width, count);
    TRY(alloc_node(t, sz, out));
    node_hdr *h = (node_hdr *)txn_ptr(t, *out);
    memset(h, 0, sz);
    h->flags = flags;
    h->width = width;
    h->count = (uint32_t)count;
    return CS_OK;
}

static void record_freed(cs_txn *t, ref_t r, uint64_t len)
{
    if (t->nfreed == t->cap_freed) {
        uint64_t nc = t->cap_freed ? t->cap_freed * 2 : 256;
        freed_node *n = realloc(t->freed, nc * sizeof *n);
        if (!n) return; /* the space leaks until compaction; never unsafe */
        t->freed = n;
        t->cap_freed = nc;
    }
    t->freed[t->nfreed].pos = r;
    t->freed[t->nfreed].len = len;
    t->nfreed++;
}

void node_free(cs_txn *t, ref_t r)
{
    if (r == 0) return;
    if (IS_SLAB(r)) {
        slab_release(&t->f->slab, r - SLAB_BASE);
        return;
    }
    node_hdr *h;
    if (node_at(t, r, &h) != CS_OK) return;
    record_freed(t, r, node_size_of(h->flags, h->width, h->count));
}

void node_free_tree(cs_txn *t, ref_t r)
{
    if (r == 0 || tagged(r)) return;
    node_hdr *h;
    if (node_at(t, r, &h) != CS_OK) return;
    if (h->flags & NF_REFS) {
        uint64_t *e = node_refs(h);
        for (uint32_t i = 0; i < h->count; i++)
            if (e[i] && !tagged(e[i])) node_free_tree(t, e[i]);
    }
    node_free(t, r);
}

/* Copies *slot into a slab block with room for `cap_count` elements at `width` (bits for
 * packed ints; bytes nodes keep theirs). The copy keeps the node's count and layout. */
static int relocate(cs_txn *t, ref_t *slot, uint64_t cap_count, uint8_t width)
{
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    uint8_t flags = h->flags & ~NF_BASE; /* invariant 4: the copy is plain */
    uint64_t need = node_size_of(flags, width, cap_count);
    uint64_t cap = need;
    if (cap_count > h->count || IS_SLAB(*slot)) cap = need + need / 2 + 64;
    ref_t nr;
    TRY(alloc_node(t, cap, &nr));
    h = (node_hdr *)txn_ptr(t, *slot);
    node_hdr *n = (node_hdr *)txn_ptr(t, nr);
    n->check = 0;
    n->flags = flags;
    n->width = width;
    n->count = h->count;
    uint64_t bb = (flags & NF_NULLS) ? bitmap_bytes(h->count) : 0;
    memcpy(node_payload(n), node_payload(h), bb);
    uint8_t *dst = node_payload(n) + bb;
    const uint8_t *src = node_payload(h) + bb;
    if (!(h->flags & NF_BASE) && (width == h->width || (flags & NF_BYTES))) {
        memcpy(dst, src, node_payload_bytes(flags & ~NF_NULLS, h->width, h->count));
    } else {
        /* a framed node decoded, or a plain one widened: a block of values at a time */
        memset(dst, 0, PAD8(node_payload_bytes(flags & ~NF_NULLS, width, h->count)));
        int64_t buf[256];
        int64_t b = node_base(h);
        const uint8_t *sv = node_values(h);
        for (uint64_t i = 0; i < h->count; i += 256) {
            uint64_t k = h->count - i < 256 ? h->count - i : 256;
            packed_get_many(sv, h->width, i, k, b, buf);
            packed_put_many(dst, width, i, k, buf, 0);
        }
    }
    node_free(t, *slot);
    *slot = nr;
    cs_assert3(node_size_of(flags, width, cap_count), <=, slab_capacity(&t->f->slab, nr - SLAB_BASE)); /* invariant 2 */
    return CS_OK;
}

/* Sets the count; with NF_NULLS the values start after a bitmap whose size depends on the
 * count, so crossing a multiple of 64 moves them by 8 bytes. Capacity must suffice. */
static void set_count(node_hdr *h, uint64_t count)
{
    if (h->flags & NF_NULLS) {
        uint64_t have = bitmap_bytes(h->count), want = bitmap_bytes(count);
        if (have != want) {
            uint8_t *p = node_payload(h);
            uint64_t keep = count < h->count ? count : h->count;
            memmove(p + want, p + have, node_payload_bytes(h->flags & ~NF_NULLS, h->width, keep));
            if (want > have) memset(p + have, 0, want - have);
        }
    }
    h->count = (uint32_t)count;
}

/* The narrowest plain width that holds every value a node can hold (its own width unless it is
 * frame of reference: then the wider of its value range's ends, which holds all in between). */
static uint8_t plain_width(node_hdr *h)
{
    if (!(h->flags & NF_BASE)) return h->width;
    int64_t lo, hi;
    node_value_range(h, &lo, &hi);
    uint8_t a = width_for(lo), b = width_for(hi);
    return a > b ? a : b;
}

int node_cow(cs_txn *t, ref_t *slot)
{
    if (IS_SLAB(*slot) && !(((node_hdr *)txn_ptr(t, *slot))->flags & NF_BASE)) return CS_OK;
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    if (h->flags & NF_BASE) return relocate(t, slot, h->count, plain_width(h)); /* invariant 4 */
    uint64_t sz = node_size_of(h->flags, h->width, h->count);
    ref_t nr;
    TRY(alloc_node(t, sz, &nr));
    h = (node_hdr *)txn_ptr(t, *slot);
    memcpy(txn_ptr(t, nr), h, sz);
    ((node_hdr *)txn_ptr(t, nr))->check = 0;
    record_freed(t, *slot, sz);
    *slot = nr;
    cs_assert(IS_SLAB(*slot)); /* invariant 1: what is written is a copy, never the mapped file */
    return CS_OK;
}

/* Makes room for `count` elements at width >= `width` (bit width for packed ints; ignored
 * for bytes nodes) in a writable copy; the node keeps its count. */
int node_reserve(cs_txn *t, ref_t *slot, uint64_t count, uint8_t width)
{
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    uint8_t hw = plain_width(h);
    uint8_t w = (h->flags & NF_BYTES) ? h->width : (width > hw ? width : hw);
    if (count < h->count) count = h->count;
    if (IS_SLAB(*slot) && w == h->width && !(h->flags & NF_BASE) &&
        slab_capacity(&t->f->slab, *slot - SLAB_BASE) >= node_size_of(h->flags, w, count))
        return CS_OK;
    return relocate(t, slot, count, w);
}

void node_set_null(node_hdr *h, uint64_t i, bool null)
{
    uint8_t *b = node_payload(h);
    if (null) b[i >> 3] |= (uint8_t)(1u << (i & 7));
    else b[i >> 3] &= (uint8_t)~(1u << (i & 7));
}

/* Whether v is base + an element a framed node's width holds (FORMAT.md §3); *e is that element. */
static bool in_frame(node_hdr *h, int64_t v, int64_t *e)
{
    int64_t lo, hi;
    packed_range(h->width, &lo, &hi);
    return !__builtin_sub_overflow(v, node_base(h), e) && *e >= lo && *e <= hi;
}

int node_set_int(cs_txn *t, ref_t *slot, uint64_t i, int64_t v)
{
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    int64_t e;
    if ((h->flags & NF_BASE) && in_frame(h, v, &e)) {
        /* invariant 4's exception: a value the frame holds is written into it; the copy of a
         * file node keeps its encoding (node_pack leaves it as it is) */
        if (!IS_SLAB(*slot)) {
            uint64_t sz = node_size_of(h->flags, h->width, h->count);
            ref_t nr;
            TRY(alloc_node(t, sz, &nr));
            h = (node_hdr *)txn_ptr(t, *slot);
            memcpy(txn_ptr(t, nr), h, sz);
            record_freed(t, *slot, sz);
            *slot = nr;
            h = (node_hdr *)txn_ptr(t, nr);
            h->check = 0;
        }
        packed_set(node_values(h), h->width, i, e);
        return CS_OK;
    }
    uint8_t w = width_for(v);
    if (w > h->width || !IS_SLAB(*slot) || (h->flags & NF_BASE)) {
        TRY(node_reserve(t, slot, h->count, w));
        h = (node_hdr *)txn_ptr(t, *slot);
    }
    cs_assert(IS_SLAB(*slot) && h->width >= w && !(h->flags & NF_BASE)); /* invariants 1, 3, 4 */
    packed_set(node_values(h), h->width, i, v);
    return CS_OK;
}

/* Shifts elements [i, count) right by one (count already includes the new slot). */
static void shift_right(node_hdr *h, uint64_t i)
{
    uint8_t *p = node_values(h);
    uint64_t n = h->count;
    if (h->flags & NF_BYTES) {
        memmove(p + (i + 1) * h->width, p + i * h->width, (n - 1 - i) * h->width);
    } else if (h->width >= 8) {
        uint64_t b = h->width / 8;
        memmove(p + (i + 1) * b, p + i * b, (n - 1 - i) * b);
    } else {
        for (uint64_t j = n - 1; j > i; j--) packed_set(p, h->width, j, packed_get(p, h->width, j - 1));
    }
    if (h->flags & NF_NULLS) {
        uint8_t *b = node_payload(h);
        for (uint64_t j = n - 1; j > i; j--) node_set_null(h, j, (b[(j - 1) >> 3] >> ((j - 1) & 7)) & 1);
        node_set_null(h, i, false);
    }
}

static int grow_one(cs_txn *t, ref_t *slot, uint8_t width)
{
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    uint64_t old = h->count;
    TRY(node_reserve(t, slot, old + 1, width));
    h = (node_hdr *)txn_ptr(t, *slot);
    set_count(h, old + 1);
    return CS_OK;
}

int node_append_ints(cs_txn *t, ref_t *slot, const int64_t *v, uint64_t k)
{
    if (!k) return CS_OK;
    int64_t lo = v[0], hi = v[0];
    for (uint64_t i = 1; i < k; i++) {
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    /* signed ranges nest and the small unsigned widths hold only non-negative values, so the
     * wider of the two ends' widths holds every value in between */
    uint8_t w = width_for(lo), wh = width_for(hi);
    if (wh > w) w = wh;
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    cs_assert(!(h->flags & (NF_BYTES | NF_REFS)));
    uint64_t old = h->count;
    TRY(node_reserve(t, slot, old + k, w));
    h = (node_hdr *)txn_ptr(t, *slot);
    set_count(h, old + k);
    uint8_t *p = node_values(h);
    for (uint64_t i = 0; i < k; i++) packed_set(p, h->width, old + i, v[i]);
    if (h->flags & NF_NULLS)
        for (uint64_t i = 0; i < k; i++) node_set_null(h, old + i, false);
    return CS_OK;
}

int node_insert_int(cs_txn *t, ref_t *slot, uint64_t i, int64_t v)
{
    if (IS_SLAB(*slot)) {
        /* appending to a writable node with room and a wide enough width: in place */
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        if (i == h->count && !(h->flags & (NF_NULLS | NF_BYTES | NF_BASE)) && width_for(v) <= h->width &&
            slab_capacity(&t->f->slab, *slot - SLAB_BASE) >= node_size_of(h->flags, h->width, (uint64_t)h->count + 1)) {
            h->count++;
            packed_set(node_values(h), h->width, i, v);
            return CS_OK;
        }
    }
    TRY(grow_one(t, slot, width_for(v)));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (i + 1 < h->count) shift_right(h, i);
    else if (h->flags & NF_NULLS) node_set_null(h, i, false);
    packed_set(node_values(h), h->width, i, v);
    return CS_OK;
}

int node_insert_bytes(cs_txn *t, ref_t *slot, uint64_t i, const void *src)
{
    TRY(grow_one(t, slot, 0));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (i + 1 < h->count) shift_right(h, i);
    else if (h->flags & NF_NULLS) node_set_null(h, i, false);
    if (src) memcpy(node_values(h) + i * h->width, src, h->width);
    else memset(node_values(h) + i * h->width, 0, h->width);
    return CS_OK;
}

int node_erase(cs_txn *t, ref_t *slot, uint64_t i)
{
    TRY(node_cow(t, slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    uint64_t n = h->count;
    uint8_t *p = node_values(h);
    if (h->flags & NF_BYTES) {
        memmove(p + i * h->width, p + (i + 1) * h->width, (n - 1 - i) * h->width);
    } else if (h->width >= 8) {
        uint64_t b = h->width / 8;
        memmove(p + i * b, p + (i + 1) * b, (n - 1 - i) * b);
    } else {
        for (uint64_t j = i; j + 1 < n; j++) packed_set(p, h->width, j, packed_get(p, h->width, j + 1));
    }
    if (h->flags & NF_NULLS) {
        const uint8_t *b = node_payload(h);
        for (uint64_t j = i; j + 1 < n; j++) node_set_null(h, j, (b[(j + 1) >> 3] >> ((j + 1) & 7)) & 1);
        node_set_null(h, n - 1, false);
    }
    set_count(h, n - 1);
    return CS_OK;
}

int node_truncate(cs_txn *t, ref_t *slot, uint64_t n)
{
    TRY(node_cow(t, slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (n >= h->count) return CS_OK;
    if (h->flags & NF_NULLS)
        for (uint64_t j = n; j < h->count; j++) node_set_null(h, j, false);
    if (!(h->flags & NF_BYTES) && h->width < 8)
        for (uint64_t j = n; j < h->count; j++) packed_set(node_values(h), h->width, j, 0);
    set_count(h, n);
    return CS_OK;
}

/* Adds a null bitmap to a node that has none (all present). */
int node_set_nulls_flag(cs_txn *t, ref_t *slot)
{
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    if (h->flags & NF_NULLS) return CS_OK;
    if (h->flags & NF_BASE) {
        TRY(node_cow(t, slot)); /* invariant 4 */
        h = (node_hdr *)txn_ptr(t, *slot);
    }
    uint64_t n = h->count;
    ref_t nr;
    TRY(node_new(t, h->flags | NF_NULLS, h->width, n, &nr));
    h = (node_hdr *)txn_ptr(t, *slot);
    node_hdr *x = (node_hdr *)txn_ptr(t, nr);
    memcpy(node_values(x), node_values(h), node_payload_bytes(h->flags, h->width, n));
    node_free(t, *slot);
    *slot = nr;
    return CS_OK;
}

int node_new_blob(cs_txn *t, const void *p, uint64_t n, ref_t *out)
{
    TRY(node_new(t, NF_BYTES, 1, n, out));
    if (n) memcpy(node_values((node_hdr *)txn_ptr(t, *out)), p, n);
    return CS_OK;
}

int blob_splice(cs_txn *t, ref_t *slot, uint64_t at, uint64_t del, const void *ins, uint64_t n)
{
    node_hdr *h;
    TRY(node_at(t, *slot, &h));
    uint64_t old = h->count;
    uint64_t nc = old - del + n;
    if (nc > UINT32_MAX) return cs_fail(CS_FULL, 0, "leaf data over 4 GiB");
    TRY(node_reserve(t, slot, nc > old ? nc : old, 0));
    h = (node_hdr *)txn_ptr(t, *slot);
    uint8_t *p = node_values(h);
    memmove(p + at + n, p + at + del, old - at - del);
    if (n) memcpy(p + at, ins, n);
    h->count = (uint32_t)nc;
    return CS_OK;
}

/* While *root is an inner node of a positional or index tree ([summary, child0, ...]) with a
 * single child, replaces it by that child, freeing the node and its summary (sizes or seps). */
void tree_collapse_root(cs_txn *t, ref_t *root)
{
    for (;;) {
        node_hdr *h = (node_hdr *)txn_ptr(t, *root);
        if (!(h->flags & NF_INNER) || h->count != 2) return;
        ref_t child = node_refs(h)[1];
        node_free_tree(t, node_refs(h)[0]);
        node_free(t, *root);
        *root = child;
    }
}

/* ---- packing before a commit (invariants 3 and 4) ------------------------------------------ */

/* The narrowest width whose unsigned or signed element range spans `span` distinct steps. */
static uint8_t span_width(uint64_t span)
{
    if (span == 0) return 0;
    if (span <= 1) return 1;
    if (span <= 3) return 2;
    if (span <= 15) return 4;
    if (span <= 0xff) return 8;
    if (span <= 0xffff) return 16;
    if (span <= 0xffffffffu) return 32;
    return 64;
}

int node_pack(cs_txn *t, ref_t *slot)
{
    cs_assert(IS_SLAB(*slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    /* a framed node is as the last commit packed it, or was written in place within its frame
     * (node_set_int): it is kept */
    if (h->flags & (NF_REFS | NF_BYTES | NF_BASE)) return CS_OK;
    uint64_t n = h->count;
    if (!n) return CS_OK;
    uint8_t w = h->width;
    bool nulls = (h->flags & NF_NULLS) != 0;
    int64_t small[256];
    int64_t *v = n <= 256 ? small : malloc(n * sizeof *v);
    if (!v) return NOMEM();
    /* one pass to decode, one for the range of the non-null values (a null element's value
     * means nothing), one to encode; each a loop of one width */
    packed_get_many(node_values(h), w, 0, n, 0, v);
    int64_t lo = 0, hi = 0;
    bool any = false;
    if (!nulls) {
        lo = hi = v[0];
        for (uint64_t i = 1; i < n; i++) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
        any = true;
    } else {
        for (uint64_t i = 0; i < n; i++) {
            if (node_is_null(h, i)) continue;
            if (!any || v[i] < lo) lo = v[i];
            if (!any || v[i] > hi) hi = v[i];
            any = true;
        }
    }
    uint8_t wp = width_for(lo), wh = width_for(hi);
    if (wh > wp) wp = wh; /* the wider end holds everything between (node_append_ints) */
    uint8_t wf = span_width((uint64_t)hi - (uint64_t)lo);
    uint8_t flags = h->flags;
    bool base = wf <= 32 && node_size_of(flags | NF_BASE, wf, n) < node_size_of(flags, wp, n);
    if (!base && wp == w) {
        if (v != small) free(v);
        return CS_OK;
    }
    uint8_t nw = base ? wf : wp;
    /* the base: the smallest value sits at the width's lowest element, unless that would let
     * the width's highest element pass INT64_MAX (then the highest element is INT64_MAX) */
    int64_t b = 0;
    if (base) {
        int64_t elo, ehi;
        packed_range(nw, &elo, &ehi);
        __int128 bb = (__int128)lo - elo;
        if (bb + ehi > INT64_MAX) bb = (__int128)INT64_MAX - ehi;
        b = (int64_t)bb;
    }
    /* a null element holds 0 in a plain node, the minimum's element in a framed one */
    if (nulls)
        for (uint64_t i = 0; i < n; i++)
            if (node_is_null(h, i)) v[i] = base ? lo : 0;
    h->flags = (uint8_t)(flags | (base ? NF_BASE : 0));
    h->width = nw;
    uint8_t *q = node_payload(h) + (nulls ? bitmap_bytes(n) : 0);
    /* the new encoding is never larger than the old one, so it fits the slab block */
    memset(q, 0, PAD8(node_payload_bytes(h->flags & ~NF_NULLS, nw, n)));
    if (base) {
        memcpy(q, &b, 8);
        q += 8;
    }
    packed_put_many(q, nw, 0, n, v, b);
    if (v != small) free(v);
    return CS_OK;
}
