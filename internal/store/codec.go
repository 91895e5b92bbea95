package store

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// timeFormat is RFC 3339 in UTC with a fixed nine-digit fraction. Unlike
// time.RFC3339Nano it never trims trailing zeros, so text order equals time
// order and ORDER BY started is correct. time.RFC3339Nano parses it.
const timeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// encodeTime maps the zero time to NULL ("not yet", e.g. a running
// campaign's end) and anything else to UTC text.
func encodeTime(t time.Time) sql.NullString {
	if t.IsZero() {
		return sql.NullString{}
	}
	return sql.NullString{String: t.UTC().Format(timeFormat), Valid: true}
}

func decodeTime(s sql.NullString) (time.Time, error) {
	if !s.Valid || s.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("parsing time %q: %w", s.String, err)
	}
	return t.UTC(), nil
}

// encodeMap stores nil as "null" and empty as "{}", so both read back as
// they were written.
func encodeMap(m map[string]string) (string, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

func decodeMap(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("decoding %q: %w", s, err)
	}
	return m, nil
}

// scanner is the Scan method shared by *sql.Row and *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}
