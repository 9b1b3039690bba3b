#include "tpulaunch/util/parallel.hpp"

#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace tpulaunch {

unsigned available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) {
      return static_cast<unsigned>(count);
    }
  }
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware > 0 ? hardware : 1;
}

namespace {

// The state the workers and the delivering thread share, guarded by `mutex`. Workers claim items
// `chunk` at a time (`next`) and mark each done in `done` (indexed by item % window); `ready` is
// the end of the run of done items that starts at the next delivery. The calling thread delivers
// them in order (`delivered`); a chunk may be claimed only while all of it is within `window`
// items of the next delivery.
//
// Every sleep and wake-up is a futex call and, with more threads than cores, a context switch:
// on two cores, waking the delivering thread for each finished chunk cost more CPU than the
// delivering. So the delivering thread sleeps until `batch` items (half the window) are ready, or
// the last ones are, and delivers them all; workers wake it only then, and it wakes them only
// when one waits for room.
struct Pool {
  std::size_t count;
  std::size_t window;
  std::size_t chunk;
  std::size_t batch;
  std::mutex mutex;
  std::condition_variable slot_free; // a worker may claim another chunk, or must stop
  std::condition_variable items_ready; // a batch is ready to deliver, or the run must stop
  std::size_t next = 0;
  std::size_t ready = 0;
  std::size_t delivered = 0;
  std::size_t waiting_workers = 0;
  bool deliverer_waiting = false;
  std::vector<char> done;
  bool stop = false;
  std::exception_ptr error;

  Pool(std::size_t items, std::size_t slots, std::size_t per_claim)
      : count(items), window(slots), chunk(per_claim), batch(std::max<std::size_t>(1, slots / 2)), done(slots, 0) {}

  // True when the delivering thread has enough to do (called with `mutex` held).
  [[nodiscard]] bool batch_ready() const { return stop || ready >= std::min(count, delivered + batch); }

  void fail(std::exception_ptr e) {
    const std::lock_guard lock(mutex);
    if (!error) {
      error = std::move(e);
    }
    stop = true;
    slot_free.notify_all();
    items_ready.notify_all();
  }

  void run_worker(const std::function<void(std::size_t)>& work) {
    for (;;) {
      std::size_t first = 0;
      std::size_t last = 0;
      {
        std::unique_lock lock(mutex);
        const auto may_claim = [&] {
          return stop || next >= count || std::min(count, next + chunk) <= delivered + window;
        };
        if (!may_claim()) {
          ++waiting_workers;
          slot_free.wait(lock, may_claim);
          --waiting_workers;
        }
        if (stop || next >= count) {
          return;
        }
        first = next;
        last = std::min(count, next + chunk);
        next = last;
      }
      for (std::size_t item = first; item < last; ++item) {
        try {
          work(item);
        } catch (...) {
          fail(std::current_exception());
          return;
        }
      }
      bool wake = false;
      {
        const std::lock_guard lock(mutex);
        for (std::size_t item = first; item < last; ++item) {
          done[item % window] = 1;
        }
        while (ready < count && ready < delivered + window && done[ready % window] != 0) {
          ++ready;
        }
        wake = deliverer_waiting && batch_ready();
      }
      if (wake) {
        items_ready.notify_one();
      }
    }
  }

  // Delivers every item in order on the calling thread, a ready batch at a time.
  void deliver_all(const std::function<void(std::size_t)>& deliver) {
    std::size_t i = 0;
    while (i < count) {
      std::size_t end = 0;
      {
        std::unique_lock lock(mutex);
        if (!batch_ready()) {
          deliverer_waiting = true;
          items_ready.wait(lock, [&] { return batch_ready(); });
          deliverer_waiting = false;
        }
        if (stop) {
          return;
        }
        end = ready;
      }
      for (; i < end; ++i) {
        done[i % window] = 0; // no worker touches this slot until `delivered` passes it
        try {
          deliver(i);
        } catch (...) {
          fail(std::current_exception());
          return;
        }
      }
      bool wake = false;
      {
        const std::lock_guard lock(mutex);
        delivered = end;
        wake = waiting_workers > 0;
      }
      if (wake) {
        slot_free.notify_all(); // a batch's room is free again
      }
    }
  }
};

} // namespace

void run_ordered(std::size_t count, unsigned jobs, std::size_t window, const std::function<void(std::size_t)>& work,
                 const std::function<void(std::size_t)>& deliver) {
  if (jobs <= 1 || count <= 1) {
    for (std::size_t i = 0; i < count; ++i) {
      work(i);
      deliver(i);
    }
    return;
  }
  window = std::max<std::size_t>(window, 1);
  const std::size_t thread_count = std::min<std::size_t>(jobs, count);
  // Each thread claims a quarter of its share of the window at a time: enough items to keep the
  // mutex quiet, few enough that the other threads always find work.
  const std::size_t chunk = std::max<std::size_t>(1, window / (4 * thread_count));
  Pool pool(count, window, chunk);
  std::vector<std::thread> threads;
  threads.reserve(thread_count);
  for (std::size_t t = 0; t < thread_count; ++t) {
    threads.emplace_back([&pool, &work] { pool.run_worker(work); });
  }
  pool.deliver_all(deliver);
  {
    // Every item is delivered (or an error stopped the run): wake any worker still waiting.
    const std::lock_guard lock(pool.mutex);
    pool.stop = true;
  }
  pool.slot_free.notify_all();
  for (auto& thread : threads) {
    thread.join();
  }
  if (pool.error) {
    std::rethrow_exception(pool.error);
  }
}

} // namespace tpulaunch
