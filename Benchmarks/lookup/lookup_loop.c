/*
 * lookup_loop.c -- the C loop behind the lookup figures (docs/benchmarks/README.md, The lookup's
 * cache misses at 10M): random lookups by Int primary key, each cs_table_find_primary,
 * cs_obj_open and a read of the object's value, as the pk.get rows do.
 *
 *   lookup-loop build FILE N [MODE]   creates FILE with N objects of table S (Int primary key
 *                                     `id`, value column `v`), in writes of 1M objects
 *   lookup-loop get FILE N OPS [MODE] OPS lookups of the keys j * 2654435761 mod N (times 3 in
 *                                     mode 2), printing µs per lookup (wall and CPU time) and
 *                                     whether the values read sum as they must; with
 *                                     LOOKUP_SMAPS=1 in the environment also the Rss and
 *                                     FilePmdMapped of the core's read mapping of FILE
 *   lookup-loop cache FILE huge|small drops FILE's pages from the page cache (it must have been
 *                                     synced) and reads it back: through a MADV_HUGEPAGE mapping
 *                                     (huge: the page cache then holds 2 MiB folios where the kernel
 *                                     gives them, which any later mapping of the file maps with
 *                                     2 MiB entries), or a page at a time without readahead
 *                                     (small: 4 KiB folios)
 *
 * MODE 0: primary keys 0 ... N-1 in key order, `v` an Int equal to the key (the scaling rows'
 * data set); 1: primary keys 7919 * i mod N, `v` an Int; 2: primary keys 3 * i; 3: primary keys
 * 7919 * i mod N in one write, `v` an 80-byte binary whose first byte is the key's low byte
 * (pk.get.1M's data set).
 */
#include "cstore.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }

/* The process's CPU time: on a loaded machine the wall time also counts the time other
 * processes held the CPU. */
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int64_t pk_of(long i, long n, int mode)
{
    if (mode == 0) return i;
    if (mode == 2) return 3 * (int64_t)i;
    return (int64_t)((i * 7919L) % n);
}

static int build(const char *path, long n, int mode)
{
    cs_options o;
    memset(&o, 0, sizeof o);
    o.durability = CS_DURABILITY_NOSYNC;
    o.flags = CS_OPEN_CREATE;
    cs_db *db;
    cs_txn *t;
    uint32_t tb, id, v;
    CK(cs_db_open(path, &o, &db));
    CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
    CK(cs_table_add(t, "S", 0, &tb));
    CK(cs_column_add(t, tb, "id", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &id));
    CK(cs_column_add(t, tb, "v", mode == 3 ? CS_TYPE_BINARY : CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &v));
    CK(cs_table_set_primary_key(t, tb, id));
    CK(cs_txn_commit(t));
    CK(cs_txn_end(t));
    long batch = mode == 3 ? n : 1000000;
    for (long s = 0; s < n; s += batch) {
        CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
        for (long i = s; i < n && i < s + batch; i++) {
            int64_t pk = pk_of(i, n, mode);
            cs_value pv = cs_int(pk);
            cs_obj ob;
            CK(cs_obj_create_primary(t, tb, &pv, &ob));
            if (mode == 3) {
                unsigned char blob[80] = {0};
                blob[0] = (unsigned char)pk;
                cs_value bv = cs_binary(blob, sizeof blob);
                CK(cs_obj_set(&ob, v, &bv));
            } else {
                CK(cs_obj_set_int(&ob, v, pk));
            }
        }
        CK(cs_txn_commit(t));
        CK(cs_txn_end(t));
    }
    CK(cs_db_close(db));
    return 0;
}

static int get(const char *path, long n, long ops, int mode)
{
    cs_options o;
    memset(&o, 0, sizeof o);
    cs_db *db;
    cs_txn *t;
    uint32_t tb, v;
    CK(cs_db_open(path, &o, &db));
    CK(cs_txn_begin(db, CS_TXN_READ, &t));
    CK(cs_table_find(t, "S", &tb));
    CK(cs_column_find(t, tb, "v", &v));
    int64_t sum = 0, want = 0;
    double t0 = now(), c0 = cpu_now();
    for (long j = 0; j < ops; j++) {
        int64_t pk = (int64_t)(((unsigned long)j * 2654435761UL) % (unsigned long)n);
        if (mode == 2) pk *= 3;
        cs_value pv = cs_int(pk);
        int64_t key, x;
        cs_obj ob;
        CK(cs_table_find_primary(t, tb, &pv, &key));
        CK(cs_obj_open(t, tb, key, &ob));
        if (mode == 3) {
            cs_value bv;
            CK(cs_obj_get(&ob, v, &bv));
            x = ((const unsigned char *)bv.v.bytes.ptr)[0] + (int64_t)bv.v.bytes.len;
            want += (pk & 255) + 80;
        } else {
            CK(cs_obj_get_int(&ob, v, &x));
            want += pk;
        }
        sum += x;
    }
    double t1 = now(), c1 = cpu_now();
    printf("%ld lookups: %.3f us/lookup (CPU time %.3f), values %s\n", ops, (t1 - t0) * 1e6 / (double)ops,
           (c1 - c0) * 1e6 / (double)ops, sum == want ? "ok" : "WRONG");
    if (getenv("LOOKUP_SMAPS")) {
        FILE *sf = fopen("/proc/self/smaps", "r");
        char line[512];
        int in = 0;
        while (sf && fgets(line, sizeof line, sf)) {
            unsigned long lo, hi;
            if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ':') > strchr(line, ' ')) {
                size_t ll = strlen(line), pl = strlen(path);
                in = ll > pl && !strncmp(line + ll - pl - 1, path, pl);
            }
            if (in && (strstr(line, "Rss") || strstr(line, "FilePmdMapped"))) fputs(line, stdout);
        }
        if (sf) fclose(sf);
    }
    CK(cs_txn_end(t));
    CK(cs_db_close(db));
    return sum == want ? 0 : 1;
}

/* The page-cache experiment of docs/benchmarks/README.md ("Huge pages, prefetches and the
 * lookup's floor"): the core maps its file without advice, and the kernel maps a 2 MiB folio of
 * the page cache with one 2 MiB entry whatever the mapping's advice, so which entries a lookup's
 * mapping gets is decided by how the file's pages entered the cache. */
static int cache(const char *path, const char *how)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        return 1;
    }
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) fprintf(stderr, "posix_fadvise failed\n");
    size_t len = (size_t)st.st_size;
    volatile unsigned char sink = 0;
    if (!strcmp(how, "huge")) {
        unsigned char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        if (madvise(p, len, MADV_HUGEPAGE) != 0) perror("madvise(MADV_HUGEPAGE)");
        for (size_t o = 0; o < len; o += 4096) sink += p[o];
        munmap(p, len);
    } else {
        /* without readahead each page is a folio of its own (sequential reads grow the folios,
         * up to 2 MiB on ext4) */
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        static unsigned char buf[4096];
        for (off_t o = 0; pread(fd, buf, sizeof buf, o) > 0; o += (off_t)sizeof buf) sink += buf[0];
    }
    (void)sink;
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "cache")) return cache(argv[2], argv[3]);
    if (argc >= 4 && !strcmp(argv[1], "build")) return build(argv[2], atol(argv[3]), argc > 4 ? atoi(argv[4]) : 0);
    if (argc >= 5 && !strcmp(argv[1], "get")) return get(argv[2], atol(argv[3]), atol(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
    fprintf(stderr, "usage: lookup-loop build FILE N [MODE] | get FILE N OPS [MODE] | cache FILE huge|small\n");
    return 2;
}
