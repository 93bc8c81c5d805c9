package session

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"testing"
)

// frameWriter keeps each Write (one frame) apart.
type frameWriter struct {
	recorder
	frames [][]byte
}

func (r *frameWriter) CopyOut(binary bool, ncols int) (io.Writer, error) {
	r.recorder.CopyOut(binary, ncols)
	return r, nil
}

func (r *frameWriter) Write(p []byte) (int, error) {
	r.frames = append(r.frames, bytes.Clone(p))
	return len(p), nil
}

func TestCopyToTensor(t *testing.T) {
	s := newSession(t)
	mustRun(t, s, "CREATE TABLE samples (image uint8[3][2][2], label int)", "")
	mustRun(t, s, "INSERT INTO samples (label) SELECT g FROM generate_series(1, 5) g", "INSERT 0 5")
	for q, want := range map[string]struct {
		rows   []int
		status string
	}{
		"COPY samples TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 2)":                                {[]int{2, 2, 1}, "copy out binary=true columns=2; COPY 5"},
		"COPY (SELECT label FROM samples) TO STDOUT WITH (FORMAT tensor, BATCH_SIZE 2, DROP_LAST)": {[]int{2, 2}, "copy out binary=true columns=1; COPY 4"},
		"COPY samples TO STDOUT WITH (FORMAT tensor, SHARD '1/2', BATCH_SIZE 4)":                   {[]int{2}, "copy out binary=true columns=2; COPY 2"},
	} {
		r := &frameWriter{}
		if err := s.ExecSimple(context.Background(), q, r); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := join(r.out); got != want.status || len(r.frames) != len(want.rows) {
			t.Fatalf("%s: %s, %d frames", q, got, len(r.frames))
		}
		for i, f := range r.frames {
			if string(f[:4]) != "DLTF" || binary.LittleEndian.Uint64(f[16:]) != uint64(i) || int(binary.LittleEndian.Uint32(f[24:])) != want.rows[i] {
				t.Errorf("%s: frame %d header % x", q, i, f[:32])
			}
		}
	}
}

func join(out []string) string {
	s := ""
	for i, o := range out {
		if i > 0 {
			s += "; "
		}
		s += o
	}
	return s
}
