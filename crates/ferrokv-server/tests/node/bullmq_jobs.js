// Runs BullMQ (npm `bullmq`) against a server: a producer adds plain,
// delayed, retried and prioritised jobs, a worker processes them, and the
// results, attempts, order and queue counts are checked. BullMQ keeps its
// queues in Redis through Lua scripts (cmsgpack, cjson, many keys per
// script), so this is a real application of EVALSHA. Usage:
// node bullmq_jobs.js PORT. Prints "ok" and exits 0 when every check
// passes; prints the failure and exits 1 otherwise.
const { Queue, Worker } = require('bullmq');

const port = Number(process.argv[2]);
const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };

function check(cond, what) {
  if (!cond) {
    console.error('FAILED:', what);
    process.exit(1);
  }
}

async function until(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    check(Date.now() < end, 'timeout waiting for ' + what);
    await new Promise((r) => setTimeout(r, 20));
  }
}

(async () => {
  const queue = new Queue('jobs', { connection });
  await queue.obliterate({ force: true }).catch(() => {});
  // Jobs added while the queue is paused wait; priorities decide the order
  // once it resumes.
  await queue.pause();
  const started = Date.now();
  await queue.add('plain', { x: 1 });
  await queue.add('delayed', { x: 2 }, { delay: 800 });
  await queue.add('flaky', { x: 3 }, { attempts: 3, backoff: { type: 'fixed', delay: 100 } });
  await queue.add('doomed', { x: 4 }, { attempts: 2 });
  for (const p of [3, 1, 2]) {
    await queue.add('prio' + p, { x: 10 + p }, { priority: p });
  }
  const counts0 = await queue.getJobCounts('wait', 'paused', 'delayed', 'prioritized');
  check(counts0.delayed === 1, 'one delayed job: ' + JSON.stringify(counts0));

  const attempts = {};
  const completed = [];
  const failed = [];
  const worker = new Worker(
    'jobs',
    async (job) => {
      attempts[job.name] = (attempts[job.name] || 0) + 1;
      if (job.name === 'flaky' && attempts.flaky < 3) throw new Error('not yet');
      if (job.name === 'doomed') throw new Error('never');
      return job.data.x * 2;
    },
    { connection, concurrency: 1 },
  );
  worker.on('completed', (job, result) => completed.push({ name: job.name, result, at: Date.now() }));
  worker.on('failed', (job) => {
    if (job && job.attemptsMade >= (job.opts.attempts || 1)) failed.push(job.name);
  });
  await queue.resume();
  await until(() => completed.length === 6 && failed.length === 1, 20000, 'all jobs');

  const byName = Object.fromEntries(completed.map((c) => [c.name, c]));
  check(byName.plain.result === 2, 'plain result');
  check(byName.flaky.result === 6 && attempts.flaky === 3, 'flaky retried twice: ' + attempts.flaky);
  check(attempts.doomed === 2 && failed[0] === 'doomed', 'doomed failed after 2 attempts');
  check(byName.delayed.at - started >= 700, 'delayed job waited its delay');
  const prio = completed.filter((c) => c.name.startsWith('prio')).map((c) => c.name);
  check(prio.join(',') === 'prio1,prio2,prio3', 'priority order: ' + prio.join(','));
  const counts = await queue.getJobCounts('completed', 'failed', 'wait', 'delayed', 'active');
  check(counts.completed === 6 && counts.failed === 1, 'final counts ' + JSON.stringify(counts));
  check(counts.wait === 0 && counts.delayed === 0 && counts.active === 0, 'queue drained ' + JSON.stringify(counts));
  const failedJobs = await queue.getFailed();
  check(failedJobs.length === 1 && failedJobs[0].failedReason === 'never', 'failed reason');
  await worker.close();
  await queue.close();
  console.log('ok');
  process.exit(0);
})().catch((e) => {
  console.error('FAILED:', e);
  process.exit(1);
});
