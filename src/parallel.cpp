#include "tpulaunch/parallel.hpp"

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
// `chunk` at a time (`next`), mark each done in `done` (indexed by item % window), and the calling
// thread delivers them in order (`delivered`); a chunk may be claimed only while all of it is
// within `window` items of the next delivery. Claiming and waking by chunks rather than by items
// keeps the threads off the futex: one wake-up per chunk, not two per item.
struct Pool {
  std::size_t count;
  std::size_t window;
  std::size_t chunk;
  std::mutex mutex;
  std::condition_variable slot_free; // a worker may claim another chunk, or must stop
  std::condition_variable item_done; // the next item to deliver may be ready
  std::size_t next = 0;
  std::size_t delivered = 0;
  std::vector<char> done;
  bool stop = false;
  std::exception_ptr error;

  Pool(std::size_t items, std::size_t slots, std::size_t per_claim)
      : count(items), window(slots), chunk(per_claim), done(slots, 0) {}

  void fail(std::exception_ptr e) {
    const std::lock_guard lock(mutex);
    if (!error) {
      error = std::move(e);
    }
    stop = true;
    slot_free.notify_all();
    item_done.notify_all();
  }

  void run_worker(const std::function<void(std::size_t)>& work) {
    for (;;) {
      std::size_t first = 0;
      std::size_t last = 0;
      {
        std::unique_lock lock(mutex);
        slot_free.wait(lock,
                       [&] { return stop || next >= count || std::min(count, next + chunk) <= delivered + window; });
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
      {
        const std::lock_guard lock(mutex);
        for (std::size_t item = first; item < last; ++item) {
          done[item % window] = 1;
        }
      }
      item_done.notify_one();
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
  // wake-ups rare, few enough that the other threads always find work while one delivers.
  const std::size_t chunk = std::max<std::size_t>(1, window / (4 * thread_count));
  Pool pool(count, window, chunk);
  std::vector<std::thread> threads;
  threads.reserve(thread_count);
  for (std::size_t t = 0; t < thread_count; ++t) {
    threads.emplace_back([&pool, &work] { pool.run_worker(work); });
  }
  for (std::size_t i = 0; i < count; ++i) {
    {
      std::unique_lock lock(pool.mutex);
      pool.item_done.wait(lock, [&] { return pool.stop || pool.done[i % pool.window] != 0; });
      if (pool.stop) {
        break;
      }
      pool.done[i % pool.window] = 0;
    }
    try {
      deliver(i);
    } catch (...) {
      pool.fail(std::current_exception());
      break;
    }
    bool wake = false;
    {
      const std::lock_guard lock(pool.mutex);
      ++pool.delivered;
      wake = pool.delivered % chunk == 0;
    }
    if (wake) {
      pool.slot_free.notify_all(); // a whole chunk's room is free again
    }
  }
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
