// What the timeline colours: each slice and instant of a trace falls in one category (a kind of
// event, and for compute and transfers the kind of plan op), with its colour and legend name.
// Shared by the view, the legend, the statistics of a selection and the tests.
#pragma once

#include <QBrush>
#include <QColor>
#include <cstdint>
#include <string>

#include "core/trace/trace.h"

namespace replisim::gui {

enum class Category : uint8_t {
  kForward,        // compute: forward and loss ops
  kBackward,       // compute: backward ops
  kUpdateOp,       // compute: aggregate, apply, accumulate, take_gradient, global_step_increment
  kOtherOp,        // compute: input, split, read_variable, token ops, local_step
  kPull,           // transfer of a variable's value (producer read_variable)
  kPush,           // transfer of a gradient (producer backward, aggregate, accumulate)
  kOtherTransfer,  // transfer of anything else (activations, tokens, sub-batches)
  kStep,           // one step of a client graph
  kCheckpoint,     // the chief writing a checkpoint or summaries
  kRecovery,       // a job failure and its restart (death to resumption)
  kFault,          // a fault (instant, or a slowdown window)
  kUpdate,         // global_step incremented (instant)
  kDropped,        // a stale gradient dropped (instant)
  kWait,           // a computing role inside its step with nothing of its own running (derived)
  // All-reduce: a rank's phase of a collective (kCollective: Horovod's NEGOTIATE_ALLREDUCE,
  // NCCL_ALLREDUCE, ...; the slice's name says which), and a chunk between two ranks (a transfer
  // of producer allreduce).
  kCollective,
  kCollectiveChunk,
};
inline constexpr int kCategoryCount = 16;

// The category of `event`.
Category category_of(const core::TraceEvent& event);
// "forward", "gradient push", ...: the legend's and the statistics' names.
const char* category_name(Category category);
QColor category_colour(Category category);
// How a category fills a rectangle: its colour, hatched for kWait.
QBrush category_brush(Category category);

// The colours of what is not an event.
QColor background_colour();        // an idle lane
QColor group_header_colour();      // the row naming an actor
QColor highlight_colour();         // an actor's rows that a classroom text points at
QColor fold_colour();              // spans folded into one block (narrower than kFoldWidthPx)
QColor selection_colour();         // the selected time range (translucent)
QColor objective_target_colour();  // the time-to-target marker (training.objective)

// Spans narrower than this many pixels fold into one block with a count.
inline constexpr double kFoldWidthPx = 2.0;

}  // namespace replisim::gui
