/*
 * fixed_clock.c -- a preload for comparing what two builds of the core write (docs/benchmarks/
 * README.md, "Placement's queries"): it answers every CLOCK_REALTIME read and time() with one
 * fixed time, so the commit times the change history records are the same in both runs and two
 * files made by the same commits compare equal byte for byte, but for the file's random id in
 * the header (bytes 145-160 once a journaled commit has set it). Other clocks pass through.
 *
 *   cc -shared -fPIC -O2 -o fixed_clock.so Benchmarks/commit/fixed_clock.c -ldl
 *   LD_PRELOAD=./fixed_clock.so .build/commit-loop/commit-loop run FILE nosync 0 3000
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

#define FIXED_SECONDS 1700000000

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    if (id == CLOCK_REALTIME) {
        ts->tv_sec = FIXED_SECONDS;
        ts->tv_nsec = 0;
        return 0;
    }
    if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    return real(id, ts);
}

time_t time(time_t *t)
{
    if (t) *t = FIXED_SECONDS;
    return FIXED_SECONDS;
}
