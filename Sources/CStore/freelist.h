/*
 * freelist.h -- the free list (freelist.c, docs/FORMAT.md §7.1): a two-level tree of chunks of
 * free extents, kept in memory for the newest version and changed in place by the commit being
 * built (commit.c). Private to the core.
 */
#ifndef CSTORE_FREELIST_H
#define CSTORE_FREELIST_H

#include "internal.h"

/* Chunks are large so that a commit's frees and placements land in few of them: every chunk a
 * commit touches is a node rewritten, and its old node freed into another chunk (docs/FORMAT.md
 * §7.1 gives the measurements behind these sizes). */
#define FL_CHUNK_MAX 256  /* extents in a chunk written by a commit, at most */
#define FL_CHUNK_FILL 128 /* extents per piece when a larger one is cut */
#define FL_CHUNK_MIN 32   /* a rewritten chunk this small joins the rewritten one before it */
#define FL_PAGE_MAX 64   /* chunks in a page written by a commit, at most */
#define FL_PAGE_FILL 32  /* chunks per piece when a larger one is cut */
#define FL_PAGE_MIN 8    /* a rewritten page this small joins the rewritten one before it */
/* Placement's index lists a chunk's extents of at least FL_BIG bytes (fl_chunk.big): a query for
 * that many bytes or more looks only at them. Most free extents of a settled file are old copies
 * of small nodes, far below it (docs/benchmarks/README.md, Placement's queries). */
#define FL_BIG 1024

/** Reads the free list of a version from its top slots r[0..2] (a version-1/2 list's three
 *  arrays, or a version-3 root), each extent checked to lie in [HDR_SIZE, limit) without
 *  overlap, each chunk's extents within its bounds (CS_CORRUPT otherwise). A version-1/2 list
 *  becomes one dirty chunk (written as chunks by the next commit). */
int fl_load(cs_txn *t, const uint64_t r[3], uint64_t limit, freelist *out);
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
/** Marks chunk ci of page pi as rewritten by this commit. */
void fl_chunk_dirty(freelist *l, uint32_t pi, uint32_t ci);
/** The page and chunk whose range holds pos. */
void fl_locate(const freelist *l, uint64_t pos, uint32_t *pi, uint32_t *ci);
/** The extent holding pos (one must). */
extent *fl_extent_at(const freelist *l, uint64_t pos);
/** The same, and *chunk (if not NULL) the chunk that holds it. */
extent *fl_extent_in(const freelist *l, uint64_t pos, fl_chunk **chunk);
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
 *  rewrites. Of several as small, the first in the file. NULL when none. *len_out receives its
 *  length. May (re)build the index of the chunks it looks at (fl_chunk.big). */
extent *fl_best_fit(freelist *l, uint64_t size, uint64_t oldest, const uint64_t *taken_pos,
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
