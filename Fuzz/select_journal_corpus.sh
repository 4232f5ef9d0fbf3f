#!/bin/sh
# select_journal_corpus.sh <fuzz-out> <dest> -- rebuilds the committed journal replay corpus
# (open_journal's) from a fuzzing run, as select_corpus.sh does the file corpus.
#
# 1. libFuzzer -merge=1 of the target's seeds, its scratch corpus and the committed journals
#    into a fresh directory (smallest first, the inputs that add coverage; none that crash or
#    take over FUZZ_MERGE_TIMEOUT seconds).
# 2. <dest> is replaced by base.cstore (the base database every journal replays onto,
#    make_corpus journal-base), the seeds (seed-<name>) and the smallest merged inputs, within
#    FUZZ_KEEP_FILE_MAX bytes per file, FUZZ_KEEP_TOTAL bytes of journals and FUZZ_KEEP_FILES
#    files, each
#    written as the target puts it on disk (make_corpus seal-journal: an even-length input gets
#    its checks), so that FuzzCorpusTests replays exactly what the fuzzer ran.
set -eu
out=$1
dest=$2
max_len=${FUZZ_MAX_LEN:-65536}
keep_file_max=${FUZZ_KEEP_FILE_MAX:-65536}
keep_total=${FUZZ_KEEP_TOTAL:-1200000}
keep_files=${FUZZ_KEEP_FILES:-120}
timeout=${FUZZ_MERGE_TIMEOUT:-1}
m=$out/merged-journal

rm -rf "$m"
mkdir -p "$m/open_journal" "$m/old" "$out/corpus/open_journal"
# the committed journals, the base left out (it is no input of the target)
if [ -d "$dest" ]; then
    for f in "$dest"/*; do [ -f "$f" ] && [ "$(basename "$f")" != base.cstore ] && cp "$f" "$m/old/"; done
fi
"$out/bin/open_journal" -merge=1 -timeout="$timeout" -max_len="$max_len" "$m/open_journal" \
    "$out/seeds/open_journal" "$out/corpus/open_journal" "$m/old" 2> "$m/merge-open_journal.log"

mkdir -p "$dest"
rm -f "$dest"/*
"$out/bin/make_corpus" journal-base "$dest/base.cstore"
total=0 # the base (1 MiB, mostly zeros past its logical size: as the target replays onto it) not counted
count=0
for f in "$out"/seeds/open_journal/*; do
    "$out/bin/make_corpus" seal-journal "$f" "$dest/seed-$(basename "$f")"
    total=$((total + $(wc -c < "$f")))
    count=$((count + 1))
done
for f in $(ls -Sr "$m/open_journal"); do
    size=$(wc -c < "$m/open_journal/$f")
    [ "$size" -le "$keep_file_max" ] || continue
    [ $((total + size)) -le "$keep_total" ] || break
    [ "$count" -lt "$keep_files" ] || break
    "$out/bin/make_corpus" seal-journal "$m/open_journal/$f" "$dest/$f"
    total=$((total + size))
    count=$((count + 1))
done
echo "select_journal_corpus: $count journals and base.cstore, $total bytes in $dest"
