#pragma once
// Ordered parallel work on a small std::thread pool: independent items are worked on by up to N
// threads, and their results are handed back on the calling thread in item order, so the output
// is the one a single-threaded loop would give. `check` reads, hashes and classifies scripts this
// way.
#include <cstddef>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace tpulaunch {

// The cores this process may run on (its CPU affinity), at least 1.
unsigned available_cores();

// Runs `work(i)` for every i in [0, count) on up to `jobs` threads, and `deliver(i)` on the calling
// thread for i = 0, 1, 2, ... in order, each once work(i) has returned. At most `window` items are
// between the start of their work and their delivery, so whatever work leaves for deliver stays
// bounded; the threads claim items a few at a time (a quarter of their share of the window), and
// the calling thread sleeps until half the window (or the rest) is ready, then delivers it all:
// few wake-ups, so few context switches on a machine with as many threads as cores. With `jobs`
// <= 1 (or one item) no thread is started: work(0), deliver(0), work(1), ... run in turn on the
// calling thread. An exception from work or deliver stops the remaining work and is rethrown here
// once every thread has stopped.
void run_ordered(std::size_t count, unsigned jobs, std::size_t window, const std::function<void(std::size_t)>& work,
                 const std::function<void(std::size_t)>& deliver);

// run_ordered with the result of `work(i)` (a T) passed to `deliver(i, T&&)`: the results wait in a
// ring of 256 slots per job, never more. Keep T small and let work free what it allocated: memory
// one thread allocates and another frees costs a lock on the allocating thread's arena.
template <typename T, typename Work, typename Deliver>
void map_ordered(std::size_t count, unsigned jobs, Work&& work, Deliver&& deliver) {
  const std::size_t window = jobs <= 1 ? 1 : 256 * static_cast<std::size_t>(jobs);
  std::vector<std::optional<T>> slots(window);
  run_ordered(
      count, jobs, window, [&](std::size_t i) { slots[i % window].emplace(work(i)); },
      [&](std::size_t i) {
        auto& slot = slots[i % window];
        deliver(i, std::move(*slot));
        slot.reset();
      });
}

} // namespace tpulaunch
