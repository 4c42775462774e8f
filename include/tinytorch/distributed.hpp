// tinytorch/distributed.hpp — everything for training on several processes (and GPUs):
//   dist::ProcessGroupGuard pg(dist::Backend::MPI);     // MPI_Init_thread ... MPI_Finalize
//   tinytorch::Tensor g = tinytorch::ones({4});
//   dist::all_reduce(g, dist::ReduceOp::SUM);           // every rank now holds world_size
// Build with mpicxx (or CMake's tinytorch::mpi), run with scripts/mpirun.sh -np N; without mpirun,
// or built without MPI, a program is a world of size 1. It includes <mpi.h> (and <nccl.h> under
// nvcc with NCCL); <tinytorch/tinytorch.hpp> never does. The files, bottom up:
//   process_group.hpp   ProcessGroup, init/destroy_process_group, get_rank, new_group, comm_counters
//   guard.hpp, work.hpp ProcessGroupGuard and abort_job; Work (wait) and the watchdog
//   buffer_collectives.hpp, collectives.hpp   the collectives on raw buffers, on Tensors; send/recv
//   algorithms.hpp      the teaching all-reduces: plain ring, pipelined ring, parameter server, tree
//   ddp_naive.hpp       DataParallelNaive: a hook per parameter, all-reduce, / N
//   ddp.hpp             DistributedDataParallel (model_agreement.hpp, reducer.hpp, comm_thread.hpp,
//                       trace.hpp), no_sync, communication hooks
//   nccl.hpp            NCCL all-reduce on device buffers (nvcc + NCCL only)
//   device_mesh.hpp, tensor_parallel.hpp, pipeline_schedule.hpp, pipeline.hpp, clip_grad.hpp
//                       DeviceMesh; Megatron's Column/RowParallelLinear; GPipe and 1F1B; clipping
//   zero_redundancy_optimizer.hpp, fully_sharded_data_parallel.hpp, sharded_grad_scaler.hpp
//                       ZeRO-1; FSDP (ZeRO-2 and -3); GradScaler across shards
// Chapter: chapters/06-distributed-data-parallel.md, 07-all-reduce.md (and 12, 13).
// Reference: torch.distributed; karpathy/llm.c (MPI -> NCCL bootstrap); nccl-tests (busbw).
#pragma once

#include "tinytorch/core/config.hpp"

#include "tinytorch/distributed/mpi_include.hpp"

#include "tinytorch/distributed/algorithms.hpp"
#include "tinytorch/distributed/buffer_collectives.hpp"
#include "tinytorch/distributed/clip_grad.hpp"
#include "tinytorch/distributed/collectives.hpp"
#include "tinytorch/distributed/comm_thread.hpp"
#include "tinytorch/distributed/ddp.hpp"
#include "tinytorch/distributed/ddp_naive.hpp"
#include "tinytorch/distributed/device_mesh.hpp"
#include "tinytorch/distributed/errors.hpp"
#include "tinytorch/distributed/guard.hpp"
#include "tinytorch/distributed/model_agreement.hpp"
#include "tinytorch/distributed/nccl.hpp"
#include "tinytorch/distributed/pipeline.hpp"
#include "tinytorch/distributed/pipeline_schedule.hpp"
#include "tinytorch/distributed/process_group.hpp"
#include "tinytorch/distributed/reducer.hpp"
#include "tinytorch/distributed/tensor_parallel.hpp"
#include "tinytorch/distributed/trace.hpp"
#include "tinytorch/distributed/work.hpp"
#include "tinytorch/distributed/zero_redundancy_optimizer.hpp"
#include "tinytorch/distributed/fully_sharded_data_parallel.hpp"
#include "tinytorch/distributed/sharded_grad_scaler.hpp"
