/* errmsg.h — the engine's one error path: a function that fails records a status code
 * (wick.h's WICK_ERR_*) and one readable line in the caller's errmsg and returns -1 (errors are
 * values; nothing aborts). The API returns that code as it is: no status is read from the text. */
#ifndef WICK_ERRMSG_H
#define WICK_ERRMSG_H

#include <stddef.h>

#include "wick.h"

/* Room for one message; longer ones are cut. */
#define ERRMSG_LEN 512

typedef struct errmsg {
    wick_status code; /* WICK_OK until a failure is recorded */
    char text[ERRMSG_LEN];
} errmsg;

/* Records code and the formatted message in err (may be NULL: nothing recorded), returns -1. */
int errorf(errmsg *err, wick_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- the API's side (wick.c, generate.c) ---- */

/* Makes err the engine's last error (wick_last_error) and returns its code. */
wick_status api_status(const errmsg *err);
/* Records a failure of an API function as the last error and returns code. */
wick_status api_fail(wick_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Clears the last error and returns WICK_OK. */
wick_status api_ok(void);

#endif
