#include "cli/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <ostream>
#include <utility>

#include <unistd.h>

#include "core/base/error.h"
#include "core/base/json_cursor.h"

namespace replisim::cli {
namespace {

constexpr int kBarWidth = 24;

std::string seconds_text(double s) {
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%.0f s", s);
  } else {
    std::snprintf(text, sizeof text, "%d min %02d s", int(s / 60), int(std::fmod(s, 60)));
  }
  return text;
}

// `value` to the nearest 1 / per (wall seconds to the millisecond, shares to 1e-4).
double rounded(double value, double per) {
  return std::round(value * per) / per;
}

// One JSON object per line on standard error (PointProgress).
void emit_line(const nlohmann::json& line) {
  std::cerr << line.dump() << "\n" << std::flush;
}

}  // namespace

ProgressMode parse_progress_mode(const std::string& text) {
  if (text == "auto") return ProgressMode::kAuto;
  if (text == "bar") return ProgressMode::kBar;
  if (text == "json") return ProgressMode::kJson;
  if (text == "none") return ProgressMode::kNone;
  throw core::InputError("", "--progress",
                         "unknown mode \"" + text + "\"; valid: auto, bar, json, none");
}

ProgressDisplay::ProgressDisplay(ProgressMode mode, std::ostream& err, bool terminal)
    : mode_(mode), err_(err), terminal_(terminal) {
  if (mode_ == ProgressMode::kAuto && !terminal_) mode_ = ProgressMode::kNone;
}

ProgressDisplay::~ProgressDisplay() {
  clear_bar();
}

void ProgressDisplay::start(size_t run, size_t runs, const core::Plan& plan) {
  run_ = run;
  runs_ = runs;
  strategy_ = plan.strategy;
  synchronous_ = plan.sync == "sync";
  steps_ = plan.steps;
  steps_auto_ = plan.steady_tolerance > 0;
  client_steps_.clear();
  for (const core::ClientGraph& c : plan.clients) {
    client_steps_.push_back(c.data_steps > 0 ? std::min(c.data_steps, plan.steps) : plan.steps);
  }
  started_ = std::chrono::steady_clock::now();
  if (mode_ == ProgressMode::kJson) {
    err_ << core::dump_json({{"event", "start"},
                             {"run", run},
                             {"runs", runs},
                             {"strategy", strategy_},
                             {"steps", steps_},
                             {"steps_auto", steps_auto_}})
         << std::endl;
  }
}

double ProgressDisplay::fraction(const core::RunProgress& progress) const {
  if (synchronous_) return std::clamp(double(progress.global_step) / steps_, 0.0, 1.0);
  if (client_steps_.empty()) return 0;
  double sum = 0;
  for (size_t c = 0; c < client_steps_.size(); ++c) {
    const int64_t done = c < progress.steps_done.size() ? progress.steps_done[c] : 0;
    sum += std::clamp(double(done) / std::max(1, client_steps_[c]), 0.0, 1.0);
  }
  return sum / double(client_steps_.size());
}

void ProgressDisplay::update(const core::RunProgress& progress) {
  if (mode_ == ProgressMode::kNone) return;
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  const double f = fraction(progress);
  if (mode_ == ProgressMode::kJson) {
    nlohmann::json line = {{"event", "progress"},
                           {"run", run_},
                           {"runs", runs_},
                           {"strategy", strategy_},
                           {"time_s", progress.time_s},
                           {"global_step", progress.global_step},
                           {"steps_done", progress.steps_done},
                           {"steps", steps_},
                           {"fraction", f},
                           {"elapsed_s", elapsed_s}};
    line["eta_s"] = f > 0 ? nlohmann::json(elapsed_s * (1 - f) / f) : nlohmann::json();
    err_ << core::dump_json(line) << std::endl;
    return;
  }
  if (mode_ == ProgressMode::kAuto &&
      elapsed_s < std::chrono::duration<double>(kBarAfter).count()) {
    return;
  }
  draw_bar(progress, f, elapsed_s);
}

void ProgressDisplay::draw_bar(const core::RunProgress& progress, double f, double elapsed_s) {
  const int filled = int(std::lround(f * kBarWidth));
  int64_t done = 0, total = 0;
  if (synchronous_) {
    done = progress.global_step;
    total = steps_;
  } else {
    for (size_t c = 0; c < client_steps_.size(); ++c) {
      done += std::min<int64_t>(c < progress.steps_done.size() ? progress.steps_done[c] : 0,
                                client_steps_[c]);
      total += client_steps_[c];
    }
  }
  char line[256];
  // An auto run may stop at any step once steady: its total and ETA are bounds.
  const char* bound = steps_auto_ ? "<=" : "";
  std::snprintf(
      line, sizeof line, "\r[%s%s] %3d%%  %s (%zu/%zu)  steps %lld/%s%lld  t = %.1f s%s",
      std::string(size_t(filled), '#').c_str(),
      std::string(size_t(kBarWidth - filled), '.').c_str(), int(std::lround(f * 100)),
      strategy_.c_str(), run_ + 1, runs_, static_cast<long long>(done), bound,
      static_cast<long long>(total), progress.time_s,
      f > 0 ? ("  ETA " + std::string(bound) + seconds_text(elapsed_s * (1 - f) / f)).c_str() : "");
  err_ << line << "\033[K" << std::flush;
  bar_drawn_ = true;
}

void ProgressDisplay::clear_bar() {
  if (!bar_drawn_) return;
  err_ << "\r\033[K" << std::flush;
  bar_drawn_ = false;
}

void ProgressDisplay::done() {
  clear_bar();
  if (mode_ == ProgressMode::kJson) {
    const double elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    err_ << core::dump_json({{"event", "done"},
                             {"run", run_},
                             {"runs", runs_},
                             {"strategy", strategy_},
                             {"elapsed_s", rounded(elapsed_s, 1e3)}})
         << std::endl;
  }
}

PointProgress::PointProgress(std::string name, std::string unit, ProgressMode mode, size_t points,
                             size_t cached, int jobs)
    : name_(std::move(name)),
      unit_(std::move(unit)),
      mode_(mode),
      points_(points),
      done_(cached),
      cached_(cached),
      jobs_(std::max(1, jobs)) {
  if (mode_ == ProgressMode::kAuto) {
    mode_ = ::isatty(STDERR_FILENO) == 1 ? ProgressMode::kBar : ProgressMode::kNone;
  }
  if (mode_ == ProgressMode::kJson) {
    emit_line({{"event", "start"},
               {"points", points_},
               {"cached", cached_},
               {"to_compute", points_ - cached_},
               {"jobs", jobs_}});
  }
  draw();
}

PointProgress::~PointProgress() {
  clear();
}

void PointProgress::point_done(size_t index, const std::string& label, int exit_code,
                               double wall_s) {
  ++done_;
  computed_wall_s_ += wall_s;
  ++computed_;
  if (mode_ == ProgressMode::kJson) {
    emit_line({{"event", "point"},
               {"index", index},
               {"label", label},
               {"status", exit_code == 0 ? "ok" : "failed"},
               {"done", done_},
               {"points", points_},
               {"wall_s", wall_s},
               {"eta_s", eta_s()}});
  }
  draw();
}

void PointProgress::finish(size_t computed, size_t cached, size_t failed) {
  clear();
  if (mode_ == ProgressMode::kJson) {
    emit_line({{"event", "done"},
               {"points", points_},
               {"computed", computed},
               {"cached", cached},
               {"failed", failed},
               {"wall_s", elapsed_s()}});
  }
}

double PointProgress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

double PointProgress::eta_s() const {
  if (computed_ == 0) return -1;
  return computed_wall_s_ / double(computed_) * double(points_ - done_) / double(jobs_);
}

void PointProgress::draw() {
  if (mode_ != ProgressMode::kBar) return;
  constexpr int kWidth = 30;
  const int filled = points_ == 0 ? kWidth : int(kWidth * done_ / points_);
  std::string bar(size_t(filled), '#');
  bar.resize(kWidth, '.');
  char line[200];
  const double eta = eta_s();
  std::snprintf(line, sizeof line, "\r%s [%s] %zu/%zu %s%s%s", name_.c_str(), bar.c_str(), done_,
                points_, unit_.c_str(),
                cached_ > 0 ? (" (" + std::to_string(cached_) + " cached)").c_str() : "",
                eta < 0 ? "" : (", ETA " + std::to_string(int(eta + 0.5)) + " s").c_str());
  std::cerr << line << "\033[K" << std::flush;
  drawn_ = true;
}

void PointProgress::clear() {
  if (drawn_) std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

}  // namespace replisim::cli
