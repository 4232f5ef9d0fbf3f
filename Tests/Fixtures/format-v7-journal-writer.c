/*
 * format-v7-journal-writer.c -- writes Tests/Fixtures/format-v7-journal.cstore and its journal
 * format-v7-journal.cstore.journal (GoldenFileTests, docs/FORMAT.md §13): a file at format
 * version 7 whose journal (layout 1, records of bytes only) holds commits a power cut left in it.
 * The pair was made by compiling this file against the version-7 library (commit 192bc6a, the
 * last one before format version 8) and running it:
 *
 *   cc -O1 -D_GNU_SOURCE -I Sources/CStore/include Tests/Fixtures/format-v7-journal-writer.c \
 *      Sources/CStore/<all .c> -lpthread -llz4 -lm -o v7writer && ./v7writer format-v7-journal.cstore
 *
 * Contents: table T (v: Int, s: String) with 400 objects (v = i, s = "row i") made in one
 * NOSYNC commit and closed; then, in a FULL session, 12 journaled commits, the k-th (k = 1 ...
 * 12) setting v = -k on every 37th object from k below 380 and deleting object 380 + k. The database file
 * is copied aside after the session's first commit (as a power cut that lost the in-place writes
 * of the later eleven would leave it), the process then ends without closing (its journal keeps
 * all twelve records), and the copy and the journal, cut after its last record, are the pair.
 * Replayed, the file holds the twelfth commit: 388 objects, the sum of v 79,800 less what the
 * commits changed (the test computes it).
 */
#include "cstore.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MUST(x)                                                                      \
    do {                                                                             \
        int rc_ = (x);                                                               \
        if (rc_ != CS_OK) {                                                          \
            fprintf(stderr, "%s failed: %d %s\n", #x, rc_, cs_errmsg());             \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static void copy(const char *from, const char *to, long upto)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    if (!a || !b) exit(1);
    char buf[65536];
    long done = 0;
    size_t n;
    while ((upto < 0 || done < upto) && (n = fread(buf, 1, sizeof buf, a)) > 0) {
        if (upto >= 0 && done + (long)n > upto) n = (size_t)(upto - done);
        fwrite(buf, 1, n, b);
        done += (long)n;
    }
    fclose(a);
    fclose(b);
}

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    char work[4096], tmp[4096];
    snprintf(work, sizeof work, "%s.work", argv[1]);
    const char *aside[] = {"", ".lock", ".journal"};
    for (int i = 0; i < 3; i++) {
        snprintf(tmp, sizeof tmp, "%s%s", work, aside[i]);
        remove(tmp);
    }
    cs_options o = {0};
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_NOSYNC;
    cs_db *db;
    cs_txn *t;
    uint32_t table, v, s;
    MUST(cs_db_open(work, &o, &db));
    MUST(cs_txn_begin(db, CS_TXN_WRITE, &t));
    MUST(cs_table_add(t, "T", 0, &table));
    MUST(cs_column_add(t, table, "v", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &v));
    MUST(cs_column_add(t, table, "s", CS_TYPE_STRING, CS_COLL_NONE, 0, CS_NONE, &s));
    for (int i = 0; i < 400; i++) {
        cs_obj ob;
        char text[32];
        snprintf(text, sizeof text, "row %d", i);
        MUST(cs_obj_create(t, table, &ob));
        MUST(cs_obj_set_int(&ob, v, i));
        cs_value sv = {.type = CS_TYPE_STRING};
        sv.v.bytes.ptr = text;
        sv.v.bytes.len = strlen(text);
        MUST(cs_obj_set(&ob, s, &sv));
    }
    MUST(cs_txn_commit(t));
    MUST(cs_txn_end(t));
    MUST(cs_db_close(db));

    o.flags = 0;
    o.durability = CS_DURABILITY_FULL;
    MUST(cs_db_open(work, &o, &db));
    for (int k = 1; k <= 12; k++) {
        MUST(cs_txn_begin(db, CS_TXN_WRITE, &t));
        for (int i = k; i < 380; i += 37) {
            cs_obj ob;
            MUST(cs_obj_open(t, table, i, &ob));
            MUST(cs_obj_set_int(&ob, v, -k));
        }
        cs_obj d;
        MUST(cs_obj_open(t, table, 380 + k, &d));
        MUST(cs_obj_delete(&d));
        MUST(cs_txn_commit(t));
        MUST(cs_txn_end(t));
        if (k == 1) copy(work, argv[1], -1);
    }
    /* the journal up to the end of its last record: records from 4096, each its length at 24 */
    snprintf(tmp, sizeof tmp, "%s.journal", work);
    int fd = open(tmp, O_RDONLY);
    long end = 4096;
    for (;;) {
        unsigned char h[32];
        if (pread(fd, h, 32, end) != 32 || memcmp(h, "CSJREC\r\n", 8) != 0) break;
        long len = 0;
        for (int b = 0; b < 8; b++) len |= (long)h[24 + b] << (8 * b);
        if (len < 64) break;
        end += len;
    }
    close(fd);
    char out[4096];
    snprintf(out, sizeof out, "%s.journal", argv[1]);
    copy(tmp, out, end);
    printf("%s: journal of %ld bytes\n", argv[1], end);
    _exit(0);
}
