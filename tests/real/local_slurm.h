// A single-node Slurm of a test's own: munged, slurmctld and slurmd started on this machine by the
// test (Debian 12's slurm-wlm 22.05 and munge 0.5, from scripts/setup), every file of theirs — the
// munge key, slurm.conf, the state and spool directories, logs, pid files, the munge socket — in a
// temporary directory, on ports free when it starts. The client commands (sbatch, srun, squeue,
// sinfo, scancel) reach it through SLURM_CONF, which environment() gives. The destructor cancels
// every job left, stops the three daemons by the process ids it started them with (SIGTERM, then
// SIGKILL after 10 s) and removes the directory. It never signals a process it did not start.
//
// Slurm's daemons run as root here (slurmd starts every job step as its user; the tests run as
// root in CI's container). When Slurm cannot start — a program missing, not root, a daemon that
// exits or a node that is not idle within 30 s — why_not() says why, with the last lines of the
// daemon's log, for the test's GTEST_SKIP.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/run_binary.h"

namespace replisim::test {

// A process started with fork/exec, standard output and error appended to `log`; the destructor
// ends it (SIGTERM, up to `stop_wait_s` for it to exit, then SIGKILL) and reaps it.
class Daemon {
 public:
  Daemon(const std::vector<std::string>& argv, const std::string& log,
         const std::vector<std::string>& environment = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  // Whether it still runs; when it exited, `status` says how ("exit 1", "signal 9").
  bool running(std::string* status = nullptr);
  void stop(double stop_wait_s = 10);
  int pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::string exited_;  // how it ended, once reaped
};

class LocalSlurm {
 public:
  LocalSlurm();
  ~LocalSlurm();
  LocalSlurm(const LocalSlurm&) = delete;
  LocalSlurm& operator=(const LocalSlurm&) = delete;

  // Empty when the node is idle and takes jobs; else why Slurm could not start here.
  const std::string& why_not() const { return why_not_; }
  // "SLURM_CONF=<its slurm.conf>": the client commands' entry to it.
  std::vector<std::string> environment() const;
  // A client command (sbatch, srun, squeue, ...) against this Slurm.
  BinaryResult command(const std::vector<std::string>& argv, int timeout_s = 60,
                       const std::vector<std::string>& extra_environment = {}) const;
  // The node's name in Slurm (the step's SLURM_STEP_NODELIST).
  static constexpr const char* kNode = "localhost";
  // What `sinfo --version` says ("slurm-wlm 22.05.8"), for the test's log.
  std::string version() const;

  // Waits until the job `job_id` (an array job: every task) has ended, polling squeue every 0.2 s
  // for at most `timeout_s`; returns each of its tasks' final state ("COMPLETED", "FAILED", ...),
  // or an empty list when it had not ended by then.
  std::vector<std::string> wait_for_job(const std::string& job_id, double timeout_s) const;

 private:
  std::string tail_of(const std::string& log) const;

  std::string dir_;  // removed last
  std::string conf_;
  std::string why_not_;
  std::vector<std::string> daemon_logs_;
  std::vector<std::unique_ptr<Daemon>>
      daemons_;  // munged, slurmctld, slurmd: stopped in reverse order
};

}  // namespace replisim::test
