// Package config holds the error every herald Config's validation returns,
// so the CLI (which renames fields as flags) and callers branch on one type
// whatever the package. Each public package re-exports it as ConfigError.
//
// Start at Error; Errors collects several, and Leaves flattens a joined
// error into them.
package config
