// The eight-bytes-at-a-time scans (src/util/byte_scan.hpp) stop exactly where a byte-by-byte scan
// would: every byte value, at every position of a word and across word boundaries.
#include "util/byte_scan.hpp"

#include <string>

#include <gtest/gtest.h>

namespace tpulaunch {
namespace {

bool json_plain(unsigned char b) {
  return b >= 0x20 && b < 0x80 && b != '"' && b != '\\';
}

TEST(ByteScan, PlainJsonRunStopsAtTheFirstByteAStringCannotHoldAsItIs) {
  for (int value = 0; value < 256; ++value) {
    for (std::size_t at = 0; at < 20; ++at) {
      std::string text(24, 'a');
      text[at] = static_cast<char>(value);
      const std::size_t expected = json_plain(static_cast<unsigned char>(value)) ? text.size() : at;
      EXPECT_EQ(byte_scan::plain_json_run(text, 0), expected) << "byte " << value << " at " << at;
      if (at >= 3) {
        EXPECT_EQ(byte_scan::plain_json_run(text, 3), expected) << "byte " << value << " at " << at << " from 3";
      }
    }
  }
}

TEST(ByteScan, PlainAsciiWordsStopAtTheWordHoldingANulOrANonAsciiByte) {
  for (int value = 0; value < 256; ++value) {
    for (std::size_t at = 0; at < 20; ++at) {
      std::string text(21, 'a'); // two whole words and a tail of five bytes
      text[at] = static_cast<char>(value);
      const bool plain = value != 0 && value < 0x80;
      const std::size_t end = byte_scan::plain_ascii_words(text, 0);
      if (plain || at >= 16) {
        EXPECT_EQ(end, 16U) << "byte " << value << " at " << at; // the tail is the caller's
      } else {
        EXPECT_EQ(end, at / 8 * 8) << "byte " << value << " at " << at;
      }
    }
  }
}

} // namespace
} // namespace tpulaunch
