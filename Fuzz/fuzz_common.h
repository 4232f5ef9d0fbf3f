/*
 * fuzz_common.h -- shared by the fuzz targets and the seed generator: the "read everything"
 * walk over a database file, the header a body-only input is wrapped in, and small file
 * utilities.
 *
 * The walk is the contract the targets check: on any file, every call returns a result code
 * (usually CS_CORRUPT on damage); a crash, a hang or a sanitizer report is a bug. The same walk
 * is repeated in Swift by Tests/CStoreTests/FuzzCorpusTests.swift; keep the two in step.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Caps that keep a damaged file claiming huge counts from turning the walk into a hang. */
#define FUZZ_MAX_TABLES 256   /* table slots visited */
#define FUZZ_MAX_COLS 256     /* column slots visited per table */
#define FUZZ_MAX_OBJS 4096    /* objects visited per table */
#define FUZZ_MAX_ELEMS 1024   /* elements visited per collection */
#define FUZZ_MAX_DEPTH 8      /* nesting of Mixed collections followed */
#define FUZZ_BUDGET 400000    /* API calls per file, all told */

/* What one walk saw (for the seed generator's report and for tests). */
typedef struct fuzz_stats {
    int verify_rc;      /* cs_file_verify's result */
    int open_rc;        /* cs_db_open's result */
    int first_error;    /* first non-OK result while reading (0 if none) */
    uint64_t tables;    /* tables visited */
    uint64_t objects;   /* objects visited */
    uint64_t values;    /* values read (columns, elements, map entries, backlinks) */
    uint64_t calls;     /* API calls made */
} fuzz_stats;

/*
 * Verifies the file at `path` (cs_file_verify), opens it read-only and reads everything
 * through the public API, then closes it. Returns the stats; aborts only on a broken API
 * contract (a value with an impossible type, a NULL pointer with a length, a close that
 * fails), so that libFuzzer reports it.
 */
fuzz_stats fuzz_read_all(const char *path);

/*
 * A body-only input is [top ref: 8 bytes LE][version: 8 bytes LE][bytes from offset 4096 on].
 * fuzz_wrap_body builds the whole file: a header (docs/FORMAT.md section 2) whose slot 0 names
 * that top ref and version, with a logical size of 4096 + the body's length and a correct slot
 * check (a two-sync slot, so no run hash), then the body.
 * Returns a malloc'ed buffer of *out_len bytes, or NULL if the input is shorter than 16 bytes.
 */
uint8_t *fuzz_wrap_body(const uint8_t *in, size_t n, size_t *out_len);

/* The top ref and version of the slot a whole file's header selects. Returns 0, or -1 if the
 * file is shorter than the header. */
int fuzz_header_slot(const uint8_t *file, size_t n, uint64_t *top, uint64_t *version);

/* Writes `n` bytes to `path` (truncating). Returns 0, or -1 with errno. */
int fuzz_write_file(const char *path, const uint8_t *data, size_t n);

/* Reads a whole file into a malloc'ed buffer. Returns NULL on failure. */
uint8_t *fuzz_read_file(const char *path, size_t *n);

/* A per-process temporary directory (under $TMPDIR or /tmp), removed at exit, and one file path
 * inside it that every iteration reuses. */
const char *fuzz_temp_db_path(void);

/*
 * The journal target (open_journal): its input is a commit journal (docs/FORMAT.md §13) read
 * as `<file>.journal` beside the base database. fuzz_journal_base makes that database once per
 * process (table T: Int v and w, a nullable Binary b, 3000 objects, then 120 one-row updates
 * in NOSYNC, so its free list spans several chunks and journaled one-row commits patch them)
 * and returns its bytes; it is the same in every process of one build, so journals made
 * against it (make_corpus journals) replay onto it. Aborts when it cannot be made.
 */
const uint8_t *fuzz_journal_base(size_t *n);

/*
 * Writes the base database to `path` with the journal id of the journal's header (its bytes
 * 24-31, when present) in its header, and the journal to `<path>.journal`; removes any lock
 * file. Returns 0, or -1 with errno.
 */
int fuzz_journal_files(const char *path, const uint8_t *journal, size_t jn);

/*
 * Gives the journal header and every record (from 4096 on, while each has the record magic and
 * a length that fits) their correct checks (docs/FORMAT.md §13), so that a mutation reaches the
 * replay behind them instead of ending at a failed check.
 */
void fuzz_journal_seal(uint8_t *j, size_t n);

/*
 * Opens `path` read-write (FULL: the replay of its journal), verifies the handle, closes it,
 * then runs fuzz_read_all on the result. open_rc is the read-write open's result when it
 * failed.
 */
fuzz_stats fuzz_replay_all(const char *path);

#endif /* FUZZ_COMMON_H */
