package server

// Environment variables the warehouse binary reads.
const (
	// EnvAddr is the listen address. Defaults to 127.0.0.1:8081.
	EnvAddr = "HERALD_WAREHOUSE_ADDR"
	// EnvMySQLDSN is the warehouse's database (a postgres:// URL, or a
	// MySQL DSN). Defaults to HERALD_DATABASE_URL, then its alias
	// HERALD_MYSQL_DSN, then DSNDefault.
	EnvMySQLDSN = "HERALD_WAREHOUSE_MYSQL_DSN"
)

// DSNDefault is Env.DSN's default: the MariaDB of herald's local stack
// (`make up`).
const DSNDefault = "herald:herald@tcp(127.0.0.1:3306)/herald?parseTime=true&loc=UTC"

// Env is the binary's configuration, read from the environment.
type Env struct {
	Addr string
	DSN  string
}

// EnvFrom reads Env with getenv (os.Getenv in the binary).
func EnvFrom(getenv func(string) string) Env {
	e := Env{Addr: getenv(EnvAddr), DSN: getenv(EnvMySQLDSN)}
	if e.Addr == "" {
		e.Addr = AddrDefault
	}
	for _, name := range []string{"HERALD_DATABASE_URL", "HERALD_MYSQL_DSN"} {
		if e.DSN == "" {
			e.DSN = getenv(name)
		}
	}
	if e.DSN == "" {
		e.DSN = DSNDefault
	}
	return e
}
