#include "core/metrics/critical_path.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/metrics/critical_path_collective.h"
#include "core/metrics/critical_path_streams.h"

namespace replisim::core {
namespace {

constexpr double kEpsilonS = 1e-12;
constexpr double kNever = -std::numeric_limits<double>::infinity();

// Ops that wait on other clients: their end is when the first op after them starts. An
// all-reduce (kAllReduce) waits on every rank's tensor and on the collective's transfers.
bool is_sync_wait(OpKind kind) {
  return kind == OpKind::kTokenDequeue || kind == OpKind::kTakeGradient ||
         kind == OpKind::kTokenEnqueue || kind == OpKind::kBarrier || kind == OpKind::kAllReduce;
}

// What a tensor is, from the kind of op that produced it (PathShare::directions).
const char* direction_of(const std::optional<OpKind>& producer) {
  if (!producer) return "other";
  switch (*producer) {
    case OpKind::kReadVariable:
      return "pull";
    case OpKind::kBackward:
    case OpKind::kAggregate:
      return "push";
    case OpKind::kInput:
    case OpKind::kSplit:
      return "batch";
    case OpKind::kForward:
    case OpKind::kLoss:
      return "activations";
    case OpKind::kTokenDequeue:
    case OpKind::kTokenEnqueue:
    case OpKind::kTakeGradient:
    case OpKind::kAccumulate:
    case OpKind::kBarrier:
      return "sync";
    case OpKind::kAllReduce:
      return "allreduce";
    default:
      return "other";
  }
}

bool is_copy(const TraceEvent& e) {
  return e.kind == EventKind::kCompute && e.op &&
         (*e.op == OpKind::kSend || *e.op == OpKind::kRecv);
}

// When each op of one step of one graph started and ended, from its events; instant ops end when
// their last input does, and a synchronous wait (no event of its own) when the first op after it
// starts (or the step ends).
struct StepTimes {
  std::vector<double> start, end;
  std::vector<int> event;                // the op's compute event, or a send's transfer
  std::vector<std::vector<int>> copies;  // per send: its (de)serialisation events
};

class PathWalker {
 public:
  explicit PathWalker(const Trace& trace)
      : trace_(trace), meta_(trace.meta), one_client_(!clients_are_workers(trace.meta)) {
    for (size_t g = 0; g < meta_.graphs.size(); ++g) {
      const uint32_t id = trace.find(meta_.graphs[g].role);
      if (id != kNoString) graph_of_role_[id] = int(g);
      const TraceRole* role = meta_.find_role(meta_.graphs[g].role);
      if (role != nullptr && role->kind == RoleKind::kSyncQueueRunner) chief_graph_ = int(g);
    }
    // Per graph, the accumulate each send's tensor feeds (a worker's gradient push).
    std::vector<std::unordered_map<int, int>> accumulate_of_send(meta_.graphs.size());
    for (size_t g = 0; g < meta_.graphs.size(); ++g) {
      const std::vector<TraceOp>& ops = meta_.graphs[g].ops;
      for (size_t a = 0; a < ops.size(); ++a) {
        if (ops[a].kind != OpKind::kAccumulate) continue;
        for (int recv : ops[a].inputs) {
          const TraceOp& r = ops[size_t(recv)];
          if (r.kind == OpKind::kRecv && r.inputs.size() == 1) {
            accumulate_of_send[g][r.inputs[0]] = int(a);
          }
        }
      }
    }
    for (size_t d = 0; d < meta_.platform.devices.size(); ++d) {
      device_machine_[meta_.platform.devices[d].name] =
          meta_.platform.machines[size_t(meta_.platform.devices[d].machine)].name;
    }
    for (const TraceGraph& graph : meta_.graphs) {
      const TraceRole* role = meta_.find_role(graph.role);
      graph_machine_.push_back(role == nullptr ? "" : machine_of_device(role->device));
    }
    for (size_t i = 0; i < trace.events.size(); ++i) {
      const TraceEvent& e = trace.events[i];
      streams_.add(e, i);
      const int g = graph_of(e.client);
      if (g >= 0 && e.kind == EventKind::kStep) step_spans_[key(g, e.step)] = {e.start_s, e.end_s};
      if (g < 0 || e.op_index < 0 || size_t(e.op_index) >= meta_.graphs[size_t(g)].ops.size()) {
        continue;
      }
      // An all-reduce's phases and chunks: followed from the op that waited on them
      // (follow_reductions, last_ready), not times of the op they name.
      if (collectives_.add(trace, e, i, g)) continue;
      // An update marks when its global step increment ran.
      if (e.kind == EventKind::kCompute || e.kind == EventKind::kTransfer ||
          e.kind == EventKind::kUpdate) {
        buckets_[key(g, e.step)].push_back(int(i));
      }
      const TraceOp& op = meta_.graphs[size_t(g)].ops[size_t(e.op_index)];
      // When each accumulate was in: its compute, or (when it costs nothing) its gradient's
      // arrival.
      if (e.kind == EventKind::kCompute && op.kind == OpKind::kAccumulate && !is_copy(e)) {
        accumulates_[op.variable].push_back({e.end_s, g, e.step, e.op_index});
      }
      if (e.kind == EventKind::kTransfer) {
        const auto found = accumulate_of_send[size_t(g)].find(e.op_index);
        if (found != accumulate_of_send[size_t(g)].end()) {
          const int a = found->second;
          accumulates_[meta_.graphs[size_t(g)].ops[size_t(a)].variable].push_back(
              {e.end_s, g, e.step, a});
        }
      }
      if (e.kind == EventKind::kUpdate && g == chief_graph_) {
        chief_updates_.push_back({e.end_s, g, e.step, e.op_index});
      }
    }
    for (size_t i = 0; i < trace.events.size(); ++i) {
      const TraceEvent& e = trace.events[i];
      if (e.kind != EventKind::kCompute || e.device == kNoString) continue;
      device_events_[e.device].push_back(int(i));
      longest_event_s_ = std::max(longest_event_s_, e.end_s - e.start_s);
    }
    for (auto& [device, list] : device_events_) {
      std::sort(list.begin(), list.end(), [&](int a, int b) {
        return trace.events[size_t(a)].start_s < trace.events[size_t(b)].start_s;
      });
    }
    for (auto& [variable, list] : accumulates_) std::sort(list.begin(), list.end());
    std::sort(chief_updates_.begin(), chief_updates_.end());
    streams_.sort();
  }

  // Whether any compute or transfer event names an op of its graph.
  bool has_ops() const { return !buckets_.empty(); }

  // Adds the path of `graph`'s step `step`, over [start_s, end_s], to `out`.
  void walk(int graph, int64_t step, double start_s, double end_s,
            std::map<std::string, PathShare>& out) {
    out_ = &out;
    own_role_ = meta_.graphs[size_t(graph)].role;
    int g = graph;
    int64_t k = step;
    const StepTimes* times = &times_of(g, k);
    int cur = last_op(*times, end_s);
    double t = end_s;
    // Each pass moves back by an op or a jump; bounded so that a malformed trace cannot loop.
    size_t budget = 4 * (meta_.graphs[size_t(g)].ops.size() + 64);
    bool collective_followed = false;  // the op the walk jumped to from an all-reduce
    while (t > start_s + kEpsilonS && budget-- > 0) {
      if (cur < 0) break;
      const TraceOp& op = meta_.graphs[size_t(g)].ops[size_t(cur)];
      const double op_end = std::max(std::min(times->end[size_t(cur)], t), start_s);
      add("other", t - op_end);
      t = op_end;
      // An all-reduce: through its reduction to its slowest chunk's link (and the reductions it
      // queued behind), then through the negotiation to the rank whose tensor was ready last.
      if (op.kind == OpKind::kAllReduce && !collective_followed) {
        const std::optional<path_detail::CollectiveFollow> f =
            collectives_.follow(trace_, g, k, times->end[size_t(cur)]);
        if (f) {
          const path_detail::CollectiveFollow first = follow_reductions(g, k, *f, start_s, t);
          const std::optional<Origin> ready = last_ready(g, k, first, t);
          if (ready) {
            add("all-reduce negotiation", t - std::max(ready->end_s, start_s));
            t = std::max(std::min(ready->end_s, t), start_s);
            g = ready->graph;
            cur = ready->op;
          }
          times = &times_of(g, k);
          collective_followed = true;
          continue;
        }
      }
      collective_followed = false;
      // A synchronous wait: follow it to what released it.
      if (is_sync_wait(op.kind) &&
          times->end[size_t(cur)] > times->start[size_t(cur)] + kEpsilonS) {
        const double wait_from_s = times->start[size_t(cur)];
        const std::optional<Origin> origin = release_of(g, k, cur, op, times->end[size_t(cur)]);
        times = &times_of(g, k);  // release_of may have evicted it from the cache
        if (origin && origin->end_s > wait_from_s + kEpsilonS) {
          add("other", t - std::max(origin->end_s, start_s));  // the release reaching this op
          t = std::max(std::min(origin->end_s, t), start_s);
          g = origin->graph;
          k = origin->step;
          times = &times_of(g, k);
          cur = origin->op;
          continue;
        }
      }
      // The input that finished last; the op's own time, and its wait after that input, go to
      // the op's resource.
      int pred = -1;
      for (int input : op.inputs) {
        if (pred < 0 || times->end[size_t(input)] > times->end[size_t(pred)]) pred = input;
      }
      const double from_s =
          std::clamp(pred < 0 ? times->start[size_t(cur)] : times->end[size_t(pred)], start_s, t);
      attribute(g, *times, cur, from_s, t);
      t = from_s;
      cur = pred;
    }
    add("other", t - start_s);
  }

 private:
  struct Origin {
    double end_s;
    int graph;
    int64_t step;
    int op;
    bool operator<(const Origin& o) const { return end_s < o.end_s; }
  };

  using Key = std::pair<int, int64_t>;  // (graph, step)
  // std::hash of an integer is the integer itself: step * 31 + graph made (g, k) and
  // (g + 31, k - 1) collide, and with a thousand graphs the lookups walked long chains (more than
  // half of the paths' time at 1,024 workers). The graph in the high half, then a 64-bit mix
  // (splitmix64's finaliser, Steele et al., "Fast splittable pseudorandom number generators",
  // OOPSLA 2014).
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t x = (uint64_t(uint32_t(k.first)) << 32) ^ uint64_t(k.second);
      x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
      x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
      return size_t(x ^ (x >> 31));
    }
  };
  static Key key(int graph, int64_t step) { return {graph, step}; }

  int graph_of(uint32_t role) const {
    const auto found = graph_of_role_.find(role);
    return found == graph_of_role_.end() ? -1 : found->second;
  }

  // The op of the step that ended last, at or before end_s.
  static int last_op(const StepTimes& times, double end_s) {
    int best = -1;
    for (size_t i = 0; i < times.end.size(); ++i) {
      if (times.end[i] <= end_s + kEpsilonS &&
          (best < 0 || times.end[i] >= times.end[size_t(best)])) {
        best = int(i);
      }
    }
    return best;
  }

  // What released a synchronous wait that ended at `end_s`: for a worker's token, the chief's
  // global step increment before it; for the chief's take, the accumulate that completed it; for
  // a barrier (op `op_index` of step `step`), the other worker that reached it last.
  std::optional<Origin> release_of(int graph, int64_t step, int op_index, const TraceOp& op,
                                   double end_s) {
    if (op.kind == OpKind::kBarrier) return last_at_barrier(graph, step, op_index, end_s);
    const std::vector<Origin>* list = nullptr;
    if (op.kind == OpKind::kTokenDequeue && graph != chief_graph_) {
      list = &chief_updates_;
    } else if (op.kind == OpKind::kTakeGradient) {
      const auto found = accumulates_.find(op.variable);
      if (found != accumulates_.end()) list = &found->second;
    }
    if (list == nullptr) return std::nullopt;
    auto it = std::upper_bound(list->begin(), list->end(), Origin{end_s + kEpsilonS, 0, 0, 0});
    if (it == list->begin()) return std::nullopt;
    return *std::prev(it);
  }

  // The worker whose arrival at the barrier named as `graph`'s op `op_index` (same step) came
  // last at or before `end_s`: when its inputs were in.
  std::optional<Origin> last_at_barrier(int graph, int64_t step, int op_index, double end_s) {
    const std::string& name = meta_.graphs[size_t(graph)].ops[size_t(op_index)].name;
    std::optional<Origin> last;
    for (size_t g = 0; g < meta_.graphs.size(); ++g) {
      if (int(g) == graph) continue;
      const std::vector<TraceOp>& ops = meta_.graphs[g].ops;
      // Workers have the same graph shape unless their tower counts differ: look there first.
      int at = -1;
      if (size_t(op_index) < ops.size() && ops[size_t(op_index)].name == name) {
        at = op_index;
      } else {
        for (size_t k = 0; k < ops.size() && at < 0; ++k) {
          if (ops[k].kind == OpKind::kBarrier && ops[k].name == name) at = int(k);
        }
      }
      if (at < 0) continue;
      const double in_s = times_of(int(g), step).start[size_t(at)];
      if (in_s <= end_s + kEpsilonS && (!last || in_s > last->end_s)) {
        last = Origin{in_s, int(g), step, at};
      }
    }
    return last;
  }

  // The times of step `k` of graph `g`, bounded by its step event (none for the chief's sync op:
  // unbounded), whichever walk asks first.
  const StepTimes& times_of(int g, int64_t k) {
    const Key id = key(g, k);
    if (const auto found = cache_.find(id); found != cache_.end()) return found->second;
    // Big enough for every graph's step at once (a barrier's wait looks at all of them).
    if (cache_.size() > std::max<size_t>(64, 2 * meta_.graphs.size() + 8)) cache_.clear();
    double step_start_s = kNever, step_end_s = std::numeric_limits<double>::infinity();
    if (const auto found = step_spans_.find(id); found != step_spans_.end()) {
      step_start_s = found->second.first;
      step_end_s = found->second.second;
    }
    const std::vector<TraceOp>& ops = meta_.graphs[size_t(g)].ops;
    const size_t n = ops.size();
    StepTimes times;
    times.start.assign(n, kNever);
    times.end.assign(n, kNever);
    times.event.assign(n, -1);
    times.copies.resize(n);
    if (const auto found = buckets_.find(id); found != buckets_.end()) {
      for (int i : found->second) {
        const TraceEvent& e = trace_.events[size_t(i)];
        const size_t op = size_t(e.op_index);
        if (is_copy(e)) {
          // A deserialisation is its recv's; kept with the send, which holds the transfer.
          const std::vector<int>& inputs = ops[op].inputs;
          const bool recv = ops[op].kind == OpKind::kRecv && inputs.size() == 1;
          times.copies[recv ? size_t(inputs[0]) : op].push_back(i);
        } else if (times.event[op] < 0 || e.end_s > trace_.events[size_t(times.event[op])].end_s) {
          times.event[op] = i;
        }
      }
    }
    // Forward: events, transfers (a recv's input is its send), instant ops; a wait starts when
    // its inputs are in.
    auto forward = [&](bool waits_known) {
      for (size_t i = 0; i < n; ++i) {
        double inputs_in = ops[i].inputs.empty() ? step_start_s : kNever;
        for (int input : ops[i].inputs) inputs_in = std::max(inputs_in, times.end[size_t(input)]);
        if (times.event[i] >= 0) {
          times.start[i] = trace_.events[size_t(times.event[i])].start_s;
          times.end[i] = trace_.events[size_t(times.event[i])].end_s;
        } else if (ops[i].kind == OpKind::kRecv && ops[i].inputs.size() == 1 &&
                   times.event[size_t(ops[i].inputs[0])] >= 0) {
          times.start[i] = times.start[size_t(ops[i].inputs[0])];
          times.end[i] = times.end[size_t(ops[i].inputs[0])];
        } else if (is_sync_wait(ops[i].kind) && waits_known) {
          times.start[i] = inputs_in;
          times.end[i] = std::max(times.end[i], inputs_in);
        } else {
          times.start[i] = times.end[i] = inputs_in;
        }
      }
    };
    forward(false);
    // Backward: a wait ends when the first op after it that has an event starts.
    std::vector<double> first_after(n, step_end_s);
    for (size_t i = n; i-- > 0;) {
      for (int input : ops[i].inputs) {
        const double next = times.event[i] >= 0 ? times.start[i] : first_after[i];
        first_after[size_t(input)] = std::min(first_after[size_t(input)], next);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (is_sync_wait(ops[i].kind) && times.event[i] < 0 && std::isfinite(first_after[i])) {
        times.end[i] = std::max(times.start[i], first_after[i]);
      }
    }
    forward(true);
    return cache_.emplace(id, std::move(times)).first->second;
  }

  void add(const std::string& name, double seconds, bool own = false) {
    // Below a picosecond: rounding left over from a subtraction, not time on the path.
    if (seconds <= 1e-12) return;
    PathShare& share = (*out_)[name];
    share.name = name;
    share.seconds += seconds;
    share.own_compute |= own;
  }

  static void add_to(std::vector<std::pair<std::string, double>>& list, const std::string& name,
                     double seconds) {
    for (auto& [n, s] : list) {
      if (n == name) {
        s += seconds;
        return;
      }
    }
    list.emplace_back(name, seconds);
  }

  const std::string& machine_of(uint32_t device) const {
    static const std::string kUnknown = "?";
    if (device == kNoString) return kUnknown;
    return machine_of_device(trace_.str(device));
  }
  const std::string& machine_of_device(const std::string& device) const {
    static const std::string kUnknown = "?";
    const auto found = device_machine_.find(device);
    return found == device_machine_.end() ? kUnknown : found->second;
  }

  // Op `op`'s part of the path, [from_s, to_s] (its own time and its wait after its inputs).
  void attribute(int g, const StepTimes& times, int op, double from_s, double to_s) {
    if (to_s <= from_s) return;
    const TraceOp& o = meta_.graphs[size_t(g)].ops[size_t(op)];
    int transfer = -1;
    std::vector<int> copies;
    if (o.kind == OpKind::kSend || o.kind == OpKind::kRecv) {
      const int send = o.kind == OpKind::kSend ? op : (o.inputs.empty() ? -1 : o.inputs[0]);
      if (send >= 0) {
        transfer = times.event[size_t(send)];
        copies = times.copies[size_t(send)];
      }
    }
    if (transfer < 0 || trace_.events[size_t(transfer)].kind != EventKind::kTransfer) {
      if (is_sync_wait(o.kind)) {
        add(o.kind == OpKind::kBarrier     ? "barrier wait"
            : o.kind == OpKind::kAllReduce ? "all-reduce wait"
                                           : "token queue",
            to_s - from_s);
      } else if (times.event[size_t(op)] >= 0) {
        // Its own run, and before it its wait for the device, busy with other work.
        const TraceEvent& e = trace_.events[size_t(times.event[size_t(op)])];
        const double run_from_s = std::clamp(e.start_s, from_s, to_s);
        const std::string share = device_share(o, e);
        add(share, to_s - run_from_s, share == trace_.str(e.device) && own_op(o));
        attribute_device_wait(e.device, from_s, run_from_s);
      } else {
        add("other", to_s - from_s);
      }
      return;
    }
    const TraceEvent& e = trace_.events[size_t(transfer)];
    double network_s = to_s - from_s;
    for (int c : copies) {
      const TraceEvent& copy = trace_.events[size_t(c)];
      const double overlap = std::min(copy.end_s, to_s) - std::max(copy.start_s, from_s);
      if (overlap <= 0) continue;
      add("copies on " + trace_.str(copy.device), overlap);
      network_s -= overlap;
    }
    if (network_s <= 0) return;
    const std::string& a = machine_of(e.device);
    const std::string& b = machine_of(e.peer);
    const std::string name =
        a == b ? a + " local transfers" : std::min(a, b) + "<->" + std::max(a, b) + " network";
    add(name, network_s);
    PathShare& share = (*out_)[name];
    // Relative to the graph walked (a straggler's graph, followed from another client's wait,
    // names the straggler's link to the PS as the PS's network too).
    const std::string& own = graph_machine_[size_t(g)];
    if (a != b && (a == own || b == own)) share.peer_machine = a == own ? b : a;
    add_to(share.directions, direction_of(e.producer), network_s);
    // Its wait for the stream, busy with the sender's earlier tensors, is the queue's: under
    // the bound that held those (its own rate, a small tensor's overheads, says nothing of it).
    const path_detail::StreamQueue queue = streams_.queue_of(trace_, size_t(transfer), from_s);
    const double queued_s =
        std::clamp(std::min(queue.seconds, std::min(e.start_s, to_s) - from_s), 0.0, network_s);
    if (queued_s > 0) {
      add_to(share.bounds, path_detail::queued_bound_name(trace_, queue.held_by), queued_s);
    }
    if (network_s - queued_s > 0) {
      add_to(share.bounds, e.bound == kNoString ? "not known" : trace_.str(e.bound),
             network_s - queued_s);
    }
  }

  // [from_s, to_s] on `device`, which an op waited for: to what the device ran meanwhile (its
  // events' shares, scaled down when several cores ran at once), the rest to the device itself.
  void attribute_device_wait(uint32_t device, double from_s, double to_s) {
    if (to_s <= from_s) return;
    const auto found = device_events_.find(device);
    std::vector<std::pair<std::string, double>> ran;
    double total = 0;
    if (found != device_events_.end()) {
      const std::vector<int>& list = found->second;  // by start
      // Events are shorter than the longest one on the device: start the scan that far back.
      auto it =
          std::lower_bound(list.begin(), list.end(), from_s - longest_event_s_,
                           [&](int i, double s) { return trace_.events[size_t(i)].start_s < s; });
      for (; it != list.end() && trace_.events[size_t(*it)].start_s < to_s; ++it) {
        const TraceEvent& e = trace_.events[size_t(*it)];
        const double overlap = std::min(e.end_s, to_s) - std::max(e.start_s, from_s);
        if (overlap <= 0) continue;
        add_to(ran, share_of_event(e), overlap);
        total += overlap;
      }
    }
    const double scale = total > to_s - from_s ? (to_s - from_s) / total : 1.0;
    for (const auto& [name, seconds] : ran) add(name, seconds * scale);
    add(trace_.str(device), (to_s - from_s) - total * scale);
  }

  // Whether `o` is an op of the client whose step is walked (its role, or one of its towers):
  // compute on its own devices.
  bool own_op(const TraceOp& o) const {
    if (size_t(o.role) >= meta_.roles.size()) return false;
    const TraceRole& role = meta_.roles[size_t(o.role)];
    // Between-graph towers are ops of their worker's role; in-graph towers are the client's.
    return role.name == own_role_ || (role.kind == RoleKind::kTower && one_client_);
  }

  // The share a compute event counts to: its op's (device_share), or a copy's.
  std::string share_of_event(const TraceEvent& e) const {
    if (is_copy(e)) return "copies on " + trace_.str(e.device);
    const int g = graph_of(e.client);
    if (g < 0 || e.op_index < 0 || size_t(e.op_index) >= meta_.graphs[size_t(g)].ops.size()) {
      return trace_.str(e.device);
    }
    return device_share(meta_.graphs[size_t(g)].ops[size_t(e.op_index)], e);
  }

  // A compute op's share: its device; in-graph, the client's own ops say which part they are.
  std::string device_share(const TraceOp& o, const TraceEvent& e) const {
    const std::string& device = trace_.str(e.device);
    if (one_client_ && size_t(o.role) < meta_.roles.size() &&
        meta_.roles[size_t(o.role)].kind == RoleKind::kClient &&
        (o.kind == OpKind::kInput || o.kind == OpKind::kSplit || o.kind == OpKind::kAggregate ||
         o.kind == OpKind::kLoss || o.kind == OpKind::kApply)) {
      return std::string("client ") + op_kind_name(o.kind) + " on " + device;
    }
    if (o.kind == OpKind::kInput) return "input pipeline on " + device;
    return device;
  }

  // The walk at `t` (the end of an op that waited on all-reduce `f`), back to the step's start
  // `start_s` at the earliest: after the rank's reduction, "other"; the reduction, the link of the
  // collective's slowest chunk ("<a><-><b> network", direction "allreduce"; bound: the chunk's,
  // else its direction "a->b"), or "all-reduce on <device>" when no chunk moved (one rank); then,
  // while the reduction began as the rank's previous one ended (queued behind it), that one too.
  // `t` ends at the first reduction's start; returns that collective.
  path_detail::CollectiveFollow follow_reductions(int g, int64_t k, path_detail::CollectiveFollow f,
                                                  double start_s, double& t) {
    for (size_t guard = 0; guard < 4096; ++guard) {
      const double data_end_s = std::clamp(f.data_end_s, start_s, t);
      add("other", t - data_end_s);
      t = data_end_s;
      const double data_start_s = std::clamp(f.data_start_s, start_s, t);
      add_reduction(g, f, t - data_start_s);
      t = data_start_s;
      if (!f.queued || t <= start_s + kEpsilonS) break;
      const std::optional<path_detail::CollectiveFollow> before =
          collectives_.follow(trace_, g, k, f.data_start_s);
      if (!before || before->data_end_s >= f.data_end_s) break;
      f = *before;
    }
    return f;
  }

  void add_reduction(int g, const path_detail::CollectiveFollow& f, double seconds) {
    if (f.slowest_chunk < 0) {
      const TraceRole* role = meta_.find_role(meta_.graphs[size_t(g)].role);
      add("all-reduce on " + (role == nullptr ? std::string("?") : role->device), seconds);
      return;
    }
    const TraceEvent& c = trace_.events[size_t(f.slowest_chunk)];
    const std::string& a = machine_of(c.device);
    const std::string& b = machine_of(c.peer);
    const std::string name =
        a == b ? a + " local transfers" : std::min(a, b) + "<->" + std::max(a, b) + " network";
    add(name, seconds);
    if (seconds <= 1e-12) return;
    // No peer_machine: a ring's link is every rank's, so combine_paths keeps its name (a PS
    // network share is renamed after the PS machine instead).
    PathShare& share = (*out_)[name];
    add_to(share.directions, "allreduce", seconds);
    add_to(share.bounds, c.bound != kNoString ? trace_.str(c.bound) : a + "->" + b, seconds);
  }

  // The tensor of collective `f` (graph `g`'s kAllReduce ops from f.first_op to before
  // f.next_first_op) whose last rank reported it ready last, at or before `t`: that rank's graph,
  // the op, and when its inputs were in. Every rank's graph has the same ops (one per replica).
  std::optional<Origin> last_ready(int g, int64_t k, const path_detail::CollectiveFollow& f,
                                   double t) {
    const std::vector<TraceOp>& ops = meta_.graphs[size_t(g)].ops;
    if (f.first_op < 0 || size_t(f.first_op) >= ops.size()) return std::nullopt;
    const size_t end = f.next_first_op > f.first_op ? size_t(f.next_first_op) : ops.size();
    std::optional<Origin> last;
    for (size_t r = 0; r < meta_.graphs.size(); ++r) {
      const std::vector<TraceOp>& rank_ops = meta_.graphs[r].ops;
      if (rank_ops.size() != ops.size()) continue;
      const StepTimes& times = times_of(int(r), k);
      for (size_t o = size_t(f.first_op); o < end; ++o) {
        if (rank_ops[o].kind != OpKind::kAllReduce) continue;
        const double ready_s = times.start[o];
        if (ready_s <= t + kEpsilonS && (!last || ready_s > last->end_s)) {
          last = Origin{ready_s, int(r), k, int(o)};
        }
      }
    }
    return last;
  }

  const Trace& trace_;
  const TraceMeta& meta_;
  const bool one_client_;  // in-graph: one client (RoleKind::kClient) owns every tower
  std::unordered_map<uint32_t, int> graph_of_role_;
  std::unordered_map<std::string, std::string> device_machine_;
  std::unordered_map<Key, std::vector<int>, KeyHash> buckets_;    // event indices
  std::unordered_map<uint32_t, std::vector<int>> device_events_;  // compute events, by start
  double longest_event_s_ = 0;
  std::map<int, std::vector<Origin>> accumulates_;  // per variable, by end
  std::vector<Origin> chief_updates_;               // the chief's updates, by time
  std::unordered_map<Key, StepTimes, KeyHash> cache_;
  std::unordered_map<Key, std::pair<double, double>, KeyHash> step_spans_;  // step events
  int chief_graph_ = -1;
  path_detail::CollectiveIndex collectives_;
  path_detail::StreamIndex streams_;  // each stream's transfers (a tensor's queue)
  std::map<std::string, PathShare>* out_ = nullptr;
  std::string own_role_;                    // the client whose step is walked
  std::vector<std::string> graph_machine_;  // per graph: its role's machine
};

bool is_network(const PathShare& share) {
  return !share.directions.empty();
}

void sort_shares(CriticalPath& path) {
  std::sort(path.shares.begin(), path.shares.end(),
            [](const PathShare& a, const PathShare& b) { return a.seconds > b.seconds; });
  for (PathShare& share : path.shares) {
    for (auto* list : {&share.directions, &share.bounds}) {
      std::sort(list->begin(), list->end(),
                [](const auto& a, const auto& b) { return a.second > b.second; });
    }
  }
}

CriticalPath path_of(const std::string& client, int steps, double seconds,
                     std::map<std::string, PathShare>& shares) {
  CriticalPath path;
  path.client = client;
  path.steps = steps;
  path.seconds = seconds;
  for (auto& [name, share] : shares) path.shares.push_back(std::move(share));
  sort_shares(path);
  return path;
}

std::string percent_of(double part, double whole) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", whole > 0 ? 100 * part / whole : 0.0);
  return text;
}

}  // namespace

std::vector<CriticalPath> critical_paths(const Trace& trace, double window_start_s,
                                         double window_end_s) {
  std::vector<CriticalPath> out;
  if (trace.meta.graphs.empty()) return out;
  PathWalker walker(trace);
  // Events that name no op of their graph (a version 3 trace, a damaged one): nothing to walk.
  if (!walker.has_ops()) return out;
  // The measured steps per client, in trace order (one pass: a pass per client is quadratic at
  // a thousand workers).
  std::unordered_map<uint32_t, std::vector<const TraceEvent*>> steps_of;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kStep && e.start_s >= window_start_s && e.end_s <= window_end_s) {
      steps_of[e.client].push_back(&e);
    }
  }
  for (const TraceClient& client : trace.meta.clients) {
    const uint32_t role = trace.find(client.role);
    if (role == kNoString || trace.meta.find_graph(client.role) == nullptr) continue;
    const int graph = int(trace.meta.find_graph(client.role) - trace.meta.graphs.data());
    std::map<std::string, PathShare> shares;
    int steps = 0;
    double seconds = 0;
    const auto found = steps_of.find(role);
    if (found == steps_of.end()) continue;
    for (const TraceEvent* step : found->second) {
      const TraceEvent& e = *step;
      walker.walk(graph, e.step, e.start_s, e.end_s, shares);
      ++steps;
      seconds += e.end_s - e.start_s;
    }
    if (steps > 0) out.push_back(path_of(client.role, steps, seconds, shares));
  }
  return out;
}

CriticalPath combine_paths(const std::vector<CriticalPath>& paths) {
  std::map<std::string, PathShare> shares;
  int steps = 0;
  double seconds = 0;
  for (const CriticalPath& path : paths) {
    steps += path.steps;
    seconds += path.seconds;
    for (const PathShare& share : path.shares) {
      // Each client's own devices are one share: "compute".
      std::string name = share.name;
      if (paths.size() > 1 && share.own_compute) name = "compute";
      if (paths.size() > 1 && !share.peer_machine.empty()) name = share.peer_machine + " network";
      PathShare& into = shares[name];
      into.name = name;
      into.own_compute = share.own_compute;
      into.peer_machine = share.peer_machine;
      into.seconds += share.seconds;
      for (const auto* list : {&share.directions, &share.bounds}) {
        auto& target = list == &share.directions ? into.directions : into.bounds;
        for (const auto& entry : *list) {
          // Not a structured binding: a lambda may capture one only from C++20 (clang refuses).
          const std::string& part = entry.first;
          auto it = std::find_if(target.begin(), target.end(),
                                 [&](const auto& item) { return item.first == part; });
          if (it == target.end()) {
            target.emplace_back(part, entry.second);
          } else {
            it->second += entry.second;
          }
        }
      }
    }
  }
  if (paths.size() > 1) {
    // Other clients' devices (a sync step waits for the slowest of them): one share per machine
    // when several of its devices appear ("aws2 GPUs"), so that jitter across many towers does
    // not scatter the path over them.
    std::map<std::string, std::vector<std::string>> by_machine;
    for (const auto& [name, share] : shares) {
      const size_t slash = name.find('/');
      if (share.own_compute || !share.directions.empty() || slash == std::string::npos ||
          name.find(' ') != std::string::npos) {
        continue;
      }
      by_machine[name.substr(0, slash)].push_back(name);
    }
    for (const auto& [machine, names] : by_machine) {
      if (names.size() < 2) continue;
      bool gpus = true;
      for (const std::string& n : names) gpus &= n.find("/gpu") != std::string::npos;
      const std::string merged = machine + (gpus ? " GPUs" : " devices");
      PathShare& into = shares[merged];
      into.name = merged;
      for (const std::string& n : names) {
        into.seconds += shares[n].seconds;
        shares.erase(n);
      }
    }
  }
  return path_of(paths.size() == 1 ? paths.front().client : "", steps, seconds, shares);
}

std::string describe_path(const CriticalPath& path, int max_shares, bool detailed) {
  std::string text;
  int shown = 0;
  for (const PathShare& share : path.shares) {
    if (shown == max_shares || share.seconds < 0.01 * path.seconds) break;
    if (!text.empty()) text += ", ";
    text += share.name + " " + percent_of(share.seconds, path.seconds);
    if (detailed && is_network(share)) {
      std::string detail;
      if (share.directions.size() > 1 || share.directions.front().first != "other") {
        for (const auto& [direction, s] : share.directions) {
          if (s < 0.01 * path.seconds) continue;
          if (!detail.empty()) detail += ", ";
          detail += direction + " " + percent_of(s, path.seconds);
        }
      }
      // The bound that held most of the share, or the two that held most when none held 90%.
      std::string bounds;
      for (size_t b = 0; b < share.bounds.size() && b < 2; ++b) {
        const auto& [bound, s] = share.bounds[b];
        if (b == 1 && share.bounds[0].second >= 0.9 * share.seconds) break;
        if (!bounds.empty()) bounds += ", ";
        bounds += bound == "not known" ? "not known" : bound;
        if (share.bounds.size() > 1 && share.bounds[0].second < 0.9 * share.seconds) {
          bounds += " " + percent_of(s, path.seconds);
        }
      }
      if (!detail.empty()) detail += "; ";
      detail += share.bounds.front().first == "not known" && share.bounds.size() == 1
                    ? "what bounded the rate: not known"
                    : bounds + (bounds.find(", ") == std::string::npos ? " binds" : " bind");
      text += " (" + detail + ")";
    }
    ++shown;
  }
  return text;
}

double network_fraction(const CriticalPath& path) {
  double seconds = 0;
  for (const PathShare& share : path.shares) {
    if (is_network(share)) seconds += share.seconds;
  }
  return path.seconds > 0 ? seconds / path.seconds : 0;
}

std::string path_share_kind(const PathShare& share) {
  if (is_network(share)) return "network";
  const auto starts = [&share](const char* prefix) { return share.name.rfind(prefix, 0) == 0; };
  if (starts("input pipeline on ") || starts("client input on ")) return "input";
  if (starts("copies on ")) return "copies";
  if (share.name == "token queue" || share.name == "barrier wait" ||
      share.name == "all-reduce negotiation" || share.name == "all-reduce wait") {
    return "sync";
  }
  if (share.name == "other") return "other";
  return "compute";
}

nlohmann::json critical_path_json(const CriticalPath& path) {
  nlohmann::json shares = nlohmann::json::array();
  for (const PathShare& s : path.shares) {
    nlohmann::json share = {{"name", s.name},
                            {"seconds", s.seconds},
                            {"fraction", path.seconds > 0 ? s.seconds / path.seconds : 0.0}};
    if (!s.directions.empty()) {
      for (const auto& [direction, seconds] : s.directions)
        share["directions"][direction] = seconds;
      for (const auto& [bound, seconds] : s.bounds) share["bounds"][bound] = seconds;
    }
    shares.push_back(std::move(share));
  }
  return {{"steps", path.steps}, {"seconds", path.seconds}, {"shares", std::move(shares)}};
}

namespace {

// An object of seconds ({"pull": 0.4}) as pairs, largest first.
std::vector<std::pair<std::string, double>> seconds_by_name(const JsonCursor& object) {
  object.expect_object();
  std::vector<std::pair<std::string, double>> out;
  for (const auto& item : object.value().items()) {
    out.emplace_back(item.key(), object.at(item.key()).as_number_in(0, 1e300));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace

CriticalPath critical_path_from_json(const JsonCursor& c) {
  CriticalPath path;
  path.steps = int(c.at("steps").as_int(0, std::numeric_limits<int>::max()));
  path.seconds = c.at("seconds").as_number_in(0, 1e12);  // simulated time is capped at 1e12 s
  const JsonCursor shares = c.at("shares");
  shares.expect_array();
  if (shares.size() > 0 && (path.steps == 0 || !(path.seconds > 0))) {
    c.fail("shares of a path of no step or no time");
  }
  // The shares sum to the path's seconds (in another order: a rounding error's slack).
  const double most_s = path.seconds * (1 + 1e-9);
  double sum_s = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    const JsonCursor s = shares.at(i);
    PathShare share;
    share.name = s.at("name").as_string();
    const bool printable = std::none_of(share.name.begin(), share.name.end(), [](char ch) {
      return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f;
    });
    if (share.name.empty() || share.name.size() > 200 || !printable) {
      s.at("name").fail("a resource's name: 1 to 200 printable characters");
    }
    share.seconds = s.at("seconds").as_number_in(0, most_s);
    sum_s += share.seconds;
    if (s.has("directions")) {
      share.directions = seconds_by_name(s.at("directions"));
      share.bounds = seconds_by_name(s.at("bounds"));
      if (share.directions.empty() || share.bounds.empty()) {
        s.fail("a network share needs at least one direction and one bound");
      }
    }
    path.shares.push_back(std::move(share));
  }
  if (sum_s > most_s) c.at("shares").fail("the shares add up to more than the path's seconds");
  return path;
}

}  // namespace replisim::core
