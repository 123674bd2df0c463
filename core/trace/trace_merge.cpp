#include "core/trace/trace_merge.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "core/base/error.h"

namespace replisim::core {

namespace {

std::string text_of(const nlohmann::json& provenance, const char* key) {
  const auto found = provenance.is_object() ? provenance.find(key) : provenance.end();
  return found != provenance.end() && found->is_string() ? found->get<std::string>() : "";
}

bool flag_of(const nlohmann::json& provenance, const char* key) {
  const auto found = provenance.is_object() ? provenance.find(key) : provenance.end();
  return found != provenance.end() && found->is_boolean() && found->get<bool>();
}

void add_notes(RunOutcome& to, const RunOutcome& from) {
  for (const std::string& note : from.notes) {
    if (std::find(to.notes.begin(), to.notes.end(), note) == to.notes.end()) {
      to.notes.push_back(note);
    }
  }
}

// The run's outcome from its parts (emit_merged_parts).
RunOutcome merged_outcome(const std::vector<Trace>& parts) {
  std::vector<PartPlace> places;
  int last = 0;
  for (const Trace& t : parts) {
    places.push_back(part_place(t));
    last = std::max(last, places.back().incarnation);
  }
  size_t reference = parts.size(), coordinator = parts.size();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (places[i].incarnation != last) continue;
    if (places[i].coordinator) coordinator = i;
  }
  if (coordinator < parts.size() && !places[coordinator].killed) reference = coordinator;
  for (size_t i = 0; i < parts.size() && reference == parts.size(); ++i) {
    if (places[i].incarnation == last && !places[i].killed) reference = i;
  }
  if (reference == parts.size()) reference = coordinator < parts.size() ? coordinator : 0;
  RunOutcome outcome = parts[reference].outcome;
  outcome.killed_s.reset();
  outcome.restarts.clear();
  for (int k = 0; k <= last; ++k) {
    for (size_t i = 0; i < parts.size(); ++i) {
      if (places[i].incarnation != k || !places[i].coordinator) continue;
      const auto& r = parts[i].outcome.restarts;
      outcome.restarts.insert(outcome.restarts.end(), r.begin(), r.end());
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    if (places[i].incarnation != last) continue;
    // The tasks that recorded the failure say the same of it but for global_step, which only
    // some of them know (a PS holds it, an in-graph client counts it): the highest.
    const std::optional<JobFailureRecord>& failure = parts[i].outcome.job_failure;
    if (failure &&
        (!outcome.job_failure || failure->global_step > outcome.job_failure->global_step)) {
      outcome.job_failure = failure;
    }
    if (reference != coordinator) outcome.end_s = std::max(outcome.end_s, parts[i].outcome.end_s);
  }
  if (coordinator < parts.size()) outcome.clock_offsets = parts[coordinator].outcome.clock_offsets;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i != reference) add_notes(outcome, parts[i].outcome);
  }
  return outcome;
}

}  // namespace

PartPlace part_place(const Trace& part) {
  const nlohmann::json& provenance = part.meta.provenance;
  PartPlace place;
  place.task = text_of(provenance, "task");
  const auto incarnation =
      provenance.is_object() ? provenance.find("incarnation") : provenance.end();
  if (incarnation != provenance.end() && incarnation->is_number_integer()) {
    place.incarnation = int(std::clamp<int64_t>(incarnation->get<int64_t>(), 0, 1 << 20));
  }
  // Parts written before the coordinator ran the job name only the chief.
  place.coordinator = provenance.is_object() && provenance.contains("coordinator")
                          ? flag_of(provenance, "coordinator")
                          : flag_of(provenance, "chief");
  place.killed = part.outcome.killed_s.has_value();
  return place;
}

RunOutcome emit_merged_parts(const std::vector<Trace>& parts, TraceSink& sink) {
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
      for (uint32_t* field :
           {&e.actor, &e.device, &e.label, &e.client, &e.peer_actor, &e.peer, &e.bound}) {
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
  return merged_outcome(parts);
}

Trace merge_parts(const std::vector<Trace>& parts, const std::vector<std::string>& sources) {
  if (parts.empty()) throw InputError("", "--merge", "no trace to merge");
  std::set<std::pair<int, std::string>> seen;  // (incarnation, task)
  int last = 0;
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
    const PartPlace place = part_place(parts[i]);
    if (place.task.empty()) {
      throw InputError(sources[i], "", "a real run's whole trace, not one node's part");
    }
    if (!seen.insert({place.incarnation, place.task}).second) {
      throw InputError(
          sources[i], "",
          "a second part of task " + place.task +
              (place.incarnation > 0 ? " after restart " + std::to_string(place.incarnation)
                                     : std::string()));
    }
    last = std::max(last, place.incarnation);
  }
  size_t coordinator = parts.size();
  for (size_t i = 0; i < parts.size(); ++i) {
    const PartPlace place = part_place(parts[i]);
    if (place.coordinator && place.incarnation == last) coordinator = i;
  }
  if (coordinator == parts.size()) {
    throw InputError("", "--merge",
                     "none of these parts is the coordinator's: give every node's trace");
  }
  // Every task but the coordinator's measured its clock against it: each has its part here.
  for (const ClockOffset& o : parts[coordinator].outcome.clock_offsets) {
    if (seen.count({last, o.task}) == 0) {
      throw InputError("", "--merge", "task " + o.task + "'s part is missing");
    }
  }
  TraceBuilder builder;
  TraceMeta meta = parts[coordinator].meta;
  for (const char* key : {"task", "host", "chief", "coordinator", "incarnation"}) {
    meta.provenance.erase(key);
  }
  builder.begin(meta);
  builder.end(emit_merged_parts(parts, builder));
  return std::move(builder.traces().front());
}

}  // namespace replisim::core
