/* pin_cost.c -- what the version pin costs that a delivery holding a change set of a query over
 * a collection takes on its Realm's handle (`RealmCore.pinVersion`: cs_txn_freeze of the
 * Realm's read transaction, then cs_txn_end), beside the core's part of such a delivery: one
 * cs_notifier_advance and cs_watch_take of a List watch on commits that append to the List
 * (docs/benchmarks/README.md, "The delivery's version pin"):
 *
 *   gcc -O2 -g -std=c11 -D_GNU_SOURCE -ISources/CStore/include -ISources/CStore \
 *       -o pin_cost Benchmarks/notify/pin_cost.c Sources/CStore/\*.c -llz4 -lpthread -lm
 *   ./pin_cost ROUNDS FILE                      (wall time per pin and per advance)
 *   valgrind --tool=callgrind --toggle-collect=pin_pair ./pin_cost ROUNDS FILE
 */
#include "cstore.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { int rc_ = (x); if (rc_ != CS_OK) { printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cs_errmsg()); exit(1); } } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* the pin a delivery takes and lets go (noinline: callgrind's toggle) */
__attribute__((noinline)) static void pin_pair(cs_db *db, cs_txn *reader)
{
    cs_txn *pin;
    CK(cs_txn_freeze(db, reader, &pin));
    cs_txn_end(pin);
}

__attribute__((noinline)) static void advance_and_take(cs_notifier *n, cs_watch *w)
{
    bool moved;
    CK(cs_notifier_advance(n, &moved));
    if (cs_watch_pending(w)) {
        cs_changeset cs;
        CK(cs_watch_take(w, &cs));
        if (cs.ninsertions != 1) { printf("%zu insertions (want 1)\n", cs.ninsertions); exit(1); }
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: pin_cost ROUNDS FILE\n");
        return 2;
    }
    int rounds = atoi(argv[1]);
    const char *path = argv[2];
    remove(path);
    char lk[256]; snprintf(lk, sizeof lk, "%s.lock", path); remove(lk);
    cs_options o = {.flags = CS_OPEN_CREATE, .durability = CS_DURABILITY_NOSYNC};
    cs_db *db; cs_txn *t; cs_obj ob, item;
    CK(cs_db_open(path, &o, &db));
    uint32_t owner, dog, dogs, age;
    CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
    CK(cs_table_add(t, "Dog", 0, &dog));
    CK(cs_column_add(t, dog, "age", CS_TYPE_INT, CS_COLL_NONE, 0, 0, &age));
    CK(cs_table_add(t, "Owner", 0, &owner));
    CK(cs_column_add(t, owner, "dogs", CS_TYPE_LINK, CS_COLL_LIST, 0, dog, &dogs));
    CK(cs_obj_create(t, owner, &ob));
    cs_coll list;
    CK(cs_coll_open(&ob, dogs, &list));
    for (int i = 0; i < 100; i++) {
        CK(cs_obj_create(t, dog, &item));
        CK(cs_obj_set_int(&item, age, i));
        cs_value v = cs_link(dog, item.key);
        CK(cs_list_append(&list, &v));
    }
    CK(cs_txn_commit(t));
    cs_txn_end(t);
    cs_notifier *n;
    CK(cs_notifier_open(db, &n));
    cs_watch *w;
    CK(cs_watch_coll(n, owner, 0, dogs, NULL, 0, 0, &w));
    cs_changeset initial;
    CK(cs_watch_take(w, &initial));
    cs_txn *reader;
    CK(cs_txn_begin(db, CS_TXN_READ, &reader));
    double pin = 0, advance = 0;
    for (int i = 0; i < rounds; i++) {
        CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
        CK(cs_obj_create(t, dog, &item));
        CK(cs_obj_set_int(&item, age, i));
        CK(cs_obj_open(t, owner, 0, &ob));
        CK(cs_coll_open(&ob, dogs, &list));
        cs_value v = cs_link(dog, item.key);
        CK(cs_list_append(&list, &v));
        CK(cs_txn_commit(t));
        cs_txn_end(t);
        double t0 = now();
        advance_and_take(n, w);
        double t1 = now();
        bool moved;
        CK(cs_txn_advance(reader, &moved));
        double t2 = now();
        pin_pair(db, reader);
        double t3 = now();
        advance += t1 - t0;
        pin += t3 - t2;
    }
    printf("%d rounds: pin %.3f us, List watch advance and take %.3f us a round\n", rounds, pin / rounds * 1e6,
           advance / rounds * 1e6);
    cs_txn_end(reader);
    cs_watch_free(w);
    cs_notifier_close(n);
    cs_db_close(db);
    return 0;
}
