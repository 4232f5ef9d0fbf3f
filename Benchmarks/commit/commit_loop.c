/*
 * commit_loop.c -- the C loop behind the commit figures in docs/benchmarks/README.md ("The small
 * commit's CPU and system calls"): the commit.durable and commit.nosync rows' own load.
 *
 *   commit-loop build FILE ROWS
 *       a file of ROWS objects of 10 Int columns i0..i9 (object r holds r in each), made by one
 *       cs_obj_create_many_int in one NOSYNC commit, as the bench's csBuildIntFile does;
 *   commit-loop run FILE full|nosync START COUNT [ROWS]
 *       commits u = START .. START + COUNT - 1 on that file (ROWS defaults to 1,000,000), each
 *       setting i0 of object (u mod ROWS) x 7919 mod ROWS to -(u + 1) in its own write
 *       transaction (begin, open, set, commit, end), then prints the time, CPU time and the I/O
 *       layer's writes, bytes and syncs per commit (cs_txn_last_commit_io, header included).
 *
 * Under valgrind --tool=callgrind --instr-atstart=no only the commits are counted (client
 * requests around the loop, when valgrind's headers are installed). Built with the core's
 * sources (`make commit-loop`), optimised, with -g.
 */
#include "cstore.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

static void must(int rc, const char *what)
{
    if (rc == CS_OK) return;
    fprintf(stderr, "commit-loop: %s failed: %d (%s)\n", what, rc, cs_errmsg());
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static int build(const char *path, long rows)
{
    char aside[4096];
    remove(path);
    snprintf(aside, sizeof aside, "%s.lock", path);
    remove(aside);
    snprintf(aside, sizeof aside, "%s.journal", path);
    remove(aside);
    cs_options o;
    memset(&o, 0, sizeof o);
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_NOSYNC;
    cs_db *db;
    cs_txn *t;
    uint32_t table, cols[10];
    must(cs_db_open(path, &o, &db), "cs_db_open");
    must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
    must(cs_table_add(t, "Item", 0, &table), "cs_table_add");
    for (int c = 0; c < 10; c++) {
        char name[8];
        snprintf(name, sizeof name, "i%d", c);
        must(cs_column_add(t, table, name, CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &cols[c]), "cs_column_add");
    }
    int64_t *v = malloc((size_t)rows * sizeof *v);
    if (!v) return 1;
    for (long i = 0; i < rows; i++) v[i] = i;
    const int64_t *per[10];
    for (int c = 0; c < 10; c++) per[c] = v;
    int64_t first;
    must(cs_obj_create_many_int(t, table, (size_t)rows, 10, cols, per, &first), "cs_obj_create_many_int");
    must(cs_txn_commit(t), "cs_txn_commit");
    must(cs_txn_end(t), "cs_txn_end");
    must(cs_db_close(db), "cs_db_close");
    free(v);
    printf("built %ld objects in %s\n", rows, path);
    return 0;
}

static int run(const char *path, bool full, long start, long count, long rows)
{
    cs_options o;
    memset(&o, 0, sizeof o);
    o.durability = full ? CS_DURABILITY_FULL : CS_DURABILITY_NOSYNC;
    cs_db *db;
    cs_txn *t;
    uint32_t table, col;
    must(cs_db_open(path, &o, &db), "cs_db_open");
    must(cs_txn_begin(db, CS_TXN_READ, &t), "cs_txn_begin");
    must(cs_table_find(t, "Item", &table), "cs_table_find");
    must(cs_column_find(t, table, "i0", &col), "cs_column_find");
    cs_iter it;
    cs_obj ob;
    must(cs_iter_init(&it, t, table), "cs_iter_init");
    must(cs_iter_next(&it, &ob), "cs_iter_next");
    int64_t first = ob.key; /* the objects' keys are first, first + 1, ... */
    must(cs_txn_end(t), "cs_txn_end");
    uint64_t writes = 0, syncs = 0, bytes = 0;
    double c0 = cpu(), t0 = now();
    CALLGRIND_START_INSTRUMENTATION;
    for (long u = start; u < start + count; u++) {
        must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
        must(cs_obj_open(t, table, first + (int64_t)((uint64_t)(u % rows) * 7919 % (uint64_t)rows), &ob), "cs_obj_open");
        must(cs_obj_set_int(&ob, col, -(int64_t)(u + 1)), "cs_obj_set_int");
        must(cs_txn_commit(t), "cs_txn_commit");
        uint64_t w, s;
        cs_txn_last_commit_io(t, &w, &s);
        writes += w;
        syncs += s;
        bytes += cs_txn_last_commit_bytes(t);
        must(cs_txn_end(t), "cs_txn_end");
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    double t1 = now(), c1 = cpu(), n = count > 0 ? (double)count : 1;
    printf("%ld commits: %.2f us, %.2f us of CPU, %.2f writes, %.0f bytes, %.3f syncs per commit\n", count,
           (t1 - t0) * 1e6 / n, (c1 - c0) * 1e6 / n, (double)writes / n, (double)bytes / n, (double)syncs / n);
    must(cs_db_close(db), "cs_db_close");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "build")) return build(argv[2], atol(argv[3]));
    if ((argc == 6 || argc == 7) && !strcmp(argv[1], "run") && (!strcmp(argv[3], "full") || !strcmp(argv[3], "nosync"))) {
        long rows = argc == 7 ? atol(argv[6]) : 1000000;
        if (rows < 1) return 2;
        return run(argv[2], !strcmp(argv[3], "full"), atol(argv[4]), atol(argv[5]), rows);
    }
    fprintf(stderr, "usage: commit-loop build FILE ROWS\n       commit-loop run FILE full|nosync START COUNT [ROWS]\n");
    return 2;
}
