// The line protocol between a Node.js client-compatibility script and
// tests/clients.rs (the same as harness.py): PORT and PASSWORD (and a mode)
// as arguments; `ok NAME`, `FAIL NAME: why` or `skip NAME: why` per
// scenario; `RESTART` asks the test to restart the server on the same port,
// which answers with one line on stdin; exit status 3 = package missing.
'use strict';

const path = require('path');
const readline = require('readline');

/** A failed check. */
class Check extends Error {}

/** require() from tests/node, where .ci/run installs the npm packages. */
function load(name) {
  try {
    return require(path.join(__dirname, '..', 'node', 'node_modules', name));
  } catch (e) {
    console.log(`${name} missing: ${e.message}`);
    process.exit(3);
  }
}

/** Fails unless got and want are deeply equal (compared as JSON). */
function expect(got, want, what) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) throw new Check(`${what}: expected ${w}, got ${g}`);
}

/** Fails unless cond holds. */
function ensure(cond, what) {
  if (!cond) throw new Check(what);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs one scenario and prints its result line. */
async function run(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    const text = `${e && e.constructor ? e.constructor.name : 'Error'}: ${e && e.message}`.replace(/\n/g, ' | ');
    console.log(`FAIL ${name}: ${text}`);
    console.error(e && e.stack);
  }
}

/** Runs [name, fn] pairs in order, reporting each, then lets the process exit. */
async function runAll(scenarios) {
  for (const [name, fn] of scenarios) await run(name, fn);
  done();
}

const stdinLines = readline.createInterface({ input: process.stdin });
const waiting = [];
stdinLines.on('line', () => {
  const w = waiting.shift();
  if (w) w();
});

/** Asks the test to restart the server; resolves once it has. */
function restartServer() {
  return new Promise((resolve) => {
    waiting.push(resolve);
    console.log('RESTART');
  });
}

/** Calls fn until it returns a truthy value (returned) or fails after ms. */
async function until(ms, fn, what) {
  const end = Date.now() + ms;
  let last = null;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await sleep(50);
  }
  throw new Check(`${what} within ${ms} ms (last error: ${last && last.message})`);
}

/**
 * The pub/sub part every Node client shares: with a subscriber on `news`
 * and `ev:*` whose messages land in `got` ([channel, msg] or [pattern,
 * channel, msg]), publishes through `publish(channel, msg)` before and
 * after a server restart and checks both reach it: after the restart the
 * client must reconnect and resubscribe by itself.
 */
async function pubsubAcrossRestart(publish, got) {
  expect(await publish('news', 'hello'), 1, 'PUBLISH receivers');
  expect(await publish('ev:1', 'x'), 1, 'PUBLISH to the pattern');
  await until(3000, () => got.length === 2, 'messages before restart');
  expect(got, [['news', 'hello'], ['ev:*', 'ev:1', 'x']], 'messages before restart');
  await restartServer();
  await until(10000, async () => (await publish('news', 'after')) >= 1 && (await publish('ev:2', 'y')) >= 1, 'resubscription after the restart');
  const seen = () => JSON.stringify(got);
  await until(5000, () => seen().includes('["news","after"]') && seen().includes('["ev:*","ev:2","y"]'), `messages after the restart (got ${seen()})`);
}

/** Stops reading stdin so the process can exit. */
function done() {
  stdinLines.close();
}

const [port, password, mode] = [Number(process.argv[2]), process.argv[3], process.argv[4] || ''];

module.exports = { Check, load, expect, ensure, sleep, run, runAll, restartServer, pubsubAcrossRestart, until, done, port, password, mode };
