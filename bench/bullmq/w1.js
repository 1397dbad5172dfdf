// W1 on BullMQ, the shape of delayq-bench's W1 on Redis with --batch (bench/README.md): N jobs
// with delays uniform over [0, delay-max] s in whole ms, added with Queue.addBulk in chunks of
// --batch, while --workers worker processes (each one BullMQ Worker with --concurrency) take
// them. A job's lateness is the moment its processor ran minus its due time, which is BullMQ's
// own: job.timestamp (the add's Date.now(), whole ms, so the figure is up to 1 ms high) plus
// its delay. Prints one JSON line on stdout, with the fields of a delayq-bench W1 line it has
// (push_per_s, end_to_end_s, lateness_ms, received, duplicates) and jobs_per_s; notes on stderr.
//
//   node w1.js --redis /path/redis.sock [--jobs 100000] [--delay-max 5] [--workers 4]
//              [--concurrency 50] [--batch 100] [--seed 1] [--time-limit 35]
//
// The workers are processes, not Worker objects of one process: Node runs a process's
// JavaScript on one thread, and delayq's 4 consumers are 4 threads. They share the machine's
// wall clock (performance.timeOrigin + performance.now()).
'use strict';

const { fork } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

// The installed BullMQ's version: the package.json named bullmq above its entry point.
function bullmqVersion() {
  const fs = require('node:fs');
  const path = require('node:path');
  for (let dir = path.dirname(require.resolve('bullmq')); dir !== path.dirname(dir);
       dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (!fs.existsSync(file)) continue;
    const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
    if (pkg.name === 'bullmq') return pkg.version;
  }
  return '?';
}

const now = () => performance.timeOrigin + performance.now();  // ms since the epoch, sub-ms

function parse(argv) {
  const a = { redis: '', jobs: 100000, 'delay-max': 5, workers: 4, concurrency: 50, batch: 100,
              seed: 1, 'time-limit': 0, queue: '', role: 'main' };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[i + 1];
    if (!(k in a) || v === undefined) fail(`unknown option or missing value: ${argv[i]}`);
    if (typeof a[k] === 'number') {
      const n = Number(v);
      // The same bounds as delayq-bench's numbers: finite, 0 to 1e9 (the counts at least 1).
      const lo = ['jobs', 'workers', 'concurrency', 'batch'].includes(k) ? 1 : 0;
      if (v.trim() === '' || !Number.isFinite(n) || n < lo || n > 1e9)
        fail(`bad value for --${k}: '${v}' (a number from ${lo} to 1e9)`);
      a[k] = n;
    } else {
      a[k] = v;
    }
  }
  if (!a.redis) fail('--redis PATH (the unix socket of the server) is needed');
  if (a['time-limit'] === 0) a['time-limit'] = a['delay-max'] + 30;
  return a;
}

function fail(why) {
  process.stderr.write(`bullmq w1: ${why}\n`);
  process.exit(2);
}

const connection = (a) => new IORedis({ path: a.redis, maxRetriesPerRequest: null });

async function redisVersion(a) {
  const c = connection(a);
  const info = await c.info('server');
  c.disconnect();
  return (info.match(/redis_version:(\S+)/) || [])[1] || '?';
}

// A seeded generator (mulberry32), so that every run of a seed has the same delays.
function delays(a) {
  let s = a.seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const max = Math.round(a['delay-max'] * 1000);
  return Array.from({ length: a.jobs }, () => Math.floor(next() * (max + 1)));
}

// The nearest-rank percentiles of delayq-bench's summary_json (bench/report.h).
function summary(ms) {
  if (ms.length === 0) return null;
  ms.sort((x, y) => x - y);
  const rank = (p) => ms[Math.min(Math.max(Math.ceil(p * ms.length), 1), ms.length) - 1];
  const r3 = (x) => Math.round(x * 1000) / 1000;
  return { p50: r3(rank(0.5)), p99: r3(rank(0.99)), max: r3(ms[ms.length - 1]), min: r3(ms[0]),
           mean: r3(ms.reduce((s, x) => s + x, 0) / ms.length) };
}

// A worker process: takes jobs until the parent asks for its record, then sends it and exits.
async function workerMain(a) {
  const ids = [];
  const lateness = [];
  let last = 0;
  const worker = new Worker(a.queue, async (job) => {
    const t = now();
    lateness.push(t - (job.timestamp + (job.opts.delay || 0)));
    ids.push(job.data.i);
    last = t;
  }, { connection: connection(a), concurrency: a.concurrency, autorun: false });
  worker.on('error', (e) => process.stderr.write(`bullmq w1 worker: ${e.message}\n`));
  const tick = setInterval(() => process.send({ count: ids.length }), 20);
  process.on('message', async (m) => {
    if (m !== 'report') return;
    clearInterval(tick);
    await worker.close(true);
    process.send({ ids, lateness, last }, () => process.exit(0));
  });
  await worker.waitUntilReady();
  worker.run().catch((e) => fail(`worker: ${e.message}`));
  process.send({ ready: true });
}

async function main(a) {
  a.queue = `bench-w1-${process.pid}-${Date.now()}`;
  const counts = new Array(a.workers).fill(0);
  const reports = [];
  let ready = 0;
  const children = [];
  for (let w = 0; w < a.workers; ++w) {
    const args = [];
    for (const k of ['redis', 'jobs', 'delay-max', 'workers', 'concurrency', 'batch', 'queue'])
      args.push(`--${k}`, String(a[k]));
    const child = fork(__filename, [...args, '--role', 'worker']);
    child.on('message', (m) => {
      if (m.ready) ++ready;
      if (m.count !== undefined) counts[w] = m.count;
      if (m.ids) reports[w] = m;
    });
    children.push(child);
  }
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  while (ready < a.workers) await sleep(5);

  const queue = new Queue(a.queue, { connection: connection(a) });
  await queue.waitUntilReady();
  const delay = delays(a);
  const body = 'x'.repeat(64);
  const start = now();
  for (let i = 0; i < a.jobs; i += a.batch) {
    const chunk = [];
    for (let k = i; k < Math.min(a.jobs, i + a.batch); ++k)
      chunk.push({ name: 'w1', data: { i: k, body },
                   opts: { delay: delay[k], removeOnComplete: true, removeOnFail: true } });
    await queue.addBulk(chunk);
  }
  const pushS = (now() - start) / 1000;

  const limit = start + a['time-limit'] * 1000;
  while (counts.reduce((s, c) => s + c, 0) < a.jobs && now() < limit) await sleep(5);
  for (const c of children) c.send('report');
  while (reports.filter(Boolean).length < a.workers) await sleep(5);

  const seen = new Uint8Array(a.jobs);
  let received = 0, duplicates = 0, last = 0;
  const lateness = [];
  for (const r of reports) {
    for (const i of r.ids) {
      if (seen[i]) ++duplicates; else { seen[i] = 1; ++received; }
    }
    for (const x of r.lateness) lateness.push(x);
    last = Math.max(last, r.last);
  }
  const e2e = received ? (last - start) / 1000 : 0;
  const r3 = (x) => Math.round(x * 1000) / 1000;
  process.stdout.write(JSON.stringify({
    peer: 'bullmq', workload: 'W1', jobs: a.jobs, push_per_s: r3(a.jobs / pushS),
    end_to_end_s: r3(e2e), jobs_per_s: r3(received / (e2e || 1)), lateness_ms: summary(lateness),
    received, duplicates,
    params: { delay_max_s: a['delay-max'], workers: a.workers, concurrency: a.concurrency,
              batch: a.batch, bullmq_version: bullmqVersion(),
              redis_version: await redisVersion(a) },
  }) + '\n');
  await queue.obliterate({ force: true });
  await queue.close();
  process.exit(received === a.jobs ? 0 : 1);
}

const a = parse(process.argv.slice(2));
(a.role === 'worker' ? workerMain(a) : main(a)).catch((e) => fail(e.stack || e.message));
