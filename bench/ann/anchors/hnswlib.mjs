// hnswlib.mjs: the hnswlib-node anchor. HierarchicalNSW('l2', dim) with
// M=16, efConstruction=64 built by one addPoint loop (one thread), then one
// client searching at each ef, unfiltered and with the 1% category filter
// (searchKnn's filter callback).
//
//   node hnswlib.mjs DATA_DIR WORK_DIR
import { statSync } from "node:fs";
import { join } from "node:path";
import hnswlib from "hnswlib-node";
import { readDataSet, recallAt, timing, now, print, log, efs } from "./common.mjs";

const [dir, work] = process.argv.slice(2);
const d = readDataSet(dir);
const params = "M=16, efConstruction=64, randomSeed=100";

log(`hnswlib-node: building over ${d.rows} vectors (one thread)`);
const index = new hnswlib.HierarchicalNSW("l2", d.dim);
index.initIndex(d.rows, 16, 64, 100);
let t0 = now();
for (let i = 0; i < d.rows; i++) index.addPoint(Array.from(d.vector(i)), i);
const buildS = (now() - t0) / 1000;
const file = join(work, "hnswlib.bin");
index.writeIndexSync(file);
print({ system: "hnswlib-node", phase: "build", name: "hnswlib-node HierarchicalNSW('l2')", rows: d.rows,
  params, seconds: buildS, size_bytes: statSync(file).size, size_note: "writeIndexSync file (includes the vectors)" });

const queries = Array.from({ length: d.nQueries }, (_, i) => Array.from(d.query(i)));
for (const ef of efs) {
  index.setEf(ef);
  for (const filtered of [false, true]) {
    // Warm up with the first queries, as the Go side does.
    for (let i = 0; i < Math.min(10, d.nQueries); i++) index.searchKnn(queries[i], d.k);
    const got = [], lat = [];
    const t = now();
    for (let i = 0; i < d.nQueries; i++) {
      const s = now();
      let res;
      if (filtered) {
        const c = d.queryCats[i];
        res = index.searchKnn(queries[i], d.k, (label) => d.rowCats[label] === c);
      } else {
        res = index.searchKnn(queries[i], d.k);
      }
      lat.push(now() - s);
      got.push(res.neighbors);
    }
    const r = { system: "hnswlib-node", phase: "search", name: "hnswlib-node searchKnn", rows: d.rows, search: "index",
      ef, clients: 1, recall_at_10: recallAt(filtered ? d.truthCat : d.truth, d.k, got), plan: "hnswlib-node, one thread" };
    if (filtered) r.filter = `category = x (1 of ${d.nCategories})`;
    print(timing(r, lat, now() - t));
  }
}
