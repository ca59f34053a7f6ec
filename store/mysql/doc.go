// Package mysql is herald's storage for MySQL 8.0+ and MariaDB 10.6+: opening
// connections that agree with Go on time (UTC), and the queries the relay,
// the inbox and the operator tools run.
package mysql
