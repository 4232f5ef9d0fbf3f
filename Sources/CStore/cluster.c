/*
 * cluster.c -- tables as cluster trees: B+ trees keyed by 63-bit object keys whose leaves
 * (clusters) hold up to CLUSTER_MAX rows as one sub-node per column (docs/FORMAT.md §6).
 *
 *   leaf:  NF_REFS [keys, col0, col1, ...]       keys = packed sorted object keys; a column
 *                                               slot that is 0 or past the end holds defaults
 *   inner: NF_REFS|NF_INNER [first, child0, ...] first = packed first key of each child
 *
 * Invariants:
 *  1. Keys are strictly increasing across the whole tree; an inner node's first[i] equals the
 *     smallest key under child i.
 *  2. Every materialised column sub-node of a committed leaf has exactly as many elements as its
 *     keys. Inside a write transaction a sub-node may be shorter: its missing tail holds the
 *     column's defaults. A new row appends only its key, and each value set on it is one append
 *     to its column (no default written and then overwritten); cluster_fill_short pads such
 *     sub-nodes before the commit writes them (docs/ARCHITECTURE.md, Short columns).
 *  3. No leaf is empty except an empty table's root, which is then 0.
 */
#include "node.h"
#include "leaf.h"
#include "cluster.h"
#include "schema.h"
#include "snapshot.h"

/* ---- table nodes ------------------------------------------------------------------------ */

int table_node_slot(cs_txn *t, uint32_t table, ref_t **slot)
{
    if (t->writing && t->tns_slot && t->tns_top == t->top && t->tns_table == table && IS_SLAB(t->top)) {
        /* the top, the table list and the table node are unchanged writable copies: reuse */
        node_hdr *th = (node_hdr *)txn_ptr(t, t->top);
        if (th->count > TOP_TABLES && node_refs(th)[TOP_TABLES] == t->tns_tables && IS_SLAB(*t->tns_slot)) {
            *slot = t->tns_slot;
            return CS_OK;
        }
    }
    ref_t *tables;
    TRY(txn_top_slot(t, TOP_TABLES, &tables));
    if (!*tables) TRY(node_new(t, NF_REFS, 64, 0, tables));
    TRY(node_cow(t, tables));
    node_hdr *h = (node_hdr *)txn_ptr(t, *tables);
    if (table >= h->count) {
        uint64_t n = h->count;
        TRY(node_reserve(t, tables, table + 1, 64));
        h = (node_hdr *)txn_ptr(t, *tables);
        for (uint64_t i = n; i <= table; i++) node_refs(h)[i] = 0;
        h->count = table + 1;
    }
    ref_t *e = &node_refs(h)[table];
    if (!*e) {
        TRY(node_new(t, NF_REFS, 64, TBL_SLOTS, e));
        uint64_t *x = node_refs((node_hdr *)txn_ptr(t, *e));
        x[TBL_ROOT] = 0;
        x[TBL_NEXTKEY] = tag_int(0);
        x[TBL_COUNT] = tag_int(0);
        x[TBL_INDEXES] = 0;
    }
    TRY(node_cow(t, e));
    node_hdr *tn = (node_hdr *)txn_ptr(t, *e);
    if (tn->count < TBL_SLOTS) return CORRUPT("table node %u is too short", table);
    *slot = e;
    t->tns_top = t->top;
    t->tns_tables = *tables;
    t->tns_table = table;
    t->tns_slot = e;
    return CS_OK;
}

static int table_node(cs_txn *t, uint32_t table, node_hdr **out)
{
    uint64_t tr;
    TRY(txn_top_get(t, TOP_TABLES, &tr));
    *out = NULL;
    if (!tr) return CS_OK;
    node_hdr *h;
    TRY(node_at(t, tr, &h));
    if (!(h->flags & NF_REFS)) return CORRUPT("table list is malformed");
    if (table >= h->count || !node_refs(h)[table]) return CS_OK;
    uint64_t r = node_refs(h)[table];
    if (tagged(r)) return CORRUPT("table slot %u holds a number", table);
    TRY(node_at(t, r, out));
    if (!((*out)->flags & NF_REFS) || (*out)->count < TBL_SLOTS) return CORRUPT("table node %u is malformed", table);
    return CS_OK;
}

/* The keying flags (TBL_KEYING) of a table node, 0 when it has no keying slots. */
static int node_keying(node_hdr *tn, uint32_t table, int64_t *flags)
{
    *flags = 0;
    if (!tn || tn->count <= TBL_KEYING) return CS_OK;
    uint64_t v = node_refs(tn)[TBL_KEYING];
    if (!tagged(v)) return CORRUPT("table %u keying slot is not a number", table);
    *flags = untag(v);
    if (*flags & ~(int64_t)TBLK_KNOWN) return CORRUPT("table %u has unknown keying flags %llx", table, (unsigned long long)*flags);
    return CS_OK;
}

int table_root_keyed(cs_txn *t, uint32_t table, ref_t *root, bool *pk_keyed)
{
    /* a read transaction's snapshot changes only with its epoch: the last root found holds */
    txn_rcache *rc = txn_read_cache(t);
    if (rc && rc->rt_epoch == t->epoch && rc->rt_table == table) {
        *root = rc->rt_root;
        if (pk_keyed) *pk_keyed = rc->rt_keyed;
        return CS_OK;
    }
    node_hdr *tn;
    TRY(table_node(t, table, &tn));
    *root = tn ? node_refs(tn)[TBL_ROOT] : 0;
    if (*root && tagged(*root)) return CORRUPT("table %u root holds a number", table);
    int64_t flags;
    TRY(node_keying(tn, table, &flags));
    if (pk_keyed) *pk_keyed = (flags & TBLK_PK) != 0;
    if (rc) {
        rc->rt_epoch = t->epoch;
        rc->rt_table = table;
        rc->rt_root = *root;
        rc->rt_keyed = (flags & TBLK_PK) != 0;
    }
    return CS_OK;
}

int table_root(cs_txn *t, uint32_t table, ref_t *root)
{
    return table_root_keyed(t, table, root, NULL);
}

int table_keying(cs_txn *t, uint32_t table, int64_t *flags, ref_t *retired)
{
    node_hdr *tn;
    TRY(table_node(t, table, &tn));
    TRY(node_keying(tn, table, flags));
    *retired = 0;
    if (tn && tn->count > TBL_RETIRED) {
        *retired = node_refs(tn)[TBL_RETIRED];
        if (tagged(*retired)) return CORRUPT("table %u retired-key slot holds a number", table);
    }
    return CS_OK;
}

int table_keying_slots(cs_txn *t, uint32_t table, ref_t **retired)
{
    ref_t *s;
    TRY(table_node_slot(t, table, &s));
    node_hdr *tn = (node_hdr *)txn_ptr(t, *s);
    if (tn->count < TBL_SLOTS_KEYED) {
        uint64_t n = tn->count;
        TRY(node_reserve(t, s, TBL_SLOTS_KEYED, 64));
        tn = (node_hdr *)txn_ptr(t, *s);
        for (uint64_t i = n; i < TBL_SLOTS_KEYED; i++) node_refs(tn)[i] = i == TBL_KEYING ? tag_int(0) : 0;
        tn->count = TBL_SLOTS_KEYED;
    }
    *retired = &node_refs(tn)[TBL_RETIRED];
    return CS_OK;
}

int table_get_meta(cs_txn *t, uint32_t table, int which, int64_t *out)
{
    node_hdr *tn;
    TRY(table_node(t, table, &tn));
    *out = 0;
    if (!tn) return CS_OK;
    uint64_t v = node_refs(tn)[which];
    if (!tagged(v)) return CORRUPT("table %u meta slot %d is not a number", table, which);
    *out = untag(v);
    return CS_OK;
}

int table_set_meta(cs_txn *t, uint32_t table, int which, int64_t v)
{
    ref_t *s;
    TRY(table_node_slot(t, table, &s));
    node_refs((node_hdr *)txn_ptr(t, *s))[which] = tag_int(v);
    return CS_OK;
}

/* ---- searching -------------------------------------------------------------------------- */

/* Index of the first element >= key in a sorted packed node. Keys are allocated in sequence,
 * so most leaves are dense: try the position the key would have in a dense run first. A
 * frame-of-reference node (FORMAT.md §3) is searched on its elements against key - base, which
 * its element range holds once key lies between the first and the last value. */
static uint64_t lower_bound(node_hdr *k, int64_t key)
{
    uint64_t n = k->count;
    const uint8_t *p = node_values(k);
    uint8_t w = k->width;
    uint64_t b = (uint64_t)node_base(k);
#define AT(i) ((int64_t)(b + (uint64_t)packed_get(p, w, (i))))
    if (n == 0) return 0;
    int64_t first = AT(0);
    if (key <= first) return 0;
    uint64_t guess = (uint64_t)key - (uint64_t)first;
    if (guess < n && AT(guess) == key) return guess;
    uint64_t lo = 0, hi = n;
    /* inner nodes' first keys are usually evenly spaced: interpolate, then confirm the answer
     * with its neighbour (a miss falls through to the binary search) */
    int64_t last = AT(n - 1);
    if (key > last) return n;
    if (last > first) {
        uint64_t g = interpolate((uint64_t)key - (uint64_t)first, (uint64_t)last - (uint64_t)first, n - 1);
        if (g >= n) g = n - 1;
        int64_t at = AT(g);
        if (at >= key) {
            if (g == 0 || AT(g - 1) < key) return g;
            hi = g;
        } else {
            if (g + 1 < n && AT(g + 1) >= key) return g + 1;
            lo = g + 1;
        }
    }
    key = (int64_t)((uint64_t)key - b); /* from here on compared with the elements */
#define LB_LOOP(T)                                                          \
    do {                                                                    \
        const T *a = (const T *)(const void *)p;                            \
        while (lo < hi) {                                                   \
            uint64_t mid = (lo + hi) / 2;                                   \
            T x;                                                            \
            memcpy(&x, a + mid, sizeof x);                                  \
            if ((int64_t)x < key) lo = mid + 1;                             \
            else hi = mid;                                                  \
        }                                                                   \
    } while (0)
    switch (w) {
    case 8: LB_LOOP(int8_t); break;
    case 16: LB_LOOP(int16_t); break;
    case 32: LB_LOOP(int32_t); break;
    case 64: LB_LOOP(int64_t); break;
    default:
        while (lo < hi) {
            uint64_t mid = (lo + hi) / 2;
            if (packed_get(p, w, mid) < key) lo = mid + 1;
            else hi = mid;
        }
    }
#undef LB_LOOP
#undef AT
    return lo;
}

/* What a descent knows of a node's keys before it reads them: its parent's first key for it (lo)
 * and, unless it is a rightmost node, the next child's first key (hi); by invariant 1 every key
 * of the node lies in [lo, hi). Only a guess: a damaged file may break it, so every position it
 * gives is checked against the node's own keys. */
typedef struct key_span {
    int64_t lo, hi;
    bool known; /* lo and hi are set and lo < hi */
} key_span;

/* Where key would sit among a node's n keys if they were spread evenly over the span: in a dense
 * run of keys (counter keys, primary keys 0, 1, 2, ...) that is its position; n when the span
 * says nothing. */
HOT_INLINE uint64_t span_guess(const key_span *s, int64_t key, uint64_t n)
{
    if (!s->known || key < s->lo || key >= s->hi || n == 0) return n;
    uint64_t off = (uint64_t)key - (uint64_t)s->lo, span = (uint64_t)s->hi - (uint64_t)s->lo;
    if (span == n) return off; /* a dense run */
    /* n < 2^32 (a node's count): within a 32-bit span the product fits 64 bits */
    uint64_t g = span <= UINT32_MAX ? off * n / span : interpolate(off, span, n);
    return g < n ? g : n - 1;
}

/* A key list's elements, read without the node's flags on every access. */
typedef struct key_vec {
    const uint8_t *p;
    uint64_t base, n;
    uint8_t w;
} key_vec;

HOT_INLINE key_vec key_vec_of(node_hdr *k)
{
    return (key_vec){node_values(k), (uint64_t)node_base(k), k->count, k->width};
}

HOT_INLINE int64_t key_at(const key_vec *v, uint64_t i) { return (int64_t)(v->base + (uint64_t)packed_get(v->p, v->w, i)); }

/* lower_bound when the span is known: the evenly spread guess is confirmed with its neighbour,
 * which reads the one or two cache lines around it and no other (lower_bound's interpolation
 * reads the last key first, a line of its own in a large node); a wrong guess falls back to
 * lower_bound, so any key distribution gets the exact answer, in O(log n) steps at worst. */
static uint64_t lower_bound_span(node_hdr *k, int64_t key, const key_span *s)
{
    key_vec v = key_vec_of(k);
    uint64_t g = span_guess(s, key, v.n);
    if (g < v.n) {
        if (key_at(&v, g) >= key) {
            if (g == 0 || key_at(&v, g - 1) < key) return g;
        } else if (g + 1 == v.n || key_at(&v, g + 1) >= key) {
            return g + 1;
        }
    }
    return lower_bound(k, key);
}

/* The most children child_for_span scans one by one when the span gives no guess. */
#define CHILD_SCAN_MAX 8

/* Child index for `key` in an inner node: the last child whose first key <= key (0 if none).
 * s is the inner node's span on entry and the child's on return; g is span_guess's position for
 * key (the caller has it already). The evenly spread guess is taken when its first key and the
 * next one bracket key; else lower_bound decides. */
static uint64_t child_for_span(node_hdr *first, int64_t key, key_span *s, uint64_t g)
{
    key_vec v = key_vec_of(first);
    uint64_t n = v.n, c;
    int64_t lo, hi = 0;
    if (g < n && (lo = key_at(&v, g)) <= key && (g + 1 == n || (hi = key_at(&v, g + 1)) > key)) {
        c = g;
    } else if (g >= n && n <= CHILD_SCAN_MAX) {
        /* no guess (a root) among a few children: the last first key <= key, by a scan */
        c = n ? n - 1 : 0;
        while (c > 0 && key_at(&v, c) > key) c--;
        lo = n ? key_at(&v, c) : 0;
        if (c + 1 < n) hi = key_at(&v, c + 1);
    } else {
        uint64_t lb = lower_bound(first, key);
        c = lb < n && key_at(&v, lb) == key ? lb : lb ? lb - 1 : 0;
        lo = key_at(&v, c);
        if (c + 1 < n) hi = key_at(&v, c + 1);
    }
    bool has_hi = c + 1 < n || s->known;
    if (c + 1 == n) hi = s->hi;
    s->lo = lo;
    s->hi = hi;
    s->known = has_hi && lo < hi;
    return c;
}

static uint64_t child_for(node_hdr *first, int64_t key)
{
    key_span s = {0, 0, false};
    return child_for_span(first, key, &s, span_guess(&s, key, first->count));
}

/* An inner node's first keys, checked; through the checked-node set ck when not NULL. */
static int open_inner_seen(cs_txn *t, txn_checked *ck, node_hdr *h, node_hdr **first)
{
    if (h->count < 2) return CORRUPT("inner cluster node is malformed");
    TRY(node_at_seen(t, ck, cluster_keys_ref(h), first));
    if (((*first)->flags & (NF_REFS | NF_BYTES | NF_NULLS)) || (*first)->count != cluster_inner_children(h))
        return CORRUPT("inner cluster node is malformed");
    return CS_OK;
}

static int open_inner(cs_txn *t, node_hdr *h, node_hdr **first) { return open_inner_seen(t, NULL, h, first); }

/* A leaf's key list, checked; through the checked-node set ck when not NULL. */
static int open_leaf_keys_seen(cs_txn *t, txn_checked *ck, node_hdr *h, node_hdr **keys)
{
    if (h->count < 1) return CORRUPT("cluster leaf has no key list");
    TRY(node_at_seen(t, ck, cluster_keys_ref(h), keys));
    if ((*keys)->flags & (NF_REFS | NF_BYTES | NF_NULLS)) return CORRUPT("cluster key list is malformed");
    return CS_OK;
}

static int open_leaf_keys(cs_txn *t, node_hdr *h, node_hdr **keys) { return open_leaf_keys_seen(t, NULL, h, keys); }

/* The cluster node at r, checked; for an inner node also its first keys (else *first is NULL). */
static int read_step(cs_txn *t, ref_t r, node_hdr **h, node_hdr **first)
{
    TRY(node_at(t, r, h));
    if (!((*h)->flags & NF_REFS)) return CORRUPT("cluster node at %llu is malformed", (unsigned long long)r);
    *first = NULL;
    if ((*h)->flags & NF_INNER) TRY(open_inner(t, *h, first));
    return CS_OK;
}

/* A hint to the cache to fetch byte `off` of the node at file ref r (docs/ARCHITECTURE.md, The
 * lookup's cache misses). Nothing is read: a ref outside the snapshot, or a slab ref (a write's
 * own nodes, recently touched), is skipped, and a wrong guess costs a line of bandwidth. */
static inline void prefetch_file(const cs_txn *t, ref_t r, uint64_t off)
{
    if (r && !IS_SLAB(r) && r < t->limit && off < t->limit - r) __builtin_prefetch(t->map + r + off);
}

/* How far apart two sibling cluster nodes may lie for prefetch_gap to fetch anything, and the most
 * bytes it fetches. */
#define FIND_GAP_MAX 65536
#define FIND_GAP_FETCH 1024

/* A commit writes a leaf's key list and then its column sub-nodes just before the leaf's refs
 * node, and siblings one after the other (docs/ARCHITECTURE.md, The lookup's cache misses): the
 * bytes after a child's previous sibling usually begin with the child's key list. Fetching them
 * with the child's header makes the key list arrive with it instead of one miss later. Only when
 * the two lie close and in order; elsewhere nothing is fetched. */
static inline void prefetch_gap(const cs_txn *t, ref_t prev, ref_t r)
{
    if (IS_SLAB(prev) || IS_SLAB(r) || r <= prev || r - prev > FIND_GAP_MAX || r >= t->limit) return;
    uint64_t end = r - prev > FIND_GAP_FETCH ? prev + FIND_GAP_FETCH : r;
    for (uint64_t a = prev & ~(uint64_t)63; a < end; a += 64) __builtin_prefetch(t->map + a);
    /* the child's own header last: issued before the gap's lines, it made the lookups slower
     * (docs/benchmarks/README.md) */
    __builtin_prefetch(t->map + r);
}

/* How many of an inner node's first children must step by one stride for predict_child to trust
 * it. A load in random order evens out neighbouring leaves (leaf_overflow), so leaves of one size
 * side by side happen: of the 32 lowest inner nodes after 1M Int keys loaded in random order, 13
 * start with three children one stride apart, 2 with four, none with six (nor any of the 4 after
 * 120k such keys); after a load in key order 3,046 of 3,051 start with six (docs/benchmarks/
 * README.md, "Predicted leaves"). Six slots are bytes 16-63 of the node: its header's cache line
 * and at most the next. */
#define PREDICT_CHILDREN 6

/* Where child g of an inner node probably is, before the slot that holds its ref has arrived
 * (docs/ARCHITECTURE.md, The lookup's cache misses): a commit writes sibling leaves one after the
 * other, and in a load in key order they all have one size, so their refs step by one stride.
 * When the node's first PREDICT_CHILDREN children (in its header's cache line or the next) do,
 * and the stride is a leaf's (at most FIND_GAP_MAX, not a subtree's), child g is guessed at
 * child 0 + g * stride, with *stride set; else 0. Only a guess to prefetch by: the descent still
 * reads the real ref, and a damaged node can make the guess point anywhere (prefetch_gap fetches
 * nothing outside the snapshot). */
static inline ref_t predict_child(node_hdr *h, uint64_t g, uint64_t *stride)
{
    uint64_t n = cluster_inner_children(h);
    if (g == 0 || g >= n || n < PREDICT_CHILDREN) return 0;
    const uint64_t *ch = &node_refs(h)[CL_CHILD0];
    *stride = ch[1] - ch[0];
    if (IS_SLAB(ch[0]) || ch[1] <= ch[0] || *stride > FIND_GAP_MAX) return 0;
    for (int k = 2; k < PREDICT_CHILDREN; k++)
        if (ch[k] - ch[k - 1] != *stride) return 0;
    return ch[0] + g * *stride;
}

#if CS_ASSERTS
/* cs_test_lookup_predictions' counts for this thread: right, wrong, none */
static _Thread_local uint64_t predict_counts[3];
#endif

bool cs_test_lookup_predictions(uint64_t counts[3])
{
    counts[0] = counts[1] = counts[2] = 0;
#if CS_ASSERTS
    for (int i = 0; i < 3; i++) {
        counts[i] = predict_counts[i];
        predict_counts[i] = 0;
    }
    return true;
#else
    return false;
#endif
}

/* The most column sub-nodes of a leaf whose headers a lookup prefetches (the first ones). */
#define FIND_PREFETCH_COLS 8

int cluster_find(cs_txn *t, ref_t root, int64_t key, node_hdr **leaf, uint32_t *row)
{
    ref_t r = root;
    key_span s = {0, 0, false};
    /* a read transaction checks each node once (docs/ARCHITECTURE.md, The lookup's checked nodes) */
    txn_checked *ck = txn_checked_set(t);
    for (int depth = 0; depth < TREE_DEPTH_MAX; depth++) {
        if (!r) return CS_NOTFOUND;
        node_hdr *h;
        TRY(node_at_seen(t, ck, r, &h));
        if (!(h->flags & NF_REFS)) return CORRUPT("cluster node at %llu is malformed", (unsigned long long)r);
        if (h->flags & NF_INNER) {
            /* the child's ref is fetched while the first keys that confirm it are read; below
             * the root (whose slots every lookup reads, so they are cached), a leaf child whose
             * place its siblings predict is fetched at the same time, without waiting for it */
            uint64_t g = span_guess(&s, key, cluster_inner_children(h));
            ref_t predicted = 0;
            if (g < cluster_inner_children(h)) {
                __builtin_prefetch(&node_refs(h)[CL_CHILD0 + g]);
                uint64_t stride = 0;
                if (depth > 0) predicted = predict_child(h, g, &stride);
                if (predicted) prefetch_gap(t, predicted - stride, predicted);
            }
            node_hdr *first;
            TRY(open_inner_seen(t, ck, h, &first)); /* its count is cluster_inner_children(h), so g holds */
            uint64_t c = child_for_span(first, key, &s, g);
            r = cluster_inner_child(h, c);
            if (c > 0 && r != predicted) prefetch_gap(t, cluster_inner_child(h, c - 1), r);
#if CS_ASSERTS
            if (depth > 0) predict_counts[!predicted ? 2 : r == predicted ? 0 : 1]++;
#endif
            continue;
        }
        /* The leaf's key list and its column sub-nodes are fetched together, not one after the
         * other: the key list's header; the line where key's element sits if the leaf is a
         * dense run of 8-bit keys over a base (FORMAT.md §3), whenever key lies within a leaf's
         * length of the span's start (for other widths a harmless extra fetch); the columns'
         * headers. */
        uint32_t ncols = cluster_leaf_cols(h);
        if (ncols > FIND_PREFETCH_COLS) ncols = FIND_PREFETCH_COLS;
        if (h->count >= 1) {
            ref_t kr = cluster_keys_ref(h);
            prefetch_file(t, kr, 0);
            if (s.known && key >= s.lo && (uint64_t)key - (uint64_t)s.lo < CLUSTER_MAX)
                prefetch_file(t, kr, NODE_HDR + 8 + ((uint64_t)key - (uint64_t)s.lo));
        }
        for (uint32_t c = 0; c < ncols; c++) prefetch_file(t, cluster_leaf_col_ref(h, c), 0);
        node_hdr *keys;
        TRY(open_leaf_keys_seen(t, ck, h, &keys));
        uint64_t i = lower_bound_span(keys, key, &s);
        if (i >= keys->count || node_get_int(keys, i) != key) return CS_NOTFOUND;
        *leaf = h;
        *row = (uint32_t)i;
        return CS_OK;
    }
    return CORRUPT("cluster tree deeper than %d", TREE_DEPTH_MAX);
}

int cluster_last_key(cs_txn *t, ref_t root, int64_t *key, bool *found)
{
    *found = false;
    ref_t r = root;
    for (int depth = 0; depth < TREE_DEPTH_MAX; depth++) {
        if (!r) return CS_OK;
        node_hdr *h, *first;
        TRY(read_step(t, r, &h, &first));
        if (first) {
            r = cluster_inner_child(h, cluster_inner_children(h) - 1);
            continue;
        }
        node_hdr *keys;
        TRY(open_leaf_keys(t, h, &keys));
        if (!keys->count) return CS_OK;
        *key = node_get_int(keys, keys->count - 1);
        *found = true;
        return CS_OK;
    }
    return CORRUPT("cluster tree deeper than %d", TREE_DEPTH_MAX);
}

static int seek_rec(cs_txn *t, ref_t r, int64_t from, node_hdr **leaf, uint32_t *row, int64_t *key, int depth)
{
    if (depth >= TREE_DEPTH_MAX) return CORRUPT("cluster tree deeper than %d", TREE_DEPTH_MAX);
    if (!r) return CS_NOTFOUND;
    node_hdr *h, *first;
    TRY(read_step(t, r, &h, &first));
    if (first) {
        for (uint64_t c = child_for(first, from); c < first->count; c++) {
            int rc = seek_rec(t, cluster_inner_child(h, c), from, leaf, row, key, depth + 1);
            if (rc != CS_NOTFOUND) return rc;
        }
        return CS_NOTFOUND;
    }
    node_hdr *keys;
    TRY(open_leaf_keys(t, h, &keys));
    uint64_t i = lower_bound(keys, from);
    if (i >= keys->count) return CS_NOTFOUND;
    *leaf = h;
    *row = (uint32_t)i;
    *key = node_get_int(keys, i);
    return CS_OK;
}

int cluster_seek(cs_txn *t, ref_t root, int64_t from, node_hdr **leaf, uint32_t *row, int64_t *key)
{
    return seek_rec(t, root, from, leaf, row, key, 0);
}

/* ---- writing ---------------------------------------------------------------------------- */

static int root_slot(cs_txn *t, uint32_t table, ref_t **slot)
{
    ref_t *ts;
    TRY(table_node_slot(t, table, &ts));
    *slot = &node_refs((node_hdr *)txn_ptr(t, *ts))[TBL_ROOT];
    return CS_OK;
}

/* One step down a path that a write changes: makes the node at *slot writable (a copy moves the
 * epoch) and checks it; for an inner node, opens its first keys and picks key's child (*idx). */
static int path_step(cs_txn *t, ref_t *slot, int64_t key, int depth, node_hdr **h, node_hdr **first, uint64_t *idx)
{
    if (depth >= TREE_DEPTH_MAX) return CORRUPT("cluster tree deeper than %d", TREE_DEPTH_MAX);
    if (!IS_SLAB(*slot)) {
        TRY(node_cow(t, slot));
        t->epoch++;
    }
    *h = (node_hdr *)txn_ptr(t, *slot);
    if (!((*h)->flags & NF_REFS)) return CORRUPT("cluster node is malformed");
    if ((*h)->flags & NF_INNER) {
        TRY(open_inner(t, *h, first));
        *idx = child_for(*first, key);
    }
    return CS_OK;
}

int cluster_write_path(cs_txn *t, uint32_t table, int64_t key, ref_t **leaf_slot, uint32_t *row)
{
    ref_t *slot;
    TRY(root_slot(t, table, &slot));
    for (int depth = 0;; depth++) {
        if (!*slot) return cs_fail(CS_NOTFOUND, 0, "no object with key %lld", (long long)key);
        node_hdr *h, *first = NULL;
        uint64_t idx = 0;
        TRY(path_step(t, slot, key, depth, &h, &first, &idx));
        if (h->flags & NF_INNER) {
            slot = cluster_inner_child_slot(h, idx);
            continue;
        }
        node_hdr *keys;
        TRY(open_leaf_keys(t, h, &keys));
        uint64_t i = lower_bound(keys, key);
        if (i >= keys->count || node_get_int(keys, i) != key)
            return cs_fail(CS_NOTFOUND, 0, "no object with key %lld", (long long)key);
        *leaf_slot = slot;
        *row = (uint32_t)i;
        return CS_OK;
    }
}

typedef struct split {
    bool happened; /* a new right sibling was made */
    bool overfull; /* a leaf past CLUSTER_MAX rows that its parent shares out or splits */
    ref_t ref;     /* its ref */
    int64_t first; /* its first key */
} split;

static int leaf_materialise(cs_txn *t, const col_def *cd, ref_t *slot, uint32_t col, uint64_t rows);
static int leaf_append_rows(cs_txn *t, uint32_t table, ref_t *left, ref_t *right);

static int first_key(cs_txn *t, ref_t r, int64_t *out)
{
    node_hdr *h;
    TRY(node_at(t, r, &h));
    node_hdr *k;
    TRY(node_at(t, cluster_keys_ref(h), &k));
    if (k->count == 0) return CORRUPT("empty cluster node");
    *out = node_get_int(k, 0);
    return CS_OK;
}

/* Column col's slot in the writable leaf at *slot (*cs NULL when the leaf does not materialise
 * the column) and the column's leaf spec; CS_CORRUPT for data of a removed column. */
static int leaf_col(cs_txn *t, uint32_t table, ref_t *slot, uint32_t col, ref_t **cs, leaf_spec *s)
{
    *cs = cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *slot), col);
    if (!**cs) {
        *cs = NULL;
        return CS_OK;
    }
    col_def *cd = txn_col_live(t, table, col);
    if (!cd) return CORRUPT("leaf holds data for a removed column");
    *s = leaf_spec_col(cd);
    return CS_OK;
}

/* Moves rows [from, end) of the writable leaf at *slot into the writable leaf at *dst, which
 * holds no row (its keys sub-node empty; its column sub-nodes empty or absent). */
static int leaf_move_tail(cs_txn *t, uint32_t table, ref_t *slot, uint64_t from, ref_t *dst)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    uint32_t cols = cluster_leaf_cols(h);
    leaf_spec ks = leaf_spec_of(CS_TYPE_INT, false, 0);
    TRY(leaf_move(t, &ks, cluster_keys_slot((node_hdr *)txn_ptr(t, *slot)), from,
                  cluster_keys_slot((node_hdr *)txn_ptr(t, *dst))));
    for (uint32_t col = 0; col < cols; col++) {
        /* both leaves are looked up again: the moves below may move them */
        ref_t *src;
        leaf_spec s;
        TRY(leaf_col(t, table, slot, col, &src, &s));
        if (!src) continue;
        uint64_t have;
        TRY(leaf_count(t, &s, *src, &have));
        if (have <= from) continue; /* a short column: the moved rows hold defaults (invariant 2) */
        if (!cluster_leaf_col_ref((node_hdr *)txn_ptr(t, *dst), col)) {
            col_def *cd = txn_col_live(t, table, col);
            if (!cd) return CORRUPT("leaf holds data for a removed column");
            TRY(leaf_materialise(t, cd, dst, col, 0));
        }
        TRY(leaf_move(t, &s, cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *slot), col), from,
                      cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *dst), col)));
    }
    t->epoch++;
    return CS_OK;
}

/* Moves rows [from, end) of the leaf at *slot into a new leaf. */
static int leaf_split(cs_txn *t, uint32_t table, ref_t *slot, uint64_t from, split *sp)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    /* invariant 3: both halves keep rows (the callers split a leaf past CLUSTER_MAX rows) */
    cs_assert3(from, >, 0);
    cs_assert3(from, <, ((node_hdr *)txn_ptr(t, cluster_keys_ref(h)))->count);
    ref_t nl;
    TRY(node_new(t, NF_REFS, 64, h->count, &nl));
    TRY(node_new(t, 0, 0, 0, cluster_keys_slot((node_hdr *)txn_ptr(t, nl))));
    TRY(leaf_move_tail(t, table, slot, from, &nl));
    sp->happened = true;
    sp->ref = nl;
    TRY(first_key(t, nl, &sp->first));
    return CS_OK;
}

/* Rows of the leaf at r; UINT64_MAX for an inner node or one that does not read (never a
 * sibling to share with). */
static uint64_t leaf_rows(cs_txn *t, ref_t r)
{
    node_hdr *h;
    if (node_at(t, r, &h) != CS_OK || (h->flags & NF_INNER) || !cluster_keys_ref(h)) return UINT64_MAX;
    node_hdr *k;
    if (node_at(t, cluster_keys_ref(h), &k) != CS_OK) return UINT64_MAX;
    return k->count;
}

/* A sibling shares an overfull leaf's rows only while it has this much room left, so a full
 * pair does not pass one row to and fro on every insert. */
#define SHARE_ROOM (CLUSTER_MAX / 8)

/* Child idx of the writable inner node at *slot is a leaf past CLUSTER_MAX rows (a row was
 * inserted into its middle). As a B*-tree does, it first shares its rows with the neighbour
 * that has more room (at least SHARE_ROOM): the pair's rows are split evenly between them, in
 * key order, and the right one's first key is updated; a random-order load so leaves its leaves
 * fuller than a split at the middle would (docs/ARCHITECTURE.md, Leaf fill and the history of a
 * load). With no such neighbour the leaf splits at its middle (sp->happened). */
static int leaf_overflow(cs_txn *t, uint32_t table, ref_t *slot, uint64_t idx, split *sp)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    uint64_t nch = cluster_inner_children(h);
    uint64_t rows = leaf_rows(t, cluster_inner_child(h, idx));
    uint64_t left = idx > 0 ? leaf_rows(t, cluster_inner_child(h, idx - 1)) : UINT64_MAX;
    uint64_t right = idx + 1 < nch ? leaf_rows(t, cluster_inner_child(h, idx + 1)) : UINT64_MAX;
    uint64_t best = left < right ? left : right;
    sp->overfull = false;
    if (best == UINT64_MAX || best + SHARE_ROOM > CLUSTER_MAX) {
        return leaf_split(t, table, cluster_inner_child_slot(h, idx), rows / 2, sp);
    }
    uint64_t l = left < right ? idx - 1 : idx; /* the pair is children l and l + 1 */
    for (uint64_t i = l; i <= l + 1; i++) {
        ref_t *cs = cluster_inner_child_slot((node_hdr *)txn_ptr(t, *slot), i);
        if (!IS_SLAB(*cs)) {
            TRY(node_cow(t, cs));
            t->epoch++;
        }
    }
    uint64_t total = rows + best, keep = (total + 1) / 2;
    /* the right leaf's rows go to the end of the left one, then the left one's tail from `keep`
     * goes back into the emptied right one: both hold about total / 2 rows */
    h = (node_hdr *)txn_ptr(t, *slot);
    TRY(leaf_append_rows(t, table, cluster_inner_child_slot(h, l), cluster_inner_child_slot(h, l + 1)));
    h = (node_hdr *)txn_ptr(t, *slot);
    TRY(leaf_move_tail(t, table, cluster_inner_child_slot(h, l), keep, cluster_inner_child_slot(h, l + 1)));
    int64_t f;
    TRY(first_key(t, cluster_inner_child((node_hdr *)txn_ptr(t, *slot), l + 1), &f));
    ref_t *fs = cluster_keys_slot((node_hdr *)txn_ptr(t, *slot));
    TRY(node_set_int(t, fs, l + 1, f));
    t->short_cols = true; /* columns one leaf of the pair lacked are short now (invariant 2) */
    return CS_OK;
}

/* Splits an inner node in two halves. */
static int inner_split(cs_txn *t, ref_t *slot, split *sp)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    uint64_t n = cluster_inner_children(h), from = n / 2;
    cs_assert3(n, >, CLUSTER_MAX); /* split only past the fan-out, so both halves have children */
    ref_t ni;
    TRY(node_new(t, NF_REFS | NF_INNER, 64, 1, &ni));
    TRY(node_new(t, 0, 0, 0, cluster_keys_slot((node_hdr *)txn_ptr(t, ni))));
    leaf_spec ks = leaf_spec_of(CS_TYPE_INT, false, 0);
    TRY(leaf_move(t, &ks, cluster_keys_slot((node_hdr *)txn_ptr(t, *slot)), from,
                  cluster_keys_slot((node_hdr *)txn_ptr(t, ni))));
    for (uint64_t c = from; c < n; c++) {
        uint64_t child = cluster_inner_child((node_hdr *)txn_ptr(t, *slot), c);
        node_hdr *nh = (node_hdr *)txn_ptr(t, ni);
        TRY(node_insert_int(t, &ni, nh->count, (int64_t)child));
    }
    TRY(node_truncate(t, slot, CL_CHILD0 + from));
    sp->happened = true;
    sp->ref = ni;
    sp->first = node_get_int((node_hdr *)txn_ptr(t, cluster_keys_ref((node_hdr *)txn_ptr(t, ni))), 0);
    t->epoch++;
    return CS_OK;
}

/* Puts the named values of a new row at `pos` of the writable leaf at *slot (insert_rec's second
 * pass): each column of byc[col] != NULL that the first pass did not reach (not materialised, or
 * beyond the leaf's column slots) is materialised, padded to `pos` and given its value there. */
static int insert_named(cs_txn *t, uint32_t table, ref_t *slot, uint64_t pos, const cs_value *const *byc, uint32_t nbyc)
{
    for (uint32_t col = 0; col < nbyc; col++) {
        if (!byc[col]) continue;
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        if (col < cluster_leaf_cols(h) && cluster_leaf_col_ref(h, col)) continue; /* the first pass put it */
        col_def *cd = txn_col_live(t, table, col);
        if (!cd) return cs_fail(CS_NOTFOUND, 0, "no column %u", col);
        uint64_t rows = ((node_hdr *)txn_ptr(t, cluster_keys_ref(h)))->count;
        TRY(leaf_materialise(t, cd, slot, col, rows));
        ref_t *cs = cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *slot), col);
        leaf_spec s = leaf_spec_col(cd);
        TRY(leaf_pad(t, &s, cs, pos));
        TRY(leaf_insert(t, &s, cs, pos, byc[col]));
    }
    return CS_OK;
}

/* Inserts key `key` into the tree at *slot: its row in each column holds the default, or, when
 * byc is not NULL, byc[col] for each col < nbyc where that is not NULL (cluster_insert_row). */
static int insert_rec(cs_txn *t, uint32_t table, ref_t *slot, int64_t key, const cs_value *const *byc, uint32_t nbyc,
                      split *sp, int depth)
{
    sp->happened = false;
    sp->overfull = false;
    node_hdr *h, *first = NULL;
    uint64_t idx = 0;
    TRY(path_step(t, slot, key, depth, &h, &first, &idx));
    if (h->flags & NF_INNER) {
        split csp;
        TRY(insert_rec(t, table, cluster_inner_child_slot(h, idx), key, byc, nbyc, &csp, depth + 1));
        h = (node_hdr *)txn_ptr(t, *slot);
        ref_t *fs = cluster_keys_slot(h);
        TRY(node_at(t, *fs, &first));
        if (key < node_get_int(first, idx)) TRY(node_set_int(t, fs, idx, key));
        if (csp.overfull) TRY(leaf_overflow(t, table, slot, idx, &csp));
        if (!csp.happened) return CS_OK;
        h = (node_hdr *)txn_ptr(t, *slot);
        fs = cluster_keys_slot(h);
        TRY(node_insert_int(t, fs, idx + 1, csp.first));
        TRY(node_insert_int(t, slot, CL_CHILD0 + idx + 1, (int64_t)csp.ref));
        h = (node_hdr *)txn_ptr(t, *slot);
        if (cluster_inner_children(h) > CLUSTER_MAX) TRY(inner_split(t, slot, sp));
        return CS_OK;
    }
    node_hdr *keys;
    TRY(open_leaf_keys(t, h, &keys));
    uint64_t pos = lower_bound(keys, key);
    if (pos < keys->count && node_get_int(keys, pos) == key)
        return cs_fail(CS_EXISTS, 0, "an object with key %lld exists already", (long long)key);
    bool append = pos == keys->count;
    TRY(node_insert_int(t, cluster_keys_slot(h), pos, key));
    /* an appended row is past the end of every sub-node (none is longer than the keys were):
     * no column is touched but those given a value, and any other materialised one is now short
     * (invariant 2) */
    if (append && cluster_leaf_cols(h)) t->short_cols = true;
    for (uint32_t col = 0; (!append || byc) && col < cluster_leaf_cols(h); col++) {
        const cs_value *v = byc && col < nbyc ? byc[col] : NULL;
        if (append && !v) continue;
        ref_t *cs;
        leaf_spec s;
        TRY(leaf_col(t, table, slot, col, &cs, &s));
        if (!cs) continue; /* not materialised: a value goes in with insert_named */
        uint64_t have;
        TRY(leaf_count(t, &s, *cs, &have));
        if (have <= pos) {
            /* the new row is in the column's missing tail: it reads as the default (invariant 2),
             * or the value goes in after the defaults before it */
            if (!v) {
                t->short_cols = true;
                continue;
            }
            TRY(leaf_pad(t, &s, cs, pos));
            TRY(leaf_insert(t, &s, cs, pos, v));
            continue;
        }
        cs_value dv;
        leaf_default(&s, &dv);
        TRY(leaf_insert(t, &s, cs, pos, v ? v : &dv));
    }
    if (byc) TRY(insert_named(t, table, slot, pos, byc, nbyc));
    if (!append) t->epoch++; /* an append moves no row (a sub-node that grows is re-read from its slot) */
    node_hdr *k = (node_hdr *)txn_ptr(t, cluster_keys_ref((node_hdr *)txn_ptr(t, *slot)));
    /* an append (a load in key order) splits at the last row and leaves a full leaf behind; a row
     * inserted in the middle is shared out with a neighbour first (leaf_overflow) */
    if (k->count > CLUSTER_MAX) {
        if (append) TRY(leaf_split(t, table, slot, k->count - 1, sp));
        else sp->overfull = true;
    }
    return CS_OK;
}

int cluster_insert(cs_txn *t, uint32_t table, int64_t key)
{
    return cluster_insert_row(t, table, key, NULL, 0);
}

int cluster_insert_row(cs_txn *t, uint32_t table, int64_t key, const cs_value *const *byc, uint32_t nbyc)
{
    ref_t *root;
    TRY(root_slot(t, table, &root));
    if (!*root) {
        TRY(node_new(t, NF_REFS, 64, 1, root));
        ref_t keys;
        TRY(node_new(t, 0, 0, 0, &keys));
        *cluster_keys_slot((node_hdr *)txn_ptr(t, *root)) = keys;
        t->epoch++;
    }
    split sp;
    TRY(insert_rec(t, table, root, key, byc, nbyc, &sp, 0));
    if (sp.overfull) {
        /* the root is the only leaf: it splits at its middle */
        TRY(root_slot(t, table, &root));
        uint64_t rows = leaf_rows(t, *root);
        TRY(leaf_split(t, table, root, rows / 2, &sp));
    }
    if (sp.happened) {
        int64_t f0;
        TRY(first_key(t, *root, &f0));
        ref_t nr, first;
        TRY(node_new(t, NF_REFS | NF_INNER, 64, 3, &nr));
        TRY(node_new(t, 0, 64, 2, &first));
        node_hdr *fh = (node_hdr *)txn_ptr(t, first);
        packed_set(node_values(fh), 64, 0, f0);
        packed_set(node_values(fh), 64, 1, sp.first);
        node_hdr *rh = (node_hdr *)txn_ptr(t, nr);
        *cluster_keys_slot(rh) = first;
        *cluster_inner_child_slot(rh, 0) = *root;
        *cluster_inner_child_slot(rh, 1) = sp.ref;
        TRY(root_slot(t, table, &root));
        *root = nr;
        t->epoch++;
    }
    return CS_OK;
}

/* Makes column col (definition cd) of leaf *slot materialised: an empty sub-node, short of the
 * leaf's `rows` rows (invariant 2). */
static int leaf_materialise(cs_txn *t, const col_def *cd, ref_t *slot, uint32_t col, uint64_t rows)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (cluster_leaf_col_ref(h, col)) return CS_OK;
    if (col >= cluster_leaf_cols(h)) {
        /* the leaf was written before the column existed: grow it to have the column's slot */
        uint64_t n = h->count, want = CL_COL0 + (uint64_t)col + 1;
        TRY(node_reserve(t, slot, want, 64));
        h = (node_hdr *)txn_ptr(t, *slot);
        for (uint64_t i = n; i < want; i++) node_refs(h)[i] = 0;
        h->count = (uint32_t)want;
        t->epoch++;
    }
    leaf_spec s = leaf_spec_col(cd);
    ref_t nr;
    TRY(leaf_make(t, &s, 0, &nr));
    *cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *slot), col) = nr;
    if (rows) t->short_cols = true; /* rows hold defaults until written (invariant 2) */
    return CS_OK;
}

/* Merges the leaf at right into the leaf at left (both writable, same parent). A column that the
 * right leaf holds values of is padded in the left one to its rows first; one the right leaf
 * does not hold stays short in the left one (invariant 2). */
static int leaf_merge(cs_txn *t, uint32_t table, ref_t *left, ref_t *right)
{
    TRY(leaf_append_rows(t, table, left, right));
    node_free_tree(t, *right); /* now empty */
    return CS_OK;
}

/* leaf_merge's move: every row of the leaf at right goes to the end of the leaf at left; the
 * right leaf is left with no row (its sub-nodes empty). */
static int leaf_append_rows(cs_txn *t, uint32_t table, ref_t *left, ref_t *right)
{
    node_hdr *l = (node_hdr *)txn_ptr(t, *left), *r = (node_hdr *)txn_ptr(t, *right);
    uint64_t lrows = ((node_hdr *)txn_ptr(t, cluster_keys_ref(l)))->count;
    uint32_t cols = cluster_leaf_cols(r);
    leaf_spec ks = leaf_spec_of(CS_TYPE_INT, false, 0);
    TRY(node_cow(t, cluster_keys_slot((node_hdr *)txn_ptr(t, *right))));
    TRY(leaf_move(t, &ks, cluster_keys_slot((node_hdr *)txn_ptr(t, *right)), 0,
                  cluster_keys_slot((node_hdr *)txn_ptr(t, *left))));
    for (uint32_t col = 0; col < cols; col++) {
        node_hdr *rh = (node_hdr *)txn_ptr(t, *right);
        ref_t rr = cluster_leaf_col_ref(rh, col);
        if (!rr) continue;
        col_def *cd = txn_col_live(t, table, col);
        if (!cd) return CORRUPT("leaf holds data for a removed column");
        leaf_spec s = leaf_spec_col(cd);
        uint64_t rn;
        TRY(leaf_count(t, &s, rr, &rn));
        if (!rn) continue;
        TRY(leaf_materialise(t, cd, left, col, lrows));
        TRY(leaf_pad(t, &s, cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *left), col), lrows));
        rh = (node_hdr *)txn_ptr(t, *right);
        TRY(leaf_move(t, &s, cluster_leaf_col_slot(rh, col), 0, cluster_leaf_col_slot((node_hdr *)txn_ptr(t, *left), col)));
    }
    t->short_cols = true; /* the left leaf's columns the right one lacked are short now */
    t->epoch++;
    return CS_OK;
}

typedef struct erase_info {
    bool empty;      /* the node is now empty and must be removed */
    bool small;      /* a leaf under CLUSTER_MAX / 4 rows */
} erase_info;

static uint64_t rows_of(cs_txn *t, ref_t leaf)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, leaf);
    if (h->flags & NF_INNER) return CLUSTER_MAX;
    return ((node_hdr *)txn_ptr(t, cluster_keys_ref(h)))->count;
}

static int erase_rec(cs_txn *t, uint32_t table, ref_t *slot, int64_t key, erase_info *ei, int depth)
{
    ei->empty = ei->small = false;
    node_hdr *h, *first = NULL;
    uint64_t idx = 0;
    TRY(path_step(t, slot, key, depth, &h, &first, &idx));
    t->epoch++; /* an erase shifts rows even when every node on the path was a copy already */
    if (h->flags & NF_INNER) {
        erase_info ci;
        TRY(erase_rec(t, table, cluster_inner_child_slot(h, idx), key, &ci, depth + 1));
        h = (node_hdr *)txn_ptr(t, *slot);
        if (ci.empty) {
            node_free_tree(t, cluster_inner_child(h, idx));
            TRY(node_erase(t, cluster_keys_slot(h), idx));
            TRY(node_erase(t, slot, CL_CHILD0 + idx));
            h = (node_hdr *)txn_ptr(t, *slot);
            if (cluster_inner_children(h) == 0) ei->empty = true;
            return CS_OK;
        }
        int64_t fk;
        TRY(first_key(t, cluster_inner_child(h, idx), &fk));
        TRY(node_set_int(t, cluster_keys_slot(h), idx, fk));
        if (ci.small) {
            h = (node_hdr *)txn_ptr(t, *slot);
            uint64_t n = cluster_inner_children(h);
            uint64_t l = idx, r = idx + 1;
            if (r >= n) { if (idx == 0) return CS_OK; l = idx - 1; r = idx; }
            ref_t lr = cluster_inner_child(h, l), rr = cluster_inner_child(h, r);
            node_hdr *lh, *rh;
            TRY(node_at(t, lr, &lh));
            TRY(node_at(t, rr, &rh));
            if ((lh->flags & NF_INNER) || (rh->flags & NF_INNER)) return CS_OK;
            if (rows_of(t, lr) + rows_of(t, rr) > CLUSTER_MAX) return CS_OK;
            TRY(node_cow(t, cluster_inner_child_slot((node_hdr *)txn_ptr(t, *slot), l)));
            TRY(node_cow(t, cluster_inner_child_slot((node_hdr *)txn_ptr(t, *slot), r)));
            h = (node_hdr *)txn_ptr(t, *slot);
            TRY(leaf_merge(t, table, cluster_inner_child_slot(h, l), cluster_inner_child_slot(h, r)));
            h = (node_hdr *)txn_ptr(t, *slot);
            TRY(node_erase(t, cluster_keys_slot(h), r));
            TRY(node_erase(t, slot, CL_CHILD0 + r));
        }
        return CS_OK;
    }
    node_hdr *keys;
    TRY(open_leaf_keys(t, h, &keys));
    uint64_t pos = lower_bound(keys, key);
    if (pos >= keys->count || node_get_int(keys, pos) != key)
        return cs_fail(CS_NOTFOUND, 0, "no object with key %lld", (long long)key);
    for (uint32_t col = 0; col < cluster_leaf_cols(h); col++) {
        ref_t *cs;
        leaf_spec s;
        TRY(leaf_col(t, table, slot, col, &cs, &s));
        if (!cs) continue;
        uint64_t have;
        TRY(leaf_count(t, &s, *cs, &have));
        if (pos < have) TRY(leaf_erase(t, &s, cs, pos)); /* else: in the short tail */
    }
    ref_t *ks = cluster_keys_slot((node_hdr *)txn_ptr(t, *slot));
    TRY(node_erase(t, ks, pos));
    uint64_t rows = ((node_hdr *)txn_ptr(t, *ks))->count;
    ei->empty = rows == 0;
    ei->small = rows < CLUSTER_MAX / 4;
    return CS_OK;
}

int cluster_erase(cs_txn *t, uint32_t table, int64_t key)
{
    ref_t *root;
    TRY(root_slot(t, table, &root));
    if (!*root) return cs_fail(CS_NOTFOUND, 0, "no object with key %lld", (long long)key);
    erase_info ei;
    TRY(erase_rec(t, table, root, key, &ei, 0));
    TRY(root_slot(t, table, &root));
    if (ei.empty) {
        node_free_tree(t, *root);
        *root = 0;
    } else {
        /* collapse a root with one child */
        for (;;) {
            node_hdr *h = (node_hdr *)txn_ptr(t, *root);
            if (!(h->flags & NF_INNER) || cluster_inner_children(h) != 1) break;
            ref_t child = cluster_inner_child(h, 0);
            node_free(t, cluster_keys_ref(h));
            node_free(t, *root);
            *root = child;
        }
    }
    t->epoch++;
    return CS_OK;
}

/* Materialises column `col` of the leaf at *leaf_slot. */
int cluster_materialise(cs_txn *t, uint32_t table, ref_t *leaf_slot, uint32_t col)
{
    col_def *cd;
    TRY(txn_col(t, table, col, NULL, &cd));
    node_hdr *h = (node_hdr *)txn_ptr(t, *leaf_slot);
    uint64_t rows = ((node_hdr *)txn_ptr(t, cluster_keys_ref(h)))->count;
    return leaf_materialise(t, cd, leaf_slot, col, rows);
}

/* ---- removing a column's data ------------------------------------------------------------- */

static int drop_col_rec(cs_txn *t, ref_t *slot, uint32_t col, int depth)
{
    if (depth > TREE_DEPTH_MAX) return CORRUPT("cluster tree too deep");
    if (!*slot) return CS_OK;
    TRY(node_cow(t, slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (h->flags & NF_INNER) {
        for (uint32_t i = 0; i < cluster_inner_children(h); i++) {
            TRY(drop_col_rec(t, cluster_inner_child_slot(h, i), col, depth + 1));
            h = (node_hdr *)txn_ptr(t, *slot);
        }
        return CS_OK;
    }
    ref_t cr = cluster_leaf_col_ref(h, col);
    if (cr) {
        node_free_tree(t, cr);
        *cluster_leaf_col_slot(h, col) = 0;
    }
    return CS_OK;
}

int cluster_drop_col(cs_txn *t, uint32_t table, uint32_t col)
{
    ref_t *root;
    TRY(root_slot(t, table, &root));
    TRY(drop_col_rec(t, root, col, 0));
    t->epoch++;
    return CS_OK;
}

/* ---- reading a row's value; iterating rows ------------------------------------------------ */

int cluster_leaf_get(cs_txn *t, node_hdr *leaf, uint32_t row, const col_def *c, uint32_t col, cs_value *out)
{
    ref_t r = cluster_leaf_col_ref(leaf, col);
    if (r && tagged(r)) return CORRUPT("column slot holds a number");
    leaf_spec s = leaf_spec_col(c);
    if (r && t->writing) {
        /* a write transaction's sub-node may be short of the leaf's rows (invariant 2) */
        uint64_t have;
        TRY(leaf_count(t, &s, r, &have));
        if (row >= have) r = 0;
    }
    if (!r) {
        leaf_default(&s, out);
        return CS_OK;
    }
    return leaf_get(t, &s, r, row, out);
}

int cluster_leaf_get_run(cs_txn *t, ref_t root, const int64_t *keys, size_t max, const col_def *c, uint32_t col,
                         node_hdr **leaf, uint32_t *row, cs_value *out, size_t *got)
{
    *got = 0;
    if (!max) return CS_OK;
    if (t->writing) return cs_fail(CS_MISUSE, 0, "cluster_leaf_get_run: read transactions only");
    node_hdr *l = *leaf, *kn = NULL;
    uint32_t r = 0;
    bool at = false;
    if (l) {
        TRY(open_leaf_keys(t, l, &kn));
        r = *row + 1;
        at = r < kn->count && node_get_int(kn, r) == keys[0];
    }
    if (!at) {
        int rc = cluster_find(t, root, keys[0], &l, &r);
        if (rc == CS_NOTFOUND) return cs_fail(CS_NOTFOUND, 0, "no object with key %lld", (long long)keys[0]);
        TRY(rc);
        TRY(open_leaf_keys(t, l, &kn));
    }
    /* the keys that follow in the leaf's rows */
    size_t m = 1;
    uint64_t room = kn->count - r;
    while (m < max && m < room && node_get_int(kn, r + m) == keys[m]) m++;
    ref_t cr = cluster_leaf_col_ref(l, col);
    if (cr && tagged(cr)) return CORRUPT("column slot holds a number");
    leaf_spec s = leaf_spec_col(c);
    if (!cr) {
        for (size_t j = 0; j < m; j++) leaf_default(&s, &out[j]);
    } else {
        TRY(leaf_get_run(t, &s, cr, r, m, out));
    }
    *leaf = l;
    *row = r + (uint32_t)m - 1;
    *got = m;
    return CS_OK;
}

/* The sub-node of column `col` that holds `row`'s value, or 0 where the row has none: no
 * sub-node, or the short tail a write leaves (invariant 2: a default, no collection, no
 * backlinks). */
static int row_sub_node(cs_txn *t, node_hdr *leaf, uint32_t row, const leaf_spec *s, uint32_t col, ref_t *out)
{
    ref_t r = cluster_leaf_col_ref(leaf, col);
    *out = 0;
    if (!r) return CS_OK;
    if (tagged(r)) return CORRUPT("column slot holds a number");
    if (t->writing) {
        uint64_t have;
        TRY(leaf_count(t, s, r, &have));
        if (row >= have) return CS_OK;
    }
    *out = r;
    return CS_OK;
}

int cluster_leaf_get_ref(cs_txn *t, node_hdr *leaf, uint32_t row, const leaf_spec *s, uint32_t col, uint64_t *out)
{
    ref_t r;
    *out = 0;
    TRY(row_sub_node(t, leaf, row, s, col, &r));
    return r ? leaf_get_ref(t, s, r, row, out) : CS_OK;
}

int cluster_leaf_get_identity(cs_txn *t, node_hdr *leaf, uint32_t row, const leaf_spec *s, uint32_t col,
                              uint32_t *out)
{
    ref_t r;
    *out = 0;
    TRY(row_sub_node(t, leaf, row, s, col, &r));
    return r ? leaf_get_identity(t, s, r, row, out) : CS_OK;
}

/* ---- padding short sub-nodes before a commit (invariant 2) ---------------------------------- */

static int fill_rec(cs_txn *t, uint32_t table, ref_t *slot, int depth)
{
    if (depth > TREE_DEPTH_MAX) return CORRUPT("cluster tree too deep");
    if (!*slot || !IS_SLAB(*slot)) return CS_OK; /* a node this write did not copy is committed and full */
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (h->flags & NF_INNER) {
        for (uint32_t i = 0; i < cluster_inner_children(h); i++) {
            if (!IS_SLAB(cluster_inner_child(h, i))) continue; /* committed and full */
            TRY(fill_rec(t, table, cluster_inner_child_slot(h, i), depth + 1));
            h = (node_hdr *)txn_ptr(t, *slot);
        }
        return CS_OK;
    }
    uint64_t rows = ((node_hdr *)txn_ptr(t, cluster_keys_ref(h)))->count;
    for (uint32_t col = 0; col < cluster_leaf_cols(h); col++) {
        ref_t *cs;
        leaf_spec s;
        TRY(leaf_col(t, table, slot, col, &cs, &s));
        if (!cs) continue;
        TRY(leaf_pad(t, &s, cs, rows));
    }
    return CS_OK;
}

/* Runs `rec` over the cluster tree of every live table whose root this transaction changed (a
 * root still in the file was not written, so no node below it needs the pass). */
static int each_changed_tree(cs_txn *t, int (*rec)(cs_txn *, uint32_t, ref_t *, int))
{
    for (uint32_t table = 0; table < t->schema->ntables; table++) {
        if (!txn_table_live(t, table)) continue;
        ref_t root;
        TRY(table_root(t, table, &root));
        if (!root || !IS_SLAB(root)) continue;
        ref_t *rs;
        TRY(root_slot(t, table, &rs));
        TRY(rec(t, table, rs, 0));
    }
    return CS_OK;
}

int cluster_fill_short(cs_txn *t)
{
    if (!t->short_cols) return CS_OK;
    TRY(each_changed_tree(t, fill_rec));
    t->short_cols = false;
    t->epoch++;
    return CS_OK;
}

/* ---- packing dirty integer nodes before a commit (FORMAT.md §3, §6.2) ----------------------- */

static int pack_rec(cs_txn *t, uint32_t table, ref_t *slot, int depth)
{
    if (depth > TREE_DEPTH_MAX) return CORRUPT("cluster tree too deep");
    if (!*slot || !IS_SLAB(*slot)) return CS_OK; /* committed nodes were packed when written */
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (IS_SLAB(cluster_keys_ref(h))) TRY(node_pack(t, cluster_keys_slot(h)));
    if (h->flags & NF_INNER) {
        /* only the children this transaction copied (most of an inner node's are not) */
        for (uint32_t i = 0; i < cluster_inner_children(h); i++) {
            if (!IS_SLAB(cluster_inner_child(h, i))) continue;
            TRY(pack_rec(t, table, cluster_inner_child_slot(h, i), depth + 1));
            h = (node_hdr *)txn_ptr(t, *slot);
        }
        return CS_OK;
    }
    for (uint32_t col = 0; col < cluster_leaf_cols(h); col++) {
        if (!IS_SLAB(cluster_leaf_col_ref(h, col))) continue; /* unchanged (or not materialised) */
        ref_t *cs;
        leaf_spec s;
        TRY(leaf_col(t, table, slot, col, &cs, &s));
        if (!cs || (s.kind != LK_INT && s.kind != LK_LINK)) continue;
        TRY(node_pack(t, cs));
        h = (node_hdr *)txn_ptr(t, *slot);
    }
    return CS_OK;
}

int cluster_pack(cs_txn *t)
{
    TRY(each_changed_tree(t, pack_rec));
    t->epoch++;
    return CS_OK;
}

void cluster_iter_init(cs_iter *it, cs_txn *t, uint32_t table)
{
    memset(it, 0, sizeof *it);
    it->txn = t;
    it->table = table;
    it->next_key = INT64_MIN;
}

int cluster_iter_seek(cs_iter *it, int64_t *key, node_hdr **leaf, uint32_t *row)
{
    cs_txn *t = it->txn;
    ref_t root;
    TRY(table_root(t, it->table, &root));
    int rc = cluster_seek(t, root, it->next_key, leaf, row, key);
    if (rc == CS_NOTFOUND) {
        it->done = 1;
        return CS_NOTFOUND;
    }
    TRY(rc);
    it->leaf = *leaf;
    it->row = *row + 1;
    it->epoch = t->epoch;
    it->next_key = *key + 1;
    return CS_OK;
}

/* ---- visiting every leaf -------------------------------------------------------------------- */

static int each_leaf_rec(cs_txn *t, ref_t r, int (*fn)(void *ctx, node_hdr *leaf), void *ctx, int depth)
{
    if (depth > TREE_DEPTH_MAX) return CORRUPT("cluster tree too deep");
    if (!r) return CS_OK;
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (!(h->flags & NF_REFS) || h->count < 1) return CORRUPT("cluster node is malformed");
    if (!(h->flags & NF_INNER)) return fn(ctx, h);
    for (uint32_t i = 0; i < cluster_inner_children(h); i++)
        TRY(each_leaf_rec(t, cluster_inner_child(h, i), fn, ctx, depth + 1));
    return CS_OK;
}

int cluster_each_leaf(cs_txn *t, ref_t root, int (*fn)(void *ctx, node_hdr *leaf), void *ctx)
{
    return each_leaf_rec(t, root, fn, ctx, 0);
}
