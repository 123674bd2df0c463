// Link faults at run time: a cut holds the transfers crossing it, a degraded NIC or switch slows
// them, and transfers started while a link was lowered speed up when it comes back.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/metrics/report.h"
#include "core/strategy/strategy.h"
#include "tests/support/test_support.h"

namespace replisim {
namespace {

using test::events_of;
using test::machine;

// One worker, network-bound over the PS machine's 10 Gbps NIC: 100 MB each way per step.
nlohmann::json network_bound(const nlohmann::json& faults, const std::string& switch_bandwidth) {
  nlohmann::json doc = test::scenario_json({machine("w", "1 TFLOPS", {"100 TFLOPS"}, "100 Gbps"),
                                            machine("p", "1 TFLOPS", {}, "10 Gbps")},
                                           test::one_layer_model(25e6, "1 MFLOP"),
                                           {{"replicas", {"w/gpu0"}},
                                            {"ps", {"p/cpu"}},
                                            {"steps", 40},
                                            {"costs", "none"},
                                            {"jitter", 0}},
                                           "ideal", switch_bandwidth);
  doc["faults"] = faults;
  return doc;
}

TEST(LinkFaults, ACutHoldsTransfersUntilItEnds) {
  // One worker, 80 ms per 100 MB tensor: the cut from 2.05 s to 3.05 s falls in the middle of a
  // transfer (steps start every 160 ms from about 0.04 s), which pauses and goes on after it.
  const core::Trace trace = test::simulate_trace(network_bound({{{"kind", "link"},
                                                                 {"link", "p/nic"},
                                                                 {"from", "2.05 s"},
                                                                 {"until", "3.05 s"},
                                                                 {"factor", 0}}},
                                                               "1 TBps"),
                                                 "between_graph");
  const double tensor_s = 100e6 / 1.25e9;
  int crossing = 0, paused = 0;
  for (const core::TraceEvent* t : events_of(trace, core::EventKind::kTransfer)) {
    if (t->bytes < 1e6) continue;
    ++crossing;
    EXPECT_FALSE(t->end_s > 2.05 && t->end_s < 3.05) << trace.str(t->label) << " " << t->end_s;
    if (t->start_s < 2.05 && t->end_s > 2.05) {
      ++paused;
      // Its own time (and the route latency) plus the cut.
      EXPECT_NEAR(t->end_s - t->start_s, tensor_s + 1, 1e-4);
    }
  }
  EXPECT_GT(crossing, 40);
  EXPECT_EQ(paused, 1);
  const core::RunMetrics m = core::compute_metrics(trace);
  ASSERT_EQ(m.faults.size(), 1u);
  EXPECT_EQ(m.faults[0].description, "p/nic cut");
}

TEST(LinkFaults, TransfersStartedInADegradedWindowSpeedUpAfterItUnderLv08) {
  // p/nic at 10% from 2 s to 4 s, then cut from 5 s to 5.5 s, under LV08. SimGrid caps a flow
  // at its route's narrowest link when it starts, and its penalty update on a bandwidth change
  // aborts with reverse traffic: both are handled.
  nlohmann::json doc = network_bound(
      {{{"kind", "link"}, {"link", "p/nic"}, {"from", "2 s"}, {"until", "4 s"}, {"factor", 0.1}},
       {{"kind", "link"}, {"link", "p/nic"}, {"from", "5 s"}, {"until", "5.5 s"}, {"factor", 0}}},
      "1 TBps");
  doc["cluster"]["network_model"] = "lv08";
  const core::Trace trace = test::simulate_trace(doc, "between_graph");
  const double full_bytes_per_s = 0.97 * 1.25e9;
  int across_the_end = 0;
  for (const core::TraceEvent* t : events_of(trace, core::EventKind::kTransfer)) {
    if (t->bytes < 1e6 || t->start_s <= 2 || t->start_s >= 4 || t->end_s <= 4) continue;
    ++across_the_end;
    // At most the rest of the window, then every byte at full speed (kept at 10%, the tensor
    // would need up to 0.8 s).
    EXPECT_LT(t->end_s - t->start_s, (4 - t->start_s) + t->bytes / full_bytes_per_s + 0.01)
        << trace.str(t->label) << " from " << t->start_s;
  }
  EXPECT_GE(across_the_end, 1);
  int steps = 0;
  for (const core::TraceEvent* s : events_of(trace, core::EventKind::kStep)) steps += s->step >= 0;
  EXPECT_EQ(steps, 40);
  const core::RunMetrics m = core::compute_metrics(trace);
  bool noted = false;
  for (const std::string& note : m.notes)
    noted |= note.find("reverse-traffic") != std::string::npos;
  EXPECT_TRUE(noted);
}

// Mean step time of steps wholly inside [from_s, until_s) and wholly outside it.
std::pair<double, double> mean_steps_inside_outside(const core::Trace& trace, double from_s,
                                                    double until_s) {
  double inside = 0, outside = 0;
  int n_inside = 0, n_outside = 0;
  for (const core::TraceEvent* e : events_of(trace, core::EventKind::kStep)) {
    if (e->start_s >= from_s && e->end_s <= until_s) inside += e->end_s - e->start_s, ++n_inside;
    if (e->end_s < from_s || e->start_s > until_s) outside += e->end_s - e->start_s, ++n_outside;
  }
  EXPECT_GT(n_inside, 2);
  EXPECT_GT(n_outside, 2);
  return {inside / std::max(1, n_inside), outside / std::max(1, n_outside)};
}

TEST(LinkFaults, ADegradedNicSlowsTheTransfersCrossingIt) {
  // The PS machine's NIC at a quarter of its bandwidth from 2 s to 6 s.
  const core::Trace trace = test::simulate_trace(network_bound({{{"kind", "link"},
                                                                 {"link", "p/nic"},
                                                                 {"from", "2 s"},
                                                                 {"until", "6 s"},
                                                                 {"factor", 0.25}}},
                                                               "1 TBps"),
                                                 "between_graph");
  const auto [inside, outside] = mean_steps_inside_outside(trace, 2, 6);
  const double link_s = 2 * 100e6 / 1.25e9;  // 160 ms per step at full bandwidth
  EXPECT_NEAR(outside, link_s, 0.05 * link_s);
  EXPECT_NEAR(inside, 4 * link_s, 0.05 * 4 * link_s);
  const core::RunMetrics m = core::compute_metrics(trace);
  ASSERT_EQ(m.faults.size(), 1u);
  EXPECT_EQ(m.faults[0].target, "p/nic");
}

TEST(LinkFaults, ADegradedSwitchSlowsEveryCrossMachineFlow) {
  // A 10 GB/s switch at 1/32 = 312.5 MB/s, a quarter of the NIC, from 2 s to 6 s.
  const core::Trace trace = test::simulate_trace(network_bound({{{"kind", "link"},
                                                                 {"link", "switch"},
                                                                 {"from", "2 s"},
                                                                 {"until", "6 s"},
                                                                 {"factor", 1.0 / 32}}},
                                                               "10 GBps"),
                                                 "between_graph");
  const auto [inside, outside] = mean_steps_inside_outside(trace, 2, 6);
  EXPECT_NEAR(inside, 4 * outside, 0.05 * 4 * outside);
}

}  // namespace
}  // namespace replisim
