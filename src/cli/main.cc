// nbits: entry point. Dispatches to the registered subcommands.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/command.h"
#include "cli/common.h"
#include "guidance/guidance.h"

namespace nbits::cli {

static std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}

bool register_command(const Command& c) {
  registry().push_back(c);
  return true;
}

const std::vector<Command>& commands() { return registry(); }

static void print_usage(FILE* out) {
  std::fprintf(out,
               "nbits: fast int4/int8 LLM inference for ONNX (onnxruntime-genai) models\n\n"
               "usage: nbits <command> [options]   (nbits <command> --help for details)\n\ncommands:\n");
  std::vector<Command> cmds = commands();
  std::sort(cmds.begin(), cmds.end(),
            [](const Command& a, const Command& b) { return std::strcmp(a.name, b.name) < 0; });
  for (const auto& c : cmds) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
}

}  // namespace nbits::cli

int main(int argc, char** argv) {
  using namespace nbits::cli;
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("nbits 0.1.0\nconstrained decoding: %s\n", nbits::guidance::engine().c_str());
    return 0;
  }
  for (const auto& c : commands()) {
    if (name == c.name) {
      std::vector<std::string> args(argv + 2, argv + argc);
      try {
        return c.run(args);
      } catch (const nbits::Error& e) {
        std::fprintf(stderr, "nbits %s: error: %s\n", c.name, printable(e.what()).c_str());
        return 1;
      } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "nbits %s: error: out of memory\n", c.name);
        return 1;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "nbits %s: error: %s\n", c.name, printable(e.what()).c_str());
        return 1;
      }
    }
  }
  std::fprintf(stderr, "nbits: unknown command '%s'\n\n", name.c_str());
  print_usage(stderr);
  return 2;
}
