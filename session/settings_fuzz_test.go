package session

import (
	"testing"

	"github.com/deeplaked/deeplaked/sql"
)

// FuzzSettingValue checks every parameter's check against arbitrary text
// (values come from clients: SET and the startup packet): none panics, and
// a value as SHOW displays it is accepted again unchanged, so RESET and
// a client that echoes a value back get what they set.
//
//	go test -run XXX -fuzz FuzzSettingValue ./session
func FuzzSettingValue(f *testing.F) {
	for _, v := range []string{"5s", "100", "1.5min", "ISO, DMY", "German", "Europe/Paris", "-5", "EST5EDT",
		"GMT-05:00", "utf-8", "on", "of", "3", "-15", "1e3ms", "1e", "<+03>-03", "repeatable read", "hex"} {
		for _, p := range params {
			f.Add(p.name, v)
		}
	}
	f.Fuzz(func(t *testing.T, name, v string) {
		p := paramByName[name]
		if p == nil || p.fixed {
			return
		}
		cur := p.def
		if cur == "" {
			cur = "x"
		}
		shown, err := p.value([]sql.SetArg{{Text: v}}, cur)
		if err != nil {
			return
		}
		again, err := p.value([]sql.SetArg{{Text: shown}}, shown)
		if err != nil || (again != shown && !p.list) {
			t.Fatalf("%s = %q shows %q, which gives %q, %v", p.name, v, shown, again, err)
		}
	})
}

// FuzzSplitOptions checks that the startup packet's options never panic
// their parser.
//
//	go test -run XXX -fuzz FuzzSplitOptions ./session
func FuzzSplitOptions(f *testing.F) {
	for _, s := range []string{"-c a=1", "--b-c=2", `-c d=x\ y`, "-c", "-x", `\`, "-ca"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = splitOptions(s)
	})
}
