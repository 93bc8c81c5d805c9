// lancedb.mjs: the LanceDB anchor. A local table (id int32, category int32,
// vector fixed_size_list<float32>[dim]) written from the same vectors; an
// exhaustive search before any index; then the closest index to pgvector's
// HNSW that the npm API offers, Index.hnswSq (IVF_HNSW_SQ: one IVF
// partition, so one HNSW graph, m=16, efConstruction=64, 8-bit scalar
// quantized vectors), searched at each ef by one client and by 8 requests
// in flight, with refineFactor(4), and with the 1% category filter
// (.where, prefiltered).
//
//   node lancedb.mjs DATA_DIR WORK_DIR
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import * as lancedb from "@lancedb/lancedb";
import { Field, FixedSizeList, Float32, Int32, Table, makeData, makeVector } from "apache-arrow";
import { readDataSet, recallAt, timing, now, print, log, efs } from "./common.mjs";

const [dir, work] = process.argv.slice(2);
const d = readDataSet(dir);
const clients = Number(process.env.BENCH_CLIENTS || 8);
const exactN = Math.min(d.nQueries, Number(process.env.BENCH_EXACT_QUERIES || d.nQueries));
const filterName = `category = x (1 of ${d.nCategories})`;

// The table, built from the flat arrays without copying them into JS objects.
const ids = Int32Array.from({ length: d.rows }, (_, i) => i);
const vecType = new FixedSizeList(d.dim, new Field("item", new Float32(), true));
const arrow = new Table({
  id: makeVector(makeData({ type: new Int32(), length: d.rows, data: ids })),
  category: makeVector(makeData({ type: new Int32(), length: d.rows, data: d.rowCats })),
  vector: makeVector(makeData({ type: vecType, length: d.rows, nullCount: 0,
    child: makeData({ type: new Float32(), length: d.rows * d.dim, data: d.vectors }) })),
});

const path = join(work, "lancedb");
const db = await lancedb.connect(path);
log(`lancedb: writing ${d.rows} rows`);
let t0 = now();
const tbl = await db.createTable("items", arrow, { mode: "overwrite" });
print({ system: "lancedb", phase: "load", name: "lancedb createTable (local)", rows: d.rows,
  seconds: (now() - t0) / 1000, size_bytes: du(join(path, "items.lance")), size_note: "table directory" });

// pass runs n queries, `inflight` at a time, each built by make(i), and
// prints one result line.
async function pass(r, n, inflight, truth, make) {
  for (let i = 0; i < Math.min(10, n); i++) await make(i).toArray();
  const got = new Array(n), lat = new Array(n);
  let next = 0;
  const t = now();
  await Promise.all(Array.from({ length: inflight }, async () => {
    for (let i = next++; i < n; i = next++) {
      const s = now();
      const rows = await make(i).toArray();
      lat[i] = now() - s;
      got[i] = rows.map((x) => x.id);
    }
  }));
  r.recall_at_10 = recallAt(truth, d.k, got);
  print(timing(r, lat, now() - t));
}

const base = { system: "lancedb", phase: "search", rows: d.rows };
const knn = (i) => tbl.query().nearestTo(d.query(i)).distanceType("l2").select(["id", "_distance"]).limit(d.k);

log(`lancedb: exhaustive search, ${exactN} queries`);
await pass({ ...base, name: "lancedb flat", search: "exact", clients: 1, plan: "no index (flat scan)" },
  exactN, 1, d.truth, (i) => knn(i));
await pass({ ...base, name: "lancedb flat", search: "exact", filter: filterName, clients: 1, plan: "no index (flat scan), prefilter" },
  exactN, 1, d.truthCat, (i) => knn(i).where(`category = ${d.queryCats[i]}`));

log("lancedb: createIndex hnswSq");
t0 = now();
await tbl.createIndex("vector", { config: lancedb.Index.hnswSq({ distanceType: "l2", m: 16, efConstruction: 64, numPartitions: 1 }) });
const buildS = (now() - t0) / 1000;
const idx = (await tbl.listIndices()).find((x) => x.columns.includes("vector"));
print({ system: "lancedb", phase: "build", name: `lancedb ${idx?.indexType ?? "index"}`, rows: d.rows,
  params: "Index.hnswSq: m=16, efConstruction=64, numPartitions=1", seconds: buildS,
  size_bytes: idx?.sizeBytes ?? du(join(path, "items.lance", "_indices")),
  size_note: idx?.sizeBytes ? "listIndices sizeBytes" : "_indices directory" });

for (const ef of efs) {
  const plan = `IVF_HNSW_SQ, nprobes 1, ef ${ef}`;
  const ann = (i) => knn(i).nprobes(1).ef(ef);
  log(`lancedb: ef ${ef}`);
  await pass({ ...base, name: "lancedb hnswSq", search: "index", ef, clients: 1, plan }, d.nQueries, 1, d.truth, ann);
  await pass({ ...base, name: "lancedb hnswSq", search: "index", ef, clients, plan }, d.nQueries, clients, d.truth, ann);
  // The graph holds 8-bit quantized vectors: refineFactor(4) reranks the
  // 40 nearest candidates by their full vectors.
  await pass({ ...base, name: "lancedb hnswSq + refine", search: "index", ef, clients: 1, plan: plan + ", refineFactor 4" },
    d.nQueries, 1, d.truth, (i) => ann(i).refineFactor(4));
  await pass({ ...base, name: "lancedb hnswSq", search: "index", ef, clients: 1, filter: filterName, plan: plan + ", prefilter" },
    d.nQueries, 1, d.truthCat, (i) => ann(i).where(`category = ${d.queryCats[i]}`));
}

function du(p) {
  try {
    return Number(execFileSync("du", ["-sb", p]).toString().split("\t")[0]);
  } catch {
    return 0;
  }
}
