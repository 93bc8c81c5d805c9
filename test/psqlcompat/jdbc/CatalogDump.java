import java.sql.*;

// CatalogDump prints what DatabaseMetaData answers about the public schema,
// one line per row, so that two servers' answers can be compared.
public class CatalogDump {
    static void dump(String what, ResultSet rs, String... cols) throws SQLException {
        try (rs) {
            while (rs.next()) {
                StringBuilder b = new StringBuilder(what);
                for (String c : cols) {
                    b.append(" | ").append(c).append('=').append(rs.getString(c));
                }
                System.out.println(b);
            }
        }
    }

    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(args[0])) {
            DatabaseMetaData md = c.getMetaData();
            dump("schemas", md.getSchemas(null, "public"), "TABLE_SCHEM");
            dump("tables", md.getTables(null, "public", "%", new String[] {"TABLE"}),
                "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE", "REMARKS");
            dump("columns", md.getColumns(null, "public", "%", "%"),
                "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS",
                "NULLABLE", "COLUMN_DEF", "ORDINAL_POSITION", "IS_NULLABLE", "IS_AUTOINCREMENT");
            dump("catalogs", md.getCatalogs(), "TABLE_CAT");
            for (String t : args[1].split(",")) {
                dump("imported keys", md.getImportedKeys(null, "public", t), "FKTABLE_NAME", "FKCOLUMN_NAME", "PKTABLE_NAME");
                dump("exported keys", md.getExportedKeys(null, "public", t), "FKTABLE_NAME", "FKCOLUMN_NAME", "PKTABLE_NAME");
                dump("best row identifier", md.getBestRowIdentifier(null, "public", t, DatabaseMetaData.bestRowSession, true),
                    "SCOPE", "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME");
                dump("table privileges", md.getTablePrivileges(null, "public", t), "TABLE_NAME", "GRANTEE", "PRIVILEGE");
                dump("primary keys", md.getPrimaryKeys(null, "public", t), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ", "PK_NAME");
                dump("indexes", md.getIndexInfo(null, "public", t, false, false),
                    "TABLE_NAME", "NON_UNIQUE", "INDEX_NAME", "ORDINAL_POSITION", "COLUMN_NAME");
            }
        }
    }
}
