/*
 * error.h -- how the core reports a failure and states its own invariants (error.c).
 *
 * Every internal function returns an int from cstore.h's codes (CS_OK = 0). The message and the
 * OS errno of the failure are kept per thread (cs_errmsg, cs_errno), written by cs_fail and its
 * two shorthands: CORRUPT(...) for anything wrong with bytes read from a file (it records the
 * file and line of the check, as docs/ARCHITECTURE.md, Errors and untrusted bytes, describes)
 * and NOMEM() for a failed allocation. Private to the core.
 *
 * cs_assert(x) and cs_assert3(a, op, b) are for the core's own logic only (never for file
 * bytes, which are checked and reported as CS_CORRUPT): they are compiled into builds without
 * optimisation (the debug builds the tests run) and into CSTORE_INTERNAL_CHECKS builds, and
 * abort with the expression, its operands and the place when it does not hold.
 */
#ifndef CSTORE_ERROR_H
#define CSTORE_ERROR_H

#include "cstore.h"

/** Records code's message (printf-style) and errno `err` for this thread; returns `code`. */
int cs_fail(int code, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** Records CS_CORRUPT with the source location of the check that found it. */
#define CORRUPT(...) cs_corrupt_at(__FILE__, __LINE__, __VA_ARGS__)
int cs_corrupt_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** Records the file a CS_CORRUPT just recorded was found in (cs_errpath); returns rc. */
int cs_corrupt_in(const char *path, int rc);
/** Records CS_NOMEM ("out of memory", errno ENOMEM); returns CS_NOMEM. */
#define NOMEM() cs_nomem()
int cs_nomem(void);

/** The thread's record of its last failure (cs_errmsg, cs_errno, cs_errpath). A call that fails
 *  inside and recovers (a commit made without the journal, docs/FORMAT.md §13, Commit) saves it
 *  first and puts it back when it succeeds, so that its own failure is not taken for the last
 *  failure of a call. */
typedef struct cs_err_saved {
    char msg[512];
    int err;
    char path[256];
} cs_err_saved;
void cs_err_save(cs_err_saved *s);
void cs_err_restore(const cs_err_saved *s);
/** A count of the failures recorded on this thread (one load: for a hot path that cannot pay for
 *  cs_err_save, to learn whether a call it recovered from failed inside). */
uint64_t cs_err_count(void);
/** Clears the thread's failure record (cs_errmsg ""), for such a path. */
void cs_err_clear(void);

/** Returns from the calling function with expr's code when it is not CS_OK. */
#define TRY(expr)                     \
    do {                              \
        int rc_ = (expr);             \
        if (rc_ != CS_OK) return rc_; \
    } while (0)

#if defined(CSTORE_INTERNAL_CHECKS) || (!defined(NDEBUG) && !defined(__OPTIMIZE__))
#define CS_ASSERTS 1
#else
#define CS_ASSERTS 0
#endif

/** Prints the failed assertion and where, then aborts (error.c). */
_Noreturn void cs_assert_fail(const char *expr, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#if CS_ASSERTS
/** Aborts when x is false: an invariant of the core's own logic does not hold. */
#define cs_assert(x) ((x) ? (void)0 : cs_assert_fail(#x, __FILE__, __LINE__, NULL))
/** Aborts when `a op b` is false, printing both operands (integers), as `cs_assert3(n, <=, max)`. */
#define cs_assert3(a, op, b)                                                                       \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (!(a_ op b_)) cs_assert_fail(#a " " #op " " #b, __FILE__, __LINE__, "%lld " #op " %lld", a_, b_); \
    } while (0)
#else
#define cs_assert(x) ((void)0)
#define cs_assert3(a, op, b) ((void)0)
#endif

#endif
