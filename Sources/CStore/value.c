/*
 * value.c -- the total order of values (DESIGN §2.9): null < bool < numeric < string < binary
 * < timestamp < ObjectId < UUID < link. Numbers of different types compare by value; NaN
 * sorts before every number. Strings and binaries compare by bytes.
 */
#include "internal.h"

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

/* A decimal128 (BID) decoded: NaN, +-inf, or sign * coeff * 10^exp. */
typedef struct dec {
    int kind;            /* 0 finite, 1 NaN, 2 infinity */
    int sign;            /* 1 negative */
    unsigned __int128 c; /* coefficient */
    int exp;             /* exponent */
} dec;

static dec dec_decode(const cs_decimal128 *d)
{
    dec r = {0, 0, 0, 0};
    uint64_t hi = d->w[1], lo = d->w[0];
    r.sign = (int)(hi >> 63);
    if (((hi >> 58) & 0x1f) == 0x1f) { r.kind = 1; return r; }
    if (((hi >> 58) & 0x1f) == 0x1e) { r.kind = 2; return r; }
    unsigned __int128 c;
    int e;
    if (((hi >> 61) & 3) == 3) {
        /* large-coefficient form: values are non-canonical and treated as zero */
        e = (int)((hi >> 47) & 0x3fff);
        c = 0;
    } else {
        e = (int)((hi >> 49) & 0x3fff);
        c = ((unsigned __int128)(hi & 0x1ffffffffffffull) << 64) | lo;
        unsigned __int128 max = ((unsigned __int128)0x1ed09bead87c0ull << 64) | 0x378d8e63ffffffffull;
        if (c > max) c = 0;
    }
    r.c = c;
    r.exp = e - 6176;
    return r;
}

static long double dec_to_ld(const dec *d)
{
    if (d->kind == 1) return NAN;
    if (d->kind == 2) return d->sign ? -INFINITY : INFINITY;
    long double v = (long double)d->c * powl(10.0L, d->exp);
    return d->sign ? -v : v;
}

static int cmp_dec(const dec *a, const dec *b)
{
    if (a->kind == 1 || b->kind == 1) return (b->kind == 1) - (a->kind == 1);
    long double x = dec_to_ld(a), y = dec_to_ld(b);
    if (x < y) return -1;
    if (x > y) return 1;
    if (a->kind == 0 && b->kind == 0 && a->sign == b->sign) {
        /* equal as long doubles: compare exactly by aligning exponents where it fits */
        unsigned __int128 ca = a->c, cb = b->c;
        int ea = a->exp, eb = b->exp;
        while (ea > eb && ca <= ((unsigned __int128)-1) / 10) { ca *= 10; ea--; }
        while (eb > ea && cb <= ((unsigned __int128)-1) / 10) { cb *= 10; eb--; }
        if (ea == eb && ca != cb) {
            int r = ca < cb ? -1 : 1;
            return a->sign ? -r : r;
        }
    }
    return 0;
}

/* Numeric comparison across INT, FLOAT, DOUBLE and DECIMAL. NaN first. */
static int cmp_num(const cs_value *a, const cs_value *b)
{
    if (a->type == CS_TYPE_INT && b->type == CS_TYPE_INT) return (a->v.i > b->v.i) - (a->v.i < b->v.i);
    if (a->type == CS_TYPE_DECIMAL && b->type == CS_TYPE_DECIMAL) {
        dec x = dec_decode(&a->v.dec), y = dec_decode(&b->v.dec);
        return cmp_dec(&x, &y);
    }
    long double x, y;
    bool xn = false, yn = false;
    switch (a->type) {
    case CS_TYPE_INT: x = (long double)a->v.i; break;
    case CS_TYPE_FLOAT: x = a->v.f; xn = isnan(a->v.f); break;
    case CS_TYPE_DOUBLE: x = a->v.d; xn = isnan(a->v.d); break;
    default: { dec d = dec_decode(&a->v.dec); x = dec_to_ld(&d); xn = d.kind == 1; break; }
    }
    switch (b->type) {
    case CS_TYPE_INT: y = (long double)b->v.i; break;
    case CS_TYPE_FLOAT: y = b->v.f; yn = isnan(b->v.f); break;
    case CS_TYPE_DOUBLE: y = b->v.d; yn = isnan(b->v.d); break;
    default: { dec d = dec_decode(&b->v.dec); y = dec_to_ld(&d); yn = d.kind == 1; break; }
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
