/*
 * folio_sync.c -- what a sync writes after a one-byte store into a file's page cache, by the
 * size of the folio the store lands in (docs/benchmarks/README.md, "scale.pk.get to 100M: huge
 * pages, prefetches and the lookup's floor"): the reason the core's read mapping takes no
 * huge-page advice.
 *
 *   gcc -O2 -o folio_sync Benchmarks/lookup/folio_sync.c
 *   ./folio_sync FILE CHUNK_KIB [reread] [DISK]
 *
 * Makes FILE 16 MiB (fallocate), fills it with pwrites of CHUNK_KIB each (4096: the page cache
 * then holds 2 MiB folios on ext4 with large folios; 4: 4 KiB folios) and syncs it; with
 * `reread`, drops its pages and reads them back with pread and readahead (which grows the
 * folios). Then five times: a one-byte store through a shared writable mapping and fdatasync;
 * and once a one-byte pwrite and fdatasync. For each it prints the sectors the whole disk DISK
 * (default vda, /sys/block/DISK/stat) wrote meanwhile, other processes' writes included.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const char *disk = "vda";

/* Sectors written by the disk since boot (the seventh field of its stat file). */
static long disk_sectors(void)
{
    char path[128];
    snprintf(path, sizeof path, "/sys/block/%s/stat", disk);
    FILE *f = fopen(path, "r");
    long v[7] = {0};
    if (!f || fscanf(f, "%ld %ld %ld %ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) != 7) {
        if (f) fclose(f);
        return -1;
    }
    fclose(f);
    return v[6];
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: folio_sync FILE CHUNK_KIB [reread] [DISK]\n");
        return 2;
    }
    const char *path = argv[1];
    size_t chunk = (size_t)atol(argv[2]) << 10, size = (size_t)16 << 20;
    bool reread = argc > 3 && !strcmp(argv[3], "reread");
    if (argc > 4) disk = argv[4];
    if (chunk == 0 || size % chunk) return 2;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || fallocate(fd, 0, 0, (off_t)size) != 0) {
        perror(path);
        return 1;
    }
    char *buf = malloc(chunk);
    if (!buf) return 1;
    memset(buf, 7, chunk);
    for (size_t o = 0; o < size; o += chunk)
        if (pwrite(fd, buf, chunk, (off_t)o) != (ssize_t)chunk) return 1;
    if (fsync(fd) != 0) return 1;
    if (reread) {
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        char rb[1 << 16];
        for (off_t o = 0; pread(fd, rb, sizeof rb, o) > 0; o += (off_t)sizeof rb) {
        }
    }
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    (void)madvise(p, size, MADV_RANDOM); /* as the core's writable mapping (mapwrite.c) */
    for (int k = 0; k < 5; k++) {
        long s0 = disk_sectors();
        p[((size_t)5 << 20) + (size_t)k * (1 << 20) + 100] = (char)k;
        if (fdatasync(fd) != 0) return 1;
        long s1 = disk_sectors();
        printf("chunk %zu KiB%s: a stored byte, then fdatasync: the disk wrote %ld KiB\n", chunk >> 10,
               reread ? ", read back" : "", (s1 - s0) / 2);
    }
    long s0 = disk_sectors();
    if (pwrite(fd, "x", 1, ((off_t)3 << 20) + 5) != 1 || fdatasync(fd) != 0) return 1;
    printf("chunk %zu KiB%s: a pwritten byte, then fdatasync: the disk wrote %ld KiB\n", chunk >> 10,
           reread ? ", read back" : "", (disk_sectors() - s0) / 2);
    munmap(p, size);
    close(fd);
    unlink(path);
    free(buf);
    return 0;
}
