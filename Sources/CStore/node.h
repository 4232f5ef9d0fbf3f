/*
 * node.h -- nodes (node.c, docs/FORMAT.md §3): checked access to a node by its ref, bit-packed
 * integers, null bitmaps, and the writable node operations of a write transaction (the slab and
 * copy-on-write). The lowest layer of the core: it calls nothing above error.c.
 */
#ifndef CSTORE_NODE_H
#define CSTORE_NODE_H

#include "internal.h"

/* Always inlined (at -O2 the compiler kept packed_get out of line): the innermost steps of every
 * read of an integer and of every node visit. */
#define HOT_INLINE static inline __attribute__((always_inline))

/** The 16-bit checksum of a node's header fields and padded payload (FORMAT.md §3). */
uint16_t node_checksum(const node_hdr *h);

/** node_checksum a word at a time, for a pass that does more with each word (commit.c hashes
 *  the commit's bytes for its header slot in the same loop): node_check_start(h), then
 *  node_check_word for each of the node_check_words(h) words of the payload after the 8-byte
 *  header, in order, then node_check_end. */
typedef struct node_check {
    uint64_t a, b;
} node_check;

static inline uint64_t node_check_words(const node_hdr *h)
{
    return PAD8(node_payload_bytes(h->flags, h->width, h->count)) / 8;
}

static inline node_check node_check_start(const node_hdr *h)
{
    node_check c = {0x9e3779b97f4a7c15ull ^ ((uint64_t)h->flags << 40) ^ ((uint64_t)h->width << 32) ^ h->count, 0};
    return c;
}

static inline void node_check_word(node_check *c, uint64_t w)
{
    c->a = (c->a ^ w) * 0x100000001b3ull;
    c->b += w ^ (c->a >> 29);
}

static inline uint16_t node_check_end(const node_check *c)
{
    uint64_t a = c->a ^ c->b * 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    return (uint16_t)(a ^ (a >> 16) ^ (a >> 32) ^ (a >> 48));
}

/** Checks and returns the node at file ref `r`. CS_CORRUPT when it cannot be a node. */
int node_at_file(const cs_txn *t, ref_t r, node_hdr **out);
/** Checks and returns the node at `r` (any ref). CS_CORRUPT when it cannot be a node. */
static inline int node_at(const cs_txn *t, ref_t r, node_hdr **out)
{
    if (IS_SLAB(r) && t->writing) {
        /* a slab ref can only come from this transaction's own writes; one read from a
         * damaged file lands outside the regions handed out so far */
        uint64_t off = r - SLAB_BASE;
        const slab *s = &t->f->slab;
        int k = 63 - __builtin_clzll((off >> 20) + 1);
        if (k < SLAB_REGIONS && k <= s->cur && s->region[k] &&
            (k < s->cur || off - ((((uint64_t)1 << k) - 1) << 20) < s->bump)) {
            *out = (node_hdr *)txn_ptr(t, r);
            return CS_OK;
        }
    }
    return node_at_file(t, r, out);
}

/** The checked-node set of a read transaction (internal.h, txn_checked), emptied first when the
 *  transaction's epoch, mapping or limit moved since it was filled; NULL while writing (a write
 *  changes nodes) and for a frozen transaction (read by several threads at once). */
static inline txn_checked *txn_checked_set(cs_txn *t)
{
    if (t->writing || t->frozen) return NULL;
    txn_checked *ck = &t->ck;
    if (ck->epoch != t->epoch || ck->map != t->map || ck->limit != t->limit) {
        memset(ck->ref, 0xff, sizeof ck->ref); /* CK_EMPTY */
        ck->epoch = t->epoch;
        ck->map = t->map;
        ck->limit = t->limit;
    }
    return ck;
}

/** The slot of ref r in a checked-node set. */
HOT_INLINE ref_t *ck_slot(txn_checked *ck, ref_t r) { return &ck->ref[(r * 0x9e3779b97f4a7c15ull) >> (64 - CK_BITS)]; }

/** node_at through a checked-node set (txn_checked_set; NULL: plain node_at): a ref whose node
 *  passed node_at_file's checks in this snapshot is not checked again (docs/ARCHITECTURE.md, The
 *  lookup's checked nodes). Only a ref that passed enters the set, so a damaged node fails its
 *  check on every visit, as without the set. */
HOT_INLINE int node_at_seen(const cs_txn *t, txn_checked *ck, ref_t r, node_hdr **out)
{
    if (!ck) return node_at(t, r, out);
    ref_t *e = ck_slot(ck, r);
    /* a damaged ref of all ones equals an empty slot's CK_EMPTY: it is checked, and refused */
    if (*e == r && r != CK_EMPTY) {
        /* only refs whose node passed node_at_file enter the set (internal.h, txn_checked) */
        cs_assert(!(r & 7) && r >= HDR_SIZE && t->limit >= NODE_HDR && r <= t->limit - NODE_HDR);
        *out = (node_hdr *)(t->map + r);
        return CS_OK;
    }
    int rc = node_at_file(t, r, out);
    if (rc == CS_OK) *e = r;
    return rc;
}

/* Packed integers */
HOT_INLINE int64_t packed_get(const uint8_t *p, uint8_t width, uint64_t i)
{
    switch (width) {
    case 0: return 0;
    case 1: return (p[i >> 3] >> (i & 7)) & 1;
    case 2: return (p[i >> 2] >> ((i & 3) * 2)) & 3;
    case 4: return (p[i >> 1] >> ((i & 1) * 4)) & 15;
    case 8: return (int8_t)p[i];
    case 16: { int16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case 32: { int32_t v; memcpy(&v, p + i * 4, 4); return v; }
    default: { int64_t v; memcpy(&v, p + i * 8, 8); return v; }
    }
}

/** An interpolation search's guess: `off * n / span` rounded down, for off <= span, span > 0, so
 *  at most n (the product in 128 bits: `off` may be any 64-bit distance). */
HOT_INLINE uint64_t interpolate(uint64_t off, uint64_t span, uint64_t n)
{
    return (uint64_t)((unsigned __int128)off * n / span);
}

void packed_set(uint8_t *p, uint8_t width, uint64_t i, int64_t v);
uint8_t width_for(int64_t v);
void packed_add(uint8_t *p, uint8_t width, uint64_t from, uint64_t to, int64_t delta);
/** The range of the elements a packed width holds (FORMAT.md §3): [0, 2^w - 1] for 0, 1, 2 and 4,
 *  [-2^(w-1), 2^(w-1) - 1] for 8 to 64. */
void packed_range(uint8_t width, int64_t *lo, int64_t *hi);
/** Elements [from, from + n) of a packed array of `width` plus `add` (wrapping), into out[0..n). */
void packed_get_many(const uint8_t *p, uint8_t width, uint64_t from, uint64_t n, int64_t add, int64_t *out);
/** Stores v[k] - sub (wrapping, truncated to `width`) as element from + k, k < n, of a packed
 *  array whose bits there are zero; the caller made the width sufficient. */
void packed_put_many(uint8_t *p, uint8_t width, uint64_t from, uint64_t n, const int64_t *v, int64_t sub);
/** The values a frame-of-reference node (NF_BASE) can hold: base plus its width's range. The
 *  node check (node_at_file) refuses a base for which this leaves int64, so no sum overflows. */
static inline void node_value_range(node_hdr *h, int64_t *lo, int64_t *hi)
{
    packed_range(h->width, lo, hi);
    int64_t b = node_base(h);
    *lo = (int64_t)((uint64_t)*lo + (uint64_t)b);
    *hi = (int64_t)((uint64_t)*hi + (uint64_t)b);
}

/* Element i of a packed-int node, with the base of a frame-of-reference node added (the sum is
 * made in uint64_t: a checked node never wraps, and an unchecked one must not be undefined). */
HOT_INLINE int64_t node_get_int(node_hdr *h, uint64_t i)
{
    const uint8_t *p = node_payload(h);
    if (h->flags & NF_NULLS) p += bitmap_bytes(h->count);
    if (h->flags & NF_BASE) {
        int64_t b;
        memcpy(&b, p, 8);
        return (int64_t)((uint64_t)b + (uint64_t)packed_get(p + 8, h->width, i));
    }
    return packed_get(p, h->width, i);
}
HOT_INLINE bool node_is_null(node_hdr *h, uint64_t i)
{
    if (!(h->flags & NF_NULLS)) return false;
    const uint8_t *b = node_payload(h);
    return (b[i >> 3] >> (i & 7)) & 1;
}

/* Writable node operations (txn must be writing). Each may move the node: `*slot` is the
 * ref as stored in the parent and is updated in place. */
int node_new(cs_txn *t, uint8_t flags, uint8_t width, uint64_t count, ref_t *out);
int node_cow(cs_txn *t, ref_t *slot);
void node_free(cs_txn *t, ref_t r);
void node_free_tree(cs_txn *t, ref_t r);
void tree_collapse_root(cs_txn *t, ref_t *root);
int node_reserve(cs_txn *t, ref_t *slot, uint64_t count, uint8_t width);
int node_set_int(cs_txn *t, ref_t *slot, uint64_t i, int64_t v);
int node_insert_int(cs_txn *t, ref_t *slot, uint64_t i, int64_t v);
/** Appends k packed ints (not null) to a packed-int node, widening it once for all of them. */
int node_append_ints(cs_txn *t, ref_t *slot, const int64_t *v, uint64_t k);
int node_insert_bytes(cs_txn *t, ref_t *slot, uint64_t i, const void *src);
int node_erase(cs_txn *t, ref_t *slot, uint64_t i);
int node_truncate(cs_txn *t, ref_t *slot, uint64_t n);
void node_set_null(node_hdr *h, uint64_t i, bool null);
int node_set_nulls_flag(cs_txn *t, ref_t *slot);
/* Blob (width-1 byte node): replace bytes [at, at+del) with `ins` of length n. */
int blob_splice(cs_txn *t, ref_t *slot, uint64_t at, uint64_t del, const void *ins, uint64_t n);
int node_new_blob(cs_txn *t, const void *p, uint64_t n, ref_t *out);
/** Re-packs a writable packed-int node in place in its smallest encoding (FORMAT.md §3): plain at
 *  the narrowest width that holds every non-null value, or frame of reference (NF_BASE) when that
 *  is smaller. The node must not be written again in this transaction except through the node_*
 *  calls, which decode it first. Called for the dirty cluster nodes before a commit writes them. */
int node_pack(cs_txn *t, ref_t *slot);

#endif
