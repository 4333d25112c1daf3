// Differential reference: encodes seeded random strings with the Hugging Face tokenizers library
// (Rust, via @anush008/tokenizers) and prints JSON [{text, ids, ids_special, decoded}, ...].
// usage: node diff.js TOKENIZER_JSON SEED COUNT
const { Tokenizer } = require('@anush008/tokenizers');

function mulberry32(a) {
  return function () {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ranges = [
  [0x61, 0x7a], [0x41, 0x5a], [0x30, 0x39], [0x21, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0x7e],
  [0xc0, 0xff], [0x100, 0x17f], [0x300, 0x36f], [0x391, 0x3c9], [0x410, 0x44f], [0x5d0, 0x5ea],
  [0x627, 0x64a], [0x660, 0x669], [0x905, 0x939], [0x966, 0x96f], [0xe01, 0xe3a], [0x1100, 0x1112],
  [0x1161, 0x1175], [0x2000, 0x200b], [0x2070, 0x2079], [0x2150, 0x2189], [0x2460, 0x249b],
  [0x3041, 0x3096], [0x30a1, 0x30fa], [0x4e00, 0x4fff], [0xac00, 0xad00], [0xff01, 0xff5e],
  [0x1d400, 0x1d4ff], [0x1f300, 0x1f64f], [0x1f900, 0x1f9ff],
];
const pieces = [
  ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n', '\u00a0', '\u3000', '\u2028', '\u0085', '\u000b',
  "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'D", "'\u017f", '\u212a',
  '<|im_start|>', '<|im_end|>', '<|endoftext|>', '<|im_start', 'im_end|>', '<s>', '</s>', '<unk>', '<0x0A>',
  '<tool_call>', '<|fim_prefix|>', '<think>', '<repo_name>', '<|user|>', '\u2581', '\u2581\u2581',
  'e\u0301', 'a\u0308', '\u1100\u1161\u11a8', 'n\u0303', '\u0915\u093c', '\ufb01', '\u2126',
  '\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67', '\ud83d\udc4d\ud83c\udffd', '\ud83c\uddfa\ud83c\uddf8', '\u2764\ufe0f',
  '123', '3.14', '1,000', '2024-01-01', '\u00b2', '\u00bd', '\u2167', '\u0663', 'Hello', ' world', 'the', ' The',
  'def ', '():', '    return', '{"a": 1}', 'https://x.y/z?q=1', '...', '!!!', '$9.99', '100%', '\u0000', '\u0007',
];

function randomString(rnd) {
  const n = Math.floor(rnd() * 24);
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.45) {
      s += pieces[Math.floor(rnd() * pieces.length)];
    } else {
      const [lo, hi] = ranges[Math.floor(rnd() * ranges.length)];
      const len = 1 + Math.floor(rnd() * 6);
      for (let k = 0; k < len; k++) s += String.fromCodePoint(lo + Math.floor(rnd() * (hi - lo + 1)));
    }
  }
  return s;
}

(async () => {
  const [file, seed, count] = process.argv.slice(2);
  const tok = Tokenizer.fromFile(file);
  const rnd = mulberry32(Number(seed));
  const out = [];
  for (let i = 0; i < Number(count); i++) {
    const text = randomString(rnd);
    const a = await tok.encode(text, null, { addSpecialTokens: false });
    const b = await tok.encode(text, null, { addSpecialTokens: true });
    const ids = Array.from(a.getIds());
    out.push({ text, ids, ids_special: Array.from(b.getIds()), decoded: await tok.decode(ids, false) });
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(String(e)); process.exit(1); });
