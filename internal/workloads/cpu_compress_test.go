package workloads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The corpus is part of the benchmark: changing the generator changes every
// cpu.compress result, so its bytes are pinned. If this fails after an
// intended change, say so in the change log: results before and after are
// not comparable.
const corpusSHA256of1MB = "54784c1ab6dec08882e5313ac9e9174543a1b087cd1217374d4cc367e19999e6"

func corpusBytes(t *testing.T, size int64) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := writeCorpus(&b, size); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCorpusIsDeterministic(t *testing.T) {
	a, b := corpusBytes(t, 3_000_001), corpusBytes(t, 3_000_001)
	if len(a) != 3_000_001 {
		t.Fatalf("corpus has %d bytes, want 3000001", len(a))
	}
	if sha256.Sum256(a) != sha256.Sum256(b) {
		t.Fatal("two generations of the corpus differ")
	}
	// A shorter corpus is a prefix of a longer one.
	if small := corpusBytes(t, 1_000_000); !bytes.Equal(small, a[:1_000_000]) {
		t.Error("the 1 MB corpus is not the prefix of the 3 MB one")
	}
	sum := sha256.Sum256(a[:1_000_000])
	if got := hex.EncodeToString(sum[:]); got != corpusSHA256of1MB {
		t.Errorf("the first 1 MB of the corpus hashes to %s, pinned %s", got, corpusSHA256of1MB)
	}
	// Word-like text: letters, spaces, punctuation, digits, newlines.
	for i, c := range a[:100_000] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(" ,.?!\n", c) >= 0) {
			t.Fatalf("byte %d is %q", i, c)
		}
	}
	if words := len(bytes.Fields(a)); words < len(a)/9 || words > len(a)/4 {
		t.Errorf("%d words in %d bytes: not word-like", words, len(a))
	}
}

func TestCompressRuns(t *testing.T) {
	if _, err := exec.LookPath("pbzip2"); err != nil {
		t.Skip("pbzip2 not installed (scripts/setup.sh installs it)")
	}
	p := values(t, "cpu.compress", map[string]string{"size": "8MB"})
	obs, raw, err := runCompress(context.Background(), p, toolEnv(t))
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	m := obsMap(obs)
	t.Logf("%v", m)
	// bzip2 -9 on English prose (enwik8) gives 3.45; the corpus is built to match.
	if m["ratio"] < 3.2 || m["ratio"] > 3.8 {
		t.Errorf("ratio %.2f, want about 3.5", m["ratio"])
	}
	if m["seconds"] <= 0 || !near(m["throughput"], 8/m["seconds"], 1e-9) || m["throughput"] < 0.5 || m["throughput"] > 2000 {
		t.Errorf("implausible %v", m)
	}
}

func TestCompressDetectsBadOutput(t *testing.T) {
	path, err := exec.LookPath("pbzip2")
	if err != nil {
		t.Skip("pbzip2 not installed (scripts/setup.sh installs it)")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "corpus.txt")
	sum, err := makeCorpus(in, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(path, "-k", "-f", "-p2", "-9", in).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	bz2 := in + ".bz2"
	if err := checkDecompressed(context.Background(), path, bz2, 2, sum, 1_000_000); err != nil {
		t.Fatalf("the real output fails the check: %v", err)
	}
	other := sum
	other[0] ^= 1
	if err := checkDecompressed(context.Background(), path, bz2, 2, other, 1_000_000); err == nil || !strings.Contains(err.Error(), "differ from the corpus") {
		t.Errorf("wrong hash: got %v", err)
	}
	if err := checkDecompressed(context.Background(), path, bz2, 2, sum, 999_999); err == nil || !strings.Contains(err.Error(), "decompresses to 1000000 bytes") {
		t.Errorf("wrong length: got %v", err)
	}
	if err := os.WriteFile(bz2, []byte("BZh9 this is not bzip2 data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkDecompressed(context.Background(), path, bz2, 2, sum, 1_000_000); err == nil || !strings.Contains(err.Error(), "decompressing the output") {
		t.Errorf("corrupt file: got %v", err)
	}
}
