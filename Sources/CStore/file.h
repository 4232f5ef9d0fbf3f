/*
 * file.h -- the database file (file.c, docs/FORMAT.md §1 and §2): the header, the mapping and
 * the writes of a commit; the commit and the free list (commit.c, docs/FORMAT.md §7).
 */
#ifndef CSTORE_FILE_H
#define CSTORE_FILE_H

#include "internal.h"

/* ---- file.c ------------------------------------------------------------------------------- */

/** The newest durable version the header names (the slot rule of FORMAT.md §2). */
int file_read_latest(cs_dbfile *f, uint64_t *version, uint64_t *top, uint64_t *logical, int *sel,
                     rejected_slot *note);
/** Makes sure the mapping covers `size` bytes (a larger mapping is added, never moved). */
int file_map_for(cs_dbfile *f, uint64_t size);
/** Takes the writer lock; when the last writer died mid-commit, publishes the header's version
 *  first (lock.c invariant 3). */
int file_writer_acquire(cs_dbfile *f);

/** Marks the file as owned by its one handle (cs_dbfile.compacting): CS_BUSY when this process
 *  has it open through other handles; later opens in this process are refused until it closes. */
int file_claim(cs_dbfile *f);
/** The fork handlers over the process's open files (lock.c registers them): prepare takes the
 *  file list's mutex and every file's mu, parent releases them, child releases them and drops
 *  each inherited file's lock-file descriptor and mapping and maps zeros over its database
 *  mappings (docs/ARCHITECTURE.md, Processes, Fork). */
void file_fork_prepare(void);
void file_fork_parent(void);
void file_fork_child(void);

/* ---- what a commit (commit.c) writes through ---------------------------------------------- */

/** The one run of a one-sync commit (len 0: a two-sync commit). */
typedef struct run_info {
    uint64_t pos, len, hash; /* where the commit's run list is, the bytes written, their hash */
} run_info;

/** Writes n bytes at off, all of them (CS_FULL on a full disk, CS_IOERR otherwise). */
int file_pwrite(cs_dbfile *f, const void *buf, uint64_t n, uint64_t off);
/** The error of a failed write to the database file (errno `e`): CS_FULL for a full disk or
 *  quota, else CS_IOERR; recorded with its message. */
int file_write_failed(cs_dbfile *f, int e);
/** Writes n bytes at off, all of them: through the commit's writable mapping when a commit
 *  armed it (file_wmap_prepare) and the bytes lie where it may store, else file_pwrite
 *  (mapwrite.c; docs/ARCHITECTURE.md, Writes through a mapping). */
int file_write_at(cs_dbfile *f, const void *buf, uint64_t n, uint64_t off);
/** Arms the writable mapping for the write-out of one commit, once the file has the commit's
 *  size (the writer lock held, f->phys_size current): allocates the whole file again when its
 *  size is not the one this process last allocated for, maps it when the mapping is missing or
 *  short. Never fails: what it cannot arm is written with pwrite. */
void file_wmap_prepare(cs_dbfile *f);
/** Ends what file_wmap_prepare armed (the commit's write-out is over, whatever its outcome). */
void file_wmap_done(cs_dbfile *f);
/** This process changed the file's size from `old` to `now` (growth through io_allocate, or a
 *  truncation): what the mapping may store into follows without allocating again. */
void file_wmap_resized(cs_dbfile *f, uint64_t old, uint64_t now);
/** Unmaps the writable mapping (the file is closing). */
void file_wmap_free(cs_dbfile *f);
/** fdatasync in FULL durability (invariant 3 of file.c on failure). */
int file_sync(cs_dbfile *f);
/** The 64-bit hash a one-sync commit's header slot keeps of its bytes (n a multiple of 8). */
uint64_t file_run_hash(const uint8_t *p, uint64_t n);

/** file_run_hash a word at a time, for a pass that does more with each word (commit.c's
 *  serialise computes a one-sync commit's hash in its nodes' checksum loop): run_hash_start(n),
 *  run_hash_word for each of the n / 8 words in order, run_hash_end. */
typedef struct run_hash {
    uint64_t a, b;
} run_hash;

static inline run_hash run_hash_start(uint64_t n)
{
    run_hash h = {0x9e3779b97f4a7c15ull ^ n, 0x632be59bd9b4e019ull};
    return h;
}

static inline void run_hash_word(run_hash *h, uint64_t w)
{
    h->a = (h->a ^ w) * 0xff51afd7ed558ccdull;
    h->b = (h->b + w) ^ (h->a >> 29);
}

/** Adds the n / 8 whole words at p (unaligned) to h, in order. */
static inline void run_hash_words(run_hash *h, const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        run_hash_word(h, w);
    }
}

static inline uint64_t run_hash_end(const run_hash *h)
{
    uint64_t a = h->a ^ h->b * 0xc4ceb9fe1a85ec53ull;
    return a ^ (a >> 32);
}
/** Writes the header with slot `sel` naming (top, version, size) and selected; `fmt` is the format
 *  version both slots need (FORMAT.md §2). `fresh`: a new file (the other slot is zero). */
int file_write_header(cs_dbfile *f, int sel, uint64_t top, uint64_t version, uint64_t size, bool fresh,
                      const run_info *run, uint16_t fmt);

/** The header file_write_header writes, built into `out` (HDR_USED bytes), not written. */
int file_build_header(cs_dbfile *f, int sel, uint64_t top, uint64_t version, uint64_t size, bool fresh,
                      const run_info *run, uint16_t fmt, void *out);
/** Writes a header built by file_build_header for `version` and keeps its image. */
int file_put_header(cs_dbfile *f, const void *img, uint64_t version);
/** The highest version named by a header slot whose own check passes (its commit's bytes are
 *  not checked): 0 when the header cannot be read. */
uint64_t file_header_newest_version(cs_dbfile *f);
/** For a header image of HDR_USED bytes (a journal record's header run): when its selected slot
 *  passes its check and describes a one-sync commit (docs/FORMAT.md §2), that slot's version,
 *  run length and run hash (file_run_hash of the commit's runs), and true; false otherwise. */
bool file_header_run(const void *img, uint64_t *version, uint64_t *len, uint64_t *hash);
/** The check kept beside the journal id in the header (FORMAT.md §2, bytes 152-159). */
uint64_t file_id_check(uint64_t id);

/** The HDR_USED bytes of a header whose slot 0, selected, names (top, version, size), written
 *  with two syncs (no run to check); slot 1 is zero. `fmt` as for file_write_header. */
void file_fresh_header(void *out, uint64_t top, uint64_t version, uint64_t size, uint16_t fmt);

/* ---- commit.c ----------------------------------------------------------------------------- */

/*
 * A commit in stages (docs/ARCHITECTURE.md, Commit), called in this order by cs_txn_commit:
 *   txn_stage            (txn.c)    what: the schema blob, the change history
 *   file_commit_space    (commit.c) the free list of the new version; online shrinking
 *   txn_plan             (txn.c)    what: the nodes to write, the format version they need
 *   file_commit_write    (commit.c) where and how: placement, serialisation, the durable write,
 *                                   publishing the new version
 *   file_commit_end      (commit.c) after the others, whether they failed or not
 * Each commit.c stage takes only what the one before it decided.
 */

/** What file_commit_space decided for the commit. */
typedef struct commit_space {
    uint64_t oldest; /* the oldest version a live reader may read (durability rule 1 of commit.c) */
    uint64_t end;    /* the logical end placement starts from (shrinking may have cut the tail) */
    bool cut;        /* shrinking cut the free tail (docs/FORMAT.md §7.3) */
} commit_space;

/** One node of the new version, written from the slab. */
typedef struct commit_node {
    ref_t slab;    /* the slab node */
    uint64_t size; /* bytes */
    bool cold;     /* a cluster leaf or a node below one: rewritten seldom (placement P3a,
                      docs/FORMAT.md §7.2) */
} commit_node;

/** What the new version contains besides the free list (txn_plan): its nodes in post-order,
 *  the top last, and the format version the header names. */
typedef struct commit_what {
    commit_node *nodes; /* in write order */
    uint64_t n, cap;    /* used, allocated */
    uint16_t format;    /* FORMAT.md §2: what the new version and the other slot's need */
} commit_what;

/** Updates the in-memory free list for the next version: the old free-list root and run list
 *  die with the current version, what the transaction freed goes in (not reusable yet),
 *  extents no live reader can see are backdated and merged, and a shrinking handle
 *  (docs/FORMAT.md §7.3) cuts the free tail and moves the nodes of the last live bytes by
 *  copy-on-write (so txn_plan lists them). The top becomes writable. */
int file_commit_space(cs_txn *t, commit_space *sp);
/** Writes the nodes of `w` and the free-list nodes the commit rewrites as the next version
 *  (durability rules of commit.c): placement, one buffer, the runs, the syncs and the header;
 *  then publishes the version. */
int file_commit_write(cs_txn *t, const commit_space *sp, const commit_what *w);
/** Ends a commit begun by file_commit_space: on failure (rc) the cached free list no longer
 *  describes any version, and the next commit reads it again. */
void file_commit_end(cs_dbfile *f, int rc);
/** The oldest version a live reader (of any process) may read, `latest` when none is older;
 *  the caller holds f->mu. */
uint64_t file_oldest_live(cs_dbfile *f, uint64_t latest);

#endif
