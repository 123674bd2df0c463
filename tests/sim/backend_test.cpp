// The Backend contract as the SimGrid backend keeps it: metadata and provenance written by
// Backend::run, a plan validated before anything runs, progress while the run goes on, and a
// cancel through RunOptions that leaves no process behind.
#include <sys/wait.h>

#include <cerrno>

#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "sim/sim_backend.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

core::Plan long_plan() {
  const core::Scenario s =
      core::load_scenario(test::scenario_path("published/inception_v3_16gpu.json"));
  return core::compile_plan(s, "between_graph", {});
}

// Records what a sink receives.
class CountingSink : public core::TraceSink {
 public:
  int begins = 0, ends = 0, strings = 0, events = 0;
  core::TraceMeta meta;
  void begin(const core::TraceMeta& m) override {
    ++begins;
    meta = m;
  }
  void string(uint32_t, const std::string&) override { ++strings; }
  void event(const core::TraceEvent&) override { ++events; }
  void counter(const core::CounterSample&) override {}
  void end(const core::RunOutcome&) override { ++ends; }
};

TEST(Backend, RunWritesMetadataWithTheCallersProvenanceAndItsOwn) {
  const core::Plan plan =
      core::compile_plan(core::load_scenario(test::seed_scenario()), "in_graph", {});
  sim::SimBackend backend;
  core::RunOptions options;
  options.provenance = {{"command_line", "replisim simulate x"}, {"seed", 1}};
  CountingSink sink;
  backend.run(plan, sink, options);
  EXPECT_EQ(sink.begins, 1);
  EXPECT_EQ(sink.ends, 1);
  EXPECT_GT(sink.strings, 0);
  EXPECT_GT(sink.events, 0);
  EXPECT_EQ(sink.meta.backend, "sim");
  EXPECT_EQ(sink.meta.plan_hash, core::plan_hash(plan));
  EXPECT_EQ(sink.meta.provenance["command_line"], "replisim simulate x");
  EXPECT_EQ(sink.meta.provenance["simgrid"], sim::simgrid_version());
}

// A broken invariant inside the simulation child (an exception may not leave a SimGrid actor)
// reaches the caller as an InternalError with its message, not as "killed by signal 6".
TEST(Backend, ABrokenInvariantInsideAnActorIsAnInternalErrorWithItsMessage) {
  const core::Plan plan =
      core::compile_plan(core::load_scenario(test::seed_scenario()), "between_graph", {});
  sim::SimBackend backend;
  core::RunOptions options;
  options.settings = {{"internal_error_at_s", 0.5}};
  try {
    core::run_to_trace(backend, plan, options);
    ADD_FAILURE() << "expected an internal error";
  } catch (const core::InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("internal error: a broken invariant on purpose"),
              std::string::npos)
        << e.what();
  }
}

TEST(Backend, AnInvalidPlanIsRefusedBeforeAnyRecord) {
  core::Plan plan = core::compile_plan(core::load_scenario(test::seed_scenario()), "in_graph", {});
  plan.clients.front().ops.back().inputs = {int(plan.clients.front().ops.size())};  // forward
  sim::SimBackend backend;
  CountingSink sink;
  EXPECT_THROW(backend.run(plan, sink), core::InputError);
  EXPECT_EQ(sink.begins, 0);
}

TEST(Backend, ProgressComesWhileTheRunGoesOn) {
  const core::Plan plan = long_plan();
  sim::SimBackend backend;
  std::vector<core::RunProgress> seen;
  core::RunOptions options;
  options.progress = [&seen](const core::RunProgress& p) { seen.push_back(p); };
  const core::Trace trace = core::run_to_trace(backend, plan, options);
  ASSERT_FALSE(seen.empty());
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].steps_done.size(), plan.clients.size());
    EXPECT_LE(seen[i].time_s, trace.outcome.end_s);
    if (i > 0) {
      EXPECT_GE(seen[i].time_s, seen[i - 1].time_s);
      EXPECT_GE(seen[i].global_step, seen[i - 1].global_step);
    }
  }
}

TEST(Backend, ACancelThroughRunOptionsStopsTheChild) {
  const core::Plan plan = long_plan();
  sim::SimBackend backend;
  bool progressed = false;
  core::RunOptions options;
  options.progress = [&progressed](const core::RunProgress&) { progressed = true; };
  options.cancelled = [&progressed] { return progressed; };
  CountingSink sink;
  EXPECT_THROW(backend.run(plan, sink, options), core::RunCancelled);
  EXPECT_TRUE(progressed);
  EXPECT_EQ(sink.ends, 0);  // the partial run is the caller's to discard
  errno = 0;
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "the simulation process was left behind";
}

}  // namespace
}  // namespace replisim
