// What each computing role's time in its measured steps went to: its own compute, an all-reduce
// of its own, the network, the in-graph client, its peers, a parameter server, the sync token, or
// nothing of the step.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/metrics/metrics_detail.h"

namespace replisim::core::metrics_detail {
namespace {

enum WaitCategory {
  kCompute,
  kNetwork,
  kClient,
  kPeers,
  kPs,
  kToken,
  kOther,
  kCollective,
  kCategories
};

// What is active at a moment of a step, counted per kind (the sweep below keeps the counts).
enum Activity {
  kOwnCompute,
  kOwnTransfer,
  kClientCompute,
  kPeerCompute,
  kPsCompute,
  kAnyTransfer,
  kOwnCollective
};
constexpr int kActivities = 7;

// The events the breakdown reads: ops, transfers and all-reduce phases.
bool counts_for_waits(const TraceEvent& e) {
  return e.kind == EventKind::kCompute || e.kind == EventKind::kTransfer ||
         e.kind == EventKind::kCollective;
}

// Where an event of a step starts (+1) or stops (-1) counting.
struct Boundary {
  double time;
  int delta;
  const TraceEvent* event;
};

// The synchronous token's own 8-byte trip back to the worker ends the wait; it does not start it.
// Its transfer, and under a transport that copies between processes (tcp, tf1_grpc) its
// serialisation and deserialisation, compute events that carry the token's producer as well.
bool is_token_trip(const TraceEvent& e) {
  return (e.kind == EventKind::kTransfer || e.kind == EventKind::kCompute) &&
         e.producer == OpKind::kTokenDequeue;
}

// The boundaries of the step's compute and transfer events inside `span`, in time order (into
// `boundaries`, cleared first: the caller keeps it between steps). The same for every role of the
// step, so sorted once per step, not once per role (a multi-tower worker has a role per tower).
void boundaries_of(const std::vector<const TraceEvent*>& group, const Span& span,
                   std::vector<Boundary>& boundaries) {
  boundaries.clear();
  for (const TraceEvent* e : group) {
    if (!counts_for_waits(*e)) continue;
    const double start = std::max(e->start_s, span.start_s);
    const double end = std::min(e->end_s, span.end_s);
    if (end <= start) continue;
    boundaries.push_back({start, +1, e});
    boundaries.push_back({end, -1, e});
  }
  // Boundaries at one time may come in any order: none charges time between them.
  std::sort(boundaries.begin(), boundaries.end(),
            [](const Boundary& a, const Boundary& b) { return a.time < b.time; });
}

// What a compute, transfer or collective event counts as from `role`'s point of view: up to two
// activities (into `out`); returns how many. Another rank's phase of a collective counts nothing:
// its chunks to and from this role are transfers of their own.
int activities_of(const MetricsInput& in, const TraceEvent& e, uint32_t role, Activity out[2]) {
  int count = 0;
  if (e.kind == EventKind::kCollective) {
    if (e.actor == role) out[count++] = kOwnCollective;
    return count;
  }
  // A tensor's serialisation or deserialisation (TraceRecorder::copy) is the network stack's
  // time, not the op's.
  const bool copy =
      e.kind == EventKind::kCompute && (e.op == OpKind::kSend || e.op == OpKind::kRecv);
  if (copy) {
    if (e.actor == role) out[count++] = kOwnTransfer;
    out[count++] = kAnyTransfer;
  } else if (e.kind == EventKind::kCompute) {
    if (e.actor == role) {
      out[count++] = kOwnCompute;
    } else {
      const RoleKind* kind = in.kind_of(e.actor);
      out[count++] = kind != nullptr && *kind == RoleKind::kClient            ? kClientCompute
                     : kind != nullptr && *kind == RoleKind::kParameterServer ? kPsCompute
                                                                              : kPeerCompute;
    }
  } else {
    if (e.actor == role || e.peer_actor == role) out[count++] = kOwnTransfer;
    out[count++] = kAnyTransfer;
  }
  return count;
}

// The end of the step's last event inside `span` (a synchronous worker's token trip aside).
double last_event_end(const MetricsInput& in, const std::vector<const TraceEvent*>& group,
                      const Span& span) {
  double last = span.start_s;
  for (const TraceEvent* e : group) {
    if (in.synchronous && is_token_trip(*e)) continue;
    last = std::max(last, std::min(e->end_s, span.end_s));
  }
  return last;
}

// The cause a wait stretch of `category` names (kCompute is no wait).
WaitCause cause_of(WaitCategory category) {
  switch (category) {
    case kNetwork:
      return WaitCause::kNetwork;
    case kClient:
      return WaitCause::kClient;
    case kPeers:
      return WaitCause::kPeers;
    case kPs:
      return WaitCause::kParameterServer;
    case kToken:
      return WaitCause::kToken;
    case kCollective:
      return WaitCause::kCollective;
    default:
      return WaitCause::kOther;
  }
}

// Classifies the time of `role` inside one step span from the step's boundaries (boundaries_of)
// and the end of its last event (last_event_end). With `stretches`, each stretch in which nothing
// of the role's own ran is added to it too (adjacent ones of one cause joined).
void accumulate_waits(const MetricsInput& in, const std::vector<Boundary>& boundaries,
                      double last_end_s, const Span& span, uint32_t role,
                      std::vector<double>& seconds, std::vector<WaitStretch>* stretches = nullptr) {
  int active[kActivities] = {0, 0, 0, 0, 0, 0, 0};
  double t = span.start_s;
  auto charge = [&](double until) {
    if (until <= t) return;
    // Synchronous workers: once every op of the step is done, the rest of the step is the wait
    // for a token (the other workers' gradients and the chief's update). distributed_replicated
    // workers: nothing of the step running is a wait at a barrier (for the other workers).
    WaitCategory category = (in.synchronous && t >= last_end_s) || in.barriers ? kToken : kOther;
    if (active[kOwnCompute] > 0) {
      category = kCompute;
    } else if (active[kOwnCollective] > 0) {
      // Its own chunks in flight included: the collective's time is the wait on the others.
      category = kCollective;
    } else if (active[kOwnTransfer] > 0) {
      category = kNetwork;
    } else if (active[kClientCompute] > 0) {
      category = kClient;
    } else if (active[kPeerCompute] > 0) {
      category = kPeers;
    } else if (active[kPsCompute] > 0) {
      category = kPs;
    } else if (active[kAnyTransfer] > 0) {
      category = kNetwork;
    }
    seconds[size_t(category)] += until - t;
    const bool own_work =
        category == kCompute || (category == kNetwork && active[kOwnTransfer] > 0);
    if (stretches != nullptr && !own_work) {
      const WaitCause cause = cause_of(category);
      if (!stretches->empty() && stretches->back().role == role &&
          stretches->back().cause == cause && stretches->back().end_s >= t) {
        stretches->back().end_s = until;
      } else {
        stretches->push_back({role, t, until, cause});
      }
    }
    t = until;
  };
  Activity activities[2];
  for (const Boundary& b : boundaries) {
    charge(b.time);
    const int count = activities_of(in, *b.event, role, activities);
    for (int i = 0; i < count; ++i) active[activities[i]] += b.delta;
  }
  charge(span.end_s);
}

// A client graph's compute and transfer events in its measured steps, and the roles that
// computed in any of its steps.
struct ClientEvents {
  std::vector<std::vector<const TraceEvent*>> by_step;  // [step]: its events in trace order
  std::vector<uint32_t> computing_roles;                // not PS
};

// One pass over the trace, a hash lookup per event. Only the steps `measured` has are kept (a
// step number from a damaged trace file must not size a table).
std::unordered_map<uint32_t, ClientEvents> events_by_client(const MetricsInput& in,
                                                            const MeasuredTable& measured) {
  std::unordered_map<uint32_t, ClientEvents> clients;
  for (const TraceEvent& e : in.trace.events) {
    if (!counts_for_waits(e)) continue;
    ClientEvents& client = clients[e.client];
    const RoleKind* kind = in.kind_of(e.actor);
    std::vector<uint32_t>& roles = client.computing_roles;
    if (kind != nullptr && *kind != RoleKind::kParameterServer &&
        std::find(roles.begin(), roles.end(), e.actor) == roles.end()) {
      roles.push_back(e.actor);
    }
    const auto inside = measured.find(e.client);
    if (e.step < 0 || inside == measured.end() || size_t(e.step) >= inside->second.size()) {
      continue;
    }
    if (client.by_step.size() <= size_t(e.step)) client.by_step.resize(size_t(e.step) + 1);
    client.by_step[size_t(e.step)].push_back(&e);
  }
  return clients;
}

WaitBreakdown breakdown(const MetricsInput& in, uint32_t role, const std::vector<double>& seconds,
                        double total) {
  WaitBreakdown w;
  w.role = in.trace.str(role);
  w.role_kind = role_kind_name(*in.kind_of(role));
  w.compute = seconds[kCompute] / total;
  w.network = seconds[kNetwork] / total;
  w.collective = seconds[kCollective] / total;
  w.client = seconds[kClient] / total;
  w.peers = seconds[kPeers] / total;
  w.ps = seconds[kPs] / total;
  w.token = seconds[kToken] / total;
  w.other = seconds[kOther] / total;
  return w;
}

}  // namespace

// What each computing role waited on, over its measured steps.
void add_waits(RunMetrics& r, const MetricsInput& in, StepTable& steps, MeasuredTable& measured) {
  const std::unordered_map<uint32_t, ClientEvents> clients = events_by_client(in, measured);
  // Clients in the order of their ids, as the sums of a role over several clients are added.
  std::vector<uint32_t> client_order;
  client_order.reserve(clients.size());
  for (const auto& entry : clients) client_order.push_back(entry.first);
  std::sort(client_order.begin(), client_order.end());
  std::map<uint32_t, std::vector<double>> seconds_by_role;
  const std::vector<const TraceEvent*> no_events;
  std::vector<Boundary> boundaries;
  for (uint32_t client : client_order) {
    const ClientEvents& events_of = clients.at(client);
    const std::vector<bool>& inside = measured[client];
    for (size_t k = 0; k < inside.size(); ++k) {
      if (!inside[k]) continue;
      const auto& events = k < events_of.by_step.size() ? events_of.by_step[k] : no_events;
      const Span& span = steps[client][k];
      boundaries_of(events, span, boundaries);
      const double last_end_s = last_event_end(in, events, span);
      for (uint32_t role : events_of.computing_roles) {
        std::vector<double>& seconds = seconds_by_role[role];
        seconds.resize(kCategories, 0.0);
        accumulate_waits(in, boundaries, last_end_s, span, role, seconds);
      }
    }
  }
  for (const auto& [role, seconds] : seconds_by_role) {
    double total = 0;
    for (double s : seconds) total += s;
    if (total > 0) r.waits.push_back(breakdown(in, role, seconds, total));
  }
}

// Every run of every step of every client (not only the measured ones; a step a restart ran
// again, twice), from its step events. A trace whose step numbers leave gaps (a damaged file; the
// metrics refuse it) has none: its tables would be sized by a number the file chose.
std::vector<WaitStretch> all_wait_stretches(const MetricsInput& in) {
  std::unordered_map<uint32_t, size_t> step_events;
  for (const TraceEvent& e : in.trace.events) {
    if (e.kind == EventKind::kStep) ++step_events[e.client];
  }
  MeasuredTable every;
  std::vector<const TraceEvent*> step_runs;
  for (const TraceEvent& e : in.trace.events) {
    if (e.kind != EventKind::kStep) continue;
    if (e.step < 0 || size_t(e.step) >= step_events[e.client]) return {};
    std::vector<bool>& inside = every[e.client];
    if (inside.size() <= size_t(e.step)) inside.resize(size_t(e.step) + 1, false);
    inside[size_t(e.step)] = true;
    step_runs.push_back(&e);
  }
  const std::unordered_map<uint32_t, ClientEvents> clients = events_by_client(in, every);
  std::map<std::pair<uint32_t, int64_t>, int> runs_of;  // (client, step) -> its runs
  for (const TraceEvent* run : step_runs) ++runs_of[{run->client, run->step}];
  std::map<uint32_t, std::vector<WaitStretch>> by_role;
  std::vector<double> seconds(kCategories, 0.0);
  std::vector<Boundary> boundaries;
  std::vector<const TraceEvent*> own_run;
  const std::vector<const TraceEvent*> no_events;
  for (const TraceEvent* run : step_runs) {
    const auto found = clients.find(run->client);
    if (found == clients.end()) continue;
    const ClientEvents& events_of = found->second;
    const size_t k = size_t(run->step);
    const Span span{run->start_s, run->end_s};
    const std::vector<const TraceEvent*>* events =
        k < events_of.by_step.size() ? &events_of.by_step[k] : &no_events;
    // A step a restart ran again: each run keeps the events that overlap its own span.
    if (runs_of[{run->client, run->step}] > 1) {
      own_run.clear();
      for (const TraceEvent* e : *events) {
        if (e->end_s >= span.start_s && e->start_s <= span.end_s) own_run.push_back(e);
      }
      events = &own_run;
    }
    boundaries_of(*events, span, boundaries);
    const double last_end_s = last_event_end(in, *events, span);
    for (uint32_t role : events_of.computing_roles) {
      accumulate_waits(in, boundaries, last_end_s, span, role, seconds, &by_role[role]);
    }
  }
  std::vector<WaitStretch> out;
  for (auto& [role, stretches] : by_role) {
    std::sort(stretches.begin(), stretches.end(),
              [](const WaitStretch& a, const WaitStretch& b) { return a.start_s < b.start_s; });
    for (const WaitStretch& w : stretches) {
      if (w.end_s <= w.start_s) continue;
      if (!out.empty() && out.back().role == w.role && out.back().cause == w.cause &&
          out.back().end_s >= w.start_s) {
        out.back().end_s = std::max(out.back().end_s, w.end_s);
      } else {
        out.push_back(w);
      }
    }
  }
  return out;
}

}  // namespace replisim::core::metrics_detail

namespace replisim::core {

const char* wait_cause_text(WaitCause cause) {
  switch (cause) {
    case WaitCause::kNetwork:
      return "the network";
    case WaitCause::kClient:
      return "the client";
    case WaitCause::kPeers:
      return "its peers";
    case WaitCause::kParameterServer:
      return "a parameter server";
    case WaitCause::kToken:
      return "a token";
    case WaitCause::kOther:
      return "nothing of the step (start-up, jitter, overheads)";
    case WaitCause::kCollective:
      return "the collective (all-reduce)";
  }
  return "nothing of the step (start-up, jitter, overheads)";
}

std::vector<WaitStretch> wait_stretches(const Trace& trace, const std::string& source) {
  const metrics_detail::MetricsInput in = metrics_detail::read_input(trace, source);
  return metrics_detail::all_wait_stretches(in);
}

std::vector<WaitBreakdown> average_waits_by_kind(const std::vector<WaitBreakdown>& waits) {
  std::vector<WaitBreakdown> out;
  for (const char* kind : {"worker", "tower", "client"}) {
    WaitBreakdown sum;
    sum.role = kind;
    sum.role_kind = kind;
    int n = 0;
    for (const WaitBreakdown& w : waits) {
      if (w.role_kind != kind) continue;
      sum.compute += w.compute;
      sum.network += w.network;
      sum.collective += w.collective;
      sum.client += w.client;
      sum.peers += w.peers;
      sum.ps += w.ps;
      sum.token += w.token;
      sum.other += w.other;
      ++n;
    }
    if (n == 0) continue;
    for (double* f : {&sum.compute, &sum.network, &sum.collective, &sum.client, &sum.peers, &sum.ps,
                      &sum.token, &sum.other}) {
      *f /= n;
    }
    out.push_back(sum);
  }
  return out;
}

}  // namespace replisim::core
