// Outputs are all written or none: a cancel while writing, or a standard output that fails,
// leaves every target as it was and no temporary behind.
#include "core/base/output_file.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <ostream>
#include <streambuf>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/base/unnamed_file.h"
#include "tests/support/run_binary.h"

namespace replisim::core {
namespace {

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFiles, ACancelWhileWritingLeavesNothing) {
  test::TempDir dir;
  dir.write("b.txt", "the user's file");
  bool cancel = false;
  OutputFiles outputs(true);
  outputs.add("--a", dir.file("a.txt"), [&cancel](std::ostream& out) {
    out << "first";
    cancel = true;  // Ctrl-C while the first output is being written
    for (int i = 0; i < 1000; ++i) out << std::string(1024, 'x');
  });
  outputs.add("--b", dir.file("b.txt"), [](std::ostream& out) { out << "second"; });
  outputs.set_cancel([&cancel] { return cancel; });
  EXPECT_THROW(outputs.write_all(), RunCancelled);
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>({"b.txt"}));
  EXPECT_EQ(test::read_file(dir.file("b.txt")), "the user's file");
}

// A stream whose every write fails (a closed pipe, a full device).
class FailingBuffer : public std::streambuf {
 protected:
  int_type overflow(int_type) override { return traits_type::eof(); }
};

TEST(OutputFiles, AFailingStandardOutputLeavesTheFilesAsTheyWere) {
  test::TempDir dir;
  dir.write("kept.json", "the user's file");
  FailingBuffer failing;
  std::ostream standard_output(&failing);
  OutputFiles outputs(true, &standard_output);
  outputs.add("--json", dir.file("kept.json"), [](std::ostream& out) { out << "{}"; });
  outputs.add("--trace-out", "-", [](std::ostream& out) { out << "trace bytes"; });
  try {
    outputs.write_all();
    FAIL() << "no error";
  } catch (const OutputError& e) {
    EXPECT_EQ(e.file(), "standard output");
  }
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>({"kept.json"}));
  EXPECT_EQ(test::read_file(dir.file("kept.json")), "the user's file");
}

// Issue 37: a SIGKILL while outputs were written left ".replisim-XXXXXX" temporaries (up to
// 141 MB). An output being written has no name in its directory, so nothing is left to remove.
TEST(UnnamedFile, AFileBeingWrittenHasNoNameUntilPublished) {
  test::TempDir dir;
  const std::string target = dir.file("out.json");
  {
    UnnamedFile file(target);
    file.stream() << std::string(1 << 20, 'x');
    ASSERT_TRUE(file.finish(false));
    EXPECT_TRUE(files_in(dir.path()).empty()) << files_in(dir.path()).front();
  }  // dropped unpublished: nothing was ever named
  EXPECT_TRUE(files_in(dir.path()).empty());
  UnnamedFile file(target);
  file.stream() << "written";
  ASSERT_TRUE(file.finish(true));
  ASSERT_TRUE(file.publish(false));
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"out.json"});
  EXPECT_EQ(test::read_file(target), "written");
  // Without replace, an existing file is left alone (EEXIST); with it, replaced.
  UnnamedFile again(target);
  again.stream() << "again";
  ASSERT_TRUE(again.finish(false));
  errno = 0;
  EXPECT_FALSE(again.publish(false));
  EXPECT_EQ(errno, EEXIST);
  EXPECT_EQ(test::read_file(target), "written");
  EXPECT_TRUE(again.publish(true));
  EXPECT_EQ(test::read_file(target), "again");
  EXPECT_EQ(files_in(dir.path()), std::vector<std::string>{"out.json"});
}

// Issue 37 (a real run's $TMPDIR filling mid-run): a write that fails long before the file is
// finished goes on failing quietly, and finish() still says why the first one failed (ENOSPC,
// here EFBIG from a file-size limit) rather than a bare I/O error.
TEST(UnnamedFile, FinishSaysWhyTheFirstFailedWriteFailed) {
  test::TempDir dir;
  const std::string target = dir.file("trace.bin");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a limit of its own, away from the test process
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 << 10, 64 << 10};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(10);
    UnnamedFile file(target);
    for (int i = 0; i < 64 && file.stream(); ++i) file.stream() << std::string(4096, 'x');
    if (file.stream()) ::_exit(11);                       // the limit never bit
    for (int i = 0; i < 8; ++i) file.stream() << "more";  // as a node writes on after it
    errno = 0;
    if (file.finish(true)) ::_exit(12);
    ::_exit(errno == EFBIG ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: setrlimit, 11: no failure, 12: finished, 13: errno";
  EXPECT_TRUE(files_in(dir.path()).empty());
}

}  // namespace
}  // namespace replisim::core
