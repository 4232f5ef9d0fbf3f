/*
 * cstore.h -- the one public header of CStore, SwiftStore's storage core.
 *
 * CStore keeps tables of objects in a single memory-mapped file. Every change happens in a
 * write transaction that copies the nodes it touches into heap memory and, at commit, writes
 * them to free space in the file before one header flip makes the new version current. Readers
 * see a fixed version (a snapshot) for as long as their transaction lives.
 *
 * Handles and threads (see docs/ARCHITECTURE.md, "The C API contract"):
 *   cs_db    an open database file. Thread-safe: any number of threads may share one handle.
 *   cs_txn   a transaction on a cs_db. Used by one thread at a time (callers serialise);
 *            a read transaction may move between threads, a write transaction too.
 *   cs_obj   an object accessor (caller-allocated struct): names one object of one table in one
 *            transaction and caches where its row lives. Cheap to copy; revalidated on use.
 *   cs_coll  a collection accessor (caller-allocated): a List, Set or Map property of one
 *            object, or the backlinks of one object.
 *   cs_iter  an iterator over the objects of a table in key order.
 *
 * Transaction states (cs_txn):
 *
 *        cs_txn_begin(READ)           cs_txn_promote()
 *   (none) ------------------> READ -----------------> WRITE
 *     ^                       |  ^  <-----------------   |
 *     |      cs_txn_end()     |  |  cs_txn_commit() /    |
 *     +-----------------------+  |  cs_txn_rollback()    |
 *     |                          +-----------------------+
 *     |      cs_txn_end() (rolls back)                   |
 *     +--------------------------------------------------+
 *
 *   cs_txn_begin(WRITE) is cs_txn_begin(READ) followed by cs_txn_promote(). A commit leaves the
 *   transaction reading the version it just wrote; a rollback leaves it reading the version it
 *   began writing on. cs_txn_advance() moves a READ transaction to the newest version.
 *
 * Errors: every function that can fail returns an int, CS_OK (0) on success. The message and
 * the OS errno of the last failure are kept per thread (a cs_db is shared between threads, so a
 * message kept on it would race): cs_errmsg() and cs_errno(). Bytes read from the file are
 * never trusted: damage is reported as CS_CORRUPT with where it was found.
 *
 * Byte order of everything on disk: little-endian. The format is docs/FORMAT.md.
 */
#ifndef CSTORE_H
#define CSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------- */
/* Error codes                                                                              */
/* ---------------------------------------------------------------------------------------- */

enum {
    CS_OK = 0,          /* success */
    CS_NOTFOUND = 1,    /* no such object, table, column, key or file */
    CS_CORRUPT = 2,     /* the file is damaged or is not a CStore file; message says where */
    CS_FULL = 3,        /* no space left on the device, or a value over its size limit */
    CS_IOERR = 4,       /* an I/O call failed (errno in cs_errno()); after a failed sync the
                           database refuses writes until reopened */
    CS_READONLY = 5,    /* write attempted on a read-only database or transaction */
    CS_PERM = 6,        /* the OS denied access to the file */
    CS_BUSY = 7,        /* locked by another process, or too many live versions */
    CS_MISUSE = 8,      /* the API was called wrongly (bad handle state, bad argument) */
    CS_VERSION = 9,     /* the file's format version is newer than this library reads */
    CS_CONSTRAINT = 10, /* a uniqueness or schema constraint was violated */
    CS_QUERY = 11,      /* a malformed or ill-typed query */
    CS_NOMEM = 12,      /* out of memory or address space */
    CS_TYPE = 13,       /* a value of the wrong type for a column */
    CS_RANGE = 14,      /* an index out of range */
    CS_EXISTS = 15,     /* a table or column of that name exists already; or something not
                           the library's is where a file of its own goes (`<file>.journal`) */
    CS_OVERFLOW = 16,   /* an integer aggregate overflowed 64 bits */
    CS_INTERNAL = 17,   /* the library found its own state inconsistent (an error of the
                           library, not of the file or the call); the operation changed nothing */
};

/** The message of the last failure on this thread ("" if none). Valid until the next call. A call
 *  that succeeds after recovering from a failure of its own (a durable commit made without the
 *  journal because it cannot be opened or grown, docs/FORMAT.md §13, Commit) leaves no message
 *  of that failure: "" after a commit, the message from before the call after an open or a
 *  close. */
const char *cs_errmsg(void);
/** The OS errno of the last failure on this thread (0 when the failure had none). */
int cs_errno(void);
/** The path of the database file whose bytes the last CS_CORRUPT of this thread was found in,
 *  or "" when the check that found it did not know the file. */
const char *cs_errpath(void);
/** A short constant name for an error code ("CS_CORRUPT"). */
const char *cs_errstr(int code);
/** The newest file format version this library reads and writes (docs/FORMAT.md): 2. A file is
 *  written in the lowest version that describes it: 1, or 2 while it has an index on a Mixed
 *  column (cs_db_stats says which). */
uint32_t cs_format_version(void);
/** The library version, "MAJOR.MINOR.PATCH". */
const char *cs_library_version(void);

/* ---------------------------------------------------------------------------------------- */
/* Value types                                                                              */
/* ---------------------------------------------------------------------------------------- */

/** Column and value types. The numbers are stored in the file and never reused. */
typedef enum cs_type {
    CS_TYPE_NULL = 0,      /* only as a value: null */
    CS_TYPE_INT = 1,       /* int64_t */
    CS_TYPE_BOOL = 2,      /* bool */
    CS_TYPE_FLOAT = 3,     /* float */
    CS_TYPE_DOUBLE = 4,    /* double */
    CS_TYPE_STRING = 5,    /* UTF-8 bytes, at most CS_MAX_BLOB bytes */
    CS_TYPE_BINARY = 6,    /* bytes, at most CS_MAX_BLOB */
    CS_TYPE_TIMESTAMP = 7, /* seconds since 1970 + nanoseconds */
    CS_TYPE_OBJECTID = 8,  /* 12 bytes */
    CS_TYPE_UUID = 9,      /* 16 bytes */
    CS_TYPE_DECIMAL = 10,  /* IEEE 754-2008 decimal128, BID encoding, 16 bytes little-endian */
    CS_TYPE_LINK = 11,     /* a link to an object: (table, key) */
    CS_TYPE_MIXED = 12,    /* column type only: each value carries its own type */
    CS_TYPE_BACKLINK = 13, /* column type only: hidden backlink column (kept by the core) */
    CS_TYPE_LIST = 14,     /* only as a Mixed value: a nested list (open it with cs_coll_*) */
    CS_TYPE_DICT = 15,     /* only as a Mixed value: a nested dictionary */
} cs_type;

/** Collection kinds of a column. */
typedef enum cs_coll_kind {
    CS_COLL_NONE = 0, /* a single value */
    CS_COLL_LIST = 1, /* an ordered list, duplicates allowed */
    CS_COLL_SET = 2,  /* a set, kept sorted in the order of cs_value_compare */
    CS_COLL_MAP = 3,  /* a map from string keys to values, sorted by key bytes */
} cs_coll_kind;

/** Largest string or binary value, in bytes (16 MiB). A larger one is CS_FULL. */
#define CS_MAX_BLOB (16u * 1024u * 1024u)
/** CS_MAX_BLOB as a function, for languages that do not import the macro. */
size_t cs_max_blob(void);

/** A decimal128 in the BID encoding: w[0] is the low 64 bits. */
typedef struct cs_decimal128 {
    uint64_t w[2]; /* little-endian 128-bit word, w[0] low */
} cs_decimal128;

/**
 * A value passed in or out. For strings and binaries `v.bytes` points at memory owned by the
 * transaction that produced it: valid until that transaction writes, advances or ends.
 * For links `v.link` names the target table and object key.
 */
typedef struct cs_value {
    cs_type type; /* CS_TYPE_NULL for null */
    union {
        int64_t i;   /* INT */
        bool b;      /* BOOL */
        float f;     /* FLOAT */
        double d;    /* DOUBLE */
        struct {
            const void *ptr; /* first byte (never NULL for a value, may be for length 0) */
            size_t len;      /* length in bytes */
        } bytes;             /* STRING, BINARY */
        struct {
            int64_t sec;  /* seconds since 1970-01-01T00:00:00Z */
            int32_t nsec; /* nanoseconds, -999999999..999999999, same sign as sec */
        } ts;             /* TIMESTAMP */
        uint8_t oid[12];  /* OBJECTID */
        uint8_t uuid[16]; /* UUID */
        cs_decimal128 dec; /* DECIMAL */
        struct {
            uint32_t table; /* target table key */
            int64_t key;    /* target object key */
        } link;             /* LINK */
        struct {
            const struct cs_value *items; /* elements */
            size_t count;                 /* how many */
        } list;             /* LIST, as a query argument only (for IN %@) */
    } v;
} cs_value;

/* Decimal128 (IEEE 754-2008 decimal128, BID encoding), implemented once in C for the query
 * engine and the Swift layer (decimal.c). Results are rounded to 34 significant digits, half to
 * even; overflow gives infinity, and invalid operations (inf - inf, 0 / 0) give NaN. */

/** Parses "-12.5", "1E+3", "NaN", "Inf", "-Infinity" (case-insensitive). CS_TYPE on bad input;
 *  more than 34 significant digits are rounded. */
int cs_decimal_parse(const char *s, size_t len, cs_decimal128 *out);
/** Writes the shortest exact text (like "12.50", "1.5E+40", "NaN", "-Inf") with a NUL; returns
 *  the length, or the length needed when `cap` is too small (nothing is written then). */
size_t cs_decimal_format(const cs_decimal128 *d, char *buf, size_t cap);
cs_decimal128 cs_decimal_from_int(int64_t v);
/** The decimal nearest to `v` with at most 17 significant digits (the shortest that round-trips). */
cs_decimal128 cs_decimal_from_double(double v);
double cs_decimal_to_double(const cs_decimal128 *d);
bool cs_decimal_is_nan(const cs_decimal128 *d);
/** Numeric comparison: <0, 0, >0; NaN sorts before every number and equals NaN. */
int cs_decimal_compare(const cs_decimal128 *a, const cs_decimal128 *b);
cs_decimal128 cs_decimal_add(const cs_decimal128 *a, const cs_decimal128 *b);
cs_decimal128 cs_decimal_sub(const cs_decimal128 *a, const cs_decimal128 *b);
cs_decimal128 cs_decimal_mul(const cs_decimal128 *a, const cs_decimal128 *b);
cs_decimal128 cs_decimal_div(const cs_decimal128 *a, const cs_decimal128 *b);

/** Value constructors, for convenience in C and Swift. */
static inline cs_value cs_null(void) { cs_value x; x.type = CS_TYPE_NULL; x.v.i = 0; return x; }
static inline cs_value cs_int(int64_t i) { cs_value x; x.type = CS_TYPE_INT; x.v.i = i; return x; }
static inline cs_value cs_bool(bool b) { cs_value x; x.type = CS_TYPE_BOOL; x.v.i = 0; x.v.b = b; return x; }
static inline cs_value cs_float(float f) { cs_value x; x.type = CS_TYPE_FLOAT; x.v.i = 0; x.v.f = f; return x; }
static inline cs_value cs_double(double d) { cs_value x; x.type = CS_TYPE_DOUBLE; x.v.d = d; return x; }
static inline cs_value cs_string(const char *p, size_t n)
{ cs_value x; x.type = CS_TYPE_STRING; x.v.bytes.ptr = p; x.v.bytes.len = n; return x; }
static inline cs_value cs_binary(const void *p, size_t n)
{ cs_value x; x.type = CS_TYPE_BINARY; x.v.bytes.ptr = p; x.v.bytes.len = n; return x; }
static inline cs_value cs_timestamp(int64_t sec, int32_t nsec)
{ cs_value x; x.type = CS_TYPE_TIMESTAMP; x.v.ts.sec = sec; x.v.ts.nsec = nsec; return x; }
static inline cs_value cs_link(uint32_t table, int64_t key)
{ cs_value x; x.type = CS_TYPE_LINK; x.v.link.table = table; x.v.link.key = key; return x; }

/**
 * Total order used by sets, sorting and comparisons (docs/ARCHITECTURE.md, Values and their
 * order): null first; then bool,
 * numeric (INT, FLOAT, DOUBLE, DECIMAL compared by numeric value, NaN before numbers),
 * string (UTF-8 bytes), binary, timestamp, ObjectId, UUID, link. Returns <0, 0 or >0.
 */
int cs_value_compare(const cs_value *a, const cs_value *b);

/* ---------------------------------------------------------------------------------------- */
/* The replaceable I/O layer                                                                */
/* ---------------------------------------------------------------------------------------- */

/**
 * Every system call CStore makes on a database file goes through one of these, so tests can
 * simulate power cuts, torn writes, ENOSPC, EIO and short writes. Each returns what the system
 * call returns (-1 and errno on failure). Pass NULL in cs_options for the real calls. One
 * exception: the size (and allocated blocks) a write transaction reads at its start comes from
 * statx, not from `fstat`, when `fstat` is the default layer's own function (reading the file's
 * times through fstat would make the next write dirty the inode); a layer that sets its own
 * `fstat` is asked through it.
 */
typedef struct cs_io {
    int (*open)(void *ctx, const char *path, int flags, mode_t mode);
    int (*close)(void *ctx, int fd);
    ssize_t (*pread)(void *ctx, int fd, void *buf, size_t n, off_t off);
    ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t n, off_t off);
    int (*fdatasync)(void *ctx, int fd);
    int (*ftruncate)(void *ctx, int fd, off_t size);
    int (*fstat)(void *ctx, int fd, struct stat *st);
    void *ctx; /* passed back as the first argument */
    /* Used by compaction and restore only (cs_db_compact, cs_backup_restore); NULL = the system
     * call. rename(2); unlink(2); sync_dir opens the directory and fsyncs it. */
    int (*rename)(void *ctx, const char *from, const char *to);
    int (*unlink)(void *ctx, const char *path);
    int (*sync_dir)(void *ctx, const char *dir);
    /* Allocates the blocks of [off, off + len), extending the file when it ends earlier
     * (posix_fallocate's contract, but 0 or -1 with errno like the others). Every region the
     * library maps and writes, every growth of the database file and every growth of its
     * journal (`<file>.journal`, whose descriptor it then gets) is allocated through it first,
     * so a full disk is an error (ENOSPC: CS_FULL) and never a SIGBUS. For the journal,
     * EOPNOTSUPP or ENOSYS means "not supported here": the journal grows by its zeros alone.
     * NULL: the system's posix_fallocate. */
    int (*allocate)(void *ctx, int fd, off_t off, off_t len);
    /* Writes the n bytes at buf to [off, off + n) of fd by storing them through `map`, a shared
     * writable mapping of fd that the library made (file byte x is map[x]); 0, or -1 with errno.
     * A commit on ext4 writes its runs of up to 64 KiB this way, and a journaled commit its
     * header, only into bytes it allocated through `allocate` first (docs/ARCHITECTURE.md,
     * Writes through a mapping). The default copies (memcpy). NULL: the library writes with
     * pwrite and maps nothing writable, so a layer that models the disk sees every write either
     * way; one that sets this sees the bytes here, then copies them into map + off itself. */
    int (*write_mapped)(void *ctx, int fd, void *map, const void *buf, size_t n, off_t off);
    /* fstatat(AT_FDCWD, path, st, flags): flags 0 follows a symbolic link, AT_SYMLINK_NOFOLLOW
     * describes the link itself; 0, or -1 with errno. What lies at the journal's path
     * (`<file>.journal`) is looked at this way before it is opened (docs/FORMAT.md §13,
     * Recovery: a directory, a FIFO, a device or a dangling symbolic link there is refused).
     * NULL: the system call. */
    int (*stat_path)(void *ctx, const char *path, struct stat *st, int flags);
} cs_io;

/** The default I/O layer (the plain system calls). */
const cs_io *cs_io_default(void);

/* ---------------------------------------------------------------------------------------- */
/* Opening a database                                                                       */
/* ---------------------------------------------------------------------------------------- */

typedef struct cs_db cs_db;
typedef struct cs_txn cs_txn;

/** Durability of commits. */
typedef enum cs_durability {
    CS_DURABILITY_FULL = 0,   /* fdatasync the data, then the header (default) */
    CS_DURABILITY_NOSYNC = 1, /* no syncs: a crash of the OS may lose recent commits */
    CS_DURABILITY_MEMORY = 2, /* no syncs; the file is deleted when the last handle closes */
} cs_durability;

enum {
    CS_OPEN_CREATE = 1,   /* create the file if it does not exist */
    CS_OPEN_READONLY = 2, /* never write; the file must exist */
    /* Online shrinking (docs/ARCHITECTURE.md, Online shrinking): this handle's commits move a
     * bounded amount of live data out of the file's tail into free space once a file holds
     * much free space, and truncate the file when its tail is free and no reader's version
     * uses it. Off unless set: it costs the commits that do it bytes and time (measured in
     * docs/ARCHITECTURE.md). */
    CS_OPEN_SHRINK = 4,
};

/** Options for cs_db_open. Zero-initialise, then set what you need. */
typedef struct cs_options {
    uint32_t flags;                 /* CS_OPEN_* */
    cs_durability durability;       /* default CS_DURABILITY_FULL */
    uint32_t max_active_versions;   /* 0 = no limit on pinned versions */
    const cs_io *io;                /* NULL = cs_io_default() */
} cs_options;

/**
 * Opens (or creates, with CS_OPEN_CREATE) the database at `path`. Opening the same file twice
 * in one process shares one underlying state. Errors: CS_NOTFOUND (no file), CS_PERM,
 * CS_CORRUPT (not a database, or damaged header; or a commit journal of another file, or one
 * whose records are damaged, docs/FORMAT.md §13), CS_VERSION (newer format), CS_NOMEM (memory
 * or address space), CS_EXISTS (something at `<file>.journal` that is not a journal: a file
 * that is not one, a directory, a FIFO, a socket, a device; left as it is), CS_READONLY (a
 * read-only open that cannot recover the journal's records), CS_IOERR. A successful open leaves
 * the thread's last failure (cs_errmsg, cs_errno) as it was.
 *
 * Fork: a handle open when the process forks is inherited by the child, where it can only be
 * closed (its transactions only ended): beginning, promoting, committing, advancing or freezing
 * a transaction through it, or waiting for commits, fails with CS_MISUSE; reads through an
 * inherited transaction find no data (CS_CORRUPT). A cs_db_open in the child opens the file for
 * the child (docs/ARCHITECTURE.md, Processes, Fork).
 */
int cs_db_open(const char *path, const cs_options *opts, cs_db **out);
/** Closes the handle. Every transaction on it must have ended (else CS_MISUSE). The close of a
 *  handle inherited across fork frees the child's copies only, never the parent's state. */
int cs_db_close(cs_db *db);
/** The newest committed version number. */
uint64_t cs_db_version(cs_db *db);
/** A counter every commit by any process increments (for waiting on changes). */
uint32_t cs_db_commit_counter(cs_db *db);
/** Blocks until the commit counter differs from `seen` (any process's commit), or until
 *  `timeout_ms` passes (CS_BUSY; -1 waits forever). Works across processes (a futex in the
 *  lock file); CS_MISUSE on a read-only open without a lock file. */
int cs_db_wait_for_commit(cs_db *db, uint32_t seen, int timeout_ms);
/** The path the database was opened with. */
const char *cs_db_path(cs_db *db);

/** Sizes and counts for `swiftstore info`. */
typedef struct cs_db_stats {
    uint32_t read_format;   /* format version needed to read the file (as its header says) */
    uint32_t write_format;  /* format version needed to write it (as its header says) */
    uint64_t version;       /* newest committed version */
    uint64_t file_size;     /* physical file size in bytes */
    uint64_t logical_size;  /* end of the last byte in use */
    uint64_t used_bytes;    /* bytes in nodes reachable from the newest version */
    uint64_t free_bytes;    /* bytes on the free lists */
    uint64_t free_extents;  /* entries on the free lists */
    uint32_t table_count;   /* live tables */
    uint32_t pinned;        /* distinct versions pinned by transactions of this process (the
                               stats call's own read is not counted) */
    uint32_t rejected;      /* 1 when opening passed over the header slot naming the newest commit
                               (damaged, torn or truncated) and opened an older version */
    uint64_t rejected_version; /* the version that slot claims (untrusted when its check failed) */
    char rejected_reason[256]; /* why, as text ("" when rejected is 0) */
} cs_db_stats;

/**
 * True when opening the file found that the header slot naming its newest commit could not be
 * used (damaged, torn by a crash before the disk had all of it, or cut off by truncation) and
 * opened an older, intact version instead (docs/FORMAT.md §2, What damage leads to). Fills the
 * version that slot claims, the version opened, and the reason as text (NUL-terminated, at most
 * `cap` bytes); any pointer may be NULL. The note lasts while the file stays open in this process.
 * Also true when the header says its newest commits may be in the journal (format 7) and the open
 * found no journal (docs/FORMAT.md §13, Recovery): `version` is then the opened version + 1.
 */
bool cs_db_rejected_commit(cs_db *db, uint64_t *version, uint64_t *opened, char *why, size_t cap);

/**
 * The number of commits the open of this file in this process replayed from its journal (a crash
 * left them there, docs/FORMAT.md §13, Recovery): 0 when it replayed none. A read-only open that
 * is alone and may write the file and its journal replays them as a read-write open does.
 */
uint64_t cs_db_recovered_commits(cs_db *db);
/**
 * True when no other process had the file open when this process opened it: its open decided
 * about the journal (replayed what a crash left, or found nothing to replay). False when another
 * process had it open; the commits in its journal are then that process's (docs/FORMAT.md §13,
 * Recovery). For `swiftstore recover`.
 */
bool cs_db_opened_alone(cs_db *db);

/** Fills `out` from the newest version (walks every node to count used bytes). */
int cs_db_stats_get(cs_db *db, cs_db_stats *out);

/** The versions one other process pins (its reader slot in the lock file, docs/FORMAT.md §9),
 *  for `swiftstore info`. */
typedef struct cs_pin_info {
    uint32_t pid;      /* the process */
    uint32_t state;    /* 0 in use; 1 idle (no transaction of it uses the range now; a writer
                          may revoke it); 2 revoked (protects nothing until it pins again) */
    uint64_t oldest;   /* oldest version it pins */
    uint64_t newest;   /* newest version it pins (every version between counts as pinned) */
    uint64_t since_ms; /* when it started pinning `oldest`, in ms since the Unix epoch (0: not
                          recorded, by a library that predates the field) */
} cs_pin_info;

/** Lists the pins of every other live process with the file open (not the caller's own) into
 *  `out`, at most `cap` of them; *n is how many there are (it may exceed `cap`). No lock file
 *  (a read-only open without one): none. */
int cs_db_pins(cs_db *db, cs_pin_info *out, size_t cap, size_t *n);

/**
 * Walks every node of the newest version and checks every invariant: node headers and
 * checksums, bounds, that no two nodes overlap and none overlaps free space, B+ tree key
 * order and counts, schema consistency; that every link column's links and the backlinks of
 * its target table name the same (origin, target) pairs as many times each (so no link names a
 * missing object and no backlink an object that does not link there; compared by a fingerprint
 * that misses a difference only with negligible probability), and that every object of an
 * embedded table has exactly one owner. Links inside Mixed values (which have no backlinks) are
 * not checked. Returns CS_OK when healthy, else CS_CORRUPT with the first problem and where in
 * cs_errmsg().
 */
int cs_db_verify(cs_db *db);

/**
 * Opens the file read-only and verifies it, without a cs_db (for `swiftstore verify`). Also
 * CS_CORRUPT when the version it opens is intact but the header slot naming a newer commit was
 * rejected (cs_db_rejected_commit): that commit is lost.
 */
int cs_file_verify(const char *path);
/** cs_file_verify, also giving the number of commits the open replayed from the journal after a
 *  crash (cs_db_recovered_commits); `recovered` may be NULL. */
int cs_file_verify_recovered(const char *path, uint64_t *recovered);

/**
 * The commit journal of the database at `path` (`<path>.journal`, docs/FORMAT.md §13), read
 * without locks: *records gets the number of valid records since its last checkpoint and *bytes
 * their size. Records are normal while a process has the file open (its commits since the last
 * checkpoint); with no process there they are commits a crash left, which the next read-write
 * open replays. CS_NOTFOUND when there is no journal.
 */
int cs_file_journal_info(const char *path, uint64_t *records, uint64_t *bytes);

/* ---------------------------------------------------------------------------------------- */
/* Compaction and copies (docs/FORMAT.md §11)                                               */
/* ---------------------------------------------------------------------------------------- */

/**
 * Called as a long operation goes (compacted copies, compaction, backups, restores) with the
 * bytes of the database file done so far and their total (0 when unknown), from the calling
 * thread, after each chunk (a few MiB) and once at the end with done == total.
 */
typedef void (*cs_progress)(void *ctx, uint64_t done, uint64_t total);

/**
 * Writes a compacted copy of the version the READ transaction `txn` reads to a new file at
 * `path`: only the nodes that version reaches, laid out for reading (each column's leaves
 * together, in key order), with empty free lists. The copy keeps the version number, the
 * user's schema version and the change history; it is synced (file and directory) before this
 * returns and has no lock file yet. Writers may go on meanwhile. Errors: CS_EXISTS (`path`
 * exists; it is left alone), CS_MISUSE (a WRITE transaction), CS_CORRUPT (the version is
 * damaged; nothing is left at `path`), CS_FULL, CS_IOERR, CS_PERM. `progress` (may be NULL)
 * is called with the bytes written and the copy's size.
 */
int cs_txn_write_copy(cs_txn *txn, const char *path, cs_progress progress, void *ctx);

/** What cs_db_compact did. */
typedef struct cs_compact_info {
    uint64_t size_before; /* physical size of the file before */
    uint64_t size_after;  /* physical size of the compacted file */
    uint64_t version;     /* the version copied (unchanged by compaction) */
} cs_compact_info;

/**
 * Compacts the database at `path` in place: writes a compacted copy of its newest version to
 * `<path>.compact`, syncs it, verifies it, renames it over `path` and syncs the directory. A
 * crash at any point leaves the old file or the new one at `path`. Needs the file to itself:
 * when another process has it open, CS_BUSY with a message naming the processes (pids from the
 * lock file); when this process has it open through another handle, CS_BUSY too. Processes
 * that open the file meanwhile wait, then open the new file. `opts`: its durability and io
 * are used (the io for every call on the file and its copy); its flags are ignored (the file
 * must exist and be writable). `progress` (may be NULL) is called with the bytes of the copy
 * written and its size. `out` may be NULL. Errors as cs_txn_write_copy, plus CS_NOTFOUND,
 * CS_BUSY. The file is opened for writing, so its lock file must be possible to create: where
 * it is not (an unwritable directory, a read-only file system), compaction fails as that open
 * does (CS_PERM, CS_IOERR) and changes nothing.
 */
int cs_db_compact(const char *path, const cs_options *opts, cs_progress progress, void *ctx, cs_compact_info *out);

/** Where the bytes of one version go (cs_txn_space): every node that version reaches, counted
 *  once, by the part of the file it belongs to. */
typedef struct cs_space_info {
    uint64_t compacted_size; /* the size of a compacted copy of the version (cs_txn_write_copy) */
    uint64_t header_bytes;   /* the file header */
    uint64_t top_bytes;      /* the top node and the table list */
    uint64_t schema_bytes;   /* the schema */
    uint64_t table_bytes;    /* every table: objects, columns, collections and indexes */
    uint64_t history_bytes;  /* the change history (docs/FORMAT.md §8) */
    uint64_t other_bytes;    /* top slots this library does not know (a later format's) */
} cs_space_info;

/**
 * Counts the bytes of the version the READ transaction `txn` reads, by part (`out`), and per
 * table into `tables` (may be NULL): `tables[k]` receives the bytes of the table with key `k`
 * (its node, cluster tree, columns, collections and indexes) for k < `ntables`; slots without
 * a table, and keys past cs_table_slots(txn), receive 0. The parts add up to compacted_size.
 * Walks every node once. Errors: CS_MISUSE (a WRITE transaction), CS_CORRUPT, CS_NOMEM.
 */
int cs_txn_space(cs_txn *txn, uint64_t *tables, uint32_t ntables, cs_space_info *out);

/* ---------------------------------------------------------------------------------------- */
/* Backups (docs/FORMAT.md §12)                                                             */
/* ---------------------------------------------------------------------------------------- */

/** What a backup holds (cs_backup_write, cs_backup_check, cs_backup_restore). */
typedef struct cs_backup_info {
    uint64_t version;      /* the database version backed up */
    uint32_t format;       /* its format version */
    uint32_t pad;          /* zero */
    uint64_t db_bytes;     /* size of the database file it restores to */
    uint64_t backup_bytes; /* size of the backup file */
    uint64_t created;      /* when it was written (seconds since 1970, UTC) */
} cs_backup_info;

/**
 * Writes a backup of the newest version of `db` to the new file `out`: a compacted copy
 * (cs_txn_write_copy's bytes) compressed as one LZ4 frame with block and content checksums,
 * after a header that says what it is. Taken from a read transaction: writers go on. The file
 * is synced before this returns. `progress` may be NULL; `info` may be NULL. Errors: CS_EXISTS
 * (`out` exists; left alone), CS_CORRUPT (the version is damaged; nothing is left at `out`),
 * CS_FULL, CS_IOERR, CS_PERM.
 */
int cs_backup_write(cs_db *db, const char *out, cs_progress progress, void *ctx, cs_backup_info *info);

/** Reads a whole backup and checks its header, checksums and size without writing anything. */
int cs_backup_check(const char *in, cs_backup_info *info);

enum {
    CS_RESTORE_FORCE = 1, /* replace an existing database at the target */
};

/**
 * Restores the backup `in` to the database file `path`: decompresses it into
 * `<path>.restore`, checks every checksum and the size, syncs it, verifies it as
 * cs_db_verify does, and only then renames it over `path` (and syncs the directory). A damaged
 * or truncated backup is CS_CORRUPT and leaves `path` as it was. An existing `path` is
 * CS_EXISTS unless `flags` has CS_RESTORE_FORCE; then it must not be open in any process or
 * through another handle (CS_BUSY, as cs_db_compact). Errors also CS_NOTFOUND (no backup),
 * CS_VERSION (a newer backup or format), CS_FULL, CS_IOERR, CS_PERM. `opts` may be NULL: its
 * io is used for every read, write, sync, rename, unlink and directory sync of the restore and
 * its durability says whether to sync (CS_DURABILITY_FULL, the default) or not; its flags are
 * ignored. `progress` (may be NULL) is called with the bytes restored and the database's size.
 */
int cs_backup_restore(const char *in, const char *path, const cs_options *opts, uint32_t flags, cs_progress progress,
                      void *ctx, cs_backup_info *info);

/* ---------------------------------------------------------------------------------------- */
/* Transactions                                                                             */
/* ---------------------------------------------------------------------------------------- */

enum {
    CS_TXN_READ = 0,  /* a read transaction on the newest version */
    CS_TXN_WRITE = 1, /* a write transaction (waits for the writer lock) */
};

/** Begins a transaction. Errors: CS_BUSY (too many live versions), CS_READONLY. */
int cs_txn_begin(cs_db *db, int mode, cs_txn **out);
/** Promotes a READ transaction to WRITE: takes the writer lock, advances to the newest
 *  version. Errors: CS_MISUSE if already writing, CS_READONLY. */
int cs_txn_promote(cs_txn *txn);
/** Commits a WRITE transaction; it then reads the version it wrote. On failure the
 *  transaction is rolled back and this process keeps reading the previous version. A failure
 *  before the header write leaves the previous version as the file's newest. A failure while
 *  writing or syncing the header leaves the outcome undecided until the file is reopened: it
 *  then holds the previous version or the new one, never anything else; until then every
 *  write on the file is refused with CS_IOERR. A write in which an object creation
 *  (cs_obj_create, cs_obj_create_primary, cs_obj_create_values, cs_obj_create_embedded, the
 *  cs_obj_create_many calls) failed
 *  part-way, out of memory or file space after it had begun to change the write's nodes, is
 *  refused: it is rolled back and the commit returns that creation's code. */
int cs_txn_commit(cs_txn *txn);
/** Discards a WRITE transaction's changes; it then reads the version it started on. */
int cs_txn_rollback(cs_txn *txn);
/** Moves a READ transaction to the newest committed version. *changed (may be NULL) says
 *  whether the version moved. */
int cs_txn_advance(cs_txn *txn, bool *changed);
/** Ends the transaction (rolling back a write) and frees it. */
int cs_txn_end(cs_txn *txn);
/** Moves a READ transaction forward to exactly the version `at` (a transaction of the same file,
 *  which keeps that version pinned) reads. CS_MISUSE when either is writing, when they belong to
 *  different files or when that version is older than the one `txn` reads. */
int cs_txn_advance_to(cs_txn *txn, const cs_txn *at);
/** Begins on handle `db` (a handle of the same file as `at`, which may be `at`'s own) a
 *  *frozen* READ transaction reading exactly the version `at` reads, and pinning it until
 *  cs_txn_end. A frozen transaction never moves (advance and promote are CS_MISUSE) and keeps
 *  no per-transaction caches, so unlike every other transaction several threads may read
 *  through it at the same time; the accessors (cs_obj, cs_coll) and queries made through it
 *  are still each used by one thread at a time. CS_MISUSE when `at` is writing or `db` opens
 *  another file. */
int cs_txn_freeze(cs_db *db, const cs_txn *at, cs_txn **out);
/** Whether the transaction was begun by cs_txn_freeze. */
bool cs_txn_is_frozen(const cs_txn *txn);
/** Whether two transactions read the same file (the same open file of this process: a path
 *  deleted and created again is another file). */
bool cs_txn_same_file(const cs_txn *a, const cs_txn *b);
/** Whether transaction `t` reads the file handle `db` is on (as cs_txn_same_file). */
bool cs_db_same_file(const cs_db *db, const cs_txn *t);
/** The version the transaction reads (for a write: the version it started on). */
uint64_t cs_txn_version(const cs_txn *txn);
/** True while the transaction is writing. */
bool cs_txn_is_writing(const cs_txn *txn);
/** Bytes the last successful commit on this transaction wrote to the file (nodes, free lists,
 *  top and header), for measuring how a commit's cost grows. */
uint64_t cs_txn_last_commit_bytes(const cs_txn *txn);
/** The writes (pwrite calls or stores through the I/O layer's write_mapped, the header's
 *  included) and syncs (fdatasync) the last successful commit on this transaction made; either
 *  pointer may be NULL. A one-row commit makes one or
 *  two writes of its nodes plus the header, and one sync in FULL durability (docs/FORMAT.md
 *  §2, Commit protocol; §7, Placement). */
void cs_txn_last_commit_io(const cs_txn *txn, uint64_t *writes, uint64_t *syncs);

/* ---------------------------------------------------------------------------------------- */
/* Schema                                                                                   */
/* ---------------------------------------------------------------------------------------- */

/** Table flags. */
enum {
    CS_TABLE_EMBEDDED = 1, /* objects have exactly one owner and are deleted with it */
};

/** Column flags. */
enum {
    CS_COL_NULLABLE = 1, /* values (or collection elements) may be null */
    CS_COL_INDEXED = 2,  /* keep an ordered index (query engine) */
    CS_COL_PRIMARY = 4,  /* the primary key (set with cs_table_set_primary_key) */
    CS_COL_HIDDEN = 8,   /* a backlink column, created and kept by the core */
};

/** Sentinel for "no column" / "no table". */
#define CS_NONE UINT32_MAX

typedef struct cs_table_info {
    const char *name;   /* valid while the transaction reads the same schema */
    uint32_t flags;     /* CS_TABLE_* */
    uint32_t col_slots; /* column keys are 0..col_slots-1; removed ones read as CS_NOTFOUND */
    uint32_t primary;   /* primary key column or CS_NONE */
    uint64_t count;     /* number of objects */
} cs_table_info;

typedef struct cs_column_info {
    const char *name;       /* valid while the transaction reads the same schema */
    cs_type type;           /* element type */
    cs_coll_kind coll;      /* collection kind */
    uint32_t flags;         /* CS_COL_* */
    uint32_t target;        /* LINK / BACKLINK: target table (for BACKLINK: the origin table) */
    uint32_t origin_col;    /* BACKLINK: the link column in the origin table; else CS_NONE */
} cs_column_info;

/** Table keys are 0..cs_table_slots()-1; removed tables read as CS_NOTFOUND. */
uint32_t cs_table_slots(cs_txn *txn);
int cs_table_info_get(cs_txn *txn, uint32_t table, cs_table_info *out);
/** Finds a table by name. CS_NOTFOUND if none. */
int cs_table_find(cs_txn *txn, const char *name, uint32_t *table);
/** Adds a table (WRITE). CS_EXISTS if the name is taken. Keys of removed tables are reused. */
int cs_table_add(cs_txn *txn, const char *name, uint32_t flags, uint32_t *table);
/** Removes a table and its objects (WRITE). CS_CONSTRAINT while a link column of another
 *  table targets it. */
int cs_table_remove(cs_txn *txn, uint32_t table);
/** Renames a table (WRITE). */
int cs_table_rename(cs_txn *txn, uint32_t table, const char *name);

int cs_column_info_get(cs_txn *txn, uint32_t table, uint32_t col, cs_column_info *out);
int cs_column_find(cs_txn *txn, uint32_t table, const char *name, uint32_t *col);
/**
 * Adds a column (WRITE). O(1): existing objects read the default (null when nullable, else
 * zero / empty / false). A LINK column (or a collection of links) needs `target`; it adds a
 * hidden BACKLINK column to the target table. Lists and sets of links never hold null, so
 * CS_COL_NULLABLE on them is CS_MISUSE; a set cannot hold embedded objects (CS_MISUSE); map
 * values of links are always nullable. CS_EXISTS if the name is taken.
 */
int cs_column_add(cs_txn *txn, uint32_t table, const char *name, cs_type type,
                  cs_coll_kind coll, uint32_t flags, uint32_t target, uint32_t *col);
/** Removes a column and frees its data (WRITE); removes the backlink column of a link. */
int cs_column_remove(cs_txn *txn, uint32_t table, uint32_t col);
/** Renames a column (WRITE). */
int cs_column_rename(cs_txn *txn, uint32_t table, uint32_t col, const char *name);
/** Makes `col` the table's primary key (Int, String, ObjectId or UUID, nullable allowed), or
 *  clears it with CS_NONE (WRITE). A unique index is built: CS_CONSTRAINT if two objects share
 *  a value. Objects of a table with a primary key are created with cs_obj_create_primary, and
 *  their primary key cannot be changed afterwards (CS_MISUSE). */
int cs_table_set_primary_key(cs_txn *txn, uint32_t table, uint32_t col);

/** Adds or drops the ordered index of a column (WRITE). Indexable: Int, Bool, String,
 *  Timestamp, ObjectId, UUID and Mixed single-value columns (else CS_TYPE). Building it visits
 *  every object. A primary-key column keeps its index regardless. A Mixed index serves equality
 *  and IN (numbers equal across Int, Float, Double and Decimal128) and makes the file format
 *  version 2. */
int cs_column_set_indexed(cs_txn *txn, uint32_t table, uint32_t col, bool indexed);

/** The user's schema version stored in the file (0 for a new file). */
uint64_t cs_schema_version(cs_txn *txn);
int cs_schema_version_set(cs_txn *txn, uint64_t version);

/* ---------------------------------------------------------------------------------------- */
/* Objects                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/**
 * An object accessor. Allocate it yourself (stack, struct field); no free is needed.
 * Its fields are private to the core. It caches the cluster leaf and row of the object and
 * revalidates that cache with one comparison when the transaction's snapshot or tree moved.
 */
typedef struct cs_obj {
    cs_txn *txn;      /* the transaction it reads through */
    uint32_t table;   /* table key */
    uint32_t row;     /* private: row within the cached leaf */
    int64_t key;      /* object key */
    uint64_t epoch;   /* private: txn epoch the cache is valid for */
    const void *leaf; /* private: cached cluster leaf */
} cs_obj;

/** Creates an object with the next key of the table (WRITE); `out` accesses it. Embedded
 *  tables refuse this (CS_MISUSE): create embedded objects through their owner. */
int cs_obj_create(cs_txn *txn, uint32_t table, cs_obj *out);
/** Creates an object whose primary key is `pk` (WRITE). CS_CONSTRAINT if an object with that
 *  primary key exists; CS_TYPE if `pk` does not fit the column. In a table that got its Int
 *  primary key before it held an object, the key is `pk` itself when pk is in [0, 2^61) and
 *  was never an object's key before; other objects get keys from 2^61 up (docs/FORMAT.md §6.1).
 *  Keys are never reused in a table. */
int cs_obj_create_primary(cs_txn *txn, uint32_t table, const cs_value *pk, cs_obj *out);
/** Creates an object with values (WRITE): the value of column cols[c] is values[c], the columns
 *  not named hold their defaults. Each value is checked as cs_obj_set checks it, all before
 *  anything is created; link, Mixed, collection and backlink columns cannot be named (CS_TYPE:
 *  set links with cs_obj_set afterwards), nor a column twice (CS_MISUSE). In a table with a
 *  primary key its column must be named (else CS_MISUSE) and the object is created as
 *  cs_obj_create_primary creates it (the same key, CS_CONSTRAINT if an object with that primary
 *  key exists); otherwise as cs_obj_create does. The result is that of the create followed by a
 *  cs_obj_set of each value, in one call: every index entry goes in once, with its value, and
 *  the change history holds the create alone. Embedded tables refuse this (CS_MISUSE). A
 *  failure once the row is being made (CS_NOMEM, CS_FULL, CS_IOERR) may leave part of it in the
 *  transaction, which cs_txn_commit then refuses: roll it back. */
int cs_obj_create_values(cs_txn *txn, uint32_t table, size_t ncols, const uint32_t *cols, const cs_value *values,
                         cs_obj *out);
/**
 * Creates `n` objects with the table's next keys (WRITE), consecutive from the first, which is
 * stored in *first_key (may be NULL), and sets `ncols` columns of each in the same call: the
 * value of column cols[c] for the r-th new object is values[c * n + r] (column by column).
 * Columns not named hold their defaults. The objects are appended a leaf at a time: each leaf's
 * keys, then each column's values for that leaf, as one append per value (docs/ARCHITECTURE.md,
 * Short columns). Values are checked as cs_obj_set checks them, all before anything is created
 * (CS_TYPE, CS_NOTFOUND for a link to a missing object). Each indexed column's entry for a new
 * object goes in once, with the object's value (or the default when the column is not named).
 * In a table with a primary key its column must be named (else CS_MISUSE), and every object is
 * created as cs_obj_create_primary would create it, one after the other in row order (the same
 * keys, the same change history): CS_CONSTRAINT, before anything is created, when two rows
 * share a primary key or a row's is an existing object's. Such keys need not be consecutive:
 * *first_key is the first row's key, and cs_obj_create_many_keys gives every row's. Embedded
 * tables refuse this (CS_MISUSE); collection and backlink columns cannot be named (CS_TYPE).
 * Link columns go into the new rows with the other values, their backlinks in after the rows
 * (row after row), when every link names an object that exists before the call, of a table that
 * is not embedded; otherwise (a link to a row of the batch, to no object, to an embedded
 * object), and with Mixed columns, the call fills the table object by object through
 * cs_obj_set's checks. After any other error (CS_CONSTRAINT and CS_TYPE come before anything is
 * created) rows may be in place: roll the transaction back. When the rows were being made a
 * leaf or a key at a time (not object by object), cs_txn_commit refuses the transaction.
 */
int cs_obj_create_many(cs_txn *txn, uint32_t table, size_t n, size_t ncols, const uint32_t *cols,
                       const cs_value *values, int64_t *first_key);
/** cs_obj_create_many that stores the key of the r-th new object in keys[r] (`keys` may be NULL,
 *  else it has room for `n`). */
int cs_obj_create_many_keys(cs_txn *txn, uint32_t table, size_t n, size_t ncols, const uint32_t *cols,
                            const cs_value *values, int64_t *keys);
/** cs_obj_create_many for Int columns: ints[c][r] is the value of column cols[c] (an Int
 *  column; CS_TYPE otherwise) for the r-th new object. */
int cs_obj_create_many_int(cs_txn *txn, uint32_t table, size_t n, size_t ncols, const uint32_t *cols,
                           const int64_t *const *ints, int64_t *first_key);
/** Finds the object with primary key `pk`: CS_NOTFOUND if none. An Int primary key of a table
 *  whose keys are its primary keys (cs_obj_create_primary) is found by its key, one descent of
 *  the table's tree, and a cs_obj_open of the found key right after it (in a read or a write
 *  transaction, before any write that moves rows) costs no second one; any other is one index
 *  lookup. */
int cs_table_find_primary(cs_txn *txn, uint32_t table, const cs_value *pk, int64_t *key);

/** Points `out` at an existing object. CS_NOTFOUND if there is none with that key. */
int cs_obj_open(cs_txn *txn, uint32_t table, int64_t key, cs_obj *out);
/** Points `out` at object `key` of `table` without looking it up (an accessor that finds its
 *  row on first use, CS_NOTFOUND then if the object does not exist). `hint`, if not NULL, is an
 *  accessor of the same table already positioned: when `key` is the key after it in the same
 *  cluster leaf (a pass in key order), `out` starts positioned there and needs no tree descent. */
void cs_obj_prepare(cs_txn *txn, uint32_t table, int64_t key, const cs_obj *hint, cs_obj *out);
/** Moves accessor `obj` to object `key` of its table in place: the same as cs_obj_prepare with
 *  `obj` as both hint and result (positioned when `key` is the key after it in the same cluster
 *  leaf, else finding its row on first use), without copying the accessor. */
void cs_obj_advance(cs_obj *obj, int64_t key);
/** Whether the accessor's object exists in its transaction now: CS_OK with *exists false when it
 *  was deleted (or its table removed), CS_CORRUPT when the nodes that would tell are damaged
 *  (a damaged file is not an absent object), CS_MISUSE without an accessor or out pointer. */
int cs_obj_check_exists(cs_obj *obj, bool *exists);
/** cs_obj_check_exists as a bool: true if the object exists now. A damaged node reads as false,
 *  so where corruption must not pass for "deleted", use cs_obj_check_exists. */
bool cs_obj_exists(cs_obj *obj);
/** Deletes the object (WRITE): links to it are removed or nulled, embedded objects it owns
 *  are deleted with it. */
int cs_obj_delete(cs_obj *obj);

/** Reads a single-value column. For a collection column use cs_coll_*. */
int cs_obj_get(cs_obj *obj, uint32_t col, cs_value *out);
/** Writes a single-value column (WRITE). CS_TYPE if the value does not fit the column;
 *  null into a non-nullable column is CS_TYPE. A link into an embedded table is CS_MISUSE
 *  (use cs_obj_create_embedded). */
int cs_obj_set(cs_obj *obj, uint32_t col, const cs_value *value);
/** Fast paths for the commonest types (same rules as cs_obj_get/set). A null reads as 0. */
int cs_obj_get_int(cs_obj *obj, uint32_t col, int64_t *out);
int cs_obj_set_int(cs_obj *obj, uint32_t col, int64_t value);
/** True if the column is null for this object. */
int cs_obj_is_null(cs_obj *obj, uint32_t col, bool *out);
/** Creates a new embedded object and links it from the single-link column `col`
 *  (deleting the embedded object it replaces). */
int cs_obj_create_embedded(cs_obj *obj, uint32_t col, cs_obj *out);
/** Makes a Mixed column hold a new empty nested list or dictionary (kind CS_TYPE_LIST or
 *  CS_TYPE_DICT); open it with cs_coll_open. */
int cs_obj_set_collection(cs_obj *obj, uint32_t col, cs_type kind);

/** Number of objects of `origin_table` whose column `origin_col` links to this object
 *  (a list holding it twice counts twice). */
int cs_obj_backlink_count(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, size_t *out);
/** The i-th origin object key of those backlinks (in backlink order: the order the links were
 *  made, a removed link's place taken by the last one; docs/FORMAT.md, backlink column). */
int cs_obj_backlink_get(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, size_t i,
                        int64_t *key);

/** Number of objects in a table. */
int cs_table_count(cs_txn *txn, uint32_t table, uint64_t *out);
/** Deletes every object of a table (WRITE), with the same link rules as cs_obj_delete. */
int cs_table_clear(cs_txn *txn, uint32_t table);

/* ---------------------------------------------------------------------------------------- */
/* Index lookups                                                                            */
/* ---------------------------------------------------------------------------------------- */

/** The first object (lowest key) whose indexed column equals `value`; CS_NOTFOUND if none.
 *  CS_MISUSE if the column has no index. */
int cs_index_find(cs_txn *txn, uint32_t table, uint32_t col, const cs_value *value, int64_t *key);
/** Every object whose indexed column equals `value`, in key order; free with cs_keys_free. On
 *  a Mixed column, values as stored: a link to a deleted object is still found by its link. */
int cs_index_find_all(cs_txn *txn, uint32_t table, uint32_t col, const cs_value *value,
                      int64_t **keys, size_t *count);
/** Every object with lo <= value <= hi (either bound may be NULL), in value order, then key
 *  order (CS_MISUSE on a Mixed index, which answers equality only). Values of another type or null sort by the value order of cs_value_compare (null first);
 *  Float and Double bounds on an Int index compare by numeric value (NaN before numbers). */
int cs_index_range(cs_txn *txn, uint32_t table, uint32_t col, const cs_value *lo,
                   const cs_value *hi, int64_t **keys, size_t *count);
void cs_keys_free(int64_t *keys);

/* ---------------------------------------------------------------------------------------- */
/* Iteration                                                                                */
/* ---------------------------------------------------------------------------------------- */

/** Iterates the objects of a table in key order. Caller-allocated; fields are private.
 *  Writing to the table during iteration is allowed: the next call resumes with the first
 *  object whose key is greater than the last one returned (objects created meanwhile have
 *  greater keys, so they are visited; deleted ones are skipped). */
typedef struct cs_iter {
    cs_txn *txn;       /* private */
    uint32_t table;    /* private */
    uint32_t row;      /* private: next row in the current leaf */
    uint64_t epoch;    /* private */
    const void *leaf;  /* private: current leaf */
    int64_t next_key;  /* private: key to resume from */
    uint32_t done;     /* private */
    uint32_t pad;      /* private */
} cs_iter;

int cs_iter_init(cs_iter *it, cs_txn *txn, uint32_t table);
/** Points `obj` at the next object. Returns CS_OK, or CS_NOTFOUND at the end. */
int cs_iter_next(cs_iter *it, cs_obj *obj);

/* ---------------------------------------------------------------------------------------- */
/* Collections: List, Set, Map (and nested Mixed collections)                               */
/* ---------------------------------------------------------------------------------------- */

/** A collection accessor: caller-allocated, fields private. */
typedef struct cs_coll {
    cs_obj obj;          /* the owning object */
    uint32_t col;        /* the owning column */
    uint8_t kind;        /* private: cs_coll_kind (LIST, SET, MAP) */
    uint8_t elem_type;   /* private: element cs_type */
    uint8_t depth;       /* private: nesting depth for Mixed collections (0 = the column) */
    uint8_t nullable;    /* private */
    uint32_t target;     /* private: link target table */
    uint32_t identity;   /* private: a nested collection's identity when opened (cs_coll_identity) */
    struct {
        int64_t index;    /* position in a list, or -1 for a map key */
        const char *key;  /* map key (borrowed from the caller; must outlive the accessor) */
        size_t key_len;   /* map key length */
    } path[8];           /* private: path from the column to a nested collection */
} cs_coll;

/** Opens the collection stored in column `col` of `obj` (a List, Set or Map column, or a Mixed
 *  column holding a nested collection). CS_TYPE otherwise. */
int cs_coll_open(cs_obj *obj, uint32_t col, cs_coll *out);
/** Opens the nested collection held at position `index` of a list (or key `key` of a map)
 *  whose elements are Mixed. The key must stay valid while `out` is used. */
int cs_coll_open_nested(const cs_coll *parent, int64_t index, const char *key, size_t key_len,
                        cs_coll *out);
/** Kind of the collection: CS_COLL_LIST, CS_COLL_SET or CS_COLL_MAP. */
cs_coll_kind cs_coll_kind_of(const cs_coll *c);
/** The identity of a collection nested in a Mixed value as it was when `c` was opened: a nonzero
 *  number drawn when the collection was made (cs_obj_set_collection, cs_list_set_collection,
 *  cs_map_set_collection; kept when a list moves it), so a collection
 *  made again at the same path (the property set to a new list) has another one. 0 for a List,
 *  Set or Map property, and for a nested collection written before identities were kept
 *  (docs/FORMAT.md §6.3, Mixed leaf). An accessor that names a collection by its path compares
 *  this with the identity it opened first to tell that the collection was replaced. */
uint32_t cs_coll_identity(const cs_coll *c);
int cs_coll_size(cs_coll *c, size_t *out);
/** Removes every element (WRITE). For links into an embedded table the objects are deleted. */
int cs_coll_clear(cs_coll *c);

/* List (and positional access to sets and maps' values) */
int cs_list_get(cs_coll *c, size_t i, cs_value *out);
int cs_list_set(cs_coll *c, size_t i, const cs_value *v);
int cs_list_insert(cs_coll *c, size_t i, const cs_value *v);
int cs_list_append(cs_coll *c, const cs_value *v);
int cs_list_erase(cs_coll *c, size_t i);
/** Moves the element at `from` so that it ends at `to`. */
int cs_list_move(cs_coll *c, size_t from, size_t to);
int cs_list_swap(cs_coll *c, size_t i, size_t j);
/** Inserts a new embedded object at `i` of a list of links to an embedded table. */
int cs_list_insert_embedded(cs_coll *c, size_t i, cs_obj *out);
/** Makes element `i` of a Mixed list a new empty nested list or dictionary. */
int cs_list_set_collection(cs_coll *c, size_t i, cs_type kind);

/* Set: elements sorted by cs_value_compare; cs_list_get reads by position. */
int cs_set_insert(cs_coll *c, const cs_value *v, bool *inserted);
int cs_set_erase(cs_coll *c, const cs_value *v, bool *erased);
/** Position of `v`, or CS_NOTFOUND. */
int cs_set_find(cs_coll *c, const cs_value *v, size_t *index);

/* Map: string keys sorted by bytes. */
int cs_map_get(cs_coll *c, const char *key, size_t key_len, cs_value *out); /* CS_NOTFOUND */
int cs_map_set(cs_coll *c, const char *key, size_t key_len, const cs_value *v);
int cs_map_erase(cs_coll *c, const char *key, size_t key_len, bool *erased);
/** The i-th entry in key order. */
int cs_map_get_at(cs_coll *c, size_t i, cs_value *key, cs_value *value);
/** Position of a key, or CS_NOTFOUND. */
int cs_map_find(cs_coll *c, const char *key, size_t key_len, size_t *index);
/** Sets `key` to a new embedded object (map of links to an embedded table). */
int cs_map_set_embedded(cs_coll *c, const char *key, size_t key_len, cs_obj *out);
/** Makes `key` of a Mixed dictionary hold a new empty nested list or dictionary. */
int cs_map_set_collection(cs_coll *c, const char *key, size_t key_len, cs_type kind);

/* ---------------------------------------------------------------------------------------- */
/* Queries                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/**
 * A query over one table, in the query language of RealmSwift's filter(): comparisons
 * (== != < <= > >= BEGINSWITH ENDSWITH CONTAINS LIKE with [c] [d] [cd]), BETWEEN {a, b},
 * IN {a, b} / IN %@, AND && OR || NOT !, parentheses, TRUEPREDICATE / FALSEPREDICATE, key
 * paths through links and collections (implicitly ANY; ANY/SOME/ALL/NONE prefixes),
 * @count/@size, @min/@max/@sum/@avg, @allKeys/@allValues, map['key'], @links.Class.property,
 * @type on Mixed ("int", "string", ...), SUBQUERY(path, $x, predicate).@count, placeholders
 * $0.. and %@ %K %d %f
 * bound from `args` (a LIST value binds a list), literals (numbers, 'strings', "strings",
 * true, false, nil, oid(..), uuid(..), T<sec>:<nsec>, B64"..."), and trailing SORT(key ASC|DESC,
 * ...), DISTINCT(key, ...) and LIMIT(n). A syntax or type error is CS_QUERY with a message
 * naming the token and its line:column. The query reads through `txn` each time it runs, so it
 * follows the transaction to newer versions (and a changed schema).
 */
typedef struct cs_query cs_query;

typedef enum cs_aggregate {
    CS_AGG_COUNT = 1, /* number of matches */
    CS_AGG_SUM = 2,   /* Int (overflow is CS_OVERFLOW), Float, Double; 0 when empty */
    CS_AGG_MIN = 3,   /* numbers and dates; null when empty */
    CS_AGG_MAX = 4,   /* numbers and dates; null when empty */
    CS_AGG_AVG = 5,   /* numbers (a Double); null when empty */
} cs_aggregate;

int cs_query_new(cs_txn *txn, uint32_t table, const char *text, size_t len, const cs_value *args,
                 size_t nargs, cs_query **out);
/** A query over the elements of a collection, in collection order. For a List/Set of objects
 *  (or a Map's object values) the results are object keys, duplicates kept; for a collection of
 *  values they are positions, and `self` names the element ("self > 3"). */
int cs_query_new_coll(cs_coll *coll, const char *text, size_t len, const cs_value *args, size_t nargs,
                      cs_query **out);
/** A query over the objects of `origin_table` whose link column `origin_col` links to `obj`
 *  (LinkingObjects), in backlink order (cs_obj_backlink_get). */
int cs_query_new_backlinks(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, const char *text,
                           size_t len, const cs_value *args, size_t nargs, cs_query **out);

/**
 * Public names for a query (RealmSwift's className() and propertiesMapping()): each entry gives
 * a table, or one column of it, the name the query text uses for it. With a map:
 *  - a class or property name in the text (key paths at any depth, %K arguments, SORT and
 *    DISTINCT keys, SUBQUERY paths, `@links.Class.property`, `list.@sum.property`) is looked up
 *    first among the public names of the table it applies to, then among the stored names;
 *  - a stored name whose table or column has an entry with another public name is unknown in
 *    that query (only the public name reaches it), while a public name that equals some other
 *    column's stored name reaches the mapped column;
 *  - names without an entry resolve as they are;
 *  - messages name tables and columns by their public names ("unknown property 'agee' on Dog").
 * Entries are checked and copied when the query is made (the map may be freed after the call):
 * CS_MISUSE with a message naming the entry for a table or column that does not exist, a
 * backlink column, a missing or empty public name (or one over 1024 bytes), two entries for one
 * table or column, or one public name given to two classes or to two properties of one class.
 * Names are resolved when the query is bound to the schema (when it is made, and again only
 * after the schema changes), never while it runs. An entry keeps applying across versions while
 * its key still names a table or column of the same stored name; after that one is removed (or
 * its key reused) the entry is ignored.
 */
typedef struct cs_name_map_entry {
    uint32_t table;          /* table key */
    uint32_t col;            /* column key, or CS_NONE for the entry of the table itself, or
                                CS_NAME_BACKLINK | a link column key of `table` (a backlink alias) */
    const char *public_name; /* NUL-terminated: the class's or the property's public name */
} cs_name_map_entry;

/**
 * Backlink aliases (RealmSwift's LinkingObjects properties): an entry whose `col` is
 * CS_NAME_BACKLINK | C, for a link column C (single link, List, Set or Map of objects) of
 * `table` = O, gives the table C links to (T) a property named `public_name` that stands for
 * `@links.O.C`: the objects of O whose C links to the object. In key paths of any query with the
 * map (`boxes.@count`, `ANY boxes.name == 'B'`, `boxes.rank == 1` (implicitly ANY),
 * `boxes.@max.rank`, SUBQUERY(boxes, $b, ...), %K) it behaves exactly as that @links form.
 * Its public name shares the scope of T's property names (two equal names are CS_MISUSE) and
 * is looked up before T's stored column names. CS_MISUSE also when C is not a live link column of
 * O. Like other entries it stops applying once O or C is removed or renamed.
 * Example: ColBox.items links to ColItem; ColItem's `boxes` is
 * `cs_name_map_backlink(colBoxTable, itemsCol, "boxes")`.
 */
#define CS_NAME_BACKLINK 0x80000000u

/** The name map entry for a backlink alias (see CS_NAME_BACKLINK). */
static inline cs_name_map_entry cs_name_map_backlink(uint32_t origin_table, uint32_t origin_col, const char *public_name)
{
    cs_name_map_entry e;
    e.table = origin_table;
    e.col = CS_NAME_BACKLINK | origin_col;
    e.public_name = public_name;
    return e;
}

typedef struct cs_name_map {
    const cs_name_map_entry *entries; /* `count` entries, in any order */
    size_t count;                     /* 0: no public names (as a NULL map) */
} cs_name_map;

/** cs_query_new, cs_query_new_coll and cs_query_new_backlinks with the public names of `names`
 *  (NULL: stored names only, exactly as the functions without a map). */
int cs_query_new_named(cs_txn *txn, uint32_t table, const char *text, size_t len, const cs_value *args,
                       size_t nargs, const cs_name_map *names, cs_query **out);
int cs_query_new_coll_named(cs_coll *coll, const char *text, size_t len, const cs_value *args, size_t nargs,
                            const cs_name_map *names, cs_query **out);
int cs_query_new_backlinks_named(cs_obj *obj, uint32_t origin_table, uint32_t origin_col, const char *text,
                                 size_t len, const cs_value *args, size_t nargs, const cs_name_map *names,
                                 cs_query **out);
/** Gives the query new values for its scalar arguments ($0.. / %@), without parsing it again
 *  (CS_MISUSE for a query that took a list argument: make a new one). */
int cs_query_set_args(cs_query *q, const cs_value *args, size_t nargs);
void cs_query_free(cs_query *q);
/** Number of matching objects (after DISTINCT and LIMIT). */
int cs_query_count(cs_query *q, uint64_t *out);
/** The matching object keys in result order (SORT, DISTINCT, LIMIT); free with cs_keys_free. */
int cs_query_keys(cs_query *q, int64_t **keys, size_t *count);
/** An aggregate of column `col` over the matches (docs/ARCHITECTURE.md, Values and their order, for empty sets); for a query over
 *  a collection of values, of the matching elements (`col` is ignored). */
int cs_query_aggregate(cs_query *q, uint32_t col, cs_aggregate op, cs_value *out);
/** How a query found its candidates the last time it ran (cs_query_count, cs_query_keys or
 *  cs_query_aggregate), for tests and tuning. */
typedef enum cs_plan_kind {
    CS_PLAN_NONE = 0,   /* the query has not run yet */
    CS_PLAN_SCAN = 1,   /* every object (or collection element) was tested */
    CS_PLAN_LEAVES = 2, /* Int conditions ran leaf by leaf over the column arrays */
    CS_PLAN_INDEX = 3,  /* an ordered index gave the candidates: ==, IN, <, <=, >, >=, BETWEEN,
                           BEGINSWITH, ==[c] or BEGINSWITH[c] on an indexed column, alone or as
                           one condition of the top-level AND chain */
    CS_PLAN_ALL = 4,    /* TRUEPREDICATE over a table: every object, nothing tested */
} cs_plan_kind;

typedef struct cs_query_plan {
    uint32_t kind;       /* cs_plan_kind */
    uint32_t col;        /* CS_PLAN_INDEX: the indexed column; else CS_NONE */
    uint64_t candidates; /* objects the plan produced (index: before the other conditions and any
                            re-check; scans: objects visited) */
    uint32_t ranges;     /* CS_PLAN_INDEX: index ranges scanned */
    uint32_t pad;        /* zero */
} cs_query_plan;

int cs_query_last_plan(const cs_query *q, cs_query_plan *out);

/**
 * Values of objects that live outside the database (RealmSwift's unmanaged objects), for
 * cs_query_match_source. An object is a handle of the caller's choosing (an int64); `table` is
 * the table the query's schema gives it. Each function returns CS_OK or an error, which the match
 * returns as it is.
 *  - get: the value of single-value column `col` (a link as cs_link(target table, handle), no
 *    link as null);
 *  - coll_size / coll_get: the number of elements of List, Set or Map column `col`, and element
 *    i: its value (links as for get) and, for a Map, its key (a string) in *map_key.
 * String and binary bytes must stay valid until cs_query_match_source returns.
 */
typedef struct cs_query_source {
    void *ctx; /* passed to each function */
    int (*get)(void *ctx, uint32_t table, int64_t handle, uint32_t col, cs_value *out);
    int (*coll_size)(void *ctx, uint32_t table, int64_t handle, uint32_t col, size_t *out);
    int (*coll_get)(void *ctx, uint32_t table, int64_t handle, uint32_t col, size_t i, cs_value *map_key,
                    cs_value *out);
} cs_query_source;

/**
 * Whether the predicate of table query `q` (made with cs_query_new or cs_query_new_named, so
 * parsed and type checked against the table's schema exactly as for the file's objects) holds for
 * object `handle` of `src`. The evaluation is the one every other query runs, with key paths read
 * through `src`: such objects have no backlinks (`@links` and backlink aliases yield nothing).
 * SORT, DISTINCT and LIMIT clauses are not applied. CS_MISUSE for a query that is not a table query.
 */
int cs_query_match_source(cs_query *q, const cs_query_source *src, int64_t handle, bool *out);

/**
 * A query over values of type `elem_type` that are not in the file (an unmanaged List of values),
 * parsed and type checked exactly as cs_query_new_coll's query over a collection of that element
 * type (`self` names the value). Run it with cs_query_match_value.
 */
int cs_query_new_values(cs_txn *txn, cs_type elem_type, const char *text, size_t len, const cs_value *args,
                        size_t nargs, const cs_name_map *names, cs_query **out);
/** Whether the predicate of `q` (made with cs_query_new_values) holds for `value`. CS_MISUSE for
 *  another kind of query. */
int cs_query_match_value(cs_query *q, const cs_value *value, bool *out);

/** Checks the syntax of a query with `nargs` arguments without a schema (CS_QUERY + message). */
int cs_query_check(const char *text, size_t len, size_t nargs);

/* ---------------------------------------------------------------------------------------- */
/* Change history                                                                           */
/* ---------------------------------------------------------------------------------------- */

/** Kinds of change record. The numbers are stored in the file and never reused. */
typedef enum cs_change_kind {
    CS_CHANGE_CREATE = 1,  /* objects key .. key + a - 1 of `table` were created */
    CS_CHANGE_DELETE = 2,  /* objects key .. key + a - 1 of `table` were deleted */
    CS_CHANGE_SET = 3,     /* property `col` of object `key` was written */
    CS_CHANGE_INSERT = 4,  /* collection `col` of `key`: an element was inserted at position a */
    CS_CHANGE_ERASE = 5,   /* ... the element at position a was removed */
    CS_CHANGE_REPLACE = 6, /* ... the element at position a was replaced */
    CS_CHANGE_MOVE = 7,    /* ... the element at position a was moved to position b */
    CS_CHANGE_SWAP = 8,    /* ... the elements at positions a and b were swapped */
    CS_CHANGE_CLEAR = 9,   /* ... every element was removed */
    CS_CHANGE_SCHEMA = 10, /* the schema changed */
} cs_change_kind;

/** One change record. Set and map positions are positions in their sort order at the moment
 *  of the change; replaying a collection's records in order turns the old one into the new. */
typedef struct cs_change {
    uint64_t version;    /* the commit that made it */
    cs_change_kind kind; /* what happened */
    uint32_t table;      /* table key (CS_NONE for SCHEMA) */
    uint32_t col;        /* column key for SET and collection records, else CS_NONE */
    int64_t key;         /* object key */
    int64_t a;           /* CREATE, DELETE: number of consecutive keys; collections: a position */
    int64_t b;           /* MOVE: destination; SWAP: second position */
    int64_t time_us;     /* when `version` was committed: microseconds since 1970-01-01 UTC (the
                            committer's clock); 0 when the file does not say (a version committed
                            by a library that did not record commit times) */
} cs_change;

typedef struct cs_changes cs_changes;

/**
 * Opens the changes committed after version `since` up to the version `txn` reads, in commit
 * order. Properties written on objects created in the same commit are not listed separately;
 * writes inside collections nested in Mixed values are listed as a SET of the owning property.
 * The history is kept for versions newer than the oldest version any transaction pins, so a
 * reader that keeps a transaction (or a frozen snapshot) at `since` can always read it;
 * otherwise CS_NOTFOUND.
 */
int cs_changes_open(cs_txn *txn, uint64_t since, cs_changes **out);
/** The next record; CS_NOTFOUND after the last. CS_MISUSE if the transaction moved. */
int cs_changes_next(cs_changes *changes, cs_change *out);
/**
 * The primary key object `key` of `table` had when `version` (one of the versions `changes`
 * reads) deleted it, as the history recorded it (docs/FORMAT.md §8.3): an Int, String, ObjectId,
 * UUID or null value. A string points into the file and stays valid while the transaction reads
 * this version. CS_NOTFOUND when nothing is recorded: the class had no primary key, the object
 * was not deleted in that version (or was created in it too), or the version was committed by a
 * library that did not record deleted keys. CS_MISUSE if the transaction moved.
 */
int cs_changes_deleted_pk(cs_changes *changes, uint64_t version, uint32_t table, int64_t key, cs_value *out);
void cs_changes_close(cs_changes *changes);

/* ---------------------------------------------------------------------------------------- */
/* Feed slots (docs/ARCHITECTURE.md, Feed slots; docs/FORMAT.md §8.1)                       */
/* ---------------------------------------------------------------------------------------- */

/** The longest feed slot name, in bytes. */
#define CS_FEED_NAME_MAX 63

/** A feed slot: a named consumer of the change history. The history keeps every change after
 *  a valid slot's position (also when no transaction pins those versions), until the slot
 *  acknowledges it or is dropped; the versions' data is reclaimed as usual. */
typedef struct cs_feed_slot_info {
    char name[CS_FEED_NAME_MAX + 1]; /* NUL-terminated */
    uint64_t position;    /* every change up to this version is acknowledged */
    uint64_t held_bytes;  /* bytes of history kept for the changes after position (0 once invalid) */
    uint64_t limit;       /* the slot is invalidated when held_bytes would exceed this (0: no limit) */
    uint64_t invalidated; /* 0, or the version whose commit invalidated the slot */
    uint64_t over_bytes;  /* invalidated: the bytes it held back then */
} cs_feed_slot_info;

/** Creates a slot in a WRITE transaction; its position is the version this transaction commits
 *  as (the changes of later commits are kept for it). CS_EXISTS when the name is taken;
 *  CS_MISUSE for an empty name or one over CS_FEED_NAME_MAX bytes. */
int cs_feed_create(cs_txn *wtxn, const char *name, uint64_t limit_bytes);
/** Drops a slot (WRITE transaction): the history it held back is trimmed by the next commits. */
int cs_feed_drop(cs_txn *wtxn, const char *name);
/** Acknowledges every change up to `version` (WRITE transaction; at most the version it started
 *  on): the slot's position moves forward to it (never back). CS_FULL for an invalidated slot. */
int cs_feed_ack(cs_txn *wtxn, const char *name, uint64_t version);
/** The number of slots in the version `txn` reads, and slot i's state. */
int cs_feed_count(cs_txn *txn, uint32_t *n);
int cs_feed_slot_at(cs_txn *txn, uint32_t i, cs_feed_slot_info *out);
/** Slot `name`'s state (CS_NOTFOUND when there is none). */
int cs_feed_slot_get(cs_txn *txn, const char *name, cs_feed_slot_info *out);
/**
 * Opens the changes after version `since` (UINT64_MAX: after the slot's position) up to the
 * version `txn` reads, as cs_changes_open. `since` may be ahead of the position (a consumer
 * that keeps its own record of what it applied) but not behind it (CS_RANGE). An invalidated
 * slot is CS_FULL with a message naming the bytes and the limit; CS_NOTFOUND for no such slot.
 */
int cs_feed_changes_open(cs_txn *txn, const char *name, uint64_t since, cs_changes **out);

/* ---------------------------------------------------------------------------------------- */
/* Change notifications                                                                     */
/* ---------------------------------------------------------------------------------------- */

/**
 * A notifier follows one file from version to version and computes, once per version, what
 * changed for each of its watches (docs/ARCHITECTURE.md, Change notifications). It holds one
 * read transaction at the version it last computed (cs_notifier_txn), which keeps that version
 * and the change history after it. A notifier and its watches are used by one thread at a time
 * (callers serialise every call on them).
 *
 * A watch observes a table query (with its SORT, DISTINCT and LIMIT), a List, Set or Map
 * property, the backlinks of an object, or one object. Its changes accumulate from version to
 * version until cs_watch_take hands them out: so change sets that were not taken coalesce.
 */
typedef struct cs_notifier cs_notifier;
typedef struct cs_watch cs_watch;

/** Most columns in one key path of a watch's filter (also the depth of the default deep filter). */
#define CS_KEYPATH_MAX 4

/** A key path of a watch's filter: columns from the observed objects' table through links.
 *  cols[0] is a column of the observed table; cols[i+1] a column of the table cols[i] links to.
 *  A hidden BACKLINK column is a step like a link, to its origin table: it is written when the
 *  set of objects linking through it changes (the notifier derives that from the origin's link
 *  column, docs/ARCHITECTURE.md, Change notifications). Default filters leave backlinks out. */
typedef struct cs_keypath {
    uint32_t cols[CS_KEYPATH_MAX];
    uint32_t n; /* 1..CS_KEYPATH_MAX */
} cs_keypath;

/** Watch flags: what counts as a modification when no key paths are given. */
enum {
    CS_WATCH_DEEP = 0,    /* every column, and the columns of linked objects up to CS_KEYPATH_MAX */
    CS_WATCH_SHALLOW = 1, /* the observed objects' own columns only (object watches' default) */
};

/** What changed for a watch since its last cs_watch_take. Arrays are owned by the watch, valid
 *  until its next take, the notifier's next advance or the watch is freed. Indices are sorted
 *  ascending; deletions and modifications are positions in the collection as it was at the
 *  last take, insertions and modifications_new positions in the collection now. A moved
 *  element is a deletion and an insertion. */
typedef struct cs_changeset {
    uint64_t version;          /* the version the change set brings the observer to */
    bool initial;              /* the watch's first change set (nothing else is set) */
    bool deleted;              /* the object, or the collection's owner, was deleted */
    bool stale;                /* something a query over the collection reads of its elements
                                  changed (cs_watch_depend_query): run that query again; the
                                  change set may be empty otherwise */
    const size_t *deletions;   size_t ndeletions;
    const size_t *insertions;  size_t ninsertions;
    const size_t *modifications; const size_t *modifications_new; size_t nmodifications;
    /* maps: keys deleted (from the last take), inserted and modified (strings owned by the watch) */
    const cs_value *keys_deleted;  size_t nkeys_deleted;
    const cs_value *keys_inserted; size_t nkeys_inserted;
    const cs_value *keys_modified; size_t nkeys_modified;
    /* objects: the columns that changed (key-path filters map a deep change to its first column) */
    const uint32_t *columns;   size_t ncolumns;
    /* queries (has_keys): the results' object keys at `version`, in result order, as
     * cs_query_keys gives them there; a reader at exactly that version can use them instead of
     * running the query again */
    bool has_keys;
    const int64_t *keys;       size_t nkeys;
} cs_changeset;

/** A notifier on `db` at its newest version. */
int cs_notifier_open(cs_db *db, cs_notifier **out);
/** Frees the notifier; every watch on it must have been freed. */
void cs_notifier_close(cs_notifier *n);
/** Moves to the newest version and computes every watch's changes (*moved: whether the version
 *  moved). A history that no longer reaches the notifier's version (or a schema change) makes
 *  collection watches compare whole results: no modifications are reported then. */
int cs_notifier_advance(cs_notifier *n, bool *moved);
/** The version the notifier computed last. */
uint64_t cs_notifier_version(const cs_notifier *n);
/** The notifier's read transaction (at cs_notifier_version), for cs_txn_advance_to. */
const cs_txn *cs_notifier_txn(const cs_notifier *n);
/** A notifier on `db` at exactly the version `at` reads (a transaction of the same file, not
 *  writing, which keeps that version pinned until this call returns) instead of the newest: a
 *  watch made on it starts there, cs_notifier_advance_to brings it to another notifier's
 *  version with what changed in between, and cs_watch_move hands it over (an observer
 *  registered through a reader behind the notifier, docs/ARCHITECTURE.md, Change
 *  notifications). The notifier pins its version itself. */
int cs_notifier_open_at(cs_db *db, const cs_txn *at, cs_notifier **out);
/** As cs_notifier_advance, to exactly the version `at` reads (a transaction of the same file,
 *  not writing) instead of the newest. CS_MISUSE when that version is older than the
 *  notifier's. */
int cs_notifier_advance_to(cs_notifier *n, const cs_txn *at, bool *moved);
/** Moves watch `w`, with what it accumulated, to notifier `to` of the same file, which must be
 *  at the version w's notifier is at (CS_MISUSE otherwise). */
int cs_watch_move(cs_watch *w, cs_notifier *to);
/** Blocks until the file's commit counter differs from `seen`, cs_notifier_wake is called, or
 *  `timeout_ms` passes (CS_BUSY; -1: no limit). Waits on both at once with futex_waitv where the
 *  kernel has it, else in slices of the commit wait. Thread-safe. */
int cs_notifier_wait(cs_notifier *n, uint32_t seen, int timeout_ms);
/** Whether cs_notifier_wait waits on the commit counter and its wake word at once (futex_waitv,
 *  Linux 5.16); false when the kernel lacks it or refuses it, or when the environment variable
 *  CSTORE_NO_FUTEX_WAITV is set (not "0") when the process first waits or asks: the waits then
 *  go in 20 ms slices of the commit counter's wait, looking at the wake word between them, so a
 *  wake takes up to a slice and a commit that spared the notifier is seen at the end of one.
 *  Decided once per process. */
bool cs_notifier_waitv(void);
/** Wakes cs_notifier_wait. Thread-safe. */
void cs_notifier_wake(cs_notifier *n);
/** As cs_txn_commit, but the commit does not wake notifier `n` (of the same file, else
 *  CS_MISUSE; open until this returns) from cs_notifier_wait when `n` is the only waiter of the
 *  file asleep: the caller computes the new version on it itself (cs_notifier_advance), saving
 *  its thread a wake. When any other waiter sleeps, in this process or another, the commit
 *  wakes every waiter, `n` included (one wake reaches all of them); otherwise `n`'s wait sees
 *  the commit at its next wake, commit or timeout. CS_MISUSE, sparing nothing, when `txn` is
 *  not writing. */
int cs_txn_commit_sparing(cs_txn *txn, cs_notifier *n);

/** A watch over the results of a table query (text as cs_query_new_named, `names` may be NULL).
 *  `paths` (npaths 0: every column per `flags`) are the key paths whose changes make an element
 *  modified. */
int cs_watch_query(cs_notifier *n, uint32_t table, const char *text, size_t len, const cs_value *args,
                   size_t nargs, const cs_name_map *names, const cs_keypath *paths, size_t npaths, int flags,
                   cs_watch **out);
/** A watch over List, Set or Map column `col` of object `key` of `table`. */
int cs_watch_coll(cs_notifier *n, uint32_t table, int64_t key, uint32_t col, const cs_keypath *paths,
                  size_t npaths, int flags, cs_watch **out);
/** A watch over a list or dictionary nested in a Mixed value: `coll` (opened through any
 *  transaction of the file) names it by owner, column and path. Its change sets come from
 *  comparing the collection's content before and after each version that wrote the owning
 *  property (docs/ARCHITECTURE.md, Change notifications); it has no key paths. When the owner
 *  is deleted, or the path no longer leads to a collection of the same kind, the change set
 *  deletes every element and sets `deleted`, and nothing follows. */
int cs_watch_nested(cs_notifier *n, const cs_coll *coll, cs_watch **out);
/** A watch over the objects of `origin_table` whose link column `origin_col` links to object
 *  `key` of `table`, in link order. */
int cs_watch_backlinks(cs_notifier *n, uint32_t table, int64_t key, uint32_t origin_table, uint32_t origin_col,
                       const cs_keypath *paths, size_t npaths, int flags, cs_watch **out);
/** A watch over one object. */
int cs_watch_object(cs_notifier *n, uint32_t table, int64_t key, const cs_keypath *paths, size_t npaths,
                    int flags, cs_watch **out);
/** Makes watch `w`, over a List, Set or Map of objects or over backlinks, pending also when a
 *  property that query `text` (its filter, SORT and DISTINCT, as cs_query_new_named over the
 *  elements' table) reads of one of its elements changes, through links and backlinks: the
 *  change set then sets `stale`, and no element is modified for it (the watch's key paths
 *  alone decide that). For a query over the collection, whose results may change although the
 *  collection did not (docs/ARCHITECTURE.md, Change notifications). A query whose paths are no
 *  key paths (a SUBQUERY, more than CS_KEYPATH_MAX columns) makes the watch stale whenever a
 *  column it reads is written in any object. Nothing for a collection of values. CS_MISUSE for
 *  other watches. */
int cs_watch_depend_query(cs_watch *w, const char *text, size_t len, const cs_value *args, size_t nargs,
                          const cs_name_map *names);
void cs_watch_free(cs_watch *w);
/** Whether the watch has changes to hand out (its initial change set counts). */
bool cs_watch_pending(const cs_watch *w);
/** Hands out the changes since the last take (or the initial change set) and starts a new
 *  accumulation at the notifier's version. */
int cs_watch_take(cs_watch *w, cs_changeset *out);
/** Drops the changes accumulated so far without handing them out (an initial change set stays:
 *  it describes the collection as it is when taken). */
void cs_watch_discard(cs_watch *w);
/** How many times the watch ran its whole query (or read all backlinks) again since it was made,
 *  for tests and tuning: updates from the history alone do not count. */
uint64_t cs_watch_full_runs(const cs_watch *w);

/* ---------------------------------------------------------------------------------------- */
/* Logging                                                                                  */
/* ---------------------------------------------------------------------------------------- */

/* What the core does (opens, commits with their sizes, closes) is reported to one
 * process-wide log function, filtered by level. The levels are RealmSwift's, numbered from
 * the most detailed (CS_LOG_ALL) to the most severe: a message is delivered when its level is
 * at least the level set (set CS_LOG_OFF to deliver nothing, CS_LOG_ALL for everything). Thread-safe; the function is called on the thread
 * doing the work, outside every lock the core holds, and must not call back into the core. */
enum {
    CS_LOG_ALL = 0, CS_LOG_TRACE = 1, CS_LOG_DEBUG = 2, CS_LOG_DETAIL = 3, CS_LOG_INFO = 4,
    CS_LOG_WARN = 5, CS_LOG_ERROR = 6, CS_LOG_FATAL = 7, CS_LOG_OFF = 8,
};

/** Receives one message: its level, its category ("Realm.Storage.Transaction", ...) and text. */
typedef void (*cs_log_fn)(void *ctx, int level, const char *category, const char *message);

/** Sets the log function (NULL: none) and its context; the previous one is no longer called
 *  once this returns. */
void cs_log_set(cs_log_fn fn, void *ctx);
/** Stores the log function set and its context (NULL if none) in `*fn` and `*ctx`, so that a
 *  caller replacing it for a while can put it back. */
void cs_log_get(cs_log_fn *fn, void **ctx);
/** Sets the level: messages of a level below it (more detailed) are dropped. Default CS_LOG_INFO. */
void cs_log_set_level(int level);
/** The level set. */
int cs_log_level(void);
/** Reports a message through the log function, if its level passes (for the layers above the
 *  core, so that their events reach the same function in order). */
void cs_log_message(int level, const char *category, const char *message);

/* ---------------------------------------------------------------------------------------- */
/* Test hooks                                                                               */
/* ---------------------------------------------------------------------------------------- */

/** For the core's tests (docs/CONTRIBUTING.md, "Injected allocation failures"): in builds with
 *  the core's assertions (debug builds, CSTORE_INTERNAL_CHECKS), the `n`-th allocation of a
 *  node by the calling thread from now on (a node made, or a writable copy of one) fails with
 *  CS_NOMEM, as when memory runs out, and the later ones succeed; 0 disarms. Returns false, and
 *  does nothing, in other builds. */
bool cs_test_fail_node_allocation(uint32_t n);
/** Whether the failure armed by cs_test_fail_node_allocation on this thread has happened. */
bool cs_test_node_allocation_failed(void);
/** For the core's tests, in the same builds: the next commit on this thread that builds a
 *  free-list or run-list node finds its size check failed (as if the library had an error),
 *  so the commit fails with CS_INTERNAL. Returns false, doing nothing, in other builds. */
bool cs_test_fail_commit_check(void);
/** For the core's tests: the image of written bytes the calling thread's last journal replay
 *  built (docs/ARCHITECTURE.md, The commit journal: pages of 4 KiB, each with a bit per byte,
 *  for the pages the records wrote into): `*pages` its pages, `*bytes` the memory it held
 *  (the pages and its table of them); both 0 before any. */
void cs_test_replay_image(uint64_t *pages, uint64_t *bytes);
/** For the core's tests: the bytes of pages the calling thread's journal replays may hold in
 *  their image before they go record by record instead (docs/ARCHITECTURE.md, "Replay writes
 *  each byte once"; 0: the library's bound, 64 MiB). A replay that went record by record
 *  reports, through cs_test_replay_image, 520 bytes a page (its map of written bytes only). */
void cs_test_set_replay_image_max(uint64_t bytes);
/** For the core's tests: the calling thread's journal records written by direct I/O meet a
 *  fault (docs/ARCHITECTURE.md, "Records by direct I/O"): 1 the direct descriptor cannot be
 *  had, 2 a write refused with EINVAL, 3 a write 512 bytes short, 4 a write failing with EIO,
 *  5 with EAGAIN; 0 none. The descriptor's state (refused, open) lasts with the file's journal. */
void cs_test_set_journal_direct_fault(int mode);
/** For the core's tests: the journal records the calling thread wrote by direct I/O, and
 *  through the page cache, with the default I/O layer, so far. */
void cs_test_journal_direct_writes(uint64_t *direct, uint64_t *buffered);
/** For the core's tests: whether direct I/O on the regular file `file` takes the journal's
 *  records (its file system's direct-I/O alignments fit them: as for a journal beside it). */
bool cs_test_journal_takes_direct(const char *file);
/** For the core's tests: `fn(ctx)` is called on the calling thread after each write a journal
 *  replay on that thread makes into the database file (the replay at open, and the checkpoint
 *  that writes the records again after a lost header write, docs/FORMAT.md §13); NULL removes
 *  it. The hook may read the database through other handles. */
void cs_test_set_replay_hook(void (*fn)(void *ctx), void *ctx);
/** For the core's tests, in the same builds: what the lookups by key of the calling thread did
 *  below a tree's root since the last call (docs/ARCHITECTURE.md, "Predicting the leaf"):
 *  counts[0] the inner nodes whose predicted child was the one taken, counts[1] those whose
 *  prediction was another, counts[2] those where none was made. Resets the counts. Returns false,
 *  leaving `counts` zero, in other builds. */
bool cs_test_lookup_predictions(uint64_t counts[3]);
/** For the core's tests of verification (cs_db_verify): damages the links of a write on
 *  purpose. Adds (`add` true) or removes one backlink entry `origin` of (`origin_table`,
 *  `origin_col`) on object `target` of `target_table` without touching any link, so that the
 *  links and backlinks disagree; removing one that an existing object does not hold is
 *  CS_CORRUPT, as for the core's own removals. In builds with CSTORE_INTERNAL_CHECKS the commit
 *  of such a write is not checked (docs/ARCHITECTURE.md, Internal checks). It works in every
 *  build (as the journal's fault hooks do) but only when called. Never for anything but tests. */
int cs_test_backlink_put(cs_txn *txn, uint32_t target_table, int64_t target, uint32_t origin_table,
                         uint32_t origin_col, int64_t origin, bool add);
/** For the same tests: writes `value` (null, or a link into the column's target table, whether
 *  or not that object exists) into the single-link column `col` of `obj` as it is: no backlink
 *  is added or removed and no embedded object deleted. Never for anything but tests. */
int cs_test_link_put(cs_obj *obj, uint32_t col, const cs_value *value);
/** Where cs_test_set_writer_lock_hook's function is called (docs/ARCHITECTURE.md, Processes:
 *  the writer lock). */
enum {
    /** The writer lock was just taken (free, or from a dead owner), before its holder looks
     *  whether the last writer died mid-commit. */
    CS_TEST_WLOCK_TAKEN = 1,
    /** The process holding the writer lock was found gone, before the compare-and-swap that
     *  takes the lock from it. */
    CS_TEST_WLOCK_STEAL = 2,
    /** A commit wrote its header (the lock file says a commit is in flight) and is about to
     *  publish its version. */
    CS_TEST_WLOCK_PUBLISH = 3,
    /** A process claiming a reader slot found the writer lock naming that slot (a dead
     *  holder's) and is about to clear it. */
    CS_TEST_WLOCK_CLAIM = 4,
};
/** For the core's tests: `fn(point)` is called, in every thread of the process, at the points
 *  above of taking the writer lock (the tests kill the process there); NULL removes it. */
void cs_test_set_writer_lock_hook(void (*fn)(int point));
/** For the core's tests: a thread waiting for the writer lock of another process looks whether
 *  its holder died every `ms` milliseconds instead of every 10 (0: 10 again); process-wide. With
 *  a long period a wake-up that does not come shows as a wait that long. */
void cs_test_set_writer_lock_poll(uint32_t ms);

#ifdef __cplusplus
}
#endif
#endif /* CSTORE_H */
