/*
 * check.h -- verification (check.c) as the core itself uses it: in CSTORE_INTERNAL_CHECKS builds
 * (`make check-invariants`) every commit is followed by a verification of the version it made
 * (docs/ARCHITECTURE.md, Internal checks). The public entry points are cstore.h's cs_db_verify
 * and cs_file_verify.
 */
#ifndef CSTORE_CHECK_H
#define CSTORE_CHECK_H

#include "internal.h"

#ifdef CSTORE_INTERNAL_CHECKS
/** Whether the version the transaction reads verifies (remembered per file, so a version is
 *  verified once); the thread's error message and errno are left as they were. */
bool check_version(cs_txn *t);
/** After a commit: the version the transaction now reads, which the commit made, must verify
 *  if the version the write started from did (`base_ok`); else the core's own logic broke an
 *  invariant, and this prints the failure and aborts. */
void check_commit(cs_txn *t, bool base_ok);
#endif

#endif
