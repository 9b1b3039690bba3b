#pragma once
// The two ways parse_matrix (src/matrix/matrix.cpp) reads an execution matrix, apart for the tests and
// the fuzzer that hold them to each other (tests/matrix/matrix_test.cpp, fuzz/matrix_fuzz.cpp).
#include <optional>
#include <string_view>

#include "tpulaunch/util/error.hpp"
#include "tpulaunch/matrix/matrix.hpp"

namespace tpulaunch::matrix_parse {

// Reads a valid matrix straight into a Matrix in one pass over the text, with no JSON tree in
// between: what `check` of a large course waits for first. Gives nullopt for any text it does not
// take, every invalid one among them; it never explains why.
std::optional<Matrix> direct(std::string_view json, std::string_view origin);

// Parses the JSON tree first (parse_json), then reads the matrix from it: the reader whose errors
// name the file, line and column. For every text `direct` takes, it gives the same Matrix.
Result<Matrix> from_tree(std::string_view json, std::string_view origin);

} // namespace tpulaunch::matrix_parse
