/*
 * open_journal.c -- libFuzzer target: the input bytes are a commit journal (docs/FORMAT.md §13)
 * beside a valid small database (fuzz_journal_base, with the journal header's id in its header).
 *
 * Each input is written as `<file>.journal` beside a fresh copy of that database, which is then
 * opened read-write (the replay of the journal's records: their checks, patched runs rebuilt,
 * the runs' hash against the header's), verified, closed, and read end to end (fuzz_replay_all,
 * fuzz_read_all). An input of even length first gets correct checks on its header and records
 * (fuzz_journal_seal), so mutations reach the replay behind them; one of odd length is taken as
 * it is, checks included. Any result code is a pass; a crash, a hang or a sanitizer report is a
 * bug. Seeds are real journals (make_corpus journals): one-row commits whose records patch the
 * free-list nodes earlier records wrote, several rows with deletes, large values, one record.
 */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_temp_db_path();
    uint8_t *j = malloc(size ? size : 1);
    if (!j) abort();
    memcpy(j, data, size);
    if (size % 2 == 0) fuzz_journal_seal(j, size);
    int rc = fuzz_journal_files(path, j, size);
    free(j);
    if (rc != 0) {
        perror("fuzz: writing the input files");
        abort();
    }
    (void)fuzz_replay_all(path);
    return 0;
}
