#ifndef BERTH_HEAP_STATS_H
#define BERTH_HEAP_STATS_H

#include <stdint.h>

/// The C allocator's figures, for /metrics: bytes handed out and not yet freed, and bytes freed but
/// kept by the allocator (not returned to the system). Both 0 where the C library does not say
/// (anything but glibc 2.33 or later).
typedef struct {
    uint64_t in_use;
    uint64_t free;
} berth_heap_stats;

berth_heap_stats berth_read_heap_stats(void);

/// Gives the allocator's free memory back to the system (glibc's `malloc_trim(0)`, every arena);
/// does nothing elsewhere.
void berth_release_free_memory(void);

#endif
