//go:build amd64 && !purego

package vector

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels. Tests clear it to run the portable
// ones on the same machine.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// useF16C additionally selects the assembly float16 conversions and halfvec
// kernels (VCVTPH2PS/VCVTPS2PH); it only counts where useAVX2 is set.
var useF16C = cpu.X86.HasAVX2 && hasF16C()

// hasF16C reads CPUID leaf 1, ECX bit 29 (x/sys/cpu does not report it).
// The OS support for YMM state it needs is what HasAVX2 already checks.
func hasF16C() bool {
	_, _, ecx, _ := cpuid(1, 0)
	return ecx&(1<<29) != 0
}
