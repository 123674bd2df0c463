#include "core/trace/trace_merge.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/base/error.h"

namespace replisim::core {

RunOutcome emit_merged_parts(const std::vector<Trace>& parts, size_t reference,
                              TraceSink& sink) {
  std::unordered_map<std::string, uint32_t> ids;
  auto id_of = [&](const Trace& t, uint32_t id) -> uint32_t {
    if (id == kNoString) return id;
    const std::string& text = t.str(id);
    const auto found = ids.find(text);
    if (found != ids.end()) return found->second;
    const uint32_t next = uint32_t(ids.size());
    ids.emplace(text, next);
    sink.string(next, text);
    return next;
  };
  std::vector<TraceEvent> events;
  std::vector<CounterSample> counters;
  for (const Trace& t : parts) {
    for (TraceEvent e : t.events) {
      for (uint32_t* field : {&e.actor, &e.device, &e.label, &e.client, &e.peer_actor, &e.peer}) {
        *field = id_of(t, *field);
      }
      events.push_back(e);
    }
    for (CounterSample c : t.counters) {
      c.name = id_of(t, c.name);
      counters.push_back(c);
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.end_s < b.end_s; });
  std::stable_sort(
      counters.begin(), counters.end(),
      [](const CounterSample& a, const CounterSample& b) { return a.time_s < b.time_s; });
  for (const TraceEvent& e : events) sink.event(e);
  for (const CounterSample& c : counters) sink.counter(c);
  RunOutcome outcome = parts[reference].outcome;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i == reference) continue;
    for (const std::string& note : parts[i].outcome.notes) {
      if (std::find(outcome.notes.begin(), outcome.notes.end(), note) == outcome.notes.end()) {
        outcome.notes.push_back(note);
      }
    }
  }
  return outcome;
}

namespace {

std::string text_of(const nlohmann::json& provenance, const char* key) {
  const auto found = provenance.is_object() ? provenance.find(key) : provenance.end();
  return found != provenance.end() && found->is_string() ? found->get<std::string>() : "";
}

}  // namespace

Trace merge_parts(const std::vector<Trace>& parts, const std::vector<std::string>& sources) {
  if (parts.empty()) throw InputError("", "--merge", "no trace to merge");
  size_t reference = parts.size();
  std::set<std::string> tasks;
  for (size_t i = 0; i < parts.size(); ++i) {
    const TraceMeta& meta = parts[i].meta;
    if (meta.backend != "real") {
      throw InputError(sources[i], "",
                       "a trace of the " + meta.backend +
                           " backend: --merge joins the parts of one real run (each node's)");
    }
    if (meta.plan_hash != parts.front().meta.plan_hash) {
      throw InputError(sources[i], "",
                       "of plan " + meta.plan_hash + ", not " + parts.front().meta.plan_hash +
                           " as " + sources.front() + ": the parts of another run");
    }
    const std::string task = text_of(meta.provenance, "task");
    if (task.empty()) {
      throw InputError(sources[i], "", "a real run's whole trace, not one node's part");
    }
    if (!tasks.insert(task).second) {
      throw InputError(sources[i], "", "a second part of task " + task);
    }
    // The part whose outcome is the run's: the coordinator's (the chief's in traces written
    // before the coordinator ran the job).
    for (const char* key : {"coordinator", "chief"}) {
      const auto flag = meta.provenance.find(key);
      if (flag != meta.provenance.end() && flag->is_boolean() && flag->get<bool>() &&
          (reference == parts.size() || std::string(key) == "coordinator")) {
        reference = i;
        break;
      }
    }
  }
  if (reference == parts.size()) {
    throw InputError("", "--merge",
                     "none of these parts is the coordinator's: give every node's trace");
  }
  // Every task but the coordinator's measured its clock against it: each has its part here.
  for (const ClockOffset& o : parts[reference].outcome.clock_offsets) {
    if (tasks.count(o.task) == 0) {
      throw InputError("", "--merge", "task " + o.task + "'s part is missing");
    }
  }
  TraceBuilder builder;
  TraceMeta meta = parts[reference].meta;
  meta.provenance.erase("task");
  meta.provenance.erase("host");
  meta.provenance.erase("chief");
  meta.provenance.erase("coordinator");
  builder.begin(meta);
  builder.end(emit_merged_parts(parts, reference, builder));
  return std::move(builder.traces().front());
}

}  // namespace replisim::core
