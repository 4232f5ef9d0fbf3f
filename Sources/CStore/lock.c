/*
 * lock.c -- the lock file `<file>.lock` that processes sharing a database map together
 * (docs/FORMAT.md §9): the newest version, the reader slots that pin versions, the commit
 * counter, and the byte-range locks that make the single writer and liveness work across
 * processes.
 *
 * Locks are open-file-description (OFD) byte-range locks on the lock file: they belong to the
 * descriptor, not to a thread, and the kernel drops them when the process dies, so a dead
 * reader's slot is recognisable.
 *
 *   LK_INIT          exclusive while a process sets the file up or joins it
 *   LK_USERS         shared by every process with the file open (exclusive = alone)
 *   LK_SLOT + i      exclusive while a process owns reader slot i
 *
 * The writer lock is a word in the shared header (`writer`), taken with one compare-and-swap:
 * it names the owning process by its reader slot and by the claim that made the slot its own
 * (a number no other claim of this lock file's session has), so the owner's liveness is the
 * slot's byte lock, and a slot claimed again is not taken for the dead owner (invariant 4).
 * It belongs to the process, not to a thread: a write transaction may end on another thread
 * than it began on; the threads of one process exclude each other with f->write_mu, a futex
 * word of the process (lock_write_take), whose release from another thread than the taker's is
 * defined (a pthread mutex's is not).
 *
 * A child forked while the file is open inherits the handle, the mapping of this file, the slot
 * and the open file description that holds the byte-range locks: all of it its parent's. Such a
 * handle can only be closed, which releases the child's memory and descriptors and nothing
 * shared (lock_inherited, docs/ARCHITECTURE.md, Processes).
 *
 * Invariants:
 *  1. `version`, `top`, `logical` and `selector` change only under the writer lock, inside a seqlock
 *     (`seq` odd while they change); readers retry until they read an even, unchanged seq.
 *  2. A process publishes in its slot the oldest version any of its transactions pins (0 when
 *     none). A reader pins v by storing it and then checking that v is still the newest; a writer
 *     computes the oldest live version after that store is visible, so it never reuses space a
 *     pinned version can reach (commit.c durability rule 1).
 *  3. `committing` is 1 from just before a header write until the new version is published; a
 *     writer that finds it set takes the newest version from the file's header instead.
 *  4. `writer` is 0 (free) or the token of the process that holds the writer lock (slot + 1 in
 *     bits 0-15, the slot's claim number in bits 32-63), with bit 31 set when a thread may sleep
 *     on it (its low 32 bits are the futex word). It changes from a token only by its owner's
 *     release, or by a compare-and-swap from exactly that token after the owner was seen dead
 *     (its slot's byte lock free, or the slot claimed again, which clears a token naming it
 *     under LK_INIT): a swap from an older token fails, as claim numbers are not reused
 *     within 2^32 claims.
 */
#include "lock.h"
#include "file.h"
#include "journal.h"
#include "io.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOCK_MAGIC "CSLOCK\r\n"
#define LOCK_LAYOUT 6u /* 3: the journal's shared state at 64; 4: the sleepers at 112; 5: the journal's
                        * records may be patched (layout 2, FORMAT.md §13), which a library that
                        * writes layout 1 must not share a journal with (FORMAT.md §9); 6: the
                        * writer lock is the word at 2176, no longer a byte-range lock */
#define LOCK_SLOTS 512u
#define LOCK_HDR 4096u

#define LK_BASE ((off_t)1 << 30)
#define LK_INIT (LK_BASE + 0)
#define LK_USERS (LK_BASE + 1)
/* (LK_BASE + 2 was the writer lock up to layout 5) */
#define LK_SLOT (LK_BASE + 64)

typedef struct lock_slot {
    uint64_t pin;    /* oldest version the owner pins, 0 = none */
    uint32_t pid;    /* owner (for `swiftstore info`; liveness is the byte lock) */
    uint32_t in_use; /* 1 while claimed */
    uint64_t seq;    /* seqlock over the range below: odd while it changes */
    uint64_t lo_top; /* top ref of `pin` */
    uint64_t hi;     /* newest version the owner pins (every version in [pin, hi] counts as live) */
    uint64_t hi_top; /* its top ref */
    uint64_t idle;   /* SLOT_BUSY, SLOT_IDLE (no transaction uses the range) or SLOT_REVOKED */
    uint64_t since;  /* when `pin` took its value (ms since the Unix epoch; 0: no pin, or a
                        library that predates the field) -- for `swiftstore info` only */
} lock_slot;

/* An idle slot still publishes its range, but a writer of another process may revoke it
 * (IDLE -> REVOKED, one compare-and-swap) and then ignore it; the owner takes it back for a new
 * transaction with the opposite swap (IDLE -> BUSY), and after a revocation publishes its range
 * again with the full protocol (invariant 2). A library that predates the field leaves it 0
 * (busy): its slots are never revoked, and it never revokes. */
enum { SLOT_BUSY = 0, SLOT_IDLE = 1, SLOT_REVOKED = 2 };

struct lock_file {
    char magic[8];      /* LOCK_MAGIC */
    uint32_t layout;    /* LOCK_LAYOUT */
    uint32_t nslots;    /* LOCK_SLOTS */
    uint64_t seq;       /* seqlock over the next four fields */
    uint64_t version;   /* newest committed version */
    uint64_t top;       /* its top ref */
    uint64_t logical;   /* its logical size */
    uint32_t selector;  /* its header slot */
    uint32_t committing; /* 1 while a header write may be in flight */
    uint32_t counter;   /* commits so far (futex word) */
    uint32_t slots_used; /* one past the highest slot ever claimed (scans stop there) */
    journal_shared journal; /* the commit journal's state (journal.h) */
    uint32_t sleepers;  /* threads of every process waiting on `counter` (lock_sleep_begin) */
    uint32_t zero116[3];
    uint32_t slot_sleepers[LOCK_SLOTS]; /* of `sleepers`, those of reader slot i's process */
    uint64_t writer;    /* the writer lock (invariant 4) */
    uint32_t claims;    /* reader slots claimed in this session (the claim numbers, LK_INIT) */
};

_Static_assert(offsetof(struct lock_file, journal) == 64 && sizeof(journal_shared) == 48, "lock file layout");
_Static_assert(offsetof(struct lock_file, sleepers) == 112, "lock file layout");
_Static_assert(offsetof(struct lock_file, slot_sleepers) == 128, "lock file layout");
_Static_assert(offsetof(struct lock_file, writer) == 2176 && offsetof(struct lock_file, claims) == 2184,
               "lock file layout");
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the writer lock's futex word is the low half of `writer` at its address (little-endian)"
#endif

_Static_assert(sizeof(struct lock_file) <= LOCK_HDR, "lock header size");
/* (the range fields follow the pin so the layout-1 prefix of a slot keeps its meaning) */
_Static_assert(sizeof(lock_slot) == 64, "lock slot size");

static lock_slot *slots(cs_dbfile *f) { return (lock_slot *)((uint8_t *)f->lk + LOCK_HDR); }

/* ---- fork ------------------------------------------------------------------------------- */

/* The fork generation: 0 in a process that was not forked since it first opened a file, one
 * more in each child forked after that (pthread_atfork's child handler, registered at the first
 * open, before any file can be open). A file opened at another generation is its parent's.
 *
 * The handlers (docs/ARCHITECTURE.md, Processes, Fork): before the fork, the process-wide file
 * list's mutex and every open file's mutex are taken (file_fork_prepare), so the child gets them
 * unlocked and no open in progress (which may hold the join lock on a descriptor of its own);
 * in the child, each inherited file drops its copy of the lock file's descriptor and mapping
 * (lock_fork_drop): both hold the parent's open file description, and with it its byte-range
 * locks, which would otherwise outlive the parent's close or death for as long as the child
 * lives (the dead parent's slot looking alive keeps its writer lock from being taken over). */
uint32_t lock_fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_child(void)
{
    __atomic_add_fetch(&lock_fork_gen, 1, __ATOMIC_RELAXED);
    file_fork_child();
}

static void fork_register(void) { pthread_atfork(file_fork_prepare, file_fork_parent, fork_child); }

void lock_fork_init(void) { pthread_once(&fork_once, fork_register); }

void lock_fork_mark(cs_dbfile *f) { f->fork_gen = __atomic_load_n(&lock_fork_gen, __ATOMIC_RELAXED); }

void lock_fork_drop(cs_dbfile *f)
{
    /* (plain system calls: the child of a multithreaded process may call only async-signal-safe
     * functions here; the descriptor came from the I/O layer's open but is a real one, the
     * byte-range locks are taken on it directly) */
    if (f->lk) munmap(f->lk, LOCK_HDR + LOCK_SLOTS * sizeof(lock_slot));
    if (f->lfd >= 0) close(f->lfd);
    f->lk = NULL;
    f->lfd = -1;
}

int lock_inherited_misuse(const cs_dbfile *f, const char *what)
{
    return cs_fail(CS_MISUSE, 0,
                   "%s: %s was opened by the process this one was forked from; a handle inherited across fork "
                   "can only be closed (open the file again in this process)",
                   what, f->path);
}

/* ---- the threads' write lock ------------------------------------------------------------ */

/* f->write_mu: 0 free, 1 held, 2 held and a thread may sleep on it. Taking it is one
 * compare-and-swap when it is free, releasing it one exchange (and a wake when it was 2); the
 * acquire and release orders are what ThreadSanitizer sees. */
void lock_write_take(uint32_t *w)
{
    uint32_t c = 0;
    if (__atomic_compare_exchange_n(w, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return;
    if (c != 2) c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
    while (c != 0) {
        /* sleeps while it is 2 (EINTR and EAGAIN look again) */
        syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
    }
}

void lock_write_give(uint32_t *w)
{
    if (__atomic_exchange_n(w, 0, __ATOMIC_RELEASE) == 2) syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static int ofd(int fd, int cmd, short type, off_t at)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = at;
    fl.l_len = 1;
    for (;;) {
        int r = fcntl(fd, cmd, &fl);
        if (r == 0) return cmd == F_OFD_GETLK ? (fl.l_type == F_UNLCK ? 0 : 1) : 0;
        if (errno != EINTR) return -1;
    }
}

/* ---- reading and publishing the newest version ------------------------------------------ */

/* cs_test_set_writer_lock_hook's function (process-wide: the tests kill the child in it). */
static void (*wlock_hook)(int point);

void cs_test_set_writer_lock_hook(void (*fn)(int point)) { __atomic_store_n(&wlock_hook, fn, __ATOMIC_RELEASE); }

/* cs_test_set_writer_lock_poll's period in ms (0: WR_CHECK_NS). */
static uint32_t wlock_poll_ms;

void cs_test_set_writer_lock_poll(uint32_t ms) { __atomic_store_n(&wlock_poll_ms, ms, __ATOMIC_RELAXED); }

static void wlock_at(int point)
{
    void (*fn)(int) = __atomic_load_n(&wlock_hook, __ATOMIC_ACQUIRE);
    if (fn) fn(point);
}


void lock_read_latest(cs_dbfile *f)
{
    if (!f->lk) return; /* lockless: the process's own view is all there is */
    struct lock_file *l = f->lk;
    for (;;) {
        uint64_t s1 = __atomic_load_n(&l->seq, __ATOMIC_ACQUIRE);
        if (s1 & 1) { sched_yield(); continue; }
        uint64_t v = __atomic_load_n(&l->version, __ATOMIC_RELAXED);
        uint64_t top = __atomic_load_n(&l->top, __ATOMIC_RELAXED);
        uint64_t lg = __atomic_load_n(&l->logical, __ATOMIC_RELAXED);
        uint32_t sel = __atomic_load_n(&l->selector, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&l->seq, __ATOMIC_RELAXED) != s1) continue;
        if (v > f->version || (v == f->version && top != f->top)) {
            f->version = v;
            f->top = top;
            f->logical = lg;
            f->selector = (int)sel;
        }
        return;
    }
}

uint64_t lock_latest_version(cs_dbfile *f)
{
    if (!f->lk) return f->version;
    return __atomic_load_n(&((struct lock_file *)f->lk)->version, __ATOMIC_SEQ_CST);
}

static void publish(struct lock_file *l, uint64_t v, uint64_t top, uint64_t lg, int sel)
{
    uint64_t s = __atomic_load_n(&l->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&l->seq, s + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&l->version, v, __ATOMIC_RELAXED);
    __atomic_store_n(&l->top, top, __ATOMIC_RELAXED);
    __atomic_store_n(&l->logical, lg, __ATOMIC_RELAXED);
    __atomic_store_n(&l->selector, (uint32_t)sel, __ATOMIC_RELAXED);
    __atomic_store_n(&l->seq, s + 2, __ATOMIC_RELEASE);
}

void lock_publish(cs_dbfile *f)
{
    /* the notifier this commit spares (cs_txn_commit_sparing), taken so that the next writer's
     * publish cannot read it: cleared by the sparing writer after its commit returned, it
     * raced with that publish, which then spared the first writer's notifier for its own
     * commit (and left it asleep); an atomic exchange, under the writer lock */
    const bool *spared_flag = __atomic_exchange_n(&f->spared, NULL, __ATOMIC_SEQ_CST);
    if (!f->lk) return;
    struct lock_file *l = f->lk;
    wlock_at(CS_TEST_WLOCK_PUBLISH);
    publish(l, f->version, f->top, f->logical, f->selector);
    __atomic_store_n(&l->committing, 0, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&l->counter, 1, __ATOMIC_SEQ_CST);
    /* Only when a thread sleeps that this commit must wake: a commit sparing a notifier
     * (cs_txn_commit_sparing) leaves it asleep, its committer computing the new version on it.
     * f->mu is held, and a notifier counts itself, and sets its sleeping flag, under it, so the
     * difference is exact; any other sleeper counts itself before its futex wait checks the
     * counter, so either this load sees it or its wait sees the new counter
     * (docs/ARCHITECTURE.md, Change notifications). */
    uint32_t sleeping = __atomic_load_n(&l->sleepers, __ATOMIC_SEQ_CST);
    uint32_t spared = spared_flag && *spared_flag ? 1 : 0;
    if (sleeping > spared) syscall(SYS_futex, &l->counter, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* Counts a sleeper in (asleep) or out of the lock file; a notifier's flag changes with the count
 * under f->mu, where lock_publish reads both. The process's slot counts it too, so that what a
 * process that is gone left counted can be taken back (lock_reclaim_sleepers): counted in the
 * total first and in the slot after, uncounted in the opposite order, so that a process dying
 * in between leaves the total too high (more wakes), never too low. */
static void count_sleeper(cs_dbfile *f, bool *sleeping, bool asleep)
{
    if (!f->lk || lock_inherited(f)) return; /* (the slot's counts are the parent's) */
    struct lock_file *l = f->lk;
    uint32_t *n = &l->sleepers;
    uint32_t *mine = f->slot >= 0 ? &l->slot_sleepers[f->slot] : NULL;
    if (sleeping) pthread_mutex_lock(&f->mu);
    if (asleep) {
        __atomic_add_fetch(n, 1, __ATOMIC_SEQ_CST);
        if (mine) __atomic_add_fetch(mine, 1, __ATOMIC_SEQ_CST);
    } else {
        if (mine) __atomic_sub_fetch(mine, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(n, 1, __ATOMIC_SEQ_CST);
    }
    if (sleeping) {
        *sleeping = asleep;
        pthread_mutex_unlock(&f->mu);
    }
}

void lock_sleep_begin(cs_dbfile *f, bool *sleeping) { count_sleeper(f, sleeping, true); }

void lock_sleep_end(cs_dbfile *f, bool *sleeping) { count_sleeper(f, sleeping, false); }

void lock_committing(cs_dbfile *f)
{
    if (f->lk) __atomic_store_n(&((struct lock_file *)f->lk)->committing, 1, __ATOMIC_SEQ_CST);
}

uint32_t lock_commit_counter(cs_dbfile *f)
{
    return f->lk ? __atomic_load_n(&((struct lock_file *)f->lk)->counter, __ATOMIC_SEQ_CST) : 0;
}

journal_shared *lock_journal(cs_dbfile *f)
{
    return f->lk ? &((struct lock_file *)f->lk)->journal : NULL;
}

uint32_t *lock_commit_word(cs_dbfile *f)
{
    return f->lk ? &((struct lock_file *)f->lk)->counter : NULL;
}

/* ---- pins ------------------------------------------------------------------------------- */

/* Wall-clock milliseconds since the Unix epoch (a pin's start time, shown by `swiftstore info`). */
static uint64_t wall_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void lock_publish_pins(cs_dbfile *f, const pinrange *r, bool fence)
{
    /* (an inherited handle's slot is its parent's: a transaction ended in the child leaves it) */
    if (!f->lk || f->slot < 0 || lock_inherited(f)) return;
    lock_slot *s = &slots(f)[f->slot];
    uint64_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&s->lo_top, r->lo_top, __ATOMIC_RELAXED);
    __atomic_store_n(&s->hi, r->hi, __ATOMIC_RELAXED);
    __atomic_store_n(&s->hi_top, r->hi_top, __ATOMIC_RELAXED);
    /* the pin's start time changes only with the pinned version (one clock read then) */
    if (__atomic_load_n(&s->pin, __ATOMIC_RELAXED) != r->lo)
        __atomic_store_n(&s->since, r->lo ? wall_ms() : 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->pin, r->lo, __ATOMIC_RELAXED);
    __atomic_store_n(&s->idle, SLOT_BUSY, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, q + 2, __ATOMIC_RELEASE);
    /* a wider range: one full fence, so the pin is visible before this process reads the newest
     * version again (invariant 2); a narrower one needs none (the release stores order this
     * process's reads of the versions it drops before the store that lets writers reuse them) */
    if (fence) __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void lock_pins_idle(cs_dbfile *f)
{
    if (f->lk && f->slot >= 0 && !lock_inherited(f)) __atomic_store_n(&slots(f)[f->slot].idle, SLOT_IDLE, __ATOMIC_RELEASE);
}

bool lock_pins_reclaim(cs_dbfile *f)
{
    if (!f->lk || f->slot < 0) return true;
    uint64_t e = SLOT_IDLE;
    if (__atomic_compare_exchange_n(&slots(f)[f->slot].idle, &e, SLOT_BUSY, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return true;
    return e == SLOT_BUSY;
}

/* True when another process's slot is idle and now revoked (by this call or an earlier one):
 * its range protects nothing until its owner publishes again. */
static bool slot_revoked(lock_slot *s)
{
    uint64_t e = SLOT_IDLE;
    if (__atomic_compare_exchange_n(&s->idle, &e, SLOT_REVOKED, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return true;
    return e == SLOT_REVOKED;
}

/* Every other live process's pinned range (dead slots are reaped). Free with free(). */
int lock_collect_pins(cs_dbfile *f, pinrange **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!f->lk) return CS_OK;
    lock_slot *s = slots(f);
    uint32_t used = __atomic_load_n(&((struct lock_file *)f->lk)->slots_used, __ATOMIC_SEQ_CST);
    if (used > LOCK_SLOTS) used = LOCK_SLOTS;
    pinrange *r = calloc(used ? used : 1, sizeof *r);
    if (!r) return NOMEM();
    size_t k = 0;
    for (uint32_t i = 0; i < used; i++) {
        if (!__atomic_load_n(&s[i].in_use, __ATOMIC_SEQ_CST)) continue;
        if ((int)i == f->slot) continue; /* this process's own pins are known exactly */
        pinrange x;
        for (;;) {
            uint64_t q1 = __atomic_load_n(&s[i].seq, __ATOMIC_SEQ_CST);
            if (q1 & 1) { sched_yield(); continue; }
            x.lo = __atomic_load_n(&s[i].pin, __ATOMIC_SEQ_CST);
            x.lo_top = __atomic_load_n(&s[i].lo_top, __ATOMIC_SEQ_CST);
            x.hi = __atomic_load_n(&s[i].hi, __ATOMIC_SEQ_CST);
            x.hi_top = __atomic_load_n(&s[i].hi_top, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&s[i].seq, __ATOMIC_SEQ_CST) == q1) break;
        }
        if (!x.lo) continue;
        if ((int)i != f->slot && ofd(f->lfd, F_OFD_GETLK, F_WRLCK, LK_SLOT + i) == 0) {
            __atomic_store_n(&s[i].pin, 0, __ATOMIC_SEQ_CST);
            __atomic_store_n(&s[i].in_use, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        if (slot_revoked(&s[i])) continue;
        if (x.hi < x.lo) { x.hi = x.lo; x.hi_top = x.lo_top; }
        r[k++] = x;
    }
    *out = r;
    *n = k;
    return CS_OK;
}

uint64_t lock_oldest_pin(cs_dbfile *f, uint64_t latest)
{
    uint64_t o = latest;
    if (!f->lk) return o;
    lock_slot *s = slots(f);
    uint32_t used = __atomic_load_n(&((struct lock_file *)f->lk)->slots_used, __ATOMIC_SEQ_CST);
    if (used > LOCK_SLOTS) used = LOCK_SLOTS;
    for (uint32_t i = 0; i < used; i++) {
        if (!__atomic_load_n(&s[i].in_use, __ATOMIC_SEQ_CST)) continue;
        if ((int)i == f->slot) continue; /* this process's own pins are counted from f->pins */
        uint64_t p = __atomic_load_n(&s[i].pin, __ATOMIC_SEQ_CST);
        if (!p || p >= o) continue;
        if (ofd(f->lfd, F_OFD_GETLK, F_WRLCK, LK_SLOT + i) == 0) {
            /* nobody holds the slot's lock: its process is gone; reap it */
            __atomic_store_n(&s[i].pin, 0, __ATOMIC_SEQ_CST);
            __atomic_store_n(&s[i].in_use, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        if (slot_revoked(&s[i])) continue;
        o = p;
    }
    return o;
}

int lock_reader_info(cs_dbfile *f, uint32_t *processes, uint64_t *oldest)
{
    *processes = 0;
    *oldest = 0;
    if (!f->lk) return CS_OK;
    lock_slot *s = slots(f);
    for (uint32_t i = 0; i < LOCK_SLOTS; i++) {
        if (!__atomic_load_n(&s[i].in_use, __ATOMIC_SEQ_CST)) continue;
        if ((int)i != f->slot && ofd(f->lfd, F_OFD_GETLK, F_WRLCK, LK_SLOT + i) == 0) continue;
        (*processes)++;
        uint64_t p = __atomic_load_n(&s[i].pin, __ATOMIC_SEQ_CST);
        if (p && (!*oldest || p < *oldest)) *oldest = p;
    }
    return CS_OK;
}

int cs_db_pins(cs_db *db, cs_pin_info *out, size_t cap, size_t *n)
{
    *n = 0;
    cs_dbfile *f = db->f;
    if (!f->lk) return CS_OK;
    lock_slot *s = slots(f);
    uint32_t used = __atomic_load_n(&((struct lock_file *)f->lk)->slots_used, __ATOMIC_SEQ_CST);
    if (used > LOCK_SLOTS) used = LOCK_SLOTS;
    for (uint32_t i = 0; i < used; i++) {
        if ((int)i == f->slot || !__atomic_load_n(&s[i].in_use, __ATOMIC_SEQ_CST)) continue;
        if (ofd(f->lfd, F_OFD_GETLK, F_WRLCK, LK_SLOT + i) == 0) continue; /* its process is gone */
        cs_pin_info x;
        for (;;) {
            uint64_t q1 = __atomic_load_n(&s[i].seq, __ATOMIC_SEQ_CST);
            if (q1 & 1) { sched_yield(); continue; }
            x.oldest = __atomic_load_n(&s[i].pin, __ATOMIC_SEQ_CST);
            x.newest = __atomic_load_n(&s[i].hi, __ATOMIC_SEQ_CST);
            x.since_ms = __atomic_load_n(&s[i].since, __ATOMIC_SEQ_CST);
            x.state = (uint32_t)__atomic_load_n(&s[i].idle, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(&s[i].seq, __ATOMIC_SEQ_CST) == q1) break;
        }
        if (!x.oldest) continue;
        if (x.newest < x.oldest) x.newest = x.oldest;
        x.pid = __atomic_load_n(&s[i].pid, __ATOMIC_SEQ_CST);
        if (*n < cap) out[*n] = x;
        (*n)++;
    }
    return CS_OK;
}

/* ---- the writer ------------------------------------------------------------------------- */

#define WR_SLOT 0xffffull          /* the owner's reader slot + 1 */
#define WR_WAITERS (1ull << 31)   /* a thread may sleep on the futex word */
#define WR_CHECK_NS 10000000L     /* a waiter looks whether the owner died this often (10 ms) */

/* The futex word: the low half of `writer` (its bits 0-31, at its address on a little-endian
 * machine), where the slot and the waiters bit are. */
static uint32_t *writer_futex(struct lock_file *l) { return (uint32_t *)(void *)&l->writer; }

static void writer_wake(struct lock_file *l)
{
    syscall(SYS_futex, writer_futex(l), FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* 1 when the process that token `w` names holds the writer lock no more: its slot's byte lock
 * is free (it died, or closed the file); 0 when it still does; -1 (errno set) when the byte
 * lock cannot be tested. Its slot claimed again by another process had the token cleared
 * (lock_open), so a held byte lock is the owner's. This process's own slot is never the
 * owner's here: its threads take the lock one at a time (f->write_mu), and it released it
 * before (a token of its own left behind is stale). */
static int writer_gone(cs_dbfile *f, uint64_t w)
{
    uint64_t s = w & WR_SLOT;
    if (s == 0 || s > LOCK_SLOTS || (int)(s - 1) == f->slot) return 1;
    int held = ofd(f->lfd, F_OFD_GETLK, F_WRLCK, LK_SLOT + (off_t)(s - 1));
    return held < 0 ? -1 : !held;
}

/* The contended path: waits on the futex word until the lock is free, or takes it from a dead
 * owner (invariant 4). `w`: the word as the first swap found it. A thread that waited takes the
 * lock with the waiters bit set, as others may sleep: its release then wakes them. */
static int writer_contend(cs_dbfile *f, struct lock_file *l, uint64_t w)
{
    uint64_t mine = f->wtoken | WR_WAITERS;
    for (;;) {
        if (w == 0) {
            if (__atomic_compare_exchange_n(&l->writer, &w, mine, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return CS_OK;
            continue;
        }
        int gone = writer_gone(f, w);
        if (gone < 0)
            return cs_fail(CS_IOERR, errno, "cannot test the writer lock's holder of %s: %s", f->path, strerror(errno));
        if (gone) {
            wlock_at(CS_TEST_WLOCK_STEAL);
            /* only from exactly the dead owner's token: a live process's never equals it */
            if (__atomic_compare_exchange_n(&l->writer, &w, mine, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) return CS_OK;
            continue;
        }
        if (!(w & WR_WAITERS)) {
            uint64_t x = w | WR_WAITERS;
            if (!__atomic_compare_exchange_n(&l->writer, &w, x, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) continue;
            w = x;
        }
        /* sleeps while the low half is unchanged; any release sets it to 0 and, the waiters bit
         * being set, wakes; the timeout bounds how long a dead owner goes unnoticed (EINTR,
         * EAGAIN and ETIMEDOUT all look again) */
        uint32_t ms = __atomic_load_n(&wlock_poll_ms, __ATOMIC_RELAXED);
        struct timespec ts = {ms / 1000, ms ? (long)(ms % 1000) * 1000000L : WR_CHECK_NS};
        syscall(SYS_futex, writer_futex(l), FUTEX_WAIT, (uint32_t)w, &ts, NULL, 0);
        w = __atomic_load_n(&l->writer, __ATOMIC_RELAXED);
    }
}

int lock_writer_acquire(cs_dbfile *f, bool *recover)
{
    *recover = false;
    if (!f->lk) return CS_OK;
    struct lock_file *l = f->lk;
    uint64_t w = 0;
    if (!__atomic_compare_exchange_n(&l->writer, &w, f->wtoken, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        TRY(writer_contend(f, l, w));
    wlock_at(CS_TEST_WLOCK_TAKEN);
    /* the last writer died between its header write and publishing: the header decides */
    *recover = __atomic_load_n(&l->committing, __ATOMIC_SEQ_CST) != 0;
    return CS_OK;
}

void lock_writer_recovered(cs_dbfile *f, uint64_t version, uint64_t top, uint64_t logical, int sel)
{
    struct lock_file *l = f->lk;
    publish(l, version, top, logical, sel);
    __atomic_store_n(&l->committing, 0, __ATOMIC_SEQ_CST);
}

/* Frees the word if this process's token is in it (with or without the waiters bit), waking
 * the sleepers the bit announces. */
static void writer_free(cs_dbfile *f, struct lock_file *l)
{
    uint64_t w = __atomic_load_n(&l->writer, __ATOMIC_RELAXED);
    while ((w & ~WR_WAITERS) == f->wtoken)
        if (__atomic_compare_exchange_n(&l->writer, &w, 0, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
            if (w & WR_WAITERS) writer_wake(l);
            return;
        }
}

void lock_writer_release(cs_dbfile *f)
{
    /* (a write ended in a child forked while it was open: the lock is the parent's) */
    if (f->lk && !lock_inherited(f)) writer_free(f, f->lk);
}

/* ---- opening and closing ---------------------------------------------------------------- */

static char *lock_path(const char *path)
{
    size_t n = strlen(path);
    char *p = malloc(n + 6);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, ".lock", 6);
    }
    return p;
}

int lock_creation_begin(const char *path, bool create, int *fd)
{
    *fd = -1;
    char *lp = lock_path(path);
    if (!lp) return NOMEM();
    int d = open(lp, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0644);
    int e = errno;
    free(lp);
    if (d < 0) {
        if (!create) return CS_OK;
        return cs_fail(e == EACCES || e == EPERM || e == EROFS ? CS_PERM : CS_IOERR, e,
                       "cannot open the lock file of %s: %s", path, strerror(e));
    }
    if (ofd(d, F_OFD_SETLKW, F_WRLCK, LK_INIT) != 0) {
        e = errno;
        close(d);
        return cs_fail(CS_IOERR, e, "cannot lock the lock file of %s: %s", path, strerror(e));
    }
    *fd = d;
    return CS_OK;
}

int lock_join_alone(const char *path, bool create, int *fd, bool *alone)
{
    *alone = true;
    TRY(lock_creation_begin(path, create, fd));
    if (*fd >= 0) {
        *alone = ofd(*fd, F_OFD_SETLK, F_WRLCK, LK_USERS) == 0;
        return CS_OK;
    }
    /* a lock file this process may not write (a read-only opener of another user's file) still
     * says whether others have the file open: testing for a conflicting lock needs no write
     * access, and only a missing lock file means no other process */
    char *lp = lock_path(path);
    if (!lp) return NOMEM();
    int d = open(lp, O_RDONLY | O_CLOEXEC);
    free(lp);
    if (d >= 0) {
        if (ofd(d, F_OFD_GETLK, F_WRLCK, LK_USERS) != 0) *alone = false;
        close(d);
    }
    return CS_OK;
}

void lock_creation_end(int fd)
{
    if (fd >= 0) close(fd); /* drops LK_INIT with the descriptor */
}

/* Takes back from the sleepers' total what the processes that are gone left counted in their
 * slots: a process killed, or one that exited, while a thread of it was asleep on the counter.
 * Under LK_INIT, which every slot claim holds: a slot whose byte lock nobody holds then has no
 * owner, and none can come while this runs. `own`: this process's slot, which it is leaving. */
static void lock_reclaim_sleepers(struct lock_file *l, int fd, uint32_t used, int own)
{
    if (used > LOCK_SLOTS) used = LOCK_SLOTS;
    for (uint32_t i = 0; i < used; i++) {
        if (!__atomic_load_n(&l->slot_sleepers[i], __ATOMIC_SEQ_CST)) continue;
        if ((int)i != own && ofd(fd, F_OFD_GETLK, F_WRLCK, LK_SLOT + i) != 0) continue;
        uint32_t left = __atomic_exchange_n(&l->slot_sleepers[i], 0, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&l->sleepers, left, __ATOMIC_SEQ_CST);
    }
}

int lock_open(cs_dbfile *f, bool readonly, uint64_t version, uint64_t top, uint64_t logical, int sel)
{
    f->lfd = -1;
    f->slot = -1;
    f->lk = NULL;
    char *lp = lock_path(f->path);
    if (!lp) return NOMEM();
    /* through the I/O layer, like the database file: a replacement layer sees the lock file
     * opened (and closed) too */
    int fd = f->io->open(f->io->ctx, lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int e = errno;
        free(lp);
        /* a read-only open works without a lock file when none can be made (an unwritable
         * directory, a read-only file system, the name taken by something else) */
        if (readonly && e != ENOMEM && e != EMFILE && e != ENFILE) return CS_OK;
        return cs_fail(e == EACCES || e == EPERM || e == EROFS ? CS_PERM : CS_IOERR, e,
                       "cannot open the lock file of %s: %s", f->path, strerror(e));
    }
    free(lp);
    int rc = CS_OK;
    if (ofd(fd, F_OFD_SETLKW, F_WRLCK, LK_INIT) != 0) {
        rc = cs_fail(CS_IOERR, errno, "cannot lock the lock file of %s", f->path);
        goto fail;
    }
    bool alone = ofd(fd, F_OFD_SETLK, F_WRLCK, LK_USERS) == 0;
    size_t size = LOCK_HDR + LOCK_SLOTS * sizeof(lock_slot);
    struct stat st;
    if (fstat(fd, &st) != 0) { rc = cs_fail(CS_IOERR, errno, "cannot stat the lock file"); goto fail_init; }
    if (!alone && (size_t)st.st_size >= sizeof(struct lock_file)) {
        struct lock_file probe;
        if (pread(fd, &probe, sizeof probe, 0) != (ssize_t)sizeof probe) {
            rc = cs_fail(CS_IOERR, errno, "cannot read the lock file of %s", f->path);
            goto fail_init;
        }
        if (memcmp(probe.magic, LOCK_MAGIC, 8) != 0 || probe.layout != LOCK_LAYOUT || probe.nslots != LOCK_SLOTS) {
            rc = cs_fail(CS_VERSION, 0, "incompatible lock file for %s (another library version has it open)", f->path);
            goto fail_init;
        }
    } else if (!alone) {
        rc = cs_fail(CS_VERSION, 0, "incompatible lock file for %s", f->path);
        goto fail_init;
    }
    if (!alone && (size_t)st.st_size < size) {
        /* mapping past its end would fault on the first touch */
        rc = cs_fail(CS_VERSION, 0, "incompatible lock file for %s (%llu bytes, %zu expected)", f->path,
                     (unsigned long long)st.st_size, size);
        goto fail_init;
    }
    /* every byte of the mapping is allocated before it is touched (io.h): a sparse lock file on
     * a full disk would kill the process with SIGBUS at the first store */
    if (alone) {
        if (ftruncate(fd, (off_t)size) != 0) {
            int e = errno;
            rc = cs_fail(e == ENOSPC || e == EDQUOT || e == EFBIG ? CS_FULL : CS_IOERR, e,
                         "cannot size the lock file of %s: %s", f->path, strerror(e));
            goto fail_init;
        }
        if ((rc = io_allocate(f->io, f->path, fd, 0, size)) != CS_OK) goto fail_init;
    }
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) { rc = cs_fail(CS_NOMEM, errno, "cannot map the lock file of %s", f->path); goto fail_init; }
    struct lock_file *l = m;
    if (alone) {
        /* Nobody else has the file open: start from the file's header, read again now. The
         * header this process read before it got here can be old: processes that have exited
         * since may have committed after it (and reused that version's space), and publishing
         * it would make the next writer build on a version that is gone (FORMAT.md, Opening a
         * file). While this process holds the init lock alone, nobody can commit. */
        if ((rc = file_read_latest(f, &version, &top, &logical, &sel, &f->rejected)) != CS_OK) {
            munmap(m, size);
            goto fail_init;
        }
        f->rejected.opened = version;
        f->version = version;
        f->top = top;
        f->logical = logical;
        f->selector = sel;
        memset(m, 0, size);
        memcpy(l->magic, LOCK_MAGIC, 8);
        l->layout = LOCK_LAYOUT;
        l->nslots = LOCK_SLOTS;
        publish(l, version, top, logical, sel);
        ofd(fd, F_OFD_SETLK, F_RDLCK, LK_USERS);
    } else if (ofd(fd, F_OFD_SETLK, F_RDLCK, LK_USERS) != 0) {
        munmap(m, size);
        rc = cs_fail(CS_IOERR, errno, "cannot join the lock file of %s", f->path);
        goto fail_init;
    }
    if (!alone) lock_reclaim_sleepers(l, fd, __atomic_load_n(&l->slots_used, __ATOMIC_SEQ_CST), -1);
    /* claim a reader slot */
    lock_slot *s = (lock_slot *)((uint8_t *)m + LOCK_HDR);
    for (uint32_t i = 0; i < LOCK_SLOTS; i++) {
        if (ofd(fd, F_OFD_SETLK, F_WRLCK, LK_SLOT + i) != 0) continue;
        s[i].pin = 0;
        s[i].hi = 0;
        s[i].since = 0;
        s[i].seq = 0;
        s[i].idle = SLOT_BUSY;
        s[i].pid = (uint32_t)getpid();
        /* this claim's number names this process in the writer lock; a token naming the slot
         * is a dead owner's (the slot's byte lock was free), cleared here under LK_INIT
         * (invariant 4) */
        uint32_t claim = __atomic_add_fetch(&l->claims, 1, __ATOMIC_SEQ_CST);
        f->wtoken = (uint64_t)claim << 32 | (i + 1);
        uint64_t w = __atomic_load_n(&l->writer, __ATOMIC_SEQ_CST);
        while ((w & WR_SLOT) == i + 1) { /* (a waiter may set the waiters bit meanwhile: again) */
            wlock_at(CS_TEST_WLOCK_CLAIM);
            if (__atomic_compare_exchange_n(&l->writer, &w, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
                writer_wake(l);
                break;
            }
        }
        __atomic_store_n(&s[i].in_use, 1, __ATOMIC_SEQ_CST);
        if (l->slots_used < i + 1) __atomic_store_n(&l->slots_used, i + 1, __ATOMIC_SEQ_CST);
        f->slot = (int)i;
        break;
    }
    ofd(fd, F_OFD_SETLK, F_UNLCK, LK_INIT);
    if (f->slot < 0) {
        munmap(m, size);
        f->io->close(f->io->ctx, fd);
        return cs_fail(CS_BUSY, 0, "%s is open in %u processes already (the limit)", f->path, LOCK_SLOTS);
    }
    f->lk = m;
    f->lfd = fd;
    return CS_OK;
fail_init:
    ofd(fd, F_OFD_SETLK, F_UNLCK, LK_INIT);
fail:
    f->io->close(f->io->ctx, fd);
    return rc;
}

/* True if no other process has the file open (this one must hold LK_INIT). */
static bool lock_alone(cs_dbfile *f)
{
    if (ofd(f->lfd, F_OFD_SETLK, F_WRLCK, LK_USERS) == 0) return true;
    return false;
}

bool lock_close(cs_dbfile *f)
{
    if (lock_inherited(f)) {
        /* A child forked with the file open: the slot, the writer lock and the open file
         * description with every byte-range lock on it are the parent's, which goes on using
         * them. Any lock command on the description would act for the parent (taking LK_INIT
         * would keep it held after this close: the description stays open in the parent), and
         * the parent's hold on LK_USERS would make it look alone. The fork's child handler
         * dropped the child's copies of the descriptor and the mapping already
         * (lock_fork_drop); a child made without that handler (a raw clone) drops them here. */
        lock_fork_drop(f);
        return false;
    }
    if (!f->lk) return true;
    bool alone = false;
    /* (a writer lock still held at close is a misuse; it goes with the slot) */
    if (f->slot >= 0) writer_free(f, f->lk);
    if (ofd(f->lfd, F_OFD_SETLKW, F_WRLCK, LK_INIT) == 0) {
        alone = lock_alone(f);
        if (alone) journal_last_close(f);
        if (f->slot >= 0) {
            /* (a thread still asleep on the counter of a file being closed is a misuse; what
             * it left counted goes with the slot) */
            lock_reclaim_sleepers(f->lk, f->lfd, (uint32_t)f->slot + 1, f->slot);
            lock_slot *s = &slots(f)[f->slot];
            __atomic_store_n(&s->pin, 0, __ATOMIC_SEQ_CST);
            __atomic_store_n(&s->in_use, 0, __ATOMIC_SEQ_CST);
        }
        if (alone && f->durability == CS_DURABILITY_MEMORY) {
            char *lp = lock_path(f->path);
            if (lp) {
                unlink(lp);
                free(lp);
            }
        }
    }
    munmap(f->lk, LOCK_HDR + LOCK_SLOTS * sizeof(lock_slot));
    /* every lock of the description, before its descriptor goes: a close drops them only with
     * the description's last reference, which a child forked without the fork handler (a raw
     * clone) may still hold */
    struct flock all;
    memset(&all, 0, sizeof all);
    all.l_type = F_UNLCK;
    all.l_whence = SEEK_SET;
    fcntl(f->lfd, F_OFD_SETLK, &all);
    f->io->close(f->io->ctx, f->lfd);
    f->lk = NULL;
    f->lfd = -1;
    return alone;
}

int lock_take_alone(cs_dbfile *f)
{
    TRY(lock_refuse_inherited(f, "taking the file for this process alone"));
    if (!f->lk) return cs_fail(CS_BUSY, 0, "%s has no lock file: cannot make sure no other process has it open", f->path);
    if (ofd(f->lfd, F_OFD_SETLKW, F_WRLCK, LK_INIT) != 0)
        return cs_fail(CS_IOERR, errno, "cannot lock the lock file of %s", f->path);
    if (lock_alone(f)) return CS_OK;
    /* name the other processes from their reader slots (a slot whose byte lock is held) */
    char pids[256];
    size_t at = 0;
    uint32_t n = 0;
    lock_slot *s = slots(f);
    pids[0] = 0;
    for (uint32_t i = 0; i < LOCK_SLOTS; i++) {
        if ((int)i == f->slot || !__atomic_load_n(&s[i].in_use, __ATOMIC_SEQ_CST)) continue;
        if (ofd(f->lfd, F_OFD_GETLK, F_WRLCK, LK_SLOT + i) != 1) continue;
        n++;
        if (at + 16 < sizeof pids)
            at += (size_t)snprintf(pids + at, sizeof pids - at, "%s%u", at ? ", " : "", s[i].pid);
    }
    ofd(f->lfd, F_OFD_SETLK, F_UNLCK, LK_INIT);
    if (n == 0) return cs_fail(CS_BUSY, 0, "%s is open in another process", f->path);
    return cs_fail(CS_BUSY, 0, "%s is open in %u other process%s (pid %s)", f->path, n, n == 1 ? "" : "es", pids);
}

uint32_t cs_db_commit_counter(cs_db *db) { return lock_commit_counter(db->f); }

int cs_db_wait_for_commit(cs_db *db, uint32_t seen, int timeout_ms)
{
    cs_dbfile *f = db->f;
    TRY(lock_refuse_inherited(f, "cs_db_wait_for_commit"));
    if (!f->lk) return cs_fail(CS_MISUSE, 0, "no lock file: commits cannot be waited for");
    struct lock_file *l = f->lk;
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    while (__atomic_load_n(&l->counter, __ATOMIC_SEQ_CST) == seen) {
        lock_sleep_begin(f, NULL);
        long r = syscall(SYS_futex, &l->counter, FUTEX_WAIT, seen, timeout_ms < 0 ? NULL : &ts, NULL, 0);
        int e = errno;
        lock_sleep_end(f, NULL);
        errno = e;
        if (r != 0 && errno == ETIMEDOUT) return cs_fail(CS_BUSY, ETIMEDOUT, "no commit within %d ms", timeout_ms);
    }
    return CS_OK;
}
