/* The system liblz4, for the core's backup streams (Debian: liblz4-dev). */
#include <lz4.h>
#include <lz4frame.h>
