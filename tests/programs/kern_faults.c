/* Page faults with an exact count, for the kernel-event layer: main maps 64
 * anonymous pages (no MAP_POPULATE, MADV_NOHUGEPAGE, so no transparent huge
 * page or multi-size THP folio serves several pages with one fault) in
 * map_pages; touch_pages then writes one byte in each of N of them (default
 * 64), so exactly N exceptions:page_fault_user events happen inside it, one
 * per page; touch_again writes the same N bytes again and takes no fault.
 * map_pages runs first so that both profiling hooks are bound before
 * touch_pages (a lazy PLT binding would fault in the loader's pages).
 * Usage: kern_faults [N]   (0 <= N <= 64; N = 0 gives the startup's faults,
 * which depend on the length of the arguments: compare "00" with "64") */
#include "prog.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGES 64

static long page_size;

COUNTED char *map_pages(int n)
{
	char *p = mmap(NULL, (size_t)n * (size_t)page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (madvise(p, (size_t)n * (size_t)page_size, MADV_NOHUGEPAGE)) {
		munmap(p, (size_t)n * (size_t)page_size);
		return NULL;
	}
	return p;
}

/* one write per page: the first write to a fresh anonymous page faults */
COUNTED void touch_pages(char *p, int n)
{
	volatile char *v = p;

	for (int i = 0; i < n; i++)
		v[(long)i * page_size] = 1;
}

/* the same pages, now present and writable: no fault */
COUNTED void touch_again(char *p, int n)
{
	volatile char *v = p;

	for (int i = 0; i < n; i++)
		v[(long)i * page_size] = 2;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : PAGES;
	char *p;

	if (n < 0 || n > PAGES)
		return 2;
	page_size = sysconf(_SC_PAGESIZE);
	p = map_pages(PAGES);
	if (!p)
		return 2;
	touch_pages(p, n);
	touch_again(p, n);
	munmap(p, (size_t)PAGES * (size_t)page_size);
	return 0;
}
