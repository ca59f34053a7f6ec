package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/herald-outbox/herald/internal/config"
)

// SASL mechanisms Security accepts.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// Security is how a Kafka client proves who it is and checks who the
// brokers are: TLS with the system's or a given CA, a client certificate
// (mutual TLS) and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), with or
// without TLS. The zero value is a plaintext connection without
// authentication. Options turns it into franz-go options; every herald
// client that talks to Kafka takes them.
//
// The password never leaves Options: String, LogValue and GoString leave
// it out, so a Security can be logged or printed.
type Security struct {
	// TLS turns TLS on, checking the brokers' certificates against the
	// system's root CAs. CAFile, CertFile and ServerName turn it on too.
	// Defaults to false.
	TLS bool
	// CAFile is a PEM file of the CA certificates that sign the brokers'
	// certificates, used instead of the system roots. Defaults to "" (the
	// system roots).
	CAFile string
	// CertFile is a PEM file holding the client certificate (followed by
	// any intermediates), for brokers that require mutual TLS; KeyFile is
	// its unencrypted private key (PEM), possibly the same file. Both or
	// neither. They are read again at every new connection, so renewed
	// files take effect without a restart (replace a combined file
	// atomically with a rename). Defaults to "" (no client certificate).
	CertFile string
	// KeyFile is CertFile's private key. Defaults to "".
	KeyFile string
	// ServerName is the name the brokers' certificates must carry, when it
	// is not the host that is dialled (brokers reached through a tunnel or
	// by IP). Defaults to "" (the dialled host).
	ServerName string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (any case).
	// PLAIN sends the password as it is: use it over TLS only. Defaults to
	// "" (no SASL).
	SASLMechanism string
	// SASLUsername is the SASL user. Required with SASLMechanism.
	SASLUsername string
	// SASLPassword is the SASL password; give it or SASLPasswordFile with
	// SASLMechanism. Defaults to "".
	SASLPassword string
	// SASLPasswordFile is a file holding the SASL password (a trailing line
	// break is dropped). It is read again at every new connection, so a
	// rotated password takes effect without a restart. Defaults to "".
	SASLPasswordFile string
}

// Enabled says whether s asks for anything beyond plaintext without
// authentication.
func (s Security) Enabled() bool {
	return s.tlsOn() || s.SASLMechanism != ""
}

func (s Security) tlsOn() bool {
	return s.TLS || s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" || s.ServerName != ""
}

// Protocol is Kafka's name of the security protocol s speaks: PLAINTEXT,
// SSL, SASL_PLAINTEXT or SASL_SSL.
func (s Security) Protocol() string {
	switch {
	case s.SASLMechanism != "" && s.tlsOn():
		return "SASL_SSL"
	case s.SASLMechanism != "":
		return "SASL_PLAINTEXT"
	case s.tlsOn():
		return "SSL"
	}
	return "PLAINTEXT"
}

// Mechanism returns SASLMechanism in its canonical (upper) case.
func (s Security) Mechanism() string { return strings.ToUpper(strings.TrimSpace(s.SASLMechanism)) }

// Validate checks s without reading its files, reporting every invalid
// field at once; each error is a *ConfigError naming the field. Options
// calls it too.
func (s Security) Validate() error {
	var errs config.Errors
	bad := errs.Add
	if (s.CertFile == "") != (s.KeyFile == "") {
		if s.CertFile == "" {
			bad("CertFile", "required with KeyFile (a client certificate needs both)")
		} else {
			bad("KeyFile", "required with CertFile (a client certificate needs both)")
		}
	}
	switch mech := s.Mechanism(); mech {
	case "":
		if s.SASLUsername != "" || s.SASLPassword != "" || s.SASLPasswordFile != "" {
			bad("SASLMechanism", "required when a SASL username or password is given (want %s, %s or %s)",
				SASLPlain, SASLScramSHA256, SASLScramSHA512)
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if s.SASLUsername == "" {
			bad("SASLUsername", "required with SASL mechanism %s", mech)
		}
		switch {
		case s.SASLPassword != "" && s.SASLPasswordFile != "":
			bad("SASLPassword", "give the password or a password file, not both")
		case s.SASLPassword == "" && s.SASLPasswordFile == "":
			bad("SASLPasswordFile", "a password (or a file holding it) is required with SASL mechanism %s", mech)
		}
	default:
		bad("SASLMechanism", "unknown mechanism %q (want %s, %s or %s)", s.SASLMechanism,
			SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	return errs.Err()
}

// Options returns the franz-go options that make a client connect as s
// says. It reads every file s names, so a missing, unreadable or malformed
// CA, certificate, key or password file is an error here, naming the file
// and the problem (a *ConfigError), rather than a failed connection
// later. The zero Security returns no options.
func (s Security) Options() ([]kgo.Opt, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if s.tlsOn() {
		cfg, err := s.tlsConfig(time.Now())
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	if s.SASLMechanism != "" {
		if s.SASLPasswordFile != "" {
			if _, err := readPassword(s.SASLPasswordFile); err != nil {
				return nil, &ConfigError{Field: "SASLPasswordFile", Msg: err.Error()}
			}
		}
		opts = append(opts, kgo.SASL(s.mechanism()))
	}
	return opts, nil
}

// tlsConfig builds the TLS configuration, checking the files at now.
func (s Security) tlsConfig(now time.Time) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.ServerName}
	if s.CAFile != "" {
		pool, err := loadCAs(s.CAFile, now)
		if err != nil {
			return nil, &ConfigError{Field: "CAFile", Msg: err.Error()}
		}
		cfg.RootCAs = pool
	}
	if s.CertFile != "" {
		if _, err := loadClientCert(s.CertFile, s.KeyFile, now); err != nil {
			return nil, err
		}
		certFile, keyFile := s.CertFile, s.KeyFile
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := loadClientCert(certFile, keyFile, time.Now())
			if err != nil {
				return nil, &credentialsError{err}
			}
			return cert, nil
		}
	}
	return cfg, nil
}

// loadCAs reads a PEM bundle of CA certificates.
func loadCAs(file string, now time.Time) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fileError(file, err)
	}
	pool := x509.NewCertPool()
	n, expired := 0, 0
	var firstExpired error
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %v", file, n+expired+1, err)
		}
		// A bundle may hold an expired CA beside its successor: skip it.
		if err := checkValidity(cert, now); err != nil {
			expired++
			if firstExpired == nil {
				firstExpired = err
			}
			continue
		}
		pool.AddCert(cert)
		n++
	}
	switch {
	case n == 0 && firstExpired != nil:
		return nil, fmt.Errorf("%s: %v", file, firstExpired)
	case n == 0:
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return pool, nil
}

// loadClientCert reads a client certificate and its key, checking that
// they belong together and that the certificate is valid at now.
func loadClientCert(certFile, keyFile string, now time.Time) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, &ConfigError{Field: "CertFile", Msg: fileError(certFile, err).Error()}
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, &ConfigError{Field: "KeyFile", Msg: fileError(keyFile, err).Error()}
	}
	// CertFile and KeyFile may be one file holding both.
	if !hasPEMBlock(certPEM, func(typ string) bool { return typ == "CERTIFICATE" }) {
		return nil, &ConfigError{Field: "CertFile", Msg: certFile + ": no PEM certificate in it"}
	}
	if !hasPEMBlock(keyPEM, func(typ string) bool { return strings.HasSuffix(typ, "PRIVATE KEY") }) {
		return nil, &ConfigError{Field: "KeyFile", Msg: keyFile + ": no PEM private key in it (an encrypted key is not supported)"}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The standard library's message never includes key material.
		return nil, &ConfigError{Field: "KeyFile", Msg: fmt.Sprintf("%s and %s: %v", certFile, keyFile, err)}
	}
	if err := checkValidity(cert.Leaf, now); err != nil {
		return nil, &ConfigError{Field: "CertFile", Msg: fmt.Sprintf("%s: %v", certFile, err)}
	}
	return &cert, nil
}

// hasPEMBlock says whether b holds a PEM block whose type is wanted.
func hasPEMBlock(b []byte, wanted func(typ string) bool) bool {
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return false
		}
		if wanted(block.Type) {
			return true
		}
	}
}

// checkValidity refuses a certificate outside its validity period: brokers
// would refuse it (or the client would refuse the brokers) at every
// connection.
func checkValidity(cert *x509.Certificate, now time.Time) error {
	switch {
	case now.After(cert.NotAfter):
		return fmt.Errorf("certificate %q expired on %s", cert.Subject.String(), cert.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(cert.NotBefore):
		return fmt.Errorf("certificate %q is not valid before %s", cert.Subject.String(), cert.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// fileError says what is wrong with a file without Go's operation prefix.
func fileError(file string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", file, pe.Err)
	}
	return fmt.Errorf("%s: %v", file, err)
}

// readPassword reads a password file, dropping one trailing line break.
func readPassword(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fileError(file, err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if pw == "" {
		return "", fmt.Errorf("%s: the file is empty", file)
	}
	return pw, nil
}

// credentialsError marks a failure to read a credential at connection time
// (a password or certificate file that became unreadable): configuration,
// not an event's fault.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "read credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// mechanism returns the SASL mechanism; a password file is read at each
// authentication.
func (s Security) mechanism() sasl.Mechanism {
	user, static, file := s.SASLUsername, s.SASLPassword, s.SASLPasswordFile
	password := func() (string, error) {
		if file == "" {
			return static, nil
		}
		pw, err := readPassword(file)
		if err != nil {
			return "", &credentialsError{err}
		}
		return pw, nil
	}
	switch s.Mechanism() {
	case SASLPlain:
		return plain.Plain(func(context.Context) (plain.Auth, error) {
			pw, err := password()
			return plain.Auth{User: user, Pass: pw}, err
		})
	case SASLScramSHA256:
		return scram.Sha256(func(context.Context) (scram.Auth, error) {
			pw, err := password()
			return scram.Auth{User: user, Pass: pw}, err
		})
	}
	return scram.Sha512(func(context.Context) (scram.Auth, error) {
		pw, err := password()
		return scram.Auth{User: user, Pass: pw}, err
	})
}

// String describes s for a log line or an error, without the password.
func (s Security) String() string {
	parts := []string{s.Protocol()}
	if s.SASLMechanism != "" {
		parts = append(parts, s.Mechanism()+" as "+s.SASLUsername)
	}
	if s.CAFile != "" {
		parts = append(parts, "CA "+s.CAFile)
	}
	if s.CertFile != "" {
		parts = append(parts, "client certificate "+s.CertFile)
	}
	if s.ServerName != "" {
		parts = append(parts, "server name "+s.ServerName)
	}
	return strings.Join(parts, ", ")
}

// GoString is String, so %#v cannot print the password either.
func (s Security) GoString() string { return "kafka.Security{" + s.String() + "}" }

// LogValue logs s as a group of its settings, without the password.
func (s Security) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("protocol", s.Protocol())}
	add := func(key, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(key, v))
		}
	}
	add("sasl_mechanism", s.Mechanism())
	add("sasl_username", s.SASLUsername)
	add("sasl_password_file", s.SASLPasswordFile)
	add("tls_ca_file", s.CAFile)
	add("tls_cert_file", s.CertFile)
	add("tls_key_file", s.KeyFile)
	add("tls_server_name", s.ServerName)
	return slog.GroupValue(attrs...)
}
