// tinytorch/distributed/mpi_include.hpp — includes <mpi.h> when the build has MPI.
//
// Without the MPI-2 C++ bindings (MPI::Comm, ...): MPI-3 removed them, tinytorch uses the C API,
// and Open MPI's copies of them trigger -Wcast-function-type warnings under -Wextra.
// Every distributed header includes MPI through this file. (TINYTORCH_WITH_MPI: core/config.hpp.)
// Chapter: chapters/07-all-reduce.md. Reference: MPI 3.1 (C bindings only; the C++ bindings were
// deleted in MPI-3.0).
#pragma once

#include "tinytorch/core/config.hpp"

#if TINYTORCH_WITH_MPI
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#endif
