// Opening trace files for the viewer: replisim's native traces (read as a stream, so a preview of
// the first events can be shown before the whole file is read) and the Chrome traces replisim
// writes. One model per run of the file.
#pragma once

#include <QObject>
#include <QString>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gui/timeline_model.h"

namespace replisim::gui {

using ModelList = std::vector<std::shared_ptr<const TimelineModel>>;

// Every run of the trace file `path`, laid out: a native trace (its magic), or a Chrome trace
// written by replisim (a JSON object). `preview`, when set, is called once (on the calling
// thread) with the first run's first `preview_events` events laid out, while the rest is read.
// Throws core::InputError whose what() is the reader's one-line error (a missing, corrupt or
// truncated file), and core::RunCancelled when `cancelled` turns true.
ModelList load_trace_file(
    const std::string& path,
    const std::function<void(std::shared_ptr<const TimelineModel>)>& preview = {},
    size_t preview_events = 200000, const std::atomic<bool>* cancelled = nullptr);

// A Chrome Trace Event JSON file as replisim writes it (core/trace/chrome_trace.h), turned back
// into runs: one per prefix of its process names ("in_graph ", "between_graph "), events from
// its slices and instants with their args, global_step from its counters. The metadata is not
// in the file, so these runs have no metrics. Throws core::InputError on what it cannot read.
std::vector<core::Trace> read_chrome_trace_file(const std::string& path);

// Loads a file on a worker thread and reports back on the thread that owns it (queued signals).
// Deleting the loader cancels the load and waits for the thread.
class TraceLoader : public QObject {
  Q_OBJECT

 public:
  explicit TraceLoader(QObject* parent = nullptr) : QObject(parent) {}
  ~TraceLoader() override;
  // Starts loading `path` (a load in progress is cancelled first).
  void start(const QString& path);
  void cancel();

 signals:
  void preview(std::shared_ptr<const replisim::gui::TimelineModel> model);
  void loaded(const QString& path, replisim::gui::ModelList models);
  void failed(const QString& path, const QString& error_line);

 private:
  std::thread worker_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

}  // namespace replisim::gui

Q_DECLARE_METATYPE(replisim::gui::ModelList)
Q_DECLARE_METATYPE(std::shared_ptr<const replisim::gui::TimelineModel>)
