/*
 * error.c -- the error API (cstore.h: cs_errmsg, cs_errno, cs_errstr) and the recording of
 * failures inside the core (error.h: cs_fail, CORRUPT, NOMEM, cs_assert).
 *
 * Invariants:
 *  1. The message and errno of a failure belong to the thread that failed: a cs_db is shared
 *     between threads, so a message kept on it could be overwritten before it is read.
 *  2. Recording a failure never allocates (it runs when memory is exhausted).
 */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char err_msg[512];
static _Thread_local int err_errno;
static _Thread_local char err_path[256];
static _Thread_local uint64_t err_count;

const char *cs_errmsg(void) { return err_msg; }
int cs_errno(void) { return err_errno; }
const char *cs_errpath(void) { return err_path; }

_Static_assert(sizeof((cs_err_saved *)0)->msg == sizeof err_msg && sizeof((cs_err_saved *)0)->path == sizeof err_path,
               "cs_err_saved holds the record");

void cs_err_save(cs_err_saved *s)
{
    memcpy(s->msg, err_msg, strlen(err_msg) + 1);
    s->err = err_errno;
    memcpy(s->path, err_path, strlen(err_path) + 1);
}

void cs_err_restore(const cs_err_saved *s)
{
    memcpy(err_msg, s->msg, strlen(s->msg) + 1);
    err_errno = s->err;
    memcpy(err_path, s->path, strlen(s->path) + 1);
}

uint64_t cs_err_count(void) { return err_count; }

void cs_err_clear(void)
{
    err_msg[0] = 0;
    err_errno = 0;
    err_path[0] = 0;
}

int cs_corrupt_in(const char *path, int rc)
{
    snprintf(err_path, sizeof err_path, "%s", path ? path : "");
    return rc;
}

int cs_fail(int code, int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    err_errno = err;
    err_path[0] = 0;
    err_count++;
    return code;
}

int cs_corrupt_at(const char *file, int line, const char *fmt, ...)
{
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    const char *base = strrchr(file, '/');
    snprintf(err_msg, sizeof err_msg, "database corrupt: %s (detected at %s:%d)", buf,
             base ? base + 1 : file, line);
    err_errno = 0;
    err_path[0] = 0;
    err_count++;
    return CS_CORRUPT;
}

int cs_nomem(void) { return cs_fail(CS_NOMEM, ENOMEM, "out of memory"); }

void cs_assert_fail(const char *expr, const char *file, int line, const char *fmt, ...)
{
    const char *base = strrchr(file, '/');
    fprintf(stderr, "cstore: assertion failed: %s", expr);
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(" (", stderr);
        vfprintf(stderr, fmt, ap);
        fputs(")", stderr);
        va_end(ap);
    }
    fprintf(stderr, " at %s:%d\n", base ? base + 1 : file, line);
    fflush(stderr);
    abort();
}

const char *cs_errstr(int code)
{
    static const char *names[] = {"CS_OK", "CS_NOTFOUND", "CS_CORRUPT", "CS_FULL", "CS_IOERR",
                                  "CS_READONLY", "CS_PERM", "CS_BUSY", "CS_MISUSE", "CS_VERSION",
                                  "CS_CONSTRAINT", "CS_QUERY", "CS_NOMEM", "CS_TYPE", "CS_RANGE",
                                  "CS_EXISTS", "CS_OVERFLOW", "CS_INTERNAL"};
    if (code < 0 || code >= (int)(sizeof names / sizeof names[0])) return "CS_UNKNOWN";
    return names[code];
}
