// The local launcher's parts (internal to real/backend): the processes of one incarnation of a
// run (one `replisim node` per task, started with its listening socket and the cluster token,
// watched, and on any way out killed and reaped), their progress lines, and the one line that
// says why a run failed.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend.h"

namespace replisim::real::launch {

namespace fs = std::filesystem;

// 64 hex digits from OpenSSL's RAND_bytes. Throws core::BackendError.
std::string random_token();
// A listening socket on 127.0.0.1 at a free port (close-on-exec). Throws core::BackendError.
int listen_loopback(uint16_t* port);
// Writes `text` to `path`. Throws core::OutputError naming it.
void write_text(const fs::path& path, const std::string& text);

// One task's process.
struct NodeProcess {
  std::string task;     // "worker1"
  int task_index = -1;  // in the cluster spec
  std::string role;     // the role it was started as
  std::string host;
  fs::path log;    // its standard output and error
  fs::path trace;  // its part of the trace
  pid_t pid = -1;
  int status = 0;
  bool exited = false;
  bool killed_here = false;  // by the launcher, after another's failure
  // Killed by the launcher because it was stopped (SIGSTOP: its peers declared it lost after
  // their silence deadline) when every other task had ended: as good as dead from outside.
  bool lingered = false;
  // Died by a fault of the plan (SIGKILL of a task the plan's faults kill).
  bool planned_death = false;
  // Killed by a signal from outside (kill -9, the OOM killer): no fault of the plan, and not the
  // launcher. Its peers go on as TF's do (a worker) or fail the job (a task it cannot lose).
  bool died_unplanned() const;
  // Stopped (SIGSTOP, SIGTSTP: state T in /proc/PID/stat) while it has not exited.
  bool stopped() const;
  // Its trace part as written so far (a launched node writes it there until it ends well).
  fs::path partial_trace() const { return fs::path(trace.string() + ".partial"); }
};

// What start() runs: the executable, its arguments (argv[0] first), the descriptors the child
// keeps across exec (its listening socket, the coordinator's progress pipe) and its environment
// additions ("NAME=value").
struct NodeCommand {
  std::string binary;
  bool binary_is_self = false;  // exec /proc/self/exe (this executable, even if replaced since)
  std::vector<std::string> argv;
  std::vector<int> keep_fds;
  std::vector<std::string> environment;
  // A network namespace (an open /run/netns descriptor) the child enters before exec; -1: none.
  int netns_fd = -1;
  // The cores the child is pinned to before exec (sched_setaffinity; its threads inherit it);
  // empty: not pinned.
  std::vector<int> cpus;
};

// The cores this process may run on (sched_getaffinity), in order.
std::vector<int> allowed_cpus();

// The tasks of one incarnation. The destructor kills (SIGKILL) and reaps any still running.
class NodeGroup {
 public:
  ~NodeGroup() { kill_all(); }
  // Forks and execs `command` (the child dies with this process: PR_SET_PDEATHSIG), output into
  // process.log. Throws core::BackendError when fork fails.
  void start(NodeProcess process, const NodeCommand& command);
  void kill_all();
  // Reaps what exited; returns how many still run. `planned(process)`: whether a SIGKILL that
  // ended it was a fault of the plan.
  size_t reap(const std::function<bool(const NodeProcess&)>& planned);
  // A task that ended otherwise than the plan says (not exit 0, not a planned death, not a death
  // from outside that its peers judge), or null.
  const NodeProcess* failed() const;
  // SIGTERM to every running task.
  void terminate();
  // When every task still running is stopped and another has ended: SIGKILL them (lingered) and
  // reap them. Returns how many.
  size_t kill_stopped_leftovers();
  std::vector<NodeProcess> nodes;
};

// The first task's own error line, the task a signal killed first (with the line of the first
// task that saw it go), or "a task failed without saying why".
std::string root_cause(const NodeGroup& group);

// The coordinator's progress lines, read as they come (non-blocking): {"origin_clock_s"} once
// at the start, then {"time_s", "global_step", "steps_done"}.
class ProgressPipe {
 public:
  explicit ProgressPipe(int fd) : fd_(fd) {}
  ~ProgressPipe();
  ProgressPipe(const ProgressPipe&) = delete;
  ProgressPipe& operator=(const ProgressPipe&) = delete;
  void poll(const std::function<void(const core::RunProgress&)>& progress);
  // The run's t = 0 on this machine's monotonic clock, once the coordinator said it.
  std::optional<double> origin_clock_s;
  // How many starts the coordinators said (the first, then one per restart that started).
  int starts = 0;

 private:
  int fd_;
  std::string buffer_;
};

// The run's working directory: removed at the end unless `keep`.
struct RunDir {
  fs::path path;
  bool keep = false;
  RunDir() = default;
  explicit RunDir(fs::path p) : path(std::move(p)) {}
  RunDir(RunDir&& other) noexcept : path(std::move(other.path)), keep(other.keep) {
    other.path.clear();
  }
  RunDir& operator=(RunDir&&) = delete;
  RunDir(const RunDir&) = delete;
  ~RunDir();
};
// A new directory "replisim-run-XXXXXX" under $TMPDIR (or /tmp). Throws core::OutputError.
fs::path make_run_dir();

}  // namespace replisim::real::launch
