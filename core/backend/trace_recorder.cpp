#include "core/backend/trace_recorder.h"

namespace replisim::core {

TraceRecorder::TraceRecorder(const Plan& plan, TraceSink& sink)
    : plan_(plan), sink_(sink), graphs_(step_graphs(plan)) {
  global_step_name_ = intern("global_step");
  const std::vector<PlatformDevice>& devices = plan.platform.devices;
  for (const ClientGraph* graph : graphs_) {
    GraphNames names;
    for (const Op& op : graph->ops) {
      names.label.push_back(intern(op.name));
      names.actor.push_back(intern(plan.roles[size_t(op.role)].name));
      names.device.push_back(intern(devices[size_t(op.device)].name));
      names.producer.push_back(std::nullopt);
      if (op.kind == OpKind::kSend && !op.inputs.empty()) {
        names.producer.back() = graph->ops[size_t(op.inputs.front())].kind;
      }
    }
    const Role& role = plan.roles[size_t(graph->role)];
    names.role = intern(role.name);
    names.role_device = intern(devices[size_t(role.device)].name);
    names.samples_per_step = graph->samples_per_step;
    names_.push_back(std::move(names));
  }
  step_label_ = intern("step");
}

uint32_t TraceRecorder::intern(const std::string& text) {
  // Looked up first: emplace() builds its node (a copy of the string) before it looks.
  if (const auto found = ids_.find(text); found != ids_.end()) return found->second;
  const auto [it, added] = ids_.emplace(text, uint32_t(ids_.size()));
  if (added) sink_.string(it->second, text);
  return it->second;
}

TraceEvent TraceRecorder::op_event(EventKind kind, int graph, int op, int64_t step) const {
  const GraphNames& names = names_[size_t(graph)];
  TraceEvent e;
  e.kind = kind;
  e.op = graphs_[size_t(graph)]->ops[size_t(op)].kind;
  e.actor = names.actor[size_t(op)];
  e.device = names.device[size_t(op)];
  e.label = names.label[size_t(op)];
  e.client = names.role;
  e.step = step;
  e.op_index = op;
  return e;
}

void TraceRecorder::compute(int graph, int op, int64_t step, double start_s, double end_s,
                            double flop) {
  TraceEvent e = op_event(EventKind::kCompute, graph, op, step);
  e.start_s = start_s;
  e.end_s = end_s;
  e.flop = flop;
  sink_.event(e);
}

void TraceRecorder::copy(int graph, int send_op, int64_t step, int cpu, bool receiving,
                         double start_s, double end_s, double flop) {
  const Op& send = graphs_[size_t(graph)]->ops[size_t(send_op)];
  TraceEvent e = op_event(EventKind::kCompute, graph, receiving ? send.peer : send_op, step);
  // The tensor it copies, as its transfer says (a synchronous token's copies end a token wait
  // as its transfer does: metrics_waits.cpp).
  e.producer = names_[size_t(graph)].producer[size_t(send_op)];
  e.device = intern(plan_.platform.devices[size_t(cpu)].name);
  // "send/<tensor>" -> "serialise/<tensor>"
  const std::string tensor = send.name.substr(send.name.find('/') + 1);
  e.label = intern((receiving ? "deserialise/" : "serialise/") + tensor);
  e.start_s = start_s;
  e.end_s = end_s;
  e.flop = flop;
  sink_.event(e);
}

void TraceRecorder::transfer(int graph, int send_op, int64_t step, double start_s, double end_s,
                             int64_t message_id, const std::string& bound) {
  const GraphNames& names = names_[size_t(graph)];
  const Op& send = graphs_[size_t(graph)]->ops[size_t(send_op)];
  TraceEvent e = op_event(EventKind::kTransfer, graph, send_op, step);
  e.producer = names.producer[size_t(send_op)];
  e.peer_actor = names.actor[size_t(send.peer)];
  e.peer = names.device[size_t(send.peer)];
  e.start_s = start_s;
  e.end_s = end_s;
  e.bytes = send.bytes;
  e.message_id = message_id;
  if (!bound.empty()) e.bound = intern(bound);
  sink_.event(e);
}

void TraceRecorder::collective(int graph, int op, int64_t step, const std::string& name,
                               double start_s, double end_s, double bytes, int64_t collective) {
  TraceEvent e = op_event(EventKind::kCollective, graph, op, step);
  e.label = intern(name);
  e.start_s = start_s;
  e.end_s = end_s;
  e.bytes = bytes;
  e.message_id = collective;
  sink_.event(e);
}

void TraceRecorder::collective_transfer(int graph, int op, int to_graph, int64_t step, double bytes,
                                        double start_s, double end_s, int64_t message_id,
                                        const std::string& bound) {
  const GraphNames& to = names_[size_t(to_graph)];
  TraceEvent e = op_event(EventKind::kTransfer, graph, op, step);
  e.producer = OpKind::kAllReduce;
  e.peer_actor = to.role;
  e.peer = to.role_device;
  e.start_s = start_s;
  e.end_s = end_s;
  e.bytes = bytes;
  e.message_id = message_id;
  if (!bound.empty()) e.bound = intern(bound);
  sink_.event(e);
}

void TraceRecorder::step(int graph, int64_t step, double start_s, double end_s,
                         int64_t global_step_read) {
  const GraphNames& names = names_[size_t(graph)];
  TraceEvent e;
  e.kind = EventKind::kStep;
  e.actor = e.client = names.role;
  e.device = names.role_device;
  e.label = step_label_;
  e.step = step;
  e.start_s = start_s;
  e.end_s = end_s;
  e.global_step_read = global_step_read;
  sink_.event(e);
}

void TraceRecorder::update(int graph, int op, int64_t step, double at_s, int64_t global_step_read,
                           int64_t global_step_after, int samples) {
  const GraphNames& names = names_[size_t(graph)];
  TraceEvent e = op_event(EventKind::kUpdate, graph, op, step);
  e.actor = names.role;  // the update is the client's: its step's gradients were applied
  e.start_s = e.end_s = at_s;
  e.global_step_read = global_step_read;
  e.global_step_after = global_step_after;
  e.samples = samples >= 0 ? samples : names.samples_per_step;
  sink_.event(e);
  global_step(at_s, global_step_after);
}

void TraceRecorder::dropped(int graph, int op, int64_t step, double at_s, int64_t local_step,
                            int64_t accumulator_global_step) {
  TraceEvent e = op_event(EventKind::kDropped, graph, op, step);
  e.start_s = e.end_s = at_s;
  e.global_step_read = local_step;
  e.global_step_after = accumulator_global_step;
  sink_.event(e);
}

void TraceRecorder::fault_window(const PlanFault& fault) {
  TraceEvent e;
  e.kind = EventKind::kFault;
  if (fault.kind == PlanFaultKind::kSlowdown) {
    e.actor = e.device = intern(plan_.platform.devices[size_t(fault.device)].name);
  } else {
    e.actor = intern(plan_.platform.links[size_t(fault.link)].name);
  }
  e.label = intern(fault.description);
  e.start_s = fault.from_s;
  e.end_s = fault.until_s;
  if (fault.open_ended) e.flags |= kEventOpenEnded;
  sink_.event(e);
}

void TraceRecorder::client_death(int graph, const std::string& description, int64_t step,
                                 double at_s, bool unplanned) {
  const GraphNames& names = names_[size_t(graph)];
  TraceEvent e;
  e.kind = EventKind::kFault;
  e.actor = e.client = names.role;
  e.device = names.role_device;
  e.label = intern(description);
  e.step = step;
  e.start_s = e.end_s = at_s;
  if (unplanned) e.flags = kEventUnplanned;
  sink_.event(e);
}

void TraceRecorder::role_death(int role, const std::string& description, double at_s,
                               bool unplanned) {
  const Role& r = plan_.roles[size_t(role)];
  TraceEvent e;
  e.kind = EventKind::kFault;
  e.actor = intern(r.name);
  e.device = intern(plan_.platform.devices[size_t(r.device)].name);
  e.label = intern(description);
  e.start_s = e.end_s = at_s;
  if (unplanned) e.flags = kEventUnplanned;
  sink_.event(e);
}

void TraceRecorder::checkpoint(int graph, int64_t step, double start_s, double end_s, double bytes,
                               int64_t global_step, bool summaries) {
  const GraphNames& names = names_[size_t(graph)];
  TraceEvent e;
  e.kind = EventKind::kCheckpoint;
  e.actor = e.client = names.role;
  e.device = names.role_device;
  e.label = intern(summaries ? "summaries" : "checkpoint");
  if (summaries) e.flags |= kEventSummaries;
  e.step = step;
  e.start_s = start_s;
  e.end_s = end_s;
  e.bytes = bytes;
  e.global_step_after = global_step;
  sink_.event(e);
}

void TraceRecorder::recovery(const std::string& actor, const std::string& description,
                             double start_s, double end_s, int64_t restored_global_step,
                             int64_t global_step_at_failure) {
  TraceEvent e;
  e.kind = EventKind::kRecovery;
  e.actor = intern(actor);
  e.label = intern(description);
  e.start_s = start_s;
  e.end_s = end_s;
  e.global_step_read = restored_global_step;
  e.global_step_after = global_step_at_failure;
  sink_.event(e);
}

void TraceRecorder::global_step(double at_s, int64_t value) {
  sink_.counter({global_step_name_, at_s, double(value)});
}

void TraceRecorder::counter(const std::string& name, double at_s, double value) {
  sink_.counter({intern(name), at_s, value});
}

}  // namespace replisim::core
