package workloads

import (
	"bufio"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// sysbench 1.0 has no machine-readable report, so its text is parsed
// strictly: a report is sections ("General statistics:" at column 0)
// holding indented "key: value" lines, optionally preceded by the
// latency histogram that --histogram=on prints. A key that is missing or
// a value that is not a number fails the trial; nothing is guessed.
type sbReport struct {
	values map[string]string // "section/key" -> value as printed
	hist   []sbBucket        // in increasing latency order
	lines  []string          // every line, for checks such as "Doing random r/w test"
}

// sbBucket is one non-empty bucket of sysbench's latency histogram: 1024
// logarithmic buckets from 0.001 ms to 100 s, each about 1.8% wide,
// printed to 0.001 ms.
type sbBucket struct {
	ms    float64
	count uint64
}

var sbHistLine = regexp.MustCompile(`^\s*([0-9]+\.[0-9]+) \|\**\s+([0-9]+)$`)

func parseSysbench(out string) *sbReport {
	r := &sbReport{values: map[string]string{}}
	section := ""
	inHist := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t\r")
		r.lines = append(r.lines, line)
		if strings.HasPrefix(line, "Latency histogram") {
			inHist = true
			continue
		}
		if inHist {
			if m := sbHistLine.FindStringSubmatch(line); m != nil {
				ms, err1 := strconv.ParseFloat(m[1], 64)
				n, err2 := strconv.ParseUint(m[2], 10, 64)
				if err1 == nil && err2 == nil {
					r.hist = append(r.hist, sbBucket{ms, n})
				}
				continue
			}
			if strings.Contains(line, "distribution") {
				continue
			}
			inHist = false
		}
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			if strings.HasSuffix(line, ":") {
				section = strings.TrimSuffix(line, ":")
			} else {
				section = ""
			}
			continue
		}
		if section == "" {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			r.values[section+"/"+strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return r
}

// num returns the number printed under section for key, with an optional
// unit suffix ("s" after total time) removed.
func (r *sbReport) num(section, key, suffix string) (float64, error) {
	v, ok := r.values[section+"/"+key]
	if !ok {
		return 0, fmt.Errorf("sysbench output has no %q in section %q", key, section)
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, suffix), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0, fmt.Errorf("sysbench %s %q is %q, not a number", section, key, v)
	}
	return f, nil
}

// has reports whether a line equal to s (ignoring surrounding space) was printed.
func (r *sbReport) has(s string) bool {
	for _, l := range r.lines {
		if strings.TrimSpace(l) == s {
			return true
		}
	}
	return false
}

// sbGeneral returns total time (s) and total events, both required to be
// positive.
func (r *sbReport) general() (seconds, events float64, err error) {
	if seconds, err = r.num("General statistics", "total time", "s"); err != nil {
		return 0, 0, err
	}
	if events, err = r.num("General statistics", "total number of events", ""); err != nil {
		return 0, 0, err
	}
	if err := positive("sysbench total time", seconds); err != nil {
		return 0, 0, err
	}
	if events <= 0 {
		return 0, 0, fmt.Errorf("sysbench completed no event (total number of events: 0)")
	}
	return seconds, events, nil
}

// latency returns the mean and 95th percentile latency in ms.
//
// The mean is sum/events: the printed "avg" has two decimals (0.00 for
// anything under 5 µs), the sum is just as precise but far larger. The
// 95th percentile is recomputed from the histogram the way sysbench does
// (the first bucket where the cumulative count reaches
// floor(n·0.95 + 0.5)), which gives the same bucket sysbench prints but to
// 0.001 ms instead of 0.01 ms. Both are checked against the printed
// values, and the histogram must account for every event.
func (r *sbReport) latency(events float64) (avg, p95 float64, err error) {
	sum, err := r.num("Latency (ms)", "sum", "")
	if err != nil {
		return 0, 0, err
	}
	printedAvg, err := r.num("Latency (ms)", "avg", "")
	if err != nil {
		return 0, 0, err
	}
	printedP95, err := r.num("Latency (ms)", "95th percentile", "")
	if err != nil {
		return 0, 0, err
	}
	avg = sum / events
	if !agrees(avg, printedAvg, 0.01, 0.0051) {
		return 0, 0, fmt.Errorf("sysbench latency sum %.2f ms over %.0f events is %.4f ms, but it prints avg %.2f", sum, events, avg, printedAvg)
	}
	if len(r.hist) == 0 {
		return 0, 0, fmt.Errorf("sysbench printed no latency histogram")
	}
	var n uint64
	for _, b := range r.hist {
		n += b.count
	}
	if !agrees(float64(n), events, 0.005, 0) {
		return 0, 0, fmt.Errorf("sysbench latency histogram holds %d events, the report %.0f", n, events)
	}
	target := uint64(math.Floor(float64(n)*0.95 + 0.5))
	var cum uint64
	p95 = r.hist[len(r.hist)-1].ms
	for _, b := range r.hist {
		cum += b.count
		if cum >= target {
			p95 = b.ms
			break
		}
	}
	if !agrees(p95, printedP95, 0.01, 0.0051) {
		return 0, 0, fmt.Errorf("95th percentile from the histogram is %.3f ms, sysbench prints %.2f", p95, printedP95)
	}
	if err := positive("mean latency", avg); err != nil {
		return 0, 0, fmt.Errorf("%w (latency sum %.2f ms)", err, sum)
	}
	return avg, p95, positive("95th percentile latency", p95)
}
