#include "tpulaunch/util/parallel.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace tpulaunch {
namespace {

// Work whose cost varies from item to item, so that with several threads items finish out of
// order and only the delivery keeps them in order.
std::uint64_t uneven_work(std::size_t i) {
  std::uint64_t x = i;
  for (std::size_t k = 0; k < (i % 7) * 2000; ++k) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
  }
  return x;
}

TEST(Parallel, DeliversEveryResultInItemOrder) {
  for (unsigned jobs : {1U, 2U, 3U, 8U}) {
    std::vector<std::size_t> order;
    std::vector<std::uint64_t> results;
    map_ordered<std::uint64_t>(
        500, jobs, [](std::size_t i) { return uneven_work(i); },
        [&](std::size_t i, std::uint64_t&& value) {
          order.push_back(i);
          results.push_back(value);
        });
    ASSERT_EQ(order.size(), 500U) << jobs;
    for (std::size_t i = 0; i < order.size(); ++i) {
      EXPECT_EQ(order[i], i) << "jobs " << jobs;
      EXPECT_EQ(results[i], uneven_work(i)) << "jobs " << jobs;
    }
  }
}

TEST(Parallel, OneJobRunsWorkThenDeliveryInTurnOnTheCallingThread) {
  std::vector<std::string> events;
  const auto caller = std::this_thread::get_id();
  bool other_thread = false;
  run_ordered(
      3, 1, 1,
      [&](std::size_t i) {
        other_thread = other_thread || std::this_thread::get_id() != caller;
        events.push_back("work " + std::to_string(i));
      },
      [&](std::size_t i) { events.push_back("deliver " + std::to_string(i)); });
  EXPECT_FALSE(other_thread);
  EXPECT_EQ(events, (std::vector<std::string>{"work 0", "deliver 0", "work 1", "deliver 1", "work 2", "deliver 2"}));
}

TEST(Parallel, SeveralJobsWorkOffTheCallingThreadAndDeliverOnIt) {
  const auto caller = std::this_thread::get_id();
  std::atomic<int> work_on_caller{0};
  int deliveries_elsewhere = 0;
  run_ordered(
      64, 2, 16, [&](std::size_t) { work_on_caller += std::this_thread::get_id() == caller ? 1 : 0; },
      [&](std::size_t) { deliveries_elsewhere += std::this_thread::get_id() != caller ? 1 : 0; });
  EXPECT_EQ(work_on_caller.load(), 0);
  EXPECT_EQ(deliveries_elsewhere, 0);
}

TEST(Parallel, NeverMoreThanTheWindowBetweenStartAndDelivery) {
  // A window smaller than the threads (claims of one item), and one that the threads claim a few
  // items of at a time, with a count that is no multiple of the claim.
  for (const auto& [count, jobs, window] : {std::tuple{400U, 4U, 5U}, std::tuple{1003U, 2U, 64U}}) {
    std::atomic<std::size_t> started{0};
    std::atomic<std::size_t> delivered{0};
    std::atomic<std::size_t> most{0};
    run_ordered(
        count, jobs, window,
        [&](std::size_t i) {
          const std::size_t in_flight = ++started - delivered.load();
          std::size_t seen = most.load();
          while (in_flight > seen && !most.compare_exchange_weak(seen, in_flight)) {
          }
          (void)uneven_work(i);
        },
        [&](std::size_t) { ++delivered; });
    EXPECT_EQ(delivered.load(), count);
    EXPECT_LE(most.load(), window);
    EXPECT_GE(most.load(), 1U);
  }
}

TEST(Parallel, AnExceptionFromWorkStopsTheRunAndIsRethrown) {
  for (unsigned jobs : {1U, 2U, 4U}) {
    std::atomic<std::size_t> delivered{0};
    EXPECT_THROW(run_ordered(
                     1000, jobs, 8,
                     [](std::size_t i) {
                       if (i == 37) {
                         throw std::runtime_error("item 37");
                       }
                     },
                     [&](std::size_t) { ++delivered; }),
                 std::runtime_error)
        << jobs;
    EXPECT_LE(delivered.load(), 37U) << jobs;
  }
}

TEST(Parallel, AnExceptionFromDeliveryStopsTheRunAndIsRethrown) {
  std::atomic<std::size_t> worked{0};
  EXPECT_THROW(run_ordered(
                   1000, 3, 8, [&](std::size_t) { ++worked; },
                   [](std::size_t i) {
                     if (i == 5) {
                       throw std::runtime_error("deliver 5");
                     }
                   }),
               std::runtime_error);
  EXPECT_LE(worked.load(), 5U + 8U); // the window bounds what was started past the failure
}

TEST(Parallel, NoItemsCallNothing) {
  int calls = 0;
  run_ordered(0, 4, 8, [&](std::size_t) { ++calls; }, [&](std::size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(Parallel, AvailableCoresIsAtLeastOne) { EXPECT_GE(available_cores(), 1U); }

} // namespace
} // namespace tpulaunch
