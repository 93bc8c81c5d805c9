// The PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java) with Java
// 17. Each step prints "ok <step>" or "FAIL <step>: <why>"; the exit
// status is 1 when a step failed. Connection settings come from the libpq
// environment variables (PGHOST, PGPORT, PGUSER, PGDATABASE);
// CLIENT_TARGET=postgres declares tensors as PostgreSQL arrays.
//
// prepareThreshold=-1 makes the driver prepare every statement and ask
// for binary results from the first execution (it does so for the types
// it can decode: integers, floats, bytea, real[] and smallint[]; vector
// comes as text).

import java.io.StringReader;
import java.io.StringWriter;
import java.sql.Array;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.postgresql.PGConnection;
import org.postgresql.PGResultSetMetaData;
import org.postgresql.copy.CopyManager;

public class ClientTest {
    static final String ITEMS = "jdbc_items";
    static final String COPY = "jdbc_copy";
    static final String SEQ = "jdbc_seq";
    static final int SEQ_ROWS = 1200;
    static final String COLUMNS = "id, name, score, payload, embedding, weights, pixels";
    static final boolean POSTGRES = "postgres".equals(System.getenv("CLIENT_TARGET"));

    static final String COPY_TEXT =
        "10\tbeta\t-0.5\t\\\\x0102\t[1,2,3]\t{0,0.5,1}\t{{0,1},{2,3}}\n"
        + "11\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n"
        + "12\tgamma\\tdelta\t1e+20\t\\\\x\t[-1,0,1]\t{3,2,1}\t{{255,0},{0,255}}\n";

    interface Step {
        void run() throws Exception;
    }

    static String env(String name, String def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : v;
    }

    static Connection connect() throws SQLException {
        String url = "jdbc:postgresql://" + env("PGHOST", "localhost") + ":" + env("PGPORT", "5432") + "/"
            + env("PGDATABASE", env("PGUSER", "postgres"));
        Properties props = new Properties();
        props.setProperty("user", env("PGUSER", "postgres"));
        props.setProperty("prepareThreshold", "-1");
        props.setProperty("sslmode", "disable");
        props.setProperty("connectTimeout", "10");
        return DriverManager.getConnection(url, props);
    }

    static String tableDDL(String name) {
        String weights = POSTGRES ? "real[]" : "float32[3]";
        String pixels = POSTGRES ? "smallint[]" : "uint8[2][2]";
        return "CREATE TABLE " + name + " (id int PRIMARY KEY, name text, score float8, payload bytea, "
            + "embedding vector(3), weights " + weights + ", pixels " + pixels + ")";
    }

    static void expect(String what, Object got, Object want) {
        if (!Objects.deepEquals(got, want)) {
            throw new AssertionError(what + ": got " + show(got) + ", want " + show(want));
        }
    }

    static String show(Object o) {
        if (o instanceof Object[]) {
            return Arrays.deepToString((Object[]) o);
        }
        if (o instanceof byte[]) {
            return Arrays.toString((byte[]) o);
        }
        return String.valueOf(o);
    }

    /**
     * A row as comparable values: bytea as hex, arrays as their Java
     * element class and contents ("Float[1.5, -2.0]").
     */
    static List<Object> row(ResultSet rs) throws SQLException {
        List<Object> r = new ArrayList<>();
        r.add(rs.getInt(1));
        r.add(rs.getString(2));
        double score = rs.getDouble(3);
        r.add(rs.wasNull() ? null : score);
        byte[] payload = rs.getBytes(4);
        r.add(payload == null ? null : HexFormat.of().formatHex(payload));
        r.add(rs.getString(5));
        r.add(array(rs.getArray(6)));
        r.add(array(rs.getArray(7)));
        return r;
    }

    static String array(Array a) throws SQLException {
        if (a == null) {
            return null;
        }
        Object[] elems = (Object[]) a.getArray();
        Class<?> c = elems.getClass().getComponentType();
        while (c.isArray()) {
            c = c.getComponentType();
        }
        return c.getSimpleName() + Arrays.deepToString(elems);
    }

    /** The result formats of the last select: 0 text, 1 binary. */
    static List<Integer> lastFormats;

    static List<List<Object>> select(Connection conn, String table, String where, int param) throws SQLException {
        List<List<Object>> rows = new ArrayList<>();
        try (PreparedStatement ps = conn.prepareStatement("SELECT " + COLUMNS + " FROM " + table + " " + where + " ORDER BY id")) {
            ps.setInt(1, param);
            try (ResultSet rs = ps.executeQuery()) {
                PGResultSetMetaData md = rs.getMetaData().unwrap(PGResultSetMetaData.class);
                lastFormats = new ArrayList<>();
                for (int i = 1; i <= rs.getMetaData().getColumnCount(); i++) {
                    lastFormats.add(md.getFormat(i));
                }
                while (rs.next()) {
                    rows.add(row(rs));
                }
            }
        }
        return rows;
    }

    static List<Object> values(Object... v) {
        return Arrays.asList(v);
    }

    static final List<Object> NULL_ROW_TAIL = Arrays.asList(null, null, null, null, null, null);

    static List<Object> nullRow(int id) {
        List<Object> r = new ArrayList<>();
        r.add(id);
        r.addAll(NULL_ROW_TAIL);
        return r;
    }

    static void expectSQLState(String what, String want, Step s) throws Exception {
        try {
            s.run();
        } catch (SQLException e) {
            expect(what + " SQLState (" + e.getMessage() + ")", e.getSQLState(), want);
            return;
        }
        throw new AssertionError(what + ": no error, want SQLState " + want);
    }

    /**
     * Reads a result set to its end and checks that it holds the rows
     * first..SEQ_ROWS of the seq table, each once and in order.
     */
    static void expectSeq(String what, ResultSet rs, int first) throws SQLException {
        int n = first;
        while (rs.next()) {
            expect(what + ": row " + (n - first), List.of(rs.getInt(1), rs.getString(2)), List.of(n, "row " + n));
            n++;
        }
        expect(what + ": rows", n - first, SEQ_ROWS - first + 1);
    }

    public static void main(String[] args) {
        Object[][] steps = {
            {"connect", (Step) () -> {
                try (Connection conn = connect()) {
                    expect("server major version", conn.getMetaData().getDatabaseMajorVersion(), 15);
                    try (PreparedStatement ps = conn.prepareStatement("SELECT ?::int + 1")) {
                        ps.setInt(1, 41);
                        try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            expect("SELECT ? + 1", rs.getInt(1), 42);
                        }
                    }
                }
            }},
            {"create", (Step) () -> {
                try (Connection conn = connect(); Statement st = conn.createStatement()) {
                    for (String t : new String[] {ITEMS, COPY}) {
                        st.execute("DROP TABLE IF EXISTS " + t);
                        st.execute(tableDDL(t));
                    }
                }
            }},
            {"insert", (Step) () -> {
                try (Connection conn = connect();
                     PreparedStatement ps = conn.prepareStatement("INSERT INTO " + ITEMS + " VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                    ps.setInt(1, 1);
                    ps.setString(2, "alpha 'quoted' é");
                    ps.setDouble(3, 1.5);
                    ps.setBytes(4, new byte[] {0, (byte) 0xff, 0x10});
                    // Types.OTHER sends the vector's text with no type, for
                    // the server to infer; setString would say varchar.
                    ps.setObject(5, "[0.5,1,2]", Types.OTHER);
                    ps.setArray(6, conn.createArrayOf("float4", new Float[] {1.5f, -2f, 0.25f}));
                    ps.setArray(7, conn.createArrayOf("int2", new Short[][] {{1, 2}, {3, 255}}));
                    ps.addBatch();
                    ps.setInt(1, 2);
                    ps.setNull(2, Types.VARCHAR);
                    ps.setNull(3, Types.DOUBLE);
                    ps.setNull(4, Types.BINARY);
                    ps.setNull(5, Types.OTHER);
                    ps.setNull(6, Types.ARRAY, "_float4");
                    ps.setNull(7, Types.ARRAY, "_int2");
                    ps.addBatch();
                    int[] counts = ps.executeBatch();
                    expect("batch update counts", counts, new int[] {1, 1});
                }
            }},
            {"select", (Step) () -> {
                try (Connection conn = connect()) {
                    List<List<Object>> want = List.of(
                        values(1, "alpha 'quoted' é", 1.5, "00ff10", "[0.5,1,2]", "Float[1.5, -2.0, 0.25]", "Short[[1, 2], [3, 255]]"),
                        nullRow(2));
                    expect("SELECT", select(conn, ITEMS, "WHERE id <= ?", 2), want);
                    // The driver asks for binary where it can decode the
                    // type: not text and not vector.
                    expect("result formats", lastFormats, List.of(1, 0, 1, 1, 0, 1, 1));
                }
            }},
            {"cursor", (Step) () -> {
                try (Connection conn = connect()) {
                    try (Statement st = conn.createStatement()) {
                        st.execute("DROP TABLE IF EXISTS " + SEQ);
                        st.execute("CREATE TABLE " + SEQ + " (n int PRIMARY KEY, label text)");
                    }
                    try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + SEQ + " VALUES (?, ?)")) {
                        for (int n = 1; n <= SEQ_ROWS; n++) {
                            ps.setInt(1, n);
                            ps.setString(2, "row " + n);
                            ps.addBatch();
                        }
                        expect("batch rows", ps.executeBatch().length, SEQ_ROWS);
                    }
                    // Outside autocommit, a fetch size makes the driver bind
                    // a named portal and send Execute with a row limit of 50;
                    // the server answers PortalSuspended until the last rows.
                    conn.setAutoCommit(false);
                    try (Statement st = conn.createStatement()) {
                        st.setFetchSize(50);
                        try (ResultSet rs = st.executeQuery("SELECT n, label FROM " + SEQ + " ORDER BY n")) {
                            expectSeq("Statement, fetch size 50", rs, 1);
                        }
                    }
                    try (PreparedStatement ps = conn.prepareStatement("SELECT n, label FROM " + SEQ + " WHERE n > ? ORDER BY n")) {
                        ps.setFetchSize(50);
                        ps.setInt(1, 200);
                        try (ResultSet rs = ps.executeQuery()) {
                            expectSeq("PreparedStatement, fetch size 50", rs, 201);
                        }
                        // Twice more on the same statement, the second
                        // closed after a few rows.
                        ps.setInt(1, 0);
                        try (ResultSet rs = ps.executeQuery()) {
                            expectSeq("PreparedStatement again", rs, 1);
                        }
                        try (ResultSet rs = ps.executeQuery()) {
                            for (int n = 1; n <= 75; n++) {
                                rs.next();
                                expect("closed early: row " + n, rs.getInt(1), n);
                            }
                        }
                    }
                    conn.commit();
                    conn.setAutoCommit(true);
                    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 5")) {
                        rs.next();
                        expect("after the cursors", rs.getInt(1), 5);
                    }
                }
            }},
            {"copy_in", (Step) () -> {
                try (Connection conn = connect()) {
                    CopyManager copy = conn.unwrap(PGConnection.class).getCopyAPI();
                    long n = copy.copyIn("COPY " + COPY + " (" + COLUMNS + ") FROM STDIN", new StringReader(COPY_TEXT));
                    expect("COPY FROM rows", n, 3L);
                    List<List<Object>> want = List.of(
                        values(10, "beta", -0.5, "0102", "[1,2,3]", "Float[0.0, 0.5, 1.0]", "Short[[0, 1], [2, 3]]"),
                        nullRow(11),
                        values(12, "gamma\tdelta", 1e20, "", "[-1,0,1]", "Float[3.0, 2.0, 1.0]", "Short[[255, 0], [0, 255]]"));
                    expect("rows after COPY FROM", select(conn, COPY, "WHERE id >= ?", 0), want);
                }
            }},
            {"copy_out", (Step) () -> {
                try (Connection conn = connect()) {
                    CopyManager copy = conn.unwrap(PGConnection.class).getCopyAPI();
                    StringWriter out = new StringWriter();
                    // What copy_in loaded comes back as it went in.
                    long n = copy.copyOut("COPY (SELECT * FROM " + COPY + " ORDER BY id) TO STDOUT", out);
                    expect("COPY TO rows", n, 3L);
                    expect("COPY TO STDOUT", out.toString(), COPY_TEXT);
                }
            }},
            {"catalog", (Step) () -> {
                try (Connection conn = connect()) {
                    DatabaseMetaData md = conn.getMetaData();
                    List<String> tables = new ArrayList<>();
                    try (ResultSet rs = md.getTables(null, "public", ITEMS, new String[] {"TABLE"})) {
                        while (rs.next()) {
                            tables.add(rs.getString("TABLE_NAME"));
                        }
                    }
                    expect("getTables", tables, List.of(ITEMS));
                    List<String> cols = new ArrayList<>();
                    try (ResultSet rs = md.getColumns(null, "public", ITEMS, null)) {
                        while (rs.next()) {
                            cols.add(rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME"));
                        }
                    }
                    expect("getColumns", cols, List.of("id int4", "name text", "score float8", "payload bytea",
                        "embedding vector", "weights _float4", "pixels _int2"));
                    List<String> pk = new ArrayList<>();
                    try (ResultSet rs = md.getPrimaryKeys(null, "public", ITEMS)) {
                        while (rs.next()) {
                            pk.add(rs.getString("COLUMN_NAME"));
                        }
                    }
                    expect("getPrimaryKeys", pk, List.of("id"));
                }
            }},
            {"sqlstate", (Step) () -> {
                try (Connection conn = connect()) {
                    expectSQLState("missing table", "42P01", () -> {
                        try (Statement st = conn.createStatement()) {
                            st.executeQuery("SELECT * FROM jdbc_missing");
                        }
                    });
                    expectSQLState("duplicate key", "23505", () -> {
                        try (PreparedStatement ps = conn.prepareStatement("INSERT INTO " + ITEMS + " (id) VALUES (?), (?)")) {
                            ps.setInt(1, 100);
                            ps.setInt(2, 100);
                            ps.executeUpdate();
                        }
                    });
                    conn.setAutoCommit(false);
                    expectSQLState("division by zero", "22012", () -> {
                        try (PreparedStatement ps = conn.prepareStatement("SELECT 1 / ?")) {
                            ps.setInt(1, 0);
                            ps.executeQuery();
                        }
                    });
                    expectSQLState("aborted transaction", "25P02", () -> {
                        try (Statement st = conn.createStatement()) {
                            st.executeQuery("SELECT 1");
                        }
                    });
                    conn.rollback();
                    conn.setAutoCommit(true);
                    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 3")) {
                        rs.next();
                        expect("after the errors", rs.getInt(1), 3);
                    }
                }
            }},
            {"cancel", (Step) () -> {
                try (Connection conn = connect()) {
                    for (String sql : new String[] {"SELECT pg_sleep(30)", "SELECT pg_sleep(?)"}) {
                        try (PreparedStatement ps = conn.prepareStatement(sql)) {
                            if (sql.contains("?")) {
                                ps.setDouble(1, 30);
                            }
                            // A cancel that reaches the server before the
                            // query does is lost, so it is repeated every
                            // second until the query ends.
                            AtomicBoolean running = new AtomicBoolean(true);
                            Thread canceller = new Thread(() -> {
                                try {
                                    Thread.sleep(500);
                                    while (running.get()) {
                                        ps.cancel();
                                        Thread.sleep(1000);
                                    }
                                } catch (InterruptedException e) {
                                    // The query ended.
                                } catch (SQLException e) {
                                    throw new RuntimeException(e);
                                }
                            });
                            canceller.start();
                            long start = System.nanoTime();
                            try {
                                expectSQLState(sql + " canceled", "57014", () -> ps.executeQuery());
                            } finally {
                                running.set(false);
                                canceller.interrupt();
                                canceller.join();
                            }
                            long ms = (System.nanoTime() - start) / 1_000_000;
                            if (ms > 10_000) {
                                throw new AssertionError(sql + " canceled only after " + ms + "ms");
                            }
                        }
                        try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery("SELECT 4")) {
                            rs.next();
                            expect("after cancel", rs.getInt(1), 4);
                        }
                    }
                }
            }},
        };
        boolean failed = false;
        for (Object[] s : steps) {
            String name = (String) s[0];
            try {
                ((Step) s[1]).run();
                System.out.println("ok " + name);
            } catch (Throwable e) {
                failed = true;
                String msg = (e.getClass().getSimpleName() + ": " + e.getMessage()).replace("\n", " | ");
                System.out.println("FAIL " + name + ": " + msg);
                if (System.getenv("CLIENT_TRACEBACK") != null) {
                    e.printStackTrace(System.out);
                }
            }
        }
        System.exit(failed ? 1 : 0);
    }
}
