/* depend_cost.c -- the cost of cs_notifier_advance on commits to an unrelated table, with N
 * List watches (deep default key paths) without (MODE 0) or with (MODE 1) a dependency on a
 * query through backlinks (cs_watch_depend_query), for callgrind (docs/benchmarks/README.md,
 * "Queries over collections depend on what they read"):
 *
 *   gcc -O2 -g -std=c11 -D_GNU_SOURCE -ISources/CStore/include -ISources/CStore \
 *       -o depend_cost Benchmarks/notify/depend_cost.c Sources/CStore/\*.c -llz4 -lpthread -lm
 *   valgrind --tool=callgrind --toggle-collect=cs_notifier_advance ./depend_cost MODE N COMMITS FILE
 */
#include "cstore.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { int rc_ = (x); if (rc_ != CS_OK) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cs_errmsg()); exit(1); } } while (0)

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: depend_cost MODE WATCHES COMMITS FILE\n");
        return 2;
    }
    int mode = atoi(argv[1]), nw = atoi(argv[2]), commits = atoi(argv[3]);
    const char *path = argv[4];
    remove(path);
    char lk[256]; snprintf(lk, sizeof lk, "%s.lock", path); remove(lk);
    cs_options o = {.flags = CS_OPEN_CREATE, .durability = CS_DURABILITY_NOSYNC};
    cs_db *db; cs_txn *t; cs_obj ob;
    CK(cs_db_open(path, &o, &db));
    uint32_t dog, toy, vet, clinic, person, other, c, dogs, x;
    CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
    CK(cs_table_add(t, "Dog", 0, &dog));
    CK(cs_table_add(t, "Toy", 0, &toy));
    CK(cs_table_add(t, "Vet", 0, &vet));
    CK(cs_table_add(t, "Clinic", 0, &clinic));
    CK(cs_table_add(t, "Person", 0, &person));
    CK(cs_table_add(t, "Other", 0, &other));
    const char *names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        CK(cs_column_add(t, dog, names[i], CS_TYPE_INT, CS_COLL_NONE, 0, 0, &c));
        CK(cs_column_add(t, toy, names[i], CS_TYPE_INT, CS_COLL_NONE, 0, 0, &c));
        CK(cs_column_add(t, vet, names[i], CS_TYPE_INT, CS_COLL_NONE, 0, 0, &c));
        CK(cs_column_add(t, clinic, names[i], CS_TYPE_INT, CS_COLL_NONE, 0, 0, &c));
    }
    CK(cs_column_add(t, dog, "toys", CS_TYPE_LINK, CS_COLL_LIST, 0, toy, &c));
    CK(cs_column_add(t, dog, "vet", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, vet, &c));
    CK(cs_column_add(t, dog, "friend", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, dog, &c));
    CK(cs_column_add(t, vet, "clinic", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, clinic, &c));
    CK(cs_column_add(t, toy, "maker", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, vet, &c));
    CK(cs_column_add(t, person, "name", CS_TYPE_INT, CS_COLL_NONE, 0, 0, &c));
    CK(cs_column_add(t, person, "dogs", CS_TYPE_LINK, CS_COLL_LIST, 0, dog, &dogs));
    CK(cs_column_add(t, other, "x", CS_TYPE_INT, CS_COLL_NONE, 0, 0, &x));
    cs_obj p; CK(cs_obj_create(t, person, &p));
    cs_coll l; CK(cs_coll_open(&p, dogs, &l));
    for (int i = 0; i < 10; i++) {
        CK(cs_obj_create(t, dog, &ob));
        cs_value v = cs_link(dog, i);
        CK(cs_list_append(&l, &v));
    }
    CK(cs_obj_create(t, other, &ob));
    CK(cs_txn_commit(t));
    cs_txn_end(t);
    cs_notifier *n;
    CK(cs_notifier_open(db, &n));
    const char *q = "@links.Person.dogs.@count > 1";
    for (int i = 0; i < nw; i++) {
        cs_watch *w;
        CK(cs_watch_coll(n, person, 0, dogs, NULL, 0, CS_WATCH_DEEP, &w));
        if (mode) CK(cs_watch_depend_query(w, q, strlen(q), NULL, 0, NULL));
    }
    double spent = 0;
    for (int i = 0; i < commits; i++) {
        CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
        CK(cs_obj_open(t, other, 0, &ob));
        CK(cs_obj_set_int(&ob, x, i));
        CK(cs_txn_commit(t));
        cs_txn_end(t);
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        bool moved;
        CK(cs_notifier_advance(n, &moved));
        clock_gettime(CLOCK_MONOTONIC, &b);
        spent += (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    }
    printf("mode %d watches %d commits %d: advance %.3f ms total, %.4f ms per commit\n", mode, nw, commits, spent, spent / commits);
    cs_notifier_close(n);
    cs_db_close(db);
    return 0;
}
