package plan

// Gather runs Input, a pipeline of Filter and Project nodes over one
// sequential Scan (perhaps under a partial Aggregate), on several workers
// at once, each reading its share of
// the scan's row groups (morsels, taken as the workers free up), and
// passes on their batches in whatever order they come. The planner puts
// one only where the order of rows does not matter (below an aggregate
// whose result does not depend on it). Workers is the most it uses; exec
// runs fewer when the table has fewer row groups, and Input alone when
// the scan cannot be split (the transaction's own writes are read by one
// scan).
type Gather struct {
	Input   Node
	Scan    *Scan
	Workers int
}

// Columns returns Input's columns.
func (n *Gather) Columns() []Column { return n.Input.Columns() }
