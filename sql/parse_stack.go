package sql

/*
#include <pthread.h>
#include <stddef.h>

// deeplaked_thread_stack_size is the stack size of a thread created with
// default attributes, which is how the Go runtime creates the threads that
// run C calls.
static size_t deeplaked_thread_stack_size(void) {
	pthread_attr_t attr;
	size_t size = 0;
	if (pthread_attr_init(&attr) != 0)
		return 0;
	if (pthread_attr_getstacksize(&attr, &size) != 0)
		size = 0;
	pthread_attr_destroy(&attr);
	return size;
}
*/
import "C"

import (
	"sync"
	"syscall"
)

// stackSlop is what PostgreSQL keeps free beyond max_stack_depth
// (STACK_DEPTH_SLOP): the stack a call may use between two checks.
const stackSlop = 512 << 10

// cStack is the smallest C stack a parse can run on: the parser runs on
// whichever thread the goroutine is on, a thread the Go runtime created
// (default pthread stack size) or the main thread (RLIMIT_STACK).
var cStack = sync.OnceValue(func() int64 {
	size := int64(C.deeplaked_thread_stack_size())
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &rl); err == nil && rl.Cur != ^uint64(0) {
		if m := int64(rl.Cur); size == 0 || m < size {
			size = m
		}
	}
	return size
})
