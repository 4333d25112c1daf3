// nbits serve's chat page in a real browser: Debian's chromium, headless, driven by playwright-core
// (npm; no browser download). Run by tests/serve/serve_test.cc (ServeChatPage.InABrowser) against a
// server with an API key:
//   node webui_test.mjs PORT KEY SCREENSHOT.png
// It opens the page, which asks for the key (401), sends a message, reads the streamed answer from
// the page, regenerates it, starts a long answer and presses Stop mid-stream, then checks through
// /metrics that the server freed the session, and that the conversation survives a reload.
// Prints {"checks": [...], "failures": [...]} and exits 1 on a failure.
import { chromium } from 'playwright-core';

const [port, key, shot] = process.argv.slice(2);
if (!port || !key || !shot) { console.error('usage: webui_test.mjs PORT KEY SCREENSHOT.png'); process.exit(2); }
const base = `http://127.0.0.1:${port}`;
const checks = [], failures = [];
const check = (name, ok, detail) => { checks.push(name); if (!ok) failures.push({ name, detail: String(detail) }); };

async function metric(name) {
  const r = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${key}` } });
  const line = (await r.text()).split('\n').find((l) => l.startsWith(name + ' '));
  return line ? Number(line.split(' ')[1]) : NaN;
}
async function until(fn, ms, what) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  // A phone-sized screen.
  const context = await browser.newContext({ viewport: { width: 390, height: 780 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(base + '/');
  check('page title', (await page.title()).includes('nbits'), await page.title());
  // /v1/models answers 401 without the key: the settings dialog opens and asks for it.
  await until(() => page.isVisible('#keynote'), 5000, 'the API key prompt');
  check('asks for the API key', await page.isVisible('#apikey'), 'no key field');
  await page.fill('#apikey', key);
  await page.click('#save-settings');
  await until(async () => (await page.textContent('#model')) !== 'nbits', 5000, 'the model name');
  check('shows the model name', (await page.textContent('#model')).length > 0, await page.textContent('#model'));

  // Settings: a short answer for the first exchange.
  await page.click('#open-settings');
  await page.fill('#max_tokens', '24');
  await page.fill('#temperature', '0');
  await page.fill('#system', 'You tell short stories.');
  await page.click('#save-settings');

  await page.fill('#prompt', 'Once upon a time');
  await page.click('#send');
  const answer = await until(async () => {
    const n = await page.$$('.msg.assistant .meta');
    return n.length === 1 ? page.textContent('.msg.assistant') : null;
  }, 30000, 'the streamed answer');
  check('a streamed answer', answer.replace(/\d+ tokens.*$/s, '').trim().length > 0, answer);
  check('tok/s shown', /tok\/s/.test(await page.textContent('#toks')), await page.textContent('#toks'));
  check('no page errors', errors.length === 0, errors.join('; '));

  // Regenerate replaces the last answer. (Not necessarily with the same text at temperature 0: the
  // prompt now comes from the session's cache, and its last position is computed by the decode
  // path instead of the prefill's, another fp32 summation order, so a near-tie may flip.)
  await page.click('#regen');
  await until(async () => (await page.$$('.msg.assistant .meta')).length === 1 && !(await page.isVisible('#stop')),
              30000, 'the regenerated answer');
  const again = await page.evaluate(() => document.querySelector('.msg.assistant').firstChild.textContent);
  check('regenerate gives one answer again', (await page.$$('.msg.assistant')).length === 1, again);
  check('the regenerated answer streamed text', again.trim().length > 0, again);

  // A long answer, stopped mid-stream: the server sees the disconnect and frees the session.
  await page.click('#open-settings');
  await page.fill('#max_tokens', '1500');
  await page.click('#save-settings');
  const cancelledBefore = await metric('nbits_requests_cancelled_total');
  await page.fill('#prompt', 'Tell me a long story.');
  await page.click('#send');
  await until(async () => {
    const all = await page.$$('.msg.assistant');
    const t = await all[all.length - 1].textContent();
    return t.length > 20;
  }, 30000, 'the long answer to start streaming');
  check('busy while streaming', (await metric('nbits_slots_busy')) >= 1, 'no busy slot');
  await page.click('#stop');
  await until(async () => (await metric('nbits_slots_busy')) === 0, 10000, 'the server to free the session');
  check('stop frees the session', (await metric('nbits_slots_busy')) === 0, 'still busy');
  check('the server counted a cancellation', (await metric('nbits_requests_cancelled_total')) === cancelledBefore + 1,
        `${cancelledBefore} -> ${await metric('nbits_requests_cancelled_total')}`);
  const meta = await page.$$eval('.msg.assistant .meta', (m) => m.map((x) => x.textContent));
  check('the stopped answer says so', /stopped/.test(meta[meta.length - 1]), meta.join(' | '));
  await page.screenshot({ path: shot, fullPage: false });

  // Conversations are kept in the browser.
  await page.reload();
  await until(async () => (await page.$$('.msg.user')).length === 2, 5000, 'the conversation after a reload');
  check('the conversation survives a reload', (await page.$$('.msg.assistant')).length === 2, 'lost');
  await page.click('#menu');
  await page.click('#new');
  check('a new chat starts empty', (await page.$$('.msg')).length === 0, 'not empty');
  check('both chats listed', (await page.$$('.conv')).length === 2, (await page.$$('.conv')).length);
} catch (e) {
  failures.push({ name: 'exception', detail: String(e && e.stack || e) });
} finally {
  await browser.close();
}
console.log(JSON.stringify({ checks, failures }));
process.exit(failures.length ? 1 : 0);
