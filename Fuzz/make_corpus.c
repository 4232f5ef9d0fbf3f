/*
 * make_corpus.c -- writes the seed corpus for the fuzz targets: small real databases made
 * through the public API, and small tools around the corpus.
 *
 *   make_corpus seeds <full-dir> <body-dir>   write every seed twice: the whole file (for
 *                                             open_verify) and its body-only form (open_body)
 *   make_corpus wrap <in> <out>               turn a body-only input into a whole file
 *   make_corpus check <file>...               run the fuzz walk over copies of files and print
 *                                             what it saw (replays a crash without libFuzzer)
 *   make_corpus journals <dir>                write journals made by journaled commits into
 *                                             the journal target's base database (open_journal)
 *   make_corpus check-journal <file>...       replay journals onto that base and print what the
 *                                             walk saw (replays an open_journal crash)
 *   make_corpus journal-base <file>           write that base database (the journal corpus's
 *                                             base.cstore, Tests/Fixtures/fuzz-journal-corpus)
 *   make_corpus seal-journal <in> <out>       write an open_journal input as the target puts it
 *                                             on disk (an even-length one with its checks set)
 *
 * Seeds cover every column type, nullable and not, List / Set / Map of every element type,
 * single links, lists, sets and maps of links (so backlink columns exist), embedded objects,
 * Mixed values holding every type and nested lists and dictionaries, trees deep enough to have
 * inner nodes, schema changes, and several commits per file with updates and deletes (so the
 * free lists are not empty). Each file is cut to its logical size (the bytes after it mean
 * nothing) to keep seeds small, and must verify CS_OK and read without an error.
 */
#include "fuzz_common.h"

#include "cstore.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what, int rc)
{
    fprintf(stderr, "make_corpus: %s: %s: %s\n", what, cs_errstr(rc), cs_errmsg());
    exit(1);
}

#define OK(call) do { int rc_ = (call); if (rc_ != CS_OK) die(#call, rc_); } while (0)

/* ---- deterministic values --------------------------------------------------------------- */

static const cs_type scalar_types[] = {
    CS_TYPE_INT, CS_TYPE_BOOL, CS_TYPE_FLOAT, CS_TYPE_DOUBLE, CS_TYPE_STRING, CS_TYPE_BINARY,
    CS_TYPE_TIMESTAMP, CS_TYPE_OBJECTID, CS_TYPE_UUID, CS_TYPE_DECIMAL,
};
#define NSCALAR (sizeof scalar_types / sizeof scalar_types[0])

static const char *type_name(cs_type t)
{
    switch (t) {
    case CS_TYPE_INT: return "int";
    case CS_TYPE_BOOL: return "bool";
    case CS_TYPE_FLOAT: return "float";
    case CS_TYPE_DOUBLE: return "double";
    case CS_TYPE_STRING: return "string";
    case CS_TYPE_BINARY: return "binary";
    case CS_TYPE_TIMESTAMP: return "timestamp";
    case CS_TYPE_OBJECTID: return "objectid";
    case CS_TYPE_UUID: return "uuid";
    case CS_TYPE_DECIMAL: return "decimal";
    case CS_TYPE_MIXED: return "mixed";
    default: return "other";
    }
}

/* Value number `i` of type `t`; string and binary bytes go to `buf` (at least 64 bytes). */
static cs_value value_of(cs_type t, int i, char *buf)
{
    cs_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    switch (t) {
    case CS_TYPE_INT: v.v.i = (i % 7 == 3) ? -(int64_t)i * 1000003 : (int64_t)i * ((i % 5) ? 1 : 1234567891011); break;
    case CS_TYPE_BOOL: v.v.b = (i & 1) != 0; break;
    case CS_TYPE_FLOAT: v.v.f = (float)i * 0.5f - 3.0f; break;
    case CS_TYPE_DOUBLE: v.v.d = (double)i * 1.25e10 - 7.5; break;
    case CS_TYPE_STRING: {
        int n = snprintf(buf, 64, "s%d-%.*s", i, i % 23, "abcdefghijklmnopqrstuvwxyz");
        v.v.bytes.ptr = buf;
        v.v.bytes.len = (size_t)n;
        break;
    }
    case CS_TYPE_BINARY: {
        size_t n = (size_t)(i % 19);
        for (size_t k = 0; k < n; k++) buf[k] = (char)(i * 31 + (int)k * 7);
        v.v.bytes.ptr = buf;
        v.v.bytes.len = n;
        break;
    }
    case CS_TYPE_TIMESTAMP:
        v.v.ts.sec = (i % 3 == 0) ? -(int64_t)i * 86400 : 1700000000 + i;
        v.v.ts.nsec = (i % 3 == 0) ? -(int32_t)(i * 1000) : (int32_t)(i * 1000);
        break;
    case CS_TYPE_OBJECTID: for (int k = 0; k < 12; k++) v.v.oid[k] = (uint8_t)(i + k * 3); break;
    case CS_TYPE_UUID: for (int k = 0; k < 16; k++) v.v.uuid[k] = (uint8_t)(i * 5 + k); break;
    case CS_TYPE_DECIMAL:
        v.v.dec.w[0] = (uint64_t)i * 100;
        v.v.dec.w[1] = 0x3040000000000000ull; /* exponent 0 */
        break;
    default: v.type = CS_TYPE_NULL; break;
    }
    return v;
}

/* ---- building blocks ------------------------------------------------------------------ */

static cs_db *open_new(const char *path)
{
    unlink(path);
    cs_options o;
    memset(&o, 0, sizeof o);
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_NOSYNC;
    cs_db *db;
    OK(cs_db_open(path, &o, &db));
    return db;
}

static cs_txn *begin_write(cs_db *db)
{
    cs_txn *t;
    OK(cs_txn_begin(db, CS_TXN_WRITE, &t));
    return t;
}

static void commit(cs_txn *t)
{
    OK(cs_txn_commit(t));
    OK(cs_txn_end(t));
}

static uint32_t add_table(cs_txn *t, const char *name, uint32_t flags)
{
    uint32_t k;
    OK(cs_table_add(t, name, flags, &k));
    return k;
}

static uint32_t add_col(cs_txn *t, uint32_t table, const char *name, cs_type type, cs_coll_kind coll,
                        uint32_t flags, uint32_t target)
{
    uint32_t c;
    OK(cs_column_add(t, table, name, type, coll, flags, target, &c));
    return c;
}

/* ---- the seeds -------------------------------------------------------------------------- */

static void seed_empty(cs_db *db)
{
    cs_txn *t = begin_write(db);
    OK(cs_schema_version_set(t, 3));
    commit(t);
}

/* Every scalar type as a column, nullable and not, plus Mixed holding every type. */
static void seed_scalars(cs_db *db)
{
    char buf[64], name[32];
    cs_txn *t = begin_write(db);
    uint32_t tb = add_table(t, "All", 0);
    uint32_t cols[NSCALAR][2];
    for (size_t k = 0; k < NSCALAR; k++) {
        cols[k][0] = add_col(t, tb, type_name(scalar_types[k]), scalar_types[k], CS_COLL_NONE, 0, CS_NONE);
        snprintf(name, sizeof name, "opt_%s", type_name(scalar_types[k]));
        cols[k][1] = add_col(t, tb, name, scalar_types[k], CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE);
    }
    uint32_t mixed = add_col(t, tb, "mixed", CS_TYPE_MIXED, CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE);
    for (int i = 0; i < 40; i++) {
        cs_obj o;
        OK(cs_obj_create(t, tb, &o));
        for (size_t k = 0; k < NSCALAR; k++) {
            cs_value v = value_of(scalar_types[k], i, buf);
            OK(cs_obj_set(&o, cols[k][0], &v));
            cs_value n = (i % 4 == 0) ? cs_null() : v;
            OK(cs_obj_set(&o, cols[k][1], &n));
        }
        cs_value m = (i % (int)(NSCALAR + 2) < (int)NSCALAR)
                         ? value_of(scalar_types[i % (int)(NSCALAR + 2)], i, buf)
                         : (i % 2 ? cs_link(tb, 0) : cs_null());
        OK(cs_obj_set(&o, mixed, &m));
    }
    commit(t);

    /* a big string (stored as its own node) and some updates */
    t = begin_write(db);
    static char big[5000];
    memset(big, 'x', sizeof big);
    cs_obj o;
    OK(cs_obj_open(t, tb, 5, &o));
    cs_value b = cs_string(big, sizeof big);
    OK(cs_obj_set(&o, cols[4][0], &b));
    for (int key = 0; key < 40; key += 3) {
        OK(cs_obj_open(t, tb, key, &o));
        OK(cs_obj_set_int(&o, cols[0][0], key * 11));
        cs_value n = cs_null();
        OK(cs_obj_set(&o, cols[3][1], &n));
    }
    commit(t);

    /* deletes */
    t = begin_write(db);
    for (int key = 1; key < 40; key += 7) {
        OK(cs_obj_open(t, tb, key, &o));
        OK(cs_obj_delete(&o));
    }
    commit(t);
}

/* List, Set and Map of every scalar type and of Mixed. */
static void seed_collections(cs_db *db)
{
    char buf[64], name[32];
    static const cs_coll_kind kinds[] = {CS_COLL_LIST, CS_COLL_SET, CS_COLL_MAP};
    static const char *kind_names[] = {"list", "set", "map"};
    cs_txn *t = begin_write(db);
    uint32_t tb = add_table(t, "Coll", 0);
    uint32_t cols[NSCALAR + 1][3];
    for (size_t k = 0; k <= NSCALAR; k++) {
        cs_type ty = k < NSCALAR ? scalar_types[k] : CS_TYPE_MIXED;
        for (int j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "%s_%s", kind_names[j], type_name(ty));
            uint32_t flags = (k % 2 || ty == CS_TYPE_MIXED) ? CS_COL_NULLABLE : 0;
            cols[k][j] = add_col(t, tb, name, ty, kinds[j], flags, CS_NONE);
        }
    }
    for (int i = 0; i < 8; i++) {
        cs_obj o;
        OK(cs_obj_create(t, tb, &o));
        for (size_t k = 0; k <= NSCALAR; k++) {
            cs_type ty = k < NSCALAR ? scalar_types[k] : CS_TYPE_MIXED;
            for (int j = 0; j < 3; j++) {
                cs_coll c;
                OK(cs_coll_open(&o, cols[k][j], &c));
                int n = (i * 3 + (int)k) % 12;
                for (int e = 0; e < n; e++) {
                    cs_type et = ty == CS_TYPE_MIXED ? scalar_types[(e + i) % NSCALAR] : ty;
                    cs_value v = value_of(et, e * 3 + i, buf);
                    if ((k % 2) && e == 2) v = cs_null();
                    if (kinds[j] == CS_COLL_LIST) {
                        OK(cs_list_append(&c, &v));
                    } else if (kinds[j] == CS_COLL_SET) {
                        bool ins;
                        OK(cs_set_insert(&c, &v, &ins));
                    } else {
                        char key[16];
                        int kl = snprintf(key, sizeof key, "k%02d", (e * 7) % 13);
                        OK(cs_map_set(&c, key, (size_t)kl, &v));
                    }
                }
            }
        }
    }
    commit(t);

    /* edits: erase, move, clear */
    t = begin_write(db);
    for (int key = 0; key < 8; key += 2) {
        cs_obj o;
        OK(cs_obj_open(t, tb, key, &o));
        cs_coll c;
        OK(cs_coll_open(&o, cols[0][0], &c));
        size_t n;
        OK(cs_coll_size(&c, &n));
        if (n > 2) {
            OK(cs_list_move(&c, 0, n - 1));
            OK(cs_list_erase(&c, 1));
        }
        OK(cs_coll_open(&o, cols[4][2], &c));
        bool erased;
        OK(cs_map_erase(&c, "k07", 3, &erased));
        OK(cs_coll_open(&o, cols[2][1], &c));
        if (key == 4) OK(cs_coll_clear(&c));
    }
    commit(t);
}

/* Links of every shape between two tables, embedded objects, and the backlinks they make. */
static void seed_links(cs_db *db)
{
    cs_txn *t = begin_write(db);
    uint32_t person = add_table(t, "Person", 0);
    uint32_t dog = add_table(t, "Dog", 0);
    uint32_t emb = add_table(t, "Address", CS_TABLE_EMBEDDED);
    uint32_t dname = add_col(t, dog, "name", CS_TYPE_STRING, CS_COLL_NONE, 0, CS_NONE);
    uint32_t street = add_col(t, emb, "street", CS_TYPE_STRING, CS_COLL_NONE, 0, CS_NONE);
    uint32_t pname = add_col(t, person, "name", CS_TYPE_STRING, CS_COLL_NONE, 0, CS_NONE);
    uint32_t best = add_col(t, person, "best", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, dog);
    uint32_t dogs = add_col(t, person, "dogs", CS_TYPE_LINK, CS_COLL_LIST, 0, dog);
    uint32_t dogset = add_col(t, person, "dogset", CS_TYPE_LINK, CS_COLL_SET, 0, dog);
    uint32_t dogmap = add_col(t, person, "dogmap", CS_TYPE_LINK, CS_COLL_MAP, 0, dog);
    uint32_t home = add_col(t, person, "home", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, emb);
    uint32_t past = add_col(t, person, "past", CS_TYPE_LINK, CS_COLL_LIST, 0, emb);
    uint32_t friend = add_col(t, person, "friend", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, person);
    char buf[64];
    for (int i = 0; i < 12; i++) {
        cs_obj d;
        OK(cs_obj_create(t, dog, &d));
        cs_value v = value_of(CS_TYPE_STRING, i, buf);
        OK(cs_obj_set(&d, dname, &v));
    }
    for (int i = 0; i < 10; i++) {
        cs_obj p, a;
        OK(cs_obj_create(t, person, &p));
        cs_value v = value_of(CS_TYPE_STRING, 100 + i, buf);
        OK(cs_obj_set(&p, pname, &v));
        cs_value l = (i % 3 == 2) ? cs_null() : cs_link(dog, i % 12);
        OK(cs_obj_set(&p, best, &l));
        cs_value f = cs_link(person, i / 2);
        OK(cs_obj_set(&p, friend, &f));
        cs_coll c;
        OK(cs_coll_open(&p, dogs, &c));
        for (int e = 0; e < i % 5; e++) {
            cs_value x = cs_link(dog, (i + e * 2) % 12);
            OK(cs_list_append(&c, &x));
        }
        cs_value twice = cs_link(dog, 1);
        OK(cs_list_append(&c, &twice));
        OK(cs_coll_open(&p, dogset, &c));
        for (int e = 0; e < 3; e++) {
            cs_value x = cs_link(dog, (i * 3 + e) % 12);
            bool ins;
            OK(cs_set_insert(&c, &x, &ins));
        }
        OK(cs_coll_open(&p, dogmap, &c));
        for (int e = 0; e < 2; e++) {
            char key[8];
            int kl = snprintf(key, sizeof key, "d%d", e);
            cs_value x = (e == 1 && i % 2) ? cs_null() : cs_link(dog, (i + 5 * e) % 12);
            OK(cs_map_set(&c, key, (size_t)kl, &x));
        }
        if (i % 2 == 0) {
            OK(cs_obj_create_embedded(&p, home, &a));
            cs_value s = value_of(CS_TYPE_STRING, 200 + i, buf);
            OK(cs_obj_set(&a, street, &s));
        }
        OK(cs_coll_open(&p, past, &c));
        for (int e = 0; e < i % 3; e++) {
            OK(cs_list_insert_embedded(&c, (size_t)e, &a));
            cs_value s = value_of(CS_TYPE_STRING, 300 + i * 3 + e, buf);
            OK(cs_obj_set(&a, street, &s));
        }
    }
    commit(t);

    /* deleting targets removes or nulls the links to them; replacing an embedded object */
    t = begin_write(db);
    cs_obj o, a;
    OK(cs_obj_open(t, dog, 3, &o));
    OK(cs_obj_delete(&o));
    OK(cs_obj_open(t, dog, 7, &o));
    OK(cs_obj_delete(&o));
    OK(cs_obj_open(t, person, 4, &o));
    OK(cs_obj_create_embedded(&o, home, &a));
    OK(cs_obj_open(t, person, 9, &o));
    OK(cs_obj_delete(&o));
    commit(t);
}

/* Mixed values holding nested lists and dictionaries, several levels deep. */
static void seed_mixed(cs_db *db)
{
    char buf[64];
    cs_txn *t = begin_write(db);
    uint32_t tb = add_table(t, "Doc", 0);
    uint32_t any = add_col(t, tb, "any", CS_TYPE_MIXED, CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE);
    uint32_t anylist = add_col(t, tb, "anylist", CS_TYPE_MIXED, CS_COLL_LIST, CS_COL_NULLABLE, CS_NONE);
    for (int i = 0; i < 6; i++) {
        cs_obj o;
        OK(cs_obj_create(t, tb, &o));
        OK(cs_obj_set_collection(&o, any, i % 2 ? CS_TYPE_DICT : CS_TYPE_LIST));
        cs_coll top, lvl1, lvl2;
        OK(cs_coll_open(&o, any, &top));
        if (i % 2) {
            cs_value v = value_of(CS_TYPE_STRING, i, buf);
            OK(cs_map_set(&top, "name", 4, &v));
            OK(cs_map_set_collection(&top, "tags", 4, CS_TYPE_LIST));
            OK(cs_coll_open_nested(&top, -1, "tags", 4, &lvl1));
            for (int e = 0; e < 4; e++) {
                v = value_of(scalar_types[(e + i) % NSCALAR], e, buf);
                OK(cs_list_append(&lvl1, &v));
            }
            OK(cs_list_insert(&lvl1, 0, &(cs_value){.type = CS_TYPE_NULL}));
            OK(cs_list_set_collection(&lvl1, 1, CS_TYPE_DICT));
            OK(cs_coll_open_nested(&lvl1, 1, NULL, 0, &lvl2));
            v = cs_int(i);
            OK(cs_map_set(&lvl2, "deep", 4, &v));
        } else {
            for (int e = 0; e < 5; e++) {
                cs_value v = value_of(scalar_types[(e * 3 + i) % NSCALAR], e + i, buf);
                OK(cs_list_append(&top, &v));
            }
            OK(cs_list_set_collection(&top, 2, CS_TYPE_LIST));
            OK(cs_coll_open_nested(&top, 2, NULL, 0, &lvl1));
            cs_value v = cs_double(i * 0.25);
            OK(cs_list_append(&lvl1, &v));
            cs_value l = cs_link(tb, 0);
            OK(cs_list_append(&lvl1, &l));
        }
        cs_coll al;
        OK(cs_coll_open(&o, anylist, &al));
        cs_value v = cs_bool(i & 1);
        OK(cs_list_append(&al, &v));
        OK(cs_list_append(&al, &v));
        OK(cs_list_set_collection(&al, 1, CS_TYPE_DICT));
    }
    commit(t);

    t = begin_write(db);
    cs_obj o;
    OK(cs_obj_open(t, tb, 2, &o));
    cs_value s = value_of(CS_TYPE_STRING, 99, buf);
    OK(cs_obj_set(&o, any, &s)); /* replaces the nested list */
    commit(t);
}

/* Trees with inner nodes: over 256 objects in a table, over 256 elements in collections. */
static void seed_large(cs_db *db)
{
    char buf[64];
    cs_txn *t = begin_write(db);
    uint32_t tb = add_table(t, "Big", 0);
    uint32_t n = add_col(t, tb, "n", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE);
    uint32_t s = add_col(t, tb, "s", CS_TYPE_STRING, CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE);
    uint32_t l = add_col(t, tb, "l", CS_TYPE_INT, CS_COLL_LIST, 0, CS_NONE);
    uint32_t st = add_col(t, tb, "st", CS_TYPE_STRING, CS_COLL_SET, 0, CS_NONE);
    uint32_t m = add_col(t, tb, "m", CS_TYPE_DOUBLE, CS_COLL_MAP, 0, CS_NONE);
    for (int i = 0; i < 600; i++) {
        cs_obj o;
        OK(cs_obj_create(t, tb, &o));
        OK(cs_obj_set_int(&o, n, i * 3));
        if (i % 5) {
            cs_value v = value_of(CS_TYPE_STRING, i, buf);
            OK(cs_obj_set(&o, s, &v));
        }
        if (i == 0) {
            cs_coll c;
            OK(cs_coll_open(&o, l, &c));
            for (int e = 0; e < 600; e++) {
                cs_value v = cs_int(e * 977 % 1000);
                OK(cs_list_append(&c, &v));
            }
            OK(cs_coll_open(&o, st, &c));
            for (int e = 0; e < 300; e++) {
                cs_value v = value_of(CS_TYPE_STRING, e, buf);
                bool ins;
                OK(cs_set_insert(&c, &v, &ins));
            }
            OK(cs_coll_open(&o, m, &c));
            for (int e = 0; e < 300; e++) {
                char key[16];
                int kl = snprintf(key, sizeof key, "key%04d", e * 7 % 300);
                cs_value v = cs_double(e);
                OK(cs_map_set(&c, key, (size_t)kl, &v));
            }
        }
    }
    commit(t);

    t = begin_write(db);
    for (int key = 0; key < 600; key += 3) {
        cs_obj o;
        OK(cs_obj_open(t, tb, key + 1, &o));
        OK(cs_obj_delete(&o));
    }
    commit(t);
}

/* Schema changes: removed tables and columns (free slots), renames, a primary key, columns
 * added after objects exist (absent leaf slots). */
static void seed_schema(cs_db *db)
{
    char buf[64];
    cs_txn *t = begin_write(db);
    uint32_t a = add_table(t, "A", 0);
    uint32_t b = add_table(t, "B", 0);
    uint32_t c = add_table(t, "C", 0);
    uint32_t id = add_col(t, a, "id", CS_TYPE_STRING, CS_COLL_NONE, 0, CS_NONE);
    uint32_t when = add_col(t, a, "when", CS_TYPE_TIMESTAMP, CS_COLL_NONE, 0, CS_NONE);
    uint32_t num = add_col(t, a, "num", CS_TYPE_INT, CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE);
    uint32_t gone = add_col(t, a, "gone", CS_TYPE_DOUBLE, CS_COLL_NONE, 0, CS_NONE);
    add_col(t, a, "toB", CS_TYPE_LINK, CS_COLL_NONE, CS_COL_NULLABLE, b);
    add_col(t, b, "x", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE);
    add_col(t, c, "y", CS_TYPE_INT, CS_COLL_NONE, 0, CS_NONE);
    OK(cs_table_set_primary_key(t, a, id));
    for (int i = 0; i < 5; i++) {
        cs_obj o;
        cs_value v = value_of(CS_TYPE_STRING, i, buf);
        OK(cs_obj_create_primary(t, a, &v, &o));
        cs_value ts = cs_timestamp(1000 - i, 0), nv = i == 2 ? cs_null() : cs_int(i % 3);
        OK(cs_obj_set(&o, when, &ts));
        OK(cs_obj_set(&o, num, &nv));
        OK(cs_obj_create(t, c, &o));
    }
    OK(cs_column_set_indexed(t, a, when, true)); /* ordered indexes on a column */
    OK(cs_column_set_indexed(t, a, num, true));
    OK(cs_schema_version_set(t, 7));
    commit(t);

    t = begin_write(db);
    OK(cs_column_remove(t, a, gone));
    OK(cs_table_remove(t, c));
    OK(cs_table_rename(t, b, "Bee"));
    OK(cs_column_rename(t, a, id, "ident"));
    uint32_t later = add_col(t, a, "later", CS_TYPE_TIMESTAMP, CS_COLL_NONE, CS_COL_NULLABLE, CS_NONE);
    add_col(t, a, "later_list", CS_TYPE_UUID, CS_COLL_LIST, 0, CS_NONE);
    cs_obj o;
    OK(cs_obj_open(t, a, 1, &o));
    cs_value ts = cs_timestamp(-5, -7);
    OK(cs_obj_set(&o, later, &ts));
    commit(t);

    t = begin_write(db);
    uint32_t d = add_table(t, "D", 0); /* reuses the removed table's key */
    add_col(t, d, "z", CS_TYPE_BOOL, CS_COLL_NONE, 0, CS_NONE);
    for (int i = 0; i < 3; i++) OK(cs_obj_create(t, d, &o));
    OK(cs_table_clear(t, d));
    OK(cs_obj_open(t, a, 2, &o));
    OK(cs_obj_delete(&o));
    commit(t);
}

typedef struct seed {
    const char *name;     /* file name in the corpus */
    void (*fill)(cs_db *); /* makes the commits */
} seed;

static const seed seeds[] = {
    {"empty", seed_empty},       {"scalars", seed_scalars}, {"collections", seed_collections},
    {"links", seed_links},       {"mixed", seed_mixed},     {"large", seed_large},
    {"schema", seed_schema},
};

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void write_or_die(const char *path, const uint8_t *d, size_t n)
{
    if (fuzz_write_file(path, d, n) != 0) {
        fprintf(stderr, "make_corpus: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static int make_seeds(const char *full_dir, const char *body_dir)
{
    const char *work = fuzz_temp_db_path();
    char path[8192];
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        cs_db *db = open_new(work);
        seeds[i].fill(db);
        cs_db_stats st;
        OK(cs_db_stats_get(db, &st));
        OK(cs_db_verify(db));
        OK(cs_db_close(db));

        size_t n;
        uint8_t *file = fuzz_read_file(work, &n);
        if (!file || n < st.logical_size || st.logical_size < 4096) {
            fprintf(stderr, "make_corpus: cannot read back %s\n", seeds[i].name);
            return 1;
        }
        n = (size_t)st.logical_size; /* bytes past the logical size mean nothing */
        snprintf(path, sizeof path, "%s/%s", full_dir, seeds[i].name);
        write_or_die(path, file, n);

        /* the body-only form: [top][version][bytes from 4096 on], from the selected slot */
        uint64_t top, version;
        fuzz_header_slot(file, n, &top, &version);
        uint8_t *body = malloc(16 + n - 4096);
        if (!body) return 1;
        put64(body, top);
        put64(body + 8, version);
        memcpy(body + 16, file + 4096, n - 4096);
        snprintf(path, sizeof path, "%s/%s", body_dir, seeds[i].name);
        write_or_die(path, body, 16 + n - 4096);
        free(body);

        /* the seed must be healthy and read clean (read from the work path, so no lock file
         * is left beside the corpus) */
        write_or_die(work, file, n);
        free(file);
        fuzz_stats fs = fuzz_read_all(work);
        if (fs.verify_rc != CS_OK || fs.open_rc != CS_OK || fs.first_error != 0) {
            fprintf(stderr, "make_corpus: seed %s does not read clean (verify %s, open %s, read %s)\n",
                    seeds[i].name, cs_errstr(fs.verify_rc), cs_errstr(fs.open_rc), cs_errstr(fs.first_error));
            return 1;
        }
        printf("%-12s %7zu bytes  version %llu  %llu free extents  %llu objects  %llu values\n",
               seeds[i].name, n, (unsigned long long)version, (unsigned long long)st.free_extents,
               (unsigned long long)fs.objects, (unsigned long long)fs.values);
    }
    return 0;
}

static int wrap(const char *in, const char *out)
{
    size_t n, m;
    uint8_t *d = fuzz_read_file(in, &n);
    if (!d) { fprintf(stderr, "make_corpus: cannot read %s\n", in); return 1; }
    uint8_t *f = fuzz_wrap_body(d, n, &m);
    free(d);
    if (!f) { fprintf(stderr, "make_corpus: %s is shorter than the 16-byte prefix\n", in); return 1; }
    write_or_die(out, f, m);
    free(f);
    return 0;
}

static int check(int argc, char **argv)
{
    const char *work = fuzz_temp_db_path();
    for (int i = 0; i < argc; i++) {
        /* read a copy, so no lock file is left beside the input */
        size_t n;
        uint8_t *d = fuzz_read_file(argv[i], &n);
        if (!d) { fprintf(stderr, "make_corpus: cannot read %s\n", argv[i]); return 1; }
        write_or_die(work, d, n);
        free(d);
        fuzz_stats fs = fuzz_read_all(work);
        printf("%s: verify %s, open %s, first read error %s; %llu tables, %llu objects, %llu values, %llu calls\n",
               argv[i], cs_errstr(fs.verify_rc), cs_errstr(fs.open_rc),
               fs.first_error ? cs_errstr(fs.first_error) : "none", (unsigned long long)fs.tables,
               (unsigned long long)fs.objects, (unsigned long long)fs.values, (unsigned long long)fs.calls);
    }
    return 0;
}

/* ---- journals (open_journal) ------------------------------------------------------------ */

/* One journal seed: `commits` commits into the base, each of `rows` one-row updates (or, with
 * `bytes`, a new object with a value of that many bytes in b), every `del`-th one a delete
 * too; the journal as the crash before the last close would leave it. */
typedef struct journal_seed {
    const char *name;
    int commits, rows, bytes, del;
} journal_seed;

static const journal_seed journal_seeds[] = {
    {"journal-one-row", 24, 1, 0, 0},
    {"journal-few-rows", 8, 6, 0, 3},
    {"journal-large", 4, 1, 9000, 0},
    {"journal-one", 1, 1, 0, 0},
};

static int make_journals(const char *dir)
{
    const char *work = fuzz_temp_db_path();
    char path[8192], jp[8192];
    snprintf(jp, sizeof jp, "%s.journal", work);
    for (size_t i = 0; i < sizeof journal_seeds / sizeof journal_seeds[0]; i++) {
        const journal_seed *js = &journal_seeds[i];
        size_t basen;
        const uint8_t *base = fuzz_journal_base(&basen);
        unlink(jp);
        char lp[8192];
        snprintf(lp, sizeof lp, "%s.lock", work);
        unlink(lp);
        write_or_die(work, base, basen);
        cs_options o;
        memset(&o, 0, sizeof o);
        o.durability = CS_DURABILITY_FULL;
        cs_db *db;
        OK(cs_db_open(work, &o, &db));
        uint64_t x = 0x9e3779b97f4a7c15ull + i;
        for (int c = 0; c < js->commits; c++) {
            cs_txn *t = begin_write(db);
            uint32_t tb, v, b;
            OK(cs_table_find(t, "T", &tb));
            OK(cs_column_find(t, tb, "v", &v));
            OK(cs_column_find(t, tb, "b", &b));
            for (int r = 0; r < js->rows; r++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                cs_obj ob;
                if (js->bytes) {
                    static uint8_t blob[65536];
                    for (int k = 0; k < js->bytes; k++) blob[k] = (uint8_t)(x >> (k % 56));
                    OK(cs_obj_create(t, tb, &ob));
                    cs_value bv = cs_binary(blob, (size_t)js->bytes);
                    OK(cs_obj_set(&ob, b, &bv));
                } else {
                    OK(cs_obj_open(t, tb, (int64_t)((x >> 33) % 3000), &ob));
                    if (js->del && (c * js->rows + r) % js->del == 0) OK(cs_obj_delete(&ob));
                    else OK(cs_obj_set_int(&ob, v, -(int64_t)(c * 100 + r)));
                }
            }
            commit(t);
        }
        /* the crash: the journal before the last close's checkpoint empties it */
        size_t jn;
        uint8_t *journal = fuzz_read_file(jp, &jn);
        if (!journal) die("reading the journal", CS_IOERR);
        OK(cs_db_close(db));
        /* only the records matter: the journal cut after the last (the rest is zeros) */
        size_t end = 4096;
        while (end + 64 <= jn && memcmp(journal + end, "CSJREC\r\n", 8) == 0) {
            uint64_t len;
            memcpy(&len, journal + end + 24, 8);
            if (len < 64 || len > jn - end) break;
            end += (size_t)len;
        }
        snprintf(path, sizeof path, "%s/%s", dir, js->name);
        write_or_die(path, journal, end);
        /* the seed must replay every commit onto the base and read clean */
        if (fuzz_journal_files(work, journal, end) != 0) die("writing the replay", CS_IOERR);
        free(journal);
        OK(cs_db_open(work, &o, &db));
        uint64_t got = cs_db_recovered_commits(db);
        OK(cs_db_verify(db));
        OK(cs_db_close(db));
        fuzz_stats fs = fuzz_read_all(work);
        if (got != (uint64_t)js->commits || fs.verify_rc != CS_OK || fs.open_rc != CS_OK || fs.first_error != 0) {
            fprintf(stderr, "make_corpus: journal %s does not replay clean (%llu of %d commits, verify %s, open %s)\n",
                    js->name, (unsigned long long)got, js->commits, cs_errstr(fs.verify_rc), cs_errstr(fs.open_rc));
            return 1;
        }
        printf("%-20s %6zu bytes, %d records\n", js->name, end, js->commits);
    }
    return 0;
}

static int check_journals(int n, char **files)
{
    const char *work = fuzz_temp_db_path();
    for (int i = 0; i < n; i++) {
        size_t jn;
        uint8_t *journal = fuzz_read_file(files[i], &jn);
        if (!journal) {
            perror(files[i]);
            return 1;
        }
        if (jn % 2 == 0) fuzz_journal_seal(journal, jn); /* as open_journal takes it */
        if (fuzz_journal_files(work, journal, jn) != 0) die("writing the replay", CS_IOERR);
        free(journal);
        fuzz_stats fs = fuzz_replay_all(work);
        printf("%s: open %s, verify %s, first error %s, %llu objects\n", files[i], cs_errstr(fs.open_rc),
               cs_errstr(fs.verify_rc), cs_errstr(fs.first_error), (unsigned long long)fs.objects);
    }
    return 0;
}

/* The journal as open_journal writes it beside the base: an input of even length sealed. */
static int seal_journal(const char *in, const char *out)
{
    size_t jn;
    uint8_t *journal = fuzz_read_file(in, &jn);
    if (!journal) {
        perror(in);
        return 1;
    }
    if (jn % 2 == 0) fuzz_journal_seal(journal, jn);
    write_or_die(out, journal, jn);
    free(journal);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "journals") == 0) return make_journals(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "check-journal") == 0) return check_journals(argc - 2, argv + 2);
    if (argc == 3 && strcmp(argv[1], "journal-base") == 0) {
        size_t n;
        const uint8_t *base = fuzz_journal_base(&n);
        write_or_die(argv[2], base, n);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "seal-journal") == 0) return seal_journal(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "seeds") == 0) return make_seeds(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "wrap") == 0) return wrap(argv[2], argv[3]);
    if (argc >= 3 && strcmp(argv[1], "check") == 0) return check(argc - 2, argv + 2);
    fprintf(stderr,
            "usage: make_corpus seeds <full-dir> <body-dir>\n"
            "       make_corpus wrap <body-input> <out-file>\n"
            "       make_corpus check <file>...\n"
            "       make_corpus journals <dir>\n"
            "       make_corpus check-journal <file>...\n"
            "       make_corpus journal-base <file>\n"
            "       make_corpus seal-journal <in> <out>\n");
    return 2;
}
