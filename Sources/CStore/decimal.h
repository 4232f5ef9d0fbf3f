/*
 * decimal.h -- what decimal.c offers the rest of the core besides cstore.h's cs_decimal_*: the
 * exact comparison of a decimal with a double (the value order) and the parts of a decimal the
 * Mixed index keys it by.
 */
#ifndef CSTORE_DECIMAL_H
#define CSTORE_DECIMAL_H

#include "internal.h"

/** Compares a decimal with a double exactly (<0, 0, >0); NaN is below every number. */
int decimal_compare_double(const cs_decimal128 *a, double x);
/** The parts of a decimal a Mixed index keys it by: 0 for NaN, 1 for an infinity, else 2 with the
 *  sign, the coefficient and exponent without trailing zeros, and `as_int` when int_ok. */
int decimal_key_parts(const cs_decimal128 *d, int *sign, unsigned __int128 *coeff, int *exp, bool *int_ok,
                      int64_t *as_int);

#endif
