#!/usr/bin/env python3
"""stage_probe.py SRC DST [--count] -- copies the core's sources (Sources/CStore) from SRC to DST and
puts a clock read (PROBE(k): cs_probe[k] = CLOCK_MONOTONIC) at each stage boundary of a commit,
for commit_stages.c (see its header for the build). With --count (sources that compute the slot's
hash in serialise), it also counts the 8-byte words of the slot's hash and of the checksums:
cs_hash_words[0] the hash's words stepped beside a checksum, [1] the checksums' words stepped
alone, [2] the hash's words left to the end and stepped alone; commit_stages prints them per
commit (they add a little to serialise's time: measure times without it). The library itself has no such reads. Each
insertion point must occur exactly once in the sources, so a change to them fails here rather
than measuring the wrong place."""
import sys,shutil,os
src,dst=sys.argv[1],sys.argv[2]
count='--count' in sys.argv[3:]
shutil.rmtree(dst,ignore_errors=True); shutil.copytree(src,dst)
def ins(fn, pairs):
    fn=os.path.join(dst,fn); s=open(fn).read()
    for old,new in pairs:
        assert s.count(old)==1,(fn,old)
        s=s.replace(old,new)
    open(fn,'w').write(s)
hdr='#include <time.h>\nextern double cs_probe[32];\nstatic inline void PROBE(int k){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);cs_probe[k]=ts.tv_sec+ts.tv_nsec*1e-9;}\n'
ins('txn.c',[('int cs_txn_commit(cs_txn *t)\n{\n', hdr.replace('extern double','double')+'int cs_txn_commit(cs_txn *t)\n{\n    PROBE(0);\n'),
  ('        if (rc == CS_OK) rc = txn_plan(t, &w);\n        if (rc == CS_OK) rc = file_commit_write(t, &sp, &w);\n        file_commit_end(t->f, rc);\n',
   '        if (rc == CS_OK) rc = txn_plan(t, &w);\n        PROBE(1);\n        if (rc == CS_OK) rc = file_commit_write(t, &sp, &w);\n        file_commit_end(t->f, rc);\n        PROBE(13);\n')])
s=open(os.path.join(dst,'commit.c')).read()
ser='    if (rc == CS_OK) rc = serialise(t, &plan, &lo, newver, &buf, is_one_sync(f, &plan) ? &hash : NULL);\n' if 'is_one_sync(f, &plan) ? &hash' in s else '    if (rc == CS_OK) rc = serialise(t, &plan, &lo, newver, &buf);\n'
ins('commit.c',[('/* ---- step 3: the durable write', hdr+'/* ---- step 3: the durable write'),
  ('    if (rc == CS_OK) rc = grow_to(f, lo->end);\n','    if (rc == CS_OK) rc = grow_to(f, lo->end);\n    PROBE(4);\n'),
  ('        free(bases);\n','        free(bases);\n        PROBE(5);\n'),
  ('    if (rc == CS_OK) rc = file_build_header(f, nsel, top_pos','    PROBE(6);\n    if (rc == CS_OK) rc = file_build_header(f, nsel, top_pos'),
  ('    if (rc == CS_OK) file_wmap_prepare(f);\n','    PROBE(7);\n    if (rc == CS_OK) file_wmap_prepare(f);\n'),
  ('    if (rc == CS_OK && journaled) {\n        io->bytes += rec.len;','    PROBE(8);\n    if (rc == CS_OK && journaled) {\n        io->bytes += rec.len;'),
  ('    lock_committing(f);\n    rc = file_put_header(f, hdr, newver);\n','    PROBE(10);\n    lock_committing(f);\n    rc = file_put_header(f, hdr, newver);\n    PROBE(11);\n'),
  (ser,'    PROBE(2);\n'+ser+'    PROBE(3);\n'),
  ('        publish(f, nsel, newver, lo.top_pos, lo.root_pos, lo.end, jend);\n','        PROBE(12);\n        publish(f, nsel, newver, lo.top_pos, lo.root_pos, lo.end, jend);\n        PROBE(14);\n'),
])
ins('journal.c',[('        rc = jwrite(f, jr->rec, len, at);\n    }\n','        rc = jwrite(f, jr->rec, len, at);\n    }\n    PROBE(9);\n'),
  ('#define JOURNAL_MAGIC', hdr+'#define JOURNAL_MAGIC')])
if count:
    ins('commit.c',[('static void seal_node_hashing(node_hdr *dst, const uint8_t *buf, slot_hash *sh)\n{\n',
                     '#include <stdint.h>\nuint64_t cs_hash_words[3];\nstatic void seal_node_hashing(node_hdr *dst, const uint8_t *buf, slot_hash *sh)\n{\n'),
                    ('    sh->h = h;\n    sh->at += k * 8;\n', '    sh->h = h;\n    sh->at += k * 8;\n    cs_hash_words[0] += k;\n    cs_hash_words[1] += n - k;\n'),
                    ('        *hash = run_hash_end(&sh.h);\n', '        cs_hash_words[2] += (plan->total - sh.at) / 8;\n        *hash = run_hash_end(&sh.h);\n')])
