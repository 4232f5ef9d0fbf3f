/*
 * internal.h -- types and helpers shared by the core's files (never installed).
 *
 * Owns: the ref/pointer translation, the node header (docs/FORMAT.md §3), error recording,
 * and the structs behind cs_db and cs_txn.
 *
 * Invariants:
 *  1. A ref below SLAB_BASE is a byte offset in the file; at or above it, a node in the write
 *     transaction's heap slab. Only a WRITE transaction ever holds slab refs.
 *  2. Nothing reached through a file ref is trusted: node_at() checks alignment, bounds and the
 *     header before any byte of the payload is read.
 *  3. Nodes with NF_REFS always have width 64, so a parent's child slot is addressable and
 *     replacing a child never reallocates the parent.
 */
#ifndef CSTORE_INTERNAL_H
#define CSTORE_INTERNAL_H

#include "cstore.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t ref_t;

#define SLAB_BASE (1ull << 62)
#define IS_SLAB(r) ((r) >= SLAB_BASE)

/* ---- errors ---------------------------------------------------------------------------- */

int cs_fail(int code, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/** Records CS_CORRUPT with the source location of the check that found it. */
#define CORRUPT(...) cs_corrupt_at(__FILE__, __LINE__, __VA_ARGS__)
int cs_corrupt_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef NDEBUG
#define cs_assert(x) ((void)0)
#else
#define cs_assert(x)                                                                          \
    do {                                                                                      \
        if (!(x)) {                                                                           \
            fprintf(stderr, "cstore: assertion failed: %s (%s:%d)\n", #x, __FILE__, __LINE__); \
            abort();                                                                          \
        }                                                                                     \
    } while (0)
#endif

#define TRY(expr)                   \
    do {                            \
        int rc_ = (expr);           \
        if (rc_ != CS_OK) return rc_; \
    } while (0)

/* ---- node header (FORMAT.md §3) --------------------------------------------------------- */

enum {
    NF_INNER = 0x01, /* inner node of a B+ tree */
    NF_REFS = 0x02,  /* elements are refs or tagged ints (width 64) */
    NF_CTX = 0x04,   /* structure-specific marker */
    NF_BYTES = 0x08, /* elements are `width` raw bytes each (not bit-packed) */
    NF_NULLS = 0x10, /* payload starts with a null bitmap */
};
#define NF_KNOWN 0x1f

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
    return b;
}
static inline uint64_t node_size_of(uint8_t flags, uint8_t width, uint64_t count)
{
    return NODE_HDR + PAD8(node_payload_bytes(flags, width, count));
}
static inline uint8_t *node_payload(node_hdr *h) { return (uint8_t *)h + NODE_HDR; }
static inline uint8_t *node_values(node_hdr *h)
{
    uint8_t *p = node_payload(h);
    if (h->flags & NF_NULLS) p += bitmap_bytes(h->count);
    return p;
}
static inline uint64_t *node_refs(node_hdr *h) { return (uint64_t *)node_payload(h); }

static inline bool tagged(uint64_t v) { return v & 1; }
static inline uint64_t tag_int(int64_t v) { return ((uint64_t)v << 1) | 1; }
static inline int64_t untag(uint64_t v) { return (int64_t)v >> 1; }

uint16_t node_checksum(const node_hdr *h);

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

schema *schema_new(void);
void schema_release(schema *s);
schema *schema_clone(const schema *s);
int schema_parse(const uint8_t *p, uint64_t n, schema **out);
int schema_serialize(const schema *s, uint8_t **out, uint64_t *n);

/* ---- the file and the shared state ------------------------------------------------------ */

/* Header (FORMAT.md §2) */
#define HDR_SIZE 4096u
#define HDR_MAGIC "CSTORE\r\n"
#define HDR_USED 192u /* bytes of the header in use */
/* The newest format version this library reads and writes. A file is written with the lowest
 * version that describes it: 1, or 2 once some column has a Mixed index (FORMAT.md §2). */
#define FORMAT_READ 2
#define FORMAT_WRITE 2
#define FORMAT_BASE 1

/* Top node slots (FORMAT.md §4) */
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
};

/* Table node slots */
enum {
    TBL_ROOT = 0,    /* ref: cluster tree root */
    TBL_NEXTKEY = 1, /* tagged: next object key */
    TBL_COUNT = 2,   /* tagged: object count */
    TBL_INDEXES = 3, /* ref: indexes (0 until they exist) */
    TBL_SLOTS = 4,
};

typedef struct extent {
    uint64_t pos; /* file offset */
    uint64_t len; /* bytes */
    uint64_t ver; /* version it was freed in (0 = reusable by every reader) */
} extent;

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
    cs_durability durability; /* of the first open */
    const cs_io *io;         /* system calls */
    pthread_mutex_t mu;      /* guards the fields below */
    pthread_mutex_t write_mu; /* the single writer */
    mapping *map;            /* current mapping */
    uint64_t phys_size;      /* physical file size */
    uint64_t version;        /* newest committed version */
    ref_t top;               /* its top ref */
    uint64_t logical;        /* its logical size */
    int selector;            /* header slot in use */
    pin *pins;               /* versions pinned by transactions */
    uint32_t npins, cap_pins; /* used, allocated */
    uint32_t max_versions;   /* 0 = unlimited */
    extent *free;            /* cached free list (valid for free_version) */
    uint64_t nfree, cap_free; /* used, allocated */
    uint64_t free_version;   /* version the cache describes (0 = none) */
    slab slab;               /* heap memory for the writer */
    schema *schema_cache;    /* parsed schema of the newest version */
    void *lk;                /* the mapped lock file (NULL: lockless read-only open) */
    int lfd;                 /* its descriptor (holds this process's byte-range locks) */
    int slot;                /* this process's reader slot in it, -1 for none */
    uint8_t hdr_img[HDR_USED]; /* the header as this process last wrote it */
    uint64_t hdr_version;    /* newest version in hdr_img (0: image not valid) */
    uint64_t published_pin;  /* the oldest pinned version as last published in the lock file */
    uint64_t published_hi;   /* the newest pinned version as last published */
};

struct cs_db {
    cs_dbfile *f;   /* shared state */
    char *path;     /* as opened */
    bool readonly;  /* this handle's mode */
    int txns;       /* live transactions */
    cs_txn *spare;  /* an ended transaction's struct, kept for the next begin */
};

#define CC_COLS 32

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
    uint16_t base_format;  /* format version the version a write started on needs */
    cs_change *log;        /* change records of this write */
    uint64_t nlog, caplog; /* used, allocated */
    int64_t *created_from; /* per table: first key created in this write (INT64_MAX: none) */
    uint32_t ncreated;     /* entries in created_from */
    const void *cc_leaf;   /* leaf whose column nodes cc_col holds (read transactions) */
    uint64_t cc_epoch;     /* epoch cc_col is valid for */
    node_hdr *cc_col[CC_COLS]; /* checked column nodes of cc_leaf, NULL = not checked yet */
    ref_t cc_ref[CC_COLS]; /* their refs */
    ref_t tns_top;         /* table-node slot cache: the top it was found under */
    ref_t tns_tables;      /* ... the table list ref */
    uint32_t tns_table;    /* ... the table */
    ref_t *tns_slot;       /* ... the slot (in the table list) */
    uint64_t rt_epoch;     /* root caches of a READ transaction: epoch the table root is valid for */
    uint32_t rt_table;     /* ... that table */
    ref_t rt_root;         /* ... its cluster root */
    uint64_t ri_epoch;     /* ... epoch the index root is valid for */
    uint32_t ri_table;     /* ... that index's table */
    uint32_t ri_col;       /* ... and column */
    ref_t ri_root;         /* ... its root */
};

/* ---- translation and node access -------------------------------------------------------- */

static inline uint8_t *txn_ptr(const cs_txn *t, ref_t r)
{
    if (!IS_SLAB(r)) return (uint8_t *)t->map + r;
    return (uint8_t *)slab_ptr(&t->f->slab, r - SLAB_BASE);
}

/** Checks and returns the node at file ref `r`. CS_CORRUPT when it cannot be a node. */
int node_at_file(const cs_txn *t, ref_t r, node_hdr **out);
/** Checks and returns the node at `r` (any ref). CS_CORRUPT when it cannot be a node. */
static inline int node_at(const cs_txn *t, ref_t r, node_hdr **out)
{
    if (IS_SLAB(r) && t->writing) {
        /* a slab ref can only come from this transaction's own writes; one read from a
         * damaged file lands outside the regions handed out so far */
        uint64_t off = r - SLAB_BASE;
        const slab *s = &t->f->slab;
        int k = 63 - __builtin_clzll((off >> 20) + 1);
        if (k < SLAB_REGIONS && k <= s->cur && s->region[k] &&
            (k < s->cur || off - ((((uint64_t)1 << k) - 1) << 20) < s->bump)) {
            *out = (node_hdr *)txn_ptr(t, r);
            return CS_OK;
        }
    }
    return node_at_file(t, r, out);
}

/* Packed integers */
/* Always inlined (at -O2 the compiler kept it out of line): it is the innermost step of every
 * read of an integer. */
#define HOT_INLINE static inline __attribute__((always_inline))
HOT_INLINE int64_t packed_get(const uint8_t *p, uint8_t width, uint64_t i)
{
    switch (width) {
    case 0: return 0;
    case 1: return (p[i >> 3] >> (i & 7)) & 1;
    case 2: return (p[i >> 2] >> ((i & 3) * 2)) & 3;
    case 4: return (p[i >> 1] >> ((i & 1) * 4)) & 15;
    case 8: return (int8_t)p[i];
    case 16: { int16_t v; memcpy(&v, p + i * 2, 2); return v; }
    case 32: { int32_t v; memcpy(&v, p + i * 4, 4); return v; }
    default: { int64_t v; memcpy(&v, p + i * 8, 8); return v; }
    }
}

void packed_set(uint8_t *p, uint8_t width, uint64_t i, int64_t v);
uint8_t width_for(int64_t v);
void packed_add(uint8_t *p, uint8_t width, uint64_t from, uint64_t to, int64_t delta);

HOT_INLINE int64_t node_get_int(node_hdr *h, uint64_t i)
{
    return packed_get(node_values(h), h->width, i);
}
HOT_INLINE bool node_is_null(node_hdr *h, uint64_t i)
{
    if (!(h->flags & NF_NULLS)) return false;
    const uint8_t *b = node_payload(h);
    return (b[i >> 3] >> (i & 7)) & 1;
}

/* Writable node operations (txn must be writing). Each may move the node: `*slot` is the
 * ref as stored in the parent and is updated in place. */
int node_new(cs_txn *t, uint8_t flags, uint8_t width, uint64_t count, ref_t *out);
int node_cow(cs_txn *t, ref_t *slot);
void node_free(cs_txn *t, ref_t r);
void node_free_tree(cs_txn *t, ref_t r);
void tree_collapse_root(cs_txn *t, ref_t *root);
int node_reserve(cs_txn *t, ref_t *slot, uint64_t count, uint8_t width);
int node_set_int(cs_txn *t, ref_t *slot, uint64_t i, int64_t v);
int node_insert_int(cs_txn *t, ref_t *slot, uint64_t i, int64_t v);
int node_insert_bytes(cs_txn *t, ref_t *slot, uint64_t i, const void *src);
int node_erase(cs_txn *t, ref_t *slot, uint64_t i);
int node_truncate(cs_txn *t, ref_t *slot, uint64_t n);
void node_set_null(node_hdr *h, uint64_t i, bool null);
int node_set_nulls_flag(cs_txn *t, ref_t *slot);
/* Blob (width-1 byte node): replace bytes [at, at+del) with `ins` of length n. */
int blob_splice(cs_txn *t, ref_t *slot, uint64_t at, uint64_t del, const void *ins, uint64_t n);
int node_new_blob(cs_txn *t, const void *p, uint64_t n, ref_t *out);

/* ---- leaves: one column's values in a cluster, or a collection's elements ---------------- */

typedef enum leaf_kind {
    LK_INT = 1,    /* packed ints: INT, BOOL */
    LK_LINK = 2,   /* packed ints, key + 1, 0 = null */
    LK_FLOAT = 3,  /* 4 bytes */
    LK_DOUBLE = 4, /* 8 bytes */
    LK_TS = 5,     /* 12 bytes: i64 seconds, i32 nanoseconds */
    LK_OID = 6,    /* 12 bytes */
    LK_UUID = 7,   /* 16 bytes */
    LK_DEC = 8,    /* 16 bytes */
    LK_STR = 9,    /* string leaf: STRING, BINARY */
    LK_MIXED = 10, /* mixed leaf */
    LK_REFS = 11,  /* a ref (or 0) per element: collections in a cell */
    LK_BACK = 12,  /* backlinks per element */
} leaf_kind;

typedef struct leaf_spec {
    leaf_kind kind; /* storage */
    cs_type type;   /* element type */
    bool nullable;  /* nulls allowed */
    uint32_t target; /* link target table */
} leaf_spec;

leaf_spec leaf_spec_of(cs_type type, bool nullable, uint32_t target);
leaf_spec leaf_spec_col(const col_def *c);
int leaf_make(cs_txn *t, const leaf_spec *s, uint64_t n, ref_t *out);
int leaf_count(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t *out);
int leaf_get(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, cs_value *out);
int leaf_set(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v);
int leaf_insert(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, const cs_value *v);
/** Erases element i, freeing what it owns (blobs, nested collections). */
int leaf_erase(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i);
/** Moves elements [from, end) of *src to the end of *dst (ownership moves along). */
int leaf_move(cs_txn *t, const leaf_spec *s, ref_t *src, uint64_t from, ref_t *dst);
/** Raw ref element of an LK_REFS / LK_BACK leaf, or the nested ref of a Mixed element. */
int leaf_get_ref(cs_txn *t, const leaf_spec *s, ref_t r, uint64_t i, uint64_t *out);
int leaf_set_ref(cs_txn *t, const leaf_spec *s, ref_t *slot, uint64_t i, uint64_t v);
/** Checks a value against a leaf spec (type, nulls, size). */
int value_check(const leaf_spec *s, const cs_value *v);

/* ---- cluster trees ---------------------------------------------------------------------- */

#define CLUSTER_MAX 256

int cluster_find(cs_txn *t, ref_t root, int64_t key, node_hdr **leaf, uint32_t *row);
int cluster_insert(cs_txn *t, uint32_t table, int64_t key);
int cluster_erase(cs_txn *t, uint32_t table, int64_t key);
/** Returns a writable leaf slot and row for `key`, copying the path (WRITE). */
int cluster_write_path(cs_txn *t, uint32_t table, int64_t key, ref_t **leaf_slot, uint32_t *row);
int table_root(cs_txn *t, uint32_t table, ref_t *root);
int table_node_slot(cs_txn *t, uint32_t table, ref_t **slot);
int table_get_meta(cs_txn *t, uint32_t table, int which, int64_t *out);
int table_set_meta(cs_txn *t, uint32_t table, int which, int64_t v);
/** First key >= `from` in the table, with its leaf and row. CS_NOTFOUND past the end. */
int cluster_seek(cs_txn *t, ref_t root, int64_t from, node_hdr **leaf, uint32_t *row, int64_t *key);

/* ---- positional B+ trees (collections) -------------------------------------------------- */

#define BPT_MAX 256

int bpt_size(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t *out);
int bpt_get(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, cs_value *out);
int bpt_get_ref(cs_txn *t, const leaf_spec *s, ref_t root, uint64_t i, uint64_t *out);
int bpt_set(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, const cs_value *v);
int bpt_set_ref(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, uint64_t v);
int bpt_insert(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i, const cs_value *v);
int bpt_erase(cs_txn *t, const leaf_spec *s, ref_t *root, uint64_t i);

/* ---- schema access ---------------------------------------------------------------------- */

int txn_table(cs_txn *t, uint32_t table, table_def **out);
int txn_col(cs_txn *t, uint32_t table, uint32_t col, table_def **tbl, col_def **out);
int txn_schema_writable(cs_txn *t);
int txn_need_write(cs_txn *t);
int txn_top_slot(cs_txn *t, int which, ref_t **slot);
int txn_top_get(cs_txn *t, int which, uint64_t *out);

/* ---- objects (used by collections for links) -------------------------------------------- */

int obj_delete_key(cs_txn *t, uint32_t table, int64_t key);
/** Inserts a row with the table's next key (any table, embedded too) and points `out` at it. */
int obj_create_row(cs_txn *t, uint32_t table, cs_obj *out);
int backlink_add(cs_txn *t, uint32_t target_table, int64_t target, uint32_t origin_table,
                 uint32_t origin_col, int64_t origin);
int backlink_remove(cs_txn *t, uint32_t target_table, int64_t target, uint32_t origin_table,
                    uint32_t origin_col, int64_t origin);
/** Deletes `key` of an embedded table when a link to it goes away. */
int link_dropped(cs_txn *t, uint32_t target_table, int64_t target);
int obj_exists_key(cs_txn *t, uint32_t table, int64_t key, bool *out);
/** cs_obj_get without turning a Mixed link to a deleted object into null (the stored value). */
int obj_get_stored(cs_obj *obj, uint32_t col, cs_value *out);

/* ---- file ------------------------------------------------------------------------------- */

int file_commit(cs_txn *t);
int file_read_latest(cs_dbfile *f, uint64_t *version, uint64_t *top, uint64_t *logical, int *sel);

/* ---- indexes (index.c) ------------------------------------------------------------------- */

/* Type tags, the first byte of every index key (FORMAT.md §6.5). 0x00-0x06 are format version
 * 1; the others appear only in Mixed indexes (format version 2). Never reused. */
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

bool index_type_ok(cs_type type);
/** The order-preserving key of a value (FORMAT.md §6.5); `mixed`: the key of a Mixed index.
 *  *out is malloc'd with 8 spare bytes at the end (for the object key). */
int index_encode(const cs_value *v, bool mixed, uint8_t **out, size_t *n);
/** The INDEX_TAG_DOUBLE key of d (integers included), for bounds of Mixed numeric ranges. */
int index_double_key(double d, uint8_t **out, size_t *n);
/** True when a schema has a Mixed index, which needs format version 2. */
bool index_schema_needs_v2(const schema *s);
/** A range of whole index entries [lo, hi) compared as bytes (NULL: open on that side). */
typedef struct irange {
    uint8_t *lo; /* first entry included, or NULL */
    size_t lon;  /* its length */
    uint8_t *hi; /* first entry excluded, or NULL */
    size_t hin;  /* its length */
} irange;
/** The objects with an entry in any of the ranges, each once, in key order (free()). */
int index_collect(cs_txn *t, uint32_t table, uint32_t col, const irange *r, size_t nr, int64_t **keys, size_t *count);
int index_root(cs_txn *t, uint32_t table, uint32_t col, ref_t *root);
int index_update(cs_txn *t, uint32_t table, uint32_t col, int64_t key, const cs_value *old, const cs_value *nv);
int index_row(cs_txn *t, uint32_t table, int64_t key, bool insert);
int index_drop(cs_txn *t, uint32_t table, uint32_t col);
int index_build(cs_txn *t, uint32_t table, uint32_t col, bool unique);
int index_verify(cs_txn *t, uint32_t table, uint32_t col);

/* ---- change history (changes.c) --------------------------------------------------------- */

int change_create(cs_txn *t, uint32_t table, int64_t key);
int change_delete(cs_txn *t, uint32_t table, int64_t key);
int change_set(cs_txn *t, uint32_t table, int64_t key, uint32_t col);
int change_coll(cs_txn *t, const cs_coll *c, cs_change_kind kind, int64_t a, int64_t b);
int change_schema(cs_txn *t);
int history_append(cs_txn *t, uint64_t newver, uint64_t oldest);

/* ---- lock file (lock.c) ------------------------------------------------------------------ */

int lock_open(cs_dbfile *f, bool readonly, uint64_t version, uint64_t top, uint64_t logical, int sel);
bool lock_close(cs_dbfile *f);
void lock_read_latest(cs_dbfile *f);
uint64_t lock_latest_version(cs_dbfile *f);
void lock_publish(cs_dbfile *f);
void lock_committing(cs_dbfile *f);
uint32_t lock_commit_counter(cs_dbfile *f);
void lock_publish_pins(cs_dbfile *f, const pinrange *r, bool fence);
/** Marks this process's published range idle: no transaction uses it, a writer may revoke it. */
void lock_pins_idle(cs_dbfile *f);
/** Takes an idle range back: false when a writer revoked it (publish it again before use). */
bool lock_pins_reclaim(cs_dbfile *f);
int lock_collect_pins(cs_dbfile *f, pinrange **out, size_t *n);
uint64_t lock_oldest_pin(cs_dbfile *f, uint64_t latest);
int lock_reader_info(cs_dbfile *f, uint32_t *processes, uint64_t *oldest);
int lock_writer_acquire(cs_dbfile *f);
void lock_writer_release(cs_dbfile *f);
int file_map_for(cs_dbfile *f, uint64_t size);
int free_list_load(cs_txn *t);

#endif
