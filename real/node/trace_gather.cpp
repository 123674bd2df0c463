#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "core/backend/backend.h"
#include "core/base/error.h"
#include "core/base/json_cursor.h"
#include "core/trace/trace_format.h"
#include "core/trace/trace_merge.h"
#include "real/node/trace_gather.h"

namespace replisim::real::detail {

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && in.fail()) throw core::OutputError(path, "cannot read it back");
  return bytes;
}

}  // namespace

TraceGather::TraceGather(Host& host, const ClusterSpec& spec, uint32_t self, uint32_t coordinator,
                         std::string part_file)
    : host_(host),
      spec_(spec),
      self_(self),
      coordinator_(coordinator),
      part_file_(std::move(part_file)) {}

void TraceGather::own_frames(FrameRouter& router) {
  router.own(
      channel::kTracePart,
      [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
        if (self_ != coordinator_) {
          throw FrameError(channel::name(h.type) +
                           " frame to a task that is not the "
                           "coordinator");
        }
        on_trace_part(peer, h, payload);
      },
      /*chunked=*/true);
  router.own(channel::kTracePartKept,
             [this](uint32_t peer, const FrameHeader&, const uint8_t*) { on_part_kept(peer); });
}

void TraceGather::send_part(std::function<void()> then) {
  std::string bytes;
  try {
    bytes = file_bytes(part_file_);
  } catch (const std::exception&) {
    then();
    return;
  }
  const uint32_t to = coordinator_;
  const size_t chunks =
      std::max<size_t>(1, (bytes.size() + kDefaultChunkBytes - 1) / kDefaultChunkBytes);
  auto data = std::make_shared<std::string>(std::move(bytes));
  for (size_t i = 0; i < chunks; ++i) {
    FrameHeader h;
    h.type = channel::kTracePart;
    h.chunk = uint32_t(i);
    h.chunks = uint32_t(chunks);
    const size_t offset = i * kDefaultChunkBytes;
    const size_t length =
        std::min<size_t>(kDefaultChunkBytes, data->size() - std::min(offset, data->size()));
    host_.send(to, h, reinterpret_cast<const uint8_t*>(data->data()) + offset, length, data);
  }
  auto once = std::make_shared<std::function<void()>>(std::move(then));
  after_part_kept_ = [once] {
    if (*once) std::exchange(*once, nullptr)();
  };
  host_.timer(kPartKeptWithinS, [once] {
    if (*once) std::exchange(*once, nullptr)();
  });
}

void TraceGather::on_part_kept(uint32_t peer) {
  if (peer != coordinator_) {
    throw FrameError(channel::name(channel::kTracePartKept) + " frame not from the coordinator");
  }
  if (after_part_kept_) std::exchange(after_part_kept_, nullptr)();
}

// The coordinator: a chunk of `peer`'s part; the whole part is acknowledged.
void TraceGather::on_trace_part(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  if (h.chunks > kMaxPartChunks) throw FrameError("a trace part of more than 4 GiB");
  if (parts_in_.count(peer) > 0) throw FrameError("a second trace part");
  // The chunks come in order, each announcing the same count (send_part).
  Incoming& part = part_chunks_[peer];
  if (h.chunk != part.next || (part.next > 0 && h.chunks != part.chunks)) {
    throw FrameError("trace part chunk " + std::to_string(h.chunk) + " of " +
                     std::to_string(h.chunks) + " where chunk " + std::to_string(part.next) +
                     (part.next > 0 ? " of " + std::to_string(part.chunks) : std::string()) +
                     " was due");
  }
  part.chunks = h.chunks;
  ++part.next;
  part.bytes.append(reinterpret_cast<const char*>(payload), h.length);
  if (part.next < part.chunks) return;
  parts_in_[peer] = std::move(part.bytes);
  part_chunks_.erase(peer);
  FrameHeader kept;
  kept.type = channel::kTracePartKept;
  host_.send(peer, kept, nullptr, 0, nullptr);
  if (gathering_) maybe_merge(false);
}

void TraceGather::gather(std::function<void()> close) {
  gathering_ = true;
  gather_close_ = std::move(close);
  host_.timer(kGatherWithinS, [this] { maybe_merge(true); });
  maybe_merge(false);
}

void TraceGather::maybe_merge(bool deadline) {
  if (!gather_close_) return;
  std::vector<std::string> missing;
  for (uint32_t t = 0; t < spec_.tasks.size(); ++t) {
    if (t != self_ && host_.live(t) && parts_in_.count(t) == 0) {
      missing.push_back(spec_.tasks[t].name());
    }
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
    parts_in_[self_] = file_bytes(part_file_);
    for (const auto& [task, bytes] : parts_in_) {
      sources.push_back("task " + spec_.tasks[task].name() + "'s part");
      std::istringstream in(bytes);
      std::vector<core::Trace> runs = core::read_traces_binary(in, sources.back());
      if (runs.size() != 1) throw core::InputError(sources.back(), "", "not one run");
      parts.push_back(std::move(runs.front()));
    }
    run_trace_ = core::merge_parts(parts, sources);
  } catch (const std::exception& e) {
    host_.gather_failed(std::string("cannot gather the run's trace: ") + e.what());
  }
  close();
}

}  // namespace replisim::real::detail
