/*
 * cli/output_fwd.c - a task's output, forwarded to the runner's own
 * stdout and stderr without ever blocking the run.
 *
 * The enforcement loop (provider-oci/run.c) hands each chunk of the task's
 * output to ota run's callback between its deadline checks. Written there
 * with a blocking write, a reader that stalls (`| less`, a terminal on
 * XOFF, a slow log shipper) held the loop in write(2) past the task's
 * timeout, and one that went away (`| head -1`) killed the runner with
 * SIGPIPE while the detached container kept running. Here the callback only
 * copies into a bounded queue (OTA_FWD_MAX_BYTES); a thread of its own does
 * the writing. A full queue drops the chunk (counted, and said once the run
 * is over); a reader gone (EPIPE, with SIGPIPE ignored) ends the forwarding
 * of that stream. On a terminal, control characters other than tab and
 * newline (and C1 controls) are shown as '?', so the task cannot print
 * escape sequences that hide or fake the runner's own lines after it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ota/json.h" /* ota_utf8_next */

#define OTA_FWD_MAX_BYTES (4u * 1024u * 1024u)

typedef struct chunk {
	struct chunk *next;
	int fd;
	size_t len;  /* bytes of data to write */
	size_t cost; /* what it counts against OTA_FWD_MAX_BYTES */
	uint8_t data[];
} chunk;

struct cli_fwd {
	pthread_mutex_t mu;
	pthread_cond_t cv, drained;
	chunk *head, *tail;
	size_t queued;      /* bytes in the queue */
	uint64_t dropped;   /* bytes not forwarded: queue full */
	bool closed[3];     /* the reader of fd 1 / 2 went away */
	bool tty[3];
	uint8_t carry[3][4]; /* on a terminal: a UTF-8 sequence cut at a chunk's end */
	size_t ncarry[3];
	bool done, writing;
	pthread_t th;
	bool started;
};

/* The length of the UTF-8 sequence lead byte c starts, 0 if none does. */
static size_t lead_len(uint8_t c)
{
	return c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/*
 * For a terminal: in (n bytes, after the carry of the stream's previous
 * chunk) into out as text a terminal shows and does not obey: C0 controls
 * but tab, newline and carriage return, DEL, bytes that are not valid
 * UTF-8 (a lone 0x9b is CSI to a terminal in an 8-bit mode) and C1
 * controls (U+0080..U+009F, C2 80..C2 9F) become '?'. A sequence cut at
 * the chunk's end waits in carry for the next chunk (the task writes
 * C2, then 9B 2 J, in two reads: still one CSI). out holds n + ncarry
 * bytes; the length written is returned.
 */
static size_t tame(uint8_t *carry, size_t *ncarry, const uint8_t *in, size_t n, uint8_t *out)
{
	uint8_t buf[8];
	size_t o = 0, nc = *ncarry, i = 0;
	/* the carried bytes and enough of in to finish their sequence */
	while (nc > 0) {
		size_t take = n - i < sizeof buf - nc ? n - i : sizeof buf - nc;
		memcpy(buf, carry, nc);
		memcpy(buf + nc, in + i, take);
		size_t want = lead_len(buf[0]);
		if (want > nc + take) { /* still not whole: keep waiting */
			memcpy(carry, buf, nc + take);
			*ncarry = nc + take;
			return o;
		}
		uint32_t cp = 0;
		size_t k = ota_utf8_next(buf, want, &cp);
		if (k == want && (cp < 0x80 || cp > 0x9f)) {
			memcpy(out + o, buf, k);
			o += k;
		} else {
			out[o++] = '?';
			k = 1;
		}
		/* consumed k bytes of buf: the rest of the carry first */
		if (k >= nc) {
			i += k - nc;
			nc = 0;
		} else {
			memmove(carry, carry + k, nc - k);
			nc -= k;
		}
	}
	*ncarry = 0;
	while (i < n) {
		uint8_t c = in[i];
		if (c < 0x80) {
			out[o++] = (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f ? '?' : c;
			i++;
			continue;
		}
		size_t want = lead_len(c);
		if (want == 0) {
			out[o++] = '?';
			i++;
			continue;
		}
		if (i + want > n) { /* cut at the chunk's end */
			memcpy(carry, in + i, n - i);
			*ncarry = n - i;
			break;
		}
		uint32_t cp = 0;
		size_t k = ota_utf8_next(in + i, want, &cp);
		if (k == want && (cp < 0x80 || cp > 0x9f)) {
			memcpy(out + o, in + i, k);
			o += k;
			i += k;
		} else {
			out[o++] = '?';
			i++;
		}
	}
	return o;
}

static void *writer(void *arg)
{
	cli_fwd *f = arg;
	pthread_mutex_lock(&f->mu);
	for (;;) {
		while (f->head == NULL && !f->done)
			pthread_cond_wait(&f->cv, &f->mu);
		if (f->head == NULL)
			break;
		chunk *c = f->head;
		f->head = c->next;
		if (f->head == NULL)
			f->tail = NULL;
		f->writing = true;
		bool skip = f->closed[c->fd];
		pthread_mutex_unlock(&f->mu);
		size_t off = 0;
		bool gone = false;
		while (!skip && off < c->len) {
			ssize_t w = write(c->fd, c->data + off, c->len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				gone = true; /* EPIPE, EIO, a full disk: stop forwarding */
				break;
			}
			off += (size_t)w;
		}
		pthread_mutex_lock(&f->mu);
		if (gone)
			f->closed[c->fd] = true;
		f->queued -= c->cost;
		f->writing = false;
		free(c);
		if (f->head == NULL)
			pthread_cond_broadcast(&f->drained);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

cli_fwd *cli_fwd_start(void)
{
	cli_fwd *f = calloc(1, sizeof *f);
	if (f == NULL)
		return NULL;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	pthread_cond_init(&f->drained, NULL);
	f->tty[1] = isatty(1) == 1;
	f->tty[2] = isatty(2) == 1;
	if (pthread_create(&f->th, NULL, writer, f) != 0) {
		pthread_cond_destroy(&f->drained);
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
		free(f);
		return NULL;
	}
	f->started = true;
	return f;
}

void cli_fwd_write(cli_fwd *f, int fd, const uint8_t *p, size_t n)
{
	if (n == 0 || (fd != 1 && fd != 2))
		return;
	pthread_mutex_lock(&f->mu);
	if (f->closed[fd]) {
		pthread_mutex_unlock(&f->mu);
		return;
	}
	/* a chunk costs its header too: a task writing one byte at a time
	 * must not queue more memory than the cap either */
	size_t cost = sizeof(chunk) + n + 4 + 32;
	if (cost > OTA_FWD_MAX_BYTES - f->queued) {
		f->dropped += n;
		pthread_mutex_unlock(&f->mu);
		return;
	}
	f->queued += cost; /* reserved before the copy, outside the lock */
	pthread_mutex_unlock(&f->mu);
	chunk *c = malloc(sizeof *c + n + 4);
	pthread_mutex_lock(&f->mu);
	if (c == NULL) {
		f->queued -= cost;
		f->dropped += n;
		pthread_mutex_unlock(&f->mu);
		return;
	}
	c->next = NULL;
	c->fd = fd;
	c->cost = cost;
	if (f->tty[fd]) {
		c->len = tame(f->carry[fd], &f->ncarry[fd], p, n, c->data);
	} else {
		memcpy(c->data, p, n);
		c->len = n;
	}
	if (f->tail != NULL)
		f->tail->next = c;
	else
		f->head = c;
	f->tail = c;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

uint64_t cli_fwd_finish(cli_fwd *f, unsigned wait_s)
{
	if (f == NULL)
		return 0;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_s;
	pthread_mutex_lock(&f->mu);
	while ((f->head != NULL || f->writing) &&
	       pthread_cond_timedwait(&f->drained, &f->mu, &until) == 0)
		;
	bool stuck = f->head != NULL || f->writing;
	/* what a stalled reader did not take in time is dropped */
	while (f->head != NULL) {
		chunk *c = f->head;
		f->head = c->next;
		f->dropped += c->len;
		f->queued -= c->cost;
		free(c);
	}
	f->tail = NULL;
	f->done = true;
	pthread_cond_signal(&f->cv);
	uint64_t dropped = f->dropped;
	pthread_mutex_unlock(&f->mu);
	if (stuck) {
		/* blocked in write(2) on a reader that does not read: left to the
		 * process's exit (its chunk is the writer's, not freed here) */
		pthread_detach(f->th);
		return dropped;
	}
	pthread_join(f->th, NULL);
	pthread_cond_destroy(&f->drained);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return dropped;
}
