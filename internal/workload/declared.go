package workload

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// A workload runs from a user's image when its parameters name one: in the
// machine's engine (ParamImage) or an archive (ParamImageArchive, a path
// relative to the experiment file). Every role of the workload runs from
// it, the agent put into it.
const (
	ParamImage        = "image"
	ParamImageArchive = "image_archive"
)

// RoleRun is what one role of a user's workload runs, by its parameters.
type RoleRun struct {
	// Image is the user's image in the machine's engine it runs from,
	// Archive one in an archive; both "" for ctrbench's agent image.
	Image, Archive string
	// Command is its program and arguments; nil for the image's own.
	Command []string
	// Param names the parameter that holds the role's own settings (a
	// service's client), where a file's error about them points; "" for
	// the workload's own parameters.
	Param string
}

// RoleOf is what role runs, by the parameters (User.Role); by default the
// image and the command the parameters name.
func (s *Spec) RoleOf(params map[string]string, role string) RoleRun {
	if s.User.Role != nil {
		return s.User.Role(params, role)
	}
	return RoleRun{Image: params[ParamImage], Archive: params[ParamImageArchive], Command: Values(params).List("command")}
}

// ImageOf is the user's image role runs from, by the parameters: ref in
// the machine's engine or an archive; both "" for ctrbench's agent image.
func (s *Spec) ImageOf(params map[string]string, role string) (ref, archive string) {
	r := s.RoleOf(params, role)
	return r.Image, r.Archive
}

// Structured parameters: a value the file writes as a YAML list or mapping.
// The parser hands it over as JSON (a mapping's keys in the file's order)
// and the value stays JSON text, so Values remain a map of strings that
// travel to the agent unchanged.
const (
	List    Kind = "list"    // a list of strings: ["redis-server", "--port", "6379"]
	Mapping Kind = "mapping" // string keys to strings: {GOMAXPROCS: "2"}
	// Object is any mapping: Param.Check validates it (a metrics contract).
	Object Kind = "object"
)

// Structured reports whether k's values are written as YAML lists or
// mappings rather than scalars.
func (k Kind) Structured() bool { return k == List || k == Mapping || k == Object }

// normalizeStructured checks v, JSON of p's kind, and returns its
// canonical text.
func (p Param) normalizeStructured(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	switch p.Kind {
	case List:
		var l []string
		if err := json.Unmarshal([]byte(v), &l); err != nil {
			return "", fmt.Errorf("want %s, got %s", p.Describe(), v)
		}
		b, _ := json.Marshal(l)
		return string(b), nil
	case Mapping:
		var m map[string]string
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return "", fmt.Errorf("want %s, got %s", p.Describe(), v)
		}
		b, _ := json.Marshal(m)
		return string(b), nil
	}
	if p.Check == nil {
		return "", fmt.Errorf("parameter %s has no check for its values", p.Name)
	}
	return p.Check(v)
}

// Located is an error about one place inside a structured parameter: At
// is the keys leading to it (a metric's name, then its key), so the
// parser can point at that line of the file.
type Located interface {
	error
	At() []string
}

// List returns a List parameter; nil when it is not set.
func (v Values) List(name string) []string {
	var l []string
	_ = json.Unmarshal([]byte(v[name]), &l)
	return l
}

// Mapping returns a Mapping parameter; nil when it is not set.
func (v Values) Mapping(name string) map[string]string {
	var m map[string]string
	_ = json.Unmarshal([]byte(v[name]), &m)
	return m
}

// MetricsFor is what a workload of this type with these parameters
// reports: the spec's metrics, or, for a workload whose file declares its
// metrics (exec), the declared ones, in the file's order (the first is the
// headline).
func (s *Spec) MetricsFor(params map[string]string) []Metric {
	if s.User.Declared != nil {
		m, _ := s.User.Declared(params)
		return m
	}
	return s.Metrics
}

// For is the spec as a workload with these parameters sees it: itself, or
// for a workload whose file declares its metrics or names its tools, a
// copy whose Metrics and Tools are those (MetricsFor, ToolsFor).
func (s *Spec) For(params map[string]string) *Spec {
	if s.User.Declared == nil && s.User.NamedTools == nil {
		return s
	}
	c := *s
	if s.User.Declared != nil {
		c.Metrics, c.Histograms = s.User.Declared(params)
	}
	c.Tools = s.ToolsFor(params)
	return &c
}

// MetricsOf is MetricsFor of the registered type typ; nil for an unknown
// type.
func MetricsOf(typ string, params map[string]string) []Metric {
	s, ok := Lookup(typ)
	if !ok {
		return nil
	}
	return s.MetricsFor(params)
}

// MetricOf is the named metric of MetricsOf.
func MetricOf(typ string, params map[string]string, name string) (Metric, bool) {
	for _, m := range MetricsOf(typ, params) {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// ToolsFor is the external programs a workload of this type with these
// parameters runs: the spec's, and those its parameters name (an exec
// workload's command found on the machine).
func (s *Spec) ToolsFor(params map[string]string) []Tool {
	if s.User.NamedTools == nil {
		return s.Tools
	}
	return append(append([]Tool(nil), s.Tools...), s.User.NamedTools(params)...)
}

// placeholderRE finds {name} placeholders: {trial}, {cell.<factor>},
// {server.host}, {server.port}. "{{" writes a literal "{".
var placeholderRE = regexp.MustCompile(`\{\{|\{([a-z][a-z0-9_]*(?:\.[a-z0-9_.]+)?)\}`)

// Placeholders lists the placeholders s names, in order, each once.
func Placeholders(s string) []string {
	var out []string
	for _, m := range placeholderRE.FindAllStringSubmatch(s, -1) {
		if m[1] != "" && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

// Expand replaces s's placeholders with vars' values; a placeholder vars
// does not have stays as written, "{{" becomes "{".
func Expand(s string, vars map[string]string) string {
	return placeholderRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "{{" {
			return "{"
		}
		if v, ok := vars[m[1:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// Bind expands the placeholders of the spec's placeholder-taking
// parameters in params (JSON, as the agent takes them) with vars. Other
// parameters, and other workloads' parameters, are returned unchanged.
func (s *Spec) Bind(params string, vars map[string]string) (string, error) {
	if len(s.User.TakesPlaceholders) == 0 || params == "" {
		return params, nil
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(params), &v); err != nil {
		return "", fmt.Errorf("parameters of %s: %w", s.Type, err)
	}
	for _, name := range s.User.TakesPlaceholders {
		raw, ok := v[name]
		if !ok {
			continue
		}
		p, _ := s.Param(name)
		if p.Kind == List {
			l := Values(v).List(name)
			for i := range l {
				l[i] = Expand(l[i], vars)
			}
			b, _ := json.Marshal(l)
			v[name] = string(b)
			continue
		}
		if p.Kind == Object || p.Kind == Mapping { // JSON text: values escaped
			esc := make(map[string]string, len(vars))
			for k, x := range vars {
				b, _ := json.Marshal(x)
				esc[k] = string(b[1 : len(b)-1])
			}
			v[name] = Expand(raw, esc)
			continue
		}
		v[name] = Expand(raw, vars)
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// PlaceholderVars are the placeholders a trial of a cell binds: {trial},
// and {cell.<factor>} for each of the cell's factors.
func PlaceholderVars(seq int, factors map[string]string) map[string]string {
	vars := map[string]string{"trial": fmt.Sprint(seq)}
	for k, v := range factors {
		vars["cell."+k] = v
	}
	return vars
}

// placeholdersIn lists the placeholders of the spec's placeholder-taking
// parameters, sorted: what the parser checks against the cell's factors.
func (s *Spec) placeholdersIn(v Values) []string {
	var out []string
	for _, name := range s.User.TakesPlaceholders {
		p, _ := s.Param(name)
		vals := []string{v[name]}
		if p.Kind == List {
			vals = v.List(name)
		}
		for _, x := range vals {
			for _, ph := range Placeholders(x) {
				if !slices.Contains(out, ph) {
					out = append(out, ph)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// UnknownPlaceholders lists the placeholders in v that no trial binds:
// neither {trial} nor {cell.<f>} for a factor f in factors (nor, for a
// client, {server.host} and {server.port}).
func (s *Spec) UnknownPlaceholders(v Values, factors []string) []string {
	var bad []string
	for _, name := range s.User.TakesPlaceholders {
		for _, ph := range s.placeholdersIn(Values{name: v[name]}) {
			f, isCell := strings.CutPrefix(ph, "cell.")
			switch {
			case ph == "trial":
			case isCell && slices.Contains(factors, f):
			case slices.Contains(s.User.BoundByRun[name], ph):
			default:
				if !slices.Contains(bad, "{"+ph+"}") {
					bad = append(bad, "{"+ph+"}")
				}
			}
		}
	}
	sort.Strings(bad)
	return bad
}
