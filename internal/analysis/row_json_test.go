package analysis

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Every field of Row but its ID reaches JSON: wireRow must have the same
// JSON names.
func TestWireRowHasEveryField(t *testing.T) {
	names := func(v any) map[string]bool {
		out := map[string]bool{}
		ty := reflect.TypeOf(v)
		for i := 0; i < ty.NumField(); i++ {
			if n := strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]; n != "-" {
				out[n] = true
			}
		}
		return out
	}
	row, wire := names(Row{}), names(wireRow{})
	for n := range row {
		if !wire[n] {
			t.Errorf("Row's %q is missing from the JSON form", n)
		}
	}
	if len(row) != len(wire) {
		t.Errorf("Row has %d JSON fields, the JSON form %d", len(row), len(wire))
	}
}

// The identity travels as the metric's printed name only.
func TestRowJSONCarriesMetricNotID(t *testing.T) {
	b, err := json.Marshal(Row{Metric: pair2CPU.String(), ID: pair2CPU})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"metric":"pair2.server.telemetry.cpu_seconds"`) || strings.Contains(s, `"ID"`) || strings.Contains(s, `"scope"`) {
		t.Errorf("JSON %s", s)
	}
}
