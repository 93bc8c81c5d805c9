package session

import "strings"

// lookupSetting returns a run-time parameter's value for current_setting
// and pg_settings; ok is false for a parameter the session does not know.
func (s *Session) lookupSetting(name string) (string, bool) {
	v := s.Setting(name)
	if v == "" {
		switch strings.ToLower(name) {
		case "application_name", "search_path":
			return v, true
		}
		return "", false
	}
	return v, true
}
