package pgerror

import (
	"errors"
	"io"
	"testing"
)

func TestWithWhere(t *testing.T) {
	base := New(InvalidTextRepresentation, "bad").WithDetail("d")
	e := WithWhere(base, "COPY t, line 1")
	if e.Code != base.Code || e.Message != "bad" || e.Detail != "d" || e.Where != "COPY t, line 1" {
		t.Errorf("WithWhere = %+v", e)
	}
	if base.Where != "" {
		t.Errorf("the original changed: %+v", base)
	}
	if !errors.Is(e, base) {
		t.Error("errors.Is does not see the original")
	}
	// A context already there comes first, as PostgreSQL lists them.
	if e2 := WithWhere(e, "outer"); e2.Where != "COPY t, line 1\nouter" || GetCode(e2) != InvalidTextRepresentation {
		t.Errorf("stacked: %q", e2.Where)
	}
	// A foreign error becomes XX000 and stays reachable.
	if e3 := WithWhere(io.ErrUnexpectedEOF, "w"); e3.Code != InternalError || !errors.Is(e3, io.ErrUnexpectedEOF) {
		t.Errorf("foreign: %+v", e3)
	}
}
