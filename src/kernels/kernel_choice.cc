#include "kernels/kernel_choice.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string_view>

#include "base/timer.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace nbits::kernels {
namespace {

constexpr const char* kMagic = "nbits-kernel-choice\t1";
// Timing: rounds over the candidates in turn (a noisy moment hits all of them), at least
// kMinRounds, then more while the key has used less than kBudgetMs; the median of each. A model
// has a handful of keys (formats x 2 roles): the first load on a CPU spends ~50-100 ms on them.
constexpr int kMinRounds = 3, kMaxRounds = 15;
constexpr double kBudgetMs = 8;
constexpr double kSampleUs = 100;  // a timed sample repeats calls shorter than this

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != 0 ? v : nullptr;
}

// Why the choice is off ("" when it is on).
std::string off_reason() {
  if (const char* isa = env("NBITS_ISA")) return std::string("NBITS_ISA=") + isa;
  if (const char* c = env("NBITS_KERNEL_CHOICE")) {
    const std::string_view v = c;
    if (v == "off" || v == "0") return "NBITS_KERNEL_CHOICE=off";
  }
  return "";
}

std::string sanitize(std::string s) {
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '-';
  std::string out;
  for (char c : s)
    if (!(c == '-' && !out.empty() && out.back() == '-')) out += c;
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "cpu" : out.substr(0, 96);
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

struct Entry {
  std::vector<std::string> names;
  std::vector<double> us;
  size_t chosen = 0;
};

struct State {
  std::mutex mu;
  bool file_read = false;
  std::string file;                    // the path, "" when none
  std::map<std::string, Entry> saved;  // the file's entries (and the new ones, written back)
  std::map<std::string, size_t> decided;
  std::vector<KernelChoice> log;
};

State& state() {
  static State s;
  return s;
}

std::string default_file() {
  if (const char* f = env("NBITS_KERNEL_CHOICE_FILE")) return f;
  std::string dir;
  if (const char* c = env("NBITS_CACHE"))
    dir = c;
  else if (const char* x = env("XDG_CACHE_HOME"))
    dir = std::string(x) + "/nbits";
  else if (const char* h = env("HOME"))
    dir = std::string(h) + "/.cache/nbits";
  else
    return "";
  return dir + "/kernel-choice/" + sanitize(kernel_choice_cpu()) + ".tsv";
}

void warn(const std::string& file, const std::string& why) {
  std::fprintf(stderr, "nbits: ignoring the kernel choice file %s (%s); measuring again\n", file.c_str(),
               why.c_str());
}

// Reads the file into s.saved; anything unexpected ignores all of it (one warning). A file of
// an earlier build on this CPU is stale, not foreign: dropped without a word.
void read_file(State& s) {
  s.file_read = true;
  s.file = default_file();
  if (s.file.empty()) return;
  std::ifstream in(s.file);
  if (!in) return;
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  std::map<std::string, Entry> got;
  auto bad = [&](const std::string& why) { warn(s.file, why); };
  if (lines.size() < 3 || lines[0] != kMagic) return bad("not a kernel choice file");
  if (lines[1].rfind("cpu\t", 0) != 0 || lines[2].rfind("build\t", 0) != 0)
    return bad("no cpu and build lines");
  if (lines[1].substr(4) != kernel_choice_cpu()) return bad("measured on another CPU: " + lines[1].substr(4));
  if (lines[2].substr(6) != kernel_choice_build()) return;  // an earlier build: measure again
  for (size_t i = 3; i < lines.size(); ++i) {
    std::vector<std::string> f;
    std::stringstream ss(lines[i]);
    for (std::string x; std::getline(ss, x, '\t');) f.push_back(x);
    if (f.size() < 3) return bad("line " + std::to_string(i + 1) + " has too few fields");
    Entry e;
    for (size_t j = 2; j < f.size(); ++j) {
      const auto eq = f[j].rfind('=');
      if (eq == std::string::npos || eq == 0) return bad("line " + std::to_string(i + 1) + ": no name=us");
      char* end = nullptr;
      const double us = std::strtod(f[j].c_str() + eq + 1, &end);
      if (end == f[j].c_str() + eq + 1 || *end != 0 || !(us > 0 && us < 1e9))
        return bad("line " + std::to_string(i + 1) + ": a time that is no number");
      e.names.push_back(f[j].substr(0, eq));
      e.us.push_back(us);
    }
    const auto it = std::find(e.names.begin(), e.names.end(), f[1]);
    if (it == e.names.end()) return bad("line " + std::to_string(i + 1) + ": the choice is no candidate");
    e.chosen = static_cast<size_t>(it - e.names.begin());
    got[f[0]] = std::move(e);
  }
  s.saved = std::move(got);
}

// Writes s.saved (atomically: a temporary then rename). A cache that cannot be written is no
// error: the choice then holds for this process only.
void write_file(const State& s) {
  if (s.file.empty()) return;
  std::error_code ec;
  const std::filesystem::path path(s.file);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const std::string tmp = s.file + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return;
    out << "# nbits kernel choice: the fastest micro-kernel per role and packed format, timed on this CPU\n"
           "# (microseconds a call on a model's weight). Delete this file to measure again.\n"
        << kMagic << "\ncpu\t" << kernel_choice_cpu() << "\nbuild\t" << kernel_choice_build() << "\n";
    for (const auto& [key, e] : s.saved) {
      out << key << '\t' << e.names[e.chosen];
      for (size_t i = 0; i < e.names.size(); ++i) out << '\t' << e.names[i] << '=' << e.us[i];
      out << '\n';
    }
    if (!out) return;
  }
  std::filesystem::rename(tmp, s.file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

std::vector<double> measure(const std::vector<KernelCandidate>& c) {
  // Warm (pages, caches, first-call scratch), and size a sample: calls on a small weight take a
  // few microseconds, below the clock's and the scheduler's noise, so a sample repeats them.
  double fastest = 1e30;
  bool prepared = false;
  for (const auto& k : c) {
    if (k.before) k.before(), prepared = true;
    Stopwatch sw;
    k.run();
    fastest = std::min(fastest, sw.elapsed_ms() * 1e3);
  }
  // A prepared call (the weight evicted) is one sample: repeating it would run from cache.
  const int inner =
      prepared ? 1 : static_cast<int>(std::clamp(kSampleUs / std::max(fastest, 0.01), 1.0, 256.0));
  std::vector<std::vector<double>> t(c.size());
  Stopwatch total;
  for (int round = 0; round < kMaxRounds && (round < kMinRounds || total.elapsed_ms() < kBudgetMs); ++round)
    for (size_t i = 0; i < c.size(); ++i) {
      if (c[i].before) c[i].before();
      Stopwatch sw;
      for (int r = 0; r < inner; ++r) c[i].run();
      t[i].push_back(sw.elapsed_ms() * 1e3 / inner);
    }
  std::vector<double> med;
  for (auto& v : t) {
    std::sort(v.begin(), v.end());
    med.push_back(v[v.size() / 2]);
  }
  return med;
}

}  // namespace

bool kernel_choice_on() { return off_reason().empty(); }

std::string kernel_choice_cpu() {
  static const std::string id = [] {
    std::string s;
#if defined(__x86_64__)
    unsigned r[12] = {};
    unsigned a, b, c, d;
    if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004) {
      for (unsigned i = 0; i < 3; ++i)
        __get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2], &r[4 * i + 3]);
      s = trim(std::string(reinterpret_cast<const char*>(r), sizeof r).c_str());
    }
    if (__get_cpuid(1, &a, &b, &c, &d)) {
      const unsigned fam = ((a >> 8) & 0xf) + ((a >> 8 & 0xf) == 0xf ? (a >> 20) & 0xff : 0);
      const unsigned model = ((a >> 4) & 0xf) | (((a >> 16) & 0xf) << 4);
      s += " (family " + std::to_string(fam) + " model " + std::to_string(model) + " stepping " +
           std::to_string(a & 0xf) + ")";
    }
#else
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string k = trim(line.substr(0, colon));
      if (k == "model name" || k == "uarch" || k == "CPU part" || k == "CPU implementer" || k == "marchid") {
        // Each distinct value once: one per core type (big.LITTLE: both CPU parts).
        const std::string kv = k + "=" + trim(line.substr(colon + 1));
        if (s.find(kv) != std::string::npos) continue;
        if (!s.empty()) s += ' ';
        s += kv;
        if (s.size() > 120) break;
      }
    }
#endif
    return s.empty() ? std::string("unknown cpu") : s;
  }();
  return id;
}

std::string kernel_choice_build() {
  static const std::string id = [] {
    std::string s = "nbits 0.1.0";
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&kernel_choice_build), &info) != 0 && info.dli_fname != nullptr) {
      struct stat st {};
      s += std::string(" ") + info.dli_fname;
      if (stat(info.dli_fname, &st) == 0)
        s += " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime);
    }
    return s;
  }();
  return id;
}

std::string kernel_choice_file() {
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!off_reason().empty()) return "";
  if (!s.file_read) read_file(s);
  return s.file;
}

size_t choose_kernel(const std::string& key, const std::vector<KernelCandidate>& candidates) {
  if (candidates.size() <= 1) return 0;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (const auto it = s.decided.find(key); it != s.decided.end()) return it->second;
  KernelChoice c;
  c.key = key;
  for (const auto& k : candidates) c.names.push_back(k.name);
  const std::string off = off_reason();
  if (!off.empty()) {
    c.why = off;
  } else {
    if (!s.file_read) read_file(s);
    const auto it = s.saved.find(key);
    if (it != s.saved.end() && it->second.names == c.names) {
      c.us = it->second.us;
      c.chosen = it->second.chosen;
      c.from = KernelChoice::From::kCacheFile;
      c.why = "cache file " + s.file;
    } else {
      c.us = measure(candidates);
      c.chosen = static_cast<size_t>(std::min_element(c.us.begin(), c.us.end()) - c.us.begin());
      c.from = KernelChoice::From::kMeasured;
      c.why = "measured";
      s.saved[key] = Entry{c.names, c.us, c.chosen};
      write_file(s);
    }
  }
  s.decided[key] = c.chosen;
  s.log.push_back(c);
  return c.chosen;
}

std::vector<KernelChoice> kernel_choices() {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.log;
}

std::string describe_kernel_choices() {
  std::ostringstream os;
  for (const auto& c : kernel_choices()) {
    os << c.key << ": " << c.names[c.chosen] << " (" << c.why;
    for (size_t i = 0; i < c.us.size(); ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", c.us[i]);
      os << (i == 0 ? ": " : ", ") << c.names[i] << " " << buf << " us";
    }
    os << ")\n";
  }
  return os.str();
}

void reset_kernel_choices_for_testing() {
  State& s = state();
  std::lock_guard lock(s.mu);
  s.file_read = false;
  s.file.clear();
  s.saved.clear();
  s.decided.clear();
  s.log.clear();
}

}  // namespace nbits::kernels
