#include "real/node/device_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <vector>

#include "core/values/gradient_fill.h"

namespace replisim::real::detail {

using core::Bytes;
using core::Op;
using core::OpKind;

namespace {

// The send whose recv is op `recv` (a checked plan's recv has exactly its send as input; -1:
// none).
int send_of(const core::ClientGraph& graph, int recv) {
  for (int in : graph.ops[size_t(recv)].inputs) {
    const Op& o = graph.ops[size_t(in)];
    if (o.kind == OpKind::kSend && o.peer == recv) return in;
  }
  return -1;
}

// `t`'s first `bytes` (at most its own) downloaded into a new host buffer of `size` bytes.
BufferPtr downloaded(DeviceMemory& memory, DeviceTensor t, size_t bytes, size_t size) {
  auto out = std::make_shared<Bytes>(size);
  memory.download(t, out->data(), std::min({bytes, t.bytes, size}));
  return out;
}

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f MB", bytes / 1e6);
  return text;
}

}  // namespace

DeviceValues::DeviceValues(const core::Plan& plan, const std::vector<Part>& parts,
                           const std::function<DeviceEngine&(int)>& engine,
                           const std::function<size_t(int)>& gradient_floats)
    : plan_(plan), parts_(parts), engine_(engine) {
  const auto memory_of = [&](int device) -> DeviceMemory* { return engine(device).memory(); };
  host_takes_.resize(parts.size());
  // Who takes each op's output on the host: everything but compute on its device and a send
  // that takes it off the device.
  for (const Part& p : parts) {
    const std::vector<Op>& ops = p.graph->ops;
    std::vector<bool>& host = host_takes_[size_t(p.index)];
    host.assign(ops.size(), false);
    for (size_t k = 0; k < ops.size(); ++k) {
      for (int in : ops[k].inputs) {
        const Op& producer = ops[size_t(in)];
        const bool same_place =
            ops[k].device == producer.device && p.task_of_op[k] == p.task_of_op[size_t(in)];
        const bool compute = ops[k].kind == OpKind::kForward || ops[k].kind == OpKind::kBackward;
        // A send takes a tensor off the device from its device tensor when it has one: what
        // compute made or a recv brought (an op on values makes its output in host memory).
        const bool leaving = ops[k].kind == OpKind::kSend &&
                             ops[size_t(ops[k].peer)].device != ops[k].device &&
                             (producer.kind == OpKind::kForward ||
                              producer.kind == OpKind::kBackward || producer.kind == OpKind::kRecv);
        if (!(same_place && (compute || leaving))) host[size_t(in)] = true;
      }
    }
  }
  // The gradients and the received tensors first (a send's source may be one of them).
  for (const Part& p : parts) {
    const std::vector<Op>& ops = p.graph->ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      if (!p.mine[k] || memory_of(ops[k].device) == nullptr) continue;
      if (ops[k].kind == OpKind::kBackward) {
        for (int v : p.gradients_of[k]) {
          add(ops[k].device, {p.index, int(k), v}, 4 * gradient_floats(v));
        }
      } else if (ops[k].kind == OpKind::kRecv) {
        const int send = send_of(*p.graph, int(k));
        if (send >= 0 && ops[size_t(send)].device != ops[k].device) {
          add(ops[k].device, {p.index, int(k), -1},
              size_t(std::llround(std::max(0.0, ops[size_t(send)].bytes))));
        }
      }
    }
  }
  for (const Part& p : parts) {
    const std::vector<Op>& ops = p.graph->ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      const Op& send = ops[k];
      if (!p.mine[k] || send.kind != OpKind::kSend || memory_of(send.device) == nullptr ||
          ops[size_t(send.peer)].device == send.device) {
        continue;
      }
      const int in = send.inputs.empty() ? -1 : send.inputs[0];
      Key source{p.index, int(k), -1};  // an output replisim has no values for: its own tensor
      if (in >= 0 && (ops[size_t(in)].device != send.device || !p.mine[size_t(in)])) continue;
      if (in >= 0) {
        const OpKind kind = ops[size_t(in)].kind;
        if (kind == OpKind::kBackward && !p.gradients_of[size_t(in)].empty()) {
          int v = p.gradient_variable[k];
          const std::vector<int>& made = p.gradients_of[size_t(in)];
          if (std::find(made.begin(), made.end(), v) == made.end()) v = made.front();
          source = {p.index, in, v};
        } else if (tensors_.count({p.index, in, -1})) {
          source = {p.index, in, -1};
        } else if (kind != OpKind::kForward && kind != OpKind::kBackward) {
          // An op on values (a read, an aggregate, an apply of a variable placed on the device)
          // made it in host memory: it leaves from there.
          continue;
        }
      }
      if (!tensors_.count(source)) {
        add(send.device, source, size_t(std::llround(std::max(0.0, send.bytes))));
      }
      send_source_[{p.index, int(k)}] = source;
    }
  }
}

DeviceValues::~DeviceValues() {
  for (auto& [device, d] : devices_) {
    d.uploads.reset();
    d.downloads.reset();
  }
}

DeviceTensor DeviceValues::add(int device, const Key& key, size_t bytes) {
  auto found = devices_.find(device);
  if (found == devices_.end()) {
    const std::string& name = plan_.platform.devices[size_t(device)].name;
    OnDevice d;
    d.memory = engine_(device).memory();
    d.pattern = pattern_table(*d.memory);
    d.uploads = std::make_unique<DeviceEngine>(name + " h2d", 1);
    d.downloads = std::make_unique<DeviceEngine>(name + " d2h", 1);
    found = devices_.emplace(device, std::move(d)).first;
  }
  const DeviceTensor t = found->second.memory->allocate(bytes);
  tensors_[key] = {device, t};
  return t;
}

DeviceTensor DeviceValues::tensor(const Key& key) const {
  auto found = tensors_.find(key);
  if (found == tensors_.end()) {
    throw std::logic_error("no device tensor for op " + std::to_string(std::get<1>(key)) +
                           " of graph " + std::to_string(std::get<0>(key)));
  }
  return found->second.second;
}

DeviceMemory* DeviceValues::memory(int device) const {
  auto found = devices_.find(device);
  return found == devices_.end() ? nullptr : found->second.memory;
}

DeviceEngine& DeviceValues::uploads(int device) const {
  return *devices_.at(device).uploads;
}
DeviceEngine& DeviceValues::downloads(int device) const {
  return *devices_.at(device).downloads;
}

bool DeviceValues::sends_from_device(int g, int send) const {
  return send_source_.count({g, send}) > 0;
}

bool DeviceValues::receives_on_device(int g, int recv) const {
  const Op& o = parts_[size_t(g)].graph->ops[size_t(recv)];
  return o.kind == OpKind::kRecv && tensors_.count({g, recv, -1}) > 0;
}

BufferPtr DeviceValues::make_gradient(int g, int op, int v, int64_t step, const Bytes* host) {
  const int device = parts_[size_t(g)].graph->ops[size_t(op)].device;
  const OnDevice& d = devices_.at(device);
  const DeviceTensor t = tensor({g, op, v});
  if (host != nullptr) {
    d.memory->upload(t, host->data(), std::min(host->size(), t.bytes));
  } else {
    fill_pattern(*d.memory, t, t.bytes / 4, d.pattern, core::gradient_offset(g, step, v, op));
  }
  if (!host_takes_[size_t(g)][size_t(op)]) return nullptr;
  return downloaded(*d.memory, t, t.bytes, t.bytes);
}

BufferPtr DeviceValues::download_sent(int g, int send, size_t bytes) {
  const Key& key = send_source_.at({g, send});
  const auto& [device, t] = tensors_.at(key);
  return downloaded(*devices_.at(device).memory, t, bytes, bytes);
}

void DeviceValues::upload_received(int g, int recv, const Bytes& data) {
  const auto& [device, t] = tensors_.at({g, recv, -1});
  devices_.at(device).memory->upload(t, data.data(), std::min(data.size(), t.bytes));
}

BufferPtr DeviceValues::peer_copy(int g, int send) {
  const int recv = parts_[size_t(g)].graph->ops[size_t(send)].peer;
  const auto& [from_device, from] = tensors_.at(send_source_.at({g, send}));
  const auto& [to_device, to] = tensors_.at({g, recv, -1});
  DeviceMemory& target = *devices_.at(to_device).memory;
  target.peer_copy(to, *devices_.at(from_device).memory, from, std::min(from.bytes, to.bytes));
  if (!host_takes_[size_t(g)][size_t(recv)]) return nullptr;
  return downloaded(target, to, to.bytes, to.bytes);
}

int DeviceValues::place_variables(core::ParameterStore& store) {
  if (plan_.optimizer.name != "sgd") return 0;
  std::map<int, int> device_of;  // variable -> the one device its reads and applies run on here
  std::set<int> from_host;       // variables an apply of which takes a gradient in host memory
  for (const Part& p : parts_) {
    const std::vector<Op>& ops = p.graph->ops;
    for (size_t k = 0; k < ops.size(); ++k) {
      const Op& o = ops[k];
      if (!p.mine[k] || (o.kind != OpKind::kReadVariable && o.kind != OpKind::kApply)) continue;
      if (o.variable <= 0 || !store.holds(o.variable)) continue;  // global_step is an int64
      auto [at, fresh] = device_of.emplace(o.variable, o.device);
      if (!fresh && at->second != o.device) at->second = -1;  // on two devices: stays on the host
      if (o.kind == OpKind::kApply && !device_gradient(p.index, int(k), o.variable)) {
        from_host.insert(o.variable);
      }
    }
  }
  int placed = 0;
  for (const auto& [v, device] : device_of) {
    if (device < 0 || engine_(device).memory() == nullptr) continue;
    const size_t bytes = 4 * core::float_count(plan_.variables[size_t(v)].bytes);
    add(device, {-1, -1, v}, bytes);
    if (from_host.count(v)) add(device, {-1, -2, v}, bytes);
    placed_[v] = device;
    store.place(v, this);
    ++placed;
  }
  return placed;
}

DeviceTensor DeviceValues::device_tensor_of(int g, int op, int v, int device) const {
  for (const Key& key : {Key{g, op, v}, Key{g, op, -1}}) {
    auto found = tensors_.find(key);
    if (found != tensors_.end() && found->second.first == device) return found->second.second;
  }
  return {};
}

bool DeviceValues::device_gradient(int g, int apply, int v) const {
  const Op& o = parts_[size_t(g)].graph->ops[size_t(apply)];
  for (int in : o.inputs) {
    if (!device_tensor_of(g, in, v, o.device)) return false;
  }
  return !o.inputs.empty();
}

void DeviceValues::load(int variable, float* values, size_t n) {
  const auto& [device, t] = tensors_.at({-1, -1, variable});
  devices_.at(device).memory->download(t, values, std::min(4 * n, t.bytes));
}

void DeviceValues::store(int variable, const float* values, size_t n) {
  const auto& [device, t] = tensors_.at({-1, -1, variable});
  devices_.at(device).memory->upload(t, values, std::min(4 * n, t.bytes));
}

void DeviceValues::apply_variable(core::ParameterStore& store, int v, int g, int in,
                                  const Bytes* host, size_t n, float rate) {
  const int device = placed_.at(v);
  DeviceMemory& memory = *devices_.at(device).memory;
  const DeviceTensor value = tensor({-1, -1, v});
  DeviceTensor gradient = in >= 0 ? device_tensor_of(g, in, v, device) : DeviceTensor{};
  if (!gradient && !tensors_.count({-1, -2, v})) {
    // A gradient in host memory where place_variables saw none coming: the update on the host's
    // copy, stored back (ParameterStore::apply through this home).
    const size_t m = host != nullptr ? std::min(n, host->size() / 4) : 0;
    store.apply(v, host != nullptr ? reinterpret_cast<const float*>(host->data()) : nullptr, m);
    return;
  }
  if (!gradient) {  // from host memory: uploaded (its first n floats count, as on the host)
    gradient = tensor({-1, -2, v});
    const size_t bytes = std::min(gradient.bytes, host != nullptr ? host->size() : 0);
    if (bytes > 0) memory.upload(gradient, host->data(), bytes);
    n = std::min(n, bytes / 4);
  }
  n = std::min({n, value.bytes / 4, gradient.bytes / 4});
  store.apply_placed(v, [&] { memory.axpy(value, -rate, gradient, n); });
}

std::vector<std::string> DeviceValues::summaries() const {
  std::vector<std::string> out;
  for (const auto& [device, d] : devices_) {
    const DeviceMemoryCounts c = d.memory->counts();
    const std::string name = d.memory->on_device() ? plan_.platform.devices[size_t(device)].name +
                                                         " on " + d.memory->name()
                                                   : d.memory->name();
    out.push_back(name + ": " + std::to_string(c.allocations) + " tensors (" +
                  megabytes(c.allocated_bytes) + ") allocated once; " + std::to_string(c.uploads) +
                  " uploads (" + megabytes(c.upload_bytes) + "), " + std::to_string(c.downloads) +
                  " downloads (" + megabytes(c.download_bytes) + "), " +
                  std::to_string(c.peer_copies) + " peer copies (" + megabytes(c.peer_bytes) +
                  "), " + std::to_string(c.device_copies) +
                  " copies within it (gradient patterns), " + std::to_string(c.updates) +
                  " SGD updates on it (axpy)");
  }
  return out;
}

}  // namespace replisim::real::detail
