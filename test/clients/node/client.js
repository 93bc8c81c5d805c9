// node-postgres (npm pg) with pg-copy-streams and pg-cursor. Each step prints "ok <step>"
// or "FAIL <step>: <why>"; the exit status is 1 when a step failed.
// Connection settings come from the libpq environment (PGHOST, PGPORT,
// PGUSER, PGDATABASE), which pg reads too; CLIENT_TARGET=postgres declares
// tensors as PostgreSQL arrays.
//
// Queries with parameters go over the extended protocol. Results are read
// in text format: pg decodes every DataRow field as UTF-8 before its
// binary parsers see it, so binary results are exact only for values
// whose bytes happen to be valid UTF-8; the select step reads an int4
// column in binary to show the format reaches the client.
'use strict'

const assert = require('node:assert/strict')
const { pipeline } = require('node:stream/promises')
const { Readable, Writable } = require('node:stream')
const pg = require('pg')
const { from: copyFrom, to: copyTo } = require('pg-copy-streams')
const Cursor = require('pg-cursor')

const target = process.env.CLIENT_TARGET || 'deeplaked'
const itemsTable = 'node_items'
const copyTable = 'node_copy'
const seqTable = 'node_seq'
const seqRows = 1200
const columns = ['id', 'name', 'score', 'payload', 'embedding', 'weights', 'pixels']

function tableDDL(name) {
  const [weights, pixels] = target === 'postgres' ? ['real[]', 'smallint[]'] : ['float32[3]', 'uint8[2][2]']
  return `CREATE TABLE ${name} (id int PRIMARY KEY, name text, score float8, payload bytea, ` +
    `embedding vector(3), weights ${weights}, pixels ${pixels})`
}

// Rows as JavaScript values; vectors as arrays of numbers.
const items = [
  [1, "alpha 'quoted' é", 1.5, Buffer.from([0x00, 0xff, 0x10]), [0.5, 1, 2], [1.5, -2, 0.25], [[1, 2], [3, 255]]],
  [2, null, null, null, null, null, null],
]
const copyRows = [
  [10, 'beta', -0.5, Buffer.from([1, 2]), [1, 2, 3], [0, 0.5, 1], [[0, 1], [2, 3]]],
  [11, null, null, null, null, null, null],
  [12, 'gamma\tdelta', 1e20, Buffer.alloc(0), [-1, 0, 1], [3, 2, 1], [[255, 0], [0, 255]]],
]
const copyText =
  '10\tbeta\t-0.5\t\\\\x0102\t[1,2,3]\t{0,0.5,1}\t{{0,1},{2,3}}\n' +
  '11\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n' +
  '12\tgamma\\tdelta\t1e+20\t\\\\x\t[-1,0,1]\t{3,2,1}\t{{255,0},{0,255}}\n'

function vectorText(v) {
  return v === null ? null : '[' + v.join(',') + ']'
}

function parseVector(s) {
  if (s === null) return null
  assert.ok(s.startsWith('[') && s.endsWith(']'), `not a vector: ${s}`)
  return s.slice(1, -1).split(',').map(Number)
}

// A text-format row as the values above: pg parses float8, bytea and the
// arrays it knows (real[], smallint[]); vector arrives as its text.
function asValues(r) {
  return [r.id, r.name, r.score, r.payload, parseVector(r.embedding), r.weights, r.pixels]
}

// expectSeq checks that rows are the seq table's rows first..last, each
// once and in order.
function expectSeq(what, rows, first, last = seqRows) {
  for (let i = 0; i < rows.length; i++) {
    const n = first + i
    assert.deepEqual(rows[i], { n, label: `row ${n}` }, `${what}: row ${i}`)
  }
  assert.equal(rows.length, last - first + 1, `${what}: row count`)
}

// readCursor reads a pg-cursor to its end, size rows at a time: each read
// is an Execute with a row limit, answered with PortalSuspended until the
// last one.
async function readCursor(client, text, values, size) {
  const cursor = client.query(new Cursor(text, values))
  const rows = []
  try {
    for (;;) {
      const batch = await cursor.read(size)
      assert.ok(batch.length <= size, `read(${size}) returned ${batch.length} rows`)
      if (batch.length === 0) break
      rows.push(...batch)
    }
  } finally {
    await cursor.close()
  }
  return rows
}

async function withClient(fn) {
  const client = new pg.Client()
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

async function selectRows(client, table, where, params) {
  const res = await client.query(`SELECT ${columns.join(', ')} FROM ${table} ${where} ORDER BY id`, params)
  return res.rows.map(asValues)
}

const steps = [
  ['connect', () => withClient(async (client) => {
    const version = await client.query('SHOW server_version')
    assert.match(version.rows[0].server_version, /^15/)
    const res = await client.query('SELECT $1::int + 1 AS n', [41])
    assert.deepEqual(res.rows, [{ n: 42 }])
  })],

  ['create', () => withClient(async (client) => {
    for (const table of [itemsTable, copyTable]) {
      await client.query(`DROP TABLE IF EXISTS ${table}`)
      await client.query(tableDDL(table))
    }
  })],

  ['insert', () => withClient(async (client) => {
    // pg sends a Buffer as a binary parameter, arrays as array literals
    // ('{"1.5","-2","0.25"}'), the vector as its text.
    for (const r of items) {
      const res = await client.query(`INSERT INTO ${itemsTable} VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [r[0], r[1], r[2], r[3], vectorText(r[4]), r[5], r[6]])
      assert.equal(res.rowCount, 1)
    }
  })],

  ['select', () => withClient(async (client) => {
    assert.deepEqual(await selectRows(client, itemsTable, 'WHERE id <= $1', [2]), items)
    const bin = await client.query({ text: `SELECT id FROM ${itemsTable} WHERE id <= $1 ORDER BY id`, values: [2], binary: true })
    assert.equal(bin.fields[0].format, 'binary')
    assert.deepEqual(bin.rows, [{ id: 1 }, { id: 2 }])
  })],

  ['cursor', () => withClient(async (client) => {
    await client.query(`DROP TABLE IF EXISTS ${seqTable}`)
    await client.query(`CREATE TABLE ${seqTable} (n int PRIMARY KEY, label text)`)
    for (let first = 1; first <= seqRows; first += 200) {
      const values = []
      const params = []
      for (let n = first; n < first + 200; n++) {
        params.push(`($${values.length + 1}, $${values.length + 2})`)
        values.push(n, `row ${n}`)
      }
      await client.query(`INSERT INTO ${seqTable} VALUES ${params.join(', ')}`, values)
    }
    const text = `SELECT n, label FROM ${seqTable} WHERE n > $1 ORDER BY n`
    // Outside a transaction block: pg-cursor sends Flush, not Sync,
    // between its reads, so the portal lives in the implicit transaction.
    expectSeq('cursor, read(100)', await readCursor(client, text, [0], 100), 1)
    // Inside one, with a read size that does not divide the row count.
    await client.query('BEGIN')
    expectSeq('cursor in BEGIN, read(77)', await readCursor(client, text, [200], 77), 201)
    await client.query('COMMIT')
    // A cursor closed before its end leaves the connection usable.
    const cursor = client.query(new Cursor(text, [0]))
    expectSeq('cursor closed early, read(10)', await cursor.read(10), 1, 10)
    await cursor.close()
    const res = await client.query('SELECT $1::int AS n', [5])
    assert.deepEqual(res.rows, [{ n: 5 }])
  })],

  ['copy_in', () => withClient(async (client) => {
    await pipeline(Readable.from([copyText]), client.query(copyFrom(`COPY ${copyTable} (${columns.join(', ')}) FROM STDIN`)))
    assert.deepEqual(await selectRows(client, copyTable, 'WHERE id >= $1', [0]), copyRows)
  })],

  ['copy_out', () => withClient(async (client) => {
    const chunks = []
    // What copy_in loaded comes back as it went in.
    await pipeline(client.query(copyTo(`COPY (SELECT * FROM ${copyTable} ORDER BY id) TO STDOUT`)),
      new Writable({ write(chunk, _enc, cb) { chunks.push(chunk); cb() } }))
    assert.equal(Buffer.concat(chunks).toString(), copyText)
  })],

  ['catalog', () => withClient(async (client) => {
    const tables = await client.query('SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
      ['public', itemsTable])
    assert.deepEqual(tables.rows, [{ table_name: itemsTable }])
    const cols = await client.query('SELECT column_name, data_type, udt_name FROM information_schema.columns ' +
      'WHERE table_name = $1 ORDER BY ordinal_position', [itemsTable])
    assert.deepEqual(cols.rows.map((c) => [c.column_name, c.data_type, c.udt_name]), [
      ['id', 'integer', 'int4'], ['name', 'text', 'text'], ['score', 'double precision', 'float8'],
      ['payload', 'bytea', 'bytea'], ['embedding', 'USER-DEFINED', 'vector'], ['weights', 'ARRAY', '_float4'],
      ['pixels', 'ARRAY', '_int2'],
    ])
  })],

  ['sqlstate', () => withClient(async (client) => {
    await assert.rejects(client.query('SELECT * FROM node_missing WHERE id = $1', [1]), (e) => e.code === '42P01')
    await assert.rejects(client.query('SELECT * FROM node_missing'), (e) => e.code === '42P01')
    await assert.rejects(client.query(`INSERT INTO ${itemsTable} (id) VALUES ($1), ($1)`, [100]), (e) => e.code === '23505')
    await client.query('BEGIN')
    await assert.rejects(client.query('SELECT 1 / $1::int', [0]), (e) => e.code === '22012')
    await assert.rejects(client.query('SELECT 1'), (e) => e.code === '25P02')
    await client.query('ROLLBACK')
    const res = await client.query('SELECT $1::int AS n', [3])
    assert.deepEqual(res.rows, [{ n: 3 }])
  })],

  ['cancel', () => withClient(async (client) => {
    for (const [text, values] of [['SELECT pg_sleep(30)', undefined], ['SELECT pg_sleep($1)', [30]]]) {
      const query = new pg.Query(text, values)
      const result = new Promise((resolve, reject) => {
        query.on('end', resolve)
        query.on('error', reject)
      })
      result.catch(() => {}) // handled below; this keeps an early failure from being "unhandled"
      client.query(query)
      const start = Date.now()
      // pg's cancel opens a second connection that sends CancelRequest. A
      // cancel that reaches the server before the query does is lost, so
      // it is repeated every second until the query ends.
      const cancel = () => new pg.Client().cancel(client, query)
      let timer = setTimeout(function again() {
        cancel()
        timer = setTimeout(again, 1000)
      }, 500)
      try {
        await assert.rejects(result, (e) => e.code === '57014')
      } finally {
        clearTimeout(timer)
      }
      assert.ok(Date.now() - start < 10000, `${text} canceled only after ${Date.now() - start}ms`)
      const res = await client.query('SELECT $1::int AS n', [4])
      assert.deepEqual(res.rows, [{ n: 4 }])
    }
  })],
]

async function main() {
  let failed = false
  for (const [name, fn] of steps) {
    try {
      await fn()
      console.log(`ok ${name}`)
    } catch (e) {
      failed = true
      console.log(`FAIL ${name}: ${String(e && e.stack && process.env.CLIENT_TRACEBACK ? e.stack : e).split('\n').join(' | ')}`)
    }
  }
  process.exit(failed ? 1 : 0)
}

main()
