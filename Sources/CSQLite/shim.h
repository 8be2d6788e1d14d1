#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a process-wide mutex on every allocation
/// and free. Only possible before SQLite is initialised; returns SQLITE_MISUSE after.
static inline int formsync_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
