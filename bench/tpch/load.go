package tpch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/deeplaked/deeplaked/bench/tpch/gen"
)

// Load creates the schema on conn and copies the tables generated into
// dir (gen.Generate) in, as COPY ... FROM STDIN WITH (FORMAT csv,
// DELIMITER '|').
func Load(ctx context.Context, conn *pgconn.PgConn, dir string) error {
	for _, stmt := range Statements(Schema) {
		if _, err := conn.Exec(ctx, stmt).ReadAll(); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	for _, table := range gen.Tables {
		f, err := os.Open(filepath.Join(dir, table+".tbl"))
		if err != nil {
			return err
		}
		_, err = conn.CopyFrom(ctx, f, "COPY "+table+" FROM STDIN WITH (FORMAT csv, DELIMITER '|')")
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", table, err)
		}
	}
	return nil
}
