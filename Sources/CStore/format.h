/*
 * format.h -- the on-disk constants more than one file uses, each with the section of
 * docs/FORMAT.md it implements (byte order: little-endian, FORMAT.md's opening list). Constants
 * one file owns alone (the schema blob's magic, the lock file's layout) sit at the top of that
 * file. Numbers, tags, flag bits and slots here are never reused. Private to the core.
 */
#ifndef CSTORE_FORMAT_H
#define CSTORE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- header (FORMAT.md §2) ---------------------------------------------------------------- */

#define HDR_SIZE 4096u
#define HDR_MAGIC "CSTORE\r\n"
#define HDR_USED 192u /* bytes of the header in use */
/* The newest format version this library reads and writes. A file is written with the lowest
 * version that describes it: 1 when new or compacted (no free list), 2 once some column has a
 * Mixed index, 3 once a commit wrote a chunked free list, 4 once a node may be
 * frame-of-reference packed (NF_BASE), which every commit by this library marks and compaction
 * marks when it copies such a node, 5 once a table node may carry the primary-key keying slots,
 * which every commit by this library marks and compaction marks when it copies such a table
 * node, 6 once a pk-keyed table may keep no index of its primary key (TBLK_NOIDX), likewise
 * (FORMAT.md §2); 7 while the newest commits may be in the journal `<file>.journal` and only a
 * library that replays it may open the file (FORMAT.md §13): a checkpoint that records may
 * follow and every journaled commit mark it, and the checkpoint at the last close marks the file
 * FORMAT_RESTING again; 8 the same with a journal whose records may hold patches (journal layout
 * 2, FORMAT.md §13), which this library writes (a 7 is still replayed, and marked 8 by the
 * first checkpoint that records may follow). */
#define FORMAT_READ 8
#define FORMAT_WRITE 8
#define FORMAT_BASE 1
#define FORMAT_CHUNKED_FREE 3
#define FORMAT_FOR 4
#define FORMAT_PK_KEYS 5 /* a table node may have slots TBL_KEYING and TBL_RETIRED (FORMAT.md §6.1) */
#define FORMAT_PK_NOIDX 6 /* a pk-keyed table may keep no index of its primary key (TBLK_NOIDX, FORMAT.md §6.1) */
/* The version every commit of this library marks when its journal holds none of the file's
 * commits (FORMAT.md §2): the version a closed file rests at. */
#define FORMAT_RESTING FORMAT_PK_NOIDX
#define FORMAT_JOURNAL 8 /* the journal may hold the newest commits, records patched or not (FORMAT.md §13) */
#define FORMAT_JOURNAL_BYTES 7 /* the same, records of bytes only (journal layout 1): read, no longer written */
/* Whether a header's format version says the journal may hold commits (either of the above). */
static inline bool format_journaled(uint16_t v) { return v == FORMAT_JOURNAL || v == FORMAT_JOURNAL_BYTES; }
/* The journal id (FORMAT.md §2, header bytes 144-159): the id and its check. */
#define HDR_ID_OFF 144u
/* The journal's header block; records start after it (FORMAT.md §13). */
#define JOURNAL_HDR 4096u

/* ---- nodes (FORMAT.md §3) ----------------------------------------------------------------- */

enum {
    NF_INNER = 0x01, /* inner node of a B+ tree */
    NF_REFS = 0x02,  /* elements are refs or tagged ints (width 64) */
    NF_CTX = 0x04,   /* structure-specific marker */
    NF_BYTES = 0x08, /* elements are `width` raw bytes each (not bit-packed) */
    NF_NULLS = 0x10, /* payload starts with a null bitmap */
    NF_BASE = 0x20,  /* packed ints (format 4): an 8-byte base follows the bitmap; value = base + element */
};
#define NF_KNOWN 0x3f

typedef struct node_hdr {
    uint16_t check; /* 16-bit checksum of the payload, computed at commit */
    uint8_t flags;  /* NF_* */
    uint8_t width;  /* bits per element (packed ints) or bytes per element (NF_BYTES) */
    uint32_t count; /* number of elements */
} node_hdr;

#define NODE_HDR 8u
#define PAD8(x) (((x) + 7u) & ~(uint64_t)7u)

static inline uint64_t bitmap_bytes(uint64_t count) { return ((count + 63) / 64) * 8; }

static inline uint64_t node_payload_bytes(uint8_t flags, uint8_t width, uint64_t count)
{
    uint64_t b = (flags & NF_BYTES) ? count * width : (count * width + 7) / 8;
    if (flags & NF_NULLS) b += bitmap_bytes(count);
    if (flags & NF_BASE) b += 8;
    return b;
}
static inline uint64_t node_size_of(uint8_t flags, uint8_t width, uint64_t count)
{
    return NODE_HDR + PAD8(node_payload_bytes(flags, width, count));
}
static inline uint8_t *node_payload(node_hdr *h) { return (uint8_t *)h + NODE_HDR; }
/* The packed elements (after the bitmap and the base, FORMAT.md §3). */
static inline uint8_t *node_values(node_hdr *h)
{
    uint8_t *p = node_payload(h);
    if (h->flags & NF_NULLS) p += bitmap_bytes(h->count);
    if (h->flags & NF_BASE) p += 8;
    return p;
}
/* The base a frame-of-reference node adds to each element; 0 for any other node. */
static inline int64_t node_base(node_hdr *h)
{
    if (!(h->flags & NF_BASE)) return 0;
    const uint8_t *p = node_payload(h);
    if (h->flags & NF_NULLS) p += bitmap_bytes(h->count);
    int64_t b;
    memcpy(&b, p, 8);
    return b;
}
static inline uint64_t *node_refs(node_hdr *h) { return (uint64_t *)node_payload(h); }

/* A word of a REFS node with the low bit set is a tagged integer, 0 is none, else a ref. */
static inline bool tagged(uint64_t v) { return v & 1; }
static inline uint64_t tag_int(int64_t v) { return ((uint64_t)v << 1) | 1; }
static inline int64_t untag(uint64_t v) { return (int64_t)v >> 1; }

/* ---- top node slots (FORMAT.md §4) -------------------------------------------------------- */

enum {
    TOP_SCHEMA = 0,   /* ref: schema blob */
    TOP_TABLES = 1,   /* ref: table nodes */
    TOP_FREE_POS = 2, /* ref: free extent positions */
    TOP_FREE_LEN = 3, /* ref: free extent lengths */
    TOP_FREE_VER = 4, /* ref: version each extent was freed in */
    TOP_SIZE = 5,     /* tagged: logical file size */
    TOP_VERSION = 6,  /* tagged: version number */
    TOP_HISTORY = 7,  /* ref: change history (0 until it exists) */
    TOP_SCHEMA_VERSION = 8, /* tagged: the user's schema version */
    TOP_COMMIT_RUNS = 9, /* ref: (position, length) of every run the commit wrote */
    TOP_SLOTS = 10,
    /* Optional slots past TOP_SLOTS: a top has them only once they are used (txn_top_slot
     * makes the first TOP_SLOTS exist, and one past them when it is asked for; compaction
     * copies any further ones). */
    TOP_FEED = 10, /* ref: feed slot table (FORMAT.md §8.1), 0 or absent when there is none */
    TOP_TIMES = 11, /* ref: commit times of the history's versions (FORMAT.md §8.2), 0 or absent: none */
    TOP_DELETED_PKS = 12, /* ref: primary keys of the objects the history's versions deleted
                             (FORMAT.md §8.3), 0 or absent: none recorded */
};

/* ---- table node slots (FORMAT.md §6.1) ---------------------------------------------------- */

enum {
    TBL_ROOT = 0,    /* ref: cluster tree root */
    TBL_NEXTKEY = 1, /* tagged: next object key */
    TBL_COUNT = 2,   /* tagged: object count */
    TBL_INDEXES = 3, /* ref: indexes (0 until they exist) */
    TBL_SLOTS = 4,
    /* Optional (format 5): a table node has them only once its table was made pk-keyed. */
    TBL_KEYING = 4,  /* tagged: keying flags (TBLK_*), absent = 0 */
    TBL_RETIRED = 5, /* ref: retired primary-key keys, a positional tree of sorted Ints; 0 = none */
    TBL_SLOTS_KEYED = 6,
};

/* Keying flags of a table node's TBL_KEYING slot (FORMAT.md §6.1). */
enum {
    TBLK_PK = 0x01, /* pk-keyed: an object whose key is below KEY_PK_END has that key as its Int primary key */
    /* (format 6) with TBLK_PK: every object's key is its Int primary key (the counter never gave
     * out a key), and the primary key's index is not kept: the cluster keys answer for it */
    TBLK_NOIDX = 0x02,
};
#define TBLK_KNOWN 0x03

/* In a pk-keyed table, keys [0, KEY_PK_END) are primary-key values; keys from the counter
 * (TBL_NEXTKEY) start at KEY_PK_END and stay below 2^62 (a tagged integer's range). */
#define KEY_PK_END ((int64_t)1 << 61)
#define KEY_END ((int64_t)1 << 62)

/* ---- cluster leaf slots (FORMAT.md §6.2) -------------------------------------------------- */

/* A cluster leaf is [keys, col0, col1, ...]: slot CL_KEYS holds the keys, slot CL_COL0 + c
 * column c's sub-node. An inner node is [first, child0, child1, ...]: slot CL_FIRST holds the
 * first key under each child, slot CL_CHILD0 + i child i. cluster.h names them (cluster_keys_ref,
 * cluster_leaf_col_ref, cluster_inner_child, ...). */
enum {
    CL_KEYS = 0,   /* leaf: ref of the packed sorted object keys */
    CL_COL0 = 1,   /* leaf: ref of column 0's sub-node; column c at CL_COL0 + c */
    CL_FIRST = 0,  /* inner: ref of the packed first keys of the children */
    CL_CHILD0 = 1, /* inner: ref of child 0; child i at CL_CHILD0 + i */
};

/* ---- index key tags (FORMAT.md §6.5) ------------------------------------------------------ */

/* The first byte of every index key. 0x00-0x06 are format version 1; the others appear only in
 * Mixed indexes (format version 2). */
enum {
    INDEX_TAG_NULL = 0x00,
    INDEX_TAG_BOOL = 0x01,
    INDEX_TAG_INT = 0x02,       /* also every Mixed number that is an integer fitting int64 */
    INDEX_TAG_STRING = 0x03,
    INDEX_TAG_TIMESTAMP = 0x04,
    INDEX_TAG_OBJECTID = 0x05,
    INDEX_TAG_UUID = 0x06,
    INDEX_TAG_NAN = 0x07,       /* Mixed: any NaN (Float, Double, Decimal128) */
    INDEX_TAG_DOUBLE = 0x08,    /* Mixed: a number a double holds exactly that is no int64 */
    INDEX_TAG_DECIMAL = 0x09,   /* Mixed: a Decimal128 that is neither */
    INDEX_TAG_BINARY = 0x0A,    /* Mixed: binary bytes (never equal to a string) */
    INDEX_TAG_LINK = 0x0B,      /* Mixed: a link (table, key) */
    INDEX_TAG_LIST = 0x0C,      /* Mixed: a nested list */
    INDEX_TAG_DICT = 0x0D,      /* Mixed: a nested dictionary */
};

#endif
