/*
 * replay_time.c -- the replay of a generation of one-row commits (docs/benchmarks/README.md,
 * Replay of a generation): how long an open takes that replays the journal a crash left.
 *
 *   replay-time crash FILE ROWS COMMITS   a file of ROWS objects of 10 Ints (NOSYNC), then
 *                                         COMMITS journaled (FULL) one-row commits as
 *                                         commit_loop.c makes them; FILE.crash and
 *                                         FILE.crash.journal are the file and its journal
 *                                         before the last close (a crash)
 *   replay-time replay FILE REPS          REPS times: the crash copied to FILE.r, then opened
 *                                         (the replay, its sync, the journal's new header),
 *                                         timed; callgrind instrumentation around the open
 */
#include "cstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    fprintf(stderr, "replay-time: %s failed: %d (%s)\n", what, rc, cs_errmsg());
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void copy(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (!in || !out) {
        perror(in ? to : from);
        exit(1);
    }
    static char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, n, out) != n) {
            perror(to);
            exit(1);
        }
    fclose(in);
    if (fclose(out) != 0) {
        perror(to);
        exit(1);
    }
}

static int crash(const char *path, long rows, long commits)
{
    char a[4096], b[4096];
    remove(path);
    snprintf(a, sizeof a, "%s.lock", path);
    remove(a);
    snprintf(a, sizeof a, "%s.journal", path);
    remove(a);
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
    o.flags = 0;
    o.durability = CS_DURABILITY_FULL;
    must(cs_db_open(path, &o, &db), "cs_db_open");
    for (long u = 0; u < commits; u++) {
        cs_obj ob;
        must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
        must(cs_obj_open(t, table, first + (int64_t)((uint64_t)(u % rows) * 7919 % (uint64_t)rows), &ob), "cs_obj_open");
        must(cs_obj_set_int(&ob, cols[0], -(int64_t)(u + 1)), "cs_obj_set_int");
        must(cs_txn_commit(t), "cs_txn_commit");
        must(cs_txn_end(t), "cs_txn_end");
    }
    snprintf(a, sizeof a, "%s.crash", path);
    copy(path, a);
    snprintf(a, sizeof a, "%s.journal", path);
    snprintf(b, sizeof b, "%s.crash.journal", path);
    copy(a, b);
    uint64_t records = 0, bytes = 0;
    must(cs_file_journal_info(path, &records, &bytes), "cs_file_journal_info");
    must(cs_db_close(db), "cs_db_close");
    printf("%ld objects, %ld commits: %llu records, %llu bytes of records\n", rows, commits,
           (unsigned long long)records, (unsigned long long)bytes);
    return 0;
}

static int replay(const char *path, int reps)
{
    char src[4096], dst[4096], a[4096], b[4096];
    snprintf(src, sizeof src, "%s.crash", path);
    snprintf(dst, sizeof dst, "%s.r", path);
    for (int r = 0; r < reps; r++) {
        remove(dst);
        snprintf(a, sizeof a, "%s.lock", dst);
        remove(a);
        copy(src, dst);
        snprintf(a, sizeof a, "%s.journal", src);
        snprintf(b, sizeof b, "%s.journal", dst);
        copy(a, b);
        cs_options o;
        memset(&o, 0, sizeof o);
        o.durability = CS_DURABILITY_FULL;
        cs_db *db;
        double t0 = now();
        CALLGRIND_START_INSTRUMENTATION;
        must(cs_db_open(dst, &o, &db), "cs_db_open");
        CALLGRIND_STOP_INSTRUMENTATION;
        double t1 = now();
        printf("replay of %llu commits: %.2f ms", (unsigned long long)cs_db_recovered_commits(db), (t1 - t0) * 1e3);
#ifdef REPLAY_IMAGE /* the library's test hook, where it has one (-DREPLAY_IMAGE) */
        uint64_t pages, bytes;
        cs_test_replay_image(&pages, &bytes);
        printf(", an image of %llu pages (%llu bytes)", (unsigned long long)pages, (unsigned long long)bytes);
#endif
        printf("\n");
        must(cs_db_verify(db), "cs_db_verify");
        must(cs_db_close(db), "cs_db_close");
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "crash")) return crash(argv[2], atol(argv[3]), atol(argv[4]));
    if (argc == 4 && !strcmp(argv[1], "replay")) return replay(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: replay-time crash FILE ROWS COMMITS\n       replay-time replay FILE REPS\n");
    return 2;
}
