#include "gui/categories.h"

namespace replisim::gui {

using core::EventKind;
using core::OpKind;

namespace {

Category compute_category(const core::TraceEvent& e) {
  if (!e.op) return Category::kOtherOp;
  switch (*e.op) {
    case OpKind::kForward:
    case OpKind::kLoss:
      return Category::kForward;
    case OpKind::kBackward:
      return Category::kBackward;
    case OpKind::kAggregate:
    case OpKind::kApply:
    case OpKind::kAccumulate:
    case OpKind::kTakeGradient:
    case OpKind::kGlobalStepIncrement:
      return Category::kUpdateOp;
    default:
      return Category::kOtherOp;
  }
}

Category transfer_category(const core::TraceEvent& e) {
  if (!e.producer) return Category::kOtherTransfer;
  switch (*e.producer) {
    case OpKind::kReadVariable:
      return Category::kPull;
    case OpKind::kBackward:
    case OpKind::kAggregate:
    case OpKind::kAccumulate:
      return Category::kPush;
    case OpKind::kAllReduce:
      return Category::kCollectiveChunk;
    default:
      return Category::kOtherTransfer;
  }
}

}  // namespace

Category category_of(const core::TraceEvent& e) {
  switch (e.kind) {
    case EventKind::kCompute:
      return compute_category(e);
    case EventKind::kTransfer:
      return transfer_category(e);
    case EventKind::kStep:
      return Category::kStep;
    case EventKind::kUpdate:
      return Category::kUpdate;
    case EventKind::kDropped:
      return Category::kDropped;
    case EventKind::kFault:
      return Category::kFault;
    case EventKind::kCheckpoint:
      return Category::kCheckpoint;
    case EventKind::kRecovery:
      return Category::kRecovery;
    case EventKind::kCollective:
      return Category::kCollective;
  }
  return Category::kOtherOp;
}

const char* category_name(Category category) {
  switch (category) {
    case Category::kForward:
      return "forward";
    case Category::kBackward:
      return "backward";
    case Category::kUpdateOp:
      return "aggregate/apply";
    case Category::kOtherOp:
      return "other compute";
    case Category::kPull:
      return "variable pull";
    case Category::kPush:
      return "gradient push";
    case Category::kOtherTransfer:
      return "other transfer";
    case Category::kStep:
      return "step";
    case Category::kCheckpoint:
      return "checkpoint";
    case Category::kRecovery:
      return "recovery";
    case Category::kFault:
      return "fault";
    case Category::kUpdate:
      return "update";
    case Category::kDropped:
      return "dropped gradient";
    case Category::kWait:
      return "waiting in a step";
    case Category::kCollective:
      return "all-reduce (Horovod phase)";
    case Category::kCollectiveChunk:
      return "all-reduce chunk";
  }
  return "?";
}

// Chosen to stay apart for the common forms of colour blindness where it matters most (compute
// blues against transfer oranges and reds), and readable on white.
QColor category_colour(Category category) {
  switch (category) {
    case Category::kForward:
      return QColor(0x5D, 0xA5, 0xDA);
    case Category::kBackward:
      return QColor(0x1F, 0x4E, 0x9C);
    case Category::kUpdateOp:
      return QColor(0x2C, 0xA0, 0x2C);
    case Category::kOtherOp:
      return QColor(0x94, 0x7F, 0xC9);
    case Category::kPull:
      return QColor(0xF2, 0x8E, 0x2B);
    case Category::kPush:
      return QColor(0xD6, 0x27, 0x28);
    case Category::kOtherTransfer:
      return QColor(0x9C, 0x6B, 0x30);
    case Category::kStep:
      return QColor(0xC5, 0xCB, 0xD3);
    case Category::kCheckpoint:
      return QColor(0xE8, 0xC5, 0x1A);
    case Category::kRecovery:
      return QColor(0xE3, 0x77, 0xC2);
    case Category::kFault:
      return QColor(0x8B, 0x00, 0x00);
    case Category::kUpdate:
      return QColor(0x17, 0x80, 0x3A);
    case Category::kDropped:
      return QColor(0x55, 0x55, 0x55);
    case Category::kWait:
      return QColor(0x4A, 0x4F, 0x58);
    // Teals, apart from the compute blues and the PS transfers' oranges and reds: the all-reduce
    // replaces the pull and the push.
    case Category::kCollective:
      return QColor(0x17, 0xBE, 0xCF);
    case Category::kCollectiveChunk:
      return QColor(0x0B, 0x6E, 0x69);
  }
  return Qt::black;
}

QBrush category_brush(Category category) {
  if (category == Category::kWait) return QBrush(category_colour(category), Qt::BDiagPattern);
  return QBrush(category_colour(category));
}

QColor background_colour() {
  return QColor(0xFF, 0xFF, 0xFF);
}
QColor highlight_colour() {
  return QColor(0xFF, 0xE0, 0x66);  // the classroom caption's yellow, stronger
}

QColor group_header_colour() {
  return QColor(0xE9, 0xEC, 0xF1);
}
QColor fold_colour() {
  return QColor(0x6E, 0x74, 0x7D);
}
QColor selection_colour() {
  return QColor(0x30, 0x80, 0xFF, 0x38);
}

QColor objective_target_colour() {
  return QColor(0xA0, 0x1C, 0x8C);  // a magenta apart from the categories' colours
}

}  // namespace replisim::gui
