package clients_test

// Reasons shared by several entries of knownMissing.
const (
	noExtended = "the extended query protocol (Parse/Bind/Describe/Execute) is not implemented yet: 0A000"
	noSleep    = "pg_sleep does not exist yet (42883), so there is no running query to cancel"
	noCatalog  = "pg_catalog and information_schema do not exist yet"
	// SQLAlchemy's psycopg2 dialect, on its first connection, looks up the
	// hstore type (pg_type joined with pg_namespace), then runs
	// select pg_catalog.version() and select current_schema().
	noSQLAlchemy = "SQLAlchemy's first connect queries pg_type with a join, version() and current_schema(), none of which exists yet"
)

// knownMissing lists the client steps ("client/step") that fail against
// deeplaked for a reason deeplaked does not cover yet, each with that
// reason. A listed step still runs, and the test fails if it passes, so
// the list only shrinks as the gaps close; against CLIENTS_DSN it is
// ignored.
var knownMissing = map[string]string{
	"psql/catalog": noCatalog + " (\\dt and \\d query pg_class joined with pg_namespace)",
	"psql/cancel":  noSleep,

	"pgx/connect":  noExtended,
	"pgx/insert":   noExtended,
	"pgx/select":   noExtended,
	"pgx/copy_in":  noExtended + " (CopyFrom describes the table's columns first)",
	"pgx/catalog":  noExtended + "; " + noCatalog,
	"pgx/sqlstate": noExtended,
	"pgx/cancel":   noExtended + "; " + noSleep,

	"psycopg3/connect":  noExtended,
	"psycopg3/insert":   noExtended,
	"psycopg3/select":   noExtended,
	"psycopg3/copy_in":  noExtended + " (the rows are checked with a parameterized SELECT)",
	"psycopg3/catalog":  noExtended + "; " + noCatalog,
	"psycopg3/sqlstate": noExtended,
	"psycopg3/cancel":   noExtended + "; " + noSleep,

	"psycopg2/insert":  "psycopg2 sends Python lists as ARRAY[...] constructors, which are not supported yet (0A000)",
	"psycopg2/select":  "reads back the rows of the insert step, which fails (ARRAY[...])",
	"psycopg2/catalog": noCatalog,
	"psycopg2/cancel":  noSleep,

	"sqlalchemy/connect":  noSQLAlchemy,
	"sqlalchemy/create":   noSQLAlchemy,
	"sqlalchemy/insert":   noSQLAlchemy,
	"sqlalchemy/select":   noSQLAlchemy,
	"sqlalchemy/copy_in":  noSQLAlchemy,
	"sqlalchemy/copy_out": noSQLAlchemy,
	"sqlalchemy/catalog":  noSQLAlchemy,
	"sqlalchemy/sqlstate": noSQLAlchemy,
	"sqlalchemy/cancel":   noSQLAlchemy,

	"node-postgres/connect":  noExtended,
	"node-postgres/insert":   noExtended,
	"node-postgres/select":   noExtended,
	"node-postgres/copy_in":  noExtended + " (the rows are checked with a parameterized SELECT)",
	"node-postgres/catalog":  noExtended + "; " + noCatalog,
	"node-postgres/sqlstate": noExtended,
	"node-postgres/cancel":   noExtended + "; " + noSleep,

	// The JDBC driver sends every statement through the extended protocol.
	"jdbc/connect":  noExtended,
	"jdbc/create":   noExtended,
	"jdbc/insert":   noExtended,
	"jdbc/select":   noExtended,
	"jdbc/copy_in":  noExtended,
	"jdbc/copy_out": noExtended,
	"jdbc/catalog":  noExtended + "; " + noCatalog,
	"jdbc/sqlstate": noExtended,
	"jdbc/cancel":   noExtended + "; " + noSleep,
}
