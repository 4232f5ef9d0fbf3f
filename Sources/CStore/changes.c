/*
 * changes.c -- the change history (docs/FORMAT.md §8): what every commit changed, recorded
 * while the transaction writes, stored per version in the file so any process can read it,
 * trimmed to the oldest live reader, and read back as "what changed after version A".
 *
 * Records (cs_change): objects created and deleted (a run of consecutive keys per record);
 * (object, column) for each property written; list/set/map operations with their positions.
 * A property written on an object created in the same transaction is not recorded (the object
 * is new as a whole). Writes inside a collection nested in a Mixed value are recorded as a write
 * of the owning property.
 *
 * Invariants:
 *  1. The history holds one entry per version v with oldest_live < v <= newest, in order; an
 *     entry's blob is 0 when its commit recorded nothing; oldest_live is lowered to the lowest
 *     valid feed slot's position (feed.c), so a slot's unacknowledged entries stay.
 *  2. Positions in collection records are the positions at the moment of the operation, so
 *     replaying the records in order turns the old collection into the new one.
 *  3. The commit-time node (FORMAT.md §8.2) written by a commit covers exactly the versions of
 *     that commit's history; a version it has no time for (committed by a library that kept
 *     none) holds 0. It is a node of its own in an optional top slot, not a third history array,
 *     so a library that predates it keeps reading and writing the history as before; the next
 *     commit by this library finds the node out of line with the history and rebuilds it.
 *  4. The deleted-keys node (FORMAT.md §8.3) follows the same rule as the commit times: after a
 *     commit it covers exactly that commit's history, or is absent when none of those versions
 *     recorded a deleted object's primary key. Each deleted-keys blob belongs to one entry of
 *     that node only, and is freed when its version leaves the history.
 */
#include <time.h>
#include "node.h"
#include "snapshot.h"
#include "changes.h"
#include "feed.h"


/* ---- recording -------------------------------------------------------------------------- */

static int log_push(cs_txn *t, const cs_change *c)
{
    if (t->nlog == t->caplog) {
        uint64_t nc = t->caplog ? t->caplog * 2 : 256;
        cs_change *n = realloc(t->log, nc * sizeof *n);
        if (!n) return NOMEM();
        t->log = n;
        t->caplog = nc;
    }
    t->log[t->nlog++] = *c;
    return CS_OK;
}

static uint64_t own_slot(uint32_t table, int64_t key, uint64_t cap)
{
    uint64_t h = ((uint64_t)key * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)table * 0xc2b2ae3d27d4eb4full);
    return (h ^ (h >> 29)) & (cap - 1);
}

static bool own_has(const cs_txn *t, uint32_t table, int64_t key)
{
    if (!t->nown) return false;
    for (uint64_t i = own_slot(table, key, t->capown);; i = (i + 1) & (t->capown - 1)) {
        const own_key *e = &t->own[i];
        if (!e->table1) return false;
        if (e->table1 == table + 1 && e->key == key) return true;
    }
}

static void own_put(own_key *set, uint64_t cap, uint32_t table, int64_t key)
{
    uint64_t i = own_slot(table, key, cap);
    while (set[i].table1) i = (i + 1) & (cap - 1);
    set[i].table1 = table + 1;
    set[i].key = key;
}

/* Counter keys a write creates are above every key the table had (created_from); a primary
 * key used as the object key (keying.c) may lie anywhere, so those are kept in a set, unless the
 * table was empty when the write created one: created_from is INT64_MIN then, as every object
 * the table holds from that moment on in this write was created by it (deleted keys never come
 * back, keying.c invariant 2). */
static bool created_here(cs_txn *t, uint32_t table, int64_t key)
{
    return (table < t->ncreated && key >= t->created_from[table]) || own_has(t, table, key);
}

/* Makes created_from hold an entry for `table`. */
static int created_room(cs_txn *t, uint32_t table)
{
    if (table < t->ncreated) return CS_OK;
    uint32_t n = table + 8;
    int64_t *x = realloc(t->created_from, n * sizeof *x);
    if (!x) return NOMEM();
    for (uint32_t i = t->ncreated; i < n; i++) x[i] = INT64_MAX;
    t->created_from = x;
    t->ncreated = n;
    return CS_OK;
}

/* Records a created or deleted object (`kind`): the key extends the last record when that is a
 * run of the same kind in the same table ending just below it, else a new record starts a run
 * of one. */
static int log_run(cs_txn *t, cs_change_kind kind, uint32_t table, int64_t key)
{
    if (t->nlog) {
        cs_change *l = &t->log[t->nlog - 1];
        if (l->kind == kind && l->table == table && l->key + l->a == key) {
            l->a++;
            return CS_OK;
        }
    }
    cs_change c = {0, kind, table, CS_NONE, key, 1, 0, 0};
    return log_push(t, &c);
}

static int log_create(cs_txn *t, uint32_t table, int64_t key)
{
    return log_run(t, CS_CHANGE_CREATE, table, key);
}

int change_create_own(cs_txn *t, uint32_t table, int64_t key, bool was_empty)
{
    TRY(created_room(t, table));
    if (was_empty) t->created_from[table] = INT64_MIN; /* every key of the table from now on */
    if (t->created_from[table] == INT64_MIN) return log_create(t, table, key);
    if ((t->nown + 1) * 2 > t->capown) {
        uint64_t nc = t->capown ? t->capown * 2 : 256;
        own_key *n = calloc(nc, sizeof *n);
        if (!n) return NOMEM();
        for (uint64_t i = 0; i < t->capown; i++)
            if (t->own[i].table1) own_put(n, nc, t->own[i].table1 - 1, t->own[i].key);
        free(t->own);
        t->own = n;
        t->capown = nc;
    }
    own_put(t->own, t->capown, table, key);
    t->nown++;
    return log_create(t, table, key);
}

int change_create(cs_txn *t, uint32_t table, int64_t key)
{
    TRY(created_room(t, table));
    if (key < t->created_from[table]) t->created_from[table] = key;
    return log_create(t, table, key);
}

int change_delete(cs_txn *t, uint32_t table, int64_t key)
{
    return log_run(t, CS_CHANGE_DELETE, table, key);
}

int change_set(cs_txn *t, uint32_t table, int64_t key, uint32_t col)
{
    if (created_here(t, table, key)) return CS_OK;
    if (t->nlog) {
        cs_change *l = &t->log[t->nlog - 1];
        if (l->kind == CS_CHANGE_SET && l->table == table && l->key == key && l->col == col) return CS_OK;
    }
    cs_change c = {0, CS_CHANGE_SET, table, col, key, 0, 0, 0};
    return log_push(t, &c);
}

int change_coll(cs_txn *t, const cs_coll *cl, cs_change_kind kind, int64_t a, int64_t b)
{
    uint32_t table = cl->obj.table, col = cl->col;
    int64_t key = cl->obj.key;
    if (created_here(t, table, key)) return CS_OK;
    if (cl->depth > 0) return change_set(t, table, key, col);
    cs_change c = {0, kind, table, col, key, a, b, 0};
    return log_push(t, &c);
}

int change_schema(cs_txn *t)
{
    if (t->nlog && t->log[t->nlog - 1].kind == CS_CHANGE_SCHEMA) return CS_OK;
    cs_change c = {0, CS_CHANGE_SCHEMA, CS_NONE, CS_NONE, 0, 0, 0, 0};
    return log_push(t, &c);
}

/* ---- encoding --------------------------------------------------------------------------- */

typedef struct buf {
    uint8_t *p;      /* bytes */
    uint64_t n, cap; /* used, allocated */
    bool oom;        /* an allocation failed */
} buf;

static void put_byte(buf *b, uint8_t x)
{
    if (b->n == b->cap) {
        uint64_t nc = b->cap ? b->cap * 2 : 256;
        uint8_t *q = realloc(b->p, nc);
        if (!q) { b->oom = true; return; }
        b->p = q;
        b->cap = nc;
    }
    b->p[b->n++] = x;
}

static void put_uv(buf *b, uint64_t v)
{
    while (v >= 0x80) {
        put_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put_byte(b, (uint8_t)v);
}

static void put_sv(buf *b, int64_t v) { put_uv(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

static void put_bytes(buf *b, const void *p, uint64_t n)
{
    const uint8_t *q = p;
    for (uint64_t i = 0; i < n && !b->oom; i++) put_byte(b, q[i]);
}

bool changes_get_uv(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*p >= end) return false;
        uint8_t x = *(*p)++;
        v |= (uint64_t)(x & 0x7f) << shift;
        if (!(x & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static bool get_sv(const uint8_t **p, const uint8_t *end, int64_t *out)
{
    uint64_t u;
    if (!changes_get_uv(p, end, &u)) return false;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return true;
}

int change_deleted_pk(cs_txn *t, uint32_t table, int64_t key, const cs_value *pk)
{
    /* an object created in this write and deleted again leaves no trace a reader could ask about */
    if (created_here(t, table, key)) return CS_OK;
    switch (pk->type) {
    case CS_TYPE_NULL: case CS_TYPE_INT: case CS_TYPE_STRING: case CS_TYPE_OBJECTID: case CS_TYPE_UUID: break;
    default: return CS_OK;
    }
    buf b = {t->delpk, t->ndelpk, t->capdelpk, false};
    put_uv(&b, table);
    put_sv(&b, key);
    put_byte(&b, (uint8_t)pk->type);
    switch (pk->type) {
    case CS_TYPE_INT: put_sv(&b, pk->v.i); break;
    case CS_TYPE_STRING:
        put_uv(&b, pk->v.bytes.len);
        put_bytes(&b, pk->v.bytes.ptr, pk->v.bytes.len);
        break;
    case CS_TYPE_OBJECTID: put_bytes(&b, pk->v.oid, sizeof pk->v.oid); break;
    case CS_TYPE_UUID: put_bytes(&b, pk->v.uuid, sizeof pk->v.uuid); break;
    default: break;
    }
    t->delpk = b.p;
    t->capdelpk = b.cap;
    if (b.oom) return NOMEM(); /* t->ndelpk still ends before the partial entry */
    t->ndelpk = b.n;
    return CS_OK;
}

/* Which fields a record of each kind carries after kind and table. */
static bool has_key(int k) { return k != CS_CHANGE_SCHEMA; }
static bool has_col(int k) { return k >= CS_CHANGE_SET && k <= CS_CHANGE_CLEAR; }
static bool has_a(int k) { return k == CS_CHANGE_CREATE || k == CS_CHANGE_DELETE || (k >= CS_CHANGE_INSERT && k <= CS_CHANGE_SWAP); }
static bool has_b(int k) { return k == CS_CHANGE_MOVE || k == CS_CHANGE_SWAP; }

static void encode(const cs_change *c, buf *b)
{
    put_byte(b, (uint8_t)c->kind);
    if (c->kind == CS_CHANGE_SCHEMA) return;
    put_uv(b, c->table);
    if (has_key(c->kind)) put_sv(b, c->key);
    if (has_col(c->kind)) put_uv(b, c->col);
    if (has_a(c->kind)) put_sv(b, c->a);
    if (has_b(c->kind)) put_sv(b, c->b);
}

static bool decode(const uint8_t **p, const uint8_t *end, cs_change *c)
{
    if (*p >= end) return false;
    uint8_t k = *(*p)++;
    if (k < CS_CHANGE_CREATE || k > CS_CHANGE_SCHEMA) return false;
    memset(c, 0, sizeof *c);
    c->kind = (cs_change_kind)k;
    c->table = CS_NONE;
    c->col = CS_NONE;
    if (k == CS_CHANGE_SCHEMA) return true;
    uint64_t u;
    if (!changes_get_uv(p, end, &u) || u > UINT32_MAX) return false;
    c->table = (uint32_t)u;
    if (has_key(k) && !get_sv(p, end, &c->key)) return false;
    if (has_col(k)) {
        if (!changes_get_uv(p, end, &u) || u > UINT32_MAX) return false;
        c->col = (uint32_t)u;
    }
    if (has_a(k) && !get_sv(p, end, &c->a)) return false;
    if (has_b(k) && !get_sv(p, end, &c->b)) return false;
    return true;
}

/* ---- the history in the file ------------------------------------------------------------ */

/* ---- commit times (FORMAT.md §8.2) ------------------------------------------------------ */

/* The committer's clock in microseconds since the Unix epoch; 0 (not known) before 1970. */
static int64_t now_us(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || ts.tv_sec < 0) return 0;
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* A commit-time node, checked: its first version and the number of times it holds. */
static int times_read(cs_txn *t, ref_t r, node_hdr **out, uint64_t *first, uint64_t *n)
{
    node_hdr *h;
    if (tagged(r)) return CORRUPT("commit-time slot holds a number");
    TRY(node_at(t, r, &h));
    if ((h->flags & (NF_REFS | NF_BYTES | NF_NULLS | NF_INNER)) || h->count < 1 || node_get_int(h, 0) < 1)
        return CORRUPT("commit-time node is malformed");
    *out = h;
    *first = (uint64_t)node_get_int(h, 0);
    *n = h->count - 1;
    return CS_OK;
}

/* Records this commit's time: afterwards the node holds the times of versions first..newver
 * (the history's versions), the ones it did not hold before as 0 (invariant 3). */
static int times_append(cs_txn *t, uint64_t first, uint64_t newver)
{
    int64_t now = now_us();
    ref_t *slot;
    TRY(txn_top_slot(t, TOP_TIMES, &slot));
    ref_t old = *slot;
    node_hdr *oh = NULL;
    uint64_t of = 0, on = 0;
    if (old) TRY(times_read(t, old, &oh, &of, &on));
    if (oh && of == first && of + on == newver) {
        /* the usual case: the node ends at the version before this one */
        ref_t r = old;
        TRY(node_insert_int(t, &r, on + 1, now));
        TRY(txn_top_slot(t, TOP_TIMES, &slot)); /* the allocation may have moved the top's bytes */
        *slot = r;
        return CS_OK;
    }
    /* trimmed, restarted, or out of line after an older library's commits: a new node */
    uint64_t n = newver - first + 1;
    ref_t nr;
    TRY(node_new(t, 0, 64, n + 1, &nr));
    node_hdr *nh = (node_hdr *)txn_ptr(t, nr);
    if (old) TRY(node_at(t, old, &oh));
    packed_set(node_values(nh), 64, 0, (int64_t)first);
    for (uint64_t v = first; v < newver; v++)
        packed_set(node_values(nh), 64, v - first + 1, (oh && v >= of && v < of + on) ? node_get_int(oh, v - of + 1) : 0);
    packed_set(node_values(nh), 64, n, now);
    if (old) node_free(t, old);
    TRY(txn_top_slot(t, TOP_TIMES, &slot)); /* as above */
    *slot = nr;
    return CS_OK;
}

/* ---- deleted objects' primary keys (FORMAT.md §8.3) ----------------------------------------- */

/* A deleted-keys node, checked: its first version and the number of entries it holds. */
static int delpk_read(cs_txn *t, ref_t r, node_hdr **out, uint64_t *first, uint64_t *n)
{
    node_hdr *h;
    if (tagged(r)) return CORRUPT("deleted-keys slot holds a number");
    TRY(node_at(t, r, &h));
    if (!(h->flags & NF_REFS) || (h->flags & NF_INNER) || h->count < 1 || !tagged(node_refs(h)[0]) || untag(node_refs(h)[0]) < 1)
        return CORRUPT("deleted-keys node is malformed");
    *out = h;
    *first = (uint64_t)untag(node_refs(h)[0]);
    *n = h->count - 1;
    return CS_OK;
}

/* The blob of deleted primary keys version `v` recorded, 0 when none (or no node). */
static int delpk_blob(cs_txn *t, uint64_t v, ref_t *out)
{
    *out = 0;
    uint64_t r;
    TRY(txn_top_get(t, TOP_DELETED_PKS, &r));
    if (!r) return CS_OK;
    node_hdr *h;
    uint64_t first, n;
    TRY(delpk_read(t, r, &h, &first, &n));
    if (v < first || v - first >= n) return CS_OK;
    ref_t b = node_refs(h)[v - first + 1];
    if (b && tagged(b)) return CORRUPT("deleted-keys entry of version %llu holds a number", (unsigned long long)v);
    *out = b;
    return CS_OK;
}

int changes_deleted_pk_bytes(cs_txn *t, uint64_t version, uint64_t *out)
{
    *out = 0;
    ref_t b;
    TRY(delpk_blob(t, version, &b));
    if (!b) return CS_OK;
    node_hdr *bh;
    TRY(node_at(t, b, &bh));
    *out = node_size_of(bh->flags, bh->width, bh->count);
    return CS_OK;
}

/* Records this commit's blob (0 for none): afterwards the node covers versions first..newver,
 * keeping the blobs of versions it held that the history still has and freeing the others, or
 * is gone when none of those versions has a blob (invariant 4). */
static int delpk_append(cs_txn *t, uint64_t first, uint64_t newver, ref_t blob)
{
    uint64_t old;
    TRY(txn_top_get(t, TOP_DELETED_PKS, &old));
    if (!old && !blob) return CS_OK; /* nothing recorded, nothing to record: no node, no slot */
    node_hdr *oh = NULL;
    uint64_t of = 0, on = 0;
    ref_t *slot;
    if (old) TRY(delpk_read(t, old, &oh, &of, &on));
    if (oh && of == first && of + on == newver) {
        /* the usual case while a reader holds the history back: one more entry */
        ref_t r = old;
        TRY(node_insert_int(t, &r, on + 1, (int64_t)blob));
        TRY(txn_top_slot(t, TOP_DELETED_PKS, &slot)); /* the allocation may have moved the top's bytes */
        *slot = r;
        return CS_OK;
    }
    /* trimmed, restarted, or out of line after an older library's commits */
    bool any = blob != 0;
    for (uint64_t i = 0; oh && i < on && !any; i++) {
        uint64_t v = of + i;
        if (v >= first && v < newver && node_refs(oh)[i + 1]) any = true;
    }
    ref_t nr = 0;
    if (any) {
        uint64_t n = newver - first + 1;
        TRY(node_new(t, NF_REFS, 64, n + 1, &nr));
        if (old) TRY(node_at(t, old, &oh));
        uint64_t *ne = node_refs((node_hdr *)txn_ptr(t, nr));
        ne[0] = tag_int((int64_t)first);
        for (uint64_t v = first; v < newver; v++)
            ne[v - first + 1] = (oh && v >= of && v < of + on) ? node_refs(oh)[v - of + 1] : 0;
        ne[n] = blob;
    }
    if (old) {
        TRY(node_at(t, old, &oh));
        for (uint64_t i = 0; i < on; i++) {
            uint64_t v = of + i;
            ref_t b = node_refs(oh)[i + 1];
            if (b && !tagged(b) && (v < first || v >= newver || !any)) node_free(t, b);
        }
        node_free(t, old);
    }
    TRY(txn_top_slot(t, TOP_DELETED_PKS, &slot));
    *slot = nr;
    return CS_OK;
}

static int run_cmp(const void *a, const void *b)
{
    const cs_change *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* Each stretch of consecutive CREATE records of one table (objects created one after another,
 * nothing else recorded between them) is put in key order with touching runs merged: created
 * objects are a set, so the stretch means the same in any order, and a load in random key order
 * is recorded in as few runs as the same load in key order (one run for keys 0..n-1) instead of
 * one record per object (docs/ARCHITECTURE.md, Leaf fill and the history of a load). */
static void log_sort_creates(cs_txn *t)
{
    uint64_t out = 0;
    for (uint64_t i = 0; i < t->nlog;) {
        uint64_t j = i + 1;
        if (t->log[i].kind == CS_CHANGE_CREATE) {
            bool sorted = true;
            while (j < t->nlog && t->log[j].kind == CS_CHANGE_CREATE && t->log[j].table == t->log[i].table) {
                if (t->log[j].key < t->log[j - 1].key) sorted = false;
                j++;
            }
            if (!sorted) qsort(&t->log[i], j - i, sizeof t->log[i], run_cmp);
            uint64_t start = out;
            for (uint64_t k = i; k < j; k++) {
                cs_change *l = out > start ? &t->log[out - 1] : NULL; /* this stretch's last record */
                if (l && l->key + l->a == t->log[k].key) l->a += t->log[k].a;
                else t->log[out++] = t->log[k];
            }
        } else {
            t->log[out++] = t->log[i];
        }
        i = j;
    }
    t->nlog = out;
}

/* Appends this commit's entry and trims entries no live reader needs (called by txn_stage,
 * before the commit's nodes are listed). */
int history_append(cs_txn *t, uint64_t newver, uint64_t oldest)
{
    ref_t blob = 0, pkblob = 0;
    if (t->nlog) log_sort_creates(t);
    if (t->nlog) {
        buf b = {0};
        for (uint64_t i = 0; i < t->nlog; i++) encode(&t->log[i], &b);
        if (b.oom) {
            free(b.p);
            return NOMEM();
        }
        int rc = node_new_blob(t, b.p, b.n, &blob);
        free(b.p);
        TRY(rc);
    }
    if (t->ndelpk) TRY(node_new_blob(t, t->delpk, t->ndelpk, &pkblob));
    /* feed slots keep the entries after their positions (feed.c) */
    uint64_t entry = 24; /* its version, blob ref and commit time words */
    if (blob) {
        node_hdr *bh = (node_hdr *)txn_ptr(t, blob);
        entry += node_size_of(bh->flags, bh->width, bh->count);
    }
    if (pkblob) {
        node_hdr *bh = (node_hdr *)txn_ptr(t, pkblob);
        entry += node_size_of(bh->flags, bh->width, bh->count);
    }
    TRY(feed_on_commit(t, newver, entry, &oldest));
    ref_t *hs;
    TRY(txn_top_slot(t, TOP_HISTORY, &hs));
    if (!*hs) {
        TRY(node_new(t, NF_REFS, 64, 2, hs));
        uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *hs));
        TRY(node_new(t, 0, 0, 0, &e[0]));
        e = node_refs((node_hdr *)txn_ptr(t, *hs));
        TRY(node_new(t, NF_REFS, 64, 0, &e[1]));
    }
    TRY(node_cow(t, hs));
    node_hdr *h = (node_hdr *)txn_ptr(t, *hs);
    if (!(h->flags & NF_REFS) || h->count != 2) return CORRUPT("history node is malformed");
    uint64_t *e = node_refs(h);
    node_hdr *vers, *blobs;
    TRY(node_at(t, e[0], &vers));
    TRY(node_at(t, e[1], &blobs));
    if ((vers->flags & (NF_REFS | NF_BYTES)) || !(blobs->flags & NF_REFS) || vers->count != blobs->count)
        return CORRUPT("history arrays disagree");
    /* trim: entries for versions a live reader already has */
    uint64_t drop = 0;
    while (drop < vers->count && (uint64_t)node_get_int(vers, drop) <= oldest) drop++;
    if (drop) {
        uint64_t n = vers->count;
        ref_t nv, nb;
        TRY(node_new(t, 0, 64, n - drop, &nv));
        TRY(node_new(t, NF_REFS, 64, n - drop, &nb));
        h = (node_hdr *)txn_ptr(t, *hs);
        e = node_refs(h);
        vers = (node_hdr *)txn_ptr(t, e[0]);
        blobs = (node_hdr *)txn_ptr(t, e[1]);
        node_hdr *vh = (node_hdr *)txn_ptr(t, nv), *bh = (node_hdr *)txn_ptr(t, nb);
        for (uint64_t i = drop; i < n; i++) {
            packed_set(node_values(vh), 64, i - drop, node_get_int(vers, i));
            node_refs(bh)[i - drop] = node_refs(blobs)[i];
        }
        for (uint64_t i = 0; i < drop; i++)
            if (node_refs(blobs)[i]) node_free(t, node_refs(blobs)[i]);
        node_free(t, e[0]);
        node_free(t, e[1]);
        e[0] = nv;
        e[1] = nb;
    }
    h = (node_hdr *)txn_ptr(t, *hs);
    e = node_refs(h);
    node_hdr *vh;
    TRY(node_at(t, e[0], &vh));
    uint64_t n = vh->count;
    if (n && (uint64_t)node_get_int(vh, n - 1) + 1 != newver) {
        /* a gap (an older history was trimmed while nobody read): restart it */
        for (uint64_t i = 0; i < n; i++) {
            node_hdr *bh = (node_hdr *)txn_ptr(t, e[1]);
            if (node_refs(bh)[i]) node_free(t, node_refs(bh)[i]);
        }
        TRY(node_truncate(t, &e[0], 0));
        TRY(node_truncate(t, &e[1], 0));
        n = 0;
    }
    TRY(node_insert_int(t, &e[0], n, (int64_t)newver));
    TRY(node_insert_int(t, &e[1], n, (int64_t)blob));
    h = (node_hdr *)txn_ptr(t, *hs);
    TRY(node_at(t, node_refs(h)[0], &vh));
    uint64_t first = (uint64_t)node_get_int(vh, 0);
    TRY(times_append(t, first, newver));
    return delpk_append(t, first, newver, pkblob);
}

/* ---- reading ---------------------------------------------------------------------------- */

struct cs_changes {
    cs_txn *txn;          /* the reading transaction */
    uint64_t epoch;       /* its epoch when opened */
    node_hdr *vers;       /* history versions */
    node_hdr *blobs;      /* history blobs */
    uint64_t next;        /* next history entry */
    uint64_t end;         /* one past the last entry */
    const uint8_t *p;     /* cursor in the current blob */
    const uint8_t *stop;  /* end of the current blob */
    uint64_t version;     /* version of the current blob */
    int64_t time_us;      /* its commit time, 0 when not known */
    node_hdr *times;      /* commit-time node (§8.2), NULL when the file has none */
    uint64_t times_first; /* the version of its first time */
    uint64_t times_n;     /* the number of times it holds */
    node_hdr *delpk;      /* deleted-keys node (§8.3), NULL when the file has none */
    uint64_t delpk_first; /* the version of its first entry */
    uint64_t delpk_n;     /* the number of entries it holds */
};

int cs_changes_open(cs_txn *txn, uint64_t since, cs_changes **out)
{
    *out = NULL;
    if (since > txn->version) return cs_fail(CS_MISUSE, 0, "version %llu is newer than the transaction's %llu", (unsigned long long)since, (unsigned long long)txn->version);
    cs_changes *c = calloc(1, sizeof *c);
    if (!c) return NOMEM();
    c->txn = txn;
    c->epoch = txn->epoch;
    if (since == txn->version) {
        *out = c;
        return CS_OK;
    }
    uint64_t hr = 0;
    int rc = txn_top_get(txn, TOP_HISTORY, &hr);
    node_hdr *h = NULL;
    if (rc == CS_OK && hr) rc = node_at(txn, hr, &h);
    if (rc == CS_OK && h && (!(h->flags & NF_REFS) || h->count != 2)) rc = CORRUPT("history node is malformed");
    if (rc == CS_OK && h) rc = node_at(txn, node_refs(h)[0], &c->vers);
    if (rc == CS_OK && h) rc = node_at(txn, node_refs(h)[1], &c->blobs);
    if (rc == CS_OK && h && ((c->vers->flags & (NF_REFS | NF_BYTES)) || !(c->blobs->flags & NF_REFS) || c->vers->count != c->blobs->count))
        rc = CORRUPT("history arrays disagree");
    uint64_t tr = 0;
    if (rc == CS_OK) rc = txn_top_get(txn, TOP_TIMES, &tr);
    if (rc == CS_OK && tr) rc = times_read(txn, tr, &c->times, &c->times_first, &c->times_n);
    uint64_t dr = 0;
    if (rc == CS_OK) rc = txn_top_get(txn, TOP_DELETED_PKS, &dr);
    if (rc == CS_OK && dr) rc = delpk_read(txn, dr, &c->delpk, &c->delpk_first, &c->delpk_n);
    if (rc != CS_OK) { free(c); return rc; }
    uint64_t n = h ? c->vers->count : 0;
    uint64_t i = 0;
    while (i < n && (uint64_t)node_get_int(c->vers, i) <= since) i++;
    if (i >= n || (uint64_t)node_get_int(c->vers, i) != since + 1 || (uint64_t)node_get_int(c->vers, n - 1) != txn->version) {
        free(c);
        return cs_fail(CS_NOTFOUND, 0, "the history no longer holds the changes after version %llu (pin a version to keep them)", (unsigned long long)since);
    }
    c->next = i;
    c->end = n;
    *out = c;
    return CS_OK;
}

int cs_changes_next(cs_changes *c, cs_change *out)
{
    if (c->txn->epoch != c->epoch) return cs_fail(CS_MISUSE, 0, "the transaction moved since the changes were opened");
    for (;;) {
        if (c->p && c->p < c->stop) {
            if (!decode(&c->p, c->stop, out)) return CORRUPT("change record of version %llu is malformed", (unsigned long long)c->version);
            out->version = c->version;
            out->time_us = c->time_us;
            return CS_OK;
        }
        if (c->next >= c->end) return CS_NOTFOUND;
        c->version = (uint64_t)node_get_int(c->vers, c->next);
        c->time_us = 0;
        if (c->times && c->version >= c->times_first && c->version - c->times_first < c->times_n)
            c->time_us = node_get_int(c->times, c->version - c->times_first + 1);
        uint64_t b = node_refs(c->blobs)[c->next];
        c->next++;
        c->p = c->stop = NULL;
        if (!b) continue;
        node_hdr *bh;
        if (tagged(b)) return CORRUPT("history blob slot holds a number");
        TRY(node_at(c->txn, b, &bh));
        if (!(bh->flags & NF_BYTES) || bh->width != 1) return CORRUPT("history blob is malformed");
        c->p = node_values(bh);
        c->stop = c->p + bh->count;
    }
}

int cs_changes_deleted_pk(cs_changes *c, uint64_t version, uint32_t table, int64_t key, cs_value *out)
{
    memset(out, 0, sizeof *out);
    if (c->txn->epoch != c->epoch) return cs_fail(CS_MISUSE, 0, "the transaction moved since the changes were opened");
    if (!c->delpk || version < c->delpk_first || version - c->delpk_first >= c->delpk_n) return CS_NOTFOUND;
    ref_t b = node_refs(c->delpk)[version - c->delpk_first + 1];
    if (!b) return CS_NOTFOUND;
    node_hdr *bh;
    if (tagged(b)) goto bad;
    TRY(node_at(c->txn, b, &bh));
    if (!(bh->flags & NF_BYTES) || bh->width != 1) goto bad;
    const uint8_t *p = node_values(bh), *end = p + bh->count;
    while (p < end) {
        uint64_t tb, len;
        int64_t k;
        if (!changes_get_uv(&p, end, &tb) || tb > UINT32_MAX || !get_sv(&p, end, &k) || p >= end) goto bad;
        cs_value v;
        memset(&v, 0, sizeof v);
        v.type = (cs_type)*p++;
        switch (v.type) {
        case CS_TYPE_NULL: break;
        case CS_TYPE_INT:
            if (!get_sv(&p, end, &v.v.i)) goto bad;
            break;
        case CS_TYPE_STRING:
            if (!changes_get_uv(&p, end, &len) || len > (uint64_t)(end - p)) goto bad;
            v.v.bytes.ptr = p;
            v.v.bytes.len = (size_t)len;
            p += len;
            break;
        case CS_TYPE_OBJECTID:
            if ((size_t)(end - p) < sizeof v.v.oid) goto bad;
            memcpy(v.v.oid, p, sizeof v.v.oid);
            p += sizeof v.v.oid;
            break;
        case CS_TYPE_UUID:
            if ((size_t)(end - p) < sizeof v.v.uuid) goto bad;
            memcpy(v.v.uuid, p, sizeof v.v.uuid);
            p += sizeof v.v.uuid;
            break;
        default: goto bad;
        }
        if ((uint32_t)tb == table && k == key) {
            *out = v;
            return CS_OK;
        }
    }
    return CS_NOTFOUND;
bad:
    return CORRUPT("deleted-keys record of version %llu is malformed", (unsigned long long)version);
}

void cs_changes_close(cs_changes *c) { free(c); }
