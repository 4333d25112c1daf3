// A tiny flag parser shared by the subcommands (llama.cpp style):
//
//   Flags f("run", "-m DIR [-p TEXT | --ids 1,2,3] [options]", "Generates text.");
//   f.str("-m,--model", "DIR", "model folder", /*required=*/true);
//   f.i64("-n,--n-predict", "N", "tokens to generate", 128, 0);
//   f.flag("--profile", "print a per-op profile");
//   if (auto rc = f.parse(args)) return *rc;  // --help printed (0) or usage error (2)
//   std::string dir = f.get_str("--model");
//
// Values are checked while parsing (type, range, choices), so getters cannot
// fail. Accepts "--name value" and "--name=value". Usage errors print one line
// on stderr and make parse() return 2.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nbits::cli {

class Flags {
 public:
  Flags(std::string command, std::string synopsis, std::string description);

  // Declarations. `names` is a comma-separated list ("-m,--model"); the getters
  // accept any of them.
  void str(const std::string& names, const std::string& metavar, const std::string& help,
           bool required = false, const std::string& def = "");
  void choice(const std::string& names, const std::vector<std::string>& choices, const std::string& help,
              const std::string& def);
  void i64(const std::string& names, const std::string& metavar, const std::string& help,
           std::optional<int64_t> def, int64_t min = std::numeric_limits<int64_t>::min(),
           int64_t max = std::numeric_limits<int64_t>::max());
  void f64(const std::string& names, const std::string& metavar, const std::string& help,
           std::optional<double> def, double min = -std::numeric_limits<double>::infinity(),
           double max = std::numeric_limits<double>::infinity());
  void ints(const std::string& names, const std::string& metavar, const std::string& help);  // "1,2,3"
  void flag(const std::string& names, const std::string& help);  // a switch, no value
  // Positional arguments, in order.
  void positional(const std::string& metavar, const std::string& help, bool required = true);

  // nullopt: go on. 0: --help was printed. 2: a usage error was printed.
  std::optional<int> parse(const std::vector<std::string>& args);

  bool has(const std::string& name) const;    // given on the command line (or has a default)
  bool given(const std::string& name) const;  // given on the command line
  std::string get_str(const std::string& name) const;
  int64_t get_i64(const std::string& name) const;
  double get_f64(const std::string& name) const;
  bool get_flag(const std::string& name) const;
  std::vector<int64_t> get_ints(const std::string& name) const;
  std::string get_positional(size_t i) const;  // "" when absent
  size_t positional_count() const { return positional_values_.size(); }

  // The text --help prints instead of the one made from the declarations (bench, make-model and
  // roofline keep their hand-written help).
  void set_help(std::string text) { help_text_ = std::move(text); }
  std::string help() const;
  // Prints "nbits CMD: MESSAGE (see nbits CMD --help)" on stderr; returns 2.
  int usage_error(const std::string& message) const;

 private:
  enum class Kind { kStr, kChoice, kI64, kF64, kInts, kFlag };
  struct Spec {
    std::vector<std::string> names;
    std::string metavar, help;
    Kind kind;
    bool required = false;
    std::optional<std::string> value;  // given or default, as text
    bool given = false;
    std::vector<std::string> choices;
    int64_t imin = 0, imax = 0;
    double fmin = 0, fmax = 0;
    int64_t ival = 0;
    double fval = 0;
    std::vector<int64_t> ivals;
  };
  Spec& add(const std::string& names, Kind kind, const std::string& metavar, const std::string& help);
  const Spec& spec(const std::string& name) const;
  Spec* find(const std::string& name);
  std::optional<std::string> check_value(Spec& s, const std::string& name, const std::string& v);

  std::string command_, synopsis_, description_, help_text_;
  std::vector<Spec> specs_;
  std::vector<std::pair<std::string, std::string>> positional_specs_;
  std::vector<bool> positional_required_;
  std::vector<std::string> positional_values_;
};

// Parses "1,2,3" into ints; nullopt if malformed.
std::optional<std::vector<int64_t>> parse_int_list(const std::string& text);

// "[1,2,3]".
std::string json_int_list(const std::vector<int32_t>& ids);

// Escapes a string for JSON output (quotes included).
std::string json_quote(const std::string& s);
// Text for the terminal: bytes that are not printable UTF-8 (names read from a
// file, error lines quoting them) become \xNN.
std::string printable(const std::string& s);

}  // namespace nbits::cli
