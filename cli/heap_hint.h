/* A process-level hint for commands that parse one large document. */
#ifndef OTA_CLI_HEAP_HINT_H
#define OTA_CLI_HEAP_HINT_H
#include <stddef.h>

/* Archives of fewer bytes get no hint. */
#define CLI_HEAP_HINT_MIN ((size_t)1 << 20)
/* The heap grown for one hint, at most. */
#define CLI_HEAP_HINT_MAX ((size_t)1 << 30)

/*
 * Before parsing text_bytes of JSON into memory: grow the brk heap once by
 * 8 bytes per byte of text (at most CLI_HEAP_HINT_MAX), keep it (no trim),
 * and mark it MADV_HUGEPAGE. Returns the bytes so marked; 0 when no hint was
 * given (small text, a sanitizer's allocator, a heap brk cannot grow). Only
 * speed depends on it. Call once per process, before the parse.
 */
size_t cli_heap_hint(size_t text_bytes);

#endif
