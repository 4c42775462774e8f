// tinytorch/distributed.hpp — everything for training on several processes (and GPUs).
//
//   #include <tinytorch/distributed.hpp>
//   namespace dist = tinytorch::distributed;
//   int main() {
//     dist::ProcessGroupGuard pg(dist::Backend::MPI);   // MPI_Init_thread ... MPI_Finalize
//     tinytorch::Tensor g = tinytorch::ones({4});
//     dist::all_reduce(g, dist::ReduceOp::SUM);          // every rank now holds world_size
//   }
//
// Build with mpicxx (or the CMake target tinytorch::mpi); run with `mpirun -np N prog`
// (scripts/mpirun.sh adds the flags a container or laptop needs). Without mpirun the same binary
// runs as a world of size 1. A build without MPI (plain g++) still compiles this header: world
// size 1, and init_process_group throws if the program was launched as one of several ranks.
//
// It includes <mpi.h> (and <nccl.h> under nvcc with NCCL); <tinytorch/tinytorch.hpp> never does.
//
//   distributed/process_group.hpp       Backend, ReduceOp, init/destroy_process_group, get_rank, new_group,
//                                       ProcessGroup (collectives, send / recv on raw buffers),
//                                       comm_counters (calls and bytes of every collective)
//   distributed/guard.hpp               ProcessGroupGuard, abort_job (a failing rank ends the job)
//   distributed/work.hpp                Work (async handle: wait, is_completed)
//   distributed/buffer_collectives.hpp  all_reduce/broadcast/all_gather/reduce_scatter/barrier on raw buffers
//   distributed/algorithms.hpp          ring / parameter_server / tree all-reduce, CommStats
//   distributed/collectives.hpp         the same collectives on Tensors (and on a group), send / recv / isend / irecv
//   distributed/ddp_naive.hpp           DataParallelNaive: a hook per parameter, all-reduce, / N
//   distributed/ddp.hpp                 DistributedDataParallel, DDPOptions, no_sync; includes the
//                                       three below and ../serialization.hpp (tinytorch::save / load
//                                       for checkpoints)
//   distributed/model_agreement.hpp     DDP's construction checks: the same options and model on
//                                       every rank (the same error everywhere), broadcast from rank 0
//   distributed/comm_thread.hpp         CommThread: tasks (collectives) run in order on one thread
//                                       while the main thread computes (DDP's buckets, FSDP's prefetch)
//   distributed/reducer.hpp             DDP's Reducer: buckets, gradient hooks, the communication
//                                       thread (overlap), compute_bucket_assignment_by_size
//   distributed/trace.hpp               Trace (Chrome-trace JSON), common_origin_us
//   distributed/nccl.hpp                nccl_all_reduce on raw device buffers (nvcc + NCCL only)
//   distributed/device_mesh.hpp         DeviceMesh, init_device_mesh: the ranks as a grid, a group per line
//   distributed/tensor_parallel.hpp     Megatron's f and g, ColumnParallelLinear, RowParallelLinear
//   distributed/pipeline_schedule.hpp   GPipe and 1F1B schedules simulated (bubble, timeline)
//   distributed/pipeline.hpp            PipelineStage: those schedules on real ranks (send / recv)
//   distributed/clip_grad.hpp           clip_grad_norm_across_: clipping a model spread over ranks
//   distributed/zero_redundancy_optimizer.hpp  ZeroRedundancyOptimizer (ZeRO-1): optimizer state sharded
//                                       across ranks, partition_parameters
//   distributed/fully_sharded_data_parallel.hpp  FullyShardedDataParallel: flat parameters per unit of an
//                                       auto_wrap_policy; FULL_SHARD (ZeRO-3: parameters freed outside a
//                                       unit's forward and backward), SHARD_GRAD_OP (ZeRO-2), NO_SHARD
//   distributed/sharded_grad_scaler.hpp ShardedGradScaler: GradScaler whose inf check spans the ranks'
//                                       gradient shards
//
// Chapter: chapters/07-all-reduce.md, chapters/06-distributed-data-parallel.md.
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
