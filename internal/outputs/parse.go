package outputs

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Parse reads c's metrics from out, a command's whole output, in the
// order c declares them. Its error is a *ParseError when out does not
// give every metric, and says that c is wrong when c.Check has problems.
func (c Contract) Parse(out []byte) ([]Value, error) {
	sels, problems := c.compile()
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = p
		}
		return nil, fmt.Errorf("the metrics contract cannot be read: %w", errors.Join(errs...))
	}
	var r *reading
	switch c.Format {
	case JSON:
		r = readJSON(out, sels)
	case JSONL:
		r = readJSONL(out, sels)
	case CSV:
		r = readCSV(out, sels)
	case Benchfmt:
		r = readBenchfmt(out, sels)
	case Regex:
		r = readRegex(out, sels)
	}
	values, errs := r.values()
	if len(errs) > 0 {
		return nil, &ParseError{Format: c.Format, Errs: errs, Tail: Tail(out)}
	}
	return values, nil
}

// ParseError says why a command's output did not give its metrics.
type ParseError struct {
	Format Format  // the format the output was read in
	Errs   []error // one per metric that could not be read, or one saying the output is not in Format
	Tail   string  // the output's end, as Tail quotes it
}

// Error lists every metric that could not be read, then the output's end.
func (e *ParseError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the command's output (read as %s) does not give its metrics:\n", e.Format)
	for _, err := range e.Errs {
		b.WriteString("  " + err.Error() + "\n")
	}
	b.WriteString(e.Tail)
	return b.String()
}

// Unwrap returns the errors of each metric.
func (e *ParseError) Unwrap() []error { return e.Errs }

// reading is what one pass over an output found for each metric.
type reading struct {
	sels  []selector
	accs  []acc
	errs  []error  // per metric: its first value that is not a number
	why   []string // per metric: why nothing was found, when nothing was
	fatal error    // the output is not in its format: no metric can be read
}

func newReading(sels []selector) *reading {
	return &reading{sels: sels, accs: make([]acc, len(sels)), errs: make([]error, len(sels)), why: make([]string, len(sels))}
}

// add counts v as a value of metric i, found at line (0 when the format
// has no lines worth naming).
func (r *reading) add(i int, v float64, line int) {
	if r.errs[i] != nil {
		return
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		r.fail(i, line, fmt.Errorf("%v is not a finite number", v))
		return
	}
	r.accs[i].add(v)
}

// fail records err as metric i's, found at line, unless it has one.
func (r *reading) fail(i, line int, err error) {
	if r.errs[i] != nil {
		return
	}
	if line > 0 {
		err = fmt.Errorf("line %d: %w", line, err)
	}
	r.errs[i] = fmt.Errorf("metric %q: %w", r.sels[i].Name, err)
}

// values is each metric's value, or why some have none.
func (r *reading) values() ([]Value, []error) {
	if r.fatal != nil {
		return nil, []error{r.fatal}
	}
	var errs []error
	values := make([]Value, len(r.sels))
	for i, s := range r.sels {
		a := r.accs[i]
		v := a.result(s.agg)
		switch {
		case r.errs[i] != nil:
			errs = append(errs, r.errs[i])
		case a.n == 0:
			why := r.why[i]
			if why == "" {
				why = "the output does not have it"
			}
			errs = append(errs, fmt.Errorf("metric %q: missing: %s", s.Name, why))
		case math.IsInf(v, 0):
			errs = append(errs, fmt.Errorf("metric %q: the %s of its %d values is not a finite number", s.Name, s.agg, a.n))
		}
		values[i] = Value{Name: s.Name, Unit: s.Unit, Better: s.Better, Value: v}
	}
	return values, errs
}

// acc combines a metric's values as they are found.
type acc struct {
	n                          int
	first, last, sum, min, max float64
}

func (a *acc) add(v float64) {
	if a.n == 0 {
		a.first, a.min, a.max = v, v, v
	}
	a.n++
	a.last = v
	a.sum += v
	a.min = min(a.min, v)
	a.max = max(a.max, v)
}

// result is the values combined by g.
func (a acc) result(g Aggregate) float64 {
	switch g {
	case First:
		return a.first
	case Mean:
		return a.sum / float64(max(a.n, 1))
	case Sum:
		return a.sum
	case Min:
		return a.min
	case Max:
		return a.max
	case Count:
		return float64(a.n)
	}
	return a.last
}

// names collects the names of records or benchmarks an output has, for a
// message that says which ones a selector may name.
type names struct {
	what string // what they are the names of, plural
	n    int
	some []string // the first distinct ones, at most maxNames
	more bool     // there are more than maxNames distinct ones
}

const maxNames = 12

func (ns *names) add(name string) {
	ns.n++
	switch {
	case slices.Contains(ns.some, name):
	case len(ns.some) < maxNames:
		ns.some = append(ns.some, name)
	default:
		ns.more = true
	}
}

// String lists the names for a message.
func (ns *names) String() string {
	more := ""
	if ns.more {
		more = ", …"
	}
	return "the output's " + ns.what + ": " + strings.Join(ns.some, ", ") + more
}

// number reads s as a value: a decimal number, white space around it
// aside.
func number(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if !decimal(t) {
		if f, err := strconv.ParseFloat(t, 64); err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return 0, fmt.Errorf("%s is not a finite number; a value is a decimal number such as 1234.5 or 1.2e6", quote(s))
		}
		return 0, fmt.Errorf("%s is not a number; a value is a decimal number such as 1234.5 or 1.2e6, without separators or units", quote(s))
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("%s is not a finite number: it is beyond a float64's range", quote(s))
	}
	return f, nil
}

// decimal reports whether s is a decimal number: an optional sign,
// digits with at most one point (at least one digit), and an optional
// exponent.
func decimal(s string) bool {
	mant, exp := s, ""
	e := strings.IndexAny(s, "eE")
	if e >= 0 {
		mant, exp = s[:e], unsigned(s[e+1:])
		if exp == "" || !digitsOnly(exp) {
			return false
		}
	}
	whole, frac, _ := strings.Cut(unsigned(mant), ".")
	return whole+frac != "" && digitsOnly(whole) && digitsOnly(frac)
}

// unsigned is s without a leading sign.
func unsigned(s string) string {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		return s[1:]
	}
	return s
}

// digitsOnly reports whether s has nothing but ASCII digits.
func digitsOnly(s string) bool { return strings.Trim(s, "0123456789") == "" }

// quote quotes s for a message, cut to at most 64 bytes.
func quote(s string) string {
	if len(s) > 64 {
		return strconv.Quote(strings.ToValidUTF8(s[:64], "")) + "…"
	}
	return strconv.Quote(s)
}
