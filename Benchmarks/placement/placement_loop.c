/*
 * placement_loop.c -- the C loop behind the placement figures in docs/benchmarks/README.md and
 * docs/FORMAT.md §7.2: loads ROWS objects of 10 Int columns in one commit (each object created
 * and set on its own), then makes UPDATES commits of one value each, and every EVERY commits
 * prints the logical size against the live bytes, the free space, and the writes, bytes and CPU
 * per commit over those commits (cs_txn_last_commit_io, header write included), with the free
 * extents counted by length. At the end it names the node that follows each free extent shorter
 * than 1,040 bytes (a 256-value leaf at 32 bits), by kind and size.
 *
 * Loads (MODE): 0 values r, updates -u to a random row and column (nearly every update widens
 * its leaf from 8 to 32 bits); 1 values r and -r alternating (updates stay within the frames of
 * all but the first rows' leaves); 2 the bench's commit rows (column 0 of row
 * (u mod ROWS) x 7919 mod ROWS, values -(u + 1)). No syncs: placement does not depend on
 * durability. It reads the core's in-memory free list, so it is built with the core's sources
 * (`make placement-loop`), not against the library.
 *
 *   placement-loop FILE ROWS UPDATES [MODE] [EVERY]
 */
#include "cstore.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static uint64_t rng_state = 16;

/* splitmix64 */
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void must(int rc, const char *what)
{
    if (rc == CS_OK) return;
    fprintf(stderr, "placement-loop: %s failed: %d\n", what, rc);
    exit(1);
}

static double cpu_seconds(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

/* The free extents by length: <64, <128, ... <64K, >=64K bytes. */
static void print_free_lengths(cs_db *db)
{
    const freelist *l = &db->f->fl;
    uint64_t n[12] = {0}, bytes[12] = {0};
    for (uint32_t p = 0; p < l->n; p++)
        for (uint32_t c = 0; c < l->p[p]->n; c++) {
            const fl_chunk *ch = l->p[p]->c[c];
            for (uint32_t e = 0; e < ch->n; e++) {
                uint64_t len = ch->e[e].len;
                if (!len) continue;
                int k = 0;
                while (k < 11 && len >= (64ull << k)) k++;
                n[k]++;
                bytes[k] += len;
            }
        }
    printf("  free extents by length (<64 B, <128 B, ... <64 KiB, more: count/KiB):");
    for (int k = 0; k < 12; k++) printf(" %llu/%llu", (unsigned long long)n[k], (unsigned long long)(bytes[k] / 1024));
    printf("\n");
}

/* What follows each free extent shorter than `below` bytes: the node's kind and size class. */
static void print_small_extent_neighbours(cs_db *db, uint64_t below)
{
    static const char *kinds[] = {"an inner node", "a REFS leaf (a cluster leaf, ...)", "a plain packed node",
                                  "a framed node", "a bytes node", "the logical end"};
    uint64_t n[6][8] = {{0}}, bytes[6][8] = {{0}};
    cs_txn *t;
    must(cs_txn_begin(db, CS_TXN_READ, &t), "cs_txn_begin");
    const freelist *l = &db->f->fl;
    for (uint32_t p = 0; p < l->n; p++)
        for (uint32_t c = 0; c < l->p[p]->n; c++) {
            const fl_chunk *ch = l->p[p]->c[c];
            for (uint32_t e = 0; e < ch->n; e++) {
                extent x = ch->e[e];
                if (!x.len || x.len >= below) continue;
                uint64_t q = x.pos + x.len;
                int k = 5, s = 0;
                if (q < db->f->logical) {
                    const node_hdr *h = (const node_hdr *)(t->map + q);
                    uint64_t size = node_size_of(h->flags, h->width, h->count);
                    k = (h->flags & NF_REFS) ? ((h->flags & NF_INNER) ? 0 : 1)
                        : (h->flags & NF_BASE) ? 3
                        : (h->flags & NF_BYTES) ? 4
                                                : 2;
                    while (s < 7 && size >= (64ull << s)) s++;
                }
                n[k][s]++;
                bytes[k][s] += x.len;
            }
        }
    must(cs_txn_end(t), "cs_txn_end");
    for (int k = 0; k < 6; k++)
        for (int s = 0; s < 8; s++)
            if (n[k][s])
                printf("  free extents under %llu B followed by %s under %llu B: %llu, %llu free bytes\n",
                       (unsigned long long)below, kinds[k], (unsigned long long)(64ull << s), (unsigned long long)n[k][s],
                       (unsigned long long)bytes[k][s]);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: placement-loop FILE ROWS UPDATES [MODE 0|1|2] [EVERY]\n");
        return 2;
    }
    const char *path = argv[1];
    long rows = atol(argv[2]), updates = atol(argv[3]);
    int mode = argc > 4 ? atoi(argv[4]) : 0;
    long every = argc > 5 ? atol(argv[5]) : 10000;
    if (rows < 1 || updates < 0 || every < 1) return 2;
    char lock[4096];
    snprintf(lock, sizeof lock, "%s.lock", path);
    remove(path);
    remove(lock);
    cs_options o = {0};
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_NOSYNC;
    cs_db *db;
    must(cs_db_open(path, &o, &db), "cs_db_open");
    cs_txn *t;
    uint32_t table, cols[10];
    must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
    must(cs_table_add(t, "T", 0, &table), "cs_table_add");
    for (int c = 0; c < 10; c++) {
        char name[8];
        snprintf(name, sizeof name, "i%d", c);
        must(cs_column_add(t, table, name, CS_TYPE_INT, CS_COLL_NONE, 0, 0, &cols[c]), "cs_column_add");
    }
    int64_t first = -1;
    for (long i = 0; i < rows; i++) {
        cs_obj ob;
        must(cs_obj_create(t, table, &ob), "cs_obj_create");
        if (first < 0) first = ob.key;
        int64_t v = (mode == 1 && (i & 1)) ? -(int64_t)i : (int64_t)i;
        for (int c = 0; c < 10; c++) must(cs_obj_set_int(&ob, cols[c], v), "cs_obj_set_int");
    }
    must(cs_txn_commit(t), "cs_txn_commit");
    must(cs_txn_end(t), "cs_txn_end");
    cs_db_stats st;
    must(cs_db_stats_get(db, &st), "cs_db_stats_get");
    printf("loaded %ld objects: logical size %llu\n", rows, (unsigned long long)st.logical_size);
    uint64_t writes = 0, bytes = 0;
    double c0 = cpu_seconds();
    for (long u = 0; u < updates; u++) {
        cs_obj ob;
        must(cs_txn_begin(db, CS_TXN_WRITE, &t), "cs_txn_begin");
        if (mode == 2) {
            must(cs_obj_open(t, table, first + (int64_t)((uint64_t)(u % rows) * 7919 % (uint64_t)rows), &ob), "cs_obj_open");
            must(cs_obj_set_int(&ob, cols[0], -(int64_t)(u + 1)), "cs_obj_set_int");
        } else {
            must(cs_obj_open(t, table, first + (int64_t)(rnd() % (uint64_t)rows), &ob), "cs_obj_open");
            must(cs_obj_set_int(&ob, cols[rnd() % 10], -(int64_t)u), "cs_obj_set_int");
        }
        must(cs_txn_commit(t), "cs_txn_commit");
        uint64_t w, syncs;
        cs_txn_last_commit_io(t, &w, &syncs);
        writes += w;
        bytes += cs_txn_last_commit_bytes(t);
        must(cs_txn_end(t), "cs_txn_end");
        if ((u + 1) % every) continue;
        must(cs_db_stats_get(db, &st), "cs_db_stats_get");
        uint64_t live = st.logical_size - st.free_bytes;
        printf("%ld updates: logical %llu, live %llu (%.4f), free %llu in %llu extents; per commit %.2f writes, %.0f "
               "bytes, %.1f us CPU\n",
               u + 1, (unsigned long long)st.logical_size, (unsigned long long)live, (double)st.logical_size / (double)live,
               (unsigned long long)st.free_bytes, (unsigned long long)st.free_extents, (double)writes / (double)every,
               (double)bytes / (double)every, (cpu_seconds() - c0) * 1e6 / (double)every);
        print_free_lengths(db);
        fflush(stdout);
        writes = bytes = 0;
        c0 = cpu_seconds();
    }
    print_small_extent_neighbours(db, 1040);
    must(cs_db_close(db), "cs_db_close");
    return 0;
}
