// Ctrl-C (SIGINT), SIGTERM, SIGHUP and SIGQUIT as a flag that the commands poll: a run in progress
// stops (RunOptions::cancelled) and outputs not yet in place are not written
// (OutputFiles::set_cancel).
#pragma once

#include <csignal>

namespace replisim::cli {

// Installs the handlers for its lifetime (main() keeps one from its start). A signal the process
// inherited as ignored (a shell's background job, nohup) stays ignored.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_hup_ {};
  struct sigaction old_quit_ {};
};

// Whether SIGINT, SIGTERM, SIGHUP or SIGQUIT arrived since the guard was installed.
bool interrupted();

}  // namespace replisim::cli
