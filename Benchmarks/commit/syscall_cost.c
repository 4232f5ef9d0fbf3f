/*
 * syscall_cost.c -- what the system calls a durable commit makes besides its sync cost on this
 * machine, in a loop (docs/benchmarks/README.md, "Large folios and the commit's writes"): the
 * size-only statx a write transaction makes on the database file, the writer lock's fcntl
 * pair on the lock file (an OFD lock and its release on one byte, as lock.c took it up to
 * lock-file layout 5; docs/benchmarks/README.md, "The writer lock without system calls"), and
 * getppid for the cost of a system call that does nothing.
 *
 *   cc -O2 -o syscall_cost Benchmarks/commit/syscall_cost.c
 *   ./syscall_cost DBFILE LOCKFILE
 *
 * DBFILE and LOCKFILE are opened, not changed (use a copy when a process has them open).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CALLS 200000

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: syscall_cost DBFILE LOCKFILE\n");
        return 2;
    }
    int fd = open(argv[1], O_RDONLY), lfd = open(argv[2], O_RDWR);
    if (fd < 0 || lfd < 0) {
        perror("open");
        return 1;
    }
    struct statx sx;
    double a = now();
    for (int i = 0; i < CALLS; i++) statx(fd, "", AT_EMPTY_PATH, STATX_SIZE | STATX_BLOCKS, &sx);
    double b = now();
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_whence = SEEK_SET;
    fl.l_start = 1073741826; /* the writer lock's byte up to lock-file layout 5 */
    fl.l_len = 1;
    for (int i = 0; i < CALLS; i++) {
        fl.l_type = F_WRLCK;
        if (fcntl(lfd, F_OFD_SETLKW, &fl) != 0) perror("fcntl");
        fl.l_type = F_UNLCK;
        fcntl(lfd, F_OFD_SETLK, &fl);
    }
    double c = now();
    for (int i = 0; i < CALLS; i++) (void)getppid();
    double d = now();
    printf("statx (size, blocks) %.3f us, fcntl lock and unlock %.3f us, getppid %.3f us\n", (b - a) / CALLS * 1e6,
           (c - b) / CALLS * 1e6, (d - c) / CALLS * 1e6);
    close(fd);
    close(lfd);
    return 0;
}
