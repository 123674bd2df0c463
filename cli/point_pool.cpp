#include "cli/point_pool.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/error.h"

extern char** environ;

namespace replisim::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Child {
  size_t command;
  Clock::time_point started;
};

pid_t spawn(const PointCommand& command) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, command.log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> words = {"replisim"};
  words.insert(words.end(), command.args.begin(), command.args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  // The child's environment: ours, with kParentPidVariable naming this process.
  const std::string prefix = std::string(kParentPidVariable) + "=";
  std::string parent = prefix + std::to_string(::getpid());
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.push_back(*e);
  }
  env.push_back(parent.data());
  env.push_back(nullptr);
  pid_t pid = -1;
  const int error =
      ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    throw core::OutputError(command.log_path, std::string("cannot start a point's simulation: ") +
                                                  std::strerror(error));
  }
  return pid;
}

std::string last_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last;
}

// SIGTERM to every running child, then reaps each (SIGKILL to those still there after 5 s).
void kill_all(std::map<pid_t, Child>& running) {
  for (const auto& [pid, child] : running) ::kill(pid, SIGTERM);
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t reaped = ::waitpid(it->first, &status, WNOHANG);
      it = reaped == it->first || (reaped < 0 && errno == ECHILD) ? running.erase(it)
                                                                  : std::next(it);
    }
    if (running.empty()) break;
    if (Clock::now() > deadline) {
      for (const auto& [pid, child] : running) ::kill(pid, SIGKILL);
      for (const auto& [pid, child] : running) {
        int status = 0;
        ::waitpid(pid, &status, 0);
      }
      running.clear();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

void run_point_commands(const std::vector<PointCommand>& commands, int jobs,
                        const std::function<void(const PointExit&)>& on_exit,
                        const std::function<bool()>& cancelled) {
  std::map<pid_t, Child> running;
  size_t next = 0;
  try {
    while (next < commands.size() || !running.empty()) {
      if (cancelled && cancelled()) {
        kill_all(running);
        throw core::RunCancelled();
      }
      while (next < commands.size() && int(running.size()) < jobs) {
        running[spawn(commands[next])] = Child{next, Clock::now()};
        ++next;
      }
      int status = 0;
      pid_t pid = 0;
      for (const auto& [p, child] : running) {
        if (::waitpid(p, &status, WNOHANG) == p) {
          pid = p;
          break;
        }
      }
      if (pid <= 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      const Child child = running.at(pid);
      running.erase(pid);
      PointExit exit;
      exit.command = child.command;
      exit.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      exit.wall_s = std::chrono::duration<double>(Clock::now() - child.started).count();
      if (exit.exit_code != 0) exit.last_error_line = last_line(commands[child.command].log_path);
      on_exit(exit);
    }
  } catch (...) {
    kill_all(running);
    throw;
  }
}

std::string without_replisim_prefix(const std::string& line) {
  for (const std::string prefix : {"replisim: error: ", "replisim: "}) {
    if (line.rfind(prefix, 0) == 0) return line.substr(prefix.size());
  }
  return line;
}

std::string child_error(const PointExit& exit, const std::string& copy,
                        const std::string& scenario) {
  if (exit.last_error_line.empty()) {
    return "the simulation ended with exit code " + std::to_string(exit.exit_code);
  }
  std::string text = without_replisim_prefix(exit.last_error_line);
  if (copy.empty()) return text;
  for (size_t at = text.find(copy); at != std::string::npos;
       at = text.find(copy, at + scenario.size())) {
    text.replace(at, copy.size(), scenario);
  }
  return text;
}

void end_with_spawning_parent() {
  const char* value = std::getenv(kParentPidVariable);
  if (value == nullptr) return;
  const long parent = std::strtol(value, nullptr, 10);
  ::unsetenv(kParentPidVariable);  // not for the processes this one starts
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The parent may have died before the line above: then nobody waits for this run.
  if (parent > 0 && ::getppid() != pid_t(parent)) ::raise(SIGTERM);
}

}  // namespace replisim::cli
