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
 *   lookup-loop cache FILE huge|small syncs FILE, drops its pages from the page cache (failing if
 *                                     any stay: another process maps them) and reads it back:
 *                                     through a MADV_HUGEPAGE mapping (huge: the page cache then
 *                                     holds 2 MiB folios where the kernel gives them, which any
 *                                     later mapping of the file maps with 2 MiB entries), or a page
 *                                     at a time without readahead (small: 4 KiB folios); prints its
 *                                     own mapping's Rss and FilePmdMapped
 *   lookup-loop collapse FILE         asks for MADV_COLLAPSE on a read-only mapping of FILE
 *   lookup-loop touch FILE N K        in a mode-0 file of N objects, rewrites one object in every
 *                                     K-th leaf and then writes its value back (two commits), so
 *                                     those leaves are copied elsewhere and the values stay
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
#include <limits.h>
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

/* Prints the Rss and FilePmdMapped of the mappings of `path` (its canonical name, as smaps shows
 * it) in this process, or says there is none. */
static void print_mapping(const char *path, const char *what)
{
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        perror(path);
        return;
    }
    FILE *sf = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, found = 0;
    while (sf && fgets(line, sizeof line, sf)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ':') > strchr(line, ' ')) {
            size_t ll = strlen(line), pl = strlen(real);
            in = ll > pl && !strncmp(line + ll - pl - 1, real, pl) && line[ll - pl - 2] == ' ';
            found |= in;
        }
        if (in && (!strncmp(line, "Rss:", 4) || !strncmp(line, "FilePmdMapped:", 14))) printf("%s: %s", what, line);
    }
    if (sf) fclose(sf);
    if (!found) printf("%s: no mapping of %s found\n", what, real);
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
    if (getenv("LOOKUP_SMAPS")) print_mapping(path, "the core's read mapping");
    CK(cs_txn_end(t));
    CK(cs_db_close(db));
    return sum == want ? 0 : 1;
}

/* The page-cache experiment of docs/benchmarks/README.md ("scale.pk.get to 100M"): the core
 * maps its file without advice, and the kernel (6.18, ext4 with large folios) maps a 2 MiB folio
 * of the page cache with one 2 MiB entry whatever the mapping's advice, so which entries a
 * lookup's mapping gets is decided by how the file's pages entered the cache. */
static int cache(const char *path, const char *how)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        return 1;
    }
    size_t len = (size_t)st.st_size, pages = (len + 4095) / 4096;
    /* dirty pages are not dropped: write them first (the driver's build does not sync) */
    if (fdatasync(fd) != 0) perror("fdatasync");
    if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0) fprintf(stderr, "posix_fadvise failed\n");
    unsigned char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *resident = malloc(pages);
    if (p == MAP_FAILED || !resident) {
        perror("mmap");
        return 1;
    }
    size_t left = 0;
    if (mincore(p, len, resident) == 0)
        for (size_t i = 0; i < pages; i++) left += resident[i] & 1;
    free(resident);
    if (left) {
        /* mapped by another process, or still under writeback: the folios stay as they were */
        fprintf(stderr, "%zu of %zu pages of %s are still cached; close what maps it and retry\n", left, pages, path);
        munmap(p, len);
        return 1;
    }
    volatile unsigned char sink = 0;
    if (!strcmp(how, "huge")) {
        if (madvise(p, len, MADV_HUGEPAGE) != 0) perror("madvise(MADV_HUGEPAGE)");
        for (size_t o = 0; o < len; o += 4096) sink += p[o];
        print_mapping(path, "refilled through a MADV_HUGEPAGE mapping");
    } else {
        /* without readahead each page is a folio of its own (sequential reads grow the folios,
         * up to 2 MiB on ext4) */
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
        static unsigned char buf[4096];
        for (off_t o = 0; pread(fd, buf, sizeof buf, o) > 0; o += (off_t)sizeof buf) sink += buf[0];
        for (size_t o = 0; o < len; o += 4096) sink += p[o];
        print_mapping(path, "refilled a page at a time");
    }
    (void)sink;
    munmap(p, len);
    close(fd);
    return 0;
}

/* The MADV_COLLAPSE probe of docs/benchmarks/README.md: asks the kernel to make the file's cached
 * pages 2 MiB folios in place, on a read-only mapping of a file open read-only. */
static int collapse(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        return 1;
    }
    size_t len = (size_t)st.st_size & ~(size_t)((2 << 20) - 1);
    if (!len) {
        fprintf(stderr, "%s is smaller than 2 MiB\n", path);
        close(fd);
        return 2;
    }
    unsigned char *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    volatile unsigned char sink = 0;
    for (size_t o = 0; o < len; o += 4096) sink += p[o];
    (void)sink;
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
    int rc = madvise(p, len, MADV_COLLAPSE);
    if (rc != 0) perror("madvise(MADV_COLLAPSE)");
    else printf("madvise(MADV_COLLAPSE) succeeded\n");
    print_mapping(path, "after MADV_COLLAPSE");
    munmap(p, len);
    close(fd);
    return rc != 0;
}

/* Rewrites, in every k-th leaf of a file made by `build` in mode 0 (256 keys a leaf), the value
 * of one object (key leaf * 256 + 7) and writes it back in a second commit: each such leaf is
 * copied elsewhere twice, its values as before (docs/benchmarks/README.md, "Predicted leaves"). */
static int touch(const char *path, long n, long k)
{
    cs_options o;
    memset(&o, 0, sizeof o);
    o.durability = CS_DURABILITY_NOSYNC;
    cs_db *db;
    cs_txn *t;
    uint32_t tb, v;
    if (k < 1) {
        fprintf(stderr, "touch: K must be at least 1\n");
        return 2;
    }
    CK(cs_db_open(path, &o, &db));
    for (int pass = 0; pass < 2; pass++) {
        CK(cs_txn_begin(db, CS_TXN_WRITE, &t));
        CK(cs_table_find(t, "S", &tb));
        CK(cs_column_find(t, tb, "v", &v));
        for (long leaf = 0; leaf * 256 + 7 < n; leaf += k) {
            int64_t key = leaf * 256 + 7;
            cs_obj ob;
            CK(cs_obj_open(t, tb, key, &ob));
            CK(cs_obj_set_int(&ob, v, pass ? key : key + 1));
        }
        CK(cs_txn_commit(t));
        CK(cs_txn_end(t));
    }
    CK(cs_db_close(db));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "cache")) return cache(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "collapse")) return collapse(argv[2]);
    if (argc >= 5 && !strcmp(argv[1], "touch")) return touch(argv[2], atol(argv[3]), atol(argv[4]));
    if (argc >= 4 && !strcmp(argv[1], "build")) return build(argv[2], atol(argv[3]), argc > 4 ? atoi(argv[4]) : 0);
    if (argc >= 5 && !strcmp(argv[1], "get")) return get(argv[2], atol(argv[3]), atol(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
    fprintf(stderr, "usage: lookup-loop build FILE N [MODE] | get FILE N OPS [MODE] | cache FILE huge|small\n"
                    "       | collapse FILE | touch FILE N K\n");
    return 2;
}
