#include "sim/sim_settings.h"

#include <simgrid/s4u.hpp>

#include "core/base/error.h"

namespace replisim::sim {

const char* network_engine_name(NetworkEngine engine) {
  return engine == NetworkEngine::kSimgrid ? "simgrid" : "auto";
}

SimSettings read_sim_settings(const nlohmann::json& settings) {
  SimSettings out;
  if (settings.is_null()) return out;
  if (!settings.is_object()) throw core::InputError("", "settings", "must be an object");
  for (const auto& [key, value] : settings.items()) {
    if (key == "network_engine") {
      const std::string name = value.is_string() ? value.get<std::string>() : value.dump();
      if (name != "simgrid" && name != "auto") {
        throw core::InputError("", "--network-engine",
                               "expected simgrid or auto, found \"" + name + "\"");
      }
      out.network_engine = name == "simgrid" ? NetworkEngine::kSimgrid : NetworkEngine::kAuto;
    } else if (key == "tolerance_s") {
      const double t = value.is_number() ? value.get<double>() : -1;
      if (!(t > 0 && t <= SimSettings::kMaxToleranceS)) {
        throw core::InputError(
            "", "--tolerance",
            "expected seconds in (0, 1e-3] (SimGrid's default is 1e-9), found " + value.dump());
      }
      out.tolerance_s = t;
    } else if (key == "collective_fast_path" && value.is_boolean()) {
      out.collective_fast_path = value.get<bool>();
    } else if (key == "internal_error_at_s" && value.is_number()) {
      out.internal_error_at_s = value.get<double>();
    } else {
      throw core::InputError(
          "", "settings",
          "the simulator takes network_engine and tolerance_s, not \"" + key + "\"");
    }
  }
  return out;
}

nlohmann::json sim_settings_provenance(const SimSettings& settings) {
  nlohmann::json j = {{"network_engine", network_engine_name(settings.network_engine)},
                      {"tolerance_s", settings.tolerance_s}};
  if (!settings.collective_fast_path) j["collective_fast_path"] = false;
  return j;
}

void configure_sim_settings(const SimSettings& settings) {
  namespace sg4 = simgrid::s4u;
  sg4::Engine::set_config("surf/precision", settings.tolerance_s);
  if (settings.network_engine == NetworkEngine::kAuto) {
    sg4::Engine::set_config("network/optim:Full");
  }
}

}  // namespace replisim::sim
