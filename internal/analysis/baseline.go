package analysis

import (
	"fmt"
	"maps"
	"strings"

	"github.com/ctrbench/ctrbench/internal/result"
)

// BaselineError is an override of the baseline that is not factor=level
// with a level some cell of the campaign ran: comparing against a cell
// that does not exist would leave every row without a baseline.
type BaselineError struct {
	Override string // as given, e.g. "layer=reference"
}

func (e *BaselineError) Error() string {
	return fmt.Sprintf("baseline override %q: want factor=level with a level the campaign ran", e.Override)
}

// resolveBaseline returns the campaign's baseline with overrides
// (factor=level) applied over it; without overrides, the campaign's own.
func resolveBaseline(baseline map[string]string, overrides []string, cells []result.Cell) (map[string]string, error) {
	if len(overrides) == 0 {
		return baseline, nil
	}
	b := maps.Clone(baseline)
	if b == nil {
		b = map[string]string{}
	}
	for _, kv := range overrides {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !factorHasLevel(cells, k, v) {
			return nil, &BaselineError{Override: kv}
		}
		b[k] = v
	}
	return b, nil
}

// factorHasLevel reports whether some cell has factor k at level v.
func factorHasLevel(cells []result.Cell, k, v string) bool {
	for _, c := range cells {
		if c.Factors[k] == v {
			return true
		}
	}
	return false
}
