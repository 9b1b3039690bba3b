#include <fmt/format.h>

#include "commands.hpp"

namespace tpulaunch::cli {

Result<Catalog> load_catalog(const Globals& globals) {
  if (globals.catalog.empty()) {
    return load_embedded_catalog();
  }
  return load_catalog_file(globals.catalog);
}

Result<Matrix> load_matrix(const Globals& globals) { return load_matrix_file(globals.matrix); }

std::string exit_codes_help() {
  std::string out = "Exit codes:\n";
  for (const auto& info : k_exit_codes) {
    out += fmt::format("  {:<4}{:<12}{}\n", to_int(info.code), info.name, info.meaning);
  }
  return out;
}

void add_format_option(CLI::App& app, std::string& format, const std::vector<std::string>& choices) {
  format = choices.front();
  app.add_option("--format", format, "output format")
      ->check(CLI::IsMember(choices))
      ->default_str(choices.front());
}

} // namespace tpulaunch::cli
