#include "real/node/collective_ops.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/base/error.h"
#include "real/node/objective_values.h"
#include "real/node/payload.h"
#include "real/transport/frame.h"

namespace replisim::real::detail {

using core::Bytes;
using core::CheckpointShard;
using core::CheckpointTensor;
using core::CollectiveResponse;
using core::float_count;
using core::Op;
using core::OpKind;
using core::ParameterStore;

namespace {

constexpr int kMaxRanks = 1 << 16;
constexpr int kMaxChannels = 1 << 6;
constexpr int kMaxSteps = 1 << 13;

}  // namespace

uint64_t collective_chunk_tag(const core::CollectiveChunk& c) {
  if (c.from < 0 || c.from >= kMaxRanks || c.to < 0 || c.to >= kMaxRanks || c.channel < 0 ||
      c.channel >= kMaxChannels || c.step < 0 || c.step >= kMaxSteps || c.recv_step < 0 ||
      c.recv_step >= kMaxSteps) {
    throw std::logic_error("a collective chunk beyond the frame's fields: rank " +
                           std::to_string(c.from) + " to " + std::to_string(c.to) + ", channel " +
                           std::to_string(c.channel) + ", steps " + std::to_string(c.step) +
                           " and " + std::to_string(c.recv_step));
  }
  return (uint64_t(c.from) << 48) | (uint64_t(c.to) << 32) | (uint64_t(c.channel) << 26) |
         (uint64_t(c.step) << 13) | uint64_t(c.recv_step);
}

core::CollectiveChunk collective_chunk_of_tag(int64_t id, uint64_t tag) {
  core::CollectiveChunk c;
  c.id = id;
  c.from = int(tag >> 48);
  c.to = int((tag >> 32) & 0xFFFFu);
  c.channel = int((tag >> 26) & 0x3Fu);
  c.step = int((tag >> 13) & 0x1FFFu);
  c.recv_step = int(tag & 0x1FFFu);
  return c;
}

CollectiveOps::CollectiveOps(Host& host, Setup setup, core::ClientLoop& loop,
                             std::vector<Part>& parts)
    : host_(host), setup_(setup), plan_(*setup.plan), loop_(loop), parts_(parts) {
  for (int c : plan_.collective.ranks) {
    task_of_rank_.push_back(
        uint32_t(setup_.map->task_of_role[size_t(plan_.clients[size_t(c)].role)]));
  }
  if (!task_of_rank_.empty()) coordinator_task_ = task_of_rank_.front();
  for (const Part& p : parts_) {
    std::vector<int> ops;
    for (size_t k = 0; k < p.graph->ops.size(); ++k) {
      if (p.graph->ops[k].kind == OpKind::kAllReduce) ops.push_back(int(k));
    }
    allreduce_ops_.push_back(std::move(ops));
  }
}

uint32_t CollectiveOps::task_of_rank(int rank) const {
  return task_of_rank_[size_t(rank)];
}

void CollectiveOps::own_frames(FrameRouter& router) {
  router.own(channel::kCollectiveReady,
             [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
               if (!host_.stopping()) on_ready(peer, h);
             });
  router.own(channel::kCollectiveResponse,
             [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
               if (!host_.stopping()) on_response(peer, h, payload);
             });
  router.own(
      channel::kCollectiveChunk,
      [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
        if (!host_.stopping()) on_chunk(peer, h, payload);
      },
      /*chunked=*/true);
  router.own(
      channel::kElasticSync,
      [this](uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
        if (!host_.stopping()) on_sync(peer, h, payload);
      },
      /*chunked=*/true);
  router.own(channel::kElasticSynced, [this](uint32_t peer, const FrameHeader& h, const uint8_t*) {
    if (host_.stopping()) return;
    channel::require(h, setup_.self == coordinator_task_, "to a task that is not rank 0's");
    channel::require(h, h.step > 0 && uint64_t(h.step) <= sync_round_, "answering no sync sent");
    // An answer to an earlier round's sync (a death came after it was sent) leaves the peer
    // waiting for the latest round's.
    if (uint64_t(h.step) == sync_round_) unsynced_.erase(peer);
  });
}

void CollectiveOps::open(core::TraceRecorder& recorder) {
  std::vector<int> local;
  for (size_t r = 0; r < task_of_rank_.size(); ++r) {
    if (task_of_rank_[r] == setup_.self) local.push_back(int(r));
  }
  recorder_ = &recorder;
  collectives_.emplace(plan_, *this, &recorder, local, coordinator_task_ == setup_.self);
}

void CollectiveOps::ready(int g, int op) {
  if (!collectives_) throw std::logic_error("an all-reduce op on a task without collectives");
  // Rank 0's first commit (elastic): its state as its first step began, taken at the step's first
  // all-reduce (no apply of the step can come before it). The others follow each step's end.
  if (!commit_.taken) step_done(g, parts_[size_t(g)].step);
  collectives_->ready(g, op, parts_[size_t(g)].step);
}

void CollectiveOps::step_done(int g, int64_t steps_done) {
  if (!plan_.collective.elastic || g != plan_.collective.ranks.front() ||
      host_.store() == nullptr) {
    return;
  }
  ParameterStore& store = *host_.store();
  commit_ = {true, steps_done, store.global_step,
             store.snapshot(host_.plan_hash(), store.global_step)};
}

void CollectiveOps::task_died(uint32_t task) {
  if (!collectives_) return;
  bool died = false;
  double resume_s = 0;
  for (size_t r = 0; r < task_of_rank_.size(); ++r) {
    if (task_of_rank_[r] == task && collectives_->rank_alive(int(r))) {
      resume_s = std::max(resume_s, collectives_->rank_died(int(r)));
      died = true;
    }
  }
  if (!died) return;  // known dead already (a sync named it)
  for (auto it = incoming_.begin(); it != incoming_.end();) {  // the dead task's, half received
    it = std::get<0>(it->first) == task ? incoming_.erase(it) : std::next(it);
  }
  roll_back_local();
  if (coordinator_task_ != setup_.self) {
    // Until rank 0's task sends the commit, what the coordinator formed before it knew of the
    // death is stale: its responses are dropped here (chunks wait: they may be of the new
    // attempt, sent by a survivor synced first).
    awaiting_sync_ = true;
    return;
  }
  // Nothing formed here from now until the sync is of the failed attempt.
  forget_below(collectives_->next_id());
  unsynced_.clear();
  for (size_t r = 0; r < task_of_rank_.size(); ++r) {
    if (collectives_->rank_alive(int(r)) && task_of_rank_[r] != setup_.self) {
      unsynced_.insert(task_of_rank_[r]);
    }
  }
  const uint64_t round = ++sync_round_;
  at(resume_s, [this, round] {
    if (round != sync_round_) return;
    // The restore waits for the failed attempt's applies here (rendezvous 0: some may run).
    host_.after_step_work([this, round, alive = std::weak_ptr<bool>(alive_)] {
      if (alive.expired() || host_.stopping() || round != sync_round_) return;
      send_sync();
    });
  });
}

// Every local rank's step in progress fails (Horovod raises HorovodInternalError in it); work
// posted for it is dropped.
void CollectiveOps::roll_back_local() {
  ++epoch_;
  for (size_t r = 0; r < task_of_rank_.size(); ++r) {
    if (task_of_rank_[r] == setup_.self && collectives_->rank_alive(int(r))) {
      host_.roll_back_client(plan_.collective.ranks[r]);
    }
  }
}

// Collectives below `first_id` are of a failed attempt: their buffers, chunks and late frames go.
void CollectiveOps::forget_below(int64_t first_id) {
  collectives_->roll_back(first_id);
  abandoned_below_ = std::max(abandoned_below_, first_id);
  next_id_ = std::max(next_id_, first_id);
  for (auto it = buffers_.begin(); it != buffers_.end();) {
    it = it->first.first < first_id ? buffers_.erase(it) : std::next(it);
  }
  for (auto it = received_.begin(); it != received_.end();) {
    it = std::get<0>(it->first) < first_id ? received_.erase(it) : std::next(it);
  }
  for (auto it = responses_.begin(); it != responses_.end();) {
    it = it->first < first_id ? responses_.erase(it) : std::next(it);
  }
  for (auto it = local_left_.begin(); it != local_left_.end();) {
    it = it->first < first_id ? local_left_.erase(it) : std::next(it);
  }
}

// Rank 0's task at the rendezvous's end: it restores its commit (the state when its step in
// progress began) and sends it to every survivor's task (Horovod's state.sync(), a broadcast from
// rank 0), then trains again from the commit's step.
void CollectiveOps::send_sync() {
  const int root = plan_.collective.ranks.front();
  ParameterStore* store = host_.store();
  if (!commit_.taken && store != nullptr) {  // died before rank 0's first all-reduce: as it is
    commit_ = {true, loop_.client(root).step, store->global_step,
               store->snapshot(host_.plan_hash(), store->global_step)};
  }
  const int64_t first_id = collectives_->next_id();
  forget_below(first_id);
  if (store != nullptr) {
    store->restore(commit_.state);
    store->global_step = commit_.global_step;
  }
  nlohmann::json head = {{"first_id", first_id},
                         {"steps", commit_.steps},
                         {"global_step", commit_.global_step},
                         {"dead", nlohmann::json::array()},
                         {"tensors", nlohmann::json::array()}};
  for (size_t r = 0; r < task_of_rank_.size(); ++r) {
    if (!collectives_->rank_alive(int(r))) head["dead"].push_back(r);
  }
  size_t floats = 0;
  for (const CheckpointTensor& t : commit_.state.tensors) {
    head["tensors"].push_back({{"name", t.name},
                               {"variable", t.variable},
                               {"slot", t.slot},
                               {"applies", t.applies},
                               {"floats", t.values.size()}});
    floats += t.values.size();
  }
  const std::string text = head.dump();
  auto message = std::make_shared<Bytes>(8 + text.size() + 4 * floats);
  const std::string length = pack_i64({int64_t(text.size())});
  std::memcpy(message->data(), length.data(), 8);
  std::memcpy(message->data() + 8, text.data(), text.size());
  size_t at = 8 + text.size();
  for (const CheckpointTensor& t : commit_.state.tensors) {
    if (t.values.empty()) continue;
    std::memcpy(message->data() + at, t.values.data(), 4 * t.values.size());
    at += 4 * t.values.size();
  }
  const size_t bytes = message->size();
  const size_t frames = (bytes + kDefaultChunkBytes - 1) / kDefaultChunkBytes;
  for (uint32_t task : unsynced_) {
    const int slot = host_.next_slot(task);
    for (size_t i = 0; i < frames; ++i) {
      FrameHeader h;
      h.type = channel::kElasticSync;
      h.step = int64_t(sync_round_);
      h.chunk = uint32_t(i);
      h.chunks = uint32_t(frames);
      h.time_s = host_.now_s();
      const size_t offset = i * kDefaultChunkBytes;
      host_.send_chunk(task, h, message->data() + offset,
                       std::min<size_t>(kDefaultChunkBytes, bytes - offset), message, {}, slot);
    }
  }
  for (size_t r = 0; r < task_of_rank_.size(); ++r) {
    if (task_of_rank_[r] == setup_.self && collectives_->rank_alive(int(r))) {
      host_.resume_client(plan_.collective.ranks[r], int(commit_.steps), commit_.global_step);
    }
  }
}

void CollectiveOps::on_sync(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  channel::require(h, peer == coordinator_task_ && setup_.self != coordinator_task_,
                   "not from rank 0's task");
  channel::require(h, h.step > 0, "of no round");
  const auto key = std::make_pair(peer, h.step);
  std::shared_ptr<Bytes>& in = sync_in_[key];
  if (h.chunk == 0) {
    in = std::make_shared<Bytes>();
  } else if (!in) {
    sync_in_.erase(key);
    throw FrameError("an elastic sync without its first chunk");
  }
  in->insert(in->end(), payload, payload + h.length);
  if (h.chunk + 1 < h.chunks) return;
  const std::shared_ptr<Bytes> message = std::move(in);
  sync_in_.erase(key);
  take_sync(*message, h.step);
}

// A survivor's task takes rank 0's commit: the deaths it names (some perhaps not seen here yet),
// the rollback, the values, then its ranks train again from the commit's step.
void CollectiveOps::take_sync(const Bytes& message, int64_t round) {
  nlohmann::json head;
  std::vector<CheckpointTensor> tensors;
  const uint8_t* values = nullptr;
  try {
    if (message.size() < 8) throw std::runtime_error("shorter than its length");
    const int64_t length = unpack_i64(message.data(), 8, 0);
    if (length < 0 || uint64_t(length) > message.size() - 8) {
      throw std::runtime_error("a JSON length past its end");
    }
    head = nlohmann::json::parse(message.data() + 8, message.data() + 8 + length);
    size_t floats = 0;
    for (const nlohmann::json& t : head.at("tensors")) {
      CheckpointTensor tensor;
      tensor.name = t.at("name").get<std::string>();
      tensor.variable = t.at("variable").get<int32_t>();
      tensor.slot = t.at("slot").get<uint32_t>();
      tensor.applies = t.at("applies").get<int64_t>();
      tensor.values.resize(t.at("floats").get<size_t>());
      floats += tensor.values.size();
      tensors.push_back(std::move(tensor));
    }
    if (message.size() - 8 - size_t(length) != 4 * floats) {
      throw std::runtime_error("values of another size than its tensors'");
    }
    values = message.data() + 8 + length;
    for (const nlohmann::json& r : head.at("dead")) {
      if (r.get<size_t>() >= task_of_rank_.size()) throw std::runtime_error("a dead rank unknown");
    }
    if (head.at("first_id").get<int64_t>() < 0 || head.at("steps").get<int64_t>() < 0 ||
        head.at("steps").get<int64_t>() > plan_.steps) {
      throw std::runtime_error("a first id or steps out of range");
    }
  } catch (const std::exception& e) {
    throw FrameError(std::string("an elastic sync that is not rank 0's commit: ") + e.what());
  }
  for (const nlohmann::json& r : head.at("dead")) {
    const int rank = r.get<int>();
    if (collectives_->rank_alive(rank)) collectives_->rank_died(rank);
  }
  roll_back_local();
  forget_below(head.at("first_id").get<int64_t>());
  awaiting_sync_ = false;
  const int64_t steps = head.at("steps").get<int64_t>();
  const int64_t global_step = head.at("global_step").get<int64_t>();
  auto state = std::make_shared<CheckpointShard>();
  ParameterStore* store = host_.store();
  if (store != nullptr) {
    state->plan_hash = host_.plan_hash();
    state->global_step = global_step;
    size_t at = 0;
    for (CheckpointTensor& t : tensors) {
      if (!t.values.empty()) std::memcpy(t.values.data(), values + at, 4 * t.values.size());
      at += 4 * t.values.size();
      state->tensors.push_back(std::move(t));
    }
    try {
      store->restore(*state);
    } catch (const std::exception& e) {
      throw FrameError(std::string("an elastic sync of another model: ") + e.what());
    }
    store->global_step = global_step;
  }
  // The ranks resume once the failed attempt's applies here are over; one that ended after the
  // restore above is undone by a second.
  auto at_once = std::make_shared<bool>(true);
  host_.after_step_work([this, epoch = epoch_, round, steps, global_step, state, store, at_once,
                         alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired() || host_.stopping() || epoch != epoch_) return;  // rolled back again
    if (store != nullptr && !*at_once) {
      store->restore(*state);
      store->global_step = global_step;
    }
    // Before any readiness of the new attempt (one connection keeps the order); the round says
    // which sync it took.
    host_.send_frame(coordinator_task_, channel::kElasticSynced, round, 0, {});
    for (size_t r = 0; r < task_of_rank_.size(); ++r) {
      if (task_of_rank_[r] == setup_.self && collectives_->rank_alive(int(r))) {
        host_.resume_client(plan_.collective.ranks[r], int(steps), global_step);
      }
    }
  });
  *at_once = false;
}

void CollectiveOps::post_in_attempt(std::function<void()> work) {
  host_.post([this, epoch = epoch_, work = std::move(work), alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired() || host_.stopping() || epoch != epoch_) return;
    work();
  });
}

std::string CollectiveOps::waiting_for() const {
  return collectives_ ? collectives_->waiting_for() : std::string();
}

void CollectiveOps::at(double at_s, std::function<void()> work) {
  host_.at_run_time(at_s, [this, work = std::move(work), alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired() || host_.stopping()) return;
    work();
  });
}

// --- Negotiation: readiness to rank 0's task, its responses to every rank's ---------------------

void CollectiveOps::tell_coordinator(int rank, int64_t step, int tensor) {
  if (coordinator_task_ == setup_.self) {
    post_in_attempt(
        [this, rank, step, tensor] { collectives_->coordinator_ready(rank, step, tensor); });
    return;
  }
  host_.send_frame(coordinator_task_, channel::kCollectiveReady, step,
                   (uint64_t(rank) << 32) | uint64_t(uint32_t(tensor)), {});
}

void CollectiveOps::on_ready(uint32_t peer, const FrameHeader& h) {
  channel::require(h, setup_.self == coordinator_task_, "to a task that is not rank 0's");
  const uint64_t rank = h.tensor >> 32;
  const uint64_t tensor = h.tensor & 0xFFFFFFFFu;
  channel::require(h, rank < task_of_rank_.size() && task_of_rank_[size_t(rank)] == peer,
                   "for a rank the sender does not run");
  const int g = plan_.collective.ranks[size_t(rank)];
  channel::require(h, tensor < allreduce_ops_[size_t(g)].size() && h.step >= 0,
                   "naming no all-reduce tensor of the rank's step");
  if (unsynced_.count(peer) > 0) return;  // of the attempt a death failed (elastic)
  collectives_->coordinator_ready(int(rank), h.step, int(tensor));
}

void CollectiveOps::announce(const CollectiveResponse& r) {
  std::string payload = pack_f64({r.bytes, r.formed_s}) + pack_i64({int64_t(r.tensors.size())});
  for (int t : r.tensors) payload += pack_i64({t});
  payload += pack_i64({int64_t(r.ranks.size())});
  for (int rank : r.ranks) payload += pack_i64({rank});
  std::set<uint32_t> tasks;
  for (int rank : r.ranks) tasks.insert(task_of_rank(rank));
  for (uint32_t t : tasks) {
    if (t == setup_.self) {
      post_in_attempt([this, r] { start(r); });
    } else {
      host_.send_frame(t, channel::kCollectiveResponse, r.step, uint64_t(r.id), payload);
    }
  }
}

void CollectiveOps::on_response(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  channel::require(h, peer == coordinator_task_, "not from rank 0's task");
  if (awaiting_sync_) return;  // formed before the coordinator knew of a death known here
  CollectiveResponse r;
  r.id = int64_t(h.tensor);
  r.step = h.step;
  r.bytes = unpack_f64(payload, h.length, 0);
  r.formed_s = unpack_f64(payload, h.length, 1);
  size_t at = 2;
  const int64_t tensors = unpack_i64(payload, h.length, at++);
  channel::require(h, tensors > 0 && size_t(tensors) <= h.length / 8, "of a bad tensor count");
  const size_t known = allreduce_ops_.empty() ? 0 : allreduce_ops_.front().size();
  for (int64_t i = 0; i < tensors; ++i) {
    const int64_t t = unpack_i64(payload, h.length, at++);
    channel::require(h, t >= 0 && size_t(t) < known, "naming no all-reduce tensor");
    r.tensors.push_back(int(t));
  }
  const int64_t ranks = unpack_i64(payload, h.length, at++);
  channel::require(h, ranks > 0 && size_t(ranks) <= task_of_rank_.size(), "of a bad rank count");
  bool here = false;
  for (int64_t i = 0; i < ranks; ++i) {
    const int64_t rank = unpack_i64(payload, h.length, at++);
    channel::require(h, rank >= 0 && size_t(rank) < task_of_rank_.size(), "naming no rank");
    here |= task_of_rank_[size_t(rank)] == setup_.self;
    r.ranks.push_back(int(rank));
  }
  channel::require(h, here && r.id >= 0 && responses_.count(r.id) == 0 && r.id >= next_id_,
                   "to a task with no rank in it, or a second time");
  next_id_ = r.id + 1;
  start(r);
}

void CollectiveOps::start(const CollectiveResponse& r) {
  max_id_seen_ = std::max(max_id_seen_, r.id);
  responses_[r.id] = r;
  int here = 0;
  for (int rank : r.ranks) here += task_of_rank(rank) == setup_.self;
  local_left_[r.id] = here;
  collectives_->start(r);
}

// --- Chunks: values out, values in, in program order --------------------------------------------

const core::CollectiveProgram& CollectiveOps::program_of(const CollectiveResponse& r) {
  return collectives_->program_for(r.ranks);
}

const core::CollectiveStep& CollectiveOps::program_step(const CollectiveResponse& r, int rank,
                                                        int channel, int step) {
  const core::CollectiveProgram& program = program_of(r);
  const auto at = std::find(r.ranks.begin(), r.ranks.end(), rank);
  const size_t position = size_t(at - r.ranks.begin());
  if (at == r.ranks.end() || position >= program.steps.size() || channel < 0 ||
      size_t(channel) >= program.steps[position].size() || step < 0 ||
      size_t(step) >= program.steps[position][size_t(channel)].size()) {
    throw std::logic_error("no step " + std::to_string(step) + " of rank " + std::to_string(rank) +
                           "'s channel " + std::to_string(channel) + " in collective " +
                           std::to_string(r.id));
  }
  return program.steps[position][size_t(channel)][size_t(step)];
}

std::pair<int64_t, int64_t> CollectiveOps::step_range(const core::CollectiveProgram& program,
                                                      int64_t elements, int first,
                                                      int count) const {
  return {core::collective_chunk(elements, program.chunks, first).first,
          core::collective_chunk(elements, program.chunks, first + count - 1).second};
}

// The rank's fused buffer: its gradients for the response's tensors, in the response's order.
CollectiveOps::Buffer& CollectiveOps::buffer(const CollectiveResponse& r, int rank) {
  auto found = buffers_.find({r.id, rank});
  if (found != buffers_.end()) return found->second;
  const int g = plan_.collective.ranks[size_t(rank)];
  const Part& p = parts_[size_t(g)];
  if (!p.active || p.step != r.step) {
    throw std::logic_error("rank " + std::to_string(rank) + " reduces step " +
                           std::to_string(r.step) + " outside it");
  }
  Buffer b;
  int64_t elements = 0;
  for (int t : r.tensors) {
    b.offset.push_back(elements);
    const Op& op = p.graph->ops[size_t(allreduce_ops_[size_t(g)][size_t(t)])];
    elements += int64_t(float_count(op.bytes));
  }
  b.values.assign(size_t(elements), 0.0f);
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const Op& op = p.graph->ops[size_t(allreduce_ops_[size_t(g)][size_t(r.tensors[i])])];
    BufferPtr gradient;
    for (int in : op.inputs) {
      if ((gradient = value_for(p, in, op.variable))) break;
    }
    if (!gradient) continue;  // no values: zeros of the op's bytes, as a send pads
    const size_t n = std::min(float_count(op.bytes), gradient->size() / 4);
    std::memcpy(b.values.data() + b.offset[i], gradient->data(), 4 * n);
  }
  return buffers_.emplace(std::make_pair(r.id, rank), std::move(b)).first->second;
}

void CollectiveOps::send_chunk(const CollectiveResponse& r, const core::CollectiveChunk& chunk) {
  // The values as they are after the sender's previous step.
  const Buffer& b = buffer(r, chunk.from);
  const core::CollectiveStep& s = program_step(r, chunk.from, chunk.channel, chunk.step);
  const auto [first, end] =
      step_range(program_of(r), int64_t(b.values.size()), s.send_first, s.chunk_count);
  auto data = std::make_shared<Bytes>(size_t(4 * (end - first)));
  if (end > first) std::memcpy(data->data(), b.values.data() + first, data->size());
  const double start_s = host_.now_s();
  const uint32_t peer = task_of_rank(chunk.to);
  if (peer == setup_.self) {  // both ranks here: no bytes cross the network
    post_in_attempt([this, chunk, data, start_s] {
      collectives_->sent(chunk);
      chunk_in(chunk, {data, chunk.from, start_s, host_.now_s()});
    });
    return;
  }
  const uint64_t tag = collective_chunk_tag(chunk);
  const size_t bytes = data->size();
  const size_t frames = std::max<size_t>(1, (bytes + kDefaultChunkBytes - 1) / kDefaultChunkBytes);
  const int slot = host_.next_slot(peer);
  for (size_t i = 0; i < frames; ++i) {
    FrameHeader h;
    h.type = channel::kCollectiveChunk;
    h.step = chunk.id;
    h.tensor = tag;
    h.chunk = uint32_t(i);
    h.chunks = uint32_t(frames);
    h.time_s = start_s;
    const size_t offset = i * kDefaultChunkBytes;
    const size_t length = std::min<size_t>(kDefaultChunkBytes, bytes - std::min(bytes, offset));
    std::function<void()> written;
    if (i + 1 == frames) {
      written = [this, chunk, alive = std::weak_ptr<bool>(alive_)] {
        if (alive.expired() || host_.stopping()) return;
        collectives_->sent(chunk);
      };
    }
    host_.send_chunk(peer, h, data->data() + offset, length, data, std::move(written), slot);
  }
}

void CollectiveOps::on_chunk(uint32_t peer, const FrameHeader& h, const uint8_t* payload) {
  channel::require(h, h.step >= 0, "of no collective");
  const core::CollectiveChunk chunk = collective_chunk_of_tag(h.step, h.tensor);
  channel::require(
      h,
      size_t(chunk.from) < task_of_rank_.size() && task_of_rank_[size_t(chunk.from)] == peer &&
          size_t(chunk.to) < task_of_rank_.size() && task_of_rank_[size_t(chunk.to)] == setup_.self,
      "from a rank the sender does not run, or to one not here");
  const auto key = std::make_tuple(peer, h.step, h.tensor);
  Received& in = incoming_[key];
  if (h.chunk == 0) {
    in = {std::make_shared<Bytes>(), chunk.from, h.time_s, 0};
  } else if (!in.data) {
    incoming_.erase(key);
    throw FrameError("a collective chunk without its first");
  }
  in.data->insert(in.data->end(), payload, payload + h.length);
  if (h.chunk + 1 < h.chunks) return;
  Received whole = std::move(in);
  incoming_.erase(key);
  whole.start_s = std::min(whole.start_s, host_.now_s());
  whole.end_s = host_.now_s();
  chunk_in(chunk, std::move(whole));
}

// Kept until the receiving rank's step takes it (apply_chunk); Collectives holds the arrival
// until its response is announced here.
void CollectiveOps::chunk_in(const core::CollectiveChunk& chunk, Received in) {
  if (chunk.id < abandoned_below_) return;  // of a collective a death abandoned
  max_id_seen_ = std::max(max_id_seen_, chunk.id);
  received_[{chunk.id, chunk.to, chunk.channel, chunk.recv_step}] = std::move(in);
  collectives_->arrived(chunk);
}

void CollectiveOps::apply_chunk(const CollectiveResponse& r, int rank, int channel, int step) {
  const auto found = received_.find({r.id, rank, channel, step});
  if (found == received_.end()) {
    throw std::logic_error("rank " + std::to_string(rank) + " applies a chunk it did not receive");
  }
  const Received in = std::move(found->second);
  received_.erase(found);
  Buffer& b = buffer(r, rank);
  const core::CollectiveStep& s = program_step(r, rank, channel, step);
  const auto [first, end] =
      step_range(program_of(r), int64_t(b.values.size()), s.recv_first, s.chunk_count);
  if (in.data->size() != size_t(4 * (end - first))) {
    throw FrameError("a collective chunk of " + std::to_string(in.data->size()) + " bytes where " +
                     std::to_string(4 * (end - first)) + " were due");
  }
  const float* values = reinterpret_cast<const float*>(in.data->data());
  float* out = b.values.data() + first;
  const int64_t n = end - first;
  if (s.reduce) {
    for (int64_t i = 0; i < n; ++i) out[i] += values[i];
  } else if (n > 0) {
    std::memcpy(out, values, size_t(4 * n));
  }
  // The chunk's transfer, in the receiver's trace as a tensor's is.
  const int from_graph = plan_.collective.ranks[size_t(in.from)];
  const int op = allreduce_ops_[size_t(from_graph)][size_t(r.tensors.front())];
  recorder_->collective_transfer(from_graph, op, plan_.collective.ranks[size_t(rank)], r.step,
                                 double(in.data->size()), in.start_s,
                                 std::max(in.start_s, in.end_s),
                                 (int64_t(setup_.self) << 40) | next_message_++, "");
}

// The rank's sums divided by the ranks taking part; its tensors' ops complete with them.
void CollectiveOps::reduced(int rank, const CollectiveResponse& r) {
  Buffer& b = buffer(r, rank);
  const float ranks = float(std::max<size_t>(1, r.ranks.size()));
  const int g = plan_.collective.ranks[size_t(rank)];
  const core::ClientGraph& graph = *parts_[size_t(g)].graph;
  std::vector<std::pair<int, BufferPtr>> done;
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const int op = allreduce_ops_[size_t(g)][size_t(r.tensors[i])];
    const Op& o = graph.ops[size_t(op)];
    const size_t variable_floats = objective_
                                       ? objective_->layout().tensor_floats(o.variable)
                                       : float_count(plan_.variables[size_t(o.variable)].bytes);
    const size_t n = std::min(variable_floats, float_count(o.bytes));
    auto mean = std::make_shared<Bytes>(4 * n);
    float* out = reinterpret_cast<float*>(mean->data());
    const float* sum = b.values.data() + b.offset[i];
    for (size_t k = 0; k < n; ++k) out[k] = sum[k] / ranks;
    done.emplace_back(op, std::move(mean));
  }
  buffers_.erase({r.id, rank});
  if (--local_left_[r.id] <= 0) {
    local_left_.erase(r.id);
    responses_.erase(r.id);
  }
  // Completed after Collectives returns (the loop may dispatch the next step's all-reduce).
  post_in_attempt([this, g, step = r.step, done = std::move(done)] {
    Part& p = parts_[size_t(g)];
    if (!p.active || p.step != step) return;
    for (const auto& [op, mean] : done) p.out[size_t(op)] = mean;
    for (const auto& [op, mean] : done) loop_.complete(g, op);
  });
}

}  // namespace replisim::real::detail
