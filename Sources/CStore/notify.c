/*
 * notify.c -- change notifications (docs/ARCHITECTURE.md, Change notifications): a notifier
 * follows a file from version to version; per version it reads the change history once into a
 * summary (objects created, deleted, and (table, column, key) written) and brings every watch
 * up to date from it, re-running a query only when a column it reads was written.
 *
 * Invariants:
 *  1. n->t pins version n->version; the history after it is kept while it is pinned
 *     (changes.c), so the next advance can always read it.
 *  2. Between takes a watch's `pend` describes the collection at n->version relative to the
 *     collection at its last take (notify_diff.c); `keys` holds the element keys at n->version
 *     for watches diffed by keys.
 */
#include "notify.h"
#include "query_watch.h"
#include "lock.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { W_QUERY = 1, W_COLL, W_BACKLINKS, W_OBJECT, W_NESTED };

/* Most steps from a Mixed column down to a nested collection (as cs_coll's path). */
#define NEST_MAX 8

/* A (table, column, key) some commit wrote: a property set or a collection operation. */
typedef struct wtriple {
    uint32_t table, col;
    int64_t key;
} wtriple;

/* A backlink column step of a key path: the link column (origin table, column) it mirrors, or
 * origin CS_NONE for a step that is not a backlink column. */
typedef struct bstep {
    uint32_t origin, col;
} bstep;

/* A backlink column some key path of a watch goes through: column `col` of `table`, mirroring
 * link column b.col of table b.origin. */
typedef struct backstep {
    uint32_t table, col;
    bstep b;
} backstep;

/* Consecutive keys created or deleted. */
typedef struct krun {
    uint32_t table;
    int64_t key, n;
} krun;

typedef struct summary {
    wtriple *w;
    size_t nw, capw;
    krun *created, *deleted;
    size_t ncreated, capcreated, ndeleted, capdeleted;
    cs_change *coll; /* collection operations, in commit order */
    size_t ncoll, capcoll;
    uint8_t *touched; /* per table */
    uint32_t ntables;
    bool schema;      /* the schema changed */
    bool lost;        /* the history did not reach back: everything is compared whole */
} summary;

struct cs_notifier {
    cs_db *db;
    cs_txn *t;          /* at `version` (invariant 1) */
    cs_txn *old;        /* during an advance's rounds: the version before (still pinned) */
    cs_watch **w;       /* watches */
    size_t nw, capw;
    summary s;          /* the last advance's summary */
    uint32_t wake;      /* futex word of cs_notifier_wake */
    uint32_t wake_seen; /* its value when the last wait returned */
    bool sleeping;      /* in cs_notifier_wait's futex wait (under the file's mu, lock.c) */
};

struct cs_watch {
    cs_notifier *n;
    int kind;
    uint32_t table;      /* query table, collection owner's table, backlink target's, object's */
    int64_t key;         /* owner / target / object key */
    uint32_t col;        /* collection column */
    struct {
        int64_t index;   /* list position, or -1 for a map key */
        char *key;       /* map key (owned) */
        size_t key_len;
        uint32_t identity; /* the identity of the collection the step leads to (0: not checked) */
    } path[NEST_MAX];    /* nested watches: the steps from the column down to the collection */
    uint8_t npath;
    uint32_t identity;   /* nested watches: the identity of the column's collection (cs_coll_identity;
                            0: not checked) */
    uint32_t origin_table, origin_col; /* backlinks */
    uint32_t root;       /* table the key paths start from (the elements' table), CS_NONE: none */
    bool links;          /* the elements are objects (their keys are diffed and modified) */
    bool map;            /* the collection is a Map */
    bool mixed;          /* collection watches: the elements are Mixed (may hold nested collections) */
    cs_query *q;
    query_deps deps;
    cs_keypath *paths;
    uint32_t (*ptab)[CS_KEYPATH_MAX]; /* per path and step: the table that step's column is in */
    bstep (*pback)[CS_KEYPATH_MAX];   /* per path and step: for a backlink column, its link */
    size_t npaths;
    size_t cappaths;     /* paths, ptab, pback allocated */
    size_t nmod;         /* paths [0, nmod) make elements modified; the rest only stale (below) */
    bool via_backlinks;  /* some step of a key path is a backlink column */
    backstep *bsteps;    /* those backlink columns, each once (derive_backlinks) */
    size_t nbsteps, capbsteps;
    keyvec keys;         /* element keys at the notifier's version (queries, backlinks) */
    pending pend;
    bool initial, deleted, deleted_new;
    bool stale;          /* something a query over the collection reads changed (cs_watch_depend_query) */
    bool stale_deps;     /* cs_watch_depend_query could not name every path: w->deps, by column */
    uint32_t *cols;      /* objects: columns changed since the last take */
    size_t ncols, capcols;
    char **bkeys;        /* maps: the keys at the last take */
    size_t *bkeylen;
    size_t nbkeys;
    char **okeys;        /* maps: the keys before the last take (its deletions point into them) */
    size_t nokeys;
    /* what the last take handed out */
    idxvec del, ins, mod, modnew;
    cs_value *kv;        /* maps: deleted, inserted, modified keys, in one array */
    size_t capkv;
    keyvec dirty;        /* scratch: root keys modified this round */
    uint64_t runs;       /* full runs of the query (or backlink reads) after the first */
};

/* ---- summary ---------------------------------------------------------------------------- */

static void summary_reset(summary *s)
{
    s->nw = s->ncreated = s->ndeleted = s->ncoll = 0;
    if (s->touched) memset(s->touched, 0, s->ntables);
    s->schema = s->lost = false;
}

static void summary_free(summary *s)
{
    free(s->w);
    free(s->created);
    free(s->deleted);
    free(s->coll);
    free(s->touched);
    memset(s, 0, sizeof *s);
}

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return CS_OK;
    size_t nc = *cap ? *cap * 2 : 32;
    void *x = realloc(*p, nc * size);
    if (!x) return NOMEM();
    *p = x;
    *cap = nc;
    return CS_OK;
}

static int touch(summary *s, uint32_t table)
{
    if (table == CS_NONE) return CS_OK;
    if (table >= s->ntables) {
        uint32_t nt = table + 16;
        uint8_t *x = realloc(s->touched, nt);
        if (!x) return NOMEM();
        memset(x + s->ntables, 0, nt - s->ntables);
        s->touched = x;
        s->ntables = nt;
    }
    s->touched[table] = 1;
    return CS_OK;
}

static bool touched(const summary *s, uint32_t table)
{
    return s->lost || s->schema || (table < s->ntables && s->touched[table]);
}

static int cmp_triple(const void *a, const void *b)
{
    const wtriple *x = a, *y = b;
    if (x->table != y->table) return x->table < y->table ? -1 : 1;
    if (x->col != y->col) return x->col < y->col ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

static int summary_add(summary *s, const cs_change *c)
{
    TRY(touch(s, c->table));
    switch (c->kind) {
    case CS_CHANGE_CREATE:
    case CS_CHANGE_DELETE: {
        bool cr = c->kind == CS_CHANGE_CREATE;
        krun **v = cr ? &s->created : &s->deleted;
        size_t *n = cr ? &s->ncreated : &s->ndeleted, *cap = cr ? &s->capcreated : &s->capdeleted;
        TRY(grow((void **)v, cap, *n, sizeof **v));
        (*v)[(*n)++] = (krun){c->table, c->key, c->a};
        return CS_OK;
    }
    case CS_CHANGE_SCHEMA:
        s->schema = true;
        return CS_OK;
    case CS_CHANGE_SET:
        break;
    default:
        TRY(grow((void **)&s->coll, &s->capcoll, s->ncoll, sizeof *s->coll));
        s->coll[s->ncoll++] = *c;
        break;
    }
    TRY(grow((void **)&s->w, &s->capw, s->nw, sizeof *s->w));
    s->w[s->nw++] = (wtriple){c->table, c->col, c->key};
    return CS_OK;
}

static void summary_finish(summary *s)
{
    if (s->nw < 2) return;
    qsort(s->w, s->nw, sizeof *s->w, cmp_triple);
    size_t w = 1;
    for (size_t i = 1; i < s->nw; i++)
        if (cmp_triple(&s->w[i], &s->w[w - 1]) != 0) s->w[w++] = s->w[i];
    s->nw = w;
}

/* The written triples of (table, col): [*lo, *hi). */
static void triples_of(const summary *s, uint32_t table, uint32_t col, size_t *lo, size_t *hi)
{
    wtriple k = {table, col, INT64_MIN};
    size_t a = 0, b = s->nw;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (cmp_triple(&s->w[m], &k) < 0) a = m + 1;
        else b = m;
    }
    *lo = a;
    while (a < s->nw && s->w[a].table == table && s->w[a].col == col) a++;
    *hi = a;
}

static bool written(const summary *s, uint32_t table, uint32_t col)
{
    size_t lo, hi;
    triples_of(s, table, col, &lo, &hi);
    return lo < hi;
}

static bool in_runs(const krun *r, size_t n, uint32_t table, int64_t key)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].table == table && key >= r[i].key && key < r[i].key + r[i].n) return true;
    return false;
}

static bool runs_touch(const krun *r, size_t n, uint32_t table)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].table == table) return true;
    return false;
}

/* ---- backlink writes -------------------------------------------------------------------- */

/* The history records writes of link columns, not of the backlink columns they imply. A key path
 * through a backlink column (a LinkingObjects property) needs those too: each advance derives
 * them from the origin objects whose link column was written, created or deleted, comparing what
 * each links to in the notifier's old version (still pinned) and in the new one. A target whose
 * number of links from that object changed had its backlink column written. Only backlink
 * columns some watch's key paths go through are derived; the history itself (and so the feed
 * and the mirror) never holds them. */

static int cmp_key(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Appends the keys object `key` of `table` links to through column `col` (a link, or a List, Set
 * or Map of links) in `t`; nothing when the object or the column is not there. */
static int link_targets(cs_txn *t, uint32_t table, int64_t key, uint32_t col, keyvec *out)
{
    cs_obj o;
    cs_column_info ci;
    if (cs_column_info_get(t, table, col, &ci) != CS_OK || ci.type != CS_TYPE_LINK) return CS_OK;
    if (cs_obj_open(t, table, key, &o) != CS_OK) return CS_OK;
    cs_value k, v;
    if (ci.coll == CS_COLL_NONE) {
        TRY(cs_obj_get(&o, col, &v));
        return v.type == CS_TYPE_LINK ? keyvec_push(out, v.v.link.key) : CS_OK;
    }
    cs_coll c;
    size_t n;
    TRY(cs_coll_open(&o, col, &c));
    TRY(cs_coll_size(&c, &n));
    for (size_t i = 0; i < n; i++) {
        if (ci.coll == CS_COLL_MAP) TRY(cs_map_get_at(&c, i, &k, &v));
        else TRY(cs_list_get(&c, i, &v));
        if (v.type == CS_TYPE_LINK) TRY(keyvec_push(out, v.v.link.key));
    }
    return CS_OK;
}

static int keys_of_runs(const krun *r, size_t n, uint32_t table, keyvec *out)
{
    for (size_t i = 0; i < n; i++)
        if (r[i].table == table)
            for (int64_t k = 0; k < r[i].n; k++) TRY(keyvec_push(out, r[i].key + k));
    return CS_OK;
}

/* The writes of backlink column `col` of `table` (mirroring link column b.col of table
 * b.origin) between `old` and `nt`, added to the summary. */
static int derive_step(summary *s, cs_txn *old, cs_txn *nt, uint32_t table, uint32_t col, bstep b, bool *added)
{
    keyvec cand = {0}, was = {0}, is = {0};
    size_t lo, hi;
    int rc = CS_OK;
    triples_of(s, b.origin, b.col, &lo, &hi);
    for (size_t i = lo; i < hi && rc == CS_OK; i++) rc = keyvec_push(&cand, s->w[i].key);
    if (rc == CS_OK) rc = keys_of_runs(s->created, s->ncreated, b.origin, &cand);
    if (rc == CS_OK) rc = keys_of_runs(s->deleted, s->ndeleted, b.origin, &cand);
    if (rc == CS_OK) keyvec_sort_unique(&cand);
    for (size_t i = 0; i < cand.n && rc == CS_OK; i++) {
        was.n = is.n = 0;
        rc = link_targets(old, b.origin, cand.v[i], b.col, &was);
        if (rc == CS_OK) rc = link_targets(nt, b.origin, cand.v[i], b.col, &is);
        if (rc != CS_OK) break;
        if (was.n > 1) qsort(was.v, was.n, sizeof *was.v, cmp_key);
        if (is.n > 1) qsort(is.v, is.n, sizeof *is.v, cmp_key);
        /* targets whose count differs, by a merge of the two sorted lists */
        size_t x = 0, y = 0;
        while (rc == CS_OK && (x < was.n || y < is.n)) {
            int64_t k = x < was.n && (y >= is.n || was.v[x] <= is.v[y]) ? was.v[x] : is.v[y];
            size_t cx = 0, cy = 0;
            while (x < was.n && was.v[x] == k) x++, cx++;
            while (y < is.n && is.v[y] == k) y++, cy++;
            if (cx == cy) continue;
            rc = grow((void **)&s->w, &s->capw, s->nw, sizeof *s->w);
            if (rc == CS_OK) rc = touch(s, table);
            if (rc == CS_OK) s->w[s->nw++] = (wtriple){table, col, k};
            *added = true;
        }
    }
    free(cand.v);
    free(was.v);
    free(is.v);
    return rc;
}

/* Derives the backlink writes the notifier's watches' key paths need (the summary is sorted,
 * and stays sorted). */
static int derive_backlinks(cs_notifier *n, cs_txn *old, cs_txn *nt)
{
    summary *s = &n->s;
    if (s->lost) return CS_OK;
    /* each backlink column once: (table, column) pairs already derived */
    uint32_t (*done)[2] = NULL;
    size_t ndone = 0, capdone = 0;
    bool added = false;
    int rc = CS_OK;
    for (size_t i = 0; i < n->nw && rc == CS_OK; i++) {
        const cs_watch *w = n->w[i];
        for (size_t k = 0; k < w->nbsteps && rc == CS_OK; k++) {
            bstep b = w->bsteps[k].b;
            uint32_t table = w->bsteps[k].table, col = w->bsteps[k].col;
            /* nothing of the origin table written, created or deleted: no backlink moved */
            if (!touched(s, b.origin)) continue;
            bool seen = false;
            for (size_t d = 0; d < ndone && !seen; d++) seen = done[d][0] == table && done[d][1] == col;
            if (seen) continue;
            rc = grow((void **)&done, &capdone, ndone, sizeof *done);
            if (rc != CS_OK) break;
            done[ndone][0] = table;
            done[ndone][1] = col;
            ndone++;
            added = false;
            rc = derive_step(s, old, nt, table, col, b, &added);
            /* the next step looks the summary up again: sort in what this one added */
            if (added) summary_finish(s);
        }
    }
    free(done);
    return rc;
}

/* ---- notifier --------------------------------------------------------------------------- */

int cs_notifier_open(cs_db *db, cs_notifier **out)
{
    *out = NULL;
    cs_notifier *n = calloc(1, sizeof *n);
    if (!n) return NOMEM();
    n->db = db;
    int rc = cs_txn_begin(db, CS_TXN_READ, &n->t);
    if (rc != CS_OK) { free(n); return rc; }
    *out = n;
    return CS_OK;
}

void cs_notifier_close(cs_notifier *n)
{
    if (!n) return;
    while (n->nw) cs_watch_free(n->w[n->nw - 1]);
    free(n->w);
    summary_free(&n->s);
    cs_txn_end(n->t);
    free(n);
}

int cs_txn_commit_sparing(cs_txn *t, cs_notifier *n)
{
    if (!t || !n) return cs_fail(CS_MISUSE, 0, "cs_txn_commit_sparing: no transaction or notifier");
    if (n->db->f != t->f) return cs_fail(CS_MISUSE, 0, "cs_txn_commit_sparing: a notifier of another file");
    /* only a writer, holding the writer lock, may set the field: another thread's commit
     * reads it in its publish (its own is then over) */
    if (!t->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_commit_sparing: not in a write transaction");
    /* (set under the writer lock; the commit's publish takes it back, lock_publish) */
    const bool *mine = &n->sleeping;
    __atomic_store_n(&t->f->spared, mine, __ATOMIC_SEQ_CST);
    int rc = cs_txn_commit(t);
    /* a commit that failed before publishing: take it back unless the publish did (a writer
     * that began in between could still take it, sparing `n` once: a late wake, not a lost
     * one, as the notifier's next wait sees the counter) */
    __atomic_compare_exchange_n(&t->f->spared, &mine, NULL, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return rc;
}

uint64_t cs_notifier_version(const cs_notifier *n) { return n->t->version; }

const cs_txn *cs_notifier_txn(const cs_notifier *n) { return n->t; }

static int watch_round(cs_watch *w);
static void watch_attach(cs_watch *w);

int cs_notifier_open_at(cs_db *db, const cs_txn *at, cs_notifier **out)
{
    *out = NULL;
    cs_notifier *n = calloc(1, sizeof *n);
    if (!n) return NOMEM();
    n->db = db;
    int rc = cs_txn_freeze(db, at, &n->t);
    if (rc != CS_OK) { free(n); return rc; }
    *out = n;
    return CS_OK;
}

/* Moves the notifier to `nt` (a transaction it now owns, at a version no older than its own)
 * and computes every watch's changes up to it. */
static int advance_with(cs_notifier *n, cs_txn *nt, bool *moved);

int cs_notifier_advance(cs_notifier *n, bool *moved)
{
    if (moved) *moved = false;
    cs_txn *nt;
    TRY(cs_txn_begin(n->db, CS_TXN_READ, &nt));
    return advance_with(n, nt, moved);
}

int cs_notifier_advance_to(cs_notifier *n, const cs_txn *at, bool *moved)
{
    if (moved) *moved = false;
    if (at->version < n->t->version)
        return cs_fail(CS_MISUSE, 0, "cs_notifier_advance_to: version %llu is older than the notifier's %llu",
                       (unsigned long long)at->version, (unsigned long long)n->t->version);
    /* a frozen transaction reads exactly `at`'s version and pins it */
    cs_txn *nt;
    TRY(cs_txn_freeze(n->db, at, &nt));
    return advance_with(n, nt, moved);
}

int cs_watch_move(cs_watch *w, cs_notifier *to)
{
    cs_notifier *from = w->n;
    if (from->t->f != to->t->f)
        return cs_fail(CS_MISUSE, 0, "cs_watch_move: the notifiers read different files");
    if (from->t->version != to->t->version)
        return cs_fail(CS_MISUSE, 0, "cs_watch_move: the notifiers read versions %llu and %llu",
                       (unsigned long long)from->t->version, (unsigned long long)to->t->version);
    TRY(grow((void **)&to->w, &to->capw, to->nw, sizeof *to->w));
    for (size_t i = 0; i < from->nw; i++)
        if (from->w[i] == w) {
            from->w[i] = from->w[--from->nw];
            break;
        }
    w->n = to;
    if (w->q) query_set_txn(w->q, to->t, false);
    watch_attach(w);
    return CS_OK;
}

static int advance_with(cs_notifier *n, cs_txn *nt, bool *moved)
{
    if (nt->version == n->t->version) {
        cs_txn_end(nt);
        return CS_OK;
    }
    summary *s = &n->s;
    summary_reset(s);
    cs_changes *ch;
    int rc = cs_changes_open(nt, n->t->version, &ch);
    if (rc == CS_NOTFOUND) {
        s->lost = true;
        rc = CS_OK;
    } else if (rc == CS_OK) {
        cs_change c;
        while ((rc = cs_changes_next(ch, &c)) == CS_OK)
            if ((rc = summary_add(s, &c)) != CS_OK) break;
        if (rc == CS_NOTFOUND) rc = CS_OK;
        cs_changes_close(ch);
    }
    if (rc != CS_OK) { cs_txn_end(nt); return rc; }
    summary_finish(s);
    rc = derive_backlinks(n, n->t, nt);
    if (rc != CS_OK) { cs_txn_end(nt); return rc; }
    cs_txn *old = n->t;
    n->t = nt;
    n->old = old;
    for (size_t i = 0; i < n->nw && rc == CS_OK; i++) rc = watch_round(n->w[i]);
    n->old = NULL;
    cs_txn_end(old);
    if (moved) *moved = true;
    return rc;
}

/* futex_waitv (Linux 5.16): one wait on the shared commit counter and the private wake word. */
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
struct notify_waitv {
    uint64_t val;
    uint64_t uaddr;
    uint32_t flags;
    uint32_t reserved;
};
#define NOTIFY_FUTEX_32 2u
#define NOTIFY_FUTEX_PRIVATE 128u

/* How cs_notifier_wait waits: 0 not decided yet, 1 futex_waitv, 2 in slices (the kernel lacks
 * futex_waitv, a seccomp filter refuses it, or CSTORE_NO_FUTEX_WAITV asks for the slices). */
static int waitv_state;

/* Decides waitv_state once: the environment first, then a probe (no futexes at all: EINVAL
 * where the call exists, before anything else is looked at). */
static bool waitv_usable(void)
{
    int st = __atomic_load_n(&waitv_state, __ATOMIC_ACQUIRE);
    if (st == 0) {
        const char *e = getenv("CSTORE_NO_FUTEX_WAITV");
        if (e && *e && strcmp(e, "0") != 0) {
            st = 2;
        } else {
            int saved = errno;
            long r = syscall(SYS_futex_waitv, NULL, 0, 0, NULL, CLOCK_MONOTONIC);
            st = r < 0 && errno == EINVAL ? 1 : 2;
            errno = saved;
        }
        __atomic_store_n(&waitv_state, st, __ATOMIC_RELEASE);
    }
    return st == 1;
}

bool cs_notifier_waitv(void) { return waitv_usable(); }

int cs_notifier_wait(cs_notifier *n, uint32_t seen, int timeout_ms)
{
    uint32_t *counter = lock_commit_word(n->db->f);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (timeout_ms >= 0) {
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
    }
    for (;;) {
        uint32_t wk = __atomic_load_n(&n->wake, __ATOMIC_SEQ_CST);
        if (wk != n->wake_seen) { n->wake_seen = wk; return CS_OK; }
        if (counter && __atomic_load_n(counter, __ATOMIC_SEQ_CST) != seen) return CS_OK;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left_ms = timeout_ms < 0 ? -1
                                      : (long)(deadline.tv_sec - now.tv_sec) * 1000 + (deadline.tv_nsec - now.tv_nsec) / 1000000L;
        if (timeout_ms >= 0 && left_ms <= 0) return cs_fail(CS_BUSY, ETIMEDOUT, "no commit within %d ms", timeout_ms);
        if (counter && waitv_usable()) {
            struct notify_waitv v[2] = {
                {seen, (uint64_t)(uintptr_t)counter, NOTIFY_FUTEX_32, 0},
                {wk, (uint64_t)(uintptr_t)&n->wake, NOTIFY_FUTEX_32 | NOTIFY_FUTEX_PRIVATE, 0},
            };
            lock_sleep_begin(n->db->f, &n->sleeping);
            long r = syscall(SYS_futex_waitv, v, 2, 0, timeout_ms < 0 ? NULL : &deadline, CLOCK_MONOTONIC);
            int e = errno;
            lock_sleep_end(n->db->f, &n->sleeping);
            errno = e;
            /* any failure but a changed word, a timeout or a signal: wait in slices from now on
             * (looping on a call that fails at once would spin) */
            if (r < 0 && errno != EAGAIN && errno != ETIMEDOUT && errno != EINTR)
                __atomic_store_n(&waitv_state, 2, __ATOMIC_RELEASE);
            continue;
        }
        /* no futex_waitv: wait on one word for a slice, then look at the other */
        long slice = left_ms < 0 || left_ms > 20 ? 20 : left_ms;
        struct timespec ts = {0, slice * 1000000L};
        if (counter) {
            lock_sleep_begin(n->db->f, &n->sleeping);
            syscall(SYS_futex, counter, FUTEX_WAIT, seen, &ts, NULL, 0);
            lock_sleep_end(n->db->f, &n->sleeping);
        } else syscall(SYS_futex, &n->wake, FUTEX_WAIT_PRIVATE, wk, left_ms < 0 ? NULL : &ts, NULL, 0);
    }
}

void cs_notifier_wake(cs_notifier *n)
{
    __atomic_add_fetch(&n->wake, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &n->wake, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* ---- key paths -------------------------------------------------------------------------- */

static int path_push(cs_watch *w, size_t *cap, const cs_keypath *p, const uint32_t *tabs, const bstep *back)
{
    if (w->npaths >= 4096) return CS_OK; /* the default expansion is bounded */
    if (w->npaths == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        cs_keypath *x = realloc(w->paths, nc * sizeof *x);
        if (!x) return NOMEM();
        w->paths = x;
        uint32_t (*y)[CS_KEYPATH_MAX] = realloc(w->ptab, nc * sizeof *y);
        if (!y) return NOMEM();
        w->ptab = y;
        bstep (*z)[CS_KEYPATH_MAX] = realloc(w->pback, nc * sizeof *z);
        if (!z) return NOMEM();
        w->pback = z;
        *cap = nc;
    }
    w->paths[w->npaths] = *p;
    memcpy(w->ptab[w->npaths], tabs, sizeof *w->ptab);
    for (size_t i = 0; i < CS_KEYPATH_MAX; i++) {
        w->pback[w->npaths][i] = back ? back[i] : (bstep){CS_NONE, CS_NONE};
        if (i >= p->n || w->pback[w->npaths][i].origin == CS_NONE) continue;
        w->via_backlinks = true;
        bool seen = false;
        for (size_t k = 0; k < w->nbsteps && !seen; k++)
            seen = w->bsteps[k].table == tabs[i] && w->bsteps[k].col == p->cols[i];
        if (seen) continue;
        TRY(grow((void **)&w->bsteps, &w->capbsteps, w->nbsteps, sizeof *w->bsteps));
        w->bsteps[w->nbsteps++] = (backstep){tabs[i], p->cols[i], back[i]};
    }
    w->npaths++;
    return CS_OK;
}

/* Every column of `table` (and, while depth allows, of the tables its links reach). */
static int expand_default(cs_watch *w, cs_txn *t, uint32_t table, cs_keypath *p, uint32_t *tabs, uint32_t depth,
                          size_t *cap)
{
    cs_table_info ti;
    if (cs_table_info_get(t, table, &ti) != CS_OK) return CS_OK;
    for (uint32_t c = 0; c < ti.col_slots; c++) {
        cs_column_info ci;
        if (cs_column_info_get(t, table, c, &ci) != CS_OK || ci.type == CS_TYPE_BACKLINK) continue;
        p->cols[p->n] = c;
        tabs[p->n] = table;
        p->n++;
        TRY(path_push(w, cap, p, tabs, NULL));
        if (ci.type == CS_TYPE_LINK && p->n < depth) TRY(expand_default(w, t, ci.target, p, tabs, depth, cap));
        p->n--;
    }
    return CS_OK;
}

/* Appends key paths given from the elements' table (checked against the schema). */
static int paths_add(cs_watch *w, const cs_keypath *paths, size_t npaths)
{
    cs_txn *t = w->n->t;
    for (size_t i = 0; i < npaths; i++) {
        const cs_keypath *p = &paths[i];
        if (p->n < 1 || p->n > CS_KEYPATH_MAX) return cs_fail(CS_MISUSE, 0, "a key path has %u columns", p->n);
        uint32_t tabs[CS_KEYPATH_MAX], table = w->root;
        bstep back[CS_KEYPATH_MAX];
        for (uint32_t j = 0; j < p->n; j++) {
            cs_column_info ci;
            if (table == CS_NONE || cs_column_info_get(t, table, p->cols[j], &ci) != CS_OK)
                return cs_fail(CS_NOTFOUND, 0, "key path column %u of table %u does not exist", p->cols[j], table);
            tabs[j] = table;
            back[j] = (bstep){CS_NONE, CS_NONE};
            /* a backlink column leads to its origin table, as a link leads to its target */
            if (ci.type == CS_TYPE_BACKLINK) back[j] = (bstep){ci.target, ci.origin_col};
            table = ci.type == CS_TYPE_LINK || ci.type == CS_TYPE_BACKLINK ? ci.target : CS_NONE;
            if (j + 1 < p->n && table == CS_NONE)
                return cs_fail(CS_MISUSE, 0, "key path goes on after a column that is not a link");
        }
        TRY(path_push(w, &w->cappaths, p, tabs, back));
    }
    return CS_OK;
}

static int watch_paths(cs_watch *w, const cs_keypath *paths, size_t npaths, int flags)
{
    if (w->root == CS_NONE) return CS_OK;
    if (!npaths) {
        cs_keypath p = {{0}, 0};
        uint32_t tabs[CS_KEYPATH_MAX];
        return expand_default(w, w->n->t, w->root, &p, tabs, flags == CS_WATCH_SHALLOW ? 1 : CS_KEYPATH_MAX,
                              &w->cappaths);
    }
    return paths_add(w, paths, npaths);
}

/* The objects of `table` reached from `keys` (of the table step i's column is in) by walking
 * back along the path's columns i-1 .. 0 (backlinks, in the notifier's version). */
static int walk_back(cs_watch *w, size_t pi, size_t i, keyvec *keys)
{
    cs_txn *t = w->n->t;
    keyvec next = {0};
    int rc = CS_OK;
    for (size_t j = i; j-- > 0 && rc == CS_OK;) {
        next.n = 0;
        uint32_t from = w->ptab[pi][j + 1], origin = w->ptab[pi][j], col = w->paths[pi].cols[j];
        const bstep *back = &w->pback[pi][j];
        /* a backlink step goes back along the link it mirrors: the objects whose backlinks hold
         * an object are the ones that object links to */
        for (size_t k = 0; k < keys->n && rc == CS_OK && back->origin != CS_NONE; k++)
            rc = link_targets(t, from, keys->v[k], back->col, &next);
        for (size_t k = 0; k < keys->n && rc == CS_OK && back->origin == CS_NONE; k++) {
            cs_obj o;
            if (cs_obj_open(t, from, keys->v[k], &o) != CS_OK) continue;
            size_t cnt = 0;
            if (cs_obj_backlink_count(&o, origin, col, &cnt) != CS_OK) continue;
            for (size_t b = 0; b < cnt && rc == CS_OK; b++) {
                int64_t ok;
                if (cs_obj_backlink_get(&o, origin, col, b, &ok) == CS_OK) rc = keyvec_push(&next, ok);
            }
        }
        keyvec_sort_unique(&next);
        keyvec tmp = *keys;
        *keys = next;
        next = tmp;
    }
    free(next.v);
    return rc;
}

/* Root keys path pi marks modified this round, appended to out. */
static int path_dirty(cs_watch *w, size_t pi, keyvec *out)
{
    const summary *s = &w->n->s;
    const cs_keypath *p = &w->paths[pi];
    for (uint32_t i = 0; i < p->n; i++) {
        uint32_t table = w->ptab[pi][i];
        if (!touched(s, table)) continue;
        size_t lo, hi;
        triples_of(s, table, p->cols[i], &lo, &hi);
        if (lo == hi) continue;
        if (i == 0) {
            for (size_t k = lo; k < hi; k++) TRY(keyvec_push(out, s->w[k].key));
            continue;
        }
        keyvec keys = {0};
        int rc = CS_OK;
        for (size_t k = lo; k < hi && rc == CS_OK; k++) rc = keyvec_push(&keys, s->w[k].key);
        if (rc == CS_OK) rc = walk_back(w, pi, i, &keys);
        for (size_t k = 0; k < keys.n && rc == CS_OK; k++) rc = keyvec_push(out, keys.v[k]);
        free(keys.v);
        TRY(rc);
    }
    return CS_OK;
}

/* Every root key modified this round (sorted, unique) into w->dirty. */
static int watch_dirty(cs_watch *w)
{
    w->dirty.n = 0;
    for (size_t i = 0; i < w->nmod; i++) TRY(path_dirty(w, i, &w->dirty));
    keyvec_sort_unique(&w->dirty);
    return CS_OK;
}

/* Whether anything this watch looks at was touched this round. */
static bool watch_touched(const cs_watch *w)
{
    const summary *s = &w->n->s;
    if (s->lost || s->schema) return true;
    if (touched(s, w->table)) return true;
    if (w->kind == W_BACKLINKS && touched(s, w->origin_table)) return true;
    for (size_t i = 0; i < w->npaths; i++)
        for (uint32_t j = 0; j < w->paths[i].n; j++)
            if (touched(s, w->ptab[i][j])) return true;
    for (size_t i = 0; i < w->deps.n; i++)
        if (touched(s, w->deps.d[i].table)) return true;
    return false;
}

/* Whether a column the watch's query dependencies name was written, or objects of their tables
 * created or deleted (cs_watch_depend_query, when its paths could not all be key paths). */
static bool deps_written(const cs_watch *w)
{
    const summary *s = &w->n->s;
    for (size_t i = 0; i < w->deps.n; i++) {
        const query_dep *d = &w->deps.d[i];
        if (written(s, d->table, d->col) || runs_touch(s->created, s->ncreated, d->table) ||
            runs_touch(s->deleted, s->ndeleted, d->table))
            return true;
    }
    return false;
}

/* Marks the watch stale when this round changed something its query dependencies
 * (cs_watch_depend_query) read of one of its `n` elements, `key(i)` from `ctx`. */
static int mark_stale(cs_watch *w, size_t n, int (*key)(void *ctx, size_t i, int64_t *k), void *ctx)
{
    if (w->stale) return CS_OK;
    if (w->stale_deps) {
        w->stale = deps_written(w);
        return CS_OK;
    }
    if (w->nmod == w->npaths) return CS_OK;
    keyvec dk = {0};
    int rc = CS_OK;
    for (size_t i = w->nmod; i < w->npaths && rc == CS_OK; i++) rc = path_dirty(w, i, &dk);
    keyvec_sort_unique(&dk);
    for (size_t i = 0; i < n && dk.n && rc == CS_OK && !w->stale; i++) {
        int64_t k;
        rc = key(ctx, i, &k);
        if (rc == CS_OK && keyvec_has(&dk, k)) w->stale = true;
    }
    free(dk.v);
    return rc;
}

/* ---- watches ---------------------------------------------------------------------------- */

static int watch_new(cs_notifier *n, int kind, cs_watch **out)
{
    *out = NULL;
    TRY(grow((void **)&n->w, &n->capw, n->nw, sizeof *n->w));
    cs_watch *w = calloc(1, sizeof *w);
    if (!w) return NOMEM();
    w->n = n;
    w->kind = kind;
    w->root = CS_NONE;
    w->initial = true;
    *out = w;
    return CS_OK;
}

static void watch_attach(cs_watch *w)
{
    w->n->w[w->n->nw++] = w;
}

static void watch_destroy(cs_watch *w)
{
    if (w->q) cs_query_free(w->q);
    query_deps_free(&w->deps);
    free(w->paths);
    free(w->ptab);
    free(w->pback);
    free(w->bsteps);
    free(w->keys.v);
    pending_free(&w->pend);
    free(w->cols);
    for (size_t i = 0; i < w->nbkeys; i++) free(w->bkeys[i]);
    free(w->bkeys);
    free(w->bkeylen);
    for (size_t i = 0; i < w->nokeys; i++) free(w->okeys[i]);
    free(w->okeys);
    free(w->del.v);
    free(w->ins.v);
    free(w->mod.v);
    free(w->modnew.v);
    free(w->kv);
    free(w->dirty.v);
    for (uint8_t i = 0; i < w->npath; i++) free(w->path[i].key);
    free(w);
}

void cs_watch_free(cs_watch *w)
{
    if (!w) return;
    cs_notifier *n = w->n;
    for (size_t i = 0; i < n->nw; i++)
        if (n->w[i] == w) {
            n->w[i] = n->w[--n->nw];
            break;
        }
    watch_destroy(w);
}

/* The collection a collection watch observes, in version `t` (for a nested watch: the
 * collection its path leads to; CS_TYPE when that is no longer a collection of the watch's
 * kind, CS_NOTFOUND when the path leads nowhere or to another collection than the one watched,
 * one made again there with another identity). */
/* The position in list `c` (of Mixed values) of the nested collection with identity `id`. */
static int find_identity(cs_coll *c, uint32_t id, int64_t *out)
{
    if (cs_coll_kind_of(c) != CS_COLL_LIST) return cs_fail(CS_NOTFOUND, 0, "not in a list");
    size_t n;
    TRY(cs_coll_size(c, &n));
    for (size_t j = 0; j < n; j++) {
        cs_value v;
        TRY(cs_list_get(c, j, &v));
        if (v.type != CS_TYPE_LIST && v.type != CS_TYPE_DICT) continue;
        cs_coll e;
        if (cs_coll_open_nested(c, (int64_t)j, NULL, 0, &e) == CS_OK && cs_coll_identity(&e) == id) {
            *out = (int64_t)j;
            return CS_OK;
        }
    }
    return cs_fail(CS_NOTFOUND, 0, "the nested collection was replaced by another one");
}

/* `open_coll_in`; `follow`: a nested watch's list step whose collection moved within its list
 * takes its new position (the notifier's own version; an older one only finds it). */
static int open_coll_at(cs_watch *w, cs_txn *t, cs_coll *c, bool follow)
{
    cs_obj o;
    TRY(cs_obj_open(t, w->table, w->key, &o));
    TRY(cs_coll_open(&o, w->col, c));
    bool nested = w->kind == W_NESTED;
    if (nested && w->identity && cs_coll_identity(c) != w->identity)
        return cs_fail(CS_NOTFOUND, 0, "the nested collection was replaced by another one");
    for (uint8_t i = 0; i < w->npath; i++) {
        cs_coll nc;
        int rc = cs_coll_open_nested(c, w->path[i].index, w->path[i].key, w->path[i].key_len, &nc);
        uint32_t want = nested ? w->path[i].identity : 0;
        if (want && (rc != CS_OK || cs_coll_identity(&nc) != want)) {
            /* elsewhere in its list (elements inserted or removed before it, or moved), as
             * realm-core finds a collection by its key; a map key names its collection */
            int64_t j;
            if (w->path[i].key) return cs_fail(CS_NOTFOUND, 0, "the nested collection was replaced by another one");
            TRY(find_identity(c, want, &j));
            if (follow) w->path[i].index = j;
            rc = cs_coll_open_nested(c, j, NULL, 0, &nc);
        }
        TRY(rc);
        *c = nc;
    }
    if (nested && (cs_coll_kind_of(c) == CS_COLL_MAP) != w->map)
        return cs_fail(CS_TYPE, 0, "the nested collection was replaced by one of another kind");
    return CS_OK;
}

static int open_coll_in(cs_watch *w, cs_txn *t, cs_coll *c) { return open_coll_at(w, t, c, false); }

/* The collection a collection watch observes, in the notifier's version. */
static int open_coll(cs_watch *w, cs_coll *c) { return open_coll_at(w, w->n->t, c, true); }

/* The backlink keys of a backlinks watch now, into w->keys (CS_NOTFOUND: the target is gone). */
static int backlink_keys(cs_watch *w, keyvec *out)
{
    out->n = 0;
    cs_obj o;
    TRY(cs_obj_open(w->n->t, w->table, w->key, &o));
    size_t cnt;
    TRY(cs_obj_backlink_count(&o, w->origin_table, w->origin_col, &cnt));
    for (size_t i = 0; i < cnt; i++) {
        int64_t k;
        TRY(cs_obj_backlink_get(&o, w->origin_table, w->origin_col, i, &k));
        TRY(keyvec_push(out, k));
    }
    return CS_OK;
}

static int query_all_keys(cs_watch *w, keyvec *out)
{
    int64_t *keys;
    size_t n;
    TRY(cs_query_keys(w->q, &keys, &n));
    free(out->v);
    out->v = keys;
    out->n = out->cap = n;
    return CS_OK;
}

/* Saves a map's keys as they are now (the base the next take's deletions name); the keys they
 * replace live until the next snapshot, since the take that came before points into them. */
static int map_snapshot(cs_watch *w)
{
    for (size_t i = 0; i < w->nokeys; i++) free(w->okeys[i]);
    free(w->okeys);
    w->okeys = w->bkeys;
    w->nokeys = w->nbkeys;
    w->bkeys = NULL;
    w->nbkeys = 0;
    cs_coll c;
    size_t n = 0;
    if (open_coll(w, &c) != CS_OK || cs_coll_size(&c, &n) != CS_OK) n = 0;
    char **k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return NOMEM();
    w->bkeys = k;
    size_t *l = realloc(w->bkeylen, (n ? n : 1) * sizeof *l);
    if (!l) return NOMEM();
    w->bkeylen = l;
    for (size_t i = 0; i < n; i++) {
        cs_value key, val;
        TRY(cs_map_get_at(&c, i, &key, &val));
        char *s = malloc(key.v.bytes.len + 1);
        if (!s) return NOMEM();
        if (key.v.bytes.len) memcpy(s, key.v.bytes.ptr, key.v.bytes.len);
        s[key.v.bytes.len] = 0;
        w->bkeys[i] = s;
        w->bkeylen[i] = key.v.bytes.len;
        w->nbkeys = i + 1;
    }
    return CS_OK;
}

static int watch_start(cs_watch *w, const cs_keypath *paths, size_t npaths, int flags)
{
    TRY(watch_paths(w, paths, npaths, flags));
    w->nmod = w->npaths;
    size_t len = 0;
    switch (w->kind) {
    case W_QUERY:
        TRY(query_deps_get(w->q, &w->deps));
        TRY(query_all_keys(w, &w->keys));
        len = w->keys.n;
        break;
    case W_BACKLINKS:
        TRY(backlink_keys(w, &w->keys));
        len = w->keys.n;
        break;
    case W_COLL:
    case W_NESTED: {
        cs_coll c;
        TRY(open_coll(w, &c));
        TRY(cs_coll_size(&c, &len));
        if (w->map) TRY(map_snapshot(w));
        break;
    }
    default:
        break;
    }
    pending_reset(&w->pend, len);
    watch_attach(w);
    return CS_OK;
}

int cs_watch_query(cs_notifier *n, uint32_t table, const char *text, size_t len, const cs_value *args, size_t nargs,
                   const cs_name_map *names, const cs_keypath *paths, size_t npaths, int flags, cs_watch **out)
{
    cs_watch *w;
    TRY(watch_new(n, W_QUERY, &w));
    w->table = table;
    w->root = table;
    w->links = true;
    int rc = cs_query_new_named(n->t, table, text, len, args, nargs, names, &w->q);
    if (rc == CS_OK) rc = watch_start(w, paths, npaths, flags);
    if (rc != CS_OK) { watch_destroy(w); return rc; }
    *out = w;
    return CS_OK;
}

int cs_watch_coll(cs_notifier *n, uint32_t table, int64_t key, uint32_t col, const cs_keypath *paths, size_t npaths,
                  int flags, cs_watch **out)
{
    cs_column_info ci;
    TRY(cs_column_info_get(n->t, table, col, &ci));
    if (ci.coll == CS_COLL_NONE) return cs_fail(CS_TYPE, 0, "column %u is not a collection", col);
    cs_watch *w;
    TRY(watch_new(n, W_COLL, &w));
    w->table = table;
    w->key = key;
    w->col = col;
    w->map = ci.coll == CS_COLL_MAP;
    w->links = ci.type == CS_TYPE_LINK;
    w->mixed = ci.type == CS_TYPE_MIXED && ci.coll != CS_COLL_SET; /* sets hold no collections */
    if (w->links) w->root = ci.target;
    int rc = watch_start(w, paths, npaths, flags);
    if (rc != CS_OK) { watch_destroy(w); return rc; }
    *out = w;
    return CS_OK;
}

int cs_watch_nested(cs_notifier *n, const cs_coll *coll, cs_watch **out)
{
    if (coll->depth == 0) {
        cs_column_info ci;
        TRY(cs_column_info_get(n->t, coll->obj.table, coll->col, &ci));
        if (ci.coll != CS_COLL_NONE) return cs_fail(CS_MISUSE, 0, "not a collection nested in a Mixed value");
    }
    if (coll->depth >= NEST_MAX) return cs_fail(CS_MISUSE, 0, "nested too deep");
    cs_watch *w;
    TRY(watch_new(n, W_NESTED, &w));
    w->table = coll->obj.table;
    w->key = coll->obj.key;
    w->col = coll->col;
    w->map = cs_coll_kind_of(coll) == CS_COLL_MAP;
    int rc = CS_OK;
    /* the identities on the path, read where `coll` reads */
    {
        cs_obj o = coll->obj;
        cs_coll cur;
        rc = cs_coll_open(&o, coll->col, &cur);
        if (rc == CS_OK) w->identity = cs_coll_identity(&cur);
        for (uint8_t i = 0; i < coll->depth && rc == CS_OK; i++) {
            cs_coll nc;
            rc = cs_coll_open_nested(&cur, coll->path[i].index, coll->path[i].key, coll->path[i].key_len, &nc);
            if (rc == CS_OK) {
                w->path[i].identity = cs_coll_identity(&nc);
                cur = nc;
            }
        }
    }
    for (uint8_t i = 0; i < coll->depth && rc == CS_OK; i++) {
        w->path[i].index = coll->path[i].index;
        w->path[i].key_len = coll->path[i].key_len;
        if (coll->path[i].key) {
            w->path[i].key = malloc(coll->path[i].key_len + 1);
            if (!w->path[i].key) rc = NOMEM();
            else {
                if (coll->path[i].key_len) memcpy(w->path[i].key, coll->path[i].key, coll->path[i].key_len);
                w->path[i].key[coll->path[i].key_len] = 0;
            }
        }
        w->npath = (uint8_t)(i + 1);
    }
    if (rc == CS_OK) rc = watch_start(w, NULL, 0, CS_WATCH_SHALLOW);
    if (rc != CS_OK) { watch_destroy(w); return rc; }
    *out = w;
    return CS_OK;
}

int cs_watch_backlinks(cs_notifier *n, uint32_t table, int64_t key, uint32_t origin_table, uint32_t origin_col,
                       const cs_keypath *paths, size_t npaths, int flags, cs_watch **out)
{
    cs_watch *w;
    TRY(watch_new(n, W_BACKLINKS, &w));
    w->table = table;
    w->key = key;
    w->origin_table = origin_table;
    w->origin_col = origin_col;
    w->root = origin_table;
    w->links = true;
    int rc = watch_start(w, paths, npaths, flags);
    if (rc != CS_OK) { watch_destroy(w); return rc; }
    *out = w;
    return CS_OK;
}

int cs_watch_object(cs_notifier *n, uint32_t table, int64_t key, const cs_keypath *paths, size_t npaths, int flags,
                    cs_watch **out)
{
    cs_obj o;
    TRY(cs_obj_open(n->t, table, key, &o));
    cs_watch *w;
    TRY(watch_new(n, W_OBJECT, &w));
    w->table = table;
    w->key = key;
    w->root = table;
    w->initial = false; /* objects have no initial change set */
    int rc = watch_start(w, paths, npaths, flags);
    if (rc != CS_OK) { watch_destroy(w); return rc; }
    *out = w;
    return CS_OK;
}

int cs_watch_depend_query(cs_watch *w, const char *text, size_t len, const cs_value *args, size_t nargs,
                          const cs_name_map *names)
{
    if (w->kind != W_COLL && w->kind != W_BACKLINKS)
        return cs_fail(CS_MISUSE, 0, "cs_watch_depend_query: not a watch over a collection or backlinks");
    /* a collection of values: the query reads the values, whose changes the watch has */
    if (!w->links || w->root == CS_NONE) return CS_OK;
    cs_query *q;
    TRY(cs_query_new_named(w->n->t, w->root, text, len, args, nargs, names, &q));
    query_keypaths k = {0};
    int rc = query_keypaths_get(q, &k);
    if (rc == CS_OK && !k.whole && w->npaths + k.n > 4096) k.whole = true;
    if (rc == CS_OK && !k.whole) {
        size_t before = w->npaths;
        rc = paths_add(w, k.p, k.n);
        if (rc != CS_OK) w->npaths = before;
    }
    if (rc == CS_OK && k.whole) {
        /* what no key path names: every column the query reads, whatever object it is in */
        rc = query_deps_get(q, &w->deps);
        if (rc == CS_OK) w->stale_deps = true;
    }
    query_keypaths_free(&k);
    cs_query_free(q);
    return rc;
}

/* ---- rounds ----------------------------------------------------------------------------- */

static int col_add(cs_watch *w, uint32_t col)
{
    for (size_t i = 0; i < w->ncols; i++)
        if (w->cols[i] == col) return CS_OK;
    TRY(grow((void **)&w->cols, &w->capcols, w->ncols, sizeof *w->cols));
    w->cols[w->ncols++] = col;
    return CS_OK;
}

/* Whether (table, col, key) was written this round: one binary search of the sorted, unique
 * triples (not the run of the column's keys first, which a commit writing the column on many
 * objects makes long). */
static bool written_key(const summary *s, uint32_t table, uint32_t col, int64_t key)
{
    wtriple k = {table, col, key};
    size_t a = 0, b = s->nw;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        int c = cmp_triple(&s->w[m], &k);
        if (c == 0) return true;
        if (c < 0) a = m + 1;
        else b = m;
    }
    return false;
}

static int round_object(cs_watch *w)
{
    const summary *s = &w->n->s;
    if (w->deleted) return CS_OK;
    cs_obj o;
    if (in_runs(s->deleted, s->ndeleted, w->table, w->key) || cs_obj_open(w->n->t, w->table, w->key, &o) != CS_OK) {
        w->deleted = w->deleted_new = true;
        return CS_OK;
    }
    keyvec hit = {0};
    int rc = CS_OK;
    for (size_t i = 0; i < w->npaths && rc == CS_OK; i++) {
        const cs_keypath *p = &w->paths[i];
        /* the path's first column written on the object itself: one search of the written
         * triples, where path_dirty would list every key written in that column; a one-column
         * path (a shallow watch's every path) reaches the object no other way */
        if (written_key(s, w->ptab[i][0], p->cols[0], w->key)) {
            rc = col_add(w, p->cols[0]);
            continue;
        }
        if (p->n == 1) continue;
        hit.n = 0;
        rc = path_dirty(w, i, &hit);
        keyvec_sort_unique(&hit);
        if (rc == CS_OK && keyvec_has(&hit, w->key)) rc = col_add(w, p->cols[0]);
    }
    free(hit.v);
    return rc;
}

/* Replays the collection operations on (table, key, col) onto `pend`. */
static int replay_into(cs_watch *w, pending *pend)
{
    const summary *s = &w->n->s;
    for (size_t i = 0; i < s->ncoll; i++) {
        const cs_change *c = &s->coll[i];
        if (c->table != w->table || c->key != w->key || c->col != w->col) continue;
        switch (c->kind) {
        case CS_CHANGE_INSERT: TRY(pending_insert(pend, (size_t)c->a)); break;
        case CS_CHANGE_ERASE: TRY(pending_erase(pend, (size_t)c->a)); break;
        case CS_CHANGE_REPLACE: TRY(pending_modify(pend, (size_t)c->a)); break;
        case CS_CHANGE_MOVE:
            TRY(pending_erase(pend, (size_t)c->a));
            TRY(pending_insert(pend, (size_t)c->b));
            break;
        case CS_CHANGE_SWAP:
            if (c->a == c->b) break;
            TRY(pending_erase(pend, (size_t)c->a));
            TRY(pending_insert(pend, (size_t)c->a));
            TRY(pending_erase(pend, (size_t)c->b));
            TRY(pending_insert(pend, (size_t)c->b));
            break;
        case CS_CHANGE_CLEAR: TRY(pending_clear(pend)); break;
        default: break;
        }
    }
    return CS_OK;
}

static int replay(cs_watch *w) { return replay_into(w, &w->pend); }

/* A List or Map of Mixed values whose column was written: this round's operations replayed on
 * their own, then every element kept by them that holds (or held) a nested collection compared
 * with the element it came from in the previous version; one whose content differs is modified
 * (a write inside it records only the column). *done: false when the records do not describe
 * the collection, left to the caller. */
static int replay_mixed(cs_watch *w, cs_coll *now, size_t len, bool *done)
{
    *done = false;
    cs_coll oc;
    if (!w->n->old || open_coll_in(w, w->n->old, &oc) != CS_OK) return CS_OK;
    pending tp = {0};
    idxvec del = {0}, ins = {0}, mod = {0}, modnew = {0};
    rdiff d = {{0}, {0}, {0}};
    pending_reset(&tp, pending_len(&w->pend));
    int rc = replay_into(w, &tp);
    if (rc == CS_OK && pending_len(&tp) == len) {
        rc = pending_take(&tp, &del, &ins, &mod, &modnew);
        size_t o = 0, di = 0, ii = 0, mi = 0;
        for (size_t j = 0; j < len && rc == CS_OK; j++) {
            if (ii < ins.n && ins.v[ii] == j) { ii++; continue; }
            while (di < del.n && del.v[di] == o) { di++; o++; }
            while (mi < mod.n && mod.v[mi] < o) rc = idxvec_push(&d.mod, mod.v[mi++]);
            bool changed = false;
            if (rc == CS_OK && !(mi < mod.n && mod.v[mi] == o)) rc = nested_elem_changed(&oc, o, now, j, &changed);
            if (rc == CS_OK && changed) rc = idxvec_push(&d.mod, o);
            o++;
        }
        while (rc == CS_OK && mi < mod.n) rc = idxvec_push(&d.mod, mod.v[mi++]);
        d.del = del;
        d.ins = ins;
        if (rc == CS_OK) rc = pending_apply(&w->pend, &d);
        if (rc == CS_OK) *done = true;
        d.del = (idxvec){0};
        d.ins = (idxvec){0};
    }
    pending_free(&tp);
    free(del.v);
    free(ins.v);
    free(mod.v);
    free(modnew.v);
    rdiff_free(&d);
    return rc;
}

typedef struct coll_at {
    cs_coll *c;
    bool map;
} coll_at;

/* The key of element i of a collection of links (-1 for a null link). */
static int coll_key(void *ctx, size_t i, int64_t *key)
{
    coll_at *a = ctx;
    cs_value k, v;
    if (a->map) TRY(cs_map_get_at(a->c, i, &k, &v));
    else TRY(cs_list_get(a->c, i, &v));
    *key = v.type == CS_TYPE_LINK ? v.v.link.key : -1;
    return CS_OK;
}

static int round_coll(cs_watch *w)
{
    const summary *s = &w->n->s;
    if (w->deleted) return CS_OK;
    cs_coll c;
    size_t len = 0;
    if (in_runs(s->deleted, s->ndeleted, w->table, w->key) || open_coll(w, &c) != CS_OK) {
        w->deleted = w->deleted_new = true;
        return pending_clear(&w->pend);
    }
    TRY(cs_coll_size(&c, &len));
    if (s->lost || s->schema) {
        /* no usable history: every element is replaced */
        TRY(pending_clear(&w->pend));
        for (size_t i = 0; i < len; i++) TRY(pending_insert(&w->pend, i));
        return CS_OK;
    }
    bool done = false;
    if (w->mixed && written_key(s, w->table, w->col, w->key)) TRY(replay_mixed(w, &c, len, &done));
    if (!done) TRY(replay(w));
    if (pending_len(&w->pend) != len) {
        /* the records did not describe the collection (a whole-value write): start over */
        TRY(pending_clear(&w->pend));
        for (size_t i = 0; i < len; i++) TRY(pending_insert(&w->pend, i));
    }
    if (!w->links) return CS_OK;
    TRY(watch_dirty(w));
    for (size_t i = 0; i < len && w->dirty.n; i++) {
        cs_value k, v;
        if (w->map) TRY(cs_map_get_at(&c, i, &k, &v));
        else TRY(cs_list_get(&c, i, &v));
        if (v.type == CS_TYPE_LINK && keyvec_has(&w->dirty, v.v.link.key)) TRY(pending_modify(&w->pend, i));
    }
    coll_at at = {&c, w->map};
    return mark_stale(w, len, coll_key, &at);
}

/* A collection nested in a Mixed value: the history names only the owning property, so when
 * that was written the collection's content before (the old version, still pinned) and now
 * are compared. */
static int round_nested(cs_watch *w)
{
    const summary *s = &w->n->s;
    if (w->deleted) return CS_OK;
    bool gone = in_runs(s->deleted, s->ndeleted, w->table, w->key);
    if (!gone && !s->lost && !s->schema && !written_key(s, w->table, w->col, w->key)) return CS_OK;
    cs_coll now, old;
    if (gone || open_coll(w, &now) != CS_OK) {
        /* the owner deleted, or the path no longer leads to a collection of this kind */
        w->deleted = w->deleted_new = true;
        return pending_clear(&w->pend);
    }
    size_t len;
    TRY(cs_coll_size(&now, &len));
    if (s->lost || s->schema || !w->n->old || open_coll_in(w, w->n->old, &old) != CS_OK) {
        TRY(pending_clear(&w->pend));
        for (size_t i = 0; i < len; i++) TRY(pending_insert(&w->pend, i));
        return CS_OK;
    }
    rdiff d = {{0}, {0}, {0}};
    int rc = nested_diff(&old, &now, &d);
    if (rc == CS_OK) rc = pending_apply(&w->pend, &d);
    rdiff_free(&d);
    return rc;
}

/* Modified positions of the keys in w->dirty among w->keys. */
static int mods_in_place(cs_watch *w, rdiff *d, bool ordered)
{
    rdiff_reset(d);
    if (!w->dirty.n) return CS_OK;
    if (ordered) {
        for (size_t i = 0; i < w->dirty.n; i++) {
            size_t p = keys_find(w->keys.v, w->keys.n, w->dirty.v[i]);
            if (p != SIZE_MAX) TRY(idxvec_push(&d->mod, p));
        }
        return CS_OK;
    }
    for (size_t i = 0; i < w->keys.n; i++)
        if (keyvec_has(&w->dirty, w->keys.v[i])) TRY(idxvec_push(&d->mod, i));
    return CS_OK;
}

/* An unsorted query over its own table's columns: the new keys from the written objects alone. */
static int query_incremental(cs_watch *w, keyvec *nk, bool *same)
{
    const summary *s = &w->n->s;
    keyvec cand = {0}, add = {0}, rem = {0};
    int rc = CS_OK;
    *same = true;
    for (size_t i = 0; i < s->ncreated && rc == CS_OK; i++)
        if (s->created[i].table == w->table)
            for (int64_t k = 0; k < s->created[i].n && rc == CS_OK; k++) rc = keyvec_push(&cand, s->created[i].key + k);
    for (size_t i = 0; i < s->ndeleted && rc == CS_OK; i++)
        if (s->deleted[i].table == w->table)
            for (int64_t k = 0; k < s->deleted[i].n && rc == CS_OK; k++) rc = keyvec_push(&cand, s->deleted[i].key + k);
    for (size_t d = 0; d < w->deps.n && rc == CS_OK; d++) {
        if (w->deps.d[d].table != w->table) continue;
        size_t lo, hi;
        triples_of(s, w->table, w->deps.d[d].col, &lo, &hi);
        for (size_t k = lo; k < hi && rc == CS_OK; k++) rc = keyvec_push(&cand, s->w[k].key);
    }
    if (rc == CS_OK) keyvec_sort_unique(&cand);
    for (size_t i = 0; i < cand.n && rc == CS_OK; i++) {
        bool was = keys_find(w->keys.v, w->keys.n, cand.v[i]) != SIZE_MAX, is = false;
        rc = query_match_one(w->q, cand.v[i], &is);
        if (rc == CS_OK && was && !is) rc = keyvec_push(&rem, cand.v[i]);
        if (rc == CS_OK && !was && is) rc = keyvec_push(&add, cand.v[i]);
    }
    if (rc == CS_OK && (add.n || rem.n)) {
        *same = false;
        nk->n = 0;
        size_t i = 0, a = 0, r = 0;
        while (rc == CS_OK && (i < w->keys.n || a < add.n)) {
            if (i < w->keys.n && (a >= add.n || w->keys.v[i] < add.v[a])) {
                int64_t k = w->keys.v[i++];
                while (r < rem.n && rem.v[r] < k) r++;
                if (r < rem.n && rem.v[r] == k) continue;
                rc = keyvec_push(nk, k);
            } else {
                rc = keyvec_push(nk, add.v[a++]);
            }
        }
    }
    free(cand.v);
    free(add.v);
    free(rem.v);
    return rc;
}

static int keys_key(void *ctx, size_t i, int64_t *key)
{
    *key = ((keyvec *)ctx)->v[i];
    return CS_OK;
}

static int round_keys(cs_watch *w)
{
    const summary *s = &w->n->s;
    if (w->deleted) return CS_OK;
    bool whole = s->lost || s->schema;
    bool changed_members = whole;
    if (w->kind == W_QUERY) {
        query_set_txn(w->q, w->n->t, s->schema);
        if (s->schema) TRY(query_deps_get(w->q, &w->deps));
        if (runs_touch(s->created, s->ncreated, w->table) || runs_touch(s->deleted, s->ndeleted, w->table))
            changed_members = true;
        for (size_t i = 0; i < w->deps.n && !changed_members; i++) {
            const query_dep *d = &w->deps.d[i];
            if (written(s, d->table, d->col) || runs_touch(s->created, s->ncreated, d->table) ||
                runs_touch(s->deleted, s->ndeleted, d->table))
                changed_members = true;
        }
    } else {
        if (in_runs(s->deleted, s->ndeleted, w->table, w->key)) {
            w->deleted = w->deleted_new = true;
            return pending_clear(&w->pend);
        }
        /* an origin object created with the link already set is a new backlink too */
        if (written(s, w->origin_table, w->origin_col) || runs_touch(s->deleted, s->ndeleted, w->origin_table) ||
            runs_touch(s->created, s->ncreated, w->origin_table))
            changed_members = true;
    }
    if (whole) w->dirty.n = 0;
    else TRY(watch_dirty(w));
    bool ordered = w->kind == W_QUERY && w->deps.key_ordered;
    rdiff d = {{0}, {0}, {0}};
    keyvec nk = {0};
    int rc = CS_OK;
    bool same = !changed_members;
    if (changed_members && !whole && w->kind == W_QUERY && w->deps.root_only && ordered) {
        rc = query_incremental(w, &nk, &same);
    } else if (changed_members) {
        same = false;
        w->runs++;
        rc = w->kind == W_QUERY ? query_all_keys(w, &nk) : backlink_keys(w, &nk);
        if (rc == CS_NOTFOUND && w->kind == W_BACKLINKS) {
            w->deleted = w->deleted_new = true;
            free(nk.v);
            return pending_clear(&w->pend);
        }
    }
    if (rc == CS_OK && same) {
        rc = mods_in_place(w, &d, ordered);
    } else if (rc == CS_OK) {
        rc = ordered ? diff_ordered_keys(w->keys.v, w->keys.n, nk.v, nk.n, &w->dirty, &d)
                     : diff_keys(w->keys.v, w->keys.n, nk.v, nk.n, &w->dirty, &d);
        if (rc == CS_OK) {
            keyvec tmp = w->keys;
            w->keys = nk;
            nk = tmp;
        }
    }
    if (rc == CS_OK) rc = pending_apply(&w->pend, &d);
    free(nk.v);
    rdiff_free(&d);
    if (rc == CS_OK && w->kind == W_BACKLINKS) {
        /* no usable history: what the query reads may have changed anywhere (a List, Set or
         * Map watch reports every element replaced then, which has its results compared) */
        if (whole) w->stale = w->stale || w->npaths > w->nmod || w->stale_deps;
        else rc = mark_stale(w, w->keys.n, keys_key, &w->keys);
    }
    return rc;
}

static int watch_round(cs_watch *w)
{
    if (!watch_touched(w)) return CS_OK;
    switch (w->kind) {
    case W_OBJECT: return round_object(w);
    case W_COLL: return round_coll(w);
    case W_NESTED: return round_nested(w);
    default: return round_keys(w);
    }
}

/* ---- takes ------------------------------------------------------------------------------ */

bool cs_watch_pending(const cs_watch *w)
{
    if (w->initial || w->deleted_new || w->stale) return true;
    if (w->kind == W_OBJECT) return w->ncols > 0;
    return pending_any(&w->pend);
}

void cs_watch_discard(cs_watch *w)
{
    /* an initial change set is a snapshot: there is nothing in it to leave out */
    w->deleted_new = false;
    w->stale = false;
    w->ncols = 0;
    pending_reset(&w->pend, pending_len(&w->pend));
    if (w->map) map_snapshot(w);
}

static int kv_reserve(cs_watch *w, size_t n)
{
    if (n <= w->capkv) return CS_OK;
    cs_value *x = realloc(w->kv, n * sizeof *x);
    if (!x) return NOMEM();
    w->kv = x;
    w->capkv = n;
    return CS_OK;
}

/* A map take: positions turned into keys; a key both deleted and inserted was modified. */
static int map_take(cs_watch *w, cs_changeset *out)
{
    cs_coll c;
    bool have = open_coll(w, &c) == CS_OK;
    size_t total = w->del.n + w->ins.n + w->modnew.n;
    TRY(kv_reserve(w, total ? total : 1));
    cs_value *kd = w->kv, *ki = w->kv + w->del.n, *km = ki + w->ins.n;
    size_t nd = 0, ni = 0, nm = 0;
    cs_value k, v;
    for (size_t i = 0; i < w->modnew.n && have; i++)
        if (cs_map_get_at(&c, w->modnew.v[i], &k, &v) == CS_OK) km[nm++] = k;
    for (size_t i = 0; i < w->ins.n && have; i++) {
        if (cs_map_get_at(&c, w->ins.v[i], &k, &v) != CS_OK) continue;
        bool again = false;
        for (size_t j = 0; j < w->del.n && !again; j++) {
            size_t b = w->del.v[j];
            again = b < w->nbkeys && w->bkeylen[b] == k.v.bytes.len && memcmp(w->bkeys[b], k.v.bytes.ptr, k.v.bytes.len) == 0;
        }
        if (again) km[nm++] = k;
        else ki[ni++] = k;
    }
    for (size_t j = 0; j < w->del.n; j++) {
        size_t b = w->del.v[j];
        if (b >= w->nbkeys) continue;
        bool again = false;
        for (size_t i = 0; i < w->ins.n && have && !again; i++)
            if (cs_map_get_at(&c, w->ins.v[i], &k, &v) == CS_OK)
                again = w->bkeylen[b] == k.v.bytes.len && memcmp(w->bkeys[b], k.v.bytes.ptr, k.v.bytes.len) == 0;
        if (!again) kd[nd++] = cs_string(w->bkeys[b], w->bkeylen[b]);
    }
    out->keys_deleted = kd;
    out->nkeys_deleted = nd;
    out->keys_inserted = ki;
    out->nkeys_inserted = ni;
    out->keys_modified = km;
    out->nkeys_modified = nm;
    return CS_OK;
}

int cs_watch_take(cs_watch *w, cs_changeset *out)
{
    memset(out, 0, sizeof *out);
    out->version = w->n->t->version;
    if (w->kind == W_QUERY && !w->deleted) {
        out->has_keys = true;
        out->keys = w->keys.v;
        out->nkeys = w->keys.n;
    }
    if (w->initial) {
        out->initial = true;
        cs_watch_discard(w);
        w->initial = false;
        return CS_OK;
    }
    out->deleted = w->deleted_new;
    w->deleted_new = false;
    out->stale = w->stale;
    w->stale = false;
    if (w->kind == W_OBJECT) {
        out->columns = w->cols;
        out->ncolumns = w->ncols;
        w->ncols = 0;
        return CS_OK;
    }
    TRY(pending_take(&w->pend, &w->del, &w->ins, &w->mod, &w->modnew));
    out->deletions = w->del.v;
    out->ndeletions = w->del.n;
    out->insertions = w->ins.v;
    out->ninsertions = w->ins.n;
    out->modifications = w->mod.v;
    out->modifications_new = w->modnew.v;
    out->nmodifications = w->mod.n;
    if (w->map) {
        TRY(map_take(w, out));
        TRY(map_snapshot(w));
    }
    return CS_OK;
}

uint64_t cs_watch_full_runs(const cs_watch *w) { return w->runs; }
