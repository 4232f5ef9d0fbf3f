/*
 * txn.c -- transactions: pinning snapshots, promotion to write, commit and rollback. Of a commit,
 * this file decides what the new version contains (txn_stage, txn_plan); commit.c decides where
 * and how its bytes reach the disk. The state diagram is in cstore.h; what a transaction reads is
 * snapshot.c's.
 *
 * Invariants:
 *  1. A transaction pins the version it reads in f->pins for its whole life; the writer never
 *     reuses space a pinned version can reach (commit.c durability rule 1).
 *  2. Only a WRITE transaction (holding f->write_mu, lock_write_take) touches the slab.
 *  3. t->epoch changes whenever a cached leaf pointer or row number may have become stale:
 *     snapshot moves, commits, rollbacks, schema changes and structural tree changes.
 */
#include "node.h"
#include "schema.h"
#include "snapshot.h"
#include "cluster.h"
#include "index.h"
#include "changes.h"
#include "lock.h"
#include "file.h"
#include "journal.h"
#include "check.h"
#include "log.h"
#include "io.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* Whether one more version may be pinned under maximumNumberOfActiveVersions (f->mu held).
 * `leaving` is a version the caller is about to unpin (0 if none): if the caller is its only
 * holder it does not count, so moving a lone reader forward is never refused. */
static int pin_limit_check(cs_dbfile *f, uint64_t leaving)
{
    if (!f->max_versions) return CS_OK;
    uint32_t live = 0;
    uint64_t oldest = UINT64_MAX;
    for (uint32_t i = 0; i < f->npins; i++)
        if (f->pins[i].count && !(f->pins[i].version == leaving && f->pins[i].count == 1)) {
            live++;
            if (f->pins[i].version < oldest) oldest = f->pins[i].version;
        }
    if (live >= f->max_versions)
        return cs_fail(CS_BUSY, 0,
                       "too many active versions (%u, the limit); the oldest pinned is version %llu, "
                       "held by this process",
                       live, (unsigned long long)oldest);
    return CS_OK;
}

/* Makes sure one more distinct version can be pinned without allocating (f->mu held). */
static int pin_reserve(cs_dbfile *f)
{
    for (uint32_t i = 0; i < f->npins; i++)
        if (!f->pins[i].count) return CS_OK;
    if (f->npins < f->cap_pins) return CS_OK;
    uint32_t nc = f->cap_pins ? f->cap_pins * 2 : 8;
    pin *p = realloc(f->pins, nc * sizeof *p);
    if (!p) return NOMEM();
    f->pins = p;
    f->cap_pins = nc;
    return CS_OK;
}

/* Pins version v (f->mu held); `check` applies the limit (see pin_limit_check). */
static int pin_add(cs_dbfile *f, uint64_t v, uint64_t top, uint64_t leaving, bool check)
{
    for (uint32_t i = 0; i < f->npins; i++)
        if (f->pins[i].version == v && f->pins[i].count) {
            f->pins[i].count++;
            return CS_OK;
        }
    if (check) TRY(pin_limit_check(f, leaving));
    TRY(pin_reserve(f));
    for (uint32_t i = 0; i < f->npins; i++)
        if (!f->pins[i].count) {
            f->pins[i].version = v;
            f->pins[i].top = top;
            f->pins[i].count = 1;
            return CS_OK;
        }
    f->pins[f->npins].version = v;
    f->pins[f->npins].top = top;
    f->pins[f->npins].count = 1;
    f->npins++;
    return CS_OK;
}

/* Publishes this process's oldest pinned version in its lock-file slot (f->mu held). Only a
 * range that covers a version the last one did not needs the fence after the store (the
 * caller re-checks the newest version next); a narrower range is released as it is. */
static void pins_publish(cs_dbfile *f)
{
    pinrange r = {0, 0, 0, 0};
    for (uint32_t i = 0; i < f->npins; i++) {
        if (!f->pins[i].count) continue;
        if (!r.lo || f->pins[i].version < r.lo) { r.lo = f->pins[i].version; r.lo_top = f->pins[i].top; }
        if (f->pins[i].version > r.hi) { r.hi = f->pins[i].version; r.hi_top = f->pins[i].top; }
    }
    if (r.lo != f->published_pin || r.hi != f->published_hi) {
        bool widens = r.lo && (!f->published_pin || r.lo < f->published_pin || r.hi > f->published_hi);
        lock_publish_pins(f, &r, widens);
        f->published_pin = r.lo;
        f->published_hi = r.hi;
    }
}

#if CS_ASSERTS
/* True when a transaction of this process pins version v (f->mu held). */
static bool pinned(const cs_dbfile *f, uint64_t v)
{
    for (uint32_t i = 0; i < f->npins; i++)
        if (f->pins[i].version == v && f->pins[i].count) return true;
    return false;
}
#endif

/* True when a transaction of this process pins some version. */
static bool pins_any(const cs_dbfile *f)
{
    for (uint32_t i = 0; i < f->npins; i++)
        if (f->pins[i].count) return true;
    return false;
}

/* Drops one pin of v. When the process's last pin goes and v is the newest version, the range
 * stays published but marked idle (lock.c): the next transaction to begin on v takes it back
 * with one compare-and-swap, without publishing or a fence (take_latest). While v is the newest
 * version this costs writers nothing (no space v reaches is free); once it is not, a writer of
 * another process revokes the idle range and ignores it, and this process's own writer counts
 * only its live pins (commit.c oldest_live). A dead process's slot is reaped as before. */
static void pin_drop(cs_dbfile *f, uint64_t v)
{
    cs_assert(pinned(f, v)); /* invariant 1: a transaction drops only the pin it holds */
    for (uint32_t i = 0; i < f->npins; i++)
        if (f->pins[i].version == v && f->pins[i].count) {
            f->pins[i].count--;
            if (f->pins[i].count) return;
            if (f->published_pin == v && f->published_hi == v && v == lock_latest_version(f) && !pins_any(f)) {
                lock_pins_idle(f);
                return;
            }
            pins_publish(f);
            return;
        }
}

/* Points the transaction at the newest version (caller holds f->mu) and pins it: the pin is
 * published first and the version re-checked after (lock.c invariant 2). */
static int take_latest(cs_txn *t, uint64_t leaving)
{
    cs_dbfile *f = t->f;
    for (;;) {
        lock_read_latest(f);
        uint64_t v = f->version;
        TRY(pin_add(f, v, f->top, leaving, true));
        /* a version inside the range this process already publishes is protected, unless the
         * range was idle and a writer revoked it: then it is published again */
        if (f->published_pin && f->published_pin <= v && v <= f->published_hi) {
            if (lock_pins_reclaim(f)) break;
            f->published_pin = f->published_hi = 0;
        }
        pins_publish(f);
        /* (a lock file behind v: this process read v from the header of a writer that died
         * between its header write and publishing; the next writer publishes v first, lock.c
         * invariant 3, so the pin protects it; waiting for the lock file would spin forever) */
        if (lock_latest_version(f) <= v) break;
        pin_drop(f, v);
    }
    TRY(file_map_for(f, f->logical));
    t->version = f->version;
    t->top = f->top;
    t->limit = f->logical;
    t->map = f->map->base;
    return CS_OK;
}

/* Loads the schema of the transaction's version (shared when unchanged). */
static int load_schema(cs_txn *t)
{
    cs_dbfile *f = t->f;
    uint64_t sref = 0;
    TRY(txn_top_get(t, TOP_SCHEMA, &sref));
    pthread_mutex_lock(&f->mu);
    if (f->schema_cache && f->schema_cache->ref == sref) {
        schema *s = f->schema_cache;
        __atomic_add_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_unlock(&f->mu);
        schema_release(t->schema);
        t->schema = s;
        return CS_OK;
    }
    pthread_mutex_unlock(&f->mu);
    schema *s;
    if (sref == 0) {
        s = schema_new();
        if (!s) return NOMEM();
    } else {
        node_hdr *h;
        if (tagged(sref)) return CORRUPT("schema slot holds a number");
        TRY(node_at(t, sref, &h));
        if (!(h->flags & NF_BYTES) || h->width != 1) return CORRUPT("schema node at %llu is not a blob", (unsigned long long)sref);
        TRY(schema_parse(node_values(h), h->count, &s));
    }
    s->ref = sref;
    pthread_mutex_lock(&f->mu);
    if (t->version == f->version) {
        schema_release(f->schema_cache);
        __atomic_add_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL);
        f->schema_cache = s;
    }
    pthread_mutex_unlock(&f->mu);
    schema_release(t->schema);
    t->schema = s;
    return CS_OK;
}

static int check_top(cs_txn *t)
{
    node_hdr *h;
    TRY(node_at(t, t->top, &h));
    if (!(h->flags & NF_REFS) || h->count < TOP_SLOTS - 1) return CORRUPT("top node at %llu is malformed", (unsigned long long)t->top);
    return CS_OK;
}

int cs_txn_begin(cs_db *db, int mode, cs_txn **out)
{
    if (!db || !out) return cs_fail(CS_MISUSE, 0, "cs_txn_begin: bad arguments");
    if (mode == CS_TXN_WRITE && db->readonly) return cs_fail(CS_READONLY, 0, "%s is open read-only", db->path);
    TRY(lock_refuse_inherited(db->f, "cs_txn_begin"));
    /* Reuse the transaction struct the last cs_txn_end left behind, if any. It kept its
     * version, schema reference and caches: when this transaction lands on the same version,
     * in the same mapping, they are all still right (space the newest version reaches is never
     * reused), so the schema, the top node's check and the caches are taken over as they are.
     * Otherwise the epoch moves past every value the struct ever had, which makes its
     * epoch-keyed caches (and accessors made through it before) stale. */
    cs_txn *t = __atomic_exchange_n(&db->spare, NULL, __ATOMIC_ACQ_REL);
    uint64_t warm_version = 0, warm_epoch = 0;
    ref_t warm_top = 0;
    const uint8_t *warm_map = NULL;
    schema *warm_schema = NULL;
    if (t) {
        warm_version = t->version;
        warm_epoch = t->epoch;
        warm_top = t->top;
        warm_map = t->map;
        warm_schema = t->schema;
        t->schema = NULL;
        t->last_commit_bytes = 0;
        t->last_commit_writes = 0;
        t->last_commit_syncs = 0;
    } else {
        t = calloc(1, sizeof *t);
    }
    if (!t) return NOMEM();
    t->db = db;
    t->f = db->f;
    bool warm = false;
    pthread_mutex_lock(&t->f->mu);
    int rc = take_latest(t, 0);
    if (rc == CS_OK && warm_schema && t->version == warm_version && t->top == warm_top && t->map == warm_map) {
        warm = true;
        t->schema = warm_schema;
        warm_schema = NULL;
        t->epoch = warm_epoch;
    } else if (rc == CS_OK && t->f->schema_cache) {
        /* the common case: the cached schema is this version's; take it in the same lock */
        uint64_t sref = 0;
        node_hdr *top;
        if (node_at(t, t->top, &top) == CS_OK && (top->flags & NF_REFS) && top->count > TOP_SCHEMA)
            sref = node_refs(top)[TOP_SCHEMA];
        if (sref == t->f->schema_cache->ref) {
            t->schema = t->f->schema_cache;
            __atomic_add_fetch(&t->schema->refcount, 1, __ATOMIC_ACQ_REL);
        }
    }
    pthread_mutex_unlock(&t->f->mu);
    if (!warm) {
        t->epoch = warm_epoch + 1;
        t->rc.cc_leaf = NULL;
        t->tns_top = 0;
        t->tns_tables = 0;
        t->tns_slot = NULL;
    }
    schema_release(warm_schema);
    if (rc) { free(t); return rc; }
    if ((!warm && (rc = check_top(t)) != CS_OK) || (!t->schema && (rc = load_schema(t)) != CS_OK)) {
        pthread_mutex_lock(&t->f->mu);
        pin_drop(t->f, t->version);
        pthread_mutex_unlock(&t->f->mu);
        schema_release(t->schema);
        free(t);
        return rc;
    }
    __atomic_add_fetch(&db->txns, 1, __ATOMIC_ACQ_REL);
    if (mode == CS_TXN_WRITE && (rc = cs_txn_promote(t)) != CS_OK) {
        cs_txn_end(t);
        return rc;
    }
    *out = t;
    return CS_OK;
}

/* Moves a transaction to the newest version. */
static int move_to_latest(cs_txn *t, bool *changed)
{
    cs_dbfile *f = t->f;
    pthread_mutex_lock(&f->mu);
    lock_read_latest(f);
    if (f->version == t->version) {
        pthread_mutex_unlock(&f->mu);
        if (changed) *changed = false;
        return CS_OK;
    }
    uint64_t old = t->version;
    int rc = take_latest(t, old);
    if (rc == CS_OK) pin_drop(f, old);
    pthread_mutex_unlock(&f->mu);
    TRY(rc);
    t->epoch++;
    if (changed) *changed = true;
    TRY(check_top(t));
    return load_schema(t);
}

int cs_txn_promote(cs_txn *t)
{
    if (t->frozen) return cs_fail(CS_MISUSE, 0, "a frozen transaction cannot write");
    if (t->writing) return cs_fail(CS_MISUSE, 0, "the transaction is already writing");
    if (t->db->readonly) return cs_fail(CS_READONLY, 0, "%s is open read-only", t->db->path);
    if (t->f->broken && t->f->header_lost)
        return cs_fail(t->f->header_lost, t->f->header_lost_errno,
                       "%s: a commit's header write failed after the commit was made durable in the journal (%s); "
                       "reopen the file to write",
                       t->db->path, strerror(t->f->header_lost_errno));
    if (t->f->broken) return cs_fail(CS_IOERR, EIO, "%s had a failed sync; reopen it to write", t->db->path);
    TRY(lock_refuse_inherited(t->f, "cs_txn_promote"));
    lock_write_take(&t->f->write_mu);
    int rc = file_writer_acquire(t->f);
    if (rc == CS_OK) {
        uint64_t size = 0, allocated = 0;
        bool known = io_file_size(t->f->io, t->f->fd, &size, &allocated) == 0;
        if (known) t->f->phys_size = size; /* another process may have grown or shrunk it */
        /* a size not known, or blocks missing (a hole): the commit allocates before it stores
         * through its writable mapping (mapwrite.c, invariant 1) */
        if (!known || allocated < size) t->f->wmap_size = 0;
        rc = move_to_latest(t, NULL);
        if (rc) lock_writer_release(t->f);
    }
    if (rc) {
        lock_write_give(&t->f->write_mu);
        return rc;
    }
#ifdef CSTORE_INTERNAL_CHECKS
    t->base_verified = check_version(t);
#endif
    t->writing = true;
    t->short_cols = false;
    t->spoiled = 0;
    t->base_format = index_schema_needs_v2(t->schema) ? 2 : FORMAT_BASE;
    t->nfreed = 0;
    t->nlog = 0;
    t->ndelpk = 0;
    t->tns_slot = NULL;
    for (uint32_t i = 0; i < t->ncreated; i++) t->created_from[i] = INT64_MAX;
    if (t->nown) memset(t->own, 0, t->capown * sizeof *t->own);
    t->nown = 0;
    t->schema_dirty = false;
    t->epoch++;
    return CS_OK;
}

static void slab_reset(slab *s)
{
    for (int k = 6; k < SLAB_REGIONS; k++)
        if (s->region[k]) {
            munmap(s->region[k], (uint64_t)1 << (20 + k));
            s->region[k] = NULL;
        }
    memset(s->freelist, 0, sizeof s->freelist);
    s->cur = 0;
    s->bump = 0;
    s->in_use = 0;
}

/* Points the transaction at the newest version's top node, logical size and mapping (the version
 * it pins after a commit, or the one a rollback returns to). */
static void take_newest_top(cs_txn *t)
{
    cs_dbfile *f = t->f;
    pthread_mutex_lock(&f->mu);
    t->top = f->top;
    t->limit = f->logical;
    t->map = f->map->base;
    pthread_mutex_unlock(&f->mu);
}

/* Leaves WRITE: drops the slab and the writer lock; reads `version` (the newest). */
static int end_write(cs_txn *t)
{
    cs_assert(t->writing);
    cs_dbfile *f = t->f;
    slab_reset(&f->slab);
    t->writing = false;
    t->nfreed = 0;
    t->nlog = 0;
    t->ndelpk = 0;
    t->tns_slot = NULL;
    if (t->schema_dirty) {
        schema_release(t->schema);
        t->schema = NULL;
        t->schema_dirty = false;
    }
    take_newest_top(t);
    t->epoch++;
    lock_writer_release(f);
    /* (possibly on another thread than the one that took it: defined for this lock) */
    lock_write_give(&f->write_mu);
    if (!t->schema) return load_schema(t);
    return CS_OK;
}

/* Stages what the next version contains besides the nodes already changed: the schema blob
 * when the schema changed, and this write's change records in the history, which keeps what
 * live readers still need (docs/FORMAT.md §5 and §8). Where those bytes go is commit.c's. */
static int txn_stage(cs_txn *t)
{
    cs_dbfile *f = t->f;
    if (t->schema_dirty) {
        uint8_t *sb;
        uint64_t sn;
        TRY(schema_serialize(t->schema, &sb, &sn));
        ref_t blob;
        int rc = node_new_blob(t, sb, sn, &blob);
        free(sb);
        TRY(rc);
        ref_t *s;
        TRY(txn_top_slot(t, TOP_SCHEMA, &s));
        if (*s) node_free(t, *s);
        *s = blob;
    }
    pthread_mutex_lock(&f->mu);
    uint64_t oldest = file_oldest_live(f, t->version);
    pthread_mutex_unlock(&f->mu);
    return history_append(t, t->version + 1, oldest);
}

/* Adds node r to the plan: post-order below r, r itself last. `depth` is r's distance from the
 * table list (top slot 1) when r lies below it, else -1 (the top itself: 0): a table node is at
 * 2, a cluster tree's root at 3. A node at depth 3 or more that is not an inner node is a cluster
 * leaf or lies below one (a column's leaf, a collection, an index's nodes): it is *cold*, as a
 * small commit rewrites it again only when it changes that row's leaf again, while the inner
 * nodes, table nodes, history and top above it are rewritten by most commits. */
static int plan_nodes(cs_txn *t, ref_t r, commit_what *w, int depth)
{
    node_hdr *h = (node_hdr *)txn_ptr(t, r);
    if (h->flags & NF_REFS) {
        uint64_t *e = node_refs(h);
        for (uint32_t i = 0; i < h->count; i++)
            if (e[i] && !tagged(e[i]) && IS_SLAB(e[i]))
                TRY(plan_nodes(t, e[i], w, depth > 0 ? depth + 1 : (depth == 0 && i == TOP_TABLES) ? 1 : -1));
    }
    if (w->n == w->cap) {
        uint64_t nc = w->cap ? w->cap * 2 : 256;
        commit_node *x = realloc(w->nodes, nc * sizeof *x);
        if (!x) return NOMEM();
        w->nodes = x;
        w->cap = nc;
    }
    w->nodes[w->n++] = (commit_node){r, node_size_of(h->flags, h->width, h->count), depth >= 3 && !(h->flags & NF_INNER)};
    return CS_OK;
}

/* The format version the header names after this commit (FORMAT.md §2): the header covers the
 * version the other slot keeps and the new one, so it is the larger of what the base version
 * needed and what the new version contains. The one place a commit decides it. */
static uint16_t commit_format(const cs_txn *t)
{
    uint16_t fmt = index_schema_needs_v2(t->schema) ? 2 : FORMAT_BASE;
    if (t->base_format > fmt) fmt = t->base_format;
    if (fmt < FORMAT_CHUNKED_FREE) fmt = FORMAT_CHUNKED_FREE; /* the free list is chunked */
    /* the commit may have packed nodes as frame of reference (cluster_pack), and the other slot's
     * version may hold some: marked whether or not this one wrote any (FORMAT.md §2) */
    if (fmt < FORMAT_FOR) fmt = FORMAT_FOR;
    /* likewise a table node may carry the keying slots of a pk-keyed table (FORMAT.md §6.1) */
    if (fmt < FORMAT_PK_KEYS) fmt = FORMAT_PK_KEYS;
    /* and a pk-keyed table may keep no index of its primary key (TBLK_NOIDX, FORMAT.md §6.1) */
    if (fmt < FORMAT_PK_NOIDX) fmt = FORMAT_PK_NOIDX;
    /* the journal's FORMAT_JOURNAL is added by the commit that writes a record (commit.c) */
    _Static_assert(FORMAT_RESTING == FORMAT_PK_NOIDX, "a closed file rests at what every commit marks");
    return fmt;
}

/* What the new version writes besides the free list: every node this write changed (the slab
 * nodes reachable from the top, including those the free-list update moved), and the format
 * version. */
static int txn_plan(cs_txn *t, commit_what *w)
{
    w->n = 0;
    w->format = commit_format(t);
    return plan_nodes(t, t->top, w, 0);
}

int cs_txn_commit(cs_txn *t)
{
    if (!t->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_commit: not in a write transaction");
    /* (a write inherited across fork stays open: cs_txn_end then drops it in the child alone) */
    TRY(lock_refuse_inherited(t->f, "cs_txn_commit"));
    if (t->spoiled) {
        /* a call failed part-way (obj.c create_row): what it left is not committed */
        int rc = t->spoiled;
        cs_dbfile *jf = t->f;
        end_write(t);
        journal_log_note(jf);
        return cs_fail(rc, 0, "an object creation of this transaction failed part-way: the transaction was rolled back");
    }
    /* The new version must be pinnable before anything is written: a commit that lands and
     * then cannot move its transaction to the new version would leave it reading a version it
     * does not pin. Refused here, the transaction is rolled back and the file is unchanged.
     * (Readers starting meanwhile pin the writer's base version, never a new one, so the
     * check still holds when the pin is taken below.) */
    pthread_mutex_lock(&t->f->mu);
    int rc = pin_limit_check(t->f, t->version);
    if (rc == CS_OK) rc = pin_reserve(t->f);
    pthread_mutex_unlock(&t->f->mu);
    if (rc == CS_OK) rc = cluster_fill_short(t);
    if (rc == CS_OK) rc = cluster_pack(t);
    /* the stages of a commit (file.h): what it contains is decided here, where and how the
     * bytes reach the disk in commit.c */
    if (rc == CS_OK) rc = txn_stage(t);
    if (rc == CS_OK) {
        commit_space sp;
        commit_what w = {0};
        rc = file_commit_space(t, &sp);
        if (rc == CS_OK) rc = txn_plan(t, &w);
        if (rc == CS_OK) rc = file_commit_write(t, &sp, &w);
        file_commit_end(t->f, rc);
        free(w.nodes);
    }
    if (rc != CS_OK) {
        char msg[512];
        int e = cs_errno();
        snprintf(msg, sizeof msg, "%s", cs_errmsg());
        cs_dbfile *jf = t->f;
        end_write(t);
        journal_log_note(jf); /* outside the writer's lock (cstore.h, "Logging") */
        return cs_fail(rc, e, "%s (the transaction was rolled back)", msg);
    }
    cs_dbfile *f = t->f;
    uint64_t old = t->version;
    pthread_mutex_lock(&f->mu);
    rc = pin_add(f, f->version, f->top, old, false);
    if (rc == CS_OK) {
        pin_drop(f, old);
        pins_publish(f);
        t->version = f->version;
    }
    uint64_t logical = f->logical, phys = f->phys_size, committed = f->version;
    pthread_mutex_unlock(&f->mu);
    if (t->schema_dirty) {
        /* the committed schema becomes the shared one */
        uint64_t sref = 0;
        t->schema_dirty = false;
        take_newest_top(t);
        if (txn_top_get(t, TOP_SCHEMA, &sref) == CS_OK) {
            t->schema->ref = sref;
            pthread_mutex_lock(&f->mu);
            schema_release(f->schema_cache);
            __atomic_add_fetch(&t->schema->refcount, 1, __ATOMIC_ACQ_REL);
            f->schema_cache = t->schema;
            pthread_mutex_unlock(&f->mu);
        }
    }
    int rc2 = end_write(t);
    /* reported after the writer's lock is released (cstore.h, "Logging") */
    journal_log_note(f);
    if (rc == CS_OK) log_printf(CS_LOG_DEBUG, LOG_CAT_TRANSACTION, "Commit of version %llu: %llu bytes in use, file size %llu",
                                (unsigned long long)committed, (unsigned long long)logical,
                                (unsigned long long)phys);
#ifdef CSTORE_INTERNAL_CHECKS
    /* the one call up the stack, in internal-checks builds only (docs/ARCHITECTURE.md) */
    if (rc == CS_OK && rc2 == CS_OK) check_commit(t, t->base_verified);
#endif
    return rc ? rc : rc2;
}

int cs_txn_rollback(cs_txn *t)
{
    if (!t->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_rollback: not in a write transaction");
    return end_write(t);
}

int cs_txn_advance(cs_txn *t, bool *changed)
{
    if (t->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_advance: the transaction is writing");
    if (t->frozen) return cs_fail(CS_MISUSE, 0, "cs_txn_advance: the transaction is frozen");
    TRY(lock_refuse_inherited(t->f, "cs_txn_advance"));
    return move_to_latest(t, changed);
}

int cs_txn_end(cs_txn *t)
{
    if (!t) return CS_OK;
    if (t->writing) end_write(t);
    cs_dbfile *f = t->f;
    pthread_mutex_lock(&f->mu);
    pin_drop(f, t->version);
    pthread_mutex_unlock(&f->mu);
    if (t->freed) { free(t->freed); t->freed = NULL; }
    if (t->log) { free(t->log); t->log = NULL; }
    if (t->created_from) { free(t->created_from); t->created_from = NULL; }
    if (t->own) { free(t->own); t->own = NULL; }
    t->nown = t->capown = 0;
    if (t->delpk) { free(t->delpk); t->delpk = NULL; }
    t->nfreed = t->cap_freed = 0;
    t->nlog = t->caplog = 0;
    t->ndelpk = t->capdelpk = 0;
    t->ncreated = 0;
    cs_db *db = t->db;
    __atomic_sub_fetch(&db->txns, 1, __ATOMIC_ACQ_REL);
    /* the struct is kept as the handle's spare with its schema reference and caches (see
     * cs_txn_begin); if there already is a spare it goes */
    cs_txn *none = NULL;
    if (t->frozen || !__atomic_compare_exchange_n(&db->spare, &none, t, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        schema_release(t->schema);
        free(t);
    }
    return CS_OK;
}

uint64_t cs_txn_version(const cs_txn *t) { return t->version; }
bool cs_txn_is_writing(const cs_txn *t) { return t->writing; }
uint64_t cs_txn_last_commit_bytes(const cs_txn *t) { return t->last_commit_bytes; }

void cs_txn_last_commit_io(const cs_txn *t, uint64_t *writes, uint64_t *syncs)
{
    if (writes) *writes = t->last_commit_writes;
    if (syncs) *syncs = t->last_commit_syncs;
}

int cs_txn_advance_to(cs_txn *t, const cs_txn *at)
{
    if (!t || !at || t->f != at->f) return cs_fail(CS_MISUSE, 0, "cs_txn_advance_to: transactions of different files");
    if (t->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_advance_to: the transaction is writing");
    if (t->frozen) return cs_fail(CS_MISUSE, 0, "cs_txn_advance_to: the transaction is frozen");
    if (at->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_advance_to: the target transaction is writing");
    TRY(lock_refuse_inherited(t->f, "cs_txn_advance_to"));
    if (at->version == t->version) return CS_OK;
    if (at->version < t->version)
        return cs_fail(CS_MISUSE, 0, "cs_txn_advance_to: version %llu is older than the transaction's %llu",
                       (unsigned long long)at->version, (unsigned long long)t->version);
    cs_dbfile *f = t->f;
    pthread_mutex_lock(&f->mu);
    uint64_t old = t->version;
    /* `at` pins its version, so adding a pin never has to publish or re-check anything */
    int rc = file_map_for(f, at->limit);
    if (rc == CS_OK) rc = pin_add(f, at->version, at->top, old, false);
    if (rc == CS_OK) {
        pin_drop(f, old);
        t->version = at->version;
        t->top = at->top;
        t->limit = at->limit;
        t->map = f->map->base;
    }
    pthread_mutex_unlock(&f->mu);
    TRY(rc);
    t->epoch++;
    TRY(check_top(t));
    return load_schema(t);
}

/* The numbers of frozen transactions (never 0), and the calling thread's read caches for the
 * frozen transaction it read through last. */
static uint64_t frozen_ids;
static _Thread_local struct {
    const cs_txn *txn;
    uint64_t id;
    txn_rcache rc;
} frozen_cache;

txn_rcache *txn_frozen_cache(cs_txn *t)
{
    if (frozen_cache.txn != t || frozen_cache.id != t->frozen_id) {
        memset(&frozen_cache.rc, 0, sizeof frozen_cache.rc); /* epoch 0: nothing holds */
        frozen_cache.txn = t;
        frozen_cache.id = t->frozen_id;
    }
    return &frozen_cache.rc;
}

int cs_txn_freeze(cs_db *db, const cs_txn *at, cs_txn **out)
{
    if (!db || !at || !out) return cs_fail(CS_MISUSE, 0, "cs_txn_freeze: bad arguments");
    if (db->f != at->f) return cs_fail(CS_MISUSE, 0, "cs_txn_freeze: the handle opens another file");
    if (at->writing) return cs_fail(CS_MISUSE, 0, "cs_txn_freeze: the transaction is writing");
    TRY(lock_refuse_inherited(db->f, "cs_txn_freeze"));
    cs_txn *t = calloc(1, sizeof *t);
    if (!t) return NOMEM();
    t->db = db;
    t->f = db->f;
    t->frozen = true;
    t->frozen_id = __atomic_add_fetch(&frozen_ids, 1, __ATOMIC_RELAXED);
    t->epoch = 1;
    cs_dbfile *f = t->f;
    pthread_mutex_lock(&f->mu);
    /* `at` pins its version, so this pin is a second count of a pinned version: nothing to
     * publish or re-check, and no new version for the active-version limit */
    int rc = file_map_for(f, at->limit);
    if (rc == CS_OK) rc = pin_add(f, at->version, at->top, 0, false);
    if (rc == CS_OK) {
        t->version = at->version;
        t->top = at->top;
        t->limit = at->limit;
        t->map = f->map->base;
    }
    pthread_mutex_unlock(&f->mu);
    if (rc != CS_OK) { free(t); return rc; }
    t->schema = at->schema;
    __atomic_add_fetch(&t->schema->refcount, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&db->txns, 1, __ATOMIC_ACQ_REL);
    *out = t;
    return CS_OK;
}

bool cs_txn_is_frozen(const cs_txn *t) { return t->frozen; }

bool cs_txn_same_file(const cs_txn *a, const cs_txn *b) { return a && b && a->f == b->f; }

bool cs_db_same_file(const cs_db *db, const cs_txn *t) { return db && t && db->f == t->f; }
