/*
 * folio_sync.c -- what a sync writes after a one-byte store into a file's page cache, by the
 * size of the folio the store lands in (docs/benchmarks/README.md, "scale.pk.get to 100M"): one
 * reason the core's read mapping takes no huge-page advice.
 *
 *   gcc -O2 -o folio_sync Benchmarks/lookup/folio_sync.c
 *   ./folio_sync FILE CHUNK_KIB [reread]
 *
 * Makes FILE 16 MiB (fallocate; an existing FILE is overwritten, and removed at the end), fills
 * it with pwrites of CHUNK_KIB each (4096: the page cache then holds 2 MiB folios on ext4 with
 * large folios; 4: 4 KiB folios) and syncs it; with
 * `reread`, drops its pages and reads them back with pread and readahead (which grows the
 * folios). Then five times: a one-byte store through a shared writable mapping and fdatasync;
 * and once a one-byte pwrite and fdatasync. For each it prints what the block device that holds
 * FILE (/sys/dev/block/MAJOR:MINOR/stat, a partition's own counts) wrote meanwhile: other
 * processes' writes to that device are included, so run it where nothing else writes (a
 * loop-mounted file system of its own) for exact figures.
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
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static char stat_path[128];

/* Sectors written by the device since boot (the seventh field of its stat file); -1 when it
 * cannot be read. */
static long disk_sectors(void)
{
    FILE *f = fopen(stat_path, "r");
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
        fprintf(stderr, "usage: folio_sync FILE CHUNK_KIB [reread]\n");
        return 2;
    }
    const char *path = argv[1];
    size_t chunk = (size_t)atol(argv[2]) << 10, size = (size_t)16 << 20;
    bool reread = argc > 3 && !strcmp(argv[3], "reread");
    if (chunk == 0 || size % chunk) return 2;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        return 1;
    }
    snprintf(stat_path, sizeof stat_path, "/sys/dev/block/%u:%u/stat", major(st.st_dev), minor(st.st_dev));
    if (disk_sectors() < 0) {
        fprintf(stderr, "cannot read %s (the device of %s)\n", stat_path, path);
        close(fd);
        unlink(path);
        return 1;
    }
    if (fallocate(fd, 0, 0, (off_t)size) != 0) {
        perror(path);
        close(fd);
        unlink(path);
        return 1;
    }
    char *buf = malloc(chunk);
    if (!buf) goto fail;
    memset(buf, 7, chunk);
    for (size_t o = 0; o < size; o += chunk)
        if (pwrite(fd, buf, chunk, (off_t)o) != (ssize_t)chunk) goto fail;
    if (fsync(fd) != 0) goto fail;
    if (reread) {
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        char rb[1 << 16];
        for (off_t o = 0; pread(fd, rb, sizeof rb, o) > 0; o += (off_t)sizeof rb) {
        }
    }
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        goto fail;
    }
    (void)madvise(p, size, MADV_RANDOM); /* as the core's writable mapping (mapwrite.c) */
    for (int k = 0; k < 5; k++) {
        long s0 = disk_sectors();
        p[((size_t)5 << 20) + (size_t)k * (1 << 20) + 100] = (char)k;
        if (fdatasync(fd) != 0) goto fail;
        long s1 = disk_sectors();
        printf("chunk %zu KiB%s: a stored byte, then fdatasync: the disk wrote %ld KiB\n", chunk >> 10,
               reread ? ", read back" : "", (s1 - s0) / 2);
    }
    long s0 = disk_sectors();
    if (pwrite(fd, "x", 1, ((off_t)3 << 20) + 5) != 1 || fdatasync(fd) != 0) goto fail;
    printf("chunk %zu KiB%s: a pwritten byte, then fdatasync: the disk wrote %ld KiB\n", chunk >> 10,
           reread ? ", read back" : "", (disk_sectors() - s0) / 2);
    munmap(p, size);
    close(fd);
    unlink(path);
    free(buf);
    return 0;
fail:
    close(fd);
    unlink(path);
    return 1;
}
