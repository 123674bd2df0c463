// What a person or a program sees while runs go on and when they stop early: --progress lines,
// Ctrl-C (SIGINT) cancelling a simulation, an output the disk cannot take.
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cerrno>
#include <csignal>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::TempDir;

// A scenario whose simulation lasts a second or more on this machine.
std::string long_scenario() {
  return test::scenario_path("published/inception_v3_16gpu.json");
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  return names;
}

TEST(Progress, JsonLinesComeBeforeTheResult) {
  TempDir dir;
  test::RunningReplisim run({"simulate", long_scenario(), "--strategy", "between_graph",
                             "--progress", "json", "--json", dir.file("summary.json")});
  std::vector<nlohmann::json> lines;
  std::string line;
  while (run.next_error_line(&line)) lines.push_back(nlohmann::json::parse(line));
  const test::BinaryResult done = run.wait();
  ASSERT_EQ(done.exit_code, 0) << done.err;
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines.front()["event"], "start");
  EXPECT_EQ(lines.front()["steps_auto"], false);  // the scenario's steps are a count
  EXPECT_EQ(lines.back()["event"], "done");
  int progress = 0;
  double last_time_s = -1, last_fraction = -1;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    const nlohmann::json& p = lines[i];
    ASSERT_EQ(p["event"], "progress") << p;
    EXPECT_EQ(p["strategy"], "between_graph");
    EXPECT_EQ(p["runs"], 1);
    EXPECT_EQ(p["steps_done"].size(), 2u);  // one count per worker (two of 8 GPUs each)
    EXPECT_GE(p["time_s"].get<double>(), last_time_s);
    EXPECT_GE(p["fraction"].get<double>(), last_fraction);  // no fault: never backwards
    EXPECT_LE(p["fraction"].get<double>(), 1.0);
    last_time_s = p["time_s"];
    last_fraction = p["fraction"];
    ++progress;
  }
  EXPECT_GE(progress, 1) << "no progress line before the result";
  EXPECT_NE(done.out.find("throughput"), std::string::npos) << done.out;  // the report follows
}

TEST(Progress, NoneAndAutoOffATerminalPrintNothingExtra) {
  for (const char* mode : {"none", "auto"}) {
    const test::BinaryResult r = test::run_replisim(
        {"simulate", test::seed_scenario(), "--strategy", "in_graph", "--progress", mode});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "") << mode;  // standard error is a file here, not a terminal
  }
  const test::BinaryResult bad =
      test::run_replisim({"simulate", test::seed_scenario(), "--progress", "sometimes"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--progress: unknown mode \"sometimes\"; valid: auto, bar, json, none"),
            std::string::npos)
      << bad.err;
}

// Ctrl-C while a run goes on: exit 130 at once, no output and no temporary file written, no
// simulation process left (orphans would come to this process, a subreaper).
TEST(Cancel, SigintStopsTheRunAndLeavesNothingBehind) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  TempDir dir;
  test::RunningReplisim run({"simulate", long_scenario(), "--progress", "json", "--json",
                             dir.file("summary.json"), "--trace-out", dir.file("runs.rstrace"),
                             "--trace", dir.file("chrome.json")});
  std::string line;
  bool progressed = false;
  while (!progressed && run.next_error_line(&line)) {
    progressed = nlohmann::json::parse(line)["event"] == "progress";
  }
  ASSERT_TRUE(progressed) << "the run ended before any progress";
  run.send_signal(SIGINT);
  const test::BinaryResult done = run.wait();
  EXPECT_EQ(done.exit_code, 130) << done.err;
  EXPECT_NE(done.err.find("replisim: cancelled: no output was written"), std::string::npos)
      << done.err;
  EXPECT_EQ(done.out, "");
  EXPECT_TRUE(files_in(dir.path()).empty()) << files_in(dir.path()).front();
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a process outlived replisim";
}

// A write the file system refuses (a file size limit stands in for a full disk): exit 1, one
// line naming the file and the reason, nothing left in the directory.
TEST(Output, AFileThatCannotBeWrittenIsOneLineNamingIt) {
  TempDir dir;
  const std::string chrome = dir.file("chrome.json");
  const test::BinaryResult r = test::run_replisim_with_file_limit(
      {"simulate", test::seed_scenario(), "--trace", chrome, "--json", dir.file("s.json")},
      1 << 20);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err, "replisim: error: cannot write " + chrome + ": File too large\n");
  EXPECT_TRUE(files_in(dir.path()).empty()) << files_in(dir.path()).front();
}

}  // namespace
}  // namespace replisim
