#include "sim/sim_backend.h"

#include <ext/stdio_filebuf.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <istream>
#include <iterator>
#include <ostream>

#include <fcntl.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

// simgrid/version.h needs SG_BEGIN_DECL and XBT_PUBLIC from xbt/base.h first.
#include <xbt/base.h>

#include <simgrid/version.h>

#include "core/base/error.h"
#include "core/trace/trace_format.h"
#include "sim/sim_run.h"

namespace replisim::sim {
namespace {

// Status byte that starts the child's reply.
constexpr char kReplyTrace = 'T';
constexpr char kReplyInputError = 'I';
constexpr char kReplyFailure = 'E';

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

// The child's reply on the pipe: one status byte, then for kReplyTrace the engine's wall time
// (a double, beside the trace so that traces stay deterministic) and the native trace, streamed;
// for errors a text.
[[noreturn]] void run_child(const core::Plan& plan, int fd) {
  int code = 0;
  {
    __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out, 1 << 16);
    std::ostream out(&buffer);
    try {
      double engine_wall_s = 0;
      core::Trace trace = run_plan_in_this_process(plan, &engine_wall_s);
      trace.meta["backend"] = "sim";
      trace.meta["provenance"]["simgrid"] = simgrid_version();
      out.put(kReplyTrace);
      out.write(reinterpret_cast<const char*>(&engine_wall_s), sizeof engine_wall_s);
      write_trace_binary(out, trace);
    } catch (const core::InputError& e) {
      out << kReplyInputError << e.file() << '\n' << e.json_path() << '\n' << e.message();
    } catch (const std::exception& e) {
      out << kReplyFailure << e.what();
    }
    out.flush();
    code = out ? 0 : 3;
  }  // closes the pipe
  // _exit: no atexit handlers or destructors of state inherited from the parent (test
  // frameworks, open files) may run twice.
  ::_exit(code);
}

}  // namespace

std::string simgrid_version() {
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  return "SimGrid " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

core::Trace SimBackend::run(const core::Plan& plan) {
  const auto start = std::chrono::steady_clock::now();
  core::validate_plan(plan, "<plan>");
  int fds[2];
  if (::pipe(fds) != 0) {
    throw core::BackendError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  const pid_t parent = ::getpid();
  std::fflush(nullptr);  // buffered output must not be written twice
  // Give the freed heap back first: the child inherits the parent's heap, and a fragmented one
  // (after an earlier run's trace) slows the simulation's many small allocations.
  ::malloc_trim(0);
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
  // Decode the trace while the child writes it (no copy of the whole reply).
  char status = 0;
  std::string text;
  core::Trace trace;
  bool decoded = false;
  std::string decode_error;
  {
    __gnu_cxx::stdio_filebuf<char> buffer(fds[0], std::ios::in, 1 << 16);
    std::istream in(&buffer);
    in.get(status);
    if (in && status == kReplyTrace) {
      in.read(reinterpret_cast<char*>(&last_engine_wall_s_), sizeof last_engine_wall_s_);
      try {
        trace = core::read_trace_binary(in, "<simulation>");
        decoded = true;
      } catch (const core::InputError& e) {
        decode_error = e.what();
      }
    } else if (in) {
      text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
  }  // closes the pipe
  int status_code = 0;
  while (::waitpid(pid, &status_code, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status_code) || WEXITSTATUS(status_code) != 0 || status == 0) {
    const std::string why = WIFSIGNALED(status_code)
                                ? "killed by signal " + std::to_string(WTERMSIG(status_code))
                                : "exit status " + std::to_string(WEXITSTATUS(status_code));
    throw core::BackendError("the simulation process failed (" + why + ")");
  }
  if (status == kReplyTrace) {
    if (!decoded) throw core::BackendError("bad trace from the simulation: " + decode_error);
    last_total_wall_s_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return trace;
  }
  if (status == kReplyInputError) {
    const size_t first = text.find('\n');
    const size_t second = text.find('\n', first + 1);
    throw core::InputError(text.substr(0, first), text.substr(first + 1, second - first - 1),
                           text.substr(second + 1));
  }
  throw core::BackendError(text);
}

namespace {
constexpr const char* kName = "sim";
constexpr const char* kDescription = "SimGrid simulation (predicts the plan)";
}  // namespace

core::BackendInfo SimBackend::info() const {
  return {kName, kDescription, {{"simgrid", simgrid_version()}}};
}

void register_sim_backend() {
  core::register_backend({kName, kDescription, [] { return std::make_unique<SimBackend>(); }});
}

}  // namespace replisim::sim
