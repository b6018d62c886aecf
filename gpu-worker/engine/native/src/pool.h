// A small pool of threads that help the calling thread with one job at a time. Kernels are called
// synchronously from JavaScript, so the caller works too and `run` returns when the job is done.
//
// Work is shared dynamically (jobs take items from an atomic counter), and a worker joins a job
// only while the caller is still working on it: on a loaded machine a descheduled worker neither
// holds back nor delays the caller, which then does the work alone. Workers spin briefly after a
// job (a training step calls kernels back to back; waking a sleeping thread costs tens of
// microseconds), then sleep.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace whetstone {

class Pool {
 public:
  ~Pool();
  // Number of threads a job may run on (the caller included). Changing it restarts the workers.
  void resize(int threads);
  int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Run fn(t) on the caller (t = 0) and on the workers t = 1 … threads−1 that join in time; fn must
  // share its work dynamically and be correct whichever threads take part.
  void run(int threads, const std::function<void(int)>& fn);

 private:
  void work(int id, uint64_t seen);
  void stop();

  std::vector<std::thread> workers_;
  const std::function<void(int)>* job_ = nullptr;  // guarded by mutex_
  int limit_ = 0;                                   // guarded by mutex_: workers with id < limit_ may join
  bool open_ = false;                               // guarded by mutex_: the caller is still working
  bool stopping_ = false;                           // guarded by mutex_
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0};  // workers inside the current job
  std::mutex mutex_;
  std::condition_variable wake_;
};

// Threads the kernels use: WHETSTONE_THREADS, else the CPUs this process may run on.
int default_threads();
Pool& pool();

}  // namespace whetstone
