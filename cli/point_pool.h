// Runs a sweep's points as child processes of this replisim (`replisim simulate POINT ...`), at
// most N at once, and reports each as it ends. Cancelling kills and reaps every child it started.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace replisim::cli {

struct PointCommand {
  std::vector<std::string> args;  // replisim's arguments ("simulate", FILE, ...)
  std::string log_path;           // the child's standard error goes here (standard output: nowhere)
};

struct PointExit {
  size_t command = 0;           // index into the commands given
  int exit_code = 0;            // -1: killed by a signal
  double wall_s = 0;            // from start to exit
  std::string last_error_line;  // the last non-empty line of its standard error, if it failed
};

// The environment variable through which a point's child learns its parent's pid.
inline constexpr const char* kParentPidVariable = "REPLISIM_PARENT_PID";

// In a child that run_point_commands started (kParentPidVariable set): asks the kernel for
// SIGTERM when the parent dies (SIGKILL included), which the child's interrupt handling turns
// into a clean stop (exit 130, no output). Call early in main(), after the handlers are in place.
void end_with_spawning_parent();

// A child's error line without replisim's prefix ("replisim: error: " or "replisim: ").
std::string without_replisim_prefix(const std::string& line);

// What a failed child said, for the user: its error line without the prefix, the scenario copy it
// read (`copy`: a sweep point's cached scenario, --seeds' snapshot) named as the user's
// `scenario`; or its exit code when it said nothing.
std::string child_error(const PointExit& exit, const std::string& copy,
                        const std::string& scenario);

// Runs `commands` with this executable (/proc/self/exe), `jobs` (>= 1) at a time, in order;
// `on_exit` is called in this thread as each ends (in the order they end). Polls `cancelled`
// every 50 ms: once it is true, sends SIGTERM to every running child (SIGKILL after 5 s), reaps
// them all, and throws core::RunCancelled. Throws core::OutputError when a child cannot be
// started (its log file cannot be created, or spawning fails).
void run_point_commands(const std::vector<PointCommand>& commands, int jobs,
                        const std::function<void(const PointExit&)>& on_exit,
                        const std::function<bool()>& cancelled);

}  // namespace replisim::cli
