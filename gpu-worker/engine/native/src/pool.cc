#include "pool.h"

#include <sched.h>

#include <cstdlib>

namespace whetstone {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}
// About 50 µs of spinning before a worker sleeps.
constexpr int kSpins = 20000;
}  // namespace

Pool::~Pool() { stop(); }

void Pool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
  workers_.clear();
  stopping_ = false;
}

void Pool::resize(int threads) {
  if (threads < 1) threads = 1;
  if (threads == size()) return;
  stop();
  // The generation the workers start from is read here, not in the new threads: a job posted
  // before a thread first runs would otherwise be mistaken by it for an old one.
  const uint64_t start = generation_.load(std::memory_order_acquire);
  for (int id = 1; id < threads; id++) workers_.emplace_back([this, id, start] { work(id, start); });
}

void Pool::run(int threads, const std::function<void(int)>& fn) {
  if (threads > size()) threads = size();
  if (threads <= 1) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    limit_ = threads;
    open_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  fn(0);
  {
    // Closed: a worker that wakes from now on skips this job (its items are all taken).
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = false;
  }
  for (int spins = 0; active_.load(std::memory_order_acquire) > 0; spins++) {
    // A joined worker finishes its item; if it lost its core, give ours up rather than spin.
    if (spins < kSpins) cpu_relax();
    else std::this_thread::yield();
  }
}

void Pool::work(int id, uint64_t seen) {
  for (;;) {
    for (int spins = 0; generation_.load(std::memory_order_acquire) == seen && spins < kSpins; spins++) cpu_relax();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    const std::function<void(int)>* job = nullptr;
    {
      // Joining under the lock ties the job to the generation just seen: the caller cannot close
      // it and post another in between.
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      seen = generation_.load(std::memory_order_acquire);
      if (open_ && id < limit_) {
        active_.fetch_add(1, std::memory_order_acq_rel);
        job = job_;
      }
    }
    if (job) {
      (*job)(id);
      active_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
}

int default_threads() {
  if (const char* env = std::getenv("WHETSTONE_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1) return n;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n >= 1) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n >= 1 ? static_cast<int>(n) : 1;
}

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace whetstone
