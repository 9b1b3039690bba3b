#pragma once
// Expected failures are values: `Result<T>` holds either a T or an `Error` (an exit code and a
// one-line message). Only the CLI turns an Error into `tpulaunch: error: <message>` and an exit code.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "tpulaunch/util/exit_code.hpp"

namespace tpulaunch {

struct Error {
  ExitCode code = ExitCode::failure;
  std::string message; // lower case, no trailing period; names the file, position or value
};

inline Error usage_error(std::string message) { return {ExitCode::usage, std::move(message)}; }
inline Error config_error(std::string message) { return {ExitCode::config, std::move(message)}; }
inline Error refused_error(std::string message) { return {ExitCode::refused, std::move(message)}; }
inline Error failure(std::string message) { return {ExitCode::failure, std::move(message)}; }

// `value` with control and non-ASCII bytes (and '\\') shown as \xNN, cut after 120 bytes: how a
// message quotes user input, so one message stays one readable line.
std::string printable(std::string_view value);

// "1 worker", "4 workers": a count and its noun, as messages write it ("1 workers" never).
// `plural` is for nouns that do not just add an 's' ("entries"); empty means `noun` + "s".
std::string counted(std::size_t count, std::string_view noun, std::string_view plural = {});

// Where a message points, when it starts as compilers' do: "FILE:LINE:COLUMN: ..." or
// "FILE:LINE: ..." (the first such prefix without ": " in FILE). Every config Error about a
// position in a file is written so; `check` puts the line (and column) into its JSON and its
// workflow annotations. Nothing for a message without one.
struct MessagePosition {
  std::string file;
  std::uint32_t line = 0;   // 1-based
  std::uint32_t column = 0; // 1-based; 0 when the message gives none
};
std::optional<MessagePosition> message_position(std::string_view message);

// A value or an Error. Deliberately small: `ok()`, `value()`, `error()`, and `*`/`->` access.
template <typename T> class [[nodiscard]] Result {
public:
  Result(T value) : m_state(std::in_place_index<0>, std::move(value)) {} // NOLINT(google-explicit-constructor)
  Result(Error error) : m_state(std::in_place_index<1>, std::move(error)) {} // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool ok() const { return m_state.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(m_state); }
  const T& value() const& { return std::get<0>(m_state); }
  T&& value() && { return std::get<0>(std::move(m_state)); }
  const Error& error() const { return std::get<1>(m_state); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

private:
  std::variant<T, Error> m_state;
};

// For operations that return nothing but may fail.
struct Ok {};
using Status = Result<Ok>;

} // namespace tpulaunch

// Early return of an Error: `TPULAUNCH_TRY(auto value, parse(x));` declares `value` from a
// Result, or returns its Error from the enclosing function (as ccache's TRY does).
#define TPULAUNCH_CONCAT_INNER(a, b) a##b
#define TPULAUNCH_CONCAT(a, b) TPULAUNCH_CONCAT_INNER(a, b)
#define TPULAUNCH_TRY(declaration, expression) \
  TPULAUNCH_TRY_IMPL(declaration, expression, TPULAUNCH_CONCAT(tpulaunch_try_, __LINE__))
#define TPULAUNCH_TRY_IMPL(declaration, expression, temp) \
  auto temp = (expression);                              \
  if (!temp) {                                           \
    return temp.error();                                 \
  }                                                      \
  declaration = std::move(temp).value()
// Early return of an Error from a Status.
#define TPULAUNCH_CHECK(expression)              \
  do {                                           \
    if (auto status_ = (expression); !status_) { \
      return status_.error();                    \
    }                                            \
  } while (false)
