/*
 * log.h -- reporting the core's work through the process-wide log function (cstore.h,
 * "Logging"). For the core's own files: cs_log_on() is the cheap test before a message is
 * formatted, log_printf() formats and delivers one.
 */
#ifndef CSTORE_LOG_H
#define CSTORE_LOG_H

#include "cstore.h"

#include <stdbool.h>

/** Whether messages of `level` are delivered now (one relaxed atomic load). */
bool cs_log_on(int level);
/** Formats and delivers one message, if its level passes. */
void log_printf(int level, const char *category, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define LOG_CAT_STORAGE "Realm.Storage"
#define LOG_CAT_TRANSACTION "Realm.Storage.Transaction"

#endif
