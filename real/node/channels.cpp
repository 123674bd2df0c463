#include "real/node/channels.h"

namespace replisim::real::detail::channel {

std::string name(FrameType type) {
  if (is_transport_frame(type)) return frame_type_name(type);
  switch (uint16_t(type)) {
    case uint16_t(kPing):
      return "ping";
    case uint16_t(kPong):
      return "pong";
    case uint16_t(kStart):
      return "start";
    case uint16_t(kRun):
      return "run";
    case uint16_t(kDone):
      return "done";
    case uint16_t(kControl):
      return "control";
    case uint16_t(kSave):
      return "save";
    case uint16_t(kSaved):
      return "saved";
    case uint16_t(kFinished):
      return "finished";
    case uint16_t(kReady):
      return "ready";
    case uint16_t(kQuery):
      return "query";
    case uint16_t(kStatus):
      return "status";
    case uint16_t(kProgress):
      return "progress";
    case uint16_t(kRestore):
      return "restore";
    case uint16_t(kRestored):
      return "restored";
    case uint16_t(kModelQuery):
      return "model query";
    case uint16_t(kModelReady):
      return "model ready";
    case uint16_t(kResumed):
      return "resumed";
    case uint16_t(kTracePart):
      return "trace part";
    case uint16_t(kTracePartKept):
      return "trace part kept";
    case uint16_t(kStopAsk):
      return "stop ask";
    case uint16_t(kStopReply):
      return "stop reply";
    case uint16_t(kStopLimit):
      return "stop limit";
    case uint16_t(kCollectiveReady):
      return "collective ready";
    case uint16_t(kCollectiveResponse):
      return "collective response";
    case uint16_t(kCollectiveChunk):
      return "collective chunk";
    case uint16_t(kElasticSync):
      return "elastic sync";
    case uint16_t(kElasticSynced):
      return "elastic synced";
    case uint16_t(kValuesAsk):
      return "values ask";
    case uint16_t(kValues):
      return "values";
    default:
      return "channel " + std::to_string(uint16_t(type));
  }
}

void require(const FrameHeader& header, bool ok, const char* why) {
  if (!ok) throw FrameError(name(header.type) + " frame " + why);
}

}  // namespace replisim::real::detail::channel
