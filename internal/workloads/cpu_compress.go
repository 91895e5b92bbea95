package workloads

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ctrbench/ctrbench/internal/result"
	"github.com/ctrbench/ctrbench/internal/workload"
)

var pbzip2Tool = workload.Tool{Binary: "pbzip2", Package: "pbzip2"}

func init() {
	workload.Register(&workload.Spec{
		Type:    "cpu.compress",
		Summary: "pbzip2 compressing a generated English-like text corpus (S3's CPU test, which used the 100 MB enwik8)",
		Params: []workload.Param{
			workload.P("size", workload.Size, "100MB", "bytes of text to compress, generated untimed in the data directory; the same size gives the same bytes everywhere").Range(1e6, 1<<36),
			workload.P("threads", workload.Int, "0", "compression threads (-p); 0 = every CPU the agent may run on").Range(0, 1024),
			workload.P("level", workload.Int, "9", "bzip2 block size in 100 kB (-1 … -9)").Range(1, 9),
		},
		Metrics: []workload.Metric{
			{Name: "seconds", Unit: "s", Better: result.Lower, Doc: "wall time of the pbzip2 process, corpus in, compressed file out"},
			{Name: "throughput", Unit: "MB/s", Better: result.Higher, Doc: "corpus bytes ÷ seconds (MB = 10^6 bytes)"},
			{Name: "ratio", Unit: "ratio", Better: result.Higher, Doc: "corpus bytes ÷ compressed bytes: a property of the corpus and level, the same on every platform; a check, not a score"},
		},
		Tools: []workload.Tool{pbzip2Tool},
		Run:   map[string]workload.RunFunc{workload.Main: runCompress},
		Smoke: map[string]string{"size": "8MB"},
		Trial: workload.Trial{
			Work: &workload.Work{
				Basis: fmt.Sprintf("size bytes generated at %g MB/s, compressed at %g MB/s and decompressed at %g MB/s a thread, threads 0 as the instance's CPUs",
					corpusRate/1e6, compressRate/1e6, decompressRate/1e6),
				Time: compressTime,
			},
		},
	})
}

// compressTime is the dry run's estimate of a trial on an instance that
// may use cpus CPUs (threads: 0): the corpus written, compressed,
// decompressed and compared.
func compressTime(p workload.Values, cpus int) (time.Duration, bool) {
	size, threads := float64(p.Int("size")), float64(p.Int("threads"))
	if threads == 0 {
		threads = float64(cpus)
	}
	s := size/corpusRate + size/(compressRate*threads) + size/(decompressRate*threads)
	return time.Duration(s * float64(time.Second)), true
}

// The corpus is word-like text: sentences of words drawn from a fixed
// vocabulary with Zipf frequencies (the k-th most common word about 1/k as
// frequent, as in English), short words common and long words rare, letters
// in English proportions, recurring word pairs, with commas, capitals,
// numbers and paragraphs.
// bzip2 compresses it about as well as English prose (enwik8: 3.5×).
// Everything is integer arithmetic on a fixed-seed splitmix64, so the bytes
// are the same on every machine, architecture and Go version; a test pins
// their hash.
const (
	corpusSeed      = 0x5eed_c0de_2017_0003
	corpusWords     = 16384
	corpusFollowers = 4 // each word's usual successors: phrases recur, as in prose
)

type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// below returns a number in [0, n).
func (s *splitmix) below(n uint64) uint64 { hi, _ := bits.Mul64(s.next(), n); return hi }

// letterCum is the cumulative English letter frequency (per mille) of a…z.
var letterCum = func() []uint64 {
	freq := []uint64{82, 15, 28, 43, 127, 22, 20, 61, 70, 2, 8, 40, 24, 67, 75, 19, 1, 60, 63, 91, 28, 10, 24, 2, 20, 1}
	cum := make([]uint64, len(freq))
	var t uint64
	for i, f := range freq {
		t += f
		cum[i] = t
	}
	return cum
}()

func pickCum(cum []uint64, rng *splitmix) int {
	x := rng.below(cum[len(cum)-1])
	return sort.Search(len(cum), func(i int) bool { return cum[i] > x })
}

type corpus struct {
	rng    splitmix
	words  [][]byte
	cum    []uint64 // Zipf–Mandelbrot weights 2^32/(rank+3), cumulative
	follow [][corpusFollowers]int32
	prev   int
}

func newCorpus() *corpus {
	c := &corpus{rng: splitmix(corpusSeed), words: make([][]byte, corpusWords), cum: make([]uint64, corpusWords)}
	var t uint64
	for i := range c.words {
		n := 1 + int(c.rng.below(4)) + bits.Len(uint(i))/3
		w := make([]byte, n)
		for j := range w {
			w[j] = 'a' + byte(pickCum(letterCum, &c.rng))
		}
		c.words[i] = w
		t += (1 << 32) / uint64(i+3)
		c.cum[i] = t
	}
	c.follow = make([][corpusFollowers]int32, corpusWords)
	for i := range c.follow {
		for j := range c.follow[i] {
			c.follow[i][j] = int32(pickCum(c.cum, &c.rng))
		}
	}
	return c
}

// word picks the next word: three times in five one of the previous
// word's usual successors, otherwise any word by frequency.
func (c *corpus) word() []byte {
	if c.rng.below(5) < 3 {
		c.prev = int(c.follow[c.prev][c.rng.below(corpusFollowers)])
	} else {
		c.prev = pickCum(c.cum, &c.rng)
	}
	return c.words[c.prev]
}

// sentence appends one sentence to b.
func (c *corpus) sentence(b []byte) []byte {
	n := 4 + int(c.rng.below(18))
	for i := 0; i < n; i++ {
		if i > 0 {
			if c.rng.below(12) == 0 {
				b = append(b, ',')
			}
			b = append(b, ' ')
		}
		if c.rng.below(60) == 0 {
			b = strconv.AppendUint(b, c.rng.below(2100), 10)
			continue
		}
		w := c.word()
		if i == 0 {
			b = append(b, w[0]-'a'+'A')
			b = append(b, w[1:]...)
		} else {
			b = append(b, w...)
		}
	}
	switch c.rng.below(20) {
	case 0:
		b = append(b, '?')
	case 1:
		b = append(b, '!')
	default:
		b = append(b, '.')
	}
	if c.rng.below(7) == 0 {
		return append(b, '\n', '\n')
	}
	return append(b, ' ')
}

// writeCorpus writes exactly size bytes of corpus to w.
func writeCorpus(w io.Writer, size int64) error {
	c := newCorpus()
	buf := make([]byte, 0, 1<<16)
	for size > 0 {
		buf = buf[:0]
		for len(buf) < 1<<15 {
			buf = c.sentence(buf)
		}
		n := min(int64(len(buf)), size)
		if _, err := w.Write(buf[:n]); err != nil {
			return err
		}
		size -= n
	}
	return nil
}

// makeCorpus writes the corpus file and returns its SHA-256.
func makeCorpus(path string, size int64) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := os.Create(path)
	if err != nil {
		return sum, err
	}
	h := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	if err := writeCorpus(bw, size); err != nil {
		f.Close()
		return sum, fmt.Errorf("writing the corpus: %w", err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return sum, fmt.Errorf("writing the corpus: %w", err)
	}
	if err := f.Close(); err != nil {
		return sum, fmt.Errorf("writing the corpus: %w", err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

func runCompress(ctx context.Context, p workload.Values, env workload.Env) ([]result.Observation, string, error) {
	path, err := lookTool(pbzip2Tool)
	if err != nil {
		return nil, "", err
	}
	dir, err := dataDir(env)
	if err != nil {
		return nil, "", err
	}
	defer emptyDataDir(dir)
	size := p.Int("size")
	in := filepath.Join(dir, "corpus.txt")
	want, err := makeCorpus(in, size)
	if err != nil {
		return nil, "", err
	}
	threads := int(p.Int("threads"))
	if threads == 0 {
		threads = runtime.NumCPU() // the affinity mask: a cpuset limit counts, a CFS quota does not
	}
	args := []string{"-k", "-f", "-p" + strconv.Itoa(threads), "-" + p.String("level"), in}
	start := time.Now()
	_, raw, err := runTool(ctx, path, args...)
	seconds := time.Since(start).Seconds()
	if err != nil {
		return nil, raw, err
	}
	st, err := os.Stat(in + ".bz2")
	if err != nil {
		return nil, raw, fmt.Errorf("pbzip2 left no compressed file: %w", err)
	}
	if err := checkDecompressed(ctx, path, in+".bz2", threads, want, size); err != nil {
		return nil, raw, err
	}
	ratio := float64(size) / float64(st.Size())
	if ratio < 2 || ratio > 8 {
		return nil, raw, fmt.Errorf("compression ratio %.2f is outside [2, 8]: not the corpus ctrbench generates, or pbzip2 misbehaved", ratio)
	}
	return []result.Observation{
		{Metric: "seconds", Value: seconds, Unit: "s", Better: result.Lower},
		{Metric: "throughput", Value: float64(size) / 1e6 / seconds, Unit: "MB/s", Better: result.Higher},
		{Metric: "ratio", Value: ratio, Unit: "ratio", Better: result.Higher},
	}, "", nil
}

// checkDecompressed decompresses (untimed) and compares length and SHA-256
// with the corpus: a compressor that skipped or mangled work fails here.
func checkDecompressed(ctx context.Context, path, bz2 string, threads int, want [sha256.Size]byte, size int64) error {
	h := sha256.New()
	cw := &countWriter{w: h}
	var errb strings.Builder
	cmd := toolCommand(ctx, path, "-d", "-c", "-p"+strconv.Itoa(threads), bz2)
	cmd.Stdout, cmd.Stderr = cw, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("validation: decompressing the output: %w: %s", err, lastLine(errb.String()))
	}
	if cw.n != size {
		return fmt.Errorf("validation: the output decompresses to %d bytes, the corpus has %d", cw.n, size)
	}
	var got [sha256.Size]byte
	copy(got[:], h.Sum(nil))
	if got != want {
		return fmt.Errorf("validation: the output decompresses to bytes that differ from the corpus (sha256 %x, want %x)", got[:8], want[:8])
	}
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
