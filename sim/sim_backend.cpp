#include "sim/sim_backend.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

// simgrid/version.h needs SG_BEGIN_DECL and XBT_PUBLIC from xbt/base.h first.
#include <xbt/base.h>

#include <simgrid/version.h>

#include "core/error.h"
#include "core/trace_format.h"
#include "sim/sim_run.h"

namespace replisim::sim {
namespace {

// Status byte that starts the child's reply.
constexpr char kReplyTrace = 'T';
constexpr char kReplyInputError = 'I';
constexpr char kReplyFailure = 'E';

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

std::string read_all(int fd) {
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    bytes.append(buffer, size_t(n));
  }
  return bytes;
}

[[noreturn]] void run_child(const core::Plan& plan, int fd) {
  std::string reply;
  try {
    core::Trace trace = run_plan_in_this_process(plan);
    trace.meta["backend"] = "sim";
    trace.meta["provenance"]["simgrid"] = simgrid_version();
    std::ostringstream out;
    write_trace_binary(out, trace);
    reply = kReplyTrace + out.str();
  } catch (const core::InputError& e) {
    reply = std::string(1, kReplyInputError) + e.file() + '\n' + e.json_path() + '\n' + e.message();
  } catch (const std::exception& e) {
    reply = std::string(1, kReplyFailure) + e.what();
  }
  const bool ok = write_all(fd, reply);
  ::close(fd);
  // _exit: no atexit handlers or destructors of state inherited from the parent (test
  // frameworks, open files) may run twice.
  ::_exit(ok ? 0 : 3);
}

// SimGrid writes diagnostics (deadlock dumps, backtraces) to stderr; the parent reports failures
// in one line of its own. REPLISIM_SIMGRID_LOG=1 keeps them, for debugging.
void quiet_simgrid_unless_asked() {
  const char* keep = std::getenv("REPLISIM_SIMGRID_LOG");
  if (keep != nullptr && std::string(keep) == "1") return;
  const int null_fd = ::open("/dev/null", O_WRONLY);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDERR_FILENO);
    ::close(null_fd);
  }
}

}  // namespace

std::string simgrid_version() {
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  return "SimGrid " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

core::Trace SimBackend::run(const core::Plan& plan) {
  core::validate_plan(plan, "<plan>");
  int fds[2];
  if (::pipe(fds) != 0) {
    throw core::BackendError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw core::BackendError(std::string("cannot fork the simulation: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // Die with the parent: a killed replisim must not leave a simulation running.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(4);
    quiet_simgrid_unless_asked();
    run_child(plan, fds[1]);
  }
  ::close(fds[1]);
  const std::string reply = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (reply.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exit status " + std::to_string(WEXITSTATUS(status));
    throw core::BackendError("the simulation process failed (" + why + ")");
  }
  const std::string body = reply.substr(1);
  switch (reply[0]) {
    case kReplyTrace: {
      std::istringstream in(body);
      return core::read_trace_binary(in, "<simulation>");
    }
    case kReplyInputError: {
      const size_t first = body.find('\n');
      const size_t second = body.find('\n', first + 1);
      throw core::InputError(body.substr(0, first), body.substr(first + 1, second - first - 1),
                             body.substr(second + 1));
    }
    default:
      throw core::BackendError(body);
  }
}

void register_sim_backend() {
  core::register_backend({"sim", "SimGrid simulation (predicts the plan)",
                          [] { return std::make_unique<SimBackend>(); }});
}

}  // namespace replisim::sim
