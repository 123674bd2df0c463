// The timeline viewer's speed, offscreen: a 1,000,000-event native trace's time to first paint
// next to a bare streaming parse of the same file, frame times at full zoom-out and at mid zoom
// next to painting as many plain rectangles as there are spans in view, and the full native trace
// of scenarios/classroom/ps_failure.json (both strategies) opened and painted in the compare view
// with first paint, frame times and peak memory. Prints figures and ratios (not a pass/fail test).
//
// Usage: bench_gui [--ps-failure-trace FILE] [--events N]
// Without --ps-failure-trace it runs `replisim simulate` (next to this program) to make one.
#include <sys/resource.h>
#include <unistd.h>
#include <QApplication>
#include <QImage>
#include <QPainter>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/trace/trace_format.h"
#include "gui/compare_view.h"
#include "gui/export.h"
#include "gui/timeline_view.h"
#include "gui/trace_loading.h"

namespace {

using namespace replisim;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0;  // Linux: KiB
}

// A synthetic run of `events` events: 16 workers each computing forward and backward ops of
// random length on its GPU, with a gradient push and a variable pull to one of 4 PS per op.
void write_synthetic_trace(const std::string& path, size_t events) {
  core::Trace trace;
  trace.meta.scenario = "synthetic";
  trace.meta.strategy = "between_graph";
  trace.meta.steps = 1;
  trace.meta.batch_per_replica = 1;
  core::Platform& platform = trace.meta.platform;  // the smallest a trace's metadata accepts
  platform.links = {{"switch", 1e12, 0, false}, {"pc1/nic", 1.25e9, 1e-5, true}};
  platform.switch_link = 0;
  platform.machines = {{"pc1", {1}, {0}}};
  platform.devices = {{"pc1/cpu", 0, core::DeviceKind::kCpu, 1e11, 1, -1, 0}};
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> duration(20e-6, 400e-6);
  const int workers = 16, ps = 4;
  std::vector<uint32_t> worker(workers), gpu(workers), ps_actor(ps), ps_cpu(ps);
  for (int w = 0; w < workers; ++w) {
    worker[size_t(w)] = trace.intern("worker" + std::to_string(w));
    gpu[size_t(w)] = trace.intern("w" + std::to_string(w) + "/gpu0");
  }
  for (int p = 0; p < ps; ++p) {
    ps_actor[size_t(p)] = trace.intern("ps" + std::to_string(p));
    ps_cpu[size_t(p)] = trace.intern("p" + std::to_string(p) + "/cpu");
  }
  std::vector<uint32_t> labels;
  for (int l = 0; l < 50; ++l) {
    labels.push_back(trace.intern("forward/layer" + std::to_string(l)));
    labels.push_back(trace.intern("backward/layer" + std::to_string(l)));
  }
  const uint32_t push = trace.intern("send/grad"), pull = trace.intern("send/var");
  std::vector<double> clock(workers, 0.0);
  int64_t message = 0;
  for (size_t n = 0; trace.events.size() < events; ++n) {
    const int w = int(n % workers);
    core::TraceEvent e;
    e.kind = core::EventKind::kCompute;
    const bool backward = (n / workers) % 2 == 1;
    e.op = backward ? core::OpKind::kBackward : core::OpKind::kForward;
    e.actor = e.client = worker[size_t(w)];
    e.device = gpu[size_t(w)];
    e.label = labels[(n / workers) % labels.size()];
    e.step = int64_t(n / (workers * 100));
    e.start_s = clock[size_t(w)];
    e.end_s = e.start_s + duration(random);
    e.flop = 1e9;
    clock[size_t(w)] = e.end_s + 5e-6;
    trace.events.push_back(e);
    core::TraceEvent t;
    t.kind = core::EventKind::kTransfer;
    t.op = core::OpKind::kSend;
    t.producer = backward ? core::OpKind::kBackward : core::OpKind::kReadVariable;
    const int p = int(n % ps);
    t.actor = t.client = backward ? worker[size_t(w)] : ps_actor[size_t(p)];
    t.device = backward ? gpu[size_t(w)] : ps_cpu[size_t(p)];
    t.peer_actor = backward ? ps_actor[size_t(p)] : worker[size_t(w)];
    t.peer = backward ? ps_cpu[size_t(p)] : gpu[size_t(w)];
    t.label = backward ? push : pull;
    t.step = e.step;
    t.start_s = e.end_s;
    t.end_s = e.end_s + 2 * duration(random);
    t.bytes = 4e6;
    t.message_id = message++;
    trace.events.push_back(t);
  }
  trace.outcome.end_s = *std::max_element(clock.begin(), clock.end()) + 1e-3;
  std::ofstream out(path, std::ios::binary);
  core::write_trace_binary(out, trace);
}

// Counts what a bare streaming parse hands over, keeping nothing.
class CountingSink : public core::TraceSink {
 public:
  void begin(const core::TraceMeta&) override {}
  void string(uint32_t, const std::string&) override {}
  void event(const core::TraceEvent&) override { ++events; }
  void counter(const core::CounterSample&) override {}
  void end(const core::RunOutcome&) override {}
  size_t events = 0;
};

const QSize kFrame(1600, 1000);

// Mean milliseconds of painting `views` (each kFrame) into an image, over `frames` frames.
double frame_ms(const std::vector<const gui::TimelineView*>& views, int frames) {
  QImage image(kFrame, QImage::Format_RGB32);
  const auto start = Clock::now();
  for (int f = 0; f < frames; ++f) {
    QPainter painter(&image);
    for (const gui::TimelineView* view : views) view->render_to(painter, kFrame);
  }
  return seconds_since(start) * 1e3 / frames;
}

// The spans in view: what painting without folding would draw.
size_t spans_in_view(const gui::TimelineView& view) {
  size_t count = 0;
  const auto& model = *view.model();
  const int64_t from = core::timeline_ns(view.axis()->from_s() - view.offset_s());
  const int64_t until = core::timeline_ns(view.axis()->until_s() - view.offset_s());
  for (const gui::LaneSlices& lane : model.lanes()) {
    const auto [first, last] = lane.overlapping(from, until);
    count += last - first;
  }
  return count;
}

// Mean milliseconds of painting `rectangles` plain 1-pixel-wide rectangles spread over the frame.
double rectangles_ms(size_t rectangles, int frames) {
  QImage image(kFrame, QImage::Format_RGB32);
  const auto start = Clock::now();
  for (int f = 0; f < frames; ++f) {
    QPainter painter(&image);
    for (size_t i = 0; i < rectangles; ++i) {
      painter.fillRect(QRectF(double(i % 1400) + 190, double((i / 1400) % 900) + 30, 1.5, 14),
                       QColor(0x5D, 0xA5, 0xDA));
    }
  }
  return seconds_since(start) * 1e3 / frames;
}

void report_frames(const char* what, const std::vector<const gui::TimelineView*>& views) {
  size_t spans = 0;
  for (const gui::TimelineView* view : views) spans += spans_in_view(*view);
  const double painted = frame_ms(views, 10);
  const double plain = rectangles_ms(spans, 3);
  std::printf(
      "  %-22s %8.2f ms/frame   %9zu spans in view   plain rectangles %9.2f ms   ratio %.3f\n",
      what, painted, spans, plain, painted / plain);
}

int bench_million(const std::string& folder, size_t events) {
  const std::string path = folder + "/synthetic.rstrace";
  write_synthetic_trace(path, events);
  std::printf("synthetic native trace: %zu events, %.1f MB\n", events,
              double(std::filesystem::file_size(path)) / 1e6);
  auto start = Clock::now();
  {
    std::ifstream in(path, std::ios::binary);
    CountingSink sink;
    core::read_trace_stream(in, path, sink);
  }
  const double parse_s = seconds_since(start);
  gui::TimelineView view;
  view.resize(kFrame);
  double first_paint_s = 0;
  start = Clock::now();
  const gui::ModelList models = gui::load_trace_file(path, [&](auto preview) {
    view.set_model(preview);
    view.fit_all();
    frame_ms({&view}, 1);
    first_paint_s = seconds_since(start);
  });
  view.set_model(models.front());
  view.fit_all();
  frame_ms({&view}, 1);
  const double full_paint_s = seconds_since(start);
  std::printf("  bare streaming parse        %7.3f s\n", parse_s);
  std::printf("  first paint (preview)       %7.3f s   ratio to the parse %.2f\n", first_paint_s,
              first_paint_s / parse_s);
  std::printf("  whole trace laid out+painted %6.3f s   ratio to the parse %.2f\n", full_paint_s,
              full_paint_s / parse_s);
  report_frames("full zoom-out", {&view});
  const double middle = 0.5 * (view.axis()->from_s() + view.axis()->until_s());
  const double width = view.axis()->duration_s() / 200;
  view.axis()->set_range(middle - width / 2, middle + width / 2);
  report_frames("mid zoom (1/200)", {&view});
  std::filesystem::remove(path);
  return 0;
}

int bench_ps_failure(const std::string& trace_path) {
  const double rss_before = peak_rss_mib();
  std::printf("ps_failure native trace: %.1f MB\n",
              double(std::filesystem::file_size(trace_path)) / 1e6);
  gui::CompareView compare;
  compare.resize(kFrame.width(), 2 * kFrame.height());
  compare.view_a()->resize(kFrame);
  compare.view_b()->resize(kFrame);
  double first_paint_s = 0;
  auto start = Clock::now();
  const gui::ModelList models = gui::load_trace_file(trace_path, [&](auto preview) {
    compare.set_models(preview, nullptr);
    frame_ms({compare.view_a()}, 1);
    first_paint_s = seconds_since(start);
  });
  if (models.size() < 2) {
    std::fprintf(stderr, "bench_gui: %s holds %zu run(s), wanted both strategies\n",
                 trace_path.c_str(), models.size());
    return 1;
  }
  size_t events = models[0]->trace().events.size() + models[1]->trace().events.size();
  compare.set_models(models[0], models[1]);
  frame_ms({compare.view_a(), compare.view_b()}, 1);
  const double full_s = seconds_since(start);
  std::printf("  %zu events in 2 runs\n", events);
  std::printf("  first paint (preview)       %7.3f s\n", first_paint_s);
  std::printf("  both runs laid out+painted  %7.3f s\n", full_s);
  report_frames("full zoom-out (2 runs)", {compare.view_a(), compare.view_b()});
  const double middle = 0.5 * (compare.axis()->from_s() + compare.axis()->until_s());
  const double width = compare.axis()->duration_s() / 200;
  compare.axis()->set_range(middle - width / 2, middle + width / 2);
  report_frames("mid zoom (1/200, 2 runs)", {compare.view_a(), compare.view_b()});
  std::printf("  peak memory                 %7.0f MiB (before opening: %.0f MiB)\n",
              peak_rss_mib(), rss_before);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  std::string ps_failure;
  size_t events = 1000000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ps-failure-trace") == 0) ps_failure = argv[i + 1];
    if (std::strcmp(argv[i], "--events") == 0) events = size_t(std::atoll(argv[i + 1]));
  }
  const std::string folder =
      (std::filesystem::temp_directory_path() / ("bench_gui_" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(folder);
  int rc = 0;
  try {
    if (ps_failure.empty()) {
      ps_failure = folder + "/ps_failure.rstrace";
      const std::string replisim =
          QCoreApplication::applicationDirPath().toStdString() + "/replisim";
      const std::string command =
          replisim + " simulate " + REPLISIM_SOURCE_DIR +
          "/scenarios/classroom/ps_failure.json --strategy both --trace-out " + ps_failure +
          " --force --progress none > /dev/null";
      std::printf("simulating ps_failure.json (both strategies)...\n");
      if (std::system(command.c_str()) != 0) throw std::runtime_error("replisim simulate failed");
    }
    // The real trace first, so that its peak memory is its own.
    rc = bench_ps_failure(ps_failure);
    rc = rc != 0 ? rc : bench_million(folder, events);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gui: %s\n", e.what());
    rc = 1;
  }
  std::filesystem::remove_all(folder);
  return rc;
}
