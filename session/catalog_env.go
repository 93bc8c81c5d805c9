package session

import (
	"strings"

	"github.com/deeplaked/deeplaked/exec"
)

// presetSettings are PostgreSQL's compile-time constants that clients read
// from pg_settings (pgJDBC asks for max_index_keys); the session has no
// parameter for them.
var presetSettings = []exec.SettingRow{
	{Name: "block_size", Value: "8192", Desc: "Shows the size of a disk block.", Context: "internal", Default: "8192"},
	{Name: "max_function_args", Value: "100", Desc: "Shows the maximum number of function arguments.", Context: "internal", Default: "100"},
	{Name: "max_identifier_length", Value: "63", Desc: "Shows the maximum identifier length.", Context: "internal", Default: "63"},
	{Name: "max_index_keys", Value: "32", Desc: "Shows the maximum number of index keys.", Context: "internal", Default: "32"},
}

// lookupSetting returns a run-time parameter's value for current_setting
// and pg_settings; ok is false for a parameter the session does not know.
func (s *Session) lookupSetting(name string) (string, bool) {
	key := strings.ToLower(name)
	for _, p := range params {
		if strings.ToLower(p.name) == key {
			return s.settings.cur[key], true
		}
	}
	for _, p := range presetSettings {
		if p.Name == key {
			return p.Value, true
		}
	}
	// A custom parameter ("myapp.tenant") once set stays defined.
	if v, ok := s.settings.cur[key]; ok && strings.Contains(key, ".") {
		return v, true
	}
	return "", false
}

// settingRows lists the session's run-time parameters for pg_settings, in
// SHOW ALL's order.
func (s *Session) settingRows() []exec.SettingRow {
	out := make([]exec.SettingRow, 0, len(params))
	for _, p := range params {
		context := "user"
		switch {
		case p.fixed:
			context = "internal"
		case p.superuser:
			context = "superuser"
		}
		out = append(out, exec.SettingRow{Name: p.name, Value: s.settings.cur[strings.ToLower(p.name)],
			Desc: p.desc, Context: context, Default: p.def})
	}
	for _, p := range presetSettings {
		if _, known := s.lookupParam(p.Name); !known {
			out = append(out, p)
		}
	}
	return out
}

// lookupParam reports whether the session itself has parameter name.
func (s *Session) lookupParam(name string) (string, bool) {
	for _, p := range params {
		if strings.EqualFold(p.name, name) {
			return s.settings.cur[strings.ToLower(p.name)], true
		}
	}
	return "", false
}
