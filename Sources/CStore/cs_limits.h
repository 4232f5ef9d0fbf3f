/*
 * cs_limits.h -- the core's limits that more than one file relies on, in one place. Private to
 * the core. (The public limits are in cstore.h: CS_MAX_BLOB, a name map's size.)
 */
#ifndef CSTORE_LIMITS_H
#define CSTORE_LIMITS_H

/* Elements per tree node (docs/FORMAT.md §6.2, §6.4, §6.5): a cluster leaf holds at most
 * CLUSTER_MAX rows and an inner cluster node CLUSTER_MAX children; likewise BPT_MAX for the
 * positional trees of collections and IDX_MAX for index trees. A node is split past them. */
#define CLUSTER_MAX 256
#define BPT_MAX 256
#define IDX_MAX 256

/* The most rows a cluster leaf read from a file may claim before it is corrupt (CLUSTER_MAX,
 * with slack); per-row scratch arrays of the leaf loops are this long. */
#define CLUSTER_ROWS_READ_MAX (CLUSTER_MAX + 64)

/* Depth of every B+ tree (clusters, collections, indexes): with at least two children per inner
 * node, 24 levels hold more than any file can; a deeper tree in a file is corrupt (a cycle). */
#define TREE_DEPTH_MAX 24

/* Depth of nested refs a generic walk follows before it calls the structure corrupt (verify):
 * a table node, a cluster tree, a collection in a cell and a Mixed value's nested collections
 * (seven levels of them, cs_coll's path) stay well below it. */
#define NODE_NESTING_MAX 64

/* Nesting of a query's syntax tree: the parser refuses deeper text (QUERY_PARSE_DEPTH_MAX),
 * binding refuses deeper trees (QUERY_BIND_DEPTH_MAX, above the parser's bound because NOT and
 * SUBQUERY add levels of their own), and the walks over a top-level AND chain, which the parser
 * builds left-deep and of any length, stop at QUERY_CHAIN_MAX conjuncts. */
#define QUERY_PARSE_DEPTH_MAX 200
#define QUERY_BIND_DEPTH_MAX 400
#define QUERY_CHAIN_MAX 100000

/* Longest class or property name, in bytes: stored names (schema.c) and public names of a
 * name map (qnames.c). */
#define NAME_BYTES_MAX 1024

/* Commits of at most this many bytes are made durable with one sync (docs/FORMAT.md §2). */
#define ONE_SYNC_MAX (1u << 20)
/* A journaled commit whose record would end past this offset of the journal checkpoints first
 * (FORMAT.md §13; the figure is measured in docs/benchmarks/README.md, Commit journal). */
#ifndef JOURNAL_LIMIT /* a build may choose another figure (the measurement did) */
#define JOURNAL_LIMIT (16ull << 20)
#endif

/* How often an opener reads the header again when other processes' commits keep changing it
 * under its checks (file.c, read_header_settled); after the first few tries it waits 1 ms
 * between reads, so this bounds the wait at about two seconds. */
#define OPEN_HEADER_TRIES 2000

#endif
