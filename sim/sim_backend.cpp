#include "sim/sim_backend.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <istream>

#include <fcntl.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

// simgrid/version.h needs SG_BEGIN_DECL and XBT_PUBLIC from xbt/base.h first.
#include <xbt/base.h>

#include <simgrid/version.h>

#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/trace/trace_format.h"
#include "sim/sim_channel.h"
#include "sim/sim_run.h"
#include "sim/sim_settings.h"

namespace replisim::sim {
namespace {

constexpr const char* kName = "sim";
constexpr const char* kDescription = "SimGrid simulation (predicts the plan)";
constexpr const char* kSource = "<simulation>";

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

// The child's channel, for report_internal_error().
detail::ChildChannel* reporting_channel = nullptr;

// Sends `what` to the parent as an internal error and ends the child. An exception may not leave a
// SimGrid actor (SimGrid aborts the process, and the parent would see only "killed by signal 6"):
// a broken invariant (core::set_invariant_failure_hook) or an exception that reaches
// std::terminate is reported here instead.
[[noreturn]] void report_internal_error(const std::string& what) {
  try {
    if (reporting_channel != nullptr) reporting_channel->internal_error(what);
  } catch (...) {  // the parent is gone: nobody to tell
  }
  ::_exit(1);
}

[[noreturn]] void report_escaped_exception() {
  std::string what = "internal error: an exception left the simulation";
  if (const std::exception_ptr escaped = std::current_exception()) {
    try {
      std::rethrow_exception(escaped);
    } catch (const core::InternalError& e) {
      what = e.what();
    } catch (const std::exception& e) {
      what += std::string(": ") + e.what();
    } catch (...) {
    }
  }
  report_internal_error(what);
}

// The child: simulates, streaming records and progress into the pipe, then the outcome (or the
// error) as its last frame.
[[noreturn]] void run_child(const core::Plan& plan, const SimSettings& settings, int fd,
                            bool with_progress) {
  int code = 0;
  detail::ChildChannel channel(fd);
  reporting_channel = &channel;
  core::set_invariant_failure_hook(&report_internal_error);
  std::set_terminate(&report_escaped_exception);
  try {
    try {
      std::function<void(const core::RunProgress&)> progress;
      if (with_progress) progress = [&channel](const core::RunProgress& p) { channel.progress(p); };
      // The outcome goes out before SimGrid's engine is torn down, and the child ends there:
      // the teardown (every actor's stack, every host) only costs time here.
      run_plan_in_this_process(plan, channel, progress, settings, [&](const SimResult& result) {
        channel.outcome(result.outcome, result.engine_wall_s, result.setup_wall_s, result.sharing);
        ::close(fd);
        ::_exit(0);
      });
    } catch (const core::InputError& e) {
      channel.input_error(e.file(), e.json_path(), e.message());
    } catch (const std::exception& e) {
      channel.failure(e.what());
    }
  } catch (const std::exception&) {
    code = 3;  // the pipe broke: the parent is gone or gave up
  }
  ::close(fd);
  // _exit: no atexit handlers or destructors of state inherited from the parent (test
  // frameworks, open files) may run twice.
  ::_exit(code);
}

pid_t fork_child(const core::Plan& plan, const SimSettings& settings, int fds[2],
                 bool with_progress) {
  if (::pipe(fds) != 0) {
    throw core::BackendError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
#ifdef F_SETPIPE_SZ
  // A larger pipe lets the simulation run ahead of the parent's decoding when that pauses,
  // instead of waiting on every 64 KiB frame (1,024 workers x 40 steps: 0.38 s in write() with
  // 64 KiB, 0.12 to 0.29 s with 256 KiB). Not more: a user's pipes share a soft limit
  // (pipe-user-pages-soft, 64 MiB by default), past which Linux gives new pipes one page, and
  // a sweep runs a simulation per core. Best effort: refused, the pipe keeps its 64 KiB.
  constexpr int kPipeBytes = 256 << 10;
  (void)::fcntl(fds[1], F_SETPIPE_SZ, kPipeBytes);
#endif
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
    run_child(plan, settings, fds[1], with_progress);
  }
  ::close(fds[1]);
  return pid;
}

// Waits for the child; its status as words when it did not exit with 0.
std::string reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  return WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                             : "exit status " + std::to_string(WEXITSTATUS(status));
}

// Stops the child and closes the pipe, whatever happened (a sink's exception, a cancel).
class ChildGuard {
 public:
  ChildGuard(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  ~ChildGuard() {
    if (fd_ >= 0) ::close(fd_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      reap(pid_);
    }
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  int fd() const { return fd_; }
  // Closes the pipe and waits for the child to exit on its own.
  std::string finish() {
    ::close(fd_);
    fd_ = -1;
    const std::string why = reap(pid_);
    pid_ = -1;
    return why;
  }

 private:
  pid_t pid_;
  int fd_;
};

}  // namespace

std::string simgrid_version() {
  int major = 0, minor = 0, patch = 0;
  sg_version_get(&major, &minor, &patch);
  return "SimGrid " + std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(patch);
}

core::BackendInfo SimBackend::info() const {
  return {kName, kDescription, {{"simgrid", simgrid_version()}}};
}

SimBackend::~SimBackend() {
  abandon_run();
}

void SimBackend::start_run(const core::Plan& plan, const core::RunOptions& options) {
  abandon_run();  // one run at a time: a child left over is stopped
  child_started_ = std::chrono::steady_clock::now();
  const SimSettings settings = read_sim_settings(options.settings);
  int fds[2];
  child_pid_ = fork_child(plan, settings, fds, bool(options.progress));
  child_fd_ = fds[0];
}

void SimBackend::abandon_run() noexcept {
  if (child_pid_ < 0) return;
  const ChildGuard stop(child_pid_, child_fd_);  // kills and reaps it, closes the pipe
  child_pid_ = child_fd_ = -1;
}

core::RunOutcome SimBackend::do_run(const core::Plan& plan, core::TraceSink& sink,
                                    const core::RunOptions& options) {
  if (child_pid_ < 0) start_run(plan, options);
  const auto start = child_started_;
  ChildGuard child(child_pid_, child_fd_);
  child_pid_ = child_fd_ = -1;
  const int read_fd = child.fd();
  // Decode the records while the child writes them (no copy of the whole run).
  detail::ParentChannel channel(read_fd, options.cancelled, options.progress);
  std::istream in(&channel);
  std::string decode_error;
  uint32_t strings = 0;
  try {
    core::read_trace_records(in, kSource, sink, strings);
  } catch (const core::InputError& e) {
    decode_error = e.what();
  }
  using End = detail::ParentChannel::End;
  const bool cancelled =
      channel.end() == End::kCancelled || (options.cancelled && options.cancelled());
  if (cancelled) throw core::RunCancelled();  // the guard kills the child
  // Records that do not decode: the child is stopped (by the guard) rather than waited for.
  if (!decode_error.empty() && channel.end() == End::kOpen) {
    throw core::BackendError("bad trace from the simulation: " + decode_error);
  }
  const std::string why = child.finish();
  const std::string& text = channel.final_payload();
  if (channel.end() == End::kInternalError) throw core::InternalError(text);  // then exit 1
  if (!why.empty() || channel.end() == End::kClosed) {
    throw core::BackendError("the simulation process failed (" +
                             (why.empty() ? std::string("its pipe closed early") : why) + ")");
  }
  if (channel.end() == End::kInputError) {
    const size_t first = text.find('\n');
    const size_t second = text.find('\n', first + 1);
    throw core::InputError(text.substr(0, first), text.substr(first + 1, second - first - 1),
                           text.substr(second + 1));
  }
  if (channel.end() == End::kFailure) throw core::BackendError(text);
  if (channel.end() != End::kOutcome || !decode_error.empty()) {
    throw core::BackendError(
        "bad trace from the simulation: " +
        (decode_error.empty() ? std::string("a corrupt frame") : decode_error));
  }
  core::RunOutcome outcome;
  try {
    outcome = core::run_outcome_from_json(core::parse_json_text(text, kSource), kSource);
  } catch (const core::InputError& e) {
    throw core::BackendError(std::string("bad outcome from the simulation: ") + e.what());
  }
  last_engine_wall_s_ = channel.engine_wall_s();
  last_setup_wall_s_ = channel.setup_wall_s();
  last_sharing_ = channel.sharing_stats();
  last_total_wall_s_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

nlohmann::json SimBackend::settings_provenance(const core::RunOptions& options) const {
  return sim_settings_provenance(read_sim_settings(options.settings));
}

void register_sim_backend() {
  core::register_backend({kName, kDescription, [] { return std::make_unique<SimBackend>(); }});
}

}  // namespace replisim::sim
