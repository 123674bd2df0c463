// simulate --network-engine: a bad engine is bad input naming the flag; the engine and SimGrid's
// tolerance are in the report's title, --json's provenance and the native trace (for report).
#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::run_replisim;
using test::TempDir;

TEST(NetworkEngineCli, UnknownEngineIsBadInputNamingTheFlag) {
  TempDir dir;
  const test::BinaryResult r =
      run_replisim({"simulate", test::seed_scenario(), "--network-engine", "fluid", "--json",
                    dir.file("out.json"), "--progress", "none"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find("--network-engine"), std::string::npos) << r.err;
  EXPECT_FALSE(test::file_exists(dir.file("out.json"))) << "partial output left behind";
}

TEST(NetworkEngineCli, EngineIsRecordedInTitleJsonAndTrace) {
  TempDir dir;
  const test::BinaryResult r =
      run_replisim({"simulate", test::seed_scenario(), "--strategy", "between_graph",
                    "--network-engine", "simgrid", "--json", dir.file("out.json"), "--trace-out",
                    dir.file("run.trace"), "--progress", "none"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string title = "sim backend (network engine simgrid, tolerance 1 ns), lv08 network";
  EXPECT_NE(r.out.find(title), std::string::npos) << r.out;
  std::ifstream in(dir.file("out.json"));
  const nlohmann::json summary = nlohmann::json::parse(in);
  EXPECT_EQ(summary["provenance"]["network_engine"], "simgrid");
  EXPECT_DOUBLE_EQ(summary["provenance"]["tolerance_s"].get<double>(), 1e-9);
  const test::BinaryResult report = run_replisim({"report", dir.file("run.trace")});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find(title), std::string::npos) << report.out;
}

}  // namespace
}  // namespace replisim
