/* The README's C example: `make c-example` builds and runs it. */
#include "cstore.h"
#include <stdio.h>

int main(void) {
    remove("dogs.db");                     /* start from an empty file each run */
    cs_options opts = {.flags = CS_OPEN_CREATE};
    cs_db *db;  cs_txn *txn;  cs_obj dog;  uint32_t table, name, age;
    if (cs_db_open("dogs.db", &opts, &db) != CS_OK) { puts(cs_errmsg()); return 1; }

    cs_txn_begin(db, CS_TXN_WRITE, &txn);
    cs_table_add(txn, "Dog", 0, &table);
    cs_column_add(txn, table, "name", CS_TYPE_STRING, CS_COLL_NONE, 0, 0, &name);
    cs_column_add(txn, table, "age", CS_TYPE_INT, CS_COLL_NONE, 0, 0, &age);
    cs_obj_create(txn, table, &dog);
    cs_value rex = cs_string("Rex", 3);
    cs_obj_set(&dog, name, &rex);
    cs_obj_set_int(&dog, age, 3);
    cs_txn_commit(txn);                    /* durable; txn now reads the new version */

    int64_t years;
    cs_obj_get_int(&dog, age, &years);
    printf("Rex is %lld\n", (long long)years);
    cs_txn_end(txn);
    return cs_db_close(db);
}
