// labs/common/lab_main.cpp — the Catch2 main() of every lab's test program, and the report that
// scripts/lab.py turns into the per-task table of `scripts/lab.sh check`.
//
// A lab's tests are ordinary Catch2 v2 TEST_CASEs, each tagged with the task it checks,
// e.g. TEST_CASE("reduce-scatter leaves the sum of chunk r+1", "[task:reduce_scatter]").
// scripts/lab.py runs the program once per task (`lab_07 "[task:reduce_scatter]"`, under
// scripts/mpirun.sh for an MPI lab) with TT_LAB_REPORT=<file>; this main then writes, besides
// Catch2's own console output, one line per event to <file>.rank<R> (R = the MPI rank, 0
// without MPI), flushed at once so that nothing is lost when a rank is aborted or crashes:
//
//   case<TAB><test case name><TAB><tags>
//   fail<TAB><file>:<line><TAB><what failed: the check as written, its values, INFO messages,
//        or the exception's message>       (newlines written as \n)
//   end<TAB><test case name><TAB><assertions passed><TAB><assertions failed>
//
// lab.py reads "not implemented" (tinytorch::NotImplemented, thrown by the skeletons), a failure
// (the first `fail` line, with the rank), a task that ran no check at all (a test that silently
// never ran is a failure, not a pass) or a pass.
//
// Built with TT_LAB_MPI=1 for the labs that run on several ranks: MPI is initialised before the
// first test and finalised after the last, and a rank whose test case failed calls MPI_Abort after
// writing its report, so the other ranks do not wait in a collective until the timeout.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <tinytorch/tinytorch.hpp>
#if TT_LAB_MPI
#include <tinytorch/distributed.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

namespace {

int mpi_rank() {
#if TT_LAB_MPI
  int rank = 0, initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
#else
  return 0;
#endif
}

/// One line of the report: tabs and newlines inside a field are escaped.
std::string field(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += ' ';
    else
      out += c;
  }
  return out;
}

std::ofstream& report() {
  static std::ofstream out;
  return out;
}

struct LabReport : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;

  void testRunStarting(Catch::TestRunInfo const& info) override {
    TestEventListenerBase::testRunStarting(info);
    const char* path = std::getenv("TT_LAB_REPORT");
    if (path != nullptr && *path != '\0')
      report().open(std::string(path) + ".rank" + std::to_string(mpi_rank()), std::ios::trunc);
  }

  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    TestEventListenerBase::testCaseStarting(info);
    if (report().is_open()) report() << "case\t" << field(info.name) << '\t' << info.tagsAsString() << std::endl;
  }

  bool assertionEnded(Catch::AssertionStats const& stats) override {
    const Catch::AssertionResult& r = stats.assertionResult;
    if (report().is_open() && !r.isOk()) {
      std::string what;
      // An exception outside any CHECK has the expression "{Unknown expression after the reported line}".
      if (r.hasExpression() && r.getExpression().rfind("{Unknown", 0) != 0) {
        what = r.getExpressionInMacro();
        const std::string expanded = r.getExpandedExpression();
        if (expanded != r.getExpression()) what += " with values: " + expanded;
      }
      if (r.getResultType() == Catch::ResultWas::ThrewException) what += (what.empty() ? "" : " ") + std::string("threw: ");
      if (r.hasMessage()) what += (what.empty() || what.back() == ' ' ? "" : "; ") + r.getMessage();
      for (const Catch::MessageInfo& m : stats.infoMessages)
        if (m.type == Catch::ResultWas::Info) what += " [" + m.message + "]";
      const Catch::SourceLineInfo& at = r.getSourceInfo();
      report() << "fail\t" << at.file << ':' << at.line << '\t' << field(what) << std::endl;
    }
    return TestEventListenerBase::assertionEnded(stats);
  }

  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    TestEventListenerBase::testCaseEnded(stats);
    if (report().is_open())
      report() << "end\t" << field(stats.testInfo.name) << '\t' << stats.totals.assertions.passed << '\t'
               << stats.totals.assertions.failed << std::endl;
#if TT_LAB_MPI
    int size = 1, finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (stats.totals.assertions.failed > 0 && size > 1 && !finalized) {
      std::cout.flush();
      std::cerr << "[rank " << mpi_rank() << "] test case '" << stats.testInfo.name
                << "' failed; MPI_Abort so that the other ranks do not wait for it" << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
#endif
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(LabReport)

int main(int argc, char** argv) {
#if TT_LAB_MPI
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
#endif
  Catch::Session session;
  int status = session.applyCommandLine(argc, argv);
  if (status == 0) {
    if (session.configData().useColour == Catch::UseColour::Auto) session.configData().useColour = Catch::UseColour::No;
    status = session.run();
  }
#if TT_LAB_MPI
  namespace dist = tinytorch::distributed;
  if (dist::is_initialized()) {
    try {
      dist::destroy_process_group();
    } catch (const std::exception& e) {
      std::cerr << "lab_main: destroy_process_group after the tests: " << e.what() << std::endl;
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  MPI_Finalize();
#endif
  return status;
}
