// One step protocol for every engine: a scripted host — a third engine of a few lines that runs
// core::ClientLoop and core::SyncQueues over a plan, each op taking exactly the time the
// simulator's trace gave it — must make the simulator's decisions: the same ops in each client's
// steps, in the same order, the same step ends, the same updates (the global step each read and
// made) and the same stale gradients dropped. A backend whose host code swaps a decision (a sync
// worker's local_step, a dispatch it skips, a step it ends early) fails here. The real node is
// held to the same structure on loopback runs in tests/real/conformance_real_test.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <sstream>
#include <tuple>

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/backend/trace_recorder.h"
#include "core/runtime/client_loop.h"
#include "core/runtime/step_state.h"
#include "core/runtime/sync_queues.h"
#include "core/scenario/scenario.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using core::OpKind;

// The protocol a trace shows, timing aside except where said: per client and step, its ops
// (compute and transfers; not the copies of a transport's serialisation) in the order they ended;
// its step end; every update and dropped gradient in order (the global steps read and made). One
// line each, sorted by client and step.
std::vector<std::string> protocol_of(const core::Trace& trace, bool with_times) {
  std::map<std::tuple<std::string, int64_t>, std::vector<std::tuple<double, std::string>>> steps;
  std::vector<std::string> sync;
  auto time = [with_times](double s) {
    if (!with_times) return std::string();
    std::ostringstream o;
    o.precision(9);
    o << " @" << s;
    return o.str();
  };
  for (const core::TraceEvent& e : trace.events) {
    const std::string client = trace.str(e.client);
    switch (e.kind) {
      case core::EventKind::kCompute:
        // A send's serialisation or a recv's deserialisation: the network's own work.
        if (e.op == OpKind::kSend || e.op == OpKind::kRecv) break;
        steps[{client, e.step}].emplace_back(e.end_s, "compute " + std::to_string(e.op_index));
        break;
      case core::EventKind::kTransfer:
        steps[{client, e.step}].emplace_back(e.end_s, "transfer " + std::to_string(e.op_index));
        break;
      case core::EventKind::kStep:
        steps[{client, e.step}].emplace_back(e.end_s, "step end" + time(e.end_s));
        break;
      case core::EventKind::kUpdate:
      case core::EventKind::kDropped:
        sync.push_back(std::string(core::event_kind_name(e.kind)) + " " + client + " step " +
                       std::to_string(e.step) + " read " + std::to_string(e.global_step_read) +
                       " after " + std::to_string(e.global_step_after) + time(e.start_s));
        break;
      default:
        break;
    }
  }
  std::vector<std::string> out;
  for (auto& [key, ops] : steps) {
    std::stable_sort(ops.begin(), ops.end());
    std::string line = std::get<0>(key) + " step " + std::to_string(std::get<1>(key)) + ":";
    for (const auto& [end_s, what] : ops) line += " " + what + ";";
    out.push_back(line);
  }
  out.insert(out.end(), sync.begin(), sync.end());
  return out;
}

// The scripted engine: a discrete-event queue whose op durations are the simulator's (an op ends
// when the trace says it ended, or at once if it was dispatched later; instant ops at once).
class ScriptedHost : public core::StepHost, public core::SyncHost {
 public:
  ScriptedHost(const core::Plan& plan, const core::Trace& script)
      : plan_(plan),
        graphs_(core::step_graphs(plan)),
        builder_(began(plan)),
        recorder_(plan, builder_),
        sync_(plan, recorder_, *this),
        loop_(plan, graphs_, *this) {
    for (const core::ClientGraph* g : graphs_) {
      steps_.emplace_back(*g);
      read_.push_back(0);
    }
    for (const core::TraceEvent& e : script.events) {
      const std::string client = script.str(e.client);
      if (e.kind == core::EventKind::kCompute || e.kind == core::EventKind::kTransfer) {
        ends_[{client, e.step, e.op_index}] = {e.start_s, e.end_s};
      } else if (e.kind == core::EventKind::kStep) {
        step_starts_[{client, e.step}] = e.start_s;
      }
    }
  }

  core::Trace run() {
    if (sync_.enabled() || sync_.barriers()) sync_.reset();
    for (size_t c = 0; c < graphs_.size(); ++c) {
      at(graphs_[c]->start_offset_s, [this, c] { loop_.start_client(int(c)); });
    }
    // Bounded: a loop that never ends would be a protocol bug, reported by the comparison.
    for (int64_t served = 0; !events_.empty() && served < 50'000'000; ++served) {
      Event e = events_.top();
      events_.pop();
      now_ = e.at_s;
      e.work();
      loop_.drain();
    }
    builder_.end(core::RunOutcome{});
    return std::move(builder_.traces().front());
  }

  // SyncHost
  void sync_complete(int c, int op) override { loop_.complete(c, op); }
  int64_t global_step() const override { return global_step_; }
  bool client_dead(int) const override { return false; }
  int64_t local_step(int c) const override { return read_[size_t(c)]; }
  void set_next_local_step(int c, int64_t value) override {
    loop_.client(c).next_local_step = value;
  }

  // StepHost
  double now_s() const override { return now_; }
  bool client_gone(int) const override { return false; }
  int64_t global_step_seen() const override { return global_step_; }
  bool within_stop_limit(int) const override { return true; }
  bool is_chief(int) const override { return false; }
  void begin_step(int c) override {
    core::StepState& s = steps_[size_t(c)];
    s.begin_step();
    const core::LoopClient& l = loop_.client(c);
    read_[size_t(c)] = l.loop == core::LoopKind::kSyncWorker ? l.next_local_step : global_step_;
    for (int op : s.roots()) {
      if (op != graphs_[size_t(c)]->input_op) loop_.dispatch(c, op);
    }
  }
  void produce(int c, int64_t batch) override {
    const int op = graphs_[size_t(c)]->input_op;
    const double start_s = now_;
    finish(c, op, batch, [this, c, op, batch, start_s] {
      recorder_.compute(c, op, batch, start_s, now_,
                        graphs_[size_t(c)]->ops[size_t(op)].compute_flop);
      loop_.batch_produced(c);
      loop_.drain();
    });
  }
  void step_ended(int c, int step, double start_s, double end_s) override {
    recorder_.step(c, step, start_s, end_s, read_[size_t(c)]);
  }
  void step_counted(int, double, double) override {}
  bool session_checkpoint(int, bool, std::function<void(double)>) override { return false; }
  void chief_duties(int, double, std::function<void(double)> then) override { then(0); }
  // The script's next step starts when the simulator's did (its step jitter, the chief's pauses).
  double step_gap_s(int c, double) override {
    const auto found = step_starts_.find({client_name(c), int64_t(loop_.client(c).step)});
    return found == step_starts_.end() ? 0 : std::max(0.0, found->second - now_);
  }
  void start_step_at(int c, double at_s) override {
    at(at_s, [this, c] { loop_.start_step(c); });
  }
  void finish_at(int c, double at_s) override {
    at(at_s, [this, c] { loop_.mark_finished(c); });
  }
  void finished(int) override {}
  void recv(int, int) override {}
  void send(int c, int op) override {
    const int64_t step = loop_.client(c).step;
    const double start_s = now_;
    finish(c, op, step, [this, c, op, step, start_s] {
      recorder_.transfer(c, op, step, start_s, now_, next_message_++, "");
      loop_.enqueue(c, op);
      loop_.enqueue(c, graphs_[size_t(c)]->ops[size_t(op)].peer);
      loop_.drain();
    });
  }
  void sync(int c, int op) override {
    sync_.dispatch(c, op, graphs_[size_t(c)]->ops[size_t(op)].kind);
  }
  void compute(int c, int op) override {
    const int64_t step = loop_.client(c).step;
    const double start_s = now_;
    finish(c, op, step, [this, c, op, step, start_s] {
      recorder_.compute(c, op, step, start_s, now_,
                        graphs_[size_t(c)]->ops[size_t(op)].compute_flop);
      loop_.complete(c, op);
    });
  }
  void complete_now(int c, int op) override {
    const core::ClientGraph& g = *graphs_[size_t(c)];
    if (op == g.global_step_op) {
      ++global_step_;
      recorder_.update(c, op, loop_.client(c).step, now_, read_[size_t(c)], global_step_);
    }
    if (g.ops[size_t(op)].kind == OpKind::kAccumulate) {
      sync_.accumulate(c, op, loop_.client(c).step, now_);
    }
    if (steps_[size_t(c)].complete(op, [this, c](int next) { loop_.dispatch(c, next); })) {
      loop_.step_done(c);
    }
  }

  // Ops the script ran that the simulation did not (or at another step).
  const std::vector<std::string>& unscripted() const { return unscripted_; }

 private:
  struct Event {
    double at_s;
    int64_t order;
    std::function<void()> work;
    bool operator>(const Event& o) const {
      return at_s > o.at_s || (at_s == o.at_s && order > o.order);
    }
  };
  static core::TraceBuilder began(const core::Plan& plan) {
    core::TraceBuilder builder;
    builder.begin(core::trace_meta_from_plan(plan));
    return builder;
  }
  void at(double at_s, std::function<void()> work) {
    events_.push({std::max(at_s, now_), next_order_++, std::move(work)});
  }
  std::string client_name(int c) const {
    return plan_.roles[size_t(graphs_[size_t(c)]->role)].name;
  }
  // Runs `done` when the simulation's event for (client, step, op) ended.
  void finish(int c, int op, int64_t step, std::function<void()> done) {
    const auto found = ends_.find({client_name(c), step, op});
    if (found == ends_.end()) {
      unscripted_.push_back(client_name(c) + " step " + std::to_string(step) + " op " +
                            std::to_string(op));
      at(now_, std::move(done));
      return;
    }
    at(found->second.second, std::move(done));
  }

  const core::Plan& plan_;
  std::vector<const core::ClientGraph*> graphs_;
  core::TraceBuilder builder_;
  core::TraceRecorder recorder_;
  core::SyncQueues sync_;
  core::ClientLoop loop_;
  std::vector<core::StepState> steps_;
  std::vector<int64_t> read_;  // per client: the global step (sync: local step) its step read
  std::map<std::tuple<std::string, int64_t, int>, std::pair<double, double>> ends_;
  std::map<std::tuple<std::string, int64_t>, double> step_starts_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t next_order_ = 0;
  int64_t next_message_ = 0;
  int64_t global_step_ = 0;
  double now_ = 0;
  std::vector<std::string> unscripted_;
};

struct Case {
  const char* name;
  const char* scenario;  // under scenarios/
  const char* strategy;
  std::function<void(nlohmann::json&)> edit;
};

core::Plan plan_of(const Case& c) {
  const std::string file = test::scenario_path(c.scenario);
  core::ScenarioDocument doc = core::load_scenario_document(file);
  nlohmann::json& training = doc.json["training"];
  if (c.edit) c.edit(doc.json);
  if (!training.contains("steps") || training["steps"].is_number()) {
    training["steps"] = std::min(training.value("steps", 30), 24);
    training["warmup_steps"] = 4;
  }
  const core::Scenario scenario = core::parse_scenario(doc.json, file, &doc.sources);
  return core::compile_plan(scenario, c.strategy, {1});
}

class Conformance : public ::testing::TestWithParam<Case> {};

TEST_P(Conformance, TheScriptedHostMakesTheSimulatorsDecisions) {
  const core::Plan plan = plan_of(GetParam());
  const core::Trace simulated = test::run_plan(plan);
  ScriptedHost host(plan, simulated);
  const core::Trace scripted = host.run();
  EXPECT_TRUE(host.unscripted().empty())
      << host.unscripted().size()
      << " op(s) the simulation did not run, first: " << host.unscripted().front();
  const std::vector<std::string> want = protocol_of(simulated, true);
  const std::vector<std::string> got = protocol_of(scripted, true);
  ASSERT_FALSE(want.empty());
  // Line by line, so that a failure names the first client step or sync decision that differs,
  // and where in it.
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string a = i < got.size() ? got[i] : "(none)";
    const std::string b = i < want.size() ? want[i] : "(none)";
    if (a == b) continue;
    size_t at = 0;
    while (at < a.size() && at < b.size() && a[at] == b[at]) ++at;
    const size_t from = a.rfind(';', at) == std::string::npos ? 0 : a.rfind(';', at);
    FAIL() << "line " << i << " of " << want.size() << " (" << b.substr(0, b.find(':'))
           << ") differs after " << from << " characters:\n  scripted:  " << a.substr(from, 160)
           << "\n  simulated: " << b.substr(from, 160);
  }
}

// tf's shared token queue (the default variant) instead of the scenario's strict one.
void tf_tokens(nlohmann::json& doc) {
  doc["training"]["sync"]["variant"] = "tf";
}

INSTANTIATE_TEST_SUITE_P(
    Plans, Conformance,
    ::testing::Values(
        Case{"in_graph", "classroom/heterogeneous.json", "in_graph", {}},
        Case{"async", "classroom/heterogeneous.json", "between_graph", {}},
        Case{"sync_strict_backup", "classroom/sync_straggler.json", "between_graph", {}},
        Case{"sync_tf_backup", "classroom/sync_straggler.json", "between_graph", tf_tokens},
        Case{"distributed_replicated", "published/resnet50_16gpu.json", "between_graph", {}},
        Case{"multi_tower_workers", "validation/worker_two_towers.json", "between_graph", {}},
        Case{"model_parallel", "classroom/model_parallel.json", "between_graph", {}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace replisim
