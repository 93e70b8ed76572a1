/* Fixture for test_symbolizer: an executable (built PIE and non-PIE) that
 * the test reads, never runs. Each definition keeps its opening brace on
 * the line of its name: a function's entry address maps to the brace line,
 * and the test finds the expected line by searching for the name. */

#include "fixture_data.h"

/* A function symbol without a size: lookups fall back to the nearest
 * symbol below. */
__asm__(".pushsection .text\n"
	".globl fixture_nosize\n"
	".type fixture_nosize, STT_FUNC\n"
	"fixture_nosize:\n"
	".skip 32\n"
	".popsection\n");

/* Data for the symbolizer's data lookups: a global lock (.bss), a static
 * struct with a lock inside (.bss, a local symbol) and an initialised
 * array (.data).  `used` keeps the static one at -O2. */
pthread_mutex_t fixture_lock = PTHREAD_MUTEX_INITIALIZER;
__attribute__((used)) static struct fixture_stats fixture_stats;
int fixture_table[FIXTURE_TABLE_LEN] = { 1, 2, 3 };

int fixture_add(int a, int b);

static int fixture_local(int x) {
	return x * 3 + 1;
}

__attribute__((noinline)) int fixture_add(int a, int b) {
	int r = a + b;

	return fixture_local(r);
}

int main(int argc, char **argv) {
	(void)argv;
	fixture_stats.count += (uint64_t)fixture_table[argc & 7];
	return fixture_add(argc, 2) == 0;
}
