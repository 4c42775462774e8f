// bench/load_watch.hpp — says whether a benchmark's figure can be trusted on a shared machine.
//
//   bench::LoadWatch watch;                     // before the timed part
//   ... run ...
//   watch.report(stdout, our_cpu_seconds, idle_cores_needed, "the DDP row");   // after it
//
// prints, e.g.
//   load: 1-minute load average 0.31 before, 0.85 after; over 9.9 s this run used 1.41 cores, other processes 0.03 (of 2)
// and, when other processes held more than a quarter of a core beyond those the figure leaves free
// (DDP on 2 ranks needs both cores of this VM, a 1-thread bench one of them), a warning line
// beginning with "WARNING: load" that says how many cores the other processes held. How: /proc/stat's busy
// jiffies (user + nice + system + irq + softirq + steal, all CPUs) before and after give the
// core-seconds the whole machine was busy; getrusage gives this process's own (the caller adds
// the other ranks' for an MPI run); the difference, divided by the wall time, is what everything
// else held. Linux only: elsewhere the line says "load: unknown" and no warning is given.
// Chapters: chapters/05-data-parallel.md 5.8, chapters/06-distributed-data-parallel.md.
#pragma once

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace bench {

class LoadWatch {
 public:
  LoadWatch() : t0_(std::chrono::steady_clock::now()), load0_(load_average()), busy0_(machine_busy_seconds()) {}

  /// CPU seconds (user + system) this process and its waited-for children have used so far: sum
  /// it over the ranks of an MPI run and pass the difference between after and before to report().
  static double process_cpu_seconds() {
    double s = 0;
    for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
      rusage u{};
      getrusage(who, &u);
      s += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    }
    return s;
  }

  /// Core-seconds that processes other than ours held during the run, per second of wall time;
  /// negative when unknown.
  double other_cores(double our_cpu_seconds) const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const double busy1 = machine_busy_seconds();
    if (busy0_ < 0 || busy1 < 0 || wall <= 0) return -1;
    const double other = (busy1 - busy0_ - our_cpu_seconds) / wall;
    return other < 0 ? 0 : other;
  }

  /// Prints the load line and, when other processes held more than the cores the figure leaves
  /// free (all but `idle_cores_needed`) plus a quarter of a core, a WARNING line; each line starts
  /// with `prefix` ("# " in a table whose comments start so). Returns whether it warned.
  bool report(std::FILE* out, double our_cpu_seconds, int idle_cores_needed, const char* figure,
              const char* prefix = "") const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const double other = other_cores(our_cpu_seconds);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (other < 0) {
      std::fprintf(out, "%sload: unknown (no /proc/stat)\n", prefix);
      return false;
    }
    if (wall < 0.5) {  // /proc/stat counts in 10 ms ticks: too coarse to judge a shorter run
      std::fprintf(out, "%sload: the run took %.2f s, too short to judge what other processes held\n", prefix, wall);
      return false;
    }
    std::fprintf(out,
                 "%sload: 1-minute load average %.2f before, %.2f after; over %.1f s this run used %.2f cores, "
                 "other processes %.2f (of %ld)\n",
                 prefix, load0_, load_average(), wall, our_cpu_seconds / wall, other, cores);
    if (idle_cores_needed > cores) {
      std::fprintf(out,
                   "%sWARNING: load: %s need %d cores and this machine has %ld: the figures show the cores being "
                   "shared, not what the method gives\n",
                   prefix, figure, idle_cores_needed, cores);
      return true;
    }
    if (idle_cores_needed > 0 && other > static_cast<double>(cores - idle_cores_needed) + 0.25) {
      std::fprintf(out,
                   "%sWARNING: load: other processes held %.2f cores during the run, and %s need %d idle cores: "
                   "do not quote these figures, run again on a quiet machine\n",
                   prefix, other, figure, idle_cores_needed);
      return true;
    }
    return false;
  }

  static double load_average() {
    double l = -1;
    if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
      if (std::fscanf(f, "%lf", &l) != 1) l = -1;
      std::fclose(f);
    }
    return l;
  }

 private:
  /// Seconds all CPUs together have been busy since boot (/proc/stat's first line); -1 if unknown.
  static double machine_busy_seconds() {
    std::FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system, &idle,
                              &iowait, &irq, &softirq, &steal);
    std::fclose(f);
    if (n < 7) return -1;
    return static_cast<double>(user + nice + system + irq + softirq + steal) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }

  std::chrono::steady_clock::time_point t0_;
  double load0_;
  double busy0_;
};

}  // namespace bench
