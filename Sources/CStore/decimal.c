/*
 * decimal.c -- Decimal128 arithmetic, text conversion and comparison (docs/ARCHITECTURE.md, Values and their order), the one
 * implementation shared by the query engine, cs_value_compare and the Swift layer.
 *
 * Owns the IEEE 754-2008 decimal128 in the BID encoding (as BSON stores it): sign in bit 127;
 * when bits 126-125 are not 11, a 14-bit exponent (bias 6176) in bits 126..113 and the
 * coefficient in bits 112..0; when they are 11 and bits 124-123 are not, the "large
 * coefficient" form, whose coefficients all exceed 10^34 - 1 and so count as 0; bits
 * 126..122 = 11110 is infinity and 11111 is NaN (bit 121, signalling, is ignored). On disk a
 * value is these 16 bytes, low 64 bits first (docs/FORMAT.md §5.1 and §6.3); this file never
 * reads the file, only values handed to it.
 *
 * Invariants:
 *  1. Every value this file produces is canonical: coefficient <= 10^34 - 1, exponent in
 *     -6176..6111, NaN is 0x7C00...0 (no payload; positive, except that text with a minus
 *     sign, "-NaN", keeps the sign bit and prints back as "-NaN", as RealmSwift's does) and
 *     infinity 0x7800...0 plus sign.
 *  2. Every finite result is the exact result rounded once to 34 significant digits, half to
 *     even (dec_finish is the only place that rounds); an exact result keeps the IEEE
 *     preferred exponent (1.00 + 2 = 3.00, 1.00 / 2 = 0.50).
 *  3. Overflow gives +-infinity; a result below the subnormal exponent -6176 is rounded there
 *     and may become (signed) zero; invalid operations (inf - inf, 0 * inf, 0 / 0, inf / inf)
 *     give NaN.
 *  4. Comparisons are exact: 1.0 == 1.00, -0 == 0, and a decimal against a double compares
 *     the two exact binary and decimal values (decimal_compare_double).
 */
#include "decimal.h"

#include <math.h>

typedef unsigned __int128 u128;

#define EXP_MIN (-6176) /* smallest (subnormal) exponent */
#define EXP_MAX 6111    /* largest exponent */
#define EXP_BIAS 6176
#define MAX_DIGITS 34

/* 10^34 - 1, the largest coefficient. */
#define COEFF_MAX (((u128)0x1ed09bead87c0ull << 64) | 0x378d8e63ffffffffull)

enum { DK_FINITE = 0, DK_NAN = 1, DK_INF = 2 };

/* A decoded decimal: NaN, +-infinity, or (-1)^sign * c * 10^e. */
typedef struct dnum {
    int kind; /* DK_FINITE, DK_NAN or DK_INF */
    int sign; /* 1 when negative */
    u128 c;   /* coefficient, <= COEFF_MAX */
    int e;    /* exponent, EXP_MIN..EXP_MAX */
} dnum;

/* A 256-bit unsigned integer for intermediate results, limbs little-endian. */
typedef struct u256 {
    uint64_t l[4]; /* l[0] least significant */
} u256;

/* ---- small helpers ---------------------------------------------------------------------- */

static u128 pow10_128(int n)
{
    u128 r = 1;
    while (n-- > 0) r *= 10;
    return r;
}

/* Number of decimal digits of c (1 for 0). */
static int digits128(u128 c)
{
    int n = 1;
    u128 p = 10;
    while (n < 39 && c >= p) {
        n++;
        p *= 10;
    }
    return n;
}

static u256 u256_from(u128 v)
{
    u256 r = {{(uint64_t)v, (uint64_t)(v >> 64), 0, 0}};
    return r;
}

static bool u256_is_zero(const u256 *a) { return (a->l[0] | a->l[1] | a->l[2] | a->l[3]) == 0; }

/* True when a fits a canonical coefficient (<= 10^34 - 1). */
static bool u256_fits_coeff(const u256 *a)
{
    if (a->l[2] | a->l[3]) return false;
    return (((u128)a->l[1] << 64) | a->l[0]) <= COEFF_MAX;
}

static u128 u256_low128(const u256 *a) { return ((u128)a->l[1] << 64) | a->l[0]; }

static int u256_cmp(const u256 *a, const u256 *b)
{
    for (int i = 3; i >= 0; i--) {
        if (a->l[i] != b->l[i]) return a->l[i] < b->l[i] ? -1 : 1;
    }
    return 0;
}

static u256 u256_add(const u256 *a, const u256 *b)
{
    u256 r;
    u128 carry = 0;
    for (int i = 0; i < 4; i++) {
        u128 s = (u128)a->l[i] + b->l[i] + carry;
        r.l[i] = (uint64_t)s;
        carry = s >> 64;
    }
    return r;
}

/* a - b, for a >= b. */
static u256 u256_sub(const u256 *a, const u256 *b)
{
    u256 r;
    uint64_t borrow = 0;
    for (int i = 0; i < 4; i++) {
        uint64_t x = a->l[i], y = b->l[i];
        uint64_t d = x - y - borrow;
        borrow = (x < y || (x == y && borrow)) ? 1 : 0;
        r.l[i] = d;
    }
    return r;
}

/* a * m; the caller keeps the product below 2^256. */
static u256 u256_mul_small(const u256 *a, uint64_t m)
{
    u256 r;
    u128 carry = 0;
    for (int i = 0; i < 4; i++) {
        u128 p = (u128)a->l[i] * m + carry;
        r.l[i] = (uint64_t)p;
        carry = p >> 64;
    }
    return r;
}

/* a /= d, returning the remainder. */
static uint64_t u256_divmod_small(u256 *a, uint64_t d)
{
    u128 rem = 0;
    for (int i = 3; i >= 0; i--) {
        u128 cur = (rem << 64) | a->l[i];
        a->l[i] = (uint64_t)(cur / d);
        rem = cur % d;
    }
    return (uint64_t)rem;
}

/* The full 256-bit product of two 128-bit numbers. */
static u256 u256_mul128(u128 a, u128 b)
{
    uint64_t a0 = (uint64_t)a, a1 = (uint64_t)(a >> 64);
    uint64_t b0 = (uint64_t)b, b1 = (uint64_t)(b >> 64);
    u128 p00 = (u128)a0 * b0, p01 = (u128)a0 * b1, p10 = (u128)a1 * b0, p11 = (u128)a1 * b1;
    u256 r;
    r.l[0] = (uint64_t)p00;
    u128 mid = (p00 >> 64) + (uint64_t)p01 + (uint64_t)p10; /* < 3 * 2^64 */
    r.l[1] = (uint64_t)mid;
    u128 high = (mid >> 64) + (p01 >> 64) + (p10 >> 64) + (uint64_t)p11;
    r.l[2] = (uint64_t)high;
    r.l[3] = (uint64_t)((high >> 64) + (uint64_t)(p11 >> 64));
    return r;
}

/* a * 10^n for n <= 43 (a < 10^34 keeps the product below 2^256). */
static u256 u256_mul_pow10(u128 a, int n)
{
    u256 r = u256_from(a);
    while (n >= 19) {
        r = u256_mul_small(&r, 10000000000000000000ull);
        n -= 19;
    }
    if (n > 0) r = u256_mul_small(&r, (uint64_t)pow10_128(n));
    return r;
}

/* ---- encoding --------------------------------------------------------------------------- */

static dnum dec_decode(const cs_decimal128 *d)
{
    dnum r = {DK_FINITE, 0, 0, 0};
    uint64_t hi = d->w[1], lo = d->w[0];
    r.sign = (int)(hi >> 63);
    unsigned top5 = (unsigned)((hi >> 58) & 0x1f);
    if (top5 == 0x1f) { r.kind = DK_NAN; return r; }
    if (top5 == 0x1e) { r.kind = DK_INF; return r; }
    int biased;
    if (((hi >> 61) & 3) == 3) {
        /* large-coefficient form: always above 10^34 - 1, so non-canonical: zero */
        biased = (int)((hi >> 47) & 0x3fff);
        r.c = 0;
    } else {
        biased = (int)((hi >> 49) & 0x3fff);
        r.c = ((u128)(hi & 0x1ffffffffffffull) << 64) | lo;
        if (r.c > COEFF_MAX) r.c = 0;
    }
    r.e = biased - EXP_BIAS;
    /* a 14-bit field can hold biased exponents above 12287; such encodings do not exist in
     * canonical form, clamp them so arithmetic stays in range */
    if (r.e > EXP_MAX) r.e = EXP_MAX;
    return r;
}

static cs_decimal128 dec_nan(void)
{
    cs_decimal128 r = {{0, 0x7c00000000000000ull}};
    return r;
}

static cs_decimal128 dec_inf(int sign)
{
    cs_decimal128 r = {{0, 0x7800000000000000ull | ((uint64_t)(sign != 0) << 63)}};
    return r;
}

/* Packs a canonical finite value (c <= COEFF_MAX, e in range). */
static cs_decimal128 dec_pack(int sign, u128 c, int e)
{
    cs_decimal128 r;
    r.w[0] = (uint64_t)c;
    r.w[1] = ((uint64_t)(sign != 0) << 63) | ((uint64_t)(e + EXP_BIAS) << 49) |
             ((uint64_t)(c >> 64) & 0x1ffffffffffffull);
    return r;
}

static cs_decimal128 dec_encode(const dnum *d)
{
    if (d->kind == DK_NAN) return dec_nan();
    if (d->kind == DK_INF) return dec_inf(d->sign);
    return dec_pack(d->sign, d->c, d->e);
}

/*
 * The one rounding step (invariant 2). The exact value is (-1)^sign * (C + f) * 10^E where
 * 0 <= f < 1 and `sticky` says f > 0; when sticky is set the caller guarantees that at least
 * one digit is dropped here (C has more than 34 digits or E is below EXP_MIN), so the
 * rounding digit and sticky together decide half-even rounding exactly.
 */
static cs_decimal128 dec_finish(int sign, u256 C, long E, bool sticky)
{
    int rd = 0; /* the most significant dropped digit */
    bool st = sticky;
    bool dropped = false;
    while (!u256_fits_coeff(&C) || E < EXP_MIN) {
        if (u256_is_zero(&C)) {
            /* nothing left to drop: only the exponent moves (to EXP_MIN) */
            st = st || rd != 0;
            rd = 0;
            E = EXP_MIN;
            dropped = true;
            break;
        }
        st = st || rd != 0;
        rd = (int)u256_divmod_small(&C, 10);
        E++;
        dropped = true;
    }
    u128 c = u256_low128(&C);
    if (dropped && (rd > 5 || (rd == 5 && (st || (c & 1))))) {
        c++;
        if (c > COEFF_MAX) { /* 10^34: one digit longer */
            c /= 10;
            E++;
        }
    }
    if (E > EXP_MAX) {
        if (c == 0) {
            E = EXP_MAX;
        } else {
            /* fold down: pad the coefficient with zeros while it fits (exact) */
            while (E > EXP_MAX && c <= COEFF_MAX / 10) {
                c *= 10;
                E--;
            }
            if (E > EXP_MAX) return dec_inf(sign);
        }
    }
    return dec_pack(sign, c, (int)E);
}

/* ---- construction and conversion --------------------------------------------------------- */

cs_decimal128 cs_decimal_from_int(int64_t v)
{
    int sign = v < 0;
    uint64_t mag = sign ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    return dec_pack(sign, mag, 0);
}

bool cs_decimal_is_nan(const cs_decimal128 *d)
{
    return dec_decode(d).kind == DK_NAN;
}

/* Writes the coefficient's digits (no sign, NUL-terminated) and returns their count. */
static int coeff_digits(u128 c, char *out)
{
    char tmp[48];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + (int)(c % 10));
        c /= 10;
    } while (c != 0);
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    out[n] = 0;
    return n;
}

double cs_decimal_to_double(const cs_decimal128 *d)
{
    dnum x = dec_decode(d);
    if (x.kind == DK_NAN) return NAN;
    if (x.kind == DK_INF) return x.sign ? -INFINITY : INFINITY;
    if (x.c == 0) return x.sign ? -0.0 : 0.0;
    /* "digits e exponent" has no radix character, so strtod reads it the same in every locale
     * and rounds it correctly */
    char buf[64];
    int n = 0;
    if (x.sign) buf[n++] = '-';
    n += coeff_digits(x.c, buf + n);
    snprintf(buf + n, sizeof buf - (size_t)n, "e%d", x.e);
    return strtod(buf, NULL);
}

/*
 * The parts of a decimal for the Mixed index key (index.c): 0 for NaN, 1 for an infinity, 2 for
 * a finite value. A finite value is written as (-1)^sign * coeff * 10^exp with the trailing
 * zeros of the coefficient moved into the exponent, so every member of a cohort (1.0, 1.00,
 * 10E-1) gives the same parts; zero is +0E0. *int_ok says whether the value is an integer that
 * fits int64 (then *as_int holds it).
 */
int decimal_key_parts(const cs_decimal128 *d, int *sign, unsigned __int128 *coeff, int *exp, bool *int_ok,
                      int64_t *as_int)
{
    dnum x = dec_decode(d);
    *int_ok = false;
    *sign = x.sign;
    *coeff = 0;
    *exp = 0;
    if (x.kind == DK_NAN) return 0;
    if (x.kind == DK_INF) return 1;
    if (x.c == 0) {
        *sign = 0;
        *int_ok = true;
        *as_int = 0;
        return 2;
    }
    u128 c = x.c;
    int e = x.e;
    while (c % 10 == 0) {
        c /= 10;
        e++;
    }
    *coeff = c;
    *exp = e;
    if (e >= 0 && digits128(c) + e <= 19) {
        u128 v = c * pow10_128(e); /* below 10^19: no overflow */
        if (!x.sign && v <= (u128)INT64_MAX) { *int_ok = true; *as_int = (int64_t)v; }
        if (x.sign && v <= (u128)INT64_MAX + 1) { *int_ok = true; *as_int = (int64_t)(0 - (uint64_t)v); }
    }
    return 2;
}

/* ---- text ------------------------------------------------------------------------------- */

static bool ascii_ieq(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    if (len != n) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != word[i]) return false;
    }
    return true;
}

int cs_decimal_parse(const char *s, size_t len, cs_decimal128 *out)
{
    if (out == NULL || (s == NULL && len > 0)) return cs_fail(CS_MISUSE, 0, "cs_decimal_parse: NULL argument");
    size_t i = 0;
    int sign = 0;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        sign = s[i] == '-';
        i++;
    }
    if (i < len && !(s[i] >= '0' && s[i] <= '9') && s[i] != '.') {
        if (ascii_ieq(s + i, len - i, "nan")) {
            *out = dec_nan();
            if (sign) out->w[1] |= 0x8000000000000000ull;
            return CS_OK;
        }
        if (ascii_ieq(s + i, len - i, "inf") || ascii_ieq(s + i, len - i, "infinity")) {
            *out = dec_inf(sign);
            return CS_OK;
        }
        return cs_fail(CS_TYPE, 0, "not a decimal: unexpected character at offset %zu", i);
    }

    u128 coeff = 0;      /* the first 34 significant digits */
    int sig = 0;         /* significant digits kept in coeff */
    int extra = -1;      /* the 35th significant digit, -1 if none */
    bool sticky = false; /* a nonzero significant digit after the 35th */
    int64_t dropped = 0; /* significant digits after the 34th (they scale the exponent up) */
    int64_t frac = 0;    /* digits after the point */
    size_t ndigits = 0;
    bool point = false;
    for (; i < len; i++) {
        char ch = s[i];
        if (ch == '.') {
            if (point) return cs_fail(CS_TYPE, 0, "not a decimal: second '.' at offset %zu", i);
            point = true;
            continue;
        }
        if (ch < '0' || ch > '9') break;
        ndigits++;
        int dg = ch - '0';
        if (point) frac++;
        if (sig == 0 && dg == 0) continue; /* leading zero */
        if (sig < MAX_DIGITS) {
            coeff = coeff * 10 + (u128)dg;
            sig++;
        } else {
            if (extra < 0) extra = dg;
            else if (dg != 0) sticky = true;
            dropped++;
        }
    }
    if (ndigits == 0) return cs_fail(CS_TYPE, 0, "not a decimal: no digits");

    int64_t exp = 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int esign = 1;
        if (i < len && (s[i] == '+' || s[i] == '-')) {
            esign = s[i] == '-' ? -1 : 1;
            i++;
        }
        size_t start = i;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
            if (exp < 1000000000) exp = exp * 10 + (s[i] - '0'); /* saturates far out of range */
        }
        if (i == start) return cs_fail(CS_TYPE, 0, "not a decimal: exponent without digits");
        exp *= esign;
    }
    if (i != len) return cs_fail(CS_TYPE, 0, "not a decimal: unexpected character at offset %zu", i);

    int64_t e = exp - frac + dropped;
    u256 C = u256_from(coeff);
    if (extra >= 0) {
        /* keep the 35th digit so dec_finish rounds it away with the sticky rest */
        C = u256_from(coeff * 10 + (u128)extra);
        e -= 1;
    }
    /* far out of range either way: keep the arithmetic small, the result is the same */
    if (e > 100000) e = 100000;
    if (e < -100000) e = -100000;
    *out = dec_finish(sign, C, (long)e, sticky);
    return CS_OK;
}

size_t cs_decimal_format(const cs_decimal128 *d, char *buf, size_t cap)
{
    char out[96];
    size_t n = 0;
    dnum x = dec_decode(d);
    if (x.kind == DK_NAN) {
        if (x.sign) out[n++] = '-';
        memcpy(out + n, "NaN", 3);
        n += 3;
    } else if (x.kind == DK_INF) {
        if (x.sign) out[n++] = '-';
        memcpy(out + n, "Inf", 3);
        n += 3;
    } else {
        char dg[48];
        int nd = coeff_digits(x.c, dg);
        int adjusted = x.e + nd - 1;
        if (x.sign) out[n++] = '-';
        if (x.e <= 0 && adjusted >= -6) {
            /* plain notation */
            int point = nd + x.e; /* digits before the point */
            if (x.e == 0) {
                memcpy(out + n, dg, (size_t)nd);
                n += (size_t)nd;
            } else if (point > 0) {
                memcpy(out + n, dg, (size_t)point);
                n += (size_t)point;
                out[n++] = '.';
                memcpy(out + n, dg + point, (size_t)(nd - point));
                n += (size_t)(nd - point);
            } else {
                out[n++] = '0';
                out[n++] = '.';
                for (int k = 0; k < -point; k++) out[n++] = '0';
                memcpy(out + n, dg, (size_t)nd);
                n += (size_t)nd;
            }
        } else {
            /* scientific notation: d.dddE+x */
            out[n++] = dg[0];
            if (nd > 1) {
                out[n++] = '.';
                memcpy(out + n, dg + 1, (size_t)(nd - 1));
                n += (size_t)(nd - 1);
            }
            n += (size_t)snprintf(out + n, sizeof out - n, "E%c%d", adjusted < 0 ? '-' : '+',
                                  adjusted < 0 ? -adjusted : adjusted);
        }
    }
    if (buf != NULL && cap > n) {
        memcpy(buf, out, n);
        buf[n] = 0;
    }
    return n;
}

cs_decimal128 cs_decimal_from_double(double v)
{
    if (isnan(v)) return dec_nan();
    if (isinf(v)) return dec_inf(v < 0);
    int sign = signbit(v) ? 1 : 0;
    if (v == 0) return dec_pack(sign, 0, 0);
    /* the shortest of 1..17 significant digits that reads back as v; printf rounds correctly,
     * and each candidate is re-read as "digits e exponent" (no radix character, so no locale) */
    u128 c = 0;
    int e = 0;
    for (int prec = 1; prec <= 17; prec++) {
        char txt[64], back[64];
        snprintf(txt, sizeof txt, "%.*e", prec - 1, fabs(v));
        u128 cc = 0;
        int nd = 0;
        const char *p = txt;
        for (; *p && *p != 'e'; p++) {
            if (*p >= '0' && *p <= '9') {
                cc = cc * 10 + (u128)(*p - '0');
                nd++;
            }
        }
        if (*p != 'e') break; /* cannot happen for a finite double */
        int x = atoi(p + 1);
        c = cc;
        e = x - (nd - 1);
        char dg[48];
        coeff_digits(cc, dg);
        snprintf(back, sizeof back, "%se%d", dg, e);
        if (strtod(back, NULL) == fabs(v)) break;
    }
    /* an integral value that fits 17 digits gets exponent 0 (100.0 is "100", not "1E+2") */
    if (e > 0 && digits128(c) + e <= 17) {
        c *= pow10_128(e);
        e = 0;
    }
    return dec_pack(sign, c, e);
}

/* ---- comparison ------------------------------------------------------------------------- */

/* Compares |a| and |b| of two finite decimals exactly. */
static int cmp_mag(const dnum *a, const dnum *b)
{
    if (a->c == 0 || b->c == 0) return (a->c != 0) - (b->c != 0);
    int da = digits128(a->c), db = digits128(b->c);
    int adja = a->e + da - 1, adjb = b->e + db - 1;
    if (adja != adjb) return adja < adjb ? -1 : 1;
    /* same magnitude: scale the one with the larger exponent; it then has the other's digit
     * count (at most 34), so it fits */
    u128 ca = a->c, cb = b->c;
    if (a->e > b->e) ca *= pow10_128(a->e - b->e);
    else if (b->e > a->e) cb *= pow10_128(b->e - a->e);
    return (ca > cb) - (ca < cb);
}

int cs_decimal_compare(const cs_decimal128 *pa, const cs_decimal128 *pb)
{
    dnum a = dec_decode(pa), b = dec_decode(pb);
    if (a.kind == DK_NAN || b.kind == DK_NAN) return (b.kind == DK_NAN) - (a.kind == DK_NAN);
    /* signum: -1, 0, 1; infinities are +-2 so they order beyond every finite value */
    int sa = a.kind == DK_INF ? (a.sign ? -2 : 2) : (a.c == 0 ? 0 : (a.sign ? -1 : 1));
    int sb = b.kind == DK_INF ? (b.sign ? -2 : 2) : (b.c == 0 ? 0 : (b.sign ? -1 : 1));
    if (sa != sb || sa == 0 || sa == 2 || sa == -2) return (sa > sb) - (sa < sb);
    int m = cmp_mag(&a, &b);
    return sa < 0 ? -m : m;
}

/*
 * Exact comparison of a decimal with a double (declared in value.c, which orders the numeric
 * types). Both are rationals: c * 10^e against m * 2^k. A cheap magnitude estimate settles
 * almost every case; the rest (within a factor of about 100) are compared as big integers of
 * at most ~1300 bits.
 */
#define BIG_LIMBS 80 /* 2560 bits: well above the ~1300 needed */

typedef struct big {
    uint32_t l[BIG_LIMBS]; /* little-endian limbs */
    int n;                 /* limbs in use */
} big;

static void big_set(big *b, u128 v)
{
    b->n = 0;
    while (v != 0) {
        b->l[b->n++] = (uint32_t)v;
        v >>= 32;
    }
}

static void big_mul_small(big *b, uint32_t m)
{
    uint64_t carry = 0;
    for (int i = 0; i < b->n; i++) {
        uint64_t p = (uint64_t)b->l[i] * m + carry;
        b->l[i] = (uint32_t)p;
        carry = p >> 32;
    }
    if (carry != 0 && b->n < BIG_LIMBS) b->l[b->n++] = (uint32_t)carry;
}

static void big_mul_pow10(big *b, int n)
{
    while (n >= 9) {
        big_mul_small(b, 1000000000u);
        n -= 9;
    }
    if (n > 0) big_mul_small(b, (uint32_t)pow10_128(n));
}

static void big_shl(big *b, int bits)
{
    while (bits >= 31) {
        big_mul_small(b, 1u << 31);
        bits -= 31;
    }
    if (bits > 0) big_mul_small(b, 1u << bits);
}

static int big_cmp(const big *a, const big *b)
{
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    for (int i = a->n - 1; i >= 0; i--) {
        if (a->l[i] != b->l[i]) return a->l[i] < b->l[i] ? -1 : 1;
    }
    return 0;
}

int decimal_compare_double(const cs_decimal128 *pa, double x)
{
    dnum a = dec_decode(pa);
    bool xnan = isnan(x);
    if (a.kind == DK_NAN || xnan) return (int)xnan - (int)(a.kind == DK_NAN);
    int sa = a.kind == DK_INF ? (a.sign ? -2 : 2) : (a.c == 0 ? 0 : (a.sign ? -1 : 1));
    int sx = isinf(x) ? (x < 0 ? -2 : 2) : (x == 0 ? 0 : (x < 0 ? -1 : 1));
    if (sa != sx || sa == 0 || sa == 2 || sa == -2) return (sa > sx) - (sa < sx);

    /* both finite, nonzero, same sign: compare magnitudes */
    int bexp;
    double f = frexp(fabs(x), &bexp); /* |x| = f * 2^bexp, f in [0.5, 1) */
    uint64_t m = (uint64_t)ldexp(f, 53);
    int k = bexp - 53; /* |x| = m * 2^k exactly */
    while ((m & 1) == 0) {
        m >>= 1;
        k++;
    }
    /* |a| is in [10^adj, 10^(adj+1)); |x| in [2^(bexp-1), 2^bexp) */
    int adj = a.e + digits128(a.c) - 1;
    const double log10_2 = 0.30102999566398120;
    int mag;
    if ((double)(adj + 1) < (double)(bexp - 1) * log10_2 - 0.01) {
        mag = -1;
    } else if ((double)adj > (double)bexp * log10_2 + 0.01) {
        mag = 1;
    } else {
        big A, B;
        big_set(&A, a.c);
        big_set(&B, m);
        if (a.e > 0) big_mul_pow10(&A, a.e);
        else big_mul_pow10(&B, -a.e);
        if (k > 0) big_shl(&B, k);
        else big_shl(&A, -k);
        mag = big_cmp(&A, &B);
    }
    return sa < 0 ? -mag : mag;
}

/* ---- arithmetic ------------------------------------------------------------------------- */

cs_decimal128 cs_decimal_add(const cs_decimal128 *pa, const cs_decimal128 *pb)
{
    dnum a = dec_decode(pa), b = dec_decode(pb);
    if (a.kind == DK_NAN || b.kind == DK_NAN) return dec_nan();
    if (a.kind == DK_INF || b.kind == DK_INF) {
        if (a.kind == DK_INF && b.kind == DK_INF && a.sign != b.sign) return dec_nan();
        return dec_inf(a.kind == DK_INF ? a.sign : b.sign);
    }
    /* a gets the larger exponent */
    if (a.e < b.e) {
        dnum t = a;
        a = b;
        b = t;
    }
    int diff = a.e - b.e;
    u256 A, B;
    long E;
    bool sticky = false;
    if (a.c == 0 && diff > 43) {
        /* the exact sum is b itself at exponent b.e */
        A = u256_from(0);
        B = u256_from(b.c);
        E = b.e;
    } else if (diff <= 43) {
        /* exact: a's coefficient scaled to b's exponent fits 256 bits */
        A = u256_mul_pow10(a.c, diff);
        B = u256_from(b.c);
        E = b.e;
    } else {
        /* b lies far below a's last kept digit: scale a by 10^43 (result has >= 44 digits, so
         * at least 10 are rounded away) and keep b's top digits plus a sticky bit */
        A = u256_mul_pow10(a.c, 43);
        int shift = diff - 43;
        u128 bc = b.c;
        if (shift > 34) {
            sticky = bc != 0;
            bc = 0;
        } else {
            u128 p = pow10_128(shift);
            sticky = bc % p != 0;
            bc /= p;
        }
        B = u256_from(bc);
        E = (long)a.e - 43;
    }
    int sign;
    u256 C;
    if (a.sign == b.sign) {
        C = u256_add(&A, &B);
        sign = a.sign;
    } else if (sticky) {
        /* A >= 10^43 > B + 1: |a| - (B + f) = (A - B - 1) + (1 - f) */
        u256 one = u256_from(1);
        C = u256_sub(&A, &B);
        C = u256_sub(&C, &one);
        sign = a.sign;
    } else if (u256_cmp(&A, &B) >= 0) {
        C = u256_sub(&A, &B);
        sign = a.sign;
    } else {
        C = u256_sub(&B, &A);
        sign = b.sign;
    }
    if (u256_is_zero(&C) && !sticky) sign = a.sign && b.sign; /* exact zero: +0 unless -0 + -0 */
    return dec_finish(sign, C, E, sticky);
}

cs_decimal128 cs_decimal_sub(const cs_decimal128 *a, const cs_decimal128 *b)
{
    cs_decimal128 nb = *b;
    if (!cs_decimal_is_nan(b)) nb.w[1] ^= 0x8000000000000000ull;
    return cs_decimal_add(a, &nb);
}

cs_decimal128 cs_decimal_mul(const cs_decimal128 *pa, const cs_decimal128 *pb)
{
    dnum a = dec_decode(pa), b = dec_decode(pb);
    if (a.kind == DK_NAN || b.kind == DK_NAN) return dec_nan();
    int sign = a.sign ^ b.sign;
    if (a.kind == DK_INF || b.kind == DK_INF) {
        if ((a.kind == DK_FINITE && a.c == 0) || (b.kind == DK_FINITE && b.c == 0)) return dec_nan();
        return dec_inf(sign);
    }
    u256 C = u256_mul128(a.c, b.c);
    return dec_finish(sign, C, (long)a.e + b.e, false);
}

cs_decimal128 cs_decimal_div(const cs_decimal128 *pa, const cs_decimal128 *pb)
{
    dnum a = dec_decode(pa), b = dec_decode(pb);
    if (a.kind == DK_NAN || b.kind == DK_NAN) return dec_nan();
    int sign = a.sign ^ b.sign;
    if (a.kind == DK_INF) {
        if (b.kind == DK_INF) return dec_nan();
        return dec_inf(sign);
    }
    if (b.kind == DK_INF) {
        dnum z = {DK_FINITE, sign, 0, EXP_MIN};
        return dec_encode(&z);
    }
    if (b.c == 0) {
        if (a.c == 0) return dec_nan();
        return dec_inf(sign);
    }
    long E = (long)a.e - b.e; /* the preferred exponent of an exact quotient */
    if (a.c == 0) return dec_finish(sign, u256_from(0), E, false);
    /* long division: one more quotient digit per step until the remainder is 0 (exact, at the
     * exponent nearest the preferred one) or there are 35 significant digits (the 35th and
     * the remainder then round exactly) */
    u128 q = a.c / b.c, r = a.c % b.c;
    while (r != 0 && digits128(q) < MAX_DIGITS + 1) {
        r *= 10; /* r < b.c < 2^113 */
        q = q * 10 + r / b.c;
        r %= b.c;
        E--;
    }
    return dec_finish(sign, u256_from(q), E, r != 0);
}
