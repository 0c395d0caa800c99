/*
 * ferrokv: INCRBYFLOAT arithmetic in C `long double`.
 *
 * Redis computes INCRBYFLOAT with `long double` (80-bit extended precision on
 * x86-64), parses operands with strtold() and prints the result with
 * "%.17Lf" before stripping trailing zeros. Rust has no `long double`, and
 * doing the sum in f64 gives visibly different answers (0.1 + 0.2 prints
 * 0.30000000000000004 in f64 but "0.3" in Redis), so this small shim does the
 * parse / add / format steps with the C library, exactly as the behaviour
 * documented for Redis requires. Written for ferrokv; no Redis code.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest accepted operand / result text, bytes (Redis's
 * MAX_LONG_DOUBLE_CHARS). */
#define FK_LD_MAX_CHARS (5 * 1024)

/* Parses s[0..len) as a long double. Accepted only when strtold consumes
 * every byte, the text does not start with a space, the value is not NaN
 * and did not overflow/underflow to an infinity or zero. */
static int fk_parse_ld(const char *s, size_t len, long double *out) {
    char buf[FK_LD_MAX_CHARS];
    char *end = NULL;
    long double v;

    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtold(buf, &end);
    if (isspace((unsigned char)buf[0])) return 0;
    if (end == NULL || *end != '\0' || (size_t)(end - buf) != len) return 0;
    if (errno == ERANGE &&
        (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO))
        return 0;
    if (errno == EINVAL || isnan(v)) return 0;
    *out = v;
    return 1;
}

/*
 * value + incr, formatted for INCRBYFLOAT into out[0..cap).
 * Returns the length written (>= 0), or
 *   -1 when `value` is not a valid float,
 *   -2 when `incr` is not a valid float,
 *   -3 when the sum is NaN or infinite.
 * A result that does not fit in `cap` bytes yields length 0.
 */
long ferrokv_incrbyfloat(const char *value, size_t vlen, const char *incr,
                         size_t ilen, char *out, size_t cap) {
    long double a, b, sum;
    int n;
    size_t l;

    if (!fk_parse_ld(value, vlen, &a)) return -1;
    if (!fk_parse_ld(incr, ilen, &b)) return -2;
    sum = a + b;
    if (isnan(sum) || isinf(sum)) return -3;
    n = snprintf(out, cap, "%.17Lf", sum);
    if (n < 0 || (size_t)n + 1 > cap) return 0;
    l = (size_t)n;
    if (memchr(out, '.', l) != NULL) {
        while (l > 0 && out[l - 1] == '0') l--;
        if (l > 0 && out[l - 1] == '.') l--;
    }
    if (l == 2 && out[0] == '-' && out[1] == '0') {
        out[0] = '0';
        l = 1;
    }
    return (long)l;
}
