package types

import "testing"

func normalized(t *testing.T, s string) []byte {
	t.Helper()
	b, err := NormalizeJSONB([]byte(s), nil)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return b
}

// TestJSONAccessors checks ->, -> int and ->> against PostgreSQL 15, on
// normalized jsonb and on verbatim json.
func TestJSONAccessors(t *testing.T) {
	jb := normalized(t, `{"a":[1,"x",null,{"b":true}],"é":"\u00e9\n","k\"":2}`)
	for _, c := range []struct {
		doc    string
		key    string
		idx    int
		useIdx bool
		val    string // "" means not found
		text   string // ->> result; "NULL" for SQL NULL
	}{
		{doc: string(jb), key: "a", val: `[1, "x", null, {"b": true}]`, text: `[1, "x", null, {"b": true}]`},
		{doc: string(jb), key: "é", val: `"é\n"`, text: "é\n"},
		{doc: string(jb), key: `k"`, val: `2`, text: `2`},
		{doc: string(jb), key: "zz"},
		{doc: `{"a":1,"a":2}`, key: "a", val: "2", text: "2"},
		{doc: `  { "a" : [1,2] , "b":"\u0041"} `, key: "a", val: "[1,2]", text: "[1,2]"},
		{doc: `{"\u0062":"\u0041"}`, key: "b", val: `"\u0041"`, text: "A"},
		{doc: `[1,2,3]`, key: "a"},
		{doc: `[1,"x",null]`, idx: 2, useIdx: true, val: "null", text: "NULL"},
		{doc: `[1,"x",null]`, idx: -3, useIdx: true, val: "1", text: "1"},
		{doc: `[1,"x",null]`, idx: -2, useIdx: true, val: `"x"`, text: "x"},
		{doc: `[1,"x",null]`, idx: -4, useIdx: true},
		{doc: `[1,"x",null]`, idx: 3, useIdx: true},
		{doc: `  [ 1 , {"x" : 2} ] `, idx: 1, useIdx: true, val: `{"x" : 2}`, text: `{"x" : 2}`},
		{doc: `[]`, idx: 0, useIdx: true},
		{doc: `{"a":1}`, idx: 0, useIdx: true},
	} {
		var val []byte
		var ok bool
		if c.useIdx {
			val, ok = JSONIndex([]byte(c.doc), c.idx)
		} else {
			val, ok = JSONField([]byte(c.doc), c.key)
		}
		if ok != (c.val != "") || string(val) != c.val {
			t.Errorf("%s -> %q/%d: got %q %v, want %q", c.doc, c.key, c.idx, val, ok, c.val)
			continue
		}
		if !ok {
			continue
		}
		s, isNull := JSONText(val)
		if got := string(s); isNull && c.text != "NULL" || !isNull && got != c.text {
			t.Errorf("%s ->> %q/%d: got %q null=%v, want %q", c.doc, c.key, c.idx, got, isNull, c.text)
		}
	}
}

// TestJSONContains checks @> against PostgreSQL 15's answers.
func TestJSONContains(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`[1,2,3]`, `1`, true},
		{`1`, `[1]`, false},
		{`1`, `1`, true},
		{`"a"`, `"a"`, true},
		{`"a"`, `"b"`, false},
		{`{"a":[1,2,{"b":1}]}`, `{"a":[{}]}`, true},
		{`[1.0]`, `[1]`, true},
		{`[1.50]`, `[1.5]`, true},
		{`[[1,2]]`, `[[2]]`, true},
		{`[[1,2]]`, `[2]`, false},
		{`{"a":1}`, `{}`, true},
		{`[]`, `[]`, true},
		{`{}`, `[]`, false},
		{`[1,2,3]`, `[3,1,1]`, true},
		{`[1,2,3]`, `[4]`, false},
		{`{"a":1,"b":{"c":[1,2],"d":"x"}}`, `{"b":{"c":[2]}}`, true},
		{`{"a":1,"b":{"c":[1,2],"d":"x"}}`, `{"b":{"c":2}}`, false},
		{`{"a":1}`, `{"a":"1"}`, false},
		{`{"a":null}`, `{"a":null}`, true},
		{`{"a":true}`, `{"a":false}`, false},
		{`{"a":1}`, `{"b":1}`, false},
		{`[{"a":1,"b":2}]`, `[{"a":1}]`, true},
		{`[{"a":1,"b":2}]`, `{"a":1}`, false},
	} {
		got, err := JSONContains(normalized(t, c.a), normalized(t, c.b))
		if err != nil || got != c.want {
			t.Errorf("%s @> %s: got %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
	}
}

// TestNormalizeJSONBIdempotent checks that normalized text normalizes to itself.
func TestNormalizeJSONBIdempotent(t *testing.T) {
	for _, s := range []string{
		`{"b":[1,2,{"z":1,"y":[]}],"a":"\t\u001f\"","":null,"long key":1e-3}`,
		`[-0, 0.0, 1E+2, "\ud83d\ude00", true, false]`,
	} {
		once := normalized(t, s)
		if twice := normalized(t, string(once)); string(twice) != string(once) {
			t.Errorf("%s: %s then %s", s, once, twice)
		}
	}
}
