package clients_test

// knownMissing lists the client steps ("client/step") that fail against
// deeplaked for a reason deeplaked does not cover yet, each with that
// reason. A listed step still runs, and the test fails if it passes, so
// the list only shrinks as the gaps close; against CLIENTS_DSN it is
// ignored.
var knownMissing = map[string]string{
	// The inspector's primary key query.
	"sqlalchemy/catalog": "set-returning functions in the select list (unnest, generate_subscripts) are not supported yet",

	// getPrimaryKeys selects a field of a composite,
	// (information_schema._pg_expandarray(i.indkey)).n.
	"jdbc/catalog": "information_schema._pg_expandarray and field selection are not supported yet",
}
