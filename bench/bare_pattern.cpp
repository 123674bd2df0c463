#include "bench/bare_pattern.h"

#include <chrono>
#include <string>
#include <vector>

#include <xbt/log.h>
#include <simgrid/s4u.hpp>

namespace sg4 = simgrid::s4u;

namespace replisim::bench {
namespace {

struct Message {
  int worker;
};

}  // namespace

BareResult run_bare_pattern(const BarePattern& p) {
  sg4::Engine engine("bare");
  xbt_log_control_set("root.thres:critical");
  // Same topology as replisim's: a NIC per machine (split duplex) and one shared switch.
  auto* zone = sg4::create_star_zone("cluster");
  const sg4::Link* sw = zone->create_link("switch", p.switch_bytes_per_s)->seal();
  auto add_machine = [&](const std::string& name, double speed, double nic_bw) {
    sg4::Host* host = zone->create_host(name, speed)->seal();
    sg4::SplitDuplexLink* nic = zone->create_split_duplex_link(name + "_nic", nic_bw);
    nic->set_latency(p.latency_s);
    nic->seal();
    zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr,
                    {{nic, sg4::LinkInRoute::Direction::UP}, sg4::LinkInRoute(sw)}, true);
    return host;
  };
  std::vector<sg4::Host*> workers, servers;
  for (int i = 0; i < p.workers; ++i) {
    workers.push_back(
        add_machine("w" + std::to_string(i), p.worker_speed_flop_per_s, p.worker_nic_bytes_per_s));
  }
  for (int k = 0; k < p.ps; ++k) {
    servers.push_back(add_machine("ps" + std::to_string(k), 1e12, p.ps_nic_bytes_per_s));
  }
  zone->seal();
  uint64_t activities = 0;
  for (int k = 0; k < p.ps; ++k) {
    sg4::Actor::create("ps" + std::to_string(k), servers[size_t(k)], [&, k] {
      sg4::Mailbox* in = sg4::Mailbox::by_name("ps" + std::to_string(k));
      for (;;) {
        auto* m = in->get<Message>();
        sg4::Mailbox::by_name("w" + std::to_string(m->worker))
            ->put_init(m, uint64_t(p.slice_bytes))
            ->detach();
      }
    })->daemonize();
  }
  for (int i = 0; i < p.workers; ++i) {
    sg4::Actor::create("w" + std::to_string(i), workers[size_t(i)], [&, i] {
      sg4::Mailbox* replies = sg4::Mailbox::by_name("w" + std::to_string(i));
      for (int s = 0; s < p.steps; ++s) {
        sg4::this_actor::execute(p.compute_flop);
        std::vector<sg4::CommPtr> pushes;
        for (int k = 0; k < p.ps; ++k) {
          pushes.push_back(sg4::Mailbox::by_name("ps" + std::to_string(k))
                               ->put_async(new Message{i}, uint64_t(p.slice_bytes)));
        }
        sg4::Comm::wait_all(pushes);
        for (int k = 0; k < p.ps; ++k) delete replies->get<Message>();
        activities += 1 + 2 * uint64_t(p.ps);
      }
    });
  }
  const auto start = std::chrono::steady_clock::now();
  engine.run();
  BareResult r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.simulated_s = sg4::Engine::get_clock();
  r.activities = activities;
  return r;
}

}  // namespace replisim::bench
