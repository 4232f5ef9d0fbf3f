/*
 * notify_diff.c -- key-list diffs and the accumulation of a watch's changes between takes
 * (docs/ARCHITECTURE.md, Change notifications).
 *
 * Invariants:
 *  1. A pending's current length equals the length of the collection at the notifier's version.
 *  2. Origins of the elements that stayed are increasing: a move is a deletion and an insertion,
 *     so the modifications handed out (old positions) are ascending as they are collected.
 */
#include "notify.h"

int idxvec_push(idxvec *x, size_t i)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 16;
        size_t *v = realloc(x->v, nc * sizeof *v);
        if (!v) return NOMEM();
        x->v = v;
        x->cap = nc;
    }
    x->v[x->n++] = i;
    return CS_OK;
}

int keyvec_push(keyvec *x, int64_t k)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 16;
        int64_t *v = realloc(x->v, nc * sizeof *v);
        if (!v) return NOMEM();
        x->v = v;
        x->cap = nc;
    }
    x->v[x->n++] = k;
    return CS_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

void keyvec_sort_unique(keyvec *x)
{
    if (x->n < 2) return;
    qsort(x->v, x->n, sizeof *x->v, cmp_i64);
    size_t w = 1;
    for (size_t i = 1; i < x->n; i++)
        if (x->v[i] != x->v[w - 1]) x->v[w++] = x->v[i];
    x->n = w;
}

size_t keys_find(const int64_t *v, size_t n, int64_t k)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (v[m] < k) lo = m + 1;
        else hi = m;
    }
    return lo < n && v[lo] == k ? lo : SIZE_MAX;
}

bool keyvec_has(const keyvec *x, int64_t k) { return x && keys_find(x->v, x->n, k) != SIZE_MAX; }

void rdiff_reset(rdiff *d) { d->del.n = d->ins.n = d->mod.n = 0; }

void rdiff_free(rdiff *d)
{
    free(d->del.v);
    free(d->ins.v);
    free(d->mod.v);
    memset(d, 0, sizeof *d);
}

int diff_ordered_keys(const int64_t *a, size_t na, const int64_t *b, size_t nb, const keyvec *dirty, rdiff *out)
{
    rdiff_reset(out);
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        if (j >= nb || (i < na && a[i] < b[j])) {
            TRY(idxvec_push(&out->del, i++));
        } else if (i >= na || b[j] < a[i]) {
            TRY(idxvec_push(&out->ins, j++));
        } else {
            if (dirty && dirty->n && keyvec_has(dirty, a[i])) TRY(idxvec_push(&out->mod, i));
            i++;
            j++;
        }
    }
    return CS_OK;
}

typedef struct kpos {
    int64_t key;
    size_t pos;
} kpos;

static int cmp_kpos(const void *x, const void *y)
{
    const kpos *a = x, *b = y;
    if (a->key != b->key) return (a->key > b->key) - (a->key < b->key);
    return (a->pos > b->pos) - (a->pos < b->pos);
}

int diff_keys(const int64_t *a, size_t na, const int64_t *b, size_t nb, const keyvec *dirty, rdiff *out)
{
    rdiff_reset(out);
    /* match each new element with the first unmatched old occurrence of its key */
    kpos *old = malloc((na ? na : 1) * sizeof *old);
    size_t *used = calloc(na ? na : 1, sizeof *used);       /* per group start: how many taken */
    int64_t *from = malloc((nb ? nb : 1) * sizeof *from);    /* per new element: old position or -1 */
    size_t *tails = malloc((nb ? nb : 1) * sizeof *tails);   /* LIS: new index ending a run of length i+1 */
    size_t *prev = malloc((nb ? nb : 1) * sizeof *prev);     /* LIS: predecessor (SIZE_MAX: none) */
    uint8_t *keep = calloc(nb ? nb : 1, 1);
    uint8_t *oldkept = calloc(na ? na : 1, 1);
    int rc = CS_OK;
    if (!old || !used || !from || !tails || !prev || !keep || !oldkept) { rc = NOMEM(); goto done; }
    for (size_t i = 0; i < na; i++) old[i] = (kpos){a[i], i};
    qsort(old, na, sizeof *old, cmp_kpos);
    for (size_t j = 0; j < nb; j++) {
        size_t lo = 0, hi = na;
        while (lo < hi) {
            size_t m = lo + (hi - lo) / 2;
            if (old[m].key < b[j]) lo = m + 1;
            else hi = m;
        }
        from[j] = -1;
        if (lo < na && old[lo].key == b[j]) {
            size_t g = lo, k = lo + used[lo];
            if (k < na && old[k].key == b[j]) {
                from[j] = (int64_t)old[k].pos;
                used[g]++;
            }
        }
    }
    /* the longest increasing run of old positions among the matched new elements */
    size_t len = 0;
    for (size_t j = 0; j < nb; j++) {
        if (from[j] < 0) continue;
        size_t lo = 0, hi = len;
        while (lo < hi) {
            size_t m = lo + (hi - lo) / 2;
            if (from[tails[m]] < from[j]) lo = m + 1;
            else hi = m;
        }
        prev[j] = lo ? tails[lo - 1] : SIZE_MAX;
        tails[lo] = j;
        if (lo == len) len++;
    }
    for (size_t j = len ? tails[len - 1] : SIZE_MAX; j != SIZE_MAX; j = prev[j]) {
        keep[j] = 1;
        oldkept[from[j]] = 1;
    }
    for (size_t i = 0; i < na && rc == CS_OK; i++)
        if (!oldkept[i]) rc = idxvec_push(&out->del, i);
    for (size_t j = 0; j < nb && rc == CS_OK; j++)
        if (!keep[j]) rc = idxvec_push(&out->ins, j);
    for (size_t j = 0; j < nb && rc == CS_OK; j++)
        if (keep[j] && dirty && dirty->n && keyvec_has(dirty, b[j])) rc = idxvec_push(&out->mod, (size_t)from[j]);
done:
    free(old);
    free(used);
    free(from);
    free(tails);
    free(prev);
    free(keep);
    free(oldkept);
    return rc;
}

/* ---- pending ---------------------------------------------------------------------------- */

void pending_reset(pending *p, size_t n)
{
    p->nbase = n;
    p->ident = true;
    p->modset.n = 0;
    p->n = 0;
}

void pending_free(pending *p)
{
    free(p->modset.v);
    free(p->origin);
    free(p->mod);
    memset(p, 0, sizeof *p);
}

size_t pending_len(const pending *p) { return p->ident ? p->nbase : p->n; }

bool pending_any(const pending *p)
{
    if (p->ident) return p->modset.n > 0;
    if (p->n != p->nbase) return true;
    for (size_t i = 0; i < p->n; i++)
        if (p->origin[i] != (int64_t)i || p->mod[i]) return true;
    return false;
}

static int reserve(pending *p, size_t n)
{
    if (n <= p->cap) return CS_OK;
    size_t nc = p->cap ? p->cap : 16;
    while (nc < n) nc *= 2;
    int64_t *o = realloc(p->origin, nc * sizeof *o);
    if (!o) return NOMEM();
    p->origin = o;
    uint8_t *m = realloc(p->mod, nc);
    if (!m) return NOMEM();
    p->mod = m;
    p->cap = nc;
    return CS_OK;
}

/* Turns the ident form into the explicit one. */
static int materialize(pending *p)
{
    if (!p->ident) return CS_OK;
    TRY(reserve(p, p->nbase));
    for (size_t i = 0; i < p->nbase; i++) {
        p->origin[i] = (int64_t)i;
        p->mod[i] = 0;
    }
    for (size_t i = 0; i < p->modset.n; i++)
        if (p->modset.v[i] < p->nbase) p->mod[p->modset.v[i]] = 1;
    p->n = p->nbase;
    p->ident = false;
    p->modset.n = 0;
    return CS_OK;
}

int pending_modify(pending *p, size_t pos)
{
    if (p->ident) return pos < p->nbase ? idxvec_push(&p->modset, pos) : CS_OK;
    if (pos < p->n) p->mod[pos] = 1;
    return CS_OK;
}

int pending_insert(pending *p, size_t pos)
{
    TRY(materialize(p));
    if (pos > p->n) pos = p->n;
    TRY(reserve(p, p->n + 1));
    memmove(p->origin + pos + 1, p->origin + pos, (p->n - pos) * sizeof *p->origin);
    memmove(p->mod + pos + 1, p->mod + pos, p->n - pos);
    p->origin[pos] = -1;
    p->mod[pos] = 0;
    p->n++;
    return CS_OK;
}

int pending_erase(pending *p, size_t pos)
{
    TRY(materialize(p));
    if (pos >= p->n) return CS_OK;
    memmove(p->origin + pos, p->origin + pos + 1, (p->n - pos - 1) * sizeof *p->origin);
    memmove(p->mod + pos, p->mod + pos + 1, p->n - pos - 1);
    p->n--;
    return CS_OK;
}

int pending_clear(pending *p)
{
    TRY(materialize(p));
    p->n = 0;
    return CS_OK;
}

int pending_apply(pending *p, const rdiff *d)
{
    if (!d->del.n && !d->ins.n) {
        for (size_t i = 0; i < d->mod.n; i++) TRY(pending_modify(p, d->mod.v[i]));
        return CS_OK;
    }
    TRY(materialize(p));
    size_t nprev = p->n, nnew = nprev - d->del.n + d->ins.n;
    int64_t *o = malloc((nnew ? nnew : 1) * sizeof *o);
    uint8_t *m = malloc(nnew ? nnew : 1);
    if (!o || !m) { free(o); free(m); return NOMEM(); }
    size_t j = 0, di = 0, ii = 0, mi = 0;
    for (size_t i = 0; i < nnew; i++) {
        if (ii < d->ins.n && d->ins.v[ii] == i) {
            o[i] = -1;
            m[i] = 0;
            ii++;
            continue;
        }
        while (di < d->del.n && d->del.v[di] == j) { di++; j++; }
        while (mi < d->mod.n && d->mod.v[mi] < j) mi++;
        o[i] = j < nprev ? p->origin[j] : -1;
        m[i] = (uint8_t)((j < nprev && p->mod[j]) || (mi < d->mod.n && d->mod.v[mi] == j));
        j++;
    }
    free(p->origin);
    free(p->mod);
    p->origin = o;
    p->mod = m;
    p->n = nnew;
    p->cap = nnew ? nnew : 1;
    return CS_OK;
}

int pending_take(pending *p, idxvec *del, idxvec *ins, idxvec *mod, idxvec *modnew)
{
    del->n = ins->n = mod->n = modnew->n = 0;
    if (p->ident) {
        if (p->modset.n) qsort(p->modset.v, p->modset.n, sizeof *p->modset.v, cmp_size);
        for (size_t i = 0; i < p->modset.n; i++) {
            if (i && p->modset.v[i] == p->modset.v[i - 1]) continue;
            TRY(idxvec_push(mod, p->modset.v[i]));
            TRY(idxvec_push(modnew, p->modset.v[i]));
        }
        pending_reset(p, p->nbase);
        return CS_OK;
    }
    uint8_t *present = calloc(p->nbase ? p->nbase : 1, 1);
    if (!present) return NOMEM();
    int rc = CS_OK;
    for (size_t i = 0; i < p->n && rc == CS_OK; i++) {
        if (p->origin[i] < 0) { rc = idxvec_push(ins, i); continue; }
        present[p->origin[i]] = 1;
        if (p->mod[i]) {
            rc = idxvec_push(mod, (size_t)p->origin[i]);
            if (rc == CS_OK) rc = idxvec_push(modnew, i);
        }
    }
    for (size_t i = 0; i < p->nbase && rc == CS_OK; i++)
        if (!present[i]) rc = idxvec_push(del, i);
    free(present);
    TRY(rc);
    pending_reset(p, p->n);
    return CS_OK;
}
