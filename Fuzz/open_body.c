/*
 * open_body.c -- libFuzzer target: the input is everything after the header, and the header
 * is always valid.
 *
 * Input layout: [top ref: 8 bytes LE][version: 8 bytes LE][file bytes from offset 4096 on].
 * fuzz_wrap_body builds a header whose slot 0 names that top ref and version and whose logical
 * size is the body's end, with a correct slot check, so no mutation is spent failing the magic,
 * the format version or the header checksum: every one reaches the node, schema, cluster and
 * collection readers. Then the file goes through the same walk as open_verify.
 */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n;
    uint8_t *file = fuzz_wrap_body(data, size, &n);
    if (!file) return 0; /* shorter than the prefix */
    const char *path = fuzz_temp_db_path();
    if (fuzz_write_file(path, file, n) != 0) {
        perror("fuzz: writing the input file");
        abort();
    }
    free(file);
    (void)fuzz_read_all(path);
    return 0;
}
