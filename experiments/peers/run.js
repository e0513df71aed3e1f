// The goodput experiment's peers: opossum and cockatiel, on simulated time
// (@sinonjs/fake-timers), against the per-call fates that
// `goodput_experiment --suite --export_fates=DIR` wrote (see
// experiments/goodput/fate_export.h and docs/breaker-quality.md).
//
//   node run.js FATES_DIR [--json=FILE] [--policies=a,b,...] [--rng_seed=N]
//
// cockatiel's ExponentialBackoff draws its delays from Math.random
// (decorrelated jitter). Each run replaces Math.random with a generator
// seeded by the scenario file, the policy and --rng_seed (default 1), so the
// results are reproducible; other --rng_seed values show how much a peer's
// row depends on its draws.
//
// For every scenario file it first checks itself against the C++ runs:
//   1. its own run without a breaker must equal the C++ `none` run call for
//      call (same successes, failures and no rejections at the same calls);
//   2. its metrics, computed from the C++ `recommended` run's per-call
//      outcomes, must equal the C++ metrics of that run.
// Either mismatch exits 1 naming the file and the first differing call.
// Then it runs every peer policy and prints one row per family, rate and
// policy (counts summed over the seeds, as the C++ suite does).
'use strict';

const fs = require('fs');
const path = require('path');
const FakeTimers = require('@sinonjs/fake-timers');

// --- the policies ------------------------------------------------------------

// Each makes a fresh breaker on the current (fake) clock and returns
// { call(action) -> Promise, close() }. `action` is the backend call.
const POLICIES = {
  // opossum 10's documented defaults: 50% errors over 10 s (10 buckets), no
  // volume threshold, reset (half-open) after 30 s, a 10 s call timeout.
  'opossum-default': () => opossum({}),
  // The tuning opossum's docs suggest for a fast service: trip at 50% once
  // 20 calls are in the 10 s window, try again after 1 s.
  'opossum-tuned': () => opossum({errorThresholdPercentage: 50, resetTimeout: 1000,
                                  rollingCountTimeout: 10000, rollingCountBuckets: 10,
                                  volumeThreshold: 20}),
  // cockatiel 4's README examples: 5 failures in a row, 20% over 30 s
  // (sampling), 20% of the last 100 calls (count); half-open after 10 s.
  'cockatiel-consecutive': () => cockatiel(10000, (c) => new c.ConsecutiveBreaker(5)),
  'cockatiel-sampling': () => cockatiel(
      10000, (c) => new c.SamplingBreaker({threshold: 0.2, duration: 30000})),
  'cockatiel-count': () => cockatiel(
      10000, (c) => new c.CountBreaker({threshold: 0.2, size: 100})),
  // A tuning of each of cockatiel's two main breakers: a 50% sampling breaker
  // over 10 s that tries again after 1 s; and the closest cockatiel gets to
  // our recommended breaker (10 failures in a row, half-open after 200 ms
  // growing to 480 ms).
  'cockatiel-sampling-tuned': () => cockatiel(
      1000, (c) => new c.SamplingBreaker({threshold: 0.5, duration: 10000})),
  'cockatiel-consecutive-tuned': () => cockatiel(
      (c) => new c.ExponentialBackoff({initialDelay: 200, maxDelay: 480, exponent: 2}),
      (c) => new c.ConsecutiveBreaker(10)),
};

function opossum(options) {
  const CircuitBreaker = require('opossum');
  const breaker = new CircuitBreaker((action) => action(), options);
  // Rejections are the result we measure, not an error to report.
  breaker.on('error', () => {});
  return {call: (action) => breaker.fire(action), close: () => breaker.shutdown()};
}

function cockatiel(halfOpenAfter, makeBreaker) {
  const c = require('cockatiel');
  const policy = c.circuitBreaker(c.handleAll, {
    halfOpenAfter: typeof halfOpenAfter === 'function' ? halfOpenAfter(c) : halfOpenAfter,
    breaker: makeBreaker(c),
  });
  return {call: (action) => policy.execute(action), close: () => {}};
}

// --- one run -----------------------------------------------------------------

// A seeded uniform generator in [0, 1) (mulberry32) to stand in for
// Math.random during a run.
function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Whether a = [goodput, waste] dominates b: goodput >= and waste <=, one of
// them strictly.
const dominates = (a, b) => a[0] >= b[0] && a[1] <= b[1] && (a[0] > b[0] || a[1] < b[1]);

// FNV-1a of `text`: the seed of one run.
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

// Runs `make` (null: no breaker) against scenario `sc` with Math.random
// seeded by `seed`; returns the per-call outcomes: 's' succeeded, 'f'
// failed, 'r' rejected locally.
async function runOne(sc, make, seed = 0) {
  const clock = FakeTimers.install({now: 0, toFake: ['Date', 'setTimeout', 'clearTimeout',
                                                    'setInterval', 'clearInterval']});
  const random = Math.random;
  Math.random = seededRandom(seed);
  try {
    const breaker = make ? make() : null;
    const n = sc.fates.length;
    const out = new Array(n);
    const capacityAt = capacities(sc);
    let capSecond = -1;
    let capUsed = 0;
    const slow = sc.failure_latency_ms > 0;
    for (let i = 0; i < n; i++) {
      const t = i * sc.spacing_ms;
      if (t > clock.now) {
        if (slow) await clock.tickAsync(t - clock.now);
        else clock.tick(t - clock.now);
      }
      let reached = false;
      let ok = false;
      const action = () => {
        reached = true;
        const fate = sc.fates[i];
        if (fate === 'o') {
          ok = true;
        } else if (fate === 'c') {
          const second = Math.floor(t / 1000);
          if (second !== capSecond) {
            capSecond = second;
            capUsed = 0;
          }
          ok = capUsed < capacityAt[i];
          if (ok) ++capUsed;
        }
        if (ok) return Promise.resolve();
        if (sc.failure_latency_ms > 0) {
          return new Promise((resolve, reject) => setTimeout(() => {
            reject(new Error('deadline exceeded'));
          }, sc.failure_latency_ms));
        }
        return Promise.reject(new Error('unavailable'));
      };
      const done = (breaker ? breaker.call(action) : action()).then(
          () => { out[i] = 's'; }, () => { out[i] = reached ? 'f' : 'r'; });
      // With late failures, calls overlap: the clock's tickAsync() settles
      // each outcome (and the breaker's bookkeeping) before the next call;
      // otherwise every call is settled before the next one starts.
      if (!slow) await done;
    }
    if (slow) await clock.tickAsync(sc.failure_latency_ms + 1);
    if (breaker) breaker.close();
    return out.join('');
  } finally {
    Math.random = random;
    clock.uninstall();
  }
}

function capacities(sc) {
  const n = sc.fates.length;
  const cap = new Array(n).fill(0);
  let p = 0;
  for (let i = 0; i < n; i++) {
    const t = i * sc.spacing_ms;
    while (p + 1 < sc.periods.length && t >= sc.periods[p][1]) ++p;
    cap[i] = sc.periods[p][3];
  }
  return cap;
}

// --- the metrics, as experiments/goodput/run_recorder.cc computes them ---------

function metrics(sc, perCall) {
  const n = perCall.length;
  const healthyAt = new Array(n);
  let p = 0;
  for (let i = 0; i < n; i++) {
    const t = i * sc.spacing_ms;
    while (p + 1 < sc.periods.length && t >= sc.periods[p][1]) ++p;
    healthyAt[i] = sc.periods[p][2] === 1;
  }
  let succeeded = 0, oracle = 0, reachedFailing = 0, offered = n;
  for (let i = 0; i < n; i++) {
    if (perCall[i] === 's') ++succeeded;
    if (sc.oracle[i] === '1') ++oracle;
    if (perCall[i] !== 'r' && !healthyAt[i]) ++reachedFailing;
  }
  const windowCalls = Math.max(10, Math.floor(100 / sc.spacing_ms));
  const first = [], rec = [];
  for (let k = 0; k + 1 < sc.periods.length; k++) {
    const [, , healthy] = sc.periods[k];
    const [start, end, nextHealthy] = sc.periods[k + 1];
    if (healthy === 1 || nextHealthy !== 1) continue;
    const a = Math.ceil(start / sc.spacing_ms), b = Math.min(n, Math.ceil(end / sc.spacing_ms));
    if (a >= b) continue;
    const len = (end - start) / 1000;
    const since = (i) => ((i - a) * sc.spacing_ms) / 1000;
    let fs_ = len;
    for (let i = a; i < b; i++) if (perCall[i] === 's') { fs_ = since(i); break; }
    const m = b - a, w = Math.min(windowCalls, m);
    const okSum = new Array(m + 1).fill(0), orSum = new Array(m + 1).fill(0);
    for (let i = 0; i < m; i++) {
      okSum[i + 1] = okSum[i] + (perCall[a + i] === 's' ? 1 : 0);
      orSum[i + 1] = orSum[i] + (sc.oracle[a + i] === '1' ? 1 : 0);
    }
    let lastBad = -1;
    for (let j = 0; j + w <= m; j++) {
      if (okSum[j + w] - okSum[j] < 0.99 * (orSum[j + w] - orSum[j])) lastBad = j;
    }
    let r99 = len;
    if (lastBad < 0) r99 = 0;
    else if (lastBad < m - w) r99 = since(a + lastBad + 1);
    first.push(fs_);
    rec.push(r99);
  }
  return {offered, succeeded, oracle_succeeded: oracle, reached_failing_backend: reachedFailing,
          first, rec};
}

const mean = (v) => (v.length ? v.reduce((x, y) => x + y, 0) / v.length : 0);
const max = (v) => (v.length ? Math.max(...v) : 0);

function firstDiff(a, b) {
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) return i;
  return -1;
}

// --- main --------------------------------------------------------------------

async function main() {
  const args = process.argv.slice(2);
  const dir = args.find((a) => !a.startsWith('--'));
  if (!dir) {
    console.error('usage: node run.js FATES_DIR [--json=FILE] [--policies=a,b,...] ' +
                  '[--rng_seed=N]');
    process.exit(2);
  }
  const jsonOut = (args.find((a) => a.startsWith('--json=')) || '').slice(7);
  const only = (args.find((a) => a.startsWith('--policies=')) || '').slice(11);
  const rngSeed = (args.find((a) => a.startsWith('--rng_seed=')) || '--rng_seed=1').slice(11);
  const names = only ? only.split(',') : Object.keys(POLICIES);
  for (const name of names) {
    if (!POLICIES[name]) {
      console.error(`run.js: unknown policy "${name}" (known: ${Object.keys(POLICIES).join(', ')})`);
      process.exit(2);
    }
  }
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  if (files.length === 0) {
    console.error(`run.js: no scenario files in ${dir}`);
    process.exit(2);
  }
  // (family, rate) -> policy -> summed counts and recoveries
  const blocks = new Map();
  for (const file of files) {
    const sc = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    const none = await runOne(sc, null);
    const ref = sc.reference.none.per_call;
    if (none !== ref) {
      const i = firstDiff(none, ref);
      console.error(`run.js: ${file}: the no-breaker run differs from C++ at call ${i}: ` +
                    `node '${none[i]}', C++ '${ref[i]}'`);
      process.exit(1);
    }
    const rec = sc.reference.recommended;
    const m = metrics(sc, rec.per_call);
    const checks = [['succeeded', m.succeeded, rec.succeeded],
                    ['reached_failing_backend', m.reached_failing_backend,
                     rec.reached_failing_backend],
                    ['recovery99_seconds', mean(m.rec), rec.recovery99_seconds],
                    ['first_success_seconds', mean(m.first), rec.first_success_seconds]];
    for (const [what, got, want] of checks) {
      if (Math.abs(got - want) > 1e-3) {
        console.error(`run.js: ${file}: ${what} of the C++ recommended run recomputed here is ` +
                      `${got}, C++ says ${want}`);
        process.exit(1);
      }
    }
    const key = `${sc.family} @ ${sc.calls_per_second}`;
    if (!blocks.has(key)) blocks.set(key, {family: sc.family, rate: sc.calls_per_second,
                                           rows: new Map()});
    const block = blocks.get(key);
    const add = (name, mm) => {
      const row = block.rows.get(name) || {offered: 0, succeeded: 0, oracle_succeeded: 0,
                                           reached_failing_backend: 0, first: [], rec: []};
      row.offered += mm.offered;
      row.succeeded += mm.succeeded;
      row.oracle_succeeded += mm.oracle_succeeded;
      row.reached_failing_backend += mm.reached_failing_backend;
      row.first.push(...mm.first);
      row.rec.push(...mm.rec);
      block.rows.set(name, row);
    };
    add('none', metrics(sc, none));
    add('recommended (C++)', m);
    for (const name of names) {
      add(name, metrics(sc, await runOne(sc, POLICIES[name], hash(`${file}|${name}|${rngSeed}`))));
    }
  }
  const results = [];
  console.log(`peers: ${files.length} scenario files; the no-breaker run equals C++ call for ` +
              'call in every one, and the metrics of the C++ recommended run recompute exactly');
  for (const block of blocks.values()) {
    const base = block.rows.get('none').reached_failing_backend;
    console.log(`\n${block.family} @ ${block.rate} calls/s`);
    console.log('policy'.padEnd(28) + ['goodput', 'waste', 'first_ok', 'rec99', 'rec99_max']
        .map((s) => s.padStart(10)).join(''));
    for (const [name, r] of block.rows) {
      const row = {family: block.family, calls_per_second: block.rate, policy: name,
                   goodput_ratio: r.succeeded / r.oracle_succeeded,
                   waste_ratio: base > 0 ? r.reached_failing_backend / base : 0,
                   first_success_seconds: mean(r.first), recovery99_seconds: mean(r.rec),
                   recovery99_max_seconds: max(r.rec), outages: r.rec.length};
      results.push(row);
      console.log(name.padEnd(28) + [row.goodput_ratio.toFixed(4), row.waste_ratio.toFixed(4),
          row.first_success_seconds.toFixed(3) + 's', row.recovery99_seconds.toFixed(3) + 's',
          row.recovery99_max_seconds.toFixed(3) + 's'].map((s) => s.padStart(10)).join(''));
    }
  }
  // The Pareto check: a peer dominates recommended in a block when its
  // goodput is >= and its waste <=, one of them strictly.
  const dominated = [];
  for (const block of blocks.values()) {
    const at = (name) => results.find((r) => r.family === block.family &&
                                             r.calls_per_second === block.rate &&
                                             r.policy === name);
    const rec = at('recommended (C++)');
    for (const name of names) {
      const r = at(name);
      if (dominates([r.goodput_ratio, r.waste_ratio], [rec.goodput_ratio, rec.waste_ratio])) {
        dominated.push(`${block.family} @ ${block.rate}: ${name}`);
      }
    }
  }
  console.log(`\nPareto: a peer configuration has goodput >= and waste <= recommended's (one ` +
              `strictly) in ${dominated.length} of ${blocks.size} family/rate blocks` +
              (dominated.length ? `: ${dominated.join('; ')}` : ''));
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({peers: results}, null, 1) + '\n');
}

// jitter.js reuses the runs, the metrics and the Pareto test.
module.exports = {POLICIES, runOne, metrics, hash, dominates};

if (require.main === module) {
  main().catch((e) => {
    console.error(`run.js: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
}
