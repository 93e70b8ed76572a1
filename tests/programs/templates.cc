/* C++ names: function templates (whose demangled names start with their
 * return type), a class template's methods and operators, an anonymous
 * namespace, a lambda, and std:: code (std::sort and std::vector, whose
 * instantiations are built here with the hooks too).  Every function of
 * namespace ns and the lambda is called from work(), outside std::; main
 * calls work once, or ROUNDS times MS ms apart (a program that runs long
 * enough for live sessions to change its filters).
 * Usage: templates [ROUNDS [MS]] */
#include "prog.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define EQ_CALLS 4

namespace ns {

template <typename T> COUNTED bool eq(T a, T b)
{
	BARRIER();
	return a == b;
}

template <typename T> struct Box {
	T v;

	COUNTED T get() const
	{
		BARRIER();
		return v;
	}
	COUNTED bool operator()(T x) const
	{
		BARRIER();
		return x < v;
	}
	COUNTED bool operator<(const Box &o) const
	{
		BARRIER();
		return v < o.v;
	}
};

namespace {

COUNTED int hidden(int x)
{
	BARRIER();
	return x + 1;
}

} /* namespace */

} /* namespace ns */

COUNTED int work()
{
	std::vector<int> v{ 5, 3, 9, 1, 7 };
	ns::Box<int> box{ 4 };
	auto twice = [](int x) {
		BARRIER();
		return x * 2;
	};
	int n = 0;

	std::sort(v.begin(), v.end());
	for (int i = 0; i < EQ_CALLS; i++)
		n += ns::eq<int>(v[0], i);
	n += ns::eq<long>(2, 2);
	n += box.get() + box(3) + (box < ns::Box<int>{ 5 });
	n += ns::hidden(1);
	n += twice(3);
	return n;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? std::atol(argv[1]) : 1, ms = argc > 2 ? std::atol(argv[2]) : 0;
	struct timespec pause = { ms / 1000, ms % 1000 * 1000000 };
	int n = 0;

	for (long i = 0; i < rounds; i++) {
		if (i && ms)
			nanosleep(&pause, nullptr);
		n = work();
	}
	std::printf("templates: %d\n", n);
	return 0;
}
