/*
 * query_watch.h -- what the notifier (notify.c) asks of a query (query_watch.c): the columns its
 * filter, SORT and DISTINCT read, and whether one object matches its filter.
 */
#ifndef CSTORE_QUERY_WATCH_H
#define CSTORE_QUERY_WATCH_H

#include "internal.h"

/* One column a query reads: column `col` of table `table`. */
typedef struct query_dep {
    uint32_t table;
    uint32_t col;
} query_dep;

typedef struct query_deps {
    query_dep *d;      /* the columns (each once) */
    size_t n, cap;     /* used, allocated */
    bool root_only;    /* every column read is a non-link column of the query's own table */
    bool key_ordered;  /* a table query without SORT, DISTINCT or LIMIT: results in key order */
} query_deps;

/* The key paths a query reads, from its table (cs_keypath: a backlink step is the hidden
 * backlink column of the table it leaves). */
typedef struct query_keypaths {
    cs_keypath *p;     /* each once */
    size_t n, cap;     /* used, allocated */
    bool whole;        /* some path is none (a SUBQUERY, more than CS_KEYPATH_MAX columns) */
} query_keypaths;

/** Binds the query to its transaction's schema and lists the columns it reads (out is reset). */
int query_deps_get(cs_query *q, query_deps *out);
void query_deps_free(query_deps *d);
/** Binds the query and lists the key paths its filter, SORT and DISTINCT read (out is reset). */
int query_keypaths_get(cs_query *q, query_keypaths *out);
void query_keypaths_free(query_keypaths *k);
/** Whether object `key` of the query's table matches its filter in the query's transaction
 *  (false when the object does not exist). */
int query_match_one(cs_query *q, int64_t key, bool *match);
/** The query's table. */
uint32_t query_table(const cs_query *q);
/** Points the query at another transaction of the same file; `schema_changed` forces its paths
 *  to be bound again (the schema it was bound to may be gone). */
void query_set_txn(cs_query *q, cs_txn *t, bool schema_changed);

#endif
