// The application channels of a real run's tasks (internal to real/node/): the messages the
// node's parts send one another over the transport, each handled by the part that owns it
// (FrameRouter). The transport carries them as they are (real/transport/frame.h names only its
// own frames); the values are the wire's frame types, protocol version 4's numbering.
#pragma once

#include <string>

#include "real/transport/frame.h"

namespace replisim::real::detail::channel {

inline constexpr FrameType kPing = FrameType(6);         // clock estimate: the sender's clock
inline constexpr FrameType kPong = FrameType(7);         // its answer: time_s = the answerer's
inline constexpr FrameType kStart = FrameType(8);        // every task is ready; time_s = t = 0
inline constexpr FrameType kRun = FrameType(9);          // a client starts a step (tensor = graph)
inline constexpr FrameType kDone = FrameType(10);        // a task's part of a step is done
inline constexpr FrameType kControl = FrameType(12);     // an op another task's op takes is done
inline constexpr FrameType kSave = FrameType(13);        // a PS: save your shard (payload: name)
inline constexpr FrameType kSaved = FrameType(14);       // the PS saved it (payload: what)
inline constexpr FrameType kFinished = FrameType(15);    // a graph's client is done
inline constexpr FrameType kReady = FrameType(18);       // to the coordinator: connected, clock
inline constexpr FrameType kQuery = FrameType(19);       // a quiescence wave's question
inline constexpr FrameType kStatus = FrameType(20);      // its answer: the task's counters
inline constexpr FrameType kProgress = FrameType(21);    // a client ended a step
inline constexpr FrameType kRestore = FrameType(22);     // after a restart: load checkpoint <name>
inline constexpr FrameType kRestored = FrameType(23);    // the PS loaded it
inline constexpr FrameType kModelQuery = FrameType(24);  // is the model restored yet?
inline constexpr FrameType kModelReady = FrameType(25);  // the answer
inline constexpr FrameType kResumed = FrameType(26);     // a graph's client trains again
inline constexpr FrameType kTracePart = FrameType(27);   // a chunk of a task's trace part
inline constexpr FrameType kTracePartKept = FrameType(28);  // the coordinator has it whole
inline constexpr FrameType kStopAsk = FrameType(29);    // training.steps "auto": your last step?
inline constexpr FrameType kStopReply = FrameType(30);  // the answer
inline constexpr FrameType kStopLimit = FrameType(31);  // the coordinator's limit
// All-reduce (collective_ops.h): a rank's tensor is ready (to rank 0's task; step = the step,
// tensor = rank << 32 | tensor), the coordinator's fused response (to every task with a rank in
// it; step = its step, tensor = its id), and a step's chunks of a response's buffer, float32
// values (chunked; step = the response's id, tensor = collective_chunk_tag).
inline constexpr FrameType kCollectiveReady = FrameType(32);
inline constexpr FrameType kCollectiveResponse = FrameType(33);
inline constexpr FrameType kCollectiveChunk = FrameType(34);
// Elastic all-reduce: after a rank's death and the rendezvous, rank 0's task gives every
// survivor's task its last commit (Horovod Elastic's state.sync(); chunked; step = the sync's
// round; payload: an 8-byte JSON length, the JSON, then the state's float32 values), and each
// answers once it took it, step = that sync's round (from then on its readiness frames are of the
// new attempt; rank 0's task counts only an answer to its latest round).
inline constexpr FrameType kElasticSync = FrameType(35);
inline constexpr FrameType kElasticSynced = FrameType(36);
// The training objective's evaluations with several parameter servers (objective_gather.h): the
// task that holds global_step asks each other one for its variables' slices of the proxy (step =
// the global step evaluated; no payload), and the answer (step = the same; payload: the float32
// values of its variables' slices, in variable order).
inline constexpr FrameType kValuesAsk = FrameType(37);
inline constexpr FrameType kValues = FrameType(38);

// A frame type's name as a node's errors say it: a channel's ("stop reply"), or the transport
// frame's ("tensor"); "channel N" for a number no part owns.
std::string name(FrameType type);

// A frame that breaks the protocol unless `ok`: throws FrameError("<name> frame <why>").
void require(const FrameHeader& header, bool ok, const char* why);

}  // namespace replisim::real::detail::channel
