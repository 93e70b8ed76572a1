/* Thread-heavy: 2 000 threads created and joined one after another, then
 * two threads handing a mutex to and fro 50 000 times each; prints the
 * count. */
#include <pthread.h>
#include <stdio.h>

#define CREATES 2000
#define HANDOFFS 50000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counter;

static void *nothing(void *arg)
{
	return arg;
}

static void *adder(void *arg)
{
	for (int i = 0; i < HANDOFFS; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return arg;
}

int main(void)
{
	pthread_t t[2];

	for (int i = 0; i < CREATES; i++) {
		if (pthread_create(&t[0], NULL, nothing, NULL))
			return 1;
		pthread_join(t[0], NULL);
	}
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, adder, NULL))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%d threads, counter %lu\n", CREATES, counter);
	return 0;
}
