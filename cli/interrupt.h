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

// The same handlers, installed as early as the executable can (a constructor in cli/main.cpp, once
// the shared libraries have initialised: tens of milliseconds after exec): a Ctrl-C while the
// program starts is kept for the first command, which stops with its one line and exit 130,
// instead of ending the process by the signal's default action. Before that, the default action
// ends the process, which has written nothing yet.
void install_interrupt_handlers_early();

// Whether SIGINT, SIGTERM, SIGHUP or SIGQUIT arrived since the handlers were installed.
bool interrupted();

}  // namespace replisim::cli
