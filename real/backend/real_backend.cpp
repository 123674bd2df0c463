// The launcher: one `replisim node` process per task, their progress, their failures, and the
// merge of their traces.
#include "real/backend/real_backend.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <cblas.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <asio/version.hpp>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/base/version.h"
#include "core/trace/trace_format.h"
#include "core/trace/trace_merge.h"
#include "real/cluster.h"

namespace replisim::real {
namespace {

namespace fs = std::filesystem;
using core::InputError;

struct Settings {
  int threads = 1;
  std::string checkpoint_dir;
  std::string node_binary;  // "": this executable
  bool node_is_self = false;
  double connect_timeout_s = 30;
};

Settings read_settings(const nlohmann::json& j) {
  Settings s;
  if (!j.is_object()) throw InputError("", "settings", "must be an object");
  for (const auto& [key, value] : j.items()) {
    if (key == "threads" && value.is_number_integer() && value.get<int64_t>() >= 1 &&
        value.get<int64_t>() <= 64) {
      s.threads = value.get<int>();
    } else if (key == "checkpoint_dir" && value.is_string()) {
      s.checkpoint_dir = value.get<std::string>();
    } else if (key == "node_binary" && value.is_string() && !value.get<std::string>().empty()) {
      s.node_binary = value.get<std::string>();
    } else if (key == "connect_timeout_s" && value.is_number() && value.get<double>() > 0 &&
               value.get<double>() <= 3600) {
      s.connect_timeout_s = value.get<double>();
    } else {
      throw InputError("", key,
                       "not a setting of the real backend, or a bad value (threads 1..64, "
                       "checkpoint_dir, node_binary, connect_timeout_s 0..3600)");
    }
  }
  if (s.node_binary.empty()) {
    s.node_is_self = true;
    std::error_code ec;
    s.node_binary = fs::read_symlink("/proc/self/exe", ec).string();
    if (ec) s.node_binary = "/proc/self/exe";
  }
  return s;
}

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

// A listening socket on 127.0.0.1 at a free port (close-on-exec; the child clears it on its own).
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

// Every node of the run: started, watched, and on any way out killed and reaped.
class Nodes {
 public:
  struct Node {
    std::string task;  // "worker1"
    std::string role;  // the role it was started as
    std::string host;
    pid_t pid = -1;
    int status = 0;
    bool exited = false;
    bool killed_here = false;  // by the launcher, after another's failure
    fs::path log;
  };
  ~Nodes() { kill_all(); }
  std::vector<Node> nodes;

  void kill_all() {
    for (Node& n : nodes) {
      if (n.pid > 0 && !n.exited) {
        ::kill(n.pid, SIGKILL);
        n.killed_here = true;
      }
    }
    for (Node& n : nodes) {
      if (n.pid > 0 && !n.exited) {
        ::waitpid(n.pid, &n.status, 0);
        n.exited = true;
      }
    }
  }
  // Reaps the nodes that exited; returns how many are still running.
  size_t reap() {
    size_t running = 0;
    for (Node& n : nodes) {
      if (n.exited) continue;
      const pid_t r = ::waitpid(n.pid, &n.status, WNOHANG);
      if (r == n.pid) {
        n.exited = true;
      } else {
        ++running;
      }
    }
    return running;
  }
  const Node* failed() const {
    for (const Node& n : nodes) {
      if (n.exited && !(WIFEXITED(n.status) && WEXITSTATUS(n.status) == 0)) return &n;
    }
    return nullptr;
  }
};

// The node's own one-line error from its log ("replisim: error: ..."), or how it ended.
std::string error_line(const Nodes::Node& n) {
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

// The first task's own error: a line that is not a consequence of another's. A task killed by a
// signal says nothing itself: it is named, with the line of the first task that saw it go (which
// has the step).
std::string root_cause(const Nodes& nodes) {
  // A task that died by a signal (or was stopped by SIGINT/SIGTERM: exit 130) comes first: the
  // others' lines are about losing it.
  std::string killed;
  for (const Nodes::Node& n : nodes.nodes) {
    if (!n.exited || n.killed_here) continue;
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
  for (const Nodes::Node& n : nodes.nodes) {
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

// Progress lines from the chief's pipe, parsed as they come.
class ProgressPipe {
 public:
  explicit ProgressPipe(int fd) : fd_(fd) {}
  ~ProgressPipe() {
    if (fd_ >= 0) ::close(fd_);
  }
  void poll(const std::function<void(const core::RunProgress&)>& progress) {
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
      if (!progress) continue;
      try {
        const nlohmann::json j = nlohmann::json::parse(line);
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

 private:
  int fd_;
  std::string buffer_;
};

struct RunDir {
  fs::path path;
  bool keep = false;
  ~RunDir() {
    std::error_code ec;
    if (!keep && !path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

core::BackendInfo RealBackend::info() const {
  // The engines a real trace was measured with ("Asio 1.28.1", OpenBLAS's build line).
  std::string blas = openblas_get_config();
  while (!blas.empty() && blas.back() == ' ') blas.pop_back();
  const std::string asio = "Asio " + std::to_string(ASIO_VERSION / 100000) + "." +
                           std::to_string(ASIO_VERSION / 100 % 1000) + "." +
                           std::to_string(ASIO_VERSION % 100);
  return {kName,
          "runs the plan on real processes of this machine over loopback TCP",
          {{"asio", asio}, {"blas", blas}}};
}

core::RunOutcome RealBackend::do_run(const core::Plan& plan, core::TraceSink& sink,
                                     const core::RunOptions& options) {
  const Settings settings = read_settings(options.settings);
  if (!plan.faults.empty()) {
    throw InputError("", "faults",
                     "the real backend does not inject faults yet: simulate this plan, or run "
                     "a scenario without faults");
  }
  const bool writes = plan.checkpoints.every_s > 0 || plan.checkpoints.summary_every_steps > 0;
  if (writes && settings.checkpoint_dir.empty()) {
    throw InputError("", "--checkpoint-dir",
                     "the plan's chief writes checkpoints or summaries: give a directory");
  }
  // The run's directory: the plan, the cluster spec, each node's log and trace.
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/replisim-run-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) {
    throw core::OutputError(pattern, std::strerror(errno));
  }
  RunDir dir{fs::path(buffer.data())};

  ClusterSpec spec;
  spec.tasks = tasks_of_plan(plan);
  spec.token = random_token();
  std::vector<int> listeners;
  struct CloseAll {
    std::vector<int>& fds;
    ~CloseAll() {
      for (int fd : fds) ::close(fd);
    }
  } close_listeners{listeners};
  for (ClusterTask& task : spec.tasks) {
    task.host = "127.0.0.1";
    listeners.push_back(listen_loopback(&task.port));
  }
  const fs::path plan_file = dir.path / "plan.json";
  const fs::path cluster_file = dir.path / "cluster.json";
  write_text(plan_file, core::dump_json(core::plan_to_json(plan), 1) + "\n");
  write_text(cluster_file, core::dump_json(cluster_spec_to_json(spec, false), 1) + "\n");
  const TaskMap map = map_roles(plan, spec, cluster_file.string());

  int progress_pipe[2] = {-1, -1};
  if (::pipe2(progress_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    throw core::BackendError(std::string("pipe: ") + std::strerror(errno));
  }
  ProgressPipe progress(progress_pipe[0]);
  Nodes nodes;
  const std::string token_env = std::string(kClusterTokenVariable) + "=" + spec.token;
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    const std::string task = spec.tasks[t].name();
    const std::string role = plan.roles[size_t(map.roles_of_task[t].front())].name;
    const bool chief = int(t) == map.coordinator_task;  // progress comes from the coordinator
    std::vector<std::string> argv = {settings.node_binary,
                                     "node",
                                     "--plan",
                                     plan_file.string(),
                                     "--role",
                                     role,
                                     "--cluster",
                                     cluster_file.string(),
                                     "--listen-fd",
                                     std::to_string(listeners[t]),
                                     "--trace-out",
                                     (dir.path / (task + ".trace")).string(),
                                     "--threads",
                                     std::to_string(settings.threads),
                                     "--connect-timeout",
                                     std::to_string(settings.connect_timeout_s),
                                     "--launched"};
    if (!settings.checkpoint_dir.empty()) {
      argv.insert(argv.end(), {"--checkpoint-dir", settings.checkpoint_dir});
    }
    if (chief) argv.insert(argv.end(), {"--progress-fd", std::to_string(progress_pipe[1])});
    Nodes::Node node{task,  role,  spec.tasks[t].host,        -1, 0,
                     false, false, dir.path / (task + ".log")};
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const std::string log = node.log.string();
    const pid_t parent = ::getpid();
    const bool use_self = settings.node_is_self;
    const pid_t pid = ::fork();
    if (pid < 0) throw core::BackendError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      // The child: dies with the launcher; keeps its socket (and the chief its pipe) across exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (out >= 0) {
        ::dup2(out, STDOUT_FILENO);
        ::dup2(out, STDERR_FILENO);
      }
      ::fcntl(listeners[t], F_SETFD, 0);
      if (chief) ::fcntl(progress_pipe[1], F_SETFD, 0);
      ::putenv(const_cast<char*>(token_env.c_str()));
      // This executable itself even when its file was replaced since (a rebuild): its argv[0]
      // still names it for ps.
      ::execv(use_self ? "/proc/self/exe" : args[0], args.data());
      const std::string why =
          "replisim: error: cannot start " + argv[0] + ": " + std::strerror(errno) + "\n";
      (void)!::write(STDERR_FILENO, why.data(), why.size());
      ::_exit(127);
    }
    node.pid = pid;
    nodes.nodes.push_back(node);
  }
  ::close(progress_pipe[1]);

  // Watch: progress, exits, cancellation. A task that failed stops the others within their own
  // detection (its ERROR frames, or a lost connection); after a grace period they are killed.
  constexpr auto kPoll = std::chrono::milliseconds(50);
  constexpr double kGraceS = 5;
  std::optional<std::chrono::steady_clock::time_point> failed_at;
  for (;;) {
    progress.poll(options.progress);
    const size_t running = nodes.reap();
    if (options.cancelled && options.cancelled()) {
      for (Nodes::Node& n : nodes.nodes) {
        if (!n.exited) ::kill(n.pid, SIGTERM);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      nodes.kill_all();
      throw core::RunCancelled();
    }
    if (running == 0) break;
    if (nodes.failed() != nullptr) {
      const auto now = std::chrono::steady_clock::now();
      if (!failed_at) failed_at = now;
      if (now - *failed_at > std::chrono::duration<double>(kGraceS)) {
        nodes.kill_all();
        break;
      }
    }
    std::this_thread::sleep_for(kPoll);
  }
  progress.poll(options.progress);
  if (nodes.failed() != nullptr) {
    dir.keep = true;
    throw core::BackendError(root_cause(nodes) + " (logs: " + dir.path.string() + ")");
  }
  std::vector<core::Trace> traces;
  size_t chief = 0;
  for (size_t t = 0; t < spec.tasks.size(); ++t) {
    std::vector<core::Trace> runs =
        core::read_trace_file(nodes.nodes[t].log.parent_path() / (spec.tasks[t].name() + ".trace"));
    if (runs.size() != 1) {
      throw core::BackendError("task " + spec.tasks[t].name() + " wrote " +
                               std::to_string(runs.size()) + " runs");
    }
    if (int(t) == map.coordinator_task) chief = t;
    traces.push_back(std::move(runs.front()));
  }
  return core::emit_merged_parts(traces, chief, sink);
}

void register_real_backend() {
  core::register_backend({RealBackend::kName, "real processes over loopback TCP",
                          [] { return std::make_unique<RealBackend>(); }});
}

}  // namespace replisim::real
