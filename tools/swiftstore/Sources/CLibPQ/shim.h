/* The system libpq (PostgreSQL's C client), for `swiftstore mirror` (Debian: libpq-dev). */
#include <libpq-fe.h>
