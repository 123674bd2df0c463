#include "gui/scenario_runner.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

namespace replisim::gui {

ScenarioRunner::ScenarioRunner(QString replisim, QObject* parent)
    : QObject(parent), replisim_(std::move(replisim)) {}

ScenarioRunner::~ScenarioRunner() {
  if (process_) {
    process_->disconnect(this);
    process_->kill();
    process_->waitForFinished(2000);
  }
}

QString ScenarioRunner::default_replisim() {
  const QString beside = QDir(QCoreApplication::applicationDirPath()).filePath("replisim");
  if (QFileInfo(beside).isExecutable()) return beside;
  const QString from_environment = qEnvironmentVariable("REPLISIM");
  return from_environment.isEmpty() ? "replisim" : from_environment;
}

bool ScenarioRunner::running() const {
  return process_ && process_->state() != QProcess::NotRunning;
}

void ScenarioRunner::start(const QString& scenario_path, const QString& strategy) {
  cancel();
  folder_ = std::make_unique<QTemporaryDir>();
  last_error_line_.clear();
  pending_.clear();
  cancelling_ = false;
  process_ = new QProcess(this);
  connect(process_, &QProcess::readyReadStandardError, this, &ScenarioRunner::read_progress);
  connect(process_, &QProcess::finished, this, &ScenarioRunner::on_finished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
    if (error == QProcess::FailedToStart) {
      emit failed("cannot start " + replisim_ + ": " + process_->errorString());
    }
  });
  process_->setStandardOutputFile(QProcess::nullDevice());
  const QString trace = folder_->filePath("run.rstrace");
  process_->start(replisim_, {"simulate", scenario_path, "--strategy", strategy, "--trace-out",
                              trace, "--progress", "json", "--force"});
}

void ScenarioRunner::cancel() {
  if (!running()) return;
  cancelling_ = true;
  process_->kill();
  process_->waitForFinished(5000);
}

// Progress lines are JSON objects ({"event": "progress", "fraction": ...}); anything else on the
// error output is the command's own message, whose last line says why it failed.
void ScenarioRunner::read_progress() {
  pending_ += process_->readAllStandardError();
  int end;
  while ((end = pending_.indexOf('\n')) >= 0) {
    const QByteArray line = pending_.left(end).trimmed();
    pending_.remove(0, end + 1);
    if (line.isEmpty()) continue;
    const QJsonDocument doc = QJsonDocument::fromJson(line);
    if (!doc.isObject() || doc.object().value("event").toString() != "progress") {
      last_error_line_ = QString::fromUtf8(line);
      continue;
    }
    const QJsonObject o = doc.object();
    const int run = o.value("run").toInt(), runs = std::max(1, o.value("runs").toInt());
    const double fraction = (run + o.value("fraction").toDouble()) / runs;
    emit progress(fraction, QString("%1 (%2/%3): global_step %4, t = %5 s")
                                .arg(o.value("strategy").toString())
                                .arg(run + 1)
                                .arg(runs)
                                .arg(o.value("global_step").toInteger())
                                .arg(o.value("time_s").toDouble(), 0, 'f', 2));
  }
}

void ScenarioRunner::on_finished(int exit_code, QProcess::ExitStatus status) {
  read_progress();
  if (!pending_.trimmed().isEmpty()) last_error_line_ = QString::fromUtf8(pending_.trimmed());
  if (cancelling_) {
    emit cancelled();
  } else if (status == QProcess::NormalExit && exit_code == 0) {
    emit finished(folder_->filePath("run.rstrace"));
  } else {
    emit failed(last_error_line_.isEmpty()
                    ? QString("replisim exited with status %1").arg(exit_code)
                    : last_error_line_);
  }
  process_->deleteLater();
  process_ = nullptr;
}

}  // namespace replisim::gui
