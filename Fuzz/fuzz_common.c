/*
 * fuzz_common.c -- the "read everything" walk shared by the fuzz targets and the seed
 * generator, the header wrapper for body-only inputs, and file utilities (see fuzz_common.h).
 *
 * Invariants of the walk:
 *  1. It only reads: the database is opened with CS_OPEN_READONLY and one read transaction.
 *  2. It is bounded: every loop is capped (FUZZ_MAX_*) and every API call spends from a
 *     per-file budget (FUZZ_BUDGET), so a count read from a damaged file cannot make it hang.
 *  3. It touches every byte the API hands out (string and binary values, names), so a pointer
 *     into unmapped or freed memory shows up under AddressSanitizer.
 *  4. It aborts only on a broken API contract, never on an error code.
 */
#include "fuzz_common.h"

#include "cstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the walk --------------------------------------------------------------------------- */

typedef struct walk {
    fuzz_stats *st; /* what we saw */
    cs_txn *txn;    /* the one read transaction */
} walk;

static volatile uint8_t sink; /* keeps the byte touching from being optimised away */

static void contract(bool ok, const char *what)
{
    if (ok) return;
    fprintf(stderr, "fuzz: API contract broken: %s\n", what);
    abort();
}

/* Spends one API call from the budget; false when the budget is gone. */
static bool spend(walk *w)
{
    if (w->st->calls >= FUZZ_BUDGET) return false;
    w->st->calls++;
    return true;
}

static int note(walk *w, int rc)
{
    if (rc != CS_OK && rc != CS_NOTFOUND && w->st->first_error == 0) w->st->first_error = rc;
    return rc;
}

static void touch_bytes(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint8_t x = 0;
    for (size_t i = 0; i < n; i++) x ^= b[i];
    sink ^= x;
}

static void touch_cstr(const char *s)
{
    if (s) touch_bytes(s, strlen(s));
}

static void touch_value(walk *w, const cs_value *v)
{
    w->st->values++;
    contract((unsigned)v->type <= (unsigned)CS_TYPE_DICT, "a value with an unknown type");
    contract(v->type != CS_TYPE_BACKLINK && v->type != CS_TYPE_MIXED, "a value typed as a column-only type");
    if (v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY) {
        contract(v->v.bytes.len <= CS_MAX_BLOB, "a string or binary longer than CS_MAX_BLOB");
        contract(v->v.bytes.ptr != NULL || v->v.bytes.len == 0, "a NULL pointer with a length");
        if (v->v.bytes.len) touch_bytes(v->v.bytes.ptr, v->v.bytes.len);
    }
    if (v->type == CS_TYPE_LINK && spend(w)) {
        cs_obj target;
        if (note(w, cs_obj_open(w->txn, v->v.link.table, v->v.link.key, &target)) == CS_OK && spend(w))
            (void)cs_obj_exists(&target);
    }
}

static bool nested(const cs_value *v) { return v->type == CS_TYPE_LIST || v->type == CS_TYPE_DICT; }

static void walk_coll(walk *w, cs_coll *c, int depth)
{
    size_t n;
    if (!spend(w) || note(w, cs_coll_size(c, &n)) != CS_OK) return;
    cs_coll_kind kind = cs_coll_kind_of(c);
    contract(kind == CS_COLL_LIST || kind == CS_COLL_SET || kind == CS_COLL_MAP, "an open collection of no kind");
    size_t lim = n < FUZZ_MAX_ELEMS ? n : FUZZ_MAX_ELEMS;
    for (size_t i = 0; i < lim; i++) {
        cs_value key, v;
        cs_coll sub;
        if (kind == CS_COLL_MAP) {
            if (!spend(w) || note(w, cs_map_get_at(c, i, &key, &v)) != CS_OK) continue;
            touch_value(w, &key);
            touch_value(w, &v);
            if (key.type != CS_TYPE_STRING) continue;
            const char *k = key.v.bytes.ptr;
            size_t klen = key.v.bytes.len;
            cs_value again;
            if (spend(w) && note(w, cs_map_get(c, k ? k : "", klen, &again)) == CS_OK) touch_value(w, &again);
            if (nested(&v) && depth < FUZZ_MAX_DEPTH && spend(w) &&
                note(w, cs_coll_open_nested(c, -1, k ? k : "", klen, &sub)) == CS_OK)
                walk_coll(w, &sub, depth + 1);
        } else {
            if (!spend(w) || note(w, cs_list_get(c, i, &v)) != CS_OK) continue;
            touch_value(w, &v);
            size_t at;
            if (kind == CS_COLL_SET && spend(w)) note(w, cs_set_find(c, &v, &at));
            if (nested(&v) && depth < FUZZ_MAX_DEPTH && spend(w) &&
                note(w, cs_coll_open_nested(c, (int64_t)i, NULL, 0, &sub)) == CS_OK)
                walk_coll(w, &sub, depth + 1);
        }
    }
}

static void walk_column(walk *w, cs_obj *o, uint32_t col, const cs_column_info *ci)
{
    cs_coll c;
    if (ci->type == CS_TYPE_BACKLINK) {
        size_t n;
        if (!spend(w) || note(w, cs_obj_backlink_count(o, ci->target, ci->origin_col, &n)) != CS_OK) return;
        size_t lim = n < FUZZ_MAX_ELEMS ? n : FUZZ_MAX_ELEMS;
        for (size_t i = 0; i < lim; i++) {
            int64_t key;
            if (!spend(w) || note(w, cs_obj_backlink_get(o, ci->target, ci->origin_col, i, &key)) != CS_OK) break;
            w->st->values++;
        }
        return;
    }
    if (ci->coll != CS_COLL_NONE) {
        if (spend(w) && note(w, cs_coll_open(o, col, &c)) == CS_OK) walk_coll(w, &c, 0);
        return;
    }
    cs_value v;
    if (!spend(w) || note(w, cs_obj_get(o, col, &v)) != CS_OK) return;
    touch_value(w, &v);
    bool is_null;
    if (spend(w)) note(w, cs_obj_is_null(o, col, &is_null));
    if (ci->type == CS_TYPE_INT && spend(w)) {
        int64_t i;
        note(w, cs_obj_get_int(o, col, &i));
    }
    if (ci->type == CS_TYPE_MIXED && nested(&v) && spend(w) && note(w, cs_coll_open(o, col, &c)) == CS_OK)
        walk_coll(w, &c, 1);
}

static void walk_table(walk *w, uint32_t table)
{
    cs_table_info ti;
    if (!spend(w) || note(w, cs_table_info_get(w->txn, table, &ti)) != CS_OK) return;
    w->st->tables++;
    touch_cstr(ti.name);
    uint32_t found;
    if (ti.name && spend(w)) note(w, cs_table_find(w->txn, ti.name, &found));
    uint64_t count;
    if (spend(w)) note(w, cs_table_count(w->txn, table, &count));

    uint32_t ncols = ti.col_slots < FUZZ_MAX_COLS ? ti.col_slots : FUZZ_MAX_COLS;
    cs_column_info cols[FUZZ_MAX_COLS];
    bool live[FUZZ_MAX_COLS];
    for (uint32_t c = 0; c < ncols; c++) {
        live[c] = spend(w) && note(w, cs_column_info_get(w->txn, table, c, &cols[c])) == CS_OK;
        if (!live[c]) continue;
        touch_cstr(cols[c].name);
        if (cols[c].name && spend(w)) note(w, cs_column_find(w->txn, table, cols[c].name, &found));
    }

    cs_iter it;
    if (!spend(w) || note(w, cs_iter_init(&it, w->txn, table)) != CS_OK) return;
    for (int k = 0; k < FUZZ_MAX_OBJS; k++) {
        cs_obj o, again;
        if (!spend(w)) return;
        int rc = note(w, cs_iter_next(&it, &o));
        if (rc != CS_OK) return; /* the end, or damage */
        w->st->objects++;
        if (spend(w)) (void)cs_obj_exists(&o);
        bool exists;
        if (spend(w)) note(w, cs_obj_check_exists(&o, &exists));
        if (spend(w)) note(w, cs_obj_open(w->txn, table, o.key, &again));
        for (uint32_t c = 0; c < ncols; c++)
            if (live[c]) walk_column(w, &o, c, &cols[c]);
    }
}

fuzz_stats fuzz_read_all(const char *path)
{
    fuzz_stats st;
    memset(&st, 0, sizeof st);
    st.verify_rc = cs_file_verify(path);
    touch_cstr(cs_errmsg());

    cs_options opts;
    memset(&opts, 0, sizeof opts);
    opts.flags = CS_OPEN_READONLY;
    cs_db *db = NULL;
    st.open_rc = cs_db_open(path, &opts, &db);
    touch_cstr(cs_errmsg());
    if (st.open_rc != CS_OK) return st;

    walk w = {&st, NULL};
    (void)cs_db_version(db);
    cs_db_stats dbs;
    note(&w, cs_db_stats_get(db, &dbs));
    if (note(&w, cs_txn_begin(db, CS_TXN_READ, &w.txn)) == CS_OK) {
        (void)cs_schema_version(w.txn);
        uint32_t slots = cs_table_slots(w.txn);
        uint32_t lim = slots < FUZZ_MAX_TABLES ? slots : FUZZ_MAX_TABLES;
        for (uint32_t t = 0; t < lim; t++) walk_table(&w, t);
        contract(cs_txn_end(w.txn) == CS_OK, "cs_txn_end of a read transaction failed");
    }
    contract(cs_db_close(db) == CS_OK, "cs_db_close failed");

    /* Optional: a file that verifies clean must also read clean. */
    const char *strict = getenv("CSTORE_FUZZ_STRICT");
    if (strict && strict[0] == '1' && st.verify_rc == CS_OK && st.first_error == CS_CORRUPT)
        contract(false, "cs_file_verify passed but reading found CS_CORRUPT");
    return st;
}

/* ---- wrapping a body-only input --------------------------------------------------------- */

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Header layout of docs/FORMAT.md section 2: the selector at byte 12, two 64-byte slots at 16
 * and 80, each [top, version, logical size, flags, run position, run length, run hash, check]. */
enum { HDR_BYTES = 4096, SLOT_OFF = 16, SLOT_SIZE = 64, SLOT_FIELDS = 7 };

/* The slot check (an FNV-style hash of the seven fields and the slot number, low bit forced to
 * 1); mirrors slot_check() in Sources/CStore/file.c. */
static uint64_t slot_check(const uint64_t w[SLOT_FIELDS], int which)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)which;
    for (int i = 0; i < SLOT_FIELDS; i++) {
        h ^= w[i];
        h *= 0x100000001b3ull;
        h ^= h >> 31;
    }
    return h | 1;
}

int fuzz_header_slot(const uint8_t *file, size_t n, uint64_t *top, uint64_t *version)
{
    if (n < HDR_BYTES) return -1;
    const uint8_t *slot = file + SLOT_OFF + SLOT_SIZE * (file[12] & 1);
    *top = get64(slot);
    *version = get64(slot + 8);
    return 0;
}

uint8_t *fuzz_wrap_body(const uint8_t *in, size_t n, size_t *out_len)
{
    enum { PREFIX = 16 };
    if (n < PREFIX) return NULL;
    size_t body = n - PREFIX;
    uint8_t *f = calloc(1, HDR_BYTES + body);
    if (!f) return NULL;
    /* a two-sync slot (flags 0): no run to check, so only the slot check must match */
    uint64_t w[SLOT_FIELDS] = {get64(in), get64(in + 8), HDR_BYTES + body, 0, 0, 0, 0};
    uint16_t fmt = (uint16_t)cs_format_version();
    memcpy(f, "CSTORE\r\n", 8);
    f[8] = (uint8_t)fmt, f[9] = (uint8_t)(fmt >> 8);   /* read format */
    f[10] = (uint8_t)fmt, f[11] = (uint8_t)(fmt >> 8); /* write format */
    f[12] = 0;                                          /* selector: slot 0 */
    for (int i = 0; i < SLOT_FIELDS; i++) put64(f + SLOT_OFF + 8 * i, w[i]);
    put64(f + SLOT_OFF + 8 * SLOT_FIELDS, slot_check(w, 0));
    memcpy(f + HDR_BYTES, in + PREFIX, body);
    *out_len = HDR_BYTES + body;
    return f;
}

/* ---- files ------------------------------------------------------------------------------ */

int fuzz_write_file(const char *path, const uint8_t *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    while (n) {
        ssize_t k = write(fd, data, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        data += k;
        n -= (size_t)k;
    }
    return close(fd);
}

uint8_t *fuzz_read_file(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) { free(buf); fclose(fp); return NULL; }
            buf = nb;
        }
        size_t k = fread(buf + len, 1, cap - len, fp);
        len += k;
        if (k == 0) break;
    }
    fclose(fp);
    *n = len;
    return buf;
}

static char temp_dir[4096];
static char temp_db[4096 + 32];
static char temp_lock[4096 + 40];
static char temp_journal[4096 + 40];
static char temp_base[4096 + 40];

static void remove_temp(void)
{
    unlink(temp_db);
    unlink(temp_lock);
    unlink(temp_journal);
    unlink(temp_base);
    char p[4096 + 48];
    snprintf(p, sizeof p, "%s.lock", temp_base);
    unlink(p);
    snprintf(p, sizeof p, "%s.journal", temp_base);
    unlink(p);
    rmdir(temp_dir);
}

const char *fuzz_temp_db_path(void)
{
    if (temp_db[0]) return temp_db;
    const char *base = getenv("TMPDIR");
    if (!base || !base[0]) base = "/tmp";
    snprintf(temp_dir, sizeof temp_dir, "%s/cstore-fuzz-XXXXXX", base);
    if (!mkdtemp(temp_dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    snprintf(temp_db, sizeof temp_db, "%s/input.cstore", temp_dir);
    snprintf(temp_lock, sizeof temp_lock, "%s.lock", temp_db);
    snprintf(temp_journal, sizeof temp_journal, "%s.journal", temp_db);
    snprintf(temp_base, sizeof temp_base, "%s/base.cstore", temp_dir);
    atexit(remove_temp);
    return temp_db;
}

/* ---- journals (open_journal) ------------------------------------------------------------ */

#define JOURNAL_BASE_ROWS 3000

static int jb_ok(int rc, const char *what)
{
    if (rc != CS_OK) fprintf(stderr, "fuzz: the journal base: %s: %s: %s\n", what, cs_errstr(rc), cs_errmsg());
    return rc == CS_OK ? 0 : -1;
}

/* Creates the base database at `path` (docs in fuzz_common.h). */
static int make_journal_base(const char *path)
{
    unlink(path);
    cs_options o;
    memset(&o, 0, sizeof o);
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_NOSYNC;
    cs_db *db;
    if (jb_ok(cs_db_open(path, &o, &db), "create")) return -1;
    cs_txn *t = NULL;
    uint32_t tb = 0, c[3] = {0, 0, 0};
    int rc = cs_txn_begin(db, CS_TXN_WRITE, &t);
    if (rc == CS_OK) rc = cs_table_add(t, "T", 0, &tb);
    if (rc == CS_OK) rc = cs_column_add(t, tb, "v", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &c[0]);
    if (rc == CS_OK) rc = cs_column_add(t, tb, "w", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE, &c[1]);
    if (rc == CS_OK) rc = cs_column_add(t, tb, "b", CS_TYPE_BINARY, CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE, &c[2]);
    for (int i = 0; i < JOURNAL_BASE_ROWS && rc == CS_OK; i++) {
        cs_obj ob;
        rc = cs_obj_create(t, tb, &ob);
        if (rc == CS_OK) rc = cs_obj_set_int(&ob, c[0], i);
        if (rc == CS_OK) rc = cs_obj_set_int(&ob, c[1], i * 7);
    }
    if (rc == CS_OK) rc = cs_txn_commit(t);
    if (t) cs_txn_end(t);
    /* scattered updates: free extents across the file, several free-list chunks */
    uint64_t x = 0x243f6a8885a308d3ull;
    for (int u = 0; u < 120 && rc == CS_OK; u++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        t = NULL;
        rc = cs_txn_begin(db, CS_TXN_WRITE, &t);
        cs_obj ob;
        if (rc == CS_OK) rc = cs_obj_open(t, tb, (int64_t)((x >> 33) % JOURNAL_BASE_ROWS), &ob);
        if (rc == CS_OK) rc = cs_obj_set_int(&ob, c[1], -1);
        if (rc == CS_OK) rc = cs_txn_commit(t);
        if (t) cs_txn_end(t);
    }
    if (jb_ok(rc, "fill")) {
        cs_db_close(db);
        return -1;
    }
    return jb_ok(cs_db_close(db), "close");
}

const uint8_t *fuzz_journal_base(size_t *n)
{
    static uint8_t *base;
    static size_t basen;
    if (!base) {
        (void)fuzz_temp_db_path();
        if (make_journal_base(temp_base) != 0 || !(base = fuzz_read_file(temp_base, &basen))) {
            fprintf(stderr, "fuzz: cannot make the journal base\n");
            abort();
        }
        unlink(temp_base);
        char p[4096 + 48];
        snprintf(p, sizeof p, "%s.lock", temp_base);
        unlink(p);
    }
    *n = basen;
    return base;
}

/* The journal's checks (docs/FORMAT.md §13, Layout; header_check and record_check in
 * journal.c), for fuzz_journal_seal. */
static uint64_t jmix(uint64_t h, uint64_t w)
{
    h ^= w;
    h *= 0x100000001b3ull;
    return h ^ (h >> 31);
}

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t jrecord_check(const uint8_t *rec, uint64_t len, uint64_t gen, uint64_t id)
{
    const uint64_t p1 = 0x9e3779b185ebca87ull, p2 = 0xc2b2ae3d27d4eb4full;
    uint64_t a = gen ^ p1, b = id ^ p2, i = 0;
    for (; i + 16 <= len; i += 16) {
        uint64_t w0 = i == 56 ? 0 : get64(rec + i), w1 = i + 8 == 56 ? 0 : get64(rec + i + 8);
        a = rotl64(a + w0 * p2, 31) * p1;
        b = rotl64(b + w1 * p2, 31) * p1;
    }
    if (i + 8 <= len) a = rotl64(a + (i == 56 ? 0 : get64(rec + i)) * p2, 31) * p1;
    uint64_t h = rotl64(a, 7) + rotl64(b, 18) + len;
    h ^= h >> 33;
    h *= p2;
    h ^= h >> 29;
    h *= 0x165667b19e3779f9ull;
    h ^= h >> 32;
    return h | 1;
}

void fuzz_journal_seal(uint8_t *j, size_t n)
{
    if (n < 64 || memcmp(j, "CSJRNL\r\n", 8) != 0) return;
    uint64_t layout = (uint64_t)j[8] | (uint64_t)j[9] << 8 | (uint64_t)j[10] << 16 | (uint64_t)j[11] << 24;
    uint64_t gen = get64(j + 16), id = get64(j + 24), base = get64(j + 32);
    uint64_t x = 0xcbf29ce484222325ull;
    const uint64_t w[5] = {layout, gen, id, base, 0x4a524e4cull};
    for (int k = 0; k < 5; k++) x = jmix(x, w[k]);
    put64(j + 56, x | 1);
    for (size_t off = 4096; off + 64 <= n && memcmp(j + off, "CSJREC\r\n", 8) == 0;) {
        uint64_t len = get64(j + off + 24);
        if (len < 64 || (len & 7) || len > n - off) break;
        put64(j + off + 56, jrecord_check(j + off, len, gen, id));
        off += (size_t)len;
    }
}

int fuzz_journal_files(const char *path, const uint8_t *journal, size_t jn)
{
    size_t n;
    const uint8_t *base = fuzz_journal_base(&n);
    uint8_t *db = malloc(n);
    if (!db) return -1;
    memcpy(db, base, n);
    /* the journal id (docs/FORMAT.md §2, bytes 144-159) of the journal's header (bytes 24-31,
     * §13), with its check (file_id_check in file.c), so that the records are not refused as
     * another database's before they are read */
    uint64_t id = jn >= 32 ? get64(journal + 24) : 0;
    if (id && n >= 160) {
        uint64_t h = (id ^ 0x6a6f75726e616c21ull) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
        put64(db + 144, id);
        put64(db + 152, h | 1);
    }
    char jp[8192], lp[8192];
    snprintf(jp, sizeof jp, "%s.journal", path);
    snprintf(lp, sizeof lp, "%s.lock", path);
    unlink(lp);
    int rc = fuzz_write_file(path, db, n);
    free(db);
    if (rc == 0) rc = fuzz_write_file(jp, journal, jn);
    return rc;
}

fuzz_stats fuzz_replay_all(const char *path)
{
    cs_options o;
    memset(&o, 0, sizeof o);
    o.durability = CS_DURABILITY_FULL;
    cs_db *db = NULL;
    int rc = cs_db_open(path, &o, &db);
    touch_cstr(cs_errmsg());
    if (rc == CS_OK) {
        (void)cs_db_recovered_commits(db);
        (void)cs_db_verify(db);
        touch_cstr(cs_errmsg());
        contract(cs_db_close(db) == CS_OK, "cs_db_close after a replay failed");
    }
    fuzz_stats st = fuzz_read_all(path);
    if (rc != CS_OK) st.open_rc = rc;
    return st;
}
