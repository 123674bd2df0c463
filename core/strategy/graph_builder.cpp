#include "core/strategy/graph_builder.h"

#include "core/base/error.h"

namespace replisim::core {

StepGraphBuilder::StepGraphBuilder(const Plan& plan) : platform_(plan.platform) {
  if (plan.platform.transport.between_processes) processes_ = plan_processes(plan);
}

int StepGraphBuilder::process_of(int role) const {
  if (!processes_ || role < 0) return -1;
  REPLISIM_ASSERT(size_t(role) < processes_->of_role.size(),
                  "op of a role added after the builder");
  return processes_->of_role[size_t(role)];
}

int StepGraphBuilder::recv_for(const Edge& edge, int device, int role) {
  const auto key = std::make_tuple(edge.op, edge.output, device, process_of(role));
  auto found = recv_of_tensor_on_device_.find(key);
  if (found != recv_of_tensor_on_device_.end()) return found->second;
  const Op& producer = ops_[size_t(edge.op)];
  const int send_index = int(ops_.size());
  const int recv_index = send_index + 1;
  Op send;
  const std::string tensor =
      producer.name + (edge.output > 0 ? ":" + std::to_string(edge.output) : std::string());
  send.name = "send/" + tensor;
  send.kind = OpKind::kSend;
  send.device = producer.device;
  send.role = producer.role;
  send.bytes = edge.bytes;
  send.peer = recv_index;
  send.inputs = {edge.op};
  Op recv;
  recv.name = "recv/" + tensor;
  recv.kind = OpKind::kRecv;
  recv.device = device;
  recv.role = role;
  recv.bytes = edge.bytes;
  recv.peer = send_index;
  recv.inputs = {send_index};
  ops_.push_back(std::move(send));
  ops_.push_back(std::move(recv));
  recv_of_tensor_on_device_[key] = recv_index;
  return recv_index;
}

int StepGraphBuilder::add(Op op, const std::vector<Edge>& inputs) {
  REPLISIM_ASSERT(op.device >= 0 && size_t(op.device) < platform_.devices.size(),
                  "op placed on an unknown device");
  op.inputs.clear();
  for (const Edge& edge : inputs) {
    REPLISIM_ASSERT(edge.op >= 0 && size_t(edge.op) < ops_.size(), "edge from an unknown op");
    const Op& producer = ops_[size_t(edge.op)];
    const bool local =
        producer.device == op.device && process_of(producer.role) == process_of(op.role);
    op.inputs.push_back(local ? edge.op : recv_for(edge, op.device, op.role));
  }
  ops_.push_back(std::move(op));
  return int(ops_.size()) - 1;
}

}  // namespace replisim::core
