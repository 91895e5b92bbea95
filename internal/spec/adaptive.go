package spec

import (
	"strings"

	"github.com/ctrbench/ctrbench/internal/vocab"
	"github.com/ctrbench/ctrbench/internal/workload"
	"gopkg.in/yaml.v3"
)

// adaptiveKeys are the keys of repetitions as a mapping.
var adaptiveKeys = []string{"min", "max", "rci", "metric"}

// checkAdaptiveMetric checks that the metric an adaptive rule decides by
// is one every workload has.
func (p *parser) checkAdaptiveMetric(e *Experiment, node *yaml.Node) {
	a := e.Adaptive
	if a == nil || a.Metric == "" {
		return
	}
	for _, w := range e.Workloads {
		if w.Spec == nil {
			continue
		}
		if _, ok := workload.MetricOf(w.Type, w.Params, a.Metric); !ok {
			var names []string
			for _, m := range w.Spec.MetricsFor(w.Params) {
				names = append(names, m.Name)
			}
			p.addf(node, "repetitions.metric %q decides when each cell has enough trials, but workload %s (%s) has no such metric; its metrics: %s",
				a.Metric, w.Name, w.Type, strings.Join(names, ", "))
		}
	}
}

// adaptive reads repetitions as a mapping: {min: 3, max: 30, rci: 2%}.
func (p *parser) adaptive(n *yaml.Node) *Adaptive {
	f := p.fields(n, "repetitions", adaptiveKeys)
	a := &Adaptive{Min: DefaultRepetitions}
	ok := true
	if v, found := f["min"]; found {
		m, good := p.integer(v, "repetitions.min", 2)
		a.Min, ok = int(m), ok && good
	}
	if v, found := f["max"]; found {
		m, good := p.integer(v, "repetitions.max", 2)
		a.Max, ok = int(m), ok && good
	} else {
		p.addf(n, "repetitions as a mapping needs max: the most recorded trials a cell may get (keys: %s)", strings.Join(adaptiveKeys, ", "))
		ok = false
	}
	if v, found := f["rci"]; found {
		if s, good := p.scalar(v, "repetitions.rci"); good {
			frac, err := vocab.ParsePercent(s)
			if err != nil || frac <= 0 || frac >= 1 {
				p.addf(v, "repetitions.rci is the target 95%% interval half-width relative to the mean, a percentage such as 2%% (above 0, below 100), got %q", s)
				ok = false
			} else {
				a.RCI = frac
			}
		} else {
			ok = false
		}
	} else {
		p.addf(n, "repetitions as a mapping needs rci: the interval half-width, relative to the mean, to stop at (e.g. 2%%)")
		ok = false
	}
	if v, found := f["metric"]; found {
		a.Metric, _ = p.scalar(v, "repetitions.metric")
	}
	if ok && a.Max < a.Min {
		p.addf(n, "repetitions.max (%d) is below repetitions.min (%d)", a.Max, a.Min)
		ok = false
	}
	if !ok {
		return nil
	}
	return a
}

// AdaptiveOf reads the adaptive repetition of a stored experiment text (a
// campaign's SpecText, with its --set trailer) without validating the rest:
// reports use it to say whether each cell reached its target. nil when the
// repetitions are fixed or cannot be read.
func AdaptiveOf(text string) *Adaptive {
	var doc yaml.Node
	file, sets := splitText(text)
	if yaml.Unmarshal([]byte(file), &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	origin := map[*yaml.Node]string{}
	for _, s := range sets {
		_ = applySet(root, s, origin)
	}
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "repetitions" && root.Content[i+1].Kind == yaml.MappingNode {
			p := &parser{origin: origin}
			if a := p.adaptive(root.Content[i+1]); a != nil && len(p.problems) == 0 {
				return a
			}
		}
	}
	return nil
}
