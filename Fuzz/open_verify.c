/*
 * open_verify.c -- libFuzzer target: the input bytes are a whole database file.
 *
 * Each input is written to one reused file in a per-process temporary directory, verified with
 * cs_file_verify, opened read-only and read end to end through the public API (fuzz_read_all).
 * Any result code is a pass; a crash, a hang or a sanitizer report is a bug. Seeds come from
 * make_corpus (real small databases), so mutations start past the magic and header checks.
 */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_temp_db_path();
    if (fuzz_write_file(path, data, size) != 0) {
        perror("fuzz: writing the input file");
        abort();
    }
    (void)fuzz_read_all(path);
    return 0;
}
