// Gathering the run's trace over the transport, for nodes a cluster's launcher started (srun,
// mpirun, ssh; `replisim run` reads its nodes' files instead): at the end every node sends its
// part to the coordinator, which merges them into the run's trace (the report and
// --run-trace-out). A node a fault kills sends its part first. Each node keeps its own part file
// as well, so that `report --merge` can rebuild the run when the coordinator itself died.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/trace/trace_format.h"
#include "core/trace/trace_merge.h"
#include "real/node/runtime.h"

namespace replisim::real::detail {

namespace {

constexpr double kPartKeptWithinS = 10;  // a part's receipt, at most (then the node goes anyway)
constexpr double kGatherWithinS = 30;    // every live task's part at the coordinator, at most
constexpr size_t kMaxPartChunks = 4096;  // parts of at most 4 GiB

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && in.fail()) throw core::OutputError(path, "cannot read it back");
  return bytes;
}

}  // namespace

// This task's part (written and published) to the coordinator, in frames of at most a chunk;
// `then` runs once the coordinator has it, or kPartKeptWithinS later.
void Node::send_part(std::function<void()> then) {
  std::string bytes;
  try {
    bytes = file_bytes(options_.trace_out);
  } catch (const std::exception&) {
    then();
    return;
  }
  const uint32_t to = uint32_t(map_.coordinator_task);
  const size_t chunks =
      std::max<size_t>(1, (bytes.size() + kDefaultChunkBytes - 1) / kDefaultChunkBytes);
  auto data = std::make_shared<std::string>(std::move(bytes));
  for (size_t i = 0; i < chunks; ++i) {
    FrameHeader h;
    h.type = FrameType::kTracePart;
    h.chunk = uint32_t(i);
    h.chunks = uint32_t(chunks);
    const size_t offset = i * kDefaultChunkBytes;
    const size_t length =
        std::min<size_t>(kDefaultChunkBytes, data->size() - std::min(offset, data->size()));
    mesh_->send(to, h, reinterpret_cast<const uint8_t*>(data->data()) + offset, length, data);
  }
  auto once = std::make_shared<std::function<void()>>(std::move(then));
  after_part_kept_ = [once] {
    if (*once) std::exchange(*once, nullptr)();
  };
  auto timer = std::make_shared<asio::steady_timer>(io_);
  timer->expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kPartKeptWithinS)));
  timer->async_wait([timer, once, alive = std::weak_ptr<bool>(alive_)](const asio::error_code&) {
    if (!alive.expired() && *once) std::exchange(*once, nullptr)();
  });
}

void Node::on_part_kept() {
  if (after_part_kept_) std::exchange(after_part_kept_, nullptr)();
}

// The coordinator: a chunk of `peer`'s part; the whole part is acknowledged.
void Node::on_trace_part(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  if (h.chunks > kMaxPartChunks) throw FrameError("a trace part of more than 4 GiB");
  if (parts_in_.count(peer) > 0) throw FrameError("a second trace part");
  std::string& part = part_chunks_[peer];
  part.append(reinterpret_cast<const char*>(payload), h.length);
  if (h.chunk + 1 < h.chunks) return;
  parts_in_[peer] = std::move(part);
  part_chunks_.erase(peer);
  send_frame(peer, FrameType::kTracePartKept, -1, 0);
  if (gathering_) maybe_merge(false);
}

// The coordinator's end: once every live task's part is in (or kGatherWithinS passed), the run's
// trace; then `close`.
void Node::gather(std::function<void()> close) {
  gathering_ = true;
  gather_close_ = std::move(close);
  auto timer = std::make_shared<asio::steady_timer>(io_);
  timer->expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kGatherWithinS)));
  timer->async_wait([this, timer, alive = std::weak_ptr<bool>(alive_)](const asio::error_code&) {
    if (!alive.expired()) maybe_merge(true);
  });
  maybe_merge(false);
}

void Node::maybe_merge(bool deadline) {
  if (!gather_close_) return;
  std::vector<std::string> missing;
  for (uint32_t t = 0; t < spec_.tasks.size(); ++t) {
    if (t != self_ && live(t) && parts_in_.count(t) == 0) missing.push_back(spec_.tasks[t].name());
  }
  if (!missing.empty() && !deadline) return;
  auto close = std::exchange(gather_close_, nullptr);
  try {
    if (!missing.empty()) {
      throw core::BackendError("no trace part from task " + core::join_names(missing) + " within " +
                               std::to_string(int(kGatherWithinS)) +
                               " s: merge the nodes' files with replisim report --merge");
    }
    std::vector<core::Trace> parts;
    std::vector<std::string> sources;
    parts_in_[self_] = file_bytes(options_.trace_out);
    for (const auto& [task, bytes] : parts_in_) {
      sources.push_back("task " + spec_.tasks[task].name() + "'s part");
      std::istringstream in(bytes);
      std::vector<core::Trace> runs = core::read_traces_binary(in, sources.back());
      if (runs.size() != 1) throw core::InputError(sources.back(), "", "not one run");
      parts.push_back(std::move(runs.front()));
    }
    run_trace_ = core::merge_parts(parts, sources);
  } catch (const std::exception& e) {
    failed_ = true;
    error_line_ = describe() + ": cannot gather the run's trace: " + e.what();
  }
  close();
}

}  // namespace replisim::real::detail
