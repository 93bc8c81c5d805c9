//go:build !unix

package ivf

import "time"

func cpuTime() time.Duration { return 0 }
