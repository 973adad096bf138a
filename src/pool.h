/* pool.h — a persistent thread pool: threads are created once per context and wait on an
 * atomic generation counter; pool_run hands every thread the same task and returns when all
 * have finished it. Tasks split their work by (ith, nth) themselves, so each output element
 * is always computed by the same code in the same order, whatever the thread count. */
#ifndef WICK_POOL_H
#define WICK_POOL_H

typedef void (*pool_task)(void *arg, int ith, int nth);
typedef struct pool pool;

/* n_threads counts the calling thread. Returns NULL if threads cannot be created
 * (e.g. the single-threaded wasm build asked for more than one). */
pool *pool_new(int n_threads);
void pool_free(pool *p);
int pool_size(const pool *p);
void pool_run(pool *p, pool_task task, void *arg);

/* the half-open range of n items that thread ith of nth takes */
static inline void pool_split(long n, int ith, int nth, long *begin, long *end) {
    *begin = n * ith / nth;
    *end = n * (ith + 1) / nth;
}

#endif
