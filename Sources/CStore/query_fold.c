/*
 * query_fold.c -- the string rules of [c] and [d] for U+0000..U+017F (docs/ARCHITECTURE.md,
 * Values and their order): Unicode simple case folding, removal of the combining marks of the
 * canonical decomposition, the tolerant UTF-8 decoder the scan reads strings with, LIKE
 * matching over folded code points, and, for the index plans of [c] conditions, the code
 * points that fold alike and the byte spellings the decoder reads as one code point.
 *
 * Invariants:
 *  1. The decoder never reads past n bytes, and every byte sequence decodes (an invalid byte
 *     decodes as itself), so folding never fails on bad UTF-8.
 *  2. query_fold_class and query_spellings describe exactly what query_fold_case and
 *     query_utf8_next accept, so index ranges built from them hold every match of the scan.
 */
#include "query_int.h"

/* Unicode simple case folding (CaseFolding.txt, statuses C and S) for U+0000..U+017F. */
uint32_t query_fold_case(uint32_t c)
{
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c == 0xB5) return 0x3BC; /* micro sign folds to Greek small mu */
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    if (c == 0x130 || c == 0x131) return c; /* dotted I and dotless i have no simple folding */
    if (c == 0x17F) return 's';              /* long s */
    if (c >= 0x100 && c <= 0x137) return c | 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
    if (c >= 0x14A && c <= 0x177) return c | 1;
    if (c == 0x178) return 0xFF;
    return c;
}

static uint32_t strip_mark(uint32_t c)
{
    static const char latin1[] = "AAAAAAACEEEEIIII" "DNOOOOO*OUUUUYTs" "aaaaaaaceeeeiiii" "dnooooo/ouuuuyty";
    if (c >= 0xC0 && c <= 0xFF) {
        char b = latin1[c - 0xC0];
        if (b == '*' || b == '/' || c == 0xC6 || c == 0xE6 || c == 0xDF || c == 0xDE || c == 0xFE || c == 0xD0 ||
            c == 0xF0 || c == 0xD8 || c == 0xF8)
            return c;
        return (uint32_t)b;
    }
    if (c < 0x100 || c > 0x17F) return c;
    static const struct { uint16_t from, to; char upper, lower; } ranges[] = {
        /* letters whose canonical decomposition is a base letter plus marks; letters with a
         * stroke (Đ Ħ Ł Ŧ), dotless ı and compatibility-only forms (Ŀ ŉ ſ) have none */
        {0x100, 0x105, 'A', 'a'}, {0x106, 0x10D, 'C', 'c'}, {0x10E, 0x10F, 'D', 'd'}, {0x112, 0x11B, 'E', 'e'},
        {0x11C, 0x123, 'G', 'g'}, {0x124, 0x125, 'H', 'h'}, {0x128, 0x130, 'I', 'i'}, {0x134, 0x135, 'J', 'j'},
        {0x136, 0x137, 'K', 'k'}, {0x139, 0x13E, 'L', 'l'}, {0x143, 0x148, 'N', 'n'}, {0x14C, 0x151, 'O', 'o'},
        {0x154, 0x159, 'R', 'r'}, {0x15A, 0x161, 'S', 's'}, {0x162, 0x165, 'T', 't'}, {0x168, 0x173, 'U', 'u'},
        {0x174, 0x175, 'W', 'w'}, {0x176, 0x178, 'Y', 'y'}, {0x179, 0x17E, 'Z', 'z'},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (c >= ranges[i].from && c <= ranges[i].to) {
            if (c == 0x130) return 'I';
            if (c == 0x178) return 'Y';
            /* within a range upper and lower case alternate, upper first (odd-start ranges
             * [0x139..] and [0x179..] start with upper at the odd code point) */
            bool upper = ((c - ranges[i].from) % 2) == 0;
            return (uint32_t)(upper ? ranges[i].upper : ranges[i].lower);
        }
    return c;
}

/* Decodes one UTF-8 code point (invalid bytes decode as themselves). */
uint32_t query_utf8_next(const uint8_t *s, size_t n, size_t *i)
{
    uint8_t b = s[*i];
    if (b < 0x80 || *i + 1 >= n || (b & 0xE0) != 0xC0 || (s[*i + 1] & 0xC0) != 0x80) {
        if (b >= 0xE0 && b < 0xF0 && *i + 2 < n && (s[*i + 1] & 0xC0) == 0x80 && (s[*i + 2] & 0xC0) == 0x80) {
            uint32_t c = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[*i + 1] & 0x3F) << 6) | (s[*i + 2] & 0x3F);
            *i += 3;
            return c;
        }
        (*i)++;
        return b;
    }
    uint32_t c = ((uint32_t)(b & 0x1F) << 6) | (s[*i + 1] & 0x3F);
    *i += 2;
    return c;
}

/* Folds a string into `out` as 32-bit code points. */
uint32_t *query_fold(const void *p, size_t n, int flags, size_t *len)
{
    uint32_t *o = malloc((n + 1) * sizeof *o);
    if (!o) return NULL;
    size_t k = 0;
    const uint8_t *s = p;
    for (size_t i = 0; i < n;) {
        uint32_t c = query_utf8_next(s, n, &i);
        if (flags & QF_DIACRITIC) c = strip_mark(c);
        if (flags & QF_CASE) c = query_fold_case(c);
        o[k++] = c;
    }
    *len = k;
    return o;
}

bool query_like_match(const uint32_t *s, size_t sn, const uint32_t *p, size_t pn)
{
    size_t si = 0, pi = 0, star = SIZE_MAX, mark = 0;
    while (si < sn) {
        if (pi < pn && (p[pi] == '?' || p[pi] == s[si])) { si++; pi++; }
        else if (pi < pn && p[pi] == '*') { star = pi++; mark = si; }
        else if (star != SIZE_MAX) { pi = star + 1; si = ++mark; }
        else return false;
    }
    while (pi < pn && p[pi] == '*') pi++;
    return pi == pn;
}

void query_spellings(uint32_t c, spelling *valid, size_t *nv, spelling *odd, size_t *no)
{
    spelling one = {{(uint8_t)c, 0, 0}, 1};
    spelling two = {{(uint8_t)(0xC0 | (c >> 6)), (uint8_t)(0x80 | (c & 0x3F)), 0}, 2};
    spelling three = {{(uint8_t)(0xE0 | (c >> 12)), (uint8_t)(0x80 | ((c >> 6) & 0x3F)), (uint8_t)(0x80 | (c & 0x3F))}, 3};
    if (c < 0x80) {
        valid[(*nv)++] = one;
        odd[(*no)++] = two;
        odd[(*no)++] = three;
    } else if (c < 0x800) {
        valid[(*nv)++] = two;
        if (c < 0x100) odd[(*no)++] = one;
        odd[(*no)++] = three;
    } else {
        valid[(*nv)++] = three;
    }
}

/* The code points that query_fold (query_fold_case) to what c folds to, c first; at most 8. */
size_t query_fold_class(uint32_t c, uint32_t *out)
{
    uint32_t f = query_fold_case(c);
    size_t n = 0;
    out[n++] = c;
    for (uint32_t x = 0; x <= 0x180 && n < 8; x++) {
        uint32_t y = x == 0x180 ? 0x3BC : x; /* U+00B5 folds to U+03BC, outside the table */
        if (y != c && query_fold_case(y) == f) out[n++] = y;
    }
    return n;
}
