// What `--progress` shows while runs go on (docs/cli.md): a bar on a terminal (steps done,
// simulated time, an ETA), one JSON object per line for programs that run replisim as a
// subprocess, or nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/plan/plan.h"

namespace replisim::cli {

enum class ProgressMode {
  kAuto,  // the bar when standard error is a terminal and a run lasts more than kBarAfter
  kBar,   // the bar, whatever standard error is
  kJson,  // {"event": "start" | "progress" | "done", ...} per line
  kNone,
};

// Parses --progress's value; throws core::InputError naming the flag for any other.
ProgressMode parse_progress_mode(const std::string& text);

class ProgressDisplay {
 public:
  // Writes to `err` (not owned). `terminal`: whether `err` is a terminal.
  ProgressDisplay(ProgressMode mode, std::ostream& err, bool terminal);
  ~ProgressDisplay();

  // Run `run` of `runs` (from 0) starts, for `plan` (not kept).
  void start(size_t run, size_t runs, const core::Plan& plan);
  void update(const core::RunProgress& progress);
  // The run ended; the bar, if drawn, is cleared.
  void done();
  // Whether updates are wanted at all (RunOptions::progress may stay null otherwise).
  bool active() const { return mode_ != ProgressMode::kNone; }

  // The share of the run done (0..1): global steps for synchronous training, else the clients'
  // mean share of their steps. Exposed for tests.
  double fraction(const core::RunProgress& progress) const;

  static constexpr std::chrono::seconds kBarAfter{2};

 private:
  void draw_bar(const core::RunProgress& progress, double fraction, double elapsed_s);
  void clear_bar();

  ProgressMode mode_;
  std::ostream& err_;
  bool terminal_;
  size_t run_ = 0, runs_ = 0;
  std::string strategy_;
  bool synchronous_ = false;
  int steps_ = 0;
  bool steps_auto_ = false;  // training.steps "auto": steps_ is the bound, the run may stop sooner
  std::vector<int> client_steps_;  // per client: the steps it runs (its data limit or steps)
  std::chrono::steady_clock::time_point started_;
  bool bar_drawn_ = false;
};

// Progress over separate runs done by child processes (a sweep's points, simulate --seeds's
// seeds): a bar on a terminal ("sweep [####......] 3/8 points (1 cached), ETA 40 s"), JSON lines
// ({"event": "start" | "point" | "done", ...}; docs/capacity-planning.md), or nothing. Writes to
// standard error.
class PointProgress {
 public:
  // `name` starts the bar ("sweep", "seeds") and `unit` counts its points ("points", "seeds");
  // `points` in all, `cached` of them already done; `jobs` at once (for the ETA). kAuto is the
  // bar on a terminal and nothing otherwise.
  PointProgress(std::string name, std::string unit, ProgressMode mode, size_t points, size_t cached,
                int jobs);
  ~PointProgress();  // clears the bar
  PointProgress(const PointProgress&) = delete;
  PointProgress& operator=(const PointProgress&) = delete;

  // Point `index` (`label`, e.g. "ps=2" or "seed 3") ended as `exit` says.
  void point_done(size_t index, const std::string& label, int exit_code, double wall_s);
  // Every point ended (or the run stopped): the bar goes, JSON gets its "done" line.
  void finish(size_t computed, size_t cached, size_t failed);

 private:
  double elapsed_s() const;
  // Mean wall time of the points computed so far x those left / jobs; -1 before the first.
  double eta_s() const;
  void draw();
  void clear();

  std::string name_, unit_;
  ProgressMode mode_;
  size_t points_, done_, cached_;
  size_t computed_ = 0;
  double computed_wall_s_ = 0;
  int jobs_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace replisim::cli
