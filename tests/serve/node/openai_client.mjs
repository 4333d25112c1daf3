// Drives `nbits serve` with the official OpenAI Node client (npm `openai`, pinned in package.json).
// Usage: node openai_client.mjs PORT API_KEY EXPECTED.json
//   EXPECTED.json: {"prompt": "...", "max_tokens": N, "text": "<nbits run's greedy text>"}
// Prints one JSON object {"checks": [...], "failures": [...]} and exits 1 when any check failed.
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [port, key, expectedPath] = process.argv.slice(2);
if (!port || !key || !expectedPath) {
  console.error("usage: node openai_client.mjs PORT API_KEY EXPECTED.json");
  process.exit(2);
}
const want = JSON.parse(readFileSync(expectedPath, "utf8"));
const baseURL = `http://127.0.0.1:${port}/v1`;
const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0, timeout: 60_000 });

const checks = [];
const failures = [];
function check(name, ok, detail) {
  checks.push(name);
  if (!ok) failures.push(`${name}: ${detail}`);
}
async function expectError(name, status, fn) {
  try {
    await fn();
    check(name, false, "no error thrown");
  } catch (e) {
    const ok = e instanceof OpenAI.APIError && e.status === status && typeof e.message === "string";
    check(name, ok, `got ${e?.constructor?.name} status ${e?.status}: ${e?.message}`);
  }
}

// GET /v1/models: one model, whose id the other requests name.
const models = [];
for await (const m of client.models.list()) models.push(m);
check("models.list has one model", models.length === 1 && models[0].object === "model", JSON.stringify(models));
const model = models[0]?.id ?? "";

// Non-streamed completion: nbits run's greedy text, token for token.
const c = await client.completions.create({ model, prompt: want.prompt, max_tokens: want.max_tokens, temperature: 0 });
check("completion text equals nbits run", c.choices[0].text === want.text, JSON.stringify(c.choices[0].text));
check("completion finish_reason length", c.choices[0].finish_reason === "length", c.choices[0].finish_reason);
check("completion usage", c.usage.completion_tokens === want.max_tokens &&
  c.usage.total_tokens === c.usage.prompt_tokens + c.usage.completion_tokens, JSON.stringify(c.usage));

// Streamed completion: the same text; no usage chunk unless asked for.
{
  const s = await client.completions.create({
    model, prompt: want.prompt, max_tokens: want.max_tokens, temperature: 0, stream: true,
  });
  let text = "", finish = null, usageChunks = 0, ids = new Set();
  for await (const chunk of s) {
    ids.add(chunk.id);
    if (chunk.usage) usageChunks++;
    for (const ch of chunk.choices) {
      text += ch.text ?? "";
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  check("streamed completion equals nbits run", text === want.text, JSON.stringify(text));
  check("streamed completion finish_reason", finish === "length", finish);
  check("streamed completion: one id, no usage chunk", ids.size === 1 && usageChunks === 0, `${ids.size} ${usageChunks}`);
}

// Chat, non-streamed and streamed with include_usage: the same answer.
const messages = [
  { role: "system", content: "Tell a story." },
  { role: "user", content: "Once upon a time" },
];
const chat = await client.chat.completions.create({ model, messages, max_completion_tokens: 24, temperature: 0 });
const answer = chat.choices[0].message.content;
check("chat message", chat.object === "chat.completion" && chat.choices[0].message.role === "assistant" &&
  typeof answer === "string" && answer.length > 0, JSON.stringify(chat.choices[0]));
check("chat usage", chat.usage.completion_tokens === 24, JSON.stringify(chat.usage));
{
  const s = await client.chat.completions.create({
    model, messages, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let text = "", role = null, usage = null, afterUsage = 0;
  for await (const chunk of s) {
    if (usage) afterUsage++;
    if (chunk.usage) usage = chunk.usage;
    for (const ch of chunk.choices) {
      if (ch.delta.role) role = ch.delta.role;
      text += ch.delta.content ?? "";
    }
  }
  check("streamed chat equals the non-streamed answer", text === answer, JSON.stringify(text));
  check("streamed chat role delta", role === "assistant", role);
  check("streamed chat usage chunk last", usage !== null && usage.completion_tokens === 24 && afterUsage === 0,
    JSON.stringify(usage));
}

// The second turn reuses the first turn's cache.
{
  const turn2 = [...messages, { role: "assistant", content: answer }, { role: "user", content: "And then?" }];
  const r = await client.chat.completions.create({ model, messages: turn2, max_tokens: 4, temperature: 0 });
  const cached = r.usage.prompt_tokens_details?.cached_tokens ?? 0;
  check("second turn cached_tokens", cached > r.usage.prompt_tokens / 2, JSON.stringify(r.usage));
}

// A stream the client aborts after 3 chunks. openai's Stream ends quietly on its own abort (or
// throws APIUserAbortError, by version). Whether the server had already finished by then depends on
// timing (stories260K is fast), so what is asserted is what a client relies on: the iteration ends,
// no slot stays busy, and the server answers the next request. The server-side cancellation itself
// is serve_test's DisconnectFreesTheSlot.
{
  const metric = async (name) => {
    const r = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { Authorization: `Bearer ${key}` } });
    const line = (await r.text()).split("\n").find((l) => l.startsWith(name + " "));
    return line === undefined ? NaN : Number(line.split(" ")[1]);
  };
  const ac = new AbortController();
  const s = await client.completions.create(
    { model, prompt: want.prompt, max_tokens: 250, temperature: 0, stream: true },
    { signal: ac.signal });
  let n = 0, threw = false;
  try {
    for await (const _ of s) {
      if (++n === 3) ac.abort();
    }
  } catch (e) {
    threw = e instanceof OpenAI.APIUserAbortError || e?.name === "AbortError";
    if (!threw) throw e;
  }
  check("aborted stream ends", n >= 3 && n <= 252, `${n} chunks, threw ${threw}`);
  let busy = NaN;
  for (let i = 0; i < 100; i++) {
    busy = await metric("nbits_slots_busy");
    if (busy === 0) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  check("no slot busy after the abort", busy === 0, `nbits_slots_busy ${busy}`);
  const again = await client.completions.create({ model, prompt: want.prompt, max_tokens: 4, temperature: 0 });
  check("server answers after an abort", want.text.startsWith(again.choices[0].text), again.choices[0].text);
}

// Token logprobs and logit_bias, as the client types them.
{
  const l = await client.completions.create({ model, prompt: want.prompt, max_tokens: 4, temperature: 0, logprobs: 2 });
  const lp = l.choices[0].logprobs;
  check("completion logprobs: one per token", lp && lp.tokens.length === 4 && lp.token_logprobs.length === 4 &&
    lp.top_logprobs.length === 4 && lp.token_logprobs.every((x) => x <= 0), JSON.stringify(lp));
  check("completion logprobs: tokens join to the text", lp && lp.tokens.join("") === l.choices[0].text,
    JSON.stringify(lp?.tokens));
  const ids = await client.completions.create({ model, prompt: want.prompt, max_tokens: 1, temperature: 0,
    return_token_ids: true });
  const first = ids.choices[0].token_ids?.[0];
  const banned = await client.completions.create({ model, prompt: want.prompt, max_tokens: 1, temperature: 0,
    return_token_ids: true, logit_bias: { [String(first)]: -100 } });
  check("logit_bias -100 bans the greedy token", first !== undefined && banned.choices[0].token_ids?.[0] !== first,
    JSON.stringify([first, banned.choices[0].token_ids]));
}

// Errors the client maps to its typed exceptions.
await expectError("wrong key: 401", 401, () =>
  new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 }).completions.create({ model, prompt: "x", max_tokens: 1 }));
await expectError("bad max_tokens: 400", 400, () =>
  client.completions.create({ model, prompt: want.prompt, max_tokens: -3 }));
await expectError("no messages: 400", 400, () => client.chat.completions.create({ model, messages: [] }));
// A client configured for another server's model name is served by the loaded model.
const other = await client.completions.create({ model: "gpt-4o-mini", prompt: want.prompt, max_tokens: 2 });
check("another model name is served", other.model === model && other.choices.length === 1, other.model);

console.log(JSON.stringify({ checks, failures }));
process.exit(failures.length ? 1 : 0);
