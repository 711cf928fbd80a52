//===- StopRequest.cpp - stop a running job at its next checkpoint --------===//
#include "StopRequest.h"

#include <csignal>
#include <pthread.h>
#include <cstdlib>
#include <cstring>

namespace het::rt {

namespace {
volatile sig_atomic_t gAsked = 0;
bool gEnabled = false;

void onStopRequest(int) { gAsked = 1; }
} // namespace

bool enableStopRequests() {
  const char *on = std::getenv("HET_STOP_AT_CHECKPOINT");
  gEnabled = on && std::strcmp(on, "1") == 0;
  if (gEnabled) {
    struct sigaction sa {};
    sa.sa_handler = onStopRequest;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; // hetccl's waits and file writes go on
    sigaction(SIGUSR1, &sa, nullptr);
    // het-run blocked it until now: a request sent while we started is
    // delivered here.
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);
  }
  return gEnabled;
}

bool stopRequestsEnabled() { return gEnabled; }

bool stopRequested() { return gAsked != 0; }

} // namespace het::rt
