// The exact sharing model (sim/sharing_model.h) against SimGrid 3.32's own max-min solver: the
// same flows, started at the same times on a platform of replisim's shape (split-duplex NICs and
// PCIe links of latency 0, LV08's factors), must end at the same times while the model says it
// is exact; and it must say it is not when a worker's NIC, not a parameter server's, binds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u.hpp>

#include "sim/sharing_model.h"
#include "sim/sim_sharing.h"

namespace replisim::sim::detail {
namespace {

namespace sg4 = simgrid::s4u;

struct FlowSpec {
  double start_s;
  std::string from;
  std::string to;
  double bytes;
};

// Workers "w<i>" (a CPU host and a GPU host "g<i>" behind a PCIe link) and parameter servers
// "p<j>", each machine with a split-duplex NIC, in one full zone.
struct Cluster {
  std::map<std::string, sg4::Host*> hosts;
  std::map<std::string, std::string> machine;  // host -> machine
  std::vector<sg4::Link*> links;               // every link direction
};

Cluster make_cluster(int workers, int servers, double worker_nic, double server_nic, double pcie) {
  Cluster cluster;
  auto* zone = sg4::create_full_zone("cluster");
  std::map<std::string, sg4::SplitDuplexLink*> nic, bus;
  auto add_machine = [&](const std::string& name, double nic_bytes_per_s) {
    cluster.hosts[name] = zone->create_host(name, 1e9);
    cluster.machine[name] = name;
    nic[name] = zone->create_split_duplex_link(name + "/nic", nic_bytes_per_s);
    nic[name]->seal();
  };
  for (int i = 0; i < workers; ++i) {
    const std::string w = "w" + std::to_string(i);
    add_machine(w, worker_nic);
    const std::string g = "g" + std::to_string(i);
    cluster.hosts[g] = zone->create_host(g, 1e9);
    cluster.machine[g] = w;
    bus[g] = zone->create_split_duplex_link(g + "/pcie", pcie);
    bus[g]->seal();
  }
  for (int j = 0; j < servers; ++j) add_machine("p" + std::to_string(j), server_nic);
  using Dir = sg4::LinkInRoute::Direction;
  for (const auto& [a, ha] : cluster.hosts) {
    for (const auto& [b, hb] : cluster.hosts) {
      if (a == b) continue;
      std::vector<sg4::LinkInRoute> route;
      if (bus.count(a)) route.emplace_back(bus[a], Dir::UP);
      if (cluster.machine[a] != cluster.machine[b]) {
        route.emplace_back(nic[cluster.machine[a]], Dir::UP);
        route.emplace_back(nic[cluster.machine[b]], Dir::DOWN);
      }
      if (bus.count(b)) route.emplace_back(bus[b], Dir::DOWN);
      zone->add_route(ha->get_netpoint(), hb->get_netpoint(), nullptr, nullptr, route, false);
    }
  }
  zone->seal();
  zone->get_network_model()->set_bw_factor_cb(
      [machine = cluster.machine](double, const sg4::Host* src, const sg4::Host* dst,
                                  const std::vector<sg4::Link*>&,
                                  const std::unordered_set<sg4::NetZone*>&) {
        return machine.at(src->get_name()) == machine.at(dst->get_name()) ? 1.0 : 0.97;
      });
  return cluster;
}

// Ends of `flows` in SimGrid, in the order of `flows`.
std::vector<double> run_simgrid(const Cluster& cluster, const std::vector<FlowSpec>& flows) {
  std::vector<double> ends(flows.size(), -1);
  for (size_t k = 0; k < flows.size(); ++k) {
    sg4::Actor::create("flow" + std::to_string(k), cluster.hosts.at(flows[k].from), [&, k] {
      sg4::this_actor::sleep_until(flows[k].start_s);
      sg4::Comm::sendto(cluster.hosts.at(flows[k].from), cluster.hosts.at(flows[k].to),
                        uint64_t(flows[k].bytes));
      ends[k] = sg4::Engine::get_clock();
    });
  }
  sg4::Engine::get_instance()->run();
  return ends;
}

// The same flows through the model; `exact_until_s` gets the first time it was not exact.
// `reverse`: LV08's cross-traffic coefficient as configured (0 with network/crosstraffic:0).
std::vector<double> run_model(const Cluster& cluster, const std::vector<FlowSpec>& flows,
                              double& exact_until_s, double reverse = 0.05) {
  SharingModel model;
  std::map<const sg4::Link*, int> constraint;
  for (sg4::Link* link : sg4::Engine::get_instance()->get_all_links()) {
    constraint[link] = model.add_constraint(link->get_bandwidth());
  }
  for (sg4::Link* link : sg4::Engine::get_instance()->get_all_links()) {
    const std::string name = link->get_name();
    if (name.size() > 7 && name.substr(name.size() - 7) == "/nic_UP") {
      const std::string base = name.substr(0, name.size() - 3);  // "w0/nic"
      const int down = constraint.at(sg4::Link::by_name(base + "_DOWN"));
      if (reverse > 0) {
        model.add_group({constraint[link], down});
      } else {
        model.add_group({constraint[link]});
        model.add_group({down});
      }
    }
  }
  auto uses_of = [&](const FlowSpec& f) {
    std::vector<SharingModel::Use> uses;
    std::vector<sg4::Link*> route, back;
    double latency = 0;
    cluster.hosts.at(f.from)->route_to(cluster.hosts.at(f.to), route, &latency);
    cluster.hosts.at(f.to)->route_to(cluster.hosts.at(f.from), back, &latency);
    for (sg4::Link* l : route) uses.push_back({constraint[l], 1.0});
    if (reverse > 0) {
      for (sg4::Link* l : back) uses.push_back({constraint[l], reverse});
    }
    return uses;
  };
  std::vector<double> ends(flows.size(), -1);
  std::map<int, size_t> of_id;
  exact_until_s = SharingModel::kNever;
  size_t next = 0;
  for (;;) {
    const double completion = model.next_completion_s();
    const double arrival = next < flows.size() ? flows[next].start_s : SharingModel::kNever;
    if (completion == SharingModel::kNever && arrival == SharingModel::kNever) break;
    if (arrival <= completion) {
      // Every flow starting at this instant, then the check (SimGrid solves once per instant).
      while (next < flows.size() && flows[next].start_s == arrival) {
        const FlowSpec& f = flows[next];
        const double factor = cluster.machine.at(f.from) == cluster.machine.at(f.to) ? 1 : 0.97;
        of_id[model.add_flow(arrival, f.bytes, uses_of(f), factor)] = next;
        ++next;
      }
    } else {
      for (int id : model.advance_to(completion)) ends[of_id.at(id)] = completion;
    }
    // A flow's group is chosen when it starts; choosing again with all flows counted is what
    // the backend does before it takes flows back from SimGrid.
    if (!model.exact()) model.reassign_groups(std::min(arrival, completion));
    if (!model.exact() && exact_until_s == SharingModel::kNever) {
      std::printf("not exact at %.9f s (%d flows): %s\n", std::min(arrival, completion),
                  model.flows(), model.why_inexact());
      exact_until_s = std::min(arrival, completion);
    }
  }
  return ends;
}

// Many workers pushing to and pulling from few parameter servers, with copies over the workers'
// PCIe links: the servers' NICs bind.
std::vector<FlowSpec> ps_bound_flows(int workers, int servers, int count, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<FlowSpec> flows;
  double t = 0;
  // A burst at 0 (every worker pulls from every server), then arrivals every 25 us on average: more
  // than the servers carry, so they stay saturated.
  for (int i = 0; i < workers; ++i) {
    for (int j = 0; j < servers; ++j) {
      flows.push_back({0, "p" + std::to_string(j), "g" + std::to_string(i), 4e6});
    }
  }
  std::uniform_int_distribution<int> worker(0, workers - 1), server(0, servers - 1), kind(0, 9);
  std::uniform_real_distribution<double> gap(0, 5e-5), size(1e6, 8e6);
  for (int k = 0; k < count; ++k) {
    t += gap(random);
    const std::string w = std::to_string(worker(random));
    const std::string p = "p" + std::to_string(server(random));
    const int what = kind(random);
    if (what == 0) {
      flows.push_back({t, "w" + w, "g" + w, size(random)});  // an input copy over PCIe
    } else if (what < 5) {
      flows.push_back({t, "g" + w, p, size(random)});
    } else {
      flows.push_back({t, p, "g" + w, size(random)});
    }
  }
  return flows;
}

// Runs `flows` through the model and through SimGrid; expects equal ends for every flow that
// ended while the model was exact, at least `at_least` of them. Returns how many it compared.
int expect_simgrid_ends(const Cluster& cluster, const std::vector<FlowSpec>& flows, int at_least,
                        double reverse = 0.05) {
  double exact_until_s = 0;
  const std::vector<double> model = run_model(cluster, flows, exact_until_s, reverse);
  const std::vector<double> simgrid = run_simgrid(cluster, flows);
  int compared = 0;
  double worst = 0;
  for (size_t k = 0; k < flows.size(); ++k) {
    if (model[k] >= exact_until_s) continue;
    // SimGrid's solver rounds at maxmin/precision (1e-5 relative; measured: 1.1e-6 at worst).
    EXPECT_NEAR(model[k], simgrid[k], 1e-9 + 1e-5 * simgrid[k]) << "flow " << k;
    ++compared;
    worst = std::max(worst, std::abs(model[k] - simgrid[k]) / simgrid[k]);
  }
  std::printf("compared %d of %zu flows (exact until %.6f s), worst relative difference %.3g\n",
              compared, flows.size(), exact_until_s, worst);
  EXPECT_GE(compared, at_least);
  return compared;
}

TEST(SharingModel, EndsFlowsWhenSimGridDoesWhileExact) {
  sg4::Engine engine("sharing_model_test");
  // 25 GbE workers, 100 GbE servers, 4 GB/s PCIe.
  const Cluster cluster = make_cluster(64, 3, 3.125e9, 12.5e9, 4e9);
  const std::vector<FlowSpec> flows = ps_bound_flows(64, 3, 1500, 7);
  expect_simgrid_ends(cluster, flows, 1300);
}

TEST(SharingModel, WithoutCrossTrafficEachDirectionIsAGroup) {
  sg4::Engine engine("sharing_model_test");
  // The "ideal" network model: a NIC's directions share nothing, so pushes and pulls of one
  // server run at different levels.
  sg4::Engine::set_config("network/crosstraffic:0");
  const Cluster cluster = make_cluster(64, 3, 3.125e9, 12.5e9, 4e9);
  const std::vector<FlowSpec> flows = ps_bound_flows(64, 3, 1500, 5);
  expect_simgrid_ends(cluster, flows, 1300, 0);
}

TEST(SharingModel, SharesAWorkerNicLeftByFlowsBoundAtAServer) {
  sg4::Engine engine("sharing_model_test");
  // Worker 0 sends to four servers; twenty other workers send to server 0. Worker 0's flow to
  // server 0 is bound there; its three others share what is left of worker 0's NIC.
  const Cluster cluster = make_cluster(21, 4, 3.125e9, 12.5e9, 16e9);
  std::vector<FlowSpec> flows;
  for (int j = 0; j < 4; ++j) flows.push_back({0, "g0", "p" + std::to_string(j), 1e7 * (j + 1)});
  for (int i = 1; i < 21; ++i) flows.push_back({0, "g" + std::to_string(i), "p0", 2e7});
  expect_simgrid_ends(cluster, flows, 10);
}

TEST(SharingModel, CarriesFlowsBoundAtALinkOutsideTheGroups) {
  sg4::Engine engine("sharing_model_test");
  // A PCIe link slower than every NIC share binds worker 0's flows to the servers: they are
  // "other" flows, filled over what the groups leave.
  const Cluster cluster = make_cluster(4, 2, 3.125e9, 12.5e9, 1e8);
  std::vector<FlowSpec> flows = {
      {0, "g0", "p0", 1e7}, {0, "g0", "p1", 2e7}, {0, "g1", "p0", 3e7}, {1e-3, "g2", "p1", 1e7}};
  expect_simgrid_ends(cluster, flows, 4);
}

// Deliveries of flows without an actor waiting in the last run_engine(): from the model's actor,
// and from actors the engine started to carry them in SimGrid.
int g_deliveries_by_model = 0;
int g_deliveries_by_carrier = 0;
int g_flows_without_actor = 0;

// The same flows through SharingEngine, the model and SimGrid taking turns as it decides. The
// engine may have run already (one SimGrid engine per process): times count from its clock now.
std::vector<double> run_engine(const Cluster& cluster, const std::vector<FlowSpec>& flows,
                               SharingEngine::Options options, SharingEngine::Stats& stats) {
  std::vector<std::string> nics;
  for (const auto& [host, machine] : cluster.machine) {
    if (host == machine) nics.push_back(machine + "/nic");
  }
  auto sharing = std::make_unique<SharingEngine>(nics, 0.97, 0.05, options);
  std::map<std::string, sg4::ActorPtr> receivers;
  for (const auto& [name, host] : cluster.hosts) {
    // A permanent receiver only has to exist and not be suspended. It holds nothing: SimGrid
    // kills daemons at the end without unwinding them, and the leak checker would count a mutex
    // held on its stack.
    receivers[name] = sg4::Actor::create(name + "/receive", host, [] {
      for (;;) sg4::this_actor::sleep_for(1e6);
    });
    receivers[name]->daemonize();
  }
  std::vector<double> ends(flows.size(), -1);
  // Released by on_delivered: the simulation ends when the last actor that is not a daemon does.
  std::vector<sg4::SemaphorePtr> delivered;
  for (size_t k = 0; k < flows.size(); ++k) delivered.push_back(sg4::Semaphore::create(0));
  const double offset_s = sg4::Engine::get_clock();
  for (size_t k = 0; k < flows.size(); ++k) {
    const FlowSpec& f = flows[k];
    EXPECT_TRUE(sharing->add_connection(cluster.hosts.at(f.from), cluster.hosts.at(f.to),
                                        cluster.machine.at(f.from) != cluster.machine.at(f.to)));
    sg4::Mailbox* mailbox = sg4::Mailbox::by_name("flow." + std::to_string(k));
    mailbox->set_receiver(receivers.at(f.to));
    sg4::Actor::create("flow" + std::to_string(k), cluster.hosts.at(f.from), [&, k, mailbox] {
      // Every other flow waits out the second half of its start time in the engine (a tensor's
      // latency and overhead, send()'s delay_s), also while SimGrid carries the flows.
      const double delay_s = k % 2 == 1 ? flows[k].start_s / 2 : 0.0;
      sg4::this_actor::sleep_until(offset_s + flows[k].start_s - delay_s);
      // Every third flow has no actor waiting (send_async(): on_delivered says when it arrived, and
      // an actor the engine starts carries it while SimGrid carries the flows).
      if (k % 3 == 2) {
        sharing->send_async(int(k), int(k), mailbox, flows[k].bytes, delay_s);
        delivered[k]->acquire();
        return;
      }
      sharing->send(int(k), int(k), mailbox, flows[k].bytes, delay_s);
      ends[k] = sg4::Engine::get_clock() - offset_s;
    });
  }
  g_deliveries_by_model = g_deliveries_by_carrier = 0;
  g_flows_without_actor = int(flows.size() / 3);  // every third one, k % 3 == 2
  sharing->on_delivered([&](int k) {
    EXPECT_EQ(k % 3, 2) << "a flow with an actor waiting was delivered";
    const std::string by = sg4::this_actor::get_name();
    if (by == "sharing-model") ++g_deliveries_by_model;
    if (by.rfind("carrier.", 0) == 0) ++g_deliveries_by_carrier;
    EXPECT_LT(ends[size_t(k)], 0) << "flow " << k << " was delivered twice";
    ends[size_t(k)] = sg4::Engine::get_clock() - offset_s;
    delivered[size_t(k)]->release();
  });
  sharing->start(cluster.hosts.begin()->second);
  sg4::Engine::get_instance()->run();
  stats = sharing->stats();
  return ends;
}

// The PS-bound flows of seed `seed` through SimGrid and then through SharingEngine with
// `options`: every flow must end at the same time. Returns the engine's figures.
SharingEngine::Stats expect_engine_ends_like_simgrid(uint32_t seed,
                                                     SharingEngine::Options options) {
  const Cluster cluster = make_cluster(64, 3, 3.125e9, 12.5e9, 4e9);
  const std::vector<FlowSpec> flows = ps_bound_flows(64, 3, 1500, seed);
  SharingEngine::Stats stats;
  const std::vector<double> simgrid = run_simgrid(cluster, flows);
  const std::vector<double> ends = run_engine(cluster, flows, options, stats);
  for (size_t k = 0; k < flows.size(); ++k) {
    EXPECT_NEAR(ends[k], simgrid[k], 1e-9 + 1e-5 * simgrid[k]) << "flow " << k;
  }
  EXPECT_EQ(stats.flows, int64_t(flows.size()));
  return stats;
}

// One chain of transfers sent by an actor that waits (send()) and the same chain, on a twin
// pair of machines, started from the delivery callback (send_async(), as Network does): a byte
// count of 0 or under one byte is the delay alone. Every transfer must end at the same time on
// both, the delay-only ones at their start plus their delay.
TEST(SharingEngine, ChainsWithoutAnActorEndLikeAnActorsChain) {
  sg4::Engine engine("sharing_model_test");
  const Cluster cluster = make_cluster(2, 2, 3.125e9, 12.5e9, 4e9);
  auto sharing = std::make_unique<SharingEngine>(
      std::vector<std::string>{"w0/nic", "w1/nic", "p0/nic", "p1/nic"}, 0.97, 0.05);
  struct Step {
    double bytes;
    double delay_s;
  };
  const std::vector<Step> chain = {{4e6, 1e-5}, {0, 2e-5}, {0.5, 0},   {2e6, 0},
                                   {1e6, 3e-5}, {0, 0},    {3e6, 1e-5}};
  std::map<std::string, sg4::ActorPtr> receivers;
  for (const std::string name : {"p0", "p1"}) {
    receivers[name] = sg4::Actor::create(name + "/receive", cluster.hosts.at(name), [] {
      for (;;) sg4::this_actor::sleep_for(1e6);
    });
    receivers[name]->daemonize();
  }
  std::vector<sg4::Mailbox*> mailboxes;
  for (int k = 0; k < 2; ++k) {
    const std::string from = "w" + std::to_string(k), to = "p" + std::to_string(k);
    ASSERT_TRUE(sharing->add_connection(cluster.hosts.at(from), cluster.hosts.at(to), true));
    mailboxes.push_back(sg4::Mailbox::by_name("chain." + std::to_string(k)));
    mailboxes.back()->set_receiver(receivers.at(to));
  }
  std::vector<double> by_actor, without_actor;
  sg4::Actor::create("chain.actor", cluster.hosts.at("w0"), [&] {
    for (const Step& step : chain) {
      if (step.bytes >= 1) {
        sharing->send(0, 0, mailboxes[0], step.bytes, step.delay_s);
      } else {
        sg4::this_actor::sleep_for(step.delay_s);
      }
      by_actor.push_back(sg4::Engine::get_clock());
    }
  });
  const sg4::SemaphorePtr finished = sg4::Semaphore::create(0);
  size_t next = 0;
  auto start_next = [&] {
    const Step& step = chain[next++];
    sharing->send_async(1, 1, mailboxes[1], step.bytes, step.delay_s);
  };
  sharing->on_delivered([&](int slot) {
    EXPECT_EQ(slot, 1);
    without_actor.push_back(sg4::Engine::get_clock());
    if (next < chain.size()) {
      start_next();  // from inside the delivery, as Network::actorless_delivered does
    } else {
      finished->release();
    }
  });
  sg4::Actor::create("chain.async", cluster.hosts.at("w1"), [&] {
    start_next();
    finished->acquire();  // the simulation ends when the last actor that is not a daemon does
  });
  sharing->start(cluster.hosts.at("w0"));
  engine.run();
  ASSERT_EQ(by_actor.size(), chain.size());
  ASSERT_EQ(without_actor.size(), chain.size());
  double previous_s = 0;
  for (size_t k = 0; k < chain.size(); ++k) {
    EXPECT_NEAR(without_actor[k], by_actor[k], 1e-12) << "transfer " << k;
    if (chain[k].bytes < 1) {
      EXPECT_NEAR(without_actor[k], previous_s + chain[k].delay_s, 1e-12) << "transfer " << k;
    } else {
      EXPECT_GT(without_actor[k], previous_s + chain[k].delay_s) << "transfer " << k;
    }
    previous_s = without_actor[k];
  }
  EXPECT_EQ(sharing->stats().model_flows, 2 * 4);  // the transfers with bytes, on both
}

TEST(SharingEngine, EndsFlowsWhenSimGridDoes) {
  sg4::Engine engine("sharing_model_test");
  const SharingEngine::Stats stats = expect_engine_ends_like_simgrid(7, {});
  EXPECT_EQ(stats.model_flows, stats.flows);                // the model carried every flow
  EXPECT_EQ(g_deliveries_by_model, g_flows_without_actor);  // all by the model's actor
  EXPECT_EQ(g_deliveries_by_carrier, 0);
}

TEST(SharingEngine, HandsFlowsToSimGridAndTakesThemBackWithoutLoss) {
  sg4::Engine engine("sharing_model_test");
  // No repairs and no re-choice of groups: every conflict hands all flows to SimGrid.
  const SharingEngine::Stats stats = expect_engine_ends_like_simgrid(11, {0, false});
  std::printf("%ld flows, %ld ended by the model, %ld hand-backs, %ld take-overs\n",
              long(stats.flows), long(stats.model_flows), long(stats.hand_backs),
              long(stats.take_overs));
  EXPECT_GE(stats.hand_backs, 3);
  // Flows without an actor waiting were carried by actors the engine started, and delivered.
  EXPECT_GT(g_deliveries_by_carrier, 0);
  EXPECT_GT(g_deliveries_by_model, 0);
  EXPECT_EQ(g_deliveries_by_model + g_deliveries_by_carrier, g_flows_without_actor);
  EXPECT_GE(stats.take_overs, 2);
  EXPECT_GT(stats.model_flows, 100);
  EXPECT_LT(stats.model_flows, stats.flows);
}

TEST(SharingModel, HandingAFlowBackAndTakingItAgainLosesNothing) {
  SharingModel model;
  const int up = model.add_constraint(1e9), down = model.add_constraint(1e9);
  model.add_group({up, down});
  const int a = model.add_flow(0, 1e9, {{down, 1}, {up, 0.05}}, 0.97);
  const int b = model.add_flow(0, 4e9, {{down, 1}, {up, 0.05}}, 0.97);
  ASSERT_TRUE(model.exact());
  // Two flows one way: each 1e9 / 2 share, 0.97 of it as progress.
  EXPECT_DOUBLE_EQ(model.rate_bytes_per_s(a), 0.97 * 1e9 / 2);
  const double left = model.remove_flow(0.5, a);
  EXPECT_NEAR(left, 1e9 - 0.5 * 0.97 * 0.5e9, 1e-3);
  const int again = model.add_flow(0.5, left, {{down, 1}, {up, 0.05}}, 0.97);
  EXPECT_NEAR(model.next_completion_s(), 0.5 + left / (0.97 * 0.5e9), 1e-12);
  const std::vector<int> ended = model.advance_to(model.next_completion_s());
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0], again);
  // Alone now: its own NIC direction to itself, C / 1 share.
  EXPECT_DOUBLE_EQ(model.rate_bytes_per_s(b), 0.97 * 1e9);
}

}  // namespace
}  // namespace replisim::sim::detail
