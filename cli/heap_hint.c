/*
 * The parsed archive is about 6.5 bytes of heap per byte of text (jansson's
 * values), each page touched first by the parse: verifying a 37 MB archive
 * took about 80,000 page faults of 4 KiB, some 40 % of the process's time on
 * this project's (virtual) machines. For an archive of CLI_HEAP_HINT_MIN
 * bytes or more, the heap is grown once, before the parse, by 8 bytes per
 * byte of text (M_TOP_PAD: glibc's brk heap grows by the pad at its next
 * growth; address space that stays untouched until used, and kept:
 * M_TRIM_THRESHOLD), and that range is marked MADV_HUGEPAGE, as glibc's own
 * tunable glibc.malloc.hugetlb=1 does after each brk: the parse then faults
 * 2 MiB pages (about 10,000 faults instead of 79,000 for the whole process;
 * bench/bench_archive.c archive_verify_process_*). A hint only: with
 * another allocator (a sanitizer's), a heap that brk cannot grow, or
 * transparent huge pages "never", nothing changes but the speed.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heap_hint.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_HINT_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define HEAP_HINT_OFF 1
#endif
#endif

#define HEAP_HINT_STEP ((size_t)64 << 10) /* below the mmap threshold: from the heap */
#define HUGE_PAGE ((uintptr_t)2 << 20)

size_t cli_heap_hint(size_t text_bytes)
{
#if !defined(HEAP_HINT_OFF) && defined(M_TOP_PAD) && defined(M_TRIM_THRESHOLD) && \
	defined(MADV_HUGEPAGE)
	if (text_bytes < CLI_HEAP_HINT_MIN)
		return 0;
	size_t want = text_bytes > CLI_HEAP_HINT_MAX / 8 ? CLI_HEAP_HINT_MAX : text_bytes * 8;
	if (mallopt(M_TRIM_THRESHOLD, (int)want) == 0 || mallopt(M_TOP_PAD, (int)want) == 0)
		return 0;
	char *lo = sbrk(0);
	if (lo == (char *)-1)
		return 0;
	/* small blocks until the heap grows (the first growth takes the pad),
	 * then back to the heap's top: at most 64 of them (4 MiB) */
	void *held[64];
	size_t n = 0;
	char *hi = lo;
	while (n < sizeof held / sizeof held[0] && hi == lo) {
		if ((held[n] = malloc(HEAP_HINT_STEP)) == NULL)
			break;
		n++;
		hi = sbrk(0);
	}
	while (n > 0)
		free(held[--n]);
	/* the break as the frees left it: glibc trims the top beyond the pad
	 * when they return it (up to about the blocks' size), and a range
	 * that reached past the new break was refused by madvise (ENOMEM) */
	if (hi != lo)
		hi = sbrk(0);
	if (hi == (char *)-1 || hi <= lo)
		return 0;
	uintptr_t a = ((uintptr_t)lo + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uintptr_t b = (uintptr_t)hi & ~(HUGE_PAGE - 1);
	if (b <= a || madvise((void *)a, (size_t)(b - a), MADV_HUGEPAGE) != 0)
		return 0;
	return (size_t)(b - a);
#else
	(void)text_bytes;
	return 0;
#endif
}
