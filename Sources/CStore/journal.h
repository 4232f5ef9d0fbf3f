/*
 * journal.h -- the commit journal `<file>.journal` (journal.c, docs/FORMAT.md §13): a durable
 * commit of at most ONE_SYNC_MAX bytes appends one record (its runs and the header) to the
 * journal and syncs only the journal; its in-place writes to the database file stay in the page
 * cache until a checkpoint syncs the database file and empties the journal. Opening replays the
 * records a power cut left.
 */
#ifndef CSTORE_JOURNAL_H
#define CSTORE_JOURNAL_H

#include "internal.h"
#include "file.h"

/** The journal's shared state, in the lock file (docs/FORMAT.md §9, offsets 64-103); every
 *  field changes only under the writer lock, or under the join lock while alone. */
typedef struct journal_shared {
    uint64_t gen;   /* generation of the journal's current header (0: not started this session) */
    uint64_t end;   /* end of the last published record (JOURNAL_HDR: none) */
    uint64_t id;    /* the database's journal id (docs/FORMAT.md §2, header bytes 144-159) */
    uint64_t base;  /* the version the database file held durably at the last checkpoint */
    uint32_t flags; /* JS_RECORDS | JS_UNJOURNALED | JS_HEADER_LOST */
    uint32_t zero;
    uint64_t last;  /* the version of the last published record (base: none since) */
} journal_shared;

enum {
    JS_RECORDS = 1,     /* a record was written since the last checkpoint (published or not) */
    JS_UNJOURNALED = 2, /* a commit wrote in place without a record since the last checkpoint */
    JS_HEADER_LOST = 4, /* a journaled commit's in-place header write failed after its record was
                         * synced: the database file's header may not name the newest version,
                         * so the next checkpoint writes the records again first */
};

/** One run of a commit: `len` bytes of the commit's buffer at `src` go to `pos` in the file.
 *  With `enc` set (journal_patch) the record holds the run as `enclen` bytes of patch
 *  operations instead of its bytes (docs/FORMAT.md §13, Layout). */
typedef struct journal_run {
    uint64_t pos, len;
    const uint8_t *src;
    const uint8_t *enc;
    uint64_t enclen;
} journal_run;

/** A node of a commit that the record may hold as a patch of the node it replaces: the new node
 *  at `pos` (`len` bytes, inside a run), the old one at `oldpos` (`oldlen` bytes at `old`),
 *  which a record of the journal's current generation wrote (journal_generation). `unit`: words
 *  per element after the node's 8-byte header (3 for a free-list chunk, 2 for a directory), the
 *  step at which the patch looks for elements the two share. */
typedef struct journal_base {
    uint64_t pos, len, oldpos, oldlen;
    const uint8_t *old;
    uint32_t unit;
} journal_base;

/** The generation of the journal's current header (0: none this session); a commit's record
 *  is written under the one that holds once journal_before_commit returned. */
uint64_t journal_generation(cs_dbfile *f);
/** Sets runs[i].enc / enclen for each run of runs[0..n) (in file order) that holds a base of
 *  b[0..nb) (sorted by position) and whose patch is shorter than its bytes; the encodings are
 *  in *store, which the caller frees (NULL when none). CS_NOMEM only. */
int journal_patch(journal_run *runs, uint32_t n, const journal_base *b, uint32_t nb, uint8_t **store);

/** At open, before the header is read: when no other process has the file open, replays the
 *  journal's valid records onto the database file, syncs it and resets the journal. A read-only
 *  opener that finds records gets CS_READONLY; a journal whose records belong to another file
 *  is refused (CS_CORRUPT). */
int journal_recover_open(cs_dbfile *f, bool readonly);

/** Before a commit's first write, under the writer lock: checkpoints when the commit needs it
 *  (docs/FORMAT.md §13, Checkpoints) and makes room for the record. `*journaled`: the commit
 *  will append a record of `reclen` bytes; set false when the record would be longer than
 *  replay accepts, or when the journal cannot be opened (CS_PERM) or get its space (CS_FULL, a
 *  full disk) and no record is pending (the commit is then made in place with one sync, as
 *  without a journal, after a checkpoint when records are pending; a full disk is logged once,
 *  journal_log_note). */
int journal_before_commit(cs_dbfile *f, bool *journaled, uint64_t reclen, uint64_t version);
/** The size of the record of a commit with these runs (a patched run counted by its encoding). */
uint64_t journal_record_size(const journal_run *runs, uint32_t n);
/** A commit's record while it is built: its bytes so far and the state of its check. */
typedef struct journal_record {
    uint8_t *rec;      /* the record, len bytes (the file's kept buffer, or malloc: `own`) */
    bool own;          /* rec is the record's own, freed with it */
    uint64_t len;      /* journal_record_size of its runs */
    uint64_t at;       /* where the next run's bytes go */
    uint64_t a, b;     /* the check's two lanes so far */
    uint64_t words;    /* 8-byte words added to the check so far */
} journal_record;

/** Builds the record of a commit producing `version` from runs[0..n): the record header, the
 *  pairs and the bytes (or the patch) of every run but the last, copied and added to the
 *  record's check in one pass (the last run is the header, added by journal_record_seal once
 *  it holds the slot's hash, which the commit computed with its nodes' checksums). Each run's
 *  length is a multiple of 8. After a checkpoint, if journal_before_commit made one. */
int journal_record_build(cs_dbfile *f, const journal_run *runs, uint32_t n, uint64_t version, journal_record *jr);
/** Adds the last run (the header) to a record built by journal_record_build and sets its check. */
void journal_record_seal(journal_record *jr, const journal_run *last);
/** Frees a record that is not appended (journal_append frees the one it appends). */
void journal_record_free(journal_record *jr);
/** Appends a sealed record and syncs the journal, then frees the record; *end gets the offset
 *  the shared end moves to when the commit publishes (journal_published). */
int journal_append(cs_dbfile *f, journal_record *jr, uint64_t *end);
/** After the commit of `version` is published: the shared end moves past its record (end 0:
 *  the commit was not journaled, which marks the journal JS_UNJOURNALED). */
void journal_published(cs_dbfile *f, uint64_t end, uint64_t version);
/** A journaled commit whose record is durable failed to write its header in place: marks the
 *  journal JS_HEADER_LOST (the next commit of any process checkpoints, and the checkpoint
 *  writes the published records again before it syncs the database file). */
void journal_header_lost(cs_dbfile *f);
/** Checkpoint: syncs the database file, then resets the journal durably (a new generation).
 *  The caller holds the writer lock or is alone. */
int journal_checkpoint(cs_dbfile *f);
/** A checkpoint when the journal holds records (compaction and restore: a journal left with
 *  records would belong to a file no path names). */
int journal_checkpoint_records(cs_dbfile *f);
/** At the last close in the last process (under the join lock): a checkpoint when records
 *  were written, so a clean shutdown leaves an empty journal. */
void journal_last_close(cs_dbfile *f);
/** Logs the warning the journal left (a commit made without it on a full disk, a failed
 *  checkpoint at the last close), if any: called once the core's locks are released, since the
 *  log function is called outside them (cstore.h, "Logging"). */
void journal_log_note(cs_dbfile *f);
/** Takes the note journal_log_note would log (false: none), for a caller that must log it
 *  after releasing a lock of its own. */
bool journal_take_note(cs_dbfile *f, char *text, size_t cap, int *level);
/** Closes the journal's descriptor. */
void journal_close(cs_dbfile *f);
/** `<path>.journal`, malloc'd (NULL when out of memory). */
char *journal_path(const char *path);

/** What `swiftstore info` shows: records pending in the journal of `path` (read without
 *  locks), its generation and end. CS_NOTFOUND when there is no journal. */
int journal_peek(const char *path, uint64_t *records, uint64_t *gen, uint64_t *bytes);

#endif
