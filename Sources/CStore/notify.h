/*
 * notify.h -- the notifier's private header, shared by notify.c (notifier, change summary,
 * watches) and notify_diff.c (key-list diffs and the accumulation of changes between takes).
 */
#ifndef CSTORE_NOTIFY_H
#define CSTORE_NOTIFY_H

#include "internal.h"

typedef struct idxvec {
    size_t *v;
    size_t n, cap;
} idxvec;

typedef struct keyvec {
    int64_t *v;
    size_t n, cap;
} keyvec;

int idxvec_push(idxvec *x, size_t i);
int keyvec_push(keyvec *x, int64_t k);
/** Sorts ascending and drops duplicates. */
void keyvec_sort_unique(keyvec *x);
/** Whether a sorted keyvec holds k. */
bool keyvec_has(const keyvec *x, int64_t k);
/** Position of k in an ascending array, or SIZE_MAX. */
size_t keys_find(const int64_t *v, size_t n, int64_t k);

/* One round's diff from a previous key list to a new one: deletions (previous positions),
 * insertions (new positions), modifications (previous positions of elements kept in place),
 * each ascending. */
typedef struct rdiff {
    idxvec del, ins, mod;
} rdiff;

void rdiff_reset(rdiff *d);
void rdiff_free(rdiff *d);
/** Diff of two ascending key lists (a merge, O(na + nb)); `dirty` (sorted) gives modifications. */
int diff_ordered_keys(const int64_t *a, size_t na, const int64_t *b, size_t nb, const keyvec *dirty, rdiff *out);
/** Diff of two key lists in any order, duplicates allowed: the longest run of elements kept in
 *  the same relative order stays (a longest-increasing-subsequence pass, O(n log n)); every other
 *  kept element is a deletion plus an insertion. */
int diff_keys(const int64_t *a, size_t na, const int64_t *b, size_t nb, const keyvec *dirty, rdiff *out);

/** The change set of a collection nested in a Mixed value from its content in one version
 *  (`old`) to another (`now`), both of the same kind (notify_nested.c): a list by a
 *  longest-common-subsequence pass, a map by key; positions as in rdiff. */
int nested_diff(cs_coll *old, cs_coll *now, rdiff *out);
/** Whether element i of `old` and element j of `now` (positions; maps in key order), one of them
 *  a nested collection, differ in content; false when neither is a nested collection. */
int nested_elem_changed(cs_coll *old, size_t i, cs_coll *now, size_t j, bool *changed);

/* The changes accumulated since the last take, as the origin of each current element: its
 * position at the last take, or -1 when it arrived since, with a modified flag. While nothing
 * moved ("ident") only the modified positions are kept, so a commit that modifies one element
 * of a large collection costs nothing in its size. */
typedef struct pending {
    size_t nbase;     /* length at the last take */
    bool ident;       /* nothing inserted, deleted or moved since: origin[i] == i */
    idxvec modset;    /* ident: modified positions (unsorted, may repeat) */
    int64_t *origin;  /* !ident: per current element, its position at the last take or -1 */
    uint8_t *mod;     /* !ident: per current element, modified */
    size_t n, cap;    /* !ident: current length, allocated */
} pending;

void pending_reset(pending *p, size_t n);
void pending_free(pending *p);
size_t pending_len(const pending *p);
bool pending_any(const pending *p);
/** Folds a round's diff (against the current elements) in. */
int pending_apply(pending *p, const rdiff *d);
int pending_insert(pending *p, size_t pos);
int pending_erase(pending *p, size_t pos);
int pending_modify(pending *p, size_t pos);
int pending_clear(pending *p);
/** Hands out deletions, insertions and modifications (old and new positions), then resets. */
int pending_take(pending *p, idxvec *del, idxvec *ins, idxvec *mod, idxvec *modnew);

#endif
