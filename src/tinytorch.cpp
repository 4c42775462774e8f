// src/tinytorch.cpp — the one TU of CMake's tinytorch::compiled (a static library): the bodies
// of the functions the headers declare with TT_DECL, compiled once (include/tinytorch/src.hpp).
// Its targets define TINYTORCH_SEPARATE_COMPILATION for this file and for every user of the library.
#include <tinytorch/src.hpp>
