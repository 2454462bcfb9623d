/*
 * nonce-store/committer.c - group commit: one thread drains a queue of
 * operations, runs up to max_batch of them in one transaction (one fsync)
 * and only then wakes their callers, through a second thread (the waker)
 * while it runs the next batch. Nothing is acknowledged before the COMMIT
 * has returned.
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>

#include "nonce_internal.h"

typedef struct pending {
	ota_nonce_op *op;
	struct pending *next;
	sem_t sem; /* its own: a batch wakes exactly its callers, outside the lock */
} pending;

struct ota_nonce_committer {
	ota_nonce_store *store;
	ota_clock clock;
	bool has_clock;
	size_t max_batch;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work;  /* queue not empty or stopping */
	pending *head, *tail;
	bool stop;
	uint64_t batches, ops;
	ota_nonce_op *batch_ops;   /* copies run by the thread */
	pending **batch_pend;      /* the batch being committed */
	pending **spare_pend;      /* the other buffer: the waker's, or free */
	/* The waker: wakes a committed batch's callers while the committer
	 * runs the next batch (a futex wake per caller, hundreds per batch,
	 * used to hold the next transaction back). */
	pthread_t waker;
	pthread_mutex_t wmu;
	pthread_cond_t wwork; /* a batch handed over, or stopping */
	pthread_cond_t wdone; /* the handed-over batch is woken */
	pending **wbuf;       /* handed over, not yet all woken */
	size_t wn;
	bool wstop;
};

static void *waker_main(void *arg)
{
	ota_nonce_committer *c = arg;
	pthread_mutex_lock(&c->wmu);
	for (;;) {
		while (c->wbuf == NULL && !c->wstop)
			pthread_cond_wait(&c->wwork, &c->wmu);
		if (c->wbuf == NULL)
			break; /* stopping, nothing left */
		pending **b = c->wbuf;
		size_t n = c->wn;
		pthread_mutex_unlock(&c->wmu);
		/* each caller sleeps in sem_wait until posted: its op (written
		 * by the committer before the hand-over) and its pending record
		 * stay valid until then */
		for (size_t i = 0; i < n; i++)
			sem_post(&b[i]->sem);
		pthread_mutex_lock(&c->wmu);
		c->wbuf = NULL;
		pthread_cond_signal(&c->wdone);
	}
	pthread_mutex_unlock(&c->wmu);
	return NULL;
}

static void *committer_main(void *arg)
{
	ota_nonce_committer *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (c->head == NULL && !c->stop)
			pthread_cond_wait(&c->work, &c->mu);
		if (c->head == NULL && c->stop)
			break;
		size_t n = 0;
		while (c->head != NULL && n < c->max_batch) {
			pending *p = c->head;
			c->head = p->next;
			if (c->head == NULL)
				c->tail = NULL;
			c->batch_pend[n] = p;
			n++;
		}
		pthread_mutex_unlock(&c->mu);
		for (size_t i = 0; i < n; i++) /* callers are asleep: ops are stable */
			c->batch_ops[i] = *c->batch_pend[i]->op;
		int64_t now = c->has_clock ? ota_clock_now(&c->clock) : ota_clock_now(NULL);
		ota_err e = ota_nonce_store_commit_batch(c->store, c->batch_ops, n, now, NULL);
		(void)e; /* on failure every op's result carries the error */
		pthread_mutex_lock(&c->mu);
		c->batches++;
		c->ops += n;
		pthread_mutex_unlock(&c->mu);
		/* the callers are asleep: their results go in now, the waker
		 * wakes them while the next batch runs (its buffer is the other
		 * one, free once the waker has woken the batch before) */
		for (size_t i = 0; i < n; i++)
			*c->batch_pend[i]->op = c->batch_ops[i];
		pthread_mutex_lock(&c->wmu);
		while (c->wbuf != NULL)
			pthread_cond_wait(&c->wdone, &c->wmu);
		c->wbuf = c->batch_pend;
		c->wn = n;
		pthread_cond_signal(&c->wwork);
		pthread_mutex_unlock(&c->wmu);
		pending **t = c->batch_pend;
		c->batch_pend = c->spare_pend;
		c->spare_pend = t;
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

ota_err ota_nonce_committer_new(ota_nonce_store *s, size_t max_batch, const ota_clock *clock,
                                ota_nonce_committer **out)
{
	if (out == NULL)
		return OTA_ERR_USAGE;
	*out = NULL;
	if (s == NULL)
		return OTA_ERR_USAGE;
	if (max_batch == 0)
		max_batch = 256;
	if (max_batch > OTA_NONCE_MAX_BATCH)
		max_batch = OTA_NONCE_MAX_BATCH;
	ota_nonce_committer *c = calloc(1, sizeof *c);
	if (c == NULL)
		return OTA_ERR_NOMEM;
	c->store = s;
	c->max_batch = max_batch;
	if (clock != NULL) {
		c->clock = *clock;
		c->has_clock = true;
	}
	c->batch_ops = calloc(max_batch, sizeof *c->batch_ops);
	c->batch_pend = calloc(max_batch, sizeof *c->batch_pend);
	c->spare_pend = calloc(max_batch, sizeof *c->spare_pend);
	if (c->batch_ops == NULL || c->batch_pend == NULL || c->spare_pend == NULL)
		goto out_free;
	if (pthread_mutex_init(&c->mu, NULL) != 0)
		goto out_free;
	if (pthread_mutex_init(&c->wmu, NULL) != 0) {
		pthread_mutex_destroy(&c->mu);
		goto out_free;
	}
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->wwork, NULL);
	pthread_cond_init(&c->wdone, NULL);
	if (pthread_create(&c->waker, NULL, waker_main, c) != 0)
		goto out_sync;
	if (pthread_create(&c->thread, NULL, committer_main, c) != 0) {
		pthread_mutex_lock(&c->wmu);
		c->wstop = true;
		pthread_cond_signal(&c->wwork);
		pthread_mutex_unlock(&c->wmu);
		pthread_join(c->waker, NULL);
		goto out_sync;
	}
	*out = c;
	return OTA_OK;
out_sync:
	pthread_cond_destroy(&c->wdone);
	pthread_cond_destroy(&c->wwork);
	pthread_cond_destroy(&c->work);
	pthread_mutex_destroy(&c->wmu);
	pthread_mutex_destroy(&c->mu);
out_free:
	free(c->batch_ops);
	free(c->batch_pend);
	free(c->spare_pend);
	free(c);
	return OTA_ERR_NOMEM;
}

void ota_nonce_committer_free(ota_nonce_committer *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = true;
	pthread_cond_broadcast(&c->work);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	/* the committer handed its last batch over: the waker wakes it, then
	 * stops */
	pthread_mutex_lock(&c->wmu);
	c->wstop = true;
	pthread_cond_signal(&c->wwork);
	pthread_mutex_unlock(&c->wmu);
	pthread_join(c->waker, NULL);
	pthread_cond_destroy(&c->wdone);
	pthread_cond_destroy(&c->wwork);
	pthread_cond_destroy(&c->work);
	pthread_mutex_destroy(&c->wmu);
	pthread_mutex_destroy(&c->mu);
	free(c->batch_ops);
	free(c->batch_pend);
	free(c->spare_pend);
	free(c);
}

ota_err ota_nonce_committer_run(ota_nonce_committer *c, ota_nonce_op *op)
{
	if (c == NULL || op == NULL)
		return OTA_ERR_USAGE;
	pending p;
	p.op = op;
	p.next = NULL;
	if (sem_init(&p.sem, 0, 0) != 0) {
		op->result = OTA_ERR_INTERNAL;
		return op->result;
	}
	pthread_mutex_lock(&c->mu);
	if (c->stop) {
		pthread_mutex_unlock(&c->mu);
		sem_destroy(&p.sem);
		op->result = OTA_ERR_HTTP_UNAVAILABLE;
		return op->result;
	}
	if (c->tail != NULL)
		c->tail->next = &p;
	else
		c->head = &p;
	c->tail = &p;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->mu);
	while (sem_wait(&p.sem) != 0 && errno == EINTR)
		;
	sem_destroy(&p.sem);
	return op->result;
}

void ota_nonce_committer_stats(ota_nonce_committer *c, uint64_t *batches, uint64_t *ops)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	if (batches != NULL)
		*batches = c->batches;
	if (ops != NULL)
		*ops = c->ops;
	pthread_mutex_unlock(&c->mu);
}
