/* Fixture for test_symbolizer: C++ methods, namespaced and overloaded, whose
 * names must come back demangled exactly. Braces share the name's line (see
 * fixture_main.c). */

namespace ns {

class Widget {
public:
	int draw(int x);
	int draw(double x);
	static long counts[4]; /* a static member: a data symbol to demangle */
};

long Widget::counts[4] = { 1, 2, 3, 4 };

int Widget::draw(int x) {
	return x + 1;
}

int Widget::draw(double x) {
	return static_cast<int>(x * 2.0);
}

} /* namespace ns */
