/* errmsg.c — the engine's one error path (errmsg.h): a status code and one readable line in the
 * caller's errmsg, and the engine-wide last error behind wick_last_error. A unit of its own,
 * below every other, so that the engine's files report errors without depending on the API
 * file (wick.c) or on each other. */
#include "errmsg.h"

#include <stdarg.h>
#include <stdio.h>

int errorf(errmsg *err, wick_status code, const char *fmt, ...) {
    if (err) {
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The last failure of any API call: the engine is driven from one thread at a time (wick.h).
 * A context keeps its own as well (wick_ctx_last_error). */
static errmsg last_error;

const char *wick_last_error(void) { return last_error.text; }

wick_status api_status(const errmsg *err) {
    if (err != &last_error) last_error = *err;
    return last_error.code;
}

wick_status api_fail(wick_status code, const char *fmt, ...) {
    last_error.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error.text, sizeof last_error.text, fmt, ap);
    va_end(ap);
    return code;
}

wick_status api_ok(void) {
    last_error.code = WICK_OK;
    last_error.text[0] = 0;
    return WICK_OK;
}
