/*
 * internal.h -- the structs behind the core's handles and what every layer shares about them:
 * refs and their translation to pointers, the write transaction's slab, the schema in memory,
 * the per-process file state (cs_dbfile), cs_db and cs_txn. Never installed. Each layer's
 * functions are declared in its own header (node.h, leaf.h, cluster.h, ...; docs/ARCHITECTURE.md,
 * The C core's layers), on-disk constants in format.h, shared limits in cs_limits.h.
 *
 * Invariants:
 *  1. A ref below SLAB_BASE is a byte offset in the file; at or above it, a node in the write
 *     transaction's heap slab. Only a WRITE transaction ever holds slab refs.
 *  2. Nothing reached through a file ref is trusted: node_at() (node.h) checks alignment, bounds
 *     and the header before any byte of the payload is read.
 *  3. Nodes with NF_REFS always have width 64, so a parent's child slot is addressable and
 *     replacing a child never reallocates the parent.
 */
#ifndef CSTORE_INTERNAL_H
#define CSTORE_INTERNAL_H

#include "cstore.h"
#include "cs_limits.h"
#include "error.h"
#include "format.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef uint64_t ref_t;

#define SLAB_BASE (1ull << 62)
#define IS_SLAB(r) ((r) >= SLAB_BASE)

/* ---- slab (heap memory of a write transaction) ----------------------------------------- */

#define SLAB_REGIONS 40
#define SLAB_CLASSES 48

typedef struct slab {
    uint8_t *region[SLAB_REGIONS]; /* region k holds (1 MiB << k) bytes, allocated lazily */
    int cur;                       /* region the bump pointer is in */
    uint64_t bump;                 /* next free offset inside region `cur` */
    uint64_t freelist[SLAB_CLASSES]; /* per size class: slab offset of the first free block + 1 */
    uint64_t in_use;               /* bytes handed out (statistics) */
} slab;

static inline void *slab_ptr(slab *s, uint64_t off)
{
    int k = 63 - __builtin_clzll((off >> 20) + 1);
    return s->region[k] + (off - ((((uint64_t)1 << k) - 1) << 20));
}

/* ---- schema in memory ------------------------------------------------------------------- */

typedef struct col_def {
    char *name;          /* stored column name (NULL when the slot is free) */
    uint8_t type;        /* cs_type */
    uint8_t coll;        /* cs_coll_kind */
    uint8_t live;        /* 1 when the slot is in use */
    uint8_t pad;         /* zero */
    uint32_t flags;      /* CS_COL_* */
    uint32_t target;     /* link target (or backlink origin) table */
    uint32_t origin_col; /* backlink: origin column; else CS_NONE */
} col_def;

typedef struct table_def {
    char *name;       /* class name (NULL when the slot is free) */
    uint32_t flags;   /* CS_TABLE_* */
    uint32_t primary; /* primary key column or CS_NONE */
    uint32_t ncols;   /* column slots */
    uint8_t live;     /* 1 when the slot is in use */
    col_def *cols;    /* ncols slots */
} table_def;

typedef struct schema {
    uint32_t ntables;  /* table slots */
    table_def *tables; /* ntables slots */
    int refcount;      /* shared between transactions reading the same schema node */
    ref_t ref;         /* the schema node it was parsed from (0 for a fresh one) */
} schema;

/* ---- the file and the shared state ------------------------------------------------------ */

typedef struct extent {
    uint64_t pos; /* file offset */
    uint64_t len; /* bytes */
    uint64_t ver; /* version it was freed in (0 = reusable by every reader) */
} extent;

/* The in-memory free list (docs/FORMAT.md §7.1, freelist.c): a two-level tree mirroring the
 * on-disk one. A chunk holds the extents whose position lies in [lo, next chunk's lo); a page
 * holds the chunks whose lo lies in [its lo, next page's lo). maxlen and maxver are upper bounds
 * of the extents' lengths and versions below (exact after each commit). */
typedef struct fl_chunk {
    uint64_t lo;       /* smallest position the chunk may hold (0 for the first) */
    uint64_t ref;      /* its node in the file (0: not written yet) */
    uint64_t size;     /* that node's size in bytes (of the new node while dirty) */
    extent *e;         /* extents sorted by position (len 0: consumed by the commit being built) */
    uint32_t n, cap;   /* used, allocated */
    uint64_t maxlen, maxver;
    bool dirty;        /* rewritten by the commit being built (its old node is freed) */
    bool pending;      /* has two touching extents of different versions (merged once both are reusable) */
    uint64_t pend_pos; /* while pending: no touching pair's second extent starts below it (merging
                          looks from there) */
    bool shrunk;       /* the commit being built shortened, used up, dropped or backdated one of its
                          extents so that maxlen or maxver may be too large: fl_published recomputes
                          them (other changes only raise them, and keep them exact) */
    uint32_t used_up;  /* extents placement used up (len 0) in the commit being built: the node
                          writes them as padding, fl_published drops them */
    uint32_t first_used_up; /* the first of them (while used_up) */
    /* placement's index (fl_best_fit, docs/ARCHITECTURE.md): while big_ok, big[0..nbig) are
     * positions in e, ascending, among them every extent of at least FL_BIG bytes (an extent
     * that placement shortens below FL_BIG may stay listed; a change that lengthens, adds,
     * removes or moves extents clears big_ok, and the next query that needs it rebuilds it) */
    uint32_t *big;
    uint32_t nbig, bigcap;
    uint32_t big_n;    /* n when the index was built: one that no longer matches is rebuilt, so an
                          extent added or removed without clearing big_ok never reads past n */
    bool big_ok;
    /* the journal's patches (docs/FORMAT.md §13, Layout): while dirty, the node the chunk had
     * before this commit (0: none); jgen the journal generation whose record wrote the node at
     * ref (0: none known, or not by a record of this process) */
    uint64_t oldref, oldsize, jgen;
} fl_chunk;

typedef struct fl_page {
    uint64_t lo;       /* its first chunk's lo */
    uint64_t ref;      /* its node in the file (0: not written yet) */
    uint64_t size;     /* that node's size in bytes (of the new node while dirty) */
    fl_chunk **c;      /* chunks by lo */
    uint32_t n, cap;   /* used, allocated */
    uint64_t maxlen, maxver;
    bool dirty;        /* rewritten by the commit being built */
    bool pending;      /* some chunk of it is pending */
    uint64_t oldref, oldsize, jgen; /* as fl_chunk's */
} fl_page;

typedef struct freelist {
    fl_page **p;       /* pages by lo (p[0]->lo == 0) */
    uint32_t n, cap;   /* used, allocated */
    uint64_t bytes;    /* sum of the extents' lengths */
    uint64_t newver;   /* while a commit is built: the version old chunk and page nodes are freed in */
    uint64_t newbytes; /* ... and the bytes of the extents freed in it (none is reused or merged
                          with another version's before the commit lands) */
    uint64_t events;   /* chunks and pages marked dirty so far (a commit's layout repeats until stable) */
    int err;           /* CS_NOMEM when an insertion during a commit failed */
    fl_chunk **dl;     /* the dirty chunks in file order, as fl_reshape left them, while dl_ok and no
                          chunk was made dirty since (events == dl_events): placement's queries
                          among the chunks a commit rewrites visit only these */
    uint32_t ndl, dlcap;
    uint64_t dl_events;
    bool dl_ok;
    uint32_t checks;   /* debug builds: queries so far, for fl_best_fit's whole-list check (the
                          writer lock guards it with the list) */
    uint64_t below;    /* while a shrinking commit is built: placement uses only extents that start
                          below this position (0: any), docs/FORMAT.md §7.3 */
    uint64_t avoid_lo, avoid_hi; /* ... and none that starts in [avoid_lo, avoid_hi) */
    /* the root's node in the version the list describes, and the journal generation whose record
     * wrote it (0: none known); fl_published sets both, with the generation of its commit's
     * record in pub_gen (0: the commit wrote none) for the chunks and pages it rewrote */
    uint64_t root_ref, root_jgen, pub_gen;
} freelist;

typedef struct mapping {
    uint8_t *base;        /* start of a read-only shared mapping of the file */
    uint64_t len;         /* bytes mapped (may exceed the file; never touched past it) */
    struct mapping *prev; /* older, larger-than-needed mappings stay valid until close */
} mapping;

typedef struct pin {
    uint64_t version; /* a pinned version */
    uint64_t top;     /* its top ref */
    uint32_t count;   /* transactions pinning it */
} pin;

/* One process's pins as published in the lock file: every version in [lo, hi] is treated as
 * live; the tops of lo and hi are known exactly. */
typedef struct pinrange {
    uint64_t lo, lo_top; /* oldest pinned version and its top */
    uint64_t hi, hi_top; /* newest pinned version and its top */
} pinrange;

typedef struct cs_dbfile cs_dbfile;

/** What opening found when the header's newest slot could not be used (file.c read_header). */
typedef struct rejected_slot {
    bool rejected;     /* a slot was passed over */
    int slot;          /* which one */
    uint64_t version;  /* the version it claims */
    uint64_t opened;   /* the version opened instead */
    char why[160];     /* the reason */
} rejected_slot;

/** One per file per process (found by device and inode). */
struct cs_dbfile {
    cs_dbfile *next;         /* in the process-wide list */
    int refs;                /* cs_db handles on it */
    dev_t dev;               /* identity */
    ino_t ino;               /* identity */
    char *path;              /* path of the first open */
    int fd;                  /* the one descriptor */
    bool readonly;           /* opened without write access */
    bool broken;             /* a sync failed: writes refused until reopened */
    int header_lost;         /* the error (and header_lost_errno) of a journaled commit's failed
                              * header write, which made the file broken; 0: none */
    int header_lost_errno;
    bool compacting;         /* cs_db_compact owns the file: no other handle may share it */
    cs_durability durability; /* of the first open */
    const cs_io *io;         /* system calls */
    pthread_mutex_t mu;      /* guards the fields below */
    uint32_t write_mu;       /* the single writer among this process's threads: 0 free, 1 held, 2
                                held with a thread asleep on it (lock_write_take); a write may end
                                on another thread than it began on, which releases it */
    mapping *map;            /* current mapping */
    /* The commit's writable mapping (mapwrite.c; docs/ARCHITECTURE.md, Writes through a
     * mapping), used only while a commit writes, under write_mu and the writer lock. */
    uint8_t *wmap;           /* a shared writable mapping of the file; NULL: none (yet) */
    uint64_t wmap_len;       /* its length (may exceed the file; never touched past wmap_ok) */
    uint64_t wmap_ok;        /* [0, wmap_ok) lies inside the file and was allocated through
                                io->allocate: a commit stores there through wmap */
    uint64_t wmap_size;      /* the file size wmap_ok holds for: a commit that finds another
                                size (another process grew or cut the file) allocates again */
    bool wmap_armed;         /* between file_wmap_prepare and file_wmap_done of one commit */
    bool wmap_never;         /* written with pwrite only: an I/O layer without write_mapped, or
                                a file system where a store into a written block may need a new
                                one (copy-on-write) */
    uint64_t phys_size;      /* physical file size */
    uint64_t version;        /* newest committed version */
    ref_t top;               /* its top ref */
    uint64_t logical;        /* its logical size */
    int selector;            /* header slot in use */
    pin *pins;               /* versions pinned by transactions */
    uint32_t npins, cap_pins; /* used, allocated */
    uint32_t max_versions;   /* 0 = unlimited */
    freelist fl;             /* cached free list (valid for free_version) */
    uint64_t free_version;   /* version the cache describes (0 = none) */
    slab slab;               /* heap memory for the writer */
    schema *schema_cache;    /* parsed schema of the newest version */
    void *lk;                /* the mapped lock file (NULL: lockless read-only open) */
    int lfd;                 /* its descriptor (holds this process's byte-range locks) */
    int slot;                /* this process's reader slot in it, -1 for none */
    uint32_t fork_gen;       /* the process's fork generation when it opened the file: another
                                one is a child's, forked with the file open (lock_inherited) */
    uint64_t wtoken;         /* the writer lock's word while this process holds it: the slot
                                and the claim that made it this process's (lock.c) */
    const bool *spared;      /* the commit being written leaves asleep the notifier whose
                                sleeping flag this is (cs_txn_commit_sparing); set by the writer
                                only, the flag read under mu (lock.c, lock_publish) */
    uint8_t hdr_img[HDR_USED]; /* the header as this process last wrote it */
    uint64_t hdr_version;    /* newest version in hdr_img (0: image not valid) */
    uint64_t published_pin;  /* the oldest pinned version as last published in the lock file */
    uint64_t published_hi;   /* the newest pinned version as last published */
    uint64_t verified_version; /* CSTORE_INTERNAL_CHECKS: the last version that verified (check.c) */
    rejected_slot rejected;  /* set at open when the newest header slot was not used */
    uint64_t recovered;      /* commits the open replayed from the journal (FORMAT.md §13) */
    bool opened_alone;       /* no other process had the file open when this one opened it */
    uint64_t journal_lost;   /* an alone open found the header at FORMAT_JOURNAL and no journal:
                              * the version it opened (commits after it may be lost); 0: none */
    uint16_t journal_lost_fmt; /* ... the header's format version then (7 or 8) */
    uint32_t shrink_pause;   /* commits that move no node for online shrinking (commit.c) */
    bool shrink_cut;         /* this process's last commit cut the file's free tail (commit.c) */
    uint64_t place_cursor;   /* where this process's last commit ended (its top): placement's
                                next-fit search for the next commit's hot part starts there
                                (commit.c, P3a); in memory only, 0 after opening */
    bool shrink_unfit;       /* ... found a node to move that no hole held (commit.c) */
    int jfd;                 /* the journal's descriptor, -1 until used (journal.c) */
    int jdfd;                /* the journal opened for direct I/O, for the records' writes: -1
                                until used, -2 when it cannot be (journal.c, jwrite_record) */
    uint8_t *jrec_buf;       /* a buffer of JREC_KEEP bytes aligned for direct I/O, kept for
                                the records of this process's commits (journal.c,
                                journal_record_build); NULL until used */
    uint64_t jsize;          /* its size as this process last saw it */
    bool journal_full;       /* the journal could not get its space (disk full) or be opened for
                                writing: durable commits are made without it until it can; logged
                                once (journal.c) */
    char journal_note[512];  /* a warning of the journal's, logged once the core's locks are
                                released (journal_log_note); guarded by mu */
    bool journal_noted;      /* journal_note holds one (atomic: a commit tests it unlocked) */
    int journal_note_level;  /* its level (CS_LOG_*) */
};

struct cs_db {
    cs_dbfile *f;   /* shared state */
    char *path;     /* as opened */
    bool readonly;  /* this handle's mode */
    bool shrink;    /* CS_OPEN_SHRINK: its commits shrink the file online (commit.c) */
    int txns;       /* live transactions */
    cs_txn *spare;  /* an ended transaction's struct, kept for the next begin */
};

#define CC_COLS 32

/* The caches of a read: the checked column nodes of the last cluster leaf cs_obj_get_int read,
 * the last table root and the last index root found. Each holds for one epoch of the transaction. */
typedef struct txn_rcache {
    const void *cc_leaf;   /* leaf whose column nodes cc_col holds */
    uint64_t cc_epoch;     /* epoch cc_col is valid for */
    uint32_t cc_mask;      /* bit c set: cc_col[c] holds column c's checked node (clearing the
                              mask, not the array, empties it) */
    node_hdr *cc_col[CC_COLS]; /* checked column nodes of cc_leaf, where cc_mask says */
    ref_t cc_ref[CC_COLS]; /* their refs */
    uint64_t rt_epoch;     /* epoch the table root is valid for */
    uint32_t rt_table;     /* ... that table */
    ref_t rt_root;         /* ... its cluster root */
    bool rt_keyed;         /* ... and whether the table is pk-keyed (TBLK_PK) */
    uint32_t lk_table;     /* the last primary-key lookup that found its object by key alone
                              (keying.c): the table, */
    int64_t lk_key;        /* ... the key, */
    const void *lk_leaf;   /* ... its leaf (NULL = none), */
    uint32_t lk_row;       /* ... row */
    uint64_t lk_epoch;     /* ... and the epoch they hold for */
    uint64_t ri_epoch;     /* ... epoch the index root is valid for */
    uint32_t ri_table;     /* ... that index's table */
    uint32_t ri_col;       /* ... and column */
    ref_t ri_root;         /* ... its root */
    const void *pk_leaf;   /* the cluster leaf whose keys node pk_keys is (obj.c, cs_obj_prepare) */
    uint64_t pk_epoch;     /* ... the epoch it was checked in */
    node_hdr *pk_keys;     /* ... that keys node, checked */
    ref_t sl_ref;          /* the last string leaf opened (leaf.c, str_get), 0 = none */
    uint64_t sl_epoch;     /* ... the epoch it was opened in */
    node_hdr *sl_part[4];  /* ... its checked parts: top, ends, data, bigs (NULL when absent) */
    const void *sc_leaf;   /* the cluster leaf of the last String or Binary value cs_obj_get read */
    uint64_t sc_epoch;     /* ... the epoch it was read in */
    uint32_t sc_table;     /* ... its table */
    uint32_t sc_col;       /* ... its column (live, of that type, not a collection) */
    ref_t sc_ref;          /* ... that column's string leaf in sc_leaf */
    uint32_t sc_type;      /* ... CS_TYPE_STRING or CS_TYPE_BINARY */
    bool sc_nullable;      /* ... whether the column is nullable */
} txn_rcache;

/* The checked-node set of a READ transaction (node.h, node_at_seen; docs/ARCHITECTURE.md, The
 * lookup's checked nodes): the file refs whose node passed node_at_file's checks against this
 * snapshot, direct-mapped by a hash of the ref. A read transaction's nodes never change while its
 * epoch, mapping and limit stay as they were, so neither does a check's answer; the set is
 * emptied when any of the three moves. An empty slot holds CK_EMPTY, which no ref that passed
 * the check equals (those are multiples of 8); a ref read from a damaged file may, so a lookup
 * in the set never takes CK_EMPTY for a member (node_at_seen). */
#define CK_BITS 8
#define CK_SLOTS (1u << CK_BITS)
#define CK_EMPTY UINT64_MAX
typedef struct txn_checked {
    uint64_t epoch;        /* the transaction's epoch the refs were checked in */
    const uint8_t *map;    /* ... its mapping then */
    uint64_t limit;        /* ... and its limit then */
    ref_t ref[CK_SLOTS];   /* checked refs (CK_EMPTY: none) */
} txn_checked;

/* An entry of cs_txn's `own` set: table + 1 (0 = empty slot) and the key. */
typedef struct own_key {
    uint32_t table1;
    int64_t key;
} own_key;

typedef struct freed_node {
    uint64_t pos; /* file ref */
    uint64_t len; /* node size */
} freed_node;

struct cs_txn {
    cs_db *db;             /* owner */
    cs_dbfile *f;          /* shared state */
    bool writing;          /* WRITE state */
    uint64_t version;      /* version read (or started on) */
    ref_t top;             /* top ref (slab when dirty) */
    const uint8_t *map;    /* mapping base for file refs */
    uint64_t limit;        /* logical size of the snapshot: file refs must end below it */
    uint64_t epoch;        /* bumped whenever cached leaf/row positions may be stale */
    schema *schema;        /* schema of the snapshot (private clone once changed) */
    bool schema_dirty;     /* schema changed in this write */
    freed_node *freed;     /* file nodes freed in this write */
    uint64_t nfreed, cap_freed; /* used, allocated */
    uint64_t last_commit_bytes; /* of the last commit */
    uint32_t last_commit_writes; /* pwrite calls of the last commit (header included) */
    uint32_t last_commit_syncs;  /* fdatasync calls of the last commit */
    uint16_t base_format;  /* format version the version a write started on needs */
    cs_change *log;        /* change records of this write */
    uint64_t nlog, caplog; /* used, allocated */
    int64_t *created_from; /* per table: first key created in this write (INT64_MAX: none) */
    uint8_t *delpk;        /* primary keys of the objects this write deleted, encoded (FORMAT.md §8.3) */
    uint64_t ndelpk, capdelpk; /* used, allocated */
    uint32_t ncreated;     /* entries in created_from */
    struct own_key *own;   /* objects created in this write with a primary key as key (keying.c):
                              a hash set of (table, key), open addressing, cap a power of two */
    uint64_t nown, capown; /* used, allocated */
    txn_rcache rc;         /* the read caches of a READ transaction (txn_read_cache) */
    txn_checked ck;        /* the checked-node set of a READ transaction (txn_checked_set) */
    ref_t tns_top;         /* table-node slot cache: the top it was found under */
    ref_t tns_tables;      /* ... the table list ref */
    uint32_t tns_table;    /* ... the table */
    ref_t *tns_slot;       /* ... the slot (in the table list) */
    bool base_verified;    /* CSTORE_INTERNAL_CHECKS: the version this write started on verified */
    bool short_cols;       /* this write left a column sub-node short of its leaf's rows
                              (cluster.c invariant 2): cluster_fill_short pads before commit */
    int spoiled;           /* a call of this write failed part-way, leaving its nodes half changed
                              (obj.c create_row): its code; cs_txn_commit refuses the write and
                              rolls it back. 0: none */
    bool frozen;           /* cs_txn_freeze: never moves or writes; its read caches are per thread, so
                              threads may read through it at once (docs/ARCHITECTURE.md, Frozen snapshots) */
    uint64_t frozen_id;    /* cs_txn_freeze: a number no other frozen transaction of the process has */
};

/* The read caches of a transaction: the embedded ones of a READ transaction, the calling
 * thread's for a frozen one (txn.c), none (NULL) while writing. A frozen transaction never
 * changes, so what a thread cached for it stays true until it ends; the thread's cache is keyed by
 * the transaction's address and frozen_id, and starts empty for any other frozen transaction. */
txn_rcache *txn_frozen_cache(cs_txn *t);

static inline txn_rcache *txn_read_cache(cs_txn *t)
{
    if (t->frozen) return txn_frozen_cache(t);
    return t->writing ? NULL : &t->rc;
}

/* Where the last primary-key lookup that found its object by key alone is remembered (the lk_
 * fields, keying.c; obj.c reads them): the read caches of a read or frozen transaction, and the
 * transaction's own (otherwise unused) read caches while it writes. Only the lk_ fields are used
 * while writing: they hold for one epoch, and a write moves the epoch whenever a remembered leaf
 * or row can go stale, as it does for accessors (docs/ARCHITECTURE.md, Object accessors). */
static inline txn_rcache *txn_lookup_cache(cs_txn *t)
{
    if (t->frozen) return txn_frozen_cache(t);
    return &t->rc;
}

/* ---- translation and node access -------------------------------------------------------- */

static inline uint8_t *txn_ptr(const cs_txn *t, ref_t r)
{
    if (!IS_SLAB(r)) return (uint8_t *)t->map + r;
    return (uint8_t *)slab_ptr(&t->f->slab, r - SLAB_BASE);
}

#endif
