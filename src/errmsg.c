/* errmsg.c — the engine's internal error convention (errmsg.h): one readable line written into
 * the caller's buffer, -1 returned. A unit of its own, below every other, so that the engine's
 * files report errors without depending on the API file (wick.c) or on each other. */
#include "errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int errorf(char *err, size_t err_len, const char *fmt, ...) {
    if (err && err_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}
