/* Test workload of `ksight wall --by lock`: N1 threads contend on one pthread mutex and N2 on another, each lock call counted and timed here. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * Usage: walllock N1 N2 ROUNDS HOLD_MS.  Per mutex and round, a holder
 * takes the mutex, lets its waiters try it (trylock fails: one contended
 * lock call each, then pthread_mutex_lock), waits until every one of
 * them sleeps in futex on that mutex (/proc: state S in syscall 202 with
 * the mutex as its first argument), holds HOLD_MS more and unlocks; each
 * waiter, woken by the one before (the holder first), unlocks at once.
 * So each contended call sleeps exactly once.  Prints per mutex:
 *   lock NAME ADDR contended COUNT lock_ns SUM holder TID waiters TID,TID,...
 */

struct group {
	const char *name;
	pthread_mutex_t m;
	pthread_barrier_t start, done;
	int n, rounds, hold_ms;
	pid_t holder;
	pid_t tids[64];
	atomic_int trying[64]; /* 1: its trylock failed, it calls lock */
	atomic_llong contended, lock_ns;
};

struct waiter {
	struct group *g;
	int i;
};

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Whether thread @tid sleeps in futex on @addr. */
static int asleep_on(pid_t tid, const void *addr)
{
	char path[64], buf[256], st = 0;
	unsigned long long nr = 0, a0 = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		char *p = strrchr(buf, ')');

		if (p)
			st = p[2];
	}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llx", &nr, &a0) != 2)
		nr = 0;
	fclose(f);
	return st == 'S' && nr == SYS_futex && a0 == (uintptr_t)addr;
}

static void *waiter(void *arg)
{
	struct waiter *w = arg;
	struct group *g = w->g;
	long long t0;

	g->tids[w->i] = (pid_t)syscall(SYS_gettid);
	for (int r = 0; r < g->rounds; r++) {
		pthread_barrier_wait(&g->start);
		if (pthread_mutex_trylock(&g->m) == 0) {
			pthread_mutex_unlock(&g->m); /* never: the holder has it */
		} else {
			atomic_fetch_add(&g->contended, 1);
			atomic_store(&g->trying[w->i], 1);
			t0 = now_ns();
			pthread_mutex_lock(&g->m);
			atomic_fetch_add(&g->lock_ns, now_ns() - t0);
			atomic_store(&g->trying[w->i], 0);
			pthread_mutex_unlock(&g->m);
		}
		pthread_barrier_wait(&g->done);
	}
	return NULL;
}

static void *holder(void *arg)
{
	struct group *g = arg;
	struct timespec hold = { g->hold_ms / 1000, (g->hold_ms % 1000) * 1000000L };

	g->holder = (pid_t)syscall(SYS_gettid);
	for (int r = 0; r < g->rounds; r++) {
		pthread_mutex_lock(&g->m);
		pthread_barrier_wait(&g->start);
		for (int i = 0; i < g->n; i++)
			while (!atomic_load(&g->trying[i]) || !asleep_on(g->tids[i], &g->m))
				usleep(200); /* polls /proc: no event tells another thread sleeps */
		nanosleep(&hold, NULL);
		pthread_mutex_unlock(&g->m);
		pthread_barrier_wait(&g->done);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct group g[2];
	pthread_t th[2][65];
	struct waiter w[2][64];

	if (argc != 5) {
		fprintf(stderr, "usage: walllock N1 N2 ROUNDS HOLD_MS\n");
		return 2;
	}
	for (int k = 0; k < 2; k++) {
		memset(&g[k], 0, sizeof(g[k]));
		g[k].name = k ? "B" : "A";
		g[k].n = atoi(argv[1 + k]);
		g[k].rounds = atoi(argv[3]);
		g[k].hold_ms = atoi(argv[4]);
		if (g[k].n < 1 || g[k].n > 64 || g[k].rounds < 1 || g[k].hold_ms < 0) {
			fprintf(stderr, "walllock: bad arguments\n");
			return 2;
		}
		pthread_mutex_init(&g[k].m, NULL);
		pthread_barrier_init(&g[k].start, NULL, g[k].n + 1);
		pthread_barrier_init(&g[k].done, NULL, g[k].n + 1);
	}
	for (int k = 0; k < 2; k++) {
		for (int i = 0; i < g[k].n; i++) {
			w[k][i] = (struct waiter){ &g[k], i };
			pthread_create(&th[k][i], NULL, waiter, &w[k][i]);
		}
		/* the waiters' tids are set before the holder's first look */
		for (int i = 0; i < g[k].n; i++)
			while (!__atomic_load_n(&g[k].tids[i], __ATOMIC_SEQ_CST))
				usleep(100);
		pthread_create(&th[k][g[k].n], NULL, holder, &g[k]);
	}
	for (int k = 0; k < 2; k++)
		for (int i = 0; i <= g[k].n; i++)
			pthread_join(th[k][i], NULL);
	for (int k = 0; k < 2; k++) {
		printf("lock %s 0x%llx contended %lld lock_ns %lld holder %d waiters ", g[k].name,
		       (unsigned long long)(uintptr_t)&g[k].m, (long long)g[k].contended, (long long)g[k].lock_ns,
		       g[k].holder);
		for (int i = 0; i < g[k].n; i++)
			printf("%s%d", i ? "," : "", g[k].tids[i]);
		printf("\n");
	}
	return 0;
}
