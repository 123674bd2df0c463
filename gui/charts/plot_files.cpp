#include "gui/charts/plot_files.h"

#include <QApplication>
#include <QBuffer>
#include <QChart>
#include <QChartView>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <cstdio>
#include <memory>
#include <ostream>

#include "core/base/json_cursor.h"
#include "core/base/output_file.h"
#include "gui/charts/front_chart.h"
#include "gui/charts/scaling_chart.h"

namespace replisim::gui {
namespace {

constexpr int kWidthPx = 1400;
constexpr int kHeightPx = 850;

// Qt's messages, but for QStandardPaths' note that XDG_RUNTIME_DIR is unset (common where no
// desktop session runs, and of no consequence for files written offscreen).
void quiet_messages(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (type == QtWarningMsg && message.startsWith("QStandardPaths:")) return;
  std::fprintf(stderr, "%s\n", qFormatLogMessage(type, context, message).toLocal8Bit().constData());
}

// The process's QApplication, made on the offscreen platform when there is none.
void ensure_application() {
  if (QApplication::instance() != nullptr) return;
  qInstallMessageHandler(quiet_messages);
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static int argc = 1;
  static char name[] = "replisim";
  static char* argv[] = {name, nullptr};
  static QApplication application(argc, argv);
}

struct Rendered {
  QByteArray png;
  QByteArray svg;
};

Rendered render(QChart* chart) {
  QChartView view(chart);  // owns the chart
  view.setRenderHint(QPainter::Antialiasing);
  view.resize(kWidthPx, kHeightPx);
  chart->resize(kWidthPx, kHeightPx);
  view.grab();  // lays the chart out (and places its labels) before painting
  Rendered out;
  QImage image(kWidthPx, kHeightPx, QImage::Format_ARGB32);
  image.fill(Qt::white);
  {
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    view.render(&painter);
  }
  QBuffer png(&out.png);
  png.open(QIODevice::WriteOnly);
  image.save(&png, "PNG");
  QBuffer svg(&out.svg);
  svg.open(QIODevice::WriteOnly);
  QSvgGenerator generator;
  generator.setOutputDevice(&svg);
  generator.setSize(QSize(kWidthPx, kHeightPx));
  generator.setViewBox(QRect(0, 0, kWidthPx, kHeightPx));
  generator.setTitle(chart->title());
  {
    QPainter painter(&generator);
    view.render(&painter);
  }
  return out;
}

}  // namespace

std::vector<std::string> write_sweep_plots(const std::string& results_file,
                                           const std::string& prefix, bool force,
                                           double target_samples_per_s) {
  // recommend's results: the cost-time chart with its front.
  if (looks_like_recommend_results(QString::fromStdString(results_file))) {
    const nlohmann::json document = read_recommend_results(results_file);
    ensure_application();
    core::OutputFiles files(force);
    files.protect(results_file, "the results");
    auto rendered = std::make_shared<Rendered>(render(make_front_chart(document)));
    std::vector<std::string> paths;
    for (const auto& [suffix, bytes] :
         {std::pair<std::string, const QByteArray*>{".png", &rendered->png},
          std::pair<std::string, const QByteArray*>{".svg", &rendered->svg}}) {
      const std::string path = prefix + "-front" + suffix;
      files.add("--out", path, [bytes, rendered](std::ostream& out) {
        out.write(bytes->constData(), bytes->size());
      });
      paths.push_back(path);
    }
    files.write_all();
    return paths;
  }
  const core::SweepResults results = core::read_sweep_results(results_file);
  ensure_application();
  core::OutputFiles files(force);
  files.protect(results_file, "the results");
  std::vector<std::string> paths;
  std::vector<std::shared_ptr<Rendered>> images;
  for (SweepChartKind kind : sweep_chart_kinds(results)) {
    auto rendered =
        std::make_shared<Rendered>(render(make_sweep_chart(results, kind, target_samples_per_s)));
    const std::string base = prefix + "-" + sweep_chart_name(kind).toStdString();
    for (const auto& [suffix, bytes] :
         {std::pair<std::string, const QByteArray*>{".png", &rendered->png},
          std::pair<std::string, const QByteArray*>{".svg", &rendered->svg}}) {
      const std::string path = base + suffix;
      files.add("--out", path, [bytes, rendered](std::ostream& out) {
        out.write(bytes->constData(), bytes->size());
      });
      paths.push_back(path);
    }
    images.push_back(rendered);
  }
  files.write_all();
  return paths;
}

}  // namespace replisim::gui
