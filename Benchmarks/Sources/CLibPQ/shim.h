/* The system libpq (PostgreSQL's C client), for the mirror rows (Debian: libpq-dev). */
#include <libpq-fe.h>
