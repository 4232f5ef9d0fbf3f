/*
 * query_eval.c -- evaluating a bound query on one object (or one element of a collection of
 * values): the values a key path yields (many through to-many steps), collection aggregates,
 * and the comparison of two values with the query language's rules (docs/ARCHITECTURE.md,
 * Queries and Values and their order): null equals only null and is unordered against values,
 * numbers compare by value, NaN is unordered, strings by bytes or folded with [c] / [d]
 * (query_fold.c). A comparison with a many-valued side holds if it holds for any value (ALL and
 * NONE change that).
 */
#include "query_int.h"

#include <math.h>

int query_vals_push(vals *x, const cs_value *v)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 8;
        cs_value *p = realloc(x->v, nc * sizeof *p);
        if (!p) return NOMEM();
        x->v = p;
        x->cap = nc;
    }
    x->v[x->n++] = *v;
    return CS_OK;
}

/* ---- where values come from: the file, or a cs_query_source (cs_query_match_source) ------- */

/* Opens object `key` of `table`: from the file, or (src) as a handle the source understands. */
static int src_open(cs_txn *t, const cs_query_source *src, uint32_t table, int64_t key, cs_obj *o)
{
    if (!src) return cs_obj_open(t, table, key, o);
    memset(o, 0, sizeof *o);
    o->txn = t;
    o->table = table;
    o->key = key;
    return CS_OK;
}

static int src_get(const cs_query_source *src, cs_obj *o, uint32_t col, cs_value *v)
{
    if (!src) return cs_obj_get(o, col, v);
    *v = cs_null();
    return src->get(src->ctx, o->table, o->key, col, v);
}

/* A List, Set or Map column of one object, from either place. */
typedef struct qcoll {
    const cs_query_source *src; /* NULL: the file */
    cs_obj *o;                  /* the owner */
    uint32_t col;               /* its column */
    cs_coll c;                  /* the file's collection (src == NULL) */
} qcoll;

static int qcoll_open(const cs_query_source *src, cs_obj *o, uint32_t col, qcoll *c, size_t *n)
{
    c->src = src;
    c->o = o;
    c->col = col;
    if (src) {
        *n = 0;
        return src->coll_size(src->ctx, o->table, o->key, col, n);
    }
    TRY(cs_coll_open(o, col, &c->c));
    return cs_coll_size(&c->c, n);
}

/* Element i: its value, and for a map its key (else null). */
static int qcoll_get(qcoll *c, size_t i, cs_value *key, cs_value *v)
{
    *key = cs_null();
    *v = cs_null();
    if (c->src) return c->src->coll_get(c->src->ctx, c->o->table, c->o->key, c->col, i, key, v);
    if (c->c.kind == CS_COLL_MAP) return cs_map_get_at(&c->c, i, key, v);
    return cs_list_get(&c->c, i, v);
}

/* The value under map key k (CS_NOTFOUND: none). */
static int qcoll_map_get(qcoll *c, size_t n, const char *k, size_t klen, cs_value *v)
{
    if (!c->src) return cs_map_get(&c->c, k, klen, v);
    for (size_t i = 0; i < n; i++) {
        cs_value key;
        TRY(qcoll_get(c, i, &key, v));
        if (key.type == CS_TYPE_STRING && key.v.bytes.len == klen && (!klen || !memcmp(key.v.bytes.ptr, k, klen)))
            return CS_OK;
    }
    return CS_NOTFOUND;
}

/* Appends the aggregate of `elems` (gathered with result `rc`) to `out`; frees `elems`. */
static int push_aggregate(cs_txn *t, const bstep *nx, vals *elems, int rc, vals *out)
{
    cs_value r;
    if (rc == CS_OK) rc = query_agg_values(t, nx, elems, &r);
    free(elems->v);
    TRY(rc);
    return query_vals_push(out, &r);
}

/* Evaluates steps [i, n) of a path from object `o`, appending the values to `out`. */
static int eval_from(cs_txn *t, const cs_query_source *src, const bpath *b, size_t i, cs_obj *o, const cs_value *self,
                     vals *out)
{
    if (i >= b->n) {
        cs_value v = cs_link(o->table, o->key);
        return query_vals_push(out, &v);
    }
    const bstep *s = &b->steps[i];
    if (s->kind == BS_SELF) return self ? query_vals_push(out, self) : CS_OK;
    if (s->kind == BS_BACKLINKS) {
        size_t n = 0; /* objects outside the file have no backlinks */
        if (!src) TRY(cs_obj_backlink_count(o, s->table, s->col, &n));
        const bstep *nx = i + 1 < b->n ? &b->steps[i + 1] : NULL;
        if (nx && nx->kind == BS_COUNT) {
            cs_value v = cs_int((int64_t)n);
            return query_vals_push(out, &v);
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
                if (rc == CS_OK) rc = query_vals_push(&elems, &v);
            }
            return push_aggregate(t, nx, &elems, rc, out);
        }
        for (size_t k = 0; k < n; k++) {
            int64_t key;
            TRY(cs_obj_backlink_get(o, s->table, s->col, k, &key));
            cs_obj e;
            TRY(cs_obj_open(t, s->table, key, &e));
            TRY(eval_from(t, src, b, i + 1, &e, NULL, out));
        }
        return CS_OK;
    }
    if (s->kind == BS_MAPKEY) {
        qcoll c;
        size_t n;
        TRY(qcoll_open(src, o, s->col, &c, &n));
        cs_value v;
        int rc = qcoll_map_get(&c, n, s->key, s->key_len, &v);
        if (rc == CS_NOTFOUND) v = cs_null();
        else TRY(rc);
        if (i + 1 == b->n || v.type != CS_TYPE_LINK) return query_vals_push(out, &v);
        cs_obj next;
        rc = src_open(t, src, v.v.link.table, v.v.link.key, &next);
        if (rc == CS_NOTFOUND) { cs_value nul = cs_null(); return query_vals_push(out, &nul); }
        TRY(rc);
        return eval_from(t, src, b, i + 1, &next, NULL, out);
    }
    if (s->kind == BS_COL) {
        cs_value v;
        TRY(src_get(src, o, s->col, &v));
        if (i + 1 == b->n || v.type != CS_TYPE_LINK) return query_vals_push(out, &v);
        cs_obj next;
        int rc = src_open(t, src, v.v.link.table, v.v.link.key, &next);
        if (rc == CS_NOTFOUND) {
            cs_value nul = cs_null();
            return query_vals_push(out, &nul);
        }
        TRY(rc);
        return eval_from(t, src, b, i + 1, &next, NULL, out);
    }
    if (s->kind == BS_COLL) {
        qcoll c;
        size_t n;
        TRY(qcoll_open(src, o, s->col, &c, &n));
        const bstep *nx = i + 1 < b->n ? &b->steps[i + 1] : NULL;
        if (nx && nx->kind == BS_COUNT) {
            cs_value v = cs_int((int64_t)n);
            return query_vals_push(out, &v);
        }
        if (nx && nx->kind == BS_KEYS) {
            for (size_t k = 0; k < n; k++) {
                cs_value key, val;
                TRY(qcoll_get(&c, k, &key, &val));
                TRY(query_vals_push(out, &key));
            }
            return CS_OK;
        }
        if (nx && (nx->kind == BS_MIN || nx->kind == BS_MAX || nx->kind == BS_SUM || nx->kind == BS_AVG)) {
            vals elems = {0};
            int rc = CS_OK;
            for (size_t k = 0; k < n && rc == CS_OK; k++) {
                cs_value v, key;
                rc = qcoll_get(&c, k, &key, &v);
                if (rc == CS_OK && nx->col != CS_NONE && v.type == CS_TYPE_LINK) {
                    cs_obj e;
                    rc = src_open(t, src, v.v.link.table, v.v.link.key, &e);
                    if (rc == CS_OK) rc = src_get(src, &e, nx->col, &v);
                }
                if (rc == CS_OK) rc = query_vals_push(&elems, &v);
            }
            return push_aggregate(t, nx, &elems, rc, out);
        }
        for (size_t k = 0; k < n; k++) {
            cs_value v, key;
            TRY(qcoll_get(&c, k, &key, &v));
            if (i + 1 < b->n && v.type == CS_TYPE_LINK) {
                cs_obj e;
                int rc = src_open(t, src, v.v.link.table, v.v.link.key, &e);
                if (rc == CS_NOTFOUND) continue;
                TRY(rc);
                TRY(eval_from(t, src, b, i + 1, &e, NULL, out));
            } else {
                TRY(query_vals_push(out, &v));
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
int query_agg_values(cs_txn *t, const bstep *st, const vals *in, cs_value *out)
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
    uint32_t *x = query_fold(a->v.bytes.ptr, a->v.bytes.len, flags, &an);
    uint32_t *y = query_fold(b->v.bytes.ptr, b->v.bytes.len, flags, &bn);
    if (!x || !y) { free(x); free(y); return NOMEM(); }
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
    case QOP_LIKE: r = query_like_match(x, an, y, bn); break;
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
int query_cmp_values(qop op, int flags, const cs_value *a, const cs_value *b, bool *res)
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

int query_operand_values(cs_txn *t, const cs_query_source *src, qnode *n, cs_obj *o, const cs_value *self, vals *out)
{
    if (n->kind == QN_SUBQUERY) {
        vals items = {0};
        int rc = eval_from(t, src, n->path->owned, 0, o, self, &items);
        int64_t count = 0;
        for (size_t i = 0; rc == CS_OK && i < items.n; i++) {
            if (items.v[i].type != CS_TYPE_LINK) continue;
            cs_obj e;
            rc = src_open(t, src, items.v[i].v.link.table, items.v[i].v.link.key, &e);
            if (rc == CS_NOTFOUND) { rc = CS_OK; continue; }
            bool r = false;
            if (rc == CS_OK) rc = query_eval(t, src, n->pred, &e, NULL, &r);
            if (r) count++;
        }
        free(items.v);
        TRY(rc);
        cs_value v = cs_int(count);
        return query_vals_push(out, &v);
    }
    if (n->kind == QN_KEYPATH && ((bpath *)n->owned)->type_of) {
        vals raw = {0};
        int rc = eval_from(t, src, n->owned, 0, o, self, &raw);
        for (size_t i = 0; rc == CS_OK && i < raw.n; i++) {
            const char *name = mixed_type_name(raw.v[i].type);
            cs_value v = cs_string(name, strlen(name));
            rc = query_vals_push(out, &v);
        }
        free(raw.v);
        return rc;
    }
    if (n->kind == QN_CONST) {
        if (n->value.type == CS_TYPE_LIST) return CS_OK;
        return query_vals_push(out, &n->value);
    }
    if (n->kind == QN_LIST) {
        for (size_t i = 0; i < n->nitems; i++) TRY(query_operand_values(t, src, n->items[i], o, self, out));
        return CS_OK;
    }
    return eval_from(t, src, n->owned, 0, o, self, out);
}

int query_eval(cs_txn *t, const cs_query_source *src, qnode *n, cs_obj *o, const cs_value *self, bool *res)
{
    switch (n->kind) {
    case QN_TRUE: *res = true; return CS_OK;
    case QN_FALSE: *res = false; return CS_OK;
    case QN_AND:
        TRY(query_eval(t, src, n->a, o, self, res));
        if (!*res) return CS_OK;
        return query_eval(t, src, n->b, o, self, res);
    case QN_OR:
        TRY(query_eval(t, src, n->a, o, self, res));
        if (*res) return CS_OK;
        return query_eval(t, src, n->b, o, self, res);
    case QN_NOT:
        TRY(query_eval(t, src, n->a, o, self, res));
        *res = !*res;
        return CS_OK;
    default: break;
    }
    vals a = {0}, b = {0}, c = {0};
    int rc = query_operand_values(t, src, n->a, o, self, &a);
    if (rc == CS_OK && n->b) rc = query_operand_values(t, src, n->b, o, self, &b);
    if (rc == CS_OK && n->c) rc = query_operand_values(t, src, n->c, o, self, &c);
    bool any = false, all = true;
    for (size_t i = 0; rc == CS_OK && i < a.n; i++) {
        bool r = false;
        if (n->kind == QN_BETWEEN) {
            bool lo = false, hi = false;
            if (b.n && c.n) {
                rc = query_cmp_values(QOP_GE, 0, &a.v[i], &b.v[0], &lo);
                if (rc == CS_OK) rc = query_cmp_values(QOP_LE, 0, &a.v[i], &c.v[0], &hi);
            }
            r = lo && hi;
        } else if (n->kind == QN_IN) {
            for (size_t k = 0; rc == CS_OK && k < b.n && !r; k++) rc = query_cmp_values(QOP_EQ, n->flags, &a.v[i], &b.v[k], &r);
        } else {
            /* a comparison with a many-valued right side holds if it holds for any of them */
            for (size_t k = 0; rc == CS_OK && k < b.n && !r; k++) rc = query_cmp_values(n->op, n->flags, &a.v[i], &b.v[k], &r);
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
