/*
 * snapshot.c -- what a transaction reads, for every layer above the nodes: the slots of the
 * top node of its version (docs/FORMAT.md §4), and the definitions of its schema's tables and
 * columns (txn_table, txn_col; schema.h has the in-memory schema). A write transaction changes
 * a top slot through txn_top_slot, which copies the top node first.
 *
 * Invariants:
 *  1. txn_top_get never trusts the top node: a malformed one, or a slot that must hold a number
 *     and holds a ref, is CS_CORRUPT.
 *  2. Only a WRITE transaction gets a writable slot; the top node it writes is its own copy.
 */
#include "snapshot.h"

int txn_need_write(cs_txn *t)
{
    if (!t->writing) return cs_fail(CS_READONLY, 0, "cannot modify outside a write transaction");
    return CS_OK;
}

/* ---- top node ----------------------------------------------------------------------------- */

int txn_top_get(cs_txn *t, int which, uint64_t *out)
{
    node_hdr *h;
    TRY(node_at(t, t->top, &h));
    if (!(h->flags & NF_REFS)) return CORRUPT("top node is malformed");
    *out = (uint32_t)which < h->count ? node_refs(h)[which] : 0;
    if (*out && !tagged(*out) && (which == TOP_SIZE || which == TOP_VERSION || which == TOP_SCHEMA_VERSION))
        return CORRUPT("top slot %d should hold a number", which);
    return CS_OK;
}

int txn_top_slot(cs_txn *t, int which, ref_t **slot)
{
    TRY(txn_need_write(t));
    TRY(node_cow(t, &t->top));
    node_hdr *h = (node_hdr *)txn_ptr(t, t->top);
    /* a top has the first TOP_SLOTS slots; an optional one past them is added (0) when used */
    uint64_t want = which < TOP_SLOTS ? TOP_SLOTS : (uint64_t)which + 1;
    if (h->count < want) {
        uint64_t n = h->count;
        TRY(node_reserve(t, &t->top, want, 64));
        h = (node_hdr *)txn_ptr(t, t->top);
        for (uint64_t i = n; i < want; i++) node_refs(h)[i] = (i == TOP_SCHEMA_VERSION) ? tag_int(0) : 0;
        h->count = want;
    }
    *slot = &node_refs(h)[which];
    return CS_OK;
}

/* ---- schema ------------------------------------------------------------------------------- */

int txn_table(cs_txn *t, uint32_t table, table_def **out)
{
    if (table >= t->schema->ntables || !t->schema->tables[table].live)
        return cs_fail(CS_NOTFOUND, 0, "no table with key %u", table);
    *out = &t->schema->tables[table];
    return CS_OK;
}

int txn_col(cs_txn *t, uint32_t table, uint32_t col, table_def **tbl, col_def **out)
{
    table_def *td = NULL;
    TRY(txn_table(t, table, &td));
    if (col >= td->ncols || !td->cols[col].live)
        return cs_fail(CS_NOTFOUND, 0, "no column %u in table '%s'", col, td->name);
    if (tbl) *tbl = td;
    *out = &td->cols[col];
    return CS_OK;
}
