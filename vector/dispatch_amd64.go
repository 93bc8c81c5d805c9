//go:build amd64 && !purego

package vector

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels. Tests clear it to run the portable
// ones on the same machine.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
