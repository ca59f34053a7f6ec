package kafka

import (
	"fmt"
	"strconv"
)

// The environment variables of Security, as the herald binary reads them
// beside its flags (herald relay --help names both); a service embedding
// herald may read the same ones with SecurityFromEnv.
const (
	EnvTLS              = "HERALD_KAFKA_TLS"
	EnvTLSCAFile        = "HERALD_KAFKA_TLS_CA_FILE"
	EnvTLSCertFile      = "HERALD_KAFKA_TLS_CERT_FILE"
	EnvTLSKeyFile       = "HERALD_KAFKA_TLS_KEY_FILE"
	EnvTLSServerName    = "HERALD_KAFKA_TLS_SERVER_NAME"
	EnvSASLMechanism    = "HERALD_KAFKA_SASL_MECHANISM"
	EnvSASLUsername     = "HERALD_KAFKA_SASL_USERNAME"
	EnvSASLPasswordFile = "HERALD_KAFKA_SASL_PASSWORD_FILE"
	// EnvSASLPassword has no flag: a password on a command line is in
	// every process list.
	EnvSASLPassword = "HERALD_KAFKA_SASL_PASSWORD"
)

// SecurityFromEnv reads Kafka's security settings with getenv (os.Getenv
// in a binary); an invalid value is an error naming its variable. The
// result is not validated: Security.Options does that, naming the fields.
func SecurityFromEnv(getenv func(string) string) (Security, error) {
	s := Security{
		CAFile: getenv(EnvTLSCAFile), CertFile: getenv(EnvTLSCertFile), KeyFile: getenv(EnvTLSKeyFile),
		ServerName: getenv(EnvTLSServerName), SASLMechanism: getenv(EnvSASLMechanism),
		SASLUsername: getenv(EnvSASLUsername), SASLPassword: getenv(EnvSASLPassword),
		SASLPasswordFile: getenv(EnvSASLPasswordFile),
	}
	if v := getenv(EnvTLS); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return Security{}, fmt.Errorf("%s=%q: want true or false", EnvTLS, v)
		}
		s.TLS = on
	}
	return s, nil
}

// SecurityEnv returns the NAME=VALUE entries that give s to a child
// process (which reads them with SecurityFromEnv, or as herald's flags).
func SecurityEnv(s Security) []string {
	var env []string
	add := func(name, v string) {
		if v != "" {
			env = append(env, name+"="+v)
		}
	}
	if s.TLS {
		add(EnvTLS, "true")
	}
	add(EnvTLSCAFile, s.CAFile)
	add(EnvTLSCertFile, s.CertFile)
	add(EnvTLSKeyFile, s.KeyFile)
	add(EnvTLSServerName, s.ServerName)
	add(EnvSASLMechanism, s.SASLMechanism)
	add(EnvSASLUsername, s.SASLUsername)
	add(EnvSASLPassword, s.SASLPassword)
	add(EnvSASLPasswordFile, s.SASLPasswordFile)
	return env
}
