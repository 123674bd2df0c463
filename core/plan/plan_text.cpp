#include "core/plan/plan_text.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

#include "core/base/units.h"

namespace replisim::core {

namespace {

void write_transport(std::ostream& out, const Transport& t) {
  out << "transport between " << (t.between_processes ? "processes" : "machines") << ": "
      << t.preset;
  if (t.flow_rate_limit_bytes_per_s > 0) {
    out << ", at most " << format_quantity(t.flow_rate_limit_bytes_per_s, Dimension::kBandwidth)
        << " per stream";
  }
  if (t.header_overhead_fraction > 0) {
    out << ", headers +" << std::lround(1000 * t.header_overhead_fraction) / 10.0 << "%";
  }
  if (t.per_message_overhead_s > 0) {
    out << ", " << format_quantity(t.per_message_overhead_s, Dimension::kTime) << " per message";
    if (t.chunk_bytes > 0) {
      out << " (each " << format_quantity(t.chunk_bytes, Dimension::kBytes) << " chunk)";
    }
  }
  if (t.copy_bandwidth_bytes_per_s > 0) {
    out << ", copies at " << format_quantity(t.copy_bandwidth_bytes_per_s, Dimension::kBandwidth);
  }
  if (t.between_processes) {
    out << ", loopback";
    if (t.loopback_bandwidth_bytes_per_s > 0) {
      out << " at most " << format_quantity(t.loopback_bandwidth_bytes_per_s, Dimension::kBandwidth)
          << " per stream,";
    }
    out << " latency " << format_quantity(t.loopback_latency_s, Dimension::kTime);
  }

  if (t.process_rpc_ceiling_bytes_per_s > 0) {
    out << ", at most " << format_quantity(t.process_rpc_ceiling_bytes_per_s, Dimension::kBandwidth)
        << " per process";
  }
  out << ", " << t.connections_per_peer << " connection(s) per peer\n";
}

// Sync replicas, the chief's checkpoints and summaries, recovery: the lines of those in use.
void write_training_policies(std::ostream& out, const Plan& plan) {
  if (plan.sync == "sync") {
    const SyncReplicas& sr = plan.sync_replicas;
    out << "sync: " << sr.variant << ", replicas_to_aggregate " << sr.replicas_to_aggregate
        << " of total_num_replicas " << sr.total_num_replicas << ", tokens " << sr.initial_tokens
        << " at the start and " << sr.tokens_per_step
        << " per global step; the chief's sync op: " << sr.chief_graph.ops.size()
        << " ops on the PS devices\n";
  }
  if (plan.sync == kDistributedReplicated) {
    size_t barriers = 0;
    for (const Op& op : plan.clients.front().ops) barriers += op.kind == OpKind::kBarrier;
    out << "sync: distributed_replicated, each worker applies its own gradients and meets the "
           "others at "
        << barriers
        << " barriers per step on the PS tasks (one per variable slice, one at the end)\n";
  }
  const CheckpointPolicy& cp = plan.checkpoints;
  if (cp.every_s > 0) {
    out << "checkpoints: every " << format_quantity(cp.every_s, Dimension::kTime) << " (and at "
        << "session start), " << format_quantity(cp.bytes, Dimension::kBytes) << " at "
        << format_quantity(cp.disk_bandwidth_bytes_per_s, Dimension::kBandwidth) << " = "
        << format_quantity(cp.bytes / cp.disk_bandwidth_bytes_per_s, Dimension::kTime)
        << " of chief pause each\n";
  }
  if (cp.summary_every_steps > 0) {
    out << "summaries: every " << cp.summary_every_steps << " chief steps, "
        << format_quantity(cp.summary_bytes, Dimension::kBytes) << " at "
        << format_quantity(cp.summary_disk_bandwidth_bytes_per_s, Dimension::kBandwidth) << "\n";
  }
  if (plan.recovery.enabled) {
    out << "recovery: failures detected after "
        << format_quantity(plan.recovery.detect_timeout_s, Dimension::kTime) << ", tasks restarted "
        << format_quantity(plan.recovery.restart_delay_s, Dimension::kTime)
        << " later, workers poll for the restored model every "
        << format_quantity(plan.recovery.recovery_wait_s, Dimension::kTime) << "\n";
  }
}

void write_faults(std::ostream& out, const Plan& plan) {
  for (const PlanFault& f : plan.faults) {
    out << "fault: " << f.description;
    if (f.kind == PlanFaultKind::kJob) {
      out << " at " << format_quantity(f.at_s, Dimension::kTime) << ": the job fails"
          << (plan.recovery.enabled ? " and restarts from its last checkpoint"
                                    : " (no training.recovery: the run ends)");
    } else if (f.kind == PlanFaultKind::kRole) {
      out << " at " << format_quantity(f.at_s, Dimension::kTime) << " (";
      for (size_t i = 0; i < f.clients.size(); ++i) {
        out << (i ? " " : "") << plan.roles[size_t(plan.clients[size_t(f.clients[i])].role)].name;
      }
      out << ")";
    } else {
      out << " from " << format_quantity(f.from_s, Dimension::kTime)
          << (f.open_ended ? std::string(" on")
                           : " to " + format_quantity(f.until_s, Dimension::kTime));
    }
    out << "\n";
  }
}

// Steps, roles, notes and where the variables live.
void write_roles_and_variables(std::ostream& out, const Plan& plan) {
  const Platform& p = plan.platform;
  out << "steps: ";
  if (plan.steady_tolerance > 0) {
    out << "auto, stopping once the throughput's 95% interval is within +-"
        << 100 * plan.steady_tolerance << "%, at most " << plan.steps;
  } else {
    out << plan.steps;
  }
  out << " (" << plan.warmup_steps << " warm-up), batch per replica ";
  if (plan.replica_batches.empty()) {
    out << plan.batch_per_replica;
  } else {
    for (size_t k = 0; k < plan.replica_batches.size(); ++k) {
      out << (k > 0 ? "/" : "") << plan.replica_batches[k];
    }
    out << " (in replica order)";
  }
  out << ", input prefetch " << plan.input_prefetch_batches << " batch(es)\n";
  out << "roles:";
  for (const Role& r : plan.roles) {
    out << " " << r.name << (r.chief ? "*" : "") << "@" << p.devices[size_t(r.device)].name;
  }
  out << "   (* chief)\n";
  std::vector<double> bytes(plan.ps_roles.size(), 0.0);
  std::vector<int> count(plan.ps_roles.size(), 0);
  for (const Variable& v : plan.variables) {
    if (v.ps < 0) continue;  // all-reduce: every worker holds its own copy
    bytes[size_t(v.ps)] += v.bytes;
    ++count[size_t(v.ps)];
  }
  out << "op granularity: " << (plan.granularity == "layer" ? "per layer" : plan.granularity)
      << "\n";
  for (const std::string& note : plan.notes) out << "note: " << note << "\n";
  out << "variables: " << plan.variables.size() << " (global_step first)";
  for (size_t i = 0; i < bytes.size(); ++i) {
    out << "; " << plan.roles[size_t(plan.ps_roles[i])].name << " holds " << count[i] << " ("
        << format_quantity(bytes[i], Dimension::kBytes, 4) << ")";
  }
  out << "\n";
}

// One client graph: its ops by kind, the work per device and the transfers per step.
void write_client_graph(std::ostream& out, const Plan& plan, const ClientGraph& graph) {
  const Platform& p = plan.platform;
  out << "\nclient graph " << plan.roles[size_t(graph.role)].name << ": " << graph.ops.size()
      << " ops, " << graph.samples_per_step << " samples per step, starts at "
      << format_quantity(graph.start_offset_s, Dimension::kTime);
  if (graph.launch_offset_s != graph.start_offset_s) {
    out << " (launched at " << format_quantity(graph.launch_offset_s, Dimension::kTime)
        << ", waiting for the session)";
  }
  out << "\n  ops by kind:";
  std::map<std::string, int> kinds;
  std::map<int, std::pair<int, double>> per_device;                 // ops, flop
  std::map<std::pair<int, int>, std::pair<int, double>> transfers;  // tensors, bytes
  for (const Op& op : graph.ops) {
    ++kinds[op_kind_name(op.kind)];
    auto& d = per_device[op.device];
    ++d.first;
    d.second += op.compute_flop;
    if (op.kind == OpKind::kSend) {
      auto& t = transfers[{op.device, graph.ops[size_t(op.peer)].device}];
      ++t.first;
      t.second += op.bytes;
    }
  }
  for (const auto& [kind, n] : kinds) out << " " << kind << " " << n;
  out << "\n  work per device:\n";
  for (const auto& [device, work] : per_device) {
    const PlatformDevice& dev = p.devices[size_t(device)];
    out << "    " << dev.name << ": " << work.first << " ops, "
        << format_quantity(work.second, Dimension::kFlop) << " = "
        << format_quantity(work.second / dev.speed_flop_per_s, Dimension::kTime)
        << " of compute per step\n";
  }
  out << "  transfers per step:\n";
  for (const auto& [pair, t] : transfers) {
    out << "    " << p.devices[size_t(pair.first)].name << " -> "
        << p.devices[size_t(pair.second)].name << ": " << t.first << " tensor(s), "
        << format_quantity(t.second, Dimension::kBytes) << "\n";
  }
}

// A link's bandwidth in bits per second, as NICs and switches are sold and scenarios give them.
std::string link_bandwidth_text(const Platform& p, int link) {
  const double bits_per_s = 8 * p.links[size_t(link)].bandwidth_bytes_per_s;
  char text[48];
  if (bits_per_s >= 1e13) {  // past 9,999 Gbit/s (%.4g would print an exponent)
    std::snprintf(text, sizeof text, "%.4g Tbit/s", bits_per_s / 1e12);
  } else if (bits_per_s >= 1e9) {
    std::snprintf(text, sizeof text, "%.4g Gbit/s", bits_per_s / 1e9);
  } else {
    std::snprintf(text, sizeof text, "%.4g Mbit/s", bits_per_s / 1e6);
  }
  return std::string(text);
}

// "a, b, c", or past four names "a, b, ..., z".
std::string short_name_list(const std::vector<std::string>& names) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names.size() > 4 && i == 2) {
      list += ", ..., " + names.back();
      break;
    }
    list += (i == 0 ? "" : ", ") + names[i];
  }
  return list;
}

// "3:1": what feeds an uplink over its bandwidth.
std::string oversubscription_text(double feeding_bytes_per_s, double uplink_bytes_per_s) {
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3g:1", feeding_bytes_per_s / uplink_bytes_per_s);
  return ratio;
}

// At most kGroupsListed racks or pods, the first ones (a cluster of thousands would flood the
// text).
constexpr size_t kGroupsListed = 16;

// A fat tree's pods (Platform::pods): per pod its children (racks or pods), aggregation switch and
// uplink with its oversubscription (the children's uplinks over its own).
void write_pods(std::ostream& out, const Platform& p) {
  for (size_t g = 0; g < p.pods.size(); ++g) {
    if (g == kGroupsListed) {
      out << "  ... and " << p.pods.size() - kGroupsListed << " more pod(s)\n";
      break;
    }
    const PlatformPod& pod = p.pods[g];
    std::vector<std::string> names;
    double children_bytes_per_s = 0;
    const auto add = [&](const std::string& name, int uplink) {
      names.push_back(name);
      children_bytes_per_s += p.links[size_t(uplink)].bandwidth_bytes_per_s;
    };
    for (const PlatformRack& r : p.racks) {
      if (r.parent == int(g)) add(r.name, r.uplink);
    }
    for (const PlatformPod& child : p.pods) {
      if (child.parent == int(g)) add(child.name, child.uplink);
    }
    out << "  " << pod.name << " (level " << pod.level << "): " << names.size() << " "
        << (pod.level == 1 ? "rack" : "pod") << "(s) (" << short_name_list(names)
        << "), aggregation " << link_bandwidth_text(p, pod.switch_link)
        << (p.switch_can_bind(pod.switch_link) ? "" : " (non-blocking)") << ", uplink "
        << link_bandwidth_text(p, pod.uplink) << " ("
        << oversubscription_text(children_bytes_per_s,
                                 p.links[size_t(pod.uplink)].bandwidth_bytes_per_s)
        << " oversubscribed)\n";
  }
}

// With racks: the core switch, and per rack its machines, top-of-rack switch and uplink with its
// oversubscription (the rack's NIC total over the uplink); a fat tree's pods after them. One
// switch: nothing (the platform line says it all).
void write_topology(std::ostream& out, const Platform& p) {
  if (p.racks.empty()) return;
  out << "topology: ";
  if (!p.pods.empty()) {
    out << "fat tree of " << p.pods.back().level + 1 << " level(s), ";
  }
  out << p.racks.size() << " rack(s), ";
  if (!p.pods.empty()) out << p.pods.size() << " pod(s), ";
  out << "core switch " << link_bandwidth_text(p, p.switch_link)
      << (p.switch_can_bind(p.switch_link) ? "" : " (non-blocking)") << "\n";
  for (size_t r = 0; r < p.racks.size(); ++r) {
    if (r == kGroupsListed) {
      out << "  ... and " << p.racks.size() - kGroupsListed << " more rack(s)\n";
      break;
    }
    const PlatformRack& rack = p.racks[r];
    std::vector<std::string> names;
    double nic_total = 0;
    for (const PlatformMachine& m : p.machines) {
      if (m.rack != int(r)) continue;
      names.push_back(m.name);
      for (int nic : m.nic_links) nic_total += p.links[size_t(nic)].bandwidth_bytes_per_s;
    }
    out << "  " << rack.name << ": " << names.size() << " machine(s) (" << short_name_list(names)
        << "), top-of-rack " << link_bandwidth_text(p, rack.tor_link)
        << (p.switch_can_bind(rack.tor_link) ? "" : " (non-blocking)") << ", uplink "
        << link_bandwidth_text(p, rack.uplink) << " ("
        << oversubscription_text(nic_total, p.links[size_t(rack.uplink)].bandwidth_bytes_per_s)
        << " oversubscribed)\n";
  }
  write_pods(out, p);
}

// Machines of several NICs (nic.count), at most kGroupsListed: "nics: ps 2 x 10 Gbit/s; the others
// one each (...)". One NIC each: nothing.
void write_nics(std::ostream& out, const Platform& p) {
  std::vector<std::string> several;
  size_t more = 0, single = 0;
  for (const PlatformMachine& m : p.machines) {
    if (m.nic_links.size() < 2) {
      ++single;
      continue;
    }
    if (several.size() == kGroupsListed) {
      ++more;
      continue;
    }
    several.push_back(m.name + " " + std::to_string(m.nic_links.size()) + " x " +
                      link_bandwidth_text(p, m.nic_links.front()));
  }
  if (several.empty()) return;
  out << "nics: ";
  for (size_t i = 0; i < several.size(); ++i) out << (i == 0 ? "" : ", ") << several[i];
  if (more > 0) out << ", and " << more << " more machine(s)";
  out << (single > 0 ? "; the others one each" : "")
      << " (a connection between two machines takes one NIC of each end)\n";
}

}  // namespace

std::string format_plan(const Plan& plan) {
  std::ostringstream out;
  const Platform& p = plan.platform;
  out << "plan: " << plan.strategy
      << (clients_are_workers(plan) ? " (" + plan.sync + ")" : std::string()) << " for scenario \""
      << plan.scenario_name << "\", hash " << plan_hash(plan) << ", seed " << plan.seed << "\n";
  out << "platform: " << p.machines.size() << " machine(s), " << p.devices.size() << " device(s), "
      << p.links.size() << " link(s), network model " << network_model_name(p.network_model)
      << "\n";
  write_nics(out, p);
  write_topology(out, p);
  write_transport(out, p.transport);
  write_training_policies(out, plan);
  write_faults(out, plan);
  write_roles_and_variables(out, plan);
  for (const ClientGraph& graph : plan.clients) write_client_graph(out, plan, graph);
  return out.str();
}

}  // namespace replisim::core
