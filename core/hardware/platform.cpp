#include "core/hardware/platform.h"

#include <algorithm>
#include <limits>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::core {

int Platform::find_device(const std::string& name) const {
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].name == name) return int(i);
  }
  return -1;
}

std::string fat_tree_group_name(int level, int index) {
  const std::string i = std::to_string(index);
  if (level == 0) return "rack" + i;
  if (level == 1) return "pod" + i;
  if (level == 2) return "superpod" + i;
  return "level" + std::to_string(level) + "pod" + i;
}

std::vector<std::pair<int, int>> Platform::groups_above(int machine) const {
  std::vector<std::pair<int, int>> groups;
  const int rack = machines[size_t(machine)].rack;
  if (rack < 0) return groups;
  groups.emplace_back(racks[size_t(rack)].tor_link, racks[size_t(rack)].uplink);
  // Bounded by the pods' count: a platform read from a file may not loop (platform_from_json).
  for (int pod = racks[size_t(rack)].parent; pod >= 0 && groups.size() <= pods.size();
       pod = pods[size_t(pod)].parent) {
    groups.emplace_back(pods[size_t(pod)].switch_link, pods[size_t(pod)].uplink);
  }
  return groups;
}

namespace {

// Between two machines' NICs: `from`'s groups (Platform::groups_above) climbed to the lowest one
// `to` shares (each group's switch, then its uplink up), that group's switch (none shared: the
// core's), then `to`'s groups climbed down (uplink down, switch). One switch: the switch.
void add_switch_hops_between(const std::vector<std::pair<int, int>>& from,
                             const std::vector<std::pair<int, int>>& to, int core,
                             std::vector<Hop>& hops) {
  size_t common_from = from.size(), common_to = to.size();
  for (size_t i = 0; i < from.size() && common_from == from.size(); ++i) {
    for (size_t j = 0; j < to.size(); ++j) {
      if (from[i].first != to[j].first) continue;
      common_from = i;
      common_to = j;
      break;
    }
  }
  for (size_t i = 0; i < common_from; ++i) {
    hops.push_back({from[i].first, LinkDirection::kShared});
    hops.push_back({from[i].second, LinkDirection::kUp});
  }
  hops.push_back(
      {common_from < from.size() ? from[common_from].first : core, LinkDirection::kShared});
  for (size_t j = common_to; j-- > 0;) {
    hops.push_back({to[j].second, LinkDirection::kDown});
    hops.push_back({to[j].first, LinkDirection::kShared});
  }
}

}  // namespace

int Platform::nic_index_toward(int machine, int peer) const {
  const int count = int(machines[size_t(machine)].nic_links.size());
  if (count <= 1) return 0;
  const int position = peer > machine ? peer - 1 : peer;
  return position % count;
}

int Platform::nic_toward(int machine, int peer) const {
  return machines[size_t(machine)].nic_links[size_t(nic_index_toward(machine, peer))];
}

std::vector<int> Platform::nic_links() const {
  std::vector<int> links;
  for (const PlatformMachine& m : machines)
    links.insert(links.end(), m.nic_links.begin(), m.nic_links.end());
  return links;
}

std::vector<Hop> Platform::route(int src, int dst) const {
  REPLISIM_ASSERT(
      src >= 0 && size_t(src) < devices.size() && dst >= 0 && size_t(dst) < devices.size(),
      "route between unknown devices");
  std::vector<Hop> hops;
  if (src == dst) return hops;
  const PlatformDevice& s = devices[size_t(src)];
  const PlatformDevice& d = devices[size_t(dst)];
  if (s.pcie_link >= 0) hops.push_back({s.pcie_link, LinkDirection::kUp});
  if (s.machine != d.machine) {
    hops.push_back({nic_toward(s.machine, d.machine), LinkDirection::kUp});
    add_switch_hops_between(groups_above(s.machine), groups_above(d.machine), switch_link, hops);
    hops.push_back({nic_toward(d.machine, s.machine), LinkDirection::kDown});
  }
  if (d.pcie_link >= 0) hops.push_back({d.pcie_link, LinkDirection::kDown});
  return hops;
}

std::vector<Hop> Platform::transfer_route(int src, int dst) const {
  if (src != dst) return route(src, dst);
  const int pcie = devices[size_t(src)].pcie_link;
  if (pcie < 0) return {};
  return {{pcie, LinkDirection::kUp}, {pcie, LinkDirection::kDown}};
}

double Platform::route_latency_s(int src, int dst) const {
  double latency = 0;
  for (const Hop& hop : route(src, dst)) latency += links[size_t(hop.link)].latency_s;
  return latency;
}

double Platform::route_bandwidth_bytes_per_s(int src, int dst) const {
  double bandwidth = std::numeric_limits<double>::infinity();
  for (const Hop& hop : route(src, dst)) {
    bandwidth = std::min(bandwidth, links[size_t(hop.link)].bandwidth_bytes_per_s);
  }
  return bandwidth;
}

bool Platform::switch_can_bind(int link) const {
  double feeding_bytes_per_s = 0;
  const auto add = [&](int l) { feeding_bytes_per_s += links[size_t(l)].bandwidth_bytes_per_s; };
  if (link == switch_link) {
    if (racks.empty()) {
      for (const PlatformMachine& m : machines) {
        for (int nic : m.nic_links) add(nic);
      }
    } else {
      // The top level's uplinks: racks' (no pods), or the pods' whose uplinks join the core.
      for (const PlatformRack& r : racks) {
        if (r.parent < 0) add(r.uplink);
      }
      for (const PlatformPod& pod : pods) {
        if (pod.parent < 0) add(pod.uplink);
      }
    }
  } else if (const int pod = pod_of_switch(link); pod >= 0) {
    add(pods[size_t(pod)].uplink);
    for (const PlatformRack& r : racks) {
      if (r.parent == pod) add(r.uplink);
    }
    for (const PlatformPod& child : pods) {
      if (child.parent == pod) add(child.uplink);
    }
  } else {
    for (size_t r = 0; r < racks.size(); ++r) {
      if (racks[r].tor_link != link) continue;
      add(racks[r].uplink);
      for (const PlatformMachine& m : machines) {
        if (m.rack != int(r)) continue;
        for (int nic : m.nic_links) add(nic);
      }
    }
  }
  return links[size_t(link)].bandwidth_bytes_per_s < 2 * feeding_bytes_per_s;
}

int Platform::pod_of_switch(int link) const {
  for (size_t p = 0; p < pods.size(); ++p) {
    if (pods[p].switch_link == link) return int(p);
  }
  return -1;
}

std::string Platform::rack_name_of(int machine) const {
  const int rack = machines[size_t(machine)].rack;
  return rack < 0 ? std::string() : racks[size_t(rack)].name;
}

int Platform::channel_of(const Hop& hop) const {
  return hop.link * 2 + (hop.direction == LinkDirection::kDown ? 1 : 0);
}

bool Platform::channel_exists(int channel) const {
  if (channel < 0 || channel >= channel_count()) return false;
  return channel % 2 == 0 || links[size_t(channel / 2)].split_duplex;
}

std::string Platform::channel_name(int channel) const {
  const PlatformLink& link = links[size_t(channel / 2)];
  if (!link.split_duplex) return link.name;
  return link.name + (channel % 2 == 0 ? "/up" : "/down");
}

double Platform::channel_bandwidth_bytes_per_s(int channel) const {
  return links[size_t(channel / 2)].bandwidth_bytes_per_s;
}

nlohmann::json platform_to_json(const Platform& platform) {
  nlohmann::json j;
  j["network_model"] = network_model_name(platform.network_model);
  j["switch_link"] = platform.switch_link;
  j["transport"] = transport_to_json(platform.transport);
  for (const PlatformLink& l : platform.links) {
    j["links"].push_back({{"name", l.name},
                          {"bandwidth_bytes_per_s", l.bandwidth_bytes_per_s},
                          {"latency_s", l.latency_s},
                          {"split_duplex", l.split_duplex}});
  }
  for (const PlatformMachine& m : platform.machines) {
    nlohmann::json machine = {{"name", m.name}, {"devices", m.devices}};
    // One NIC: "nic_link", as before machines had several; several: "nic_links".
    if (m.nic_links.size() == 1) {
      machine["nic_link"] = m.nic_links.front();
    } else {
      machine["nic_links"] = m.nic_links;
    }
    j["machines"].push_back(std::move(machine));
    // Only with racks: a trace of one switch reads as before racks existed.
    if (m.rack >= 0) j["machines"].back()["rack"] = m.rack;
  }
  for (const PlatformRack& r : platform.racks) {
    j["racks"].push_back({{"name", r.name}, {"tor_link", r.tor_link}, {"uplink", r.uplink}});
    // Only in a fat tree: racks' platforms read as before fat trees existed.
    if (r.parent >= 0) j["racks"].back()["parent"] = r.parent;
  }
  for (const PlatformPod& pod : platform.pods) {
    j["pods"].push_back({{"name", pod.name},
                         {"level", pod.level},
                         {"switch_link", pod.switch_link},
                         {"uplink", pod.uplink},
                         {"parent", pod.parent}});
  }
  for (const PlatformDevice& d : platform.devices) {
    j["devices"].push_back({{"name", d.name},
                            {"machine", d.machine},
                            {"kind", device_kind_name(d.kind)},
                            {"speed_flop_per_s", d.speed_flop_per_s},
                            {"cores", d.cores},
                            {"pcie_link", d.pcie_link},
                            {"memory_bytes", d.memory_bytes}});
  }
  return j;
}

namespace {

// A platform read from a file (a trace's): each rack's top-of-rack switch and uplink are links of
// their own, as build_platform makes them, not the core switch, a machine's NIC, a GPU's PCIe link
// or another rack's; else routes and the busiest resources would mix two parts into one.
void check_platform_rack_links(const JsonCursor& c, const Platform& p) {
  std::vector<std::string> part(p.links.size());
  std::vector<bool> of_several_nics(p.links.size(), false);
  part[size_t(p.switch_link)] = "the switch";
  for (size_t i = 0; i < p.machines.size(); ++i) {
    const PlatformMachine& m = p.machines[i];
    for (size_t k = 0; k < m.nic_links.size(); ++k) {
      const int link = m.nic_links[k];
      // Several NICs (a format newer than any trace that may have shared one): each its own, on
      // either side.
      if ((m.nic_links.size() > 1 || of_several_nics[size_t(link)]) &&
          !part[size_t(link)].empty()) {
        const JsonCursor at = c.at("machines").at(i);
        (m.nic_links.size() == 1 ? at.at("nic_link") : at.at("nic_links").at(k))
            .fail("link " + std::to_string(link) + " is already " + part[size_t(link)]);
      }
      part[size_t(link)] = m.name + "'s NIC";
      of_several_nics[size_t(link)] = m.nic_links.size() > 1;
    }
  }
  for (size_t i = 0; i < p.devices.size(); ++i) {
    const PlatformDevice& d = p.devices[i];
    if (d.pcie_link < 0) continue;
    if (of_several_nics[size_t(d.pcie_link)]) {
      c.at("devices")
          .at(i)
          .at("pcie_link")
          .fail("link " + std::to_string(d.pcie_link) + " is already " + part[size_t(d.pcie_link)]);
    }
    part[size_t(d.pcie_link)] = d.name + "'s PCIe link";
  }
  for (size_t r = 0; r < p.racks.size(); ++r) {
    for (const char* key : {"tor_link", "uplink"}) {
      const int link = std::string(key) == "tor_link" ? p.racks[r].tor_link : p.racks[r].uplink;
      if (!part[size_t(link)].empty()) {
        c.at("racks").at(r).at(key).fail("link " + std::to_string(link) + " is already " +
                                         part[size_t(link)]);
      }
      part[size_t(link)] = p.racks[r].name + "'s " + key;
    }
  }
  for (size_t i = 0; i < p.pods.size(); ++i) {
    for (const char* key : {"switch_link", "uplink"}) {
      const int link = std::string(key) == "uplink" ? p.pods[i].uplink : p.pods[i].switch_link;
      if (!part[size_t(link)].empty()) {
        c.at("pods").at(i).at(key).fail("link " + std::to_string(link) + " is already " +
                                        part[size_t(link)]);
      }
      part[size_t(link)] = p.pods[i].name + "'s " + key;
    }
  }
}

// A fat tree's pods from a file: each one's switch shared and uplink split, its parent a pod of
// the level above (so that climbing from any rack ends at the core), and every rack of a fat
// tree under a level-1 pod.
void read_platform_pods(const JsonCursor& c, Platform& p) {
  const JsonCursor pods = c.at("pods");
  const int64_t link_count = int64_t(p.links.size());
  for (size_t i = 0; i < pods.size(); ++i) {
    const JsonCursor g = pods.at(i);
    g.check_keys({"name", "level", "switch_link", "uplink", "parent"});
    PlatformPod pod;
    pod.name = g.at("name").as_string();
    pod.level = int(g.at("level").as_int(1, 64));
    pod.switch_link = int(g.at("switch_link").as_int(0, link_count - 1));
    pod.uplink = int(g.at("uplink").as_int(0, link_count - 1));
    pod.parent = int(g.at("parent").as_int(-1, int64_t(pods.size()) - 1));
    if (p.links[size_t(pod.switch_link)].split_duplex)
      g.at("switch_link").fail("not a shared link");
    if (!p.links[size_t(pod.uplink)].split_duplex) g.at("uplink").fail("not a split link");
    p.pods.push_back(std::move(pod));
  }
  for (size_t i = 0; i < p.pods.size(); ++i) {
    const int parent = p.pods[i].parent;
    if (parent >= 0 && p.pods[size_t(parent)].level != p.pods[i].level + 1) {
      pods.at(i).at("parent").fail("not a pod of level " + std::to_string(p.pods[i].level + 1));
    }
  }
}

}  // namespace

Platform platform_from_json(const nlohmann::json& j, const std::string& file,
                            const std::string& path) {
  const JsonCursor c(j, file, path);
  c.check_keys({"network_model", "switch_link", "links", "machines", "devices", "transport",
                "racks", "pods"});
  Platform p;
  // Optional: traces written before transports existed ran with the ideal one.
  if (c.has("transport")) p.transport = transport_from_json(c.at("transport"));
  const std::string model = c.at("network_model").as_string();
  if (model != "lv08" && model != "ideal") c.at("network_model").fail("expected lv08 or ideal");
  p.network_model = model == "ideal" ? NetworkModel::kIdeal : NetworkModel::kLv08;
  const JsonCursor links = c.at("links");
  for (size_t i = 0; i < links.size(); ++i) {
    const JsonCursor l = links.at(i);
    l.check_keys({"name", "bandwidth_bytes_per_s", "latency_s", "split_duplex"});
    PlatformLink link{l.at("name").as_string(), l.at("bandwidth_bytes_per_s").as_number(),
                      l.at("latency_s").as_number(), l.at("split_duplex").as_bool()};
    if (!(link.bandwidth_bytes_per_s > 0)) l.at("bandwidth_bytes_per_s").fail("must be > 0");
    if (link.latency_s < 0) l.at("latency_s").fail("must not be negative");
    p.links.push_back(link);
  }
  const int64_t link_count = int64_t(p.links.size());
  p.switch_link = int(c.at("switch_link").as_int(0, link_count - 1));
  if (p.links[size_t(p.switch_link)].split_duplex) c.at("switch_link").fail("not a shared link");
  // Optional: traces written before fat trees existed had no pods, before racks one switch.
  if (c.has("pods")) read_platform_pods(c, p);
  if (c.has("racks")) {
    const JsonCursor racks = c.at("racks");
    for (size_t i = 0; i < racks.size(); ++i) {
      const JsonCursor r = racks.at(i);
      r.check_keys({"name", "tor_link", "uplink", "parent"});
      PlatformRack rack{r.at("name").as_string(), int(r.at("tor_link").as_int(0, link_count - 1)),
                        int(r.at("uplink").as_int(0, link_count - 1))};
      if (p.links[size_t(rack.tor_link)].split_duplex) r.at("tor_link").fail("not a shared link");
      if (!p.links[size_t(rack.uplink)].split_duplex) r.at("uplink").fail("not a split link");
      if (!p.pods.empty()) {
        rack.parent = int(r.at("parent").as_int(0, int64_t(p.pods.size()) - 1));
        if (p.pods[size_t(rack.parent)].level != 1) r.at("parent").fail("not a pod of level 1");
      } else if (r.has("parent")) {
        r.at("parent").fail("the platform has no pods");
      }
      p.racks.push_back(std::move(rack));
    }
  } else if (c.has("pods")) {
    c.at("pods").fail("pods without racks");
  }
  const JsonCursor devices = c.at("devices");
  const JsonCursor machines = c.at("machines");
  const int64_t machine_count = int64_t(machines.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    const JsonCursor d = devices.at(i);
    d.check_keys(
        {"name", "machine", "kind", "speed_flop_per_s", "cores", "pcie_link", "memory_bytes"});
    PlatformDevice device;
    device.name = d.at("name").as_string();
    device.machine = int(d.at("machine").as_int(0, machine_count - 1));
    const std::string kind = d.at("kind").as_string();
    if (kind != "cpu" && kind != "gpu") d.at("kind").fail("expected cpu or gpu");
    device.kind = kind == "gpu" ? DeviceKind::kGpu : DeviceKind::kCpu;
    device.speed_flop_per_s = d.at("speed_flop_per_s").as_number();
    if (!(device.speed_flop_per_s > 0)) d.at("speed_flop_per_s").fail("must be > 0");
    // Optional: traces written before CPU cores existed had one.
    if (d.has("cores")) device.cores = int(d.at("cores").as_int(1, kMaxDeviceCores));
    device.pcie_link = int(d.at("pcie_link").as_int(-1, link_count - 1));
    if (d.has("memory_bytes")) device.memory_bytes = d.at("memory_bytes").as_number_in(0, 1e18);
    p.devices.push_back(device);
  }
  for (size_t i = 0; i < machines.size(); ++i) {
    const JsonCursor m = machines.at(i);
    m.check_keys({"name", "nic_link", "nic_links", "devices", "rack"});
    PlatformMachine machine;
    machine.name = m.at("name").as_string();
    if (m.has("nic_link") == m.has("nic_links")) {
      m.fail("give \"nic_link\" (one NIC) or \"nic_links\" (several), not " +
             std::string(m.has("nic_link") ? "both" : "neither"));
    }
    if (m.has("nic_link")) {
      machine.nic_links.push_back(int(m.at("nic_link").as_int(0, link_count - 1)));
    } else {
      const JsonCursor nics = m.at("nic_links");
      nics.expect_array();
      if (nics.size() < 2 || nics.size() > size_t(kMaxNicsPerMachine)) {
        nics.fail("expected 2 to " + std::to_string(kMaxNicsPerMachine) + " NIC links");
      }
      for (size_t k = 0; k < nics.size(); ++k) {
        const int link = int(nics.at(k).as_int(0, link_count - 1));
        if (!p.links[size_t(link)].split_duplex) nics.at(k).fail("not a split link");
        machine.nic_links.push_back(link);
      }
    }
    if (!p.racks.empty()) {
      machine.rack = int(m.at("rack").as_int(0, int64_t(p.racks.size()) - 1));
    } else if (m.has("rack")) {
      m.at("rack").fail("the platform has no racks");
    }
    const JsonCursor list = m.at("devices");
    for (size_t k = 0; k < list.size(); ++k) {
      const int device = int(list.at(k).as_int(0, int64_t(p.devices.size()) - 1));
      if (p.devices[size_t(device)].machine != int(i)) {
        list.at(k).fail("device belongs to another machine");
      }
      machine.devices.push_back(device);
    }
    if (machine.devices.empty() ||
        p.devices[size_t(machine.devices.front())].kind != DeviceKind::kCpu) {
      list.fail("a machine lists its CPU first");
    }
    p.machines.push_back(std::move(machine));
  }
  check_platform_rack_links(c, p);
  return p;
}

}  // namespace replisim::core
