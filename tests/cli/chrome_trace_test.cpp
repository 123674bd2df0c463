// The Chrome trace of the seed scenario: valid JSON, slices nest on every thread, and every
// flow event binds to a slice of its thread (what Perfetto needs to draw the arrows).
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

int64_t ns(double us) {
  return std::llround(us * 1000.0);
}

TEST(ChromeTrace, SeedScenarioNestsAndBindsFlows) {
  test::TempDir dir;
  const std::string path = dir.file("trace.json");
  const test::BinaryResult r = test::run_replisim(
      {"simulate", test::scenario_path("seed/two_machines.json"), "--trace", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json trace = nlohmann::json::parse(test::read_file(path));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_TRUE(trace["otherData"].contains("command_line"));

  struct SliceSpan {
    int64_t start, end;
  };
  std::map<std::pair<int, int>, std::vector<SliceSpan>> slices;
  std::map<int, std::string> processes;
  std::vector<nlohmann::json> flows;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X") {
      ASSERT_GE(e["dur"].get<double>(), 0);
      slices[{e["pid"], e["tid"]}].push_back(
          {ns(e["ts"]), ns(e["ts"].get<double>() + e["dur"].get<double>())});
    } else if (ph == "s" || ph == "f") {
      flows.push_back(e);
    } else if (ph == "M" && e["name"] == "process_name") {
      processes[e["pid"]] = e["args"]["name"];
    }
  }
  ASSERT_FALSE(slices.empty());
  // Both strategies, one process per actor.
  int in_graph = 0, between = 0;
  for (const auto& [pid, name] : processes) {
    in_graph += name.rfind("in_graph ", 0) == 0;
    between += name.rfind("between_graph ", 0) == 0;
  }
  EXPECT_EQ(in_graph, 4);  // ps0, client, tower0, tower1
  EXPECT_EQ(between, 3);   // ps0, worker0, worker1

  // Nesting: on one thread, two slices are disjoint or one contains the other.
  for (auto& [thread, spans] : slices) {
    std::sort(spans.begin(), spans.end(), [](const SliceSpan& a, const SliceSpan& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<int64_t> open_ends;
    for (const SliceSpan& s : spans) {
      while (!open_ends.empty() && open_ends.back() <= s.start) open_ends.pop_back();
      if (!open_ends.empty()) {
        ASSERT_LE(s.end, open_ends.back())
            << "partial overlap on pid " << thread.first << " tid " << thread.second;
      }
      open_ends.push_back(s.end);
    }
  }
  // Flows: each id has one start and one finish, each inside a slice of its own thread.
  std::map<int64_t, int> starts, finishes;
  for (const auto& f : flows) {
    const int64_t at = ns(f["ts"]);
    const auto& spans = slices[{f["pid"], f["tid"]}];
    const bool bound = std::any_of(spans.begin(), spans.end(), [&](const SliceSpan& s) {
      return s.start <= at && at <= s.end;
    });
    EXPECT_TRUE(bound) << f.dump();
    (f["ph"] == "s" ? starts : finishes)[f["id"].get<int64_t>()]++;
  }
  EXPECT_FALSE(starts.empty());
  EXPECT_EQ(starts.size(), finishes.size());
  for (const auto& [id, n] : starts) {
    EXPECT_EQ(n, 1);
    EXPECT_EQ(finishes[id], 1) << id;
  }
}

// The slices ("X") of a Chrome trace file that overlap [from_us, until_us], as (name, ts) pairs.
std::vector<std::pair<std::string, int64_t>> slices_within(const nlohmann::json& trace,
                                                           double from_us, double until_us) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const double start = e["ts"], end = start + e["dur"].get<double>();
    if (end >= from_us && start <= until_us) out.emplace_back(e["name"], ns(start));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ChromeTrace, AWindowKeepsTheSlicesOverlappingIt) {
  test::TempDir dir;
  const std::string saved = dir.file("runs.rstrace");
  ASSERT_EQ(test::run_replisim({"simulate", test::seed_scenario(), "--trace-out", saved}).exit_code,
            0);
  ASSERT_EQ(test::run_replisim({"report", saved, "--trace", dir.file("all.json")}).exit_code, 0);
  const test::BinaryResult r = test::run_replisim(
      {"report", saved, "--trace", dir.file("part.json"), "--trace-window", "1 s..1500 ms"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json all = nlohmann::json::parse(test::read_file(dir.file("all.json")));
  const nlohmann::json part = nlohmann::json::parse(test::read_file(dir.file("part.json")));
  EXPECT_EQ(part["otherData"]["window_s"], nlohmann::json::array({1.0, 1.5}));
  // Exactly the slices of the whole trace that overlap the window, none else.
  const auto expected = slices_within(all, 1e6, 1.5e6);
  ASSERT_GT(expected.size(), 100u);
  EXPECT_EQ(slices_within(part, 0, 1e300), expected);
  EXPECT_LT(expected.size() * 4, slices_within(all, 0, 1e300).size());
  // Instants and counters inside it; every flow that starts also finishes.
  std::map<int64_t, int> flows;
  for (const auto& e : part["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "C" || (ph == "i" && e["cat"] != "fault")) {
      EXPECT_GE(e["ts"].get<double>(), 1e6);
      EXPECT_LE(e["ts"].get<double>(), 1.5e6);
    }
    if (ph == "s") flows[e["id"].get<int64_t>()]++;
    if (ph == "f") flows[e["id"].get<int64_t>()]--;
  }
  for (const auto& [id, balance] : flows) EXPECT_EQ(balance, 0) << id;
  // From a time to the end.
  ASSERT_EQ(test::run_replisim(
                {"report", saved, "--trace", dir.file("tail.json"), "--trace-window", "9.."})
                .exit_code,
            0);
  const nlohmann::json tail = nlohmann::json::parse(test::read_file(dir.file("tail.json")));
  EXPECT_EQ(slices_within(tail, 0, 1e300), slices_within(all, 9e6, 1e300));
  EXPECT_EQ(tail["otherData"]["window_s"], nlohmann::json::parse("[9.0, null]"));
}

}  // namespace
}  // namespace replisim
