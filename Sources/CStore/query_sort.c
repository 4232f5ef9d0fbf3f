/*
 * query_sort.c -- SORT on one column of the queried objects (docs/ARCHITECTURE.md, Sorting on
 * one column): the general sort (query.c, order_keys) reads every value through the query
 * engine, copies each string into its own allocation and compares through cs_value_compare;
 * this path reads the column once (in a read transaction a run of rows of one leaf at a time,
 * cluster_leaf_get_run) into an array of fixed-size items and compares integers.
 *
 * Each item holds a 64-bit key whose unsigned order is the values' order
 * (docs/ARCHITECTURE.md, Values and their order):
 *   - Int: the value with its sign bit flipped; Bool: 0 or 1;
 *   - Float and Double: the IEEE bits made monotonic (negative numbers complemented, positive
 *     ones with the sign bit set), -0.0 taken as 0.0 (they compare equal), every NaN 0 (NaN
 *     equals NaN and sorts before every number, and no number's key is 0);
 *   - Timestamp: the seconds with the sign bit flipped, the nanoseconds compared on a tie;
 *   - String and Binary: the first 8 bytes big-endian, zero-padded. Equal keys mean equal first
 *     bytes up to the shorter length, with only zero bytes after it up to 8; the bytes after the
 *     eighth (copied into one shared buffer) and then the lengths decide, as memcmp then length
 *     does in cs_value_compare.
 * Null sorts before every value. Items that compare equal keep the order of the keys given, in
 * both directions, as the general sort does: the non-null items are ordered by their 64-bit keys
 * (complemented when descending) with a stable LSD radix sort, 11 bits a pass, skipping the
 * passes whose digit is the same for every item; runs of equal keys that the key does not
 * decide (strings longer than 8 bytes, Timestamps) are then ordered by the full comparison with
 * a merge sort that takes the left item on a tie.
 */
#include "query_int.h"
#include "cluster.h"

#include <math.h>
#include <pthread.h>

enum { SK_NUM, SK_TS, SK_BYTES };

typedef struct fsort_item {
    uint64_t pre;   /* order key (see above) */
    int64_t key;    /* object */
    uint64_t tail;  /* SK_BYTES: offset of the bytes after the eighth in the shared buffer */
    uint32_t len;   /* SK_BYTES: length in bytes */
    int32_t nsec;   /* SK_TS: nanoseconds */
    uint32_t null;  /* 1 for null */
    uint32_t pad;
} fsort_item;

typedef struct fsort {
    int kind;
    int dir;            /* 1 ascending, -1 descending */
    const uint8_t *buf; /* the bytes after the eighth of each string */
} fsort;

static inline int fsort_cmp(const fsort *s, const fsort_item *a, const fsort_item *b)
{
    int c;
    if (a->null != b->null) {
        c = a->null ? -1 : 1;
    } else if (a->null) {
        return 0;
    } else if (a->pre != b->pre) {
        c = a->pre < b->pre ? -1 : 1;
    } else if (s->kind == SK_BYTES) {
        size_t an = a->len > 8 ? a->len - 8 : 0, bn = b->len > 8 ? b->len - 8 : 0, n = an < bn ? an : bn;
        c = n ? memcmp(s->buf + a->tail, s->buf + b->tail, n) : 0;
        if (!c) c = (a->len > b->len) - (a->len < b->len);
        else c = c < 0 ? -1 : 1;
    } else if (s->kind == SK_TS) {
        c = (a->nsec > b->nsec) - (a->nsec < b->nsec);
    } else {
        return 0;
    }
    return c * s->dir;
}

/* Stable merge sort of v[0..n) through tmp (n items). */
static void fsort_run(const fsort *s, fsort_item *v, fsort_item *tmp, size_t n)
{
    if (n <= 12) {
        for (size_t i = 1; i < n; i++) {
            fsort_item x = v[i];
            size_t j = i;
            while (j > 0 && fsort_cmp(s, &x, &v[j - 1]) < 0) { v[j] = v[j - 1]; j--; }
            v[j] = x;
        }
        return;
    }
    size_t h = n / 2;
    fsort_run(s, v, tmp, h);
    fsort_run(s, v + h, tmp, n - h);
    if (fsort_cmp(s, &v[h], &v[h - 1]) >= 0) return; /* already in order */
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) tmp[o++] = fsort_cmp(s, &v[j], &v[i]) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[o++] = v[i++];
    while (j < n) tmp[o++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

/* A radix item: the order key and the item's index. */
typedef struct rsort_pair {
    uint64_t k;
    size_t i;
} rsort_pair;

enum { RDIGIT = 11, RBUCKETS = 1 << RDIGIT, RPASSES = (64 + RDIGIT - 1) / RDIGIT };

/* Stable sort of v[0..n) by k through tmp (n pairs); returns whichever of the two holds the
 * result. */
static rsort_pair *rsort_run(rsort_pair *v, rsort_pair *tmp, size_t n, size_t (*count)[RBUCKETS])
{
    memset(count, 0, sizeof(size_t) * RPASSES * RBUCKETS);
    for (size_t i = 0; i < n; i++) {
        uint64_t k = v[i].k;
        for (int p = 0; p < RPASSES; p++) count[p][(k >> (p * RDIGIT)) & (RBUCKETS - 1)]++;
    }
    for (int p = 0; p < RPASSES; p++) {
        size_t *c = count[p];
        uint64_t d0 = (v[0].k >> (p * RDIGIT)) & (RBUCKETS - 1);
        if (c[d0] == n) continue; /* every item has this digit: the pass changes nothing */
        size_t sum = 0;
        for (size_t b = 0; b < RBUCKETS; b++) {
            size_t x = c[b];
            c[b] = sum;
            sum += x;
        }
        for (size_t i = 0; i < n; i++) tmp[c[(v[i].k >> (p * RDIGIT)) & (RBUCKETS - 1)]++] = v[i];
        rsort_pair *t = v;
        v = tmp;
        tmp = t;
    }
    return v;
}

/* Whether sorted pair j has the same key as a neighbour (it is in a run the key does not decide). */
static inline bool rsort_tied(const rsort_pair *v, size_t n, size_t j)
{
    return (j + 1 < n && v[j + 1].k == v[j].k) || (j > 0 && v[j - 1].k == v[j].k);
}

static uint64_t double_key(double d)
{
    if (isnan(d)) return 0;
    if (d == 0) d = 0; /* -0.0 */
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u >> 63 ? ~u : u | (1ull << 63);
}

/* The item of one value of the column's type (its bytes after the eighth appended to *buf). */
static int fsort_fill(fsort_item *it, const cs_value *v, uint8_t **buf, size_t *used, size_t *cap)
{
    switch (v->type) {
    case CS_TYPE_NULL: it->null = 1; return CS_OK;
    case CS_TYPE_INT: it->pre = (uint64_t)v->v.i ^ (1ull << 63); return CS_OK;
    case CS_TYPE_BOOL: it->pre = v->v.b ? 1 : 0; return CS_OK;
    case CS_TYPE_FLOAT: it->pre = double_key((double)v->v.f); return CS_OK;
    case CS_TYPE_DOUBLE: it->pre = double_key(v->v.d); return CS_OK;
    case CS_TYPE_TIMESTAMP:
        it->pre = (uint64_t)v->v.ts.sec ^ (1ull << 63);
        it->nsec = v->v.ts.nsec;
        return CS_OK;
    default: { /* CS_TYPE_STRING, CS_TYPE_BINARY */
        size_t len = v->v.bytes.len;
        const uint8_t *p = v->v.bytes.ptr;
        uint64_t pre = 0;
        if (len >= 8) {
            memcpy(&pre, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            pre = __builtin_bswap64(pre); /* the first byte the most significant */
#endif
        } else {
            for (size_t i = 0; i < 8; i++) pre = pre << 8 | (i < len ? p[i] : 0);
        }
        it->pre = pre;
        it->len = (uint32_t)len;
        if (len > 8) {
            size_t more = len - 8;
            if (*used + more > *cap) {
                size_t nc = *cap * 2 > *used + more ? *cap * 2 : *used + more;
                uint8_t *nb = realloc(*buf, nc);
                if (!nb) return NOMEM();
                *buf = nb;
                *cap = nc;
            }
            memcpy(*buf + *used, p + 8, more);
            it->tail = *used;
            *used += more;
        }
        return CS_OK;
    }
    }
}

/* Scratch memory kept between sorts, one block per thread (frozen results are sorted by several
 * threads at once), up to SCRATCH_KEEP bytes: a fresh array of several megabytes is mapped
 * afresh by the allocator and each of its pages faults on first touch, a cost the size of the
 * sort itself. Freed when the thread ends. */
enum { SCRATCH_KEEP = 16 << 20 };
typedef struct sort_scratch {
    void *p;
    size_t cap;
} sort_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

static void scratch_drop(void *v)
{
    sort_scratch *s = v;
    free(s->p);
    free(s);
}

static void scratch_init(void)
{
    scratch_ok = pthread_key_create(&scratch_key, scratch_drop) == 0;
}

/* A block of at least need bytes (the thread's kept one when large enough), or NULL. */
static void *scratch_take(size_t need)
{
    pthread_once(&scratch_once, scratch_init);
    sort_scratch *s = scratch_ok ? pthread_getspecific(scratch_key) : NULL;
    if (s && s->p && s->cap >= need) {
        void *p = s->p;
        s->p = NULL;
        s->cap = 0;
        return p;
    }
    return malloc(need);
}

/* Gives back a block of size bytes from scratch_take: kept for the thread's next sort, or freed. */
static void scratch_give(void *p, size_t size)
{
    if (!p) return;
    sort_scratch *s = scratch_ok ? pthread_getspecific(scratch_key) : NULL;
    if (!scratch_ok || size > SCRATCH_KEEP || (s && s->cap >= size)) {
        free(p);
        return;
    }
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(scratch_key, s) != 0) {
            free(s);
            free(p);
            return;
        }
    }
    free(s->p);
    s->p = p;
    s->cap = size;
}

int query_sort_one_column(cs_query *q, int64_t *keys, size_t n, bool *done)
{
    *done = false;
    const qparsed *p = q->parsed;
    if (p->nsort != 1 || p->ndistinct || n < 2 || (q->root != QR_TABLE && q->root != QR_OBJECTS)) return CS_OK;
    bpath *b = p->sort[0].path->owned;
    if (!b || b->n != 1 || b->steps[0].kind != BS_COL) return CS_OK;
    uint32_t col = b->steps[0].col;
    col_def *c = query_bound_col(q, q->table, col);
    if (c->coll != CS_COLL_NONE) return CS_OK;
    int kind;
    switch (c->type) {
    case CS_TYPE_INT: case CS_TYPE_BOOL: case CS_TYPE_FLOAT: case CS_TYPE_DOUBLE: kind = SK_NUM; break;
    case CS_TYPE_TIMESTAMP: kind = SK_TS; break;
    case CS_TYPE_STRING: case CS_TYPE_BINARY: kind = SK_BYTES; break;
    default: return CS_OK;
    }
    /* the items and the radix pairs in one block of scratch kept between sorts */
    if (n > SIZE_MAX / (sizeof(fsort_item) + 2 * sizeof(rsort_pair))) return CS_OK;
    size_t room = n * (sizeof(fsort_item) + 2 * sizeof(rsort_pair));
    void *block = scratch_take(room);
    fsort_item *items = block, *tmp = malloc(n * sizeof *tmp);
    size_t used = 0, cap = kind == SK_BYTES ? n * 8 : 0;
    uint8_t *buf = cap ? malloc(cap) : NULL;
    int rc = !items || !tmp || (cap && !buf) ? NOMEM() : CS_OK;
    cs_obj prev;
    bool fits = true;
    bool asc = p->sort[0].ascending;
    rsort_pair *pairs = block ? (rsort_pair *)(items + n) : NULL, *ptmp = pairs ? pairs + n : NULL;
    /* the non-null items' radix pairs are made as the column is read; nulls are only counted */
    size_t nn = 0, nnull = 0;
    /* whether keys[i] is keys[0] + i (a table read in key order with no gaps): the sorted keys
     * are then computed from the items' indexes, not read back */
    bool dense = true;
    /* in a read transaction the values come a run of rows of one leaf at a time (the column is
     * the query's bound one, of a scalar type, so cs_obj_get's column lookup and link check add
     * nothing); in a write, object by object */
    ref_t root = 0;
    bool runs = !q->txn->writing && table_root(q->txn, q->table, &root) == CS_OK;
    enum { RUN = 256 };
    cs_value run[RUN];
    size_t have = 0, at = 0;
    node_hdr *run_leaf = NULL;
    uint32_t run_row = 0;
    for (size_t i = 0; rc == CS_OK && fits && i < n; i++) {
        cs_value v;
        if (runs) {
            if (at == have) {
                rc = cluster_leaf_get_run(q->txn, root, keys + i, n - i < RUN ? n - i : RUN, c, col, &run_leaf,
                                          &run_row, run, &have);
                at = 0;
                if (rc != CS_OK) break;
            }
            v = run[at++];
        } else {
            cs_obj o;
            /* positioned from the previous object: a pass in key order needs no tree descent */
            cs_obj_prepare(q->txn, q->table, keys[i], i ? &prev : NULL, &o);
            /* positioned: the value straight from the leaf; the first object of each leaf goes
             * through cs_obj_get, which descends and positions it */
            if (o.leaf && o.epoch == q->txn->epoch)
                rc = cluster_leaf_get(q->txn, (node_hdr *)o.leaf, o.row, c, col, &v);
            else
                rc = cs_obj_get(&o, col, &v);
            prev = o;
        }
        memset(&items[i], 0, sizeof items[i]);
        items[i].key = keys[i];
        if ((uint64_t)keys[i] != (uint64_t)keys[0] + i) dense = false;
        if (rc != CS_OK) break;
        /* a value of another type than the column's (never expected): the general sort orders it */
        fits = v.type == CS_TYPE_NULL || v.type == (cs_type)c->type;
        if (fits && (v.type == CS_TYPE_STRING || v.type == CS_TYPE_BINARY) && v.v.bytes.len > UINT32_MAX) fits = false;
        if (fits) rc = fsort_fill(&items[i], &v, &buf, &used, &cap);
        if (items[i].null) {
            nnull++;
        } else {
            pairs[nn].k = asc ? items[i].pre : ~items[i].pre;
            pairs[nn++].i = i;
        }
    }
    size_t (*count)[RBUCKETS] = NULL;
    fsort_item *rtmp = NULL; /* scratch of the merge sort of a run of equal keys */
    size_t rcap = 0;
    if (rc == CS_OK && fits) {
        count = malloc(sizeof(size_t) * RPASSES * RBUCKETS);
        if (!count) rc = NOMEM();
    }
    if (rc == CS_OK && fits) {
        fsort s = {kind, asc ? 1 : -1, buf};
        /* the non-null items by key, stably; nulls keep their order, first (last descending) */
        size_t o = 0;
        int64_t first = items[0].key;
        rsort_pair *sorted = nn ? rsort_run(pairs, ptmp, nn, count) : pairs;
        /* the output overwrites keys[]: the items hold each key (read back at random, the
         * cache misses of a large array) unless they are dense, when it is first + index */
        if (asc && nnull) for (size_t i = 0; i < n; i++) if (items[i].null) keys[o++] = items[i].key;
        /* a run of equal keys reads its items (and their strings' tails) at random: each a cache
         * miss once the items outgrow the cache, and the merge sort between two runs' reads keeps
         * the processor from overlapping them, so the items of runs ahead are fetched early, and
         * their tails when the items are in (two cursors ahead of the run sorted) */
        size_t pf_item = 0, pf_tail = 0;
        bool ties = kind != SK_NUM;
        for (size_t a = 0; a < nn;) {
            if (ties) {
                for (; pf_item < nn && pf_item < a + 32; pf_item++) {
                    if (!rsort_tied(sorted, nn, pf_item)) continue;
                    const char *ahead = (const char *)&items[sorted[pf_item].i];
                    __builtin_prefetch(ahead);
                    __builtin_prefetch(ahead + sizeof(fsort_item) - 1);
                }
                for (; kind == SK_BYTES && pf_tail < nn && pf_tail < a + 12; pf_tail++) {
                    if (!rsort_tied(sorted, nn, pf_tail)) continue;
                    const fsort_item *it = &items[sorted[pf_tail].i];
                    if (it->len > 8) __builtin_prefetch(buf + it->tail);
                }
            }
            size_t e = a + 1;
            while (e < nn && sorted[e].k == sorted[a].k) e++;
            if (e - a == 1 || kind == SK_NUM) {
                if (dense) for (size_t j = a; j < e; j++) keys[o++] = (int64_t)((uint64_t)first + sorted[j].i);
                else for (size_t j = a; j < e; j++) keys[o++] = items[sorted[j].i].key;
            } else {
                /* equal keys: the full comparison decides, in the run's (given) order on a tie */
                size_t m = e - a;
                if (m > rcap) {
                    fsort_item *r = realloc(rtmp, m * sizeof *r);
                    if (!r) {
                        rc = NOMEM();
                        break;
                    }
                    rtmp = r;
                    rcap = m;
                }
                for (size_t j = a; j < e; j++) tmp[j - a] = items[sorted[j].i];
                fsort_run(&s, tmp, rtmp, m);
                for (size_t j = 0; j < m; j++) keys[o++] = tmp[j].key;
            }
            a = e;
        }
        if (!asc && nnull) for (size_t i = 0; i < n; i++) if (items[i].null) keys[o++] = items[i].key;
        *done = rc == CS_OK;
    }
    scratch_give(block, room);
    free(tmp);
    free(buf);
    free(count);
    free(rtmp);
    return rc;
}
