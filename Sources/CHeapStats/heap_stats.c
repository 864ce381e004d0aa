#include "heap_stats.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h>

berth_heap_stats berth_read_heap_stats(void) {
    struct mallinfo2 info = mallinfo2();
    berth_heap_stats stats = { (uint64_t)info.uordblks + (uint64_t)info.hblkhd, (uint64_t)info.fordblks };
    return stats;
}

void berth_release_free_memory(void) {
    malloc_trim(0);
}
#else
void berth_release_free_memory(void) {}

berth_heap_stats berth_read_heap_stats(void) {
    berth_heap_stats stats = { 0, 0 };
    return stats;
}
#endif
