#include "rill/config/exec_config.h"

#include <chrono>

namespace rill::config {

namespace {

const std::vector<std::string_view> kHookKeys = {"on", "command", "restart", "names"};
const std::vector<std::string_view> kEvents = {"publish", "publish_done", "record_done"};
const std::vector<std::string_view> kPlaceholders = {"app", "name", "group", "query", "addr", "path", "hop"};

// Walks `arg`: literal text goes to `text`, each placeholder's name to `placeholder`. On a syntax
// error returns the message.
template <class Text, class Placeholder>
std::optional<std::string> walk(std::string_view arg, Text&& text, Placeholder&& placeholder) {
  for (size_t i = 0; i < arg.size(); ++i) {
    const char c = arg[i];
    if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
      text(c);  // "{{" / "}}": a brace
      ++i;
    } else if (c == '}') {
      return "unmatched '}' at offset " + std::to_string(i) + " (write }} for a brace)";
    } else if (c != '{') {
      text(c);
    } else {
      const size_t close = arg.find('}', i);
      if (close == std::string_view::npos)
        return "unclosed '{' at offset " + std::to_string(i) + " (write {{ for a brace)";
      if (auto why = placeholder(arg.substr(i + 1, close - i - 1))) return why;
      i = close;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> exec_arg_error(std::string_view arg) {
  return walk(
      arg, [](char) {},
      [](std::string_view name) -> std::optional<std::string> {
        for (std::string_view k : kPlaceholders) {
          if (name == k) return std::nullopt;
        }
        std::string error = "unknown placeholder {" + std::string(name) +
                            "}: expected {app}, {name}, {group}, {query}, {addr}, {path} or {hop}";
        const std::string near = closest_match(name, kPlaceholders);
        if (!near.empty()) error += "; did you mean {" + near + "}?";
        return error;
      });
}

std::string expand_exec_arg(std::string_view arg, const ExecVars& vars) {
  std::string out;
  walk(
      arg, [&](char c) { out += c; },
      [&](std::string_view name) -> std::optional<std::string> {
        if (name == "app") out += vars.app;
        if (name == "name") out += vars.name;
        if (name == "group") out += vars.group;
        if (name == "query") out += vars.query;
        if (name == "addr") out += vars.addr;
        if (name == "path") out += vars.path;
        if (name == "hop") out += kExecHopMarker;
        return std::nullopt;
      });
  return out;
}

bool exec_name_matches(std::string_view pattern, std::string_view name) {
  // Iterative wildcard match: on a mismatch, let the last '*' swallow one more character.
  size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p, ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool exec_hook_applies(const ExecHook& hook, std::string_view name, std::string_view query) {
  // The anti-loop rule: a publish carrying the hop marker comes from an exec child.
  for (size_t at = 0; at <= query.size();) {
    const size_t amp = std::min(query.find('&', at), query.size());
    if (query.substr(at, amp - at) == kExecHopMarker) return false;
    at = amp + 1;
  }
  if (hook.names.empty()) return true;
  for (const std::string& pattern : hook.names) {
    if (exec_name_matches(pattern, name)) return true;
  }
  return false;
}

std::string_view to_string(ExecEvent e) {
  return e == ExecEvent::Publish ? "publish" : e == ExecEvent::PublishDone ? "publish_done" : "record_done";
}

namespace {

ExecHook read_hook(const YamlReader& reader, const YamlField& f) {
  if (!f.node.IsMap())
    reader.fail(f, "expected a map (on, command, restart, names), got " + YamlReader::describe(f.node));
  const YamlMap map(reader, f, kHookKeys);
  ExecHook hook;
  const auto on = map.get("on");
  if (!on) reader.fail(f, "missing: on (publish, publish_done or record_done)");
  const std::string event = reader.one_of(*on, kEvents);
  hook.on = event == "publish"        ? ExecEvent::Publish
            : event == "publish_done" ? ExecEvent::PublishDone
                                      : ExecEvent::RecordDone;
  const auto command = map.get("command");
  if (!command) reader.fail(f, "missing: command (a list: the program, then its arguments)");
  if (!command->node.IsSequence() || command->node.size() == 0)
    reader.fail(*command, "expected a non-empty list (argv: the program, then its arguments), got " +
                              YamlReader::describe(command->node));
  for (const YamlField& arg : reader.string_list(*command)) {
    hook.command.push_back(reader.string(arg, /*allow_empty=*/true));
    if (auto why = exec_arg_error(hook.command.back())) reader.fail(arg, *why);
  }
  if (hook.command.front().empty()) reader.fail(*command, "the program (first item) must not be empty");
  map.read_duration("restart", hook.restart, std::chrono::milliseconds(0), std::chrono::hours(1));
  if (hook.on != ExecEvent::Publish && map.get("restart") && hook.restart.count() != 0)
    reader.fail(*map.get("restart"), "only a publish hook restarts (publish_done and record_done run once)");
  if (auto names = map.get("names")) {
    for (const YamlField& n : reader.string_list(*names)) hook.names.push_back(reader.string(n, false));
  }
  return hook;
}

}  // namespace

void read_exec(const YamlReader& reader, const YamlMap& app_map, AppConfig& app) {
  const auto field = app_map.get("exec");
  if (!field) return;
  if (!field->node.IsSequence())
    reader.fail(*field, "expected a list of hooks, got " + YamlReader::describe(field->node));
  for (size_t i = 0; i < field->node.size(); ++i) {
    const YAML::Node n = field->node[i];
    app.exec.push_back(
        read_hook(reader, YamlField{n, n.Mark(), field->path + "[" + std::to_string(i) + "]"}));
  }
}

}  // namespace rill::config
