/* object_advance.c -- the cost of cs_notifier_advance and cs_watch_take for one object watch
 * (shallow default key paths) on commits that set one int property of the watched object: the
 * core's part of notify.latency after the commit, for callgrind (docs/benchmarks/README.md,
 * "notify.latency: the path and the hand-over"):
 *
 *   gcc -O2 -g -std=c11 -D_GNU_SOURCE -ISources/CStore/include -ISources/CStore \
 *       -o object_advance Benchmarks/notify/object_advance.c Sources/CStore/\*.c -llz4 -lpthread -lm
 *   valgrind --tool=callgrind --toggle-collect=cs_notifier_advance ./object_advance COMMITS FILE
 */
#include "cstore.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CK(x) do { int rc_ = (x); if (rc_ != CS_OK) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cs_errmsg()); exit(1); } } while (0)

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: object_advance COMMITS FILE\n");
        return 2;
    }
    int commits = atoi(argv[1]);
    const char *path = argv[2];
    remove(path);
    char lk[256]; snprintf(lk, sizeof lk, "%s.lock", path); remove(lk);
    cs_options o = {.flags = CS_OPEN_CREATE, .durability = CS_DURABILITY_NOSYNC};
    cs_db *db; cs_txn *t; cs_obj ob;
    CK(cs_db_open(path, &o, &db));
    uint32_t item, cols[10];
    CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
    CK(cs_table_add(t, "Item", 0, &item));
    for (int i = 0; i < 10; i++) {
        char name[8]; snprintf(name, sizeof name, "i%d", i);
        CK(cs_column_add(t, item, name, CS_TYPE_INT, CS_COLL_NONE, 0, 0, &cols[i]));
    }
    for (int i = 0; i < 1000; i++) {
        CK(cs_obj_create(t, item, &ob));
        for (int c = 0; c < 10; c++) CK(cs_obj_set_int(&ob, cols[c], i));
    }
    CK(cs_txn_commit(t));
    cs_txn_end(t);
    cs_notifier *n;
    CK(cs_notifier_open(db, &n));
    cs_watch *w;
    CK(cs_watch_object(n, item, 0, NULL, 0, CS_WATCH_SHALLOW, &w));
    long seen = 0;
    for (int i = 0; i < commits; i++) {
        CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
        CK(cs_obj_open(t, item, 0, &ob));
        CK(cs_obj_set_int(&ob, cols[1], 1000000 + i));
        CK(cs_txn_commit(t));
        cs_txn_end(t);
        bool moved;
        CK(cs_notifier_advance(n, &moved));
        if (cs_watch_pending(w)) {
            cs_changeset cs;
            CK(cs_watch_take(w, &cs));
            if (cs.deleted || cs.ncolumns != 1 || cs.columns[0] != cols[1]) {
                printf("commit %d: %zu columns reported, the first %u (want column %u alone)\n", i, cs.ncolumns,
                       cs.ncolumns ? cs.columns[0] : 0u, cols[1]);
                return 1;
            }
            seen++;
        }
    }
    printf("%d commits, %ld changed columns reported\n", commits, seen);
    cs_notifier_close(n);
    cs_db_close(db);
    return seen == commits ? 0 : 1;
}
