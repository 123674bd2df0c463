#include "gui/trace_loading.h"

#include <QMetaObject>
#include <QPointer>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "core/strategy/strategy_names.h"
#include "core/trace/trace_format.h"
#include "core/trace/trace_sink.h"

namespace replisim::gui {

namespace {

// Builds the runs in memory and, once, hands a copy of the first run's first events to `preview`.
class PreviewingBuilder : public core::TraceBuilder {
 public:
  PreviewingBuilder(const std::string& source,
                    const std::function<void(std::shared_ptr<const TimelineModel>)>& preview,
                    size_t preview_events, const std::atomic<bool>* cancelled)
      : source_(source),
        preview_(preview),
        preview_events_(preview_events),
        cancelled_(cancelled) {}

  void event(const core::TraceEvent& event) override {
    core::TraceBuilder::event(event);
    if ((++events_ & 0xFFFF) == 0 && cancelled_ && cancelled_->load()) throw core::RunCancelled();
    if (preview_ && !previewed_ && traces().size() == 1 && events_ == preview_events_) {
      previewed_ = true;
      core::Trace copy = traces().front();  // the strings, metadata and events so far
      preview_(std::make_shared<const TimelineModel>(std::move(copy), source_ + " (loading)"));
    }
  }

 private:
  const std::string& source_;
  const std::function<void(std::shared_ptr<const TimelineModel>)>& preview_;
  size_t preview_events_;
  const std::atomic<bool>* cancelled_;
  size_t events_ = 0;
  bool previewed_ = false;
};

bool looks_like_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c)) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  }
  return false;
}

std::string run_name(const core::Trace& trace, size_t index, size_t runs) {
  if (runs == 1) return "";
  const std::string strategy =
      trace.meta.strategy.empty() ? "run " + std::to_string(index + 1) : trace.meta.strategy;
  return " [" + strategy + "]";
}

}  // namespace

ModelList load_trace_file(const std::string& path,
                          const std::function<void(std::shared_ptr<const TimelineModel>)>& preview,
                          size_t preview_events, const std::atomic<bool>* cancelled) {
  std::vector<core::Trace> runs;
  if (looks_like_json(path)) {
    runs = read_chrome_trace_file(path);
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw core::InputError(path, "", "cannot open the file");
    PreviewingBuilder builder(path, preview, preview_events, cancelled);
    core::read_trace_stream(in, path, builder);
    runs = std::move(builder.traces());
  }
  ModelList models;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string source = path + run_name(runs[i], i, runs.size());
    models.push_back(std::make_shared<const TimelineModel>(std::move(runs[i]), source));
  }
  return models;
}

TraceLoader::~TraceLoader() {
  cancel();
}

void TraceLoader::cancel() {
  if (cancelled_) cancelled_->store(true);
  if (worker_.joinable()) worker_.join();
}

void TraceLoader::start(const QString& path) {
  cancel();
  cancelled_ = std::make_shared<std::atomic<bool>>(false);
  QPointer<TraceLoader> self(this);
  auto cancelled = cancelled_;
  worker_ = std::thread([self, path, cancelled] {
    auto post = [self](auto function) {
      if (self) QMetaObject::invokeMethod(self.data(), std::move(function), Qt::QueuedConnection);
    };
    try {
      ModelList models = load_trace_file(
          path.toStdString(),
          [&](std::shared_ptr<const TimelineModel> model) {
            post([self, model] {
              if (self) emit self->preview(model);
            });
          },
          200000, cancelled.get());
      // The metrics too, here rather than on the window's thread (the compare view shows them).
      for (const auto& model : models) model->metrics();
      post([self, path, models] {
        if (self) emit self->loaded(path, models);
      });
    } catch (const core::RunCancelled&) {
    } catch (const std::exception& e) {
      const QString line = QString::fromStdString(e.what());
      post([self, path, line] {
        if (self) emit self->failed(path, line);
      });
    }
  });
}

// ---- Chrome traces -------------------------------------------------------------------------

namespace {

double number(const nlohmann::json& j, const char* key, double fallback = 0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The op kind an imported slice records, from its label's first component ("forward/conv1"):
// the Chrome form does not carry it.
std::optional<core::OpKind> op_of_label(const std::string& label) {
  core::OpKind kind;
  if (core::op_kind_from_name(label.substr(0, label.find('/')), &kind)) return kind;
  return std::nullopt;
}

// Turns the slices, instants and counters of a Chrome trace back into runs: one per strategy
// prefix of the process names ("in_graph worker0"), a transfer from its sending half (its
// receiving half names the peer).
class ChromeImport {
 public:
  explicit ChromeImport(const nlohmann::json& events) {
    for (const nlohmann::json& e : events) {
      if (text(e, "ph") == "M" && text(e, "name") == "process_name" && e.contains("args")) {
        process_name_[int(number(e, "pid"))] = text(e["args"], "name");
      }
    }
  }

  void add(const nlohmann::json& e) {
    const std::string ph = text(e, "ph");
    if (ph != "X" && ph != "i" && ph != "C") return;
    auto [run, actor] = locate(int(number(e, "pid")));
    const double start_s = number(e, "ts") * 1e-6;
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    if (ph == "C") {
      run->trace.counters.push_back(
          {run->trace.intern(text(e, "name")), start_s, number(args, "value")});
      return;
    }
    core::TraceEvent event;
    event.actor = actor;
    event.start_s = start_s;
    event.end_s = start_s + number(e, "dur") * 1e-6;
    event.step = int64_t(number(args, "step", -1));
    if (!text(args, "client").empty()) event.client = run->trace.intern(text(args, "client"));
    const std::string cat = text(e, "cat"), name = text(e, "name");
    if (cat == "transfer") {
      const int64_t id = int64_t(number(args, "message_id", -1));
      const auto found = run->transfer_of.find(id);
      if (found != run->transfer_of.end()) {  // the receiving half: only its actor is new
        run->trace.events[found->second].peer_actor = actor;
        return;
      }
      run->transfer_of[id] = run->trace.events.size();
    }
    if (!fill_kind(run->trace, event, cat, name, args)) return;
    event.label = run->trace.intern(name);
    run->trace.events.push_back(event);
  }

  std::vector<core::Trace> take() {
    std::vector<core::Trace> traces;
    for (Run& run : runs_) traces.push_back(std::move(run.trace));
    return traces;
  }

 private:
  struct Run {
    core::Trace trace;
    std::map<int64_t, size_t> transfer_of;  // message_id -> event index
  };

  std::pair<Run*, uint32_t> locate(int pid) {
    const auto named = process_name_.find(pid);
    std::string name = named != process_name_.end() ? named->second : "pid " + std::to_string(pid);
    std::string strategy;
    for (const std::string& registered : core::strategy_names()) {
      const std::string prefix = registered + " ";
      if (name.rfind(prefix, 0) == 0) {
        strategy = registered;
        name = name.substr(prefix.size());
      }
    }
    const auto [it, added] = run_of_strategy_.emplace(strategy, runs_.size());
    if (added) {
      runs_.emplace_back();
      runs_.back().trace.meta.strategy = strategy;
    }
    Run& run = runs_[it->second];
    return {&run, run.trace.intern(name)};
  }

  // The kind and kind-specific fields of `event` from its category; false for one not replisim's.
  static bool fill_kind(core::Trace& trace, core::TraceEvent& event, const std::string& cat,
                        const std::string& name, const nlohmann::json& args) {
    if (cat == "compute") {
      event.kind = core::EventKind::kCompute;
      event.device = trace.intern(text(args, "device"));
      event.flop = number(args, "flop");
      event.op = op_of_label(name);
    } else if (cat == "transfer") {
      event.kind = core::EventKind::kTransfer;
      event.op = core::OpKind::kSend;
      event.device = trace.intern(text(args, "from"));
      event.peer = trace.intern(text(args, "to"));
      event.peer_actor = event.actor;
      event.bytes = number(args, "bytes");
      event.message_id = int64_t(number(args, "message_id", -1));
    } else if (cat == "step") {
      event.kind = core::EventKind::kStep;
      event.global_step_read = int64_t(number(args, "global_step_read", -1));
    } else if (cat == "checkpoint") {
      event.kind = core::EventKind::kCheckpoint;
      event.bytes = number(args, "bytes");
      event.global_step_after = int64_t(number(args, "global_step", -1));
    } else if (cat == "recovery") {
      event.kind = core::EventKind::kRecovery;
    } else if (cat == "collective") {  // an all-reduce phase, under Horovod's name
      event.kind = core::EventKind::kCollective;
      event.op = core::OpKind::kAllReduce;
      event.device = trace.intern(text(args, "device"));
      event.bytes = number(args, "bytes");
      event.message_id = int64_t(number(args, "collective", -1));
    } else if (cat == "fault") {
      event.kind = core::EventKind::kFault;
      event.end_s = std::max(event.start_s, number(args, "until_s", event.start_s));
    } else if (cat == "update") {  // named "global_step N"
      event.kind = core::EventKind::kUpdate;
      event.global_step_read = int64_t(number(args, "global_step_read", -1));
      event.samples = int32_t(number(args, "samples"));
      const size_t space = name.rfind(' ');
      if (space != std::string::npos) {
        event.global_step_after = std::strtoll(name.c_str() + space + 1, nullptr, 10);
      }
    } else if (cat == "dropped") {
      event.kind = core::EventKind::kDropped;
    } else {
      return false;
    }
    return true;
  }

  std::map<int, std::string> process_name_;
  std::vector<Run> runs_;
  std::map<std::string, size_t> run_of_strategy_;
};

}  // namespace

std::vector<core::Trace> read_chrome_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw core::InputError(path, "", "cannot open the file");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw core::InputError(path, "", std::string("not a valid Chrome trace (JSON): ") + e.what());
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    throw core::InputError(path, "/traceEvents", "missing: not a Chrome trace written by replisim");
  }
  ChromeImport import(doc["traceEvents"]);
  for (const nlohmann::json& e : doc["traceEvents"]) import.add(e);
  std::vector<core::Trace> traces = import.take();
  if (traces.empty()) throw core::InputError(path, "/traceEvents", "no events");
  return traces;
}

}  // namespace replisim::gui
