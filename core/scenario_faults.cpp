// The "faults" list of a scenario.
#include <string>

#include "core/scenario_parse.h"

namespace replisim::core::scenario_detail {
namespace {

double time_at(const JsonCursor& c) {
  return c.as_quantity_in(Dimension::kTime, 0, limits::kMaxDelayS * 365);
}

FaultSpec parse_role_fault(const JsonCursor& c, const TrainingSpec& training) {
  c.check_keys({"kind", "role", "at"});
  FaultSpec f;
  f.kind = FaultKind::kRole;
  const std::string role = c.at("role").as_string();
  const std::string prefix = "worker";
  if (role.rfind(prefix, 0) == 0 && role.size() > prefix.size() &&
      role.find_first_not_of("0123456789", prefix.size()) == std::string::npos &&
      role.size() - prefix.size() <= 9 && (role[prefix.size()] != '0' || role.size() == 7)) {
    f.worker = std::stoi(role.substr(prefix.size()));
  }
  if (f.worker < 0 || f.worker >= int(training.workers.size())) {
    if (role.rfind("ps", 0) == 0 || role == "client" || role.rfind("tower", 0) == 0) {
      c.at("role").fail("faults of \"" + role +
                        "\" (parameter servers, the in-graph client and towers) need "
                        "checkpoints and restarts, which are not supported yet");
    }
    c.at("role").fail("expected a between-graph worker, \"worker0\" .. \"worker" +
                      std::to_string(training.workers.size() - 1) + "\", got \"" + role + "\"");
  }
  f.at_s = time_at(c.at("at"));
  return f;
}

FaultSpec parse_machine_fault(const JsonCursor& c, const ClusterSpec& cluster,
                              const TrainingSpec& training) {
  c.check_keys({"kind", "machine", "at"});
  FaultSpec f;
  f.kind = FaultKind::kMachine;
  f.machine = c.at("machine").as_string();
  if (cluster.find_machine(f.machine) == nullptr) {
    c.at("machine").fail("no machine named \"" + f.machine + "\"");
  }
  for (const DeviceRef& ps : training.ps) {
    if (ps.machine == f.machine) {
      c.at("machine").fail("machine \"" + f.machine + "\" holds a parameter server (" + ps.str() +
                           "); its death needs checkpoints and restarts, which are not "
                           "supported yet");
    }
  }
  f.at_s = time_at(c.at("at"));
  return f;
}

// The window and factor of a slowdown or a link fault.
void parse_window(const JsonCursor& c, FaultSpec& f) {
  f.from_s = time_at(c.at("from"));
  f.until_s = c.has("until") ? time_at(c.at("until")) : limits::kMaxDelayS * 365;
  if (!(f.until_s > f.from_s)) c.at("until").fail("must be later than \"from\"");
  if (c.at("factor").value().is_number() && c.at("factor").as_number() == 0) {
    c.at("factor").fail(
        "a factor of 0 (a cut) is not supported yet: it needs failing transfers; "
        "use a small factor such as 0.001");
  }
  f.factor = c.at("factor").as_number_in(1e-6, 1);
}

FaultSpec parse_link_fault(const JsonCursor& c, const ClusterSpec& cluster) {
  c.check_keys({"kind", "link", "from", "until", "factor"});
  FaultSpec f;
  f.kind = FaultKind::kLink;
  const std::string link = c.at("link").as_string();
  const std::string suffix = "/nic";
  if (link.size() <= suffix.size() ||
      link.compare(link.size() - suffix.size(), suffix.size(), suffix) != 0 ||
      cluster.find_machine(link.substr(0, link.size() - suffix.size())) == nullptr) {
    c.at("link").fail(
        "expected a machine's NIC, \"<machine>/nic\" (faults of the switch and of "
        "PCIe links are not supported yet), got \"" +
        link + "\"");
  }
  f.machine = link.substr(0, link.size() - suffix.size());
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
      f = parse_machine_fault(entry, cluster, training);
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
