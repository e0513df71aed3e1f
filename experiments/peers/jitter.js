// Why cockatiel's rebuild of our breaker sometimes dominates `recommended` in
// the `mixed` family (docs/breaker-quality.md, "Where the rebuild dominates"):
// the same cockatiel breaker (ConsecutiveBreaker(10)) with different open
// periods, on many seeds, against the C++ `recommended` run.
//
//   goodput_experiment --suite --families=mixed --rates=1000,100 --seeds=40 \
//       --export_fates=DIR
//   node jitter.js DIR [--draws=4]
//
// Open-period schedules (attempt k = the k-th open period since the breaker
// last closed):
//   jittered     cockatiel's ExponentialBackoff 200..480 ms (decorrelated
//                jitter), draws seeded exactly as run.js --rng_seed=1..D seeds
//                cockatiel-consecutive-tuned, so draws 1-4 on seeds 1-3 are the
//                rows of docs/results/peers.txt and of the doc's table
//   fixed        200, 400, 480, 480, ... ms: recommended's own schedule
//   mean-fixed   the jittered schedule's mean per attempt, without jitter
//                (174, 232, 365, 450, 472, 478, 480 ... ms)
//   jitter±20%   fixed x uniform [0.8, 1.2]: same mean, randomized
//   jitter±50%   fixed x uniform [0.5, 1.5]
// It prints, per rate: the rows pooled over all seeds (counts summed, as the
// suite does), and how often, over blocks of 3 consecutive seeds (the docs'
// block size), one draw of a randomized schedule dominates the C++
// `recommended` run or the fixed schedule, and the reverse.
'use strict';

const fs = require('fs');
const path = require('path');
const c = require('cockatiel');
const {POLICIES, runOne, metrics, hash, dominates} = require('./run.js');

function withDelays(delay) {
  return () => {
    const policy = c.circuitBreaker(c.handleAll, {
      halfOpenAfter: new c.DelegateBackoff((context) => delay(context.attempt)),
      breaker: new c.ConsecutiveBreaker(10),
    });
    return {call: (action) => policy.execute(action), close: () => {}};
  };
}

const fixed = (k) => Math.min(480, 200 * 2 ** (k - 1));
const jitteredMean = [174, 232, 365, 450, 472, 478];

// name -> [make, randomized]
const SCHEDULES = {
  'jittered': [POLICIES['cockatiel-consecutive-tuned'], true],
  'fixed': [withDelays(fixed), false],
  'mean-fixed': [withDelays((k) => (k <= jitteredMean.length ? jitteredMean[k - 1] : 480)), false],
  'jitter±20%': [withDelays((k) => fixed(k) * (0.8 + 0.4 * Math.random())), true],
  'jitter±50%': [withDelays((k) => fixed(k) * (0.5 + Math.random())), true],
};

async function main() {
  const args = process.argv.slice(2);
  const dir = args.find((a) => !a.startsWith('--'));
  const draws = parseInt((args.find((a) => a.startsWith('--draws=')) || '--draws=4').slice(8), 10);
  if (!dir || !(draws >= 1)) {
    console.error('usage: node jitter.js FATES_DIR [--draws=N]');
    process.exit(2);
  }
  // rate -> [{seed, rows: name -> [succeeded, oracle, reached failing, none's reached]}]
  const byRate = new Map();
  for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const sc = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
    if (sc.family !== 'mixed') continue;
    const base = metrics(sc, sc.reference.none.per_call).reached_failing_backend;
    const rows = {};
    const put = (name, perCall) => {
      const m = metrics(sc, perCall);
      rows[name] = [m.succeeded, m.oracle_succeeded, m.reached_failing_backend, base];
    };
    put('recommended (C++)', sc.reference.recommended.per_call);
    for (const [name, [make, randomized]] of Object.entries(SCHEDULES)) {
      for (let d = 1; d <= (randomized ? draws : 1); d++) {
        // The jittered draws use run.js's seeds for cockatiel-consecutive-tuned.
        const key = name === 'jittered' ? `${file}|cockatiel-consecutive-tuned|${d}`
                                        : `${file}|${name}|${d}`;
        put(randomized ? `${name} #${d}` : name, await runOne(sc, make, hash(key)));
      }
    }
    if (!byRate.has(sc.calls_per_second)) byRate.set(sc.calls_per_second, []);
    byRate.get(sc.calls_per_second).push({seed: sc.seed, rows});
  }
  for (const [rate, list] of byRate) {
    list.sort((a, b) => a.seed - b.seed);
    const ratios = (runs, name) => {
      const t = runs.reduce((acc, r) => acc.map((x, i) => x + r.rows[name][i]), [0, 0, 0, 0]);
      return [t[0] / t[1], t[2] / t[3]];
    };
    const names = Object.keys(list[0].rows);
    console.log(`\nmixed @ ${rate} calls/s, seeds ${list[0].seed}-${list[list.length - 1].seed} ` +
                'pooled (goodput / waste)');
    for (const [name, [, randomized]] of [['recommended (C++)', [null, false]],
                                          ...Object.entries(SCHEDULES)]) {
      if (!randomized) {
        const [g, w] = ratios(list, name);
        console.log(`  ${name.padEnd(20)} ${g.toFixed(5)} / ${w.toFixed(5)}`);
        continue;
      }
      const each = names.filter((n) => n.startsWith(`${name} #`)).map((n) => ratios(list, n));
      const mean = [0, 1].map((i) => each.reduce((s, x) => s + x[i], 0) / each.length);
      console.log(`  ${name.padEnd(20)} ${mean[0].toFixed(5)} / ${mean[1].toFixed(5)} ` +
                  `(mean of ${each.length} draws; goodput ${Math.min(...each.map((x) => x[0])).toFixed(5)}` +
                  `-${Math.max(...each.map((x) => x[0])).toFixed(5)}, waste ` +
                  `${Math.min(...each.map((x) => x[1])).toFixed(5)}-` +
                  `${Math.max(...each.map((x) => x[1])).toFixed(5)})`);
    }
    const blocks = [];
    for (let k = 0; k + 3 <= list.length; k += 3) blocks.push(list.slice(k, k + 3));
    console.log(`  blocks of 3 seeds: ${blocks.length}; one draw dominates / is dominated by:`);
    for (const [name, [, randomized]] of Object.entries(SCHEDULES)) {
      if (!randomized) continue;
      let overRec = 0, underRec = 0, overFixed = 0, underFixed = 0, total = 0;
      for (const block of blocks) {
        const rec = ratios(block, 'recommended (C++)'), fix = ratios(block, 'fixed');
        for (const n of names.filter((x) => x.startsWith(`${name} #`))) {
          const r = ratios(block, n);
          ++total;
          overRec += dominates(r, rec);
          underRec += dominates(rec, r);
          overFixed += dominates(r, fix);
          underFixed += dominates(fix, r);
        }
      }
      console.log(`    ${name.padEnd(18)} vs recommended ${overRec} / ${underRec}, ` +
                  `vs fixed ${overFixed} / ${underFixed} (of ${total} block-draws)`);
    }
  }
}

main().catch((e) => {
  console.error(`jitter.js: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
