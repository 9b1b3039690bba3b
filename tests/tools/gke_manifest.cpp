// gke_manifest: prints the Kubernetes objects src/gke/ builds, for the real-kubectl harness
// (tests/real-kubectl/), which applies them with the real kubectl. A test tool, not part of
// tpulaunch: the plan will build the same objects through the same functions.
//
//   gke_manifest jobset --slice S [--slices N] --name NAME [--namespace NS] --image IMAGE
//                --config-map CM --mount PATH [--label K=V]... [--env K=V]... -- ARGV...
//   gke_manifest configmap --name NAME [--namespace NS] [--label K=V]... FILE...
//
// A configmap holds each FILE under its base name. Prints the object as JSON (dump(2)) on stdout;
// a bad value is "gke_manifest: error: ..." on stderr and exit 2.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tpulaunch/catalog/backend.hpp"
#include "tpulaunch/gke/manifest.hpp"

namespace {

using tpulaunch::gke::Pairs;

int fail(const std::string& message) {
  std::fprintf(stderr, "gke_manifest: error: %s\n", message.c_str());
  return 2;
}

std::pair<std::string, std::string> key_value(const std::string& text) {
  const auto eq = text.find('=');
  return eq == std::string::npos ? std::pair{text, std::string()} : std::pair{text.substr(0, eq), text.substr(eq + 1)};
}

struct Args {
  std::string slice, name, name_space = "default", image, config_map, mount;
  int slices = 1;
  Pairs labels, env;
  std::vector<std::string> rest; // ARGV after "--", or the configmap's files
};

// Reads the options after the subcommand; false (with `error` set) on an unknown or valueless one.
bool parse(int argc, char** argv, Args& args, std::string& error) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") {
      args.rest.assign(argv + i + 1, argv + argc);
      return true;
    }
    if (word.substr(0, 2) != "--") {
      args.rest.emplace_back(word);
      continue;
    }
    if (i + 1 >= argc) {
      error = std::string(word) + " needs a value";
      return false;
    }
    const std::string value = argv[++i];
    if (word == "--slice") {
      args.slice = value;
    } else if (word == "--slices") {
      args.slices = std::stoi(value);
    } else if (word == "--name") {
      args.name = value;
    } else if (word == "--namespace") {
      args.name_space = value;
    } else if (word == "--image") {
      args.image = value;
    } else if (word == "--config-map") {
      args.config_map = value;
    } else if (word == "--mount") {
      args.mount = value;
    } else if (word == "--label") {
      args.labels.push_back(key_value(value));
    } else if (word == "--env") {
      args.env.push_back(key_value(value));
    } else {
      error = "unknown option " + std::string(word);
      return false;
    }
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  Args args;
  std::string error;
  if (argc < 2 || !parse(argc, argv, args, error)) {
    return fail(error.empty() ? "usage: gke_manifest jobset|configmap OPTIONS" : error);
  }
  const std::string_view command = argv[1];
  tpulaunch::Result<nlohmann::ordered_json> manifest = tpulaunch::usage_error("unknown subcommand");
  if (command == "jobset") {
    auto catalog = tpulaunch::load_embedded_catalog();
    auto slice = tpulaunch::require_slice_for(tpulaunch::Backend::gke, *catalog, args.slice);
    if (!slice) {
      return fail(slice.error().message);
    }
    manifest = tpulaunch::gke::jobset_manifest({.name = args.name, .name_space = args.name_space, .slice = *slice,
                                                .slices = args.slices, .image = args.image, .argv = args.rest,
                                                .env = args.env, .config_map = args.config_map,
                                                .mount_path = args.mount, .labels = args.labels});
  } else if (command == "configmap") {
    tpulaunch::gke::ConfigMapSpec spec{.name = args.name, .name_space = args.name_space, .files = {}, .labels = args.labels};
    for (const auto& path : args.rest) {
      std::ifstream in(path, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      if (!in) {
        return fail("cannot read " + path);
      }
      spec.files[std::filesystem::path(path).filename().string()] = text.str();
    }
    manifest = tpulaunch::gke::config_map_manifest(spec);
  }
  if (!manifest) {
    return fail(manifest.error().message);
  }
  std::printf("%s\n", manifest->dump(2).c_str());
  return 0;
}
