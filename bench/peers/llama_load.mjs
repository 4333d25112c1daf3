// node-llama-cpp (installed under bench/peers/.deps by bench/peers/install.sh) with its prebuilt
// CPU backend, quiet, at most T threads; exits 3 with a hint when it is not installed.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export async function loadLlama(T) {
  let lib;
  try {
    lib = await import(path.join(here, '.deps/node_modules/node-llama-cpp/dist/index.js'));
  } catch (e) {
    console.error(`node-llama-cpp not found: run bash bench/peers/install.sh (${e.message})`);
    process.exit(3);
  }
  const llama = await lib.getLlama({ gpu: false, build: 'never', usePrebuiltBinaries: true, skipDownload: true,
    logLevel: lib.LlamaLogLevel.error, maxThreads: T, progressLogs: false });
  return { lib, llama };
}
