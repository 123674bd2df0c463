// Little-endian payload fields of the node's frames (internal to real/node/); reads throw
// FrameError when the payload is short. Defined in node_setup.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace replisim::real::detail {

std::string pack_i64(std::initializer_list<int64_t> values);
int64_t unpack_i64(const uint8_t* payload, size_t size, size_t index);
std::string pack_f64(std::initializer_list<double> values);
double unpack_f64(const uint8_t* payload, size_t size, size_t index);

}  // namespace replisim::real::detail
