/* Memory tracer: a process that never ends and leaks steadily.  Each
 * iteration: grow() keeps one malloc(64) for good; churn() makes 3 x
 * malloc(128) and frees them again (3 FREE); then 1 ms of sleep.
 * usage: mem_forever [N]   N iterations, then exit 0 (default: never end;
 * the tests kill it). */
#include "prog.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GROW_SIZE 64
#define CHURN 3
#define CHURN_SIZE 128

struct node {
	struct node *next;
	char pad[GROW_SIZE - sizeof(struct node *)];
};

static struct node *volatile list;

COUNTED void grow(void)
{
	struct node *n = malloc(GROW_SIZE);

	if (!n)
		return;
	memset(n, 0x5a, sizeof(*n)); /* not 0: clang would make malloc and memset a calloc */
	n->next = list;
	list = n;
}

COUNTED void churn(void)
{
	void *volatile p[CHURN];

	for (int i = 0; i < CHURN; i++)
		p[i] = malloc(CHURN_SIZE);
	BARRIER();
	for (int i = 0; i < CHURN; i++)
		free(p[i]);
	BARRIER(); /* the last free is no tail call */
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	struct timespec ms = { 0, 1000000 };

	for (long i = 0; !n || i < n; i++) {
		grow();
		churn();
		nanosleep(&ms, NULL);
	}
	return 0;
}
