# tools/gdb/skip.gdb — what gdb's `step` steps over in a tinytorch program, so that `step` at
# `loss.backward();` lands in tinytorch::Tensor::backward and then in the autograd engine
# (autograd/engine.hpp) instead of in shared_ptr, std::function, std::vector or Eigen internals.
# tools/gdb/tinytorch.py sources it; on its own: (gdb) source tools/gdb/skip.gdb
# `info skip` lists the entries; `skip disable N` / `skip delete N` undo one. A skipped function
# is stepped over as a whole, including any tinytorch code it calls (a lambda run by
# std::function, a kernel run by Eigen): `break` there, or `finish` out of it, instead.
# Reference: the GDB manual, "Skipping Over Functions and Files".

# The C++ standard library: std::, libstdc++'s __gnu_cxx:: and its headers.
skip -rfunction ^std::
skip -rfunction ^__gnu_cxx::
skip -gfile /usr/include/c++/*/*
skip -gfile /usr/include/c++/*/bits/*
skip -gfile /usr/include/c++/*/ext/*
skip -gfile /usr/include/*/c++/*/bits/*
# Eigen (the GEMM under matmul and Linear).
skip -rfunction ^Eigen::
# (-rfunction takes a POSIX extended regular expression; [(] is a literal parenthesis.)
# tinytorch's own plumbing: copying, moving and destroying a Tensor handle or a Shape.
skip -rfunction ^tinytorch::((cpu|cuda|sim)_abi::)?Tensor::(Tensor|~Tensor|operator=)[(]
skip -rfunction ^tinytorch::((cpu|cuda|sim)_abi::)?SmallVector<
