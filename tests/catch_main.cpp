// tests/catch_main.cpp — the one Catch2 main() shared by every tests/test_*.cpp executable.
//
// Compiled once into the OBJECT library tt_catch_main (see tests/CMakeLists.txt) and linked
// into each test, so a test file holds only TEST_CASEs. Catch2 v2 (Debian's 2.13): header
// <catch2/catch.hpp>. Run one test binary with a tag filter, e.g. `build/bin/test_autograd "[autograd]"`.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
