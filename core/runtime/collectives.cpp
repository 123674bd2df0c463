#include "core/runtime/collectives.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/base/error.h"

namespace replisim::core {

namespace {

int wrap(int i, int n) {
  return ((i % n) + n) % n;
}

// A ring among `members` (ranks, in ring order) on `channel`: reduce-scatter (`reduce`) or
// all-gather steps over `shards` of `shard_chunks` chunks each, shard s starting at chunk
// base[s]. Reduce-scatter: member j sends shard (j - k) and receives shard (j - k - 1), so member
// j ends holding shard (j + 1) whole; all-gather: it sends shard (j + 1 - k), receives (j - k).
void add_ring_steps(CollectiveProgram& program, int channel, const std::vector<int>& members,
                    const std::vector<int>& base, int shard_chunks, bool reduce, uint8_t phase) {
  const int n = int(members.size());
  for (int k = 0; k + 1 < n; ++k) {
    for (int j = 0; j < n; ++j) {
      CollectiveStep s;
      s.send_to = members[size_t(wrap(j + 1, n))];
      s.recv_from = members[size_t(wrap(j - 1, n))];
      s.send_first = base[size_t(wrap(reduce ? j - k : j + 1 - k, n))];
      s.recv_first = base[size_t(wrap(reduce ? j - k - 1 : j - k, n))];
      s.chunk_count = shard_chunks;
      s.reduce = reduce;
      s.phase = phase;
      program.steps[size_t(members[size_t(j)])][size_t(channel)].push_back(s);
    }
  }
}

CollectiveProgram empty_program(int ranks, int chunks, int channels) {
  CollectiveProgram p;
  p.chunks = chunks;
  p.channels = channels;
  p.steps.assign(size_t(ranks), std::vector<std::vector<CollectiveStep>>(size_t(channels)));
  return p;
}

// Each send's receiving step: the k-th send from a to b on a channel is the k-th receive at b
// from a on it. Throws InternalError when the program's sends and receives do not pair.
void pair_steps(CollectiveProgram& program) {
  const size_t ranks = program.steps.size();
  for (int channel = 0; channel < program.channels; ++channel) {
    std::map<std::pair<int, int>, std::vector<int>> receives;  // (from, to) -> steps at `to`
    for (size_t to = 0; to < ranks; ++to) {
      const auto& steps = program.steps[to][size_t(channel)];
      for (size_t k = 0; k < steps.size(); ++k) {
        if (steps[k].recv_from >= 0) receives[{steps[k].recv_from, int(to)}].push_back(int(k));
      }
    }
    std::map<std::pair<int, int>, size_t> used;
    for (size_t from = 0; from < ranks; ++from) {
      auto& steps = program.steps[from][size_t(channel)];
      for (CollectiveStep& s : steps) {
        if (s.send_to < 0) continue;
        const std::pair<int, int> key{int(from), s.send_to};
        const size_t i = used[key]++;
        auto found = receives.find(key);
        REPLISIM_ASSERT(found != receives.end() && i < found->second.size(),
                        "a collective program's send has no receive");
        s.peer_step = found->second[i];
      }
    }
    for (const auto& [key, steps] : receives) {
      REPLISIM_ASSERT(used[key] == steps.size(), "a collective program's receive has no send");
    }
  }
}

}  // namespace

std::pair<int64_t, int64_t> collective_chunk(int64_t elements, int chunks, int i) {
  const int64_t base = elements / chunks;
  const int64_t extra = elements % chunks;
  const int64_t first = base * i + std::min<int64_t>(i, extra);
  return {first, first + base + (i < extra ? 1 : 0)};
}

CollectiveProgram ring_program(int ranks, int channels) {
  channels = std::max(1, channels);
  CollectiveProgram p = empty_program(ranks, ranks * channels, channels);
  if (ranks < 2) return p;
  std::vector<int> members(static_cast<size_t>(ranks));
  for (int i = 0; i < ranks; ++i) members[size_t(i)] = i;
  for (int h = 0; h < channels; ++h) {
    std::vector<int> base(static_cast<size_t>(ranks));
    for (int i = 0; i < ranks; ++i) base[size_t(i)] = h * ranks + i;
    add_ring_steps(p, h, members, base, 1, true, 0);
    add_ring_steps(p, h, members, base, 1, false, 0);
  }
  pair_steps(p);
  return p;
}

CollectiveProgram tree_program(int ranks, int pipeline) {
  pipeline = std::max(1, pipeline);
  CollectiveProgram p = empty_program(ranks, 2 * pipeline, 2);
  if (ranks < 2) return p;
  for (int tree = 0; tree < 2; ++tree) {
    // Position in the tree (heap order: parent (q - 1) / 2); the second tree numbers the ranks
    // from the other end.
    auto rank_at = [&](int q) { return tree == 0 ? q : ranks - 1 - q; };
    for (int q = 0; q < ranks; ++q) {
      const int rank = rank_at(q);
      const int parent = q > 0 ? rank_at((q - 1) / 2) : -1;
      std::vector<int> children;
      for (int child : {2 * q + 1, 2 * q + 2}) {
        if (child < ranks) children.push_back(rank_at(child));
      }
      // The rank's transfers in order: per chunk, the children's gradients in, then the sum up;
      // then per chunk the result down from the parent, then to the children.
      struct Transfer {
        bool send;
        int peer;
        int chunk;
        bool reduce;
      };
      std::vector<Transfer> order;
      for (int c = 0; c < pipeline; ++c) {
        const int chunk = tree * pipeline + c;
        for (int child : children) order.push_back({false, child, chunk, true});
        if (parent >= 0) order.push_back({true, parent, chunk, false});
      }
      for (int c = 0; c < pipeline; ++c) {
        const int chunk = tree * pipeline + c;
        if (parent >= 0) order.push_back({false, parent, chunk, false});
        for (int child : children) order.push_back({true, child, chunk, false});
      }
      // Steps: a send may share a step with the receive that follows it (the send carries the
      // value from before the step), never with one before it.
      auto& steps = p.steps[size_t(rank)][size_t(tree)];
      bool open = false;
      for (const Transfer& t : order) {
        CollectiveStep* s = open ? &steps.back() : nullptr;
        if (t.send) {
          steps.push_back({});
          s = &steps.back();
          s->send_to = t.peer;
          s->send_first = t.chunk;
          open = true;
        } else {
          if (s == nullptr || s->recv_from >= 0) {
            steps.push_back({});
            s = &steps.back();
          }
          s->recv_from = t.peer;
          s->recv_first = t.chunk;
          s->reduce = t.reduce;
          open = false;
        }
      }
    }
  }
  pair_steps(p);
  return p;
}

CollectiveProgram hierarchical_program(const std::vector<int>& machine_of_rank) {
  const int ranks = int(machine_of_rank.size());
  std::vector<int> machines;  // in order of first appearance
  std::map<int, std::vector<int>> local;
  for (int r = 0; r < ranks; ++r) {
    const int m = machine_of_rank[size_t(r)];
    if (local.find(m) == local.end()) machines.push_back(m);
    local[m].push_back(r);
  }
  const int per_machine = ranks > 0 ? int(local[machines.front()].size()) : 0;
  for (const auto& [m, members] : local) {
    if (int(members.size()) != per_machine) {
      throw InputError("", "/training/allreduce/algorithm",
                       "hierarchical all-reduce needs the same number of ranks on every machine "
                       "(Horovod's homogeneity check); machine " +
                           std::to_string(machines.front()) + " holds " +
                           std::to_string(per_machine) + " and machine " + std::to_string(m) +
                           " holds " + std::to_string(members.size()));
    }
  }
  const int count = int(machines.size());
  CollectiveProgram p = empty_program(ranks, per_machine * count, 1);
  if (ranks < 2) return p;
  // Shard s of the buffer: chunks [s * count, (s + 1) * count), one per machine for the ring
  // across machines.
  std::vector<int> shard_base(static_cast<size_t>(per_machine));
  for (int s = 0; s < per_machine; ++s) shard_base[size_t(s)] = s * count;
  if (per_machine > 1) {
    for (int m : machines) add_ring_steps(p, 0, local[m], shard_base, count, true, 1);
  }
  if (count > 1) {
    for (int j = 0; j < per_machine; ++j) {
      // Local rank j holds shard (j + 1) mod L after the reduce-scatter (add_ring_steps).
      const int shard = per_machine > 1 ? wrap(j + 1, per_machine) : 0;
      std::vector<int> members;
      for (int m : machines) members.push_back(local[m][size_t(j)]);
      std::vector<int> base(static_cast<size_t>(count));
      for (int i = 0; i < count; ++i) base[size_t(i)] = shard * count + i;
      add_ring_steps(p, 0, members, base, 1, true, 2);
      add_ring_steps(p, 0, members, base, 1, false, 2);
    }
  }
  if (per_machine > 1) {
    for (int m : machines) add_ring_steps(p, 0, local[m], shard_base, count, false, 3);
  }
  pair_steps(p);
  return p;
}

CollectiveProgram collective_program(const std::string& algorithm,
                                     const std::vector<int>& machine_of_rank, int channels) {
  const int ranks = int(machine_of_rank.size());
  if (algorithm == "ring") return ring_program(ranks, channels);
  if (algorithm == "tree") return tree_program(ranks);
  if (algorithm == "hierarchical") return hierarchical_program(machine_of_rank);
  throw InputError("", "/training/allreduce/algorithm",
                   "unknown all-reduce algorithm \"" + algorithm.substr(0, 100) + "\"");
}

Collectives::Collectives(const Plan& plan, CollectiveHost& host, TraceRecorder* recorder,
                         const std::vector<int>& local_ranks, bool coordinator)
    : plan_(plan), host_(host), recorder_(recorder), coordinator_(coordinator) {
  const CollectiveSpec& spec = plan.collective;
  const size_t ranks = spec.ranks.size();
  rank_of_client_.assign(plan.clients.size(), -1);
  machine_of_rank_.resize(ranks);
  ops_of_rank_.resize(ranks);
  tensor_of_op_.resize(plan.clients.size());
  for (size_t r = 0; r < ranks; ++r) {
    const int c = spec.ranks[r];
    rank_of_client_[size_t(c)] = int(r);
    const ClientGraph& graph = plan.clients[size_t(c)];
    const Role& role = plan.roles[size_t(graph.role)];
    machine_of_rank_[r] = plan.platform.devices[size_t(role.device)].machine;
    tensor_of_op_[size_t(c)].assign(graph.ops.size(), -1);
    for (size_t k = 0; k < graph.ops.size(); ++k) {
      if (graph.ops[k].kind != OpKind::kAllReduce) continue;
      tensor_of_op_[size_t(c)][k] = int(ops_of_rank_[r].size());
      ops_of_rank_[r].push_back(int(k));
      if (r == 0) tensor_bytes_.push_back(graph.ops[k].bytes);
    }
  }
  local_.assign(ranks, false);
  for (int r : local_ranks) local_[size_t(r)] = true;
  alive_.assign(ranks, true);
  ready_s_.assign(ranks, std::vector<double>(tensor_bytes_.size(), 0.0));
  queue_.resize(ranks);
  current_.assign(ranks, -1);
  rank_free_s_.assign(ranks, 0.0);
  reduced_.assign(ranks, {-1, {}});
  program_ = std::make_shared<const CollectiveProgram>(
      collective_program(spec.algorithm, machine_of_rank_, spec.streams_per_peer));
  const bool one_machine = std::all_of(machine_of_rank_.begin(), machine_of_rank_.end(),
                                       [&](int m) { return m == machine_of_rank_.front(); });
  const double alpha = one_machine ? spec.local_step_latency_s : spec.step_latency_s;
  negotiation_s_ = ranks > 1 ? std::ceil(std::log2(double(ranks))) * alpha : 0.0;
}

double Collectives::step_latency_s(int from, int to) const {
  return machine_of_rank_[size_t(from)] == machine_of_rank_[size_t(to)]
             ? plan_.collective.local_step_latency_s
             : plan_.collective.step_latency_s;
}

std::string Collectives::phase_name(uint8_t phase) const {
  const std::string& t = plan_.collective.transport;
  const std::string library = t == "mpi" ? "MPI_" : t == "gloo" ? "GLOO_" : "NCCL_";
  switch (phase) {
    case 1:
      return library + "REDUCESCATTER";
    case 3:
      return library + "ALLGATHER";
    default:
      return library + "ALLREDUCE";
  }
}

void Collectives::ready(int c, int op, int64_t step) {
  const int rank = rank_of_client(c);
  const int tensor = tensor_of_op_[size_t(c)][size_t(op)];
  REPLISIM_ASSERT(rank >= 0 && tensor >= 0, "an all-reduce op of no rank");
  ready_s_[size_t(rank)][size_t(tensor)] = host_.now_s();
  if (coordinator_) {
    coordinator_ready(rank, step, tensor);
  } else {
    host_.tell_coordinator(rank, step, tensor);
  }
}

void Collectives::coordinator_ready(int rank, int64_t step, int tensor) {
  if (!alive_[size_t(rank)]) return;
  submit(rank, step, tensor);
}

void Collectives::submit(int rank, int64_t step, int tensor) {
  const std::pair<int64_t, int> key{step, tensor};
  std::vector<bool>& by = submitted_[key];
  if (by.empty()) by.assign(alive_.size(), false);
  by[size_t(rank)] = true;
  check_complete(key);
}

void Collectives::check_complete(const std::pair<int64_t, int>& key) {
  auto found = submitted_.find(key);
  if (found == submitted_.end()) return;
  for (size_t r = 0; r < alive_.size(); ++r) {
    if (alive_[r] && !found->second[r]) return;
  }
  submitted_.erase(found);
  pending_.push_back(key);
  schedule_tick();
}

void Collectives::schedule_tick() {
  if (tick_scheduled_) return;
  tick_scheduled_ = true;
  const double now = host_.now_s();
  const double cycle = plan_.collective.cycle_time_s;
  // Horovod's background thread runs a cycle every cycle_time from the job's start.
  double at = now;
  if (cycle > 0) {
    at = std::ceil(now / cycle) * cycle;
    if (at < now) at = now;
  }
  at = std::max(at, rendezvous_until_s_);  // Elastic: nothing forms until the ring re-formed
  const uint64_t epoch = epoch_;
  host_.at(at, [this, epoch] {
    if (epoch == epoch_) tick();
  });
}

void Collectives::tick() {
  tick_scheduled_ = false;
  const double threshold = plan_.collective.fusion_threshold_bytes;
  std::vector<int> live;
  for (size_t r = 0; r < alive_.size(); ++r) {
    if (alive_[r]) live.push_back(int(r));
  }
  std::vector<CollectiveResponse> formed;
  for (const auto& [step, tensor] : pending_) {
    const double bytes = tensor_bytes_[size_t(tensor)];
    if (formed.empty() || formed.back().step != step || formed.back().bytes + bytes > threshold) {
      CollectiveResponse r;
      r.step = step;
      r.ranks = live;
      r.formed_s = host_.now_s();
      formed.push_back(std::move(r));
    }
    formed.back().tensors.push_back(tensor);
    formed.back().bytes += bytes;
  }
  pending_.clear();
  for (CollectiveResponse& r : formed) {
    r.id = next_id_++;
    if (host_.distributed()) {
      host_.announce(r);
    } else {
      const uint64_t epoch = epoch_;
      host_.at(host_.now_s() + negotiation_s_, [this, epoch, r] {
        if (epoch == epoch_) start(r);
      });
    }
  }
}

const CollectiveProgram& Collectives::program_for(const std::vector<int>& ranks) {
  return *shared_program_for(ranks);
}

std::shared_ptr<const CollectiveProgram> Collectives::shared_program_for(
    const std::vector<int>& ranks) {
  if (ranks.size() == alive_.size()) return program_;
  auto found = survivor_programs_.find(ranks);
  if (found != survivor_programs_.end()) return found->second;
  std::vector<int> machines;
  for (int r : ranks) machines.push_back(machine_of_rank_[size_t(r)]);
  std::shared_ptr<const CollectiveProgram> program;
  try {
    program = std::make_shared<const CollectiveProgram>(collective_program(
        plan_.collective.algorithm, machines, plan_.collective.streams_per_peer));
  } catch (const InputError&) {
    // Survivors spread unevenly over the machines (Horovod Elastic): hierarchical cannot run,
    // the ring can.
    program = std::make_shared<const CollectiveProgram>(
        ring_program(int(ranks.size()), plan_.collective.streams_per_peer));
  }
  survivor_programs_.emplace(ranks, program);
  return program;
}

void Collectives::start(const CollectiveResponse& r) {
  if (abandoned(r.id)) return;
  next_id_ = std::max(next_id_, r.id + 1);
  for (int rank : r.ranks) {
    if (alive_[size_t(rank)]) continue;
    // Formed before the coordinator knew of a death this process knows of: it would stall, and
    // the survivors' rollback forms its tensors again.
    abandoned_ids_.insert(r.id);
    return;
  }
  Running run;
  run.response = r;
  run.program = shared_program_for(r.ranks);
  for (size_t p = 0; p < r.ranks.size(); ++p) {
    const int rank = r.ranks[p];
    if (!local_[size_t(rank)] || !alive_[size_t(rank)]) continue;
    RankState& state = run.ranks[rank];
    state.position = int(p);
    const auto& channels = run.program->steps[p];
    state.step.assign(channels.size(), 0);
    for (const auto& steps : channels) {
      state.sent.emplace_back(steps.size(), 0);
      state.arrived.emplace_back(steps.size(), 0);
    }
  }
  if (run.ranks.empty()) return;
  run.local_left = int(run.ranks.size());
  run.whole = host_.can_carry_whole(r);
  auto [it, inserted] = running_.emplace(r.id, std::move(run));
  REPLISIM_ASSERT(inserted, "a collective announced twice");
  for (const auto& [rank, state] : it->second.ranks) {
    queue_[size_t(rank)].push_back(r.id);
    if (current_[size_t(rank)] < 0) begin_next(rank);
  }
  // Chunks that came before the announcement (a real run's other processes).
  auto early = early_.find(r.id);
  if (early != early_.end()) {
    const std::vector<CollectiveChunk> chunks = std::move(early->second);
    early_.erase(early);
    for (const CollectiveChunk& chunk : chunks) arrived(chunk);
  }
}

void Collectives::begin_next(int rank) {
  std::deque<int64_t>& queue = queue_[size_t(rank)];
  current_[size_t(rank)] = -1;
  while (!queue.empty()) {
    const int64_t id = queue.front();
    queue.pop_front();
    auto found = running_.find(id);
    if (found == running_.end()) continue;
    current_[size_t(rank)] = id;
    begin_rank(found->second, rank);
    return;
  }
}

void Collectives::begin_rank(Running& run, int rank) {
  RankState& state = run.ranks.at(rank);
  const double now = host_.now_s();
  state.begun = true;
  if (recorder_ != nullptr) {
    // From when the buffer's last tensor was ready here (it could not form before), or the
    // rank's previous collective ended if later, to now: one span after the other on the rank.
    double from = 0;
    for (int t : run.response.tensors) from = std::max(from, ready_s_[size_t(rank)][size_t(t)]);
    from = std::min(std::max(from, rank_free_s_[size_t(rank)]), now);
    const int c = client_of_rank(rank);
    recorder_->collective(c, ops_of_rank_[size_t(rank)][size_t(run.response.tensors.front())],
                          run.response.step, "NEGOTIATE_ALLREDUCE", from, now, run.response.bytes,
                          run.response.id);
  }
  state.begun_s = state.phase_begun_s = now;
  const int64_t id = run.response.id;
  const uint64_t epoch = epoch_;
  if (run.whole) {
    if (++run.whole_begun < int(run.ranks.size())) return;
    host_.at(now + plan_.collective.launch_s, [this, id, epoch] {
      auto found = running_.find(id);
      if (epoch != epoch_ || found == running_.end()) return;
      if (host_.carry_whole(found->second.response)) {
        ++carried_whole_;
        return;
      }
      std::vector<int> ranks;
      for (const auto& [r, state] : found->second.ranks) ranks.push_back(r);
      for (int r : ranks) {
        auto still = running_.find(id);
        if (still == running_.end()) return;
        launch_rank(still->second, r);
      }
    });
    return;
  }
  host_.at(now + plan_.collective.launch_s, [this, id, rank, epoch] {
    auto found = running_.find(id);
    if (epoch == epoch_ && found != running_.end()) launch_rank(found->second, rank);
  });
}

void Collectives::launch_rank(Running& run, int rank) {
  RankState& s = run.ranks.at(rank);
  s.channels_left = int(s.step.size());
  // The first phase is the first step's (hierarchical begins inside the machine).
  for (const auto& steps : run.program->steps[size_t(s.position)]) {
    if (!steps.empty()) {
      s.phase = steps.front().phase;
      break;
    }
  }
  const int channels = s.channels_left;
  const int64_t id = run.response.id;
  for (int h = 0; h < channels; ++h) {
    if (run.program->steps[size_t(s.position)][size_t(h)].empty()) {
      --s.channels_left;
    } else {
      post_step(run, rank, h);
      if (running_.find(id) == running_.end()) return;  // every rank here done meanwhile
    }
  }
  if (s.channels_left == 0 && !s.done) rank_done(id, rank);
}

void Collectives::post_step(Running& run, int rank, int channel) {
  RankState& state = run.ranks.at(rank);
  const int k = state.step[size_t(channel)];
  const CollectiveStep& s = run.program->steps[size_t(state.position)][size_t(channel)][size_t(k)];
  if (s.phase != state.phase) {
    record_phase(run, rank, state, host_.now_s());
    state.phase = s.phase;
    state.phase_begun_s = host_.now_s();
  }
  if (s.send_to < 0) {
    try_finish_step(run, rank, channel);
    return;
  }
  CollectiveChunk chunk;
  chunk.id = run.response.id;
  chunk.from = rank;
  chunk.to = run.response.ranks[size_t(s.send_to)];
  chunk.channel = channel;
  chunk.step = k;
  chunk.recv_step = s.peer_step;
  chunk.bytes = run.response.bytes * s.chunk_count / run.program->chunks;
  const uint64_t epoch = epoch_;
  host_.at(host_.now_s() + step_latency_s(rank, chunk.to), [this, chunk, epoch] {
    auto found = running_.find(chunk.id);
    if (epoch == epoch_ && found != running_.end()) host_.send_chunk(found->second.response, chunk);
  });
}

void Collectives::sent(const CollectiveChunk& chunk) {
  if (abandoned(chunk.id)) return;
  auto found = running_.find(chunk.id);
  if (found == running_.end()) return;
  auto rank = found->second.ranks.find(chunk.from);
  if (rank == found->second.ranks.end()) return;
  rank->second.sent[size_t(chunk.channel)][size_t(chunk.step)] = 1;
  if (rank->second.step[size_t(chunk.channel)] == chunk.step) {
    try_finish_step(found->second, chunk.from, chunk.channel);
  }
}

void Collectives::arrived(const CollectiveChunk& chunk) {
  if (abandoned(chunk.id)) return;
  auto found = running_.find(chunk.id);
  if (found == running_.end()) {
    early_[chunk.id].push_back(chunk);
    return;
  }
  auto rank = found->second.ranks.find(chunk.to);
  if (rank == found->second.ranks.end()) return;
  rank->second.arrived[size_t(chunk.channel)][size_t(chunk.recv_step)] = 1;
  if (rank->second.begun && rank->second.step[size_t(chunk.channel)] == chunk.recv_step &&
      rank->second.channels_left > 0) {
    try_finish_step(found->second, chunk.to, chunk.channel);
  }
}

void Collectives::try_finish_step(Running& run, int rank, int channel) {
  RankState& state = run.ranks.at(rank);
  const auto& steps = run.program->steps[size_t(state.position)][size_t(channel)];
  int& k = state.step[size_t(channel)];
  const CollectiveStep& s = steps[size_t(k)];
  if (s.send_to >= 0 && !state.sent[size_t(channel)][size_t(k)]) return;
  if (s.recv_from >= 0 && !state.arrived[size_t(channel)][size_t(k)]) return;
  if (s.recv_from >= 0) host_.apply_chunk(run.response, rank, channel, k);
  ++k;
  if (size_t(k) < steps.size()) {
    post_step(run, rank, channel);
    return;
  }
  if (--state.channels_left == 0) rank_done(run.response.id, rank);
}

void Collectives::record_phase(const Running& run, int rank, const RankState& state, double end_s) {
  if (recorder_ == nullptr) return;
  const int c = client_of_rank(rank);
  recorder_->collective(c, ops_of_rank_[size_t(rank)][size_t(run.response.tensors.front())],
                        run.response.step, phase_name(state.phase), state.phase_begun_s, end_s,
                        run.response.bytes, run.response.id);
}

void Collectives::whole_done(int64_t id) {
  auto found = running_.find(id);
  if (found == running_.end()) return;
  std::vector<int> ranks;
  for (const auto& [rank, state] : found->second.ranks) ranks.push_back(rank);
  for (int rank : ranks) rank_done(id, rank);
}

void Collectives::rank_done(int64_t id, int rank) {
  auto found = running_.find(id);
  REPLISIM_ASSERT(found != running_.end(), "a collective done twice");
  Running& run = found->second;
  RankState& state = run.ranks.at(rank);
  const double now = host_.now_s();
  record_phase(run, rank, state, now);
  state.done = true;
  rank_free_s_[size_t(rank)] = now;
  CollectiveResponse response = run.response;
  if (--run.local_left == 0) running_.erase(found);
  // A tensor this rank already has reduced in this step (it finished a collective that a death
  // then made the others form again) is not reduced twice.
  auto& [step, done] = reduced_[size_t(rank)];
  if (step != response.step) {
    step = response.step;
    done.assign(tensor_bytes_.size(), false);
  }
  std::vector<int> fresh;
  for (int t : response.tensors) {
    if (!done[size_t(t)]) fresh.push_back(t);
    done[size_t(t)] = true;
  }
  response.tensors = std::move(fresh);
  if (!response.tensors.empty()) host_.reduced(rank, response);
  if (current_[size_t(rank)] == id) begin_next(rank);
}

void Collectives::reset() {
  roll_back(next_id_);
  std::fill(alive_.begin(), alive_.end(), true);
  rendezvous_until_s_ = 0;
}

void Collectives::roll_back(int64_t first_id) {
  ++epoch_;
  submitted_.clear();
  pending_.clear();
  tick_scheduled_ = false;
  abandoned_below_ = std::max(abandoned_below_, first_id);
  next_id_ = std::max(next_id_, first_id);
  abandoned_ids_.clear();
  for (auto& r : reduced_) r = {-1, {}};
  running_.clear();
  // Chunks of collectives formed after the rollback may have come first (a real run's other
  // processes): they stay.
  early_.erase(early_.begin(), early_.lower_bound(abandoned_below_));
  for (auto& queue : queue_) queue.clear();
  std::fill(current_.begin(), current_.end(), -1);
}

double Collectives::rank_died(int rank) {
  if (!alive_[size_t(rank)]) return rendezvous_until_s_;
  alive_[size_t(rank)] = false;
  rendezvous_until_s_ =
      std::max(rendezvous_until_s_, host_.now_s() + plan_.collective.rendezvous_s);
  roll_back(next_id_);
  return rendezvous_until_s_;
}

int Collectives::live_samples_per_step() const {
  int samples = 0;
  for (size_t r = 0; r < alive_.size(); ++r) {
    if (alive_[r]) samples += plan_.batch_of_replica(r);
  }
  return samples;
}

std::string Collectives::waiting_for() const {
  for (const auto& [key, by] : submitted_) {
    std::string missing;
    for (size_t r = 0; r < by.size(); ++r) {
      if (alive_[r] && !by[r]) {
        const int c = plan_.collective.ranks[r];
        missing +=
            (missing.empty() ? "" : ", ") + plan_.roles[size_t(plan_.clients[size_t(c)].role)].name;
      }
    }
    if (!missing.empty()) {
      return "all-reduce of tensor " + std::to_string(key.second) + " in step " +
             std::to_string(key.first) + " waits for " + missing;
    }
  }
  if (!running_.empty()) {
    return "all-reduce #" + std::to_string(running_.begin()->first) + " is under way";
  }
  return "";
}

}  // namespace replisim::core
