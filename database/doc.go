// Package database turns a database address into a connection pool and
// its herald dialect, in one place for every command of the herald binary
// and for the examples: a postgres:// or postgresql:// URL is PostgreSQL, a
// mysql:// (or mariadb://) URL is MySQL/MariaDB written as a URL, anything
// else a MySQL/MariaDB DSN in the driver's form. Every address must name
// its database: herald's tables live in one.
//
// Start at Open, which returns the pool and its store.Dialect; Check and
// Normalize read an address without connecting, ConnOptions keeps TLS
// and the password out of it (ConnOptionsFromEnv reads them from
// HERALD_MYSQL_* variables), and Rebind turns a query's ? placeholders
// into PostgreSQL's $1.
package database
