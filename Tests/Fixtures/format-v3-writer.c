/*
 * format-v3-writer.c -- writes Tests/Fixtures/format-v3.cstore and format-v3.txt (GoldenFileTests,
 * docs/FORMAT.md §2). The pair was made by compiling this file against the version-3 library
 * (every node plain, a chunked free list) and running it:
 *
 *   cc -O1 -D_GNU_SOURCE -I Sources/CStore/include Tests/Fixtures/format-v3-writer.c Sources/CStore/<all .c> \
 *      -lpthread -llz4 -lm -o v3writer && ./v3writer format-v3.cstore > format-v3.txt
 *
 * Built against a later library it writes that library's format instead, so the pair is never
 * rewritten. Contents: table Ints with 1,000 objects over four leaves (wide, negative, nullable,
 * Bool and Link values and a string), in three commits (creation, deletes and updates, more
 * objects), so the file has free space and a history; the text lists every object's values.
 */
#include "cstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MUST(x)                                                                      \
    do {                                                                             \
        int rc_ = (x);                                                               \
        if (rc_ != CS_OK) {                                                          \
            fprintf(stderr, "%s failed: %d %s\n", #x, rc_, cs_errmsg());             \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static int64_t wide(int64_t k) { return k * 1000003 - 400000000; }

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    unlink(argv[1]);
    cs_options o = {0};
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_FULL;
    cs_db *db;
    MUST(cs_db_open(argv[1], &o, &db));
    cs_txn *t;
    uint32_t tb, cw, cn, cb, cl, cs;
    MUST(cs_txn_begin(db, CS_TXN_WRITE, &t));
    MUST(cs_table_add(t, "Ints", 0, &tb));
    MUST(cs_column_add(t, tb, "wide", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &cw));
    MUST(cs_column_add(t, tb, "opt", CS_TYPE_INT, CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE, &cn));
    MUST(cs_column_add(t, tb, "flag", CS_TYPE_BOOL, CS_COLL_NONE, 0, CS_NONE, &cb));
    MUST(cs_column_add(t, tb, "link", CS_TYPE_LINK, CS_COLL_NONE, 0, tb, &cl));
    MUST(cs_column_add(t, tb, "name", CS_TYPE_STRING, CS_COLL_NONE, 0, CS_NONE, &cs));
    for (int64_t k = 0; k < 1000; k++) {
        cs_obj x;
        MUST(cs_obj_create(t, tb, &x));
        MUST(cs_obj_set_int(&x, cw, wide(k)));
        if (k % 4) MUST(cs_obj_set_int(&x, cn, -k * 7));
        cs_value b = cs_bool(k % 3 == 0);
        MUST(cs_obj_set(&x, cb, &b));
        if (k % 5 == 0 && k > 0) {
            cs_value l = cs_link(tb, k - 1);
            MUST(cs_obj_set(&x, cl, &l));
        }
        char s[32];
        int n = snprintf(s, sizeof s, "n%lld", (long long)k);
        cs_value sv = cs_string(s, (size_t)n);
        MUST(cs_obj_set(&x, cs, &sv));
    }
    MUST(cs_txn_commit(t));
    MUST(cs_txn_end(t));

    MUST(cs_txn_begin(db, CS_TXN_WRITE, &t));
    for (int64_t k = 300; k < 340; k++) {
        cs_obj x;
        MUST(cs_obj_open(t, tb, k, &x));
        MUST(cs_obj_delete(&x));
    }
    for (int64_t k = 700; k < 1000; k += 3) {
        cs_obj x;
        MUST(cs_obj_open(t, tb, k, &x));
        MUST(cs_obj_set_int(&x, cw, -wide(k)));
    }
    MUST(cs_txn_commit(t));
    MUST(cs_txn_end(t));

    MUST(cs_txn_begin(db, CS_TXN_WRITE, &t));
    for (int64_t k = 0; k < 20; k++) {
        cs_obj x;
        MUST(cs_obj_create(t, tb, &x));
        MUST(cs_obj_set_int(&x, cw, INT64_MAX - k));
        MUST(cs_obj_set_int(&x, cn, INT64_MIN + k));
    }
    MUST(cs_txn_commit(t));
    MUST(cs_txn_end(t));

    /* the text: one line per object, in key order */
    MUST(cs_txn_begin(db, CS_TXN_READ, &t));
    cs_iter it;
    cs_obj x;
    MUST(cs_iter_init(&it, t, tb));
    while (cs_iter_next(&it, &x) == CS_OK) {
        cs_value v[5];
        uint32_t cols[5] = {cw, cn, cb, cl, cs};
        for (int i = 0; i < 5; i++) MUST(cs_obj_get(&x, cols[i], &v[i]));
        printf("%lld wide %lld opt ", (long long)x.key, (long long)v[0].v.i);
        if (v[1].type == CS_TYPE_NULL) printf("null");
        else printf("%lld", (long long)v[1].v.i);
        printf(" flag %d link ", v[2].v.b ? 1 : 0);
        if (v[3].type == CS_TYPE_NULL) printf("null");
        else printf("%lld", (long long)v[3].v.link.key);
        printf(" name %.*s\n", (int)v[4].v.bytes.len, (const char *)v[4].v.bytes.ptr);
    }
    MUST(cs_txn_end(t));
    MUST(cs_db_close(db));
    return 0;
}
