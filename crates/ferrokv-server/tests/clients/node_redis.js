// node-redis (npm `redis`, v5) scenario for tests/clients.rs: auth, TTLs, a
// pipeline of 1,000 commands (execAsPipeline), WATCH/MULTI/EXEC, BLPOP, SCAN
// of 10,000 keys (scanIterator), pub/sub across a server restart; with mode
// `resp3` over RESP3 (RESP: 3), plus client-side caching.
// Usage: node node_redis.js PORT PASSWORD [resp2|resp3]
'use strict';

const h = require('./harness');
const { expect, ensure, run, sleep, until, port, password, mode } = h;
const { createClient, WatchError } = h.load('redis');

const RESP = mode === 'resp3' ? 3 : 2;

async function client(opts = {}) {
  const c = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: (n) => Math.min(n * 50, 500) }, password, RESP, ...opts });
  c.on('error', () => {});
  await c.connect();
  return c;
}

async function auth() {
  const r = await client();
  expect(await r.ping(), 'PONG', 'PING with the password');
  const named = await client({ username: 'default' });
  expect(await named.ping(), 'PONG', 'PING as user default');
  await named.quit();
  for (const [pw, re] of [[undefined, /NOAUTH/], ['wrong-password', /WRONGPASS/]]) {
    const bad = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false }, password: pw, RESP });
    bad.on('error', () => {});
    let err = null;
    try {
      await bad.connect();
      await bad.ping();
    } catch (e) {
      err = e;
    }
    ensure(err && re.test(err.message), `password ${pw}: expected ${re}, got ${err && err.message}`);
    if (bad.isOpen) bad.destroy();
  }
  if (RESP === 3) {
    await r.hSet('h:resp3', { a: '1', b: '2' });
    expect(await r.hGetAll('h:resp3'), { a: '1', b: '2' }, 'HGETALL');
    await r.zAdd('z:resp3', { score: 1.5, value: 'm' });
    expect(await r.zScore('z:resp3', 'm'), 1.5, 'ZSCORE double');
  }
  await r.quit();
}

async function ttl() {
  const r = await client();
  expect(await r.set('t:ex', 'v1', { EX: 100 }), 'OK', 'SET EX');
  const t = await r.ttl('t:ex');
  ensure(t >= 98 && t <= 100, `TTL after EX 100 is ${t}`);
  expect(await r.set('t:px', 'v2', { PX: 5000 }), 'OK', 'SET PX');
  const pt = await r.pTTL('t:px');
  ensure(pt > 4000 && pt <= 5000, `PTTL after PX 5000 is ${pt}`);
  expect(await r.get('t:px'), 'v2', 'GET');
  await r.set('t:short', 'x', { PX: 100 });
  await sleep(250);
  expect(await r.get('t:short'), null, 'GET after the TTL passed');
  expect(await r.ttl('t:short'), -2, 'TTL of an expired key');
  await r.set('t:plain', 'y');
  expect(await r.pTTL('t:plain'), -1, 'PTTL without expiry');
  expect(await r.set('t:plain', 'z', { GET: true }), 'y', 'SET GET');
  await r.quit();
}

async function pipeline() {
  const r = await client();
  const m = r.multi();
  for (let i = 0; i < 250; i++) m.set(`pl:${i}`, String(i));
  for (let i = 0; i < 250; i++) m.incrBy(`pl:${i}`, i);
  for (let i = 0; i < 250; i++) m.get(`pl:${i}`);
  for (let i = 0; i < 250; i++) m.rPush('pl:list', String(i));
  const res = await m.execAsPipeline();
  expect(res.length, 1000, 'number of replies');
  expect(res.slice(0, 250), Array(250).fill('OK'), 'SET replies');
  expect(res.slice(250, 500), [...Array(250).keys()].map((i) => 2 * i), 'INCRBY replies');
  expect(res.slice(500, 750), [...Array(250).keys()].map((i) => String(2 * i)), 'GET replies');
  expect(res.slice(750), [...Array(250).keys()].map((i) => i + 1), 'RPUSH replies');
  // Commands issued in the same tick are pipelined too.
  const auto = await Promise.all([...Array(1000).keys()].map((i) => r.incr('pl:auto')));
  expect(auto, [...Array(1000).keys()].map((i) => i + 1), 'auto-pipelined INCR replies');
  await r.quit();
}

async function transaction() {
  const r = await client();
  const other = await client();
  await r.set('tx:n', '10');
  await r.watch('tx:n');
  const v = Number(await r.get('tx:n'));
  expect(await r.multi().set('tx:n', String(v + 1)).incr('tx:count').exec(), ['OK', 1], 'EXEC replies');
  await r.watch('tx:n');
  await other.set('tx:n', '100');
  let err = null;
  try {
    await r.multi().set('tx:n', '1').exec();
  } catch (e) {
    err = e;
  }
  ensure(err instanceof WatchError, `EXEC after a concurrent write to the WATCHed key: ${err}`);
  expect(await r.get('tx:n'), '100', 'value after the aborted EXEC');
  await r.quit();
  await other.quit();
}

async function blpop() {
  const r = await client();
  const pusher = await client();
  const t0 = Date.now();
  expect(await r.blPop('bl:empty', 0.3), null, 'BLPOP on an empty list');
  const el = Date.now() - t0;
  ensure(el >= 250 && el < 2000, `BLPOP timeout 0.3 returned after ${el} ms`);
  const [res, pushed] = await Promise.all([r.blPop(['bl:empty', 'bl:q'], 5), sleep(200).then(() => pusher.rPush('bl:q', 'job1'))]);
  expect(res, { key: 'bl:q', element: 'job1' }, 'BLPOP served by a push');
  expect(pushed, 1, 'RPUSH reply');
  await r.quit();
  await pusher.quit();
}

async function scan() {
  const r = await client();
  const m = r.multi();
  for (let i = 0; i < 10000; i++) m.set(`sc:${i}`, String(i));
  await m.execAsPipeline();
  const seen = new Set();
  for await (const batch of r.scanIterator({ MATCH: 'sc:*', COUNT: 250 })) {
    for (const k of Array.isArray(batch) ? batch : [batch]) seen.add(k);
  }
  expect(seen.size, 10000, 'keys seen by scanIterator');
  for (let i = 0; i < 10000; i++) ensure(seen.has(`sc:${i}`), `sc:${i} not seen`);
  await r.quit();
}

async function clientCache() {
  const r = await client({ clientSideCache: { ttl: 0, maxEntries: 0 } });
  const other = await client();
  await other.set('cc:k', 'v1');
  expect(await r.get('cc:k'), 'v1', 'first GET');
  expect(await r.get('cc:k'), 'v1', 'second GET');
  const stats = r.clientSideCache.stats();
  ensure(stats.hitCount >= 1, `second GET served from the cache (stats ${JSON.stringify(stats)})`);
  await other.set('cc:k', 'v2');
  await until(3000, async () => (await r.get('cc:k')) === 'v2', 'invalidation of the cached GET');
  await r.quit();
  await other.quit();
}

async function pubsubRestart() {
  const r = await client();
  const sub = await client();
  const got = [];
  await sub.subscribe('news', (msg, ch) => got.push([ch, msg]));
  await sub.pSubscribe('ev:*', (msg, ch) => got.push(['ev:*', ch, msg]));
  await h.pubsubAcrossRestart((ch, msg) => r.publish(ch, msg), got);
  await r.quit();
  await sub.quit();
}

h.runAll([
  ['auth', auth],
  ['ttl', ttl],
  ['pipeline', pipeline],
  ['transaction', transaction],
  ['blpop', blpop],
  ['scan', scan],
  ...(RESP === 3 ? [['client_cache', clientCache]] : []),
  ['pubsub_restart', pubsubRestart],
]);
