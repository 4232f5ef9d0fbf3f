/*
 * sqlite_commit_loop.c -- SQLite's side of commit_loop.c (docs/benchmarks/README.md, "The
 * durable commit beyond its sync"): the commit.durable and commit.nosync rows' peer load in C,
 * for strace and perf next to our loop.
 *
 *   cc -O2 -std=c11 -D_GNU_SOURCE -o /tmp/sqlite-commit-loop Benchmarks/commit/sqlite_commit_loop.c -lsqlite3
 *   sqlite-commit-loop build FILE ROWS
 *       a WAL database of ROWS rows of 10 INTEGER columns i0..i9 (row r holds r in each), made
 *       in one transaction at synchronous=OFF, as the bench's SQLiteIntTable.buildFile does;
 *   sqlite-commit-loop run FILE full|normal START COUNT [ROWS]
 *       commits u = START .. START + COUNT - 1, each `UPDATE t SET i0 = -(u + 1) WHERE rowid =
 *       (u mod ROWS) x 7919 mod ROWS + 1` in autocommit at synchronous=FULL or NORMAL (the rows'
 *       settings; ROWS defaults to 1,000,000 and must be what `build` made: an UPDATE that
 *       changes no row stops the loop), then prints the time and CPU time per commit and the
 *       median and p90 commit.
 */
#include <sqlite3.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double cpu(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void ok(int rc, sqlite3 *db, const char *what)
{
    if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return;
    fprintf(stderr, "sqlite-commit-loop: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4 || (strcmp(argv[1], "build") && argc < 6)) {
        fprintf(stderr, "usage: sqlite-commit-loop build FILE ROWS | run FILE full|normal START COUNT [ROWS]\n");
        return 2;
    }
    sqlite3 *db;
    ok(sqlite3_open_v2(argv[2], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL), db,
       "open");
    ok(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), db, "journal_mode");
    if (!strcmp(argv[1], "build")) {
        long rows = atol(argv[3]);
        ok(sqlite3_exec(db, "PRAGMA synchronous=OFF", NULL, NULL, NULL), db, "synchronous");
        ok(sqlite3_exec(db,
                        "CREATE TABLE t(i0 INTEGER NOT NULL, i1 INTEGER NOT NULL, i2 INTEGER NOT NULL, i3 INTEGER "
                        "NOT NULL, i4 INTEGER NOT NULL, i5 INTEGER NOT NULL, i6 INTEGER NOT NULL, i7 INTEGER NOT "
                        "NULL, i8 INTEGER NOT NULL, i9 INTEGER NOT NULL)",
                        NULL, NULL, NULL),
           db, "create");
        ok(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), db, "begin");
        sqlite3_stmt *s;
        ok(sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1, ?1, ?1, ?1, ?1, ?1, ?1, ?1, ?1, ?1)", -1, &s, NULL), db,
           "prepare");
        for (long r = 0; r < rows; r++) {
            sqlite3_bind_int64(s, 1, r);
            ok(sqlite3_step(s), db, "insert");
            sqlite3_reset(s);
        }
        sqlite3_finalize(s);
        ok(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), db, "commit");
        sqlite3_close(db);
        return 0;
    }
    int full = !strcmp(argv[3], "full");
    long start = atol(argv[4]), count = atol(argv[5]), rows = argc > 6 ? atol(argv[6]) : 1000000;
    ok(sqlite3_exec(db, full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", NULL, NULL, NULL), db,
       "synchronous");
    sqlite3_stmt *u;
    ok(sqlite3_prepare_v3(db, "UPDATE t SET i0 = ?1 WHERE rowid = ?2", -1, SQLITE_PREPARE_PERSISTENT, &u, NULL), db,
       "prepare");
    double *took = malloc((size_t)count * sizeof *took);
    if (!took) return 1;
    double t0 = now(), c0 = cpu();
    for (long k = 0; k < count; k++) {
        long x = start + k, rowid = (x % rows) * 7919 % rows + 1;
        double a = now();
        sqlite3_bind_int64(u, 1, -(x + 1));
        sqlite3_bind_int64(u, 2, rowid);
        ok(sqlite3_step(u), db, "update");
        sqlite3_reset(u);
        if (sqlite3_changes(db) != 1) {
            fprintf(stderr, "sqlite-commit-loop: no row %ld (the file has fewer than ROWS rows)\n", rowid);
            return 1;
        }
        took[k] = now() - a;
    }
    double t = now() - t0, c = cpu() - c0;
    qsort(took, (size_t)count, sizeof *took, by_value);
    printf("%ld commits: %.2f us, %.2f us of CPU per commit; median %.2f us, p90 %.2f us\n", count,
           t / (double)count * 1e6, c / (double)count * 1e6, took[count / 2] * 1e6, took[count * 9 / 10] * 1e6);
    sqlite3_finalize(u);
    sqlite3_close(db);
    return 0;
}
