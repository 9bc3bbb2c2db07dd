/* log.c — the one logging path: messages go to the host's callback or nowhere. */
#include <stdatomic.h>
#include <stdio.h>

#include "core/core.h"

/* The callback and its user data change together; readers take a consistent snapshot. */
typedef struct log_sink {
    nxe_log_fn fn;
    void *user_data;
    int32_t max_level;
} log_sink;

static log_sink sinks[2];
static atomic_int active_sink;
static atomic_flag sink_lock = ATOMIC_FLAG_INIT;

NXE_API nxe_status nxe_set_log_callback(nxe_log_fn fn, void *user_data, int32_t max_level)
{
    if (max_level < NXE_LOG_ERROR || max_level > NXE_LOG_DEBUG)
        return nxe_error(NXE_ERROR_INVALID_ARGUMENT,
                         "nxe_set_log_callback: max_level %d is not in [%d, %d]", max_level,
                         NXE_LOG_ERROR, NXE_LOG_DEBUG);
    while (atomic_flag_test_and_set(&sink_lock))
        ;
    int next = 1 - atomic_load(&active_sink);
    sinks[next] = (log_sink){fn, user_data, max_level};
    atomic_store(&active_sink, next);
    atomic_flag_clear(&sink_lock);
    return NXE_OK;
}

void nxe_log(int32_t level, const char *fmt, ...)
{
    log_sink sink = sinks[atomic_load(&active_sink)];
    if (!sink.fn || level > sink.max_level)
        return;
    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    sink.fn(sink.user_data, level, message);
}
