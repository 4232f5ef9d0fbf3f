/*
 * query.c -- the query engine: binds a parsed query (qparse.c) to the schema, checks its
 * types, and runs it over a table: count, the ordered matching keys (SORT / DISTINCT / LIMIT),
 * and aggregates. Conditions on plain Int columns run leaf by leaf over the packed column arrays
 * (width-specialised loops the compiler vectorises); everything else is evaluated per object
 * through the accessors. A condition of the top-level AND chain that an index answers (==, IN,
 * ranges, BEGINSWITH, ==[c]) seeds the candidates from ranges of the index (find_seed).
 * Class and property names are looked up through the query's name map (qnames.c) when key paths
 * are bound, so public names cost nothing while the query runs.
 *
 * Semantics (docs/ARCHITECTURE.md, Queries and Values and their order): a key path through a to-many relationship or a collection of
 * values yields many values and a comparison holds if it holds for ANY of them (ALL and NONE
 * change that); null compares equal only to null and is ordered before every value; numbers of
 * different types compare by value; strings compare by UTF-8 bytes, [c] folds case and [d]
 * strips diacritics for U+0000..U+017F.
 */
#include "node.h"
#include "cluster.h"
#include "schema.h"
#include "index.h"
#include "qparse.h"
#include "qnames.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>

/* ---- bound key paths -------------------------------------------------------------------- */

typedef enum bstep_kind {
    BS_COL = 1,   /* a single-value column (terminal, or a link to follow) */
    BS_COLL,      /* a List/Set/Map column: many values (elements, or map values) */
    BS_COUNT,     /* @count / @size of the collection before it */
    BS_MIN, BS_MAX, BS_SUM, BS_AVG, /* aggregates over the collection before it */
    BS_KEYS,      /* @allKeys of a map */
    BS_SELF,      /* the element of a collection of values the query runs over */
    BS_BACKLINKS, /* @links.Class.property: the objects linking here (many) */
    BS_MAPKEY,    /* map['key'] */
} bstep_kind;

typedef struct bstep {
    bstep_kind kind;  /* what */
    uint32_t table;   /* table the step reads from */
    uint32_t col;     /* column */
    uint32_t target;  /* link target (LINK columns) */
    cs_type type;     /* element type */
    char *key;        /* BS_MAPKEY: the key (may hold NUL bytes) */
    size_t key_len;   /* BS_MAPKEY: its length */
} bstep;

typedef struct bpath {
    bstep *steps;     /* in order */
    size_t n;         /* count */
    cs_type type;     /* type of the values it yields (CS_TYPE_LINK for objects) */
    bool many;        /* may yield more than one value */
    bool nullable;    /* may yield null */
    bool type_of;     /* ends in @type: yields the type names of the values */
} bpath;

typedef enum qroot { QR_TABLE = 0, QR_OBJECTS, QR_VALUES, QR_BACKLINKS } qroot;

struct cs_query {
    cs_txn *txn;        /* the transaction it reads through */
    uint32_t table;     /* the table of the objects it runs over (CS_NONE: values) */
    qroot root;         /* what it runs over */
    cs_coll coll;       /* QR_OBJECTS, QR_VALUES: the collection */
    cs_obj owner;       /* QR_BACKLINKS: the object linked to */
    uint32_t origin_col; /* QR_BACKLINKS: the link column of `table` */
    cs_type self_type;  /* QR_VALUES: the element type */
    const char *var;    /* while binding a SUBQUERY predicate: its variable */
    qparsed *parsed;    /* the syntax tree */
    schema *bound_to;   /* schema the paths were bound against */
    qnames *names;      /* public names of tables and columns (NULL: stored names only) */
    char *text;         /* the query text (for messages) */
    size_t len;         /* its length */
    cs_query_plan plan; /* how the last run found its candidates (cs_query_last_plan) */
};

typedef struct binder {
    cs_query *q;   /* the query */
    int rc;        /* first error */
} binder;

static int berr(cs_query *q, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int berr(cs_query *q, size_t pos, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    unsigned line, col;
    qparse_where(q->text, pos, &line, &col);
    return cs_fail(CS_QUERY, 0, "%s at %u:%u", msg, line, col);
}

static const char *type_name(cs_type t)
{
    switch (t) {
    case CS_TYPE_NULL: return "null";
    case CS_TYPE_INT: return "Int";
    case CS_TYPE_BOOL: return "Bool";
    case CS_TYPE_FLOAT: return "Float";
    case CS_TYPE_DOUBLE: return "Double";
    case CS_TYPE_STRING: return "String";
    case CS_TYPE_BINARY: return "Data";
    case CS_TYPE_TIMESTAMP: return "Date";
    case CS_TYPE_OBJECTID: return "ObjectId";
    case CS_TYPE_UUID: return "UUID";
    case CS_TYPE_DECIMAL: return "Decimal128";
    case CS_TYPE_LINK: return "object";
    case CS_TYPE_MIXED: return "Mixed";
    default: return "value";
    }
}

static bool numeric(cs_type t)
{
    return t == CS_TYPE_INT || t == CS_TYPE_FLOAT || t == CS_TYPE_DOUBLE || t == CS_TYPE_DECIMAL;
}

/* Binds a key path of the syntax tree; the result is cached in the node's `owned` pointer. */
static void bpath_free(bpath *b);

static int bind_path(cs_query *q, qnode *n, bpath **out)
{
    cs_txn *t = q->txn;
    bpath *b = calloc(1, sizeof *b);
    if (!b) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    b->steps = calloc(n->nsteps + 1, sizeof(bstep));
    if (!b->steps) { free(b); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    uint32_t table = q->table;
    bool at_collection = false, at_object = true;
    cs_type cur = CS_TYPE_LINK;
    size_t first = 0;
    if (n->nsteps && n->steps[0].kind == QS_NAME && n->steps[0].name[0] == '$') {
        /* a SUBQUERY variable: the element the inner predicate looks at */
        if (!q->var || strcmp(q->var, n->steps[0].name) != 0) {
            bpath_free(b);
            return berr(q, n->steps[0].pos, "unknown variable '%s'", n->steps[0].name);
        }
        first = 1;
    } else if (n->nsteps && n->steps[0].kind == QS_NAME && strcmp(n->steps[0].name, "self") == 0 && q->root == QR_VALUES && !q->var) {
        bstep *o = &b->steps[b->n++];
        o->kind = BS_SELF;
        o->type = q->self_type;
        cur = q->self_type;
        b->nullable = true;
        at_object = false;
        first = 1;
    } else if (q->table == CS_NONE) {
        bpath_free(b);
        return berr(q, n->pos, "the elements of this collection are values: use 'self'");
    }
    for (size_t i = first; i < n->nsteps; i++) {
        qstep *s = &n->steps[i];
        bstep *o = &b->steps[b->n];
        table_def *td = table != CS_NONE ? &t->schema->tables[table] : NULL;
        uint32_t ot, oc;
        bool alias = s->kind == QS_NAME && at_object && td &&
                     qnames_backlink_find(q->names, t, table, s->name, &ot, &oc) == CS_OK;
        if (s->kind == QS_LINKS || alias) {
            if (!at_object || !td) { bpath_free(b); return berr(q, s->pos, "@links follows an object"); }
            /* a backlink alias (CS_NAME_BACKLINK) names @links.<origin table>.<link column> itself */
            if (!alias && qnames_table_find(q->names, t, s->name, &ot) != CS_OK) {
                bpath_free(b);
                return berr(q, s->pos, "unknown class '%s' in @links", s->name);
            }
            if (!alias && (qnames_column_find(q->names, t, ot, s->name2, &oc) != CS_OK ||
                           t->schema->tables[ot].cols[oc].type != CS_TYPE_LINK || t->schema->tables[ot].cols[oc].target != table)) {
                bpath_free(b);
                return berr(q, s->pos, "'%s.%s' does not link to %s", s->name, s->name2, qnames_table_name(q->names, t, table));
            }
            o->kind = BS_BACKLINKS;
            o->table = ot;
            o->col = oc;
            o->type = CS_TYPE_LINK;
            table = ot;
            cur = CS_TYPE_LINK;
            b->many = true;
            at_collection = true;
            at_object = true;
            b->n++;
            continue;
        }
        if (s->kind == QS_SUBSCRIPT) {
            bstep *prev = b->n ? &b->steps[b->n - 1] : NULL;
            if (!prev || prev->kind != BS_COLL || t->schema->tables[prev->table].cols[prev->col].coll != CS_COLL_MAP) {
                bpath_free(b);
                return berr(q, s->pos, "'[key]' applies to a map");
            }
            prev->kind = BS_MAPKEY;
            prev->key = malloc(s->len + 1);
            if (!prev->key) { bpath_free(b); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
            memcpy(prev->key, s->name, s->len + 1);
            prev->key_len = s->len;
            at_collection = false;
            b->many = false;
            continue;
        }
        if (s->kind == QS_TYPE) {
            if (cur != CS_TYPE_MIXED) { bpath_free(b); return berr(q, s->pos, "@type applies to Mixed properties"); }
            b->type_of = true;
            cur = CS_TYPE_STRING;
            at_collection = false;
            at_object = false;
            continue;
        }
        if (s->kind == QS_NAME) {
            if (!at_object || !td) { bpath_free(b); return berr(q, s->pos, "'%s' follows a value, not an object", s->name); }
            uint32_t col;
            if (qnames_column_find(q->names, t, table, s->name, &col) != CS_OK) {
                bpath_free(b);
                return berr(q, s->pos, "unknown property '%s' on %s", s->name, qnames_table_name(q->names, t, table));
            }
            col_def *c = &td->cols[col];
            o->table = table;
            o->col = col;
            o->target = c->target;
            o->type = (cs_type)c->type;
            if (c->coll != CS_COLL_NONE) {
                o->kind = BS_COLL;
                b->many = true;
                at_collection = true;
                at_object = c->type == CS_TYPE_LINK;
                b->nullable = b->nullable || (c->flags & CS_COL_NULLABLE) || c->coll == CS_COLL_MAP;
            } else {
                o->kind = BS_COL;
                at_collection = false;
                at_object = c->type == CS_TYPE_LINK;
                if (c->flags & CS_COL_NULLABLE || c->type == CS_TYPE_LINK || c->type == CS_TYPE_MIXED) b->nullable = true;
            }
            if (c->type == CS_TYPE_LINK) table = c->target;
            cur = (cs_type)c->type;
            b->n++;
            continue;
        }
        if (!at_collection) {
            bpath_free(b);
            return berr(q, s->pos, "collection operators apply to lists, sets and maps");
        }
        switch (s->kind) {
        case QS_COUNT: o->kind = BS_COUNT; cur = CS_TYPE_INT; break;
        case QS_MIN: o->kind = BS_MIN; break;
        case QS_MAX: o->kind = BS_MAX; break;
        case QS_SUM: o->kind = BS_SUM; break;
        case QS_AVG: o->kind = BS_AVG; break; /* the result type is set after the check below */
        case QS_KEYS: case QS_VALUES: {
            bstep *prev = b->n ? &b->steps[b->n - 1] : NULL;
            if (!prev || prev->kind != BS_COLL || t->schema->tables[prev->table].cols[prev->col].coll != CS_COLL_MAP) {
                bpath_free(b);
                return berr(q, s->pos, "%s applies to a map", s->kind == QS_KEYS ? "@allKeys" : "@allValues");
            }
            if (s->kind == QS_VALUES) { at_collection = true; continue; } /* the values are what a map yields */
            o->kind = BS_KEYS;
            cur = CS_TYPE_STRING;
            break;
        }
        default:
            bpath_free(b);
            return berr(q, s->pos, "this collection operator is not supported yet");
        }
        if ((o->kind == BS_MIN || o->kind == BS_MAX || o->kind == BS_SUM || o->kind == BS_AVG)) {
            if (at_object) {
                /* @max.prop over a list of objects */
                if (i + 1 >= n->nsteps || n->steps[i + 1].kind != QS_NAME) {
                    bpath_free(b);
                    return berr(q, s->pos, "an aggregate over objects needs a property (@max.age)");
                }
                uint32_t col;
                table_def *tt = &t->schema->tables[table];
                if (qnames_column_find(q->names, t, table, n->steps[i + 1].name, &col) != CS_OK) {
                    bpath_free(b);
                    return berr(q, n->steps[i + 1].pos, "unknown property '%s' on %s", n->steps[i + 1].name,
                                qnames_table_name(q->names, t, table));
                }
                o->table = table;
                o->col = col;
                cur = (cs_type)tt->cols[col].type;
                i++;
            } else {
                o->col = CS_NONE;
            }
            if (!numeric(cur) && cur != CS_TYPE_TIMESTAMP && o->kind != BS_SUM && o->kind != BS_AVG) {
                if (cur != CS_TYPE_MIXED) { bpath_free(b); return berr(q, s->pos, "@min/@max need numbers or dates, not %s", type_name(cur)); }
            }
            if ((o->kind == BS_SUM || o->kind == BS_AVG) && !numeric(cur) && cur != CS_TYPE_MIXED) {
                bpath_free(b);
                return berr(q, s->pos, "@sum/@avg need numbers, not %s", type_name(cur));
            }
            if (o->kind == BS_AVG) cur = cur == CS_TYPE_DECIMAL ? CS_TYPE_DECIMAL : CS_TYPE_DOUBLE;
            o->type = cur;
        }
        b->n++;
        at_collection = false;
        at_object = false;
        b->many = o->kind == BS_KEYS ? true : false;
        for (size_t k = 0; k + 1 < b->n; k++)
            if ((b->steps[k].kind == BS_COLL || b->steps[k].kind == BS_BACKLINKS) && k + 1 < b->n - 1) b->many = true;
    }
    b->type = cur;
    *out = b;
    return CS_OK;
}

static void bpath_free(bpath *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->n; i++) free(b->steps[i].key);
    free(b->steps);
    free(b);
}

/* ---- evaluating key paths --------------------------------------------------------------- */

typedef struct vals {
    cs_value *v;      /* values */
    size_t n, cap;    /* used, allocated */
} vals;

static int vals_push(vals *x, const cs_value *v)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 8;
        cs_value *p = realloc(x->v, nc * sizeof *p);
        if (!p) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
        x->v = p;
        x->cap = nc;
    }
    x->v[x->n++] = *v;
    return CS_OK;
}

static int agg_values(cs_txn *t, const bstep *st, const vals *in, cs_value *out);

/* Appends the aggregate of `elems` (gathered with result `rc`) to `out`; frees `elems`. */
static int push_aggregate(cs_txn *t, const bstep *nx, vals *elems, int rc, vals *out)
{
    cs_value r;
    if (rc == CS_OK) rc = agg_values(t, nx, elems, &r);
    free(elems->v);
    TRY(rc);
    return vals_push(out, &r);
}

/* Evaluates steps [i, n) of a path from object `o`, appending the values to `out`. */
static int eval_from(cs_txn *t, const bpath *b, size_t i, cs_obj *o, const cs_value *self, vals *out)
{
    if (i >= b->n) {
        cs_value v = cs_link(o->table, o->key);
        return vals_push(out, &v);
    }
    const bstep *s = &b->steps[i];
    if (s->kind == BS_SELF) return self ? vals_push(out, self) : CS_OK;
    if (s->kind == BS_BACKLINKS) {
        size_t n;
        TRY(cs_obj_backlink_count(o, s->table, s->col, &n));
        const bstep *nx = i + 1 < b->n ? &b->steps[i + 1] : NULL;
        if (nx && nx->kind == BS_COUNT) {
            cs_value v = cs_int((int64_t)n);
            return vals_push(out, &v);
        }
        if (nx && (nx->kind == BS_MIN || nx->kind == BS_MAX || nx->kind == BS_SUM || nx->kind == BS_AVG)) {
            vals elems = {0};
            int rc = CS_OK;
            for (size_t k = 0; k < n && rc == CS_OK; k++) {
                int64_t key;
                cs_obj e;
                cs_value v;
                rc = cs_obj_backlink_get(o, s->table, s->col, k, &key);
                if (rc == CS_OK) rc = cs_obj_open(t, s->table, key, &e);
                if (rc == CS_OK) rc = cs_obj_get(&e, nx->col, &v);
                if (rc == CS_OK) rc = vals_push(&elems, &v);
            }
            return push_aggregate(t, nx, &elems, rc, out);
        }
        for (size_t k = 0; k < n; k++) {
            int64_t key;
            TRY(cs_obj_backlink_get(o, s->table, s->col, k, &key));
            cs_obj e;
            TRY(cs_obj_open(t, s->table, key, &e));
            TRY(eval_from(t, b, i + 1, &e, NULL, out));
        }
        return CS_OK;
    }
    if (s->kind == BS_MAPKEY) {
        cs_coll c;
        TRY(cs_coll_open(o, s->col, &c));
        cs_value v;
        int rc = cs_map_get(&c, s->key, s->key_len, &v);
        if (rc == CS_NOTFOUND) v = cs_null();
        else TRY(rc);
        if (i + 1 == b->n || v.type != CS_TYPE_LINK) return vals_push(out, &v);
        cs_obj next;
        rc = cs_obj_open(t, v.v.link.table, v.v.link.key, &next);
        if (rc == CS_NOTFOUND) { cs_value nul = cs_null(); return vals_push(out, &nul); }
        TRY(rc);
        return eval_from(t, b, i + 1, &next, NULL, out);
    }
    if (s->kind == BS_COL) {
        cs_value v;
        TRY(cs_obj_get(o, s->col, &v));
        if (i + 1 == b->n || v.type != CS_TYPE_LINK) return vals_push(out, &v);
        cs_obj next;
        int rc = cs_obj_open(t, v.v.link.table, v.v.link.key, &next);
        if (rc == CS_NOTFOUND) {
            cs_value nul = cs_null();
            return vals_push(out, &nul);
        }
        TRY(rc);
        return eval_from(t, b, i + 1, &next, NULL, out);
    }
    if (s->kind == BS_COLL) {
        cs_coll c;
        TRY(cs_coll_open(o, s->col, &c));
        size_t n;
        TRY(cs_coll_size(&c, &n));
        bool is_map = c.kind == CS_COLL_MAP;
        const bstep *nx = i + 1 < b->n ? &b->steps[i + 1] : NULL;
        if (nx && nx->kind == BS_COUNT) {
            cs_value v = cs_int((int64_t)n);
            return vals_push(out, &v);
        }
        if (nx && nx->kind == BS_KEYS) {
            for (size_t k = 0; k < n; k++) {
                cs_value key, val;
                TRY(cs_map_get_at(&c, k, &key, &val));
                TRY(vals_push(out, &key));
            }
            return CS_OK;
        }
        if (nx && (nx->kind == BS_MIN || nx->kind == BS_MAX || nx->kind == BS_SUM || nx->kind == BS_AVG)) {
            vals elems = {0};
            int rc = CS_OK;
            for (size_t k = 0; k < n && rc == CS_OK; k++) {
                cs_value v, key;
                rc = is_map ? cs_map_get_at(&c, k, &key, &v) : cs_list_get(&c, k, &v);
                if (rc == CS_OK && nx->col != CS_NONE && v.type == CS_TYPE_LINK) {
                    cs_obj e;
                    rc = cs_obj_open(t, v.v.link.table, v.v.link.key, &e);
                    if (rc == CS_OK) rc = cs_obj_get(&e, nx->col, &v);
                }
                if (rc == CS_OK) rc = vals_push(&elems, &v);
            }
            return push_aggregate(t, nx, &elems, rc, out);
        }
        for (size_t k = 0; k < n; k++) {
            cs_value v, key;
            TRY(is_map ? cs_map_get_at(&c, k, &key, &v) : cs_list_get(&c, k, &v));
            if (i + 1 < b->n && v.type == CS_TYPE_LINK) {
                cs_obj e;
                int rc = cs_obj_open(t, v.v.link.table, v.v.link.key, &e);
                if (rc == CS_NOTFOUND) continue;
                TRY(rc);
                TRY(eval_from(t, b, i + 1, &e, NULL, out));
            } else {
                TRY(vals_push(out, &v));
            }
        }
        return CS_OK;
    }
    return CS_OK;
}

/* Sum / average / min / max of values (docs/ARCHITECTURE.md, Values and their order: the sum of nothing is 0, the others null).
 * Integers sum exactly (overflow is CS_OVERFLOW); a Float or Double makes the result a Double;
 * a Decimal128 makes it a Decimal128. Decimal arithmetic runs only for decimal values and once
 * at the end for the rest, so integer and floating sums pay nothing for it. */
static int agg_values(cs_txn *t, const bstep *st, const vals *in, cs_value *out)
{
    (void)t;
    size_t count = 0;
    bool any_float = false, any_decimal = false;
    int64_t isum = 0;         /* the integers, exactly (SUM) */
    long double isum_ld = 0;  /* the integers (AVG: no overflow to report) */
    long double fsum = 0;     /* the floats and doubles */
    cs_decimal128 decsum = cs_decimal_from_int(0); /* the decimals */
    cs_value best = cs_null();
    for (size_t i = 0; i < in->n; i++) {
        const cs_value *v = &in->v[i];
        if (v->type == CS_TYPE_NULL) continue;
        if (st->kind == BS_MIN || st->kind == BS_MAX) {
            if (!numeric(v->type) && v->type != CS_TYPE_TIMESTAMP) continue;
            if (best.type == CS_TYPE_NULL) best = *v;
            else {
                int c = cs_value_compare(v, &best);
                if ((st->kind == BS_MIN && c < 0) || (st->kind == BS_MAX && c > 0)) best = *v;
            }
            continue;
        }
        if (!numeric(v->type)) continue;
        count++;
        switch (v->type) {
        case CS_TYPE_INT:
            if (st->kind == BS_SUM && __builtin_add_overflow(isum, v->v.i, &isum))
                return cs_fail(CS_OVERFLOW, 0, "integer sum overflows 64 bits");
            isum_ld += v->v.i;
            break;
        case CS_TYPE_FLOAT: any_float = true; fsum += v->v.f; break;
        case CS_TYPE_DOUBLE: any_float = true; fsum += v->v.d; break;
        default: any_decimal = true; decsum = cs_decimal_add(&decsum, &v->v.dec); break;
        }
    }
    if (st->kind == BS_MIN || st->kind == BS_MAX) {
        *out = best;
        return CS_OK;
    }
    if (any_decimal) {
        /* the other values join the decimal sum once */
        cs_decimal128 part = st->kind == BS_SUM ? cs_decimal_from_int(isum) : cs_decimal_from_double((double)isum_ld);
        decsum = cs_decimal_add(&decsum, &part);
        if (any_float) {
            part = cs_decimal_from_double((double)fsum);
            decsum = cs_decimal_add(&decsum, &part);
        }
        out->type = CS_TYPE_DECIMAL;
        if (st->kind == BS_SUM) {
            out->v.dec = decsum;
        } else {
            cs_decimal128 n = cs_decimal_from_int((int64_t)count);
            out->v.dec = cs_decimal_div(&decsum, &n);
        }
        return CS_OK;
    }
    if (st->kind == BS_SUM) {
        *out = any_float ? cs_double((double)(isum_ld + fsum)) : cs_int(isum);
        return CS_OK;
    }
    *out = count ? cs_double((double)((isum_ld + fsum) / (long double)count)) : cs_null();
    return CS_OK;
}

/* ---- strings: [c] and [d] for U+0000..U+017F ---------------------------------------------- */

/* Unicode simple case folding (CaseFolding.txt, statuses C and S) for U+0000..U+017F. */
static uint32_t fold_case(uint32_t c)
{
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0xB5) return 0x3BC; /* micro sign folds to Greek small mu */
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    if (c == 0x130 || c == 0x131) return c; /* dotted I and dotless i have no simple folding */
    if (c == 0x17F) return 's';              /* long s */
    if (c >= 0x100 && c <= 0x137) return c | 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
    if (c >= 0x14A && c <= 0x177) return c | 1;
    if (c == 0x178) return 0xFF;
    return c;
}

static uint32_t strip_mark(uint32_t c)
{
    static const char latin1[] = "AAAAAAACEEEEIIII" "DNOOOOO*OUUUUYTs" "aaaaaaaceeeeiiii" "dnooooo/ouuuuyty";
    if (c >= 0xC0 && c <= 0xFF) {
        char b = latin1[c - 0xC0];
        if (b == '*' || b == '/' || c == 0xC6 || c == 0xE6 || c == 0xDF || c == 0xDE || c == 0xFE || c == 0xD0 ||
            c == 0xF0 || c == 0xD8 || c == 0xF8)
            return c;
        return (uint32_t)b;
    }
    if (c < 0x100 || c > 0x17F) return c;
    static const struct { uint16_t from, to; char upper, lower; } ranges[] = {
        /* letters whose canonical decomposition is a base letter plus marks; letters with a
         * stroke (Đ Ħ Ł Ŧ), dotless ı and compatibility-only forms (Ŀ ŉ ſ) have none */
        {0x100, 0x105, 'A', 'a'}, {0x106, 0x10D, 'C', 'c'}, {0x10E, 0x10F, 'D', 'd'}, {0x112, 0x11B, 'E', 'e'},
        {0x11C, 0x123, 'G', 'g'}, {0x124, 0x125, 'H', 'h'}, {0x128, 0x130, 'I', 'i'}, {0x134, 0x135, 'J', 'j'},
        {0x136, 0x137, 'K', 'k'}, {0x139, 0x13E, 'L', 'l'}, {0x143, 0x148, 'N', 'n'}, {0x14C, 0x151, 'O', 'o'},
        {0x154, 0x159, 'R', 'r'}, {0x15A, 0x161, 'S', 's'}, {0x162, 0x165, 'T', 't'}, {0x168, 0x173, 'U', 'u'},
        {0x174, 0x175, 'W', 'w'}, {0x176, 0x178, 'Y', 'y'}, {0x179, 0x17E, 'Z', 'z'},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (c >= ranges[i].from && c <= ranges[i].to) {
            if (c == 0x130) return 'I';
            if (c == 0x178) return 'Y';
            /* within a range upper and lower case alternate, upper first (odd-start ranges
             * [0x139..] and [0x179..] start with upper at the odd code point) */
            bool upper = ((c - ranges[i].from) % 2) == 0;
            return (uint32_t)(upper ? ranges[i].upper : ranges[i].lower);
        }
    return c;
}

/* Decodes one UTF-8 code point (invalid bytes decode as themselves). */
static uint32_t utf8_next(const uint8_t *s, size_t n, size_t *i)
{
    uint8_t b = s[*i];
    if (b < 0x80 || *i + 1 >= n || (b & 0xE0) != 0xC0 || (s[*i + 1] & 0xC0) != 0x80) {
        if (b >= 0xE0 && b < 0xF0 && *i + 2 < n && (s[*i + 1] & 0xC0) == 0x80 && (s[*i + 2] & 0xC0) == 0x80) {
            uint32_t c = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[*i + 1] & 0x3F) << 6) | (s[*i + 2] & 0x3F);
            *i += 3;
            return c;
        }
        (*i)++;
        return b;
    }
    uint32_t c = ((uint32_t)(b & 0x1F) << 6) | (s[*i + 1] & 0x3F);
    *i += 2;
    return c;
}

/* Folds a string into `out` as 32-bit code points. */
static uint32_t *fold(const void *p, size_t n, int flags, size_t *len)
{
    uint32_t *o = malloc((n + 1) * sizeof *o);
    if (!o) return NULL;
    size_t k = 0;
    const uint8_t *s = p;
    for (size_t i = 0; i < n;) {
        uint32_t c = utf8_next(s, n, &i);
        if (flags & QF_DIACRITIC) c = strip_mark(c);
        if (flags & QF_CASE) c = fold_case(c);
        o[k++] = c;
    }
    *len = k;
    return o;
}

static bool like_match(const uint32_t *s, size_t sn, const uint32_t *p, size_t pn)
{
    size_t si = 0, pi = 0, star = SIZE_MAX, mark = 0;
    while (si < sn) {
        if (pi < pn && (p[pi] == '?' || p[pi] == s[si])) { si++; pi++; }
        else if (pi < pn && p[pi] == '*') { star = pi++; mark = si; }
        else if (star != SIZE_MAX) { pi = star + 1; si = ++mark; }
        else return false;
    }
    while (pi < pn && p[pi] == '*') pi++;
    return pi == pn;
}

static int str_op(qop op, int flags, const cs_value *a, const cs_value *b, bool *res)
{
    if (a->type == CS_TYPE_NULL || b->type == CS_TYPE_NULL) {
        bool both = a->type == b->type;
        *res = op == QOP_EQ ? both : op == QOP_NE ? !both : false;
        return CS_OK;
    }
    if (flags == 0 && op != QOP_LIKE) {
        /* without [c] or [d] strings compare as their UTF-8 bytes (cs_value_compare's order), which is also
         * the order of the string index */
        const uint8_t *x = a->v.bytes.ptr, *y = b->v.bytes.ptr;
        size_t an = a->v.bytes.len, bn = b->v.bytes.len;
        bool r = false;
        switch (op) {
        case QOP_EQ: r = an == bn && (!an || !memcmp(x, y, an)); break;
        case QOP_NE: r = !(an == bn && (!an || !memcmp(x, y, an))); break;
        case QOP_BEGINSWITH: r = bn <= an && (!bn || !memcmp(x, y, bn)); break;
        case QOP_ENDSWITH: r = bn <= an && (!bn || !memcmp(x + (an - bn), y, bn)); break;
        case QOP_CONTAINS:
            r = bn == 0;
            for (size_t i = 0; !r && i + bn <= an; i++) r = !memcmp(x + i, y, bn);
            break;
        default: {
            size_t m = an < bn ? an : bn;
            int c = m ? memcmp(x, y, m) : 0;
            if (!c) c = (an > bn) - (an < bn);
            r = op == QOP_LT ? c < 0 : op == QOP_LE ? c <= 0 : op == QOP_GT ? c > 0 : c >= 0;
        }
        }
        *res = r;
        return CS_OK;
    }
    size_t an, bn;
    uint32_t *x = fold(a->v.bytes.ptr, a->v.bytes.len, flags, &an);
    uint32_t *y = fold(b->v.bytes.ptr, b->v.bytes.len, flags, &bn);
    if (!x || !y) { free(x); free(y); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    bool r = false;
    switch (op) {
    case QOP_EQ: r = an == bn && !memcmp(x, y, an * 4); break;
    case QOP_NE: r = !(an == bn && !memcmp(x, y, an * 4)); break;
    case QOP_BEGINSWITH: r = bn <= an && !memcmp(x, y, bn * 4); break;
    case QOP_ENDSWITH: r = bn <= an && !memcmp(x + an - bn, y, bn * 4); break;
    case QOP_CONTAINS:
        r = bn == 0;
        for (size_t i = 0; !r && i + bn <= an; i++) r = !memcmp(x + i, y, bn * 4);
        break;
    case QOP_LIKE: r = like_match(x, an, y, bn); break;
    default: {
        /* ordering of folded strings: compare code points */
        size_t m = an < bn ? an : bn;
        int c = 0;
        for (size_t i = 0; i < m && !c; i++) c = x[i] < y[i] ? -1 : x[i] > y[i];
        if (!c) c = (an > bn) - (an < bn);
        r = op == QOP_LT ? c < 0 : op == QOP_LE ? c <= 0 : op == QOP_GT ? c > 0 : c >= 0;
    }
    }
    free(x);
    free(y);
    *res = r;
    return CS_OK;
}

/* One comparison of two single values. */
static int cmp_values(qop op, int flags, const cs_value *a, const cs_value *b, bool *res)
{
    bool as = a->type == CS_TYPE_STRING || a->type == CS_TYPE_BINARY;
    bool bs = b->type == CS_TYPE_STRING || b->type == CS_TYPE_BINARY;
    if ((as && (bs || b->type == CS_TYPE_NULL)) || (bs && a->type == CS_TYPE_NULL)) {
        if (flags || op >= QOP_BEGINSWITH || (as && bs && op != QOP_EQ && op != QOP_NE))
            return str_op(op, flags, a, b, res);
    }
    if (op >= QOP_BEGINSWITH) { *res = false; return CS_OK; }
    bool an = a->type == CS_TYPE_NULL, bn = b->type == CS_TYPE_NULL;
    if (an || bn) {
        if (op == QOP_EQ) *res = an && bn;
        else if (op == QOP_NE) *res = !(an && bn);
        else *res = false; /* null is not ordered against values in comparisons */
        return CS_OK;
    }
    bool comparable = a->type == b->type || (numeric(a->type) && numeric(b->type));
    if (!comparable) {
        *res = op == QOP_NE;
        return CS_OK;
    }
    bool nan = (a->type == CS_TYPE_DOUBLE && isnan(a->v.d)) || (a->type == CS_TYPE_FLOAT && isnan(a->v.f)) ||
               (b->type == CS_TYPE_DOUBLE && isnan(b->v.d)) || (b->type == CS_TYPE_FLOAT && isnan(b->v.f));
    int c = cs_value_compare(a, b);
    if (nan && op != QOP_EQ && op != QOP_NE) { *res = false; return CS_OK; }
    switch (op) {
    case QOP_EQ: *res = c == 0; break;
    case QOP_NE: *res = c != 0; break;
    case QOP_LT: *res = c < 0; break;
    case QOP_LE: *res = c <= 0; break;
    case QOP_GT: *res = c > 0; break;
    default: *res = c >= 0; break;
    }
    return CS_OK;
}

/* ---- binding the whole tree ------------------------------------------------------------- */

static int bind(cs_query *q, qnode *n, int depth);

/* Type of what an operand yields, and whether it is a path. */
static int operand_type(cs_query *q, qnode *n, cs_type *type, bool *many)
{
    *many = false;
    if (n->kind == QN_CONST) { *type = n->value.type; return CS_OK; }
    if (n->kind == QN_KEYPATH) {
        bpath *b = n->owned;
        if (!b) {
            TRY(bind_path(q, n, &b));
            n->owned = b;
        }
        *type = b->type;
        *many = b->many;
        return CS_OK;
    }
    if (n->kind == QN_LIST) { *type = CS_TYPE_LIST; *many = true; return CS_OK; }
    if (n->kind == QN_SUBQUERY) {
        cs_type pt;
        bool pm;
        TRY(operand_type(q, n->path, &pt, &pm));
        bpath *b = n->path->owned;
        if (pt != CS_TYPE_LINK || !pm) return berr(q, n->path->pos, "SUBQUERY needs a list or set of objects");
        /* the inner predicate is bound against the collection's objects */
        uint32_t saved_table = q->table;
        const char *saved_var = q->var;
        uint32_t target = CS_NONE;
        for (size_t i = 0; i < b->n; i++)
            if (b->steps[i].kind == BS_COLL || b->steps[i].kind == BS_COL) target = b->steps[i].target;
            else if (b->steps[i].kind == BS_BACKLINKS) target = b->steps[i].table;
        if (target == CS_NONE) return berr(q, n->path->pos, "SUBQUERY needs a list or set of objects");
        q->table = target;
        q->var = n->var;
        int rc = bind(q, n->pred, 1);
        q->table = saved_table;
        q->var = saved_var;
        TRY(rc);
        *type = CS_TYPE_INT;
        return CS_OK;
    }
    return berr(q, n->pos, "not an operand");
}

static bool types_compatible(cs_type a, cs_type b)
{
    if (a == CS_TYPE_NULL || b == CS_TYPE_NULL || a == CS_TYPE_MIXED || b == CS_TYPE_MIXED) return true;
    if (numeric(a) && numeric(b)) return true;
    if ((a == CS_TYPE_STRING || a == CS_TYPE_BINARY) && (b == CS_TYPE_STRING || b == CS_TYPE_BINARY)) return true;
    return a == b;
}

static int bind(cs_query *q, qnode *n, int depth)
{
    if (depth > QUERY_BIND_DEPTH_MAX) return berr(q, n->pos, "query nested too deeply");
    switch (n->kind) {
    case QN_TRUE: case QN_FALSE: return CS_OK;
    case QN_AND: case QN_OR: {
        /* a long chain a AND b AND c ... is a left-deep tree: walk its spine without recursing */
        qnode *x = n;
        while (x->kind == n->kind) {
            TRY(bind(q, x->b, depth + 1));
            x = x->a;
        }
        return bind(q, x, depth + 1);
    }
    case QN_NOT: return bind(q, n->a, depth + 1);
    case QN_CMP: case QN_BETWEEN: case QN_IN: {
        cs_type ta, tb = CS_TYPE_NULL, tc = CS_TYPE_NULL;
        bool ma, mb = false, mc = false;
        /* a list literal {a, b} only stands after IN, and holds constants */
        if (n->a->kind == QN_LIST || (n->c && n->c->kind == QN_LIST) || (n->b && n->b->kind == QN_LIST && n->kind != QN_IN))
            return berr(q, n->pos, "a list {...} is only allowed after IN");
        if (n->kind == QN_IN && n->b->kind == QN_LIST)
            for (size_t i = 0; i < n->b->nitems; i++)
                if (n->b->items[i]->kind != QN_CONST)
                    return berr(q, n->b->items[i]->pos, "the elements of an IN list must be constants");
        TRY(operand_type(q, n->a, &ta, &ma));
        if (n->b) TRY(operand_type(q, n->b, &tb, &mb));
        if (n->c) TRY(operand_type(q, n->c, &tc, &mc));
        if (n->quant != QQ_NONE && !ma) return berr(q, n->pos, "ANY, ALL and NONE need a key path through a collection");
        if (n->kind == QN_IN) {
            if (n->flags && ta != CS_TYPE_STRING && ta != CS_TYPE_MIXED)
                return berr(q, n->pos, "[c] and [d] apply to strings, not %s", type_name(ta));
            if (n->b->kind == QN_LIST) {
                for (size_t i = 0; i < n->b->nitems; i++) {
                    cs_type ti;
                    bool mi;
                    TRY(operand_type(q, n->b->items[i], &ti, &mi));
                    if (!types_compatible(ta, ti))
                        return berr(q, n->b->items[i]->pos, "cannot compare %s with %s", type_name(ta), type_name(ti));
                }
            } else if (n->b->kind == QN_CONST && n->b->value.type != CS_TYPE_LIST) {
                return berr(q, n->b->pos, "IN needs a list ({a, b}), a collection key path or a list argument");
            }
            return CS_OK;
        }
        if (n->kind == QN_BETWEEN) {
            if (ta == CS_TYPE_BOOL || tb == CS_TYPE_BOOL || tc == CS_TYPE_BOOL)
                return berr(q, n->pos, "Bool values have no order: BETWEEN does not apply to them (use == or !=)");
            if (!numeric(ta) && ta != CS_TYPE_TIMESTAMP && ta != CS_TYPE_OBJECTID && ta != CS_TYPE_UUID &&
                ta != CS_TYPE_MIXED)
                return berr(q, n->pos, "BETWEEN needs numbers, dates, object ids or UUIDs, not %s", type_name(ta));
            if (!types_compatible(ta, tb) || !types_compatible(ta, tc))
                return berr(q, n->pos, "BETWEEN bounds must be of the property's type (%s)", type_name(ta));
            return CS_OK;
        }
        if (!types_compatible(ta, tb)) {
            size_t pos = n->b->kind == QN_CONST ? n->b->pos : n->pos;
            return berr(q, pos, "cannot compare %s with %s", type_name(ta), type_name(tb));
        }
        if (n->op >= QOP_BEGINSWITH && ta != CS_TYPE_STRING && ta != CS_TYPE_BINARY && ta != CS_TYPE_MIXED)
            return berr(q, n->pos, "%s needs a string, not %s",
                        n->op == QOP_BEGINSWITH ? "BEGINSWITH" : n->op == QOP_ENDSWITH ? "ENDSWITH" : n->op == QOP_CONTAINS ? "CONTAINS" : "LIKE",
                        type_name(ta));
        if (n->flags && ta != CS_TYPE_STRING && ta != CS_TYPE_MIXED)
            return berr(q, n->pos, "[c] and [d] apply to strings, not %s", type_name(ta));
        /* ObjectId and UUID order as unsigned big-endian byte strings (cs_value_compare, SORT and
         * their index keys agree); bools and links have no order in Realm's query language */
        if ((n->op == QOP_LT || n->op == QOP_LE || n->op == QOP_GT || n->op == QOP_GE) && n->flags == 0) {
            cs_type un = ta == CS_TYPE_BOOL || ta == CS_TYPE_LINK ? ta : tb;
            if (un == CS_TYPE_BOOL || un == CS_TYPE_LINK)
                return berr(q, n->pos, "%s values have no order: <, <=, > and >= do not apply to them (use == or !=)",
                            type_name(un));
        }
        return CS_OK;
    }
    default: return berr(q, n->pos, "not a condition");
    }
}

static void unbind(qnode *n)
{
    if (!n) return;
    if (n->kind == QN_KEYPATH) {
        bpath_free(n->owned);
        n->owned = NULL;
    }
    unbind(n->a);
    unbind(n->b);
    unbind(n->c);
    unbind(n->path);
    unbind(n->pred);
    for (size_t i = 0; i < n->nitems; i++) unbind(n->items[i]);
}

/* ---- evaluating conditions -------------------------------------------------------------- */

static int eval(cs_txn *t, qnode *n, cs_obj *o, const cs_value *self, bool *res);

static const char *mixed_type_name(cs_type ty)
{
    switch (ty) {
    case CS_TYPE_NULL: return "null";
    case CS_TYPE_INT: return "int";
    case CS_TYPE_BOOL: return "bool";
    case CS_TYPE_FLOAT: return "float";
    case CS_TYPE_DOUBLE: return "double";
    case CS_TYPE_STRING: return "string";
    case CS_TYPE_BINARY: return "binary";
    case CS_TYPE_TIMESTAMP: return "date";
    case CS_TYPE_OBJECTID: return "objectId";
    case CS_TYPE_UUID: return "uuid";
    case CS_TYPE_DECIMAL: return "decimal128";
    case CS_TYPE_LINK: return "object";
    case CS_TYPE_LIST: return "array";
    case CS_TYPE_DICT: return "dictionary";
    default: return "unknown";
    }
}

static int operand_values(cs_txn *t, qnode *n, cs_obj *o, const cs_value *self, vals *out)
{
    if (n->kind == QN_SUBQUERY) {
        vals items = {0};
        int rc = eval_from(t, n->path->owned, 0, o, self, &items);
        int64_t count = 0;
        for (size_t i = 0; rc == CS_OK && i < items.n; i++) {
            if (items.v[i].type != CS_TYPE_LINK) continue;
            cs_obj e;
            rc = cs_obj_open(t, items.v[i].v.link.table, items.v[i].v.link.key, &e);
            if (rc == CS_NOTFOUND) { rc = CS_OK; continue; }
            bool r = false;
            if (rc == CS_OK) rc = eval(t, n->pred, &e, NULL, &r);
            if (r) count++;
        }
        free(items.v);
        TRY(rc);
        cs_value v = cs_int(count);
        return vals_push(out, &v);
    }
    if (n->kind == QN_KEYPATH && ((bpath *)n->owned)->type_of) {
        vals raw = {0};
        int rc = eval_from(t, n->owned, 0, o, self, &raw);
        for (size_t i = 0; rc == CS_OK && i < raw.n; i++) {
            const char *name = mixed_type_name(raw.v[i].type);
            cs_value v = cs_string(name, strlen(name));
            rc = vals_push(out, &v);
        }
        free(raw.v);
        return rc;
    }
    if (n->kind == QN_CONST) {
        if (n->value.type == CS_TYPE_LIST) return CS_OK;
        return vals_push(out, &n->value);
    }
    if (n->kind == QN_LIST) {
        for (size_t i = 0; i < n->nitems; i++) TRY(operand_values(t, n->items[i], o, self, out));
        return CS_OK;
    }
    return eval_from(t, n->owned, 0, o, self, out);
}

static int eval(cs_txn *t, qnode *n, cs_obj *o, const cs_value *self, bool *res)
{
    switch (n->kind) {
    case QN_TRUE: *res = true; return CS_OK;
    case QN_FALSE: *res = false; return CS_OK;
    case QN_AND:
        TRY(eval(t, n->a, o, self, res));
        if (!*res) return CS_OK;
        return eval(t, n->b, o, self, res);
    case QN_OR:
        TRY(eval(t, n->a, o, self, res));
        if (*res) return CS_OK;
        return eval(t, n->b, o, self, res);
    case QN_NOT:
        TRY(eval(t, n->a, o, self, res));
        *res = !*res;
        return CS_OK;
    default: break;
    }
    vals a = {0}, b = {0}, c = {0};
    int rc = operand_values(t, n->a, o, self, &a);
    if (rc == CS_OK && n->b) rc = operand_values(t, n->b, o, self, &b);
    if (rc == CS_OK && n->c) rc = operand_values(t, n->c, o, self, &c);
    bool any = false, all = true;
    for (size_t i = 0; rc == CS_OK && i < a.n; i++) {
        bool r = false;
        if (n->kind == QN_BETWEEN) {
            bool lo = false, hi = false;
            if (b.n && c.n) {
                rc = cmp_values(QOP_GE, 0, &a.v[i], &b.v[0], &lo);
                if (rc == CS_OK) rc = cmp_values(QOP_LE, 0, &a.v[i], &c.v[0], &hi);
            }
            r = lo && hi;
        } else if (n->kind == QN_IN) {
            for (size_t k = 0; rc == CS_OK && k < b.n && !r; k++) rc = cmp_values(QOP_EQ, n->flags, &a.v[i], &b.v[k], &r);
        } else {
            /* a comparison with a many-valued right side holds if it holds for any of them */
            for (size_t k = 0; rc == CS_OK && k < b.n && !r; k++) rc = cmp_values(n->op, n->flags, &a.v[i], &b.v[k], &r);
        }
        any = any || r;
        all = all && r;
    }
    free(a.v);
    free(b.v);
    free(c.v);
    TRY(rc);
    switch (n->quant) {
    case QQ_ALL: *res = all; break;
    case QQ_NONE_OF: *res = !any; break;
    default: *res = any; break;
    }
    return CS_OK;
}

/* ---- the leaf-level fast path: Int column OP constant (and AND chains of them) ----------- */

typedef struct fastcond {
    uint32_t col;  /* Int column */
    qop op;        /* EQ..GE */
    int64_t k;     /* constant */
} fastcond;

#define FAST_MAX 8

static bool collect_fast(cs_query *q, qnode *n, fastcond *out, size_t *nf)
{
    if (n->kind == QN_AND) return collect_fast(q, n->a, out, nf) && collect_fast(q, n->b, out, nf);
    if (n->kind != QN_CMP || n->flags || n->quant != QQ_NONE || n->op > QOP_GE || *nf >= FAST_MAX) return false;
    qnode *kp = n->a, *kc = n->b;
    qop op = n->op;
    if (kp->kind != QN_KEYPATH) {
        qnode *x = kp; kp = kc; kc = x;
        switch (op) { case QOP_LT: op = QOP_GT; break; case QOP_LE: op = QOP_GE; break; case QOP_GT: op = QOP_LT; break; case QOP_GE: op = QOP_LE; break; default: break; }
    }
    if (kp->kind != QN_KEYPATH || kc->kind != QN_CONST || kc->value.type != CS_TYPE_INT) return false;
    bpath *b = kp->owned;
    if (!b || b->n != 1 || b->steps[0].kind != BS_COL || b->steps[0].type != CS_TYPE_INT) return false;
    col_def *c = &q->txn->schema->tables[q->table].cols[b->steps[0].col];
    if (c->flags & CS_COL_NULLABLE) return false;
    out[*nf].col = b->steps[0].col;
    out[*nf].op = op;
    out[*nf].k = kc->value.v.i;
    (*nf)++;
    return true;
}

/* Whether `v OP k` holds for every value a packed node of width w can hold (1), for none
 * (0), or depends on the value (-1): a leaf is then decided by its width alone. */
static int width_decides(uint8_t w, qop op, int64_t k)
{
    int64_t lo, hi;
    switch (w) {
    case 0: lo = 0; hi = 0; break;
    case 1: lo = 0; hi = 1; break;
    case 2: lo = 0; hi = 3; break;
    case 4: lo = 0; hi = 15; break;
    case 8: lo = INT8_MIN; hi = INT8_MAX; break;
    case 16: lo = INT16_MIN; hi = INT16_MAX; break;
    case 32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: return -1;
    }
    switch (op) {
    case QOP_EQ: return (k < lo || k > hi) ? 0 : (lo == hi) ? 1 : -1;
    case QOP_NE: return (k < lo || k > hi) ? 1 : (lo == hi) ? 0 : -1;
    case QOP_LT: return hi < k ? 1 : lo >= k ? 0 : -1;
    case QOP_LE: return hi <= k ? 1 : lo > k ? 0 : -1;
    case QOP_GT: return lo > k ? 1 : hi <= k ? 0 : -1;
    default: return lo >= k ? 1 : hi < k ? 0 : -1;
    }
}

/* Runs ACC(i, a[i] OP k) over the `rows` values of the array p of T, one loop per operator,
 * so that each loop is a plain comparison the compiler vectorises. The comparison is made in T:
 * a leaf reaches these loops only when width_decides left it open, which means k lies within
 * the range T holds, so narrowing k loses nothing (and SSE2 has 8/16/32-bit lane compares but
 * no 64-bit one, so comparing in int64_t would leave the loop scalar). */
#define CMP_LOOPS(T, ACC)                                                                       \
    do {                                                                                        \
        const T *a = (const T *)(const void *)p;                                                \
        const T kt = (T)k;                                                                      \
        switch (op) {                                                                           \
        case QOP_EQ: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] == kt); break;             \
        case QOP_NE: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] != kt); break;             \
        case QOP_LT: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] < kt); break;              \
        case QOP_LE: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] <= kt); break;             \
        case QOP_GT: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] > kt); break;              \
        default: for (uint64_t i = 0; i < rows; i++) ACC(i, a[i] >= kt); break;                 \
        }                                                                                       \
    } while (0)
#define MASK_ACC(i, r) (hit[i] &= (r))
#define COUNT_ACC(i, r) (n += (uint32_t)(r))

/* Marks in `hit` (one byte per row) the rows of a leaf column matching col OP k. */
static void fast_leaf(const node_hdr *h, uint64_t rows, qop op, int64_t k, uint8_t *hit)
{
    int decided = width_decides(h->width, op, k);
    if (decided == 0) memset(hit, 0, rows);
    if (decided >= 0) return;
    const uint8_t *p = (const uint8_t *)h + NODE_HDR;
    switch (h->width) {
    case 8: CMP_LOOPS(int8_t, MASK_ACC); break;
    case 16: CMP_LOOPS(int16_t, MASK_ACC); break;
    case 32: CMP_LOOPS(int32_t, MASK_ACC); break;
    case 64: CMP_LOOPS(int64_t, MASK_ACC); break;
    default:
        for (uint64_t i = 0; i < rows; i++) {
            int64_t v = packed_get(p, h->width, i);
            bool r = op == QOP_EQ ? v == k : op == QOP_NE ? v != k : op == QOP_LT ? v < k : op == QOP_LE ? v <= k : op == QOP_GT ? v > k : v >= k;
            hit[i] &= r;
        }
    }
}

/* Counts the rows of a leaf column matching col OP k: the one-condition count, fused (no mask
 * is written and then summed). */
static uint64_t fast_leaf_count(const node_hdr *h, uint64_t rows, qop op, int64_t k)
{
    int decided = width_decides(h->width, op, k);
    if (decided >= 0) return decided ? rows : 0;
    const uint8_t *p = (const uint8_t *)h + NODE_HDR;
    uint32_t n = 0; /* a leaf holds at most CLUSTER_ROWS_READ_MAX rows */
    switch (h->width) {
    case 8: CMP_LOOPS(int8_t, COUNT_ACC); break;
    case 16: CMP_LOOPS(int16_t, COUNT_ACC); break;
    case 32: CMP_LOOPS(int32_t, COUNT_ACC); break;
    case 64: CMP_LOOPS(int64_t, COUNT_ACC); break;
    default: {
        uint8_t hit[CLUSTER_ROWS_READ_MAX];
        memset(hit, 1, rows);
        fast_leaf(h, rows, op, k, hit);
        for (uint64_t i = 0; i < rows; i++) n += hit[i];
    }
    }
    return n;
}
#undef CMP_LOOPS
#undef MASK_ACC
#undef COUNT_ACC

/* The key node of a cluster leaf and its row count. */
static int leaf_rows(cs_txn *t, node_hdr *h, node_hdr **keys, uint64_t *rows)
{
    TRY(node_at(t, node_refs(h)[0], keys));
    *rows = (*keys)->count;
    if (*rows > CLUSTER_ROWS_READ_MAX) return CORRUPT("cluster leaf holds %llu rows", (unsigned long long)*rows);
    return CS_OK;
}

/* The node of Int column `col` in a cluster leaf of `rows` rows, or NULL when the leaf does not
 * materialise the column (every row then holds the default, 0). */
static int leaf_int_col(cs_txn *t, node_hdr *h, uint32_t col, uint64_t rows, node_hdr **ch)
{
    uint32_t c = 1 + col;
    ref_t cr = c < h->count ? node_refs(h)[c] : 0;
    *ch = NULL;
    if (!cr) return CS_OK;
    TRY(node_at(t, cr, ch));
    if (((*ch)->flags & (NF_BYTES | NF_REFS | NF_NULLS)) || (*ch)->count != rows) return CORRUPT("int column node is malformed");
    return CS_OK;
}

/* Whether the default value 0 satisfies `OP k`. */
static bool fast_default_holds(const fastcond *fc)
{
    bool r0 = false;
    cs_value z = cs_int(0), kv = cs_int(fc->k);
    cmp_values(fc->op, 0, &z, &kv, &r0);
    return r0;
}

/* Marks in `hit` the rows of a cluster leaf that satisfy every condition of `fc`. */
static int leaf_hits(cs_txn *t, node_hdr *h, const fastcond *fc, size_t nf, node_hdr **keys, uint64_t *rows_out,
                     uint8_t *hit)
{
    uint64_t rows;
    TRY(leaf_rows(t, h, keys, &rows));
    memset(hit, 1, rows);
    for (size_t i = 0; i < nf; i++) {
        node_hdr *ch;
        TRY(leaf_int_col(t, h, fc[i].col, rows, &ch));
        if (!ch) {
            if (!fast_default_holds(&fc[i])) memset(hit, 0, rows);
            continue;
        }
        fast_leaf(ch, rows, fc[i].op, fc[i].k, hit);
    }
    *rows_out = rows;
    return CS_OK;
}

typedef int (*leaf_visit)(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows);

/* The visit of a count over one condition: fast_walk counts each leaf without a mask and
 * adds to the uint64_t at ctx (this function is only its marker). */
static int fast_count_visit(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows)
{
    uint64_t *n = ctx;
    for (uint64_t i = 0; i < rows; i++) *n += hit[i];
    return CS_OK;
}

static int fast_walk(cs_txn *t, uint32_t table, ref_t r, const fastcond *fc, size_t nf, leaf_visit fn, void *ctx, int depth)
{
    if (depth > TREE_DEPTH_MAX) return CORRUPT("cluster tree too deep");
    if (!r) return CS_OK;
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (!(h->flags & NF_REFS) || h->count < 1) return CORRUPT("cluster node is malformed");
    if (h->flags & NF_INNER) {
        for (uint32_t i = 1; i < h->count; i++) TRY(fast_walk(t, table, node_refs(h)[i], fc, nf, fn, ctx, depth + 1));
        return CS_OK;
    }
    node_hdr *keys;
    uint64_t rows;
    if (nf == 1 && fn == fast_count_visit) {
        node_hdr *ch;
        TRY(leaf_rows(t, h, &keys, &rows));
        TRY(leaf_int_col(t, h, fc[0].col, rows, &ch));
        *(uint64_t *)ctx += ch ? fast_leaf_count(ch, rows, fc[0].op, fc[0].k) : fast_default_holds(&fc[0]) ? rows : 0;
        return CS_OK;
    }
    uint8_t hit[CLUSTER_ROWS_READ_MAX];
    TRY(leaf_hits(t, h, fc, nf, &keys, &rows, hit));
    return fn(ctx, keys, hit, rows);
}

/* ---- running ---------------------------------------------------------------------------- */

static int rebind(cs_query *q)
{
    if (q->bound_to == q->txn->schema) return CS_OK;
    if (q->table != CS_NONE && (q->table >= q->txn->schema->ntables || !q->txn->schema->tables[q->table].live))
        return cs_fail(CS_NOTFOUND, 0, "the query's table no longer exists");
    unbind(q->parsed->pred);
    for (size_t i = 0; i < q->parsed->nsort; i++) unbind(q->parsed->sort[i].path);
    for (size_t i = 0; i < q->parsed->ndistinct; i++) unbind(q->parsed->distinct[i]);
    q->bound_to = NULL;
    TRY(bind(q, q->parsed->pred, 0));
    cs_type ty;
    bool many;
    for (size_t i = 0; i < q->parsed->nsort; i++) {
        TRY(operand_type(q, q->parsed->sort[i].path, &ty, &many));
        if (many) return berr(q, q->parsed->sort[i].path->pos, "SORT needs a single value per object, not a collection");
    }
    for (size_t i = 0; i < q->parsed->ndistinct; i++) {
        TRY(operand_type(q, q->parsed->distinct[i], &ty, &many));
        if (many) return berr(q, q->parsed->distinct[i]->pos, "DISTINCT needs a single value per object, not a collection");
    }
    q->bound_to = q->txn->schema;
    return CS_OK;
}

static int query_make(cs_txn *txn, uint32_t table, qroot root, const char *text, size_t len, const cs_value *args,
                      size_t nargs, const cs_name_map *names, const cs_coll *coll, const cs_obj *owner,
                      uint32_t origin_col, cs_type self_type, cs_query **out);

int cs_query_new(cs_txn *txn, uint32_t table, const char *text, size_t len, const cs_value *args, size_t nargs, cs_query **out)
{
    return cs_query_new_named(txn, table, text, len, args, nargs, NULL, out);
}

int cs_query_new_named(cs_txn *txn, uint32_t table, const char *text, size_t len, const cs_value *args, size_t nargs,
                       const cs_name_map *names, cs_query **out)
{
    *out = NULL;
    table_def *td;
    TRY(txn_table(txn, table, &td));
    return query_make(txn, table, QR_TABLE, text, len, args, nargs, names, NULL, NULL, CS_NONE, CS_TYPE_NULL, out);
}

int cs_query_new_coll(cs_coll *coll, const char *text, size_t len, const cs_value *args, size_t nargs, cs_query **out)
{
    return cs_query_new_coll_named(coll, text, len, args, nargs, NULL, out);
}

int cs_query_new_coll_named(cs_coll *coll, const char *text, size_t len, const cs_value *args, size_t nargs,
                            const cs_name_map *names, cs_query **out)
{
    *out = NULL;
    size_t n;
    TRY(cs_coll_size(coll, &n)); /* checks the owner still exists */
    bool objects = coll->elem_type == CS_TYPE_LINK && coll->depth == 0;
    return query_make(coll->obj.txn, objects ? coll->target : CS_NONE, objects ? QR_OBJECTS : QR_VALUES, text, len, args,
                      nargs, names, coll, NULL, CS_NONE, (cs_type)coll->elem_type, out);
}

int cs_query_new_backlinks(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, const char *text, size_t len,
                           const cs_value *args, size_t nargs, cs_query **out)
{
    return cs_query_new_backlinks_named(obj, origin_table, origin_col, text, len, args, nargs, NULL, out);
}

int cs_query_new_backlinks_named(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, const char *text, size_t len,
                                 const cs_value *args, size_t nargs, const cs_name_map *names, cs_query **out)
{
    *out = NULL;
    size_t n;
    TRY(cs_obj_backlink_count(obj, origin_table, origin_col, &n));
    return query_make(obj->txn, origin_table, QR_BACKLINKS, text, len, args, nargs, names, NULL, obj, origin_col,
                      CS_TYPE_NULL, out);
}

/* Makes the query: copies the text and the name map, parses, and binds to the schema. */
static int query_make(cs_txn *txn, uint32_t table, qroot root, const char *text, size_t len, const cs_value *args,
                      size_t nargs, const cs_name_map *names, const cs_coll *coll, const cs_obj *owner,
                      uint32_t origin_col, cs_type self_type, cs_query **out)
{
    cs_query *q = calloc(1, sizeof *q);
    if (!q) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    q->txn = txn;
    q->table = table;
    q->root = root;
    if (coll) q->coll = *coll;
    if (owner) q->owner = *owner;
    q->origin_col = origin_col;
    q->self_type = self_type;
    q->text = malloc(len + 1);
    if (!q->text) { free(q); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    if (len) memcpy(q->text, text, len);
    q->text[len] = 0;
    q->len = len;
    int rc = qnames_copy(txn, names, &q->names);
    if (rc == CS_OK) rc = qparse(q->text, len, args, nargs, &q->parsed);
    if (rc == CS_OK) rc = rebind(q);
    if (rc != CS_OK) {
        cs_query_free(q);
        return rc;
    }
    *out = q;
    return CS_OK;
}

/* Replaces the values of the constants that came from arguments (scalar arguments only). */
static int reset_args(cs_query *q, qnode *n, const cs_value *args, size_t nargs, bool *types_changed, int depth)
{
    if (!n || depth > QUERY_CHAIN_MAX) return CS_OK;
    if (n->kind == QN_CONST && n->arg >= 0) {
        if ((size_t)n->arg >= nargs) return cs_fail(CS_QUERY, 0, "missing argument %d (%zu given)", n->arg, nargs);
        const cs_value *a = &args[n->arg];
        if (a->type == CS_TYPE_LIST) return cs_fail(CS_MISUSE, 0, "list arguments cannot be replaced; make a new query");
        if (a->type != n->value.type) *types_changed = true;
        free(n->owned);
        n->owned = NULL;
        n->value = *a;
        if (a->type == CS_TYPE_STRING || a->type == CS_TYPE_BINARY) {
            n->owned = malloc(a->v.bytes.len ? a->v.bytes.len : 1);
            if (!n->owned) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
            if (a->v.bytes.len) memcpy(n->owned, a->v.bytes.ptr, a->v.bytes.len);
            n->value.v.bytes.ptr = n->owned;
        }
        return CS_OK;
    }
    if (n->kind == QN_LIST)
        for (size_t i = 0; i < n->nitems; i++)
            if (n->items[i]->arg >= 0) return cs_fail(CS_MISUSE, 0, "list arguments cannot be replaced; make a new query");
    TRY(reset_args(q, n->a, args, nargs, types_changed, depth + 1));
    TRY(reset_args(q, n->b, args, nargs, types_changed, depth + 1));
    TRY(reset_args(q, n->c, args, nargs, types_changed, depth + 1));
    TRY(reset_args(q, n->pred, args, nargs, types_changed, depth + 1));
    for (size_t i = 0; i < n->nitems; i++) TRY(reset_args(q, n->items[i], args, nargs, types_changed, depth + 1));
    return CS_OK;
}

int cs_query_set_args(cs_query *q, const cs_value *args, size_t nargs)
{
    bool changed = false;
    TRY(reset_args(q, q->parsed->pred, args, nargs, &changed, 0));
    if (changed) {
        /* new types need a new type check */
        q->bound_to = NULL;
        TRY(rebind(q));
    }
    return CS_OK;
}

void cs_query_free(cs_query *q)
{
    if (!q) return;
    if (q->parsed) {
        unbind(q->parsed->pred);
        for (size_t i = 0; i < q->parsed->nsort; i++) unbind(q->parsed->sort[i].path);
        for (size_t i = 0; i < q->parsed->ndistinct; i++) unbind(q->parsed->distinct[i]);
    }
    qparsed_free(q->parsed);
    qnames_free(q->names);
    free(q->text);
    free(q);
}

typedef struct keyset {
    int64_t *keys;   /* matching keys */
    size_t n, cap;   /* used, allocated */
    uint64_t count;  /* matches (count-only runs) */
    bool collect;    /* keep keys */
} keyset;

static int keys_push(keyset *k, int64_t key)
{
    if (!k->collect) { k->count++; return CS_OK; }
    if (k->n == k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 64;
        int64_t *p = realloc(k->keys, nc * sizeof *p);
        if (!p) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
        k->keys = p;
        k->cap = nc;
    }
    k->keys[k->n++] = key;
    k->count++;
    return CS_OK;
}

static int fast_visit(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows)
{
    keyset *k = ctx;
    if (!k->collect) {
        uint64_t c = 0;
        for (uint64_t i = 0; i < rows; i++) c += hit[i];
        k->count += c;
        return CS_OK;
    }
    for (uint64_t i = 0; i < rows; i++)
        if (hit[i]) TRY(keys_push(k, node_get_int(keys, i)));
    return CS_OK;
}

/* ---- index seeds ------------------------------------------------------------------------ */

/* How a conjunct of the top-level AND chain is answered from an ordered index: a set of ranges
 * of index entries (FORMAT.md §6.5) whose objects include every match of the conjunct. */
typedef struct seedplan {
    uint32_t col;     /* the indexed column */
    irange *r;        /* the ranges; their bytes are owned (malloc'd) */
    size_t n, cap;    /* used, allocated */
    bool exact;       /* the ranges hold exactly the conjunct's matches */
    int rank;         /* preference: 0 equality, 1 IN, 2 range or prefix, 3 case-insensitive */
} seedplan;

static void plan_free(seedplan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->r[i].lo);
        free(p->r[i].hi);
    }
    free(p->r);
    p->r = NULL;
    p->n = p->cap = 0;
}

/* Adds [lo, hi) to the plan, taking the buffers (also on failure). */
static int plan_add(seedplan *p, uint8_t *lo, size_t lon, uint8_t *hi, size_t hin)
{
    if (p->n == p->cap) {
        size_t nc = p->cap ? p->cap * 2 : 4;
        irange *r = realloc(p->r, nc * sizeof *r);
        if (!r) { free(lo); free(hi); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
        p->r = r;
        p->cap = nc;
    }
    p->r[p->n++] = (irange){lo, lon, hi, hin};
    return CS_OK;
}

static uint8_t *bytes_dup(const uint8_t *p, size_t n, size_t spare)
{
    uint8_t *r = malloc(n + spare + 1);
    if (r && n) memcpy(r, p, n);
    return r;
}

/* A one-byte bound: the tag of a type's keys (every key of that type sorts after it). */
static int tag_bound(uint8_t tag, uint8_t **out)
{
    *out = malloc(1);
    if (!*out) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    (*out)[0] = tag;
    return CS_OK;
}

/* The key of v and the same key followed by eight FF bytes: every entry with this value part
 * lies in [key, key||FF..FF) (object keys are below 2^63). */
static int value_bounds(const cs_value *v, bool mixed, uint8_t **k, size_t *kn, uint8_t **after, size_t *an)
{
    TRY(index_encode(v, mixed, k, kn));
    *after = bytes_dup(*k, *kn, 8);
    if (!*after) { free(*k); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    memset(*after + *kn, 0xff, 8);
    *an = *kn + 8;
    return CS_OK;
}

static int plan_point(seedplan *p, const cs_value *v, bool mixed)
{
    uint8_t *k, *after;
    size_t kn, an;
    TRY(value_bounds(v, mixed, &k, &kn, &after, &an));
    return plan_add(p, k, kn, after, an);
}

/* Every string entry whose bytes start with `prefix` (n bytes): one range. */
static int plan_prefix(seedplan *p, const uint8_t *prefix, size_t n)
{
    cs_value v = cs_string((const char *)prefix, n);
    uint8_t *k;
    size_t kn;
    TRY(index_encode(&v, false, &k, &kn));
    kn -= 2; /* drop the 00 00 end mark: escaped(prefix) starts every longer string's key */
    uint8_t *hi = bytes_dup(k, kn, 0);
    if (!hi) { free(k); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    /* the smallest byte string above every one starting with k: drop trailing FFs, add one */
    size_t hn = kn;
    while (hn > 1 && hi[hn - 1] == 0xff) hn--;
    hi[hn - 1]++;
    return plan_add(p, k, kn, hi, hn);
}

/* The ways the scan's decoder (utf8_next) reads code point c from bytes: its UTF-8 form (the
 * valid spelling), and the odd ones it also accepts from invalid UTF-8: a raw byte (c in
 * 0x80..0xFF), and overlong two- and three-byte forms. Each spelling is at most 3 bytes. */
typedef struct spelling {
    uint8_t b[3]; /* bytes */
    uint8_t n;    /* how many */
} spelling;

static void spellings(uint32_t c, spelling *valid, size_t *nv, spelling *odd, size_t *no)
{
    spelling one = {{(uint8_t)c, 0, 0}, 1};
    spelling two = {{(uint8_t)(0xC0 | (c >> 6)), (uint8_t)(0x80 | (c & 0x3F)), 0}, 2};
    spelling three = {{(uint8_t)(0xE0 | (c >> 12)), (uint8_t)(0x80 | ((c >> 6) & 0x3F)), (uint8_t)(0x80 | (c & 0x3F))}, 3};
    if (c < 0x80) {
        valid[(*nv)++] = one;
        odd[(*no)++] = two;
        odd[(*no)++] = three;
    } else if (c < 0x800) {
        valid[(*nv)++] = two;
        if (c < 0x100) odd[(*no)++] = one;
        odd[(*no)++] = three;
    } else {
        valid[(*nv)++] = three;
    }
}

/* The code points that fold (fold_case) to what c folds to, c first; at most 8. */
static size_t fold_class(uint32_t c, uint32_t *out)
{
    uint32_t f = fold_case(c);
    size_t n = 0;
    out[n++] = c;
    for (uint32_t x = 0; x <= 0x180 && n < 8; x++) {
        uint32_t y = x == 0x180 ? 0x3BC : x; /* U+00B5 folds to U+03BC, outside the table */
        if (y != c && fold_case(y) == f) out[n++] = y;
    }
    return n;
}

#define CASE_RANGES_MAX 256
#define CASE_CHARS_MAX 64

/* One leading code point of a [c] pattern: the spellings of its case variants. */
typedef struct case_alt {
    spelling valid[8]; /* valid UTF-8 spellings */
    size_t nv;         /* how many */
    spelling odd[16];  /* spellings only invalid UTF-8 has */
    size_t no;         /* how many */
} case_alt;

/* Adds a prefix range for every choice of valid spellings of alts[pos..upto) after buf[0..bl),
 * followed by `last` when it is not NULL. */
static int emit_case_prefixes(seedplan *p, const case_alt *alts, size_t pos, size_t upto, uint8_t *buf, size_t bl,
                              const spelling *last)
{
    if (pos == upto) {
        if (last) {
            memcpy(buf + bl, last->b, last->n);
            bl += last->n;
        }
        return plan_prefix(p, buf, bl);
    }
    for (size_t i = 0; i < alts[pos].nv; i++) {
        memcpy(buf + bl, alts[pos].valid[i].b, alts[pos].valid[i].n);
        TRY(emit_case_prefixes(p, alts, pos + 1, upto, buf, bl + alts[pos].valid[i].n, last));
    }
    return CS_OK;
}

/* Ranges holding every string whose [c]-folded form starts with the folded form of s, for the
 * scan's folding (fold_case over utf8_next's code points, U+0000..U+017F): the valid spellings of
 * the case variants of as many leading code points as keep the ranges few, and for each of
 * those positions the odd spellings (invalid UTF-8 the decoder also reads as that code point)
 * as shorter prefixes. A superset: the caller checks every candidate. */
static int plan_case_prefix(seedplan *p, const uint8_t *s, size_t n)
{
    case_alt *alts = malloc(CASE_CHARS_MAX * sizeof *alts);
    uint8_t *buf = malloc(3 * CASE_CHARS_MAX + 3);
    if (!alts || !buf) { free(alts); free(buf); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    size_t na = 0, total = 1;
    for (size_t i = 0; i < n && na < CASE_CHARS_MAX;) {
        uint32_t c = utf8_next(s, n, &i);
        uint32_t cls[8];
        size_t nc = fold_class(c, cls);
        case_alt *a = &alts[na];
        a->nv = a->no = 0;
        for (size_t k = 0; k < nc; k++) spellings(cls[k], a->valid, &a->nv, a->odd, &a->no);
        /* the odd spellings at this position cost `total` ranges each, the valid ones multiply */
        if (total * (a->nv + a->no) > CASE_RANGES_MAX) break;
        total *= a->nv;
        na++;
    }
    int rc = CS_OK;
    for (size_t j = 0; j < na && rc == CS_OK; j++)
        for (size_t k = 0; k < alts[j].no && rc == CS_OK; k++) rc = emit_case_prefixes(p, alts, 0, j, buf, 0, &alts[j].odd[k]);
    if (rc == CS_OK) rc = emit_case_prefixes(p, alts, 0, na, buf, 0, NULL);
    free(alts);
    free(buf);
    return rc;
}

/* The indexed column a key path names directly (one step, no @type), or CS_NONE. */
static uint32_t indexed_path_col(cs_query *q, qnode *kp)
{
    if (kp->kind != QN_KEYPATH) return CS_NONE;
    bpath *b = kp->owned;
    if (!b || b->n != 1 || b->steps[0].kind != BS_COL || b->type_of) return CS_NONE;
    col_def *c = &q->txn->schema->tables[q->table].cols[b->steps[0].col];
    if (!(c->flags & (CS_COL_INDEXED | CS_COL_PRIMARY)) || c->coll != CS_COLL_NONE || !index_type_ok((cs_type)c->type))
        return CS_NONE;
    return b->steps[0].col;
}

/* Adds the range of every link key of a Mixed index: a link to a deleted object reads as null,
 * so each link is a candidate for `== nil`. */
static int plan_all_links(seedplan *sp)
{
    uint8_t *lo = NULL, *hi = NULL;
    int rc = tag_bound(INDEX_TAG_LINK, &lo);
    if (rc == CS_OK) rc = tag_bound(INDEX_TAG_LINK + 1, &hi);
    if (rc == CS_OK) return plan_add(sp, lo, 1, hi, 1);
    free(lo);
    free(hi);
    return rc;
}

/* Adds the range of the entries whose value part is `op` the key k (kn bytes, taken also on
 * failure), within k's type tag: the other side of the range is the first or last key of that
 * tag, so nulls and other types stay out. */
static int plan_order(seedplan *sp, qop op, uint8_t *k, size_t kn)
{
    uint8_t *after = bytes_dup(k, kn, 8), *lo = NULL, *hi = NULL;
    size_t an = kn + 8, lon = 1, hin = 1;
    if (!after) { free(k); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    memset(after + kn, 0xff, 8);
    uint8_t tag = k[0];
    switch (op) {
    case QOP_LT: hi = k; hin = kn; free(after); break;
    case QOP_LE: hi = after; hin = an; free(k); break;
    case QOP_GT: lo = after; lon = an; free(k); break;
    default: lo = k; lon = kn; free(after); break;
    }
    int rc = CS_OK;
    if (!lo) rc = tag_bound(tag, &lo);
    else rc = tag_bound((uint8_t)(tag + 1), &hi);
    if (rc != CS_OK) { free(lo); free(hi); return rc; }
    return plan_add(sp, lo, lon, hi, hin);
}

/* Adds [key(lo), key(hi)||FF..FF): the entries whose value part lies between the two keys (lon
 * and hin bytes, both taken). */
static int plan_between(seedplan *sp, uint8_t *lo, size_t lon, uint8_t *hi, size_t hin)
{
    uint8_t *h = bytes_dup(hi, hin, 8);
    free(hi);
    if (!h) { free(lo); return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }
    memset(h + hin, 0xff, 8);
    return plan_add(sp, lo, lon, h, hin + 8);
}

/* A Mixed index keys a string and a binary with the same escaped bytes under two tags, and the
 * scan orders (and prefix-matches) strings and binaries against each other by those bytes: the
 * Mixed key of v, a string or binary, with its tag replaced by `tag`. */
static int bytes_key(const cs_value *v, uint8_t tag, uint8_t **k, size_t *kn)
{
    TRY(index_encode(v, true, k, kn));
    (*k)[0] = tag;
    return CS_OK;
}

/* A numeric constant as a double, widened by two representable doubles towards `dir` (the
 * conversion of a large Int or of a Decimal128 may round); false for NaN. */
static bool num_bound(const cs_value *v, double dir, double *out)
{
    double d = v->type == CS_TYPE_INT ? (double)v->v.i : v->type == CS_TYPE_FLOAT ? (double)v->v.f
             : v->type == CS_TYPE_DOUBLE ? v->v.d : cs_decimal_to_double(&v->v.dec);
    if (isnan(d)) return false;
    for (int i = 0; i < 2; i++) d = nextafter(d, dir);
    *out = d;
    return true;
}

/* Adds every key of one type tag. */
static int plan_tag(seedplan *sp, uint8_t tag)
{
    uint8_t *a = NULL, *b = NULL;
    int rc = tag_bound(tag, &a);
    if (rc == CS_OK) rc = tag_bound((uint8_t)(tag + 1), &b);
    if (rc == CS_OK) return plan_add(sp, a, 1, b, 1);
    free(a);
    free(b);
    return rc;
}

/* The candidates of a Mixed numeric range [lo, hi] (doubles already widened outwards, +-inf
 * for an open side): the Int keys from floor(lo) to floor(hi), the Double keys from lo to hi and
 * every Decimal key (their cohort-free parts are not in numeric order), and every NaN key: a
 * Float or Double NaN matches no ordering, but cmp_values leaves a Decimal128 NaN to
 * cs_value_compare, which orders it below every number, so it can match. The candidates are a
 * superset, re-checked by the scan's predicate. */
static int plan_numbers(seedplan *sp, double lo, double hi)
{
    const double two63 = 9223372036854775808.0;
    uint8_t *a = NULL, *b = NULL, *x, *y;
    size_t an = 1, bn = 1, xn, yn;
    if (lo < two63 && hi >= -two63) {
        cs_value l = cs_int(lo <= -two63 ? INT64_MIN : (int64_t)floor(lo));
        cs_value h = cs_int(hi >= two63 ? INT64_MAX : (int64_t)floor(hi));
        TRY(index_encode(&l, true, &a, &an));
        int rc = index_encode(&h, true, &b, &bn);
        if (rc != CS_OK) { free(a); return rc; }
        TRY(plan_between(sp, a, an, b, bn));
    }
    TRY(index_double_key(lo, &x, &xn));
    int rc = index_double_key(hi, &y, &yn);
    if (rc != CS_OK) { free(x); return rc; }
    TRY(plan_between(sp, x, xn, y, yn));
    TRY(plan_tag(sp, INDEX_TAG_DECIMAL));
    return plan_tag(sp, INDEX_TAG_NAN);
}

/* Whether a Mixed index can seed an ordering or BETWEEN against constants of type t: numbers
 * (not NaN, checked later), strings and binaries, and the types the index keys in value order.
 * Null (matches no ordering) and nested collections are left to the scan; the binder refuses
 * to order bools and links. */
static bool mixed_orderable(cs_type t)
{
    return numeric(t) || t == CS_TYPE_STRING || t == CS_TYPE_BINARY || t == CS_TYPE_TIMESTAMP || t == CS_TYPE_OBJECTID ||
           t == CS_TYPE_UUID;
}

/* A Mixed index's candidates for `column op v` (op one of <, <=, >, >=, BEGINSWITH) or, with w,
 * for `column BETWEEN {v, w}`; *ok false when the index cannot answer it. Never exact. */
static int plan_mixed_range(seedplan *sp, qop op, const cs_value *v, const cs_value *w, bool *ok)
{
    *ok = false;
    bool str = v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY;
    if (!mixed_orderable(v->type)) return CS_OK;
    if (w && !(numeric(v->type) && numeric(w->type)) &&
        !(str && (w->type == CS_TYPE_STRING || w->type == CS_TYPE_BINARY)) && w->type != v->type)
        return CS_OK;
    if (op == QOP_BEGINSWITH && !str) return CS_OK;
    if (numeric(v->type)) {
        double lo = -INFINITY, hi = INFINITY;
        if (w) {
            if (!num_bound(v, -INFINITY, &lo) || !num_bound(w, INFINITY, &hi)) return CS_OK;
        } else if (op == QOP_GT || op == QOP_GE) {
            if (!num_bound(v, -INFINITY, &lo)) return CS_OK;
        } else if (!num_bound(v, INFINITY, &hi)) {
            return CS_OK;
        }
        TRY(plan_numbers(sp, lo, hi));
        *ok = true;
        return CS_OK;
    }
    uint8_t tags[2] = {0, INDEX_TAG_BINARY};
    size_t ntags = 1;
    if (str) { tags[0] = INDEX_TAG_STRING; ntags = 2; }
    for (size_t i = 0; i < ntags; i++) {
        uint8_t *k, *h;
        size_t kn, hn;
        if (op == QOP_BEGINSWITH) {
            /* the typed prefix range, moved under this tag */
            seedplan one;
            memset(&one, 0, sizeof one);
            TRY(plan_prefix(&one, v->v.bytes.ptr, v->v.bytes.len));
            one.r[0].lo[0] = tags[i];
            one.r[0].hi[0] = (uint8_t)(one.r[0].hi[0] - INDEX_TAG_STRING + tags[i]);
            int rc = plan_add(sp, one.r[0].lo, one.r[0].lon, one.r[0].hi, one.r[0].hin);
            free(one.r);
            TRY(rc);
            continue;
        }
        if (str) TRY(bytes_key(v, tags[i], &k, &kn));
        else TRY(index_encode(v, true, &k, &kn));
        if (w) {
            int rc = str ? bytes_key(w, tags[i], &h, &hn) : index_encode(w, true, &h, &hn);
            if (rc != CS_OK) { free(k); return rc; }
            TRY(plan_between(sp, k, kn, h, hn));
        } else {
            TRY(plan_order(sp, op, k, kn));
        }
    }
    *ok = true;
    return CS_OK;
}

/* The plan for one conjunct, if the index of the column it tests can answer it (*ok). */
static int seed_of(cs_query *q, qnode *n, seedplan *sp, bool *ok)
{
    *ok = false;
    memset(sp, 0, sizeof *sp);
    if (n->quant != QQ_NONE) return CS_OK;
    qnode *kp = n->a;
    qop op = n->op;
    if (n->kind == QN_CMP && kp->kind != QN_KEYPATH) {
        kp = n->b;
        switch (op) {
        case QOP_LT: op = QOP_GT; break;
        case QOP_LE: op = QOP_GE; break;
        case QOP_GT: op = QOP_LT; break;
        case QOP_GE: op = QOP_LE; break;
        case QOP_EQ: break;
        default: return CS_OK; /* 'abc' BEGINSWITH name tests the constant */
        }
    }
    uint32_t col = indexed_path_col(q, kp);
    if (col == CS_NONE) return CS_OK;
    col_def *c = &q->txn->schema->tables[q->table].cols[col];
    cs_type ct = (cs_type)c->type;
    bool mixed = ct == CS_TYPE_MIXED;
    sp->col = col;
    sp->exact = true;
    int rc = CS_OK;
    if (n->kind == QN_IN) {
        if (n->flags || n->b->kind != QN_LIST) return CS_OK;
        for (size_t i = 0; i < n->b->nitems; i++) {
            const cs_value *v = &n->b->items[i]->value;
            if (n->b->items[i]->kind != QN_CONST || v->type == CS_TYPE_LIST) return CS_OK;
            if (!mixed && v->type != ct && v->type != CS_TYPE_NULL) return CS_OK;
        }
        for (size_t i = 0; i < n->b->nitems && rc == CS_OK; i++) {
            const cs_value *v = &n->b->items[i]->value;
            rc = plan_point(sp, v, mixed);
            if (mixed && (v->type == CS_TYPE_NULL || v->type == CS_TYPE_LINK)) sp->exact = false;
        }
        if (rc == CS_OK && mixed && !sp->exact) rc = plan_all_links(sp);
        sp->rank = 1;
        goto done;
    }
    if (n->kind == QN_BETWEEN && mixed) {
        bool any;
        if (n->b->kind != QN_CONST || n->c->kind != QN_CONST) return CS_OK;
        rc = plan_mixed_range(sp, QOP_GE, &n->b->value, &n->c->value, &any);
        if (rc == CS_OK && !any) { plan_free(sp); return CS_OK; }
        sp->exact = false;
        sp->rank = 2;
        goto done;
    }
    if (n->kind == QN_BETWEEN) {
        if (n->b->kind != QN_CONST || n->c->kind != QN_CONST || n->b->value.type != ct || n->c->value.type != ct)
            return CS_OK;
        uint8_t *lo, *hi, *x, *y;
        size_t lon, hin, xn, yn;
        TRY(value_bounds(&n->b->value, false, &lo, &lon, &x, &xn));
        free(x);
        rc = value_bounds(&n->c->value, false, &y, &yn, &hi, &hin);
        if (rc != CS_OK) { free(lo); return rc; }
        free(y);
        rc = plan_add(sp, lo, lon, hi, hin);
        sp->rank = 2;
        goto done;
    }
    if (n->kind != QN_CMP) return CS_OK;
    qnode *kc = kp == n->a ? n->b : n->a;
    if (kc->kind != QN_CONST || kc->value.type == CS_TYPE_LIST) return CS_OK;
    const cs_value *v = &kc->value;
    if (mixed && op != QOP_EQ) {
        bool any;
        if (n->flags || (op != QOP_BEGINSWITH && (op < QOP_LT || op > QOP_GE))) return CS_OK;
        rc = plan_mixed_range(sp, op, v, NULL, &any);
        if (rc == CS_OK && !any) { plan_free(sp); return CS_OK; }
        sp->exact = false;
        sp->rank = 2;
        goto done;
    }
    if (mixed) {
        if (n->flags) return CS_OK;
        rc = plan_point(sp, v, true);
        if (rc == CS_OK && (v->type == CS_TYPE_NULL || v->type == CS_TYPE_LINK)) {
            sp->exact = false;
            if (v->type == CS_TYPE_NULL) rc = plan_all_links(sp);
        }
        sp->rank = 0;
        goto done;
    }
    if (op == QOP_EQ && n->flags == 0) {
        if (v->type != ct && v->type != CS_TYPE_NULL) return CS_OK;
        rc = plan_point(sp, v, false);
        sp->rank = 0;
        goto done;
    }
    if (ct != v->type) return CS_OK;
    if (ct == CS_TYPE_STRING && (op == QOP_EQ || op == QOP_BEGINSWITH) && n->flags == QF_CASE) {
        rc = plan_case_prefix(sp, v->v.bytes.ptr, v->v.bytes.len);
        sp->exact = false;
        sp->rank = 3;
        goto done;
    }
    if (n->flags) return CS_OK;
    if (ct == CS_TYPE_STRING && op == QOP_BEGINSWITH) {
        rc = plan_prefix(sp, v->v.bytes.ptr, v->v.bytes.len);
        sp->rank = 2;
        goto done;
    }
    if (op < QOP_LT || op > QOP_GE) return CS_OK;
    {
        /* one side is the value, the other the first or last key of the column's type */
        uint8_t *k;
        size_t kn;
        TRY(index_encode(v, false, &k, &kn));
        rc = plan_order(sp, op, k, kn);
        sp->rank = 2;
    }
done:
    if (rc != CS_OK) { plan_free(sp); return rc; }
    *ok = true;
    return CS_OK;
}

/* The best conjunct of the top-level AND chain to seed from (lowest rank, exact first). */
static int find_seed(cs_query *q, qnode *n, seedplan *best, qnode **which, int depth)
{
    if (depth > QUERY_CHAIN_MAX) return CS_OK;
    if (n->kind == QN_AND) {
        TRY(find_seed(q, n->a, best, which, depth + 1));
        return find_seed(q, n->b, best, which, depth + 1);
    }
    if (n->kind != QN_CMP && n->kind != QN_BETWEEN && n->kind != QN_IN) return CS_OK;
    seedplan sp;
    bool ok;
    TRY(seed_of(q, n, &sp, &ok));
    if (!ok) return CS_OK;
    if (!*which || sp.rank < best->rank || (sp.rank == best->rank && sp.exact && !best->exact)) {
        plan_free(best);
        *best = sp;
        *which = n;
    } else {
        plan_free(&sp);
    }
    return CS_OK;
}

static int run_filter(cs_query *q, keyset *out)
{
    cs_txn *t = q->txn;
    q->plan = (cs_query_plan){CS_PLAN_SCAN, CS_NONE, 0, 0, 0};
    TRY(rebind(q));
    if (q->root != QR_TABLE) {
        /* a collection or the backlinks of one object: every element, in order */
        size_t n;
        if (q->root == QR_BACKLINKS) TRY(cs_obj_backlink_count(&q->owner, q->table, q->origin_col, &n));
        else TRY(cs_coll_size(&q->coll, &n));
        q->plan.candidates = n;
        for (size_t i = 0; i < n; i++) {
            cs_value v;
            int64_t key;
            if (q->root == QR_BACKLINKS) {
                TRY(cs_obj_backlink_get(&q->owner, q->table, q->origin_col, i, &key));
                v = cs_link(q->table, key);
            } else if (q->coll.kind == CS_COLL_MAP) {
                cs_value k;
                TRY(cs_map_get_at(&q->coll, i, &k, &v));
            } else {
                TRY(cs_list_get(&q->coll, i, &v));
            }
            bool r;
            if (q->root == QR_VALUES) {
                TRY(eval(t, q->parsed->pred, NULL, &v, &r));
                if (r) TRY(keys_push(out, (int64_t)i));
                continue;
            }
            if (v.type != CS_TYPE_LINK) continue; /* a null map value */
            cs_obj o;
            int rc = cs_obj_open(t, v.v.link.table, v.v.link.key, &o);
            if (rc == CS_NOTFOUND) continue;
            TRY(rc);
            TRY(eval(t, q->parsed->pred, &o, NULL, &r));
            if (r) TRY(keys_push(out, v.v.link.key));
        }
        return CS_OK;
    }
    fastcond fc[FAST_MAX];
    size_t nf = 0;
    ref_t root;
    TRY(table_root(t, q->table, &root));
    if (q->parsed->pred->kind == QN_TRUE && q->root == QR_TABLE) {
        cs_iter it;
        cs_obj o;
        TRY(cs_iter_init(&it, t, q->table));
        int rc;
        q->plan.kind = CS_PLAN_ALL;
        while ((rc = cs_iter_next(&it, &o)) == CS_OK) {
            q->plan.candidates++;
            TRY(keys_push(out, o.key));
        }
        return rc == CS_NOTFOUND ? CS_OK : rc;
    }
    /* a condition an index answers, in the top-level AND chain, seeds the candidates */
    seedplan sp;
    memset(&sp, 0, sizeof sp);
    qnode *seed = NULL;
    TRY(find_seed(q, q->parsed->pred, &sp, &seed, 0));
    if (seed) {
        int64_t *cand;
        size_t nc;
        int rc = index_collect(t, q->table, sp.col, sp.r, sp.n, &cand, &nc);
        q->plan.kind = CS_PLAN_INDEX;
        q->plan.col = sp.col;
        q->plan.ranges = (uint32_t)sp.n;
        q->plan.candidates = rc == CS_OK ? nc : 0;
        bool check = !sp.exact || seed != q->parsed->pred;
        plan_free(&sp);
        TRY(rc);
        for (size_t i = 0; i < nc && rc == CS_OK; i++) {
            cs_obj o;
            bool r = true;
            rc = cs_obj_open(t, q->table, cand[i], &o);
            if (rc == CS_OK && check) rc = eval(t, q->parsed->pred, &o, NULL, &r);
            if (rc == CS_OK && r) rc = keys_push(out, cand[i]);
        }
        free(cand);
        return rc;
    }
    if (collect_fast(q, q->parsed->pred, fc, &nf)) {
        q->plan.kind = CS_PLAN_LEAVES;
        TRY(cs_table_count(t, q->table, &q->plan.candidates));
        if (!out->collect && nf == 1) {
            uint64_t n = 0;
            TRY(fast_walk(t, q->table, root, fc, nf, fast_count_visit, &n, 0));
            out->count += n;
            return CS_OK;
        }
        return fast_walk(t, q->table, root, fc, nf, fast_visit, out, 0);
    }
    cs_iter it;
    cs_obj o;
    TRY(cs_iter_init(&it, t, q->table));
    int rc;
    while ((rc = cs_iter_next(&it, &o)) == CS_OK) {
        bool r;
        q->plan.candidates++;
        TRY(eval(t, q->parsed->pred, &o, NULL, &r));
        if (r) TRY(keys_push(out, o.key));
    }
    return rc == CS_NOTFOUND ? CS_OK : rc;
}

typedef struct sort_item {
    int64_t key;     /* object */
    size_t at;       /* original position (stability) */
    cs_value *vals;  /* one value per sort key */
    void **bufs;     /* copies of string bytes */
} sort_item;

/* Orders two items by `nk` keys (their vals[0..nk)), then by their position (stability). */
static int item_cmp(const sort_item *a, const sort_item *b, const qsort_key *keys, size_t nk)
{
    for (size_t i = 0; i < nk; i++) {
        int c = cs_value_compare(&a->vals[i], &b->vals[i]);
        if (c) return !keys || keys[i].ascending ? c : -c;
    }
    return a->at < b->at ? -1 : a->at > b->at;
}

/* Sorts items by `nk` keys (ascending when `keys` is NULL), stably: a merge sort through `tmp`
 * (n items), so no comparator state is shared between threads. */
static void items_sort(sort_item *v, sort_item *tmp, size_t n, const qsort_key *keys, size_t nk)
{
    if (n < 2) return;
    size_t h = n / 2;
    items_sort(v, tmp, h, keys, nk);
    items_sort(v + h, tmp, n - h, keys, nk);
    size_t i = 0, j = h, o = 0;
    while (i < h && j < n) tmp[o++] = item_cmp(&v[j], &v[i], keys, nk) < 0 ? v[j++] : v[i++];
    while (i < h) tmp[o++] = v[i++];
    while (j < n) tmp[o++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static int single_value(cs_txn *t, qnode *path, cs_obj *o, const cs_value *self, cs_value *v, void **buf)
{
    vals x = {0};
    /* operand_values, so that a path ending in @type yields the type's name */
    int rc = operand_values(t, path, o, self, &x);
    *v = cs_null();
    *buf = NULL;
    if (rc == CS_OK && x.n) {
        *v = x.v[0];
        if (v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY) {
            *buf = malloc(v->v.bytes.len + 1);
            if (!*buf) rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory");
            else {
                memcpy(*buf, v->v.bytes.ptr, v->v.bytes.len);
                v->v.bytes.ptr = *buf;
            }
        }
    }
    free(x.v);
    return rc;
}

/* The object (or, for a collection of values, the element) a result key names. */
static int open_item(cs_query *q, int64_t key, cs_obj *o, cs_value *self)
{
    *self = cs_null();
    memset(o, 0, sizeof *o);
    if (q->root == QR_VALUES) {
        if (q->coll.kind == CS_COLL_MAP) {
            cs_value k;
            return cs_map_get_at(&q->coll, (size_t)key, &k, self);
        }
        return cs_list_get(&q->coll, (size_t)key, self);
    }
    return cs_obj_open(q->txn, q->table, key, o);
}

int cs_query_count(cs_query *q, uint64_t *out)
{
    if (q->parsed->ndistinct || q->parsed->limit >= 0) {
        int64_t *keys;
        size_t n;
        TRY(cs_query_keys(q, &keys, &n));
        free(keys);
        *out = n;
        return CS_OK;
    }
    keyset k = {NULL, 0, 0, 0, false};
    TRY(run_filter(q, &k));
    *out = k.count;
    return CS_OK;
}

/* Sorts keys (ascending) by a non-nullable Int column, stably: the values are read in one pass
 * over the table in key order, then a radix sort on 16-bit digits orders (value, key) pairs. */
static int sort_int_keys(cs_txn *t, uint32_t table, uint32_t col, int64_t *keys, size_t n, bool ascending)
{
    uint64_t *v = malloc(n * sizeof *v), *v2 = malloc(n * sizeof *v2);
    int64_t *k2 = malloc(n * sizeof *k2);
    size_t *cnt = malloc(65537 * sizeof *cnt);
    int rc = (!v || !v2 || !k2 || !cnt) ? cs_fail(CS_NOMEM, ENOMEM, "out of memory") : CS_OK;
    if (rc == CS_OK) {
        cs_iter it;
        cs_obj o;
        size_t j = 0;
        rc = cs_iter_init(&it, t, table);
        while (rc == CS_OK && j < n && (rc = cs_iter_next(&it, &o)) == CS_OK) {
            if (o.key != keys[j]) continue;
            int64_t x;
            rc = cs_obj_get_int(&o, col, &x);
            /* flip the sign bit so unsigned order is signed order; complement for descending */
            uint64_t u = (uint64_t)x ^ (1ull << 63);
            v[j++] = ascending ? u : ~u;
        }
        if (rc == CS_NOTFOUND) rc = j == n ? CS_OK : CORRUPT("query keys not found in the table");
    }
    for (int pass = 0; rc == CS_OK && pass < 4; pass++) {
        int sh = pass * 16;
        memset(cnt, 0, 65537 * sizeof *cnt);
        for (size_t i = 0; i < n; i++) cnt[((v[i] >> sh) & 0xffff) + 1]++;
        if (cnt[((v[0] >> sh) & 0xffff) + 1] == n) continue; /* every value shares this digit */
        for (size_t d = 1; d <= 65536; d++) cnt[d] += cnt[d - 1];
        for (size_t i = 0; i < n; i++) {
            size_t at = cnt[(v[i] >> sh) & 0xffff]++;
            v2[at] = v[i];
            k2[at] = keys[i];
        }
        memcpy(v, v2, n * sizeof *v);
        memcpy(keys, k2, n * sizeof *keys);
    }
    free(v);
    free(v2);
    free(k2);
    free(cnt);
    return rc;
}

/* Applies the SORT and DISTINCT clauses in the order written (qparsed.order) to `keys`; *n
 * shrinks with each DISTINCT. */
static int order_keys(cs_query *q, int64_t *keys, size_t *n)
{
    const qparsed *p = q->parsed;
    cs_txn *t = q->txn;
    size_t nk = 0, cnt = *n;
    for (size_t s = 0; s < p->norder; s++) nk = p->order[s].n > nk ? p->order[s].n : nk;
    int rc = CS_OK;
    sort_item *items = calloc(cnt, sizeof *items), *tmp = malloc(cnt * sizeof *tmp);
    bool *keep = malloc(cnt);
    if (!items || !tmp || !keep) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory"); goto done; }
    for (size_t i = 0; i < cnt; i++) {
        items[i].key = keys[i];
        items[i].vals = calloc(nk, sizeof(cs_value));
        items[i].bufs = calloc(nk, sizeof(void *));
        if (!items[i].vals || !items[i].bufs) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory"); goto done; }
    }
    for (size_t s = 0; s < p->norder; s++) {
        const qorder *st = &p->order[s];
        /* the step's values for each item, in the current order */
        for (size_t i = 0; i < cnt && rc == CS_OK; i++) {
            cs_obj o;
            cs_value self;
            items[i].at = i;
            rc = open_item(q, items[i].key, &o, &self);
            for (size_t x = 0; rc == CS_OK && x < st->n; x++) {
                qnode *path = st->distinct ? p->distinct[st->first + x] : p->sort[st->first + x].path;
                free(items[i].bufs[x]);
                items[i].bufs[x] = NULL;
                rc = single_value(t, path, q->root == QR_VALUES ? NULL : &o, &self, &items[i].vals[x], &items[i].bufs[x]);
            }
        }
        if (rc != CS_OK) goto done;
        if (!st->distinct) {
            items_sort(items, tmp, cnt, p->sort + st->first, st->n);
            continue;
        }
        /* DISTINCT: sort a copy by the values, mark the first (in the current order) of each run */
        memcpy(tmp, items, cnt * sizeof *tmp);
        sort_item *scratch = malloc(cnt * sizeof *scratch);
        if (!scratch) { rc = cs_fail(CS_NOMEM, ENOMEM, "out of memory"); goto done; }
        items_sort(tmp, scratch, cnt, NULL, st->n);
        free(scratch);
        memset(keep, 0, cnt);
        for (size_t i = 0; i < cnt; i++) {
            bool first = i == 0;
            for (size_t x = 0; !first && x < st->n; x++)
                if (cs_value_compare(&tmp[i].vals[x], &tmp[i - 1].vals[x]) != 0) first = true;
            if (first) keep[tmp[i].at] = true;
        }
        size_t w = 0;
        for (size_t i = 0; i < cnt; i++) {
            if (keep[i]) { items[w++] = items[i]; continue; }
            for (size_t x = 0; x < nk; x++) free(items[i].bufs[x]);
            free(items[i].vals);
            free(items[i].bufs);
        }
        cnt = w;
    }
    for (size_t i = 0; i < cnt; i++) keys[i] = items[i].key;
    *n = cnt;
done:
    for (size_t i = 0; items && i < cnt; i++) {
        if (items[i].bufs) for (size_t x = 0; x < nk; x++) free(items[i].bufs[x]);
        free(items[i].vals);
        free(items[i].bufs);
    }
    free(items);
    free(tmp);
    free(keep);
    return rc;
}

int cs_query_keys(cs_query *q, int64_t **keys, size_t *count)
{
    *keys = NULL;
    *count = 0;
    keyset k = {NULL, 0, 0, 0, true};
    int rc = run_filter(q, &k);
    if (rc != CS_OK) { free(k.keys); return rc; }
    const qparsed *p = q->parsed;
    cs_txn *t = q->txn;
    if (p->nsort == 1 && !p->ndistinct && k.n > 1 && q->root == QR_TABLE) {
        bpath *b = p->sort[0].path->owned;
        col_def *c = b && b->n == 1 && b->steps[0].kind == BS_COL ? &t->schema->tables[q->table].cols[b->steps[0].col] : NULL;
        if (c && c->type == CS_TYPE_INT && !(c->flags & CS_COL_NULLABLE)) {
            rc = sort_int_keys(t, q->table, b->steps[0].col, k.keys, k.n, p->sort[0].ascending);
            if (rc != CS_OK) { free(k.keys); return rc; }
            if (p->limit >= 0 && (uint64_t)p->limit < k.n) k.n = (size_t)p->limit;
            *keys = k.keys;
            *count = k.n;
            return CS_OK;
        }
    }
    if (p->norder && k.n) rc = order_keys(q, k.keys, &k.n);
    if (rc != CS_OK) { free(k.keys); return rc; }
    if (p->limit >= 0 && (uint64_t)p->limit < k.n) k.n = (size_t)p->limit;
    *keys = k.keys;
    *count = k.n;
    return CS_OK;
}

typedef struct aggctx {
    uint32_t col;    /* 1 + column in the leaf */
    cs_txn *t;       /* transaction */
    cs_aggregate op; /* what */
    __int128 sum;    /* running sum (a 64-bit overflow is reported for SUM only) */
    int64_t best;    /* running min / max */
    uint64_t n;      /* values seen */
    bool overflow;   /* the sum overflowed */
    ref_t leaf;      /* unused */
} aggctx;

/* The leaf walker hands us the keys node; the column node is found through the leaf, so the
 * fast aggregate walks the leaves itself. */
static int agg_walk(cs_txn *t, ref_t r, const fastcond *fc, size_t nf, aggctx *a, int depth)
{
    if (depth > TREE_DEPTH_MAX) return CORRUPT("cluster tree too deep");
    if (!r) return CS_OK;
    node_hdr *h;
    TRY(node_at(t, r, &h));
    if (!(h->flags & NF_REFS) || h->count < 1) return CORRUPT("cluster node is malformed");
    if (h->flags & NF_INNER) {
        for (uint32_t i = 1; i < h->count; i++) TRY(agg_walk(t, node_refs(h)[i], fc, nf, a, depth + 1));
        return CS_OK;
    }
    node_hdr *keys;
    uint64_t rows;
    uint8_t hit[CLUSTER_ROWS_READ_MAX];
    TRY(leaf_hits(t, h, fc, nf, &keys, &rows, hit));
    node_hdr *vh;
    TRY(leaf_int_col(t, h, a->col - 1, rows, &vh));
    const uint8_t *p = vh ? node_values(vh) : NULL;
    uint8_t w = vh ? vh->width : 0;
    if (a->op == CS_AGG_SUM || a->op == CS_AGG_AVG) {
        /* leaf sums fit easily in 128 bits; add them to the 64-bit total with overflow checks */
        __int128 s = 0;
        uint64_t cnt = 0;
#define SUMLOOP(T) do { const T *x = (const T *)(const void *)p; for (uint64_t i = 0; i < rows; i++) { s += hit[i] ? (__int128)x[i] : 0; cnt += hit[i]; } } while (0)
        if (!vh) { for (uint64_t i = 0; i < rows; i++) cnt += hit[i]; }
        else if (w == 8) SUMLOOP(int8_t);
        else if (w == 16) SUMLOOP(int16_t);
        else if (w == 32) SUMLOOP(int32_t);
        else if (w == 64) SUMLOOP(int64_t);
        else for (uint64_t i = 0; i < rows; i++) if (hit[i]) { s += packed_get(p, w, i); cnt++; }
#undef SUMLOOP
        a->sum += s;
        if (a->sum > INT64_MAX || a->sum < INT64_MIN) a->overflow = true;
        a->n += cnt;
        return CS_OK;
    }
    for (uint64_t i = 0; i < rows; i++) {
        if (!hit[i]) continue;
        int64_t v = vh ? packed_get(p, w, i) : 0;
        if (!a->n || (a->op == CS_AGG_MIN ? v < a->best : v > a->best)) a->best = v;
        a->n++;
    }
    return CS_OK;
}

/* The aggregate over the matches, one value each: column `col` of each matching object, or the
 * matching elements themselves for a query over values (col CS_NONE). */
static int aggregate_matches(cs_query *q, uint32_t col, cs_aggregate op, cs_value *out)
{
    int64_t *keys;
    size_t n;
    TRY(cs_query_keys(q, &keys, &n));
    vals v = {0};
    int rc = CS_OK;
    for (size_t i = 0; i < n && rc == CS_OK; i++) {
        cs_obj o;
        cs_value x;
        rc = open_item(q, keys[i], &o, &x);
        if (rc == CS_OK && col != CS_NONE) rc = cs_obj_get(&o, col, &x);
        if (rc == CS_OK) rc = vals_push(&v, &x);
    }
    free(keys);
    bstep st = {0};
    st.kind = op == CS_AGG_SUM ? BS_SUM : op == CS_AGG_AVG ? BS_AVG : op == CS_AGG_MIN ? BS_MIN : BS_MAX;
    if (rc == CS_OK) rc = agg_values(q->txn, &st, &v, out);
    free(v.v);
    return rc;
}

int cs_query_aggregate(cs_query *q, uint32_t col, cs_aggregate op, cs_value *out)
{
    if (q->root == QR_VALUES) {
        /* the elements themselves (col is ignored) */
        if (op == CS_AGG_COUNT) {
            uint64_t n;
            TRY(cs_query_count(q, &n));
            *out = cs_int((int64_t)n);
            return CS_OK;
        }
        cs_type ty = q->self_type;
        if ((op == CS_AGG_SUM || op == CS_AGG_AVG) && !numeric(ty) && ty != CS_TYPE_MIXED)
            return cs_fail(CS_TYPE, 0, "cannot sum or average values of type %s", type_name(ty));
        if (!numeric(ty) && ty != CS_TYPE_TIMESTAMP && ty != CS_TYPE_MIXED)
            return cs_fail(CS_TYPE, 0, "cannot take the min or max of values of type %s", type_name(ty));
        return aggregate_matches(q, CS_NONE, op, out);
    }
    {
        /* a plain Int column over a table, with no SORT/DISTINCT/LIMIT: leaf by leaf */
        col_def *c0;
        TRY(txn_col(q->txn, q->table, col, NULL, &c0));
        TRY(rebind(q));
        fastcond fc[FAST_MAX];
        size_t nf = 0;
        if (q->root == QR_TABLE && c0->coll == CS_COLL_NONE && c0->type == CS_TYPE_INT && !(c0->flags & CS_COL_NULLABLE) &&
            op != CS_AGG_COUNT && !q->parsed->ndistinct && q->parsed->limit < 0 &&
            (q->parsed->pred->kind == QN_TRUE || collect_fast(q, q->parsed->pred, fc, &nf))) {
            aggctx a = {1 + col, q->txn, op, 0, 0, 0, false, 0};
            ref_t root;
            TRY(table_root(q->txn, q->table, &root));
            TRY(agg_walk(q->txn, root, fc, nf, &a, 0));
            if (op == CS_AGG_SUM && a.overflow) return cs_fail(CS_OVERFLOW, 0, "the sum of '%s' overflows 64 bits",
                                                             qnames_column_name(q->names, q->txn, q->table, col));
            if (op == CS_AGG_SUM) *out = cs_int((int64_t)a.sum);
            else if (op == CS_AGG_AVG) *out = a.n ? cs_double((double)((long double)a.sum / (long double)a.n)) : cs_null();
            else *out = a.n ? cs_int(a.best) : cs_null();
            return CS_OK;
        }
    }
    col_def *c;
    TRY(txn_col(q->txn, q->table, col, NULL, &c));
    if (c->coll != CS_COLL_NONE) return cs_fail(CS_TYPE, 0, "cannot aggregate the collection property '%s'",
                                                      qnames_column_name(q->names, q->txn, q->table, col));
    cs_type ty = (cs_type)c->type;
    if (op == CS_AGG_COUNT) {
        uint64_t n;
        TRY(cs_query_count(q, &n));
        *out = cs_int((int64_t)n);
        return CS_OK;
    }
    bool orderable = numeric(ty) || ty == CS_TYPE_TIMESTAMP || ty == CS_TYPE_MIXED;
    if ((op == CS_AGG_SUM || op == CS_AGG_AVG) && !numeric(ty) && ty != CS_TYPE_MIXED)
        return cs_fail(CS_TYPE, 0, "cannot sum or average '%s' of type %s",
                       qnames_column_name(q->names, q->txn, q->table, col), type_name(ty));
    if (!orderable) return cs_fail(CS_TYPE, 0, "cannot take the min or max of '%s' of type %s",
                                  qnames_column_name(q->names, q->txn, q->table, col), type_name(ty));
    int rc = aggregate_matches(q, col, op, out);
    if (rc == CS_OK && op == CS_AGG_SUM && ty == CS_TYPE_FLOAT) *out = cs_float((float)out->v.d);
    return rc;
}

int cs_query_last_plan(const cs_query *q, cs_query_plan *out)
{
    if (!q || !out) return cs_fail(CS_MISUSE, 0, "cs_query_last_plan: query and out are required");
    *out = q->plan;
    return CS_OK;
}

int cs_query_check(const char *text, size_t len, size_t nargs)
{
    cs_value *args = calloc(nargs ? nargs : 1, sizeof *args);
    if (!args) return cs_fail(CS_NOMEM, ENOMEM, "out of memory");
    qparsed *p;
    int rc = qparse(text, len, args, nargs, &p);
    free(args);
    if (rc == CS_OK) qparsed_free(p);
    return rc;
}
