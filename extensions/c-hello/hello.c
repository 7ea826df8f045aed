/*
 * c-hello: an extension written in C. Logs at init, installs a handler on
 * Timer.Tick guarded by a pure guard, and counts the ticks it sees.
 */
#include "spindle.h"

static uint64_t ticks_seen;

SPINDLE_EXPORT("on_tick") void on_tick(uint64_t ticks) {
    (void)ticks;
    ticks_seen++;
}

/* Pure: reads its argument only. */
SPINDLE_EXPORT("is_multiple_of_3") int32_t is_multiple_of_3(uint64_t ticks) { return ticks % 3 == 0; }

SPINDLE_EXPORT("count") uint64_t count(void) { return ticks_seen; }

SPINDLE_EXPORT("init") void init(void) {
    spindle_log_str("hello from C");
    static const char tick[] = "Timer.Tick";
    static const char handler[] = "on_tick";
    static const char guard[] = "is_multiple_of_3";
    int32_t event = spindle_handle_find(tick, sizeof tick - 1);
    if (event >= 0) {
        spindle_install(event, handler, sizeof handler - 1, guard, sizeof guard - 1, SPINDLE_SYNCHRONOUS, 0);
    }
}
