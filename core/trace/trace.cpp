#include "core/trace/trace.h"

namespace replisim::core {

const char* event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::kCompute:
      return "compute";
    case EventKind::kTransfer:
      return "transfer";
    case EventKind::kStep:
      return "step";
    case EventKind::kUpdate:
      return "update";
    case EventKind::kDropped:
      return "dropped";
    case EventKind::kFault:
      return "fault";
    case EventKind::kCheckpoint:
      return "checkpoint";
    case EventKind::kRecovery:
      return "recovery";
    case EventKind::kCollective:
      return "collective";
  }
  return "?";
}

const char* lane_name(EventKind kind) {
  switch (kind) {
    case EventKind::kCompute:
      return "compute";
    case EventKind::kTransfer:
      return "send";
    case EventKind::kStep:
      return "step";
    case EventKind::kUpdate:
      return "update";
    case EventKind::kDropped:
      return "dropped";
    case EventKind::kFault:
      return "fault";
    case EventKind::kCheckpoint:
      return "checkpoint";
    case EventKind::kRecovery:
      return "recovery";
    case EventKind::kCollective:
      return "collective";
  }
  return "?";
}

uint32_t Trace::intern(const std::string& text) {
  auto found = index_.find(text);
  if (found != index_.end()) return found->second;
  const uint32_t id = uint32_t(strings_.size());
  strings_.push_back(text);
  index_.emplace(text, id);
  return id;
}

uint32_t Trace::find(const std::string& text) const {
  auto found = index_.find(text);
  return found == index_.end() ? kNoString : found->second;
}

std::vector<std::string> Trace::notes() const {
  std::vector<std::string> all = meta.notes;
  all.insert(all.end(), outcome.notes.begin(), outcome.notes.end());
  return all;
}

const std::string& Trace::str(uint32_t index) const {
  static const std::string kEmpty;
  return index < strings_.size() ? strings_[index] : kEmpty;
}

}  // namespace replisim::core
