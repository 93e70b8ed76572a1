// Mismatched releases, one of each kind, for test_memory.py (layerprof and
// valgrind must both name all six):
//   free_new()         free() of new Obj               (NEW 24, FREE)
//   free_new_array()   free() of new int[8]            (NEW_ARRAY 32, FREE)
//   delete_malloc()    delete of malloc(24)            (MALLOC 24, DELETE)
//   delete_new_array() delete of new int[4]            (NEW_ARRAY 16, DELETE)
//   array_malloc()     delete[] of malloc(40)          (MALLOC 40, DELETE_ARRAY)
//   array_new()        delete[] of new Obj             (NEW 24, DELETE_ARRAY)
// glibc does not notice any of them: exit 0.
#include <cstdlib>

struct Obj {
	long a, b, c;
};

// the releases are out of the compiler's sight, so no pair is elided
__attribute__((noinline)) void release_free(void *p)
{
	std::free(p);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void release_delete(Obj *p)
{
	delete p;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void release_delete_int(int *p)
{
	delete p;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void release_array(char *p)
{
	delete[] p;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void release_array_obj(Obj *p)
{
	delete[] p;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void free_new()
{
	release_free(new Obj());
}

__attribute__((noinline)) void free_new_array()
{
	release_free(new int[8]());
}

__attribute__((noinline)) void delete_malloc()
{
	release_delete(static_cast<Obj *>(std::malloc(sizeof(Obj))));
}

__attribute__((noinline)) void delete_new_array()
{
	release_delete_int(new int[4]());
}

__attribute__((noinline)) void array_malloc()
{
	release_array(static_cast<char *>(std::malloc(40)));
}

__attribute__((noinline)) void array_new()
{
	release_array_obj(new Obj());
}

int main()
{
	free_new();
	free_new_array();
	delete_malloc();
	delete_new_array();
	array_malloc();
	array_new();
	return 0;
}
