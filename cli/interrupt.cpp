#include "cli/interrupt.h"

namespace replisim::cli {
namespace {

volatile std::sig_atomic_t signalled = 0;

extern "C" void on_interrupt(int) {
  signalled = 1;
}

// Installs on_interrupt for `signal` unless it is ignored; `old` receives what was there.
void install(int signal, struct sigaction* old) {
  ::sigaction(signal, nullptr, old);
  if (old->sa_handler == SIG_IGN) return;
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  // A signal caught since the early install (the program's start) is kept for the first command.
  install(SIGINT, &old_int_);
  install(SIGTERM, &old_term_);
  // A hang-up (the terminal or ssh session gone) and SIGQUIT end a run as Ctrl-C does: nothing
  // written, every process and network namespace removed.
  install(SIGHUP, &old_hup_);
  install(SIGQUIT, &old_quit_);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &old_int_, nullptr);
  ::sigaction(SIGTERM, &old_term_, nullptr);
  ::sigaction(SIGHUP, &old_hup_, nullptr);
  ::sigaction(SIGQUIT, &old_quit_, nullptr);
}

void install_interrupt_handlers_early() {
  struct sigaction ignored {};
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) install(signal, &ignored);
}

bool interrupted() {
  return signalled != 0;
}

}  // namespace replisim::cli
