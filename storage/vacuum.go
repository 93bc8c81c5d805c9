package storage

import (
	"context"

	"github.com/deeplaked/deeplaked/pgerror"
)

// VacuumStats reports what Vacuum removed.
type VacuumStats struct {
	// Versions is the number of expired table versions forgotten.
	Versions int
	// Objects is the number of chunk and manifest objects deleted.
	Objects int
	// Bytes is their total size.
	Bytes int64
}

// Vacuum expires the versions of table name (every table if name is "")
// that fall outside the retention window, then deletes the objects that no
// retained version references.
func (db *DB) Vacuum(ctx context.Context, name string) (VacuumStats, error) {
	return VacuumStats{}, pgerror.New(pgerror.FeatureNotSupported, "VACUUM is not supported yet")
}
