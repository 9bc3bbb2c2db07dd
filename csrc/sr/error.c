/* error.c — libnxe_sr's thread-local last-error message behind nxe_sr_last_error(), kept apart
 * from libnxe's so that neither library writes the other's. */
#include <stdarg.h>
#include <stdio.h>

#include "sr/sr_internal.h"

#define MESSAGE_CAPACITY 1024

static _Thread_local char last_error[MESSAGE_CAPACITY];

/* Formats the message into this thread's slot, then ": cause" cut to what is left of it. */
static void set_message(const char *cause, const char *fmt, va_list args)
{
    int n = vsnprintf(last_error, sizeof last_error, fmt, args);
    size_t used = n < 0 ? 0 : (size_t)n < sizeof last_error ? (size_t)n : sizeof last_error - 1;
    last_error[used] = '\0';
    for (const char *from = cause ? ": " : ""; *from && used + 1 < sizeof last_error; from++)
        last_error[used++] = *from;
    for (const char *from = cause ? cause : ""; *from && used + 1 < sizeof last_error; from++)
        last_error[used++] = *from;
    last_error[used] = '\0';
}

nxe_status sr_error(nxe_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    set_message(NULL, fmt, args);
    va_end(args);
    return status;
}

nxe_status sr_error_with_cause(nxe_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    set_message(nxe_last_error(), fmt, args);
    va_end(args);
    return status;
}

NXE_SR_API const char *nxe_sr_last_error(void)
{
    return last_error;
}
