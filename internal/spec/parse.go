package spec

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/ctrbench/ctrbench/internal/subnets"
	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
)

// topKeys are the keys an experiment file may have, in documentation order.
var topKeys = []string{"name", "description", "seed", "repetitions", "warmup", "timeout", "retries", "budget", "machine", "symmetric", "subnet_pool", "factors", "exclude", "baseline", "workloads", profilesKey}

// MaxFileSize is the largest experiment file read: the shipped ones are
// under 20 KiB; a larger file is refused before it is read whole.
const MaxFileSize = 4 << 20

// Load reads, overrides (--set) and validates an experiment file.
func Load(path string, sets []string, m Machine) (*Experiment, error) {
	return LoadWith(path, Options{Sets: sets, Machine: m})
}

// readFile reads an experiment file, refusing one larger than MaxFileSize.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading experiment file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading experiment file: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, Problems{{File: path, Msg: fmt.Sprintf("the file is larger than %d MiB, the most an experiment file may be", MaxFileSize>>20)}}
	}
	return data, nil
}

// parser collects problems while walking the YAML tree.
type parser struct {
	file     string
	machine  Machine // the machine validation checks levels against
	problems Problems
	// wls are the workloads read so far, for interpreting parameter levels.
	wls []Workload
	// origin maps a node that came from --set to its expression.
	origin map[*yaml.Node]string
	// fromProfile maps a node that came from a profile's override to
	// that override.
	fromProfile map[*yaml.Node]*profileEntry
	// notes are what the file spelt in an accepted older way, and what
	// could not be checked now (an image in an engine that did not answer).
	notes []string
	// imagesChecked are the users' images looked up in the engine already.
	imagesChecked map[string]bool
}

func (p *parser) addf(n *yaml.Node, format string, a ...any) {
	pr := Problem{File: p.file, Msg: fmt.Sprintf(format, a...)}
	if n != nil {
		if s, ok := p.origin[n]; ok {
			pr.Set = s
		} else if en, ok := p.fromProfile[n]; ok {
			pr = en.problem(p.file, pr.Msg)
		} else {
			pr.Line, pr.Col = n.Line, n.Column
		}
	}
	p.problems = append(p.problems, pr)
}

// where says where node n came from, for notes: the file's line, a --set
// or a profile's entry.
func (p *parser) where(n *yaml.Node) string {
	if s, ok := p.origin[n]; ok {
		return "--set " + s
	}
	if en, ok := p.fromProfile[n]; ok {
		return fmt.Sprintf("%s:%d: profile %s, %s", p.file, en.line, en.profile, en.expr)
	}
	return fmt.Sprintf("%s:%d", p.file, n.Line)
}

// Parse validates an experiment file's content. sets are "path=value"
// overrides applied before validation. Every problem is reported at once.
func Parse(path string, data []byte, sets []string, m Machine) (*Experiment, error) {
	return ParseWith(path, data, Options{Sets: sets, Machine: m})
}

// parseOnce reads the file's content once: its profiles set aside, the
// overrides of prof (nil: none) applied, then sets, and the result
// validated against m. The experiment is nil when the parser has
// problems.
func parseOnce(path string, data []byte, prof *profile, sets []string, m Machine) (*Experiment, *parser) {
	p := &parser{file: path, origin: map[*yaml.Node]string{}, fromProfile: map[*yaml.Node]*profileEntry{}, machine: m}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p.problems = Problems{yamlProblem(path, err)}
		return nil, p
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		p.problems = Problems{{File: path, Msg: "the file is empty; an experiment needs at least name and workloads"}}
		return nil, p
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.addf(root, "an experiment file is a mapping of keys (%s)", strings.Join(topKeys, ", "))
		return nil, p
	}
	takeProfiles(root)
	if prof != nil {
		for i := range prof.entries {
			en := &prof.entries[i]
			if err := applyOverride(root, en.expr, func(n *yaml.Node) { p.fromProfile[n] = en }); err != nil {
				p.problems = append(p.problems, en.problem(path, err.Error()))
			}
		}
	}
	for _, s := range sets {
		if err := applySet(root, s, p.origin); err != nil {
			p.problems = append(p.problems, Problem{File: path, Set: s, Msg: err.Error()})
		}
	}
	p.renameOldWords(root)
	e := p.experiment(root, m)
	if len(p.problems) > 0 {
		return nil, p
	}
	e.Path, e.Notes = path, p.notes
	return e, p
}

// recordText is what Experiment.Text keeps of a campaign's file: the
// file as read, then the profile's name and every override applied, in
// order (the profile's, then --set's), as comments that Reload applies
// again.
func recordText(data []byte, profile string, sets []string) string {
	var text bytes.Buffer
	text.Write(data)
	if profile != "" || len(sets) > 0 {
		text.WriteString(setMarker)
		if profile != "" {
			fmt.Fprintf(&text, "\n%s%s", profileTrailer, profile)
		}
		for _, s := range sets {
			fmt.Fprintf(&text, "\n%s%s", setTrailer, s)
		}
	}
	return text.String()
}

// renameOldWords reads the factor names of factors, exclude and baseline
// in the one vocabulary (vocab.CanonicalFactor: "antagonist" is the old
// word for a neighbour), noting each place a file used an old word.
func (p *parser) renameOldWords(root *yaml.Node) {
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				if name, renamed := vocab.CanonicalFactor(c.Value); renamed {
					p.notes = append(p.notes, fmt.Sprintf("%s: %q is the old word for %q; read as %q", p.where(c), c.Value, vocab.FNeighbour, name))
					c.Value = name
				}
			}
			walk(c)
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "factors", "exclude", "baseline":
			walk(root.Content[i+1])
		}
	}
}

// Parse appends the overrides to Experiment.Text after setMarker, one per
// line after setTrailer, so that Reload applies them again. The marker
// keeps a file's own comments that happen to begin "# --set" (a file that
// documents an override) from being taken for overrides. A profile's name
// is the line after the marker, after profileTrailer; its overrides are
// the first --set lines, for the reader: Reload applies them as it does
// the others.
const (
	setMarker      = "\n# ctrbench: --set overrides, as given on the command line:"
	setTrailer     = "# --set "
	profileTrailer = "# --profile "
)

// splitText separates a stored Experiment.Text into the file and its
// overrides. Texts stored before the marker existed end in a block of
// setTrailer lines.
func splitText(text string) (file string, sets []string) {
	if i := strings.LastIndex(text, setMarker); i >= 0 {
		for _, l := range strings.Split(text[i+len(setMarker):], "\n") {
			if s, ok := strings.CutPrefix(l, setTrailer); ok {
				sets = append(sets, s)
			}
		}
		return text[:i], sets
	}
	lines := strings.Split(text, "\n")
	end := len(lines)
	for end > 0 && strings.HasPrefix(lines[end-1], setTrailer) {
		end--
	}
	for _, l := range lines[end:] {
		sets = append(sets, strings.TrimPrefix(l, setTrailer))
	}
	return strings.Join(lines[:end], "\n"), sets
}

// Reload parses an experiment again from its stored Text (the file as read,
// then its --set overrides as comments), with the seed it ran with: the
// same cells and order, for resuming a campaign.
func Reload(path, text string, seed int64, m Machine) (*Experiment, error) {
	file, sets := splitText(text)
	data := []byte(strings.TrimRight(file, "\n") + "\n")
	e, err := Parse(path, data, sets, m)
	if err != nil {
		return nil, err
	}
	e.Seed, e.SeedGiven = seed, true
	// The profile's overrides are among sets; its name is for the reader.
	if name := recordedProfile(text); name != "" {
		e.Text = recordText(data, name, sets)
	}
	return e, nil
}

// yamlParserErrors are the problems yaml.v3's parser (not its scanner)
// reports. For these yaml.v3 prints the 0-based line of the enclosing
// construct (see parser.fail in gopkg.in/yaml.v3/decode.go), one less than
// the line a user counts.
var yamlParserErrors = []string{
	"did not find expected ',' or '}'",
	"did not find expected ',' or ']'",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected node content",
	"did not find expected <document start>",
	"found undefined tag handle",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
	"found incompatible YAML document",
}

func yamlProblem(path string, err error) Problem {
	// yaml.v3 errors read "yaml: line 7: did not find expected key".
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if num, tail, ok := strings.Cut(rest, ":"); ok {
			if line, err := strconv.Atoi(num); err == nil {
				if contains(yamlParserErrors, strings.TrimSpace(tail)) {
					line++
				}
				return Problem{File: path, Line: line, Msg: "not valid YAML:" + tail}
			}
		}
	}
	return Problem{File: path, Msg: "not valid YAML: " + msg}
}

// fields returns a mapping's keys to value nodes, reporting duplicate and
// unknown keys.
func (p *parser) fields(n *yaml.Node, what string, allowed []string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.addf(n, "%s must be a mapping with keys %s", what, strings.Join(allowed, ", "))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			p.addf(k, "key %q appears twice in %s", k.Value, what)
			continue
		}
		if allowed != nil && !contains(allowed, k.Value) {
			p.addf(k, "unknown key %q in %s; allowed: %s", k.Value, what, strings.Join(allowed, ", "))
			continue
		}
		out[k.Value] = v
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		p.addf(n, "%s must be a single value, not a %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	}
	return "value"
}

func (p *parser) integer(n *yaml.Node, what string, min int64) (int64, bool) {
	s, ok := p.scalar(n, what)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.addf(n, "%s must be an integer, got %q", what, s)
		return 0, false
	}
	if v < min {
		p.addf(n, "%s must be at least %d, got %d", what, min, v)
		return 0, false
	}
	return v, true
}

func (p *parser) experiment(root *yaml.Node, m Machine) *Experiment {
	f := p.fields(root, "the experiment", topKeys)
	e := &Experiment{Repetitions: DefaultRepetitions, Warmup: DefaultWarmup, Timeout: DefaultTimeout, Retries: DefaultRetries}
	p.identity(e, f, root)
	p.repetition(e, f)
	p.limits(e, f)
	if n, ok := f["machine"]; ok {
		e.Envelope = p.envelope(n, m)
	}
	if n, ok := f["workloads"]; ok {
		e.Workloads = p.workloads(n)
		p.wls = e.Workloads
	} else {
		p.addf(root, "missing key \"workloads\": list at least one workload (types: %s)", strings.Join(workload.Types(), ", "))
	}
	p.checkAdaptiveMetric(e, f["repetitions"])
	factorNodes := p.design(e, f, root, m)
	p.checkPlaceholders(e)
	if len(p.problems) == 0 {
		p.checkCells(e, root, factorNodes, f["baseline"])
	}
	return e
}

// identity reads what names the experiment: its name, description and
// seed (a random one when the file gives none).
func (p *parser) identity(e *Experiment, f map[string]*yaml.Node, root *yaml.Node) {
	if n, ok := f["name"]; ok {
		if s, ok := p.scalar(n, "name"); ok {
			if strings.TrimSpace(s) == "" {
				p.addf(n, "name must not be empty")
			}
			e.Name = s
		}
	} else if name := nameOfFile(p.file); name != "" {
		e.Name = name
	} else {
		p.addf(root, "missing key \"name\": every experiment has a name (a file's defaults to its base name; this text has no file)")
	}
	if n, ok := f["description"]; ok {
		e.Description, _ = p.scalar(n, "description")
	}
	if n, ok := f["seed"]; ok {
		if v, ok := p.integer(n, "seed", 0); ok {
			e.Seed, e.SeedGiven = v, true
		}
	} else {
		e.Seed = rand.Int64N(1 << 31)
	}
}

// nameOfFile is the name an experiment without name: takes: its file's base
// name without the extension ("" for text with no file).
func nameOfFile(file string) string {
	if file == "" {
		return ""
	}
	base := filepath.Base(file)
	return strings.TrimSpace(strings.TrimSuffix(base, filepath.Ext(base)))
}

// repetition reads how often each cell runs: repetitions (a number, or the
// adaptive rule's mapping), warm-ups and retries.
func (p *parser) repetition(e *Experiment, f map[string]*yaml.Node) {
	if n, ok := f["repetitions"]; ok {
		if n.Kind == yaml.MappingNode {
			e.Adaptive = p.adaptive(n)
			if e.Adaptive != nil {
				e.Repetitions = e.Adaptive.Min
			}
		} else if v, ok := p.integer(n, "repetitions", 1); ok {
			e.Repetitions = int(v)
		}
	}
	if n, ok := f["warmup"]; ok {
		if v, ok := p.integer(n, "warmup", 0); ok {
			e.Warmup = int(v)
		}
	}
	if n, ok := f["retries"]; ok {
		if v, ok := p.integer(n, "retries", 0); ok {
			if v > MaxRetries {
				p.addf(n, "retries must be at most %d (tries of a trial the platform failed), got %d", MaxRetries, v)
			} else {
				e.Retries = int(v)
			}
		}
	}
}

// limits reads what bounds the campaign: its time (budget, each trial's
// timeout), whether pairings are measured both ways, and the subnet pool
// its addresses come from.
func (p *parser) limits(e *Experiment, f map[string]*yaml.Node) {
	if n, ok := f["budget"]; ok {
		if s, ok := p.scalar(n, "budget"); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				p.addf(n, "budget must be a positive duration such as 20m or 1h, got %q", s)
			} else {
				e.Budget = d
			}
		}
	}
	if n, ok := f["timeout"]; ok {
		if s, ok := p.scalar(n, "timeout"); ok {
			d, err := time.ParseDuration(s)
			switch {
			case err != nil:
				p.addf(n, "timeout must be a duration such as 30s or 5m, got %q", s)
			case d <= 0:
				p.addf(n, "timeout must be positive, got %s", s)
			default:
				e.Timeout = d
			}
		}
	}
	if n, ok := f["subnet_pool"]; ok {
		if s, ok := p.scalar(n, "subnet_pool"); ok {
			pool, err := subnets.Parse(s)
			if err != nil {
				p.addf(n, "%v", err)
			} else {
				e.SubnetPool = pool
			}
		}
	}
	if n, ok := f["symmetric"]; ok {
		if v, ok := p.scalar(n, "symmetric"); ok {
			switch v {
			case "true", "false":
				e.Symmetric = v == "true"
			default:
				p.addf(n, "symmetric must be true or false, got %q", v)
			}
		}
	}
}
