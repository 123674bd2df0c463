#include "real/isolate/netns.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "core/base/error.h"

namespace replisim::real::isolate {
namespace {

namespace fs = std::filesystem;

// Where `ip netns add` mounts its namespaces (iproute2's NETNS_RUN_DIR).
const char* const kNetnsDir = "/run/netns";

// Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot ("" when the
// process does not exist).
std::string start_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return "";
  // The command name (field 2) is in parentheses and may hold spaces: count after the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && (fields >> field); ++i) {
    if (i == 22) return field;
  }
  return "";
}

std::string run_id_of_this_process() {
  return std::string(kNamePrefix) + std::to_string(::getpid()) + "-" + start_ticks(::getpid());
}

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/sbin:/usr/bin:/sbin:/bin";
  dirs += ":/usr/sbin:/sbin";  // where Debian puts ip and tc, off a normal user's PATH
  std::istringstream in(dirs);
  std::string dir;
  while (std::getline(in, dir, ':')) {
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// Runs an iproute2 command; throws BackendError with its message when it fails.
void ip_or_throw(const std::vector<std::string>& argv) {
  std::string output;
  if (run_tool(argv, &output) == 0) return;
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  std::replace(output.begin(), output.end(), '\n', ' ');
  throw core::BackendError("shaped network: `" + command + "` failed: " + output);
}

// tbf's rate for a NIC of `bytes_per_s` on the wire: tbf counts each segment's IP packet and
// Ethernet header (1514 bytes of a full one) but not the framing around it, so its rate is the
// wire's scaled by 1514/1538 (netns.h).
std::string rate_text(double bytes_per_s) {
  return std::to_string(uint64_t(std::llround(bytes_per_s * 8 * kTbfBytesPerWireByte))) + "bit";
}

}  // namespace

int run_tool(const std::vector<std::string>& argv, std::string* output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw core::BackendError(std::string("pipe: ") + std::strerror(errno));
  std::vector<std::string> copy = argv;
  std::vector<char*> args;
  for (std::string& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw core::BackendError(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    // Debian keeps ip and tc in /usr/sbin, off a normal user's PATH.
    std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "/usr/bin:/bin";
    path += ":/usr/sbin:/sbin";
    ::setenv("PATH", path.c_str(), 1);
    ::execvp(args[0], args.data());
    const std::string why = std::string("cannot run ") + args[0] + ": " + std::strerror(errno);
    (void)!::write(STDERR_FILENO, why.data(), why.size());
    ::_exit(127);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, size_t(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (output != nullptr) *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void check_can_isolate() {
  if (::geteuid() != 0) {
    throw core::InputError("", "--isolate",
                           "netns needs root to create network namespaces, veth links and tc "
                           "qdiscs (CAP_NET_ADMIN and CAP_SYS_ADMIN): run as root or with sudo, "
                           "or run without --isolate (loopback)");
  }
  for (const char* tool : {"ip", "tc"}) {
    if (!on_path(tool)) {
      throw core::InputError("", "--isolate",
                             std::string("netns needs the `") + tool +
                                 "` command of iproute2, which is not installed: apt-get install "
                                 "iproute2 (or run scripts/setup)");
    }
  }
  // Root is not always enough (a container without CAP_SYS_ADMIN, a kernel without veth or tbf):
  // a namespace with a shaped veth pair, made and removed.
  const std::string probe = run_id_of_this_process() + "-probe";
  std::string output;
  const std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", probe},
      {"ip", "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"},
      {"tc", "-n", probe, "qdisc", "add", "dev", "p0", "root", "tbf", "rate", "1mbit", "burst",
       "32k", "latency", "100ms"}};
  std::string failed;
  for (const std::vector<std::string>& step : steps) {
    if (run_tool(step, &output) != 0) {
      for (const std::string& a : step) failed += (failed.empty() ? "" : " ") + a;
      break;
    }
  }
  run_tool({"ip", "netns", "delete", probe}, nullptr);
  if (!failed.empty()) {
    while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
    std::replace(output.begin(), output.end(), '\n', ' ');
    throw core::InputError(
        "", "--isolate",
        "netns cannot shape links on this machine: `" + failed + "` failed: " + output);
  }
}

uint64_t tbf_burst_bytes(double rate_bytes_per_s) {
  const double one_ms = std::ceil(rate_bytes_per_s * 1e-3);
  return uint64_t(std::clamp(one_ms, double(kMinTbfBurstBytes), double(kMaxTbfBurstBytes)));
}

ShapedNetwork::ShapedNetwork(const std::vector<NicShape>& nics, const std::vector<RackShape>& racks)
    : run_(run_id_of_this_process()), nics_(nics), racks_(racks), factor_(nics.size(), 1.0) {
  remove_leftovers();
  try {
    make();
  } catch (...) {
    remove();
    throw;
  }
}

ShapedNetwork::~ShapedNetwork() {
  remove();
}

std::string ShapedNetwork::address(size_t machine) const {
  return std::string(kSubnet) + "." + std::to_string(machine / 250) + "." +
         std::to_string(machine % 250 + 1);
}

std::string ShapedNetwork::namespace_name(size_t machine) const {
  return run_ + "-m" + std::to_string(machine);
}

std::string ShapedNetwork::port_namespace(size_t machine) const {
  return nics_[machine].rack < 0 ? switch_namespace() : rack_namespace(size_t(nics_[machine].rack));
}

void ShapedNetwork::make() {
  if (nics_.size() > 250 * 250) throw core::BackendError("shaped network: too many machines");
  const std::string sw = switch_namespace();
  ip_or_throw({"ip", "netns", "add", sw});
  switch_made_ = true;
  ip_or_throw({"ip", "-n", sw, "link", "add", "br0", "type", "bridge"});
  ip_or_throw({"ip", "-n", sw, "link", "set", "br0", "up"});
  // Racks: a bridge each, joined to the switch's bridge by its shaped uplink.
  for (size_t r = 0; r < racks_.size(); ++r) {
    if (!(racks_[r].up_bytes_per_s > 0) || !(racks_[r].down_bytes_per_s > 0)) {
      throw core::BackendError("shaped network: rack " + racks_[r].rack +
                               " has no uplink bandwidth");
    }
    const std::string rack = rack_namespace(r);
    const std::string core_port = "r" + std::to_string(r);
    ip_or_throw({"ip", "netns", "add", rack});
    racks_made_ = r + 1;
    ip_or_throw({"ip", "-n", rack, "link", "add", "br0", "type", "bridge"});
    ip_or_throw({"ip", "-n", rack, "link", "set", "br0", "up"});
    ip_or_throw({"ip", "-n", sw, "link", "add", core_port, "type", "veth", "peer", "name", "core",
                 "netns", rack});
    ip_or_throw({"ip", "-n", sw, "link", "set", core_port, "master", "br0", "up"});
    ip_or_throw({"ip", "-n", rack, "link", "set", "core", "master", "br0", "up"});
    ip_or_throw({"tc", "-n", rack, "qdisc", "add", "dev", "core", "root", "tbf", "rate",
                 rate_text(racks_[r].up_bytes_per_s), "burst",
                 std::to_string(tbf_burst_bytes(racks_[r].up_bytes_per_s)), "latency", "100ms"});
    ip_or_throw({"tc", "-n", sw, "qdisc", "add", "dev", core_port, "root", "tbf", "rate",
                 rate_text(racks_[r].down_bytes_per_s), "burst",
                 std::to_string(tbf_burst_bytes(racks_[r].down_bytes_per_s)), "latency", "100ms"});
  }
  for (size_t i = 0; i < nics_.size(); ++i) {
    if (!(nics_[i].up_bytes_per_s > 0) || !(nics_[i].down_bytes_per_s > 0)) {
      throw core::BackendError("shaped network: machine " + nics_[i].machine +
                               " has no NIC bandwidth");
    }
    if (nics_[i].rack >= int(racks_.size())) {
      throw core::BackendError("shaped network: machine " + nics_[i].machine + " in no rack");
    }
    const std::string ns = namespace_name(i);
    const std::string port = "m" + std::to_string(i);
    const std::string bridge = port_namespace(i);
    ip_or_throw({"ip", "netns", "add", ns});
    machines_made_ = i + 1;
    ip_or_throw({"ip", "-n", bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0",
                 "netns", ns});
    ip_or_throw({"ip", "-n", bridge, "link", "set", port, "master", "br0", "up"});
    ip_or_throw({"ip", "-n", ns, "addr", "add", address(i) + "/16", "dev", "eth0"});
    ip_or_throw({"ip", "-n", ns, "link", "set", "eth0", "up"});
    ip_or_throw({"ip", "-n", ns, "link", "set", "lo", "up"});
    shape(i, "add", 1.0);
    const std::string path = std::string(kNetnsDir) + "/" + ns;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw core::BackendError("shaped network: open " + path + ": " + std::strerror(errno));
    ns_fds_.push_back(fd);
  }
}

// tbf on machine i's eth0 (its upload) and on the bridge's end of its veth (its download).
void ShapedNetwork::shape(size_t i, const char* verb, double factor) {
  const std::string up = rate_text(nics_[i].up_bytes_per_s * factor);
  const std::string down = rate_text(nics_[i].down_bytes_per_s * factor);
  // latency: the most a packet may wait in tbf's queue (its length), generous enough that TCP
  // sees the rate rather than drops.
  ip_or_throw({"tc", "-n", namespace_name(i), "qdisc", verb, "dev", "eth0", "root", "tbf", "rate",
               up, "burst", std::to_string(tbf_burst_bytes(nics_[i].up_bytes_per_s)), "latency",
               "100ms"});
  ip_or_throw({"tc", "-n", port_namespace(i), "qdisc", verb, "dev", "m" + std::to_string(i), "root",
               "tbf", "rate", down, "burst",
               std::to_string(tbf_burst_bytes(nics_[i].down_bytes_per_s)), "latency", "100ms"});
}

void ShapedNetwork::set_nic_factor(size_t machine, double factor) {
  const double before = factor_[machine];
  if (factor == before) return;
  const std::string ns = namespace_name(machine);
  if (factor <= 0) {
    ip_or_throw({"ip", "-n", ns, "link", "set", "eth0", "down"});
  } else {
    shape(machine, "change", factor);
    if (before <= 0) ip_or_throw({"ip", "-n", ns, "link", "set", "eth0", "up"});
  }
  factor_[machine] = factor;
}

int ShapedNetwork::listen(size_t machine, uint16_t* port) const {
  // setns(2) moves only the calling thread: a short-lived thread makes the socket, which stays
  // in the namespace it was made in.
  int fd = -1;
  std::string error;
  const int ns = ns_fds_[machine];
  const std::string host = address(machine);
  std::thread maker([&] {
    if (::setns(ns, CLONE_NEWNET) != 0) {
      error = std::string("setns: ") + std::strerror(errno);
      return;
    }
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = std::string("socket: ") + std::strerror(errno);
      return;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, host.c_str(), &a.sin_addr);
    socklen_t size = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) != 0) {
      error = std::string("listen on ") + host + ": " + std::strerror(errno);
      ::close(fd);
      fd = -1;
      return;
    }
    *port = ntohs(a.sin_port);
  });
  maker.join();
  if (fd < 0) throw core::BackendError("shaped network: " + namespace_name(machine) + ": " + error);
  return fd;
}

void ShapedNetwork::remove() noexcept {
  for (int fd : ns_fds_) ::close(fd);
  ns_fds_.clear();
  // Removing a namespace removes its end of each veth, and with it the other end.
  for (size_t i = 0; i < machines_made_; ++i) {
    run_tool({"ip", "netns", "delete", namespace_name(i)}, nullptr);
  }
  machines_made_ = 0;
  for (size_t r = 0; r < racks_made_; ++r) {
    run_tool({"ip", "netns", "delete", rack_namespace(r)}, nullptr);
  }
  racks_made_ = 0;
  if (switch_made_) run_tool({"ip", "netns", "delete", switch_namespace()}, nullptr);
  switch_made_ = false;
}

std::vector<std::string> remove_leftovers() {
  std::vector<std::string> removed;
  std::error_code ec;
  if (!fs::is_directory(kNetnsDir, ec)) return removed;
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(kNetnsDir, ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  const size_t prefix = std::strlen(kNamePrefix);
  for (const std::string& name : names) {
    if (name.compare(0, prefix, kNamePrefix) != 0) continue;
    // "replisim-<pid>-<ticks>-<part>"
    const size_t dash1 = name.find('-', prefix);
    const size_t dash2 = dash1 == std::string::npos ? dash1 : name.find('-', dash1 + 1);
    if (dash2 == std::string::npos) continue;
    const std::string pid_text = name.substr(prefix, dash1 - prefix);
    const std::string ticks = name.substr(dash1 + 1, dash2 - dash1 - 1);
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos ||
        pid_text.size() > 9) {
      continue;
    }
    if (start_ticks(pid_t(std::stol(pid_text))) == ticks) continue;  // its launcher is alive
    if (run_tool({"ip", "netns", "delete", name}, nullptr) == 0) removed.push_back(name);
  }
  return removed;
}

}  // namespace replisim::real::isolate
