//===- StopRequest.h - stop a running job at its next checkpoint -*- C++ -*-===//
//
// het-run --elastic grows a job back when lost devices are re-admitted: it
// asks the running ranks to stop at their next checkpoint (SIGUSR1 to every
// rank), plans for the larger cluster, and resumes from that checkpoint, so
// that no step is done twice. A signal reaches the ranks at different
// steps, so they agree: after every checkpoint each rank contributes
// whether it was asked (a MAX all-reduce over the job), and all stop after
// the same one. Only when het-run sets HET_STOP_AT_CHECKPOINT=1 (the
// agreement is one 4-byte all-reduce per checkpoint; other jobs skip it).
//
//===----------------------------------------------------------------------===//

#ifndef HET_LIB_RUNTIME_STOPREQUEST_H
#define HET_LIB_RUNTIME_STOPREQUEST_H

namespace het::rt {

/// Installs the SIGUSR1 handler if HET_STOP_AT_CHECKPOINT=1 and unblocks
/// the signal (het-run starts ranks with it blocked, so that a request
/// sent before this call waits); returns whether stop requests are on.
/// Call before starting threads and joining the job.
bool enableStopRequests();
/// Whether stop requests are on (enableStopRequests found the variable).
bool stopRequestsEnabled();
/// Whether this rank was asked to stop (SIGUSR1 arrived).
bool stopRequested();

} // namespace het::rt

#endif
