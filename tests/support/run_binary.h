// Runs the replisim executable in a child process and captures its exit code and output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace replisim::test {

struct BinaryResult {
  int exit_code = -1;  // -1 when killed by a signal
  std::string out;
  std::string err;
};

// Runs REPLISIM_BINARY with `args` (no shell), waiting at most `timeout_s` seconds; its standard
// input is empty, or `standard_input`.
BinaryResult run_replisim(const std::vector<std::string>& args, int timeout_s = 120);
BinaryResult run_replisim(const std::vector<std::string>& args, const std::string& standard_input,
                          int timeout_s = 120);

// As run_replisim, with every file it writes limited to `max_file_bytes` (RLIMIT_FSIZE), as
// `ulimit -f` does: SIGXFSZ at its default action (replisim must ignore it to fail with EFBIG).
// `environment`: "NAME=value" entries added to the child's environment.
BinaryResult run_replisim_with_file_limit(const std::vector<std::string>& args,
                                          uint64_t max_file_bytes, int timeout_s = 120,
                                          const std::vector<std::string>& environment = {});

// Runs the program argv[0] (found in PATH, as execvp finds it, when it has no slash) with the
// rest of `argv`, as run_replisim runs replisim: no shell, standard input empty, killed by SIGALRM
// after `timeout_s` seconds (exit_code -1), `environment`'s "NAME=value" entries added.
BinaryResult run_program(const std::vector<std::string>& argv, int timeout_s = 120,
                         const std::vector<std::string>& environment = {});

// A replisim process whose standard error is read line by line while it runs (standard input
// empty, standard output captured). The destructor kills and reaps it if it still runs.
class RunningReplisim {
 public:
  // `environment`: "NAME=value" entries added to the child's environment. `max_open_files` > 0:
  // the child's descriptors limited to that many (RLIMIT_NOFILE, soft and hard: `ulimit -n`).
  explicit RunningReplisim(const std::vector<std::string>& args, int timeout_s = 120,
                           const std::vector<std::string>& environment = {},
                           int max_open_files = 0);
  ~RunningReplisim();
  RunningReplisim(const RunningReplisim&) = delete;
  RunningReplisim& operator=(const RunningReplisim&) = delete;

  // The next line of its standard error, without the newline; false at its end.
  bool next_error_line(std::string* line);
  void send_signal(int signal);
  // Waits for it to exit: its exit code (-1 when a signal killed it), standard output, and the
  // standard error not read yet.
  BinaryResult wait();
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int err_fd_ = -1;
  std::string out_path_;
  std::string pending_;  // standard error read but not yet returned
  std::string capture_dir_;
};

// A fresh temporary directory, removed with its content by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  // Writes `content` to `name` inside the directory and returns its path.
  std::string write(const std::string& name, const std::string& content) const;
  // The same, readable by its owner only (mode 0600): a cluster spec that holds its token.
  std::string write_private(const std::string& name, const std::string& content) const;

 private:
  std::string path_;
};

std::string read_file(const std::string& path);
// A port nobody listens on now on 127.0.0.1 (bound, read, closed).
int free_port();
bool file_exists(const std::string& path);

// One process of this machine as /proc showed it.
struct ProcessInfo {
  int pid = -1;
  int parent_pid = -1;
  std::vector<std::string> args;  // its command line, one entry per argument
};

// Every process /proc lists now. Safe against processes that exit while it reads: one whose files
// vanish (or fail with ESRCH) midway is left out, never an exception.
std::vector<ProcessInfo> list_processes();
// The processes among `list_processes()` whose parent is `parent_pid`.
std::vector<ProcessInfo> child_processes(int parent_pid);
// Whether `args` holds `flag` followed by `value` ("--role", "worker1").
bool has_argument(const ProcessInfo& process, const std::string& flag, const std::string& value);

}  // namespace replisim::test
