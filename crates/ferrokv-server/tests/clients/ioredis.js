// ioredis scenario for tests/clients.rs: auth, TTLs, a pipeline of 1,000
// commands, WATCH/MULTI/EXEC, BLPOP, SCAN of 10,000 keys (scanStream),
// defineCommand (Lua), pub/sub across a server restart (autoResubscribe).
// Usage: node ioredis.js PORT PASSWORD
'use strict';

const h = require('./harness');
const { expect, ensure, run, sleep, until, port, password } = h;
const Redis = h.load('ioredis');

function client(opts = {}) {
  return new Redis({ host: '127.0.0.1', port, password, ...opts });
}

async function auth() {
  const r = client();
  expect(await r.ping(), 'PONG', 'PING with the password');
  r.disconnect();
  const named = client({ username: 'default' });
  expect(await named.ping(), 'PONG', 'PING as user default');
  named.disconnect();
  for (const [pw, re] of [[undefined, /NOAUTH/], ['wrong-password', /WRONGPASS/]]) {
    const bad = new Redis({ host: '127.0.0.1', port, password: pw, lazyConnect: true, enableReadyCheck: false, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    const errors = [];
    bad.on('error', (e) => errors.push(e.message));
    try {
      await bad.connect();
      await bad.ping();
    } catch (e) {
      errors.push(e.message);
    }
    ensure(errors.some((m) => re.test(m)), `password ${pw}: expected ${re}, got ${JSON.stringify(errors)}`);
    bad.disconnect();
  }
}

async function ttl() {
  const r = client();
  expect(await r.set('t:ex', 'v1', 'EX', 100), 'OK', 'SET EX');
  const t = await r.ttl('t:ex');
  ensure(t >= 98 && t <= 100, `TTL after EX 100 is ${t}`);
  expect(await r.set('t:px', 'v2', 'PX', 5000), 'OK', 'SET PX');
  const pt = await r.pttl('t:px');
  ensure(pt > 4000 && pt <= 5000, `PTTL after PX 5000 is ${pt}`);
  expect(await r.get('t:px'), 'v2', 'GET');
  await r.set('t:short', 'x', 'PX', 100);
  await sleep(250);
  expect(await r.get('t:short'), null, 'GET after the TTL passed');
  expect(await r.ttl('t:short'), -2, 'TTL of an expired key');
  await r.set('t:plain', 'y');
  expect(await r.pttl('t:plain'), -1, 'PTTL without expiry');
  expect(await r.set('t:nx', 'a', 'EX', 10, 'NX'), 'OK', 'SET EX NX');
  expect(await r.set('t:nx', 'b', 'EX', 10, 'NX'), null, 'SET EX NX on an existing key');
  r.disconnect();
}

async function pipeline() {
  const r = client();
  const p = r.pipeline();
  for (let i = 0; i < 250; i++) p.set(`pl:${i}`, i);
  for (let i = 0; i < 250; i++) p.incrby(`pl:${i}`, i);
  for (let i = 0; i < 250; i++) p.get(`pl:${i}`);
  for (let i = 0; i < 250; i++) p.rpush('pl:list', i);
  const res = await p.exec();
  expect(res.length, 1000, 'number of replies');
  ensure(res.every(([err]) => err === null), 'no error in the pipeline');
  const vals = res.map(([, v]) => v);
  expect(vals.slice(0, 250), Array(250).fill('OK'), 'SET replies');
  expect(vals.slice(250, 500), [...Array(250).keys()].map((i) => 2 * i), 'INCRBY replies');
  expect(vals.slice(500, 750), [...Array(250).keys()].map((i) => String(2 * i)), 'GET replies');
  expect(vals.slice(750), [...Array(250).keys()].map((i) => i + 1), 'RPUSH replies');
  const e = await r.pipeline().set('pl:s', 'x').incr('pl:s').get('pl:s').exec();
  expect(e[1][0] && e[1][0].message, 'ERR value is not an integer or out of range', 'INCR error in a pipeline');
  expect(e[2][1], 'x', 'reply after the error');
  r.disconnect();
}

async function transaction() {
  const r = client();
  const other = client();
  await r.set('tx:n', 10);
  await r.watch('tx:n');
  const v = Number(await r.get('tx:n'));
  expect(await r.multi().set('tx:n', v + 1).incr('tx:count').exec(), [[null, 'OK'], [null, 1]], 'EXEC replies');
  await r.watch('tx:n');
  await other.set('tx:n', 100);
  expect(await r.multi().set('tx:n', 1).exec(), null, 'EXEC after a concurrent write to the WATCHed key');
  expect(await r.get('tx:n'), '100', 'value after the aborted EXEC');
  const res = await r.multi().set('tx:s', 'a').incr('tx:s').get('tx:s').exec();
  expect([res[0][1], res[2][1]], ['OK', 'a'], 'replies around a runtime error');
  ensure(res[1][0] && /not an integer/.test(res[1][0].message), 'runtime error inside EXEC');
  r.disconnect();
  other.disconnect();
}

async function blpop() {
  const r = client();
  const pusher = client();
  let t0 = Date.now();
  expect(await r.blpop('bl:empty', 0.3), null, 'BLPOP on an empty list');
  const el = Date.now() - t0;
  ensure(el >= 250 && el < 2000, `BLPOP timeout 0.3 returned after ${el} ms`);
  t0 = Date.now();
  const [res, pushed] = await Promise.all([r.blpop('bl:empty', 'bl:q', 5), sleep(200).then(() => pusher.rpush('bl:q', 'job1'))]);
  expect(res, ['bl:q', 'job1'], 'BLPOP served by a push');
  expect(pushed, 1, 'RPUSH reply');
  r.disconnect();
  pusher.disconnect();
}

async function scan() {
  const r = client();
  const p = r.pipeline();
  for (let i = 0; i < 10000; i++) p.set(`sc:${i}`, i);
  await p.exec();
  const seen = new Set();
  await new Promise((resolve, reject) => {
    const s = r.scanStream({ match: 'sc:*', count: 250 });
    s.on('data', (keys) => keys.forEach((k) => seen.add(k)));
    s.on('end', resolve);
    s.on('error', reject);
  });
  expect(seen.size, 10000, 'keys seen by scanStream');
  for (let i = 0; i < 10000; i++) ensure(seen.has(`sc:${i}`), `sc:${i} not seen`);
  r.disconnect();
}

async function lua() {
  const r = client();
  r.defineCommand('incrCapped', {
    numberOfKeys: 1,
    lua: "local v = redis.call('INCRBY', KEYS[1], ARGV[1]) if v > tonumber(ARGV[2]) then redis.call('SET', KEYS[1], ARGV[2]) return tonumber(ARGV[2]) end return v",
  });
  expect(await r.incrCapped('lua:n', 5, 12), 5, 'first call');
  expect(await r.incrCapped('lua:n', 5, 12), 10, 'second call');
  expect(await r.incrCapped('lua:n', 5, 12), 12, 'capped call');
  expect(await r.get('lua:n'), '12', 'stored value');
  await r.script('FLUSH');
  expect(await r.incrCapped('lua:n', 1, 100), 13, 'call after SCRIPT FLUSH (EVALSHA falls back to EVAL)');
  const p = await r.pipeline().incrCapped('lua:n', 1, 100).incrCapped('lua:n', 1, 100).exec();
  expect(p, [[null, 14], [null, 15]], 'custom command in a pipeline');
  let err = null;
  try {
    await r.eval("return redis.call('INCR', KEYS[1])", 1, 't:plain');
  } catch (e) {
    err = e;
  }
  ensure(err && /not an integer/.test(err.message), `script error: ${err && err.message}`);
  r.disconnect();
}

async function pubsubRestart() {
  const r = client();
  const sub = client();
  sub.on('error', () => {});
  r.on('error', () => {});
  const got = [];
  sub.on('message', (ch, msg) => got.push([ch, msg]));
  sub.on('pmessage', (pat, ch, msg) => got.push([pat, ch, msg]));
  expect(await sub.subscribe('news'), 1, 'SUBSCRIBE count');
  expect(await sub.psubscribe('ev:*'), 2, 'PSUBSCRIBE count');
  await h.pubsubAcrossRestart((ch, msg) => r.publish(ch, msg), got);
  r.disconnect();
  sub.disconnect();
}

h.runAll([
  ['auth', auth],
  ['ttl', ttl],
  ['pipeline', pipeline],
  ['transaction', transaction],
  ['blpop', blpop],
  ['scan', scan],
  ['lua', lua],
  ['pubsub_restart', pubsubRestart],
]);
