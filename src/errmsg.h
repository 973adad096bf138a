/* errmsg.h — the engine's internal error convention: a function that fails writes one readable
 * line into the caller's buffer and returns -1 (errors are values; nothing aborts). */
#ifndef WICK_ERRMSG_H
#define WICK_ERRMSG_H

#include <stddef.h>

/* snprintf into err (err_len bytes, may be 0), then return -1 */
int errorf(char *err, size_t err_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
