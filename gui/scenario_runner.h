// Runs a scenario through `replisim simulate` in a child process (both strategies, a native trace
// into a temporary folder), reading its progress lines (--progress json) as they come. Cancel
// kills the child. The GUI never links the simulator: the child is the command line.
#pragma once

#include <QObject>
#include <QProcess>
#include <QString>
#include <QTemporaryDir>
#include <memory>

namespace replisim::gui {

class ScenarioRunner : public QObject {
  Q_OBJECT

 public:
  // `replisim` is the command line's path (found next to replisim-gui by default_replisim()).
  explicit ScenarioRunner(QString replisim, QObject* parent = nullptr);
  ~ScenarioRunner() override;

  // Starts simulating `scenario_path` with `strategy` ("both", "in_graph", "between_graph"); a
  // run in progress is cancelled first.
  void start(const QString& scenario_path, const QString& strategy = "both");
  void cancel();
  bool running() const;

  // replisim next to this executable, else $REPLISIM, else "replisim" (the PATH).
  static QString default_replisim();

 signals:
  // `fraction` of the runs' steps done (0 to 1) and a line saying where the run is.
  void progress(double fraction, const QString& line);
  // The native trace the run wrote (with "both", in_graph first); valid until the next start.
  void finished(const QString& trace_path);
  // The run failed: the command's last line of error output (or why it could not start).
  void failed(const QString& error_line);
  void cancelled();

 private:
  void read_progress();
  void on_finished(int exit_code, QProcess::ExitStatus status);

  QString replisim_;
  std::unique_ptr<QTemporaryDir> folder_;
  QProcess* process_ = nullptr;
  QString last_error_line_;
  QByteArray pending_;
  bool cancelling_ = false;
};

}  // namespace replisim::gui
