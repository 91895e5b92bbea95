package testutil

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// SQLite3Lock holds the write lock of the SQLite file at path as a user's
// sqlite3 shell left in a transaction does (BEGIN IMMEDIATE), from the
// moment it returns until release, which commits and waits for the shell
// to end (also at the test's end). make setup installs sqlite3.
func SQLite3Lock(t *testing.T, path string) (pid int, release func()) {
	t.Helper()
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatal("no sqlite3 to hold the lock with: make setup installs it")
	}
	cmd := exec.Command(sqlite3, path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, "BEGIN IMMEDIATE;\nSELECT 'held';")
	if line, err := bufio.NewReader(stdout).ReadString('\n'); strings.TrimSpace(line) != "held" {
		_ = cmd.Process.Kill()
		t.Fatalf("sqlite3 did not take the lock: %q %v", line, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			fmt.Fprintln(stdin, "COMMIT;")
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Errorf("sqlite3: %v", err)
			}
		})
	}
	t.Cleanup(release)
	return cmd.Process.Pid, release
}
