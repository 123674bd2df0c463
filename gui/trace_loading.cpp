#include "gui/trace_loading.h"

#include <QMetaObject>
#include <QPointer>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "core/base/error.h"
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

struct ChromeRun {
  core::Trace trace;
  std::map<int64_t, size_t> transfer_of;  // message_id -> event index
};

// The op kind an imported slice records, from its label's first component ("forward/conv1"):
// the Chrome form does not carry it.
std::optional<core::OpKind> op_of_label(const std::string& label) {
  core::OpKind kind;
  if (core::op_kind_from_name(label.substr(0, label.find('/')), &kind)) return kind;
  return std::nullopt;
}

double number(const nlohmann::json& j, const char* key, double fallback = 0) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

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
  const nlohmann::json& events = doc["traceEvents"];
  // Process names ("in_graph worker0") and thread names ("send.0"), first.
  std::map<int, std::string> process_name, thread_name;
  for (const nlohmann::json& e : events) {
    if (text(e, "ph") != "M" || !e.contains("args")) continue;
    if (text(e, "name") == "process_name")
      process_name[int(number(e, "pid"))] = text(e["args"], "name");
    if (text(e, "name") == "thread_name")
      thread_name[int(number(e, "tid"))] = text(e["args"], "name");
  }
  std::vector<ChromeRun> runs;
  std::map<std::string, size_t> run_of_prefix;
  auto locate = [&](int pid) -> std::pair<ChromeRun*, uint32_t> {
    std::string name = process_name.count(pid) ? process_name[pid] : "pid " + std::to_string(pid);
    std::string prefix;
    for (const char* strategy : {"in_graph ", "between_graph "}) {
      if (name.rfind(strategy, 0) == 0) prefix = strategy, name = name.substr(prefix.size());
    }
    auto [it, added] = run_of_prefix.emplace(prefix, runs.size());
    if (added) {
      runs.emplace_back();
      runs.back().trace.meta.strategy = prefix.empty() ? "" : prefix.substr(0, prefix.size() - 1);
    }
    ChromeRun& run = runs[it->second];
    return {&run, run.trace.intern(name)};
  };
  for (const nlohmann::json& e : events) {
    const std::string ph = text(e, "ph");
    if (ph != "X" && ph != "i" && ph != "C") continue;
    auto [run, actor] = locate(int(number(e, "pid")));
    core::Trace& trace = run->trace;
    const double start_s = number(e, "ts") * 1e-6;
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    if (ph == "C") {
      trace.counters.push_back({trace.intern(text(e, "name")), start_s, number(args, "value")});
      continue;
    }
    core::TraceEvent event;
    event.actor = actor;
    event.start_s = start_s;
    event.end_s = start_s + number(e, "dur") * 1e-6;
    event.step = int64_t(number(args, "step", -1));
    const std::string cat = text(e, "cat"), name = text(e, "name");
    if (!text(args, "client").empty()) event.client = trace.intern(text(args, "client"));
    if (cat == "compute") {
      event.kind = core::EventKind::kCompute;
      event.device = trace.intern(text(args, "device"));
      event.flop = number(args, "flop");
      event.op = op_of_label(name);
    } else if (cat == "transfer") {
      const int64_t id = int64_t(number(args, "message_id", -1));
      const auto found = run->transfer_of.find(id);
      if (found != run->transfer_of.end()) {  // the receiving half: only its actor is new
        trace.events[found->second].peer_actor = actor;
        continue;
      }
      event.kind = core::EventKind::kTransfer;
      event.op = core::OpKind::kSend;
      event.device = trace.intern(text(args, "from"));
      event.peer = trace.intern(text(args, "to"));
      event.peer_actor = actor;
      event.bytes = number(args, "bytes");
      event.message_id = id;
      run->transfer_of[id] = trace.events.size();
    } else if (cat == "step") {
      event.kind = core::EventKind::kStep;
      event.global_step_read = int64_t(number(args, "global_step_read", -1));
    } else if (cat == "checkpoint") {
      event.kind = core::EventKind::kCheckpoint;
      event.bytes = number(args, "bytes");
    } else if (cat == "recovery") {
      event.kind = core::EventKind::kRecovery;
    } else if (cat == "fault") {
      event.kind = core::EventKind::kFault;
      event.end_s = std::max(start_s, number(args, "until_s", start_s));
    } else if (cat == "update") {
      event.kind = core::EventKind::kUpdate;
      event.global_step_after = int64_t(number(args, "global_step", -1));
    } else if (cat == "dropped") {
      event.kind = core::EventKind::kDropped;
    } else {
      continue;
    }
    if (event.label == core::kNoString) event.label = trace.intern(name);
    trace.events.push_back(event);
  }
  if (runs.empty()) throw core::InputError(path, "/traceEvents", "no events");
  std::vector<core::Trace> traces;
  for (ChromeRun& run : runs) {
    run.trace.meta.scenario = "";  // unknown: a Chrome trace has no run metadata
    traces.push_back(std::move(run.trace));
  }
  return traces;
}

}  // namespace replisim::gui
