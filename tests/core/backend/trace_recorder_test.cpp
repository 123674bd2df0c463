// The recorder fills every event from the plan the same way for every backend: names, op kinds,
// the kind of op whose tensor a transfer carries, strings before their first use.
#include "core/backend/trace_recorder.h"

#include <gtest/gtest.h>

#include "core/backend/backend.h"
#include "core/strategy/strategy.h"
#include "tests/support/run_binary.h"
#include "tests/support/test_support.h"

namespace replisim::core {
namespace {

int find_op(const ClientGraph& g, OpKind kind, OpKind input_kind = OpKind::kInput) {
  for (size_t k = 0; k < g.ops.size(); ++k) {
    const Op& op = g.ops[k];
    if (op.kind != kind) continue;
    if (kind != OpKind::kSend || g.ops[size_t(op.inputs.front())].kind == input_kind) return int(k);
  }
  return -1;
}

TEST(TraceRecorder, EventsCarryThePlansNamesAndKinds) {
  const Plan plan = compile_plan(load_scenario(test::seed_scenario()), "between_graph", {});
  TraceBuilder builder;  // asserts that strings come in order, before use
  builder.begin(trace_meta_from_plan(plan));
  TraceRecorder recorder(plan, builder);
  const ClientGraph& g = plan.clients[1];
  const int forward = find_op(g, OpKind::kForward);
  const int pull = find_op(g, OpKind::kSend, OpKind::kReadVariable);
  const int increment = g.global_step_op;
  ASSERT_GE(forward, 0);
  ASSERT_GE(pull, 0);
  recorder.compute(1, forward, 4, 1.0, 1.5, 2e9);
  recorder.transfer(1, pull, 4, 0.5, 0.9, 17, "pc1/nic/up");
  recorder.update(1, increment, 4, 2.0, 6, 8);
  recorder.checkpoint(0, 3, 2.0, 2.1, 1e6, 8, true);
  recorder.step(1, 4, 0.4, 2.0, 6);
  builder.end({});
  const Trace& t = builder.traces().front();
  ASSERT_EQ(t.events.size(), 5u);
  const TraceEvent &compute = t.events[0], &transfer = t.events[1], &update = t.events[2];
  EXPECT_EQ(compute.op, OpKind::kForward);
  EXPECT_FALSE(compute.producer);
  EXPECT_EQ(t.str(compute.label), g.ops[size_t(forward)].name);
  EXPECT_EQ(t.str(compute.actor), "worker1");
  EXPECT_EQ(t.str(compute.client), "worker1");
  EXPECT_EQ(compute.flop, 2e9);
  EXPECT_EQ(transfer.op, OpKind::kSend);
  EXPECT_EQ(transfer.producer, OpKind::kReadVariable);  // a pull
  EXPECT_EQ(t.str(transfer.actor).rfind("ps", 0), 0u);
  EXPECT_EQ(t.str(transfer.peer_actor), "worker1");
  EXPECT_EQ(transfer.bytes, g.ops[size_t(pull)].bytes);
  EXPECT_EQ(transfer.message_id, 17);
  // The ops they record, for the critical path, and what bounded the transfer.
  EXPECT_EQ(compute.op_index, forward);
  EXPECT_EQ(transfer.op_index, pull);
  EXPECT_EQ(update.op_index, increment);
  EXPECT_EQ(t.str(transfer.bound), "pc1/nic/up");
  ASSERT_EQ(t.meta.graphs.size(), plan.clients.size());
  EXPECT_EQ(t.meta.graphs[1].ops[size_t(forward)].name, g.ops[size_t(forward)].name);
  EXPECT_EQ(t.meta.graphs[1].ops[size_t(forward)].inputs, g.ops[size_t(forward)].inputs);
  EXPECT_EQ(update.op, OpKind::kGlobalStepIncrement);
  EXPECT_EQ(t.str(update.actor), "worker1");  // the client whose gradients were applied
  EXPECT_EQ(update.samples, g.samples_per_step);
  EXPECT_EQ(update.global_step_after, 8);
  EXPECT_EQ(t.events[3].flags, kEventSummaries);
  EXPECT_EQ(t.str(t.events[3].actor), "worker0");  // the chief
  EXPECT_EQ(t.str(t.events[4].label), "step");
  ASSERT_EQ(t.counters.size(), 1u);
  EXPECT_EQ(t.str(t.counters[0].name), "global_step");
  EXPECT_EQ(t.counters[0].value, 8);
}

// A tensor's serialisation and deserialisation carry its producer as its transfer does: the
// metrics tell a synchronous token's copies from the step's work by it (metrics_waits.cpp).
TEST(TraceRecorder, ACopyCarriesItsTensorsProducer) {
  const Plan plan = compile_plan(load_scenario(test::seed_scenario()), "between_graph", {});
  TraceBuilder builder;
  builder.begin(trace_meta_from_plan(plan));
  TraceRecorder recorder(plan, builder);
  const ClientGraph& g = plan.clients[1];
  const int pull = find_op(g, OpKind::kSend, OpKind::kReadVariable);
  ASSERT_GE(pull, 0);
  const int cpu = plan.platform.cpu_of_machine(0);
  recorder.copy(1, pull, 4, cpu, false, 0.5, 0.6, 1e6);
  recorder.copy(1, pull, 4, cpu, true, 0.9, 1.0, 1e6);
  builder.end({});
  const Trace& t = builder.traces().front();
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].op, OpKind::kSend);
  EXPECT_EQ(t.events[1].op, OpKind::kRecv);
  for (const TraceEvent& e : t.events) {
    EXPECT_EQ(e.kind, EventKind::kCompute);
    EXPECT_EQ(e.producer, OpKind::kReadVariable) << t.str(e.label);
  }
}

TEST(TraceRecorder, FaultWindowsRecordAnOpenEnd) {
  nlohmann::json doc = nlohmann::json::parse(test::read_file(test::seed_scenario()));
  doc["faults"] = {
      {{"kind", "slowdown"}, {"device", "pc2/gpu0"}, {"from", "1 s"}, {"factor", 0.5}},
      {{"kind", "link"}, {"link", "pc1/nic"}, {"from", "1 s"}, {"until", "2 s"}, {"factor", 0.5}}};
  const Plan plan = compile_plan(test::parse(doc), "between_graph", {});
  TraceBuilder builder;
  builder.begin(trace_meta_from_plan(plan));
  TraceRecorder recorder(plan, builder);
  for (const PlanFault& f : plan.faults) recorder.fault_window(f);
  builder.end({});
  const Trace& t = builder.traces().front();
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].flags, kEventOpenEnded);
  EXPECT_EQ(t.str(t.events[0].actor), "pc2/gpu0");
  EXPECT_EQ(t.events[1].flags, 0);
  EXPECT_EQ(t.str(t.events[1].actor), "pc1/nic");
  EXPECT_EQ(t.events[1].end_s, 2.0);
}

}  // namespace
}  // namespace replisim::core
