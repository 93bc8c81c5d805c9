package stream

// SharedFrames returns how many of the stream's batches so far came
// through the shared-memory area.
func SharedFrames(s *Batches) int { return s.sharedN }
