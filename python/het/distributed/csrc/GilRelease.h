// Lets other threads take Python's GIL while this one waits, if this thread
// holds it. The backend's destructor runs wherever the last reference goes:
// from Python (holding the GIL) when a process group is destroyed, and it
// joins threads whose last act may be to free a tensor's Python object,
// which needs the GIL.
#pragma once

#include <Python.h>

namespace het::torchccl {

class GilRelease {
public:
  GilRelease() {
    if (Py_IsInitialized() && PyGILState_Check()) saved_ = PyEval_SaveThread();
  }
  ~GilRelease() {
    if (saved_) PyEval_RestoreThread(saved_);
  }
  GilRelease(const GilRelease&) = delete;
  GilRelease& operator=(const GilRelease&) = delete;

private:
  PyThreadState* saved_ = nullptr;
};

} // namespace het::torchccl
