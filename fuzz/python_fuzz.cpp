// libFuzzer target: the Python lexer and the classifier on any bytes. The lexer promises tokens
// in order that view the source, one end token, and at most one recorded error; the classifier
// never fails and only reports evidence at positions that exist.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_check.hpp"
#include "tpulaunch/classify/classifier.hpp"
#include "tpulaunch/classify/python_lexer.hpp"
#include "support/token_batches.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);

  std::optional<tpulaunch::LexError> error;
  const auto tokens = tpulaunch::tokenize(source, &error);
  TPULAUNCH_FUZZ_CHECK(!tokens.empty());
  TPULAUNCH_FUZZ_CHECK(tokens.back().kind == tpulaunch::TokenKind::end);
  const char* previous_end = source.data();
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const auto& t = tokens[i];
    TPULAUNCH_FUZZ_CHECK(t.kind != tpulaunch::TokenKind::end || i + 1 == tokens.size());
    TPULAUNCH_FUZZ_CHECK(t.text.data() >= source.data() && t.text.data() + t.text.size() <= source.data() + source.size());
    TPULAUNCH_FUZZ_CHECK(t.text.data() >= previous_end); // in order, never overlapping
    previous_end = t.text.data() + t.text.size();
    TPULAUNCH_FUZZ_CHECK(t.line >= 1);
    if (t.kind == tpulaunch::TokenKind::string) {
      TPULAUNCH_FUZZ_CHECK(t.body().size() <= t.text.size());
      (void)tpulaunch::string_value(t);
    }
  }

  // The streaming interface gives the same tokens, whatever the batch size.
  tpulaunch::PythonLexer lexer(source);
  std::array<tpulaunch::Token, 7> batch;
  std::size_t index = 0;
  bool ended = false;
  while (!ended) {
    const std::size_t n = tpulaunch::testing::next_batch(lexer, batch);
    TPULAUNCH_FUZZ_CHECK(n > 0 && n <= batch.size());
    for (std::size_t i = 0; i < n; ++i) {
      TPULAUNCH_FUZZ_CHECK(index < tokens.size());
      TPULAUNCH_FUZZ_CHECK(batch[i].kind == tokens[index].kind && batch[i].text.data() == tokens[index].text.data() &&
                           batch[i].text.size() == tokens[index].text.size());
      ended = batch[i].kind == tpulaunch::TokenKind::end;
      ++index;
    }
  }
  TPULAUNCH_FUZZ_CHECK(index == tokens.size());
  TPULAUNCH_FUZZ_CHECK(lexer.error().has_value() == error.has_value());

  const auto classification = tpulaunch::classify_source(source);
  const auto lines = static_cast<std::size_t>(std::count(source.begin(), source.end(), '\n')) +
                     static_cast<std::size_t>(std::count(source.begin(), source.end(), '\r')) + 1;
  for (const auto& e : classification.evidence) {
    TPULAUNCH_FUZZ_CHECK(e.line >= 1 && e.line <= lines);
    TPULAUNCH_FUZZ_CHECK(tpulaunch::find_classifier_rule(tpulaunch::to_string(e.rule)) != nullptr);
  }
  TPULAUNCH_FUZZ_CHECK(!classification.why.empty());
  (void)tpulaunch::missing_multi_host_markers(classification);
  return 0;
}
