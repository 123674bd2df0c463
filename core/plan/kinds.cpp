#include "core/plan/kinds.h"

namespace replisim::core {

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kInput:
      return "input";
    case OpKind::kSplit:
      return "split";
    case OpKind::kReadVariable:
      return "read_variable";
    case OpKind::kForward:
      return "forward";
    case OpKind::kLoss:
      return "loss";
    case OpKind::kBackward:
      return "backward";
    case OpKind::kAggregate:
      return "aggregate";
    case OpKind::kApply:
      return "apply";
    case OpKind::kGlobalStepIncrement:
      return "global_step_increment";
    case OpKind::kSend:
      return "send";
    case OpKind::kRecv:
      return "recv";
    case OpKind::kAccumulate:
      return "accumulate";
    case OpKind::kTokenDequeue:
      return "token_dequeue";
    case OpKind::kLocalStep:
      return "local_step";
    case OpKind::kTakeGradient:
      return "take_gradient";
    case OpKind::kTokenEnqueue:
      return "token_enqueue";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kAllReduce:
      return "allreduce";
  }
  return "?";
}

const char* role_kind_name(RoleKind kind) {
  switch (kind) {
    case RoleKind::kClient:
      return "client";
    case RoleKind::kWorker:
      return "worker";
    case RoleKind::kTower:
      return "tower";
    case RoleKind::kParameterServer:
      return "ps";
    case RoleKind::kSyncQueueRunner:
      return "sync_queue_runner";
  }
  return "?";
}

const std::vector<OpKind>& all_op_kinds() {
  static const std::vector<OpKind> kAll = {
      OpKind::kInput,        OpKind::kSplit,     OpKind::kReadVariable,
      OpKind::kForward,      OpKind::kLoss,      OpKind::kBackward,
      OpKind::kAggregate,    OpKind::kApply,     OpKind::kGlobalStepIncrement,
      OpKind::kSend,         OpKind::kRecv,      OpKind::kAccumulate,
      OpKind::kTokenDequeue, OpKind::kLocalStep, OpKind::kTakeGradient,
      OpKind::kTokenEnqueue, OpKind::kBarrier,   OpKind::kAllReduce};
  return kAll;
}

const std::vector<RoleKind>& all_role_kinds() {
  static const std::vector<RoleKind> kAll = {RoleKind::kClient, RoleKind::kWorker, RoleKind::kTower,
                                             RoleKind::kParameterServer,
                                             RoleKind::kSyncQueueRunner};
  return kAll;
}

bool op_kind_from_name(const std::string& name, OpKind* out) {
  for (OpKind kind : all_op_kinds()) {
    if (name == op_kind_name(kind)) {
      *out = kind;
      return true;
    }
  }
  return false;
}

bool role_kind_from_name(const std::string& name, RoleKind* out) {
  for (RoleKind kind : all_role_kinds()) {
    if (name == role_kind_name(kind)) {
      *out = kind;
      return true;
    }
  }
  return false;
}

bool is_strategy_name_spelling(const std::string& name) {
  return !name.empty() && name.size() <= 64 && name[0] >= 'a' && name[0] <= 'z' &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}

}  // namespace replisim::core
