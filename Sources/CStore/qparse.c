/*
 * qparse.c -- the query language: a lexer and a recursive-descent parser that turn predicate
 * text (Realm's syntax, as RealmSwift's filter() takes it) into the tree of qparse.h. Binding
 * names to the schema and running the query are the query engine's. Every error is CS_QUERY
 * with the offending token and its line:column; nothing here trusts its input.
 *
 * Invariants:
 *  1. The parser never reads past `len`; the text need not be NUL-terminated.
 *  2. Nesting is limited (QUERY_PARSE_DEPTH_MAX) so hostile input cannot exhaust the stack.
 */
#include "qparse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>

typedef enum tok_kind {
    T_END = 0, T_IDENT, T_AT,  /* @name */
    T_VAR,                     /* $name (subquery variable) */
    T_ARG,                     /* $0, %@, %K, %d, %f, %i */
    T_INT, T_FLOAT, T_STRING,
    T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
    T_AND, T_OR, T_NOT,
    T_LPAREN, T_RPAREN, T_LBRACE, T_RBRACE, T_LBRACKET, T_RBRACKET, T_COMMA, T_DOT,
    T_OID, T_UUID, T_TS, T_B64,
} tok_kind;

typedef struct tok {
    tok_kind kind;  /* what */
    size_t pos;     /* start */
    size_t len;     /* length in the text */
    int64_t i;      /* T_INT; T_ARG: argument index, or -1 for "next" (%@); T_TS: seconds */
    double d;       /* T_FLOAT */
    char *s;        /* T_IDENT, T_AT, T_VAR, T_STRING, T_B64 (decoded bytes) */
    size_t slen;    /* its length */
    int argkind;    /* T_ARG: 'v' value, 'K' key path */
    int32_t nsec;   /* T_TS */
    uint8_t bytes[16]; /* T_OID, T_UUID */
} tok;

typedef struct parser {
    const char *text;       /* the query */
    size_t len;             /* its length */
    size_t at;              /* lexer position */
    tok cur;                /* current token */
    const cs_value *args;   /* bound arguments */
    size_t nargs;           /* how many */
    size_t next_arg;        /* for %@-style placeholders */
    int depth;              /* nesting */
    int rc;                 /* first error */
} parser;

void qparse_where(const char *text, size_t pos, unsigned *line, unsigned *col)
{
    unsigned l = 1, c = 1;
    for (size_t i = 0; i < pos; i++) {
        if (text[i] == '\n') { l++; c = 1; }
        else if (((unsigned char)text[i] & 0xc0) != 0x80) c++;
    }
    *line = l;
    *col = c;
}

int qparse_vfail(const char *text, size_t pos, const char *fmt, va_list ap)
{
    char msg[300];
    vsnprintf(msg, sizeof msg, fmt, ap);
    unsigned line, col;
    qparse_where(text, pos, &line, &col);
    return cs_fail(CS_QUERY, 0, "%s at %u:%u", msg, line, col);
}

static int perr(parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(parser *p, size_t pos, const char *fmt, ...)
{
    if (p->rc) return p->rc;
    va_list ap;
    va_start(ap, fmt);
    p->rc = qparse_vfail(p->text, pos, fmt, ap);
    va_end(ap);
    return p->rc;
}

/* The text of the current token, shortened for messages. */
static const char *tok_text(parser *p, char *buf, size_t cap)
{
    if (p->cur.kind == T_END) return "end of input";
    size_t n = p->cur.len < cap - 3 ? p->cur.len : cap - 3;
    buf[0] = '\'';
    memcpy(buf + 1, p->text + p->cur.pos, n);
    buf[n + 1] = '\'';
    buf[n + 2] = 0;
    return buf;
}

/* ---- lexer ------------------------------------------------------------------------------ */

static bool ident_start(unsigned char c) { return isalpha(c) || c == '_' || c >= 0x80; }
static bool ident_char(unsigned char c) { return isalnum(c) || c == '_' || c >= 0x80; }

static char *dup_range(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    return r;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int lex_string(parser *p, char quote, tok *t)
{
    size_t i = p->at + 1;
    char *out = malloc(p->len - p->at + 1);
    if (!out) return NOMEM();
    size_t n = 0;
    for (;;) {
        if (i >= p->len) {
            free(out);
            return perr(p, p->at, "unterminated string");
        }
        char c = p->text[i++];
        if (c == quote) break;
        if (c == '\\') {
            if (i >= p->len) { free(out); return perr(p, p->at, "unterminated string"); }
            char e = p->text[i++];
            switch (e) {
            case 'n': out[n++] = '\n'; break;
            case 't': out[n++] = '\t'; break;
            case 'r': out[n++] = '\r'; break;
            case '0': out[n++] = 0; break;
            case 'u': {
                if (i + 4 > p->len) { free(out); return perr(p, i - 2, "bad \\u escape"); }
                unsigned cp = 0;
                for (int k = 0; k < 4; k++) {
                    int h = hexval(p->text[i + (size_t)k]);
                    if (h < 0) { free(out); return perr(p, i - 2, "bad \\u escape"); }
                    cp = cp * 16 + (unsigned)h;
                }
                i += 4;
                if (cp < 0x80) out[n++] = (char)cp;
                else if (cp < 0x800) { out[n++] = (char)(0xc0 | (cp >> 6)); out[n++] = (char)(0x80 | (cp & 0x3f)); }
                else { out[n++] = (char)(0xe0 | (cp >> 12)); out[n++] = (char)(0x80 | ((cp >> 6) & 0x3f)); out[n++] = (char)(0x80 | (cp & 0x3f)); }
                break;
            }
            default: out[n++] = e; break;
            }
            continue;
        }
        out[n++] = c;
    }
    out[n] = 0; /* also usable as a C string (map keys); slen is the real length */
    t->kind = T_STRING;
    t->s = out;
    t->slen = n;
    t->len = i - p->at;
    p->at = i;
    return CS_OK;
}

static bool word_is(const char *s, size_t n, const char *w)
{
    size_t m = strlen(w);
    if (n != m) return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != w[i]) return false;
    return true;
}

static int lex_number(parser *p, tok *t)
{
    size_t i = p->at;
    if (p->text[i] == '-' || p->text[i] == '+') i++;
    bool isf = false;
    if (i + 1 < p->len && p->text[i] == '0' && (p->text[i + 1] == 'x' || p->text[i + 1] == 'X')) {
        i += 2;
        size_t st = i;
        while (i < p->len && hexval(p->text[i]) >= 0) i++;
        if (i == st) return perr(p, p->at, "bad hexadecimal number");
    } else {
        while (i < p->len && isdigit((unsigned char)p->text[i])) i++;
        if (i < p->len && p->text[i] == '.' && i + 1 < p->len && isdigit((unsigned char)p->text[i + 1])) {
            isf = true;
            i++;
            while (i < p->len && isdigit((unsigned char)p->text[i])) i++;
        }
        if (i < p->len && (p->text[i] == 'e' || p->text[i] == 'E')) {
            size_t j = i + 1;
            if (j < p->len && (p->text[j] == '+' || p->text[j] == '-')) j++;
            if (j < p->len && isdigit((unsigned char)p->text[j])) {
                isf = true;
                i = j;
                while (i < p->len && isdigit((unsigned char)p->text[i])) i++;
            }
        }
    }
    if (i < p->len && ident_char((unsigned char)p->text[i])) return perr(p, p->at, "bad number");
    char buf[64];
    size_t n = i - p->at;
    if (n >= sizeof buf) {
        isf = true;
        n = sizeof buf - 1;
    }
    memcpy(buf, p->text + p->at, n);
    buf[n] = 0;
    t->len = i - p->at;
    p->at = i;
    errno = 0;
    if (!isf) {
        long long v = strtoll(buf, NULL, 0);
        if (errno == ERANGE) {
            t->kind = T_FLOAT;
            t->d = strtod(buf, NULL);
            return CS_OK;
        }
        t->kind = T_INT;
        t->i = v;
        return CS_OK;
    }
    t->kind = T_FLOAT;
    t->d = strtod(buf, NULL);
    return CS_OK;
}

/* oid(24 hex digits), uuid(8-4-4-4-12) */
static int lex_id(parser *p, tok *t, bool uuid, size_t word_end)
{
    size_t i = word_end;
    if (i >= p->len || p->text[i] != '(') return perr(p, p->at, "expected '(' after %s", uuid ? "uuid" : "oid");
    i++;
    int need = uuid ? 16 : 12, got = 0;
    while (i < p->len && p->text[i] != ')') {
        if (uuid && p->text[i] == '-') { i++; continue; }
        if (i + 1 >= p->len) break;
        int a = hexval(p->text[i]), b = hexval(p->text[i + 1]);
        if (a < 0 || b < 0 || got >= need) return perr(p, p->at, "bad %s literal", uuid ? "uuid" : "oid");
        t->bytes[got++] = (uint8_t)(a * 16 + b);
        i += 2;
    }
    if (i >= p->len || got != need) return perr(p, p->at, "bad %s literal", uuid ? "uuid" : "oid");
    t->kind = uuid ? T_UUID : T_OID;
    t->len = i + 1 - p->at;
    p->at = i + 1;
    return CS_OK;
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static int next_tok(parser *p)
{
    tok *t = &p->cur;
    free(t->s);
    memset(t, 0, sizeof *t);
    while (p->at < p->len && isspace((unsigned char)p->text[p->at])) p->at++;
    t->pos = p->at;
    if (p->at >= p->len) {
        t->kind = T_END;
        return CS_OK;
    }
    const char *s = p->text + p->at;
    size_t rem = p->len - p->at;
    char c = s[0];
#define OP(k, n) do { t->kind = (k); t->len = (n); p->at += (n); return CS_OK; } while (0)
    if (rem >= 2) {
        if (s[0] == '=' && s[1] == '=') OP(T_EQ, 2);
        if (s[0] == '!' && s[1] == '=') OP(T_NE, 2);
        if (s[0] == '<' && s[1] == '>') OP(T_NE, 2);
        if (s[0] == '<' && s[1] == '=') OP(T_LE, 2);
        if (s[0] == '=' && s[1] == '<') OP(T_LE, 2);
        if (s[0] == '>' && s[1] == '=') OP(T_GE, 2);
        if (s[0] == '=' && s[1] == '>') OP(T_GE, 2);
        if (s[0] == '&' && s[1] == '&') OP(T_AND, 2);
        if (s[0] == '|' && s[1] == '|') OP(T_OR, 2);
    }
    switch (c) {
    case '=': OP(T_EQ, 1);
    case '<': OP(T_LT, 1);
    case '>': OP(T_GT, 1);
    case '!': OP(T_NOT, 1);
    case '(': OP(T_LPAREN, 1);
    case ')': OP(T_RPAREN, 1);
    case '{': OP(T_LBRACE, 1);
    case '}': OP(T_RBRACE, 1);
    case '[': OP(T_LBRACKET, 1);
    case ']': OP(T_RBRACKET, 1);
    case ',': OP(T_COMMA, 1);
    case '.':
        if (rem >= 2 && isdigit((unsigned char)s[1])) return lex_number(p, t);
        OP(T_DOT, 1);
    case '\'': case '"': return lex_string(p, c, t);
    default: break;
    }
#undef OP
    if (c == '%') {
        if (rem >= 2 && strchr("@KdfiuxlsbD", s[1])) {
            t->kind = T_ARG;
            t->i = -1;
            t->argkind = s[1] == 'K' ? 'K' : 'v';
            t->len = 2;
            p->at += 2;
            return CS_OK;
        }
        return perr(p, p->at, "unknown placeholder '%.*s'", (int)(rem < 2 ? rem : 2), s);
    }
    if (c == '$') {
        size_t i = 1;
        if (i < rem && isdigit((unsigned char)s[i])) {
            int64_t v = 0;
            while (i < rem && isdigit((unsigned char)s[i])) {
                if (v > 1000000) return perr(p, p->at, "argument number too large");
                v = v * 10 + (s[i] - '0');
                i++;
            }
            t->kind = T_ARG;
            t->i = v;
            t->argkind = 'v';
            t->len = i;
            p->at += i;
            return CS_OK;
        }
        while (i < rem && ident_char((unsigned char)s[i])) i++;
        if (i == 1) return perr(p, p->at, "'$' must be followed by an argument number or a variable name");
        t->kind = T_VAR;
        t->s = dup_range(s, i);
        t->slen = i;
        t->len = i;
        p->at += i;
        return t->s ? CS_OK : NOMEM();
    }
    if (c == '@') {
        size_t i = 1;
        while (i < rem && ident_char((unsigned char)s[i])) i++;
        if (i == 1) return perr(p, p->at, "'@' must be followed by an operator name");
        t->kind = T_AT;
        t->s = dup_range(s + 1, i - 1);
        t->slen = i - 1;
        t->len = i;
        p->at += i;
        return t->s ? CS_OK : NOMEM();
    }
    if (isdigit((unsigned char)c) || ((c == '-' || c == '+') && rem >= 2 && (isdigit((unsigned char)s[1]) || s[1] == '.')))
        return lex_number(p, t);
    if (ident_start((unsigned char)c)) {
        size_t i = 1;
        while (i < rem && ident_char((unsigned char)s[i])) i++;
        /* special literals */
        if (word_is(s, i, "oid") && i < rem && s[i] == '(') return lex_id(p, t, false, p->at + i);
        if (word_is(s, i, "uuid") && i < rem && s[i] == '(') return lex_id(p, t, true, p->at + i);
        if (i == 3 && memcmp(s, "B64", 3) == 0 && i < rem && s[i] == '"') {
            size_t j = i + 1;
            uint8_t *out = malloc(rem);
            if (!out) return NOMEM();
            size_t n = 0;
            uint32_t acc = 0;
            int bits = 0;
            while (j < rem && s[j] != '"') {
                if (s[j] == '=') { j++; continue; }
                int v = b64val(s[j]);
                if (v < 0) { free(out); return perr(p, p->at, "bad base64 literal"); }
                acc = (acc << 6) | (uint32_t)v;
                bits += 6;
                if (bits >= 8) { bits -= 8; out[n++] = (uint8_t)(acc >> bits); }
                j++;
            }
            if (j >= rem) { free(out); return perr(p, p->at, "unterminated base64 literal"); }
            t->kind = T_B64;
            t->s = (char *)out;
            t->slen = n;
            t->len = j + 1;
            p->at += j + 1;
            return CS_OK;
        }
        if (c == 'T' && i > 1 && isdigit((unsigned char)s[1])) {
            /* T<seconds>:<nanoseconds> */
            size_t j = 1;
            int64_t sec = 0;
            while (j < rem && isdigit((unsigned char)s[j])) { sec = sec * 10 + (s[j] - '0'); j++; if (sec > (INT64_MAX / 10 - 10)) return perr(p, p->at, "timestamp out of range"); }
            if (j < rem && s[j] == ':') {
                j++;
                bool neg = j < rem && s[j] == '-';
                if (neg) j++;
                int64_t ns = 0;
                size_t st = j;
                while (j < rem && isdigit((unsigned char)s[j]) && ns < 1000000000) { ns = ns * 10 + (s[j] - '0'); j++; }
                if (j == st || ns >= 1000000000) return perr(p, p->at, "bad timestamp literal");
                t->kind = T_TS;
                t->i = sec;
                t->nsec = (int32_t)(neg ? -ns : ns);
                t->len = j;
                p->at += j;
                return CS_OK;
            }
        }
        t->kind = T_IDENT;
        t->s = dup_range(s, i);
        t->slen = i;
        t->len = i;
        p->at += i;
        return t->s ? CS_OK : NOMEM();
    }
    return perr(p, p->at, "unexpected character '%c'", isprint((unsigned char)c) ? c : '?');
}

/* ---- tree helpers ----------------------------------------------------------------------- */

void qnode_free(qnode *n)
{
    if (!n) return;
    qnode_free(n->a);
    qnode_free(n->b);
    qnode_free(n->c);
    for (size_t i = 0; i < n->nitems; i++) qnode_free(n->items[i]);
    free(n->items);
    for (size_t i = 0; i < n->nsteps; i++) {
        free(n->steps[i].name);
        free(n->steps[i].name2);
    }
    free(n->steps);
    free(n->owned);
    free(n->var);
    qnode_free(n->path);
    qnode_free(n->pred);
    free(n);
}

void qparsed_free(qparsed *q)
{
    if (!q) return;
    qnode_free(q->pred);
    for (size_t i = 0; i < q->nsort; i++) qnode_free(q->sort[i].path);
    free(q->sort);
    for (size_t i = 0; i < q->ndistinct; i++) qnode_free(q->distinct[i]);
    free(q->distinct);
    free(q->order);
    free(q);
}

static qnode *node_make(parser *p, qnode_kind k, size_t pos)
{
    qnode *n = calloc(1, sizeof *n);
    if (!n) {
        if (!p->rc) p->rc = NOMEM();
        return NULL;
    }
    n->kind = k;
    n->pos = pos;
    n->arg = -1;
    return n;
}

static bool is_kw(parser *p, const char *w)
{
    return p->cur.kind == T_IDENT && word_is(p->cur.s, p->cur.slen, w);
}

static int expect(parser *p, tok_kind k, const char *what)
{
    if (p->cur.kind != k) {
        char buf[64];
        return perr(p, p->cur.pos, "expected %s but found %s", what, tok_text(p, buf, sizeof buf));
    }
    return next_tok(p);
}

/* ---- operands --------------------------------------------------------------------------- */

static qnode *parse_or(parser *p);

static int set_const(parser *p, qnode *n, const cs_value *v)
{
    n->value = *v;
    if ((v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY) && v->v.bytes.len) {
        n->owned = malloc(v->v.bytes.len);
        if (!n->owned) return p->rc = NOMEM();
        memcpy(n->owned, v->v.bytes.ptr, v->v.bytes.len);
        n->value.v.bytes.ptr = n->owned;
    } else if (v->type == CS_TYPE_STRING || v->type == CS_TYPE_BINARY) {
        n->value.v.bytes.ptr = "";
    }
    return CS_OK;
}

static int add_step(parser *p, qnode *n, qstep_kind k, char *name, size_t pos)
{
    qstep *s = realloc(n->steps, (n->nsteps + 1) * sizeof *s);
    if (!s) {
        free(name);
        return p->rc = NOMEM();
    }
    n->steps = s;
    memset(&s[n->nsteps], 0, sizeof *s);
    s[n->nsteps].kind = k;
    s[n->nsteps].name = name;
    s[n->nsteps].pos = pos;
    n->nsteps++;
    return CS_OK;
}

static char *take_str(tok *t)
{
    char *s = t->s;
    t->s = NULL;
    return s;
}

/* A collection operator after '@' (or '.@'). */
static int parse_at(parser *p, qnode *n)
{
    size_t pos = p->cur.pos;
    const char *w = p->cur.s;
    size_t wl = p->cur.slen;
    qstep_kind k;
    if (word_is(w, wl, "count")) k = QS_COUNT;
    else if (word_is(w, wl, "size")) k = QS_COUNT;
    else if (word_is(w, wl, "min")) k = QS_MIN;
    else if (word_is(w, wl, "max")) k = QS_MAX;
    else if (word_is(w, wl, "sum")) k = QS_SUM;
    else if (word_is(w, wl, "avg")) k = QS_AVG;
    else if (word_is(w, wl, "allkeys")) k = QS_KEYS;
    else if (word_is(w, wl, "allvalues")) k = QS_VALUES;
    else if (word_is(w, wl, "type")) k = QS_TYPE;
    else if (word_is(w, wl, "links")) k = QS_LINKS;
    else return perr(p, pos, "unknown collection operator '@%.*s'", (int)(wl > 40 ? 40 : wl), w);
    TRY(next_tok(p));
    if (k == QS_LINKS) {
        /* @links.Class.property */
        TRY(expect(p, T_DOT, "'.' after @links"));
        if (p->cur.kind != T_IDENT) return perr(p, p->cur.pos, "expected a class name after @links.");
        char *cls = take_str(&p->cur);
        if (next_tok(p)) { free(cls); return p->rc; }
        if (p->cur.kind != T_DOT) { free(cls); return perr(p, p->cur.pos, "expected '.property' after @links.Class"); }
        if (next_tok(p)) { free(cls); return p->rc; }
        if (p->cur.kind != T_IDENT) { free(cls); return perr(p, p->cur.pos, "expected a property name after @links.Class."); }
        char *prop = take_str(&p->cur);
        if (next_tok(p)) { free(cls); free(prop); return p->rc; }
        if (add_step(p, n, QS_LINKS, cls, pos)) { free(prop); return p->rc; }
        n->steps[n->nsteps - 1].name2 = prop;
        return CS_OK;
    }
    return add_step(p, n, k, NULL, pos);
}

static qnode *parse_keypath(parser *p)
{
    qnode *n = node_make(p, QN_KEYPATH, p->cur.pos);
    if (!n) return NULL;
    if (p->cur.kind == T_AT) {
        if (parse_at(p, n)) goto fail;
    } else {
        char *name = take_str(&p->cur);
        if (add_step(p, n, QS_NAME, name, n->pos) || next_tok(p)) goto fail;
    }
    for (;;) {
        if (p->cur.kind == T_DOT) {
            if (next_tok(p)) goto fail;
            if (p->cur.kind == T_AT) {
                if (parse_at(p, n)) goto fail;
            } else if (p->cur.kind == T_IDENT) {
                size_t pos = p->cur.pos;
                if (add_step(p, n, QS_NAME, take_str(&p->cur), pos) || next_tok(p)) goto fail;
            } else {
                char buf[64];
                perr(p, p->cur.pos, "expected a property name after '.' but found %s", tok_text(p, buf, sizeof buf));
                goto fail;
            }
        } else if (p->cur.kind == T_AT) {
            if (parse_at(p, n)) goto fail;
        } else if (p->cur.kind == T_LBRACKET) {
            size_t pos = p->cur.pos;
            if (next_tok(p)) goto fail;
            char *key = NULL;
            size_t keylen = 0;
            if (p->cur.kind == T_STRING) {
                keylen = p->cur.slen;
                key = take_str(&p->cur);
            } else if (p->cur.kind == T_ARG) {
                int64_t ai = p->cur.i < 0 ? (int64_t)p->next_arg++ : p->cur.i;
                if ((size_t)ai >= p->nargs) { perr(p, p->cur.pos, "missing argument %lld", (long long)ai); goto fail; }
                const cs_value *a = &p->args[ai];
                if (a->type != CS_TYPE_STRING) { perr(p, p->cur.pos, "a map key argument must be a string"); goto fail; }
                keylen = a->v.bytes.len;
                key = dup_range(a->v.bytes.ptr, a->v.bytes.len);
            } else {
                perr(p, p->cur.pos, "expected a string key inside '[ ]'");
                goto fail;
            }
            if (!key) { p->rc = NOMEM(); goto fail; }
            if (add_step(p, n, QS_SUBSCRIPT, key, pos)) goto fail;
            n->steps[n->nsteps - 1].len = keylen;
            if (next_tok(p) || expect(p, T_RBRACKET, "']'")) goto fail;
        } else {
            break;
        }
    }
    return n;
fail:
    qnode_free(n);
    return NULL;
}

static qnode *parse_operand(parser *p);

static qnode *parse_list_inner(parser *p);

static qnode *parse_list(parser *p)
{
    if (++p->depth > QUERY_PARSE_DEPTH_MAX) {
        perr(p, p->cur.pos, "query nested too deeply");
        return NULL;
    }
    qnode *n = parse_list_inner(p);
    p->depth--;
    return n;
}

static qnode *parse_list_inner(parser *p)
{
    qnode *n = node_make(p, QN_LIST, p->cur.pos);
    if (!n || next_tok(p)) { qnode_free(n); return NULL; }
    if (p->cur.kind == T_RBRACE) {
        if (next_tok(p)) { qnode_free(n); return NULL; }
        return n;
    }
    for (;;) {
        qnode *x = parse_operand(p);
        if (!x) { qnode_free(n); return NULL; }
        qnode **it = realloc(n->items, (n->nitems + 1) * sizeof *it);
        if (!it) { qnode_free(x); qnode_free(n); p->rc = NOMEM(); return NULL; }
        n->items = it;
        n->items[n->nitems++] = x;
        if (p->cur.kind == T_COMMA) {
            if (next_tok(p)) { qnode_free(n); return NULL; }
            continue;
        }
        if (expect(p, T_RBRACE, "',' or '}'")) { qnode_free(n); return NULL; }
        return n;
    }
}

static qnode *parse_subquery(parser *p)
{
    if (p->depth + 1 > QUERY_PARSE_DEPTH_MAX) {
        perr(p, p->cur.pos, "query nested too deeply");
        return NULL;
    }
    size_t pos = p->cur.pos;
    qnode *n = node_make(p, QN_SUBQUERY, pos);
    if (!n) return NULL;
    if (next_tok(p) || expect(p, T_LPAREN, "'(' after SUBQUERY")) goto fail;
    if (p->cur.kind != T_IDENT && p->cur.kind != T_AT) { perr(p, p->cur.pos, "expected a collection key path in SUBQUERY"); goto fail; }
    if (!(n->path = parse_keypath(p))) goto fail;
    if (expect(p, T_COMMA, "',' after the SUBQUERY collection")) goto fail;
    if (p->cur.kind != T_VAR) { perr(p, p->cur.pos, "expected a $variable in SUBQUERY"); goto fail; }
    n->var = take_str(&p->cur);
    if (next_tok(p) || expect(p, T_COMMA, "',' after the SUBQUERY variable")) goto fail;
    if (!(n->pred = parse_or(p))) goto fail;
    if (expect(p, T_RPAREN, "')' to close SUBQUERY")) goto fail;
    if (p->cur.kind != T_DOT) { perr(p, p->cur.pos, "SUBQUERY must be followed by .@count"); goto fail; }
    if (next_tok(p)) goto fail;
    if (p->cur.kind != T_AT || !(word_is(p->cur.s, p->cur.slen, "count") || word_is(p->cur.s, p->cur.slen, "size"))) {
        perr(p, p->cur.pos, "SUBQUERY must be followed by .@count");
        goto fail;
    }
    if (next_tok(p)) goto fail;
    return n;
fail:
    qnode_free(n);
    return NULL;
}

static qnode *parse_operand(parser *p)
{
    tok *t = &p->cur;
    qnode *n;
    cs_value v;
    memset(&v, 0, sizeof v);
    switch (t->kind) {
    case T_INT: v = cs_int(t->i); break;
    case T_FLOAT: v = cs_double(t->d); break;
    case T_STRING: v = cs_string(t->s, t->slen); break;
    case T_B64: v = cs_binary(t->s, t->slen); break;
    case T_OID: v.type = CS_TYPE_OBJECTID; memcpy(v.v.oid, t->bytes, 12); break;
    case T_UUID: v.type = CS_TYPE_UUID; memcpy(v.v.uuid, t->bytes, 16); break;
    case T_TS: v = cs_timestamp(t->i, t->nsec); break;
    case T_ARG: {
        int64_t ai = t->i < 0 ? (int64_t)p->next_arg++ : t->i;
        if ((size_t)ai >= p->nargs) {
            perr(p, t->pos, "missing argument for %.*s (%zu given)", (int)t->len, p->text + t->pos, p->nargs);
            return NULL;
        }
        if (t->argkind == 'K') {
            /* %K: the argument is a key path, spliced in */
            const cs_value *a = &p->args[ai];
            if (a->type != CS_TYPE_STRING) { perr(p, t->pos, "%%K needs a string argument"); return NULL; }
            n = node_make(p, QN_KEYPATH, t->pos);
            if (!n) return NULL;
            const char *s = a->v.bytes.ptr;
            size_t len = a->v.bytes.len, st = 0;
            for (size_t i = 0; i <= len; i++) {
                if (i == len || s[i] == '.') {
                    if (i == st) { qnode_free(n); perr(p, t->pos, "empty key path in %%K argument"); return NULL; }
                    char *name = dup_range(s + st, i - st);
                    if (!name || add_step(p, n, s[st] == '@' ? QS_COUNT : QS_NAME, name, t->pos)) { qnode_free(n); return NULL; }
                    if (s[st] == '@') {
                        /* a collection operator in a %K path */
                        const char *w = s + st + 1;
                        size_t wl = i - st - 1;
                        qstep *q = &n->steps[n->nsteps - 1];
                        free(q->name);
                        q->name = NULL;
                        if (word_is(w, wl, "count") || word_is(w, wl, "size")) q->kind = QS_COUNT;
                        else if (word_is(w, wl, "min")) q->kind = QS_MIN;
                        else if (word_is(w, wl, "max")) q->kind = QS_MAX;
                        else if (word_is(w, wl, "sum")) q->kind = QS_SUM;
                        else if (word_is(w, wl, "avg")) q->kind = QS_AVG;
                        else if (word_is(w, wl, "type")) q->kind = QS_TYPE;
                        else if (word_is(w, wl, "allkeys")) q->kind = QS_KEYS;
                        else if (word_is(w, wl, "allvalues")) q->kind = QS_VALUES;
                        else { qnode_free(n); perr(p, t->pos, "unknown collection operator in %%K argument"); return NULL; }
                    }
                    st = i + 1;
                }
            }
            if (next_tok(p)) { qnode_free(n); return NULL; }
            return n;
        }
        const cs_value *a = &p->args[ai];
        if (a->type == CS_TYPE_LIST) {
            /* a list argument: {items...} */
            n = node_make(p, QN_LIST, t->pos);
            if (!n) return NULL;
            if (a->v.list.count > (1u << 24) || (a->v.list.count && !a->v.list.items)) {
                qnode_free(n);
                perr(p, t->pos, "bad list argument");
                return NULL;
            }
            n->items = calloc(a->v.list.count ? a->v.list.count : 1, sizeof *n->items);
            if (!n->items) { qnode_free(n); p->rc = NOMEM(); return NULL; }
            for (size_t i = 0; i < a->v.list.count; i++) {
                qnode *x = node_make(p, QN_CONST, t->pos);
                if (!x) { qnode_free(n); return NULL; }
                n->items[n->nitems++] = x;
                x->arg = (int)ai;
                if (a->v.list.items[i].type == CS_TYPE_LIST) { qnode_free(n); perr(p, t->pos, "lists inside list arguments are not supported"); return NULL; }
                if (set_const(p, x, &a->v.list.items[i])) { qnode_free(n); return NULL; }
            }
            if (next_tok(p)) { qnode_free(n); return NULL; }
            return n;
        }
        n = node_make(p, QN_CONST, t->pos);
        if (!n) return NULL;
        n->arg = (int)ai;
        if (set_const(p, n, a) || next_tok(p)) { qnode_free(n); return NULL; }
        return n;
    }
    case T_LBRACE: return parse_list(p);
    case T_AT: case T_VAR: return parse_keypath(p);
    case T_IDENT:
        if (is_kw(p, "true")) { v = cs_bool(true); break; }
        if (is_kw(p, "false")) { v = cs_bool(false); break; }
        if (is_kw(p, "nil") || is_kw(p, "null")) { v = cs_null(); break; }
        if (is_kw(p, "inf") || is_kw(p, "infinity")) { v = cs_double(INFINITY); break; }
        if (is_kw(p, "nan")) { v = cs_double(NAN); break; }
        if (is_kw(p, "subquery")) return parse_subquery(p);
        return parse_keypath(p);
    default: {
        char buf[64];
        perr(p, t->pos, "expected a value or a key path but found %s", tok_text(p, buf, sizeof buf));
        return NULL;
    }
    }
    n = node_make(p, QN_CONST, t->pos);
    if (!n) return NULL;
    if (set_const(p, n, &v) || next_tok(p)) { qnode_free(n); return NULL; }
    return n;
}

/* ---- predicates ------------------------------------------------------------------------- */

static bool op_of(parser *p, qop *op)
{
    switch (p->cur.kind) {
    case T_EQ: *op = QOP_EQ; return true;
    case T_NE: *op = QOP_NE; return true;
    case T_LT: *op = QOP_LT; return true;
    case T_LE: *op = QOP_LE; return true;
    case T_GT: *op = QOP_GT; return true;
    case T_GE: *op = QOP_GE; return true;
    case T_IDENT:
        if (is_kw(p, "beginswith")) { *op = QOP_BEGINSWITH; return true; }
        if (is_kw(p, "endswith")) { *op = QOP_ENDSWITH; return true; }
        if (is_kw(p, "contains")) { *op = QOP_CONTAINS; return true; }
        if (is_kw(p, "like")) { *op = QOP_LIKE; return true; }
        return false;
    default: return false;
    }
}

/* The options [c], [d], [cd] after a comparison operator or IN, if there are any. */
static int parse_options(parser *p, int *flags)
{
    if (p->cur.kind != T_LBRACKET) return CS_OK;
    size_t fpos = p->cur.pos;
    TRY(next_tok(p));
    if (p->cur.kind != T_IDENT) return perr(p, fpos, "expected [c], [d] or [cd]");
    for (size_t i = 0; i < p->cur.slen; i++) {
        char f = (char)tolower((unsigned char)p->cur.s[i]);
        if (f == 'c') *flags |= QF_CASE;
        else if (f == 'd') *flags |= QF_DIACRITIC;
        else return perr(p, fpos, "unknown comparison option '%c' (use [c], [d] or [cd])", f);
    }
    TRY(next_tok(p));
    return expect(p, T_RBRACKET, "']' after the comparison options");
}

/* Whether the current word is used as a property name ("any.@type == 'int'", "all IN {..}"):
 * it is followed by '.', '[', a comparison operator or an operator word, not by a key path. */
static bool word_is_name(parser *p)
{
    size_t i = p->at;
    while (i < p->len && isspace((unsigned char)p->text[i])) i++;
    if (i >= p->len) return true;
    if (strchr(".[=!<>", p->text[i])) return true;
    size_t st = i;
    while (i < p->len && ident_char((unsigned char)p->text[i])) i++;
    static const char *const ops[] = {"in", "between", "beginswith", "endswith", "contains", "like"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (word_is(p->text + st, i - st, ops[k])) return true;
    return false;
}

static qnode *parse_comparison(parser *p)
{
    size_t pos = p->cur.pos;
    qquant q = QQ_NONE;
    if (p->cur.kind == T_IDENT && word_is_name(p)) q = QQ_NONE;
    else if (is_kw(p, "any") || is_kw(p, "some")) q = QQ_ANY;
    else if (is_kw(p, "all")) q = QQ_ALL;
    else if (is_kw(p, "none")) q = QQ_NONE_OF;
    if (q != QQ_NONE && next_tok(p)) return NULL;
    qnode *lhs = parse_operand(p);
    if (!lhs) return NULL;
    if (q != QQ_NONE && lhs->kind != QN_KEYPATH) {
        qnode_free(lhs);
        perr(p, pos, "ANY, ALL and NONE must be followed by a key path");
        return NULL;
    }
    if (is_kw(p, "between")) {
        qnode *n = node_make(p, QN_BETWEEN, pos);
        if (!n) { qnode_free(lhs); return NULL; }
        n->quant = q;
        n->a = lhs;
        if (next_tok(p)) { qnode_free(n); return NULL; }
        if (p->cur.kind == T_ARG && p->cur.argkind == 'v') {
            /* BETWEEN %@ with a list argument of two values: BETWEEN {low, high} */
            size_t apos = p->cur.pos;
            qnode *l = parse_operand(p);
            if (!l) { qnode_free(n); return NULL; }
            if (l->kind != QN_LIST || l->nitems != 2) {
                if (l->kind == QN_LIST)
                    perr(p, apos, "BETWEEN needs a list argument of two values (low, high), not %zu", l->nitems);
                else
                    perr(p, apos, "BETWEEN needs {low, high} or a list argument of two values");
                qnode_free(l);
                qnode_free(n);
                return NULL;
            }
            n->b = l->items[0];
            n->c = l->items[1];
            l->nitems = 0;
            qnode_free(l);
            return n;
        }
        if (expect(p, T_LBRACE, "'{' after BETWEEN (or a list argument of two values)")) { qnode_free(n); return NULL; }
        if (!(n->b = parse_operand(p)) || expect(p, T_COMMA, "',' in BETWEEN {low, high}") ||
            !(n->c = parse_operand(p)) || expect(p, T_RBRACE, "'}' to close BETWEEN")) {
            qnode_free(n);
            return NULL;
        }
        return n;
    }
    if (is_kw(p, "in")) {
        qnode *n = node_make(p, QN_IN, pos);
        if (!n) { qnode_free(lhs); return NULL; }
        n->quant = q;
        n->a = lhs;
        if (next_tok(p) || parse_options(p, &n->flags) || !(n->b = parse_operand(p))) { qnode_free(n); return NULL; }
        return n;
    }
    qop op;
    if (!op_of(p, &op)) {
        char buf[64];
        qnode_free(lhs);
        perr(p, p->cur.pos, "expected a comparison operator but found %s", tok_text(p, buf, sizeof buf));
        return NULL;
    }
    qnode *n = node_make(p, QN_CMP, pos);
    if (!n) { qnode_free(lhs); return NULL; }
    n->quant = q;
    n->op = op;
    n->a = lhs;
    if (next_tok(p) || parse_options(p, &n->flags)) { qnode_free(n); return NULL; }
    if (!(n->b = parse_operand(p))) { qnode_free(n); return NULL; }
    return n;
}

static qnode *parse_not(parser *p)
{
    if (++p->depth > QUERY_PARSE_DEPTH_MAX) {
        perr(p, p->cur.pos, "query nested too deeply");
        return NULL;
    }
    qnode *r;
    size_t pos = p->cur.pos;
    if (p->cur.kind == T_NOT || is_kw(p, "not")) {
        if (next_tok(p)) return NULL;
        qnode *x = parse_not(p);
        if (!x) return NULL;
        r = node_make(p, QN_NOT, pos);
        if (!r) { qnode_free(x); return NULL; }
        r->a = x;
    } else if (p->cur.kind == T_LPAREN) {
        if (next_tok(p)) return NULL;
        r = parse_or(p);
        if (r && expect(p, T_RPAREN, "')'")) { qnode_free(r); r = NULL; }
    } else if (is_kw(p, "truepredicate")) {
        r = node_make(p, QN_TRUE, pos);
        if (r && next_tok(p)) { qnode_free(r); r = NULL; }
    } else if (is_kw(p, "falsepredicate")) {
        r = node_make(p, QN_FALSE, pos);
        if (r && next_tok(p)) { qnode_free(r); r = NULL; }
    } else {
        r = parse_comparison(p);
    }
    p->depth--;
    return r;
}

static qnode *parse_and(parser *p)
{
    qnode *l = parse_not(p);
    while (l && (p->cur.kind == T_AND || is_kw(p, "and"))) {
        size_t pos = p->cur.pos;
        if (next_tok(p)) { qnode_free(l); return NULL; }
        qnode *r = parse_not(p);
        if (!r) { qnode_free(l); return NULL; }
        qnode *n = node_make(p, QN_AND, pos);
        if (!n) { qnode_free(l); qnode_free(r); return NULL; }
        n->a = l;
        n->b = r;
        l = n;
    }
    return l;
}

static qnode *parse_or(parser *p)
{
    qnode *l = parse_and(p);
    while (l && (p->cur.kind == T_OR || is_kw(p, "or"))) {
        size_t pos = p->cur.pos;
        if (next_tok(p)) { qnode_free(l); return NULL; }
        qnode *r = parse_and(p);
        if (!r) { qnode_free(l); return NULL; }
        qnode *n = node_make(p, QN_OR, pos);
        if (!n) { qnode_free(l); qnode_free(r); return NULL; }
        n->a = l;
        n->b = r;
        l = n;
    }
    return l;
}

/* SORT(a ASC, b DESC) DISTINCT(a, b) LIMIT(n), in any order and number */
static int parse_trailer(parser *p, qparsed *q)
{
    for (;;) {
        if (p->cur.kind == T_END) return CS_OK;
        bool sort = is_kw(p, "sort"), distinct = is_kw(p, "distinct"), limit = is_kw(p, "limit");
        if (!sort && !distinct && !limit) {
            char buf[64];
            return perr(p, p->cur.pos, "expected SORT, DISTINCT, LIMIT or the end but found %s", tok_text(p, buf, sizeof buf));
        }
        TRY(next_tok(p));
        TRY(expect(p, T_LPAREN, "'('"));
        if (limit) {
            if (p->cur.kind != T_INT || p->cur.i < 0) return perr(p, p->cur.pos, "LIMIT needs a non-negative integer");
            q->limit = p->cur.i;
            TRY(next_tok(p));
            TRY(expect(p, T_RPAREN, "')' after LIMIT(n"));
            continue;
        }
        qorder *ord = realloc(q->order, (q->norder + 1) * sizeof *ord);
        if (!ord) return p->rc = NOMEM();
        q->order = ord;
        qorder *step = &q->order[q->norder];
        step->distinct = distinct;
        step->first = sort ? q->nsort : q->ndistinct;
        step->n = 0;
        for (;;) {
            if (p->cur.kind != T_IDENT && p->cur.kind != T_AT) return perr(p, p->cur.pos, "expected a key path in %s", sort ? "SORT" : "DISTINCT");
            qnode *path = parse_keypath(p);
            if (!path) return p->rc;
            if (sort) {
                bool asc = true;
                if (is_kw(p, "asc") || is_kw(p, "ascending")) { if (next_tok(p)) { qnode_free(path); return p->rc; } }
                else if (is_kw(p, "desc") || is_kw(p, "descending")) { asc = false; if (next_tok(p)) { qnode_free(path); return p->rc; } }
                qsort_key *k = realloc(q->sort, (q->nsort + 1) * sizeof *k);
                if (!k) { qnode_free(path); return p->rc = NOMEM(); }
                q->sort = k;
                q->sort[q->nsort].path = path;
                q->sort[q->nsort].ascending = asc;
                q->nsort++;
            } else {
                qnode **d = realloc(q->distinct, (q->ndistinct + 1) * sizeof *d);
                if (!d) { qnode_free(path); return p->rc = NOMEM(); }
                q->distinct = d;
                q->distinct[q->ndistinct++] = path;
            }
            step->n++;
            if (p->cur.kind == T_COMMA) { TRY(next_tok(p)); continue; }
            TRY(expect(p, T_RPAREN, "',' or ')'"));
            q->norder++;
            break;
        }
    }
}

int qparse(const char *text, size_t len, const cs_value *args, size_t nargs, qparsed **out)
{
    *out = NULL;
    parser p;
    memset(&p, 0, sizeof p);
    p.text = text ? text : "";
    p.len = text ? len : 0;
    p.args = args;
    p.nargs = nargs;
    qparsed *q = calloc(1, sizeof *q);
    if (!q) return NOMEM();
    q->limit = -1;
    if (next_tok(&p) == CS_OK) {
        if (p.cur.kind == T_END) perr(&p, 0, "empty query");
        else q->pred = parse_or(&p);
    }
    if (!p.rc && q->pred) parse_trailer(&p, q);
    free(p.cur.s);
    if (p.rc || !q->pred) {
        int rc = p.rc ? p.rc : cs_fail(CS_QUERY, 0, "malformed query");
        qparsed_free(q);
        return rc;
    }
    *out = q;
    return CS_OK;
}
