#include "bench/callgrind.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

#include "core/base/temp_dir.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define REPLISIM_ZERO_CALLGRIND_COUNTS() CALLGRIND_ZERO_STATS
#else
#define REPLISIM_ZERO_CALLGRIND_COUNTS() static_cast<void>(0)
#endif

namespace replisim::bench {
namespace {

[[noreturn]] void fail(const std::string& why) {
  throw std::runtime_error("--callgrind: " + why);
}

// The "summary:" line of a callgrind output file: the instructions the process executed.
uint64_t summary_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("summary:", 0) == 0) return std::strtoull(line.c_str() + 8, nullptr, 10);
  }
  fail(file.string() + " has no summary line (did valgrind finish?)");
}

}  // namespace

bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], flag) == 0) return true;
  }
  return false;
}

CallgrindRun run_under_callgrind(int argc, char** argv, const std::vector<std::string>& defaults) {
  if (std::system("valgrind --version > /dev/null 2>&1") != 0) {
    fail("valgrind is not installed (apt-get install valgrind, or scripts/setup)");
  }
  const core::ScopedTempDir dir("replisim-callgrind");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {"valgrind",
                                   "--quiet",
                                   "--tool=callgrind",
                                   "--trace-children=yes",
                                   "--callgrind-out-file=" + dir.path() + "/callgrind.out.%p",
                                   self};
  for (int i = 1; i < argc; ++i) {
    args.emplace_back(std::strcmp(argv[i], "--callgrind") == 0 ? "--callgrind-inner" : argv[i]);
  }
  args.insert(args.end(), defaults.begin(), defaults.end());
  std::string command;
  for (const std::string& a : args) command += a + " ";
  std::printf("running under callgrind (tens of times slower): %s\n", command.c_str());
  std::fflush(stdout);

  int fds[2];
  if (::pipe(fds) != 0) fail(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) fail(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[1]);
    std::vector<char*> exec_args;
    for (std::string& a : args) exec_args.push_back(a.data());
    exec_args.push_back(nullptr);
    ::execvp("valgrind", exec_args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  CallgrindRun run;
  FILE* out = ::fdopen(fds[0], "r");
  char buffer[4096];
  std::string line;
  while (std::fgets(buffer, sizeof buffer, out) != nullptr) {
    std::fputs(buffer, stdout);
    std::fflush(stdout);
    line += buffer;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      run.lines.push_back(line);
      line.clear();
    }
  }
  std::fclose(out);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    fail("the run under valgrind was killed by signal " + std::to_string(WTERMSIG(status)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fail("the run under valgrind ended with exit code " + std::to_string(WEXITSTATUS(status)) +
         (WEXITSTATUS(status) == 127 ? " (valgrind could not start)" : ""));
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = entry.path().filename().string();
    const std::string prefix = "callgrind.out.";
    if (name.rfind(prefix, 0) != 0) continue;
    run.instructions[std::strtol(name.c_str() + prefix.size(), nullptr, 10)] =
        summary_of(entry.path());
  }
  if (run.instructions.empty()) fail("valgrind wrote no callgrind output");
  return run;
}

long long value_of(const CallgrindRun& run, const std::string& key) {
  const std::string prefix = "callgrind " + key + ": ";
  for (const std::string& line : run.lines) {
    if (line.rfind(prefix, 0) != 0) continue;
    const long long value = std::strtoll(line.c_str() + prefix.size(), nullptr, 10);
    if (value >= 0) return value;
  }
  fail("the run under valgrind did not print its " + key);
}

uint64_t instructions_of_unnamed(const CallgrindRun& run, const std::vector<long long>& named) {
  std::vector<uint64_t> others;
  for (const auto& [pid, instructions] : run.instructions) {
    if (std::find(named.begin(), named.end(), pid) == named.end()) others.push_back(instructions);
  }
  for (long long pid : named) {
    if (!run.instructions.count(pid)) fail("no count for process " + std::to_string(pid));
  }
  if (others.size() != 1) {
    fail("expected one simulation child, counted " + std::to_string(others.size()) +
         " unnamed processes");
  }
  return others.front();
}

void print_value(const std::string& key, long long value) {
  std::printf("callgrind %s: %lld\n", key.c_str(), value);
  std::fflush(stdout);
}

int callgrind_main(const std::function<void()>& report) {
  try {
    report();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}

void zero_counts() {
  REPLISIM_ZERO_CALLGRIND_COUNTS();
}

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n);
  for (int k = int(digits.size()) - 3; k > 0; k -= 3) digits.insert(size_t(k), ",");
  return digits;
}

}  // namespace replisim::bench
