/*
 * schema_blob.c -- the schema in memory and in the file (docs/FORMAT.md §5): an immutable,
 * reference-counted `schema` that every transaction reading the same blob shares, its clone
 * for a write that changes it, and the blob it is parsed from and serialised to at commit.
 * Changing the schema (cs_table_add, cs_column_add, ...) is schema.c's.
 *
 * Invariants:
 *  1. A shared schema is never modified: a write transaction that changes the schema works on
 *     its own clone (refcount 1) until the commit makes that clone the shared one.
 *  2. Parsing never trusts the blob: every length is checked against the bytes left, names hold
 *     no NUL byte, and anything else is CS_CORRUPT.
 */
#include "schema.h"

#define SCHEMA_MAGIC 0x31484353u /* "SCH1" */

schema *schema_new(void)
{
    schema *s = calloc(1, sizeof *s);
    if (s) s->refcount = 1;
    return s;
}

void schema_table_free(table_def *t)
{
    for (uint32_t c = 0; c < t->ncols; c++) free(t->cols[c].name);
    free(t->cols);
    free(t->name);
}

void schema_release(schema *s)
{
    if (!s) return;
    if (__atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) > 0) return;
    for (uint32_t i = 0; i < s->ntables; i++) schema_table_free(&s->tables[i]);
    free(s->tables);
    free(s);
}

static char *dupn(const char *p, size_t n)
{
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, p, n);
    r[n] = 0;
    return r;
}

schema *schema_clone(const schema *s)
{
    schema *c = schema_new();
    if (!c) return NULL;
    c->ntables = s->ntables;
    c->tables = calloc(s->ntables ? s->ntables : 1, sizeof(table_def));
    if (!c->tables) goto fail;
    for (uint32_t i = 0; i < s->ntables; i++) {
        const table_def *a = &s->tables[i];
        table_def *b = &c->tables[i];
        *b = *a;
        b->name = a->name ? dupn(a->name, strlen(a->name)) : NULL;
        b->cols = calloc(a->ncols ? a->ncols : 1, sizeof(col_def));
        if (!b->cols || (a->name && !b->name)) { b->ncols = 0; goto fail; }
        for (uint32_t k = 0; k < a->ncols; k++) {
            b->cols[k] = a->cols[k];
            b->cols[k].name = a->cols[k].name ? dupn(a->cols[k].name, strlen(a->cols[k].name)) : NULL;
        }
    }
    c->ref = 0;
    return c;
fail:
    schema_release(c);
    return NULL;
}

/* ---- parse ------------------------------------------------------------------------------ */

typedef struct rd {
    const uint8_t *p; /* cursor */
    const uint8_t *end; /* end of input */
} rd;

static bool rd_n(rd *r, void *out, size_t n)
{
    if ((size_t)(r->end - r->p) < n) return false;
    memcpy(out, r->p, n);
    r->p += n;
    return true;
}

static bool rd_str(rd *r, char **out)
{
    uint16_t n;
    if (!rd_n(r, &n, 2) || (size_t)(r->end - r->p) < n) return false;
    if (memchr(r->p, 0, n)) return false;
    *out = dupn((const char *)r->p, n);
    r->p += n;
    return *out != NULL;
}

int schema_parse(const uint8_t *p, uint64_t n, schema **out)
{
    rd r = {p, p + n};
    uint32_t magic, nt;
    schema *s = schema_new();
    if (!s) return NOMEM();
    if (!rd_n(&r, &magic, 4) || magic != SCHEMA_MAGIC || !rd_n(&r, &nt, 4) || nt > 100000) goto bad;
    s->tables = calloc(nt ? nt : 1, sizeof(table_def));
    if (!s->tables) goto bad;
    for (uint32_t i = 0; i < nt; i++) {
        table_def *t = &s->tables[i];
        s->ntables = i + 1;
        uint8_t live, flags;
        uint16_t pad;
        if (!rd_n(&r, &live, 1) || !rd_n(&r, &flags, 1) || !rd_n(&r, &pad, 2)) goto bad;
        t->live = live;
        t->flags = flags;
        if (live && !rd_str(&r, &t->name)) goto bad;
        uint32_t ncols;
        if (!rd_n(&r, &t->primary, 4) || !rd_n(&r, &ncols, 4) || ncols > 100000) goto bad;
        t->ncols = ncols;
        t->cols = calloc(t->ncols ? t->ncols : 1, sizeof(col_def));
        if (!t->cols) { t->ncols = 0; goto bad; }
        for (uint32_t c = 0; c < t->ncols; c++) {
            col_def *d = &t->cols[c];
            if (!rd_n(&r, &d->live, 1) || !rd_n(&r, &d->type, 1) || !rd_n(&r, &d->coll, 1) ||
                !rd_n(&r, &d->pad, 1))
                goto bad;
            if (!d->live) continue;
            if (!rd_str(&r, &d->name) || !rd_n(&r, &d->flags, 4) || !rd_n(&r, &d->target, 4) ||
                !rd_n(&r, &d->origin_col, 4))
                goto bad;
            if (d->type < CS_TYPE_INT || d->type > CS_TYPE_BACKLINK || d->coll > CS_COLL_MAP) goto bad;
        }
        if (live && t->primary != CS_NONE && (t->primary >= t->ncols || !t->cols[t->primary].live)) goto bad;
    }
    /* cross-checks: link targets exist */
    for (uint32_t i = 0; i < s->ntables; i++) {
        table_def *t = &s->tables[i];
        if (!t->live) continue;
        for (uint32_t c = 0; c < t->ncols; c++) {
            col_def *d = &t->cols[c];
            if (!d->live) continue;
            if (d->type == CS_TYPE_LINK || d->type == CS_TYPE_BACKLINK) {
                if (d->target >= s->ntables || !s->tables[d->target].live) goto bad;
            }
            if (d->type == CS_TYPE_BACKLINK) {
                table_def *o = &s->tables[d->target];
                if (d->origin_col >= o->ncols || !o->cols[d->origin_col].live ||
                    o->cols[d->origin_col].type != CS_TYPE_LINK)
                    goto bad;
            }
        }
    }
    *out = s;
    return CS_OK;
bad:
    schema_release(s);
    return CORRUPT("schema blob is malformed");
}

/* ---- serialize -------------------------------------------------------------------------- */

typedef struct wr {
    uint8_t *p; /* buffer */
    uint64_t n, cap; /* used, allocated */
    bool oom; /* an allocation failed */
} wr;

static void wr_n(wr *w, const void *src, size_t n)
{
    if (w->n + n > w->cap) {
        uint64_t nc = (w->cap ? w->cap * 2 : 256) + n;
        uint8_t *q = realloc(w->p, nc);
        if (!q) { w->oom = true; return; }
        w->p = q;
        w->cap = nc;
    }
    memcpy(w->p + w->n, src, n);
    w->n += n;
}

static void wr_str(wr *w, const char *s)
{
    uint16_t n = (uint16_t)strlen(s);
    wr_n(w, &n, 2);
    wr_n(w, s, n);
}

int schema_serialize(const schema *s, uint8_t **out, uint64_t *n)
{
    wr w = {0};
    uint32_t magic = SCHEMA_MAGIC;
    wr_n(&w, &magic, 4);
    wr_n(&w, &s->ntables, 4);
    for (uint32_t i = 0; i < s->ntables; i++) {
        const table_def *t = &s->tables[i];
        uint8_t live = t->live, flags = (uint8_t)t->flags;
        uint16_t pad = 0;
        wr_n(&w, &live, 1);
        wr_n(&w, &flags, 1);
        wr_n(&w, &pad, 2);
        if (live) wr_str(&w, t->name);
        wr_n(&w, &t->primary, 4);
        wr_n(&w, &t->ncols, 4);
        for (uint32_t c = 0; c < t->ncols; c++) {
            const col_def *d = &t->cols[c];
            uint8_t hdr[4] = {d->live, d->type, d->coll, 0};
            wr_n(&w, hdr, 4);
            if (!d->live) continue;
            wr_str(&w, d->name);
            wr_n(&w, &d->flags, 4);
            wr_n(&w, &d->target, 4);
            wr_n(&w, &d->origin_col, 4);
        }
    }
    if (w.oom) {
        free(w.p);
        return NOMEM();
    }
    *out = w.p;
    *n = w.n;
    return CS_OK;
}
