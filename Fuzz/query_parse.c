/*
 * query_parse.c -- libFuzzer target for the query language: the input is the text of a query
 * run against a fixed schema (Dog: name, age, weight, born, tags, scores, owner, extra; Person:
 * name, dogs) with four bound arguments. Parsing, binding and running it must end in CS_OK or
 * CS_QUERY (or CS_OVERFLOW for a sum), never a crash, a hang or a sanitizer report.
 */
#include "cstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static cs_db *db;
static cs_txn *txn;
static uint32_t dog, person, agecol;

#define CK(x) do { if ((x) != CS_OK) { fprintf(stderr, "setup: %s: %s\n", #x, cs_errmsg()); abort(); } } while (0)

static void setup(void)
{
    char dir[] = "/tmp/cstore-qfuzz-XXXXXX";
    if (!mkdtemp(dir)) abort();
    char path[128];
    snprintf(path, sizeof path, "%s/q.cstore", dir);
    cs_options o = {0};
    o.flags = CS_OPEN_CREATE;
    o.durability = CS_DURABILITY_MEMORY;
    CK(cs_db_open(path, &o, &db));
    CK(cs_txn_begin(db, CS_TXN_WRITE, &txn));
    uint32_t c, name, tags, scores, owner, dogs, pname, extra;
    CK(cs_table_add(txn, "Person", 0, &person));
    CK(cs_column_add(txn, person, "name", CS_TYPE_STRING, CS_COLL_NONE, 0, 0, &pname));
    CK(cs_table_add(txn, "Dog", 0, &dog));
    CK(cs_column_add(txn, dog, "name", CS_TYPE_STRING, CS_COLL_NONE, CS_COL_INDEXED, 0, &name));
    CK(cs_column_add(txn, dog, "age", CS_TYPE_INT, CS_COLL_NONE, 0, 0, &agecol));
    CK(cs_column_add(txn, dog, "weight", CS_TYPE_DOUBLE, CS_COLL_NONE, CS_COL_NULLABLE, 0, &c));
    CK(cs_column_add(txn, dog, "born", CS_TYPE_TIMESTAMP, CS_COLL_NONE, 0, 0, &c));
    CK(cs_column_add(txn, dog, "tags", CS_TYPE_STRING, CS_COLL_LIST, 0, 0, &tags));
    CK(cs_column_add(txn, dog, "scores", CS_TYPE_INT, CS_COLL_MAP, CS_COL_NULLABLE, 0, &scores));
    CK(cs_column_add(txn, dog, "owner", CS_TYPE_LINK, CS_COLL_NONE, 0, person, &owner));
    CK(cs_column_add(txn, dog, "extra", CS_TYPE_MIXED, CS_COLL_NONE, 0, 0, &extra));
    CK(cs_column_add(txn, person, "dogs", CS_TYPE_LINK, CS_COLL_LIST, 0, dog, &dogs));
    cs_obj p;
    CK(cs_obj_create(txn, person, &p));
    cs_value v = cs_string("Ann", 3);
    CK(cs_obj_set(&p, pname, &v));
    for (int i = 0; i < 20; i++) {
        cs_obj d;
        CK(cs_obj_create(txn, dog, &d));
        char b[16];
        int n = snprintf(b, sizeof b, "dog%d", i);
        v = cs_string(b, (size_t)n);
        CK(cs_obj_set(&d, name, &v));
        CK(cs_obj_set_int(&d, agecol, i % 7));
        v = cs_link(person, p.key);
        if (i % 2) CK(cs_obj_set(&d, owner, &v));
        cs_coll l;
        CK(cs_coll_open(&d, tags, &l));
        for (int k = 0; k < i % 3; k++) { v = cs_string("t", 1); CK(cs_list_append(&l, &v)); }
        v = i % 3 ? cs_int(i) : cs_string("x", 1);
        CK(cs_obj_set(&d, extra, &v));
        cs_coll pl;
        CK(cs_coll_open(&p, dogs, &pl));
        v = cs_link(dog, d.key);
        CK(cs_list_append(&pl, &v));
    }
    CK(cs_txn_commit(txn));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!db) setup();
    cs_value items[2] = {cs_int(3), cs_string("dog1", 4)};
    cs_value args[4] = {cs_int(5), cs_string("dog3", 4), cs_double(2.5), cs_null()};
    args[3].type = CS_TYPE_LIST;
    args[3].v.list.items = items;
    args[3].v.list.count = 2;
    int rc = cs_query_check((const char *)data, size, 4);
    if (rc != CS_OK && rc != CS_QUERY) abort();
    cs_query *q;
    rc = cs_query_new(txn, dog, (const char *)data, size, args, 4, &q);
    if (rc == CS_QUERY) return 0;
    if (rc != CS_OK) abort();
    uint64_t n;
    rc = cs_query_count(q, &n);
    if (rc != CS_OK && rc != CS_QUERY && rc != CS_OVERFLOW) abort();
    int64_t *keys;
    size_t k;
    rc = cs_query_keys(q, &keys, &k);
    if (rc == CS_OK) cs_keys_free(keys);
    else if (rc != CS_QUERY && rc != CS_OVERFLOW) abort();
    cs_value out;
    rc = cs_query_aggregate(q, agecol, CS_AGG_SUM, &out);
    if (rc != CS_OK && rc != CS_OVERFLOW) abort();
    cs_query_free(q);
    return 0;
}
