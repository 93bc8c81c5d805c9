// common.mjs reads the data set that `ann gen` wrote (flat little-endian
// files, see ../data.go) and prints results in the fields of ../result.go.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export function readDataSet(dir) {
  const meta = JSON.parse(readFileSync(join(dir, "meta.json"), "utf8"));
  const f32 = (name) => { const b = readFileSync(join(dir, name)); return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4); };
  const i32 = (name) => { const b = readFileSync(join(dir, name)); return new Int32Array(b.buffer, b.byteOffset, b.byteLength / 4); };
  const d = {
    rows: meta.rows, dim: meta.dim, k: meta.k, nQueries: meta.queries, nCategories: meta.categories,
    vectors: f32("vectors.f32"),
    rowCats: i32("categories.i32"),
    queryVecs: f32("queries.f32"),
    queryCats: i32("query_cats.i32"),
    truth: i32("truth.i32"),
    truthCat: i32("truth_cat.i32"),
  };
  d.vector = (i) => d.vectors.subarray(i * d.dim, (i + 1) * d.dim);
  d.query = (i) => d.queryVecs.subarray(i * d.dim, (i + 1) * d.dim);
  return d;
}

// recallAt returns recall@k of got (one id array per query) against truth
// (queries × k, -1 padded).
export function recallAt(truth, k, got) {
  let found = 0, want = 0;
  got.forEach((ids, i) => {
    const set = new Set(ids);
    for (let j = 0; j < k; j++) {
      const t = truth[i * k + j];
      if (t < 0) break;
      want++;
      if (set.has(t)) found++;
    }
  });
  return want ? found / want : 0;
}

// timing fills queries, qps, p50_ms and p99_ms from per-query latencies
// (ms) and the wall time (ms) of the pass.
export function timing(r, lat, wallMs) {
  const s = [...lat].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  r.queries = lat.length;
  r.qps = lat.length / (wallMs / 1000);
  r.p50_ms = Math.round(at(0.5) * 1000) / 1000;
  r.p99_ms = Math.round(at(0.99) * 1000) / 1000;
  return r;
}

export const now = () => performance.now();
export const print = (r) => console.log(JSON.stringify(r));
export const log = (msg) => process.stderr.write(`${new Date().toISOString().slice(11, 19)}  ${msg}\n`);
export const efs = (process.env.BENCH_EF || "40,100,200").split(",").map(Number);
