/*
 * bptree.c -- positional B+ trees: the elements of a List, Set or Map (keys and values are two
 * trees of equal length), indexed by position (docs/FORMAT.md §6.4).
 *
 *   leaf:  any leaf encoding of leaf.c (never NF_INNER)
 *   inner: NF_REFS|NF_INNER [sizes, child0, child1, ...]   sizes = packed running totals
 *
 * Invariants:
 *  1. sizes[i] is the number of elements in children 0..i; the last equals the tree's size.
 *  2. No child is empty; an empty collection is the ref 0.
 */
#include "node.h"
#include "leaf.h"
#include "bptree.h"


static int open_inner(cs_txn *t, node_hdr *h, node_hdr **sizes)
{
    if (!(h->flags & NF_REFS) || h->count < 2) return CORRUPT("collection inner node is malformed");
    TRY(node_at(t, node_refs(h)[0], sizes));
    if (((*sizes)->flags & (NF_REFS | NF_BYTES | NF_NULLS)) || (*sizes)->count + 1 != h->count)
        return CORRUPT("collection inner node sizes are malformed");
    return CS_OK;
}

/* Child holding element i (i < size), and i's index inside it. */
static uint64_t child_at(node_hdr *sizes, uint64_t i, uint64_t *local)
{
    uint64_t lo = 0, hi = sizes->count;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if ((uint64_t)node_get_int(sizes, mid) <= i) lo = mid + 1;
        else hi = mid;
    }
    uint64_t before = lo ? (uint64_t)node_get_int(sizes, lo - 1) : 0;
    *local = i - before;
    return lo;
}

int bpt_size(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t *out)
{
    *out = 0;
    if (!root) return CS_OK;
    node_hdr *h;
    TRY(node_at(t, root, &h));
    if (h->flags & NF_INNER) {
        node_hdr *sz;
        TRY(open_inner(t, h, &sz));
        int64_t n = node_get_int(sz, sz->count - 1);
        if (n < 0) return CORRUPT("negative collection size");
        *out = (uint64_t)n;
        return CS_OK;
    }
    return leaf_count(t, s, root, out);
}

/* Finds the leaf holding element i (read-only). */
static int find_leaf(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, ref_t *leaf, uint64_t *local)
{
    ref_t r = root;
    for (int d = 0; d < TREE_DEPTH_MAX; d++) {
        if (!r) return cs_fail(CS_RANGE, 0, "index %llu out of range", (unsigned long long)i);
        node_hdr *h;
        TRY(node_at(t, r, &h));
        if (!(h->flags & NF_INNER)) {
            uint64_t n;
            TRY(leaf_count(t, s, r, &n));
            if (i >= n) return cs_fail(CS_RANGE, 0, "index %llu out of range (size %llu)", (unsigned long long)i, (unsigned long long)n);
            *leaf = r;
            *local = i;
            return CS_OK;
        }
        node_hdr *sz;
        TRY(open_inner(t, h, &sz));
        uint64_t c = child_at(sz, i, &i);
        if (c >= sz->count) return cs_fail(CS_RANGE, 0, "index out of range");
        r = node_refs(h)[1 + c];
    }
    return CORRUPT("collection tree deeper than %d", TREE_DEPTH_MAX);
}

int bpt_get(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, cs_value *out)
{
    ref_t leaf;
    uint64_t local;
    TRY(find_leaf(t, s, root, i, &leaf, &local));
    return leaf_get(t, s, leaf, local, out);
}

int bpt_get_ref(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, uint64_t *out)
{
    ref_t leaf;
    uint64_t local;
    TRY(find_leaf(t, s, root, i, &leaf, &local));
    return leaf_get_ref(t, s, leaf, local, out);
}

/* Writable path to the leaf holding element i. */
static int write_leaf(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, ref_t **leaf, uint64_t *local)
{
    ref_t *slot = root;
    for (int d = 0; d < TREE_DEPTH_MAX; d++) {
        if (!*slot) return cs_fail(CS_RANGE, 0, "index %llu out of range", (unsigned long long)i);
        TRY(node_cow(t, slot));
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        if (!(h->flags & NF_INNER)) {
            uint64_t n;
            TRY(leaf_count(t, s, *slot, &n));
            if (i >= n) return cs_fail(CS_RANGE, 0, "index %llu out of range (size %llu)", (unsigned long long)i, (unsigned long long)n);
            *leaf = slot;
            *local = i;
            return CS_OK;
        }
        node_hdr *sz;
        TRY(open_inner(t, h, &sz));
        uint64_t c = child_at(sz, i, &i);
        if (c >= sz->count) return cs_fail(CS_RANGE, 0, "index out of range");
        slot = &node_refs(h)[1 + c];
    }
    return CORRUPT("collection tree deeper than %d", TREE_DEPTH_MAX);
}

int bpt_set(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, const cs_value *v)
{
    ref_t *leaf;
    uint64_t local;
    TRY(write_leaf(t, s, root, i, &leaf, &local));
    return leaf_set(t, s, leaf, local, v);
}

int bpt_set_ref(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, uint64_t v)
{
    ref_t *leaf;
    uint64_t local;
    TRY(write_leaf(t, s, root, i, &leaf, &local));
    return leaf_set_ref(t, s, leaf, local, v);
}

int bpt_get_identity(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, uint32_t *out)
{
    ref_t leaf;
    uint64_t local;
    TRY(find_leaf(t, s, root, i, &leaf, &local));
    return leaf_get_identity(t, s, leaf, local, out);
}

int bpt_set_identity(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, uint32_t identity)
{
    ref_t *leaf;
    uint64_t local;
    TRY(write_leaf(t, s, root, i, &leaf, &local));
    return leaf_set_identity(t, s, leaf, local, identity);
}

typedef struct bsplit {
    bool happened; /* a right sibling was made */
    ref_t ref;     /* its ref */
    uint64_t left; /* elements left in the original node */
} bsplit;

static int node_elems(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t *n)
{
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (h->flags & NF_INNER) {
        node_hdr *sz;
        TRY(open_inner(t, h, &sz));
        *n = (uint64_t)node_get_int(sz, sz->count - 1);
        return CS_OK;
    }
    return leaf_count(t, s, r, n);
}

static int rebuild_sizes(cs_txn *t, const leaf_spec *s, ref_t *slot)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    uint64_t nc = h->count - 1;
    ref_t sizes;
    TRY(node_new(t, 0, 64, nc, &sizes));
    uint64_t total = 0;
    for (uint64_t c = 0; c < nc; c++) {
        uint64_t n;
        h = (node_hdr *)txn_ptr(t, *slot);
        TRY(node_elems(t, s, node_refs(h)[1 + c], &n));
        total += n;
        packed_set(node_values((node_hdr *)txn_ptr(t, sizes)), 64, c, (int64_t)total);
    }
    h = (node_hdr *)txn_ptr(t, *slot);
    node_free(t, node_refs(h)[0]);
    node_refs(h)[0] = sizes;
    return CS_OK;
}

static int insert_rec(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v,
                      bsplit *sp, int depth)
{
    if (depth >= TREE_DEPTH_MAX) return CORRUPT("collection tree deeper than %d", TREE_DEPTH_MAX);
    sp->happened = false;
    TRY(node_cow(t, slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (!(h->flags & NF_INNER)) {
        uint64_t n;
        TRY(leaf_count(t, s, *slot, &n));
        if (i > n) return cs_fail(CS_RANGE, 0, "index %llu out of range (size %llu)", (unsigned long long)i, (unsigned long long)n);
        TRY(leaf_insert(t, s, slot, i, v));
        if (n + 1 > BPT_MAX) {
            uint64_t from = (i == n) ? n : (n + 1) / 2;
            ref_t nl;
            TRY(leaf_make(t, s, 0, &nl));
            TRY(leaf_move(t, s, slot, from, &nl));
            sp->happened = true;
            sp->ref = nl;
            sp->left = from;
        }
        return CS_OK;
    }
    node_hdr *sz;
    TRY(open_inner(t, h, &sz));
    uint64_t total = (uint64_t)node_get_int(sz, sz->count - 1);
    if (i > total) return cs_fail(CS_RANGE, 0, "index %llu out of range (size %llu)", (unsigned long long)i, (unsigned long long)total);
    uint64_t local, c;
    if (i == total) {
        c = sz->count - 1;
        local = i - (c ? (uint64_t)node_get_int(sz, c - 1) : 0);
    } else {
        c = child_at(sz, i, &local);
    }
    bsplit csp;
    TRY(insert_rec(t, s, &node_refs(h)[1 + c], local, v, &csp, depth + 1));
    if (csp.happened) TRY(node_insert_int(t, slot, 2 + c, (int64_t)csp.ref));
    h = (node_hdr *)txn_ptr(t, *slot);
    if (!csp.happened) {
        /* bump the running totals from c on */
        uint64_t *e = node_refs(h);
        TRY(node_cow(t, &e[0]));
        node_hdr *szw = (node_hdr *)txn_ptr(t, e[0]);
        for (uint64_t k = c; k < szw->count; k++)
            packed_set(node_values(szw), szw->width, k, node_get_int(szw, k) + 1);
        return CS_OK;
    }
    TRY(rebuild_sizes(t, s, slot));
    h = (node_hdr *)txn_ptr(t, *slot);
    if (h->count - 1 > BPT_MAX) {
        uint64_t nc = h->count - 1, from = nc / 2;
        ref_t ni;
        TRY(node_new(t, NF_REFS | NF_INNER, 64, 1, &ni));
        TRY(node_new(t, 0, 64, 0, &node_refs((node_hdr *)txn_ptr(t, ni))[0]));
        for (uint64_t k = from; k < nc; k++) {
            h = (node_hdr *)txn_ptr(t, *slot);
            uint64_t child = node_refs(h)[1 + k];
            TRY(node_insert_int(t, &ni, ((node_hdr *)txn_ptr(t, ni))->count, (int64_t)child));
        }
        TRY(node_truncate(t, slot, 1 + from));
        TRY(rebuild_sizes(t, s, slot));
        TRY(rebuild_sizes(t, s, &ni));
        uint64_t left;
        TRY(node_elems(t, s, *slot, &left));
        sp->happened = true;
        sp->ref = ni;
        sp->left = left;
    }
    return CS_OK;
}

int bpt_insert(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, const cs_value *v)
{
    if (!*root) {
        if (i != 0) return cs_fail(CS_RANGE, 0, "index %llu out of range (size 0)", (unsigned long long)i);
        TRY(leaf_make(t, s, 0, root));
    }
    bsplit sp;
    TRY(insert_rec(t, s, root, i, v, &sp, 0));
    if (sp.happened) {
        ref_t nr, sizes;
        TRY(node_new(t, NF_REFS | NF_INNER, 64, 3, &nr));
        TRY(node_new(t, 0, 64, 2, &sizes));
        uint64_t *e = node_refs((node_hdr *)txn_ptr(t, nr));
        e[0] = sizes;
        e[1] = *root;
        e[2] = sp.ref;
        *root = nr;
        TRY(rebuild_sizes(t, s, root));
    }
    return CS_OK;
}

static int erase_rec(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, bool *empty, int depth)
{
    if (depth >= TREE_DEPTH_MAX) return CORRUPT("collection tree deeper than %d", TREE_DEPTH_MAX);
    *empty = false;
    TRY(node_cow(t, slot));
    node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
    if (!(h->flags & NF_INNER)) {
        uint64_t n;
        TRY(leaf_count(t, s, *slot, &n));
        if (i >= n) return cs_fail(CS_RANGE, 0, "index %llu out of range (size %llu)", (unsigned long long)i, (unsigned long long)n);
        TRY(leaf_erase(t, s, slot, i));
        *empty = n == 1;
        return CS_OK;
    }
    node_hdr *sz;
    TRY(open_inner(t, h, &sz));
    uint64_t local;
    uint64_t c = child_at(sz, i, &local);
    if (c >= sz->count) return cs_fail(CS_RANGE, 0, "index out of range");
    bool cempty;
    TRY(erase_rec(t, s, &node_refs(h)[1 + c], local, &cempty, depth + 1));
    h = (node_hdr *)txn_ptr(t, *slot);
    uint64_t *e = node_refs(h);
    if (cempty) {
        node_free_tree(t, e[1 + c]);
        TRY(node_erase(t, &e[0], c));
        TRY(node_erase(t, slot, 1 + c));
        h = (node_hdr *)txn_ptr(t, *slot);
        if (h->count == 1) {
            *empty = true;
            return CS_OK;
        }
        return rebuild_sizes(t, s, slot);
    }
    TRY(node_cow(t, &e[0]));
    node_hdr *szw = (node_hdr *)txn_ptr(t, e[0]);
    for (uint64_t k = c; k < szw->count; k++)
        packed_set(node_values(szw), szw->width, k, node_get_int(szw, k) - 1);
    return CS_OK;
}

int bpt_erase(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i)
{
    if (!*root) return cs_fail(CS_RANGE, 0, "index %llu out of range (size 0)", (unsigned long long)i);
    bool empty;
    TRY(erase_rec(t, s, root, i, &empty, 0));
    if (empty) {
        node_free_tree(t, *root);
        *root = 0;
        return CS_OK;
    }
    tree_collapse_root(t, root);
    return CS_OK;
}

int bpt_leaf_slot(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, ref_t **leaf, uint64_t *local)
{
    return write_leaf(t, s, root, i, leaf, local);
}
