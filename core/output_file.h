// Output files that are never half-written and never replace a user's file unasked: content
// goes to a temporary file next to the target, which is renamed over it only when complete.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

namespace replisim::core {

// Throws InputError(path, ...) when `path` exists and `overwrite` is false, when it is a
// directory, or when its directory does not exist. Call before long work, so that a run does not
// end in a refused write.
void check_output_path(const std::string& path, bool overwrite);

// Runs `write` on a temporary file in the target's directory, then renames it to `path`.
// On any failure (an exception from `write`, a stream or rename error) the temporary file is
// removed and `path` is left as it was. Throws InputError for refused paths (see above) and
// std::runtime_error for I/O failures.
void write_file_atomically(const std::string& path, bool overwrite,
                           const std::function<void(std::ostream&)>& write);

}  // namespace replisim::core
