// tpch.mjs loads generated TPC-H files into DuckDB and runs the 22
// queries, as cmd/tpchbench does for deeplaked and PostgreSQL, and prints
// one JSON object that tpchbench -duckdb reads:
//
//   node tpch.mjs [-runs 3] [-timeout 60] [-db FILE] [-schema schema.sql] DATA_DIR QUERY_DIR
//
// The schema is ../schema.sql unless -schema names another. The database
// is a file (-db; by default tpch.duckdb in DATA_DIR's parent), created
// afresh; the load is the CREATE TABLEs, one COPY per table with DuckDB's
// CSV reader and a CHECKPOINT, so that the data is on disk as PostgreSQL's
// is after its COPY. Each query runs once to warm and then -runs times;
// the median is kept. A query past -timeout seconds is interrupted and
// reported as timed out. rows is the number of rows of the query's SELECT.
import { DuckDBInstance, version } from '@duckdb/node-api';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const opts = { runs: 3, timeout: 60, db: '', schema: path.join(here, '..', 'schema.sql') };
const args = [];
for (let i = 2; i < process.argv.length; i++) {
	const a = process.argv[i];
	if (a.startsWith('-') && a.slice(1) in opts && i + 1 < process.argv.length) {
		opts[a.slice(1)] = process.argv[++i];
	} else {
		args.push(a);
	}
}
if (args.length !== 2) {
	console.error('usage: node tpch.mjs [-runs N] [-timeout SECONDS] [-db FILE] [-schema FILE] DATA_DIR QUERY_DIR');
	process.exit(2);
}
const [dataDir, queryDir] = args;
const runs = Number(opts.runs);
const timeoutMs = Number(opts.timeout) * 1000;
const dbFile = opts.db || path.join(path.dirname(path.resolve(dataDir)), 'tpch.duckdb');

// The tables in the order of the generator (gen.Tables).
const tables = ['region', 'nation', 'supplier', 'part', 'partsupp', 'customer', 'orders', 'lineitem'];

// statements splits SQL text as tpch.Statements does: '--' comments and
// single-quoted strings, statements ended by ';', blank ones dropped.
function statements(sql) {
	const out = [];
	let cur = '';
	const flush = () => {
		if (cur.trim() !== '') out.push(cur.trim());
		cur = '';
	};
	for (let i = 0; i < sql.length; i++) {
		const c = sql[i];
		if (c === '-' && sql[i + 1] === '-') {
			while (i < sql.length && sql[i] !== '\n') i++;
			cur += '\n';
		} else if (c === "'") {
			let j = i + 1;
			while (j < sql.length && (sql[j] !== "'" || sql[j + 1] === "'")) {
				if (sql[j] === "'") j++;
				j++;
			}
			cur += sql.slice(i, j + 1);
			i = j;
		} else if (c === ';') {
			flush();
		} else {
			cur += c;
		}
	}
	flush();
	return out;
}

const isSelect = (stmt) => /^select\b/i.test(stmt);
const viewsOf = (stmts) =>
	stmts.map((s) => /^create\s+view\s+(\w+)/i.exec(s)).filter(Boolean).map((m) => m[1]);

// timed runs fn, interrupting the connection after timeoutMs. It returns
// the seconds taken, or null when the statements ran past timeoutMs (the
// interrupt may also land between two statements of query 15).
async function timed(conn, fn) {
	const state = { interrupted: false };
	const timer = setTimeout(() => {
		state.interrupted = true;
		conn.interrupt();
	}, timeoutMs);
	const start = process.hrtime.bigint();
	try {
		const result = await fn(state);
		if (state.interrupted) return { seconds: null };
		return { seconds: Number(process.hrtime.bigint() - start) / 1e9, result };
	} catch (err) {
		if (state.interrupted) return { seconds: null };
		throw err;
	} finally {
		clearTimeout(timer);
	}
}

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)];
}

for (const f of [dbFile, dbFile + '.wal']) fs.rmSync(f, { force: true });
const instance = await DuckDBInstance.create(dbFile);
const conn = await instance.connect();

// Load. The schema's PostgreSQL types (integer, char(n), varchar(n),
// decimal(15,2), date) and its primary keys are DuckDB's too, so it runs
// unchanged: char(n) is a varchar there, without the padding, which the
// generated values do not need.
const loadStart = process.hrtime.bigint();
for (const stmt of statements(fs.readFileSync(opts.schema, 'utf8'))) {
	await conn.run(stmt);
}
for (const t of tables) {
	const file = path.resolve(dataDir, `${t}.tbl`).replaceAll("'", "''");
	await conn.run(`COPY ${t} FROM '${file}' (DELIMITER '|', HEADER false)`);
}
await conn.run('CHECKPOINT');
const loadSeconds = Number(process.hrtime.bigint() - loadStart) / 1e9;
console.error(`duckdb: loaded in ${loadSeconds.toFixed(3)}s`);

const queries = [];
for (let q = 1; q <= 22; q++) {
	const name = String(q).padStart(2, '0');
	const stmts = statements(fs.readFileSync(path.join(queryDir, `${name}.sql`), 'utf8'));
	const views = viewsOf(stmts);
	const times = [];
	let rows = null;
	let timedOut = false;
	for (let r = 0; r <= runs; r++) { // the first run warms
		const { seconds, result } = await timed(conn, async (state) => {
			let n = null;
			for (const stmt of stmts) {
				if (state.interrupted) break;
				const res = await conn.run(stmt);
				if (isSelect(stmt)) n = res.rowCount;
			}
			return n;
		});
		if (seconds === null) {
			timedOut = true;
			// An interrupted query 15 leaves its view behind.
			for (const v of views) await conn.run(`DROP VIEW IF EXISTS ${v}`);
			break;
		}
		rows = result;
		if (r > 0) times.push(seconds);
	}
	const entry = { query: q, seconds: timedOut ? null : median(times), runs: times, rows, timeout: timedOut };
	queries.push(entry);
	console.error(`duckdb: query ${q}: ${timedOut ? `>${opts.timeout}s` : `${entry.seconds.toFixed(4)}s`}, ${rows} rows`);
}
conn.closeSync();
instance.closeSync();

console.log(JSON.stringify({
	engine: 'duckdb',
	version: version(),
	load_seconds: loadSeconds,
	runs,
	timeout_seconds: Number(opts.timeout),
	queries,
}));
