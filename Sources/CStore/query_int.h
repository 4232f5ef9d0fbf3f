/*
 * query_int.h -- the query engine's private header, shared by its files and nothing else:
 *
 *   query_bind.c   binding a parsed query to the schema and type checking it
 *   query_eval.c   evaluating it on one object: key path values, comparisons, aggregates
 *   query_fold.c   [c] and [d] folding, the tolerant UTF-8 decoder, LIKE
 *   query_leaf.c   the leaf loops over packed Int columns (conditions and aggregates)
 *   query_plan.c   index seeds: ranges of index entries that answer a condition
 *   query.c        the entry points: making, counting, keys with SORT / DISTINCT / LIMIT,
 *                  aggregates, and run_filter, which chooses how candidates are found
 *
 * The syntax tree is qparse.h's; names go through qnames.h (docs/ARCHITECTURE.md, Queries).
 */
#ifndef CSTORE_QUERY_INT_H
#define CSTORE_QUERY_INT_H

#include "node.h"
#include "snapshot.h"
#include "index.h"
#include "qnames.h"
#include "qparse.h"

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
    qnode **argnodes;   /* the predicate's constants that came from arguments (cs_query_set_args) */
    size_t nargnodes;   /* their number */
    bool args_found;    /* argnodes lists them (found on the first cs_query_set_args) */
};

typedef struct vals {
    cs_value *v;      /* values */
    size_t n, cap;    /* used, allocated */
} vals;

typedef struct fastcond {
    uint32_t col;  /* Int column */
    qop op;        /* EQ..GE */
    int64_t k;     /* constant */
} fastcond;

#define FAST_MAX 8

typedef int (*leaf_visit)(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows);

typedef struct keyset {
    int64_t *keys;   /* matching keys */
    size_t n, cap;   /* used, allocated */
    uint64_t count;  /* matches (count-only runs) */
    bool collect;    /* keep keys */
} keyset;

/* How a conjunct of the top-level AND chain is answered from an ordered index: a set of ranges
 * of index entries (FORMAT.md §6.5) whose objects include every match of the conjunct. */
typedef struct seedplan {
    uint32_t col;     /* the indexed column */
    irange *r;        /* the ranges; their bytes are owned (malloc'd) */
    size_t n, cap;    /* used, allocated */
    bool exact;       /* the ranges hold exactly the conjunct's matches */
    int rank;         /* preference: 0 equality, 1 IN, 2 range or prefix, 3 case-insensitive */
} seedplan;

/* The ways the scan's decoder (query_utf8_next) reads code point c from bytes: its UTF-8 form (the
 * valid spelling), and the odd ones it also accepts from invalid UTF-8: a raw byte (c in
 * 0x80..0xFF), and overlong two- and three-byte forms. Each spelling is at most 3 bytes. */
typedef struct spelling {
    uint8_t b[3]; /* bytes */
    uint8_t n;    /* how many */
} spelling;

typedef struct aggctx {
    uint32_t col;       /* 1 + column in the leaf */
    cs_txn *t;          /* transaction */
    cs_aggregate op;    /* what */
    const fastcond *fc; /* the conditions rows must meet */
    size_t nf;          /* how many */
    __int128 sum;       /* running sum (a 64-bit overflow is reported for SUM only) */
    int64_t best;       /* running min / max */
    uint64_t n;         /* values seen */
    bool overflow;      /* the sum overflowed */
} aggctx;

static inline bool numeric(cs_type t)
{
    return t == CS_TYPE_INT || t == CS_TYPE_FLOAT || t == CS_TYPE_DOUBLE || t == CS_TYPE_DECIMAL;
}

/* How a query finds its candidates: chosen by query_plan_choose before anything runs, then
 * carried out by run_filter (query.c) or the Int aggregate; cs_query_last_plan reports it. */
typedef struct qplan {
    cs_plan_kind kind;     /* SCAN (every element or object tested), ALL, INDEX or LEAVES */
    ref_t root;            /* a table query's cluster root (ALL, INDEX, LEAVES) */
    seedplan seed;         /* INDEX: the ranges (owned until query_plan_release) */
    bool recheck;          /* INDEX: each candidate is tested with the predicate */
    fastcond fc[FAST_MAX]; /* LEAVES: the Int conditions (none: every row) */
    size_t nf;             /* LEAVES: how many */
} qplan;

/* What a plan is for: the matching keys or count (every kind), or an aggregate of an Int column
 * (the leaf loops or nothing: CS_PLAN_NONE leaves it to the matches). */
typedef enum qplan_use { QPLAN_MATCHES, QPLAN_INT_AGGREGATE } qplan_use;

/* The definition of column col of table `table` that a bound path names: paths are bound against
 * the transaction's schema (query_rebind), so it is live; NULL only if that invariant broke. */
static inline col_def *query_bound_col(const cs_query *q, uint32_t table, uint32_t col)
{
    col_def *c = txn_col_live(q->txn, table, col);
    cs_assert(c != NULL);
    return c;
}

/* ---- query_bind.c ------------------------------------------------------------------------- */

/** Binds the query's paths to the transaction's schema if it changed since they were bound. */
int query_rebind(cs_query *q);
/** Frees the bound paths cached in a syntax tree. */
void query_unbind(qnode *n);
/** A type's name for messages ("Int", "Date", ...). */
const char *query_type_name(cs_type t);

/* ---- query_eval.c ------------------------------------------------------------------------- */

int query_vals_push(vals *x, const cs_value *v);
/** Sum, average, min or max (st->kind) of values (docs/ARCHITECTURE.md, Values and their order). */
int query_agg_values(cs_txn *t, const bstep *st, const vals *in, cs_value *out);
/** One comparison of two single values under the query language's rules. */
int query_cmp_values(qop op, int flags, const cs_value *a, const cs_value *b, bool *res);
/** The values an operand yields for object o (or element `self` of a collection of values).
 *  `src` NULL reads the file; else values come from the source and o only carries its handle. */
int query_operand_values(cs_txn *t, const cs_query_source *src, qnode *n, cs_obj *o, const cs_value *self, vals *out);
/** Whether condition n holds for object o (or element `self`); `src` as query_operand_values. */
int query_eval(cs_txn *t, const cs_query_source *src, qnode *n, cs_obj *o, const cs_value *self, bool *res);

/* ---- query_fold.c ------------------------------------------------------------------------- */

uint32_t query_fold_case(uint32_t c);
/** Decodes one code point at *i (invalid bytes decode as themselves) and advances *i. */
uint32_t query_utf8_next(const uint8_t *s, size_t n, size_t *i);
/** A string folded by flags (QF_CASE, QF_DIACRITIC) as code points (malloc'd; NULL: no memory). */
uint32_t *query_fold(const void *p, size_t n, int flags, size_t *len);
bool query_like_match(const uint32_t *s, size_t sn, const uint32_t *p, size_t pn);
/** Appends the spellings of c the decoder reads: valid UTF-8 to valid, others to odd. */
void query_spellings(uint32_t c, spelling *valid, size_t *nv, spelling *odd, size_t *no);
/** The code points that fold like c, c first (at most 8). */
size_t query_fold_class(uint32_t c, uint32_t *out);

/* ---- query_leaf.c ------------------------------------------------------------------------- */

/** Whether n is `IntColumn op constant` or an AND chain of at most FAST_MAX of them (into out). */
bool query_collect_fast(cs_query *q, qnode *n, fastcond *out, size_t *nf);
/** Runs the conditions over every leaf of the cluster tree at root, calling fn per leaf. */
int query_fast_walk(cs_txn *t, ref_t root, const fastcond *fc, size_t nf, leaf_visit fn, void *ctx);
/** The visit of a one-condition count (ctx: a uint64_t): query_fast_walk then counts fused. */
int query_fast_count_visit(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows);
/** The visit that adds the matching keys to a keyset (ctx). */
int query_fast_visit(void *ctx, node_hdr *keys, const uint8_t *hit, uint64_t rows);
/** An Int aggregate (a) of the rows matching a->fc, over the cluster tree at root. */
int query_agg_walk(cs_txn *t, ref_t root, aggctx *a);

/* ---- query_plan.c ------------------------------------------------------------------------- */

/** Chooses how the bound query finds its candidates (see qplan_use): for a table, TRUEPREDICATE
 *  is ALL, then an index seed of the top-level AND chain (query_find_seed), then the leaf loops,
 *  else a scan; a collection's elements are always scanned. */
int query_plan_choose(cs_query *q, qplan_use use, qplan *p);
void query_plan_release(qplan *p);
void query_plan_free(seedplan *p);
/** The best conjunct of the top-level AND chain n to seed from (*which NULL: none). */
int query_find_seed(cs_query *q, qnode *n, seedplan *best, qnode **which, int depth);

/* ---- query.c ------------------------------------------------------------------------------ */

int query_keys_push(keyset *k, int64_t key);

/* ---- query_sort.c ------------------------------------------------------------------------- */

/** SORT on one column of the queried objects (and no DISTINCT): orders keys[0..n) as the general
 *  sort would and sets *done; leaves them alone (*done false) when the sort is not of that form. */
int query_sort_one_column(cs_query *q, int64_t *keys, size_t n, bool *done);

#endif
