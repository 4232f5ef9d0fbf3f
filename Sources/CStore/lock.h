/*
 * lock.h -- the lock file `<file>.lock` (lock.c, docs/FORMAT.md §9): the newest version shared
 * between processes, the writer lock, reader slots and the pins they publish.
 */
#ifndef CSTORE_LOCK_H
#define CSTORE_LOCK_H

#include "internal.h"

int lock_open(cs_dbfile *f, bool readonly, uint64_t version, uint64_t top, uint64_t logical, int sel);
/** Releases the lock file: this process's slot, its locks and, when no other process has the file
 *  open, the shared state (true then). In a child forked with the file open (lock_inherited) only
 *  the child's mapping and descriptor, never what the parent shares (false). */
bool lock_close(cs_dbfile *f);
/** Registers the fork handlers (once per process; before the first open takes the file list's
 *  mutex, which the prepare handler takes). */
void lock_fork_init(void);
/** Records that `f` is opened by this process (before anything else of it: the open's first
 *  step). */
void lock_fork_mark(cs_dbfile *f);
/** In a forked child: drops the child's copies of an inherited file's lock-file descriptor and
 *  mapping (munmap and close only; async-signal-safe). */
void lock_fork_drop(cs_dbfile *f);
/** The process's fork generation (lock.c; changed only by the pthread_atfork child handler). */
extern uint32_t lock_fork_gen;
/** True in a child forked while `f` was open (a handle inherited across fork): its lock file,
 *  slot, locks and pins are the parent's, so it may only be closed (docs/ARCHITECTURE.md,
 *  Processes). One load and a compare. */
static inline bool lock_inherited(const cs_dbfile *f)
{
    return f->fork_gen != __atomic_load_n(&lock_fork_gen, __ATOMIC_RELAXED);
}
/** The CS_MISUSE of lock_refuse_inherited. */
int lock_inherited_misuse(const cs_dbfile *f, const char *what);
/** CS_MISUSE with a message naming `what` when `f` is inherited across fork, else CS_OK. */
static inline int lock_refuse_inherited(const cs_dbfile *f, const char *what)
{
    return lock_inherited(f) ? lock_inherited_misuse(f, what) : CS_OK;
}
/** Takes the lock file's set-up lock for `path` (waiting for whoever holds it: a process creating
 *  the database), opening the lock file (creating it when `create`). *fd is -1 when there is no
 *  lock file to use (a read-only open without one); release with lock_creation_end. */
int lock_creation_begin(const char *path, bool create, int *fd);
/** Drops what lock_creation_begin took. */
void lock_creation_end(int fd);
/** Takes the lock file's set-up lock as lock_creation_begin does and says whether no other
 *  process has the file open (*alone; true without a lock file). Release with
 *  lock_creation_end. */
int lock_join_alone(const char *path, bool create, int *fd, bool *alone);
/** The journal's shared state in the lock file (NULL without one). */
struct journal_shared *lock_journal(cs_dbfile *f);
void lock_read_latest(cs_dbfile *f);
uint64_t lock_latest_version(cs_dbfile *f);
void lock_publish(cs_dbfile *f);
/** Counts the calling thread as sleeping on the commit counter (the lock file's sleepers) until
 *  lock_sleep_end, so that commits wake it; `sleeping` (NULL: none): a notifier's flag, set
 *  meanwhile, by which a commit sparing that notifier (cs_txn_commit_sparing) knows it sleeps. */
void lock_sleep_begin(cs_dbfile *f, bool *sleeping);
void lock_sleep_end(cs_dbfile *f, bool *sleeping);
void lock_committing(cs_dbfile *f);
uint32_t lock_commit_counter(cs_dbfile *f);
/** The commit counter's futex word in the shared lock file (NULL without a lock file). */
uint32_t *lock_commit_word(cs_dbfile *f);
void lock_publish_pins(cs_dbfile *f, const pinrange *r, bool fence);
/** Marks this process's published range idle: no transaction uses it, a writer may revoke it. */
void lock_pins_idle(cs_dbfile *f);
/** Takes an idle range back: false when a writer revoked it (publish it again before use). */
bool lock_pins_reclaim(cs_dbfile *f);
int lock_collect_pins(cs_dbfile *f, pinrange **out, size_t *n);
uint64_t lock_oldest_pin(cs_dbfile *f, uint64_t latest);
int lock_reader_info(cs_dbfile *f, uint32_t *processes, uint64_t *oldest);
/** Takes the writer lock. *recover: the last writer died between its header write and
 *  publishing its version (invariant 3); the caller then reads the newest version from the
 *  header and hands it to lock_writer_recovered, or releases the lock (file_writer_acquire). */
int lock_writer_acquire(cs_dbfile *f, bool *recover);
/** Publishes the version read from the header after lock_writer_acquire asked to recover. */
void lock_writer_recovered(cs_dbfile *f, uint64_t version, uint64_t top, uint64_t logical, int sel);
void lock_writer_release(cs_dbfile *f);
/** Takes f->write_mu, the single writer among the process's threads (waits while another thread
 *  holds it); any thread may release it with lock_write_give. */
void lock_write_take(uint32_t *w);
void lock_write_give(uint32_t *w);
/** Makes this process the file's only user until it closes the file: takes LK_INIT (new
 *  processes wait to join) and LK_USERS exclusively. CS_BUSY naming the other processes' pids
 *  (from their reader slots) when another process has the file open. */
int lock_take_alone(cs_dbfile *f);

#endif
