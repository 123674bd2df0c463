#include "real/isolate/shaped_links.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/units.h"
#include "real/transport/mesh.h"

namespace replisim::real::isolate {
namespace {

std::vector<NicShape> nics_of(const core::Plan& plan) {
  std::vector<NicShape> nics;
  for (const core::PlatformMachine& m : plan.platform.machines) {
    // One NIC a machine (core::refuse_what_real_runs_cannot_do refuses several): its first.
    const double bandwidth =
        m.nic_links.empty()
            ? 0
            : plan.platform.links[size_t(m.nic_links.front())].bandwidth_bytes_per_s;
    nics.push_back({m.name, bandwidth, bandwidth, m.rack});
  }
  return nics;
}

// Each rack's uplink (core::Platform::racks), the same bandwidth each way.
std::vector<RackShape> racks_of(const core::Plan& plan) {
  std::vector<RackShape> racks;
  for (const core::PlatformRack& r : plan.platform.racks) {
    const double bandwidth = plan.platform.links[size_t(r.uplink)].bandwidth_bytes_per_s;
    racks.push_back({r.name, bandwidth, bandwidth});
  }
  return racks;
}

// The machine whose NIC is `link`, or -1.
int machine_of_nic(const core::Plan& plan, int link) {
  for (size_t m = 0; m < plan.platform.machines.size(); ++m) {
    const std::vector<int>& nics = plan.platform.machines[m].nic_links;
    if (std::find(nics.begin(), nics.end(), link) != nics.end()) return int(m);
  }
  return -1;
}

}  // namespace

void check_one_nic_per_machine(const core::Plan& plan, const std::string& file) {
  const std::vector<core::PlatformMachine>& machines = plan.platform.machines;
  for (size_t m = 0; m < machines.size(); ++m) {
    if (machines[m].nic_links.size() <= 1) continue;
    throw core::InputError(file, "/platform/machines/" + std::to_string(m) + "/nic_links",
                           "--isolate netns: several NICs per machine are not emulated yet "
                           "(machine \"" +
                               machines[m].name + "\" has " +
                               std::to_string(machines[m].nic_links.size()) +
                               "): simulate it, or run it on loopback");
  }
}

void check_link_faults(const core::Plan& plan, const std::string& file) {
  const double silence_s = MeshConfig{}.silence_timeout_s;
  struct Cut {
    double from_s, until_s;
    size_t fault;
  };
  std::vector<Cut> cuts;
  for (size_t f = 0; f < plan.faults.size(); ++f) {
    const core::PlanFault& fault = plan.faults[f];
    if (fault.kind != core::PlanFaultKind::kLink) continue;
    if (machine_of_nic(plan, fault.link) < 0) {
      throw core::InputError(file, "/faults/" + std::to_string(f),
                             "\"" + fault.description +
                                 "\": a shaped network plays faults on machines' NICs only, not "
                                 "on a switch or an uplink: put the fault on a machine's NIC "
                                 "(\"<machine>/nic\")");
    }
    if (fault.factor <= 0) {
      cuts.push_back({fault.from_s, fault.until_s, f});
    }
  }
  // Cuts that overlap or follow each other (on any NICs: a path crosses two) are one outage.
  std::sort(cuts.begin(), cuts.end(),
            [](const Cut& a, const Cut& b) { return a.from_s < b.from_s; });
  for (size_t i = 0; i < cuts.size();) {
    double until_s = cuts[i].until_s;
    size_t j = i + 1;
    while (j < cuts.size() && cuts[j].from_s <= until_s)
      until_s = std::max(until_s, cuts[j++].until_s);
    if (until_s - cuts[i].from_s >= silence_s) {
      const core::PlanFault& first = plan.faults[cuts[i].fault];
      throw core::InputError(
          file, "/faults/" + std::to_string(cuts[i].fault),
          "\"" + first.description + "\"" +
              (j - i > 1 ? " with the cuts that overlap or follow it" : "") +
              ": a real run can cut links for less than " +
              core::format_quantity(silence_s, core::Dimension::kTime) +
              " at a time (a peer silent that long is declared lost and the job fails, where the "
              "simulator holds the transfers until the link returns): shorten the cut");
    }
    i = j;
  }
}

ShapedLinks::ShapedLinks(const core::Plan& plan)
    : net(nics_of(plan), racks_of(plan)), plan_(plan) {}

void ShapedLinks::play(double now_s) {
  std::vector<double> factor(plan_.platform.machines.size(), 1.0);
  for (const core::PlanFault& fault : plan_.faults) {
    if (fault.kind != core::PlanFaultKind::kLink || now_s < fault.from_s || now_s >= fault.until_s)
      continue;
    const int m = machine_of_nic(plan_, fault.link);
    if (m >= 0) factor[size_t(m)] *= fault.factor;
  }
  for (size_t m = 0; m < factor.size(); ++m) net.set_nic_factor(m, factor[m]);
}

}  // namespace replisim::real::isolate
