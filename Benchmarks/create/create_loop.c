/*
 * create_loop.c -- the C loop behind the object-creation figures (docs/benchmarks/README.md,
 * Creating an object with its values): N new objects of a table of 11 Int columns, the first
 * `id` its primary key, created in one write in the order 7919 * i mod N (N not a multiple of
 * 7919), as insert.pk.scattered.200k's `realm.add`s create them, then committed (NOSYNC).
 *
 *   create-loop FILE N sets     each object cs_obj_create_primary, then cs_obj_set_int of its
 *                               10 other columns (the single add before cs_obj_create_values)
 *   create-loop FILE N values   each object one cs_obj_create_values call with its 11 values
 *
 * Every column of object id holds id. Prints the loop's and the commit's wall time; the file is
 * checked (count and sum of the values) after the commit.
 */
#include "cstore.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        int rc_ = (x);                                                                             \
        if (rc_) {                                                                                 \
            fprintf(stderr, "%s:%d: %s gave %d\n", __FILE__, __LINE__, #x, rc_);                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[3], "sets") && strcmp(argv[3], "values"))) {
        fprintf(stderr, "usage: create-loop FILE N sets|values\n");
        return 2;
    }
    const char *path = argv[1];
    long n = atol(argv[2]);
    bool values = strcmp(argv[3], "values") == 0;
    if (n <= 0 || n % 7919 == 0) {
        fprintf(stderr, "N must be positive and not a multiple of 7919\n");
        return 2;
    }
    unlink(path);
    cs_options o;
    memset(&o, 0, sizeof o);
    o.durability = CS_DURABILITY_NOSYNC;
    o.flags = CS_OPEN_CREATE;
    cs_db *db;
    cs_txn *t;
    uint32_t tb, cols[11];
    CK(cs_db_open(path, &o, &db));
    CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
    CK(cs_table_add(t, "P", 0, &tb));
    for (int c = 0; c < 11; c++) {
        char name[8];
        snprintf(name, sizeof name, c ? "i%d" : "id", c - 1);
        CK(cs_column_add(t, tb, name, CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &cols[c]));
    }
    CK(cs_table_set_primary_key(t, tb, cols[0]));
    CK(cs_txn_commit(t));
    CK(cs_txn_end(t));

    double t0 = now_s();
    CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
    for (long i = 0; i < n; i++) {
        int64_t id = (int64_t)((i * 7919L) % n);
        cs_obj ob;
        if (values) {
            cs_value v[11];
            for (int c = 0; c < 11; c++) v[c] = cs_int(id);
            CK(cs_obj_create_values(t, tb, 11, cols, v, &ob));
        } else {
            cs_value pv = cs_int(id);
            CK(cs_obj_create_primary(t, tb, &pv, &ob));
            for (int c = 1; c < 11; c++) CK(cs_obj_set_int(&ob, cols[c], id));
        }
    }
    double t1 = now_s();
    CK(cs_txn_commit(t));
    CK(cs_txn_end(t));
    double t2 = now_s();

    CK(cs_txn_begin(db, CS_TXN_READ, &t));
    cs_iter it;
    CK(cs_iter_init(&it, t, tb));
    cs_obj ob;
    long count = 0;
    int64_t sum = 0;
    while (cs_iter_next(&it, &ob) == 0) {
        for (int c = 0; c < 11; c++) {
            int64_t x;
            CK(cs_obj_get_int(&ob, cols[c], &x));
            sum += x;
        }
        count++;
    }
    CK(cs_txn_end(t));
    CK(cs_db_close(db));
    int64_t want = 11 * (int64_t)n * (n - 1) / 2;
    printf("%s: %ld objects, loop %.1f ms, commit %.1f ms, check %s\n", argv[3], n, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
           count == n && sum == want ? "ok" : "FAILED");
    return count == n && sum == want ? 0 : 1;
}
