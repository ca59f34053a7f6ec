package binlog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/google/uuid"
)

// kind says what a Position holds.
type kind uint8

const (
	kindNone kind = iota
	kindMariaDB
	kindMySQL
	kindFile
)

// Prefixes of Position's text, one per kind.
const (
	prefixMariaDB = "mariadb-gtid:"
	prefixMySQL   = "mysql-gtid:"
	prefixFile    = "file:"
)

// Position is a place in the binlog, between two transactions: a GTID
// position when the server has GTIDs (MariaDB's one GTID per replication
// domain, or MySQL's executed GTID set), else a binlog file and offset. A
// GTID position survives a fail-over to another server of the same
// replication topology; a file position names one server's files.
//
// Its text (String) is stable and round-trips through ParsePosition:
//
//	mariadb-gtid:0-1-236421,1-2-7
//	mysql-gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5
//	file:mariadb-bin.000013:27137709
//
// The zero Position is no position at all (IsZero).
type Position struct {
	kind kind
	// gtid is the canonical text of the GTID position (kindMariaDB,
	// kindMySQL).
	gtid string
	// file and offset are the binlog coordinates (kindFile).
	file   string
	offset uint32
}

// String returns the position's stable text ("" for the zero Position).
func (p Position) String() string {
	switch p.kind {
	case kindMariaDB:
		return prefixMariaDB + p.gtid
	case kindMySQL:
		return prefixMySQL + p.gtid
	case kindFile:
		return prefixFile + p.file + ":" + strconv.FormatUint(uint64(p.offset), 10)
	}
	return ""
}

// IsZero reports whether p is the zero Position.
func (p Position) IsZero() bool { return p.kind == kindNone }

// IsGTID reports whether p is a GTID position (MariaDB's or MySQL's).
func (p Position) IsGTID() bool { return p.kind == kindMariaDB || p.kind == kindMySQL }

// ParsePosition parses the text of Position.String. The error names what is
// wrong without guessing.
func ParsePosition(s string) (Position, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, prefixMariaDB):
		st, err := parseMariaDBGTIDs(strings.TrimPrefix(s, prefixMariaDB))
		if err != nil {
			return Position{}, fmt.Errorf("binlog position %q: %w", s, err)
		}
		return Position{kind: kindMariaDB, gtid: st.String()}, nil
	case strings.HasPrefix(s, prefixMySQL):
		set, err := parseMySQLGTIDs(strings.TrimPrefix(s, prefixMySQL))
		if err != nil {
			return Position{}, fmt.Errorf("binlog position %q: %w", s, err)
		}
		return Position{kind: kindMySQL, gtid: set.String()}, nil
	case strings.HasPrefix(s, prefixFile):
		rest := strings.TrimPrefix(s, prefixFile)
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return Position{}, fmt.Errorf("binlog position %q: want file:<binlog file>:<offset>", s)
		}
		return filePosition(rest[:i], rest[i+1:], s)
	}
	return Position{}, fmt.Errorf("binlog position %q: want %s..., %s... or %s...", s, prefixMariaDB, prefixMySQL, prefixFile)
}

func filePosition(file, offset, text string) (Position, error) {
	if strings.ContainsAny(file, "/\\ \t\n") {
		return Position{}, fmt.Errorf("binlog position %q: binlog file name %q is not a bare file name", text, file)
	}
	off, err := strconv.ParseUint(offset, 10, 32)
	if err != nil {
		return Position{}, fmt.Errorf("binlog position %q: offset %q is not a number up to %d", text, offset, uint32(1<<32-1))
	}
	if off < 4 {
		// Every binlog file starts with a 4-byte magic number.
		return Position{}, fmt.Errorf("binlog position %q: offset must be at least 4, got %d", text, off)
	}
	return Position{kind: kindFile, file: file, offset: uint32(off)}, nil
}

// mariadbGTID is one MariaDB GTID: domain-server-sequence.
type mariadbGTID struct {
	domain, server uint32
	seq            uint64
}

func (g mariadbGTID) String() string {
	return strconv.FormatUint(uint64(g.domain), 10) + "-" + strconv.FormatUint(uint64(g.server), 10) + "-" +
		strconv.FormatUint(g.seq, 10)
}

// mariadbState is a MariaDB GTID position: the last GTID of each
// replication domain, as @@gtid_binlog_pos reads.
type mariadbState []mariadbGTID

// parseMariaDBGTIDs parses "d-s-n[,d-s-n...]" with one GTID per domain.
func parseMariaDBGTIDs(s string) (mariadbState, error) {
	if strings.TrimSpace(s) == "" {
		// An empty MariaDB position means "from the first binlog on": never
		// what a resuming stream wants, so it is refused rather than taken.
		return nil, errors.New("empty GTID position")
	}
	var st mariadbState
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		f := strings.Split(part, "-")
		if len(f) != 3 {
			return nil, fmt.Errorf("MariaDB GTID %q: want domain-server-sequence", part)
		}
		d, errD := strconv.ParseUint(f[0], 10, 32)
		sv, errS := strconv.ParseUint(f[1], 10, 32)
		n, errN := strconv.ParseUint(f[2], 10, 64)
		if err := errors.Join(errD, errS, errN); err != nil {
			return nil, fmt.Errorf("MariaDB GTID %q: want three unsigned numbers", part)
		}
		g := mariadbGTID{domain: uint32(d), server: uint32(sv), seq: n}
		if slices.ContainsFunc(st, func(o mariadbGTID) bool { return o.domain == g.domain }) {
			return nil, fmt.Errorf("MariaDB GTID %q: domain %d appears twice", part, g.domain)
		}
		st = append(st, g)
	}
	slices.SortFunc(st, func(a, b mariadbGTID) int { return cmp.Compare(a.domain, b.domain) })
	return st, nil
}

// add records g as its domain's last GTID.
func (st *mariadbState) add(g mariadbGTID) {
	for i := range *st {
		if (*st)[i].domain == g.domain {
			(*st)[i] = g
			return
		}
	}
	*st = append(*st, g)
	slices.SortFunc(*st, func(a, b mariadbGTID) int { return cmp.Compare(a.domain, b.domain) })
}

func (st mariadbState) String() string {
	var b strings.Builder
	for i, g := range st {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(g.String())
	}
	return b.String()
}

// parseMySQLGTIDs parses a MySQL GTID set (uuid:interval[:interval...],...).
func parseMySQLGTIDs(s string) (*gomysql.MysqlGTIDSet, error) {
	s = strings.Join(strings.Fields(s), "") // @@gtid_executed breaks lines after commas
	if s == "" {
		return nil, errors.New("empty GTID set")
	}
	set, err := gomysql.ParseMysqlGTIDSet(s)
	if err != nil {
		return nil, fmt.Errorf("MySQL GTID set: %v", err)
	}
	ms := set.(*gomysql.MysqlGTIDSet)
	if _, ok := (*ms)[uuid.Nil]; ok {
		return nil, errors.New("MySQL GTID set: nil server uuid")
	}
	return ms, nil
}

// Reached reports whether p is at or past target: every transaction before
// target is before p. Both must be of one kind: MariaDB GTID positions
// compare by domain (p has each of target's domains at a sequence number
// at least target's), MySQL GTID sets by inclusion, file positions by file
// (the server numbers its binlog files in order) and offset.
func (p Position) Reached(target Position) (bool, error) {
	if p.kind != target.kind {
		return false, fmt.Errorf("binlog: cannot compare %s with %s", p, target)
	}
	switch p.kind {
	case kindMariaDB:
		have, err := parseMariaDBGTIDs(p.gtid)
		if err != nil {
			return false, err
		}
		want, err := parseMariaDBGTIDs(target.gtid)
		if err != nil {
			return false, err
		}
		for _, w := range want {
			i := slices.IndexFunc(have, func(h mariadbGTID) bool { return h.domain == w.domain })
			if i < 0 || have[i].seq < w.seq {
				return false, nil
			}
		}
		return true, nil
	case kindMySQL:
		have, err := parseMySQLGTIDs(p.gtid)
		if err != nil {
			return false, err
		}
		want, err := parseMySQLGTIDs(target.gtid)
		if err != nil {
			return false, err
		}
		return have.Contain(want), nil
	case kindFile:
		if c := cmp.Compare(len(p.file), len(target.file)); c != 0 {
			return c > 0, nil // mariadb-bin.999999 is followed by mariadb-bin.1000000
		}
		if c := cmp.Compare(p.file, target.file); c != 0 {
			return c > 0, nil
		}
		return p.offset >= target.offset, nil
	}
	return false, errors.New("binlog: no position to compare")
}
