/*
 * index_key.c -- the order-preserving keys of values (docs/FORMAT.md §6.5), shared by the index
 * trees (index.c) and the query engine's index plans (query_plan.c). A key keeps the value order
 * (docs/ARCHITECTURE.md, Values and their order) under memcmp: a type tag byte, then ints as
 * big-endian with the sign bit flipped, strings with 0x00 escaped as 00 FF and ended by 00 00,
 * timestamps as flipped seconds then nanoseconds, ids as their bytes. A Mixed index (format
 * version 2) keys the stored value so that numbers equal in the value order share a key
 * (put_number); index_double_key gives the bounds of numeric ranges in the Double tag.
 *
 * Invariants:
 *  1. For values of one type of a typed index, memcmp of keys orders as cs_value_compare, and
 *     no key is a prefix of another key of the same tag (strings end in 00 00).
 *  2. Two numbers get the same Mixed key exactly when cs_value_compare calls them equal.
 */
#include "decimal.h"
#include "index_key.h"

#include <math.h>

bool index_type_ok(cs_type type)
{
    switch (type) {
    case CS_TYPE_INT: case CS_TYPE_BOOL: case CS_TYPE_STRING: case CS_TYPE_TIMESTAMP:
    case CS_TYPE_OBJECTID: case CS_TYPE_UUID: case CS_TYPE_MIXED: return true;
    default: return false;
    }
}

void index_put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static size_t put_escaped(uint8_t *p, uint8_t tag, const void *bytes, size_t len)
{
    size_t k = 0;
    p[k++] = tag;
    const uint8_t *s = bytes;
    for (size_t i = 0; i < len; i++) {
        p[k++] = s[i];
        if (s[i] == 0) p[k++] = 0xff;
    }
    p[k++] = 0;
    p[k++] = 0;
    return k;
}

/* A double as 8 bytes whose unsigned order is the numeric order. */
static size_t put_double(uint8_t *p, double d)
{
    uint64_t b;
    memcpy(&b, &d, 8);
    b = (b >> 63) ? ~b : b ^ (1ull << 63);
    p[0] = INDEX_TAG_DOUBLE;
    index_put_be64(p + 1, b);
    return 9;
}

/* The Mixed key of a number. Two numbers get the same key exactly when cs_value_compare calls
 * them equal: an integer that fits int64 is keyed as that Int whatever its type, any other
 * value that a double holds exactly as that double, the remaining decimals by their cohort-free
 * parts, and every NaN alike (NaN equals NaN in the value order). */
static size_t put_number(uint8_t *p, const cs_value *v)
{
    double d;
    switch (v->type) {
    case CS_TYPE_INT:
        p[0] = INDEX_TAG_INT;
        index_put_be64(p + 1, (uint64_t)v->v.i ^ (1ull << 63));
        return 9;
    case CS_TYPE_FLOAT: d = (double)v->v.f; break;
    case CS_TYPE_DOUBLE: d = v->v.d; break;
    default: {
        int sign, exp;
        unsigned __int128 coeff;
        bool int_ok;
        int64_t as_int;
        int kind = decimal_key_parts(&v->v.dec, &sign, &coeff, &exp, &int_ok, &as_int);
        if (kind == 0) { p[0] = INDEX_TAG_NAN; return 1; }
        if (kind == 1) return put_double(p, sign ? -INFINITY : INFINITY);
        if (int_ok) {
            cs_value i = cs_int(as_int);
            return put_number(p, &i);
        }
        double near = cs_decimal_to_double(&v->v.dec);
        double tries[3] = {near, nextafter(near, INFINITY), nextafter(near, -INFINITY)};
        for (int k = 0; k < 3; k++)
            if (isfinite(tries[k]) && decimal_compare_double(&v->v.dec, tries[k]) == 0) return put_double(p, tries[k]);
        p[0] = INDEX_TAG_DECIMAL;
        p[1] = (uint8_t)sign;
        uint32_t e = (uint32_t)exp ^ 0x80000000u;
        p[2] = (uint8_t)(e >> 24); p[3] = (uint8_t)(e >> 16); p[4] = (uint8_t)(e >> 8); p[5] = (uint8_t)e;
        index_put_be64(p + 6, (uint64_t)(coeff >> 64));
        index_put_be64(p + 14, (uint64_t)coeff);
        return 22;
    }
    }
    if (isnan(d)) { p[0] = INDEX_TAG_NAN; return 1; }
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == trunc(d)) {
        cs_value i = cs_int((int64_t)d);
        return put_number(p, &i);
    }
    return put_double(p, d);
}

/* The Mixed key a double would have if it were keyed under INDEX_TAG_DOUBLE whatever its
 * value (integers included), malloc'd with 8 spare bytes: the bound of a numeric range. */
int index_double_key(double d, uint8_t **out, size_t *n)
{
    *out = malloc(9 + 8);
    if (!*out) return NOMEM();
    *n = put_double(*out, d);
    return CS_OK;
}

/* Bytes index_key_into needs for `v` (the 8 spare bytes included). */
size_t index_key_cap(const cs_value *v)
{
    bool bytes = v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY;
    return 40 + (bytes ? 2 * v->v.bytes.len : 0);
}

/* Encodes `v` (null included) into p (index_key_cap(v) bytes); 0 when the type cannot be indexed.
 * `mixed` selects the key of a Mixed index, which also takes the types a typed index refuses. */
size_t index_key_into(const cs_value *v, bool mixed, uint8_t *p)
{
    size_t k = 0;
    switch (v->type) {
    case CS_TYPE_NULL: p[k++] = INDEX_TAG_NULL; break;
    case CS_TYPE_BOOL: p[k++] = INDEX_TAG_BOOL; p[k++] = v->v.b ? 1 : 0; break;
    case CS_TYPE_INT: p[k++] = INDEX_TAG_INT; index_put_be64(p + k, (uint64_t)v->v.i ^ (1ull << 63)); k += 8; break;
    case CS_TYPE_STRING: k = put_escaped(p, INDEX_TAG_STRING, v->v.bytes.ptr, v->v.bytes.len); break;
    case CS_TYPE_TIMESTAMP:
        p[k++] = INDEX_TAG_TIMESTAMP;
        index_put_be64(p + k, (uint64_t)v->v.ts.sec ^ (1ull << 63));
        k += 8;
        {
            uint32_t ns = (uint32_t)v->v.ts.nsec ^ 0x80000000u;
            p[k++] = (uint8_t)(ns >> 24); p[k++] = (uint8_t)(ns >> 16);
            p[k++] = (uint8_t)(ns >> 8); p[k++] = (uint8_t)ns;
        }
        break;
    case CS_TYPE_OBJECTID: p[k++] = INDEX_TAG_OBJECTID; memcpy(p + k, v->v.oid, 12); k += 12; break;
    case CS_TYPE_UUID: p[k++] = INDEX_TAG_UUID; memcpy(p + k, v->v.uuid, 16); k += 16; break;
    case CS_TYPE_FLOAT: case CS_TYPE_DOUBLE: case CS_TYPE_DECIMAL:
        if (!mixed) return 0;
        k = put_number(p, v);
        break;
    case CS_TYPE_BINARY:
        if (!mixed) return 0;
        k = put_escaped(p, INDEX_TAG_BINARY, v->v.bytes.ptr, v->v.bytes.len);
        break;
    case CS_TYPE_LINK:
        if (!mixed) return 0;
        p[k++] = INDEX_TAG_LINK;
        p[k++] = (uint8_t)(v->v.link.table >> 24); p[k++] = (uint8_t)(v->v.link.table >> 16);
        p[k++] = (uint8_t)(v->v.link.table >> 8); p[k++] = (uint8_t)v->v.link.table;
        index_put_be64(p + k, (uint64_t)v->v.link.key ^ (1ull << 63));
        k += 8;
        break;
    case CS_TYPE_LIST: case CS_TYPE_DICT:
        if (!mixed) return 0;
        p[k++] = v->type == CS_TYPE_LIST ? INDEX_TAG_LIST : INDEX_TAG_DICT;
        break;
    default:
        return 0;
    }
    return k;
}

/* Encodes a value (null included) into *out (malloc'd, with 8 spare bytes at the end). */
int index_encode(const cs_value *v, bool mixed, uint8_t **out, size_t *n)
{
    uint8_t *p = malloc(index_key_cap(v));
    if (!p) return NOMEM();
    size_t k = index_key_into(v, mixed, p);
    if (!k) {
        free(p);
        return cs_fail(CS_TYPE, 0, "values of type %d cannot be indexed", (int)v->type);
    }
    *out = p;
    *n = k;
    return CS_OK;
}

int index_probe_make(const cs_value *v, bool mixed, probe *pr)
{
    if (index_key_cap(v) <= sizeof pr->buf) {
        pr->p = pr->buf;
        pr->n = index_key_into(v, mixed, pr->buf);
        if (pr->n) return CS_OK;
        return cs_fail(CS_TYPE, 0, "values of type %d cannot be indexed", (int)v->type);
    }
    return index_encode(v, mixed, &pr->p, &pr->n);
}

void index_probe_free(probe *pr)
{
    if (pr->p != pr->buf) free(pr->p);
}
