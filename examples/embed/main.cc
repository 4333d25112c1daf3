// embed MODEL [PROMPT]: loads a model with the installed nbits library and runs two
// conversations on it at once, one per thread, each on its own KV cache.
#include <nbits/nbits.h>

#include <cstdio>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL [PROMPT]\n", argv[0]);
    return 2;
  }
  const std::string prompt = argc > 2 ? argv[2] : "Once upon a time";
  try {
    nbits::ModelOptions mo;
    mo.threads = 1;
    auto model = nbits::Model::load(argv[1], mo);
    nbits::GenerationOptions go;
    go.max_new_tokens = 24;
    go.temperature = 0.0f;
    std::string a, b;
    std::thread other([&] { b = nbits::Generator(model, go).generate(prompt).text; });
    a = nbits::Generator(model, go).generate(prompt).text;
    other.join();
    std::printf("%s%s\n", prompt.c_str(), a.c_str());
    if (a != b) {
      std::fprintf(stderr, "the two conversations differ:\n%s\n%s\n", a.c_str(), b.c_str());
      return 1;
    }
  } catch (const nbits::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
