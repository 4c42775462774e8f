// tests/mpi/test_process_group.cpp — process group, collectives on buffers and Tensors, errors.
//
// Run by ctest on 2, 3 and 4 ranks (scripts/mpirun.sh -np N build/bin/test_process_group); also
// passes as a single process. The MPI test main (tests/mpi/mpi_main.cpp) has already called
// MPI_Init_thread, so init_process_group adopts that MPI and destroy_process_group does not
// finalise it: the group can be created and destroyed several times here.
//
// What is checked:
//   * rank / world_size / local_rank agree with what mpirun announced and with each other;
//   * lifecycle errors (init twice, use before init) and MPI_THREAD_MULTIPLE;
//   * every collective (sync and async) on raw buffers and on Tensors, for several dtypes and ops,
//     against values computed by hand;
//   * bad arguments throw on the rank that passes them, with a message naming the collective and
//     the values, before any message is sent (a collective afterwards still lines up);
//   * MPI errors come back as tinytorch::Error with MPI's error string and the rank;
//   * ReduceOp::MIN; sequence numbers per group and new_group(); the timeout and debug-level
//     settings and their bad values; at DETAIL, a collective that differs across ranks is the
//     same error on every rank (ctest runs these tests with TINYTORCH_DISTRIBUTED_DEBUG=DETAIL).
// What a hang turns into (the watchdog aborting the job) is tested by tests/mpi/hang_failure_test.sh.
// That a throwing rank ends the whole job (ProcessGroupGuard + MPI_Abort) is tested by
// tests/mpi/failure_test.sh, which needs its own mpirun.
// Chapter: chapters/07-all-reduce.md. Catch2 tag: [distributed][process_group].
#include <catch2/catch.hpp>

#include <tinytorch/functional.hpp>
#include <tinytorch/distributed.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

namespace dist = tinytorch::distributed;
using dist::ReduceOp;
using tinytorch::Tensor;

namespace {

void ensure_group() {
  if (!dist::is_initialized()) dist::init_process_group(dist::Backend::MPI);
}

// 1 + 2 + ... + N
int64_t triangle(int n) { return static_cast<int64_t>(n) * (n + 1) / 2; }

}  // namespace

TEST_CASE("lifecycle: use before init, init, init twice, destroy, init again", "[distributed][process_group]") {
  if (dist::is_initialized()) dist::destroy_process_group();
  CHECK_FALSE(dist::is_initialized());
  CHECK_THROWS_WITH(dist::get_rank(), Catch::Contains("get_rank: the default process group has not been initialized"));
  float x = 1.0f;
  CHECK_THROWS_WITH(dist::all_reduce(&x, 1), Catch::Contains("all_reduce: the default process group has not been initialized"));

  dist::init_process_group(dist::Backend::MPI);
  CHECK(dist::is_initialized());
  CHECK(dist::get_backend() == dist::Backend::MPI);
  CHECK_THROWS_WITH(dist::init_process_group(dist::Backend::MPI), Catch::Contains("twice"));
#if !TINYTORCH_WITH_NCCL
  dist::destroy_process_group();
  CHECK_THROWS_WITH(dist::init_process_group(dist::Backend::NCCL), Catch::Contains("TINYTORCH_WITH_NCCL=0"));
  CHECK_FALSE(dist::is_initialized());
#endif
  dist::destroy_process_group();
  dist::destroy_process_group();  // a second destroy does nothing
  ensure_group();
  CHECK(dist::is_initialized());
}

TEST_CASE("rank, world size and local rank", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  REQUIRE(n >= 1);
  CHECK(r >= 0);
  CHECK(r < n);
  int world = 0, mpi_rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
  CHECK(n == world);
  CHECK(r == mpi_rank);
  // What mpirun announced in the environment (Open MPI), when it did.
  if (const char* s = std::getenv("OMPI_COMM_WORLD_SIZE")) CHECK(n == std::atoi(s));
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK")) CHECK(dist::get_local_rank() == std::atoi(s));
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) CHECK(dist::get_local_world_size() == std::atoi(s));

  // Ranks on one machine have distinct local ranks 0..L-1: gather (host id, local rank) and check.
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  int64_t h = 5381;
  for (char* c = host; *c; ++c) h = h * 33 + static_cast<unsigned char>(*c);
  int64_t mine[2] = {h, dist::get_local_rank()};
  std::vector<int64_t> all(2 * static_cast<size_t>(n));
  dist::all_gather(all.data(), mine, 2);
  int same_host = 0, lower_on_host = 0;
  for (int i = 0; i < n; ++i) {
    if (all[2 * i] != h) continue;
    ++same_host;
    if (i < r) ++lower_on_host;
  }
  CHECK(dist::get_local_world_size() == same_host);
  CHECK(dist::get_local_rank() == lower_on_host);  // split with key = rank keeps the rank order

  // The launcher's size as the bootstrap check sees it.
  auto [launched, var] = dist::detail::launcher_world_size();
  if (!var.empty()) CHECK(launched == n);
}

TEST_CASE("MPI_THREAD_MULTIPLE is provided and recorded", "[distributed][process_group]") {
  ensure_group();
  int provided = 0;
  MPI_Query_thread(&provided);
  CHECK(dist::thread_multiple_supported() == (provided >= MPI_THREAD_MULTIPLE));
  if (provided >= MPI_THREAD_MULTIPLE) {
    CHECK_NOTHROW(dist::require_thread_multiple("DistributedDataParallel"));
  } else {
    CHECK_THROWS_WITH(dist::require_thread_multiple("DistributedDataParallel"),
                      Catch::Contains("DistributedDataParallel: needs MPI_THREAD_MULTIPLE"));
  }
}

TEST_CASE("all_reduce on raw buffers: SUM, AVG, MAX for every dtype", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  std::vector<float> f = {float(r + 1), 2.0f, -float(r)};
  dist::all_reduce(f.data(), 3, ReduceOp::SUM);
  CHECK(f == std::vector<float>{float(triangle(n)), 2.0f * n, -float(triangle(n - 1))});

  std::vector<double> d = {double(r + 1), 4.0};
  dist::all_reduce(d.data(), 2, ReduceOp::AVG);
  CHECK(d[0] == Approx(double(triangle(n)) / n));
  CHECK(d[1] == 4.0);

  std::vector<int64_t> i = {r, -r, 7};
  dist::all_reduce(i.data(), 3, ReduceOp::MAX);
  CHECK(i == std::vector<int64_t>{n - 1, 0, 7});

  std::vector<int64_t> lo = {r, -r, 7};
  dist::all_reduce(lo.data(), 3, ReduceOp::MIN);
  CHECK(lo == std::vector<int64_t>{0, -(n - 1), 7});
  std::vector<double> dlo = {double(r) + 0.5, -double(r)};
  dist::all_reduce(dlo.data(), 2, ReduceOp::MIN);
  CHECK(dlo == std::vector<double>{0.5, -double(n - 1)});
  CHECK(std::string(dist::reduce_op_name(ReduceOp::MIN)) == "MIN");

  // void* + DType form, and count 0.
  int64_t s = r;
  dist::all_reduce(&s, 1, tinytorch::kInt64, ReduceOp::SUM);
  CHECK(s == triangle(n - 1));
  dist::all_reduce(static_cast<float*>(nullptr), 0);
}

TEST_CASE("broadcast, all_gather, reduce_scatter, barrier on raw buffers", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  for (int src = 0; src < n; ++src) {
    std::vector<double> x = {double(r), double(10 * r)};
    dist::broadcast(x.data(), 2, src);
    CHECK(x == std::vector<double>{double(src), double(10 * src)});
  }

  std::vector<int64_t> out(2 * static_cast<size_t>(n), -1);
  int64_t in[2] = {r, 100 + r};
  dist::all_gather(out.data(), in, 2);
  for (int k = 0; k < n; ++k) {
    CHECK(out[2 * k] == k);
    CHECK(out[2 * k + 1] == 100 + k);
  }
  // In place: the input is this rank's slot of the output.
  std::vector<float> g(static_cast<size_t>(n), 0.0f);
  g[r] = float(r * r);
  dist::all_gather(g.data(), g.data() + r, 1);
  for (int k = 0; k < n; ++k) CHECK(g[k] == float(k * k));

  // reduce_scatter: rank r contributes in[k] = r + k; block k (one element) goes to rank k.
  std::vector<float> rs_in(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) rs_in[k] = float(r + k);
  float rs_out = -1;
  dist::reduce_scatter(&rs_out, rs_in.data(), 1, ReduceOp::SUM);
  CHECK(rs_out == float(triangle(n - 1) + n * r));
  dist::reduce_scatter(&rs_out, rs_in.data(), 1, ReduceOp::AVG);
  CHECK(rs_out == Approx(float(triangle(n - 1) + n * r) / n));

  dist::barrier();
}

TEST_CASE("async collectives return a Work", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  std::vector<double> x(1000, double(r + 1));
  dist::Work w = dist::all_reduce_async(x.data(), 1000, tinytorch::kFloat64, ReduceOp::AVG);
  w.wait();
  w.wait();  // a second wait does nothing
  CHECK(w.is_completed());
  CHECK(x[999] == Approx(double(triangle(n)) / n));

  // Poll with is_completed() (MPI_Test drives progress) instead of blocking.
  std::vector<float> y(10, 1.0f);
  dist::Work p = dist::all_reduce_async(y.data(), 10, tinytorch::kFloat32, ReduceOp::SUM);
  while (!p.is_completed()) {
  }
  CHECK(y[0] == float(n));

  std::vector<int64_t> b = {r};
  std::vector<int64_t> gathered(static_cast<size_t>(n));
  std::vector<float> rs_in(static_cast<size_t>(n), 1.0f);
  float rs_out = 0;
  dist::Work w1 = dist::broadcast_async(b.data(), 1, tinytorch::kInt64, n - 1);
  const int64_t my_rank = r;  // must stay alive until w2 completes
  dist::Work w2 = dist::all_gather_async(gathered.data(), &my_rank, 1, tinytorch::kInt64);
  dist::Work w3 = dist::reduce_scatter_async(&rs_out, rs_in.data(), 1, tinytorch::kFloat32, ReduceOp::SUM);
  dist::Work w4 = dist::barrier_async();
  w1.wait();
  w2.wait();
  w3.wait();
  w4.wait();
  CHECK(b[0] == n - 1);
  for (int k = 0; k < n; ++k) CHECK(gathered[k] == k);
  CHECK(rs_out == float(n));

  // A default-constructed Work is complete; attach() runs its step at once.
  dist::Work done;
  CHECK(done.is_completed());
  bool ran = false;
  done.attach(nullptr, [&] { ran = true; });
  CHECK(ran);
}

TEST_CASE("collectives on Tensors", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();

  Tensor t = tinytorch::full({2, 3}, double(r + 1));  // float32 (2, 3)
  dist::all_reduce(t);
  CHECK(t.tolist<double>() == std::vector<double>(6, double(triangle(n))));

  Tensor a = tinytorch::full({4}, double(r), tinytorch::kFloat64);
  dist::all_reduce(a, ReduceOp::AVG);
  CHECK(a.tolist<double>()[0] == Approx(double(triangle(n - 1)) / n));

  Tensor m = tinytorch::tensor({double(r), double(-r)}, tinytorch::kInt64);
  dist::all_reduce(m, ReduceOp::MAX);
  CHECK(m.tolist<int64_t>() == std::vector<int64_t>{n - 1, 0});

  // A teaching algorithm on a tensor, by name; it reports what it sent.
  Tensor ring = tinytorch::full({1000}, 1.0);
  dist::CommStats st = dist::all_reduce(ring, ReduceOp::SUM, "ring");
  CHECK(ring.tolist<double>()[999] == double(n));
  CHECK(st.bytes_sent == dist::ring_bytes_sent(1000, 4, n, r));

  // broadcast from the last rank
  Tensor b = tinytorch::full({3}, double(r));
  dist::broadcast(b, n - 1);
  CHECK(b.tolist<double>() == std::vector<double>(3, double(n - 1)));

  // all_gather into a list and into one tensor
  Tensor mine = tinytorch::tensor({double(r), double(r) + 0.5}, tinytorch::kFloat64);
  std::vector<Tensor> list;
  for (int k = 0; k < n; ++k) list.push_back(tinytorch::zeros({2}, tinytorch::kFloat64));
  dist::all_gather(list, mine);
  for (int k = 0; k < n; ++k) CHECK(list[k].tolist<double>() == std::vector<double>{double(k), k + 0.5});
  Tensor flat = tinytorch::zeros({n, 2}, tinytorch::kFloat64);
  dist::all_gather(flat, mine);
  CHECK(flat.tolist<double>()[2 * (n - 1)] == double(n - 1));

  // reduce_scatter: in = [r, r, ..., r] (n blocks of 2) -> each rank gets the sum 0+1+...+(n-1)
  Tensor rs_in = tinytorch::full({n * 2}, double(r));
  Tensor rs_out = tinytorch::zeros({2});
  dist::reduce_scatter(rs_out, rs_in);
  CHECK(rs_out.tolist<double>() == std::vector<double>(2, double(triangle(n - 1))));

  // async on tensors: the Work keeps the tensor alive
  dist::Work w;
  {
    Tensor tmp = tinytorch::full({5}, 2.0);
    w = dist::all_reduce_async(tmp, ReduceOp::SUM);
  }
  w.wait();
  std::vector<Tensor> list2;
  for (int k = 0; k < n; ++k) list2.push_back(tinytorch::zeros({2}, tinytorch::kFloat64));
  dist::Work wg = dist::all_gather_async(list2, mine);
  wg.wait();
  for (int k = 0; k < n; ++k) CHECK(list2[k].tolist<double>()[0] == double(k));
  Tensor b2 = tinytorch::full({2}, double(r));
  dist::broadcast_async(b2, 0).wait();
  CHECK(b2.tolist<double>()[1] == 0.0);
  Tensor rs2 = tinytorch::zeros({2});
  dist::reduce_scatter_async(rs2, rs_in, ReduceOp::AVG).wait();
  CHECK(rs2.tolist<double>()[0] == Approx(double(triangle(n - 1)) / n));
}

TEST_CASE("bad arguments throw on every rank, before any message", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  const std::string rank = "rank " + std::to_string(r) + ": ";

  Tensor square = tinytorch::zeros({3, 2});
  Tensor transposed = square.transpose(0, 1);  // (2, 3) with strides [1, 2]: not contiguous
  CHECK_THROWS_WITH(dist::all_reduce(transposed),
                    Catch::Contains(rank + "all_reduce: tensor must be contiguous (sizes [2, 3], strides [1, 2])"));
  CHECK_THROWS_WITH(dist::all_reduce(Tensor()), Catch::Contains("all_reduce: tensor is an undefined Tensor"));

  Tensor ints = tinytorch::zeros({4}, tinytorch::kInt64);
  CHECK_THROWS_WITH(dist::all_reduce(ints, ReduceOp::AVG),
                    Catch::Contains("all_reduce: ReduceOp::AVG is not supported for torch.int64"));
  int64_t raw = 1;
  CHECK_THROWS_WITH(dist::all_reduce(&raw, 1, ReduceOp::AVG),
                    Catch::Contains("ReduceOp::AVG is not supported for torch.int64"));

  CHECK_THROWS_WITH(dist::broadcast(square, n), Catch::Contains("broadcast: src rank " + std::to_string(n) +
                                                                " is outside [0, " + std::to_string(n) + ")"));
  CHECK_THROWS_WITH(dist::broadcast(square, -1), Catch::Contains("broadcast: src rank -1 is outside"));

  Tensor in = tinytorch::zeros({2});
  std::vector<Tensor> short_list(static_cast<size_t>(n + 1), tinytorch::zeros({2}));
  CHECK_THROWS_WITH(dist::all_gather(short_list, in), Catch::Contains("all_gather: output list has " +
                                                                      std::to_string(n + 1) + " tensors but world_size is " +
                                                                      std::to_string(n)));
  std::vector<Tensor> wrong_dtype(static_cast<size_t>(n), tinytorch::zeros({2}, tinytorch::kFloat64));
  CHECK_THROWS_WITH(dist::all_gather(wrong_dtype, in),
                    Catch::Contains("all_gather: output_list[0] has dtype torch.float64 but input has dtype torch.float32"));
  std::vector<Tensor> wrong_size(static_cast<size_t>(n), tinytorch::zeros({3}));
  CHECK_THROWS_WITH(dist::all_gather(wrong_size, in),
                    Catch::Contains("all_gather: output_list[0] has 3 elements (sizes [3]) but input has 2 (sizes [2])"));
  CHECK_THROWS_WITH(dist::all_gather(tinytorch::zeros({2 * n + 1}), in),
                    Catch::Contains("all_gather: output has " + std::to_string(2 * n + 1) + " elements"));

  CHECK_THROWS_WITH(dist::reduce_scatter(tinytorch::zeros({2}), tinytorch::zeros({2 * n + 1})),
                    Catch::Contains("reduce_scatter: input has " + std::to_string(2 * n + 1) +
                                    " elements (sizes [" + std::to_string(2 * n + 1) +
                                    "]) but world_size * output.numel() = " + std::to_string(n) + " * 2"));
  CHECK_THROWS_WITH(dist::reduce_scatter(tinytorch::zeros({2}), tinytorch::zeros({2 * n}, tinytorch::kFloat64)),
                    Catch::Contains("reduce_scatter: output has dtype torch.float32 but input has dtype torch.float64"));
  std::vector<float> buf(4 * static_cast<size_t>(n));
  CHECK_THROWS_WITH(dist::reduce_scatter(buf.data() + 1, buf.data(), 2), Catch::Contains("overlap"));
  CHECK_THROWS_WITH(dist::all_reduce(static_cast<float*>(nullptr), 3),
                    Catch::Contains(rank + "all_reduce: buffer is a null pointer but count is 3"));
  CHECK_THROWS_WITH(dist::all_reduce(buf.data(), -2), Catch::Contains("all_reduce: count must be >= 0, got -2"));
  CHECK_THROWS_WITH(dist::all_reduce(transposed, ReduceOp::SUM, "ring"), Catch::Contains("must be contiguous"));

  // The distributed layer remembers the last message (ProcessGroupGuard prints it on unwinding).
  CHECK_THAT(dist::detail::last_error(), Catch::Contains("ring") || Catch::Contains("contiguous"));

  // None of the calls above sent anything: this collective lines up on every rank.
  Tensor ok = tinytorch::full({1}, 1.0);
  dist::all_reduce(ok);
  CHECK(ok.tolist<double>()[0] == double(n));
}

TEST_CASE("MPI errors come back as tinytorch::Error with MPI's message and the rank", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  // The group's communicator returns errors (MPI_ERRORS_RETURN) instead of killing the process.
  MPI_Comm comm = dist::get_mpi_comm();
  int handler_ok = 0;
  MPI_Errhandler h;
  MPI_Comm_get_errhandler(comm, &h);
  handler_ok = (h == MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&h);
  CHECK(handler_ok == 1);
  float x = 0;
  const int rc = MPI_Send(&x, 1, MPI_FLOAT, n + 5, 0, comm);  // no such rank
  REQUIRE(rc != MPI_SUCCESS);
  CHECK_THROWS_WITH(dist::detail::mpi_check(rc, "MPI_Send", "test_send"),
                    Catch::Contains("rank " + std::to_string(r) + ": test_send: MPI_Send failed: ") &&
                        Catch::Contains("rank"));
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  CHECK_THROWS_WITH(dist::detail::mpi_check(rc, "MPI_Send", "test_send"), Catch::Contains(std::string(text, len)));
  dist::barrier();
}

TEST_CASE("sequence numbers count the collectives of each group; new_group has its own", "[distributed][process_group]") {
  ensure_group();
  dist::ProcessGroup& world = dist::get_default_group();
  CHECK(world.name() == "default");
  CHECK(world.rank() == dist::get_rank());
  CHECK(world.size() == dist::get_world_size());
  const uint64_t before = world.sequence_number();
  float x = 1.0f;
  dist::all_reduce(&x, 1);
  dist::barrier();
  dist::all_reduce_async(&x, 1, tinytorch::kFloat32).wait();
  CHECK(world.sequence_number() == before + 3);

  std::shared_ptr<dist::ProcessGroup> side = dist::new_group("side");
  CHECK(side->name() == "side");
  CHECK(side->size() == world.size());
  CHECK(side->rank() == world.rank());
  CHECK(side->timeout() == world.timeout());
  CHECK(side->sequence_number() == 0);
  float y = float(dist::get_rank());
  side->all_reduce(&y, 1, tinytorch::kFloat32, ReduceOp::MAX, dist::Completion::Blocking);
  CHECK(y == float(world.size() - 1));
  dist::Work w = side->all_reduce(&y, 1, tinytorch::kFloat32, ReduceOp::MIN);  // Async by default
  w.wait();
  CHECK(y == float(world.size() - 1));
  CHECK(side->sequence_number() == 2);
  CHECK(world.sequence_number() == before + 4);  // new_group: a rendezvous of the default group
}

TEST_CASE("timeout and debug level: defaults, the environment, bad values", "[distributed][process_group]") {
  const char* saved = std::getenv("TINYTORCH_DIST_TIMEOUT");
  const std::string keep = saved ? saved : "";
  ::unsetenv("TINYTORCH_DIST_TIMEOUT");
  CHECK(dist::default_timeout() == std::chrono::minutes(30));  // PyTorch's default_pg_timeout
  ::setenv("TINYTORCH_DIST_TIMEOUT", "2.5", 1);
  CHECK(dist::default_timeout() == std::chrono::milliseconds(2500));
  ::setenv("TINYTORCH_DIST_TIMEOUT", "1", 1);
  CHECK(dist::default_timeout() == dist::kMinTimeout);
  // Below 1 s (kMinTimeout) a correct program would be aborted by ordinary waits: 0.001 would
  // abort correct programs in MPI_Finalize.
  for (const char* bad : {"0", "-3", "ten", "5s", "nan", "inf", "1e10", "0x10", " 5", "0.0001", "0.001", "0.999"}) {
    ::setenv("TINYTORCH_DIST_TIMEOUT", bad, 1);
    CHECK_THROWS_WITH(dist::default_timeout(), Catch::Contains(std::string("TINYTORCH_DIST_TIMEOUT='") + bad +
                                                               "' is not a number of seconds in [1, 1e9]"));
  }
  if (saved) ::setenv("TINYTORCH_DIST_TIMEOUT", keep.c_str(), 1); else ::unsetenv("TINYTORCH_DIST_TIMEOUT");

  ensure_group();
  const dist::DebugLevel level = dist::get_debug_level();
  const char* env = std::getenv("TINYTORCH_DISTRIBUTED_DEBUG");
  CHECK(std::string(dist::debug_level_name(level)) == std::string(env && *env ? env : "OFF"));
  dist::set_debug_level(dist::DebugLevel::INFO);
  CHECK(dist::get_debug_level() == dist::DebugLevel::INFO);
  dist::set_debug_level(level);

  // init_process_group(timeout): the group keeps it; a non-positive one is refused before MPI.
  dist::destroy_process_group();
  CHECK_THROWS_WITH(dist::init_process_group(dist::Backend::MPI, std::chrono::milliseconds(0)),
                    Catch::Contains("init_process_group: timeout must be at least 1000 ms (kMinTimeout), got 0 ms"));
  CHECK_THROWS_WITH(dist::init_process_group(dist::Backend::MPI, std::chrono::milliseconds(999)),
                    Catch::Contains("init_process_group: timeout must be at least 1000 ms (kMinTimeout), got 999 ms"));
  dist::init_process_group(dist::Backend::MPI, std::chrono::seconds(42));
  CHECK(dist::get_default_group().timeout() == std::chrono::seconds(42));
  ::setenv("TINYTORCH_DISTRIBUTED_DEBUG", "LOUD", 1);
  dist::destroy_process_group();
  CHECK_THROWS_WITH(dist::init_process_group(), Catch::Contains("TINYTORCH_DISTRIBUTED_DEBUG='LOUD' is not one of OFF, INFO, DETAIL"));
  if (env) ::setenv("TINYTORCH_DISTRIBUTED_DEBUG", env, 1); else ::unsetenv("TINYTORCH_DISTRIBUTED_DEBUG");
  ensure_group();
  CHECK(dist::get_debug_level() == level);
}

TEST_CASE("DETAIL: a collective that differs across ranks is the same error on every rank", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  if (n == 1) return;
  const dist::DebugLevel level = dist::get_debug_level();
  dist::set_debug_level(dist::DebugLevel::DETAIL);
  const uint64_t seq = dist::get_default_group().sequence_number() + 1;
  std::vector<float> x(3, 1.0f);
  // The last rank reduces one element more than the others.
  const std::string expected = "collective mismatch across ranks on group \"default\" (found by "
                               "TINYTORCH_DISTRIBUTED_DEBUG=DETAIL): rank 0 is running all_reduce (sequence number " +
                               std::to_string(seq) + ", 2 torch.float32 elements, SUM) but rank " + std::to_string(n - 1) +
                               " is running all_reduce (sequence number " + std::to_string(seq) +
                               ", 3 torch.float32 elements, SUM)";
  CHECK_THROWS_WITH(dist::all_reduce(x.data(), r == n - 1 ? 3 : 2), Catch::Contains(expected));
  CHECK(x == std::vector<float>(3, 1.0f));  // nothing was reduced
  // Broadcast roots that differ; a Tensor collective; the same through the async form.
  Tensor t = tinytorch::ones({2});
  CHECK_THROWS_WITH(dist::broadcast(t, r == 0 ? 0 : 1), Catch::Contains("src 0) but rank 1 is running broadcast"));
  CHECK_THROWS_WITH(dist::all_reduce_async(x.data(), 3, tinytorch::kFloat32, r == 0 ? ReduceOp::SUM : ReduceOp::MAX),
                    Catch::Contains("SUM) but rank 1 is running all_reduce") && Catch::Contains("MAX)"));
  // Agreeing collectives still work afterwards.
  dist::all_reduce(x.data(), 3);
  CHECK(x == std::vector<float>(3, float(n)));
  dist::set_debug_level(level);
}

TEST_CASE("check_same_across_ranks names every setting that differs, on every rank", "[distributed][process_group]") {
  ensure_group();
  const int r = dist::get_rank(), n = dist::get_world_size();
  dist::check_same_across_ranks("prog", {{"--lr", "0.1"}, {"--epochs", "3"}});  // the same everywhere
  dist::check_same_across_ranks("prog", {});
  if (n == 1) return;
  const std::string last = std::to_string(n - 1);
  CHECK_THROWS_WITH(dist::check_same_across_ranks("prog", {{"--lr", r == n - 1 ? "0.2" : "0.1"},
                                                           {"--epochs", "3"},
                                                           {"--hidden", r == n - 1 ? "64" : "256,128"}}),
                    Catch::Contains("prog: the ranks disagree on settings that must match: --lr is 0.1 on rank 0 but 0.2 on rank " +
                                    last + "; --hidden is 256,128 on rank 0 but 64 on rank " + last));
  std::vector<std::pair<std::string, std::string>> some = {{"--a", "1"}};
  if (r == n - 1) some.emplace_back("--b", "2");
  CHECK_THROWS_WITH(dist::check_same_across_ranks("prog", some),
                    Catch::Contains("prog: the ranks disagree on how many settings must match: rank 0 has 1, rank " + last +
                                    " has 2"));
  // Different names at the same position: the message shows both, the same on every rank.
  CHECK_THROWS_WITH(dist::check_same_across_ranks("prog", {{r == n - 1 ? "--beta" : "--alpha", "1"}}),
                    Catch::Contains("setting 0 is --alpha=1 on rank 0 but --beta=1 on rank " + last));
  dist::barrier();  // still in step
}

TEST_CASE("a group is used by one thread at a time, and not after destroy_process_group", "[distributed][process_group]") {
  ensure_group();
  std::shared_ptr<dist::ProcessGroup> side = dist::new_group("side");
  // Another thread inside a collective of the same group: simulated by holding the group busy.
  {
    dist::ProcessGroup::Exclusive busy(*side, "test");
    float x = 1.0f;
    CHECK_THROWS_WITH(side->all_reduce(&x, 1, tinytorch::kFloat32, ReduceOp::SUM, dist::Completion::Blocking),
                      Catch::Contains("all_reduce: another thread is inside a collective of process group \"side\""));
  }
  // A Work keeps its group alive, and destroy_process_group refuses while one is pending.
  float y = 1.0f;
  dist::Work w = side->all_reduce(&y, 1, tinytorch::kFloat32);
  side.reset();
  w.wait();
  CHECK(y == float(dist::get_world_size()));
  float z = 1.0f;
  dist::Work pending = dist::all_reduce_async(&z, 1, tinytorch::kFloat32);
  if (dist::get_world_size() > 1)
    CHECK_THROWS_WITH(dist::destroy_process_group(),
                      Catch::Contains("destroy_process_group: 1 asynchronous collective(s) on the default group were "
                                      "started but never waited for"));
  pending.wait();
  CHECK(dist::get_default_group().pending() == 0);
  // After destroy, a group that is still held refuses to communicate.
  std::shared_ptr<dist::ProcessGroup> kept = dist::new_group("kept");
  dist::destroy_process_group();
  float v = 1.0f;
  CHECK_THROWS_WITH(kept->all_reduce(&v, 1, tinytorch::kFloat32, ReduceOp::SUM, dist::Completion::Blocking),
                    Catch::Contains("all_reduce: process group \"kept\" can no longer communicate"));
  ensure_group();
}

TEST_CASE("a world of size 1 without the launcher still works", "[distributed][process_group]") {
  // The world-size-1 shortcuts (no MPI calls) are exercised when this test runs as one process;
  // under mpirun this case checks the launcher detection only.
  auto [launched, var] = dist::detail::launcher_world_size();
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr) {
    CHECK(launched == 1);
    CHECK(var.empty());
  } else {
    CHECK(launched >= 1);
  }
}
