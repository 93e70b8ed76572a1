/* C++ exceptions: thrower recurses five levels and throws; the exception
 * unwinds all five frames into catcher.  Also a namespaced const method and a
 * constructor (two symbols, C1 and C2, one demangled name) to check names.
 * Only a plain struct is thrown and no header with inline code is used, so
 * every instrumented function is one of ours. */
#include "prog.h"

#include <cstdio>

#define THROW_DEPTH 5
#define ROUNDS 4
#define AREA_CALLS 3

namespace shapes {

class Circle {
public:
	explicit Circle(double r);
	double area() const;

private:
	double radius;
};

COUNTED Circle::Circle(double r) : radius(r)
{
}

COUNTED double Circle::area() const
{
	BARRIER(); /* else three calls on one object may be merged into one */
	return 3.0 * radius * radius;
}

} /* namespace shapes */

struct depth_reached {
	int depth;
};

static volatile int sink;

COUNTED void thrower(int depth)
{
	if (depth <= 0)
		return; /* bad depth (and gcc wants a path that returns) */
	if (depth == 1)
		throw depth_reached{ THROW_DEPTH };
	thrower(depth - 1);
	BARRIER(); /* not reached */
}

COUNTED int catcher(int depth)
{
	try {
		thrower(depth);
	} catch (const depth_reached &e) {
		return e.depth;
	}
	return -1;
}

COUNTED void after_catch(void)
{
	sink++;
}

int main()
{
	volatile int depth = THROW_DEPTH;
	volatile double radius = 2.0;
	int caught = 0;

	for (int i = 0; i < ROUNDS; i++)
		caught += catcher(depth) == THROW_DEPTH;
	after_catch();

	const shapes::Circle c(radius);
	double sum = 0;
	for (int i = 0; i < AREA_CALLS; i++)
		sum += c.area();

	std::printf("exceptions: caught %d, area sum %g\n", caught, sum);
	return caught == ROUNDS ? 0 : 1;
}
