// The typed calls through which every backend records a run: one per event kind, each filling
// the event from the plan (names of the op, its role and device, its op kind, the kind of op whose
// tensor a transfer carries) the same way whichever backend calls it, and sending each string to
// the sink before the first event that uses it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/plan/plan.h"
#include "core/trace/trace_sink.h"

namespace replisim::core {

class TraceRecorder {
 public:
  // `plan` and `sink` must outlive the recorder (not owned). Sends "global_step", then every op's
  // name, role and device, graph by graph, to the sink. Not thread-safe.
  TraceRecorder(const Plan& plan, TraceSink& sink);

  // `graph` numbers a step graph as step_graphs(plan) does; `op` indexes its ops. Times are the
  // backend's clock (s); `step` is the graph's local step (the batch index for an input op).

  // An op occupied its device over [start_s, end_s] and executed `flop`.
  void compute(int graph, int op, int64_t step, double start_s, double end_s, double flop);
  // The tensor of send op `send_op` went from its device to its recv's over [start_s, end_s];
  // `bound` says what bounded its rate (TraceEvent::bound; "" = not known).
  void transfer(int graph, int send_op, int64_t step, double start_s, double end_s,
                int64_t message_id, const std::string& bound);
  // Serialisation (on the sending process) or, `receiving`, deserialisation (on the receiving
  // one) of send op `send_op`'s tensor occupied a core of CPU device `cpu` over [start_s, end_s]
  // (Transport::copy_bandwidth_bytes_per_s): a compute event of the send (or its recv) on that
  // CPU, labelled "serialise/<tensor>" or "deserialise/<tensor>", of `flop`, with the producer
  // of the tensor as its transfer has it.
  void copy(int graph, int send_op, int64_t step, int cpu, bool receiving, double start_s,
            double end_s, double flop);
  // A rank's phase of all-reduce number `collective` (core::Collectives): `name` is Horovod's
  // timeline name ("NEGOTIATE_ALLREDUCE", "NCCL_ALLREDUCE", ...), over [start_s, end_s] on the
  // device of kAllReduce op `op` (the first tensor of the fused buffer) of the rank's graph;
  // `bytes`: the fused buffer.
  void collective(int graph, int op, int64_t step, const std::string& name, double start_s,
                  double end_s, double bytes, int64_t collective);
  // A chunk of an all-reduce from rank graph `graph` (its kAllReduce op `op`) to the device and
  // role of rank graph `to_graph`, of `bytes`, over [start_s, end_s] (a kTransfer event of op
  // kind kAllReduce; `message_id` as transfer's, `bound` too).
  void collective_transfer(int graph, int op, int to_graph, int64_t step, double bytes,
                           double start_s, double end_s, int64_t message_id,
                           const std::string& bound);
  // A step of the graph, started having read `global_step_read`.
  void step(int graph, int64_t step, double start_s, double end_s, int64_t global_step_read);
  // `op` (the graph's global step increment) made global_step `global_step_after` at `at_s`:
  // the update event, with the graph's samples per step, and the global_step counter.
  // `samples` (>= 0) replaces the graph's samples per step: an elastic all-reduce job after a
  // death applies the survivors' batches only.
  void update(int graph, int op, int64_t step, double at_s, int64_t global_step_read,
              int64_t global_step_after, int samples = -1);
  // Synchronous training: accumulate op `op` dropped a gradient computed at `local_step` because
  // its accumulator was at `accumulator_global_step`.
  void dropped(int graph, int op, int64_t step, double at_s, int64_t local_step,
               int64_t accumulator_global_step);
  // A slowdown or link fault window (PlanFault kind "slowdown" or "link"), on its device or link.
  void fault_window(const PlanFault& fault);
  // A role fault killed the graph's client at `at_s` while it ran `step` (-1: no step).
  // `unplanned`: no fault of the plan killed it (a real run's task killed from outside).
  void client_death(int graph, const std::string& description, int64_t step, double at_s,
                    bool unplanned = false);
  // A job fault killed role `role` at `at_s`.
  void role_death(int role, const std::string& description, double at_s, bool unplanned = false);
  // The chief (the graph's role) wrote a checkpoint, or its summaries, of `bytes`.
  void checkpoint(int graph, int64_t step, double start_s, double end_s, double bytes,
                  int64_t global_step, bool summaries);
  // A job failure at start_s and its restart, training again at end_s. `actor`: the role that
  // died ("job" when none is named).
  void recovery(const std::string& actor, const std::string& description, double start_s,
                double end_s, int64_t restored_global_step, int64_t global_step_at_failure);
  // The global_step counter alone (a restart sets it back).
  void global_step(double at_s, int64_t value);
  // A sample of the counter called `name` ("loss", "accuracy": the training objective's
  // evaluations, core/values/value_engine.h): `value` from `at_s` on.
  void counter(const std::string& name, double at_s, double value);

  // The samples one step of the graph trains on (its update events carry them).
  int samples_per_step(int graph) const { return names_[size_t(graph)].samples_per_step; }

 private:
  // Per graph: the strings and kinds of its ops, and of its role.
  struct GraphNames {
    std::vector<uint32_t> label, actor, device;
    std::vector<std::optional<OpKind>> producer;  // sends: the kind of their input
    uint32_t role = kNoString;
    uint32_t role_device = kNoString;
    int samples_per_step = 0;
  };
  uint32_t intern(const std::string& text);
  TraceEvent op_event(EventKind kind, int graph, int op, int64_t step) const;

  const Plan& plan_;
  TraceSink& sink_;
  std::vector<const ClientGraph*> graphs_;
  std::vector<GraphNames> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  uint32_t global_step_name_ = kNoString;
  uint32_t step_label_ = kNoString;
};

}  // namespace replisim::core
