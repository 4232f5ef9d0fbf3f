/* The system SQLite (Debian: libsqlite3-dev), for the raw C API peers of the benchmarks. */
#include <sqlite3.h>
