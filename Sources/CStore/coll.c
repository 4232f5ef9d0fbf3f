/*
 * coll.c -- List, Set and Map properties, and the lists and dictionaries nested in Mixed
 * values (docs/FORMAT.md §6.4). A collection's root lives in its owner's column (an LK_REFS
 * leaf) or in the `nested` part of a Mixed leaf; a map is an NF_REFS node [keys, values] of
 * two positional trees of equal size, keys sorted by bytes.
 *
 * Invariants:
 *  1. A set's elements are strictly increasing in cs_value_compare order; a map's keys are
 *     strictly increasing by bytes (shorter first on a common prefix).
 *  2. Links held in a top-level collection of links have backlinks (obj.c invariant 1); links
 *     inside nested Mixed collections do not (documented).
 */
#include "node.h"
#include "leaf.h"
#include "bptree.h"
#include "cluster.h"
#include "schema.h"
#include "snapshot.h"
#include "changes.h"
#include "obj.h"
#include "coll.h"

static leaf_spec elem_spec(const cs_coll *c)
{
    leaf_spec s = leaf_spec_of((cs_type)c->elem_type, c->nullable != 0, c->target);
    return s;
}

static leaf_spec key_spec(void) { return leaf_spec_of(CS_TYPE_STRING, false, 0); }
static leaf_spec mixed_spec(void) { return leaf_spec_of(CS_TYPE_MIXED, true, 0); }

static bool tracks_links(const cs_coll *c) { return c->depth == 0 && c->elem_type == CS_TYPE_LINK; }

/* ---- locating the root ------------------------------------------------------------------ */

static int map_parts(cs_txn *t, ref_t map, ref_t *keys, ref_t *vals)
{
    *keys = *vals = 0;
    if (!map) return CS_OK;
    node_hdr *h;
    TRY(node_at(t, map, &h));
    if (!(h->flags & NF_REFS) || h->count != 2) return CORRUPT("map node is malformed");
    *keys = node_refs(h)[0];
    *vals = node_refs(h)[1];
    return CS_OK;
}

static int key_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int r = n ? memcmp(a, b, n) : 0;
    if (r) return r;
    return an < bn ? -1 : an > bn;
}

/* Lower bound of key in a keys tree; *found when equal. */
static int map_search(cs_txn *t, ref_t keys, const char *k, size_t kn, uint64_t *pos, bool *found)
{
    leaf_spec ks = key_spec();
    uint64_t n;
    TRY(bpt_size(t, &ks, keys, &n));
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        cs_value v;
        TRY(bpt_get(t, &ks, keys, mid, &v));
        if (v.type != CS_TYPE_STRING) return CORRUPT("map key is not a string");
        if (key_cmp(v.v.bytes.ptr, v.v.bytes.len, k, kn) < 0) lo = mid + 1;
        else hi = mid;
    }
    *pos = lo;
    *found = false;
    if (lo < n) {
        cs_value v;
        TRY(bpt_get(t, &ks, keys, lo, &v));
        *found = key_cmp(v.v.bytes.ptr, v.v.bytes.len, k, kn) == 0;
    }
    return CS_OK;
}

/* Read-only root of the collection (0 when empty). */
static int coll_root(cs_coll *c, ref_t *root)
{
    cs_txn *t = c->obj.txn;
    col_def *cd;
    TRY(txn_col(t, c->obj.table, c->col, NULL, &cd));
    node_hdr *leaf;
    uint32_t row;
    /* the owner's leaf */
    {
        cs_obj *o = &c->obj;
        if (!(o->leaf && o->epoch == t->epoch)) {
            bool exists;
            TRY(cs_obj_check_exists(o, &exists));
            if (!exists) return cs_fail(CS_NOTFOUND, 0, "the collection's owner has been deleted");
        }
        leaf = (node_hdr *)o->leaf;
        row = o->row;
    }
    *root = 0;
    leaf_spec ls = leaf_spec_col(cd);
    TRY(cluster_leaf_get_ref(t, leaf, row, &ls, c->col, root));
    for (uint8_t d = 0; d < c->depth; d++) {
        ref_t cur = *root;
        *root = 0;
        if (!cur) return cs_fail(CS_NOTFOUND, 0, "the nested collection no longer exists");
        leaf_spec ms = mixed_spec();
        node_hdr *h;
        TRY(node_at(t, cur, &h));
        ref_t list = cur;
        uint64_t idx = (uint64_t)c->path[d].index;
        bool is_map = (h->flags & NF_CTX) != 0;
        if (is_map) {
            ref_t keys;
            TRY(map_parts(t, cur, &keys, &list));
            bool found;
            TRY(map_search(t, keys, c->path[d].key, c->path[d].key_len, &idx, &found));
            if (!found) return cs_fail(CS_NOTFOUND, 0, "the nested collection no longer exists");
        }
        cs_value v;
        TRY(bpt_get(t, &ms, list, idx, &v));
        if (v.type != CS_TYPE_LIST && v.type != CS_TYPE_DICT)
            return cs_fail(CS_NOTFOUND, 0, "the nested collection no longer exists");
        TRY(bpt_get_ref(t, &ms, list, idx, root));
    }
    return CS_OK;
}

/* Writable slot holding the collection's root ref. */
static int coll_slot(cs_coll *c, ref_t **out)
{
    cs_txn *t = c->obj.txn;
    TRY(txn_need_write(t));
    col_def *cd;
    TRY(txn_col(t, c->obj.table, c->col, NULL, &cd));
    ref_t *slot;
    uint32_t row;
    TRY(obj_col_slot(&c->obj, c->col, &slot, &row));
    TRY(node_cow(t, slot));
    uint64_t *e;
    if (cd->coll != CS_COLL_NONE) {
        e = node_refs((node_hdr *)txn_ptr(t, *slot));
        slot = &e[row];
    } else {
        e = node_refs((node_hdr *)txn_ptr(t, *slot));
        TRY(node_cow(t, &e[3]));
        slot = &node_refs((node_hdr *)txn_ptr(t, e[3]))[row];
    }
    for (uint8_t d = 0; d < c->depth; d++) {
        if (!*slot) return cs_fail(CS_NOTFOUND, 0, "the nested collection no longer exists");
        TRY(node_cow(t, slot));
        node_hdr *h = (node_hdr *)txn_ptr(t, *slot);
        ref_t *list = slot;
        uint64_t idx = (uint64_t)c->path[d].index;
        if (h->flags & NF_CTX) {
            bool found;
            TRY(map_search(t, node_refs(h)[0], c->path[d].key, c->path[d].key_len, &idx, &found));
            if (!found) return cs_fail(CS_NOTFOUND, 0, "the nested collection no longer exists");
            h = (node_hdr *)txn_ptr(t, *slot);
            list = &node_refs(h)[1];
        }
        leaf_spec ms = mixed_spec();
        ref_t *ls;
        uint64_t local;
        TRY(bpt_leaf_slot(t, &ms, list, idx, &ls, &local));
        TRY(node_cow(t, ls));
        uint64_t *me = node_refs((node_hdr *)txn_ptr(t, *ls));
        TRY(node_cow(t, &me[3]));
        slot = &node_refs((node_hdr *)txn_ptr(t, me[3]))[local];
    }
    *out = slot;
    return CS_OK;
}

/* Writable [keys, values] slots of a map (creating the map node). */
static int map_slots(cs_coll *c, ref_t **keys, ref_t **vals)
{
    ref_t *slot;
    TRY(coll_slot(c, &slot));
    cs_txn *t = c->obj.txn;
    if (!*slot) {
        TRY(node_new(t, NF_REFS | NF_CTX, 64, 2, slot));
    }
    TRY(node_cow(t, slot));
    uint64_t *e = node_refs((node_hdr *)txn_ptr(t, *slot));
    *keys = &e[0];
    *vals = &e[1];
    return CS_OK;
}

/* ---- opening ---------------------------------------------------------------------------- */

int cs_coll_open(cs_obj *obj, uint32_t col, cs_coll *out)
{
    col_def *cd;
    TRY(txn_col(obj->txn, obj->table, col, NULL, &cd));
    memset(out, 0, sizeof *out);
    out->obj = *obj;
    out->col = col;
    out->target = cd->target;
    if (cd->coll != CS_COLL_NONE) {
        out->kind = cd->coll;
        out->elem_type = cd->type;
        out->nullable = (cd->flags & CS_COL_NULLABLE) != 0;
        if (cd->type == CS_TYPE_LINK) out->nullable = cd->coll == CS_COLL_MAP;
        if (cd->type == CS_TYPE_MIXED) out->nullable = 1;
        bool exists;
        TRY(cs_obj_check_exists(&out->obj, &exists));
        if (!exists) return cs_fail(CS_NOTFOUND, 0, "the object has been deleted");
        return CS_OK;
    }
    if (cd->type != CS_TYPE_MIXED) return cs_fail(CS_TYPE, 0, "'%s' is not a collection", cd->name);
    cs_value v;
    TRY(cs_obj_get(obj, col, &v));
    if (v.type != CS_TYPE_LIST && v.type != CS_TYPE_DICT)
        return cs_fail(CS_TYPE, 0, "'%s' does not hold a nested collection", cd->name);
    out->kind = v.type == CS_TYPE_LIST ? CS_COLL_LIST : CS_COLL_MAP;
    out->elem_type = CS_TYPE_MIXED;
    out->nullable = 1;
    out->depth = 0;
    /* the collection's identity (cs_coll_identity), from the owner's leaf cs_obj_get positioned */
    out->obj = *obj;
    cs_obj *o = &out->obj;
    if (!(o->leaf && o->epoch == o->txn->epoch)) {
        bool exists;
        TRY(cs_obj_check_exists(o, &exists));
        if (!exists) return cs_fail(CS_NOTFOUND, 0, "the object has been deleted");
    }
    leaf_spec ls = leaf_spec_col(cd);
    uint32_t id;
    TRY(cluster_leaf_get_identity(o->txn, (node_hdr *)o->leaf, o->row, &ls, col, &id));
    out->identity = id;
    return CS_OK;
}

int cs_coll_open_nested(const cs_coll *parent, int64_t index, const char *key, size_t key_len, cs_coll *out)
{
    if (parent->elem_type != CS_TYPE_MIXED) return cs_fail(CS_TYPE, 0, "only Mixed collections nest");
    if (parent->depth + 1 >= (int)(sizeof parent->path / sizeof parent->path[0]))
        return cs_fail(CS_MISUSE, 0, "collections nest at most 7 levels deep");
    cs_coll p = *parent;
    cs_value v;
    if (p.kind == CS_COLL_MAP) {
        if (!key) return cs_fail(CS_MISUSE, 0, "a dictionary element is named by its key");
        TRY(cs_map_get(&p, key, key_len, &v));
    } else {
        if (index < 0) return cs_fail(CS_RANGE, 0, "negative index");
        TRY(cs_list_get(&p, (size_t)index, &v));
    }
    if (v.type != CS_TYPE_LIST && v.type != CS_TYPE_DICT)
        return cs_fail(CS_TYPE, 0, "the element does not hold a nested collection");
    /* the element's identity (cs_coll_identity) */
    uint32_t id = 0;
    {
        cs_txn *t = p.obj.txn;
        ref_t root;
        TRY(coll_root(&p, &root));
        leaf_spec ms = mixed_spec();
        if (p.kind == CS_COLL_MAP) {
            ref_t keys, vals;
            TRY(map_parts(t, root, &keys, &vals));
            uint64_t idx;
            bool found;
            TRY(map_search(t, keys, key, key_len, &idx, &found));
            if (found) TRY(bpt_get_identity(t, &ms, vals, idx, &id));
        } else {
            TRY(bpt_get_identity(t, &ms, root, (uint64_t)index, &id));
        }
    }
    *out = p;
    out->identity = id;
    out->path[p.depth].index = p.kind == CS_COLL_MAP ? -1 : index;
    out->path[p.depth].key = p.kind == CS_COLL_MAP ? key : NULL;
    out->path[p.depth].key_len = p.kind == CS_COLL_MAP ? key_len : 0;
    out->depth = p.depth + 1;
    out->kind = v.type == CS_TYPE_LIST ? CS_COLL_LIST : CS_COLL_MAP;
    out->elem_type = CS_TYPE_MIXED;
    out->nullable = 1;
    return CS_OK;
}

cs_coll_kind cs_coll_kind_of(const cs_coll *c) { return (cs_coll_kind)c->kind; }

uint32_t cs_coll_identity(const cs_coll *c) { return c->identity; }

int cs_coll_size(cs_coll *c, size_t *out)
{
    ref_t root;
    TRY(coll_root(c, &root));
    cs_txn *t = c->obj.txn;
    uint64_t n;
    if (c->kind == CS_COLL_MAP) {
        ref_t keys, vals;
        TRY(map_parts(t, root, &keys, &vals));
        leaf_spec ks = key_spec();
        TRY(bpt_size(t, &ks, keys, &n));
    } else {
        leaf_spec s = elem_spec(c);
        TRY(bpt_size(t, &s, root, &n));
    }
    *out = (size_t)n;
    return CS_OK;
}

/* ---- link bookkeeping ------------------------------------------------------------------- */

static int link_added(cs_coll *c, const cs_value *v)
{
    if (!tracks_links(c) || v->type != CS_TYPE_LINK) return CS_OK;
    return backlink_add(c->obj.txn, c->target, v->v.link.key, c->obj.table, c->col, c->obj.key);
}

static int link_removed(cs_coll *c, const cs_value *v)
{
    if (!tracks_links(c) || v->type != CS_TYPE_LINK) return CS_OK;
    TRY(backlink_remove(c->obj.txn, c->target, v->v.link.key, c->obj.table, c->col, c->obj.key));
    return link_dropped(c->obj.txn, c->target, v->v.link.key);
}

static int check_elem(cs_coll *c, const cs_value *v, bool allow_embedded)
{
    leaf_spec s = elem_spec(c);
    TRY(value_check(&s, v));
    cs_txn *t = c->obj.txn;
    if (v->type == CS_TYPE_LINK) {
        uint32_t tt = v->v.link.table;
        table_def *ttd = txn_table_live(t, tt);
        if (!ttd) return cs_fail(CS_NOTFOUND, 0, "no such table");
        if ((ttd->flags & CS_TABLE_EMBEDDED) && !allow_embedded)
            return cs_fail(CS_MISUSE, 0, "embedded objects are created with the *_embedded functions");
        bool ok;
        TRY(obj_exists_key(t, tt, v->v.link.key, &ok));
        if (!ok) return cs_fail(CS_NOTFOUND, 0, "the linked object does not exist");
    }
    return CS_OK;
}

/* A copy of v whose bytes survive writes (free *buf afterwards). */
static int value_copy(cs_value *v, void **buf)
{
    *buf = NULL;
    if (v->type != CS_TYPE_STRING && v->type != CS_TYPE_BINARY) return CS_OK;
    *buf = malloc(v->v.bytes.len ? v->v.bytes.len : 1);
    if (!*buf) return NOMEM();
    if (v->v.bytes.len) memcpy(*buf, v->v.bytes.ptr, v->v.bytes.len);
    v->v.bytes.ptr = *buf;
    return CS_OK;
}

/* ---- lists ------------------------------------------------------------------------------ */

/* The positional tree holding the elements (a map's values). */
static int elems_root(cs_coll *c, ref_t *root)
{
    ref_t r;
    TRY(coll_root(c, &r));
    if (c->kind == CS_COLL_MAP) {
        ref_t keys;
        return map_parts(c->obj.txn, r, &keys, root);
    }
    *root = r;
    return CS_OK;
}

static int elems_slot(cs_coll *c, ref_t **slot)
{
    if (c->kind == CS_COLL_MAP) {
        ref_t *keys;
        return map_slots(c, &keys, slot);
    }
    return coll_slot(c, slot);
}

int cs_list_get(cs_coll *c, size_t i, cs_value *out)
{
    ref_t root;
    TRY(elems_root(c, &root));
    leaf_spec s = elem_spec(c);
    TRY(bpt_get(c->obj.txn, &s, root, i, out));
    if (out->type == CS_TYPE_LINK && !tracks_links(c)) {
        bool ok = false;
        cs_txn *t = c->obj.txn;
        if (txn_table_live(t, out->v.link.table))
            TRY(obj_exists_key(t, out->v.link.table, out->v.link.key, &ok));
        if (!ok) out->type = CS_TYPE_NULL;
    }
    return CS_OK;
}

static int list_put(cs_coll *c, size_t i, const cs_value *v, bool insert)
{
    ref_t *slot;
    TRY(coll_slot(c, &slot));
    leaf_spec s = elem_spec(c);
    if (insert) TRY(bpt_insert(c->obj.txn, &s, slot, i, v));
    else TRY(bpt_set(c->obj.txn, &s, slot, i, v));
    return change_coll(c->obj.txn, c, insert ? CS_CHANGE_INSERT : CS_CHANGE_REPLACE, (int64_t)i, 0);
}

int cs_list_set(cs_coll *c, size_t i, const cs_value *v)
{
    TRY(txn_need_write(c->obj.txn));
    if (c->kind == CS_COLL_SET) return cs_fail(CS_MISUSE, 0, "sets have no positions to set");
    TRY(check_elem(c, v, false));
    if (c->kind == CS_COLL_MAP) {
        cs_value k, old;
        TRY(cs_map_get_at(c, i, &k, &old));
        void *kb;
        TRY(value_copy(&k, &kb));
        int rc = cs_map_set(c, k.v.bytes.ptr, k.v.bytes.len, v);
        free(kb);
        return rc;
    }
    cs_value old;
    TRY(cs_list_get(c, i, &old));
    TRY(list_put(c, i, v, false));
    TRY(link_added(c, v));
    return link_removed(c, &old);
}

int cs_list_insert(cs_coll *c, size_t i, const cs_value *v)
{
    TRY(txn_need_write(c->obj.txn));
    if (c->kind != CS_COLL_LIST) return cs_fail(CS_MISUSE, 0, "insert by position is for lists");
    TRY(check_elem(c, v, false));
    TRY(list_put(c, i, v, true));
    return link_added(c, v);
}

int cs_list_append(cs_coll *c, const cs_value *v)
{
    size_t n;
    TRY(cs_coll_size(c, &n));
    return cs_list_insert(c, n, v);
}

int cs_list_insert_embedded(cs_coll *c, size_t i, cs_obj *out)
{
    cs_txn *t = c->obj.txn;
    TRY(txn_need_write(t));
    if (c->kind != CS_COLL_LIST || !tracks_links(c)) return cs_fail(CS_MISUSE, 0, "not a list of links");
    table_def *tt;
    TRY(txn_table(t, c->target, &tt));
    if (!(tt->flags & CS_TABLE_EMBEDDED)) return cs_fail(CS_MISUSE, 0, "'%s' is not an embedded type", tt->name);
    size_t n;
    TRY(cs_coll_size(c, &n));
    if (i > n) return cs_fail(CS_RANGE, 0, "index %zu out of range (size %zu)", i, n);
    TRY(obj_create_row(t, c->target, out));
    cs_value v = cs_link(c->target, out->key);
    TRY(list_put(c, i, &v, true));
    TRY(link_added(c, &v));
    return cs_obj_open(t, c->target, v.v.link.key, out);
}

int cs_list_erase(cs_coll *c, size_t i)
{
    TRY(txn_need_write(c->obj.txn));
    cs_value old;
    if (c->kind == CS_COLL_MAP) {
        cs_value k;
        TRY(cs_map_get_at(c, i, &k, &old));
        void *kb;
        TRY(value_copy(&k, &kb));
        bool erased;
        int rc = cs_map_erase(c, k.v.bytes.ptr, k.v.bytes.len, &erased);
        free(kb);
        return rc;
    }
    TRY(cs_list_get(c, i, &old));
    ref_t *slot;
    TRY(coll_slot(c, &slot));
    leaf_spec s = elem_spec(c);
    TRY(bpt_erase(c->obj.txn, &s, slot, i));
    TRY(change_coll(c->obj.txn, c, CS_CHANGE_ERASE, (int64_t)i, 0));
    return link_removed(c, &old);
}

/* Takes element i out of the tree without freeing a nested collection it holds (whose identity
 * goes along). */
static int detach(cs_coll *c, size_t i, cs_value *v, void **buf, uint64_t *nested, uint32_t *identity)
{
    TRY(cs_list_get(c, i, v));
    TRY(value_copy(v, buf));
    *nested = 0;
    *identity = 0;
    if (v->type == CS_TYPE_LIST || v->type == CS_TYPE_DICT) {
        ref_t root;
        TRY(elems_root(c, &root));
        leaf_spec s = elem_spec(c);
        TRY(bpt_get_ref(c->obj.txn, &s, root, i, nested));
        TRY(bpt_get_identity(c->obj.txn, &s, root, i, identity));
        ref_t *slot;
        TRY(elems_slot(c, &slot));
        TRY(bpt_set_ref(c->obj.txn, &s, slot, i, 0));
    }
    return CS_OK;
}

static int attach(cs_coll *c, size_t i, const cs_value *v, uint64_t nested, uint32_t identity, bool insert)
{
    ref_t *slot;
    TRY(elems_slot(c, &slot));
    leaf_spec s = elem_spec(c);
    if (insert) TRY(bpt_insert(c->obj.txn, &s, slot, i, v));
    else TRY(bpt_set(c->obj.txn, &s, slot, i, v));
    if (nested) {
        TRY(elems_slot(c, &slot));
        TRY(bpt_set_ref(c->obj.txn, &s, slot, i, nested));
    }
    if (identity) {
        TRY(elems_slot(c, &slot));
        TRY(bpt_set_identity(c->obj.txn, &s, slot, i, identity));
    }
    return CS_OK;
}

/* The checks a move or swap of positions `a` and `b` shares: a writable list, both in range. */
static int check_pair(cs_coll *c, size_t a, size_t b, const char *what)
{
    TRY(txn_need_write(c->obj.txn));
    if (c->kind != CS_COLL_LIST) return cs_fail(CS_MISUSE, 0, "%s is for lists", what);
    size_t n;
    TRY(cs_coll_size(c, &n));
    if (a >= n || b >= n) return cs_fail(CS_RANGE, 0, "index out of range (size %zu)", n);
    return CS_OK;
}

int cs_list_move(cs_coll *c, size_t from, size_t to)
{
    TRY(check_pair(c, from, to, "move"));
    if (from == to) return CS_OK;
    cs_value v;
    void *buf;
    uint64_t nested;
    uint32_t identity;
    TRY(detach(c, from, &v, &buf, &nested, &identity));
    ref_t *slot;
    int rc = coll_slot(c, &slot);
    leaf_spec s = elem_spec(c);
    if (rc == CS_OK) rc = bpt_erase(c->obj.txn, &s, slot, from);
    if (rc == CS_OK) rc = attach(c, to, &v, nested, identity, true);
    free(buf);
    if (rc == CS_OK) rc = change_coll(c->obj.txn, c, CS_CHANGE_MOVE, (int64_t)from, (int64_t)to);
    return rc;
}

int cs_list_swap(cs_coll *c, size_t i, size_t j)
{
    TRY(check_pair(c, i, j, "swap"));
    if (i == j) return CS_OK;
    cs_value a, b;
    void *ba, *bb;
    uint64_t na, nb;
    uint32_t ia, ib;
    TRY(detach(c, i, &a, &ba, &na, &ia));
    int rc = detach(c, j, &b, &bb, &nb, &ib);
    if (rc != CS_OK) { free(ba); return rc; }
    rc = attach(c, i, &b, nb, ib, false);
    if (rc == CS_OK) rc = attach(c, j, &a, na, ia, false);
    free(ba);
    free(bb);
    if (rc == CS_OK) rc = change_coll(c->obj.txn, c, CS_CHANGE_SWAP, (int64_t)i, (int64_t)j);
    return rc;
}

int cs_coll_clear(cs_coll *c)
{
    cs_txn *t = c->obj.txn;
    TRY(txn_need_write(t));
    size_t n;
    TRY(cs_coll_size(c, &n));
    if (!n) return CS_OK;
    int64_t *targets = NULL;
    size_t nt = 0;
    if (tracks_links(c)) {
        targets = malloc(n * sizeof *targets);
        if (!targets) return NOMEM();
        for (size_t i = 0; i < n; i++) {
            cs_value v;
            int rc = cs_list_get(c, i, &v);
            if (rc != CS_OK) { free(targets); return rc; }
            if (v.type == CS_TYPE_LINK) targets[nt++] = v.v.link.key;
        }
    }
    ref_t *slot;
    int rc = coll_slot(c, &slot);
    if (rc == CS_OK) {
        node_free_tree(t, *slot);
        *slot = 0;
        rc = change_coll(t, c, CS_CHANGE_CLEAR, 0, 0);
    }
    for (size_t i = 0; i < nt && rc == CS_OK; i++)
        rc = backlink_remove(t, c->target, targets[i], c->obj.table, c->col, c->obj.key);
    for (size_t i = 0; i < nt && rc == CS_OK; i++) rc = link_dropped(t, c->target, targets[i]);
    free(targets);
    return rc;
}

static int set_nested_kind(cs_type kind)
{
    if (kind != CS_TYPE_LIST && kind != CS_TYPE_DICT) return cs_fail(CS_MISUSE, 0, "kind must be CS_TYPE_LIST or CS_TYPE_DICT");
    return CS_OK;
}

int cs_list_set_collection(cs_coll *c, size_t i, cs_type kind)
{
    TRY(txn_need_write(c->obj.txn));
    TRY(set_nested_kind(kind));
    if (c->elem_type != CS_TYPE_MIXED || c->kind != CS_COLL_LIST) return cs_fail(CS_TYPE, 0, "not a list of Mixed values");
    cs_value v;
    memset(&v, 0, sizeof v);
    v.type = kind;
    return list_put(c, i, &v, false);
}

/* ---- sets ------------------------------------------------------------------------------- */

static int set_search(cs_coll *c, const cs_value *v, uint64_t *pos, bool *found)
{
    ref_t root;
    TRY(coll_root(c, &root));
    leaf_spec s = elem_spec(c);
    uint64_t n;
    TRY(bpt_size(c->obj.txn, &s, root, &n));
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        cs_value x;
        TRY(bpt_get(c->obj.txn, &s, root, mid, &x));
        if (cs_value_compare(&x, v) < 0) lo = mid + 1;
        else hi = mid;
    }
    *pos = lo;
    *found = false;
    if (lo < n) {
        cs_value x;
        TRY(bpt_get(c->obj.txn, &s, root, lo, &x));
        *found = cs_value_compare(&x, v) == 0;
    }
    return CS_OK;
}

int cs_set_find(cs_coll *c, const cs_value *v, size_t *index)
{
    if (c->kind != CS_COLL_SET) return cs_fail(CS_MISUSE, 0, "not a set");
    uint64_t pos;
    bool found;
    TRY(set_search(c, v, &pos, &found));
    if (!found) return cs_fail(CS_NOTFOUND, 0, "not in the set");
    *index = (size_t)pos;
    return CS_OK;
}

int cs_set_insert(cs_coll *c, const cs_value *v, bool *inserted)
{
    TRY(txn_need_write(c->obj.txn));
    if (c->kind != CS_COLL_SET) return cs_fail(CS_MISUSE, 0, "not a set");
    TRY(check_elem(c, v, false));
    uint64_t pos;
    bool found;
    TRY(set_search(c, v, &pos, &found));
    if (inserted) *inserted = !found;
    if (found) return CS_OK;
    TRY(list_put(c, pos, v, true));
    return link_added(c, v);
}

int cs_set_erase(cs_coll *c, const cs_value *v, bool *erased)
{
    TRY(txn_need_write(c->obj.txn));
    if (c->kind != CS_COLL_SET) return cs_fail(CS_MISUSE, 0, "not a set");
    uint64_t pos;
    bool found;
    TRY(set_search(c, v, &pos, &found));
    if (erased) *erased = found;
    if (!found) return CS_OK;
    cs_value old;
    TRY(cs_list_get(c, pos, &old));
    ref_t *slot;
    TRY(coll_slot(c, &slot));
    leaf_spec s = elem_spec(c);
    TRY(bpt_erase(c->obj.txn, &s, slot, pos));
    TRY(change_coll(c->obj.txn, c, CS_CHANGE_ERASE, (int64_t)pos, 0));
    return link_removed(c, &old);
}

/* ---- maps ------------------------------------------------------------------------------- */

int cs_map_find(cs_coll *c, const char *key, size_t key_len, size_t *index)
{
    if (c->kind != CS_COLL_MAP) return cs_fail(CS_MISUSE, 0, "not a map");
    ref_t root, keys, vals;
    TRY(coll_root(c, &root));
    TRY(map_parts(c->obj.txn, root, &keys, &vals));
    uint64_t pos;
    bool found;
    TRY(map_search(c->obj.txn, keys, key, key_len, &pos, &found));
    if (!found) return cs_fail(CS_NOTFOUND, 0, "no key '%.*s'", (int)(key_len > 64 ? 64 : key_len), key);
    *index = (size_t)pos;
    return CS_OK;
}

int cs_map_get(cs_coll *c, const char *key, size_t key_len, cs_value *out)
{
    size_t i;
    TRY(cs_map_find(c, key, key_len, &i));
    return cs_list_get(c, i, out);
}

int cs_map_get_at(cs_coll *c, size_t i, cs_value *key, cs_value *value)
{
    if (c->kind != CS_COLL_MAP) return cs_fail(CS_MISUSE, 0, "not a map");
    ref_t root, keys, vals;
    TRY(coll_root(c, &root));
    TRY(map_parts(c->obj.txn, root, &keys, &vals));
    leaf_spec ks = key_spec();
    TRY(bpt_get(c->obj.txn, &ks, keys, i, key));
    return cs_list_get(c, i, value);
}

static int map_put(cs_coll *c, const char *key, size_t key_len, const cs_value *v, bool *was_new, cs_value *old)
{
    cs_txn *t = c->obj.txn;
    if (key_len > CS_MAX_BLOB) return cs_fail(CS_FULL, 0, "map key too long");
    ref_t *ks, *vs;
    TRY(map_slots(c, &ks, &vs));
    uint64_t pos;
    bool found;
    TRY(map_search(t, *ks, key, key_len, &pos, &found));
    leaf_spec kspec = key_spec(), vspec = elem_spec(c);
    *was_new = !found;
    if (found) {
        TRY(bpt_get(t, &vspec, *vs, pos, old));
        TRY(map_slots(c, &ks, &vs));
        TRY(bpt_set(t, &vspec, vs, pos, v));
        return change_coll(t, c, CS_CHANGE_REPLACE, (int64_t)pos, 0);
    }
    old->type = CS_TYPE_NULL;
    cs_value k = cs_string(key_len ? key : "", key_len);
    TRY(bpt_insert(t, &kspec, ks, pos, &k));
    TRY(map_slots(c, &ks, &vs));
    TRY(bpt_insert(t, &vspec, vs, pos, v));
    return change_coll(t, c, CS_CHANGE_INSERT, (int64_t)pos, 0);
}

int cs_map_set(cs_coll *c, const char *key, size_t key_len, const cs_value *v)
{
    TRY(txn_need_write(c->obj.txn));
    if (c->kind != CS_COLL_MAP) return cs_fail(CS_MISUSE, 0, "not a map");
    TRY(check_elem(c, v, false));
    bool was_new;
    cs_value old;
    TRY(map_put(c, key, key_len, v, &was_new, &old));
    TRY(link_added(c, v));
    return link_removed(c, &old);
}

int cs_map_set_embedded(cs_coll *c, const char *key, size_t key_len, cs_obj *out)
{
    cs_txn *t = c->obj.txn;
    TRY(txn_need_write(t));
    if (c->kind != CS_COLL_MAP || !tracks_links(c)) return cs_fail(CS_MISUSE, 0, "not a map of links");
    table_def *tt;
    TRY(txn_table(t, c->target, &tt));
    if (!(tt->flags & CS_TABLE_EMBEDDED)) return cs_fail(CS_MISUSE, 0, "'%s' is not an embedded type", tt->name);
    TRY(obj_create_row(t, c->target, out));
    cs_value v = cs_link(c->target, out->key);
    bool was_new;
    cs_value old;
    TRY(map_put(c, key, key_len, &v, &was_new, &old));
    TRY(link_added(c, &v));
    TRY(link_removed(c, &old));
    return cs_obj_open(t, c->target, v.v.link.key, out);
}

int cs_map_set_collection(cs_coll *c, const char *key, size_t key_len, cs_type kind)
{
    TRY(txn_need_write(c->obj.txn));
    TRY(set_nested_kind(kind));
    if (c->elem_type != CS_TYPE_MIXED || c->kind != CS_COLL_MAP) return cs_fail(CS_TYPE, 0, "not a dictionary of Mixed values");
    cs_value v;
    memset(&v, 0, sizeof v);
    v.type = kind;
    bool was_new;
    cs_value old;
    return map_put(c, key, key_len, &v, &was_new, &old);
}

int cs_map_erase(cs_coll *c, const char *key, size_t key_len, bool *erased)
{
    cs_txn *t = c->obj.txn;
    TRY(txn_need_write(t));
    if (c->kind != CS_COLL_MAP) return cs_fail(CS_MISUSE, 0, "not a map");
    ref_t *ks, *vs;
    TRY(map_slots(c, &ks, &vs));
    uint64_t pos;
    bool found;
    TRY(map_search(t, *ks, key, key_len, &pos, &found));
    if (erased) *erased = found;
    if (!found) return CS_OK;
    leaf_spec kspec = key_spec(), vspec = elem_spec(c);
    cs_value old;
    TRY(bpt_get(t, &vspec, *vs, pos, &old));
    TRY(bpt_erase(t, &kspec, ks, pos));
    TRY(map_slots(c, &ks, &vs));
    TRY(bpt_erase(t, &vspec, vs, pos));
    TRY(change_coll(t, c, CS_CHANGE_ERASE, (int64_t)pos, 0));
    if (!*ks && !*vs) {
        ref_t *slot;
        TRY(coll_slot(c, &slot));
        node_free(t, *slot);
        *slot = 0;
    }
    return link_removed(c, &old);
}

int cs_obj_set_collection(cs_obj *obj, uint32_t col, cs_type kind)
{
    cs_txn *t = obj->txn;
    TRY(txn_need_write(t));
    TRY(set_nested_kind(kind));
    col_def *cd;
    TRY(txn_col(t, obj->table, col, NULL, &cd));
    if (cd->type != CS_TYPE_MIXED || cd->coll != CS_COLL_NONE) return cs_fail(CS_TYPE, 0, "'%s' is not a Mixed property", cd->name);
    cs_value v;
    memset(&v, 0, sizeof v);
    v.type = kind;
    return obj_col_put(obj, col, cd, &v);
}

/* ---- links during deletion (obj.c) ------------------------------------------------------ */

/* Removes every link from (table, key, col) to `target` without touching target's backlinks. */
int coll_unlink_all(cs_txn *t, uint32_t table, int64_t key, uint32_t col, int64_t target)
{
    cs_obj o;
    int rc = cs_obj_open(t, table, key, &o);
    if (rc == CS_NOTFOUND) return CS_OK;
    TRY(rc);
    col_def *cd;
    TRY(txn_col(t, table, col, NULL, &cd));
    if (cd->coll == CS_COLL_NONE) {
        cs_value nul = cs_null();
        return obj_col_put(&o, col, cd, &nul);
    }
    cs_coll c;
    TRY(cs_coll_open(&o, col, &c));
    size_t n;
    TRY(cs_coll_size(&c, &n));
    leaf_spec s = elem_spec(&c);
    for (size_t i = n; i-- > 0;) {
        cs_value v;
        ref_t root;
        TRY(elems_root(&c, &root));
        TRY(bpt_get(t, &s, root, i, &v));
        if (v.type != CS_TYPE_LINK || v.v.link.key != target) continue;
        if (c.kind == CS_COLL_MAP) {
            cs_value nul = cs_null();
            ref_t *slot;
            TRY(elems_slot(&c, &slot));
            TRY(bpt_set(t, &s, slot, i, &nul));
            TRY(change_coll(t, &c, CS_CHANGE_REPLACE, (int64_t)i, 0));
        } else {
            ref_t *slot;
            TRY(coll_slot(&c, &slot));
            TRY(bpt_erase(t, &s, slot, i));
            TRY(change_coll(t, &c, CS_CHANGE_ERASE, (int64_t)i, 0));
        }
    }
    return CS_OK;
}

/* Drops the backlinks of every link held in (table, key, col); embedded targets are deleted. */
int coll_drop_links(cs_txn *t, uint32_t table, int64_t key, uint32_t col)
{
    cs_obj o;
    TRY(cs_obj_open(t, table, key, &o));
    col_def *cd;
    TRY(txn_col(t, table, col, NULL, &cd));
    uint32_t target = cd->target;
    if (cd->coll == CS_COLL_NONE) {
        cs_value v;
        TRY(cs_obj_get(&o, col, &v));
        if (v.type != CS_TYPE_LINK) return CS_OK;
        cs_value nul = cs_null();
        TRY(obj_col_put(&o, col, cd, &nul));
        TRY(backlink_remove(t, target, v.v.link.key, table, col, key));
        return link_dropped(t, target, v.v.link.key);
    }
    cs_coll c;
    TRY(cs_coll_open(&o, col, &c));
    return cs_coll_clear(&c);
}
