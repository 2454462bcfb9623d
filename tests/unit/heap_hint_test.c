/*
 * ota-verify archive's heap hint (cli/heap_hint.c): below its threshold it
 * does nothing; above it the brk heap grows once by 8 bytes per byte of
 * text, the range is marked for huge pages (VmFlags "hg" in
 * /proc/self/smaps), and the parse's allocations then come from that range
 * without growing the heap again. Built with a sanitizer (whose allocator
 * does not use brk) the hint must do nothing at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/heap_hint.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
	__has_feature(memory_sanitizer)
#define SANITIZED 1
#endif
#endif

#define MIB ((size_t)1 << 20)

#ifndef SANITIZED
/* The VmFlags of the mapping that holds addr, from /proc/self/smaps. */
static int vm_flags_at(uintptr_t addr, char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (f == NULL)
		return -1;
	char line[512];
	int in = 0, found = -1;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = addr >= lo && addr < hi;
			continue;
		}
		if (in && strncmp(line, "VmFlags:", 8) == 0) {
			size_t l = strlen(line + 8);
			if (l >= cap)
				l = cap - 1;
			memcpy(out, line + 8, l);
			out[l] = '\0';
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}
#endif

static void small_text_no_hint(void **state)
{
	(void)state;
	char *before = sbrk(0);
	assert_int_equal(cli_heap_hint(0), 0);
	assert_int_equal(cli_heap_hint(CLI_HEAP_HINT_MIN - 1), 0);
	assert_ptr_equal(sbrk(0), before);
}

static void large_text_grows_and_marks_heap(void **state)
{
	(void)state;
	const size_t text = 4 * MIB;
	char *lo = sbrk(0);
	size_t marked = cli_heap_hint(text);
#ifdef SANITIZED
	assert_int_equal(marked, 0);
	assert_ptr_equal(sbrk(0), lo);
	skip();
#else
	char *hi = sbrk(0);
	/* 8 bytes per byte of text, less at most a huge page at each end */
	assert_true(marked >= 8 * text - 4 * MIB);
	assert_true(marked <= 8 * text + 4 * MIB);
	assert_true((size_t)(hi - lo) >= 8 * text - 2 * MIB);

	char flags[256];
	assert_int_equal(vm_flags_at((uintptr_t)lo + 16 * MIB, flags, sizeof flags), 0);
	if (strstr(flags, " hg") == NULL)
		fail_msg("the hinted heap is not marked for huge pages: VmFlags:%s", flags);

	/* a parse's worth of small allocations (16 MiB) grows the heap no more */
	enum { N = 4096 };
	void **p = malloc(N * sizeof *p);
	assert_non_null(p);
	for (size_t i = 0; i < N; i++) {
		p[i] = malloc(4096 - 16);
		assert_non_null(p[i]);
		memset(p[i], 0xa5, 64);
	}
	assert_ptr_equal(sbrk(0), hi);
	for (size_t i = 0; i < N; i++)
		free(p[i]);
	free(p);
	/* and freeing it keeps the heap (no trim below the hint) */
	assert_true((size_t)((char *)sbrk(0) - lo) >= 8 * text - 2 * MIB);
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(small_text_no_hint),
		cmocka_unit_test(large_text_grows_and_marks_heap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
