package analysis

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// Every field of Row's parts with a JSON name reaches JSON, under a name
// no other field has (encoding/json would drop both), with its tag, and
// with its float64s nums.
func TestWireRowHasEveryField(t *testing.T) {
	var names []string
	row := reflect.TypeFor[Row]()
	for i := range row.NumField() {
		part := row.Field(i)
		if !part.Anonymous || part.Type.Kind() != reflect.Struct {
			t.Errorf("Row's %s is not a part embedded by value", part.Name)
			continue
		}
		for j := range part.Type.NumField() {
			if n, _, _ := strings.Cut(part.Type.Field(j).Tag.Get("json"), ","); n != "-" {
				names = append(names, n)
			}
		}
	}
	w := wireRow.typ
	if w.NumField() != len(names) {
		t.Fatalf("Row has %d JSON fields, the JSON form %d", len(names), w.NumField())
	}
	seen := map[string]bool{}
	for i, n := range names {
		if seen[n] {
			t.Errorf("two fields of Row are called %q in JSON", n)
		}
		seen[n] = true
		f := w.Field(i)
		if got, _, _ := strings.Cut(f.Tag.Get("json"), ","); got != n {
			t.Errorf("JSON field %d is %q, want %q", i, got, n)
		}
		if want := row.FieldByIndex(wireRow.index[i]).Type; strings.Contains(f.Type.String(), "float64") ||
			strings.Count(want.String(), "float64") != strings.Count(f.Type.String(), "analysis.num") {
			t.Errorf("%s: JSON form %s for %s", n, f.Type, want)
		}
	}
}

// The identity travels as the metric's printed name only.
func TestRowJSONCarriesMetricNotID(t *testing.T) {
	b, err := json.Marshal(Row{Identity: Identity{Metric: pair2CPU.String(), ID: pair2CPU}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if !strings.Contains(s, `"metric":"pair2.server.telemetry.cpu_seconds"`) || strings.Contains(s, `"ID"`) || strings.Contains(s, `"scope"`) {
		t.Errorf("JSON %s", s)
	}
}

// A number that is not finite is null, in a field, behind a pointer or in
// an interval, and comes back as NaN (a null pointer as nil); an omitempty
// field without a value stays absent.
func TestRowJSONNullRoundTrip(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	var r Row
	r.SD, r.CI95, r.VsBaselinePct, r.IRCI95 = nan, [2]float64{1, inf}, &inf, &[2]float64{nan, 2}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sd":null`, `"ci95":[1,null]`, `"vs_baseline_pct":null`, `"ir_ci95":[null,2]`, `"p_value":null,`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	if strings.Contains(string(b), `"slowdown"`) {
		t.Errorf("JSON %s has an omitted field", b)
	}
	var back Row
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(back.SD) || !math.IsNaN(back.CI95[1]) || back.VsBaselinePct != nil ||
		back.IRCI95 == nil || !math.IsNaN(back.IRCI95[0]) || back.IRCI95[1] != 2 || back.PValue != nil {
		t.Errorf("read back %+v", back)
	}
	err = json.Unmarshal([]byte(`{"n":"x"}`), &back)
	if err == nil || err.Error() != "decode report row: json: cannot unmarshal string into Go struct field Row.n of type int" {
		t.Errorf("error %v", err)
	}
}
