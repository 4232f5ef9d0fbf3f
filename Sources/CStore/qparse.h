/*
 * qparse.h -- the query language's syntax tree (qparse.c builds it; the query engine binds it
 * to a schema and runs it). Private to the core.
 *
 * Grammar (precedence low to high):
 *   query     := or-expr (SORT(key [ASC|DESC], ...) | DISTINCT(key, ...) | LIMIT(n))*
 *   or-expr   := and-expr (('OR' | '||') and-expr)*
 *   and-expr  := not-expr (('AND' | '&&') not-expr)*
 *   not-expr  := ('NOT' | '!') not-expr | primary
 *   primary   := '(' or-expr ')' | 'TRUEPREDICATE' | 'FALSEPREDICATE' | comparison
 *   comparison:= [ANY|SOME|ALL|NONE] operand op['[' c|d|cd ']'] operand
 *              | operand 'BETWEEN' ('{' operand ',' operand '}' | list-argument-of-two)
 *              | operand 'IN'['[' c|d|cd ']'] operand
 *   operand   := literal | placeholder | keypath | SUBQUERY(keypath, $var, or-expr).@count
 *   keypath   := name ('.' name | '[' literal ']' | '.@count' | '.@size' | '.@min' | '.@max'
 *                | '.@sum' | '.@avg' | '.@allKeys' | '.@allValues' | '.@type' | '@links' ...)*
 */
#ifndef CSTORE_QPARSE_H
#define CSTORE_QPARSE_H

#include "internal.h"

#include <stdarg.h>

typedef enum qnode_kind {
    QN_TRUE = 1,   /* TRUEPREDICATE */
    QN_FALSE,      /* FALSEPREDICATE */
    QN_AND,        /* a AND b */
    QN_OR,         /* a OR b */
    QN_NOT,        /* NOT a */
    QN_CMP,        /* lhs op rhs */
    QN_BETWEEN,    /* lhs BETWEEN {lo, hi} */
    QN_IN,         /* lhs IN rhs (a list literal, a list argument, or a key path) */
    QN_KEYPATH,    /* operand: a key path */
    QN_CONST,      /* operand: a literal or a bound argument */
    QN_LIST,       /* operand: {a, b, ...} */
    QN_SUBQUERY,   /* operand: SUBQUERY(path, $var, pred).@count */
} qnode_kind;

typedef enum qop {
    QOP_EQ = 1, QOP_NE, QOP_LT, QOP_LE, QOP_GT, QOP_GE,
    QOP_BEGINSWITH, QOP_ENDSWITH, QOP_CONTAINS, QOP_LIKE,
} qop;

enum { QF_CASE = 1, QF_DIACRITIC = 2 }; /* [c], [d] */

typedef enum qquant { QQ_NONE = 0, QQ_ANY, QQ_ALL, QQ_NONE_OF } qquant;

/* One step of a key path. */
typedef enum qstep_kind {
    QS_NAME = 1,   /* a property (or the subquery variable / "self") */
    QS_COUNT,      /* @count, @size */
    QS_MIN, QS_MAX, QS_SUM, QS_AVG,
    QS_KEYS,       /* @allKeys */
    QS_VALUES,     /* @allValues */
    QS_SUBSCRIPT,  /* [literal] on a map */
    QS_TYPE,       /* @type on a Mixed */
    QS_LINKS,      /* @links.Class.property (backlinks) */
} qstep_kind;

typedef struct qstep {
    qstep_kind kind;  /* what */
    char *name;       /* QS_NAME, QS_LINKS (class), QS_SUBSCRIPT (key, NUL-terminated too) */
    size_t len;       /* QS_SUBSCRIPT: the key's length in bytes (it may hold NUL bytes) */
    char *name2;      /* QS_LINKS: the property */
    size_t pos;       /* byte offset in the text */
} qstep;

typedef struct qnode qnode;
struct qnode {
    qnode_kind kind;     /* what */
    size_t pos;          /* byte offset in the text where it starts */
    qop op;              /* QN_CMP */
    int flags;           /* QN_CMP, QN_IN: QF_* */
    qquant quant;        /* QN_CMP / QN_BETWEEN / QN_IN: ANY / ALL / NONE prefix */
    qnode *a, *b, *c;    /* children: AND/OR/NOT (a, b); CMP (a op b); BETWEEN (a, b, c); IN (a, b) */
    qnode **items;       /* QN_LIST */
    size_t nitems;       /* QN_LIST */
    qstep *steps;        /* QN_KEYPATH */
    size_t nsteps;       /* QN_KEYPATH */
    cs_value value;      /* QN_CONST (bytes owned by `owned`) */
    void *owned;         /* QN_CONST: a copy of string/binary bytes */
    int arg;             /* QN_CONST: index of the bound argument, or -1 for a literal */
    char *var;           /* QN_SUBQUERY: the variable ($x) */
    qnode *path;         /* QN_SUBQUERY: the collection key path */
    qnode *pred;         /* QN_SUBQUERY: the inner predicate */
};

typedef struct qsort_key {
    qnode *path;     /* key path */
    bool ascending;  /* direction */
} qsort_key;

/* One SORT(...) or DISTINCT(...) clause: a run of keys in qparsed's `sort` or `distinct`. */
typedef struct qorder {
    bool distinct;  /* DISTINCT (else SORT) */
    size_t first;   /* index of its first key in `sort` / `distinct` */
    size_t n;       /* how many keys (at least one) */
} qorder;

typedef struct qparsed {
    qnode *pred;           /* the predicate */
    qsort_key *sort;       /* the keys of every SORT(...), in text order */
    size_t nsort;          /* how many */
    qnode **distinct;      /* the key paths of every DISTINCT(...), in text order */
    size_t ndistinct;      /* how many */
    qorder *order;         /* the SORT and DISTINCT clauses in text order: they apply in this order
                            * (RealmSwift's sorted().distinct() call order), a SORT as a stable sort
                            * of the order so far (so of two SORTs the later is primary), a DISTINCT
                            * keeping the first object of each value in the order so far */
    size_t norder;         /* how many */
    int64_t limit;         /* LIMIT(n), -1 for none; applies after every SORT and DISTINCT */
} qparsed;

/** Parses `text` with `nargs` bound arguments ($0.. or %@ in order). CS_QUERY with a message that
 *  names the token and its line:column on a syntax error or a missing argument. */
int qparse(const char *text, size_t len, const cs_value *args, size_t nargs, qparsed **out);
void qparsed_free(qparsed *q);
void qnode_free(qnode *n);
/** line:column of a byte offset (1-based), for messages. */
void qparse_where(const char *text, size_t pos, unsigned *line, unsigned *col);
/** Records CS_QUERY with the message and the line:column of byte `pos` of `text`. */
int qparse_vfail(const char *text, size_t pos, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

#endif
