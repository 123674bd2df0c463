// Builds one client's step graph: ops are added already placed on devices; wherever an edge
// crosses devices (or processes, see StepGraphBuilder::add) a send/recv pair is inserted ("the
// framework inserts the transfers").
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "core/plan/plan.h"

namespace replisim::core {

// An input edge: the producing op, the bytes of the tensor it carries to the consumer, and which
// of the producer's outputs it is: 0 its main output; a backward op also outputs the gradient of
// each PS slice of its group (1 + slice index), distinct tensors sent on their own.
struct Edge {
  int op = -1;
  double bytes = 0;
  int output = 0;
};

class StepGraphBuilder {
 public:
  // `plan` must outlive the builder, and hold every role the graph's ops will name. Sends leave
  // with no overhead: compile_plan charges it (strategy.cpp).
  explicit StepGraphBuilder(const Plan& plan);

  // Appends `op` (its `inputs` are ignored and rebuilt from `inputs`) and returns its index.
  // An input on another device goes through a send (placed with the producer, owned by its
  // role) and a recv (placed with `op`, owned by `op.role`); so does one from another process
  // on the same device when the transport charges between processes (Processes: TF sends every
  // tensor between two tasks through gRPC). One tensor (an op's output) sent to one device (and
  // process) is sent once, whatever the number of consumers there (as TF's partitioner does).
  int add(Op op, const std::vector<Edge>& inputs);

  const Op& op(int index) const { return ops_[size_t(index)]; }
  std::vector<Op> take() { return std::move(ops_); }

 private:
  int recv_for(const Edge& edge, int device, int role);
  // The process of `role` when processes separate tensors, else -1.
  int process_of(int role) const;

  const Platform& platform_;
  std::optional<Processes> processes_;  // when the transport charges between processes
  std::vector<Op> ops_;
  // (op, output, device, consumer's process or -1) -> recv
  std::map<std::tuple<int, int, int, int>, int> recv_of_tensor_on_device_;
};

}  // namespace replisim::core
