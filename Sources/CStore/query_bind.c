/*
 * query_bind.c -- binding a parsed query (qparse.h) to the schema: every key path becomes a
 * bpath of typed steps through columns, links, collections, backlinks and collection operators,
 * names are looked up through the query's name map (qnames.c), and every comparison is type
 * checked, so a malformed or ill-typed query is CS_QUERY with the line:column of the offending
 * token before it runs. Bound paths are cached in their syntax nodes and rebound when the
 * transaction's schema changes (query_rebind).
 *
 * Invariants:
 *  1. After query_rebind succeeds, every QN_KEYPATH node's `owned` is its bpath for the schema
 *     q->bound_to, and q->bound_to is the transaction's schema.
 *  2. Binding recursion is bounded (QUERY_BIND_DEPTH_MAX); AND/OR chains are walked along their
 *     spine without recursing.
 */
#include "snapshot.h"
#include "query_int.h"

#include <errno.h>
#include <stdarg.h>
#include <strings.h>

static int berr(cs_query *q, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int berr(cs_query *q, size_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = qparse_vfail(q->text, pos, fmt, ap);
    va_end(ap);
    return rc;
}

const char *query_type_name(cs_type t)
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

/* Whether a bound step names a map column. */
static bool is_map(cs_txn *t, const bstep *st)
{
    col_def *c = txn_col_live(t, st->table, st->col);
    return c && c->coll == CS_COLL_MAP;
}

/* Binds a key path of the syntax tree; the result is cached in the node's `owned` pointer. */
static void bpath_free(bpath *b);

static int bind_path(cs_query *q, qnode *n, bpath **out)
{
    cs_txn *t = q->txn;
    bpath *b = calloc(1, sizeof *b);
    if (!b) return NOMEM();
    b->steps = calloc(n->nsteps + 1, sizeof(bstep));
    if (!b->steps) { free(b); return NOMEM(); }
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
    } else if (n->nsteps && n->steps[0].kind == QS_NAME && strcasecmp(n->steps[0].name, "self") == 0
               && q->root == QR_VALUES && !q->var) {
        /* SELF is a keyword in any case, as in NSPredicate */
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
        table_def *td = table != CS_NONE ? txn_table_live(t, table) : NULL;
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
            col_def *lc = NULL;
            if (!alias && (qnames_column_find(q->names, t, ot, s->name2, &oc) != CS_OK ||
                           !(lc = txn_col_live(t, ot, oc)) || lc->type != CS_TYPE_LINK || lc->target != table)) {
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
            if (!prev || prev->kind != BS_COLL || !is_map(t, prev)) {
                bpath_free(b);
                return berr(q, s->pos, "'[key]' applies to a map");
            }
            prev->kind = BS_MAPKEY;
            prev->key = malloc(s->len + 1);
            if (!prev->key) { bpath_free(b); return NOMEM(); }
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
            if (!prev || prev->kind != BS_COLL || !is_map(t, prev)) {
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
                col_def *ac = NULL;
                if (qnames_column_find(q->names, t, table, n->steps[i + 1].name, &col) != CS_OK ||
                    !(ac = txn_col_live(t, table, col))) {
                    bpath_free(b);
                    return berr(q, n->steps[i + 1].pos, "unknown property '%s' on %s", n->steps[i + 1].name,
                                qnames_table_name(q->names, t, table));
                }
                o->table = table;
                o->col = col;
                cur = (cs_type)ac->type;
                i++;
            } else {
                o->col = CS_NONE;
            }
            if (!numeric(cur) && cur != CS_TYPE_TIMESTAMP && o->kind != BS_SUM && o->kind != BS_AVG) {
                if (cur != CS_TYPE_MIXED) { bpath_free(b); return berr(q, s->pos, "@min/@max need numbers or dates, not %s", query_type_name(cur)); }
            }
            if ((o->kind == BS_SUM || o->kind == BS_AVG) && !numeric(cur) && cur != CS_TYPE_MIXED) {
                bpath_free(b);
                return berr(q, s->pos, "@sum/@avg need numbers, not %s", query_type_name(cur));
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
                return berr(q, n->pos, "[c] and [d] apply to strings, not %s", query_type_name(ta));
            if (n->b->kind == QN_LIST) {
                for (size_t i = 0; i < n->b->nitems; i++) {
                    cs_type ti;
                    bool mi;
                    TRY(operand_type(q, n->b->items[i], &ti, &mi));
                    if (!types_compatible(ta, ti))
                        return berr(q, n->b->items[i]->pos, "cannot compare %s with %s", query_type_name(ta), query_type_name(ti));
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
                return berr(q, n->pos, "BETWEEN needs numbers, dates, object ids or UUIDs, not %s", query_type_name(ta));
            if (!types_compatible(ta, tb) || !types_compatible(ta, tc))
                return berr(q, n->pos, "BETWEEN bounds must be of the property's type (%s)", query_type_name(ta));
            return CS_OK;
        }
        /* an operator that does not apply to the property's type says so before any talk of
         * the other operand */
        if (n->op >= QOP_BEGINSWITH && ta != CS_TYPE_STRING && ta != CS_TYPE_BINARY && ta != CS_TYPE_MIXED)
            return berr(q, n->pos, "%s does not apply to %s (it needs a string or binary property)",
                        n->op == QOP_BEGINSWITH ? "BEGINSWITH" : n->op == QOP_ENDSWITH ? "ENDSWITH" : n->op == QOP_CONTAINS ? "CONTAINS" : "LIKE",
                        query_type_name(ta));
        if (!types_compatible(ta, tb)) {
            size_t pos = n->b->kind == QN_CONST ? n->b->pos : n->pos;
            return berr(q, pos, "cannot compare %s with %s", query_type_name(ta), query_type_name(tb));
        }
        if (n->flags && ta != CS_TYPE_STRING && ta != CS_TYPE_MIXED)
            return berr(q, n->pos, "[c] and [d] apply to strings, not %s", query_type_name(ta));
        /* ObjectId and UUID order as unsigned big-endian byte strings (cs_value_compare, SORT and
         * their index keys agree); bools and links have no order in Realm's query language */
        if ((n->op == QOP_LT || n->op == QOP_LE || n->op == QOP_GT || n->op == QOP_GE) && n->flags == 0) {
            cs_type un = ta == CS_TYPE_BOOL || ta == CS_TYPE_LINK ? ta : tb;
            if (un == CS_TYPE_BOOL || un == CS_TYPE_LINK)
                return berr(q, n->pos, "%s values have no order: <, <=, > and >= do not apply to them (use == or !=)",
                            query_type_name(un));
        }
        return CS_OK;
    }
    default: return berr(q, n->pos, "not a condition");
    }
}

void query_unbind(qnode *n)
{
    if (!n) return;
    if (n->kind == QN_KEYPATH) {
        bpath_free(n->owned);
        n->owned = NULL;
    }
    query_unbind(n->a);
    query_unbind(n->b);
    query_unbind(n->c);
    query_unbind(n->path);
    query_unbind(n->pred);
    for (size_t i = 0; i < n->nitems; i++) query_unbind(n->items[i]);
}

int query_rebind(cs_query *q)
{
    if (q->bound_to == q->txn->schema) return CS_OK;
    if (q->table != CS_NONE && !txn_table_live(q->txn, q->table))
        return cs_fail(CS_NOTFOUND, 0, "the query's table no longer exists");
    query_unbind(q->parsed->pred);
    for (size_t i = 0; i < q->parsed->nsort; i++) query_unbind(q->parsed->sort[i].path);
    for (size_t i = 0; i < q->parsed->ndistinct; i++) query_unbind(q->parsed->distinct[i]);
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
