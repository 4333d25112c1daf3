// `nbits` subcommands register themselves here: one file per subcommand.
#pragma once

#include <string>
#include <vector>

namespace nbits::cli {

// args excludes the program and subcommand names. Returns the exit code.
using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* summary;  // one line for `nbits --help`
  CommandFn run;
};

// Called by static registrars (see NBITS_COMMAND); returns a dummy for them.
bool register_command(const Command& c);
const std::vector<Command>& commands();

}  // namespace nbits::cli

#define NBITS_CLI_CAT2(a, b) a##b
#define NBITS_CLI_CAT(a, b) NBITS_CLI_CAT2(a, b)
// NBITS_COMMAND("run", "generate text", run_main);
#define NBITS_COMMAND(name, summary, fn) \
  static const bool NBITS_CLI_CAT(nbits_cmd_, __LINE__) = ::nbits::cli::register_command({name, summary, fn})
