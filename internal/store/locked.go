package store

import (
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"

	"github.com/ctrbench/ctrbench/internal/lockholder"
)

// SQLite's primary result codes that say what stopped a write.
const (
	sqliteBusy   = 5  // SQLITE_BUSY: another connection holds the lock
	sqliteLocked = 6  // SQLITE_LOCKED: a conflict within one connection's cache
	sqliteFull   = 13 // SQLITE_FULL: the database or its disk is full
)

// walWriteLock is the byte of the -shm file whose POSIX write lock is the
// write lock of a database in WAL mode (SQLite's WAL_WRITE_LOCK, at
// 120 + 0).
const walWriteLock = 120

// LockedError is a write that found the results file locked by another
// process (SQLITE_BUSY or SQLITE_LOCKED) and waited as long as it was
// allowed to. Nothing of the write is in the file; the same write can be
// made again once the holder lets go.
type LockedError struct {
	Path string
	// Holder says who holds the lock, as far as the system tells:
	// "pid 4242 (sqlite3) holds its write lock", or why it cannot say.
	Holder string
	Err    error // SQLite's
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("the results file %s is locked by another process (%s)", e.Path, e.Holder)
}

func (e *LockedError) Unwrap() error { return e.Err }

// IsFull says whether err is SQLite's "database or disk is full"
// (SQLITE_FULL): the disk that holds the file has no room for a write.
func IsFull(err error) bool { return code(err) == sqliteFull }

// code is the primary result code of the SQLite error in err, 0 if none.
func code(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// locked makes an error of a write that found the file locked a
// *LockedError naming the holder, wrapping err; other errors are err.
func (d *DB) locked(err error) error {
	var le *LockedError
	if c := code(err); c != sqliteBusy && c != sqliteLocked || errors.As(err, &le) {
		return err
	}
	return &LockedError{Path: d.path, Holder: holderOf(d.path), Err: err}
}

// holderOf says who holds the write lock of the database at path: the
// process that holds the WAL write lock (a POSIX lock on a byte of its
// -shm file), else those holding a write lock on one of its files (the
// database itself, for a holder in exclusive locking mode), else the
// processes that have one of them open.
func holderOf(path string) string {
	files := []string{path, path + "-wal", path + "-shm"}
	locks, _ := lockholder.Locks(files...)
	var writer, lockers []int
	for _, l := range locks {
		if !l.Write || l.PID <= 0 {
			continue
		}
		if l.Path == path+"-shm" && l.Covers(walWriteLock) {
			writer = appendNew(writer, l.PID)
		} else {
			lockers = appendNew(lockers, l.PID)
		}
	}
	switch {
	case len(writer) > 0:
		return names(writer) + " holds its write lock"
	case len(lockers) > 0:
		return names(lockers) + " holds a lock on it"
	}
	if open := lockholder.Openers(files...); len(open) > 0 {
		return "no lock holder found in /proc/locks; open in " + names(open)
	}
	return "no process of this machine was found holding it: it may be another container's or machine's"
}

func appendNew(pids []int, pid int) []int {
	for _, p := range pids {
		if p == pid {
			return pids
		}
	}
	return append(pids, pid)
}

// names is "pid 4242 (sqlite3)", or several joined with ", ".
func names(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = lockholder.Process(p)
	}
	return strings.Join(s, ", ")
}
