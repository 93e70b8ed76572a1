// Memory tracer: C++ operators new and delete.  With no argument:
//   objects(): 10 x new Obj (NEW of 24 bytes), each deleted (10 DELETE)
//   arrays():  5 x new int[10] (NEW_ARRAY of 40), each delete[]d (5 DELETE_ARRAY)
//   nothrow(): 3 x new (std::nothrow) char[100] (NEW_ARRAY of 100), delete[]d
//   aligned(): 2 x new Wide (alignas(64), 64 bytes: NEW of 64), deleted
//   failing(): operator new of half the address space throws std::bad_alloc,
//              caught: 1 NEW with the FAILED flag (pointer 0)
// then exit 0.  With one argument, a mismatched release (after the above):
//   free-new       free() of a block from new Obj: NEW 24, FREE
//   delete-malloc  delete of a block from malloc(24): MALLOC 24, DELETE
//   delete-array   delete (not delete[]) of new int[4]: NEW_ARRAY 16, DELETE
// glibc does not notice these: exit 0.  Unknown argument: exit 2.
#include "prog.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

struct Obj {
	long a, b, c;
};

struct alignas(64) Wide {
	char bytes[64];
};

static void *volatile sink;

COUNTED void objects()
{
	for (int i = 0; i < 10; i++) {
		Obj *o = new Obj{ i, i, i };
		sink = o;
		BARRIER();
		delete o;
	}
	BARRIER(); /* the last release is no tail call (a loop clang unrolls) */
}

COUNTED void arrays()
{
	for (int i = 0; i < 5; i++) {
		int *a = new int[10]();
		sink = a;
		BARRIER();
		delete[] a;
	}
	BARRIER(); /* the last release is no tail call (a loop clang unrolls) */
}

COUNTED void nothrow()
{
	for (int i = 0; i < 3; i++) {
		char *c = new (std::nothrow) char[100];
		sink = c;
		BARRIER();
		delete[] c;
	}
	BARRIER(); /* the last release is no tail call (a loop clang unrolls) */
}

COUNTED void aligned()
{
	for (int i = 0; i < 2; i++) {
		Wide *w = new Wide();
		sink = w;
		BARRIER();
		delete w;
	}
	BARRIER(); /* the last release is no tail call (a loop clang unrolls) */
}

COUNTED int failing()
{
	try {
		sink = ::operator new(SIZE_MAX / 2);
	} catch (const std::bad_alloc &) {
		return 0;
	}
	return 1;
}

// Mismatched pairs, opaque to the compiler so that it neither warns about
// nor removes them; BARRIER keeps the release from being a tail call (whose
// call site would be the caller's).
COUNTED void free_it(void *p)
{
	std::free(p);
	BARRIER();
}

COUNTED void delete_obj(Obj *o)
{
	delete o;
	BARRIER();
}

COUNTED void delete_int(int *p)
{
	delete p;
	BARRIER();
}

int main(int argc, char **argv)
{
	objects();
	arrays();
	nothrow();
	aligned();
	if (failing())
		return 1;
	if (argc < 2)
		return 0;
	if (!std::strcmp(argv[1], "free-new")) {
		free_it(new Obj{ 1, 2, 3 });
	} else if (!std::strcmp(argv[1], "delete-malloc")) {
		void *p = std::malloc(sizeof(Obj));
		sink = p;
		delete_obj(static_cast<Obj *>(p));
	} else if (!std::strcmp(argv[1], "delete-array")) {
		delete_int(new int[4]());
	} else {
		return 2;
	}
	return 0;
}
