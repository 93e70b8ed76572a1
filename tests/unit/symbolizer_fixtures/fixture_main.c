/* Fixture for test_symbolizer: an executable (built PIE and non-PIE) that
 * the test reads, never runs. Each definition keeps its opening brace on
 * the line of its name: a function's entry address maps to the brace line,
 * and the test finds the expected line by searching for the name. */

/* A function symbol without a size: lookups fall back to the nearest
 * symbol below. */
__asm__(".pushsection .text\n"
	".globl fixture_nosize\n"
	".type fixture_nosize, STT_FUNC\n"
	"fixture_nosize:\n"
	".skip 32\n"
	".popsection\n");

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
	return fixture_add(argc, 2) == 0;
}
