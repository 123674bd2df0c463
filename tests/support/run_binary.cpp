#include "tests/support/run_binary.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace replisim::test {

BinaryResult run_replisim(const std::vector<std::string>& args, int timeout_s) {
  return run_replisim(args, std::string(), timeout_s);
}

namespace {

// argv for REPLISIM_BINARY with `args`; the strings live in `storage`.
std::vector<char*> argv_of(const std::vector<std::string>& args,
                           std::vector<std::string>& storage) {
  storage.clear();
  storage.push_back(REPLISIM_BINARY);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

// Runs argv[0] (looked up in PATH when it has no slash) with the rest of `argv`.
BinaryResult run_argv(const std::vector<std::string>& argv_in, const std::string& standard_input,
                      int timeout_s, uint64_t max_file_bytes,
                      const std::vector<std::string>& environment = {}) {
  std::vector<std::string> entries = environment;  // putenv keeps the pointers
  TempDir capture;
  const std::string out_path = capture.file("stdout"), err_path = capture.file("stderr");
  const std::string in_path = capture.write("stdin", standard_input);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int in = ::open(in_path.c_str(), O_RDONLY);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    std::vector<std::string> storage = argv_in;
    std::vector<char*> argv;
    for (std::string& a : storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : entries) ::putenv(e.data());
    if (max_file_bytes > 0) {
      // As `ulimit -f` in a shell: SIGXFSZ keeps its default (to end the process); replisim
      // ignores it itself, so that the write fails with EFBIG instead.
      ::signal(SIGXFSZ, SIG_DFL);
      const rlimit limit{rlim_t(max_file_bytes), rlim_t(max_file_bytes)};
      ::setrlimit(RLIMIT_FSIZE, &limit);
    }
    ::alarm(unsigned(timeout_s));  // a hung run dies with SIGALRM rather than hang the suite
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  BinaryResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

BinaryResult run(const std::vector<std::string>& args, const std::string& standard_input,
                 int timeout_s, uint64_t max_file_bytes,
                 const std::vector<std::string>& environment = {}) {
  std::vector<std::string> argv = {REPLISIM_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_argv(argv, standard_input, timeout_s, max_file_bytes, environment);
}

}  // namespace

BinaryResult run_program(const std::vector<std::string>& argv, int timeout_s,
                         const std::vector<std::string>& environment) {
  return run_argv(argv, "", timeout_s, 0, environment);
}

BinaryResult run_replisim(const std::vector<std::string>& args, const std::string& standard_input,
                          int timeout_s) {
  return run(args, standard_input, timeout_s, 0);
}

BinaryResult run_replisim_with_file_limit(const std::vector<std::string>& args,
                                          uint64_t max_file_bytes, int timeout_s,
                                          const std::vector<std::string>& environment) {
  return run(args, "", timeout_s, max_file_bytes, environment);
}

RunningReplisim::RunningReplisim(const std::vector<std::string>& args, int timeout_s,
                                 const std::vector<std::string>& environment, int max_open_files) {
  std::vector<std::string> entries = environment;  // putenv keeps the pointers
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/replisim-run-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  capture_dir_ = pattern;
  out_path_ = capture_dir_ + "/stdout";
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe failed");
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int in = ::open("/dev/null", O_RDONLY);
    const int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    std::vector<std::string> storage;
    std::vector<char*> argv = argv_of(args, storage);
    for (std::string& e : entries) ::putenv(e.data());
    if (max_open_files > 0) {
      const rlimit limit{rlim_t(max_open_files), rlim_t(max_open_files)};
      ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    ::alarm(unsigned(timeout_s));
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  err_fd_ = fds[0];
}

RunningReplisim::~RunningReplisim() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (err_fd_ >= 0) ::close(err_fd_);
  std::error_code ignored;
  std::filesystem::remove_all(capture_dir_, ignored);
}

bool RunningReplisim::next_error_line(std::string* line) {
  for (;;) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      *line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      return true;
    }
    char buffer[4096];
    const ssize_t n = err_fd_ >= 0 ? ::read(err_fd_, buffer, sizeof buffer) : 0;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    pending_.append(buffer, size_t(n));
  }
}

void RunningReplisim::send_signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

BinaryResult RunningReplisim::wait() {
  BinaryResult result;
  std::string line;
  while (next_error_line(&line)) result.err += line + "\n";
  result.err += pending_;
  pending_.clear();
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_file(out_path_);
  return result;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/replisim-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;  // a destructor must not throw; leftovers stay under TMPDIR
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& content) const {
  const std::string path = file(name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

std::string TempDir::write_private(const std::string& name, const std::string& content) const {
  const std::string path = write(name, content);
  ::chmod(path.c_str(), 0600);
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool file_exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
  ::close(fd);
  return ntohs(a.sin_port);
}

namespace {

// The whole content of a /proc file, or nothing when the process is gone (open or read fails).
// POSIX reads: std::filebuf throws from underflow when read() fails with ESRCH.
std::optional<std::string> read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    content.append(buffer, size_t(n));
  }
  ::close(fd);
  return content;
}

}  // namespace

std::vector<ProcessInfo> list_processes() {
  std::vector<ProcessInfo> processes;
  std::error_code error;
  std::filesystem::directory_iterator it("/proc", error);
  for (; !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::optional<std::string> stat = read_proc_file(it->path().string() + "/stat");
    const std::optional<std::string> cmdline = read_proc_file(it->path().string() + "/cmdline");
    if (!stat || !cmdline) continue;
    // "pid (comm) state ppid ...": the fields after the command's closing parenthesis.
    const size_t close = stat->rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat->substr(close + 1));
    char state = 0;
    ProcessInfo p;
    if (!(rest >> state >> p.parent_pid)) continue;
    p.pid = std::stoi(name);
    for (size_t begin = 0; begin < cmdline->size();) {
      const size_t end = std::min(cmdline->find('\0', begin), cmdline->size());
      p.args.push_back(cmdline->substr(begin, end - begin));
      begin = end + 1;
    }
    processes.push_back(std::move(p));
  }
  return processes;
}

std::vector<ProcessInfo> child_processes(int parent_pid) {
  std::vector<ProcessInfo> children;
  for (ProcessInfo& p : list_processes()) {
    if (p.parent_pid == parent_pid) children.push_back(std::move(p));
  }
  return children;
}

bool has_argument(const ProcessInfo& process, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < process.args.size(); ++i) {
    if (process.args[i] == flag && process.args[i + 1] == value) return true;
  }
  return false;
}

}  // namespace replisim::test
