/*
 * feed.c -- feed slots (docs/FORMAT.md §8.1, docs/ARCHITECTURE.md, Feed slots): named consumers
 * of the change history, like a replication slot. A slot has a position (every change up to
 * that version is acknowledged); the history keeps every entry after the lowest valid slot's
 * position even when no reader pins those versions. The data versions themselves are reclaimed
 * as before: a slot only holds history entries, never free space.
 *
 * The slot table is one BYTES node in the optional top slot TOP_FEED, rewritten by the write
 * transactions that change it and by every commit while a slot exists (each commit adds its
 * entry's bytes to what each slot holds back). The commit path calls in through history_append
 * alone, so the commit's own node layout and the free list are untouched.
 *
 * Invariants:
 *  1. A valid slot's position p is <= the version of the top that names it, and the history of
 *     that top holds every entry v with p < v (history_append never trims past min(p)).
 *  2. A slot's held bytes are the bytes of the history entries after its position (the entry's
 *     blob node, its deleted-keys blob when it has one, plus its 24 bytes: version, blob ref and
 *     commit time); an ack recomputes them exactly.
 *  3. A slot whose held bytes exceed its non-zero limit is invalidated by that commit: it then
 *     holds nothing, and opening its changes fails with CS_FULL until it is dropped.
 */
#include "node.h"
#include "snapshot.h"
#include "feed.h"
#include "changes.h"

#define FEED_TABLE_FORMAT 1u

typedef struct fslot {
    char name[CS_FEED_NAME_MAX + 1];
    uint64_t pos, held, limit, invalid;
} fslot;

typedef struct ftab {
    fslot *s;
    uint32_t n;
} ftab;

static void ftab_free(ftab *f)
{
    free(f->s);
    f->s = NULL;
    f->n = 0;
}

static uint8_t *put_uv(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static int feed_load(cs_txn *t, ftab *out)
{
    out->s = NULL;
    out->n = 0;
    uint64_t r;
    TRY(txn_top_get(t, TOP_FEED, &r));
    if (!r) return CS_OK;
    if (tagged(r)) return CORRUPT("feed slot table slot holds a number");
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (!(h->flags & NF_BYTES) || h->width != 1) return CORRUPT("feed slot table is malformed");
    const uint8_t *p = node_values(h), *end = p + h->count;
    uint64_t fmt, n;
    if (!changes_get_uv(&p, end, &fmt) || fmt != FEED_TABLE_FORMAT) return CORRUPT("feed slot table has format %llu", (unsigned long long)fmt);
    if (!changes_get_uv(&p, end, &n) || n > h->count) return CORRUPT("feed slot table count is malformed");
    if (n == 0) return CS_OK;
    out->s = calloc(n, sizeof *out->s);
    if (!out->s) return NOMEM();
    for (uint64_t i = 0; i < n; i++) {
        fslot *s = &out->s[i];
        uint64_t len;
        if (!changes_get_uv(&p, end, &len) || len == 0 || len > CS_FEED_NAME_MAX || (uint64_t)(end - p) < len) {
            ftab_free(out);
            return CORRUPT("feed slot %llu's name is malformed", (unsigned long long)i);
        }
        memcpy(s->name, p, len);
        p += len;
        if (!changes_get_uv(&p, end, &s->pos) || !changes_get_uv(&p, end, &s->held) || !changes_get_uv(&p, end, &s->limit) ||
            !changes_get_uv(&p, end, &s->invalid) || s->pos > t->version + 1) {
            ftab_free(out);
            return CORRUPT("feed slot '%s' is malformed", s->name);
        }
        out->n++;
    }
    if (p != end) {
        ftab_free(out);
        return CORRUPT("feed slot table has %llu trailing bytes", (unsigned long long)(end - p));
    }
    return CS_OK;
}

/* The writable top slot TOP_FEED (the top grows to hold it). */
static int feed_top_slot(cs_txn *t, ref_t **slot)
{
    return txn_top_slot(t, TOP_FEED, slot);
}

static int feed_store(cs_txn *t, const ftab *f)
{
    ref_t *slot;
    TRY(feed_top_slot(t, &slot));
    ref_t blob = 0;
    if (f->n) {
        uint8_t *b = malloc(20 + (uint64_t)f->n * (CS_FEED_NAME_MAX + 60));
        if (!b) return NOMEM();
        uint8_t *p = put_uv(b, FEED_TABLE_FORMAT);
        p = put_uv(p, f->n);
        for (uint32_t i = 0; i < f->n; i++) {
            const fslot *s = &f->s[i];
            size_t len = strlen(s->name);
            p = put_uv(p, len);
            memcpy(p, s->name, len);
            p += len;
            p = put_uv(p, s->pos);
            p = put_uv(p, s->held);
            p = put_uv(p, s->limit);
            p = put_uv(p, s->invalid);
        }
        int rc = node_new_blob(t, b, (uint64_t)(p - b), &blob);
        free(b);
        TRY(rc);
        TRY(feed_top_slot(t, &slot)); /* the allocation may have moved the top's bytes */
    }
    if (*slot) node_free(t, *slot);
    *slot = blob;
    return CS_OK;
}

static int find_slot(const ftab *f, const char *name)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (strcmp(f->s[i].name, name) == 0) return (int)i;
    return -1;
}

static int check_name(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > CS_FEED_NAME_MAX)
        return cs_fail(CS_MISUSE, 0, "a feed slot name is 1 to %d bytes", CS_FEED_NAME_MAX);
    return CS_OK;
}

/* Bytes of the history entries after version `after` (invariant 2). */
static int history_bytes_after(cs_txn *t, uint64_t after, uint64_t *out)
{
    *out = 0;
    uint64_t hr;
    TRY(txn_top_get(t, TOP_HISTORY, &hr));
    if (!hr) return CS_OK;
    node_hdr *h, *vers, *blobs;
    TRY(node_at(t, hr, &h));
    if (!(h->flags & NF_REFS) || h->count != 2) return CORRUPT("history node is malformed");
    TRY(node_at(t, node_refs(h)[0], &vers));
    TRY(node_at(t, node_refs(h)[1], &blobs));
    if ((vers->flags & (NF_REFS | NF_BYTES)) || !(blobs->flags & NF_REFS) || vers->count != blobs->count)
        return CORRUPT("history arrays disagree");
    for (uint64_t i = vers->count; i-- > 0;) {
        if ((uint64_t)node_get_int(vers, i) <= after) break;
        uint64_t b = node_refs(blobs)[i], sz = 24, pk;
        if (b) {
            node_hdr *bh;
            if (tagged(b)) return CORRUPT("history blob slot holds a number");
            TRY(node_at(t, b, &bh));
            sz += node_size_of(bh->flags, bh->width, bh->count);
        }
        TRY(changes_deleted_pk_bytes(t, (uint64_t)node_get_int(vers, i), &pk));
        *out += sz + pk;
    }
    return CS_OK;
}

int feed_on_commit(cs_txn *t, uint64_t newver, uint64_t entry_bytes, uint64_t *oldest)
{
    uint64_t r;
    TRY(txn_top_get(t, TOP_FEED, &r));
    if (!r) return CS_OK;
    ftab f;
    TRY(feed_load(t, &f));
    for (uint32_t i = 0; i < f.n; i++) {
        fslot *s = &f.s[i];
        if (s->invalid) continue;
        if (s->pos < newver) s->held += entry_bytes;
        if (s->limit && s->held > s->limit) {
            s->invalid = newver;
            continue;
        }
        if (s->pos < *oldest) *oldest = s->pos;
    }
    int rc = feed_store(t, &f);
    ftab_free(&f);
    return rc;
}

/* ---- the public API ------------------------------------------------------------------------ */

int cs_feed_create(cs_txn *t, const char *name, uint64_t limit_bytes)
{
    TRY(txn_need_write(t));
    TRY(check_name(name));
    ftab f;
    TRY(feed_load(t, &f));
    if (find_slot(&f, name) >= 0) {
        ftab_free(&f);
        return cs_fail(CS_EXISTS, 0, "a feed slot named '%s' exists already", name);
    }
    fslot *n = realloc(f.s, (f.n + 1) * sizeof *n);
    if (!n) {
        ftab_free(&f);
        return NOMEM();
    }
    f.s = n;
    fslot *s = &f.s[f.n++];
    memset(s, 0, sizeof *s);
    memcpy(s->name, name, strlen(name) + 1);
    s->pos = t->version + 1; /* the version this transaction commits as */
    s->limit = limit_bytes;
    int rc = feed_store(t, &f);
    ftab_free(&f);
    return rc;
}

int cs_feed_drop(cs_txn *t, const char *name)
{
    TRY(txn_need_write(t));
    TRY(check_name(name));
    ftab f;
    TRY(feed_load(t, &f));
    int i = find_slot(&f, name);
    if (i < 0) {
        ftab_free(&f);
        return cs_fail(CS_NOTFOUND, 0, "no feed slot named '%s'", name);
    }
    memmove(&f.s[i], &f.s[i + 1], (f.n - (uint32_t)i - 1) * sizeof *f.s);
    f.n--;
    int rc = feed_store(t, &f);
    ftab_free(&f);
    return rc;
}

static int invalid_error(const fslot *s)
{
    return cs_fail(CS_FULL, 0,
                   "feed slot '%s' was invalidated at version %llu: it held back %llu bytes of history, over its limit of %llu; "
                   "drop it and create it again (its consumer must start from a new snapshot)",
                   s->name, (unsigned long long)s->invalid, (unsigned long long)s->held, (unsigned long long)s->limit);
}

int cs_feed_ack(cs_txn *t, const char *name, uint64_t version)
{
    TRY(txn_need_write(t));
    TRY(check_name(name));
    if (version > t->version)
        return cs_fail(CS_RANGE, 0, "cannot acknowledge version %llu: the newest committed version is %llu",
                       (unsigned long long)version, (unsigned long long)t->version);
    ftab f;
    TRY(feed_load(t, &f));
    int i = find_slot(&f, name);
    int rc = CS_OK;
    if (i < 0) rc = cs_fail(CS_NOTFOUND, 0, "no feed slot named '%s'", name);
    else if (f.s[i].invalid) rc = invalid_error(&f.s[i]);
    else if (version > f.s[i].pos) {
        f.s[i].pos = version;
        rc = history_bytes_after(t, version, &f.s[i].held);
        if (rc == CS_OK) rc = feed_store(t, &f);
    }
    ftab_free(&f);
    return rc;
}

static void fill_info(const fslot *s, cs_feed_slot_info *out)
{
    memset(out, 0, sizeof *out);
    memcpy(out->name, s->name, sizeof out->name);
    out->position = s->pos;
    out->limit = s->limit;
    out->invalidated = s->invalid;
    if (s->invalid) out->over_bytes = s->held;
    else out->held_bytes = s->held;
}

int cs_feed_count(cs_txn *t, uint32_t *n)
{
    *n = 0;
    ftab f;
    TRY(feed_load(t, &f));
    *n = f.n;
    ftab_free(&f);
    return CS_OK;
}

int cs_feed_slot_at(cs_txn *t, uint32_t i, cs_feed_slot_info *out)
{
    ftab f;
    TRY(feed_load(t, &f));
    int rc = CS_OK;
    if (i >= f.n) rc = cs_fail(CS_RANGE, 0, "feed slot %u of %u", i, f.n);
    else fill_info(&f.s[i], out);
    ftab_free(&f);
    return rc;
}

int cs_feed_slot_get(cs_txn *t, const char *name, cs_feed_slot_info *out)
{
    TRY(check_name(name));
    ftab f;
    TRY(feed_load(t, &f));
    int i = find_slot(&f, name);
    int rc = CS_OK;
    if (i < 0) rc = cs_fail(CS_NOTFOUND, 0, "no feed slot named '%s'", name);
    else fill_info(&f.s[i], out);
    ftab_free(&f);
    return rc;
}

int cs_feed_changes_open(cs_txn *t, const char *name, uint64_t since, cs_changes **out)
{
    *out = NULL;
    TRY(check_name(name));
    ftab f;
    TRY(feed_load(t, &f));
    int i = find_slot(&f, name);
    int rc = CS_OK;
    if (i < 0) rc = cs_fail(CS_NOTFOUND, 0, "no feed slot named '%s'", name);
    else if (f.s[i].invalid) rc = invalid_error(&f.s[i]);
    else {
        uint64_t pos = f.s[i].pos > t->version ? t->version : f.s[i].pos;
        if (since == UINT64_MAX) since = pos;
        if (since < pos)
            rc = cs_fail(CS_RANGE, 0, "feed slot '%s' has acknowledged up to version %llu; version %llu is behind it",
                         name, (unsigned long long)pos, (unsigned long long)since);
        else {
            rc = cs_changes_open(t, since, out);
            if (rc == CS_NOTFOUND)
                rc = cs_fail(CS_NOTFOUND, 0, "feed slot '%s' at version %llu: the history no longer holds the changes after version %llu "
                             "(a writer that does not know feed slots trimmed it); drop the slot and create it again",
                             name, (unsigned long long)pos, (unsigned long long)since);
        }
    }
    ftab_free(&f);
    return rc;
}
