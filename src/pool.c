/* pool.c — see pool.h. Workers spin briefly on the generation counter (a decode step issues a
 * few hundred small tasks, so waking through a condition variable each time would cost more
 * than the work), then sleep on a condition variable until the next task. */
#include "pool.h"

#include <stdatomic.h>
#include <stdlib.h>

#if defined(WICK_NO_THREADS)

struct pool { int n; };
pool *pool_new(int n_threads) {
    if (n_threads != 1) return NULL;
    pool *p = calloc(1, sizeof *p);
    if (p) p->n = 1;
    return p;
}
void pool_free(pool *p) { free(p); }
int pool_size(const pool *p) { return p->n; }
void pool_run(pool *p, pool_task task, void *arg) { (void)p; task(arg, 0, 1); }

#else

#include <pthread.h>
#include <sched.h>

/* spins before a worker goes to sleep; about a few tens of microseconds */
#define SPIN_ROUNDS 20000

struct pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_int generation;   /* bumped once per task; workers run each generation once */
    atomic_int pending;      /* workers still running the current task */
    atomic_int stop;
    pool_task task;
    void *arg;
};

typedef struct { pool *p; int ith; } worker_arg;

static void *worker(void *v) {
    worker_arg *wa = v;
    pool *p = wa->p;
    int ith = wa->ith;
    free(wa);
    int seen = 0;
    for (;;) {
        int gen;
        int spins = 0;
        while ((gen = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load(&p->stop)) {
            if (++spins < SPIN_ROUNDS) continue;
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = gen;
        p->task(p->arg, ith, p->n);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel);
    }
}

pool *pool_new(int n_threads) {
    if (n_threads < 1 || n_threads > 256) return NULL;
    pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    p->threads = calloc((size_t)n_threads, sizeof *p->threads);
    if (!p->threads) { free(p); return NULL; }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) *wa = (worker_arg){p, i};
        if (!wa || pthread_create(&p->threads[i], NULL, worker, wa) != 0) {
            free(wa);
            p->n = i; /* only the workers started so far exist */
            pool_free(p);
            return NULL;
        }
    }
    return p;
}

void pool_free(pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p->threads);
    free(p);
}

int pool_size(const pool *p) { return p->n; }

void pool_run(pool *p, pool_task task, void *arg) {
    if (p->n == 1) {
        task(arg, 0, 1);
        return;
    }
    p->task = task;
    p->arg = arg;
    atomic_store(&p->pending, p->n - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    task(arg, 0, p->n);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
    }
}

#endif
