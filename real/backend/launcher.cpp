#include "real/backend/launcher.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/error.h"
#include "core/base/temp_dir.h"

namespace replisim::real::launch {

std::string random_token() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw core::BackendError("no random bytes for a token");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

int listen_loopback(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw core::BackendError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    throw core::BackendError("cannot listen on 127.0.0.1: " + why);
  }
  *port = ntohs(address.sin_port);
  return fd;
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw core::OutputError(path.string(), std::strerror(errno));
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

void NodeGroup::start(NodeProcess process, const NodeCommand& command) {
  std::vector<std::string> argv = command.argv;
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> environment = command.environment;
  const std::string log = process.log.string();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw core::BackendError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // The child: dies with the launcher; keeps its socket (and the coordinator its pipe) across
    // exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    if (command.netns_fd >= 0 && ::setns(command.netns_fd, CLONE_NEWNET) != 0) {
      const std::string why =
          std::string("replisim: error: cannot enter the run's network namespace: ") +
          std::strerror(errno) + "\n";
      (void)!::write(STDERR_FILENO, why.data(), why.size());
      ::_exit(127);
    }
    if (!command.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : command.cpus) CPU_SET(c, &set);
      if (::sched_setaffinity(0, sizeof set, &set) != 0) {
        const std::string why = std::string("replisim: error: cannot pin the task to its cores: ") +
                                std::strerror(errno) + "\n";
        (void)!::write(STDERR_FILENO, why.data(), why.size());
        ::_exit(127);
      }
    }
    for (int fd : command.keep_fds) ::fcntl(fd, F_SETFD, 0);
    for (std::string& e : environment) ::putenv(e.data());
    ::execv(command.binary_is_self ? "/proc/self/exe" : command.binary.c_str(), args.data());
    const std::string why =
        "replisim: error: cannot start " + command.binary + ": " + std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, why.data(), why.size());
    ::_exit(127);
  }
  process.pid = pid;
  nodes.push_back(std::move(process));
}

void NodeGroup::kill_all() {
  for (NodeProcess& n : nodes) {
    if (n.pid > 0 && !n.exited) {
      ::kill(n.pid, SIGKILL);
      n.killed_here = true;
    }
  }
  for (NodeProcess& n : nodes) {
    if (n.pid > 0 && !n.exited) {
      ::waitpid(n.pid, &n.status, 0);
      n.exited = true;
    }
  }
}

void NodeGroup::terminate() {
  for (NodeProcess& n : nodes) {
    if (!n.exited) ::kill(n.pid, SIGTERM);
  }
}

size_t NodeGroup::reap(const std::function<bool(const NodeProcess&)>& planned) {
  size_t running = 0;
  for (NodeProcess& n : nodes) {
    if (n.exited) continue;
    const pid_t r = ::waitpid(n.pid, &n.status, WNOHANG);
    if (r != n.pid) {
      ++running;
      continue;
    }
    n.exited = true;
    n.planned_death =
        !n.killed_here && WIFSIGNALED(n.status) && WTERMSIG(n.status) == SIGKILL && planned(n);
  }
  return running;
}

bool NodeProcess::died_unplanned() const {
  return exited && !planned_death && (lingered || (!killed_here && WIFSIGNALED(status)));
}

bool NodeProcess::stopped() const {
  if (exited || pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  const size_t close = line.rfind(')');  // "pid (comm) state ..."
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'T';
}

size_t NodeGroup::kill_stopped_leftovers() {
  bool any_ended = false, all_stopped = true;
  size_t running = 0;
  for (const NodeProcess& n : nodes) {
    if (n.exited) {
      any_ended = true;
      continue;
    }
    ++running;
    all_stopped &= n.stopped();
  }
  if (!any_ended || running == 0 || !all_stopped) return 0;
  for (NodeProcess& n : nodes) {
    if (n.exited) continue;
    ::kill(n.pid, SIGKILL);
    ::waitpid(n.pid, &n.status, 0);
    n.exited = true;
    n.lingered = true;
  }
  return running;
}

const NodeProcess* NodeGroup::failed() const {
  for (const NodeProcess& n : nodes) {
    if (n.exited && !n.planned_death && !n.died_unplanned() &&
        !(WIFEXITED(n.status) && WEXITSTATUS(n.status) == 0)) {
      return &n;
    }
  }
  return nullptr;
}

namespace {

// The node's own one-line error from its log ("replisim: error: ..."), or how it ended.
std::string error_line(const NodeProcess& n) {
  std::ifstream in(n.log);
  std::string line, found;
  while (std::getline(in, line)) {
    for (const char* prefix : {"replisim: error: ", "replisim: internal error: "}) {
      if (line.rfind(prefix, 0) == 0) found = line.substr(std::strlen(prefix));
    }
  }
  if (!found.empty()) return found;
  if (WIFSIGNALED(n.status)) {
    return "task " + n.task + " was killed by signal " + std::to_string(WTERMSIG(n.status));
  }
  return "task " + n.task + " exited with status " +
         std::to_string(WIFEXITED(n.status) ? WEXITSTATUS(n.status) : -1);
}

}  // namespace

// The first task's own error: a line that is not a consequence of another's. A task killed by a
// signal (not by the plan) says nothing itself: it is named, with the line of the first task that
// saw it go (which has the step).
std::string root_cause(const NodeGroup& group) {
  std::string killed;
  for (const NodeProcess& n : group.nodes) {
    if (!n.exited || n.killed_here || n.planned_death) continue;
    const std::string who = n.role + " (task " + n.task + " on " + n.host + ")";
    if (WIFSIGNALED(n.status)) {
      killed = who + " was killed by signal " + std::to_string(WTERMSIG(n.status)) + " (" +
               ::strsignal(WTERMSIG(n.status)) + ")";
    } else if (WIFEXITED(n.status) && WEXITSTATUS(n.status) == 130) {
      killed = who + " was stopped by SIGINT or SIGTERM";
    }
    if (!killed.empty()) break;
  }
  std::string any, observed;
  for (const NodeProcess& n : group.nodes) {
    if (!n.exited || !WIFEXITED(n.status) || WEXITSTATUS(n.status) == 0 ||
        WEXITSTATUS(n.status) == 130) {
      continue;
    }
    const std::string line = error_line(n);
    const bool consequence = line.find("stopped because") != std::string::npos;
    if (!consequence && killed.empty()) return line;
    if (!consequence && observed.empty()) observed = line;
    if (any.empty()) any = line;
  }
  if (!killed.empty()) return observed.empty() ? killed : killed + "; " + observed;
  return any.empty() ? "a task failed without saying why" : any;
}

ProgressPipe::~ProgressPipe() {
  if (fd_ >= 0) ::close(fd_);
}

void ProgressPipe::poll(const std::function<void(const core::RunProgress&)>& progress) {
  if (fd_ < 0) return;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n <= 0) break;
    buffer_.append(chunk, size_t(n));
  }
  size_t newline;
  while ((newline = buffer_.find('\n')) != std::string::npos) {
    const std::string line = buffer_.substr(0, newline);
    buffer_.erase(0, newline + 1);
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.contains("origin_clock_s")) {
        origin_clock_s = j.at("origin_clock_s").get<double>();
        ++starts;
        continue;
      }
      if (!progress) continue;
      core::RunProgress p;
      p.time_s = j.at("time_s").get<double>();
      p.global_step = j.at("global_step").get<int64_t>();
      p.steps_done = j.at("steps_done").get<std::vector<int64_t>>();
      progress(p);
    } catch (const nlohmann::json::exception&) {
      // A line that is not progress: ignored (progress is a display, not the result).
    }
  }
}

RunDir::~RunDir() {
  std::error_code ec;
  if (!keep && !path.empty()) fs::remove_all(path, ec);
}

fs::path make_run_dir() {
  return core::make_temp_dir("replisim-run");
}

}  // namespace replisim::real::launch
