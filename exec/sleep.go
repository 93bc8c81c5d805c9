package exec

import (
	"math"
	"time"

	"github.com/deeplaked/deeplaked/plan"
	"github.com/deeplaked/deeplaked/types"
)

// sleepEval is pg_sleep(seconds): for each row it waits the given number of
// seconds (NULL, zero or negative: not at all) and yields void. The wait ends
// early when the statement is canceled, which fails the statement with
// 57014, as in PostgreSQL.
type sleepEval struct {
	env *Env
	arg evaluator
	out *types.Vec
}

func (e *Env) compileSleep(x *plan.Call) (evaluator, error) {
	arg, err := e.compile(x.Args[0])
	if err != nil {
		return nil, err
	}
	return &sleepEval{env: e, arg: arg, out: types.NewVec(types.TypVoid, types.BatchSize)}, nil
}

// maxSleep bounds one pg_sleep, so that a huge argument does not overflow
// time.Duration; a statement that long is canceled long before.
const maxSleep = 100 * 365 * 24 * time.Hour

func (s *sleepEval) eval(b *types.Batch) (*types.Vec, error) {
	secs, err := s.arg.eval(b)
	if err != nil {
		return nil, err
	}
	s.out.Reset()
	for i := 0; i < b.Len(); i++ {
		if !secs.Nulls[i] {
			if err := s.sleep(secs.Floats[i]); err != nil {
				return nil, err
			}
		}
		s.out.AppendBytes(nil)
	}
	return s.out, nil
}

// sleep waits secs seconds or until the statement is canceled.
func (s *sleepEval) sleep(secs float64) error {
	if err := s.env.canceled(); err != nil {
		return err
	}
	if !(secs > 0) {
		return nil
	}
	d := maxSleep
	if secs < maxSleep.Seconds() {
		d = time.Duration(math.Round(secs * float64(time.Second)))
	}
	if s.env.Ctx == nil {
		time.Sleep(d)
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-s.env.Ctx.Done():
		return s.env.canceled()
	}
}
