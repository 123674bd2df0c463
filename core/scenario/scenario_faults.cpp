// The "faults" list of a scenario.
#include <string>

#include "core/scenario/scenario_parse.h"

namespace replisim::core::scenario_detail {
namespace {

double time_at(const JsonCursor& c) {
  return c.as_quantity_in(Dimension::kTime, 0, limits::kMaxDelayS * 365);
}

// Roles by their plan names: between-graph workers, parameter servers, and the in-graph client
// and towers (which exists depends on the strategy; the compiler ignores the others with a note).
FaultSpec parse_role_fault(const JsonCursor& c, const TrainingSpec& training) {
  c.check_keys({"kind", "role", "at"});
  FaultSpec f;
  f.kind = FaultKind::kRole;
  f.role = c.at("role").as_string();
  const int worker = numbered_name(f.role, "worker"), ps = numbered_name(f.role, "ps"),
            tower = numbered_name(f.role, "tower");
  const bool valid = (worker >= 0 && worker < int(training.workers.size())) ||
                     (ps >= 0 && ps < int(training.ps.size())) ||
                     (tower >= 0 && tower < int(training.replicas.size())) || f.role == "client";
  if (!valid) {
    auto range = [](const std::string& prefix, size_t n) {
      const std::string first = "\"" + prefix + "0\"";
      return n == 1 ? first : first + " .. \"" + prefix + std::to_string(n - 1) + "\"";
    };
    c.at("role").fail("expected " + range("worker", training.workers.size()) + ", " +
                      range("ps", training.ps.size()) + ", \"client\" or " +
                      range("tower", training.replicas.size()) + ", got \"" + f.role + "\"");
  }
  f.worker = worker;
  f.at_s = time_at(c.at("at"));
  return f;
}

FaultSpec parse_machine_fault(const JsonCursor& c, const ClusterSpec& cluster) {
  c.check_keys({"kind", "machine", "at"});
  FaultSpec f;
  f.kind = FaultKind::kMachine;
  f.machine = c.at("machine").as_string();
  if (cluster.find_machine(f.machine) == nullptr) {
    c.at("machine").fail("no machine named \"" + f.machine + "\"");
  }
  f.at_s = time_at(c.at("at"));
  return f;
}

// The window and factor of a slowdown or a link fault.
void parse_window(const JsonCursor& c, FaultSpec& f) {
  f.from_s = time_at(c.at("from"));
  f.open_ended = !c.has("until");
  f.until_s = f.open_ended ? limits::kOpenEndedFaultS : time_at(c.at("until"));
  if (!(f.until_s > f.from_s)) c.at("until").fail("must be later than \"from\"");
  f.factor = c.at("factor").as_number_in(0, 1);
  // Below 1e-6 a window only stretches simulated time into the astronomical: 0 (a cut) says it.
  constexpr double kMinFactor = 1e-6;
  if (f.factor > 0 && f.factor < kMinFactor) {
    c.at("factor").fail("expected 0 (a cut) or at least 1e-6, got " +
                        dump_json(nlohmann::json(f.factor)));
  }
  if (f.kind == FaultKind::kLink && f.factor == 0 && !c.has("until")) {
    c.fail(
        "a cut (factor 0) needs \"until\": a link that never comes back leaves every transfer "
        "across it waiting forever (to take machines out for good, use a machine fault)");
  }
  if (f.kind == FaultKind::kSlowdown && f.factor == 0) {
    c.at("factor").fail("a device cannot run at speed 0; kill its role instead (kind \"role\")");
  }
}

FaultSpec parse_link_fault(const JsonCursor& c, const ClusterSpec& cluster) {
  c.check_keys({"kind", "link", "from", "until", "factor"});
  FaultSpec f;
  f.kind = FaultKind::kLink;
  const std::string link = c.at("link").as_string();
  f.link = link;
  if (link == "switch") {
    parse_window(c, f);
    return f;
  }
  const int racks = cluster.topology.rack_count;
  if (racks > 0) {
    bool rack_link = link == "core";
    for (int r = 0; r < racks && !rack_link; ++r) {
      const std::string rack = "rack" + std::to_string(r);
      rack_link = link == rack + "/uplink" || link == rack + "/tor";
    }
    // A fat tree's pods (core::fat_tree_group_name): "<pod>/aggregation" and its uplink.
    const std::vector<FatTreeLevelSpec>& levels = cluster.topology.upper_levels;
    for (size_t k = 0; k < levels.size() && !rack_link; ++k) {
      for (int g = 0; g < levels[k].group_count && !rack_link; ++g) {
        const std::string pod = fat_tree_group_name(int(k) + 1, g) + "/aggregation";
        rack_link = link == pod || link == pod + "/uplink";
      }
    }
    if (rack_link) {
      parse_window(c, f);
      return f;
    }
  }
  // "<machine>/nic" (its first NIC) or "<machine>/nic<k>", k from 1 (no leading zero).
  const size_t slash = link.rfind('/');
  const std::string machine = slash == std::string::npos ? std::string() : link.substr(0, slash);
  const std::string nic = slash == std::string::npos ? std::string() : link.substr(slash + 1);
  const std::string digits = nic.size() > 3 ? nic.substr(3) : std::string();
  const bool numbered = nic.compare(0, 3, "nic") == 0 && !digits.empty() && digits.size() <= 2 &&
                        digits[0] != '0' &&
                        digits.find_first_not_of("0123456789") == std::string::npos;
  const MachineSpec* spec = cluster.find_machine(machine);
  if (spec != nullptr && numbered && std::stoi(digits) >= spec->nic_count) {
    c.at("link").fail("machine \"" + machine + "\" has " +
                      (spec->nic_count == 1 ? std::string("one NIC, \"" + machine + "/nic\"")
                                            : std::to_string(spec->nic_count) + " NICs, \"" +
                                                  machine + "/nic\" to \"" + machine + "/nic" +
                                                  std::to_string(spec->nic_count - 1) + "\"") +
                      " (nic.count), got \"" + link + "\"");
  }
  if (spec == nullptr || (nic != "nic" && !numbered)) {
    c.at("link").fail(std::string("expected a machine's NIC, \"<machine>/nic\" (its others "
                                  "\"<machine>/nic1\", ...), or \"switch\"") +
                      (racks > 0
                           ? ", \"core\", \"rack<i>/uplink\" or \"rack<i>/tor\" (racks 0 to " +
                                 std::to_string(racks - 1) + ")" +
                                 (cluster.topology.upper_levels.empty()
                                      ? ""
                                      : ", \"pod<i>/aggregation\" or its \"/uplink\"")
                           : "") +
                      " (faults of PCIe links are not supported), got \"" + link + "\"");
  }
  f.machine = machine;
  f.nic = numbered ? std::stoi(digits) : 0;
  parse_window(c, f);
  return f;
}

FaultSpec parse_slowdown(const JsonCursor& c, const ClusterSpec& cluster) {
  c.check_keys({"kind", "device", "from", "until", "factor"});
  FaultSpec f;
  f.kind = FaultKind::kSlowdown;
  const std::string text = c.at("device").as_string();
  if (!parse_device_ref(text, &f.device)) {
    c.at("device").fail("expected a device \"<machine>/cpu\" or \"<machine>/gpu<i>\"");
  }
  const MachineSpec* machine = cluster.find_machine(f.device.machine);
  if (machine == nullptr ||
      (f.device.kind == DeviceKind::kGpu && f.device.gpu_index >= int(machine->gpus.size()))) {
    c.at("device").fail("no device \"" + text + "\" in the cluster");
  }
  parse_window(c, f);
  return f;
}

}  // namespace

std::vector<FaultSpec> parse_faults(const JsonCursor& c, const ClusterSpec& cluster,
                                    const TrainingSpec& training) {
  std::vector<FaultSpec> faults;
  for (size_t i = 0; i < c.size(); ++i) {
    const JsonCursor entry = c.at(i);
    entry.expect_object();
    const std::string kind = entry.at("kind").as_string();
    FaultSpec f;
    if (kind == "role") {
      f = parse_role_fault(entry, training);
    } else if (kind == "machine") {
      f = parse_machine_fault(entry, cluster);
    } else if (kind == "slowdown") {
      f = parse_slowdown(entry, cluster);
    } else if (kind == "link") {
      f = parse_link_fault(entry, cluster);
    } else {
      entry.at("kind").fail("unknown fault kind \"" + kind +
                            "\"; valid: role, machine, slowdown, link");
    }
    f.json_path = "/faults/" + std::to_string(i);
    faults.push_back(std::move(f));
  }
  return faults;
}

}  // namespace replisim::core::scenario_detail

namespace replisim::core {

int numbered_name(const std::string& text, const std::string& prefix) {
  if (text.rfind(prefix, 0) != 0 || text.size() == prefix.size() ||
      text.size() - prefix.size() > 9 ||
      text.find_first_not_of("0123456789", prefix.size()) != std::string::npos ||
      (text[prefix.size()] == '0' && text.size() > prefix.size() + 1)) {
    return -1;
  }
  return std::stoi(text.substr(prefix.size()));
}

}  // namespace replisim::core
