package advice

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Level returns the advice for kinds x and y (in either order).
func (a Advice) Level(x, y string) (Pair, bool) {
	for _, p := range a.Pairs {
		if (p.A == x && p.B == y) || (p.A == y && p.B == x) {
			return p, true
		}
	}
	return Pair{}, false
}

// Header is the advice's first lines: its tolerance and the cases it read.
func (a Advice) Header() []string {
	out := []string{
		fmt.Sprintf("Placement advice from campaign %s, at a slowdown of at most %.4g%% of each kind's headline metric, judged at the worse end of its 95%% interval", a.Campaign, a.MaxSlowdownPct),
		"one container: case " + orNone(a.ContainerCase),
		"one host, separate containers: case " + orNone(a.HostCase),
	}
	if len(a.OtherCases) > 0 {
		out = append(out, "(not used: "+strings.Join(a.OtherCases, "; ")+"; choose with --container-case and --host-case)")
	}
	uncertain, n, minN := 0, 0, 0
	for _, j := range a.Judgements {
		if j.Case != a.ContainerCase && j.Case != a.HostCase {
			continue
		}
		n++
		if j.Verdict == Uncertain {
			uncertain++
		}
		if minN == 0 || j.N < minN {
			minN = j.N
		}
	}
	if uncertain > 0 {
		out = append(out, fmt.Sprintf("%d of %d pairings are uncertain: their intervals straddle the tolerance, so neither allowed nor ruled out; more repetitions narrow them (cells here have %d trials or more)", uncertain, n, minN))
	}
	kinds := make([]string, len(a.Kinds))
	for i, k := range a.Kinds {
		kinds[i] = k + " (" + a.Metrics[i] + ")"
	}
	return append(out, "kinds: "+strings.Join(kinds, ", "))
}

func orNone(s string) string {
	if s == "" {
		return "none measured"
	}
	return s
}

// WriteText prints the advice for a terminal.
func WriteText(w io.Writer, a Advice) error {
	var b strings.Builder
	for _, l := range a.Header() {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "\t%s\n", strings.Join(a.Kinds, "\t"))
	for _, x := range a.Kinds {
		line := []string{x}
		for _, y := range a.Kinds {
			p, _ := a.Level(x, y)
			line = append(line, string(p.Level))
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	tw.Flush()
	b.WriteString("\nwhy:\n")
	for _, p := range a.Pairs {
		fmt.Fprintf(&b, "  %s + %s: %s — %s\n", p.A, p.B, p.Level, p.Why)
	}
	if a.Packing != nil {
		writePacking(&b, *a.Packing, "")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writePacking(b *strings.Builder, p Packing, bullet string) {
	fmt.Fprintf(b, "\n%spacking: %d host(s), %d container(s) — %s\n", bullet, len(p.Hosts), p.Containers(), p.Algorithm)
	for i, h := range p.Hosts {
		var cs []string
		for _, c := range h.Containers {
			var ss []string
			for _, s := range c.Services {
				ss = append(ss, fmt.Sprintf("%s (%s, %.1f%%)", s.Name, s.Kind, s.PredictedSlowdownPct))
			}
			cs = append(cs, "["+strings.Join(ss, ", ")+"]")
		}
		fmt.Fprintf(b, "%s  host %d: %s\n", bullet, i+1, strings.Join(cs, " "))
	}
	fmt.Fprintf(b, "%s(each service: its kind and predicted slowdown; model: %s)\n", bullet, p.Model)
}

// Containers counts the packing's containers.
func (p Packing) Containers() int {
	n := 0
	for _, h := range p.Hosts {
		n += len(h.Containers)
	}
	return n
}

// WriteJSON prints the advice as JSON.
func WriteJSON(w io.Writer, a Advice) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(a)
}

// WriteMarkdown prints the advice for a pull request or an issue.
func WriteMarkdown(w io.Writer, a Advice) error {
	var b strings.Builder
	for i, l := range a.Header() {
		if i == 0 {
			l = "**" + l + "**"
		} else {
			l = "- " + l
		}
		b.WriteString(l + "\n")
	}
	b.WriteString("\n| | " + strings.Join(a.Kinds, " | ") + " |\n|---|" + strings.Repeat("---|", len(a.Kinds)) + "\n")
	for _, x := range a.Kinds {
		line := []string{"**" + x + "**"}
		for _, y := range a.Kinds {
			p, _ := a.Level(x, y)
			line = append(line, string(p.Level))
		}
		b.WriteString("| " + strings.Join(line, " | ") + " |\n")
	}
	b.WriteString("\n")
	for _, p := range a.Pairs {
		fmt.Fprintf(&b, "- %s + %s: **%s** — %s\n", p.A, p.B, p.Level, p.Why)
	}
	if a.Packing != nil {
		writePacking(&b, *a.Packing, "")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
