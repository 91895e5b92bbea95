package workload

import "time"

// Work estimates how long a run takes whose time no parameter gives, from
// the work its parameters ask at rates the workload states — with its
// duration parameter, where work before or after the measured time adds
// to it. It is for the dry run's estimate, never for a measurement.
type Work struct {
	// Basis says in words what is counted and at which rates, e.g.
	// "(2/3·n³ + 2·n²)·repeat flops at 25 GFLOPS a thread".
	Basis string
	// Time is one run with these (resolved) parameters on an instance
	// that may use cpus CPUs, what a thread count of auto or 0 stands for;
	// false when the duration parameter gives it after all (a count of
	// flows or a time, whichever the parameters ask).
	Time func(p Values, cpus int) (time.Duration, bool)
}

// RunTime is how long one run of a workload takes, and how that is known.
type RunTime struct {
	Time time.Duration
	// Basis is "" when its parameters give the time (a duration, or
	// Measures), else the Work it was estimated from.
	Basis string
}

// RunTime is how long one run of the workload takes with params
// (resolved, defaults filled) on an instance that may use cpus CPUs: its
// Work's estimate where it gives one, else Measures' answer, else its
// duration parameter; false when none says (a user's command). The dry
// run's estimate adds these up.
func (s *Spec) RunTime(params map[string]string, cpus int) (RunTime, bool) {
	if s.Trial.Work != nil {
		if d, ok := s.Trial.Work.Time(Values(params), max(cpus, 1)); ok {
			return RunTime{Time: d, Basis: s.Trial.Work.Basis}, true
		}
	}
	if s.Trial.Measures != nil {
		d, ok := s.Trial.Measures(params)
		return RunTime{Time: d}, ok
	}
	d, err := time.ParseDuration(params["duration"])
	return RunTime{Time: d}, err == nil && d > 0
}
