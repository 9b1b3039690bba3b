// The argument checks of a matched call: evaluate_call() dispatches on the matcher's ArgCheck to
// one function per kind, each of which adds the evidence its arguments show.
#include <algorithm>

#include <fmt/format.h>

#include "classify/scanner.hpp"

namespace tpulaunch::scan {
namespace {

// A matcher whose arguments can select the CPU (not a plain use, nor the backend probe).
bool selects(const CallMatcher& matcher) {
  return arg_selects(matcher) || loads_code(matcher);
}

} // namespace

void Scanner::evaluate_call(const Bracket& bracket, std::size_t end) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  if (loads_code(matcher) && matcher.callee.find('.') == std::string_view::npos) {
    // exec, eval, __import__: the rows this call adds go if the file binds the name itself.
    const std::size_t first = m_evidence.size();
    evaluate_loader(bracket, end);
    if (m_evidence.size() > first) {
      m_builtin_calls.push_back(BuiltinCall{matcher.callee, first, m_evidence.size()});
    }
    return;
  }
  evaluate_loader(bracket, end);
}

void Scanner::evaluate_loader(const Bracket& bracket, std::size_t end) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const std::span<const Token> tokens(m_capture);
  switch (matcher.check) {
  case ArgCheck::none:
  case ArgCheck::backend_probe:
    return;
  case ArgCheck::backend_cpu:
    check_backend_cpu(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::cpu_device: {
    const Args args = split_args(tokens, bracket.capture_start, end, ",");
    if (const Arg* device = arg_at(args, matcher.position, matcher.keywords[0])) {
      check_device(DeviceSeen{bracket.saw_cpu_device, bracket.saw_device}, tokens, device->begin, device->end,
                   *matcher.rule, bracket.root, fmt::format("the device of {}()", matcher.callee));
    }
    return;
  }
  case ArgCheck::config_key:
  case ArgCheck::env_pair:
    check_key_value(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::env_mapping:
    check_env_mapping(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::computed:
    check_computed(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::load_module:
  case ArgCheck::run_module:
    check_load_module(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::dunder_import:
    check_dunder_import(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::load_path:
    check_load_path(bracket, tokens, split_args(tokens, bracket.capture_start, end, ","));
    return;
  case ArgCheck::exec_code: {
    // Named: positional() points into it, so a temporary would be gone before the check reads it.
    const Args args = split_args(tokens, bracket.capture_start, end, ",");
    if (const Arg* source = args.positional(0)) {
      check_exec(bracket, tokens, source->begin, source->end, 0);
    }
    return;
  }
  case ArgCheck::started_program:
    check_started_program(bracket, tokens, end);
    return;
  }
}

// jax.devices("cpu"), jax.local_devices(backend="cpu"), get_backend(platform="cpu"): the
// backend parameter (or, as before, any positional string) is "cpu". An unknown backend value is
// platform-unresolved evidence.
void Scanner::check_backend_cpu(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const bool cpu = std::any_of(args.items.begin(), args.items.end(), [&](const Arg& arg) {
    if (!arg.keyword.empty() && arg.keyword != matcher.keywords[0]) {
      return false;
    }
    const auto value = literal_value(tokens, arg.begin, arg.end);
    return value && lower_trimmed(*value) == "cpu";
  });
  if (cpu) {
    add_evidence(*matcher.rule, bracket.root);
    on_cpu_device_evidence();
    return;
  }
  if (matcher.lists_devices) {
    on_device_listed();
  }
  if (const Arg* backend = arg_at(args, matcher.position, matcher.keywords[0])) {
    check_value(ValueCheck::is_cpu, *matcher.rule, tokens, backend->begin, backend->end, bracket.root, true,
                fmt::format("the {} of {}()", matcher.keywords[0], matcher.callee));
  }
}

// True when some bare name in tokens[begin, end) (not an attribute) is one of `names`.
bool Scanner::names_one_of(std::span<const Token> tokens, std::size_t begin, std::size_t end,
                           const std::vector<std::string_view>& names) const {
  for (std::size_t i = begin; i < end && !names.empty(); ++i) {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::name && (i == begin || !is_op(tokens[i - 1], ".")) &&
        std::find(names.begin(), names.end(), t.text) != names.end()) {
      return true;
    }
  }
  return false;
}

// A device argument (jax.default_device(x), the jax_default_device option): JAX takes a Device
// or a platform name there. A CPU device expression, or a name assigned from one, is CPU; a device
// that jax.devices()/local_devices() listed otherwise (or a name assigned from one) is not a
// platform name; anything else is read as a platform value, and fails closed when it cannot be.
void Scanner::check_device(DeviceSeen seen, std::span<const Token> tokens, std::size_t begin, std::size_t end,
                           Rule rule, const Pos& pos, std::string_view what) {
  if (seen.cpu || names_one_of(tokens, begin, end, m_cpu_names)) {
    add_evidence(rule, pos);
    return;
  }
  if (seen.device || names_one_of(tokens, begin, end, m_device_names)) {
    return;
  }
  check_value(ValueCheck::is_cpu, rule, tokens, begin, end, pos, true, what);
}

// The value of a key's table row (k_env_keys or k_config_keys).
void Scanner::check_rule_value(const KeyRule& rule, std::span<const Token> tokens, std::size_t begin, std::size_t end,
                               DeviceSeen seen, const Pos& pos) {
  const std::string what = fmt::format("the value of {}", rule.key);
  if (rule.check == ValueCheck::device) {
    check_device(seen, tokens, begin, end, rule.rule, pos, what);
  } else {
    check_value(rule.check, rule.rule, tokens, begin, end, pos, true, what);
  }
}

// A (key, value) pair of the environment or the JAX config. A literal key is looked up in its
// table at once; a key held in a name once the file's bindings are known (resolve_pending); any
// other key may be any variable, so it fails closed.
void Scanner::check_key(bool config, std::span<const Token> tokens, const Arg& key, const Arg& value, DeviceSeen seen,
                        const Pos& pos, std::string_view where) {
  const ValueExpr name = read_value(tokens, key.begin, key.end);
  switch (name.shape) {
  case ValueExpr::Shape::literal:
    if (const KeyRule* rule = config ? find_config_key(name.literal) : find_env_key(name.literal)) {
      check_rule_value(*rule, tokens, value.begin, value.end, seen, pos);
    }
    return;
  case ValueExpr::Shape::constant:
    return;
  case ValueExpr::Shape::name:
    m_pending_keys.push_back(PendingKey{name.name, config, true,
                                        std::vector<Token>(tokens.begin() + static_cast<std::ptrdiff_t>(value.begin),
                                                           tokens.begin() + static_cast<std::ptrdiff_t>(value.end)),
                                        seen, std::string(where), pos});
    return;
  case ValueExpr::Shape::other:
    add_evidence(Rule::platform_unresolved, pos,
                 fmt::format("the key of {} is `{}`, not a string literal", where,
                             source_text(tokens, key.begin, key.end)));
    return;
  }
}

// jax.config.update(name, val), os.environ.setdefault(key, default), os.putenv(name, value):
// the key is looked up in the matcher's key table, whose row says how to read the value.
void Scanner::check_key_value(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const CallMatcher& matcher = k_call_matchers[bracket.matcher];
  const Arg* name = arg_at(args, matcher.position, matcher.keywords[0]);
  const Arg* value = arg_at(args, matcher.position + 1U, matcher.keywords[1]);
  if (name == nullptr || value == nullptr) {
    return;
  }
  check_key(matcher.check == ArgCheck::config_key, tokens, *name, *value,
            DeviceSeen{bracket.saw_cpu_device, bracket.saw_device}, bracket.root, fmt::format("{}()", matcher.callee));
}

// os.environ.update(NAME=value, ...) or os.environ.update(<mapping>).
void Scanner::check_env_mapping(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  for (const Arg& arg : args.items) {
    if (arg.keyword.empty()) {
      check_mapping(tokens, arg.begin, arg.end, bracket.root);
    } else if (const KeyRule* rule = find_env_key(arg.keyword)) {
      check_rule_value(*rule, tokens, arg.begin, arg.end, DeviceSeen{}, bracket.root);
    }
  }
}

// The dotted name tokens[begin, end) (`jax`, `jax.config`, an alias) stands for, through the
// script's imports; nullopt when it is not a dotted name.
std::optional<std::string> Scanner::qualify(std::span<const Token> tokens, std::size_t begin, std::size_t end) const {
  if (begin >= end || (end - begin) % 2 == 0) {
    return std::nullopt;
  }
  for (std::size_t i = begin; i < end; ++i) {
    if ((i - begin) % 2 == 0 ? tokens[i].kind != TokenKind::name : !is_op(tokens[i], ".")) {
      return std::nullopt;
    }
  }
  const std::string* alias = alias_of(tokens[begin].text);
  std::string out(alias != nullptr ? std::string_view(*alias) : tokens[begin].text);
  for (std::size_t i = begin + 2; i < end; i += 2) {
    out += '.';
    out += tokens[i].text;
  }
  return out;
}

// getattr(jax, name)(...) and the like: an attribute of a namespace that holds a selecting
// function (jax, jax.config, os, os.environ, ...) picked by a computed name, or by a string that
// names such a function, is a call the classifier does not read: it may select the CPU.
void Scanner::check_computed(const Bracket& bracket, std::span<const Token> tokens, const Args& args) {
  const Arg* object = args.positional(0);
  const Arg* attribute = args.positional(1);
  if (object == nullptr || attribute == nullptr) {
    return;
  }
  const auto owner = qualify(tokens, object->begin, object->end);
  const auto holds_selecting = [](const std::string& prefix) {
    return std::any_of(k_call_matchers.begin(), k_call_matchers.end(), [&](const CallMatcher& m) {
      return selects(m) && (m.callee == prefix || (m.callee.starts_with(prefix) && m.callee[prefix.size()] == '.'));
    });
  };
  if (!owner || !holds_selecting(*owner)) {
    return;
  }
  if (const auto name = literal_value(tokens, attribute->begin, attribute->end)) {
    const std::string target = *owner + "." + *name;
    if (holds_selecting(target)) {
      add_evidence(Rule::platform_unresolved, bracket.root,
                   fmt::format("getattr() reaches {} by name, a call the classifier does not read", target));
    }
    return;
  }
  add_evidence(Rule::platform_unresolved, bracket.root,
               fmt::format("getattr() picks an attribute of {} by the value of `{}`, only known at run time", *owner,
                           source_text(tokens, attribute->begin, attribute->end)));
}

} // namespace tpulaunch::scan
