/*
 * log.c -- the process-wide log function and level (cstore.h, "Logging"; log.h).
 *
 * Invariants:
 *  1. The level is read without a lock (an atomic int), so a disabled level costs one load.
 *  2. The function and its context are read and replaced together under log_mu, and a
 *     message is delivered after log_mu is released (a log function may take its own locks
 *     or log again without deadlocking); a function replaced by cs_log_set is not called by
 *     messages that start after cs_log_set returns.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

static int log_level = CS_LOG_INFO;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static cs_log_fn log_fn;  /* guarded by log_mu */
static void *log_ctx;     /* guarded by log_mu */

void cs_log_set(cs_log_fn fn, void *ctx)
{
    pthread_mutex_lock(&log_mu);
    log_fn = fn;
    log_ctx = ctx;
    pthread_mutex_unlock(&log_mu);
}

void cs_log_get(cs_log_fn *fn, void **ctx)
{
    pthread_mutex_lock(&log_mu);
    if (fn) *fn = log_fn;
    if (ctx) *ctx = log_ctx;
    pthread_mutex_unlock(&log_mu);
}

void cs_log_set_level(int level)
{
    if (level < CS_LOG_ALL) level = CS_LOG_ALL;
    if (level > CS_LOG_OFF) level = CS_LOG_OFF;
    __atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

int cs_log_level(void) { return __atomic_load_n(&log_level, __ATOMIC_RELAXED); }

bool cs_log_on(int level)
{
    return level >= CS_LOG_TRACE && level < CS_LOG_OFF && level >= cs_log_level();
}

void cs_log_message(int level, const char *category, const char *message)
{
    if (!cs_log_on(level) || !message) return;
    pthread_mutex_lock(&log_mu);
    cs_log_fn fn = log_fn;
    void *ctx = log_ctx;
    pthread_mutex_unlock(&log_mu);
    if (fn) fn(ctx, level, category ? category : LOG_CAT_STORAGE, message);
}

void log_printf(int level, const char *category, const char *fmt, ...)
{
    if (!cs_log_on(level)) return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    cs_log_message(level, category, text);
}
