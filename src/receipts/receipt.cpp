#include "receipt.hpp"

namespace tpulaunch::receipts {
namespace {

std::string_view type_name(Type type) {
  switch (type) {
  case Type::integer: return "an integer";
  case Type::number: return "a number";
  case Type::string: return "a string";
  case Type::array: return "an array";
  }
  return "a value";
}

bool has_type(const json& value, Type type) {
  switch (type) {
  case Type::integer: return value.is_number_integer();
  case Type::number: return value.is_number();
  case Type::string: return value.is_string();
  case Type::array: return value.is_array();
  }
  return false;
}

} // namespace

std::string_view json_type_name(const json& value) {
  if (value.is_number()) {
    return value.is_number_integer() ? "an integer" : "a number";
  }
  return value.type_name();
}

// The member `key` when it exists and has `type`; otherwise a finding and nullptr.
const json* Receipt::get(std::string_view key, Type type) const {
  auto it = m_value.find(key);
  if (it == m_value.end()) {
    add(key, fmt::format("missing (expected {})", type_name(type)));
    return nullptr;
  }
  if (!has_type(*it, type)) {
    add(key, fmt::format("is {}, expected {}", json_type_name(*it), type_name(type)));
    return nullptr;
  }
  return &*it;
}

} // namespace tpulaunch::receipts
