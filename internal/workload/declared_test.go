package workload

import (
	"reflect"
	"testing"
)

func TestPlaceholders(t *testing.T) {
	s := "run-{trial}-{cell.platform}-{{literal}-{cell.server.cpus}-{trial}"
	if got, want := Placeholders(s), []string{"trial", "cell.platform", "cell.server.cpus"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Placeholders = %q, want %q", got, want)
	}
	vars := PlaceholderVars(7, map[string]string{"platform": "docker", "server.cpus": "1"})
	if got, want := Expand(s, vars), "run-7-docker-{literal}-1-7"; got != want {
		t.Errorf("Expand = %q, want %q", got, want)
	}
	if got := Expand("{unknown} {{", vars); got != "{unknown} {" {
		t.Errorf("Expand keeps unknown placeholders: got %q", got)
	}
}

// Bind expands only the parameters that take placeholders, inside a list
// item by item, and leaves the JSON the agent reads well formed.
func TestBind(t *testing.T) {
	s := &Spec{Type: "x", Params: []Param{
		P("command", List, "", ""), P("workdir", String, "", ""), P("path", String, "", ""),
	}, User: User{TakesPlaceholders: []string{"command", "workdir"}}}
	params := `{"command":"[\"echo\",\"{trial}\",\"{cell.platform}\"]","path":"/{trial}","workdir":"/tmp/{cell.platform}"}`
	got, err := s.Bind(params, PlaceholderVars(3, map[string]string{"platform": "na\"tive"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"command":"[\"echo\",\"3\",\"na\\\"tive\"]","path":"/{trial}","workdir":"/tmp/na\"tive"}`
	if got != want {
		t.Errorf("Bind =\n%s\nwant\n%s", got, want)
	}
	if v := Values(map[string]string{"command": `["echo","3","na\"tive"]`}).List("command"); len(v) != 3 || v[2] != `na"tive` {
		t.Errorf("List = %q", v)
	}
	plain := &Spec{Type: "y"}
	if got, _ := plain.Bind(params, nil); got != params {
		t.Errorf("a workload without placeholders changed: %s", got)
	}
}

func TestUnknownPlaceholders(t *testing.T) {
	s := &Spec{Type: "x", Params: []Param{P("command", List, "", "")}, User: User{TakesPlaceholders: []string{"command"}}}
	v := Values{"command": `["a","{trial}","{cell.cpus}","{cell.network}","{server.host}","{{x}"]`}
	if got, want := s.UnknownPlaceholders(v, []string{"cpus"}), []string{"{cell.network}", "{server.host}"}; !reflect.DeepEqual(got, want) {
		t.Errorf("UnknownPlaceholders = %q, want %q", got, want)
	}
}

func TestStructuredParams(t *testing.T) {
	l := P("command", List, "", "")
	if got, err := l.Normalize(` ["a", "b c"] `); err != nil || got != `["a","b c"]` {
		t.Errorf("list: %q, %v", got, err)
	}
	if _, err := l.Normalize(`{"a":"b"}`); err == nil {
		t.Error("a mapping passed as a list")
	}
	m := P("env", Mapping, "", "")
	if got, err := m.Normalize(`{"B":"2","A":"1"}`); err != nil || got != `{"A":"1","B":"2"}` {
		t.Errorf("mapping: %q, %v", got, err)
	}
	if _, err := m.Normalize(`{"A":{"x":"y"}}`); err == nil {
		t.Error("a nested mapping passed as a mapping of strings")
	}
	if got, err := l.Normalize(""); err != nil || got != "" {
		t.Errorf("unset list: %q, %v", got, err)
	}
}
