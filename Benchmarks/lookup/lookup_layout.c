/*
 * lookup_layout.c -- the shape of a table's cluster tree and where its leaves lie, behind the
 * counts in docs/benchmarks/README.md ("scale.pk.get to 100M", "Predicted leaves"). Built with the
 * core's sources and its private headers (`make lookup-layout`).
 *
 *   lookup-layout FILE [TABLE]   for table TABLE (default S, the lookup loop's) prints the nodes
 *                                of each level of its cluster tree and their children, and, for
 *                                K = 3, 4, 6 and 8, how many of the lowest inner nodes start with
 *                                K children one stride apart (at most 64 KiB: cluster.c,
 *                                predict_child) and how many of those nodes' children lie where
 *                                child 0 plus that stride times their position says
 */
#include "cluster.h"
#include "node.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEVELS 24

static uint64_t nodes_at[LEVELS], children_at[LEVELS];
static const int ks[] = {3, 4, 6, 8};
static uint64_t lowest, uniform[4], predicted[4], under[4];

static int walk(cs_txn *t, ref_t r, int depth)
{
    if (depth >= LEVELS) return 1;
    node_hdr *h;
    if (node_at(t, r, &h) != CS_OK) return 1;
    nodes_at[depth]++;
    if (!(h->flags & NF_INNER)) return 0;
    uint64_t n = cluster_inner_children(h);
    children_at[depth] += n;
    node_hdr *c0;
    if (n == 0 || node_at(t, cluster_inner_child(h, 0), &c0) != CS_OK) return 1;
    if (!(c0->flags & NF_INNER)) {
        lowest++;
        for (int i = 0; i < 4; i++) {
            int k = ks[i];
            if (n < (uint64_t)k) continue;
            uint64_t stride = cluster_inner_child(h, 1) - cluster_inner_child(h, 0);
            int ok = cluster_inner_child(h, 1) > cluster_inner_child(h, 0) && stride <= 65536;
            for (int j = 2; j < k && ok; j++)
                ok = cluster_inner_child(h, j) - cluster_inner_child(h, j - 1) == stride;
            if (!ok) continue;
            uniform[i]++;
            for (uint64_t c = 1; c < n; c++) {
                under[i]++;
                predicted[i] += cluster_inner_child(h, c) == cluster_inner_child(h, 0) + c * stride;
            }
        }
    }
    for (uint64_t c = 0; c < n; c++)
        if (walk(t, cluster_inner_child(h, c), depth + 1)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: lookup-layout FILE [TABLE]\n");
        return 2;
    }
    cs_options o;
    memset(&o, 0, sizeof o);
    o.flags = CS_OPEN_READONLY;
    cs_db *db;
    cs_txn *t;
    uint32_t tb;
    ref_t root;
    if (cs_db_open(argv[1], &o, &db) != CS_OK || cs_txn_begin(db, CS_TXN_READ, &t) != CS_OK ||
        cs_table_find(t, argc > 2 ? argv[2] : "S", &tb) != CS_OK || table_root(t, tb, &root) != CS_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], cs_errmsg());
        return 1;
    }
    if (root && walk(t, root, 0)) {
        fprintf(stderr, "%s: a damaged tree\n", argv[1]);
        return 1;
    }
    for (int d = 0; d < LEVELS && nodes_at[d]; d++) {
        if (children_at[d])
            printf("level %d: %llu inner nodes, %llu children\n", d, (unsigned long long)nodes_at[d],
                   (unsigned long long)children_at[d]);
        else
            printf("level %d: %llu leaves\n", d, (unsigned long long)nodes_at[d]);
    }
    for (int i = 0; i < 4; i++)
        printf("K=%d: %llu of %llu lowest inner nodes start with %d children one stride apart; %llu of their %llu "
               "children lie at the predicted place\n",
               ks[i], (unsigned long long)uniform[i], (unsigned long long)lowest, ks[i],
               (unsigned long long)predicted[i], (unsigned long long)under[i]);
    cs_txn_end(t);
    cs_db_close(db);
    return 0;
}
