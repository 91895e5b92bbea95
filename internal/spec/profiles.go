package spec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Profiles: "profiles: {paper: {repetitions: 10, …}, quick: {…}}" names
// sets of overrides of the file, each entry a path and a value with the
// meaning --set gives "path=value". `run --profile NAME` applies one, then
// the --set overrides. Every profile is validated whenever the file is: on
// its own, applied to the file, against everything but this machine's size
// (a profile may be written for a larger machine; a run with it is then
// refused, a dry run warns).

// profilesKey is the top-level key that holds the profiles.
const profilesKey = "profiles"

// profileName is what a profile may be called: a word for the command line.
var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// profile is one named set of overrides of the file.
type profile struct {
	name      string
	line, col int // of its name in the file
	entries   []profileEntry
}

// profileEntry is one override of a profile.
type profileEntry struct {
	profile   string
	expr      string // "path=value", as --set takes it
	line, col int    // of the entry in the file
}

// problem is a problem of the value the entry put in the experiment.
func (en *profileEntry) problem(file, msg string) Problem {
	return Problem{File: file, Line: en.line, Col: en.col, Profile: en.profile, Entry: en.expr, Msg: msg}
}

// Options say how to read an experiment file.
type Options struct {
	// Profile is the profile of the file whose overrides apply first
	// ("" for none).
	Profile string
	// Sets are --set overrides ("path=value"), applied after the profile's.
	Sets    []string
	Machine Machine
}

// ProfileError is a --profile that names no profile of the file.
type ProfileError struct {
	File, Name string
	Have       []string // the file's profiles
}

func (e *ProfileError) Error() string {
	if len(e.Have) == 0 {
		return fmt.Sprintf("--profile %s: %s has no profiles (a profile is a named set of overrides under profiles:)", e.Name, e.File)
	}
	return fmt.Sprintf("--profile %s: %s has no such profile; its profiles: %s", e.Name, e.File, strings.Join(e.Have, ", "))
}

// LoadWith reads an experiment file, applies a profile's overrides and
// then o.Sets, and validates the result and every profile of the file.
func LoadWith(path string, o Options) (*Experiment, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParseWith(path, data, o)
}

// LoadForPlan is LoadWith for a dry run: with a profile, this machine's
// size refuses nothing; what a run with it would refuse for the size of
// the machine (more cores or memory than it has) is returned as warnings.
func LoadForPlan(path string, o Options) (*Experiment, []string, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	if o.Profile == "" {
		e, err := ParseWith(path, data, o)
		return e, nil, err
	}
	full := o.Machine
	o.Machine = full.sizeless()
	e, err := ParseWith(path, data, o)
	if err != nil {
		return nil, nil, err
	}
	prof, _ := readProfiles(path, data)
	_, p := parseOnce(path, data, findProfile(prof, o.Profile), o.Sets, full)
	var warnings []string
	for _, pr := range byLine(p.problems) {
		warnings = append(warnings, fmt.Sprintf("%s; `run --profile %s` would refuse it here", pr, o.Profile))
	}
	return e, warnings, nil
}

// ParseWith validates an experiment file's content with a profile's
// overrides, then o.Sets, applied, and every profile of the file on its
// own. Every problem is reported at once.
func ParseWith(path string, data []byte, o Options) (*Experiment, error) {
	profiles, problems := readProfiles(path, data)
	var chosen *profile
	if o.Profile != "" {
		if chosen = findProfile(profiles, o.Profile); chosen == nil {
			if len(problems) > 0 {
				return nil, problems
			}
			return nil, &ProfileError{File: path, Name: o.Profile, Have: profileNames(profiles)}
		}
	}
	e, p := parseOnce(path, data, chosen, o.Sets, o.Machine)
	baseOK := e != nil && chosen == nil && len(o.Sets) == 0
	if !baseOK && len(profiles) > 0 {
		base, _ := parseOnce(path, data, nil, nil, o.Machine.sizeless())
		baseOK = base != nil
	}
	ps, notes := checkProfiles(path, data, profiles, chosen, baseOK, o.Machine)
	problems = dedupe(append(append(problems, ps...), p.problems...))
	if len(problems) > 0 {
		return nil, problems
	}
	e.Notes = append(e.Notes, notes...)
	var sets []string
	if chosen != nil {
		for _, en := range chosen.entries {
			sets = append(sets, en.expr)
		}
		sets = append(sets, o.Sets...)
		e.Text = recordText(data, chosen.name, sets)
	} else {
		e.Text = recordText(data, "", o.Sets)
	}
	return e, nil
}

// checkProfiles validates each profile applied on its own to the file,
// against everything but the machine's size. The problems of its entries
// are always reported; those elsewhere in the file that only appear with
// the profile, when the file without it is valid (baseOK). A valid
// profile (but the chosen one) that asks for more than machine m has is
// a note.
func checkProfiles(path string, data []byte, profiles []profile, chosen *profile, baseOK bool, m Machine) (Problems, []string) {
	var problems Problems
	var notes []string
	for i := range profiles {
		pr := &profiles[i]
		e, p := parseOnce(path, data, pr, nil, m.sizeless())
		for _, q := range p.problems {
			switch {
			case q.Entry != "":
				problems = append(problems, q)
			case baseOK:
				q.Profile = fmt.Sprintf("%s (line %d)", pr.name, pr.line)
				problems = append(problems, q)
			}
		}
		if e == nil || pr == chosen || m.CPUs == 0 && m.MemBytes == 0 && m.Image == nil {
			continue
		}
		if _, p := parseOnce(path, data, pr, nil, m); len(p.problems) > 0 {
			for _, q := range byLine(p.problems) {
				notes = append(notes, fmt.Sprintf("%s; `run --profile %s` would refuse it here (a dry run plans it)", q, pr.name))
			}
		}
	}
	return problems, notes
}

// byLine is ps in the order Problems.Error prints them.
func byLine(ps Problems) Problems {
	out := slices.Clone(ps)
	slices.SortStableFunc(out, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return out
}

// sizeless is the machine without its size (and without its engine's
// images): validation of a profile, which
// may be written for a larger machine, checks everything else.
func (m Machine) sizeless() Machine {
	m.CPUs, m.MemBytes, m.Image = 0, 0, nil
	return m
}

// dedupe drops repeated problems: a chosen profile's are found both when
// it is validated alone and when the run's experiment is.
func dedupe(ps Problems) Problems {
	seen := map[Problem]bool{}
	var out Problems
	for _, p := range ps {
		key := p
		if key.Entry == "" {
			key.Profile = ""
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, p)
		}
	}
	return out
}

func findProfile(profiles []profile, name string) *profile {
	for i := range profiles {
		if profiles[i].name == name {
			return &profiles[i]
		}
	}
	return nil
}

func profileNames(profiles []profile) []string {
	out := make([]string, len(profiles))
	for i, p := range profiles {
		out[i] = p.name
	}
	return out
}

// takeProfiles removes the profiles from the experiment's tree: they are
// not part of the experiment but overrides of it.
func takeProfiles(root *yaml.Node) []*yaml.Node {
	var taken []*yaml.Node
	kept := root.Content[:0:0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == profilesKey {
			taken = append(taken, root.Content[i], root.Content[i+1])
			continue
		}
		kept = append(kept, root.Content[i], root.Content[i+1])
	}
	root.Content = kept
	return taken
}

// readProfiles reads the file's profiles, reporting what is wrong with
// their shape; whether their overrides make a valid experiment is for
// checkProfiles. A file that is not a YAML mapping has none (parseOnce
// says why).
func readProfiles(path string, data []byte) ([]profile, Problems) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil
	}
	p := &parser{file: path}
	taken := takeProfiles(doc.Content[0])
	for i := 2; i < len(taken); i += 2 {
		p.addf(taken[i], "key %q appears twice in the experiment", profilesKey)
	}
	if len(taken) == 0 {
		return nil, nil
	}
	n := taken[1]
	if n.Kind != yaml.MappingNode {
		p.addf(n, "profiles must be a mapping of profile names to overrides, e.g. profiles: {quick: {repetitions: 2}}")
		return nil, p.problems
	}
	var out []profile
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case !profileName.MatchString(k.Value):
			p.addf(k, "profile name %q: use letters, digits, '-', '_' and '.', beginning with a letter or digit", k.Value)
		case findProfile(out, k.Value) != nil:
			p.addf(k, "profile %q appears twice", k.Value)
		default:
			out = append(out, p.profile(k, v))
		}
	}
	return out, p.problems
}

// profile reads one profile: a mapping of --set paths to values.
func (p *parser) profile(k, v *yaml.Node) profile {
	pr := profile{name: k.Value, line: k.Line, col: k.Column}
	if v.Kind != yaml.MappingNode {
		p.addf(v, "profile %s must be a mapping of overrides, path: value as --set takes path=value, e.g. {repetitions: 10, workloads.cpu.params.max_prime: 40000}", pr.name)
		return pr
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		pk, pv := v.Content[i], v.Content[i+1]
		path := strings.TrimSpace(pk.Value)
		text, err := valueText(pv)
		switch {
		case pk.Kind != yaml.ScalarNode || path == "" || strings.Contains(path, "="):
			p.addf(pk, "profile %s: an override's path is what --set takes before =, e.g. repetitions or workloads.cpu.params.max_prime", pr.name)
		case seen[path]:
			p.addf(pk, "profile %s: %s appears twice", pr.name, path)
		case err != nil:
			p.addf(pv, "profile %s, %s: %v", pr.name, path, err)
		default:
			seen[path] = true
			pr.entries = append(pr.entries, profileEntry{profile: pr.name, expr: path + "=" + text, line: pk.Line, col: pk.Column})
		}
	}
	return pr
}

// valueText writes a profile's value as --set takes it: YAML on one line.
// An empty value is --set's empty value.
func valueText(n *yaml.Node) (string, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == "" {
		return "", nil
	}
	c, err := flowCopy(n)
	if err != nil {
		return "", err
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("cannot be written as YAML: %v", err)
	}
	text := strings.TrimSuffix(string(out), "\n")
	if strings.Contains(text, "\n") {
		return "", errors.New("cannot be written on one line, as a --set value is")
	}
	return text, nil
}

// flowCopy copies a value without its comments, its collections in flow
// style and its multi-line strings quoted: one line of YAML.
func flowCopy(n *yaml.Node) (*yaml.Node, error) {
	if n.Kind == yaml.AliasNode {
		return nil, fmt.Errorf("*%s: a profile's value is recorded as --set text, which has no anchors; write the value itself", n.Value)
	}
	c := &yaml.Node{Kind: n.Kind, Style: n.Style, Tag: n.Tag, Value: n.Value}
	switch {
	case n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode:
		c.Style = yaml.FlowStyle
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 || strings.Contains(n.Value, "\n"):
		c.Style = yaml.DoubleQuotedStyle
	}
	for _, child := range n.Content {
		cc, err := flowCopy(child)
		if err != nil {
			return nil, err
		}
		c.Content = append(c.Content, cc)
	}
	return c, nil
}

// recordedProfile is the profile an experiment's stored text was read
// with ("" for none).
func recordedProfile(text string) string {
	i := strings.LastIndex(text, setMarker)
	if i < 0 {
		return ""
	}
	for _, l := range strings.Split(text[i+len(setMarker):], "\n") {
		if name, ok := strings.CutPrefix(l, profileTrailer); ok {
			return strings.TrimSpace(name)
		}
	}
	return ""
}

// Profile is the profile the experiment was read with ("" for none) and
// every override applied, in order: the profile's, then --set's.
func (e *Experiment) Profile() (name string, sets []string) {
	_, sets = splitText(e.Text)
	return recordedProfile(e.Text), sets
}

// Profiles are the names of the file's profiles, in file order.
func (e *Experiment) Profiles() []string {
	file, _ := splitText(e.Text)
	profiles, _ := readProfiles(e.Path, []byte(file))
	return profileNames(profiles)
}
