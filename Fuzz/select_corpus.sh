#!/bin/sh
# select_corpus.sh <fuzz-out> <dest> -- rebuilds the committed replay corpus from a fuzzing run.
#
# 1. libFuzzer -merge=1 of each target's seeds and scratch corpus into a fresh directory: the
#    merge keeps, smallest first, the inputs that add coverage, and leaves out inputs that crash
#    or take over FUZZ_MERGE_TIMEOUT seconds.
# 2. Body-only inputs of open_body are wrapped into whole files (make_corpus wrap), so every file
#    of the replay corpus is a database file the replay test can open as it is.
# 3. A second merge over both targets' whole files removes overlap between them.
# 4. <dest> is replaced by the seeds (seed-<name>) plus the smallest merged files, within
#    FUZZ_KEEP_FILE_MAX bytes per file, FUZZ_KEEP_TOTAL bytes and FUZZ_KEEP_FILES files.
set -eu
out=$1
dest=$2
max_len=${FUZZ_MAX_LEN:-65536}
keep_file_max=${FUZZ_KEEP_FILE_MAX:-65536}
keep_total=${FUZZ_KEEP_TOTAL:-1800000}
keep_files=${FUZZ_KEEP_FILES:-300}
timeout=${FUZZ_MERGE_TIMEOUT:-1} # seconds; slower inputs are left out (the replay must stay quick)
whole_len=$((max_len + 4096))
m=$out/merged

rm -rf "$m"
mkdir -p "$m/open_verify" "$m/open_body" "$m/whole" "$m/final" "$out/corpus/open_verify" "$out/corpus/open_body"
old=""
if [ -d "$dest" ]; then old=$dest; fi

"$out/bin/open_verify" -merge=1 -timeout="$timeout" -max_len="$whole_len" "$m/open_verify" \
    "$out/seeds/open_verify" "$out/corpus/open_verify" $old 2> "$m/merge-open_verify.log"
"$out/bin/open_body" -merge=1 -timeout="$timeout" -max_len="$max_len" "$m/open_body" \
    "$out/seeds/open_body" "$out/corpus/open_body" 2> "$m/merge-open_body.log"

for f in "$m"/open_verify/*; do [ -f "$f" ] && cp "$f" "$m/whole/v-$(basename "$f")"; done
for f in "$m"/open_body/*; do
    [ -f "$f" ] && "$out/bin/make_corpus" wrap "$f" "$m/whole/b-$(basename "$f")" 2>/dev/null || true
done
"$out/bin/open_verify" -merge=1 -timeout="$timeout" -max_len="$whole_len" "$m/final" "$m/whole" 2> "$m/merge-final.log"

mkdir -p "$dest"
rm -f "$dest"/*
total=0
count=0
for f in "$out"/seeds/open_verify/*; do
    cp "$f" "$dest/seed-$(basename "$f")"
    total=$((total + $(wc -c < "$f")))
    count=$((count + 1))
done
# the merged files, smallest first
for f in $(ls -Sr "$m/final"); do
    size=$(wc -c < "$m/final/$f")
    [ "$size" -le "$keep_file_max" ] || continue
    [ $((total + size)) -le "$keep_total" ] || break
    [ "$count" -lt "$keep_files" ] || break
    cp "$m/final/$f" "$dest/$f"
    total=$((total + size))
    count=$((count + 1))
done
echo "select_corpus: $count files, $total bytes in $dest"
