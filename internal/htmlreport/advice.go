package htmlreport

import "github.com/ctrbench/ctrbench/internal/analysis"

// AdviceOptions is the tolerance and services of a co-location campaign's
// placement advice.
type AdviceOptions struct{}

// AdviceView is the advice as the page shows it.
type AdviceView struct{}

func advice(rows []analysis.Row, o AdviceOptions) (AdviceView, bool, error) {
	return AdviceView{}, false, nil
}
