package database

// The environment variables of ConnOptions, as the herald binary reads
// them beside its flags. They keep their MySQL names, as HERALD_MYSQL_DSN
// stays the alias of HERALD_DATABASE_URL; on PostgreSQL only the password
// ones apply (a PostgreSQL URL carries its own TLS settings).
const (
	EnvTLS           = "HERALD_MYSQL_TLS"
	EnvTLSCAFile     = "HERALD_MYSQL_TLS_CA_FILE"
	EnvTLSCertFile   = "HERALD_MYSQL_TLS_CERT_FILE"
	EnvTLSKeyFile    = "HERALD_MYSQL_TLS_KEY_FILE"
	EnvTLSServerName = "HERALD_MYSQL_TLS_SERVER_NAME"
	EnvPasswordFile  = "HERALD_MYSQL_PASSWORD_FILE"
	// EnvPassword has no flag: a password on a command line is in every
	// process list.
	EnvPassword = "HERALD_MYSQL_PASSWORD"
)

// ConnOptionsFromEnv reads the connection options with getenv (os.Getenv
// in a binary).
func ConnOptionsFromEnv(getenv func(string) string) ConnOptions {
	return ConnOptions{
		TLSMode: getenv(EnvTLS), TLSCAFile: getenv(EnvTLSCAFile), TLSCertFile: getenv(EnvTLSCertFile),
		TLSKeyFile: getenv(EnvTLSKeyFile), TLSServerName: getenv(EnvTLSServerName),
		Password: getenv(EnvPassword), PasswordFile: getenv(EnvPasswordFile),
	}
}

// ConnOptionsEnv returns the NAME=VALUE entries that give o to a child
// process (which reads them with ConnOptionsFromEnv, or as herald's
// flags).
func ConnOptionsEnv(o ConnOptions) []string {
	var env []string
	add := func(name, v string) {
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	add(EnvTLS, o.TLSMode)
	add(EnvTLSCAFile, o.TLSCAFile)
	add(EnvTLSCertFile, o.TLSCertFile)
	add(EnvTLSKeyFile, o.TLSKeyFile)
	add(EnvTLSServerName, o.TLSServerName)
	add(EnvPassword, o.Password)
	add(EnvPasswordFile, o.PasswordFile)
	return env
}
