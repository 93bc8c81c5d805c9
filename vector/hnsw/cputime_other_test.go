//go:build !unix

package hnsw

import "time"

func cpuTime() time.Duration { return 0 }
