// `simulate --trace-out` and `report`: a saved native trace gives back simulate's table, summary
// JSON and Chrome trace byte for byte, plus the events CSV; bad trace files exit 2 naming them.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/trace/trace_format.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::run_replisim;
using test::TempDir;

using test::seed_scenario;

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The report without its title and workload lines (the blank line on).
std::string table(const std::string& text) {
  return text.substr(text.find("\n\n"));
}

size_t count_lines(const std::string& text) {
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

void expect_one_error_line(const test::BinaryResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST(Report, SavedTraceGivesBackSimulateOutputs) {
  TempDir dir;
  const test::BinaryResult sim =
      run_replisim({"simulate", seed_scenario(), "--trace-out", dir.file("runs.rstrace"), "--json",
                    dir.file("sim.json"), "--trace", dir.file("sim-chrome.json")});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const test::BinaryResult rep =
      run_replisim({"report", dir.file("runs.rstrace"), "--json", dir.file("rep.json"), "--trace",
                    dir.file("rep-chrome.json"), "--csv", dir.file("events.csv")});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(table(rep.out), table(sim.out));
  EXPECT_EQ(first_line(rep.out),
            first_line(sim.out) + ", from saved trace " + dir.file("runs.rstrace"));
  EXPECT_EQ(test::read_file(dir.file("rep.json")), test::read_file(dir.file("sim.json")));
  EXPECT_EQ(test::read_file(dir.file("rep-chrome.json")),
            test::read_file(dir.file("sim-chrome.json")));

  // Each run of the native trace carries the provenance of the simulation.
  const std::vector<core::Trace> runs = core::read_trace_file(dir.file("runs.rstrace"));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].meta.strategy, "in_graph");
  EXPECT_EQ(runs[1].meta.strategy, "between_graph");
  const nlohmann::json& provenance = runs[1].meta.provenance;
  for (const char* key :
       {"replisim", "simgrid", "scenario_file", "scenario_hash", "seed", "command_line"}) {
    EXPECT_TRUE(provenance.contains(key)) << key;
  }
  EXPECT_EQ(provenance["plan_hashes"].size(), 2u);
  EXPECT_NE(provenance["command_line"].get<std::string>().find("--trace-out"), std::string::npos);

  // The CSV: a provenance comment, the header, one row per event of both runs.
  const std::string csv = test::read_file(dir.file("events.csv"));
  const std::string comment = first_line(csv);
  ASSERT_EQ(comment.rfind("# ", 0), 0u);
  for (const std::string& needle :
       {provenance["scenario_hash"].get<std::string>(),
        provenance["plan_hashes"]["in_graph"].get<std::string>(), std::string("SimGrid 3.32"),
        std::string("\"seed\":1"), std::string("--trace-out")}) {
    EXPECT_NE(comment.find(needle), std::string::npos) << needle << " not in " << comment;
  }
  EXPECT_EQ(first_line(csv.substr(comment.size() + 1)),
            "run,strategy,kind,actor,device,lane,label,client,step,start_s,end_s,bytes,flop,"
            "peer_actor,peer,message_id,global_step_read,global_step_after,samples");
  const nlohmann::json summary = nlohmann::json::parse(test::read_file(dir.file("rep.json")));
  const size_t events =
      summary["runs"][0]["events"].get<size_t>() + summary["runs"][1]["events"].get<size_t>();
  EXPECT_EQ(events, runs[0].events.size() + runs[1].events.size());
  EXPECT_EQ(count_lines(csv), 2 + events);
}

TEST(Report, RunsFromSeparateFilesMatchOneSimulation) {
  TempDir dir;
  const test::BinaryResult both = run_replisim({"simulate", seed_scenario(), "--seed", "3"});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  for (const std::string strategy : {"in_graph", "between_graph"}) {
    const test::BinaryResult one =
        run_replisim({"simulate", seed_scenario(), "--seed", "3", "--strategy", strategy,
                      "--trace-out", dir.file(strategy + ".rstrace")});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const test::BinaryResult rep = run_replisim({"report", dir.file(strategy + ".rstrace")});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    EXPECT_EQ(table(rep.out), table(one.out));
    // Simulate's workload line, kept in the trace, is the report's second line too.
    EXPECT_NE(rep.out.find("\nworkload: model resnet50, 25.56 M parameters (102.2 MB); batch 32 "
                           "per replica, 60 steps (10 warm-up); cluster: 2 machines, 2 GPUs, NICs "
                           "10 Gbps, one switch\n\n"),
              std::string::npos)
        << rep.out;
  }
  const test::BinaryResult rep =
      run_replisim({"report", dir.file("in_graph.rstrace"), dir.file("between_graph.rstrace"),
                    "--json", dir.file("s.json")});
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(table(rep.out), table(both.out));
  EXPECT_NE(first_line(rep.out).find("from saved traces"), std::string::npos) << rep.out;
  // One scenario, one workload line, unnamed; with a run of another scenario beside them, each
  // scenario's line, named.
  EXPECT_EQ(rep.out.substr(rep.out.find('\n') + 1, 10), "workload: ") << rep.out;
  const std::string racks = dir.file("racks.rstrace");
  ASSERT_EQ(run_replisim({"simulate", test::scenario_path("validation/racks_3to1.json"),
                          "--strategy", "between_graph", "--steps", "12", "--trace-out", racks})
                .exit_code,
            0);
  const test::BinaryResult mixed = run_replisim({"report", dir.file("in_graph.rstrace"), racks});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.out.find("\nworkload (scenario \"two-machines\"): model resnet50, "),
            std::string::npos)
      << mixed.out;
  EXPECT_NE(mixed.out.find("\nworkload (scenario \"racks-3to1\"): model "), std::string::npos)
      << mixed.out;
  // Two simulations, two provenances: the summary lists each.
  const nlohmann::json summary = nlohmann::json::parse(test::read_file(dir.file("s.json")));
  ASSERT_TRUE(summary["provenance"].is_array());
  EXPECT_EQ(summary["provenance"].size(), 2u);
}

TEST(Report, ReadsATraceFromStandardInputAndNumbersSharedHeadings) {
  TempDir dir;
  const test::BinaryResult sim = run_replisim({"simulate", seed_scenario(), "--trace-out", "-"});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const std::string saved = dir.write("b.rstrace", sim.out);
  const test::BinaryResult piped = run_replisim({"report", "-"}, sim.out);
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(table(piped.out), table(sim.err));
  EXPECT_NE(first_line(piped.out).find("from saved trace standard input"), std::string::npos)
      << piped.out;
  // The same run twice: the columns are told apart by their number.
  const test::BinaryResult twice = run_replisim({"report", saved, "-"}, sim.out);
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  const std::string headings = first_line(table(twice.out).substr(2));
  for (const char* label : {"in_graph #1", "between_graph #2", "in_graph #3", "between_graph #4"}) {
    EXPECT_NE(headings.find(label), std::string::npos) << headings;
  }
  // The lines under the table say which column they belong to.
  EXPECT_NE(twice.out.find("\nbound by (in_graph #1): "), std::string::npos) << twice.out;
  EXPECT_NE(twice.out.find("\nbound by (in_graph #3): "), std::string::npos) << twice.out;
  EXPECT_NE(twice.out.find("\nnote (between_graph #4): "), std::string::npos) << twice.out;
  expect_one_error_line(run_replisim({"report", "-", "-"}, sim.out), "standard input");
  expect_one_error_line(run_replisim({"report", "-"}, "not a trace"), "<standard input>");
  // A trace redirected from a file is an input: --force does not let an output replace it.
  const std::string command = std::string(REPLISIM_BINARY) + " report - --json " + saved +
                              " --force < " + saved + " 2> " + dir.file("err.txt");
  EXPECT_NE(std::system(command.c_str()), 0);
  EXPECT_EQ(test::read_file(saved), sim.out);
  EXPECT_NE(test::read_file(dir.file("err.txt")).find("standard input"), std::string::npos)
      << test::read_file(dir.file("err.txt"));
}

TEST(Report, BadTraceFilesExitTwoNamingThem) {
  TempDir dir;
  const test::BinaryResult sim = run_replisim({"simulate", seed_scenario(), "--strategy",
                                               "in_graph", "--trace-out", dir.file("t.rstrace")});
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  const std::string good = test::read_file(dir.file("t.rstrace"));
  std::string flipped = good;
  flipped[good.size() / 2] = char(flipped[good.size() / 2] ^ 0x10);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {dir.file("missing.rstrace"), "cannot open"},
      {dir.path(), "directory"},
      {dir.write("half.rstrace", good.substr(0, good.size() / 2)), "truncated"},
      {dir.write("flipped.rstrace", flipped), "run 0"},
      {dir.write("chrome.json", "{\"traceEvents\": []}"), "not a replisim native trace"},
      {dir.write("empty.rstrace", ""), "empty: no trace"}};
  for (const auto& [path, needle] : bad) {
    const test::BinaryResult r =
        run_replisim({"report", dir.file("t.rstrace"), path, "--json", dir.file("out.json")});
    expect_one_error_line(r, needle);
    EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_FALSE(test::file_exists(dir.file("out.json"))) << "output written despite " << path;
  }
}

TEST(Report, FlagsAndOutputsFollowTheRules) {
  TempDir dir;
  const std::string trace = dir.file("t.rstrace");
  ASSERT_EQ(
      run_replisim({"simulate", seed_scenario(), "--strategy", "in_graph", "--trace-out", trace})
          .exit_code,
      0);
  expect_one_error_line(run_replisim({"report"}), "TRACE");
  expect_one_error_line(run_replisim({"report", trace, "--seed", "3"}), "--seed");
  expect_one_error_line(run_replisim({"report", trace, "--csv"}), "needs a value");
  expect_one_error_line(run_replisim({"report", trace, "--csv", ""}), "empty");
  expect_one_error_line(run_replisim({"simulate", seed_scenario(), "--csv", "x.csv"}), "--csv");
  expect_one_error_line(run_replisim({"plan", seed_scenario(), "--trace-out", "x"}), "--trace-out");
  expect_one_error_line(run_replisim({"reprot", trace}), "did you mean report");

  // simulate --trace-out never replaces a file unasked, and checks before simulating.
  const std::string precious = dir.write("precious", "precious");
  test::BinaryResult r = run_replisim({"simulate", seed_scenario(), "--trace-out", precious});
  expect_one_error_line(r, "--force");
  EXPECT_EQ(test::read_file(precious), "precious");
  // report: neither an existing output without --force, nor its own input even with it.
  r = run_replisim({"report", trace, "--csv", precious});
  expect_one_error_line(r, "--force");
  EXPECT_EQ(test::read_file(precious), "precious");
  const std::string before = test::read_file(trace);
  r = run_replisim({"report", trace, "--json", dir.path() + "/./t.rstrace", "--force"});
  expect_one_error_line(r, "same file");
  EXPECT_EQ(test::read_file(trace), before);
  r = run_replisim({"report", trace, "--csv", precious, "--force"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_file(precious).rfind("# replisim trace events", 0), 0u);
}

}  // namespace
}  // namespace replisim
