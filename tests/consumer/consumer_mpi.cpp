// tests/consumer/consumer_mpi.cpp — links against tinytorch::mpi (built, not run, by ctest).
//
// Checks that the target brings <mpi.h> and libmpi, and that core/config.hpp notices MPI.
#include <mpi.h>

#include <tinytorch/core/config.hpp>

#include <iostream>

static_assert(TINYTORCH_WITH_MPI == 1, "tinytorch::mpi must make <mpi.h> visible to core/config.hpp");

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::cout << "consumer_mpi: rank " << rank << " of " << size << "\n";
  MPI_Finalize();
  return 0;
}
