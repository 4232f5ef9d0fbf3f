/*
 * value.c -- the total order of values (docs/ARCHITECTURE.md, Values and their order): null < bool < numeric < string < binary
 * < timestamp < ObjectId < UUID < link. Numbers of different types compare by value; NaN
 * sorts before every number. Strings and binaries compare by bytes.
 */
#include "decimal.h"

#include <math.h>

static int rank(cs_type t)
{
    switch (t) {
    case CS_TYPE_NULL: return 0;
    case CS_TYPE_BOOL: return 1;
    case CS_TYPE_INT: case CS_TYPE_FLOAT: case CS_TYPE_DOUBLE: case CS_TYPE_DECIMAL: return 2;
    case CS_TYPE_STRING: return 3;
    case CS_TYPE_BINARY: return 4;
    case CS_TYPE_TIMESTAMP: return 5;
    case CS_TYPE_OBJECTID: return 6;
    case CS_TYPE_UUID: return 7;
    case CS_TYPE_LINK: return 8;
    case CS_TYPE_LIST: return 9;
    case CS_TYPE_DICT: return 10;
    default: return 11;
    }
}

/* A decimal against any numeric value, exactly: an int converts to a decimal exactly, a float
 * to a double exactly, and a double is compared by its exact binary value. */
static int cmp_dec_num(const cs_decimal128 *d, const cs_value *b)
{
    switch (b->type) {
    case CS_TYPE_DECIMAL: return cs_decimal_compare(d, &b->v.dec);
    case CS_TYPE_INT: { cs_decimal128 x = cs_decimal_from_int(b->v.i); return cs_decimal_compare(d, &x); }
    case CS_TYPE_FLOAT: return decimal_compare_double(d, (double)b->v.f);
    default: return decimal_compare_double(d, b->v.d);
    }
}

/* Numeric comparison across INT, FLOAT, DOUBLE and DECIMAL. NaN first. */
static int cmp_num(const cs_value *a, const cs_value *b)
{
    if (a->type == CS_TYPE_INT && b->type == CS_TYPE_INT) return (a->v.i > b->v.i) - (a->v.i < b->v.i);
    if (a->type == CS_TYPE_DECIMAL) return cmp_dec_num(&a->v.dec, b);
    if (b->type == CS_TYPE_DECIMAL) return -cmp_dec_num(&b->v.dec, a);
    long double x, y;
    bool xn = false, yn = false;
    switch (a->type) {
    case CS_TYPE_INT: x = (long double)a->v.i; break;
    case CS_TYPE_FLOAT: x = a->v.f; xn = isnan(a->v.f); break;
    case CS_TYPE_DOUBLE: x = a->v.d; xn = isnan(a->v.d); break;
    default: x = a->v.d; xn = isnan(a->v.d); break;
    }
    switch (b->type) {
    case CS_TYPE_INT: y = (long double)b->v.i; break;
    case CS_TYPE_FLOAT: y = b->v.f; yn = isnan(b->v.f); break;
    case CS_TYPE_DOUBLE: y = b->v.d; yn = isnan(b->v.d); break;
    default: y = b->v.d; yn = isnan(b->v.d); break;
    }
    if (xn || yn) return (int)yn - (int)xn == 0 ? 0 : (xn ? -1 : 1);
    if (x < y) return -1;
    if (x > y) return 1;
    return 0;
}

static int cmp_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int r = n ? memcmp(a, b, n) : 0;
    if (r) return r < 0 ? -1 : 1;
    return (an > bn) - (an < bn);
}

int cs_value_compare(const cs_value *a, const cs_value *b)
{
    int ra = rank(a->type), rb = rank(b->type);
    if (ra != rb) return ra < rb ? -1 : 1;
    switch (ra) {
    case 0: return 0;
    case 1: return (int)a->v.b - (int)b->v.b;
    case 2: return cmp_num(a, b);
    case 3: case 4: return cmp_bytes(a->v.bytes.ptr, a->v.bytes.len, b->v.bytes.ptr, b->v.bytes.len);
    case 5:
        if (a->v.ts.sec != b->v.ts.sec) return a->v.ts.sec < b->v.ts.sec ? -1 : 1;
        return (a->v.ts.nsec > b->v.ts.nsec) - (a->v.ts.nsec < b->v.ts.nsec);
    case 6: return cmp_bytes(a->v.oid, 12, b->v.oid, 12);
    case 7: return cmp_bytes(a->v.uuid, 16, b->v.uuid, 16);
    case 8:
        if (a->v.link.table != b->v.link.table) return a->v.link.table < b->v.link.table ? -1 : 1;
        return (a->v.link.key > b->v.link.key) - (a->v.link.key < b->v.link.key);
    default: return 0;
    }
}
