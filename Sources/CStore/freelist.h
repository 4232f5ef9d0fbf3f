/*
 * freelist.h -- the free list (freelist.c, docs/FORMAT.md §7.1): a two-level tree of chunks of
 * free extents, kept in memory for the newest version and changed in place by the commit being
 * built (commit.c). Private to the core.
 */
#ifndef CSTORE_FREELIST_H
#define CSTORE_FREELIST_H

#include "internal.h"

/* Chunks are written only by a commit that folds the delta chain (docs/FORMAT.md §7.1.1), many
 * at once; they are small enough (at most 1,544 bytes) to find holes in a file whose free space
 * is in small pieces, where chunks of 256 extents went past the end and grew the file (§7.1
 * gives the measurements). */
#define FL_CHUNK_MAX 64  /* extents in a chunk written by a commit, at most */
#define FL_CHUNK_FILL 32 /* extents per piece when a larger one is cut */
#define FL_CHUNK_MIN 8   /* a rewritten chunk this small joins the rewritten one before it */
#define FL_PAGE_MAX 64   /* chunks in a page written by a commit, at most */
#define FL_PAGE_FILL 32  /* chunks per piece when a larger one is cut */
#define FL_PAGE_MIN 8    /* a rewritten page this small joins the rewritten one before it */

/* The delta chain (docs/FORMAT.md §7.1.1): a commit writes one delta node of the extents it
 * removed and added instead of rewriting chunks; a commit folds the chain into the chunks (the
 * checkpoint) once it holds more than FL_DELTA_MIN entries and a quarter of the list's extents,
 * or FL_DELTA_NODES nodes, or when the commit frees more than FL_DELTA_BIG extents; so a fold
 * rewrites at most the whole list once per that many entries, and opening replays at most that
 * many. A delta node lives until the fold: placement treats it as a cold node (commit.c). */
#define FL_DELTA_FIXED 5     /* words before a delta node's entries */
#define FL_DELTA_MIN 4096    /* entries a chain may always hold before a fold */
#define FL_DELTA_NODES 512   /* nodes a chain holds at most */
#define FL_DELTA_BIG 256     /* a commit that frees more extents than this folds */

/** Reads the free list of a version from its top slots r[0..2] (a version-1/2 list's three
 *  arrays, or a version-3 root), each extent checked to lie in [HDR_SIZE, limit) without
 *  overlap, each chunk's extents within its bounds (CS_CORRUPT otherwise). A version-1/2 list
 *  becomes one dirty chunk (written as chunks by the next commit). */
int fl_load(cs_txn *t, const uint64_t r[3], uint64_t limit, freelist *out);
/** The delta chain whose newest node is `head` (top slot 3, version 6), oldest first: *refs
 *  (freed by the caller) receives the nodes' refs, *n how many; each node's shape and the chain's
 *  counts are checked (CS_CORRUPT). head 0: none. */
int fl_chain_nodes(cs_txn *t, uint64_t head, uint64_t limit, uint64_t **refs, uint64_t *n);
/** The nodes and entries the chain whose newest node is `head` holds (0, 0 for none). */
int fl_chain_info(cs_txn *t, uint64_t head, uint64_t limit, uint64_t *nodes, uint64_t *entries);
/** A delta commit (l->delta): how many extents the dirty chunks lost and gained so far. */
void fl_delta_count(const freelist *l, uint64_t *nrem, uint64_t *nadd);
/** Writes them: rslots (position, length) pairs, then aslots (position, length, version)
 *  triples, from vals on (64-bit words; slots left over stay as the caller zeroed them). */
void fl_delta_write(const freelist *l, uint8_t *vals, uint64_t rslots, uint64_t aslots);
/** A folding commit: every chunk and page changed since the checkpoint becomes dirty (written,
 *  its old node freed). */
void fl_fold_start(freelist *l);
/** Frees everything the list holds and empties it. */
void fl_clear(freelist *l);
/** The same read, flattened: the extents sorted by position, padding left out. The caller frees
 *  *ext. */
int freelist_read(cs_txn *t, const uint64_t r[3], uint64_t limit, extent **ext, uint64_t *n);

/* During a commit (l->newver set): */

/** Adds [pos, pos + len) freed in version `ver`, merged with a neighbour of the same version in
 *  its chunk; the chunk becomes dirty (its old node and its page's are freed in l->newver).
 *  An allocation failure is kept in l->err. */
void fl_insert(freelist *l, uint64_t pos, uint64_t len, uint64_t ver);
/** Marks chunk ci of page pi as rewritten by this commit (its old node and its page's are freed);
 *  in a delta commit (l->delta) it is only changed: its extents are copied first (fl_chunk.orig,
 *  for the delta node), it is flagged changed since the checkpoint, and no node is freed. */
void fl_chunk_dirty(freelist *l, uint32_t pi, uint32_t ci);
/** The page and chunk whose range holds pos. */
void fl_locate(const freelist *l, uint64_t pos, uint32_t *pi, uint32_t *ci);
/** The extent holding pos (one must). */
extent *fl_extent_at(const freelist *l, uint64_t pos);
/** Merges touching extents that are both reusable by readers at `oldest` or newer (the merged
 *  one keeps the newer version) in dirty chunks, and with clean_too also in clean chunks known
 *  to hold touching extents (fl_chunk.pending), which a merge makes dirty. */
void fl_merge_reusable(freelist *l, uint64_t oldest, bool clean_too);
/** Gives the dirty chunks and pages the shape they are written in (FL_* limits), dropping
 *  empty ones, and keeps the first bounds at 0. */
int fl_reshape(freelist *l);
/** Bytes in extents freed after `oldest` (not reusable). */
uint64_t fl_unreusable_bytes(const freelist *l, uint64_t oldest);
/** The smallest reusable extent with at least `size` bytes, where the extents at taken_pos[k]
 *  have only taken_len[k] bytes left; with dirty_only, only among the chunks this commit
 *  rewrites. NULL when none. *len_out receives its length. */
extent *fl_best_fit(const freelist *l, uint64_t size, uint64_t oldest, const uint64_t *taken_pos,
                    const uint64_t *taken_len, int ntaken, bool dirty_only, uint64_t *len_out);
/** The first reusable extent with at least `size` bytes at or after position `from` in address
 *  order, wrapping round to the start of the list (next fit), skipping the extents at
 *  taken_pos[0..ntaken). NULL when none. *len_out, if not NULL, receives its length. */
extent *fl_next_fit(const freelist *l, uint64_t size, uint64_t oldest, uint64_t from, const uint64_t *taken_pos,
                    int ntaken, uint64_t *len_out);
/** Calls decide() for every extent freed after `oldest` and before `newver`; those it accepts
 *  become reusable by every reader (version 0), and their chunks dirty. */
void fl_backdate_scan(freelist *l, uint64_t oldest, uint64_t newver, bool (*decide)(void *ctx, const extent *x),
                      void *ctx);
/* Online shrinking (docs/FORMAT.md §7.3), during a commit: */

/** Drops the extents that end the file while they are reusable by readers at `oldest` (their
 *  chunks are rewritten); returns the new logical end (`end` when the last one is not). */
uint64_t fl_cut_tail(freelist *l, uint64_t end, uint64_t oldest);
/** The start w of the shortest stretch [w, end) that holds `budget` live bytes (bytes in no
 *  extent), or all of them: *live_out receives its live bytes, *free_out its free ones. */
uint64_t fl_tail_window(const freelist *l, uint64_t end, uint64_t budget, uint64_t *live_out, uint64_t *free_out);
/** Of the pairs of reusable extents ending below `below` with at most `maxgap` bytes in no
 *  extent between them, the one that would make the largest extent if those bytes were freed:
 *  [*lo, *hi) receives the bytes between. Returns that size, 0 when it is not larger than the
 *  largest reusable extent there already. */
uint64_t fl_hole_pair(const freelist *l, uint64_t below, uint64_t oldest, uint64_t maxgap, uint64_t *lo,
                      uint64_t *hi);
/** Rewrites every chunk and page whose node lies at or past w (so its old node is freed). */
void fl_dirty_from(freelist *l, uint64_t w);

/** After the commit's header is durable: drops consumed extents, makes every chunk and page
 *  clean (their ref and size set by the commit) and recomputes the aggregates. */
void fl_published(freelist *l);

#endif
