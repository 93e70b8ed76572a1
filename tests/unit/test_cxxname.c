/* Unit test of reading demangled names (cxxname) and of matching function
 * patterns against them (classifier_match): names as gcc's and clang's
 * demangler print them, with return types, operators, template arguments,
 * anonymous namespaces and lambdas. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "host/lib/trace/classify.h"
#include "host/lib/trace/cxxname.h"

/* Checks that name splits into the qualified name qual (no return type)
 * and, without parameters, bare. */
static void split_is(const char *name, const char *qual, const char *bare, bool has_params, const char *file, int line)
{
	struct cxxname cn;
	char got[1024];

	cxxname_split(name, &cn);
	check_str(name + cn.start, qual, file, line, name);
	snprintf(got, sizeof(got), "%.*s", (int)(cn.params - cn.start), name + cn.start);
	check_str(got, bare, file, line, name);
	check_eq_u64(cn.has_params, has_params, file, line, name, "has parameters");
	check_eq_u64(cn.len, strlen(name), file, line, name, "length");
}

#define SPLIT_IS(name, qual, bare, params) split_is((name), (qual), (bare), (params), __FILE__, __LINE__)

static void test_split(void)
{
	/* C */
	SPLIT_IS("main", "main", "main", false);
	SPLIT_IS("", "", "", false);
	/* plain C++ */
	SPLIT_IS("thrower(int)", "thrower(int)", "thrower", true);
	SPLIT_IS("shapes::Circle::area() const", "shapes::Circle::area() const", "shapes::Circle::area", true);
	SPLIT_IS("thrower(int) [clone .cold]", "thrower(int) [clone .cold]", "thrower", true);
	/* function templates start with their return type */
	SPLIT_IS("bool ns::eq<int>(int, int)", "ns::eq<int>(int, int)", "ns::eq<int>", true);
	SPLIT_IS("unsigned long const& std::min<unsigned long>(unsigned long const&, unsigned long const&)",
	         "std::min<unsigned long>(unsigned long const&, unsigned long const&)", "std::min<unsigned long>",
	         true);
	SPLIT_IS("std::enable_if<is_invocable_r_v<int, main::{lambda(int)#1}&, int>, int>::type "
	         "std::__invoke_r<int, main::{lambda(int)#1}&, int>(main::{lambda(int)#1}&, int&&)",
	         "std::__invoke_r<int, main::{lambda(int)#1}&, int>(main::{lambda(int)#1}&, int&&)",
	         "std::__invoke_r<int, main::{lambda(int)#1}&, int>", true);
	SPLIT_IS("void std::sort<__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > > >("
	         "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >)",
	         "std::sort<__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > > >("
	         "__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >)",
	         "std::sort<__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > > >", true);
	/* parentheses and blanks inside template arguments and groups */
	SPLIT_IS("std::function<int (int)>::operator()(int) const", "std::function<int (int)>::operator()(int) const",
	         "std::function<int (int)>::operator()", true);
	SPLIT_IS("ns::(anonymous namespace)::hidden(int)", "ns::(anonymous namespace)::hidden(int)",
	         "ns::(anonymous namespace)::hidden", true);
	SPLIT_IS("main::{lambda(int)#1}::operator()(int) const", "main::{lambda(int)#1}::operator()(int) const",
	         "main::{lambda(int)#1}::operator()", true);
	SPLIT_IS("main::$_0::operator()(int) const", "main::$_0::operator()(int) const", "main::$_0::operator()", true);
	SPLIT_IS("(anonymous namespace)::counter", "(anonymous namespace)::counter", "(anonymous namespace)::counter",
	         false);
	/* operators: their '<', '>' and '(' are no brackets */
	SPLIT_IS("ns::Box<int>::operator<(ns::Box<int> const&) const",
	         "ns::Box<int>::operator<(ns::Box<int> const&) const", "ns::Box<int>::operator<", true);
	SPLIT_IS("bool __gnu_cxx::operator!=<int*, std::vector<int> >(int const&, int const&)",
	         "__gnu_cxx::operator!=<int*, std::vector<int> >(int const&, int const&)",
	         "__gnu_cxx::operator!=<int*, std::vector<int> >", true);
	SPLIT_IS("__gnu_cxx::__normal_iterator<int*, std::vector<int> >::difference_type "
	         "__gnu_cxx::operator-<int*, std::vector<int> >(int const&, int const&)",
	         "__gnu_cxx::operator-<int*, std::vector<int> >(int const&, int const&)",
	         "__gnu_cxx::operator-<int*, std::vector<int> >", true);
	SPLIT_IS("std::basic_ostream<char>& std::operator<< <std::char_traits<char> >(std::basic_ostream<char>&, "
	         "char const*)",
	         "std::operator<< <std::char_traits<char> >(std::basic_ostream<char>&, char const*)",
	         "std::operator<< <std::char_traits<char> >", true);
	SPLIT_IS("a::operator>>(int)", "a::operator>>(int)", "a::operator>>", true);
	SPLIT_IS("a::operator->() const", "a::operator->() const", "a::operator->", true);
	SPLIT_IS("a::operator[](unsigned long)", "a::operator[](unsigned long)", "a::operator[]", true);
	SPLIT_IS("operator new(unsigned long, void*)", "operator new(unsigned long, void*)", "operator new", true);
	SPLIT_IS("operator delete[](void*)", "operator delete[](void*)", "operator delete[]", true);
	SPLIT_IS("ns::X::operator unsigned long() const", "ns::X::operator unsigned long() const",
	         "ns::X::operator unsigned long", true);
	SPLIT_IS("operator_helper(int)", "operator_helper(int)", "operator_helper", true);
	/* what it cannot read is one word */
	SPLIT_IS("broken<int(", "broken<int(", "broken<int(", false);
	SPLIT_IS("x)y", "x)y", "x)y", false);
}

static void test_match(void)
{
	const char *eq = "bool ns::eq<int>(int, int)";
	const char *sorter = "void std::sort<__gnu_cxx::__normal_iterator<int*, std::vector<int> > >("
	                     "__gnu_cxx::__normal_iterator<int*, std::vector<int> >)";

	CHECK(classifier_match("ns::*", eq));
	CHECK(classifier_match("ns::eq<int>", eq));
	CHECK(classifier_match("ns::eq<int>(int, int)", eq));
	CHECK(classifier_match("ns::eq*", eq));
	CHECK(classifier_match(eq, eq)); /* the whole name as reports print it */
	CHECK(!classifier_match("bool*", eq));
	CHECK(!classifier_match("ns::eq", eq));
	CHECK(classifier_match("std::*", sorter));
	CHECK(classifier_match("std::sort*", sorter));
	CHECK(!classifier_match("__gnu_cxx::*", sorter));
	CHECK(!classifier_match("void*", sorter));
	CHECK(classifier_match("main", "main"));
	CHECK(classifier_match("m?in", "main"));
	CHECK(!classifier_match("mai", "main"));
	CHECK(classifier_match("thrower", "thrower(int)"));
	CHECK(classifier_match("shapes::Circle::area", "shapes::Circle::area() const"));
	CHECK(classifier_match("shapes::*", "shapes::Circle::area() const"));
	CHECK(classifier_match("*hidden", "ns::(anonymous namespace)::hidden(int)"));
	CHECK(classifier_match("ns::Box<int>::operator<", "ns::Box<int>::operator<(ns::Box<int> const&) const"));
}

int main(void)
{
	test_split();
	test_match();
	return check_summary();
}
