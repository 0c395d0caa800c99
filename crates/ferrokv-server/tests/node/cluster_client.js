// ioredis's Cluster client against a running cluster: SET/GET of many
// keys routed by slot, a pipeline per slot group, MGET inside one hash
// tag, and CLUSTER SLOTS-based discovery from one seed node.
// Usage: node cluster_client.js PORT (ioredis installed next to this
// file: npm install --prefix tests/node ioredis). Exits non-zero on error.
const Redis = require("ioredis");

async function main() {
  const port = Number(process.argv[2]);
  const c = new Redis.Cluster([{ host: "127.0.0.1", port }], {
    redisOptions: { connectTimeout: 5000 },
    clusterRetryStrategy: () => 100,
  });
  for (let i = 0; i < 1000; i++) {
    await c.set(`io:${i}`, `v${i}`);
  }
  for (let i = 0; i < 1000; i++) {
    const v = await c.get(`io:${i}`);
    if (v !== `v${i}`) throw new Error(`io:${i} = ${v}`);
  }
  // ioredis pipelines must stay within one slot: use a hash tag.
  const p = c.pipeline();
  for (let i = 0; i < 100; i++) p.set(`{io}:${i}`, i);
  for (let i = 0; i < 100; i++) p.incr(`{io}:${i}`);
  const res = await p.exec();
  for (let i = 0; i < 100; i++) {
    const [err, v] = res[100 + i];
    if (err || Number(v) !== i + 1) throw new Error(`pipeline ${i}: ${err} ${v}`);
  }
  const m = await c.mget("{io}:1", "{io}:2");
  if (m[0] !== "2" || m[1] !== "3") throw new Error(`mget ${m}`);
  const nodes = c.nodes("master");
  if (nodes.length < 3) throw new Error(`masters discovered: ${nodes.length}`);
  await c.quit();
  console.log("ok");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
