// Tiny traces for the viewer's tests, built in code, and helpers to drive widgets offscreen.
#pragma once

#include <QImage>
#include <QString>
#include <memory>
#include <string>

#include "core/trace/trace.h"
#include "gui/timeline_model.h"

namespace replisim::gui::test {

// worker0 computes two forward ops on pc1/gpu0, [1, 2] s and [3, 4] s (labels "fwd/a", "fwd/b"),
// and sends a 1 MB gradient to ps0 over [2, 2.5] s; ps0 applies it over [2.5, 2.75] s and
// global_step becomes 1 at 2.75 s (32 samples); worker0's step 0 lasts [0.5, 4.5] s. Two machines
// (pc1 with a GPU, pc2) in the metadata. Every time is shifted by `shift_s`.
core::Trace tiny_trace(double shift_s = 0);
std::shared_ptr<const TimelineModel> tiny_model(double shift_s = 0);

// tiny_trace with a training objective (target: test accuracy >= `target_accuracy`): the
// global_step, loss and accuracy counters of two evaluations, at 0 s (step 0, loss 1.2, accuracy
// 0.4) and at 2.75 s (step 1, loss 0.6, accuracy 0.8).
core::Trace tiny_objective_trace(double target_accuracy);

// The lane of `model` named `label` ("compute pc1/gpu0") of actor `actor`; -1 when none.
int lane_named(const TimelineModel& model, const std::string& actor, const std::string& label);

// A temporary file path (unique per test) under the test's temporary folder.
std::string temporary_path(const std::string& name);
// Writes `trace` as a native trace file at `path`.
void write_native(const core::Trace& trace, const std::string& path);

}  // namespace replisim::gui::test
