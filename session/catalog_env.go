package session

import (
	"strings"

	"github.com/deeplaked/deeplaked/exec"
)

// lookupSetting returns a run-time parameter's value for current_setting
// and pg_settings; ok is false for a parameter the session does not know.
func (s *Session) lookupSetting(name string) (string, bool) {
	key := strings.ToLower(name)
	for _, p := range params {
		if strings.ToLower(p.name) == key {
			return s.settings.cur[key], true
		}
	}
	return "", false
}

// settingRows lists the session's run-time parameters for pg_settings, in
// SHOW ALL's order.
func (s *Session) settingRows() []exec.SettingRow {
	out := make([]exec.SettingRow, 0, len(params))
	for _, p := range params {
		context := "user"
		if p.fixed {
			context = "internal"
		}
		out = append(out, exec.SettingRow{Name: p.name, Value: s.settings.cur[strings.ToLower(p.name)],
			Desc: p.desc, Context: context, Default: p.def})
	}
	return out
}
